"""Group statistics shared by the group-relative estimators and the filters.

A *group* is the set of trajectories rolled out from the same env seed (or, for GiGPO's
step level, the set of turns taken from the same anchor observation). Group labels are
arbitrary integers; they are mapped to dense ids ``0..G-1`` once and every statistic is
a scatter over those ids, so no Python loop runs per sample.

Convention used everywhere in ``vagen.algos``: the within-group standard deviation is
the *unbiased* (Bessel-corrected, ``n - 1``) estimate, as ``torch.std`` computes it and
as the reference GRPO implementations use; a singleton group has std 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor


def as_float(x: Tensor) -> Tensor:
    """``x`` as a floating tensor (integer/bool inputs become float32; floats are kept)."""
    x = torch.as_tensor(x)
    return x if x.is_floating_point() else x.to(torch.float32)


def check_1d(name: str, x: Tensor, n: int | None = None) -> None:
    """Raise ``ValueError`` unless ``x`` is 1-D (and of length ``n`` when given)."""
    if x.dim() != 1:
        raise ValueError(f"{name} must be 1-D, got shape {tuple(x.shape)}")
    if n is not None and x.shape[0] != n:
        raise ValueError(f"{name} has length {x.shape[0]}, expected {n}")


@dataclass(frozen=True)
class GroupStats:
    """Per-group statistics of a 1-D tensor of values.

    ``ids[i]`` is the dense group id of element ``i``; ``count``, ``mean``, ``std`` and
    ``spread`` (max - min) are indexed by dense id (length ``n_groups``).
    """

    ids: Tensor
    count: Tensor
    mean: Tensor
    std: Tensor
    spread: Tensor

    @property
    def n_groups(self) -> int:
        return int(self.count.shape[0])


def dense_ids(labels: Tensor) -> tuple[Tensor, int]:
    """Map arbitrary integer labels to dense ids ``0..G-1`` (sorted label order)."""
    uniq, inv = torch.unique(torch.as_tensor(labels), return_inverse=True)
    return inv, int(uniq.shape[0])


def group_stats(values: Tensor, ids: Tensor, n_groups: int) -> GroupStats:
    """Mean, unbiased std and spread of ``values`` within each dense group id.

    Accumulated in float64 (two passes) and returned in ``values``' dtype. A group whose
    values are all identical gets exactly its value as mean and std 0: otherwise the
    rounding of a float32 mean (~1e-7 relative) divided by ``std + eps`` would hand an
    all-equal group advantages of a few percent instead of 0.
    """
    values = as_float(values)
    x = values.double()
    count = torch.bincount(ids, minlength=n_groups).to(x.dtype)
    total = x.new_zeros(n_groups).index_add_(0, ids, x)
    mean = total / count.clamp(min=1)
    sq_dev = x.new_zeros(n_groups).index_add_(0, ids, (x - mean[ids]) ** 2)
    std = torch.sqrt(sq_dev / (count - 1).clamp(min=1))
    hi = x.new_full((n_groups,), -math.inf).scatter_reduce(0, ids, x, reduce="amax")
    lo = x.new_full((n_groups,), math.inf).scatter_reduce(0, ids, x, reduce="amin")
    constant = hi == lo
    mean = torch.where(constant, hi, mean)
    std = torch.where(constant, 0.0, std)
    dtype = values.dtype
    return GroupStats(
        ids=ids, count=count.to(dtype), mean=mean.to(dtype), std=std.to(dtype), spread=(hi - lo).to(dtype)
    )


def stats_by_label(values: Tensor, labels: Tensor) -> GroupStats:
    """``group_stats`` with the dense ids computed from integer ``labels``."""
    ids, n_groups = dense_ids(labels)
    return group_stats(values, ids, n_groups)
