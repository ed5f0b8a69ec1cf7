"""Estimators and filters by name, as ``algo.advantage`` / ``algo.filter`` spell them.

The advantage estimators do not share one signature; by input level:

    trajectory  grpo, dr_grpo, rloo, reinforce_pp   (scores, group_index, ...) -> [N]
    token       gae                                  (token_rewards, values, response_mask, ...)
    turn/token  turn_gae, bilevel_gae                (..., turn_index, ...) -> ([B, T], [B, T])
    turn        gigpo                                (scores, group_index, per-turn records) -> [M]
    turn        semi_online                          (step returns, per-turn records, tasks, episode returns) -> [M]

``ADVANTAGE_LEVELS`` records that level so a trainer can tell what to feed each one (and
whether it needs a critic: the token/turn-token ones do).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vagen.algos.filters import drop_zero_variance, keep_all, starpo_s
from vagen.algos.gae import bilevel_gae, gae, turn_gae
from vagen.algos.group_advantages import dr_grpo, gigpo, grpo, reinforce_pp, rloo
from vagen.algos.semi_online import semi_online_advantages, uis1_task_filter

ADVANTAGES: dict[str, Callable[..., Any]] = {
    "grpo": grpo,
    "dr_grpo": dr_grpo,
    "rloo": rloo,
    "reinforce_pp": reinforce_pp,
    "gae": gae,
    "turn_gae": turn_gae,
    "bilevel_gae": bilevel_gae,
    "gigpo": gigpo,
    "semi_online": semi_online_advantages,
}

ADVANTAGE_LEVELS: dict[str, str] = {
    "grpo": "trajectory",
    "dr_grpo": "trajectory",
    "rloo": "trajectory",
    "reinforce_pp": "trajectory",
    "gae": "token",
    "turn_gae": "turn-token",
    "bilevel_gae": "turn-token",
    "gigpo": "turn",
    "semi_online": "turn",
}

FILTERS: dict[str, Callable[..., Any]] = {
    "none": keep_all,
    "starpo_s": starpo_s,
    "zero_variance": drop_zero_variance,
    "uis1": uis1_task_filter,
}


def _lookup(table: dict[str, Callable[..., Any]], kind: str, name: str) -> Callable[..., Any]:
    try:
        return table[name]
    except KeyError:
        raise ValueError(f"unknown {kind} {name!r}; expected one of: {', '.join(sorted(table))}") from None


def get_advantage(name: str) -> Callable[..., Any]:
    """The advantage estimator registered as ``name``; ``ValueError`` listing the names otherwise."""
    return _lookup(ADVANTAGES, "advantage estimator", name)


def get_filter(name: str) -> Callable[..., Any]:
    """The trajectory filter registered as ``name``; ``ValueError`` listing the names otherwise."""
    return _lookup(FILTERS, "filter", name)
