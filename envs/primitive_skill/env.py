"""PrimitiveSkill: tabletop manipulation with pick/place/push primitives in MuJoCo (CPU).

Like VAGEN's ManiSkill3 PrimitiveSkill, but self-contained: a table, coloured 4 cm cubes
and (task ``drawer``) a drawer on a slide joint. The agent writes primitives with
coordinates in millimetres (x right, y away from the camera, z up, table top z = 0):
``pick(x,y,z)``, ``place(x,y,z)``, ``push(x1,y1,z1,x2,y2,z2)``, several per turn
separated by ``|``. Scripted controllers execute each primitive by moving a mocap gripper
through waypoints while the physics runs (see :mod:`envs.primitive_skill.sim`): grasps are
weld constraints switched on when the gripper reaches an object's centre (within
``grasp_tol_mm``), releases hand the object back to gravity, pushes sweep a fingertip
sphere; a push starting at the drawer handle hooks it and drags the drawer.

Tasks (``task=``): ``align2`` (red cube 60 mm to the right of the green cube), ``place2``
(red and green cubes onto their goal discs), ``stack3`` (green on red, blue on green) and
``drawer`` (open the drawer by pulling its handle, put the red cube inside, push it
closed). Each task has ordered stages (listed in ``state["stages"]``); a stage reached for
the first time earns ``stage_reward``, success earns ``success_reward`` and ends the
episode; ``metrics["episode/score"]`` = stages reached / stages (1.0 on success).
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.base import IMAGE_PLACEHOLDER, EntitySpec, PromptPieces, StateSchema, StepInfo, VagenEnv
from envs.grid import make_config
from envs.primitive_skill import tasks as T
from envs.primitive_skill.sim import Sim

OBSERVATION_MODES = ("image", "text", "image+text")
_SEP_FORBIDDEN = set("0123456789.,()+-[]") | set("abcdefghijklmnopqrstuvwxyz")


@dataclass
class PrimitiveSkillConfig:
    """Options of :class:`PrimitiveSkillEnv` (tolerances in millimetres)."""

    task: str = "place2"
    observation: str = "image+text"
    image_size: tuple[int, int] = (240, 320)  # (height, width)
    #: Shadow casting (a depth cue; software rendering is ~3x slower with it: ~80 vs ~27 ms a frame).
    shadows: bool = False
    max_actions_per_turn: int = 2
    action_separator: str = "|"
    max_turns: int = 8
    invalid_action_penalty: float = -0.1
    #: Added when a turn's primitives were all valid but none had an effect.
    ineffective_action_penalty: float = 0.0
    stage_reward: float = 0.25
    success_reward: float = 1.0
    grasp_tol_mm: float = 20.0
    hook_tol_mm: float = 25.0
    place_tol_mm: float = 20.0
    stack_tol_mm: float = 15.0
    #: Physics steps (2 ms each) one primitive may use before it is stopped.
    max_physics_steps: int = 6000

    def validate(self) -> None:
        if self.task not in T.TASKS:
            raise ValueError(f"task must be one of {', '.join(T.TASKS)}, got {self.task!r}")
        if self.observation not in OBSERVATION_MODES:
            raise ValueError(f"observation must be one of {', '.join(OBSERVATION_MODES)}, got {self.observation!r}")
        size = tuple(int(x) for x in self.image_size)
        if len(size) != 2 or min(size) < 16 or max(size) > 2048:
            raise ValueError(f"image_size must be [height, width] within 16..2048, got {self.image_size!r}")
        self.image_size = size  # type: ignore[assignment]
        for key in ("invalid_action_penalty", "ineffective_action_penalty"):
            if getattr(self, key) > 0:
                raise ValueError(f"{key} must be <= 0 (it is a penalty), got {getattr(self, key)}")
        for key in ("max_actions_per_turn", "max_turns"):
            if getattr(self, key) < 1:
                raise ValueError(f"{key} must be >= 1, got {getattr(self, key)}")
        for key in ("grasp_tol_mm", "hook_tol_mm", "place_tol_mm", "stack_tol_mm"):
            if not getattr(self, key) > 0:
                raise ValueError(f"{key} must be > 0, got {getattr(self, key)}")
        if self.max_physics_steps < 500:
            raise ValueError(f"max_physics_steps must be >= 500, got {self.max_physics_steps}")
        sep = self.action_separator
        if not isinstance(sep, str) or not sep.strip() or set(sep.lower()) & _SEP_FORBIDDEN:
            raise ValueError("action_separator must be non-blank punctuation without digits, letters, "
                             f"'.', ',', '+', '-', brackets or parentheses, got {sep!r}")


def _mm(v) -> list[int]:
    return [int(round(float(x) * 1000.0)) for x in v]


class PrimitiveSkillEnv(VagenEnv):
    """See the module docstring; options in :class:`PrimitiveSkillConfig`."""

    name = "primitive_skill"
    description = "PrimitiveSkill: tabletop manipulation with pick/place/push primitives (MuJoCo, scripted controllers)"
    action_grammar = ("primitive (SEP primitive){0,K-1} where primitive := pick(x,y,z) | place(x,y,z) | "
                      "push(x1,y1,z1,x2,y2,z2), numbers in millimetres (case-insensitive, spaces allowed)")
    state_schema = StateSchema(
        entities=(
            EntitySpec("red_cube", "point", "R", ("red cube", "red"), "the red cube's centre [x, y, z] in mm", dims=3),
            EntitySpec("green_cube", "point", "G", ("green cube", "green"), "the green cube's centre [x, y, z] in mm",
                       dims=3),
            EntitySpec("blue_cube", "point", "B", ("blue cube", "blue"), "the blue cube's centre [x, y, z] in mm",
                       dims=3),
            EntitySpec("drawer", "point", "D", ("drawer", "drawer handle", "handle"),
                       "the drawer handle's centre [x, y, z] in mm", dims=3),
        ),
        reference="red_cube",
        coordinates="[x, y, z] integer millimetres; x right, y away from the camera, z up, table top z = 0",
        # Cubes settle 1-2 mm from where they were put and shift up to ~4 mm while the drawer closes.
        tolerance=5.0,
    )
    #: ``vagen eval primitive_skill`` plays every task; ``reset(options={"split": task})`` picks one.
    eval_splits = ("align2", "place2", "stack3", "drawer")
    config: PrimitiveSkillConfig

    def __init__(self, render_mode: str | None = "rgb_array", **kwargs: Any):
        self.config = make_config(PrimitiveSkillConfig, kwargs, self.name)
        self.render_mode = render_mode
        c = self.config
        self._set_spaces((*c.image_size, 3) if c.observation != "text" else None)
        # One scene (model + renderer) per task, built on first use: a reset may switch tasks.
        self._sims: dict[str, Sim] = {}
        self._use_task(c.task)
        self._ready = False
        self._feedback = ""
        self.turns = 0
        self.actions_taken = 0
        self.reached: dict[str, bool] = {}
        self.goals: dict[str, Any] = {}

    def _use_task(self, task: str) -> None:
        if task not in T.TASKS:
            raise ValueError(f"task must be one of {', '.join(T.TASKS)}, got {task!r}")
        if task not in self._sims:
            c = self.config
            self._sims[task] = Sim(T.TASKS[task]["objects"], T.TASKS[task]["objects"] if task == "place2" else (),
                                   task == "drawer", c.image_size, c.max_physics_steps, bool(c.shadows))
        self.active_task = task
        self.task = T.TASKS[task]
        self.sim = self._sims[task]

    # -- state ---------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        c, sim = self.config, self.sim
        ents: dict[str, list[int]] = {o: _mm(sim.pos(o)) for o in self.task["objects"]}
        state: dict[str, Any] = {
            "task": self.active_task,
            "entities": ents,
            "goals": copy.deepcopy(self.goals),
            "holding": sim.holding,
            "gripper": _mm(sim.gripper_pos()),
            "cube_size_mm": T.CUBE,
            "workspace_mm": {k: list(v) for k, v in T.WORKSPACE.items()},
            "tolerances": {"grasp_mm": c.grasp_tol_mm, "hook_mm": c.hook_tol_mm, "place_mm": c.place_tol_mm,
                           "stack_mm": c.stack_tol_mm},
            "stage_names": list(self.task["stages"]),
        }
        if sim.has_drawer:
            handle = _mm(sim.handle_pos())
            tray = _mm(sim.tray_pos())
            opening = int(round(sim.drawer_opening() * 1000))
            ents["drawer"] = handle
            state["drawer"] = {"handle": handle, "opening_mm": opening, "max_opening_mm": T.DRAWER_TRAVEL_MM,
                               "interior_center": [tray[0], tray[1], T.TRAY_FLOOR_MM],
                               "interior_half_size_mm": list(T.INTERIOR_HALF_MM)}
            state["drawer_open"] = opening >= T.DRAWER_OPEN_MM
        cond = T.conditions(state)
        for k in self.task["stages"]:
            self.reached[k] = self.reached.get(k, False) or cond[k]
        state["stages"] = {k: self.reached[k] for k in self.task["stages"]}
        state["success"] = cond["success"]
        return state

    def _score(self, state: dict[str, Any]) -> float:
        n = len(self.task["stages"])
        if state["success"]:
            return 1.0
        return min(sum(state["stages"].values()), n - 1) / n

    # -- gymnasium API ---------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is None:
            seed = int(self.np_random.integers(0, 2**31 - 1))
        self.episode_seed = int(seed)
        options = dict(options or {})
        task = options.pop("split", options.pop("task", self.config.task))
        if options:
            raise ValueError(f"primitive_skill reset options are 'split' (= 'task'); got {', '.join(map(repr, options))}")
        self._use_task(task)
        layout = T.sample_layout(task, self.episode_seed)
        cubes = {o: (x / 1000.0, y / 1000.0, yaw) for o, (x, y, yaw) in layout["cubes"].items()}
        markers = {o: (x / 1000.0, y / 1000.0) for o, (x, y) in layout["goals"].items()}
        drawer_x = layout["drawer_x"] / 1000.0 if layout["drawer_x"] is not None else None
        self.sim.reset(cubes, markers, drawer_x)
        self.goals = self._goals(layout)
        self.turns = 0
        self.actions_taken = 0
        self.reached = {}
        self._feedback = ""
        self._ready = True
        state = self._state()
        info = StepInfo(state=state, success=state["success"],
                        metrics={"turns": 0, "actions": 0, "episode/score": self._score(state)})
        return self._observation(state), info.as_dict()

    def _goals(self, layout: dict[str, Any]) -> dict[str, Any]:
        task = self.active_task
        if task == "place2":
            return {o: [x, y, T.HALF] for o, (x, y) in layout["goals"].items()}
        if task == "align2":
            return {"red_cube": {"relative_to": "green_cube", "offset_mm": list(T.ALIGN_OFFSET)}}
        if task == "stack3":
            return {"green_cube": {"on": "red_cube"}, "blue_cube": {"on": "green_cube"}}
        return {"red_cube": {"in": "drawer"}, "drawer": "closed"}

    def _split(self, action: Any) -> list[str]:
        if not isinstance(action, str):
            return [f"<{type(action).__name__}>"]
        text = action[:8192]
        for s in (self.config.action_separator.strip(), "\n", ";"):
            text = text.replace(s, "\x00")
        return [t.strip() for t in text.split("\x00") if t.strip()]

    def step(self, action: Any):
        if not self._ready:
            raise RuntimeError("call reset() before step() (the episode has ended)")
        c = self.config
        tokens = self._split(action)
        executed: list[str] = []
        notes: list[str] = []
        valid, effective, reward, steps = True, False, 0.0, 0
        if not tokens:
            valid = False
            notes.append(f"No action given. {self._hint()}")
        snap = self.sim.snapshot()
        state = None
        before_reached = dict(self.reached)
        for i, token in enumerate(tokens):
            if i >= c.max_actions_per_turn:
                valid = False
                notes.append(f"At most {c.max_actions_per_turn} primitives per turn; ignored the rest.")
                break
            parsed = T.parse_primitive(token)
            if isinstance(parsed, str):
                valid = False
                notes.append(f"Invalid action: {parsed}; stopped there. {self._hint()}")
                break
            kind, v = parsed
            m = [x / 1000.0 for x in v]
            if kind == "pick":
                res = self.sim.pick(m, c.grasp_tol_mm / 1000.0)
            elif kind == "place":
                res = self.sim.place(m)
            else:
                res = self.sim.push(m[:3], m[3:], c.hook_tol_mm / 1000.0)
            steps += res.steps
            self.actions_taken += 1
            if not self.sim.healthy():
                self.sim.restore(snap)
                state = None
                notes.append("The physics became unstable; the turn was undone.")
                executed.append(T.fmt(kind, *v))
                break
            executed.append(T.fmt(kind, *v))
            effective = effective or res.effective
            notes.append(f"{T.fmt(kind, *v)}: {res.note}.")
            state = self._state()
            if state["success"]:
                if i + 1 < len(tokens):
                    notes.append("The task is solved; the remaining primitives were not executed.")
                break
        if state is None or not self.sim.healthy():
            state = self._state()
        new_stages = [k for k in self.task["stages"] if self.reached.get(k) and not before_reached.get(k)]
        reward += c.stage_reward * len(new_stages)
        success = bool(state["success"])
        if success:
            reward += c.success_reward
        penalty = 0.0 if valid else c.invalid_action_penalty
        if valid and executed and not effective:
            penalty += c.ineffective_action_penalty
        reward += penalty
        self.turns += 1
        terminated = success
        truncated = not terminated and self.turns >= c.max_turns
        if new_stages:
            notes.append("New stage reached: " + ", ".join(new_stages) + ".")
        self._feedback = " ".join([f"Executed: {', '.join(executed) if executed else 'none'}."] + notes)
        info = StepInfo(
            state=state, action_valid=valid, action_effective=effective, success=success,
            executed_actions=executed, feedback=self._feedback, penalty=penalty,
            metrics={"turns": self.turns, "actions": self.actions_taken, "executed": len(executed),
                     "invalid": float(not valid), "physics_steps": steps,
                     "stages_reached": float(sum(state["stages"].values())), "episode/score": self._score(state)},
        )
        if terminated or truncated:
            self._ready = False
        return self._observation(state), float(reward), bool(terminated), bool(truncated), info.as_dict()

    def _hint(self) -> str:
        sep = self.config.action_separator
        return f"Use pick(x,y,z), place(x,y,z) or push(x1,y1,z1,x2,y2,z2) in mm, separated by '{sep}'."

    # -- observations ----------------------------------------------------------------
    def _describe(self, state: dict[str, Any]) -> str:
        lines = []
        for o in self.task["objects"]:
            p = state["entities"][o]
            lines.append(f"- {T.name_of(o)}: [{p[0]}, {p[1]}, {p[2]}]")
        if "drawer" in state:
            d = state["drawer"]
            h, ic = d["handle"], d["interior_center"]
            lines.append(f"- drawer handle: [{h[0]}, {h[1]}, {h[2]}]; drawer opening {d['opening_mm']} mm of "
                         f"{d['max_opening_mm']} ({'open' if state['drawer_open'] else 'not open'}); "
                         f"drawer floor centre [{ic[0]}, {ic[1]}, {ic[2]}]")
        if self.active_task == "place2":
            for o, g in state["goals"].items():
                lines.append(f"- {T.name_of(o)} goal: [{g[0]}, {g[1]}, {g[2]}]")
        held = state["holding"]
        lines.append(f"- gripper holds: {T.name_of(held) if held else 'nothing'}")
        done = [k for k, v in state["stages"].items() if v]
        lines.append(f"- stages reached: {', '.join(done) if done else 'none'} (of {', '.join(state['stage_names'])})")
        return "Object positions (centres, mm):\n" + "\n".join(lines)

    def _observation(self, state: dict[str, Any]) -> dict[str, Any]:
        mode = self.config.observation
        parts = [self._feedback] if self._feedback else []
        parts.append(f"Task: {self.task['text']}")
        images: tuple[np.ndarray, ...] = ()
        if mode in ("image", "image+text"):
            parts.append(f"Current view: {IMAGE_PLACEHOLDER}")
            images = (self.sim.render(),)
        if mode in ("text", "image+text"):
            parts.append(self._describe(state))
        elif state["holding"]:
            parts.append(f"The gripper holds the {T.name_of(state['holding'])}.")
        return {"text": "\n".join(parts), "images": images}

    def render(self):
        return self.sim.render()

    def close(self):
        for sim in self._sims.values():
            sim.close()

    def prompt_pieces(self) -> PromptPieces:
        c = self.config
        k, sep = c.max_actions_per_turn, c.action_separator
        desc = (
            "You control a robot gripper above a table with primitive skills. Coordinates are millimetres in the "
            "world frame: x points right, y points away from the camera, z points up; the table top is z = 0 and "
            "its centre is x = 0, y = 0. Cubes are 40 mm wide, so a cube resting on the table has its centre at "
            f"z = 20 and a cube stacked on it at z = 60. Each observation states the task. "
            "pick(x, y, z) moves the gripper to that point and grasps the object whose centre is within "
            f"{c.grasp_tol_mm:g} mm of it, then lifts it to {T.CARRY} mm; place(x, y, z) moves the held object's "
            "centre to (x, y, z) and releases it (released in the air it falls; badly stacked it topples); "
            "push(x1, y1, z1, x2, y2, z2) sweeps the empty gripper's fingertip in a straight line from the first "
            "point to the second, pushing what is in the way."
        )
        return PromptPieces(
            description=desc,
            action_help=(f"Actions: pick(x,y,z), place(x,y,z), push(x1,y1,z1,x2,y2,z2), numbers in mm. Up to {k} "
                         f"per turn, separated by '{sep}', executed in order; execution stops at the first invalid "
                         f"one. Workspace: x in [-400, 400], y in [-300, 300], z in [0, 400]."),
            example_action=f" {sep} ".join(["pick(-50, 20, 20)", "place(100, -60, 21)"][: max(1, min(k, 2))]),
            max_actions_per_turn=k,
            action_separator=sep,
        )

    # -- pure functions of a state ------------------------------------------------------
    @classmethod
    def solve_state(cls, state: dict[str, Any]) -> list[str] | None:
        return T.plan(state)

    @classmethod
    def predict_state(cls, state: dict[str, Any], actions: list[str]) -> dict[str, Any]:
        return T.predict(state, actions)

    @classmethod
    def random_actions(cls, rng: Any, k: int, state: dict[str, Any] | None = None) -> list[str]:
        out = []
        for _ in range(k):
            kind = rng.choice(("pick", "place", "push"))
            n = T.ARITY[kind]
            vals = []
            for i in range(n):
                axis = "xyz"[i % 3]
                lo, hi = (-300, 300) if axis == "x" else (-200, 200) if axis == "y" else (0, 200)
                vals.append(rng.randint(lo, hi))
            out.append(T.fmt(kind, *vals))
        return out

    def config_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self.config)
