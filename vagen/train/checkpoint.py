"""Checkpoints that resume exactly: model(s), optimizer(s), scheduler(s), RNG states,
step and data position. Written to a temp dir and renamed, so a run killed mid-save
never leaves a checkpoint that looks complete."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

STATE_FILE = "trainer_state.json"


def rng_state() -> dict[str, Any]:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(ckpt_dir: Path, step: int, modules: dict[str, Any],
                    stateful: dict[str, Any], trainer_state: dict[str, Any], hf_model=None, processor=None,
                    keep_last: int = 2) -> Path:
    """Save everything needed to continue at ``step + 1`` under ``ckpt_dir/step_<step>``."""
    final = ckpt_dir / f"step_{step:06d}"
    tmp = ckpt_dir / f".tmp_step_{step:06d}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if hf_model is not None:
        hf_model.save_pretrained(tmp / "model")
        if processor is not None:
            processor.save_pretrained(tmp / "model")
    # A value may be a precomputed state dict (FSDP2 gathers full ones on every rank first).
    torch.save({k: _state(m) for k, m in modules.items()}, tmp / "modules.pt")
    torch.save({k: _state(s) for k, s in stateful.items()}, tmp / "optim.pt")
    torch.save(rng_state(), tmp / "rng.pt")
    (tmp / STATE_FILE).write_text(json.dumps({**trainer_state, "step": step}, indent=2))
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    for old in sorted(p for p in ckpt_dir.glob("step_*") if p.is_dir())[:-keep_last]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def _state(obj) -> dict[str, Any]:
    return obj if isinstance(obj, dict) else obj.state_dict()


def latest_checkpoint(ckpt_dir: Path) -> Path | None:
    """The newest complete checkpoint, or None."""
    done = sorted(p for p in ckpt_dir.glob("step_*") if (p / STATE_FILE).exists())
    return done[-1] if done else None


def load_checkpoint(path: Path, modules: dict[str, torch.nn.Module], stateful: dict[str, Any]) -> dict[str, Any]:
    """Restore modules, optimizers/schedulers and RNG states; return the trainer state."""
    weights = torch.load(path / "modules.pt", map_location="cpu", weights_only=False)
    for k, m in modules.items():
        m.load_state_dict(weights[k])
    optim = torch.load(path / "optim.pt", map_location="cpu", weights_only=False)
    for k, s in stateful.items():
        s.load_state_dict(optim[k])
    set_rng_state(torch.load(path / "rng.pt", weights_only=False))
    return json.loads((path / STATE_FILE).read_text())
