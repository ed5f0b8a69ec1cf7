"""Shared machinery for grid-world envs (Sokoban, FrozenLake).

Everything that is the same for both lives here: observation modes (``image``,
``text``, ``image+text``), multi-action turns ("Up, Left, Down" with a separator, at most
K per turn, execution stops at the first invalid action and the next observation says
which actions ran), turn/action limits, tile rendering to RGB, and the step bookkeeping
that fills ``info``. Subclasses implement the world: ``_new_episode``, ``_apply_move``,
``_grid_rows`` and ``_state``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from envs.base import IMAGE_PLACEHOLDER, PromptPieces, StepInfo, VagenEnv

DIRECTIONS: dict[str, tuple[int, int]] = {"Up": (-1, 0), "Down": (1, 0), "Left": (0, -1), "Right": (0, 1)}
OBSERVATION_MODES = ("image", "text", "image+text")


@dataclass
class GridConfig:
    """Options every grid env takes (subclass configs add their own)."""

    observation: str = "image"
    cell_px: int = 16
    image_size: tuple[int, int] | None = None
    max_actions_per_turn: int = 3
    action_separator: str = ","
    max_turns: int = 20
    max_actions: int = 100
    invalid_action_penalty: float = -0.1
    #: Added when a turn's actions were all valid but changed nothing (walking into a wall).
    ineffective_action_penalty: float = 0.0

    def validate(self) -> None:
        if self.observation not in OBSERVATION_MODES:
            raise ValueError(f"observation must be one of {', '.join(OBSERVATION_MODES)}, got {self.observation!r}")
        if self.cell_px < 2:
            raise ValueError(f"cell_px must be >= 2, got {self.cell_px}")
        if self.image_size is not None:
            size = tuple(int(x) for x in self.image_size)
            if len(size) != 2 or min(size) < 8:
                raise ValueError(f"image_size must be [height, width] with both >= 8, got {self.image_size!r}")
            self.image_size = size  # type: ignore[assignment]
        for key in ("invalid_action_penalty", "ineffective_action_penalty"):
            if getattr(self, key) > 0:
                raise ValueError(f"{key} must be <= 0 (it is a penalty), got {getattr(self, key)}")
        for key in ("max_actions_per_turn", "max_turns", "max_actions"):
            if getattr(self, key) < 1:
                raise ValueError(f"{key} must be >= 1, got {getattr(self, key)}")
        if not self.action_separator.strip() or self.action_separator.strip().lower() in {d.lower() for d in DIRECTIONS}:
            raise ValueError(f"action_separator must be a non-blank punctuation string, got {self.action_separator!r}")


def make_config(cls: type, kwargs: dict[str, Any], env_name: str):
    """Build a config dataclass from keyword arguments, naming unknown keys clearly."""
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(kwargs) - set(names))
    if unknown:
        raise ValueError(f"{env_name} does not take {', '.join(map(repr, unknown))}; allowed: {', '.join(names)}")
    cfg = cls(**kwargs)
    cfg.validate()
    return cfg


def parse_actions(text: Any, separator: str) -> list[str]:
    """Split an action string into stripped, non-empty tokens (never raises)."""
    if not isinstance(text, str):
        return [repr(text)[:40]]
    seps = {separator.strip(), ",", "\n", ";"}
    for s in seps - {","}:
        text = text.replace(s, ",")
    return [t.strip() for t in text.split(",") if t.strip()]


def canonical_direction(token: str) -> str | None:
    """'up' / 'UP' / ' Up ' -> 'Up'; anything else -> None."""
    t = token.strip().lower()
    for name in DIRECTIONS:
        if t == name.lower():
            return name
    return None


class GridEnv(VagenEnv):
    """Base class for grid worlds with string actions Up/Down/Left/Right."""

    symbol_legend: ClassVar[str] = ""
    action_names: ClassVar[tuple[str, ...]] = tuple(DIRECTIONS)
    config_class: ClassVar[type[GridConfig]] = GridConfig
    #: Map symbol -> index into ``_sprites()``.
    tile_codes: ClassVar[dict[str, int]] = {}

    def __init__(self, render_mode: str | None = "rgb_array", **kwargs: Any):
        self.config = make_config(self.config_class, kwargs, self.name)
        self.render_mode = render_mode
        self._set_spaces(self._image_shape() if self.config.observation != "text" else None)
        self.turns = 0
        self.actions_taken = 0
        self._last_feedback = ""
        self._episode_ready = False

    # -- subclass hooks ----------------------------------------------------------
    def _new_episode(self, seed: int) -> None:
        raise NotImplementedError

    def _apply_move(self, direction: str) -> tuple[float, bool, bool]:
        """Apply one move; return (reward, changed_state, terminated)."""
        raise NotImplementedError

    def _grid_rows(self) -> list[str]:
        raise NotImplementedError

    def _state(self) -> dict[str, Any]:
        raise NotImplementedError

    def _success(self) -> bool:
        raise NotImplementedError

    def _tile_codes(self) -> np.ndarray:
        """(rows, cols) int array indexing ``self._sprites``."""
        return np.array([[self.tile_codes[ch] for ch in row] for row in self._grid_rows()], dtype=np.intp)

    def _sprites(self) -> np.ndarray:
        """(n_codes, px, px, 3) uint8 tile images for the configured cell size."""
        raise NotImplementedError

    def _grid_shape(self) -> tuple[int, int]:
        raise NotImplementedError

    # -- spaces ------------------------------------------------------------------
    def _image_shape(self) -> tuple[int, int, int]:
        rows, cols = self._grid_shape()
        if self.config.image_size is not None:
            h, w = self.config.image_size
            return (h, w, 3)
        return (rows * self.config.cell_px, cols * self.config.cell_px, 3)

    # -- gymnasium API -----------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is None:
            seed = int(self.np_random.integers(0, 2**31 - 1))
        self.episode_seed = int(seed)
        self._new_episode(self.episode_seed)
        self.turns = 0
        self.actions_taken = 0
        self._episode_ready = True
        self._last_feedback = ""
        info = StepInfo(state=self._state(), success=self._success())
        info.metrics = {"turns": 0, "actions": 0}
        return self._observation(), info.as_dict()

    def step(self, action: Any):
        if not self._episode_ready:
            raise RuntimeError("call reset() before step()")
        cfg = self.config
        tokens = parse_actions(action, cfg.action_separator)
        executed: list[str] = []
        notes: list[str] = []
        reward, changed, terminated, valid = 0.0, False, False, True
        if not tokens:
            valid = False
            notes.append(f"No action given. {self._action_hint()}")
        budget = min(cfg.max_actions_per_turn, cfg.max_actions - self.actions_taken)
        for i, token in enumerate(tokens):
            direction = canonical_direction(token)
            if direction is None:
                valid = False
                notes.append(f"Invalid action {token[:40]!r}; stopped there. {self._action_hint()}")
                break
            if i >= budget:
                valid = False
                ignored = tokens[i:]
                notes.append(f"At most {cfg.max_actions_per_turn} actions per turn; ignored: {', '.join(t[:20] for t in ignored)}.")
                break
            r, moved, terminated = self._apply_move(direction)
            executed.append(direction)
            self.actions_taken += 1
            reward += r
            changed = changed or moved
            if terminated:
                if i + 1 < len(tokens):
                    notes.append("The episode ended; the remaining actions were not executed.")
                break
        penalty = 0.0 if valid else cfg.invalid_action_penalty
        if valid and executed and not changed:
            penalty += cfg.ineffective_action_penalty
        reward += penalty
        self.turns += 1
        success = self._success()
        truncated = not terminated and (self.turns >= cfg.max_turns or self.actions_taken >= cfg.max_actions)
        ran = ", ".join(executed) if executed else "none"
        self._last_feedback = " ".join([f"Executed actions: {ran}."] + notes + ([] if changed or not executed else ["Nothing changed."]))
        info = StepInfo(
            state=self._state(),
            action_valid=valid,
            action_effective=changed,
            success=success,
            executed_actions=executed,
            feedback=self._last_feedback,
            penalty=penalty,
            metrics={"turns": self.turns, "actions": self.actions_taken, "executed": len(executed),
                     "invalid": float(not valid)},
        )
        if terminated or truncated:
            self._episode_ready = False
        return self._observation(), float(reward), bool(terminated), bool(truncated), info.as_dict()

    def _action_hint(self) -> str:
        sep = self.config.action_separator
        return f"Valid actions: Up, Down, Left, Right, separated by '{sep}'."

    # -- observations --------------------------------------------------------------
    def _observation(self) -> dict[str, Any]:
        mode = self.config.observation
        parts = []
        if self._last_feedback:
            parts.append(self._last_feedback)
        images: tuple[np.ndarray, ...] = ()
        if mode in ("image", "image+text"):
            parts.append(f"Current view: {IMAGE_PLACEHOLDER}")
            images = (self.render_rgb(),)
        if mode in ("text", "image+text"):
            parts.append("Current map:\n" + "\n".join(self._grid_rows()))
        return {"text": "\n".join(parts), "images": images}

    def render(self):
        return self.render_rgb()

    def render_rgb(self) -> np.ndarray:
        """The grid as an RGB image, assembled from cached tiles (no drawing per step)."""
        codes = self._tile_codes()
        sprites = self._sprites()
        rows, cols = codes.shape
        px = sprites.shape[1]
        img = sprites[codes].transpose(0, 2, 1, 3, 4).reshape(rows * px, cols * px, 3)
        if self.config.image_size is not None and img.shape[:2] != tuple(self.config.image_size):
            from PIL import Image

            h, w = self.config.image_size
            img = np.asarray(Image.fromarray(img).resize((w, h), Image.NEAREST))
        return np.ascontiguousarray(img)

    def prompt_pieces(self) -> PromptPieces:
        cfg = self.config
        k = cfg.max_actions_per_turn
        sep = cfg.action_separator
        return PromptPieces(
            description=self.env_description(),
            action_help=(f"Actions: Up, Down, Left, Right. You may give up to {k} action{'s' if k > 1 else ''} "
                         f"per turn, separated by '{sep}', executed in order; execution stops at the first "
                         "invalid action."),
            example_action=f"{sep} ".join(["Right", "Down"][: max(1, min(k, 2))]),
            max_actions_per_turn=k,
            action_separator=sep,
        )

    def env_description(self) -> str:
        raise NotImplementedError


def tile(px: int, bg: tuple[int, int, int], fg: tuple[int, int, int] | None = None, shape: str = "none",
         border: tuple[int, int, int] | None = None) -> np.ndarray:
    """A px x px RGB tile: background, optional border and a centred square/circle/ring."""
    t = np.empty((px, px, 3), dtype=np.uint8)
    t[:] = bg
    if border is not None:
        t[0, :] = t[-1, :] = t[:, 0] = t[:, -1] = border
    if fg is not None and shape != "none":
        yy, xx = np.mgrid[0:px, 0:px]
        c = (px - 1) / 2
        r = px * 0.36
        if shape == "square":
            m = (abs(yy - c) <= r) & (abs(xx - c) <= r)
        elif shape == "circle":
            m = (yy - c) ** 2 + (xx - c) ** 2 <= r * r
        elif shape == "ring":
            d = (yy - c) ** 2 + (xx - c) ** 2
            m = (d <= r * r) & (d >= (r * 0.6) ** 2)
        elif shape == "cross":
            m = (abs(yy - xx) <= max(1, px // 10)) | (abs(yy + xx - (px - 1)) <= max(1, px // 10))
            m &= (abs(yy - c) <= r) & (abs(xx - c) <= r)
        else:
            raise ValueError(shape)
        t[m] = fg
    return t
