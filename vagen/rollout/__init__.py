"""Multi-turn rollouts: trajectory records, the context builder, the rollout manager."""

from vagen.rollout.context import ContextBuilder, Sample
from vagen.rollout.manager import RolloutLimits, RolloutManager
from vagen.rollout.records import Trajectory, TurnRecord, anchor_key

__all__ = ["ContextBuilder", "RolloutLimits", "RolloutManager", "Sample", "Trajectory", "TurnRecord", "anchor_key"]
