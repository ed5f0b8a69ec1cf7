"""Importable helpers for eval tests: a slowed-down oracle (so a run can be killed midway)
and a FrozenLake whose infrastructure fails on chosen seeds."""

from __future__ import annotations

import os
import time

from envs.base import EnvInfraError
from envs.frozenlake.env import FrozenLakeEnv


def slow_oracle():
    """``scripted:tests.eval.helpers:slow_oracle_fn`` is the callable; this is its factory form."""
    return slow_oracle_fn


def slow_oracle_fn(chat):
    from vagen.prompts.oracle import find_context, oracle_response

    time.sleep(float(os.environ.get("VAGEN_TEST_POLICY_DELAY", "0.05")))
    return oracle_response(find_context(chat))


class FlakyLake(FrozenLakeEnv):
    """Seeds in $VAGEN_TEST_ALWAYS_BROKEN always fail on reset (a dead sandbox, say); seeds in
    $VAGEN_TEST_BROKEN_ONCE fail on their first reset in this process only."""

    name = "frozenlake"
    failed_once: set[int] = set()

    def reset(self, *, seed=None, options=None):
        always = {int(s) for s in os.environ.get("VAGEN_TEST_ALWAYS_BROKEN", "").split(",") if s}
        once = {int(s) for s in os.environ.get("VAGEN_TEST_BROKEN_ONCE", "").split(",") if s}
        if seed in always:
            raise EnvInfraError(f"sandbox for seed {seed} died")
        if seed in once and seed not in FlakyLake.failed_once:
            FlakyLake.failed_once.add(seed)
            raise EnvInfraError(f"sandbox for seed {seed} died (once)")
        return super().reset(seed=seed, options=options)
