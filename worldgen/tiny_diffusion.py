"""Tiny random diffusers pipelines built offline (no hub): an InstructPix2Pix image editor and a
Stable Diffusion text-to-image generator, for tests and CPU runs of the diffusion world model.
Their outputs are noise — which is the point of the filter tests: the transition filters must
reject them, for the right reasons.

``tiny_pix2pix_path()`` / ``tiny_text2image_path()`` build them once per cache dir
(``$VAGEN_CACHE`` or the platform cache) and return a directory that
``StableDiffusionInstructPix2PixPipeline`` / ``StableDiffusionPipeline.from_pretrained`` loads.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def _tokenizer_files(d: Path) -> None:
    """A CLIP BPE vocabulary of single characters (with and without the word-end marker)."""
    chars = [chr(c) for c in range(33, 127)]
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for ch in chars:
        vocab.setdefault(ch, len(vocab))
        vocab.setdefault(ch + "</w>", len(vocab))
    (d / "vocab.json").write_text(json.dumps(vocab))
    (d / "merges.txt").write_text("#version: 0.2\n")


def _components(seed: int, unet_in_channels: int) -> dict:
    import torch
    from diffusers import AutoencoderKL, EulerAncestralDiscreteScheduler, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    torch.manual_seed(seed)
    unet = UNet2DConditionModel(sample_size=8, in_channels=unet_in_channels, out_channels=4, layers_per_block=1,
                                block_out_channels=(32, 64), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32,
                                attention_head_dim=4, norm_num_groups=8)
    vae = AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(16, 32),
                        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
                        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), norm_num_groups=8, sample_size=16)
    text = CLIPTextModel(CLIPTextConfig(vocab_size=200, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=2, max_position_embeddings=77, projection_dim=32,
                                        bos_token_id=0, eos_token_id=1, pad_token_id=1))
    with tempfile.TemporaryDirectory() as td:
        _tokenizer_files(Path(td))
        tok = CLIPTokenizer(str(Path(td) / "vocab.json"), str(Path(td) / "merges.txt"), model_max_length=77)
    return {"vae": vae, "text_encoder": text, "tokenizer": tok, "unet": unet,
            "scheduler": EulerAncestralDiscreteScheduler(), "safety_checker": None, "feature_extractor": None,
            "requires_safety_checker": False}


def _save(pipe, out: Path) -> Path:
    tmp = out.with_name(out.name + ".tmp")
    pipe.save_pretrained(tmp)
    os.replace(tmp, out) if not out.exists() else None
    return out


def build_tiny_pix2pix(out_dir: str | os.PathLike, seed: int = 0) -> Path:
    """InstructPix2Pix: the UNet sees the noisy latent and the source image's latent (8 channels)."""
    from diffusers import StableDiffusionInstructPix2PixPipeline

    return _save(StableDiffusionInstructPix2PixPipeline(**_components(seed, 8)), Path(out_dir))


def build_tiny_text2image(out_dir: str | os.PathLike, seed: int = 0) -> Path:
    """Stable Diffusion text-to-image (4 latent channels in)."""
    from diffusers import StableDiffusionPipeline

    return _save(StableDiffusionPipeline(**_components(seed, 4)), Path(out_dir))


def _cached(name: str, build, seed: int) -> Path:
    from vagen.models.tiny import default_cache_dir

    path = default_cache_dir() / f"{name}-s{seed}"
    if not (path / "model_index.json").exists():
        build(path, seed)
    return path


def tiny_pix2pix_path(seed: int = 0) -> Path:
    return _cached("tiny-pix2pix", build_tiny_pix2pix, seed)


def tiny_text2image_path(seed: int = 0) -> Path:
    return _cached("tiny-sd-t2i", build_tiny_text2image, seed)


__all__ = ["build_tiny_pix2pix", "build_tiny_text2image", "tiny_pix2pix_path", "tiny_text2image_path"]
