"""The diffusion world model: the next screenshot is an image edit of the current one.

``DiffusionWorld`` loads any diffusers image-edit pipeline by class name and path
(``StableDiffusionInstructPix2PixPipeline``, ``FluxKontextPipeline``,
``QwenImageEditPipeline`` ...) with ``from_pretrained``; ``model_path="tiny"`` is the offline
tiny random InstructPix2Pix (``worldgen.tiny_diffusion``). ``edit(frame, instruction, seed)``
resizes the frame so its long side is ``size`` (multiples of 8), runs the pipeline with a
seeded generator (same seed, same output) and resizes the result back to the screen size.
The instruction is the planner's action and intended consequence. Only the arguments the
pipeline's ``__call__`` accepts are passed (guidance scales differ between pipelines).
"""

from __future__ import annotations

import inspect
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class DiffusionConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pipeline: str = Field("StableDiffusionInstructPix2PixPipeline", pattern=r"^[A-Za-z0-9]+Pipeline$")
    model_path: str = "tiny"
    steps: int = Field(20, ge=1, le=200)
    guidance_scale: float = Field(7.5, ge=0)
    image_guidance_scale: float = Field(1.5, ge=0)
    size: int = Field(512, ge=32, le=2048)  # long side of the image the pipeline sees
    device: str = Field("auto", pattern=r"^(auto|cpu|cuda(:\d+)?)$")
    dtype: str = Field("auto", pattern=r"^(auto|float32|bfloat16|float16)$")


class DiffusionWorld:
    def __init__(self, cfg: DiffusionConfig | None = None) -> None:
        import diffusers
        import torch

        self.cfg = cfg = cfg or DiffusionConfig()
        cls = getattr(diffusers, cfg.pipeline, None)
        if cls is None or not hasattr(cls, "from_pretrained"):
            raise ValueError(f"diffusers has no pipeline class {cfg.pipeline!r}")
        if cfg.model_path == "tiny":
            from worldgen.tiny_diffusion import tiny_pix2pix_path

            path = str(tiny_pix2pix_path())
        else:
            path = cfg.model_path
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if cfg.device == "auto" else cfg.device
        dtype = (torch.bfloat16 if self.device.startswith("cuda") else torch.float32) if cfg.dtype == "auto" \
            else getattr(torch, cfg.dtype)
        self.pipe = cls.from_pretrained(path, torch_dtype=dtype).to(self.device)
        self.pipe.set_progress_bar_config(disable=True)
        self._accepts = set(inspect.signature(self.pipe.__call__).parameters)

    def _size(self, w: int, h: int) -> tuple[int, int]:
        scale = self.cfg.size / max(w, h)
        return max(8, int(w * scale) // 8 * 8), max(8, int(h * scale) // 8 * 8)

    def edit(self, frame, instruction: str, seed: int):
        """The next frame (PIL, same size as ``frame``) for ``instruction``."""
        import torch
        from PIL import Image

        small = frame.convert("RGB").resize(self._size(*frame.size), Image.BICUBIC)
        kwargs: dict[str, Any] = {"prompt": instruction, "image": small, "num_inference_steps": self.cfg.steps,
                                  "generator": torch.Generator(self.device).manual_seed(int(seed))}
        for key in ("guidance_scale", "image_guidance_scale"):
            if key in self._accepts:
                kwargs[key] = getattr(self.cfg, key)
        for key in ("height", "width"):
            if key in self._accepts:
                kwargs[key] = small.size[1] if key == "height" else small.size[0]
        out = self.pipe(**kwargs).images[0]
        return out.convert("RGB").resize(frame.size, Image.BICUBIC)


__all__ = ["DiffusionConfig", "DiffusionWorld"]
