"""Moving advantages between trajectory, turn and token level, and masked whitening."""

from __future__ import annotations

import torch
from torch import Tensor

from vagen.algos.groups import as_float, check_1d


def broadcast_to_tokens(
    values: Tensor,
    response_mask: Tensor,
    turn_index: Tensor | None = None,
    *,
    traj_index: Tensor | None = None,
    turn_number: Tensor | None = None,
) -> Tensor:
    """Put per-sequence or per-turn quantities (e.g. advantages) on response tokens.

    Three input forms, all returning ``[B, T]`` with 0 on masked tokens:

    - per sequence, ``values [B]``: row b's value on every response token of row b
      (``grpo``/``rloo``/``reinforce_pp`` output when each trajectory is one row);
    - per (row, turn), ``values [B, K]`` with ``turn_index [B, T]``: token (b, t) gets
      ``values[b, turn_index[b, t]]``;
    - per turn record, ``values [M]`` with ``turn_index`` and keyword ``traj_index [M]``
      (row of the record) and ``turn_number [M]`` (its turn) — the ``gigpo`` output form.

    A response token whose turn has no value raises ``ValueError`` rather than silently
    getting 0.
    """
    values = as_float(values)
    mask = torch.as_tensor(response_mask).bool()
    if mask.dim() != 2:
        raise ValueError(f"response_mask must be [B, T], got shape {tuple(mask.shape)}")
    n_rows = mask.shape[0]
    records = traj_index is not None or turn_number is not None
    if turn_index is None:
        if records:
            raise ValueError("per-turn records (traj_index/turn_number) need turn_index")
        check_1d("values", values, n_rows)
        return torch.where(mask, values[:, None], 0.0)

    turn_index = torch.as_tensor(turn_index).long()
    if turn_index.shape != mask.shape:
        raise ValueError(f"turn_index has shape {tuple(turn_index.shape)}, expected {tuple(mask.shape)}")
    if records:
        if traj_index is None or turn_number is None:
            raise ValueError("per-turn records need both traj_index and turn_number")
        values, present = _records_to_dense(
            values,
            torch.as_tensor(traj_index),
            torch.as_tensor(turn_number),
            n_rows,
            int(turn_index.max()) + 1,
        )
    else:
        if values.dim() != 2 or values.shape[0] != n_rows:
            raise ValueError(f"per-turn values must be [B={n_rows}, K], got shape {tuple(values.shape)}")
        present = torch.ones_like(values, dtype=torch.bool)
    if not bool(mask.any()):
        return torch.zeros(mask.shape, dtype=values.dtype, device=values.device)
    if int(turn_index[mask].max()) >= values.shape[1] or int(turn_index[mask].min()) < 0:
        raise ValueError("turn_index on a response token is outside the given per-turn values")
    slot = torch.where(mask, turn_index, 0)
    if not bool(present.gather(1, slot)[mask].all()):
        raise ValueError("a response token's (row, turn) has no per-turn record")
    return torch.where(mask, values.gather(1, slot), 0.0)


def _records_to_dense(
    values: Tensor, traj_index: Tensor, turn_number: Tensor, n_rows: int, min_turns: int
) -> tuple[Tensor, Tensor]:
    m = values.shape[0]
    check_1d("values", values)
    check_1d("traj_index", traj_index, m)
    check_1d("turn_number", turn_number, m)
    # Wide enough for every turn a token names, so a missing record is reported as such.
    n_turns = max(int(turn_number.max()) + 1 if m else 0, min_turns)
    if m and (int(traj_index.min()) < 0 or int(traj_index.max()) >= n_rows or int(turn_number.min()) < 0):
        raise ValueError("traj_index must be a row of response_mask and turn_number >= 0")
    flat = traj_index.long() * n_turns + turn_number.long()
    if m and int(torch.bincount(flat, minlength=n_rows * n_turns).max()) > 1:
        raise ValueError("duplicate (traj_index, turn_number) turn records")
    dense = values.new_zeros(n_rows * n_turns)
    dense[flat] = values
    present = torch.zeros(n_rows * n_turns, dtype=torch.bool, device=values.device)
    present[flat] = True
    return dense.view(n_rows, n_turns), present.view(n_rows, n_turns)


def masked_whiten(x: Tensor, mask: Tensor, eps: float = 1e-8, shift_mean: bool = True) -> Tensor:
    """Normalise ``x`` to zero mean, unit variance over the entries where ``mask`` is 1.

        x' = (x - mean_m(x)) / sqrt(var_m(x) + eps)     (var unbiased over masked entries)

    ``shift_mean=False`` rescales only (adds the mean back), as some PPO recipes do for
    advantages. Masked-out entries are returned as 0. Fewer than two masked entries:
    returned unchanged (on the mask), as a variance of one sample is undefined.
    """
    x = as_float(x)
    mask = torch.as_tensor(mask).bool()
    n = int(mask.sum())
    if n < 2:
        return torch.where(mask, x, 0.0)
    vals = x[mask]
    mean, var = vals.mean(), vals.var()
    out = (x - mean) * torch.rsqrt(var + eps)
    if not shift_mean:
        out = out + mean
    return torch.where(mask, out, 0.0)
