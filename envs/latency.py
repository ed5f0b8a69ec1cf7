"""Simulated env latency: any registered env, with each reset and step delayed by a random
time drawn like a GUI sandbox's (``envs.make("latency", env="frozenlake", size=4, ...)``).

For measuring and testing what asynchronous rollouts buy when envs, not the model, are
the bottleneck (``benchmarks/async_rollout.py``) without starting desktops. The defaults
follow the measured OSWorld figures in benchmarks/RESULTS.md: a step is lognormal with
median 0.37 s (p90 ~0.55 s), plus a stall of 1-3 s with probability 0.05 (an app that
takes long to open or to save); a reset (task setup) is lognormal with median 0.9 s and a
heavy tail (p90 ~2 s). ``scale`` multiplies every delay. Delays come from the wrapper's own
RNG (``latency_seed`` + an instance counter), so they never change the episodes.
"""

from __future__ import annotations

import itertools
import math
import random
import time
from typing import Any

import gymnasium as gym

_instances = itertools.count()


class LatencyEnv(gym.Wrapper):
    name = "latency"
    description = "any env with GUI-like random reset/step delays (for async-rollout benchmarks and tests)"

    def __init__(self, env: str = "frozenlake", step_median_s: float = 0.37, step_sigma: float = 0.32,
                 stall_p: float = 0.05, stall_s: tuple[float, float] | list[float] = (1.0, 3.0),
                 reset_median_s: float = 0.9, reset_sigma: float = 0.6, scale: float = 1.0, latency_seed: int = 0,
                 **env_params: Any) -> None:
        import envs

        if env == "latency":
            raise ValueError("latency: wrap a real env, not another latency env")
        if min(step_median_s, reset_median_s, step_sigma, reset_sigma, scale) < 0 or not 0 <= stall_p <= 1:
            raise ValueError("latency: medians, sigmas and scale must be >= 0 and stall_p in [0, 1]")
        lo, hi = (float(x) for x in stall_s)
        if not 0 <= lo <= hi:
            raise ValueError(f"latency: stall_s must be [low, high] with 0 <= low <= high, got {stall_s}")
        super().__init__(envs.make(env, **env_params))
        self.step_median_s, self.step_sigma = float(step_median_s), float(step_sigma)
        self.reset_median_s, self.reset_sigma = float(reset_median_s), float(reset_sigma)
        self.stall_p, self.stall_s, self.scale = float(stall_p), (lo, hi), float(scale)
        self.rng = random.Random(latency_seed * 1_000_003 + next(_instances))
        self.slept_s = 0.0

    def _sleep(self, median: float, sigma: float, stall: bool) -> float:
        d = median * math.exp(self.rng.gauss(0.0, sigma)) if median > 0 else 0.0
        if stall and self.rng.random() < self.stall_p:
            d += self.rng.uniform(*self.stall_s)
        d *= self.scale
        if d > 0:
            time.sleep(d)
        self.slept_s += d
        return d

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._sleep(self.reset_median_s, self.reset_sigma, stall=False)
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        self._sleep(self.step_median_s, self.step_sigma, stall=True)
        return self.env.step(action)
