"""The environment contract every VAGEN env implements.

An env is a ``gymnasium.Env`` whose *action is a string* in the env's own grammar
(``"Up, Left"``, ``pyautogui.click(120, 40)``) and whose observation is
``{"text": str, "images": tuple[HxWx3 uint8, ...]}`` with exactly one ``"<image>"``
placeholder in ``text`` per image. ``step`` never raises on a bad action string: it
applies a penalty and explains the problem in the next observation's text.

``info`` always carries:

- ``state``: the structured ground truth the world-modeling reward is scored against
  (``state["entities"]`` maps each entity of ``state_schema`` to a ``[row, col]`` point
  or a list of points, plus env-specific keys);
- ``action_valid``: every action in the string parsed and was allowed;
- ``action_effective``: the state changed;
- ``success``: the task is solved;
- ``metrics``: numbers worth logging;
- ``penalty``: how much of the step's reward is a penalty (invalid actions), so the
  agent layer can report it apart from the task reward.

Envs know nothing about the agent's reasoning tags (``<think>``, ``<answer>``...): the
agent layer in ``vagen.prompts`` extracts the action string and scores the reasoning.
Infrastructure failures (a sandbox died) raise ``EnvInfraError`` and are never scored as
the agent's failure.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces

IMAGE_PLACEHOLDER = "<image>"
#: Characters an action or observation string may hold (printable ASCII + whitespace).
TEXT_CHARSET = frozenset(string.printable)
MAX_ACTION_CHARS = 4096
MAX_OBS_CHARS = 65536


class EnvInfraError(RuntimeError):
    """The environment's infrastructure failed (sandbox died, browser crashed).

    Rollouts drop the trajectory and count it; it is never the agent's failure.
    """


@dataclass(frozen=True)
class EntitySpec:
    """One kind of thing in the world whose position the agent may describe.

    ``kind="point"`` is a single ``[row, col]``; ``"points"`` is a set of them.
    ``symbol`` is its character in the symbolic grid; ``aliases`` are the words a
    natural-language description may use for it (singular first). ``dims`` is the length
    of a point: 2 for grid cells ``[row, col]``, 3 for positions in space (integer
    millimetres ``[x, y, z]`` in primitive_skill); 3-D entities are read from the
    ``structured`` representation (or scored by the LLM judge), not from grids or sentences.
    """

    name: str
    kind: Literal["point", "points"]
    symbol: str
    aliases: tuple[str, ...]
    description: str
    dynamic: bool = True
    dims: int = 2


@dataclass(frozen=True)
class StateSchema:
    """What ``info["state"]["entities"]`` holds, for belief parsing and scoring.

    Coordinates are ``[row, col]``, 0-indexed from the top-left cell. ``reference`` is
    the entity relations are stated against ("the box is below-left of the player").
    """

    entities: tuple[EntitySpec, ...]
    #: Symbolic-grid characters and the entities each denotes ("*" = box on a target);
    #: characters mapping to () are background (floor, wall).
    grid_symbols: dict[str, tuple[str, ...]] = field(default_factory=dict)
    reference: str = "player"
    coordinates: str = "[row, col], 0-indexed from the top-left cell"
    #: Default distance (in the coordinates' unit) within which a described position counts as
    #: right: 0 for grid cells; e.g. 20 for millimetre positions after physics settles.
    tolerance: float = 0.0

    def entity(self, name: str) -> EntitySpec:
        for e in self.entities:
            if e.name == name:
                return e
        raise KeyError(name)


@dataclass(frozen=True)
class PromptPieces:
    """What the agent layer composes into prompts: no reasoning-format text here."""

    description: str
    action_help: str
    example_action: str
    max_actions_per_turn: int = 1
    action_separator: str = ","


@dataclass
class StepInfo:
    """Builder for the ``info`` dict so every env returns the same keys."""

    state: dict[str, Any]
    action_valid: bool = True
    action_effective: bool = False
    success: bool = False
    metrics: dict[str, float] = field(default_factory=dict)
    executed_actions: list[str] = field(default_factory=list)
    feedback: str = ""
    #: The part of this step's reward that is a penalty (already included in the reward).
    penalty: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "action_valid": self.action_valid,
            "action_effective": self.action_effective,
            "success": self.success,
            "metrics": dict(self.metrics),
            "executed_actions": list(self.executed_actions),
            "feedback": self.feedback,
            "penalty": self.penalty,
        }


class VagenEnv(gym.Env):
    """Base class: declares the contract's class attributes and the gymnasium spaces.

    Subclasses set ``name``, ``description`` (one line, for ``vagen envs``),
    ``action_grammar`` (a readable grammar of the action string) and ``state_schema``,
    implement ``reset``/``step``/``render`` and ``prompt_pieces``, and call
    ``_set_spaces(image_shape)`` in ``__init__``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 4}
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    action_grammar: ClassVar[str] = ""
    state_schema: ClassVar[StateSchema]
    #: For envs with a small discrete grammar: every action name (random baselines use it).
    action_names: ClassVar[tuple[str, ...]] = ()

    def _set_spaces(self, image_shape: tuple[int, int, int] | None) -> None:
        self.action_space = spaces.Text(max_length=MAX_ACTION_CHARS, min_length=0, charset=TEXT_CHARSET)
        image_space = spaces.Box(0, 255, image_shape or (1, 1, 3), dtype=np.uint8)
        self.observation_space = spaces.Dict({
            "text": spaces.Text(max_length=MAX_OBS_CHARS, min_length=0, charset=TEXT_CHARSET),
            "images": spaces.Sequence(image_space),
        })

    def prompt_pieces(self) -> PromptPieces:
        """Env description and action help for the agent layer's prompt builder."""
        raise NotImplementedError

    # Pure functions of a ``state`` dict, so an oracle policy that only sees the state
    # (not the env object) can act and predict; see ``vagen.prompts.oracle``.
    @classmethod
    def solve_state(cls, state: dict[str, Any]) -> list[str] | None:
        """Shortest action sequence that solves the task from ``state`` (None if none)."""
        raise NotImplementedError

    @classmethod
    def predict_state(cls, state: dict[str, Any], actions: list[str]) -> dict[str, Any]:
        """The state after the *intended* effect of ``actions`` (no slipping)."""
        raise NotImplementedError

    @classmethod
    def random_actions(cls, rng: Any, k: int, state: dict[str, Any] | None = None) -> list[str]:
        """``k`` uniformly random legal actions (the chance-level baseline, ``scripted:random``).

        ``rng`` is a ``random.Random``. The default draws from ``action_names``; envs with
        parametric actions (coordinates, code) override it.
        """
        if not cls.action_names:
            raise NotImplementedError(f"{cls.__name__} has no discrete action names and no random_actions")
        return [rng.choice(cls.action_names) for _ in range(k)]
