"""Getting the trainer's weights to the rollout side, behind one interface.

``WeightSync.push(version)`` makes the rollout policy generate with the trainer's current
weights and stamps it with ``version`` (every ``Generation`` then carries that version); it
returns the seconds it took, which the trainer logs as ``async/sync_s``.

* :class:`SharedWeights` — synchronous training: the rollout policy *is* the trained model,
  so there is nothing to copy (the version is still stamped).
* :class:`InProcessCopy` — asynchronous training in one process (HF backend, CPU or GPU):
  the rollout policy is a replica (``HFPolicy.replica()``) and ``push`` copies every
  parameter and buffer tensor in place under the trainer's weights lock, so it never sees a
  half-applied optimizer step and the replica's storage is reused (no reallocation).

* :class:`GatheredCopy` — FSDP2 training (``trainer.strategy=fsdp2``): the actor is sharded,
  so ``push`` all-gathers its full state dict (a collective: every rank pushes at the same
  point of the step) and copies it into this rank's non-sharded rollout replica.

* :class:`RemotePush` — rollout *processes* (``cluster.backend=ray``): CPU copies through
  Ray's object store to every worker (``vagen.cluster.ray_rollouts``).

* :class:`VLLMLoad` — vLLM engines (``policy.backend=vllm``): named tensors in buckets
  through ``collective_rpc`` (``VLLMPolicy.load_weights``).
"""

from __future__ import annotations

import contextlib
import threading
import time
from abc import ABC, abstractmethod


class WeightSync(ABC):
    def __init__(self, rollout_policy) -> None:
        self.rollout_policy = rollout_policy
        self.last_s = 0.0
        self.pushes = 0

    @abstractmethod
    def _copy(self) -> None: ...

    def push(self, version: int) -> float:
        t0 = time.perf_counter()
        self._copy()
        self.rollout_policy.policy_version = int(version)
        self.last_s = time.perf_counter() - t0
        self.pushes += 1
        return self.last_s


class SharedWeights(WeightSync):
    def _copy(self) -> None:
        pass


class InProcessCopy(WeightSync):
    def __init__(self, trainer_model, rollout_policy, lock: threading.Lock) -> None:
        super().__init__(rollout_policy)
        self.src, self.lock = trainer_model, lock
        src = dict(trainer_model.state_dict(keep_vars=True))
        dst = dict(rollout_policy.model.state_dict(keep_vars=True))
        if src.keys() != dst.keys():
            raise ValueError("the rollout replica's tensors do not match the trained model's")
        self._pairs = [(dst[k], src[k]) for k in src]

    def _copy(self) -> None:
        import torch

        # The trainer's weights lock (no half-applied update) and the replica's generation lock
        # (never under a generate call that another batch is running).
        gen_lock = getattr(self.rollout_policy, "_lock", None) or contextlib.nullcontext()
        with self.lock, gen_lock, torch.no_grad():
            for d, s in self._pairs:
                d.data.copy_(s.data, non_blocking=True)
            if self._pairs and self._pairs[0][0].is_cuda:
                torch.cuda.synchronize()


class GatheredCopy(WeightSync):
    def __init__(self, sharded_model, rollout_policy) -> None:
        super().__init__(rollout_policy)
        self.src = sharded_model
        self._dst = dict(rollout_policy.model.state_dict(keep_vars=True))

    def _copy(self) -> None:
        import torch

        from vagen.train.distributed import full_state_dict

        full = full_state_dict(self.src)
        unknown = sorted(set(full) - set(self._dst))
        if unknown:
            raise ValueError(f"the rollout replica has no tensors named {unknown[:3]}... (of {len(unknown)})")
        gen_lock = getattr(self.rollout_policy, "_lock", None) or contextlib.nullcontext()
        with gen_lock, torch.no_grad():
            for k, v in full.items():
                self._dst[k].data.copy_(v)


class _Version:
    policy_version = -1


class RemotePush(WeightSync):
    """To rollout *processes*: Ray actors (``vagen.cluster.ray_rollouts.RayRollouts``, one set
    per in-flight batch slot). The trainer's tensors are copied to CPU under the weights lock
    (no half-applied update), then put in Ray's object store and loaded by every worker of
    every set (a worker mid-batch loads them between two generate calls)."""

    def __init__(self, trainer_model, remotes: list, lock: threading.Lock) -> None:
        super().__init__(_Version())
        self.src, self.remotes, self.lock = trainer_model, remotes, lock
        self._version = -1

    def push(self, version: int) -> float:
        self._version = int(version)
        return super().push(version)

    def _copy(self) -> None:
        for remote in self.remotes:
            with self.lock:
                tensors = remote.snapshot(self.src)
            remote.send(tensors, self._version)


class VLLMLoad(WeightSync):
    """To vLLM engines (``policy.backend=vllm``): the trainer's named tensors, cast to the
    engine's dtype, loaded in buckets by every vLLM worker (``VLLMPolicy.load_weights``)
    under the trainer's weights lock."""

    def __init__(self, trainer_model, engine, lock: threading.Lock, dtype=None, bucket_mb: float = 512.0) -> None:
        super().__init__(engine)
        self.src, self.lock, self.dtype, self.bucket_mb = trainer_model, lock, dtype, bucket_mb

    def _copy(self) -> None:
        import torch

        with self.lock, torch.no_grad():
            named = ((k, v.to(self.dtype) if self.dtype is not None else v) for k, v in self.src.state_dict().items())
            self.rollout_policy.load_weights(named, bucket_mb=self.bucket_mb)


__all__ = ["GatheredCopy", "InProcessCopy", "RemotePush", "SharedWeights", "VLLMLoad", "WeightSync"]
