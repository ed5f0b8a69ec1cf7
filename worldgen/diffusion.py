"""The diffusion world model: the next screenshot is an image edit of the current one.

``DiffusionWorld`` loads any diffusers image-edit pipeline by class name and path
(``StableDiffusionInstructPix2PixPipeline``, ``FluxKontextPipeline``,
``QwenImageEditPipeline`` ...) with ``from_pretrained``; ``model_path="tiny"`` is the offline
tiny random InstructPix2Pix (``worldgen.tiny_diffusion``). ``edit(frame, instruction, seed)``
resizes the frame so its long side is ``size`` (multiples of 8), runs the pipeline with a
seeded generator (same seed, same output) and resizes the result back to the screen size.
The instruction is the planner's action and intended consequence. Only the arguments the
pipeline's ``__call__`` accepts are passed (guidance scales differ between pipelines).

The first frame is the HTML render of the scene spec (``initial="html"``: the DOM grounds
every step) or a text-to-image generation from the spec's description
(``initial="text2image"``: any diffusers text-to-image pipeline by class name and path, e.g.
``StableDiffusionPipeline``, ``FluxPipeline``; ``t2i_model_path="tiny"`` is the offline tiny
random one). A generated frame has no DOM, so each pointing step is grounded by where the
edit changed the screen (the change mask's box) instead; :func:`describe_scene` writes the prompt.
"""

from __future__ import annotations

import inspect
from typing import Any, Literal

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
    initial: Literal["html", "text2image"] = "html"
    t2i_pipeline: str = Field("StableDiffusionPipeline", pattern=r"^[A-Za-z0-9]+Pipeline$")
    t2i_model_path: str = "tiny"


def describe_scene(scene) -> str:
    """The scene spec in words: the text-to-image prompt for its first frame."""
    a = scene.appearance
    wins = [w for w in scene.windows if not w.minimized]
    parts = [f"A {scene.width}x{scene.height} screenshot of a {scene.platform} desktop, {a.theme} theme, "
             f"{a.accent} accent colour, {a.wallpaper} to {a.wallpaper_to} gradient wallpaper, {a.font_family} font"]
    for w in wins:
        what = {"file_manager": f"showing {w.path}", "browser": f"with {len(w.tabs)} tabs",
                "settings": "with toggle switches", "spreadsheet": "with a grid of cells",
                "text_editor": "with text", "terminal": "with a prompt"}[w.app]
        focus = " (focused, in front)" if w.id == scene.focused else ""
        parts.append(f"a {scene.app_name(w.app)} window titled '{w.title}' {what} at ({w.x}, {w.y}), "
                     f"{w.w}x{w.h}{focus}")
    parts += [f"a '{d.title}' dialog" for d in scene.dialogs]
    if scene.desktop:
        parts.append("desktop icons: " + ", ".join(i.name for i in scene.desktop))
    return "; ".join(parts)


class DiffusionWorld:
    def __init__(self, cfg: DiffusionConfig | None = None) -> None:
        import diffusers
        import torch

        self.cfg = cfg = cfg or DiffusionConfig()
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if cfg.device == "auto" else cfg.device
        self.dtype = (torch.bfloat16 if self.device.startswith("cuda") else torch.float32) if cfg.dtype == "auto" \
            else getattr(torch, cfg.dtype)
        from worldgen.tiny_diffusion import tiny_pix2pix_path, tiny_text2image_path

        self.pipe = self._load(diffusers, cfg.pipeline, cfg.model_path, tiny_pix2pix_path)
        self._accepts = set(inspect.signature(self.pipe.__call__).parameters)
        self.t2i = None
        if cfg.initial == "text2image":
            self.t2i = self._load(diffusers, cfg.t2i_pipeline, cfg.t2i_model_path, tiny_text2image_path)
            self._t2i_accepts = set(inspect.signature(self.t2i.__call__).parameters)

    def _load(self, diffusers, name: str, path: str, tiny):
        cls = getattr(diffusers, name, None)
        if cls is None or not hasattr(cls, "from_pretrained"):
            raise ValueError(f"diffusers has no pipeline class {name!r}")
        pipe = cls.from_pretrained(str(tiny()) if path == "tiny" else path, torch_dtype=self.dtype).to(self.device)
        pipe.set_progress_bar_config(disable=True)
        return pipe

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

    def generate(self, prompt: str, size: tuple[int, int], seed: int):
        """A first frame (PIL, ``size``) from the text-to-image pipeline."""
        import torch
        from PIL import Image

        if self.t2i is None:
            raise RuntimeError("no text-to-image pipeline: set initial='text2image'")
        w, h = self._size(*size)
        kwargs: dict[str, Any] = {"prompt": prompt, "num_inference_steps": self.cfg.steps, "height": h, "width": w,
                                  "generator": torch.Generator(self.device).manual_seed(int(seed))}
        if "guidance_scale" in self._t2i_accepts:
            kwargs["guidance_scale"] = self.cfg.guidance_scale
        out = self.t2i(**{k: v for k, v in kwargs.items() if k in self._t2i_accepts}).images[0]
        return out.convert("RGB").resize(size, Image.BICUBIC)


__all__ = ["DiffusionConfig", "DiffusionWorld", "describe_scene"]
