"""Rewards that score an agent's reasoning: the world-modeling reward and its parts.

See ``world_model`` (per-object belief scoring and ``WorldModelReward``), ``matching``
(Hungarian point matching, relation matching), ``judge`` (LLM-as-judge) and
``frequency`` (the repeated-description guard).
"""

from vagen.rewards.frequency import FrequencyTracker, normalize_description
from vagen.rewards.judge import JudgeItem, JudgeVerdict, LLMJudge, parse_judge_answer
from vagen.rewards.matching import MatchResult, match_points, match_relations, prf
from vagen.rewards.world_model import (
    WorldModelItem,
    WorldModelReward,
    WorldModelRewardConfig,
    score_belief,
)

__all__ = [
    "FrequencyTracker",
    "JudgeItem",
    "JudgeVerdict",
    "LLMJudge",
    "MatchResult",
    "WorldModelItem",
    "WorldModelReward",
    "WorldModelRewardConfig",
    "match_points",
    "match_relations",
    "normalize_description",
    "parse_judge_answer",
    "prf",
    "score_belief",
]
