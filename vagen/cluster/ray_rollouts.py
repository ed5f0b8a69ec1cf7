"""Rollout workers as Ray actors (``cluster.backend=ray``).

Each :class:`RolloutWorker` actor holds a rollout policy replica (the ``hf`` backend on its
CPU/GPU share) and its own envs — with their sandbox pool for GUI envs, so desktops and
browsers start on the worker's node — and plays the groups it is dealt with the same
``RolloutManager`` the trainer uses locally. :class:`RayRollouts` is the trainer's side:

* **placement** — one Ray placement group with a bundle of ``cluster.worker_cpus`` CPUs and
  ``cluster.worker_gpus`` GPUs per worker, strategy ``cluster.placement`` (``PACK`` keeps
  workers together, ``SPREAD`` over nodes);
* **weights** — ``push(model, version)`` puts the trainer's tensors into Ray's object store
  once (``ray.put``) and every worker copies them into its replica in place (only the
  trainable tensors — e.g. LoRA adapters — after the first push); the push is timed;
* **collect** — a batch's groups are dealt round-robin to the workers (worker ``w`` gets
  groups ``w, w + n, ...`` and sampling seed ``sample_seed + 104729 w``), played in parallel,
  and merged back in one-process order (group and trajectory ids as the local manager
  numbers them);
* **failure** — a worker that dies mid-batch (``RayActorError``) is replaced in its bundle
  and brought to the latest weights; the trajectories it was playing are returned as
  *dropped* (``end_reason="worker_lost"``, counted in ``rollout/dropped_worker``), so the
  trainer never trains on them and never plays them again (the next batch has new seeds). A
  slot that dies more than ``cluster.max_worker_restarts`` times fails the run.

Ray starts here (``address=None``) bound to 127.0.0.1 with usage reporting off; ``"auto"``
joins a cluster started with ``ray start --head`` (multi-node, docs/architecture.md).
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from vagen.policy.base import SamplingParams
from vagen.rollout.records import Trajectory
from vagen.train.distributed import merge_parts, split_groups

logger = logging.getLogger(__name__)

#: Sampling-seed stride between workers (worker 0 samples exactly as the local manager does).
SEED_STRIDE = 104_729


class RolloutWorker:
    """The body of a Ray actor: a policy replica and envs playing the groups it is dealt."""

    def __init__(self, cfg_data: dict[str, Any], index: int, parts: int) -> None:
        import torch

        from vagen.config.schema import TrainConfig
        from vagen.policy.hf import HFPolicy
        from vagen.rollout import RolloutManager
        from vagen.train.model import apply_lora
        from vagen.train.rl import rollout_side

        cfg = TrainConfig.model_validate(cfg_data)
        self.index = index
        torch.manual_seed(cfg.trainer.seed)
        device = cfg.model.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.policy = HFPolicy(cfg.model.path, device=device, dtype=cfg.model.dtype)
        if cfg.model.lora_rank:
            self.policy.model = apply_lora(self.policy.model, cfg.model.lora_rank, cfg.model.lora_alpha)
        self.policy.model.eval()
        builder, make_env, self.pool, limits = rollout_side(cfg, self.policy.processor, parts)
        self.manager = RolloutManager(make_env, self.policy, builder, limits)
        self._tensors = dict(self.policy.model.state_dict(keep_vars=True))

    def info(self) -> dict[str, Any]:
        import ray

        return {"index": self.index, "pid": os.getpid(), "node": ray.get_runtime_context().get_node_id(),
                "version": self.policy.policy_version}

    @staticmethod
    def digest_of(model) -> list[float]:
        """Per-tensor sums in float64 (a cheap fingerprint to check that weights arrived)."""
        return [float(v.detach().double().sum()) for _, v in sorted(model.state_dict().items())]

    def digest(self) -> list[float]:
        return self.digest_of(self.policy.model)

    def load_weights(self, tensors: dict[str, Any], version: int) -> float:
        """Copy named tensors into the replica in place; stamp ``version``."""
        import torch

        t0 = time.perf_counter()
        unknown = sorted(set(tensors) - set(self._tensors))
        if unknown:
            raise KeyError(f"rollout worker {self.index}: no tensors named {unknown[:3]} (of {len(unknown)})")
        with self.policy._lock, torch.no_grad():
            for k, v in tensors.items():
                self._tensors[k].data.copy_(v)
        self.policy.policy_version = int(version)
        return time.perf_counter() - t0

    def collect(self, seeds: list[int], group_size: int, sampling: SamplingParams,
                sample_seed: int | None) -> tuple[list[Trajectory], dict[str, float]]:
        return self.manager.collect(seeds, group_size, sampling, sample_seed=sample_seed)

    def close(self) -> None:
        self.manager.close()
        if self.pool is not None:
            self.pool.close()


def ray_available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def init_ray(cluster) -> bool:
    """Connect to (or start) Ray; True when this call started it (and should shut it down)."""
    try:
        import ray
    except ImportError as e:
        raise RuntimeError("cluster.backend=ray needs Ray: pip install 'vagen[ray]'") from e
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING,
                              "log_to_driver": True, "ignore_reinit_error": True}
    if cluster.address:
        ray.init(address=cluster.address, **kwargs)
    else:
        need = int(-(-cluster.rollout_workers * cluster.worker_cpus // 1))
        ray.init(num_cpus=cluster.local_num_cpus or max(1, need), _node_ip_address="127.0.0.1", **kwargs)
    return True


class RayRollouts:
    """The trainer's handle on ``cluster.rollout_workers`` Ray rollout actors."""

    def __init__(self, cfg, name: str = "rollouts") -> None:
        import ray
        from ray.util.placement_group import placement_group

        self.cfg, self.cluster, self.name = cfg, cfg.cluster, name
        self.started_ray = init_ray(self.cluster)
        self.n = self.cluster.rollout_workers
        bundle = {"CPU": float(self.cluster.worker_cpus)}
        if self.cluster.worker_gpus:
            bundle["GPU"] = float(self.cluster.worker_gpus)
        self.pg = placement_group([dict(bundle) for _ in range(self.n)], strategy=self.cluster.placement)
        try:
            ray.get(self.pg.ready(), timeout=self.cluster.placement_timeout_s)
        except Exception as e:  # noqa: BLE001 - GetTimeoutError and friends
            ray.util.remove_placement_group(self.pg)
            raise RuntimeError(f"Ray could not place {self.n} rollout workers of {bundle} "
                               f"({self.cluster.placement}) within {self.cluster.placement_timeout_s} s: "
                               f"{ray.cluster_resources()} in the cluster") from e
        self._remote_cls = ray.remote(RolloutWorker)
        self._cfg_data = cfg.model_dump(mode="json")
        self.workers = [self._spawn(i) for i in range(self.n)]
        self.restarts = [0] * self.n
        self.replaced = 0
        self.policy_version = -1          # the version the workers hold (a WeightSync reads it)
        self._full: dict[str, Any] = {}   # CPU copy of the latest weights, for replacements
        self.last_push_s = 0.0

    def _spawn(self, i: int):
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        strategy = PlacementGroupSchedulingStrategy(placement_group=self.pg, placement_group_bundle_index=i)
        return self._remote_cls.options(num_cpus=self.cluster.worker_cpus, num_gpus=self.cluster.worker_gpus,
                                        scheduling_strategy=strategy, max_restarts=0,
                                        # 2 threads: a weight push lands between two generate calls
                                        # of a batch in flight (the replica's lock), not after it
                                        max_concurrency=2).remote(self._cfg_data, i, self.n)

    def info(self) -> list[dict[str, Any]]:
        import ray

        return ray.get([w.info.remote() for w in self.workers])

    # -- weights ---------------------------------------------------------------------------
    def snapshot(self, model) -> dict[str, Any]:
        """CPU copies of what a push sends: every tensor the first time, then only the
        trainable ones (buffers and frozen weights never change; LoRA sends adapters only)."""
        import torch

        with torch.no_grad():
            if not self._full:
                return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
            trainable = {n for n, p in model.named_parameters() if p.requires_grad}
            return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items() if k in trainable}

    def send(self, tensors: dict[str, Any], version: int) -> float:
        """Put ``tensors`` in the object store once and have every worker load them."""
        import ray

        t0 = time.perf_counter()
        self._full.update(tensors)
        ref = ray.put(tensors)
        ray.get([w.load_weights.remote(ref, version) for w in self.workers])
        self.policy_version = int(version)
        self.last_push_s = time.perf_counter() - t0
        return self.last_push_s

    def push(self, model, version: int) -> float:
        return self.send(self.snapshot(model), version)

    # -- rollouts --------------------------------------------------------------------------
    def collect(self, seeds: list[int], group_size: int, sampling: SamplingParams,
                sample_seed: int | None = None) -> tuple[list[Trajectory], dict[str, float]]:
        import ray

        from vagen.rollout import RolloutManager

        t0 = time.perf_counter()
        deals = split_groups(seeds, self.n)
        futures = {}
        for w, (my_seeds, _) in enumerate(deals):
            if my_seeds:
                seed = None if sample_seed is None else sample_seed + SEED_STRIDE * w
                futures[w] = self.workers[w].collect.remote(my_seeds, group_size, sampling, seed)
        parts, times, lost = [], [0.0, 0.0, 0.0], 0
        for w, fut in futures.items():
            my_seeds, groups = deals[w]
            try:
                trajs, m = ray.get(fut)
                times = [max(times[0], m["time/rollout_s"]), max(times[1], m["time/generate_s"]),
                         max(times[2], m["time/env_s"])]
            except ray.exceptions.RayActorError as e:
                trajs = self._lost(my_seeds, group_size)
                lost += len(trajs)
                logger.warning("rollout worker %d died (%s); dropping its %d trajectories and replacing it",
                               w, type(e).__name__, len(trajs))
                self._replace(w)
            parts.append((trajs, groups))
        merged = merge_parts(parts, group_size)
        metrics = RolloutManager._metrics(merged, *times)
        metrics.update({"rollout/dropped_worker": float(lost), "ray/workers_replaced": float(self.replaced),
                        "ray/collect_s": time.perf_counter() - t0, "ray/workers": float(self.n)})
        return merged, metrics

    @staticmethod
    def _lost(seeds: list[int], group_size: int) -> list[Trajectory]:
        """The trajectories a dead worker was playing, as dropped records (local numbering)."""
        out = []
        for j, seed in enumerate(seeds):
            for k in range(group_size):
                out.append(Trajectory(group_id=j, traj_id=j * group_size + k, seed=seed, prefix_ids=[], done=True,
                                      dropped=True, end_reason="worker_lost"))
        return out

    def _replace(self, w: int) -> None:
        import ray

        self.restarts[w] += 1
        if self.restarts[w] > self.cluster.max_worker_restarts:
            raise RuntimeError(f"rollout worker {w} died {self.restarts[w]} times "
                               f"(cluster.max_worker_restarts={self.cluster.max_worker_restarts})")
        with_ignored(lambda: ray.kill(self.workers[w]))
        self.workers[w] = self._spawn(w)
        self.replaced += 1
        if self._full:  # the replacement starts from the latest weights
            ray.get(self.workers[w].load_weights.remote(ray.put(self._full), self.policy_version))

    def close(self) -> None:
        import ray

        if not ray.is_initialized():
            return
        for w in self.workers:
            with_ignored(lambda w=w: ray.get(w.close.remote(), timeout=60))
            with_ignored(lambda w=w: ray.kill(w))
        with_ignored(lambda: ray.util.remove_placement_group(self.pg))
        if self.started_ray:
            ray.shutdown()


def with_ignored(fn) -> None:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - best-effort cleanup of a dead actor
        logger.debug("ignored during Ray cleanup: %s", e)


__all__ = ["RayRollouts", "RolloutWorker", "init_ray", "ray_available"]
