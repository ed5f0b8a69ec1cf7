"""Collate ``Sample``s into right-padded tensors for the teacher-forced forward."""

from __future__ import annotations

from typing import Any

import torch

from vagen.rollout.context import Sample


def collate(samples: list[Sample], policy, extra: dict[str, list[list[float]]] | None = None) -> dict[str, Any]:
    """Right-pad ids/masks, add the images' pixel values, and any per-token extras
    (``advantages``, ``returns``...) given as one list per sample aligned to its ids."""
    width = max(len(s.input_ids) for s in samples)
    n = len(samples)
    ids = torch.full((n, width), policy.pad_id, dtype=torch.long)
    attn = torch.zeros((n, width), dtype=torch.long)
    loss = torch.zeros((n, width), dtype=torch.float32)
    old = torch.zeros((n, width), dtype=torch.float32)
    turn = torch.full((n, width), -1, dtype=torch.long)
    for i, s in enumerate(samples):
        L = len(s.input_ids)
        ids[i, :L] = torch.tensor(s.input_ids)
        attn[i, :L] = 1
        loss[i, :L] = torch.tensor(s.loss_mask, dtype=torch.float32)
        old[i, :L] = torch.tensor(s.old_logprobs, dtype=torch.float32)
        turn[i, :L] = torch.tensor(s.turn_index)
    batch: dict[str, Any] = {"input_ids": ids, "attention_mask": attn, "loss_mask": loss, "rollout_logprobs": old,
                             "turn_index": turn}
    batch.update(policy.image_inputs([img for s in samples for img in s.images]))
    batch.update(policy.mm_token_type_ids(ids))
    for key, rows in (extra or {}).items():
        t = torch.zeros((n, width), dtype=torch.float32)
        for i, row in enumerate(rows):
            t[i, : len(row)] = torch.tensor(row, dtype=torch.float32)
        batch[key] = t
    return {k: v.to(policy.device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
