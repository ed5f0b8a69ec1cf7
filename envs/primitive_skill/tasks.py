"""Tasks as pure functions of a state dict (millimetres): layouts, conditions, plans, predictions.

Everything the oracle needs is in the state (``entities``, ``goals``, ``holding``,
``drawer``, ``tolerances``), so ``solve_state``/``predict_state`` never touch the simulator.
Positions are object centres ``[x, y, z]`` in integer mm; a cube resting on the table has
z = 20 (cubes are 40 mm); x points right, y away from the camera, z up.
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any

import numpy as np

CUBE = 40  # mm
HALF = CUBE // 2
CARRY = 150  # gripper height (mm) for moves; a picked object ends this far up (above its pick point)
PUSHER = 8  # pusher sphere radius (mm)
WORKSPACE = {"x": (-400.0, 400.0), "y": (-300.0, 300.0), "z": (0.0, 400.0)}
ALIGN_OFFSET = (60, 0, 0)  # align2: the red cube's centre relative to the green cube's
DRAWER_OPEN_MM = 100  # opening from which the drawer counts as open (its travel is 160)
DRAWER_CLOSED_MM = 10
DRAWER_TRAVEL_MM = 160
TRAY_FLOOR_MM = 10
TRAY_WALL_TOP_MM = 62
INTERIOR_HALF_MM = (62, 67)
HANDLE_FROM_TRAY = (0, -105, 40)  # handle bar centre minus tray origin

TASKS: dict[str, dict[str, Any]] = {
    "align2": {
        "objects": ("red_cube", "green_cube"),
        "stages": ("red_cube_grasped", "red_cube_aligned"),
        "text": "Put the red cube directly to the right of the green cube: the red cube's centre must end 60 mm "
                "further along +x than the green cube's, at the same y (within the tolerance), both resting on "
                "the table.",
    },
    "place2": {
        "objects": ("red_cube", "green_cube"),
        "stages": ("red_cube_grasped", "red_cube_placed", "green_cube_grasped", "green_cube_placed"),
        "text": "Place the red cube on the red goal disc and the green cube on the green goal disc (the goal "
                "positions are listed below), both resting on the table.",
    },
    "stack3": {
        "objects": ("red_cube", "green_cube", "blue_cube"),
        "stages": ("green_cube_grasped", "green_on_red", "blue_cube_grasped", "blue_on_green"),
        "text": "Stack the three cubes: the green cube on top of the red cube, then the blue cube on top of the "
                "green cube (the red cube stays on the table). A cube placed more than about 20 mm off-centre "
                "topples.",
    },
    "drawer": {
        "objects": ("red_cube",),
        "stages": ("drawer_opened", "red_cube_grasped", "red_cube_in_drawer", "drawer_closed"),
        "text": "Put the red cube into the drawer and close it. The drawer is closed at first: pull it open by "
                "a push that starts at its handle (a push starting at the handle hooks it and drags the drawer "
                "along its slide, towards -y to open, +y to close), place the cube inside the open drawer, then "
                "push the handle back to close it.",
    },
}


def name_of(obj: str) -> str:
    return obj.replace("_", " ")


# ----------------------------------------------------------------------------- conditions


def _xy_dist(a, b) -> float:
    return math.hypot(float(a[0]) - float(b[0]), float(a[1]) - float(b[1]))


def on_table(p, tol: float = 5.0) -> bool:
    return abs(float(p[2]) - HALF) <= tol


def stacked(top, bottom, xy_tol: float) -> bool:
    return _xy_dist(top, bottom) <= xy_tol and abs(float(top[2]) - float(bottom[2]) - CUBE) <= 6.0


def in_drawer(p, drawer: dict[str, Any]) -> bool:
    c = drawer["interior_center"]
    return (abs(float(p[0]) - c[0]) <= INTERIOR_HALF_MM[0] and abs(float(p[1]) - c[1]) <= INTERIOR_HALF_MM[1]
            and float(p[2]) < TRAY_WALL_TOP_MM)


def conditions(state: dict[str, Any]) -> dict[str, bool]:
    """Every stage's condition on ``state`` now, plus ``success``."""
    task = state["task"]
    ents = state["entities"]
    tol = state["tolerances"]
    holding = state.get("holding")
    out: dict[str, bool] = {f"{o}_grasped": holding == o for o in TASKS[task]["objects"]}
    if task == "align2":
        r, g = ents["red_cube"], ents["green_cube"]
        target = (g[0] + ALIGN_OFFSET[0], g[1] + ALIGN_OFFSET[1])
        out["red_cube_aligned"] = (holding is None and on_table(r) and on_table(g)
                                   and _xy_dist(r, target) <= tol["place_mm"])
        out["success"] = out["red_cube_aligned"]
    elif task == "place2":
        for o in ("red_cube", "green_cube"):
            p = ents[o]
            out[f"{o}_placed"] = holding != o and on_table(p) and _xy_dist(p, state["goals"][o]) <= tol["place_mm"]
        out["success"] = holding is None and out["red_cube_placed"] and out["green_cube_placed"]
    elif task == "stack3":
        r, g, b = ents["red_cube"], ents["green_cube"], ents["blue_cube"]
        out["green_on_red"] = holding != "green_cube" and on_table(r) and stacked(g, r, tol["stack_mm"])
        out["blue_on_green"] = holding is None and out["green_on_red"] and stacked(b, g, tol["stack_mm"])
        out["success"] = out["blue_on_green"]
    elif task == "drawer":
        d = state["drawer"]
        inside = holding != "red_cube" and in_drawer(ents["red_cube"], d)
        out["drawer_opened"] = d["opening_mm"] >= DRAWER_OPEN_MM
        out["red_cube_in_drawer"] = inside
        out["drawer_closed"] = inside and d["opening_mm"] <= DRAWER_CLOSED_MM
        out["success"] = holding is None and out["drawer_closed"]
    else:  # pragma: no cover - validated by the config
        raise ValueError(task)
    return out


# ----------------------------------------------------------------------------- layouts


def sample_layout(task: str, seed: int) -> dict[str, Any]:
    """Initial cube positions (x, y mm, yaw rad), goal discs and the drawer's x, per seed."""
    rng = np.random.default_rng([seed, 7919])
    objects = TASKS[task]["objects"]
    for _ in range(1000):
        drawer_x = float(rng.uniform(120, 200)) if task == "drawer" else None
        x_hi = (drawer_x - 130) if drawer_x is not None else 220
        x_lo = -250 if drawer_x is not None else -220
        cubes: dict[str, tuple[float, float, float]] = {}
        pts: list[tuple[float, float]] = []
        ok = True
        for o in objects:
            for _ in range(200):
                x, y = float(rng.uniform(x_lo, x_hi)), float(rng.uniform(-170, 110))
                if all(math.hypot(x - a, y - b) >= 90 for a, b in pts):
                    break
            else:
                ok = False
                break
            pts.append((x, y))
            cubes[o] = (round(x), round(y), float(rng.uniform(-0.5, 0.5)))
        goals: dict[str, tuple[int, int]] = {}
        if ok and task == "place2":
            for o in objects:
                for _ in range(200):
                    x, y = float(rng.uniform(-220, 220)), float(rng.uniform(-170, 110))
                    if all(math.hypot(x - a, y - b) >= 90 for a, b in pts):
                        break
                else:
                    ok = False
                    break
                pts.append((x, y))
                goals[o] = (round(x), round(y))
        if ok and task == "align2":
            r, g = cubes["red_cube"], cubes["green_cube"]
            ok = math.hypot(r[0] - g[0] - ALIGN_OFFSET[0], r[1] - g[1]) > 70
        if ok:
            return {"cubes": cubes, "goals": goals, "drawer_x": drawer_x}
    raise RuntimeError(f"could not sample a {task} layout for seed {seed}")  # pragma: no cover


# ----------------------------------------------------------------------------- actions

_NUM = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)"
_PRIM = re.compile(r"^\s*(pick|place|push)\s*\((.*)\)\s*$", re.IGNORECASE | re.DOTALL)
ARITY = {"pick": 3, "place": 3, "push": 6}


def parse_primitive(token: str) -> tuple[str, tuple[float, ...]] | str:
    """``("pick", (x, y, z))`` or an error message (never raises)."""
    m = _PRIM.match(token)
    if not m:
        return f"{token[:40]!r} is not pick(x,y,z), place(x,y,z) or push(x1,y1,z1,x2,y2,z2)"
    kind = m.group(1).lower()
    args = [a.strip() for a in m.group(2).split(",")]
    if len(args) != ARITY[kind] or not all(re.fullmatch(_NUM, a) for a in args):
        return f"{kind} takes {ARITY[kind]} numbers (millimetres), got {m.group(2)[:40]!r}"
    vals = tuple(float(a) for a in args)
    for i, v in enumerate(vals):
        axis = "xyz"[i % 3]
        lo, hi = WORKSPACE[axis]
        if not (lo <= v <= hi):
            return f"{kind}: {axis}={v:g} mm is outside the workspace ({axis} in [{lo:g}, {hi:g}])"
    return kind, vals


def fmt(kind: str, *vals: float) -> str:
    return f"{kind}({', '.join(str(int(round(v))) for v in vals)})"


# ----------------------------------------------------------------------------- oracle


def _support_z(state: dict[str, Any], moving: str, x: float, y: float) -> float:
    """Resting centre height for a cube released above (x, y): table, a cube below, or the drawer floor."""
    z = float(HALF)
    for o, p in state["entities"].items():
        if o == moving or o == "drawer":
            continue
        if abs(p[0] - x) < CUBE and abs(p[1] - y) < CUBE:
            z = max(z, float(p[2]) + CUBE)
    d = state.get("drawer")
    if d and abs(x - d["interior_center"][0]) <= INTERIOR_HALF_MM[0] + HALF and \
            abs(y - d["interior_center"][1]) <= INTERIOR_HALF_MM[1] + HALF:
        z = max(z, TRAY_FLOOR_MM + HALF)
    return z


def plan(state: dict[str, Any]) -> list[str]:
    """A scripted plan (primitive strings) that completes the task from ``state``."""
    task = state["task"]
    ents = state["entities"]
    holding = state.get("holding")
    cond = conditions(state)
    if cond["success"]:
        return []
    out: list[str] = []

    def put(obj: str, x: float, y: float) -> None:
        z = _support_z(state, obj, x, y) + 1
        out.append(fmt("place", x, y, z))

    def pick(obj: str) -> None:
        out.append(fmt("pick", *ents[obj]))

    if task == "align2":
        g = ents["green_cube"]
        tx, ty = g[0] + ALIGN_OFFSET[0], g[1] + ALIGN_OFFSET[1]
        if holding == "green_cube":
            put("green_cube", ents["green_cube"][0], ents["green_cube"][1])
            return out
        if holding != "red_cube":
            pick("red_cube")
        put("red_cube", tx, ty)
    elif task == "place2":
        goals = state["goals"]
        if holding:
            put(holding, *goals[holding][:2])
        for o in ("red_cube", "green_cube"):
            if o != holding and not cond[f"{o}_placed"]:
                pick(o)
                put(o, *goals[o][:2])
    elif task == "stack3":
        r = ents["red_cube"]
        if holding == "red_cube":
            put("red_cube", r[0], r[1])
            return out
        if holding == "green_cube" or not cond["green_on_red"]:
            if holding == "blue_cube":
                put("blue_cube", ents["blue_cube"][0], ents["blue_cube"][1])
                return out
            if holding != "green_cube":
                pick("green_cube")
            out.append(fmt("place", r[0], r[1], r[2] + CUBE + 1))
            base = (r[0], r[1], r[2] + CUBE)
        else:
            base = tuple(ents["green_cube"])
        if holding != "blue_cube":
            pick("blue_cube")
        out.append(fmt("place", base[0], base[1], base[2] + CUBE + 1))
    elif task == "drawer":
        d = state["drawer"]
        h = d["handle"]
        opening = d["opening_mm"]
        c = d["interior_center"]
        if cond["red_cube_in_drawer"]:
            out.append(fmt("push", *h, h[0], h[1] + opening, h[2]))
            return out
        if holding == "red_cube":
            if opening >= DRAWER_OPEN_MM:
                out.append(fmt("place", c[0], c[1], TRAY_FLOOR_MM + HALF + 1))
                out.append(fmt("push", h[0], h[1], h[2], h[0], h[1] + opening, h[2]))
            else:
                put("red_cube", ents["red_cube"][0], ents["red_cube"][1])
            return out
        extra = DRAWER_TRAVEL_MM - opening
        if opening < DRAWER_OPEN_MM:
            out.append(fmt("push", *h, h[0], h[1] - extra, h[2]))
        cy = c[1] - (extra if opening < DRAWER_OPEN_MM else 0)
        hy = h[1] - (extra if opening < DRAWER_OPEN_MM else 0)
        pick("red_cube")
        out.append(fmt("place", c[0], cy, TRAY_FLOOR_MM + HALF + 1))
        out.append(fmt("push", h[0], hy, h[2], h[0], hy + DRAWER_TRAVEL_MM, h[2]))
    return out


def _seg_dist(p, a, b) -> tuple[float, float]:
    """Distance from p to segment a-b (xy), and the segment parameter of the closest point."""
    ax, ay, bx, by = a[0], a[1], b[0], b[1]
    dx, dy = bx - ax, by - ay
    n2 = dx * dx + dy * dy
    t = 0.0 if n2 == 0 else max(0.0, min(1.0, ((p[0] - ax) * dx + (p[1] - ay) * dy) / n2))
    return math.hypot(p[0] - (ax + t * dx), p[1] - (ay + t * dy)), t


def predict(state: dict[str, Any], actions: list[str]) -> dict[str, Any]:
    """The state after the intended effect of ``actions`` (the entities, holding, drawer)."""
    s = copy.deepcopy(state)
    ents = s["entities"]
    tol = s["tolerances"]
    objects = [o for o in ents if o != "drawer"]
    for a in actions:
        parsed = parse_primitive(a) if isinstance(a, str) else "not a string"
        if isinstance(parsed, str):
            break
        kind, v = parsed
        if kind == "pick":
            if s.get("holding"):
                continue
            best = min(objects, key=lambda o: math.dist(ents[o], v), default=None)
            if best is None or math.dist(ents[best], v) > tol["grasp_mm"]:
                continue
            hover = max(CARRY, v[2] + 60)
            p = ents[best]
            ents[best] = [p[0], p[1], int(round(p[2] + hover - v[2]))]
            s["holding"] = best
        elif kind == "place":
            o = s.get("holding")
            if not o:
                continue
            s["holding"] = None
            x, y = int(round(v[0])), int(round(v[1]))
            ents[o] = [x, y, int(round(_support_z(s, o, x, y)))]
        else:  # push
            if s.get("holding"):
                continue
            p1, p2 = v[:3], v[3:]
            d = s.get("drawer")
            if d and math.dist(d["handle"], p1) <= tol["hook_mm"]:
                new_open = min(max(d["opening_mm"] - (p2[1] - p1[1]), 0), DRAWER_TRAVEL_MM)
                dy = -(new_open - d["opening_mm"])
                for o in objects:
                    if in_drawer(ents[o], d):
                        ents[o] = [ents[o][0], int(round(ents[o][1] + dy)), ents[o][2]]
                d["opening_mm"] = int(round(new_open))
                d["handle"] = [d["handle"][0], int(round(d["handle"][1] + dy)), d["handle"][2]]
                d["interior_center"] = [d["interior_center"][0], int(round(d["interior_center"][1] + dy)),
                                        d["interior_center"][2]]
                ents["drawer"] = list(d["handle"])
                s["drawer_open"] = new_open >= DRAWER_OPEN_MM
                continue
            length = math.dist(p1[:2], p2[:2])
            if length == 0:
                continue
            ux, uy = (p2[0] - p1[0]) / length, (p2[1] - p1[1]) / length
            for o in objects:
                p = ents[o]
                dist, t = _seg_dist(p, p1, p2)
                zc = p1[2] + t * (p2[2] - p1[2])
                if dist <= HALF + PUSHER and abs(zc - p[2]) <= HALF + PUSHER and t < 1.0:
                    reach = HALF + PUSHER
                    ents[o] = [int(round(p2[0] + ux * reach)), int(round(p2[1] + uy * reach)), p[2]]
    cond = conditions(s)
    stages = dict(s.get("stages", {}))
    for k in stages:
        stages[k] = bool(stages[k] or cond.get(k, False))
    s["stages"] = stages
    s["success"] = cond["success"]
    return s
