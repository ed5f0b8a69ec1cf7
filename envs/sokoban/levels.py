"""Sokoban level generation by reverse play, and a BFS solver.

Generation (the idea of Racanière et al. 2017 / gym-sokoban, written here from the
description): carve a random room topology, put the boxes on their targets, then play
*backwards* — the player walks and may pull an adjacent box behind it. Every pull is
the inverse of a legal push, so the reached configuration is solvable by construction.
Among the states visited, the one with the most box displacement is kept, and the player is placed
on a random cell it can reach from there without moving a box. A BFS solver
then measures the optimal solution length so levels can be filtered by difficulty.

Cells: 0 wall, 1 floor. Positions are (row, col).
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from functools import lru_cache

Pos = tuple[int, int]
MOVES: dict[str, Pos] = {"Up": (-1, 0), "Down": (1, 0), "Left": (0, -1), "Right": (0, 1)}


@dataclass(frozen=True)
class Level:
    """A Sokoban level: walls as a frozenset of cells, everything else immutable too."""

    rows: int
    cols: int
    walls: frozenset[Pos]
    targets: tuple[Pos, ...]
    boxes: tuple[Pos, ...]
    player: Pos
    solution: tuple[str, ...]


def _carve(rng: random.Random, rows: int, cols: int, floor_target: int) -> set[Pos]:
    """Random walk inside the border, carving floor until `floor_target` cells exist."""
    floor: set[Pos] = set()
    r, c = rng.randint(1, rows - 2), rng.randint(1, cols - 2)
    direction = rng.choice(list(MOVES.values()))
    steps = 0
    while len(floor) < floor_target and steps < rows * cols * 20:
        floor.add((r, c))
        if rng.random() < 0.35:
            direction = rng.choice(list(MOVES.values()))
        nr, nc = r + direction[0], c + direction[1]
        if 1 <= nr <= rows - 2 and 1 <= nc <= cols - 2:
            r, c = nr, nc
        else:
            direction = rng.choice(list(MOVES.values()))
        steps += 1
    return floor


def _reverse_play(rng: random.Random, floor: set[Pos], targets: list[Pos], player: Pos,
                  steps: int) -> tuple[tuple[Pos, ...], Pos] | None:
    """Walk backwards from the solved state, pulling boxes; keep the most scrambled state."""
    boxes = list(targets)
    box_set = set(boxes)
    best: tuple[int, tuple[Pos, ...], Pos] | None = None
    moves = list(MOVES.values())
    for _ in range(steps):
        dr, dc = rng.choice(moves)
        nxt = (player[0] + dr, player[1] + dc)
        if nxt not in floor or nxt in box_set:
            continue
        behind = (player[0] - dr, player[1] - dc)
        if behind in box_set and rng.random() < 0.6:
            i = boxes.index(behind)
            box_set.discard(behind)
            boxes[i] = player
            box_set.add(player)
        player = nxt
        off = sum(b != t for b, t in zip(boxes, targets, strict=True))
        if off == 0:
            continue
        dist = sum(abs(b[0] - t[0]) + abs(b[1] - t[1]) for b, t in zip(boxes, targets, strict=True))
        score = dist * off
        if best is None or score > best[0]:
            best = (score, tuple(boxes), player)
    return (best[1], best[2]) if best else None


def _reachable(floor: set[Pos], boxes: set[Pos], start: Pos) -> set[Pos]:
    seen = {start}
    stack = [start]
    while stack:
        r, c = stack.pop()
        for dr, dc in MOVES.values():
            q = (r + dr, c + dc)
            if q in floor and q not in boxes and q not in seen:
                seen.add(q)
                stack.append(q)
    return seen


def dead_cells(rows: int, cols: int, walls: frozenset[Pos], targets: tuple[Pos, ...]) -> frozenset[Pos]:
    """Non-target floor corners: a box pushed there can never move again."""
    dead = set()
    for r in range(rows):
        for c in range(cols):
            p = (r, c)
            if p in walls or p in targets:
                continue
            up, down = (r - 1, c) in walls, (r + 1, c) in walls
            left, right = (r, c - 1) in walls, (r, c + 1) in walls
            if (up or down) and (left or right):
                dead.add(p)
    return frozenset(dead)


def solve(rows: int, cols: int, walls: frozenset[Pos], targets: tuple[Pos, ...], boxes: tuple[Pos, ...],
          player: Pos, max_nodes: int = 200_000) -> list[str] | None:
    """Shortest move sequence (BFS over player moves) that puts every box on a target.

    Returns None when unsolvable or when more than `max_nodes` states were expanded.
    Boxes in dead corners are pruned.
    """
    target_set = frozenset(targets)
    dead = dead_cells(rows, cols, walls, targets)
    start = (player, frozenset(boxes))
    if start[1] <= target_set:
        return []
    parent: dict = {start: None}
    queue = deque([start])
    while queue:
        if len(parent) > max_nodes:
            return None
        state = queue.popleft()
        p, bs = state
        for name, (dr, dc) in MOVES.items():
            np_ = (p[0] + dr, p[1] + dc)
            if np_ in walls:
                continue
            nb = bs
            if np_ in bs:
                beyond = (np_[0] + dr, np_[1] + dc)
                if beyond in walls or beyond in bs or beyond in dead:
                    continue
                nb = (bs - {np_}) | {beyond}
            nxt = (np_, nb)
            if nxt in parent:
                continue
            parent[nxt] = (state, name)
            if nb <= target_set:
                path = []
                node = nxt
                while parent[node] is not None:
                    node, move = parent[node]
                    path.append(move)
                return path[::-1]
            queue.append(nxt)
    return None


@lru_cache(maxsize=4096)
def generate_level(seed: int, rows: int, cols: int, num_boxes: int, min_solution: int = 1,
                   max_solution: int = 1000, reverse_steps: int = 300, max_nodes: int = 200_000,
                   max_attempts: int = 200) -> Level:
    """A solvable level, deterministic in all arguments (cached: resets of a seen seed are free).

    Attempts are derived from `seed`; the first one whose optimal solution length lies in
    [min_solution, max_solution] is returned.
    """
    interior = (rows - 2) * (cols - 2)
    if rows < 4 or cols < 4:
        raise ValueError(f"dim_room must be at least 4x4, got {rows}x{cols}")
    if num_boxes < 1 or 2 * num_boxes + 2 > interior:
        raise ValueError(f"{num_boxes} boxes do not fit in a {rows}x{cols} room")
    for attempt in range(max_attempts):
        rng = random.Random(seed * 1_000_003 + attempt)
        floor_target = min(interior, max(2 * num_boxes + 4, int(interior * rng.uniform(0.55, 0.8))))
        floor = _carve(rng, rows, cols, floor_target)
        if len(floor) < 2 * num_boxes + 2:
            continue
        cells = sorted(floor)
        rng.shuffle(cells)
        targets = cells[:num_boxes]
        player = cells[num_boxes]
        played = _reverse_play(rng, floor, targets, player, reverse_steps)
        if played is None:
            continue
        boxes, player = played
        # The player may start anywhere it could walk to from there without touching a
        # box: the level stays solvable and the agent must first find its way.
        player = rng.choice(sorted(_reachable(floor, set(boxes), player)))
        walls = frozenset((r, c) for r in range(rows) for c in range(cols) if (r, c) not in floor)
        solution = solve(rows, cols, walls, tuple(targets), boxes, player, max_nodes)
        if solution is None or not (min_solution <= len(solution) <= max_solution):
            continue
        return Level(rows, cols, walls, tuple(sorted(targets)), tuple(sorted(boxes)), player, tuple(solution))
    raise RuntimeError(
        f"no {rows}x{cols} level with {num_boxes} boxes and solution length in "
        f"[{min_solution}, {max_solution}] after {max_attempts} attempts (seed {seed}); relax the bounds"
    )
