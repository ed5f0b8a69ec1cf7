"""Procedural indoor scenes, instructions per eval split, and pure functions of a state.

Everything here is plain Python (no MuJoCo): the env renders a :class:`Scene` with
``envs.navigation.render``; the oracle (``solve_state``/``predict_state``) works on the
state dict alone through :func:`refresh_state`, :func:`apply_action` and :func:`plan`.

Geometry. The floor is an occupancy grid of square cells (``cell_size`` metres, default
0.5 m = one move step). Rows grow southwards, columns eastwards; the outer ring of cells
is wall. World coordinates for rendering: ``x = col * cell``, ``y = -row * cell`` (north
is +y), ``z`` up. The agent stands on a cell centre facing north/east/south/west.
Furniture occupies a rectangle of cells (its footprint); small things (mug, laptop,
vase) stand on a table or cabinet and their footprint is the one cell they stand on.
The distance to an object is from the agent's cell centre to the nearest point of the
footprint rectangle.
"""

from __future__ import annotations

import copy
import math
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

HEADINGS = ("north", "east", "south", "west")
HEADING_DELTA = {"north": (-1, 0), "east": (0, 1), "south": (1, 0), "west": (0, -1)}
HEADING_SYMBOL = {"north": "^", "east": ">", "south": "v", "west": "<"}
ACTIONS = ("moveahead", "moveback", "moveleft", "moveright", "rotateleft", "rotateright", "lookup", "lookdown")
MOVE_OFFSET = {"moveahead": 0, "moveright": 1, "moveback": 2, "moveleft": 3}  # heading index offsets
SPLITS = ("base", "common_sense", "complex_instruction", "visual_appearance", "long_horizon")
WALL, FLOOR, FURNITURE, TARGET, OBJECT = "#", ".", "x", "T", "O"

#: Named colours (RGB 0..1) objects are painted with; names appear in instructions.
PALETTE: dict[str, tuple[float, float, float]] = {
    "red": (0.80, 0.12, 0.12), "blue": (0.12, 0.28, 0.85), "green": (0.15, 0.60, 0.20),
    "yellow": (0.95, 0.85, 0.10), "orange": (0.96, 0.50, 0.08), "purple": (0.52, 0.22, 0.70),
    "pink": (0.96, 0.52, 0.72), "white": (0.93, 0.93, 0.93), "black": (0.10, 0.10, 0.10),
    "brown": (0.50, 0.30, 0.14), "gray": (0.52, 0.52, 0.55),
}


@dataclass(frozen=True)
class Category:
    """A kind of object: footprint (cells along its back wall x depth), placement, colours."""

    name: str
    width: int
    depth: int
    height: float
    placement: str  # "wall" (back against a wall), "free" (anywhere), "surface" (on a table/cabinet)
    colors: tuple[str, ...]
    affordance: str  # the common_sense instruction


CATEGORIES: dict[str, Category] = {c.name: c for c in (
    Category("bed", 3, 4, 0.9, "wall", ("blue", "red", "green", "white", "pink", "purple", "yellow"),
             "Find somewhere to sleep for the night."),
    Category("sofa", 4, 2, 0.9, "wall", ("red", "blue", "green", "gray", "brown", "purple", "orange"),
             "Find somewhere several people can sit and relax together."),
    Category("table", 3, 2, 0.75, "free", ("brown", "white", "black", "gray"),
             "Find the piece of furniture where you would eat dinner."),
    Category("chair", 1, 1, 0.95, "free", ("red", "blue", "green", "yellow", "black", "white", "brown", "orange"),
             "Find a seat for just one person."),
    Category("fridge", 2, 1, 1.8, "wall", ("white", "gray", "black"),
             "Find something to keep food cold."),
    Category("tv", 3, 1, 1.35, "wall", ("black", "gray"),
             "Find something to watch a movie on."),
    Category("bookshelf", 2, 1, 1.9, "wall", ("brown", "white", "black"),
             "Find where the books are stored."),
    Category("plant", 1, 1, 1.1, "free", ("orange", "white", "brown", "gray", "blue", "red"),
             "Find something that needs watering."),
    Category("lamp", 1, 1, 1.6, "free", ("yellow", "white", "orange", "red", "blue", "green"),
             "Find something that gives light when it is dark."),
    Category("cabinet", 2, 1, 0.9, "wall", ("brown", "white", "gray", "blue", "green"),
             "Find somewhere to store dishes behind closed doors."),
    Category("box", 1, 1, 0.4, "free", ("brown", "orange", "red", "blue", "green", "yellow", "purple"),
             "Find something to pack things in when moving house."),
    Category("ball", 1, 1, 0.36, "free", ("red", "blue", "green", "yellow", "orange", "purple", "pink", "white"),
             "Find something to play catch with."),
    Category("mug", 1, 1, 0.12, "surface", ("red", "blue", "white", "yellow", "green", "black"),
             "Find something to drink hot coffee from."),
    Category("laptop", 1, 1, 0.25, "surface", ("gray", "black", "white", "blue"),
             "Find something to write an email on."),
    Category("vase", 1, 1, 0.3, "surface", ("blue", "white", "red", "purple", "green", "yellow"),
             "Find something to put fresh flowers in."),
)}
SURFACE_TOP = {"table": 0.75, "cabinet": 0.9}
#: Categories that may appear more than once (complex_instruction / visual_appearance distractors).
SMALL_FREE = ("chair", "plant", "lamp", "box", "ball")
SIZE_WORDS = {"small": 0.65, "large": 1.4}


@dataclass
class Obj:
    """One placed object. ``r0, c0, r1, c1``: footprint cells (inclusive); ``facing``: its front."""

    category: str
    color: str
    r0: int
    c0: int
    r1: int
    c1: int
    facing: str
    z0: float = 0.0
    scale: float = 1.0
    name: str = ""
    support: str = "floor"

    @property
    def cells(self) -> list[tuple[int, int]]:
        return [(r, c) for r in range(self.r0, self.r1 + 1) for c in range(self.c0, self.c1 + 1)]

    @property
    def height(self) -> float:
        return CATEGORIES[self.category].height * (self.scale if self.category in SMALL_FREE else 1.0)


@dataclass
class Scene:
    rows: int
    cols: int
    walls: set[tuple[int, int]]
    objects: list[Obj]
    target: int
    agent: tuple[int, int]
    heading: str
    instruction: str
    split: str
    wall_rgb: tuple[float, float, float]
    floor_rgb: tuple[float, float, float]
    windows: list[tuple[int, int, str]] = field(default_factory=list)  # (row, col, side of wall facing in)
    doorway: list[tuple[int, int]] = field(default_factory=list)
    rooms: list[tuple[int, int, int, int]] = field(default_factory=list)  # interior rects r0, c0, r1, c1


# ------------------------------------------------------------------------- geometry

def rect_distance(r: float, c: float, r0: int, c0: int, r1: int, c1: int, cell: float) -> float:
    """Metres from the centre of cell (r, c) to the rectangle of cells r0..r1 x c0..c1."""
    y, x = (r + 0.5) * cell, (c + 0.5) * cell
    dy = max(r0 * cell - y, 0.0, y - (r1 + 1) * cell)
    dx = max(c0 * cell - x, 0.0, x - (c1 + 1) * cell)
    return math.hypot(dx, dy)


def bearing(heading: str, dr: float, dc: float) -> float:
    """Angle (degrees, positive = to the left) of offset (dr, dc) relative to ``heading``."""
    fr, fc = HEADING_DELTA[heading]
    # forward f, left l = rotate f counter-clockwise on the map: (fr, fc) -> (-fc, fr)
    lr, lc = -fc, fr
    ahead = dr * fr + dc * fc
    left = dr * lr + dc * lc
    return math.degrees(math.atan2(left, ahead))


def direction_word(angle: float) -> str:
    a = abs(angle)
    if a <= 22.5:
        return "ahead"
    if a >= 157.5:
        return "behind"
    side = "left" if angle > 0 else "right"
    if a < 67.5:
        return f"ahead-{side}"
    if a <= 112.5:
        return side
    return f"behind-{side}"


def line_clear(walls, r0: float, c0: float, r1: float, c1: float) -> bool:
    """No wall cell on the segment between two points in cell units (sampled every 0.2 cell)."""
    n = max(1, int(math.hypot(r1 - r0, c1 - c0) / 0.2))
    for i in range(1, n):
        t = i / n
        cell = (int(math.floor(r0 + (r1 - r0) * t)), int(math.floor(c0 + (c1 - c0) * t)))
        if cell in walls:
            return False
    return True


# ------------------------------------------------------------------------- state

def _blocked(state: dict[str, Any]) -> set[tuple[int, int]]:
    return {(r, c) for r, row in enumerate(state["occupancy"]) for c, ch in enumerate(row) if ch != FLOOR}


def _walls(state: dict[str, Any]) -> set[tuple[int, int]]:
    return {(r, c) for r, row in enumerate(state["occupancy"]) for c, ch in enumerate(row) if ch == WALL}


def target_distance(state: dict[str, Any], r: int, c: int) -> float:
    cell = state["cell_size"]
    return min(rect_distance(r, c, *t["rect"], cell) for t in state["objects_info"] if t["is_target"])


def is_success(state: dict[str, Any], r: int, c: int) -> bool:
    return target_distance(state, r, c) <= state["success_distance"] + 1e-9


def visible_objects(state: dict[str, Any], walls=None) -> list[dict[str, Any]]:
    """Objects in the camera's view: inside the field of view (horizontally and, given the
    pitch, vertically) and not behind a wall (furniture does not occlude: approximate)."""
    walls = _walls(state) if walls is None else walls
    ag = state["agent"]
    r, c, heading, pitch = ag["row"], ag["col"], ag["heading"], ag["pitch"]
    cam = state["camera"]
    half_h, half_v = cam["hfov"] / 2, cam["vfov"] / 2
    cell = state["cell_size"]
    out = []
    for o in state["objects_info"]:
        r0, c0, r1, c1 = o["rect"]
        samples = [(r0 + 0.5 * (r1 - r0 + 1), c0 + 0.5 * (c1 - c0 + 1))]
        samples += [(rr + 0.5, cc + 0.5) for rr in range(r0, r1 + 1) for cc in range(c0, c1 + 1)]
        seen = False
        for sr, sc in samples:
            dr, dc = sr - (r + 0.5), sc - (c + 0.5)
            ang = bearing(heading, dr, dc)
            if abs(ang) > half_h or math.hypot(dr, dc) < 1e-6:
                continue
            ahead = max(1e-3, math.hypot(dr, dc) * math.cos(math.radians(ang)) * cell)
            lo = math.degrees(math.atan2(o["z"][0] - cam["height"], ahead))
            hi = math.degrees(math.atan2(o["z"][1] - cam["height"], ahead))
            if hi < pitch - half_v or lo > pitch + half_v:
                continue
            if line_clear(walls, r + 0.5, c + 0.5, sr, sc):
                seen = True
                break
        if seen:
            cr, cc = samples[0]
            out.append({"name": o["name"],
                        "direction": direction_word(bearing(heading, cr - (r + 0.5), cc - (c + 0.5))),
                        "distance": round(rect_distance(r, c, r0, c0, r1, c1, cell), 2)})
    out.sort(key=lambda v: (v["distance"], v["name"]))
    return out


def refresh_state(state: dict[str, Any]) -> dict[str, Any]:
    """Recompute every pose-dependent key (entities, grid, distance, direction, visible...)
    from the static keys and ``state["agent"]``; returns the same dict."""
    ag = state["agent"]
    r, c, heading = ag["row"], ag["col"], ag["heading"]
    grid = [list(row) for row in state["occupancy"]]
    target_pts, other_pts = [], []
    for o in state["objects_info"]:
        pr, pc = o["point"]
        (target_pts if o["is_target"] else other_pts).append([pr, pc])
        grid[pr][pc] = TARGET if o["is_target"] else OBJECT
    grid[r][c] = HEADING_SYMBOL[heading]
    tgt = next(o for o in state["objects_info"] if o["is_target"])
    tr0, tc0, tr1, tc1 = tgt["rect"]
    centre = ((tr0 + tr1 + 1) / 2 - (r + 0.5), (tc0 + tc1 + 1) / 2 - (c + 0.5))
    state["entities"] = {"agent": [r, c], "target": target_pts[0], "objects": other_pts}
    state["grid"] = ["".join(row) for row in grid]
    state["heading"] = heading
    state["pitch"] = ag["pitch"]
    dist = target_distance(state, r, c)
    state["distance"] = round(dist, 2)
    state["direction"] = direction_word(bearing(heading, *centre)) if max(map(abs, centre)) > 1e-9 else "here"
    state["success"] = dist <= state["success_distance"] + 1e-9
    state["visible"] = visible_objects(state)
    return state


def apply_action(state: dict[str, Any], action: str, blocked=None, pitch_limits=(-60, 30),
                 pitch_step: int = 30) -> tuple[bool, str]:
    """Apply one canonical action to ``state["agent"]`` in place; (changed, note)."""
    ag = state["agent"]
    if action in MOVE_OFFSET:
        h = HEADINGS[(HEADINGS.index(ag["heading"]) + MOVE_OFFSET[action]) % 4]
        dr, dc = HEADING_DELTA[h]
        nr, nc = ag["row"] + dr, ag["col"] + dc
        blocked = _blocked(state) if blocked is None else blocked
        if (nr, nc) in blocked or not (0 <= nr < state["grid_size"][0] and 0 <= nc < state["grid_size"][1]):
            return False, "blocked"
        ag["row"], ag["col"] = nr, nc
        return True, ""
    if action in ("rotateleft", "rotateright"):
        step = -1 if action == "rotateleft" else 1
        ag["heading"] = HEADINGS[(HEADINGS.index(ag["heading"]) + step) % 4]
        return True, ""
    lo, hi = pitch_limits
    new = ag["pitch"] + (pitch_step if action == "lookup" else -pitch_step)
    if not lo <= new <= hi:
        return False, "cannot look further " + ("up" if action == "lookup" else "down")
    ag["pitch"] = new
    return True, ""


def plan(state: dict[str, Any]) -> list[str] | None:
    """Shortest action sequence to success: BFS over (row, col, heading) with the move and
    rotate actions (pitch does not matter for success). [] when already successful."""
    blocked = _blocked(state)
    ag = state["agent"]
    start = (ag["row"], ag["col"], HEADINGS.index(ag["heading"]))
    rows, cols = state["grid_size"]
    goal_cache: dict[tuple[int, int], bool] = {}

    def goal(r, c):
        if (r, c) not in goal_cache:
            goal_cache[(r, c)] = is_success(state, r, c)
        return goal_cache[(r, c)]

    if goal(start[0], start[1]):
        return []
    parent: dict[tuple[int, int, int], tuple[tuple[int, int, int], str] | None] = {start: None}
    queue = deque([start])
    order = ("moveahead", "rotateleft", "rotateright", "moveleft", "moveright", "moveback")
    while queue:
        s = queue.popleft()
        r, c, h = s
        for a in order:
            if a in MOVE_OFFSET:
                dr, dc = HEADING_DELTA[HEADINGS[(h + MOVE_OFFSET[a]) % 4]]
                n = (r + dr, c + dc, h)
                if (n[0], n[1]) in blocked or not (0 <= n[0] < rows and 0 <= n[1] < cols):
                    continue
            else:
                n = (r, c, (h + (-1 if a == "rotateleft" else 1)) % 4)
            if n in parent:
                continue
            parent[n] = (s, a)
            if goal(n[0], n[1]):
                path = []
                cur = n
                while parent[cur] is not None:
                    cur, act = parent[cur]  # type: ignore[misc]
                    path.append(act)
                return path[::-1]
            queue.append(n)
    return None


def make_state(scene: Scene, cell: float, success_distance: float, camera: dict[str, float]) -> dict[str, Any]:
    occ = [[FLOOR] * scene.cols for _ in range(scene.rows)]
    for (r, c) in scene.walls:
        occ[r][c] = WALL
    infos = []
    for i, o in enumerate(scene.objects):
        if o.support == "floor":
            for (r, c) in o.cells:
                occ[r][c] = FURNITURE
        infos.append({"name": o.name, "category": o.category, "color": o.color, "rect": [o.r0, o.c0, o.r1, o.c1],
                      "point": list(representative_cell(scene, i)), "z": [round(o.z0, 3), round(o.z0 + o.height, 3)],
                      "support": o.support, "is_target": i == scene.target})
    state = {
        "split": scene.split,
        "instruction": scene.instruction,
        "target_name": scene.objects[scene.target].name,
        "grid_size": [scene.rows, scene.cols],
        "occupancy": ["".join(row) for row in occ],
        "cell_size": cell,
        "success_distance": success_distance,
        "camera": dict(camera),
        "agent": {"row": scene.agent[0], "col": scene.agent[1], "heading": scene.heading, "pitch": 0},
        "objects_info": infos,
        "target_cells": [list(p) for p in scene.objects[scene.target].cells],
    }
    return refresh_state(state)


def copy_state(state: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(state)


def representative_cell(scene: Scene, index: int) -> tuple[int, int]:
    """A cell naming object ``index`` on the grid: distinct for every object."""
    return scene._points[index]  # type: ignore[attr-defined]


def _assign_points(scene: Scene) -> None:
    used: set[tuple[int, int]] = set()
    order = sorted(range(len(scene.objects)), key=lambda i: len(scene.objects[i].cells))
    chosen: dict[int, tuple[int, int]] = {}
    for i in order:
        o = scene.objects[i]
        cr, cc = (o.r0 + o.r1) / 2, (o.c0 + o.c1) / 2
        cand = sorted(o.cells, key=lambda p: (abs(p[0] - cr) + abs(p[1] - cc), p))
        p = next((q for q in cand if q not in used), None)
        if p is None:
            raise _Retry
        used.add(p)
        chosen[i] = p
    pts = [chosen[i] for i in range(len(scene.objects))]
    scene._points = pts  # type: ignore[attr-defined]


# ------------------------------------------------------------------------- generation

class _Retry(Exception):
    pass


WALL_COLORS = [(0.92, 0.90, 0.84), (0.85, 0.88, 0.92), (0.90, 0.86, 0.80), (0.80, 0.87, 0.82),
               (0.93, 0.84, 0.84), (0.86, 0.84, 0.92), (0.95, 0.93, 0.88), (0.78, 0.82, 0.88)]
FLOOR_COLORS = [(0.62, 0.45, 0.30), (0.72, 0.58, 0.42), (0.50, 0.38, 0.28), (0.60, 0.60, 0.62),
                (0.75, 0.72, 0.66), (0.45, 0.45, 0.50), (0.68, 0.52, 0.40), (0.55, 0.58, 0.52)]


class Generator:
    """Builds one scene for (seed, split); deterministic."""

    def __init__(self, seed: int, split: str, min_start_distance: float, cell: float, success_distance: float):
        self.rng = random.Random(seed * 7919 + SPLITS.index(split) * 104_729 + 17)
        self.split = split
        self.min_start = min_start_distance
        self.cell = cell
        self.success = success_distance

    # -- layout ---------------------------------------------------------------------
    def layout(self, two_rooms: bool) -> tuple[int, int, set, list, list, list]:
        rng = self.rng
        doorway: list[tuple[int, int]] = []
        if not two_rooms:
            h, w = rng.randint(8, 11), rng.randint(8, 12)
            rows, cols = h + 2, w + 2
            walls = {(r, c) for r in range(rows) for c in range(cols) if r in (0, rows - 1) or c in (0, cols - 1)}
            rooms = [(1, 1, h, w)]
        else:
            h, wa, wb = rng.randint(7, 10), rng.randint(7, 10), rng.randint(7, 10)
            rows, cols = h + 2, wa + wb + 3
            div = wa + 1
            walls = {(r, c) for r in range(rows) for c in range(cols)
                     if r in (0, rows - 1) or c in (0, cols - 1, div)}
            d0 = rng.randint(1, h - 1)
            doorway = [(d0, div), (d0 + 1, div)]
            for p in doorway:
                walls.discard(p)
            rooms = [(1, 1, h, wa), (1, div + 1, h, cols - 2)]
            if rng.random() < 0.5:  # stack the rooms vertically instead
                walls = {(c, r) for r, c in walls}
                doorway = [(c, r) for r, c in doorway]
                rooms = [(c0, r0, c1, r1) for r0, c0, r1, c1 in rooms]
                rows, cols = cols, rows
        windows = []
        for (r0, c0, r1, c1) in rooms:
            side = rng.choice([s for s in ("north", "south", "east", "west")
                               if self._outer(side_cells(s, r0, c0, r1, c1), rows, cols)])
            cells = side_cells(side, r0, c0, r1, c1)
            k = rng.randint(1, len(cells) - 3)
            windows.append((cells[k][0], cells[k][1], side))
            windows.append((cells[k + 1][0], cells[k + 1][1], side))
        return rows, cols, walls, rooms, doorway, windows

    @staticmethod
    def _outer(cells, rows, cols) -> bool:
        return all(r in (0, rows - 1) or c in (0, cols - 1) for r, c in cells)

    # -- placement ------------------------------------------------------------------
    def place(self, cat: str, room, occupied: set, reserved: set, walls: set, objects: list[Obj],
              color: str | None = None, scale: float = 1.0) -> Obj | None:
        rng = self.rng
        spec = CATEGORIES[cat]
        color = color or rng.choice(spec.colors)
        r0, c0, r1, c1 = room
        if spec.placement == "surface":
            hosts = [o for o in objects if o.category in SURFACE_TOP and room_contains(room, o.r0, o.c0)]
            rng.shuffle(hosts)
            for host in hosts:
                taken = {(x.r0, x.c0) for x in objects if x.support != "floor"}
                free = [p for p in host.cells if p not in taken]
                if len(free) < 2:
                    continue  # keep a cell of the host for its own grid point
                p = rng.choice(free)
                return Obj(cat, color, p[0], p[1], p[0], p[1], host.facing, z0=SURFACE_TOP[host.category],
                           scale=scale, support=host.category)
            return None
        for _ in range(60):
            if spec.placement == "wall":
                side = rng.choice(("north", "south", "east", "west"))
                facing = {"north": "south", "south": "north", "east": "west", "west": "east"}[side]
                w, d = spec.width, spec.depth
                if side in ("north", "south"):
                    if w > c1 - c0 + 1:
                        continue
                    cc = rng.randint(c0, c1 - w + 1)
                    rr = r0 if side == "north" else r1 - d + 1
                    rect = (rr, cc, rr + d - 1, cc + w - 1)
                else:
                    if w > r1 - r0 + 1:
                        continue
                    rr = rng.randint(r0, r1 - w + 1)
                    cc = c0 if side == "west" else c1 - d + 1
                    rect = (rr, cc, rr + w - 1, cc + d - 1)
            else:
                facing = rng.choice(HEADINGS)
                w, d = spec.width, spec.depth
                if facing in ("east", "west"):
                    w, d = d, w
                if d > r1 - r0 + 1 or w > c1 - c0 + 1:
                    continue
                rr, cc = rng.randint(r0, r1 - d + 1), rng.randint(c0, c1 - w + 1)
                rect = (rr, cc, rr + d - 1, cc + w - 1)
            cells = {(r, c) for r in range(rect[0], rect[2] + 1) for c in range(rect[1], rect[3] + 1)}
            ring = {(r + dr, c + dc) for r, c in cells for dr in (-1, 0, 1) for dc in (-1, 0, 1)} - cells
            if cells & (occupied | reserved) or ring & occupied:
                continue
            if not connected(walls | occupied | cells, room_cells_all(walls, occupied | cells, self._rows, self._cols)):
                continue
            occupied |= cells
            return Obj(cat, color, *rect, facing=facing, scale=scale)
        return None

    def generate(self) -> Scene:
        for _ in range(200):
            try:
                return self._generate()
            except _Retry:
                continue
        raise RuntimeError(f"could not generate a {self.split} scene")

    def _generate(self) -> Scene:
        rng = self.rng
        split = self.split
        two = split == "long_horizon"
        rows, cols, walls, rooms, doorway, windows = self.layout(two)
        self._rows, self._cols = rows, cols
        reserved = set()
        for (r, c) in doorway:
            reserved |= {(r + dr, c + dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1)}
        occupied: set[tuple[int, int]] = set()
        objects: list[Obj] = []
        furniture = ["bed", "sofa", "table", "chair", "fridge", "tv", "bookshelf", "plant", "lamp", "cabinet",
                     "box", "ball"]
        small = ["mug", "laptop", "vase"]
        used: set[str] = set()
        for room in rooms:
            n = rng.randint(4, 6)
            cats = rng.sample([f for f in furniture if f not in used], n)
            if rng.random() < 0.7 and "table" not in used and "table" not in cats:
                cats[0] = "table"
            cats.sort(key=lambda k: -CATEGORIES[k].width * CATEGORIES[k].depth)
            for cat in cats:
                o = self.place(cat, room, occupied, reserved, walls, objects)
                if o is not None:
                    objects.append(o)
                    used.add(cat)
            pool = [s for s in small if s not in used]
            for cat in rng.sample(pool, min(len(pool), rng.randint(0, 2))):
                o = self.place(cat, room, occupied, reserved, walls, objects)
                if o is not None:
                    objects.append(o)
                    used.add(cat)
        if len(objects) < 3:
            raise _Retry
        instruction, target = self.task(objects, rooms, occupied, reserved, walls, windows)
        # name objects: category alone when unique, else with the distinguishing word
        counts: dict[str, int] = {}
        for o in objects:
            counts[o.category] = counts.get(o.category, 0) + 1
        for o in objects:
            if counts[o.category] == 1:
                o.name = label(o.category)
            elif o.scale != 1.0 and len({x.scale for x in objects if x.category == o.category}) > 1 and \
                    len({x.color for x in objects if x.category == o.category}) == 1:
                o.name = f"{size_word(o.scale)} {o.category}"
            else:
                o.name = f"{o.color} {o.category}"
        if len({o.name for o in objects}) != len(objects):
            raise _Retry
        scene = Scene(rows, cols, walls, objects, target, (0, 0), "north", instruction, split,
                      rng.choice(WALL_COLORS), rng.choice(FLOOR_COLORS), windows, doorway, rooms)
        _assign_points(scene)
        # agent start
        tgt = objects[target]
        blocked = walls | occupied
        start_rooms = rooms
        if two:
            start_rooms = [rm for rm in rooms if not room_contains(rm, tgt.r0, tgt.c0)]
        free = [(r, c) for (r0, c0, r1, c1) in start_rooms for r in range(r0, r1 + 1) for c in range(c0, c1 + 1)
                if (r, c) not in blocked
                and rect_distance(r, c, tgt.r0, tgt.c0, tgt.r1, tgt.c1, self.cell) >= self.min_start]
        if not free:
            raise _Retry
        scene.agent = rng.choice(free)
        scene.heading = rng.choice(HEADINGS)
        return scene

    # -- instructions ---------------------------------------------------------------
    def task(self, objects, rooms, occupied, reserved, walls, windows) -> tuple[str, int]:
        rng, split = self.rng, self.split
        if split in ("base", "long_horizon"):
            if split == "long_horizon":
                cand = [i for i, o in enumerate(objects) if room_contains(rooms[1], o.r0, o.c0)] or [0]
                if rng.random() < 0.5:  # target in either room; the agent starts in the other one
                    cand = [i for i, o in enumerate(objects) if room_contains(rooms[0], o.r0, o.c0)] or cand
                i = rng.choice(cand)
                name = label(objects[i].category)
                return rng.choice([f"Go to the {name}. It is in the other room.",
                                   f"Find the {name} in the other room and go to it."]), i
            i = rng.randrange(len(objects))
            return rng.choice(["Go to the {}.", "Navigate to the {}.", "Walk to the {}."]).format(
                label(objects[i].category)), i
        if split == "common_sense":
            i = rng.randrange(len(objects))
            return CATEGORIES[objects[i].category].affordance, i
        room = rooms[0]
        if split == "complex_instruction":
            return self._complex(objects, room, occupied, reserved, walls, windows)
        return self._visual(objects, room, occupied, reserved, walls)

    def _complex(self, objects, room, occupied, reserved, walls, windows):
        rng = self.rng
        cat = rng.choice([c for c in SMALL_FREE if c not in {o.category for o in objects}] or [None])
        if cat is None:
            raise _Retry
        a = self.place(cat, room, occupied, reserved, walls, objects)
        b = self.place(cat, room, occupied, reserved, walls, objects)
        if a is None or b is None:
            raise _Retry
        if a.color == b.color:
            b.color = rng.choice([c for c in CATEGORIES[cat].colors if c != a.color])
        objects += [a, b]
        anchors = [(label(o.category), (o.r0, o.c0, o.r1, o.c1)) for o in objects if o.category != cat]
        wr = [(r, c) for r, c, _ in windows]
        anchors.append(("window", (min(r for r, _ in wr), min(c for _, c in wr),
                                   max(r for r, _ in wr), max(c for _, c in wr))))
        rng.shuffle(anchors)
        for name, rect in anchors:
            da = rect_rect(a, rect)
            db = rect_rect(b, rect)
            if abs(da - db) < 1.0:
                continue
            tgt = a if da < db else b
            idx = objects.index(tgt)
            if min(da, db) <= 0.75 and rng.random() < 0.5:
                return f"Go to the {cat} next to the {name}.", idx
            if rng.random() < 0.3:
                far = b if tgt is a else a
                return f"Go to the {cat} that is farther from the {name}.", objects.index(far)
            return f"Go to the {cat} closest to the {name}.", idx
        raise _Retry

    def _visual(self, objects, room, occupied, reserved, walls):
        rng = self.rng
        kind = rng.choice(("color", "color", "size", "unique_color"))
        present = {o.category for o in objects}
        if kind == "unique_color" and "bookshelf" not in present:
            # vivid colours only: neutral ones (wood, white, gray) and green (leaves), blue (screens) and
            # pink (flowers) also appear on other objects' parts
            i = rng.randrange(len(objects))
            o = objects[i]
            others = {x.color for j, x in enumerate(objects) if j != i}
            vivid = ("red", "yellow", "orange", "purple") + (("pink",) if "vase" not in present else ())
            options = [c for c in CATEGORIES[o.category].colors if c not in others and c in vivid]
            if not options:
                raise _Retry
            o.color = rng.choice(options)
            return f"Go to the {o.color} object.", i
        cat = rng.choice([c for c in SMALL_FREE if c not in present] or [None])
        if cat is None:
            raise _Retry
        if kind == "size" and cat != "chair":
            color = rng.choice(CATEGORIES[cat].colors)
            words = list(SIZE_WORDS)
            rng.shuffle(words)
            placed = [self.place(cat, room, occupied, reserved, walls, objects, color, SIZE_WORDS[w]) for w in words]
            if None in placed:
                raise _Retry
            objects += placed
            k = rng.randrange(2)
            return f"Go to the {words[k]} {cat}.", objects.index(placed[k])
        n = rng.randint(2, 3)
        colors = rng.sample(CATEGORIES[cat].colors, n)
        placed = [self.place(cat, room, occupied, reserved, walls, objects, c) for c in colors]
        if None in placed:
            raise _Retry
        objects += placed
        k = rng.randrange(n)
        return rng.choice(["Go to the {} {}.", "Find the {} {} and walk to it."]).format(colors[k], cat), \
            objects.index(placed[k])


def label(category: str) -> str:
    """How a category is written in instructions and object names."""
    return "TV" if category == "tv" else category


def size_word(scale: float) -> str:
    return "small" if scale < 1 else "large"


def rect_rect(o: Obj, rect) -> float:
    """Gap between an object's footprint and a rectangle of cells, in metres of 0.5 m cells
    (instructions are generated on the default grid scale)."""
    r0, c0, r1, c1 = rect
    dr = max(r0 - o.r1 - 1, 0, o.r0 - r1 - 1)
    dc = max(c0 - o.c1 - 1, 0, o.c0 - c1 - 1)
    return 0.5 * math.hypot(dr, dc)


def side_cells(side: str, r0: int, c0: int, r1: int, c1: int) -> list[tuple[int, int]]:
    """Wall cells along one side of a room's interior rectangle."""
    if side == "north":
        return [(r0 - 1, c) for c in range(c0, c1 + 1)]
    if side == "south":
        return [(r1 + 1, c) for c in range(c0, c1 + 1)]
    if side == "west":
        return [(r, c0 - 1) for r in range(r0, r1 + 1)]
    return [(r, c1 + 1) for r in range(r0, r1 + 1)]


def room_contains(room, r: int, c: int) -> bool:
    return room[0] <= r <= room[2] and room[1] <= c <= room[3]


def room_cells_all(walls, blocked, rows, cols) -> list[tuple[int, int]]:
    return [(r, c) for r in range(rows) for c in range(cols) if (r, c) not in walls and (r, c) not in blocked]


def connected(blocked: set, free: list[tuple[int, int]]) -> bool:
    if not free:
        return False
    free_set = set(free)
    seen = {free[0]}
    queue = deque([free[0]])
    while queue:
        r, c = queue.popleft()
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            q = (r + dr, c + dc)
            if q in free_set and q not in seen:
                seen.add(q)
                queue.append(q)
    return len(seen) == len(free_set)
