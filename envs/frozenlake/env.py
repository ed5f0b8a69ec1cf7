"""FrozenLake: walk across the ice to the goal without falling into a hole.

Random solvable maps (size, frozen probability, random start and goal), optional
slipperiness driven by the env's seeded RNG (as in gymnasium: the intended move happens
with probability 1 - slip_prob, otherwise one of the two perpendicular moves), and a
shortest-path solver.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from envs.base import EntitySpec, StateSchema
from envs.grid import DIRECTIONS, GridConfig, GridEnv, canonical_direction, tile

FROZEN, HOLE, GOAL, PLAYER, PLAYER_ON_GOAL, PLAYER_IN_HOLE = "_", "H", "G", "P", "S", "X"
Pos = tuple[int, int]
_PERPENDICULAR = {"Up": ("Left", "Right"), "Down": ("Left", "Right"), "Left": ("Up", "Down"), "Right": ("Up", "Down")}


@dataclass
class FrozenLakeConfig(GridConfig):
    """FrozenLake options. ``p`` is the probability a cell is frozen (not a hole)."""

    size: int = 4
    p: float = 0.8
    random_start_goal: bool = True
    is_slippery: bool = False
    slip_prob: float = 2 / 3
    min_solution_length: int = 1
    goal_reward: float = 1.0
    hole_reward: float = 0.0
    step_penalty: float = 0.0
    max_turns: int = 10

    def validate(self) -> None:
        super().validate()
        if not 2 <= self.size <= 32:
            raise ValueError(f"size must be within 2..32, got {self.size}")
        if not 0.0 < self.p <= 1.0:
            raise ValueError(f"p (frozen probability) must be in (0, 1], got {self.p}")
        if not 0.0 <= self.slip_prob < 1.0:
            raise ValueError(f"slip_prob must be in [0, 1), got {self.slip_prob}")


def shortest_path(size: int, holes: frozenset[Pos], start: Pos, goal: Pos) -> list[str] | None:
    """BFS over cells avoiding holes; the move names of a shortest path, or None."""
    parent: dict[Pos, tuple[Pos, str] | None] = {start: None}
    queue = deque([start])
    while queue:
        p = queue.popleft()
        if p == goal:
            path = []
            while parent[p] is not None:
                p, move = parent[p]  # type: ignore[misc]
                path.append(move)
            return path[::-1]
        for name, (dr, dc) in DIRECTIONS.items():
            q = (p[0] + dr, p[1] + dc)
            if 0 <= q[0] < size and 0 <= q[1] < size and q not in holes and q not in parent:
                parent[q] = (p, name)
                queue.append(q)
    return None


@lru_cache(maxsize=4096)
def generate_map(seed: int, size: int, p: float, random_start_goal: bool, min_solution: int = 1,
                 max_attempts: int = 1000) -> tuple[frozenset[Pos], Pos, Pos, tuple[str, ...]]:
    """(holes, start, goal, shortest solution) for a solvable map, deterministic in its args."""
    cells = [(r, c) for r in range(size) for c in range(size)]
    for attempt in range(max_attempts):
        rng = random.Random(seed * 1_000_003 + attempt)
        if random_start_goal:
            start, goal = rng.sample(cells, 2)
        else:
            start, goal = (0, 0), (size - 1, size - 1)
        holes = frozenset(c for c in cells if c not in (start, goal) and rng.random() > p)
        path = shortest_path(size, holes, start, goal)
        if path is not None and len(path) >= min_solution:
            return holes, start, goal, tuple(path)
    raise RuntimeError(f"no solvable {size}x{size} map with p={p} after {max_attempts} attempts (seed {seed})")


@lru_cache(maxsize=32)
def _sprites(px: int) -> np.ndarray:
    ice = (206, 232, 246)
    return np.stack([
        tile(px, ice, border=(180, 210, 230)),                          # 0 frozen
        tile(px, (24, 44, 92)),                                         # 1 hole
        tile(px, ice, (230, 180, 20), "square", border=(180, 210, 230)),  # 2 goal
        tile(px, ice, (200, 40, 40), "circle", border=(180, 210, 230)),   # 3 player
        tile(px, (230, 180, 20), (200, 40, 40), "circle"),               # 4 player on goal
        tile(px, (24, 44, 92), (200, 40, 40), "cross"),                  # 5 player in hole
    ])


_CODES = {FROZEN: 0, HOLE: 1, GOAL: 2, PLAYER: 3, PLAYER_ON_GOAL: 4, PLAYER_IN_HOLE: 5}


def grid_rows(size: int, holes, goal: Pos, player: Pos) -> list[str]:
    """The symbolic map, one string per row."""
    out = []
    for r in range(size):
        line = []
        for c in range(size):
            p = (r, c)
            if p == player:
                line.append(PLAYER_ON_GOAL if p == goal else PLAYER_IN_HOLE if p in holes else PLAYER)
            elif p == goal:
                line.append(GOAL)
            elif p in holes:
                line.append(HOLE)
            else:
                line.append(FROZEN)
        out.append("".join(line))
    return out


def make_state(size: int, holes, goal: Pos, player: Pos) -> dict[str, Any]:
    """``info["state"]`` for a configuration (see ``FrozenLakeEnv.state_schema``)."""
    return {
        "entities": {"player": list(player), "goal": list(goal), "holes": [list(h) for h in sorted(holes)]},
        "grid": grid_rows(size, holes, goal, player),
        "grid_size": [size, size],
        "in_hole": player in holes,
    }


class FrozenLakeEnv(GridEnv):
    """FrozenLake with string actions; see ``FrozenLakeConfig`` for options."""

    name = "frozenlake"
    description = "FrozenLake: reach the goal across the ice without falling into a hole (random solvable maps)"
    action_grammar = "action (SEP action){0,K-1} where action := Up | Down | Left | Right (case-insensitive)"
    state_schema = StateSchema(
        entities=(
            EntitySpec("player", "point", PLAYER, ("player", "agent", "you"), "the player you control"),
            EntitySpec("goal", "point", GOAL, ("goal", "target", "gift"), "the goal cell", dynamic=False),
            EntitySpec("holes", "points", HOLE, ("hole", "holes"), "holes in the ice", dynamic=False),
        ),
        grid_symbols={PLAYER: ("player",), PLAYER_ON_GOAL: ("player", "goal"), PLAYER_IN_HOLE: ("player", "holes"),
                      GOAL: ("goal",), HOLE: ("holes",), FROZEN: ()},
    )
    symbol_legend = (f"'{FROZEN}' frozen ice, '{HOLE}' hole, '{GOAL}' goal, '{PLAYER}' player, "
                     f"'{PLAYER_ON_GOAL}' player on goal, '{PLAYER_IN_HOLE}' player in a hole")

    config_class = FrozenLakeConfig
    tile_codes = _CODES
    config: FrozenLakeConfig

    def __init__(self, render_mode: str | None = "rgb_array", **kwargs: Any):
        super().__init__(render_mode, **kwargs)
        self.player: Pos = (0, 0)

    def _grid_shape(self) -> tuple[int, int]:
        return (self.config.size, self.config.size)

    def _new_episode(self, seed: int) -> None:
        c = self.config
        self.holes, self.start, self.goal, self.solution = generate_map(
            seed, c.size, c.p, c.random_start_goal, c.min_solution_length)
        self.player = self.start

    def _apply_move(self, direction: str) -> tuple[float, bool, bool]:
        c = self.config
        if c.is_slippery and self.np_random.random() < c.slip_prob:
            direction = _PERPENDICULAR[direction][int(self.np_random.integers(0, 2))]
        dr, dc = DIRECTIONS[direction]
        q = (self.player[0] + dr, self.player[1] + dc)
        reward = c.step_penalty
        if not (0 <= q[0] < c.size and 0 <= q[1] < c.size):
            return reward, False, False
        self.player = q
        if q == self.goal:
            return reward + c.goal_reward, True, True
        if q in self.holes:
            return reward + c.hole_reward, True, True
        return reward, True, False

    def _success(self) -> bool:
        return self.player == self.goal

    def _grid_rows(self) -> list[str]:
        return grid_rows(self.config.size, self.holes, self.goal, self.player)

    def _sprites(self) -> np.ndarray:
        return _sprites(self.config.cell_px)

    def _state(self) -> dict[str, Any]:
        return make_state(self.config.size, self.holes, self.goal, self.player)

    def env_description(self) -> str:
        slip = (" The ice is slippery: sometimes you move sideways instead of where you intended."
                if self.config.is_slippery else "")
        return ("You are playing FrozenLake. Walk from your position to the goal without stepping into a hole; "
                f"falling into a hole ends the episode.{slip} Map symbols: {self.symbol_legend}. "
                "Positions are [row, col] from the top-left cell [0, 0].")

    # -- pure functions of a state -------------------------------------------------------
    @staticmethod
    def _parse_state(state: dict[str, Any]):
        ents = state["entities"]
        return (state["grid_size"][0], frozenset(map(tuple, ents["holes"])), tuple(ents["goal"]),
                tuple(ents["player"]))

    @classmethod
    def solve_state(cls, state: dict[str, Any]) -> list[str] | None:
        size, holes, goal, player = cls._parse_state(state)
        if player in holes:
            return None
        return shortest_path(size, holes, player, goal)

    @classmethod
    def predict_state(cls, state: dict[str, Any], actions: list[str]) -> dict[str, Any]:
        size, holes, goal, player = cls._parse_state(state)
        for a in actions:
            d = canonical_direction(a)
            if d is None or player == goal or player in holes:
                break
            dr, dc = DIRECTIONS[d]
            q = (player[0] + dr, player[1] + dc)
            if 0 <= q[0] < size and 0 <= q[1] < size:
                player = q
        return make_state(size, holes, goal, player)
