"""The MuJoCo scene and the scripted controllers that execute the primitives.

Everything here is in **metres** (MuJoCo's unit); the env converts to the agent's
millimetres. The table top is the plane z = 0, x points right and y away from the camera.

The gripper is a mocap body (kinematic: it follows its waypoints exactly). A grasp is an
equality *weld* between the gripper and the object, switched on when the gripper reaches
a point within the grasp tolerance of the object's centre; the weld is soft, so a held
cube still collides with what it is lowered onto, and on release gravity takes over (a
cube dropped in the air falls, a badly stacked one topples). ``push`` sweeps the
gripper's fingertip sphere (collisions enabled only during the sweep) along a straight
line; a sweep that starts at the drawer handle hooks it (a weld to the drawer) and drags
the drawer along its slide joint.

One model and one renderer are built per env (building a renderer costs ~0.5 s); each
episode moves the bodies (qpos, ``body_pos``, marker positions) instead of rebuilding.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import numpy as np

# MuJoCo picks its GL backend when it is first imported: too late to choose if it already was.
_LATE_IMPORT = "mujoco" in sys.modules and "MUJOCO_GL" not in os.environ
os.environ.setdefault("MUJOCO_GL", "egl")  # as envs.mujoco_gl does; before mujoco is imported
import mujoco  # noqa: E402

from envs.mujoco_gl import gl_call  # noqa: E402

CUBE_HALF = 0.02
TIMESTEP = 0.002
SUBSTEPS = 2  # physics steps per controller update
CARRY_Z = 0.15  # gripper height while moving between places
MOVE_SPEED = 0.5  # m/s, free-space moves
FINE_SPEED = 0.2  # m/s, last centimetres of a descent, sweeps
PUSHER_RADIUS = 0.008
COLORS = {"red_cube": (0.85, 0.15, 0.15), "green_cube": (0.15, 0.7, 0.2), "blue_cube": (0.15, 0.3, 0.9)}

# Drawer geometry (metres, in the tray's frame; the tray's origin is its centre at table level).
TRAY_HALF = (0.07, 0.075)  # outer half-width (x), half-depth (y)
TRAY_WALL = 0.008
TRAY_FLOOR_TOP = 0.010
TRAY_WALL_TOP = 0.062
INTERIOR_HALF = (TRAY_HALF[0] - TRAY_WALL, TRAY_HALF[1] - TRAY_WALL)
HANDLE_OFFSET = (0.0, -TRAY_HALF[1] - 0.03, 0.04)  # handle bar centre relative to the tray origin
DRAWER_Y = 0.145  # tray origin y when closed
DRAWER_TRAVEL = 0.16  # slide range (opening towards -y)
CABINET_TOP = 0.10

# Collision bits: 1 table, 2 tray + pusher, 4 cabinet; cubes collide with all three.
_CUBE_BITS = 7


def _box(name, size, pos, rgba, bits, extra=""):
    s = " ".join(f"{v:.4f}" for v in size)
    p = " ".join(f"{v:.4f}" for v in pos)
    r = " ".join(f"{v:.3f}" for v in rgba)
    return (f'<geom name="{name}" type="box" size="{s}" pos="{p}" rgba="{r}" contype="{bits}" '
            f'conaffinity="{bits}" {extra}/>')


def build_xml(objects: tuple[str, ...], goal_markers: tuple[str, ...], drawer: bool, size: tuple[int, int]) -> str:
    h, w = size
    bodies = []
    for name in objects:
        r, g, b = COLORS[name]
        bodies.append(
            f'<body name="{name}" pos="0 0 {CUBE_HALF}"><freejoint name="{name}_joint"/>'
            f'<geom name="{name}_geom" type="box" size="{CUBE_HALF} {CUBE_HALF} {CUBE_HALF}" '
            f'rgba="{r} {g} {b} 1" mass="0.06" friction="1 0.01 0.001" contype="{_CUBE_BITS}" '
            f'conaffinity="{_CUBE_BITS}"/></body>')
    markers = []
    for name in goal_markers:
        r, g, b = COLORS[name]
        markers.append(f'<geom name="goal_{name}" type="cylinder" size="0.026 0.0006" pos="0 0 0.0006" '
                       f'rgba="{r} {g} {b} 0.45" contype="0" conaffinity="0"/>')
    drawer_xml = ""
    if drawer:
        hx, hy = TRAY_HALF
        t = TRAY_WALL
        ih = TRAY_WALL_TOP / 2
        wood = (0.55, 0.4, 0.25, 1)
        dark = (0.4, 0.28, 0.18, 1)
        cab_d = 2 * hy + 0.02  # cabinet depth (y)
        cab_y0 = DRAWER_Y - hy  # cabinet front face y
        cab_cx = cab_y0 + cab_d / 2 - DRAWER_Y
        tray = [
            _box("tray_floor", (hx, hy, (TRAY_FLOOR_TOP - 0.002) / 2), (0, 0, (TRAY_FLOOR_TOP + 0.002) / 2), wood, 2),
            _box("tray_front", (hx, t / 2, ih), (0, -hy + t / 2, ih + 0.002), dark, 2),
            _box("tray_back", (hx, t / 2, ih), (0, hy - t / 2, ih + 0.002), wood, 2),
            _box("tray_left", (t / 2, hy, ih), (-hx + t / 2, 0, ih + 0.002), wood, 2),
            _box("tray_right", (t / 2, hy, ih), (hx - t / 2, 0, ih + 0.002), wood, 2),
            _box("handle_bar", (0.03, 0.006, 0.006), HANDLE_OFFSET, (0.8, 0.8, 0.2, 1), 2),
            _box("handle_post_l", (0.004, 0.015, 0.004), (-0.026, -hy - 0.015, HANDLE_OFFSET[2]), (0.8, 0.8, 0.2, 1), 2),
            _box("handle_post_r", (0.004, 0.015, 0.004), (0.026, -hy - 0.015, HANDLE_OFFSET[2]), (0.8, 0.8, 0.2, 1), 2),
        ]
        cab = [
            _box("cab_top", (hx + 0.02, cab_d / 2, 0.005), (0, cab_cx, CABINET_TOP + 0.005), dark, 4),
            _box("cab_left", (0.005, cab_d / 2, CABINET_TOP / 2), (-hx - 0.015, cab_cx, CABINET_TOP / 2), dark, 4),
            _box("cab_right", (0.005, cab_d / 2, CABINET_TOP / 2), (hx + 0.015, cab_cx, CABINET_TOP / 2), dark, 4),
            _box("cab_back", (hx + 0.02, 0.005, CABINET_TOP / 2), (0, cab_cx + cab_d / 2, CABINET_TOP / 2), dark, 4),
        ]
        drawer_xml = (
            f'<body name="cabinet" pos="0 {DRAWER_Y} 0">{"".join(cab)}</body>'
            f'<body name="drawer_tray" pos="0 {DRAWER_Y} 0">'
            f'<joint name="drawer_slide" type="slide" axis="0 -1 0" range="0 {DRAWER_TRAVEL}" limited="true" '
            f'damping="8" armature="0.05"/>'
            f'<inertial pos="0 0 0.02" mass="0.4" diaginertia="0.002 0.002 0.002"/>{"".join(tray)}</body>')
    weld_targets = [*objects, *(["drawer_tray"] if drawer else [])]
    welds = "".join(f'<weld name="grasp_{n}" body1="gripper" body2="{n}" active="false" solref="0.005 1"/>'
                    for n in weld_targets)
    return f"""<mujoco model="primitive_skill">
  <option timestep="{TIMESTEP}" integrator="implicitfast" cone="elliptic" impratio="5"/>
  <visual><global offwidth="{max(w, 64)}" offheight="{max(h, 64)}"/><quality shadowsize="2048"/>
    <headlight ambient="0.35 0.35 0.35" diffuse="0.45 0.45 0.45"/></visual>
  <asset>
    <texture name="tabletex" type="2d" builtin="checker" rgb1="0.78 0.74 0.66" rgb2="0.74 0.70 0.62"
      width="128" height="128"/>
    <material name="table" texture="tabletex" texrepeat="8 6"/>
  </asset>
  <worldbody>
    <light pos="0 0 1.5" dir="0 0 -1" diffuse="0.5 0.5 0.5" castshadow="true"/>
    <geom name="table" type="plane" size="0.4 0.3 0.01" material="table" contype="1" conaffinity="1"/>
    <geom name="floor_vis" type="plane" pos="0 0 -0.002" size="1.5 1.5 0.01" rgba="0.3 0.3 0.33 1"
      contype="0" conaffinity="0"/>
    <geom name="axis_x" type="box" size="0.03 0.002 0.0005" pos="-0.37 -0.27 0.0005" rgba="0.9 0.2 0.2 1"
      contype="0" conaffinity="0"/>
    <geom name="axis_y" type="box" size="0.002 0.03 0.0005" pos="-0.4 -0.24 0.0005" rgba="0.2 0.8 0.2 1"
      contype="0" conaffinity="0"/>
    <camera name="front" pos="0 -0.6 0.52" xyaxes="1 0 0 0 0.66 0.75" fovy="45"/>
    {"".join(markers)}
    {"".join(bodies)}
    {drawer_xml}
    <body name="gripper" mocap="true" pos="0 -0.2 0.3">
      <geom name="pusher" type="sphere" size="{PUSHER_RADIUS}" rgba="0.25 0.25 0.28 1" contype="0" conaffinity="0"
        priority="1" solref="0.004 1"/>
      <geom type="box" size="0.032 0.01 0.005" pos="0 0 0.028" rgba="0.45 0.45 0.5 1" contype="0" conaffinity="0"/>
      <geom type="box" size="0.003 0.009 0.018" pos="0.029 0 0.008" rgba="0.35 0.35 0.4 1" contype="0"
        conaffinity="0"/>
      <geom type="box" size="0.003 0.009 0.018" pos="-0.029 0 0.008" rgba="0.35 0.35 0.4 1" contype="0"
        conaffinity="0"/>
      <geom type="cylinder" size="0.008 0.15" pos="0 0 0.183" rgba="0.55 0.55 0.6 1" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <equality>{welds}</equality>
</mujoco>"""


@dataclass
class PrimitiveResult:
    effective: bool
    note: str
    steps: int
    aborted: bool = False


class Sim:
    """One MuJoCo scene: bodies, the mocap gripper, scripted primitives, rendering."""

    def __init__(self, objects: tuple[str, ...], goal_markers: tuple[str, ...], drawer: bool,
                 image_size: tuple[int, int], max_steps: int, shadows: bool = False):
        self.objects = objects
        self.has_drawer = drawer
        self.model = mujoco.MjModel.from_xml_string(build_xml(objects, goal_markers, drawer, image_size))
        self.data = mujoco.MjData(self.model)
        m = self.model
        self.body = {n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, n) for n in objects}
        self.qadr = {n: m.jnt_qposadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, f"{n}_joint")] for n in objects}
        self.vadr = {n: m.jnt_dofadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, f"{n}_joint")] for n in objects}
        self.weld = {n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_EQUALITY, f"grasp_{n}") for n in objects}
        self.marker = {n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, f"goal_{n}") for n in goal_markers}
        self.gripper = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "gripper")
        self.pusher = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "pusher")
        if drawer:
            self.tray = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "drawer_tray")
            self.cabinet = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "cabinet")
            self.weld["drawer_tray"] = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_EQUALITY, "grasp_drawer_tray")
            j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, "drawer_slide")
            self.slide_q, self.slide_v = m.jnt_qposadr[j], m.jnt_dofadr[j]
        self.camera = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_CAMERA, "front")
        self.max_steps = max_steps
        self.geom = {n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, f"{n}_geom") for n in objects}
        #: Geoms whose deep contacts stop the current motion (a held object, the pusher), and whether one did.
        self._guard: np.ndarray | None = None
        self.blocked = False
        #: The pusher waits to be armed (collisions on) until it overlaps nothing: switching collisions on
        #: inside a cube would eject it violently.
        self._arm = False
        self._pushable = [g for g in range(m.ngeom) if g != self.pusher and m.geom_contype[g] & 2]
        self.holding: str | None = None
        self.hooked = False
        self._budget = 0
        self._renderer = None
        self._image_size = image_size
        self.shadows = shadows

    # -- episode setup -----------------------------------------------------------------
    def reset(self, cubes: dict[str, tuple[float, float, float]], markers: dict[str, tuple[float, float]],
              drawer_x: float | None) -> None:
        m, d = self.model, self.data
        mujoco.mj_resetData(m, d)
        for n, (x, y, yaw) in cubes.items():
            a = self.qadr[n]
            d.qpos[a:a + 3] = (x, y, CUBE_HALF)
            d.qpos[a + 3:a + 7] = (np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2))
        for n, (x, y) in markers.items():
            m.geom_pos[self.marker[n]][:2] = (x, y)
        if self.has_drawer and drawer_x is not None:
            m.body_pos[self.cabinet][0] = drawer_x
            m.body_pos[self.tray][0] = drawer_x
        for eq in self.weld.values():
            d.eq_active[eq] = 0
        self.set_pusher(False)
        d.mocap_pos[0] = (0.0, -0.2, 0.3)
        self.holding = None
        self.hooked = False
        self._arm = False
        self._guarded(None)
        mujoco.mj_forward(m, d)

    # -- queries (metres) ------------------------------------------------------------------
    def pos(self, name: str) -> np.ndarray:
        return self.data.xpos[self.body[name]].copy()

    def quat(self, name: str) -> np.ndarray:
        return self.data.xquat[self.body[name]].copy()

    def gripper_pos(self) -> np.ndarray:
        return self.data.mocap_pos[0].copy()

    def drawer_opening(self) -> float:
        return float(self.data.qpos[self.slide_q]) if self.has_drawer else 0.0

    def tray_pos(self) -> np.ndarray:
        return self.data.xpos[self.tray].copy()

    def handle_pos(self) -> np.ndarray:
        return self.tray_pos() + np.asarray(HANDLE_OFFSET)

    def max_speed(self) -> float:
        d = self.data
        v = [np.linalg.norm(d.qvel[self.vadr[n]:self.vadr[n] + 3]) for n in self.objects]
        if self.has_drawer:
            v.append(abs(float(d.qvel[self.slide_v])))
        return float(max(v)) if v else 0.0

    def healthy(self) -> bool:
        d = self.data
        if not (np.isfinite(d.qpos).all() and np.isfinite(d.qvel).all()):
            return False
        return all(abs(d.qpos[self.qadr[n] + k]) < 2.0 for n in self.objects for k in range(3))

    # -- state snapshots (undo a turn whose physics blew up) ------------------------------------
    def snapshot(self):
        d = self.data
        return (d.qpos.copy(), d.qvel.copy(), d.mocap_pos.copy(), d.eq_active.copy(), self.holding, self.hooked,
                self.model.geom_contype[self.pusher], self.model.eq_data.copy())

    def restore(self, snap) -> None:
        d, m = self.data, self.model
        mujoco.mj_resetData(m, d)
        qpos, qvel, mocap, eq, self.holding, self.hooked, contype, eq_data = snap
        d.qpos[:], d.qvel[:], d.mocap_pos[:], d.eq_active[:] = qpos, qvel, mocap, eq
        m.eq_data[:] = eq_data
        self.set_pusher(bool(contype))
        mujoco.mj_forward(m, d)

    # -- low-level control -------------------------------------------------------------------
    def set_pusher(self, on: bool) -> None:
        bits = 2 if on else 0
        m = self.model
        m.geom_contype[self.pusher] = m.geom_conaffinity[self.pusher] = bits
        # The broadphase filters whole bodies by these (compiled as the OR of the body's geoms).
        m.body_contype[self.gripper] = m.body_conaffinity[self.gripper] = bits

    def _step(self, n: int = SUBSTEPS) -> bool:
        if self._budget <= 0:
            return False
        n = min(n, self._budget)
        mujoco.mj_step(self.model, self.data, n)
        self._budget -= n
        return True

    def _move(self, target, speed: float = MOVE_SPEED) -> bool:
        """Move the gripper in a straight line at ``speed``; False when the step budget ran out."""
        d = self.data
        if self.blocked:
            return True
        start = d.mocap_pos[0].copy()
        target = np.asarray(target, dtype=float)
        dist = float(np.linalg.norm(target - start))
        per = speed * TIMESTEP * SUBSTEPS
        n = max(1, int(np.ceil(dist / per)))
        free = start  # the last waypoint with no deep contact
        pressing = 0
        for i in range(1, n + 1):
            t = i / n
            # Smooth start and stop (peak speed 1.5x the mean): no jolts for held or dragged objects.
            d.mocap_pos[0] = start + (target - start) * (t * t * (3.0 - 2.0 * t))
            if not self._step():
                return False
            if self._arm and self._pusher_clear():
                self.set_pusher(True)
                self._arm = False
            if self._guard is None:
                continue
            if self._pressing():
                pressing += 1
                if pressing >= 8:
                    # Like a robot's collision detection: a sustained deep contact means the motion is
                    # driving something into an obstacle; stop and back off instead of crushing it.
                    self.blocked = True
                    d.mocap_pos[0] = free
                    return self._dwell(0.05)
            else:
                pressing = 0
                free = d.mocap_pos[0].copy()
        return True

    def _pusher_clear(self, margin: float = 0.001) -> bool:
        m, d = self.model, self.data
        return all(mujoco.mj_geomDistance(m, d, self.pusher, g, 0.01, None) > margin for g in self._pushable)

    def _pressing(self, depth: float = 0.004) -> bool:
        """A guarded geom penetrates something deeper than ``depth`` (it is being driven into it)."""
        d = self.data
        if d.ncon == 0:
            return False
        geoms = d.contact.geom[: d.ncon]
        deep = d.contact.dist[: d.ncon] < -depth
        if not deep.any():
            return False
        return bool(np.isin(geoms[deep], self._guard).any())

    def _guarded(self, geoms: list[int] | None) -> None:
        self._guard = np.asarray(geoms, dtype=np.int64) if geoms else None
        self.blocked = False

    def _dwell(self, seconds: float) -> bool:
        for _ in range(max(1, int(seconds / (TIMESTEP * SUBSTEPS)))):
            if not self._step():
                return False
            if self._arm and self._pusher_clear():
                self.set_pusher(True)
                self._arm = False
        return True

    def _settle(self, min_s: float = 0.2, max_s: float = 1.5) -> None:
        self._dwell(min_s)
        waited = min_s
        while waited < max_s and self.max_speed() > 0.002:
            if not self._dwell(0.05):
                return
            waited += 0.05

    def _attach(self, name: str) -> None:
        d, m = self.data, self.model
        bid = self.tray if name == "drawer_tray" else self.body[name]
        gp = d.mocap_pos[0].copy()
        gq = d.mocap_quat[0].copy()
        inv = np.zeros(4)
        mujoco.mju_negQuat(inv, gq)
        rel = np.zeros(3)
        mujoco.mju_rotVecQuat(rel, d.xpos[bid] - gp, inv)
        rq = np.zeros(4)
        mujoco.mju_mulQuat(rq, inv, d.xquat[bid])
        eq = self.weld[name]
        m.eq_data[eq, 0:3] = 0.0
        m.eq_data[eq, 3:6] = rel
        m.eq_data[eq, 6:10] = rq
        m.eq_data[eq, 10] = 1.0
        d.eq_active[eq] = 1

    def _detach(self, name: str) -> None:
        self.data.eq_active[self.weld[name]] = 0

    def _travel(self, target, hover: float) -> bool:
        """Rise to ``hover``, move above ``target``, descend to it (slowly for the last 4 cm)."""
        g = self.gripper_pos()
        tgt = np.asarray(target, dtype=float)
        ok = self._move((g[0], g[1], max(g[2], hover)))
        ok = ok and self._move((tgt[0], tgt[1], max(g[2], hover)))
        near = (tgt[0], tgt[1], min(max(g[2], hover), tgt[2] + 0.04))
        ok = ok and self._move(near)
        return ok and self._move(tgt, FINE_SPEED)

    # -- primitives (metres) ----------------------------------------------------------------------
    def pick(self, p, grasp_tol: float) -> PrimitiveResult:
        self._budget = self.max_steps
        if self.holding:
            return PrimitiveResult(False, f"already holding the {self.holding.replace('_', ' ')}; place it first", 0)
        p = np.asarray(p, dtype=float)
        hover = max(CARRY_Z, p[2] + 0.06)
        if not self._travel(p, hover):
            return self._aborted()
        best, best_d = None, grasp_tol
        for n in self.objects:
            dist = float(np.linalg.norm(self.pos(n) - p))
            if dist <= best_d:
                best, best_d = n, dist
        if best is None:
            self._move((p[0], p[1], hover))
            return PrimitiveResult(False, "there was nothing to grasp there", self.max_steps - self._budget)
        self._attach(best)
        self.holding = best
        self._guarded([self.geom[best]])
        ok = self._dwell(0.05) and self._move((p[0], p[1], hover), FINE_SPEED) and self._dwell(0.1)
        self._guarded(None)
        if not ok:
            return self._aborted()
        return PrimitiveResult(True, f"picked up the {best.replace('_', ' ')}", self.max_steps - self._budget)

    def place(self, p) -> PrimitiveResult:
        self._budget = self.max_steps
        if not self.holding:
            return PrimitiveResult(False, "the gripper holds nothing to place", 0)
        name = self.holding
        p = np.asarray(p, dtype=float)
        offset = self.gripper_pos() - self.pos(name)
        target = p + offset
        hover = max(CARRY_Z, target[2] + 0.06)
        self._guarded([self.geom[name]])
        ok = self._travel(target, hover) and self._dwell(0.15)
        blocked = self.blocked
        self._guarded(None)
        self._detach(name)
        self.holding = None
        if ok:
            g = self.gripper_pos()
            self._move((g[0], g[1], hover), FINE_SPEED)
            self._settle()
        if not ok:
            return self._aborted()
        note = f"released the {name.replace('_', ' ')}" + (" where it was blocked on the way" if blocked else "")
        return PrimitiveResult(True, note, self.max_steps - self._budget)

    def push(self, p1, p2, hook_tol: float) -> PrimitiveResult:
        self._budget = self.max_steps
        if self.holding:
            return PrimitiveResult(False, f"cannot push while holding the {self.holding.replace('_', ' ')}", 0)
        p1, p2 = np.asarray(p1, dtype=float), np.asarray(p2, dtype=float)
        hover = max(CARRY_Z, p1[2] + 0.06, p2[2] + 0.06)
        if not self._travel(p1, hover):
            return self._aborted()
        hook = self.has_drawer and float(np.linalg.norm(self.handle_pos() - p1)) <= hook_tol
        before = self.positions_snapshot()
        if hook:
            self._attach("drawer_tray")
            self.hooked = True
        else:
            self._guarded([self.pusher])
            self._arm = True
        ok = self._dwell(0.02) and self._move(p2, FINE_SPEED) and self._dwell(0.1)
        blocked = self.blocked
        self._guarded(None)
        self._arm = False
        if hook:
            self._detach("drawer_tray")
            self.hooked = False
        self.set_pusher(False)
        if ok:
            self._move((p2[0], p2[1], hover), MOVE_SPEED)
            self._settle()
        if not ok:
            return self._aborted()
        moved = float(np.max(np.abs(self.positions_snapshot() - before))) > 0.003
        what = "hooked the drawer handle and dragged it" if hook else "swept the gripper"
        note = what + ("; the sweep was blocked and stopped early" if blocked else "") + \
            ("" if moved else "; nothing moved")
        return PrimitiveResult(moved, note, self.max_steps - self._budget)

    def positions_snapshot(self) -> np.ndarray:
        rows = [self.pos(n) for n in self.objects]
        if self.has_drawer:
            rows.append(np.array([0.0, self.drawer_opening(), 0.0]))
        return np.array(rows)

    def _aborted(self) -> PrimitiveResult:
        for n in list(self.weld):
            self._detach(n)
        self.holding = None
        self.hooked = False
        self.set_pusher(False)
        self._guarded(None)
        self._arm = False
        return PrimitiveResult(True, "the motion ran out of its time budget and was stopped; the gripper let go",
                               self.max_steps, aborted=True)

    # -- rendering ------------------------------------------------------------------------------
    def render(self) -> np.ndarray:
        if self._renderer is None:
            h, w = self._image_size
            try:
                self._renderer = gl_call(mujoco.Renderer, self.model, h, w)
            except Exception as e:  # pragma: no cover - depends on the machine's GL stack
                raise RuntimeError(
                    f"primitive_skill could not create a MuJoCo renderer (MUJOCO_GL={os.environ.get('MUJOCO_GL')!r}): "
                    f"{type(e).__name__}: {e}. Headless rendering needs EGL: install the Debian packages "
                    "libegl1 libegl-mesa0 libgl1-mesa-dri (mesa's software rasteriser works) and keep "
                    "MUJOCO_GL=egl, or set MUJOCO_GL=osmesa with libosmesa6."
                    + (" Note: mujoco was imported before MUJOCO_GL was set, so it chose its default (GLFW, which "
                       "needs a display); set MUJOCO_GL=egl in the environment or before the first "
                       "`import mujoco`." if _LATE_IMPORT else "")) from e
        return gl_call(self._render)

    def _render(self) -> np.ndarray:  # on the GL thread (envs.mujoco_gl): contexts live there
        self._renderer.update_scene(self.data, camera=self.camera)
        self._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = int(self.shadows)
        return self._renderer.render().copy()

    def close(self) -> None:
        if self._renderer is not None:
            gl_call(self._renderer.close)
            self._renderer = None
