"""MuJoCo rendering of a navigation :class:`~envs.navigation.world.Scene`.

One MuJoCo model and one offscreen ``mujoco.Renderer`` per env: the model holds pools of
box/cylinder/sphere geoms; every episode repositions, resizes and recolours them (hidden
geoms go to geom group 5, which the scene option does not draw), so reset never
recompiles a model or recreates a GL context (creating a renderer costs 0.1-0.8 s on a
CPU; repainting the pool costs about a millisecond). The egocentric view is a free
camera at the agent's eye.
"""

from __future__ import annotations

import math

import numpy as np

from envs.mujoco_gl import gl_call
from envs.mujoco_gl import renderer_error as _gl_error
from envs.navigation.world import CATEGORIES, HEADING_DELTA, PALETTE, SMALL_FREE, SURFACE_TOP, Obj, Scene

N_BOX, N_CYL, N_SPH = 320, 48, 40
HIDDEN_GROUP = 5
WALL_HEIGHT = 2.5
_AZIMUTH = {"east": 0.0, "north": 90.0, "west": 180.0, "south": 270.0}

_XML = """
<mujoco model="navigation">
  <statistic extent="10" center="0 0 1"/>
  <visual>
    <global offwidth="{w}" offheight="{h}" fovy="{fovy}" ipd="0"/>
    <map znear="0.004" zfar="20"/>
    <headlight ambient="0.5 0.5 0.5" diffuse="0.4 0.4 0.4" specular="0 0 0"/>
    <quality shadowsize="0"/>
  </visual>
  <asset>
    <texture name="floor" type="2d" builtin="checker" rgb1="1 1 1" rgb2="0.82 0.82 0.82" width="64" height="64"/>
    <material name="floor" texture="floor" texrepeat="1 1" texuniform="true" reflectance="0"/>
  </asset>
  <worldbody>
    <light directional="true" pos="0 0 10" dir="0.2 0.3 -1" diffuse="0.3 0.3 0.3" castshadow="false"/>
    <geom name="floor" type="box" size="1 1 0.05" pos="0 0 -0.05" material="floor" contype="0" conaffinity="0"/>
    {pool}
  </worldbody>
</mujoco>
"""


def _pool_xml() -> str:
    lines = []
    for kind, n in (("box", N_BOX), ("cylinder", N_CYL), ("sphere", N_SPH)):
        size = "0.1" if kind == "sphere" else "0.1 0.1" if kind == "cylinder" else "0.1 0.1 0.1"
        lines += [f'<geom type="{kind}" size="{size}" pos="0 0 -50" group="{HIDDEN_GROUP}" contype="0" '
                  f'conaffinity="0"/>' for _ in range(n)]
    return "\n    ".join(lines)


def renderer_error(exc: BaseException) -> RuntimeError:
    return _gl_error("navigation", exc)


def _shade(rgb, f: float) -> tuple[float, float, float]:
    return tuple(min(1.0, max(0.0, x * f)) for x in rgb)  # type: ignore[return-value]


class SceneRenderer:
    """Paints scenes into a fixed geom pool and renders egocentric views."""

    def __init__(self, height: int, width: int, fovy: float):
        try:
            import mujoco
        except ImportError as e:  # pragma: no cover - dependency missing
            raise RuntimeError("the navigation env needs the 'mujoco' package (pip install mujoco)") from e
        self.mj = mujoco
        xml = _XML.format(w=max(width, 64), h=max(height, 64), fovy=fovy, pool=_pool_xml())
        self.model = mujoco.MjModel.from_xml_string(xml)
        self.data = mujoco.MjData(self.model)
        try:  # created, used and closed on the one GL thread (envs.mujoco_gl)
            self.renderer = gl_call(mujoco.Renderer, self.model, height, width)
        except Exception as e:  # noqa: BLE001 - any GL failure gets the same explanation
            raise renderer_error(e) from e
        types = self.model.geom_type
        g = mujoco.mjtGeom
        self.pools = {
            "box": [i for i in range(1, self.model.ngeom) if types[i] == g.mjGEOM_BOX],
            "cyl": [i for i in range(1, self.model.ngeom) if types[i] == g.mjGEOM_CYLINDER],
            "sph": [i for i in range(1, self.model.ngeom) if types[i] == g.mjGEOM_SPHERE],
        }
        self.option = mujoco.MjvOption()
        self.option.geomgroup[HIDDEN_GROUP] = 0
        self.camera = mujoco.MjvCamera()
        self.camera.type = mujoco.mjtCamera.mjCAMERA_FREE
        self.camera.distance = 1.0
        self.cell = 0.5

    def close(self) -> None:
        r = getattr(self, "renderer", None)
        if r is not None:
            gl_call(r.close)
            self.renderer = None

    # -- painting -------------------------------------------------------------------
    def paint(self, scene: Scene, cell: float) -> None:
        self.cell = cell
        m = self.model
        self._used = {"box": 0, "cyl": 0, "sph": 0}
        m.geom_group[1:] = HIDDEN_GROUP
        m.geom_pos[1:] = (0, 0, -50)
        w, h = scene.cols * cell, scene.rows * cell
        m.geom_size[0] = (w / 2, h / 2, 0.05)
        m.geom_pos[0] = (w / 2, -h / 2, -0.05)
        m.mat_texrepeat[0] = (1.0 / (2 * cell), 1.0 / (2 * cell))
        m.mat_rgba[0] = (*scene.floor_rgb, 1)
        # walls as greedy rectangles
        for r0, c0, r1, c1 in _rectangles(scene.walls):
            self._box_cells(r0, c0, r1, c1, 0.0, WALL_HEIGHT, scene.wall_rgb)
        # lintels over doorways, ceiling
        if scene.doorway:
            rs = [p[0] for p in scene.doorway]
            cs = [p[1] for p in scene.doorway]
            self._box_cells(min(rs), min(cs), max(rs), max(cs), 2.1, WALL_HEIGHT, scene.wall_rgb)
        self._add("box", (w / 2, -h / 2, WALL_HEIGHT + 0.02), (w / 2, h / 2, 0.02), (0.96, 0.96, 0.94))
        for r, c, side in scene.windows:
            self._window(r, c, side)
        for o in scene.objects:
            self._object(o)
        self.mj.mj_kinematics(m, self.data)

    def _add(self, kind: str, pos, size, rgb, alpha: float = 1.0) -> None:
        pool = self.pools[kind]
        i = self._used[kind]
        if i >= len(pool):
            raise RuntimeError(f"navigation renderer: geom pool '{kind}' exhausted ({len(pool)})")
        self._used[kind] = i + 1
        g = pool[i]
        m = self.model
        m.geom_pos[g] = pos
        if kind == "box":
            m.geom_size[g] = size
        elif kind == "cyl":
            m.geom_size[g] = (size[0], size[1], 0)
        else:
            m.geom_size[g] = (size[0], 0, 0)
        m.geom_rgba[g] = (*rgb, alpha)
        m.geom_group[g] = 0

    def _box_cells(self, r0, c0, r1, c1, z0, z1, rgb) -> None:
        cell = self.cell
        x0, x1 = c0 * cell, (c1 + 1) * cell
        y0, y1 = -(r1 + 1) * cell, -r0 * cell
        self._add("box", ((x0 + x1) / 2, (y0 + y1) / 2, (z0 + z1) / 2), ((x1 - x0) / 2, (y1 - y0) / 2, (z1 - z0) / 2),
                  rgb)

    def _window(self, r: int, c: int, side: str) -> None:
        cell = self.cell
        # inner face of the wall cell (the room lies on the opposite side of ``side``)
        cx, cy = (c + 0.5) * cell, -(r + 0.5) * cell
        fx, fy = {"north": (0, -1), "south": (0, 1), "west": (1, 0), "east": (-1, 0)}[side]  # into the room
        fx_, fy_ = cx + fx * cell / 2, cy + fy * cell / 2
        along = (abs(fy) * cell / 2, abs(fx) * cell / 2)
        self._add("box", (fx_ + fx * 0.01, fy_ + fy * 0.01, 1.4), (along[0] or 0.015, along[1] or 0.015, 0.55),
                  (0.97, 0.97, 0.97))
        self._add("box", (fx_ + fx * 0.02, fy_ + fy * 0.02, 1.4),
                  (max(along[0] - 0.04, 0.0) or 0.012, max(along[1] - 0.04, 0.0) or 0.012, 0.5), (0.55, 0.78, 0.95))

    # -- objects ----------------------------------------------------------------------
    def _object(self, o: Obj) -> None:
        cell = self.cell
        x0, x1 = o.c0 * cell, (o.c1 + 1) * cell
        y0, y1 = -(o.r1 + 1) * cell, -o.r0 * cell
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        fr, fc = HEADING_DELTA[o.facing]
        fx, fy = fc, -fr  # front in world
        rx, ry = fy, -fx  # right in world
        ns = o.facing in ("north", "south")
        W = (x1 - x0) if ns else (y1 - y0)
        D = (y1 - y0) if ns else (x1 - x0)
        if o.support != "floor":  # small thing on a table/cabinet cell: its own small frame
            W = D = cell
        base = o.z0
        s = o.scale if o.category in SMALL_FREE else 1.0
        rgb = PALETTE[o.color]

        def part(kind, u, v, z0, z1, su=0.0, sv=0.0, color=rgb, radius=0.0):
            px, py = cx + u * rx + v * fx, cy + u * ry + v * fy
            zc = base + (z0 + z1) / 2
            hz = (z1 - z0) / 2
            if kind == "box":
                size = (su, sv, hz) if ns else (sv, su, hz)
                self._add("box", (px, py, zc), size, color)
            elif kind == "cyl":
                self._add("cyl", (px, py, zc), (radius, hz), color)
            else:
                self._add("sph", (px, py, base + z0 + radius), (radius,), color)

        hw, hd = W / 2 - 0.05, D / 2 - 0.05
        wood = (0.45, 0.30, 0.18)
        dark = (0.12, 0.12, 0.13)
        light = _shade(rgb, 1.25)
        cat = o.category
        if cat == "bed":
            part("box", 0, 0, 0.0, 0.3, hw, hd, wood)
            part("box", 0, 0.02, 0.3, 0.5, hw - 0.03, hd - 0.04, (0.95, 0.95, 0.95))
            part("box", 0, 0.25, 0.5, 0.56, hw - 0.01, hd - 0.28, rgb)
            for u in (-hw / 2, hw / 2):
                part("box", u, -hd + 0.25, 0.5, 0.62, hw / 2 - 0.08, 0.15, (1.0, 1.0, 1.0))
            part("box", 0, -hd + 0.04, 0.0, 1.0, hw, 0.04, wood)
        elif cat == "sofa":
            part("box", 0, 0, 0.05, 0.42, hw, hd, rgb)
            part("box", 0, 0.06, 0.42, 0.5, hw - 0.22, hd - 0.14, light)
            part("box", 0, -hd + 0.12, 0.42, 0.9, hw, 0.12, rgb)
            for u in (-hw + 0.1, hw - 0.1):
                part("box", u, 0, 0.42, 0.65, 0.1, hd, _shade(rgb, 0.85))
        elif cat == "table":
            part("box", 0, 0, 0.71, 0.75, hw, hd)
            for u in (-hw + 0.05, hw - 0.05):
                for v in (-hd + 0.05, hd - 0.05):
                    part("box", u, v, 0.0, 0.71, 0.03, 0.03, _shade(rgb, 0.8))
        elif cat == "chair":
            k = 0.21
            part("box", 0, 0, 0.42, 0.47, k, k)
            part("box", 0, -k + 0.02, 0.47, 0.95, k, 0.025)
            for u in (-k + 0.03, k - 0.03):
                for v in (-k + 0.03, k - 0.03):
                    part("box", u, v, 0.0, 0.42, 0.02, 0.02, _shade(rgb, 0.7))
        elif cat == "fridge":
            part("box", 0, 0, 0.0, 1.8, hw, hd)
            part("box", 0, hd, 0.05, 1.75, 0.008, 0.01, _shade(rgb, 0.5))
            for u in (-0.06, 0.06):
                part("box", u, hd + 0.02, 0.9, 1.4, 0.015, 0.02, (0.6, 0.6, 0.62))
            part("box", 0, hd + 0.005, 1.22, 1.24, hw, 0.006, _shade(rgb, 0.5))
        elif cat == "tv":
            part("box", 0, 0, 0.0, 0.45, hw, hd, wood)
            part("box", 0, -0.05, 0.45, 0.52, 0.12, 0.06, dark)
            part("box", 0, -0.05, 0.52, 1.35, hw * 0.85, 0.035, rgb)
            part("box", 0, -0.01, 0.56, 1.31, hw * 0.85 - 0.04, 0.01, (0.08, 0.12, 0.28))
        elif cat == "bookshelf":
            part("box", 0, -hd + 0.02, 0.0, 1.9, hw, 0.02, _shade(rgb, 0.8))
            for u in (-hw + 0.02, hw - 0.02):
                part("box", u, 0, 0.0, 1.9, 0.02, hd)
            book_colors = [PALETTE[c] for c in ("red", "blue", "green", "yellow", "white", "orange", "purple")]
            for j, z in enumerate((0.0, 0.47, 0.94, 1.41)):
                part("box", 0, 0, z, z + 0.04, hw, hd)
                n = 5
                bw = (2 * hw - 0.1) / n
                for b in range(n):
                    bh = 0.26 + 0.06 * ((b * 3 + j) % 3)
                    part("box", -hw + 0.05 + bw * (b + 0.5), 0, z + 0.04, z + 0.04 + bh, bw / 2 - 0.01, hd * 0.75,
                         book_colors[(b * 2 + j) % len(book_colors)])
            part("box", 0, 0, 1.86, 1.9, hw, hd)
        elif cat == "plant":
            part("cyl", 0, 0, 0.0, 0.32 * s, radius=0.14 * s)
            green = (0.16, 0.5, 0.18)
            part("sph", 0, 0, 0.3 * s, 0, radius=0.24 * s, color=green)
            part("sph", 0.06 * s, 0.04 * s, 0.55 * s, 0, radius=0.2 * s, color=(0.2, 0.58, 0.22))
            part("sph", -0.05 * s, -0.05 * s, 0.72 * s, 0, radius=0.16 * s, color=green)
        elif cat == "lamp":
            part("cyl", 0, 0, 0.0, 0.04, radius=0.16 * s, color=dark)
            part("cyl", 0, 0, 0.04, 1.3 * s, radius=0.02 * s, color=(0.6, 0.6, 0.6))
            part("cyl", 0, 0, 1.25 * s, 1.6 * s, radius=0.2 * s)
        elif cat == "cabinet":
            part("box", 0, 0, 0.0, 0.9, hw, hd)
            for u in (-hw / 2, hw / 2):
                part("box", u, hd, 0.08, 0.84, hw / 2 - 0.03, 0.008, light)
                part("box", u + (0.06 if u < 0 else -0.06), hd + 0.015, 0.55, 0.7, 0.012, 0.012, (0.6, 0.6, 0.62))
        elif cat == "box":
            k = 0.2 * s
            part("box", 0, 0, 0.0, 2 * k, k, k)
            part("box", 0, 0, 2 * k, 2 * k + 0.005, k, 0.03 * s, _shade(rgb, 0.6))
        elif cat == "ball":
            part("sph", 0, 0, 0.0, 0, radius=0.18 * s)
        elif cat == "mug":
            part("cyl", 0, 0, 0.0, 0.12, radius=0.05)
            part("box", 0.065, 0, 0.03, 0.09, 0.015, 0.01)
        elif cat == "laptop":
            part("box", 0, 0.03, 0.0, 0.02, 0.17, 0.12, (0.55, 0.55, 0.58))
            part("box", 0, -0.09, 0.02, 0.25, 0.17, 0.01)
            part("box", 0, -0.078, 0.04, 0.23, 0.15, 0.003, (0.2, 0.35, 0.6))
        elif cat == "vase":
            part("cyl", 0, 0, 0.0, 0.26, radius=0.07)
            part("sph", 0, 0, 0.24, 0, radius=0.07, color=PALETTE["pink"])
        else:  # pragma: no cover - every category is drawn above
            raise ValueError(cat)
        assert cat in CATEGORIES and (o.support == "floor" or o.support in SURFACE_TOP)

    # -- views --------------------------------------------------------------------------
    def view(self, row: int, col: int, heading: str, pitch: float, eye: float) -> np.ndarray:
        cam = self.camera
        x, y = (col + 0.5) * self.cell, -(row + 0.5) * self.cell
        az = _AZIMUTH[heading]
        el = float(pitch)
        # free camera: eye = lookat - distance * forward
        f = (math.cos(math.radians(el)) * math.cos(math.radians(az)),
             math.cos(math.radians(el)) * math.sin(math.radians(az)), math.sin(math.radians(el)))
        cam.lookat[:] = (x + f[0], y + f[1], eye + f[2])
        cam.azimuth = az
        cam.elevation = el
        return gl_call(self._render, cam)

    def _render(self, cam) -> np.ndarray:
        self.renderer.update_scene(self.data, camera=cam, scene_option=self.option)
        return self.renderer.render().copy()


def _rectangles(cells: set[tuple[int, int]]) -> list[tuple[int, int, int, int]]:
    """Cover a set of cells with disjoint rectangles (greedy: rows of runs, merged downwards)."""
    left = set(cells)
    out = []
    for r, c in sorted(cells):
        if (r, c) not in left:
            continue
        c1 = c
        while (r, c1 + 1) in left:
            c1 += 1
        r1 = r
        while all((r1 + 1, k) in left for k in range(c, c1 + 1)):
            r1 += 1
        for rr in range(r, r1 + 1):
            for k in range(c, c1 + 1):
                left.discard((rr, k))
        out.append((r, c, r1, c1))
    return out
