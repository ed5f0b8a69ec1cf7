"""Example schemas and states shared by the belief and reward tests (Sokoban- and FrozenLake-like)."""

from __future__ import annotations

from envs.base import EntitySpec, StateSchema

SOKOBAN = StateSchema(
    entities=(
        EntitySpec("player", "point", "P", ("player", "agent", "you"), "the player"),
        EntitySpec("boxes", "points", "X", ("box", "boxes"), "boxes", dynamic=True),
        EntitySpec("targets", "points", "O", ("target", "targets", "goal"), "targets", dynamic=False),
    ),
    grid_symbols={"P": ("player",), "S": ("player", "targets"), "X": ("boxes",), "*": ("boxes", "targets"),
                  "O": ("targets",), "#": (), "_": ()},
    reference="player",
)

FROZEN = StateSchema(
    entities=(
        EntitySpec("player", "point", "P", ("player", "elf"), "the player"),
        EntitySpec("goal", "point", "G", ("goal", "gift", "present"), "the goal", dynamic=False),
        EntitySpec("holes", "points", "H", ("hole", "holes"), "holes in the ice", dynamic=False),
    ),
    grid_symbols={"P": ("player",), "G": ("goal",), "W": ("player", "goal"), "H": ("holes",), "_": ()},
    reference="player",
)

SOKOBAN_STATE = {
    "entities": {"player": [2, 3], "boxes": [[3, 3], [1, 1]], "targets": [[4, 4], [1, 1]]},
    "grid": ["######", "#*___#", "#__P_#", "#__X_#", "#___O#", "######"],
    "grid_size": [6, 6],
    "steps": 7,  # env-specific extras are ignored
}

FROZEN_STATE = {
    "entities": {"player": [0, 0], "goal": [3, 3], "holes": [[1, 1], [2, 3]]},
    "grid": ["P___", "_H__", "___H", "___G"],
    "grid_size": [4, 4],
}


def build_grid(entities: dict, schema: StateSchema, rows: int, cols: int) -> list[str]:
    """Draw entities with the schema's symbols ('_' background); test-side, independent of the code."""
    symbol_of = {frozenset(v): k for k, v in schema.grid_symbols.items() if v}
    cells: dict[tuple[int, int], set[str]] = {}
    for name, value in entities.items():
        points = [value] if schema.entity(name).kind == "point" else value
        for r, c in points:
            cells.setdefault((r, c), set()).add(name)
    return ["".join(symbol_of[frozenset(cells[(r, c)])] if (r, c) in cells else "_" for c in range(cols))
            for r in range(rows)]
