"""The RL trainer: rollouts -> filter -> advantages -> PPO update, one step per call.

``RLTrainer.train_step`` is the whole algorithm on one screen; everything it calls is a
small component (rollout manager, context builder, ``vagen.algos`` estimators and
losses, checkpoint and metrics helpers).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import random
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

import envs
from vagen import algos
from vagen.config.schema import TrainConfig
from vagen.eval.stats import success_rate
from vagen.policy.base import SamplingParams
from vagen.policy.hf import HFPolicy
from vagen.prompts.agent_env import AgentConfig, AgentEnv
from vagen.rollout import ContextBuilder, RolloutLimits, RolloutManager, Sample, Trajectory
from vagen.rollout.async_driver import AsyncRollouts
from vagen.rollout.weight_sync import GatheredCopy, InProcessCopy, RemotePush, SharedWeights, VLLMLoad
from vagen.train import checkpoint
from vagen.train import distributed as D
from vagen.train.advantages import (
    compute_advantages,
    needs_critic,
    semi_online_step_returns,
    trajectory_scores,
    turn_records,
)
from vagen.train.batch import collate
from vagen.train.metrics import MetricsLogger
from vagen.train.model import MixedPrecision, apply_lora, forward_logprobs, make_critic, make_reference

logger = logging.getLogger(__name__)


def lr_lambda(schedule: str, warmup: int, total: int):
    """Multiplier for the base LR at optimizer step ``s`` (linear warm-up, then the schedule)."""

    def f(s: int) -> float:
        if warmup and s < warmup:
            return (s + 1) / warmup
        progress = min(1.0, (s - warmup) / max(1, total - warmup))
        if schedule == "cosine":
            return 0.5 * (1 + math.cos(math.pi * progress))
        if schedule == "linear":
            return 1.0 - progress
        return 1.0

    return f


def agent_config(cfg) -> AgentConfig:
    r = cfg.reward
    return AgentConfig(format=cfg.prompt.format, representation=cfg.prompt.representation,
                       system_prompt=cfg.prompt.system_prompt,
                       format_reward=r.format_reward, format_penalty=r.format_penalty,
                       execute_on_bad_format=r.execute_on_bad_format, observation_weight=r.wm_observation_weight,
                       prediction_weight=r.wm_prediction_weight, wm_tolerance=r.wm_tolerance)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def rollout_side(cfg: TrainConfig, processor, parts: int = 1):
    """What plays episodes, for the trainer and for remote rollout workers alike: the context
    builder, an env factory, the sandbox pool (None for non-GUI envs) sized for this process's
    share (1 / ``parts``) of the groups, and the rollout limits."""
    builder = ContextBuilder(processor, history=cfg.prompt.history, history_k=cfg.prompt.history_k,
                             max_images=cfg.prompt.max_images if cfg.prompt.max_images else None)
    acfg = agent_config(cfg)
    pool = RLTrainer._sandbox_pool(cfg, parts)
    params = {**cfg.env.params, **({"pool": pool} if pool is not None else {})}

    def make_env():
        return AgentEnv(envs.make(cfg.env.name, **params), acfg)

    return builder, make_env, pool, RolloutLimits(cfg.rollout.max_turns, cfg.rollout.max_tokens_per_trajectory,
                                                  patch_mode=cfg.rollout.patch_mode, anchor=cfg.rollout.anchor)


class RLTrainer:
    """Owns the policy, optional critic/reference, optimizers, rollouts and the run dir."""

    def __init__(self, cfg: TrainConfig):
        self.cfg = cfg
        t, a = cfg.trainer, cfg.algo
        seed_everything(t.seed)
        self.fsdp = t.strategy == "fsdp2"
        self.dist = D.init_distributed(cfg.model.device) if self.fsdp else D.DistContext()
        self.run_dir = Path(t.out_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.dist.is_main:
            (self.run_dir / "config.yaml").write_text(_yaml(cfg))
        device = cfg.model.device
        if self.fsdp and torch.cuda.is_available() and device in ("auto", "cuda"):
            device = f"cuda:{self.dist.local_rank}"  # one GPU per rank
        self.policy = HFPolicy(cfg.model.path, device=device, dtype=cfg.model.dtype,
                               max_batch_size=cfg.policy.max_batch_size)
        if cfg.model.lora_rank:
            self.policy.model = apply_lora(self.policy.model, cfg.model.lora_rank, cfg.model.lora_alpha)
        self.actor = self.policy.model
        # bf16 models: fp32 master weights for what trains, bf16 autocast for forwards + generation
        self.precision = MixedPrecision(self.policy.dtype, self.policy.device, cfg.model.master_weights)
        self.precision.promote(self.actor)
        self.policy.autocast_dtype = self.precision.autocast_dtype
        if t.gradient_checkpointing:  # before the critic copies the backbone (it inherits it)
            enable = getattr(self.actor, "activation_checkpointing_enable", None)  # transformers >= 5.2x
            if enable is not None:
                enable(activation_checkpointing_kwargs={"use_reentrant": False})
            else:
                self.actor.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        parts = self.dist.world if self.fsdp else 1  # each rank plays its share of the groups
        self.builder, self.make_env, self.pool, limits = rollout_side(cfg, self.policy.processor, parts)
        # Asynchronous mode: a replica generates (weights pushed before each batch) while the
        # actor trains; the lock keeps a push from seeing a half-applied update. FSDP2: the
        # sharded actor cannot generate, so every rank generates with a full replica.
        self.weights_lock = threading.Lock()
        self.on_ray = cfg.cluster.backend == "ray"
        self.on_vllm = cfg.policy.backend == "vllm"
        local_replica = (t.rollout_mode == "async" and not self.on_ray and not self.on_vllm) or self.fsdp
        self.rollout_policy = self.policy.replica() if local_replica else self.policy
        if self.on_vllm:  # a vLLM engine generates (GPU); the HF actor trains and validates
            from vagen.policy.vllm import VLLMPolicy

            p = cfg.policy
            self.rollout_policy = VLLMPolicy(cfg.model.path, dtype=cfg.model.dtype,
                                             gpu_memory_utilization=p.gpu_memory_utilization,
                                             max_model_len=p.max_model_len, sleep_mode=p.vllm_sleep)
        self.rollouts = RolloutManager(self.make_env, self.rollout_policy if (self.fsdp or self.on_vllm)
                                       else self.policy, self.builder, limits)
        self.async_rollouts: AsyncRollouts | None = None
        self.remote_rollouts: list = []
        self._slot_managers = [self.rollouts]
        self.critic = make_critic(self.actor) if needs_critic(a.advantage) else None
        self.ref = make_reference(self.actor) if a.kl_coef > 0 else None
        if self.ref is not None and self.precision.enabled:
            self.ref.to(self.precision.compute)  # frozen: no master copy needed
        if self.fsdp:  # shard after the replica, critic and reference copied the full weights
            dtype = torch.bfloat16 if cfg.model.dtype == "bfloat16" else None
            D.shard_model(self.actor, dtype)
            if self.critic is not None:
                D.shard_model(self.critic, dtype)
            self.weight_sync = GatheredCopy(self.actor, self.rollout_policy)
        elif self.on_vllm:
            dtype = next(self.actor.parameters()).dtype if cfg.model.dtype == "auto" else getattr(torch, cfg.model.dtype)
            self.weight_sync = VLLMLoad(self.actor, self.rollout_policy, self.weights_lock, dtype,
                                        cfg.policy.weight_bucket_mb)
        elif self.on_ray:  # rollout workers are Ray actors: one set per batch in flight
            from vagen.cluster import RayRollouts

            sets = t.max_staleness + 1 if t.rollout_mode == "async" else 1
            self.remote_rollouts = []
            for i in range(sets):
                self.remote_rollouts.append(RayRollouts(cfg, name=f"slot{i}"))
            self.weight_sync = RemotePush(self.actor, self.remote_rollouts, self.weights_lock)
        elif t.rollout_mode == "async":
            self.weight_sync = InProcessCopy(self.actor, self.rollout_policy, self.weights_lock)
        else:
            self.weight_sync = SharedWeights(self.policy)
        self.opt = torch.optim.AdamW([p for p in self.actor.parameters() if p.requires_grad], lr=t.lr,
                                    weight_decay=t.weight_decay)
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lr_lambda(t.lr_schedule, t.warmup_steps, t.steps))
        self.critic_opt = (torch.optim.AdamW(self.critic.parameters(), lr=a.critic_lr) if self.critic else None)
        self.step = 0
        self.metrics = (MetricsLogger(self.run_dir, cfg.model_dump(mode="json"), tensorboard=t.tensorboard)
                        if self.dist.is_main else _NoMetrics())
        if t.resume != "never":
            self._resume(t.resume)
        if self.fsdp:
            self.weight_sync.push(self.policy.policy_version)

    @staticmethod
    def _sandbox_pool(cfg: TrainConfig, parts: int = 1):
        """One pool of ``sandbox.num`` sandboxes shared by every env of a GUI env class
        (desktops for ``needs_sandbox``; browsers for web envs when ``sandbox.kind`` is
        browser, see ``sandboxes.pool.pool_kind``); the rollout plays ``groups x group_size`` episodes at once, so
        the pool must hold that many (a smaller one would deadlock on leases)."""
        from sandboxes.pool import pool_kind

        if pool_kind(envs.env_class(cfg.env.name), cfg.sandbox) is None:
            return None
        n = -(-cfg.rollout.groups // parts) * cfg.rollout.group_size  # this process's share of the groups
        what = "rollout.groups x rollout.group_size" + (f" / {parts} (ranks or workers)" if parts > 1 else "")
        if cfg.trainer.rollout_mode == "async":  # eta + 1 batches in flight, each on its own envs
            n *= cfg.trainer.max_staleness + 1
            what += " x (trainer.max_staleness + 1)"
        if cfg.sandbox.num < n:
            raise ValueError(f"env {cfg.env.name!r} plays {what} = {n} episodes at once "
                             f"but sandbox.num = {cfg.sandbox.num}; set sandbox.num >= {n}")
        from sandboxes.pool import SandboxPool
        from sandboxes.providers import provider_from_config

        return SandboxPool(provider_from_config(cfg.sandbox), size=cfg.sandbox.num)

    # -- one training step ----------------------------------------------------------------
    def produce(self, step: int, policy=None, slot: int = 0) -> tuple[list[Trajectory], dict[str, float]]:
        """Play the batch of training step ``step`` on the envs of ``slot``: its seeds and
        sampling seed depend on the step only, so sync and async (eta = 0) runs play the same
        episodes."""
        c = self.cfg
        seeds = [c.trainer.seed * 1_000_003 + step * c.rollout.groups + g for g in range(c.rollout.groups)]
        sample_seed = c.trainer.seed * 7919 + step
        if c.trainer.rollout_mode == "sync":
            self._catch_up()  # vLLM engine / Ray workers: the weights of the last update first
        if self.on_ray:
            trajs, m = self.remote_rollouts[slot].collect(seeds, c.rollout.group_size, self.sampling(), sample_seed)
            return trajs, {**m, "sync/weights_s": self.weight_sync.last_s}
        if self.dist.world == 1:
            out = self._manager(slot).collect(seeds, c.rollout.group_size, self.sampling(),
                                              sample_seed=sample_seed, policy=policy)
            if self.on_vllm and c.policy.vllm_sleep and c.trainer.rollout_mode == "sync":
                self.rollout_policy.sleep()  # free the GPU for the update; the next push wakes it
            return out
        # FSDP2: this rank plays groups rank, rank + W, ...; every rank gets the whole batch back.
        my_seeds, my_groups = D.split_groups(seeds, self.dist.world)[self.dist.rank]
        trajs, m = self._manager(slot).collect(my_seeds, c.rollout.group_size, self.sampling(),
                                               sample_seed=sample_seed + 104_729 * self.dist.rank, policy=policy)
        parts = self.dist.all_gather_objects((trajs, my_groups, [m["time/rollout_s"], m["time/generate_s"],
                                                                 m["time/env_s"]]))
        merged = D.merge_parts([(p[0], p[1]) for p in parts], c.rollout.group_size)
        times = [max(p[2][k] for p in parts) for k in range(3)]
        return merged, RolloutManager._metrics(merged, *times)

    def _catch_up(self) -> None:
        """Push the trainer's weights to the rollout side if it holds an older version (outside
        asynchronous mode, whose workers push themselves). The shared model and FSDP2's replica
        (pushed after every update) are never behind."""
        if self.weight_sync.rollout_policy.policy_version != self.policy.policy_version:
            self.weight_sync.push(self.policy.policy_version)

    def _manager(self, slot: int) -> RolloutManager:
        """Slot 0 is ``self.rollouts`` (also validation's); async workers 1.. get their own envs."""
        while len(self._slot_managers) <= slot:
            self._slot_managers.append(RolloutManager(self.make_env, self.policy, self.builder, self.rollouts.limits))
        return self._slot_managers[slot]

    def _async(self) -> AsyncRollouts:
        if self.async_rollouts is None:
            self.weight_sync.push(self.policy.policy_version)
            self.async_rollouts = AsyncRollouts(lambda step, slot: self.produce(step, self.rollout_policy, slot),
                                                self.weight_sync,
                                                version=lambda: self.policy.policy_version,
                                                eta=self.cfg.trainer.max_staleness, first_step=self.step,
                                                last_step=self.cfg.trainer.steps)
        return self.async_rollouts

    def train_step(self) -> dict[str, Any]:
        c, a, t0 = self.cfg, self.cfg.algo, time.perf_counter()
        if c.trainer.rollout_mode == "async":
            batch = self._async().get(self.step)
            trajs, metrics = batch.trajs, dict(batch.metrics)
            metrics.update({"async/staleness": float(self.policy.policy_version - batch.version),
                            "async/trainer_wait_s": batch.extra["wait_s"], "async/sync_s": batch.sync_s,
                            "async/buffered": float(self.async_rollouts.buffered())})
        else:
            trajs, metrics = self.produce(self.step)
        trajs = [tr for tr in trajs if not tr.dropped and tr.turns]
        trajs, filter_metrics = self.filter(trajs)                       # StarPO-S / zero-variance
        samples = self.samples(trajs)                                    # exact ids, per turn or per trajectory
        old_lp, ref_lp, values = self.score(samples)                     # no-grad forwards
        advantages, returns, adv_metrics = compute_advantages(a, trajs, samples, values)
        advantages = self.weight_turns(samples, advantages)
        with self.weights_lock:                                          # no weight push mid-update
            update_metrics = self.update(samples, advantages, returns, old_lp, ref_lp)
            self.policy.policy_version += 1
        if self.fsdp:                                                    # gather the shards into the replica
            update_metrics["sync/weights_s"] = self.weight_sync.push(self.policy.policy_version)
        if self.async_rollouts is not None:
            self.async_rollouts.completed(self.step)                     # lets the producer run ahead
        out = {**metrics, **filter_metrics, **adv_metrics, **update_metrics,
               "lr": self.sched.get_last_lr()[0], "time/step_s": time.perf_counter() - t0}
        if str(self.policy.device).startswith("cuda"):  # this step's peak, then reset
            out["perf/gpu_peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
            torch.cuda.reset_peak_memory_stats()
        return out

    # -- components ---------------------------------------------------------------------------
    def sampling(self, greedy: bool = False) -> SamplingParams:
        s = self.cfg.sampling
        return SamplingParams(temperature=0.0 if greedy else s.temperature, top_p=s.top_p, max_tokens=s.max_tokens,
                              stop=tuple(s.stop), include_stop=s.include_stop)

    def filter(self, trajs: list[Trajectory]) -> tuple[list[Trajectory], dict[str, float]]:
        a = self.cfg.algo
        if a.filter == "none" or not trajs:
            return trajs, {"filter/kept_fraction": 1.0}
        scores, groups = trajectory_scores(trajs)
        if a.filter == "starpo_s":
            keep, m = algos.starpo_s(scores, groups, keep_ratio=a.filter_keep_ratio, mode=a.filter_mode)
        elif a.filter == "uis1":  # UI-S1: tasks whose step-0 returns vary across the group
            rec = turn_records(trajs)
            returns = semi_online_step_returns(a, rec)
            r0 = torch.stack([returns[rec.pos[(j, t.turns[0].turn)]] for j, t in enumerate(trajs)])
            keep, m = algos.uis1_task_filter(r0, groups, min_std=a.uis1_min_std)
        else:
            keep, m = algos.drop_zero_variance(scores, groups)
        kept = [tr for tr, k in zip(trajs, keep.tolist(), strict=True) if k]
        return kept, {f"filter/{k}": float(v) for k, v in m.items()}

    def samples(self, trajs: list[Trajectory]) -> list[Sample]:
        if self.cfg.trainer.sample_mode == "trajectory":
            return [self.builder.trajectory_sample(tr) for tr in trajs]
        return [s for tr in trajs for s in self.builder.turn_samples(tr)]

    def weight_turns(self, samples: list[Sample], advantages: list[list[float]]) -> list[list[float]]:
        """With per-turn samples and ``algo.turn_weighting=trajectory``, give each
        trajectory equal total weight by scaling its turns' advantages by 1/#turns."""
        if self.cfg.trainer.sample_mode != "turn" or self.cfg.algo.turn_weighting != "trajectory":
            return advantages
        return [[x / max(1, len(s.traj.turns)) for x in adv] for s, adv in zip(samples, advantages, strict=True)]

    def _batches(self, samples: list[Sample], size: int):
        for i in range(0, len(samples), size):
            yield samples[i:i + size]

    @torch.no_grad()
    def score(self, samples: list[Sample]):
        """Old-policy and reference log-probs and critic values for every sample."""
        temp = self.cfg.sampling.temperature or 1.0
        recompute = self.cfg.trainer.old_logprobs == "recompute"
        self.actor.eval()
        if self.critic is not None:
            self.critic.eval()
        mbs = list(self._batches(samples, self.cfg.trainer.micro_batch_size))
        # FSDP2: micro-batches round-robin over the ranks (padded: equal forward counts), then gathered.
        mine, _ = D.round_robin(len(mbs), self.dist.rank, self.dist.world)
        done: dict[int, tuple[list, list, list]] = {}
        for j in mine:
            mb = mbs[j if j is not None else 0]
            batch = collate(mb, self.policy)
            lens = [len(s.input_ids) for s in mb]
            old, ref, vals = [], [], []
            if recompute:
                with self.precision.autocast():
                    lp, _ = forward_logprobs(self.actor, batch, temp)
                old = [row[:n].tolist() for row, n in zip(lp, lens, strict=True)]
            else:
                old = [list(s.old_logprobs) for s in mb]
            if self.ref is not None:
                with self.precision.autocast():
                    lp, _ = forward_logprobs(self.ref, batch, temp)
                ref = [row[:n].tolist() for row, n in zip(lp, lens, strict=True)]
            if self.critic is not None:
                with self.precision.autocast():
                    v = self.critic(batch)
                vals = [row[:n].tolist() for row, n in zip(v, lens, strict=True)]
            if j is not None:
                done[j] = (old, ref, vals)
        if self.dist.world > 1:
            for part in self.dist.all_gather_objects(done):
                done.update(part)
        old = [x for j in range(len(mbs)) for x in done[j][0]]
        ref = [x for j in range(len(mbs)) for x in done[j][1]]
        vals = [x for j in range(len(mbs)) for x in done[j][2]]
        return old, (ref or None), (vals or None)

    def update(self, samples, advantages, returns, old_lp, ref_lp) -> dict[str, float]:
        """PPO epochs over shuffled mini-batches with gradient accumulation over micro-batches."""
        c = self.cfg.trainer
        gen = torch.Generator().manual_seed(c.seed * 104_729 + self.step)
        stats: dict[str, list[float]] = {}
        skipped = 0
        self.actor.train()
        if self.critic is not None:  # train mode: activation checkpointing applies to it too
            self.critic.train()
        for _ in range(c.ppo_epochs):
            order = torch.randperm(len(samples), generator=gen).tolist()
            for start in range(0, len(order), c.mini_batch_size):
                idx = order[start:start + c.mini_batch_size]
                total_tokens = sum(sum(samples[i].loss_mask) for i in idx) or 1
                self.opt.zero_grad(set_to_none=True)
                if self.critic_opt:
                    self.critic_opt.zero_grad(set_to_none=True)
                micro = [idx[m:m + c.micro_batch_size] for m in range(0, len(idx), c.micro_batch_size)]
                # FSDP2: this rank's micro-batches, padded with weight-0 ones so every rank runs the
                # same number of forward/backward passes (FSDP's collectives must line up).
                mine, _ = D.round_robin(len(micro), self.dist.rank, self.dist.world)
                for j in mine:
                    total, share, mstats = self._micro_loss(samples, micro[j if j is not None else 0], idx,
                                                            total_tokens, advantages, returns, old_lp, ref_lp)
                    # FSDP2 averages gradients over the ranks: x world gives the sum of the shares.
                    (total * (share * self.dist.world if j is not None else 0.0)).backward()
                    for k, v in (mstats.items() if j is not None else ()):
                        stats.setdefault(k, []).append(v)
                grad_norm = D.full_value(torch.nn.utils.clip_grad_norm_(self.actor.parameters(), c.grad_clip))
                if self.critic is not None:
                    torch.nn.utils.clip_grad_norm_(self.critic.parameters(), c.grad_clip)
                if not torch.isfinite(grad_norm):
                    skipped += 1  # a non-finite gradient would poison the weights: skip this update
                    continue
                self.opt.step()
                if self.critic_opt:
                    self.critic_opt.step()
                stats.setdefault("actor/grad_norm", []).append(float(grad_norm))
        self.sched.step()
        if self.dist.world > 1:  # every rank's micro-batch statistics
            merged: dict[str, list[float]] = {}
            for part in self.dist.all_gather_objects(stats):
                for k, v in part.items():
                    merged.setdefault(k, []).extend(v)
            stats = {k: v for k, v in merged.items() if k != "actor/grad_norm"} | {
                "actor/grad_norm": stats.get("actor/grad_norm", [])}  # global already, once per rank
        out = {k: float(np.mean(v)) for k, v in stats.items()}
        out["train/skipped_nonfinite"] = float(skipped)
        out["train/samples"] = float(len(samples))
        return out

    def _micro_loss(self, samples, mi, idx, total_tokens, advantages, returns, old_lp, ref_lp):
        """One micro-batch's PPO (+ KL, entropy, value) loss, its share of the mini-batch ``idx``
        (tokens or sequences) and its statistics."""
        a, temp = self.cfg.algo, self.cfg.sampling.temperature or 1.0
        extra = {"advantages": [advantages[i] for i in mi], "old": [old_lp[i] for i in mi]}
        if returns is not None:
            extra["returns"] = [returns[i] for i in mi]
        if ref_lp is not None:
            extra["ref"] = [ref_lp[i] for i in mi]
        batch = collate([samples[i] for i in mi], self.policy, extra)
        mask = batch["loss_mask"]
        share = float(mask.sum()) / total_tokens if a.loss_agg == "token-mean" else len(mi) / len(idx)
        stats: dict[str, float] = {}
        with self.precision.autocast():
            lp, ent = forward_logprobs(self.actor, batch, temp, with_entropy=True)
        weights = None
        if a.off_policy != "none":  # decoupled PPO / TIS: pi_prox / pi_behaviour per token
            weights = algos.behaviour_weights(batch["old"], batch["rollout_logprobs"], mask, a.is_cap)
            stats["actor/behaviour_weight"] = float((weights * mask).sum() / mask.sum().clamp(min=1))
        loss, pm = algos.ppo_clip_loss(lp, batch["old"], batch["advantages"], mask, clip_low=a.clip_ratio_low,
                                       clip_high=a.clip_ratio_high, dual_clip=a.dual_clip, agg=a.loss_agg,
                                       token_weights=weights)
        entropy = algos.aggregate(ent, mask, a.loss_agg)
        total = loss - a.entropy_coef * entropy
        if self.ref is not None:
            kl = algos.aggregate(algos.kl_penalty(lp, batch["ref"], a.kl_estimator), mask, a.loss_agg)
            total = total + a.kl_coef * kl
            stats["actor/kl"] = float(kl.detach())
        if self.critic is not None:
            with self.precision.autocast():
                v = self.critic(batch)
            vloss = 0.5 * (((v - batch["returns"]) ** 2) * mask).sum() / mask.sum().clamp(min=1)
            total = total + a.value_coef * vloss
            stats["loss/value"] = float(vloss.detach())
        stats.update({"loss/policy": float(loss.detach()), "loss": float(total.detach()),
                      "actor/entropy": float(entropy.detach())})
        stats.update({f"actor/{k}": float(v) for k, v in pm.items()})
        return total, share, stats

    # -- evaluation -------------------------------------------------------------------------
    def evaluate(self, episodes: int, greedy: bool, seed_start: int | None = None, chunk: int = 128) -> float:
        """Success rate on held-out seeds (one episode per seed)."""
        start = self.cfg.trainer.val_seed_start if seed_start is None else seed_start
        if self.pool is not None:  # at most one episode per sandbox at a time
            chunk = min(chunk, self.pool.size)
        outcomes: list[bool] = []
        if self.async_rollouts is None and self.rollouts.policy is self.weight_sync.rollout_policy:
            self._catch_up()  # validation generates with the rollout side: the weights just trained
        hold = self.async_rollouts.pause() if self.async_rollouts is not None else contextlib.nullcontext()
        r, w = self.dist.rank, self.dist.world   # FSDP2: rank r plays episodes r, r + w, ...
        with hold:  # the producer uses the same envs: it waits while validation runs
            for lo in range(0, episodes, chunk * w):
                seeds = list(range(start + lo, start + min(episodes, lo + chunk * w)))[r::w]
                trajs, _ = self.rollouts.collect(seeds, 1, self.sampling(greedy), sample_seed=start + lo + r)
                outcomes += [bool(tr.success) and not tr.dropped for tr in trajs]
        if w > 1:
            outcomes = [o for part in self.dist.all_gather_objects(outcomes) for o in part]
        # the same aggregation as `vagen eval` (a dropped episode counts as a failure, not as missing)
        self.last_val = success_rate(outcomes + [False] * (episodes - len(outcomes)))
        return float(self.last_val["rate"])

    # -- run loop, checkpoints ---------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        c = self.cfg.trainer
        t0 = time.perf_counter()
        m: dict[str, Any] = {}
        while self.step < c.steps:
            self.step += 1
            m = self.train_step()
            if c.val_every and (self.step % c.val_every == 0 or self.step == c.steps):
                for mode in ("sampled", "greedy"):
                    m[f"val/success_{mode}"] = self.evaluate(c.val_episodes, greedy=mode == "greedy")
                    m[f"val/success_{mode}_ci_low"] = float(self.last_val["ci_low"])
                    m[f"val/success_{mode}_ci_high"] = float(self.last_val["ci_high"])
            if self.step % c.log_every == 0 or self.step == c.steps:
                self.metrics.log(self.step, m)
                logger.info("step %d success %.3f return %.3f loss %.4f", self.step, m.get("success", 0.0),
                            m.get("return", 0.0), m.get("loss", float("nan")))
            if (c.save_every and self.step % c.save_every == 0) or self.step == c.steps:
                self.save()
        last = m if self.step else {}
        keys = ("success", "return", "reward/format", "reward/world_model", "loss", "val/success_sampled",
                "val/success_greedy")
        summary = {"steps": self.step, "wall_s": round(time.perf_counter() - t0, 2), "run_dir": str(self.run_dir),
                   "last": {k: last[k] for k in keys if k in last}}
        if self.dist.is_main:
            (self.run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
        self.metrics.close()
        self.close()
        return summary

    def close(self) -> None:
        """Stop the producer, close the envs and the sandbox pool (idempotent)."""
        if self.async_rollouts is not None:
            self.async_rollouts.close()
            self.async_rollouts = None
        for m in self._slot_managers:
            m.close()
        for remote in reversed(self.remote_rollouts):  # the set that started Ray closes last
            remote.close()
        self.remote_rollouts = []
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        if self.fsdp and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
            self.fsdp = False

    def _modules(self) -> tuple[dict, dict]:
        modules: dict[str, torch.nn.Module] = {"actor": self.actor}
        stateful: dict[str, Any] = {"opt": self.opt, "sched": self.sched}
        if self.critic is not None:
            modules["critic"] = self.critic
            stateful["critic_opt"] = self.critic_opt
        return modules, stateful

    def save(self) -> Path:
        modules, stateful = self._modules()
        ckpt_dir, hf_model = self.run_dir / "checkpoints", self.actor
        if self.fsdp:  # gather full weights and optimizer states (collectives); rank 0 writes them
            from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

            full = StateDictOptions(full_state_dict=True)
            owners = {"opt": self.actor, "critic_opt": self.critic}
            stateful = {k: (get_optimizer_state_dict(owners[k], s, options=full) if k in owners else s)
                        for k, s in stateful.items()}
            modules = {k: D.full_state_dict(m) for k, m in modules.items()}
            hf_model = self.rollout_policy.model  # the replica holds the full weights of this version
        path = ckpt_dir / f"step_{self.step:06d}"
        if self.dist.is_main:
            path = checkpoint.save_checkpoint(ckpt_dir, self.step, modules, stateful,
                                              {"policy_version": self.policy.policy_version,
                                               "world_size": self.dist.world},
                                              hf_model=hf_model, processor=self.policy.processor,
                                              keep_last=self.cfg.trainer.keep_checkpoints)
        self.dist.barrier()
        return path

    def _resume(self, how: str) -> None:
        path = checkpoint.latest_checkpoint(self.run_dir / "checkpoints") if how == "auto" else Path(how)
        if path is None:
            logger.info("resume=auto: no checkpoint in %s, starting fresh", self.run_dir)
            return
        modules, stateful = self._modules()
        if self.fsdp:
            state = self._load_fsdp(path, modules, stateful)
        else:
            state = checkpoint.load_checkpoint(path, modules, stateful)
        self.step = int(state["step"])
        self.policy.policy_version = int(state["policy_version"])
        self.metrics.truncate_after(self.step)
        logger.info("resumed from %s at step %d", path, self.step)

    def _load_fsdp(self, path: Path, modules: dict, stateful: dict) -> dict[str, Any]:
        """Every rank loads the full states into its shards (any world size can resume)."""
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

        weights = torch.load(path / "modules.pt", map_location="cpu", weights_only=False)
        optim = torch.load(path / "optim.pt", map_location="cpu", weights_only=False)
        owners = {"opt": "actor", "critic_opt": "critic"}
        for k, m in modules.items():
            D.load_full_state_dict(m, weights[k])
        for k, s in stateful.items():
            if k in owners:
                # strict=False: parameters that never had a gradient (e.g. the vision tower in a
                # text-only run) have no optimizer state, in the checkpoint as in the live run
                set_optimizer_state_dict(modules[owners[k]], s, optim[k],
                                         options=StateDictOptions(full_state_dict=True, strict=False))
            else:
                s.load_state_dict(optim[k])
        checkpoint.set_rng_state(torch.load(path / "rng.pt", weights_only=False))
        return json.loads((path / checkpoint.STATE_FILE).read_text())


class _NoMetrics:
    """Ranks other than 0 of an FSDP2 job log nothing (rank 0 logs the gathered batch)."""

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        pass

    def truncate_after(self, step: int) -> None:
        pass

    def close(self) -> None:
        pass


def _yaml(cfg: TrainConfig) -> str:
    from vagen.config import to_yaml

    return to_yaml(cfg)
