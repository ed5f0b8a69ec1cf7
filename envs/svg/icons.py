"""Procedural icons: 2-6 simple primitives on a white or coloured square canvas.

``generate_icon(seed, ...)`` is deterministic in its arguments and returns the SVG source
(one line, no commas: the agent layer's parsers and prompts stay simple) and one record
per shape: its entity kind (``"circles"``, ``"stars"``...), SVG element, fill/stroke colour,
bounding box in viewBox units, and the coarse-grid cell of the bounding box's centre.
Shapes get distinct centre cells, so the symbolic grid can show every one of them.
"""

from __future__ import annotations

import math
import random
from typing import Any

#: Entity kinds, in schema order; each shape record's "kind" is one of these.
KINDS = ("circles", "ellipses", "rectangles", "triangles", "polygons", "stars", "lines", "paths")

PALETTE = (
    "#e6194b", "#3cb44b", "#ffe119", "#4363d8", "#f58231", "#911eb4", "#46f0f0", "#f032e6",
    "#bcf60c", "#008080", "#9a6324", "#800000", "#808000", "#000075", "#808080", "#000000",
)
BACKGROUNDS = ("#fffac8", "#aaffc3", "#ffd8b1", "#e6beff", "#d0e8ff", "#fabebe", "#dcdcdc", "#2f2f4f")


def cell_of(x: float, y: float, canvas: int, grid: int) -> list[int]:
    """[row, col] of the grid cell holding viewBox point (x, y)."""
    col = min(grid - 1, max(0, int(x * grid / canvas)))
    row = min(grid - 1, max(0, int(y * grid / canvas)))
    return [row, col]


def _fmt(v: float) -> str:
    return str(int(round(v)))


def _points_attr(pts: list[tuple[float, float]]) -> str:
    return " ".join(f"{_fmt(x)} {_fmt(y)}" for x, y in pts)


def _bbox(pts: list[tuple[float, float]], pad: float = 0.0) -> list[int]:
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    return [int(round(min(xs) - pad)), int(round(min(ys) - pad)), int(round(max(xs) + pad)),
            int(round(max(ys) + pad))]


def _regular(cx: float, cy: float, r: float, n: int, rot: float) -> list[tuple[float, float]]:
    return [(cx + r * math.cos(rot + 2 * math.pi * i / n), cy + r * math.sin(rot + 2 * math.pi * i / n))
            for i in range(n)]


def _shape(rng: random.Random, kind: str, canvas: int, colour: str) -> tuple[str, list[int], str]:
    """(SVG element, bbox, element name) for one random shape of ``kind``."""
    s = canvas / 128.0  # sizes are designed for a 128-unit canvas
    m = 6 * s

    def centre(extent: float) -> tuple[float, float]:
        lo, hi = m + extent, canvas - m - extent
        return rng.uniform(lo, hi), rng.uniform(lo, hi)

    if kind == "circles":
        r = rng.uniform(8, 26) * s
        cx, cy = centre(r)
        el = f'<circle cx="{_fmt(cx)}" cy="{_fmt(cy)}" r="{_fmt(r)}" fill="{colour}"/>'
        return el, _bbox([(cx - r, cy - r), (cx + r, cy + r)]), "circle"
    if kind == "ellipses":
        rx, ry = rng.uniform(12, 30) * s, rng.uniform(6, 18) * s
        if rng.random() < 0.5:
            rx, ry = ry, rx
        cx, cy = rng.uniform(m + rx, canvas - m - rx), rng.uniform(m + ry, canvas - m - ry)
        el = f'<ellipse cx="{_fmt(cx)}" cy="{_fmt(cy)}" rx="{_fmt(rx)}" ry="{_fmt(ry)}" fill="{colour}"/>'
        return el, _bbox([(cx - rx, cy - ry), (cx + rx, cy + ry)]), "ellipse"
    if kind == "rectangles":
        w, h = rng.uniform(14, 50) * s, rng.uniform(14, 50) * s
        x, y = rng.uniform(m, canvas - m - w), rng.uniform(m, canvas - m - h)
        rounded = f' rx="{_fmt(rng.uniform(3, min(w, h) / 3))}"' if rng.random() < 0.4 else ""
        el = (f'<rect x="{_fmt(x)}" y="{_fmt(y)}" width="{_fmt(w)}" height="{_fmt(h)}"{rounded} '
              f'fill="{colour}"/>')
        return el, _bbox([(x, y), (x + w, y + h)]), "rect"
    if kind in ("triangles", "polygons", "stars"):
        r = rng.uniform(12, 28) * s
        cx, cy = centre(r)
        rot = rng.uniform(0, 2 * math.pi)
        if kind == "triangles":
            pts = _regular(cx, cy, r, 3, rot)
            # jitter the vertices a little so not every triangle is equilateral
            pts = [(x + rng.uniform(-r, r) * 0.25, y + rng.uniform(-r, r) * 0.25) for x, y in pts]
        elif kind == "polygons":
            pts = _regular(cx, cy, r, rng.choice((5, 6, 8)), rot)
        else:
            n = rng.choice((5, 5, 6))
            outer = _regular(cx, cy, r, n, rot)
            inner = _regular(cx, cy, r * rng.uniform(0.4, 0.55), n, rot + math.pi / n)
            pts = [p for pair in zip(outer, inner, strict=True) for p in pair]
        pts = [(min(canvas - 1, max(1, x)), min(canvas - 1, max(1, y))) for x, y in pts]
        return f'<polygon points="{_points_attr(pts)}" fill="{colour}"/>', _bbox(pts), "polygon"
    if kind == "lines":
        width = rng.uniform(3, 7) * s
        n = rng.choice((2, 2, 3, 4))
        span = rng.uniform(30, 80) * s
        x0, y0 = rng.uniform(m, canvas - m), rng.uniform(m, canvas - m)
        pts = [(x0, y0)]
        for _ in range(n - 1):
            ang = rng.uniform(0, 2 * math.pi)
            step = span / (n - 1)
            x = min(canvas - m, max(m, pts[-1][0] + step * math.cos(ang)))
            y = min(canvas - m, max(m, pts[-1][1] + step * math.sin(ang)))
            pts.append((x, y))
        stroke = f'stroke="{colour}" stroke-width="{_fmt(width)}" stroke-linecap="round"'
        if n == 2:
            (ax, ay), (bx, by) = pts
            el = f'<line x1="{_fmt(ax)}" y1="{_fmt(ay)}" x2="{_fmt(bx)}" y2="{_fmt(by)}" {stroke}/>'
            return el, _bbox(pts, width / 2), "line"
        el = f'<polyline points="{_points_attr(pts)}" fill="none" {stroke} stroke-linejoin="round"/>'
        return el, _bbox(pts, width / 2), "polyline"
    if kind == "paths":
        # a closed blob: two quadratic arcs between two anchor points
        r = rng.uniform(14, 28) * s
        cx, cy = centre(r)
        ang = rng.uniform(0, math.pi)
        ax, ay = cx - r * math.cos(ang), cy - r * math.sin(ang)
        bx, by = cx + r * math.cos(ang), cy + r * math.sin(ang)
        bulge1, bulge2 = rng.uniform(0.5, 1.0) * r, rng.uniform(0.2, 1.0) * r
        nx, ny = -math.sin(ang), math.cos(ang)
        c1 = (cx + nx * 2 * bulge1, cy + ny * 2 * bulge1)
        c2 = (cx - nx * 2 * bulge2, cy - ny * 2 * bulge2)
        c1 = (min(canvas - 1, max(1, c1[0])), min(canvas - 1, max(1, c1[1])))
        c2 = (min(canvas - 1, max(1, c2[0])), min(canvas - 1, max(1, c2[1])))
        d = (f"M {_fmt(ax)} {_fmt(ay)} Q {_fmt(c1[0])} {_fmt(c1[1])} {_fmt(bx)} {_fmt(by)} "
             f"Q {_fmt(c2[0])} {_fmt(c2[1])} {_fmt(ax)} {_fmt(ay)} Z")
        # a quadratic curve stays inside the hull of its control points, and reaches halfway to them
        hull = [(ax, ay), (bx, by), ((ax + bx) / 2 * 0.5 + c1[0] * 0.5, (ay + by) / 2 * 0.5 + c1[1] * 0.5),
                ((ax + bx) / 2 * 0.5 + c2[0] * 0.5, (ay + by) / 2 * 0.5 + c2[1] * 0.5)]
        return f'<path d="{d}" fill="{colour}"/>', _bbox(hull), "path"
    raise ValueError(f"unknown shape kind {kind!r}")


def generate_icon(seed: int, canvas: int = 128, grid: int = 8, min_shapes: int = 2, max_shapes: int = 6,
                  white_background_prob: float = 0.35, kinds: tuple[str, ...] = KINDS) -> dict[str, Any]:
    """A random icon: ``{"svg", "shapes", "background"}`` (deterministic in the arguments)."""
    rng = random.Random(f"svg-icon:{seed}:{canvas}:{grid}:{min_shapes}:{max_shapes}")
    background = "#ffffff" if rng.random() < white_background_prob else rng.choice(BACKGROUNDS)
    n = rng.randint(min_shapes, max_shapes)
    colours = [c for c in PALETTE if c != background and not (background == "#2f2f4f" and c == "#000075")]
    body: list[str] = []
    shapes: list[dict[str, Any]] = []
    used: set[tuple[int, int]] = set()
    for _ in range(n):
        for _attempt in range(50):
            kind = rng.choice(kinds)
            colour = rng.choice(colours)
            el, bbox, tag = _shape(rng, kind, canvas, colour)
            cell = cell_of((bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2, canvas, grid)
            if tuple(cell) not in used:
                break
        else:
            continue  # canvas too crowded for distinct cells: fewer shapes
        used.add(tuple(cell))
        body.append(el)
        shapes.append({"kind": kind, "element": tag, "colour": colour, "bbox": bbox, "cell": cell})
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {canvas} {canvas}" width="{canvas}" '
           f'height="{canvas}"><rect width="{canvas}" height="{canvas}" fill="{background}"/>'
           + "".join(body) + "</svg>")
    return {"svg": svg, "shapes": shapes, "background": background}


def entities_of(shapes: list[dict[str, Any]]) -> dict[str, list[list[int]]]:
    """``state["entities"]``: every kind -> sorted [row, col] cells of its shapes' centres."""
    out: dict[str, list[list[int]]] = {k: [] for k in KINDS}
    for s in shapes:
        out[s["kind"]].append(list(s["cell"]))
    return {k: sorted(v) for k, v in out.items()}
