"""Sokoban: push every box onto a target. Procedural, always-solvable levels."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from envs.base import EntitySpec, StateSchema
from envs.grid import DIRECTIONS, GridConfig, GridEnv, canonical_direction, tile
from envs.sokoban.levels import generate_level, solve

# Symbols follow VAGEN's text rendering (ASCII only: '*' is a box on a target).
WALL, FLOOR, TARGET, BOX, BOX_ON_TARGET, PLAYER, PLAYER_ON_TARGET = "#", "_", "O", "X", "*", "P", "S"
REWARD_PRESETS = ("shaped", "sparse", "progress")


@dataclass
class SokobanConfig(GridConfig):
    """Sokoban options. ``reward="shaped"`` is VAGEN/gym-sokoban's scheme (-0.1 per
    action, +1 box onto target, -1 box off target, +10 solved); ``"sparse"`` gives 1 on
    solving and 0 otherwise; ``"progress"`` is potential-based shaping (Ng, Harada &
    Russell 1999) with the solver's distance-to-go d(s) (fewest moves that solve from s):
    ``progress_reward * (d(s) - d(s'))`` per move, ``deadlock_penalty`` for the move that
    makes the level unsolvable (nothing after it), and 1 on solving — so every move is
    credited at once while the optimal policy stays the sparse reward's."""

    dim_room: tuple[int, int] = (6, 6)
    num_boxes: int = 1
    min_solution_length: int = 1
    max_solution_length: int = 1000
    reverse_steps: int = 300
    solver_max_nodes: int = 200_000
    reward: str = "shaped"
    step_penalty: float = -0.1
    box_on_target_reward: float = 1.0
    solve_reward: float = 10.0
    progress_reward: float = 0.1
    deadlock_penalty: float = -1.0

    def validate(self) -> None:
        super().validate()
        rows, cols = (int(x) for x in self.dim_room)
        self.dim_room = (rows, cols)
        if rows < 4 or cols < 4 or rows > 30 or cols > 30:
            raise ValueError(f"dim_room must be within 4..30 per side, got {self.dim_room}")
        if self.reward not in REWARD_PRESETS:
            raise ValueError(f"reward must be one of {', '.join(REWARD_PRESETS)}, got {self.reward!r}")
        if self.min_solution_length > self.max_solution_length:
            raise ValueError("min_solution_length must be <= max_solution_length")
        if self.progress_reward < 0:
            raise ValueError(f"progress_reward must be >= 0, got {self.progress_reward}")
        if self.deadlock_penalty > 0:
            raise ValueError(f"deadlock_penalty must be <= 0 (it is a penalty), got {self.deadlock_penalty}")


@lru_cache(maxsize=65536)
def distance_to_go(rows: int, cols: int, walls: frozenset, targets: tuple, boxes: tuple, player: tuple,
                   max_nodes: int) -> int | None:
    """Fewest moves that solve the level from this configuration (None: unsolvable, or the
    solver gave up after ``max_nodes`` states). Cached: the rollouts of a group revisit states."""
    path = solve(rows, cols, walls, targets, boxes, player, max_nodes)
    return None if path is None else len(path)


@lru_cache(maxsize=32)
def _sprites(px: int) -> np.ndarray:
    floor = (222, 214, 196)
    tgt = (200, 40, 40)
    return np.stack([
        tile(px, (96, 58, 40), border=(60, 36, 24)),                   # 0 wall
        tile(px, floor),                                               # 1 floor
        tile(px, floor, tgt, "ring"),                                  # 2 target
        tile(px, floor, (176, 112, 40), "square", border=None),        # 3 box
        tile(px, floor, (60, 170, 70), "square"),                      # 4 box on target
        tile(px, floor, (40, 80, 210), "circle"),                      # 5 player
        tile(px, (240, 200, 200), (40, 80, 210), "circle"),            # 6 player on target
    ])


def grid_rows(dim: tuple[int, int], walls, targets, boxes, player) -> list[str]:
    """The symbolic map, one string per row."""
    out = []
    for r in range(dim[0]):
        line = []
        for c in range(dim[1]):
            p = (r, c)
            if p in walls:
                line.append(WALL)
            elif p == player:
                line.append(PLAYER_ON_TARGET if p in targets else PLAYER)
            elif p in boxes:
                line.append(BOX_ON_TARGET if p in targets else BOX)
            elif p in targets:
                line.append(TARGET)
            else:
                line.append(FLOOR)
        out.append("".join(line))
    return out


def make_state(dim: tuple[int, int], walls, targets, boxes, player) -> dict[str, Any]:
    """``info["state"]`` for a configuration (see ``SokobanEnv.state_schema``)."""
    return {
        "entities": {
            "player": list(player),
            "boxes": [list(b) for b in sorted(boxes)],
            "targets": [list(t) for t in sorted(targets)],
        },
        "grid": grid_rows(dim, walls, targets, boxes, player),
        "grid_size": list(dim),
        "boxes_on_target": len(set(boxes) & set(targets)),
    }


_CODES = {WALL: 0, FLOOR: 1, TARGET: 2, BOX: 3, BOX_ON_TARGET: 4, PLAYER: 5, PLAYER_ON_TARGET: 6}


class SokobanEnv(GridEnv):
    """Sokoban with string actions; see ``SokobanConfig`` for options."""

    name = "sokoban"
    description = "Sokoban: push every box onto a target (procedural, always-solvable levels)"
    action_grammar = "action (SEP action){0,K-1} where action := Up | Down | Left | Right (case-insensitive)"
    state_schema = StateSchema(
        entities=(
            EntitySpec("player", "point", PLAYER, ("player", "agent", "you"), "the player you control"),
            EntitySpec("boxes", "points", BOX, ("box", "boxes"), "the boxes to push"),
            EntitySpec("targets", "points", TARGET, ("target", "targets", "goal", "goals"), "the target cells",
                       dynamic=False),
        ),
        grid_symbols={PLAYER: ("player",), PLAYER_ON_TARGET: ("player", "targets"), BOX: ("boxes",),
                      BOX_ON_TARGET: ("boxes", "targets"), TARGET: ("targets",), WALL: (), FLOOR: ()},
    )
    symbol_legend = (f"'{WALL}' wall, '{FLOOR}' floor, '{TARGET}' target, '{BOX}' box, '{BOX_ON_TARGET}' box on "
                     f"target, '{PLAYER}' player, '{PLAYER_ON_TARGET}' player on target")

    config_class = SokobanConfig
    tile_codes = _CODES
    config: SokobanConfig

    def __init__(self, render_mode: str | None = "rgb_array", **kwargs: Any):
        super().__init__(render_mode, **kwargs)
        self.player: tuple[int, int] = (0, 0)
        self.boxes: set[tuple[int, int]] = set()

    def _grid_shape(self) -> tuple[int, int]:
        return self.config.dim_room

    def _new_episode(self, seed: int) -> None:
        c = self.config
        self.level = generate_level(seed, c.dim_room[0], c.dim_room[1], c.num_boxes, c.min_solution_length,
                                    c.max_solution_length, c.reverse_steps, c.solver_max_nodes)
        self.walls = self.level.walls
        self.targets = frozenset(self.level.targets)
        self.boxes = set(self.level.boxes)
        self.player = self.level.player
        self._distance = len(self.level.solution)

    def _distance_to_go(self) -> int | None:
        c = self.config
        return distance_to_go(c.dim_room[0], c.dim_room[1], self.walls, self.level.targets,
                              tuple(sorted(self.boxes)), self.player, c.solver_max_nodes)

    def _apply_move(self, direction: str) -> tuple[float, bool, bool]:
        c = self.config
        dr, dc = DIRECTIONS[direction]
        nxt = (self.player[0] + dr, self.player[1] + dc)
        reward = c.step_penalty if c.reward == "shaped" else 0.0
        if nxt in self.walls:
            return reward, False, False
        if nxt in self.boxes:
            beyond = (nxt[0] + dr, nxt[1] + dc)
            if beyond in self.walls or beyond in self.boxes:
                return reward, False, False
            self.boxes.remove(nxt)
            self.boxes.add(beyond)
            if c.reward == "shaped":
                reward += c.box_on_target_reward * ((beyond in self.targets) - (nxt in self.targets))
        self.player = nxt
        solved = self._success()
        if c.reward == "progress":
            before, self._distance = self._distance, (0 if solved else self._distance_to_go())
            if before is not None:  # after a deadlock nothing more is credited
                reward += c.deadlock_penalty if self._distance is None else c.progress_reward * (before - self._distance)
        if solved:
            reward += c.solve_reward if c.reward == "shaped" else 1.0
        return reward, True, solved

    def _success(self) -> bool:
        return self.boxes <= self.targets

    def _grid_rows(self) -> list[str]:
        return grid_rows(self.config.dim_room, self.walls, self.targets, self.boxes, self.player)

    def _sprites(self) -> np.ndarray:
        return _sprites(self.config.cell_px)

    def _state(self) -> dict[str, Any]:
        return make_state(self.config.dim_room, self.walls, self.targets, self.boxes, self.player)

    def env_description(self) -> str:
        return ("You are playing Sokoban. Push every box onto a target. You can push a box but not pull it, "
                "and you cannot push two boxes at once or push a box into a wall. Map symbols: "
                f"{self.symbol_legend}. Positions are [row, col] from the top-left cell [0, 0].")

    # -- pure functions of a state (oracle, world-model predictions) -------------------
    @staticmethod
    def _parse_state(state: dict[str, Any]):
        grid = state["grid"]
        walls = frozenset((r, c) for r, row in enumerate(grid) for c, ch in enumerate(row) if ch == WALL)
        ents = state["entities"]
        return (len(grid), len(grid[0]), walls, tuple(map(tuple, ents["targets"])),
                tuple(map(tuple, ents["boxes"])), tuple(ents["player"]))

    @classmethod
    def solve_state(cls, state: dict[str, Any]) -> list[str] | None:
        rows, cols, walls, targets, boxes, player = cls._parse_state(state)
        return solve(rows, cols, walls, targets, boxes, player)

    @classmethod
    def predict_state(cls, state: dict[str, Any], actions: list[str]) -> dict[str, Any]:
        rows, cols, walls, targets, boxes, player = cls._parse_state(state)
        box_set = set(boxes)
        for a in actions:
            d = canonical_direction(a)
            if d is None:
                break
            dr, dc = DIRECTIONS[d]
            nxt = (player[0] + dr, player[1] + dc)
            if nxt in walls:
                continue
            if nxt in box_set:
                beyond = (nxt[0] + dr, nxt[1] + dc)
                if beyond in walls or beyond in box_set:
                    continue
                box_set.remove(nxt)
                box_set.add(beyond)
            player = nxt
            if box_set <= set(targets):
                break
        return make_state((rows, cols), walls, frozenset(targets), box_set, player)
