"""Builders for multi-turn token layouts used by the estimator tests.

A row is a list of turns ``(n_obs, n_resp, reward)``: ``n_obs`` masked observation
tokens, then ``n_resp`` response tokens whose last one carries ``reward``. Rows are
right-padded with masked tokens to a common length.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

Turn = tuple[int, int, float]

GARBAGE = 1e3  # value/logprob written on masked tokens: must never be read


def build(
    rows: list[list[Turn]], pad: int = 0, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(token_rewards, values, response_mask, turn_index) for ``rows``; values are random on
    response tokens and ``GARBAGE`` elsewhere."""
    lengths = [sum(o + r for o, r, _ in row) for row in rows]
    length = max([*lengths, 1]) + pad
    n = len(rows)
    rewards = torch.zeros(n, length)
    mask = torch.zeros(n, length, dtype=torch.bool)
    turn_index = torch.full((n, length), -1, dtype=torch.long)
    for b, row in enumerate(rows):
        t = 0
        for k, (n_obs, n_resp, reward) in enumerate(row):
            t += n_obs
            mask[b, t : t + n_resp] = True
            turn_index[b, t : t + n_resp] = k
            rewards[b, t + n_resp - 1] = reward
            t += n_resp
    gen = torch.Generator().manual_seed(seed)
    values = torch.full((n, length), GARBAGE)
    values[mask] = torch.rand(int(mask.sum()), generator=gen) * 2 - 1
    return rewards, values, mask, turn_index


def insert_masked_columns(x: torch.Tensor, positions: list[int], fill) -> torch.Tensor:
    """Insert one column of ``fill`` before each index in ``positions`` (of the original x)."""
    cols = []
    for t in range(x.shape[1] + 1):
        cols.extend(torch.full((x.shape[0], 1), fill, dtype=x.dtype) for _ in range(positions.count(t)))
        if t < x.shape[1]:
            cols.append(x[:, t : t + 1])
    return torch.cat(cols, dim=1)


turns = st.tuples(
    st.integers(0, 3),
    st.integers(1, 4),
    st.floats(-2, 2, allow_nan=False, width=32),
)
rows = st.lists(st.lists(turns, max_size=4), min_size=1, max_size=4)
