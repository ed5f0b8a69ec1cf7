"""Trajectory filters applied before advantage estimation.

Each filter takes ``scores [N]`` and ``group_index [N]`` and returns
``(keep [N] bool, metrics)``. Filters keep or drop whole groups, never single
trajectories, so group-relative baselines stay well defined on what is kept.

metrics (plain Python numbers, ready to log):
    kept_fraction       kept trajectories / all trajectories
    n_groups_kept       number of groups kept
    reward_std_before   mean over all groups of the within-group score std
    reward_std_after    the same over the kept groups (0.0 if none is kept)

Within-group std is the unbiased estimate, 0 for a singleton group (see ``groups``).
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import Tensor

from vagen.algos.groups import GroupStats, as_float, check_1d, stats_by_label


def _prepare(scores: Tensor, group_index: Tensor) -> GroupStats:
    scores = as_float(scores)
    group_index = torch.as_tensor(group_index)
    check_1d("scores", scores)
    check_1d("group_index", group_index, scores.shape[0])
    return stats_by_label(scores, group_index)


def _result(st: GroupStats, keep_group: Tensor) -> tuple[Tensor, dict[str, float]]:
    keep = keep_group[st.ids]
    n = keep.numel()
    metrics = {
        "kept_fraction": float(keep.sum()) / n if n else 0.0,
        "n_groups_kept": int(keep_group.sum()),
        "reward_std_before": float(st.std.mean()) if st.n_groups else 0.0,
        "reward_std_after": float(st.std[keep_group].mean()) if bool(keep_group.any()) else 0.0,
    }
    return keep, metrics


def keep_all(scores: Tensor, group_index: Tensor) -> tuple[Tensor, dict[str, float]]:
    """No filtering (``algo.filter=none``): keep every trajectory; metrics as the others."""
    st = _prepare(scores, group_index)
    return _result(st, torch.ones(st.n_groups, dtype=torch.bool, device=st.ids.device))


def starpo_s(
    scores: Tensor,
    group_index: Tensor,
    keep_ratio: float = 0.25,
    mode: Literal["top_fraction", "top_p"] = "top_fraction",
) -> tuple[Tensor, dict[str, float]]:
    """StarPO-S uncertainty-based rollout filtering (RAGEN, Wang et al. 2025, arXiv:2504.20073, "StarPO-S").

    Groups whose rollouts all score alike teach little (their group-relative advantages
    are ~0) and, RAGEN finds, feed the "echo trap" collapse. StarPO-S ranks groups by the
    std of their scores, U_g = std(R_i : i in g), and keeps the most uncertain ones:

    - ``mode="top_fraction"``: keep the ceil(keep_ratio * G) groups with the highest
      U_g (at least one);
    - ``mode="top_p"``: keep the smallest set of highest-U_g groups whose cumulative
      share of sum_g U_g reaches ``keep_ratio`` (= p). If every group has U_g = 0 there
      is nothing to rank by and all groups are kept; with p = 1 exactly the groups with
      U_g > 0 are kept.

    Ties in U_g are broken by group label (smaller first), so the result is deterministic.
    """
    if not 0.0 < keep_ratio <= 1.0:
        raise ValueError(f"keep_ratio must be in (0, 1], got {keep_ratio}")
    if mode not in ("top_fraction", "top_p"):
        raise ValueError(f"mode must be 'top_fraction' or 'top_p', got {mode!r}")
    st = _prepare(scores, group_index)
    n_groups = st.n_groups
    keep_group = torch.zeros(n_groups, dtype=torch.bool, device=st.ids.device)
    if n_groups == 0:
        return _result(st, keep_group)
    order = torch.sort(st.std, descending=True, stable=True).indices
    total = float(st.std.sum())
    if mode == "top_fraction":
        # The small tolerance keeps e.g. 0.29 * 100 = 28.999999999999996 from rounding up to 29 + 1.
        n_keep = max(1, math.ceil(keep_ratio * n_groups - 1e-9))
    elif total == 0.0:
        n_keep = n_groups
    else:
        share = torch.cumsum(st.std[order], 0) / total
        n_keep = int((share < keep_ratio - 1e-9).sum()) + 1
    keep_group[order[: min(n_keep, n_groups)]] = True
    return _result(st, keep_group)


def drop_zero_variance(
    scores: Tensor, group_index: Tensor, eps: float = 1e-8
) -> tuple[Tensor, dict[str, float]]:
    """Drop groups whose scores are all equal (max - min <= eps); keep the rest.

    Such groups give every member a zero group-relative advantage (GRPO, RLOO, ...),
    so they only dilute the batch — DAPO's "dynamic sampling" removes them for the same
    reason (Yu et al. 2025, arXiv:2503.14476, §3.2). Singleton groups are all-equal
    trivially and are dropped too.
    """
    st = _prepare(scores, group_index)
    return _result(st, st.spread > eps)
