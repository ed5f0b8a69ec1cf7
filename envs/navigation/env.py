"""Navigation: walk to an object described in words, seeing the room through your own eyes.

A CPU-only stand-in for VAGEN's AI2-THOR Navigation: procedurally generated indoor
rooms (per seed: room size, wall and floor colours, windows; two rooms joined by a
doorway for ``long_horizon``) furnished with objects built from primitives (bed, sofa,
table, chair, fridge, TV, bookshelf, plant, lamp, cabinet, box, ball, and a mug, laptop or
vase standing on a table or cabinet), rendered egocentrically with MuJoCo (EGL).

Movement is on an occupancy grid of 0.5 m cells (one move = one cell):
``moveahead``/``moveback``/``moveleft``/``moveright`` step one cell in the agent's frame
(blocked by walls and furniture: valid but ineffective, feedback "blocked"),
``rotateleft``/``rotateright`` turn 90 degrees, ``lookup``/``lookdown`` tilt the camera
by ``pitch_step`` degrees within [``min_pitch``, ``max_pitch``]. The episode succeeds
(terminates) when the agent's cell centre is within ``success_distance`` metres of the
target's footprint (distance only, like VAGEN), and is truncated after ``max_turns``
turns (``long_horizon_max_turns`` on that split) or ``max_actions`` actions.

Eval splits (``split`` in the config or ``reset(options={"split": ...})``), generated per
seed: ``base`` ("go to the sofa"), ``common_sense`` (an affordance: "find something to
keep food cold" -> fridge), ``complex_instruction`` (relations: "the chair closest to the
window", "the lamp next to the bed"), ``visual_appearance`` (colour or size: "the blue
ball", "the large plant", "the purple object"), ``long_horizon`` (target in the other
room). Instructions are unambiguous in their scene by construction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from envs.base import IMAGE_PLACEHOLDER, EntitySpec, PromptPieces, StateSchema, StepInfo, VagenEnv
from envs.grid import make_config, parse_actions
from envs.navigation import world
from envs.navigation.world import ACTIONS, SPLITS

CELL = 0.5
OBSERVATION_MODES = ("image", "image+text", "text")


@dataclass
class NavigationConfig:
    """Navigation options.

    ``image_size`` is [height, width]; ``fov`` the vertical field of view (degrees);
    ``camera_height`` the eye height (m). ``observation``: ``image`` (egocentric RGB +
    instruction), ``image+text`` (plus a text list of visible objects, heading and
    distance cues), ``text`` (that text only). ``max_actions`` None = ``max_turns *
    max_actions_per_turn``. ``min_start_distance``: the agent starts at least this far
    (m) from the target's footprint. Rewards: ``success_reward`` on success,
    ``step_penalty`` (<= 0) per executed action, ``distance_shaping`` x (metres gained
    towards the target) per turn (default off).
    """

    split: str = "base"
    observation: str = "image"
    image_size: tuple[int, int] = (256, 256)
    fov: float = 90.0
    camera_height: float = 1.5
    max_actions_per_turn: int = 5
    action_separator: str = ","
    max_turns: int = 10
    long_horizon_max_turns: int = 20
    max_actions: int | None = None
    success_distance: float = 1.0
    min_start_distance: float = 2.5
    pitch_step: int = 30
    min_pitch: int = -60
    max_pitch: int = 30
    success_reward: float = 1.0
    step_penalty: float = 0.0
    distance_shaping: float = 0.0
    invalid_action_penalty: float = -0.1

    def validate(self) -> None:
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {self.split!r}")
        if self.observation not in OBSERVATION_MODES:
            raise ValueError(f"observation must be one of {', '.join(OBSERVATION_MODES)}, got {self.observation!r}")
        try:
            size = tuple(int(x) for x in self.image_size)
        except (TypeError, ValueError):
            size = ()
        if len(size) != 2 or not all(16 <= s <= 2048 for s in size):
            raise ValueError(f"image_size must be [height, width] within 16..2048, got {self.image_size!r}")
        self.image_size = size  # type: ignore[assignment]
        if not 20.0 <= self.fov <= 150.0:
            raise ValueError(f"fov must be within 20..150 degrees, got {self.fov}")
        if not 0.2 <= self.camera_height <= 2.4:
            raise ValueError(f"camera_height must be within 0.2..2.4 m, got {self.camera_height}")
        for key in ("max_actions_per_turn", "max_turns", "long_horizon_max_turns"):
            if getattr(self, key) < 1:
                raise ValueError(f"{key} must be >= 1, got {getattr(self, key)}")
        if self.max_actions is not None and self.max_actions < 1:
            raise ValueError(f"max_actions must be >= 1 or None, got {self.max_actions}")
        if not 0.0 < self.success_distance <= 3.0:
            raise ValueError(f"success_distance must be in (0, 3] metres, got {self.success_distance}")
        if not self.success_distance < self.min_start_distance <= 4.0:
            raise ValueError(f"min_start_distance must be within (success_distance, 4] metres, "
                             f"got {self.min_start_distance}")
        if not 1 <= self.pitch_step <= 90 or not -90 <= self.min_pitch <= 0 <= self.max_pitch <= 90:
            raise ValueError("need 1 <= pitch_step <= 90 and -90 <= min_pitch <= 0 <= max_pitch <= 90, got "
                             f"{self.pitch_step}, {self.min_pitch}, {self.max_pitch}")
        for key in ("invalid_action_penalty", "step_penalty"):
            if getattr(self, key) > 0:
                raise ValueError(f"{key} must be <= 0 (it is a penalty), got {getattr(self, key)}")
        if self.distance_shaping < 0 or self.success_reward < 0:
            raise ValueError("success_reward and distance_shaping must be >= 0")
        sep = self.action_separator.strip() if isinstance(self.action_separator, str) else ""
        if not sep or sep.lower() in ACTIONS or any(ch.isalnum() for ch in sep):
            raise ValueError(f"action_separator must be a non-blank punctuation string, got {self.action_separator!r}")


def canonical_action(token: str) -> str | None:
    """'MoveAhead' / ' moveahead ' / 'move_ahead' / 'move ahead' -> 'moveahead'; else None."""
    t = "".join(token.lower().split()).replace("_", "").replace("-", "")
    return t if t in ACTIONS else None


class NavigationEnv(VagenEnv):
    """Egocentric object-goal navigation in procedural rooms; see the module docstring."""

    name = "navigation"
    description = "Navigation: walk to a named object in procedurally furnished rooms (egocentric MuJoCo views, CPU)"
    action_grammar = ("action (SEP action){0,K-1} where action := moveahead | moveback | moveleft | moveright | "
                      "rotateleft | rotateright | lookup | lookdown (case-insensitive)")
    action_names = ACTIONS
    eval_splits: ClassVar[tuple[str, ...]] = SPLITS
    state_schema = StateSchema(
        entities=(
            EntitySpec("agent", "point", "^", ("agent", "you", "player"), "you (the camera), on the top-down grid"),
            EntitySpec("target", "point", world.TARGET, ("target", "goal"), "the object you must reach",
                       dynamic=False),
            EntitySpec("objects", "points", world.OBJECT, ("object", "objects"), "the other objects in the rooms",
                       dynamic=False),
        ),
        grid_symbols={"^": ("agent",), ">": ("agent",), "v": ("agent",), "<": ("agent",),
                      world.TARGET: ("target",), world.OBJECT: ("objects",), world.FLOOR: (), world.WALL: (),
                      world.FURNITURE: ()},
        reference="agent",
    )
    config: NavigationConfig

    def __init__(self, render_mode: str | None = "rgb_array", **kwargs: Any):
        self.config = make_config(NavigationConfig, kwargs, self.name)
        self.render_mode = render_mode
        h, w = self.config.image_size
        self._set_spaces((h, w, 3) if self.config.observation != "text" else None)
        self._renderer = None
        self._episode_ready = False
        self._state: dict[str, Any] | None = None
        self._frame: np.ndarray | None = None
        self._last_feedback = ""
        self.split = self.config.split

    # -- helpers ------------------------------------------------------------------------
    def _camera(self) -> dict[str, float]:
        h, w = self.config.image_size
        vfov = float(self.config.fov)
        hfov = math.degrees(2 * math.atan(math.tan(math.radians(vfov) / 2) * w / h))
        return {"vfov": round(vfov, 3), "hfov": round(hfov, 3), "height": float(self.config.camera_height)}

    def _get_renderer(self):
        if self._renderer is None:
            from envs.navigation.render import SceneRenderer

            h, w = self.config.image_size
            self._renderer = SceneRenderer(h, w, self.config.fov)
        return self._renderer

    def _max_turns(self) -> int:
        return self.config.long_horizon_max_turns if self.split == "long_horizon" else self.config.max_turns

    def _max_actions(self) -> int:
        c = self.config
        return c.max_actions if c.max_actions is not None else self._max_turns() * c.max_actions_per_turn

    def _pitch_limits(self) -> tuple[int, int]:
        return (self.config.min_pitch, self.config.max_pitch)

    # -- gymnasium API ------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = sorted(set(options) - {"split"})
        if unknown:
            raise ValueError(f"navigation reset options: unknown {', '.join(map(repr, unknown))}; allowed: 'split'")
        split = options.get("split", self.config.split)
        if split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
        self.split = split
        if seed is None:
            seed = int(self.np_random.integers(0, 2**31 - 1))
        self.episode_seed = int(seed)
        c = self.config
        self.scene = world.Generator(self.episode_seed, split, c.min_start_distance, CELL, c.success_distance).generate()
        self._state = world.make_state(self.scene, CELL, c.success_distance, self._camera())
        self._state["pitch_limits"] = [c.min_pitch, c.max_pitch]
        self._state["pitch_step"] = c.pitch_step
        self._blocked = world._blocked(self._state)
        if c.observation != "text":
            self._get_renderer().paint(self.scene, CELL)
        self._frame = None
        self.turns = 0
        self.actions_taken = 0
        self._episode_ready = True
        self._last_feedback = ""
        info = StepInfo(state=world.copy_state(self._state), success=bool(self._state["success"]),
                        metrics=self._metrics(0, 0.0))
        return self._observation(), info.as_dict()

    def _metrics(self, executed: int, invalid: float) -> dict[str, float]:
        st = self._state or {}
        return {"turns": float(self.turns), "actions": float(self.actions_taken), "executed": float(executed),
                "invalid": invalid, "distance": float(st.get("distance", 0.0)),
                "episode/score": 1.0 if st.get("success") else 0.0}

    def step(self, action: Any):
        if not self._episode_ready or self._state is None:
            raise RuntimeError("call reset() before step() (the episode has ended)")
        c = self.config
        state = self._state
        tokens = parse_actions(action, c.action_separator)
        if isinstance(action, str) and len(action) > 4096:
            tokens = tokens[: c.max_actions_per_turn + 1]
        executed: list[str] = []
        notes: list[str] = []
        valid, changed, success = True, False, False
        start_dist = world.target_distance(state, state["agent"]["row"], state["agent"]["col"])
        reward = 0.0
        if not tokens:
            valid = False
            notes.append(f"No action given. {self._hint()}")
        budget = min(c.max_actions_per_turn, self._max_actions() - self.actions_taken)
        results = []
        for i, token in enumerate(tokens):
            name = canonical_action(token)
            if name is None:
                valid = False
                notes.append(f"Invalid action {ascii(token[:40])}; stopped there. {self._hint()}")
                break
            if i >= budget:
                valid = False
                notes.append(f"At most {c.max_actions_per_turn} actions per turn; ignored: "
                             f"{', '.join(ascii(t[:20]) for t in tokens[i:])}.")
                break
            moved, note = world.apply_action(state, name, self._blocked, self._pitch_limits(), c.pitch_step)
            executed.append(name)
            results.append(f"{name} ({note})" if note else name)
            self.actions_taken += 1
            reward += c.step_penalty
            changed = changed or moved
            if moved and name in world.MOVE_OFFSET and world.is_success(state, state["agent"]["row"],
                                                                         state["agent"]["col"]):
                success = True
                if i + 1 < len(tokens):
                    notes.append("You reached the target; the remaining actions were not executed.")
                break
        world.refresh_state(state)
        success = success or bool(state["success"])
        end_dist = world.target_distance(state, state["agent"]["row"], state["agent"]["col"])
        if c.distance_shaping:
            reward += c.distance_shaping * (start_dist - end_dist)
        if success:
            reward += c.success_reward
        penalty = 0.0 if valid else c.invalid_action_penalty
        reward += penalty
        self.turns += 1
        terminated = success
        truncated = not terminated and (self.turns >= self._max_turns() or self.actions_taken >= self._max_actions())
        ran = ", ".join(results) if results else "none"
        feedback = [f"Executed actions: {ran}."] + notes
        if executed and not changed:
            feedback.append("Nothing changed.")
        if success:
            feedback.append("Success: you reached the target.")
        self._last_feedback = " ".join(feedback)
        self._frame = None
        info = StepInfo(state=world.copy_state(state), action_valid=valid, action_effective=changed, success=success,
                        executed_actions=executed, feedback=self._last_feedback, penalty=penalty,
                        metrics=self._metrics(len(executed), float(not valid)))
        if terminated or truncated:
            self._episode_ready = False
        return self._observation(), float(reward), bool(terminated), bool(truncated), info.as_dict()

    def _hint(self) -> str:
        return f"Valid actions: {', '.join(ACTIONS)}, separated by '{self.config.action_separator}'."

    # -- observations --------------------------------------------------------------------
    def _text_view(self) -> str:
        st = self._state or {}
        seen = st.get("visible") or []
        things = "; ".join(f"{v['name']} ({v['direction']}, {v['distance']} m)" for v in seen) or "nothing"
        return (f"You face {st.get('heading')} with the camera pitched {st.get('pitch')} degrees. "
                f"In view: {things}.")

    def _observation(self) -> dict[str, Any]:
        mode = self.config.observation
        parts = []
        if self._last_feedback:
            parts.append(self._last_feedback)
        images: tuple[np.ndarray, ...] = ()
        if mode != "text":
            parts.append(f"Current view: {IMAGE_PLACEHOLDER}")
            images = (self.render_rgb(),)
        if mode != "image":
            parts.append(self._text_view())
        parts.append(f"Instruction: {self._state['instruction'] if self._state else ''}")
        return {"text": "\n".join(parts), "images": images}

    def render(self):
        return self.render_rgb()

    def render_rgb(self) -> np.ndarray:
        """The current egocentric RGB frame (rendered once per pose)."""
        if self._state is None:
            h, w = self.config.image_size
            return np.zeros((h, w, 3), dtype=np.uint8)
        if self._frame is None:
            r = self._get_renderer()
            if self.config.observation == "text" and getattr(r, "_painted", None) is not self.scene:
                r.paint(self.scene, CELL)
            r._painted = self.scene
            ag = self._state["agent"]
            self._frame = r.view(ag["row"], ag["col"], ag["heading"], ag["pitch"], self.config.camera_height)
        return self._frame

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        super().close()

    def prompt_pieces(self) -> PromptPieces:
        c = self.config
        k = c.max_actions_per_turn
        sep = c.action_separator
        return PromptPieces(
            description=(
                "You are a home robot navigating indoor rooms. Each turn you see the room from your own camera and "
                "get an instruction naming (or describing) one object. Walk until you are within "
                f"{c.success_distance:g} m of that object. The floor is a grid of {CELL} m cells; in the top-down "
                "grid state rows grow southwards, columns eastwards ([row, col] from the top-left cell), '#' is "
                "wall, '.' floor, 'x' furniture, 'T' the target, 'O' another object, and ^ > v < you facing "
                "north/east/south/west."),
            action_help=(
                "Actions: moveahead, moveback, moveleft, moveright (one 0.5 m step in your own frame; walls and "
                f"furniture block you), rotateleft, rotateright (turn 90 degrees), lookup, lookdown (tilt the camera "
                f"{c.pitch_step} degrees). You may give up to {k} action{'s' if k > 1 else ''} per turn, separated "
                f"by '{sep}', executed in order; execution stops at the first invalid action."),
            example_action=f"{sep} ".join(["moveahead", "rotateleft", "moveahead"][: max(1, min(k, 3))]),
            max_actions_per_turn=k,
            action_separator=sep,
        )

    # -- pure functions of a state ---------------------------------------------------------
    @classmethod
    def solve_state(cls, state: dict[str, Any]) -> list[str] | None:
        return world.plan(state)

    @classmethod
    def predict_state(cls, state: dict[str, Any], actions: list[str]) -> dict[str, Any]:
        nxt = world.copy_state(state)
        blocked = world._blocked(nxt)
        pitch = (nxt.get("pitch_limits") or [-60, 30])
        for a in actions:
            name = canonical_action(a) if isinstance(a, str) else None
            if name is None or nxt["success"]:
                break
            world.apply_action(nxt, name, blocked, tuple(pitch), int(nxt.get("pitch_step", 30)))
            ag = nxt["agent"]
            nxt["success"] = world.is_success(nxt, ag["row"], ag["col"])
        return world.refresh_state(nxt)
