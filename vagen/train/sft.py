"""Supervised fine-tuning on chat-format demonstrations (``vagen sft``).

Reads ``samples.jsonl`` as written by ``vagen demos`` (and later by the synthetic GUI
pipeline): each line a multi-turn chat whose image parts name PNG files relative to the
data directory. Contexts are built by the same ``ContextBuilder`` the RL rollouts use,
with the same history policy, so a model is fine-tuned on exactly the prompts it will
later see. Loss is on assistant tokens only (including their end-of-turn token).
The result is saved as a Hugging Face checkpoint (``<out_dir>/final``) that
``model.path=<out_dir>/final`` loads for RL.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vagen.config.schema import SFTConfig
from vagen.policy.hf import HFPolicy
from vagen.rollout.context import ContextBuilder, Sample
from vagen.rollout.records import Trajectory, TurnRecord
from vagen.train.batch import collate
from vagen.train.metrics import MetricsLogger
from vagen.train.model import MixedPrecision, forward_logprobs
from vagen.train.rl import lr_lambda, seed_everything

logger = logging.getLogger(__name__)


class SFTDataError(ValueError):
    """A demonstration file that cannot be used; the message names the file and line."""


def _load_image(root: Path, rel: str, where: str) -> np.ndarray:
    from PIL import Image

    path = (root / rel).resolve()
    if root.resolve() not in path.parents:
        raise SFTDataError(f"{where}: image path {rel!r} escapes the data directory")
    if not path.is_file():
        raise SFTDataError(f"{where}: image {rel!r} not found")
    return np.asarray(Image.open(path).convert("RGB"))


def chat_to_trajectory(messages: list[dict[str, Any]], builder: ContextBuilder, root: Path, where: str) -> Trajectory:
    """A demonstration chat as a ``Trajectory`` whose responses are the assistant turns."""
    if not messages or messages[0].get("role") != "system":
        raise SFTDataError(f"{where}: a sample must start with a system message")
    traj = Trajectory(group_id=0, traj_id=0, seed=0, prefix_ids=builder.system_ids(str(messages[0]["content"])))
    pending = None
    for k, msg in enumerate(messages[1:], start=1):
        role, content = msg.get("role"), msg.get("content")
        if role == "user":
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            parts = []
            for p in content:
                if p.get("type") == "image":
                    parts.append({"type": "image", "image": _load_image(root, str(p.get("image")), f"{where} message {k}")})
                elif p.get("type") == "text":
                    parts.append({"type": "text", "text": str(p.get("text", ""))})
                else:
                    raise SFTDataError(f"{where} message {k}: unknown part type {p.get('type')!r}")
            pending = parts
        elif role == "assistant":
            if pending is None:
                raise SFTDataError(f"{where} message {k}: assistant turn without a user turn before it")
            user_ids, images = builder.user_ids(pending)
            response = builder.text_ids(str(content)) + [builder.im_end]
            traj.turns.append(TurnRecord(
                group_id=0, traj_id=0, turn=len(traj.turns), user_ids=user_ids, images=images, response_ids=response,
                rollout_logprobs=[0.0] * len(response), policy_version=0, response_text=str(content),
                finish_reason="stop", close_ids=builder.close_ids(response),
                text_user_ids=builder.text_user_ids(pending) if images else None))
            pending = None
        else:
            raise SFTDataError(f"{where} message {k}: role must be user or assistant, got {role!r}")
    if not traj.turns:
        raise SFTDataError(f"{where}: no assistant turn to learn from")
    return traj


def load_samples(data_dir: str | Path, builder: ContextBuilder, max_length: int) -> list[Sample]:
    """Training samples from ``data_dir/samples.jsonl`` under the builder's history policy."""
    root = Path(data_dir)
    path = root / "samples.jsonl"
    if not path.is_file():
        raise SFTDataError(f"{path} not found (make one with `vagen demos`)")
    samples: list[Sample] = []
    too_long = 0
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise SFTDataError(f"{path}:{n}: not JSON ({e})") from None
        traj = chat_to_trajectory(row.get("messages") or [], builder, root, f"{path}:{n}")
        if builder.history == "full" and builder.max_images is None:
            cands = [builder.trajectory_sample(traj)]
        else:
            cands = builder.turn_samples(traj)
        for s in cands:
            if len(s.input_ids) > max_length:
                too_long += 1
            else:
                samples.append(s)
    if too_long:
        logger.warning("skipped %d samples longer than max_length", too_long)
    if not samples:
        raise SFTDataError(f"{path}: no usable samples")
    return samples


def run_sft(cfg: SFTConfig) -> dict[str, Any]:
    """Fine-tune ``cfg.model.path`` on ``cfg.data``; save to ``cfg.out_dir/final``."""
    seed_everything(cfg.seed)
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    policy = HFPolicy(cfg.model.path, device=cfg.model.device, dtype=cfg.model.dtype)
    builder = ContextBuilder(policy.processor, history=cfg.prompt.history, history_k=cfg.prompt.history_k,
                             max_images=cfg.prompt.max_images or None)
    samples = load_samples(cfg.data, builder, cfg.max_length)
    model = policy.model
    precision = MixedPrecision(policy.dtype, policy.device, cfg.model.master_weights)
    precision.promote(model)  # bf16 checkpoints: fp32 master weights, bf16 autocast
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(cfg.lr_schedule, cfg.warmup_steps, cfg.steps))
    metrics = MetricsLogger(out, cfg.model_dump(mode="json"))
    gen = torch.Generator().manual_seed(cfg.seed)
    order: list[int] = []
    t0 = time.perf_counter()
    model.train()
    losses = []
    for step in range(1, cfg.steps + 1):
        if len(order) < cfg.batch_size:
            order += torch.randperm(len(samples), generator=gen).tolist()
        idx, order = order[: cfg.batch_size], order[cfg.batch_size:]
        batch = collate([samples[i] for i in idx], policy)
        with precision.autocast():
            lp, _ = forward_logprobs(model, batch)
        mask = batch["loss_mask"]
        loss = -(lp * mask).sum() / mask.sum().clamp(min=1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        if torch.isfinite(grad_norm):
            opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if step % cfg.log_every == 0 or step == cfg.steps:
            metrics.log(step, {"loss": float(np.mean(losses)), "lr": sched.get_last_lr()[0],
                               "grad_norm": float(grad_norm), "time/elapsed_s": time.perf_counter() - t0})
            losses = []
    final = out / "final"
    if precision.enabled:
        model.to(policy.dtype)  # the master copy trained in fp32; export in the checkpoint's dtype
    model.save_pretrained(final)
    policy.processor.save_pretrained(final)
    metrics.close()
    summary = {"samples": len(samples), "steps": cfg.steps, "wall_s": time.perf_counter() - t0, "model": str(final)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
