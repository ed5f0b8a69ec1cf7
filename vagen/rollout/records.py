"""Trajectory records: one ``TurnRecord`` per turn, grouped into ``Trajectory``s.

Every token the policy saw (``context_ids``) and produced (``response_ids``) is kept
exactly; training rebuilds nothing from text. Reward parts stay apart so estimators and
metrics can use them separately.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class TurnRecord:
    """One turn of one trajectory."""

    group_id: int
    traj_id: int
    turn: int
    user_ids: list[int]            # this turn's user segment (ends with the assistant header)
    images: list[np.ndarray]       # the images of this turn's user segment, in order
    response_ids: list[int]        # exactly what the policy generated
    rollout_logprobs: list[float]  # per response token, under the sampling distribution
    policy_version: int
    response_text: str
    finish_reason: str
    reward_env: float = 0.0
    reward_format: float = 0.0
    reward_world_model: float = 0.0
    reward_penalty: float = 0.0
    anchor_key: str = ""           # hash of the observation without history (GiGPO)
    action_valid: bool = False
    action_effective: bool = False
    format_ok: bool = False
    close_ids: list[int] = field(default_factory=list)  # template tokens after the response (no loss)
    text_user_ids: list[int] | None = None  # the user segment with images replaced by text (history caps)
    #: What later turns see of this turn's answer when a patch replaced it (semi-online RL:
    #: the expert's action; ends with the template close). None: the response itself. The
    #: turn's own training sample always uses ``response_ids`` — never expert tokens.
    history_ids: list[int] | None = None
    patch_text: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def reward(self) -> float:
        return self.reward_env + self.reward_format + self.reward_world_model + self.reward_penalty


@dataclass
class Trajectory:
    """An episode: the shared prefix (system prompt), its turns, and how it ended."""

    group_id: int
    traj_id: int
    seed: int
    prefix_ids: list[int]
    turns: list[TurnRecord] = field(default_factory=list)
    success: bool = False
    done: bool = False
    end_reason: str = ""
    dropped: bool = False          # an infra failure removed it from training; never scored

    @property
    def total_reward(self) -> float:
        return sum(t.reward for t in self.turns)

    @property
    def response_tokens(self) -> int:
        return sum(len(t.response_ids) for t in self.turns)

    def summary(self) -> dict[str, Any]:
        """A JSON-friendly digest (no token ids or images)."""
        return {"group_id": self.group_id, "traj_id": self.traj_id, "seed": self.seed, "success": self.success,
                "return": self.total_reward, "turns": len(self.turns), "end_reason": self.end_reason,
                "dropped": self.dropped, "responses": [t.response_text for t in self.turns]}


def anchor_key(obs: dict[str, Any], feedback: str | Sequence[str] = ()) -> str:
    """Hash of an observation alone (text + image bytes), for grouping identical states.

    ``feedback`` holds the env's note on the *previous* step (``info["feedback"]``: "Executed
    actions: Left. Nothing changed.") and the agent layer's format note; they are history,
    not state, so they are cut from the text before hashing — otherwise the same map reached by different moves, or left unchanged by
    a bump, would be different anchors and GiGPO could not compare the moves made from it."""
    text = obs.get("text", "")
    for note in [feedback] if isinstance(feedback, str) else feedback:
        if note and note in text:
            text = text.replace(note, "", 1)
    # Cutting a note leaves its line break behind: compare non-blank lines only.
    text = "\n".join(line for line in text.split("\n") if line.strip())
    h = hashlib.sha1(text.encode())
    for img in obs.get("images", ()):
        arr = np.ascontiguousarray(img)
        h.update(json.dumps(arr.shape).encode())
        h.update(arr.tobytes())
    return h.hexdigest()[:16]
