"""Data-parallel training with FSDP2 (``torch.distributed.fsdp.fully_shard``) under torchrun.

``trainer.strategy=fsdp2`` shards the actor (and the critic) over the ranks of a
``torchrun`` job — one process per GPU, or per CPU core with the gloo backend — and keeps,
on every rank, a non-sharded rollout replica that generates (sharded modules cannot run
``generate`` rank by rank; verl keeps a separate inference engine for the same reason).

One training step on ``W`` ranks (see ``RLTrainer``):

1. every rank brings its replica to the trainer's weights (``GatheredCopy``: the full
   state dict is all-gathered from the shards, a collective, then copied in place);
2. rank ``r`` plays the groups ``r, r + W, ...`` of the step's batch; the trajectories are
   all-gathered and renumbered as one process would have numbered them
   (:func:`merge_parts`), so filters, advantages and metrics see the whole batch on every rank;
3. scoring and the PPO update split each (mini-)batch's micro-batches round-robin over the
   ranks, padded so every rank makes the same number of forward/backward calls (FSDP's
   collectives must match); a padding micro-batch has weight 0. Each rank's loss is
   weighted by its micro-batch's share of the *global* mini-batch and multiplied by ``W``
   (FSDP averages gradients over ranks), so the reduced gradient is the single-process one.

``tests/train/test_fsdp.py`` checks that 2 gloo ranks give the same losses, gradient norms
and weights as one process. Launch: ``torchrun --nproc_per_node N -m vagen.cli train ENV
trainer.strategy=fsdp2 ...`` (docs/architecture.md).
"""

from __future__ import annotations

import datetime
import logging
import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

logger = logging.getLogger(__name__)

#: Module classes that become their own FSDP unit (one all-gather per block, not per model).
BLOCK_SUFFIXES = ("DecoderLayer", "VisionBlock", "EncoderLayer")


@dataclass
class DistContext:
    """This process's place in the job (``rank`` of ``world``); a world of 1 without torchrun."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    enabled: bool = False

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def all_gather_objects(self, obj: Any) -> list[Any]:
        """``obj`` from every rank, in rank order (pickled; trajectories, metrics)."""
        if not self.enabled or self.world == 1:
            return [obj]
        out: list[Any] = [None] * self.world
        dist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        if self.enabled and self.world > 1:
            dist.barrier()


def init_distributed(device: str = "auto") -> DistContext:
    """Join the torchrun job (``RANK``/``WORLD_SIZE``/``MASTER_ADDR`` in the environment) or
    make a world of one; nccl when this rank has a GPU, gloo otherwise."""
    if dist.is_initialized():
        return DistContext(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", 0)), True)
    use_cuda = torch.cuda.is_available() and not device.startswith("cpu")
    backend = "nccl" if use_cuda else "gloo"
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if use_cuda:
        torch.cuda.set_device(local_rank)
    timeout = datetime.timedelta(seconds=int(os.environ.get("VAGEN_DIST_TIMEOUT_S", "1800")))
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        dist.init_process_group(backend, timeout=timeout)
    else:  # one process: still a process group, so the same code path runs
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1, timeout=timeout)
    ctx = DistContext(dist.get_rank(), dist.get_world_size(), local_rank, True)
    logger.info("distributed: rank %d of %d (%s)", ctx.rank, ctx.world, backend)
    return ctx


def shard_model(model: nn.Module, param_dtype: torch.dtype | None = None) -> nn.Module:
    """``fully_shard`` each transformer block, then the root (FSDP2; in place, returns ``model``).

    With ``param_dtype`` (bf16 on GPUs) parameters are all-gathered in that dtype and
    gradients reduced in float32.
    """
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    kwargs: dict[str, Any] = {}
    if param_dtype is not None:
        kwargs["mp_policy"] = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=torch.float32)
    blocks = [m for m in model.modules() if type(m).__name__.endswith(BLOCK_SUFFIXES)]
    for block in blocks:
        fully_shard(block, **kwargs)
    fully_shard(model, **kwargs)
    return model


def full_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """The unsharded state dict of an FSDP2 module on every rank (a collective)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))


def load_full_state_dict(model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Load an unsharded state dict (every rank holds it) into an FSDP2 module."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

    set_model_state_dict(model, state, options=StateDictOptions(full_state_dict=True))


def full_value(x: torch.Tensor) -> torch.Tensor:
    """A DTensor's full value (e.g. the total gradient norm FSDP2 clipping returns); a plain
    tensor as it is."""
    return x.full_tensor() if hasattr(x, "full_tensor") else x


def round_robin(n_items: int, rank: int, world: int) -> tuple[list[int | None], int]:
    """Indices ``rank, rank + world, ...`` of ``n_items``, padded with ``None`` to the
    same length on every rank; returns (indices, padded length)."""
    per_rank = -(-n_items // world) if n_items else 0
    mine: list[int | None] = [i for i in range(rank, n_items, world)]
    mine += [None] * (per_rank - len(mine))
    return mine, per_rank


def renumber(trajs: list, global_groups: list[int], group_size: int) -> list:
    """Give a worker's trajectories the group and trajectory ids one process would have
    given them: local group ``j`` is global group ``global_groups[j]``."""
    for t in trajs:
        local_group, k = t.group_id, t.traj_id % group_size
        g = global_groups[local_group]
        t.group_id, t.traj_id = g, g * group_size + k
        for u in t.turns:
            u.group_id, u.traj_id = g, t.traj_id
    return trajs


def split_groups(seeds: list[int], workers: int) -> list[tuple[list[int], list[int]]]:
    """Deal a batch's groups to ``workers`` round-robin: per worker (seeds, global group ids)."""
    return [([seeds[g] for g in range(w, len(seeds), workers)], list(range(w, len(seeds), workers)))
            for w in range(workers)]


def merge_parts(parts: list[tuple[list, list[int]]], group_size: int) -> list:
    """Trajectories from several workers (each with its global group ids), renumbered and in
    the order one process would have produced them."""
    out = []
    for trajs, groups in parts:
        out += renumber(trajs, groups, group_size)
    return sorted(out, key=lambda t: t.traj_id)


__all__ = ["DistContext", "full_state_dict", "init_distributed", "load_full_state_dict", "full_value",
           "merge_parts", "renumber", "round_robin", "shard_model", "split_groups"]
