"""The rollout manager: ``groups x group_size`` agent envs played to the end, one
batched ``generate`` per turn across every live env.

Envs of a group share a seed (same level) so group-relative estimators compare like
with like. Envs are reset and stepped concurrently (sync envs run in a thread pool
under asyncio); an env raising ``EnvInfraError`` drops its trajectory (counted in the
metrics, never scored). Each trajectory ends on done, the env's truncation, the turn
limit, or its token budget. Records carry the policy version and rollout logprobs so a
later asynchronous trainer can correct for staleness.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from envs.base import EnvInfraError
from vagen.policy.base import Generation, SamplingParams
from vagen.prompts.agent_env import AgentEnv
from vagen.rollout.context import ContextBuilder
from vagen.rollout.records import Trajectory, TurnRecord, anchor_key

logger = logging.getLogger(__name__)


@dataclass
class RolloutLimits:
    """When a trajectory must stop regardless of the env."""

    max_turns: int = 5
    max_tokens_per_trajectory: int = 2048
    max_context_tokens: int = 8192
    #: Semi-online RL: how a turn the env patched (``info["patch"]``: the expert's action)
    #: appears in later turns' history — ``thought_free`` (the expert action, empty
    #: reasoning), ``off_policy`` (with the expert's stored thought), ``on_policy`` (with a
    #: reasoning the current policy writes given the expert action as a hint).
    patch_mode: str = "thought_free"
    #: GiGPO anchors: ``state`` hashes the observation without the env's feedback on the
    #: previous step (the same map groups whatever move led to it); ``observation`` hashes
    #: the observation as shown.
    anchor: str = "state"


class RolloutManager:
    """Plays batches of episodes with a token-level policy (``generate_ids``)."""

    def __init__(self, make_env: Callable[[], AgentEnv], policy, builder: ContextBuilder,
                 limits: RolloutLimits | None = None, max_workers: int = 8):
        if not hasattr(policy, "generate_ids"):
            raise TypeError(f"{type(policy).__name__} cannot generate from token contexts; use the hf or vllm backend")
        self.make_env = make_env
        self.policy = policy
        self.builder = builder
        self.limits = limits or RolloutLimits()
        self._envs: list[AgentEnv] = []
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="vagen-env")

    def _env(self, i: int) -> AgentEnv:
        while len(self._envs) <= i:
            self._envs.append(self.make_env())
        return self._envs[i]

    def collect(self, seeds: list[int], group_size: int, sampling: SamplingParams,
                sample_seed: int | None = None, policy=None) -> tuple[list[Trajectory], dict[str, float]]:
        """Play ``len(seeds) x group_size`` episodes; return trajectories and metrics.
        ``policy`` overrides the manager's (the rollout replica in asynchronous training)."""
        return asyncio.run(self.acollect(seeds, group_size, sampling, sample_seed, policy))

    async def _call(self, fn, *args, **kwargs):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, lambda: fn(*args, **kwargs))

    async def acollect(self, seeds: list[int], group_size: int, sampling: SamplingParams,
                       sample_seed: int | None = None, policy=None) -> tuple[list[Trajectory], dict[str, float]]:
        t0 = time.perf_counter()
        policy = policy or self.policy
        n = len(seeds) * group_size
        envs = [self._env(i) for i in range(n)]
        trajs = [Trajectory(group_id=i // group_size, traj_id=i, seed=seeds[i // group_size],
                            prefix_ids=self.builder.system_ids(envs[i].system_prompt)) for i in range(n)]
        resets = await asyncio.gather(*(self._call(e.reset, seed=t.seed) for e, t in zip(envs, trajs, strict=True)),
                                      return_exceptions=True)
        obs: list[dict[str, Any] | None] = [None] * n
        # The env's and the agent layer's notes on the step that produced obs[i]: not part of the anchor.
        feedback: list[tuple[str, ...]] = [()] * n
        for i, r in enumerate(resets):
            if isinstance(r, EnvInfraError):
                self._drop(trajs[i], f"reset: {r}")
            elif isinstance(r, BaseException):
                raise r
            else:
                obs[i] = r[0]
        gen_time = env_time = 0.0
        for turn in range(self.limits.max_turns):
            live = [i for i in range(n) if not trajs[i].done]
            if not live:
                break
            segments, contexts = {}, []
            for i in live:
                parts = envs[i].user_message(obs[i])["content"]
                user_ids, images = self.builder.user_ids(parts)
                # Only an image cap ever shows a turn's text-only variant: skip the work otherwise.
                capped = images and self.builder.max_images is not None
                text_ids = self.builder.text_user_ids(parts) if capped else None
                ctx = self.builder.context(trajs[i], user_ids, images)
                akey = anchor_key(obs[i], feedback[i] if self.limits.anchor == "state" else ())
                segments[i] = (user_ids, images, text_ids, akey)
                contexts.append((i, ctx))
            ready = []
            for i, ctx in contexts:
                if len(ctx.input_ids) > self.limits.max_context_tokens:
                    self._end(trajs[i], "context_budget")
                else:
                    ready.append((i, ctx))
            if not ready:
                break
            turn_sampling = replace(sampling, seed=None if sample_seed is None else sample_seed * 1009 + turn)
            tg = time.perf_counter()
            gens: list[Generation] = await self._call(policy.generate_ids, [c for _, c in ready], turn_sampling)
            gen_time += time.perf_counter() - tg
            for (i, _), g in zip(ready, gens, strict=True):
                budget = self.limits.max_tokens_per_trajectory - trajs[i].response_tokens
                if len(g.token_ids) > budget:
                    # Over the trajectory's budget: keep what fits; the env still sees the cut text.
                    g = replace(g, token_ids=g.token_ids[:budget], logprobs=(g.logprobs or [])[:budget],
                                finish_reason="length",
                                text=self.builder.tokenizer.decode(g.token_ids[:budget], skip_special_tokens=True))
                    trajs[i].end_reason = "token_budget"
                segments[i] = (*segments[i], g)
            ready_ctx = dict(ready)
            patches: list[tuple[int, dict, Any]] = []
            te = time.perf_counter()
            steps = await asyncio.gather(*(self._call(envs[i].step, segments[i][4].text) for i, _ in ready),
                                         return_exceptions=True)
            env_time += time.perf_counter() - te
            for (i, _), result in zip(ready, steps, strict=True):
                user_ids, images, text_ids, akey, g = segments[i]
                if isinstance(result, EnvInfraError):
                    self._drop(trajs[i], f"step: {result}")
                    continue
                if isinstance(result, BaseException):
                    raise result
                obs[i], _, terminated, truncated, info = result
                feedback[i] = (str(info.get("feedback") or ""), str(info.get("format_note") or ""))
                parts = info["reward_parts"]
                trajs[i].turns.append(TurnRecord(
                    group_id=trajs[i].group_id, traj_id=i, turn=turn, user_ids=user_ids, images=list(images),
                    response_ids=list(g.token_ids), rollout_logprobs=list(g.logprobs or [0.0] * len(g.token_ids)),
                    policy_version=g.policy_version, response_text=g.text, finish_reason=g.finish_reason,
                    reward_env=parts["env"], reward_format=parts["format"], reward_world_model=parts["world_model"],
                    reward_penalty=parts["penalty"], anchor_key=akey, action_valid=bool(info["action_valid"]),
                    action_effective=bool(info["action_effective"]), format_ok=bool(info.get("format_ok")),
                    close_ids=self.builder.close_ids(g.token_ids), text_user_ids=text_ids,
                    metrics={k: float(v) for k, v in info.get("metrics", {}).items()}))
                if info.get("patch"):
                    patches.append((i, info["patch"], ready_ctx[i]))
                trajs[i].success = bool(info["success"])
                if terminated or truncated:
                    self._end(trajs[i], "success" if info["success"] else ("terminated" if terminated else "truncated"))
                elif trajs[i].end_reason == "token_budget":
                    self._end(trajs[i], "token_budget")
            if patches:
                tg = time.perf_counter()
                await self._patch(envs, trajs, patches, policy, turn_sampling)
                gen_time += time.perf_counter() - tg
        for t in trajs:
            if not t.done:
                self._end(t, "max_turns")
        return trajs, self._metrics(trajs, time.perf_counter() - t0, gen_time, env_time)

    async def _patch(self, envs, trajs: list[Trajectory], patches: list[tuple[int, dict, Any]], policy,
                     sampling: SamplingParams) -> None:
        """Replace each patched turn's history entry with the expert action, in the
        configured ``patch_mode``; the turn's own sample keeps the model's response."""
        mode = self.limits.patch_mode
        thoughts = {i: (p.get("thought") or "") if mode == "off_policy" else "" for i, p, _ in patches}
        if mode == "on_policy":  # one batched generation: a reasoning for the expert's action
            hints = []
            for i, p, ctx in patches:
                hint = self.builder.text_ids(envs[i].patch_hint(p["action"]))
                hints.append(type(ctx)(list(ctx.input_ids) + hint, list(ctx.images)))
            gens = await self._call(policy.generate_ids, hints, replace(sampling, max_tokens=min(sampling.max_tokens, 256)))
            thoughts = {i: g.text.split("</think>")[0].replace("<think>", "").strip()
                        for (i, _, _), g in zip(patches, gens, strict=True)}
        for i, p, _ in patches:
            text = envs[i].patch_response(p["action"], thoughts[i])
            turn = trajs[i].turns[-1]
            ids = self.builder.text_ids(text)
            turn.history_ids = ids + self.builder.close_ids(ids)
            turn.patch_text = text
            turn.metrics["patched"] = 1.0

    @staticmethod
    def _end(traj: Trajectory, reason: str) -> None:
        traj.done = True
        traj.end_reason = reason

    @staticmethod
    def _drop(traj: Trajectory, why: str) -> None:
        logger.warning("dropping trajectory %d (seed %d): infra failure %s", traj.traj_id, traj.seed, why)
        traj.done = True
        traj.dropped = True
        traj.end_reason = "infra_error"

    @staticmethod
    def _metrics(trajs: list[Trajectory], wall: float, gen_time: float, env_time: float) -> dict[str, float]:
        kept = [t for t in trajs if not t.dropped]
        turns = [u for t in kept for u in t.turns]
        mean = lambda xs: float(sum(xs) / len(xs)) if xs else 0.0  # noqa: E731
        m = {
            "rollout/trajectories": float(len(trajs)),
            "rollout/dropped_infra": float(len(trajs) - len(kept)),
            "success": mean([float(t.success) for t in kept]),
            "return": mean([t.total_reward for t in kept]),
            "reward/env": mean([sum(u.reward_env for u in t.turns) for t in kept]),
            "reward/format": mean([sum(u.reward_format for u in t.turns) for t in kept]),
            "reward/world_model": mean([sum(u.reward_world_model for u in t.turns) for t in kept]),
            "reward/penalty": mean([sum(u.reward_penalty for u in t.turns) for t in kept]),
            "rollout/turns": mean([float(len(t.turns)) for t in kept]),
            "rollout/valid_action_rate": mean([float(u.action_valid) for u in turns]),
            "rollout/effective_action_rate": mean([float(u.action_effective) for u in turns]),
            "rollout/format_ok_rate": mean([float(u.format_ok) for u in turns]),
            "rollout/response_length": mean([float(len(u.response_ids)) for u in turns]),
            "rollout/generated_tokens": float(sum(len(u.response_ids) for t in trajs for u in t.turns)),
            "time/rollout_s": wall,
            "time/generate_s": gen_time,
            "time/env_s": env_time,
        }
        # Episode-level numbers an env reports on its last step (``episode/...``, e.g. OSWorld's
        # per-domain success): averaged over the trajectories that report them.
        episode: dict[str, list[float]] = {}
        for t in kept:
            if t.turns:
                for k, v in t.turns[-1].metrics.items():
                    if k.startswith("episode/"):
                        episode.setdefault(k, []).append(v)
        m.update({k: mean(v) for k, v in sorted(episode.items())})
        for reason, count in Counter(t.end_reason for t in trajs).items():
            m[f"rollout/end_{reason}"] = count / max(len(trajs), 1)
        return m

    def close(self) -> None:
        for e in self._envs:
            e.close()
        self._pool.shutdown(wait=False)
