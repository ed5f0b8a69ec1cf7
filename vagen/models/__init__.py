"""Model checkpoints: the tiny offline Qwen-VL and path resolution for `model.path`."""

from __future__ import annotations

from vagen.models.tiny import ARCHES, build_tiny_model, tiny_model_path

__all__ = ["ARCHES", "build_tiny_model", "resolve_model_path", "tiny_model_path"]


def resolve_model_path(path: str) -> str:
    """Turn ``tiny`` / ``tiny:<arch>`` into the cached tiny checkpoint; pass others through.

    Anything else is handed to ``from_pretrained`` as is (a local dir, or a hub id
    where a hub is reachable).
    """
    if path == "tiny":
        return str(tiny_model_path())
    if path.startswith("tiny:"):
        arch = path.split(":", 1)[1]
        if arch not in ARCHES:
            raise ValueError(f"unknown tiny arch {arch!r} in {path!r}; allowed: {', '.join(ARCHES)}")
        return str(tiny_model_path(arch))  # type: ignore[arg-type]
    return path
