"""RL algorithms as pure, batched torch functions: filters -> advantages -> losses.

- ``group_advantages``: critic-free, group-relative estimators (GRPO / Dr. GRPO, RLOO,
  REINFORCE++ w/ baseline, GiGPO).
- ``gae``: critic-based, multi-turn and mask-aware (GAE, turn-level GAE, Bi-Level GAE).
- ``tokens``: put per-trajectory / per-turn values on tokens; masked whitening.
- ``filters``: StarPO-S variance filtering, zero-variance group dropping.
- ``semi_online``: UI-S1's step returns cut at mismatches, step/episode group advantages,
  and its task filter (semi-online RL on replayed expert trajectories).
- ``losses``: PPO clip (clip-higher, dual-clip), KL estimators k1/k2/k3, entropy,
  loss aggregation modes.
- ``registry``: ``ADVANTAGES`` / ``FILTERS`` by name.

No trainer state lives here; every function is a formula over tensors, with the paper
and equation it implements in its docstring.
"""

from vagen.algos.filters import drop_zero_variance, keep_all, starpo_s
from vagen.algos.gae import bilevel_gae, gae, turn_gae
from vagen.algos.group_advantages import discounted_turn_returns, dr_grpo, gigpo, grpo, reinforce_pp, rloo
from vagen.algos.losses import (
    AGG_MODES,
    KL_KINDS,
    aggregate,
    apply_kl_to_rewards,
    behaviour_weights,
    entropy_from_logits,
    kl_penalty,
    ppo_clip_loss,
)
from vagen.algos.registry import ADVANTAGE_LEVELS, ADVANTAGES, FILTERS, get_advantage, get_filter
from vagen.algos.semi_online import cut_step_returns, semi_online_advantages, uis1_task_filter
from vagen.algos.tokens import broadcast_to_tokens, masked_whiten

__all__ = [
    "ADVANTAGES",
    "ADVANTAGE_LEVELS",
    "AGG_MODES",
    "FILTERS",
    "KL_KINDS",
    "aggregate",
    "apply_kl_to_rewards",
    "bilevel_gae",
    "broadcast_to_tokens",
    "cut_step_returns",
    "discounted_turn_returns",
    "dr_grpo",
    "drop_zero_variance",
    "entropy_from_logits",
    "gae",
    "get_advantage",
    "get_filter",
    "gigpo",
    "grpo",
    "keep_all",
    "behaviour_weights",
    "kl_penalty",
    "masked_whiten",
    "ppo_clip_loss",
    "reinforce_pp",
    "rloo",
    "semi_online_advantages",
    "starpo_s",
    "turn_gae",
    "uis1_task_filter",
]
