"""``envs.make("osworld", ...)``: OSWorld tasks on a VAGEN sandbox desktop.

Per episode: lease a clean sandbox from the pool, run the task's setup steps, then each
step parses the agent's action string with a *safe* parser (``pyautogui`` or ``computer_13``
grammar, plus ``WAIT``/``DONE``/``FAIL``), sends structured input to the sandbox and waits
for the screen to settle (readiness, not OSWorld's fixed 2 s pause) before the screenshot.
``DONE``/``FAIL`` or the step limit ends the episode and the task's evaluator scores it:
the reward is the task score at the end (plus optional valid-action shaping).

Observations: the screenshot (resized to ``image_size`` when given; actions are in that
image's pixels and scaled to the screen), optionally the linearized accessibility tree
(within a token budget) and a set-of-marks overlay (numbered boxes on interactive
elements, listed in the text with their centres).

Infrastructure failures — a sandbox that dies, a setup step or evaluator that cannot run —
raise :class:`envs.base.EnvInfraError`; they are never the agent's 0.
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
import shutil
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np

from envs.base import EnvInfraError, PromptPieces, StateSchema, StepInfo, VagenEnv

from .actions import ACTION_SPACES, GRAMMAR, ActionParseError
from .controller import FileCache, SetupError, VMController, map_home
from .evaluator import EvalError, evaluate
from .tasks import Task, load_suite, suite_dir

log = logging.getLogger("vagen.osworld")

OBSERVATIONS = ("screenshot", "a11y_tree", "screenshot_a11y_tree", "som")
SANDBOX_KEYS = ("provider", "num", "urls", "token_env", "screen_width", "screen_height", "image", "network",
                "reset_mode", "mem_limit", "cpus")
SPECIALS = ("WAIT", "DONE", "FAIL")
_COORD_CALL = re.compile(r"(pyautogui\.(?:click|moveTo|doubleClick|tripleClick|rightClick|middleClick|dragTo|"
                         r"mouseDown|mouseUp)\(\s*)(-?\d+(?:\.\d+)?)(\s*,\s*)(-?\d+(?:\.\d+)?)")


class _SandboxSettings:
    """A ``sandbox:`` section as attributes (what ``provider_from_config`` reads)."""

    def __init__(self, **kw: Any) -> None:
        unknown = set(kw) - set(SANDBOX_KEYS)
        if unknown:
            raise ValueError(f"osworld: unknown sandbox keys {sorted(unknown)}; allowed: {', '.join(SANDBOX_KEYS)}")
        self.provider = kw.get("provider", "local")
        self.num = int(kw.get("num", 1))
        self.urls = list(kw.get("urls", []))
        self.token_env = kw.get("token_env", "VAGEN_SANDBOX_TOKEN")
        self.screen_width = int(kw.get("screen_width", 1280))
        self.screen_height = int(kw.get("screen_height", 800))
        self.image = kw.get("image", "vagen/desktop:latest")
        self.network = kw.get("network", "host")
        self.reset_mode = kw.get("reset_mode", "inplace")
        self.mem_limit = kw.get("mem_limit", "2g")
        self.cpus = float(kw.get("cpus", 1.0))


def make_pool(sandbox: dict[str, Any] | Any | None = None, size: int | None = None):
    """A SandboxPool from a ``sandbox:`` section (dict or config object)."""
    from sandboxes.pool import SandboxPool
    from sandboxes.providers import provider_from_config

    settings = _SandboxSettings(**(sandbox or {})) if sandbox is None or isinstance(sandbox, dict) else sandbox
    return SandboxPool(provider_from_config(settings), size=size or settings.num)


class OSWorldEnv(VagenEnv):
    name = "osworld"
    description = "OSWorld desktop tasks (OSWorld task JSON) in a sandboxed desktop: terminal, files, editor, browser"
    action_grammar = GRAMMAR["pyautogui"]
    state_schema = StateSchema(entities=(), reference="screen", coordinates="screen pixels (x, y)")
    #: The trainer gives envs with this flag a shared sandbox pool (``pool=``).
    needs_sandbox = True

    def __init__(self, tasks: str | list[Task] = "osworld-lite", domains: list[str] | None = None,
                 task_ids: list[str] | None = None, action_space: str = "pyautogui",
                 observation: str = "screenshot", max_steps: int = 15, image_size: list[int] | None = None,
                 a11y_max_tokens: int = 2000, som_max_marks: int = 60, settle_timeout: float = 2.0,
                 settle_quiet: float = 0.15, valid_action_reward: float = 0.0, invalid_action_penalty: float = 0.0,
                 pool: Any = None, sandbox: dict[str, Any] | None = None, file_cache: list[str] | None = None,
                 cache_network: bool = False, lease_timeout: float = 600.0, work_dir: str | None = None,
                 password: str = "password") -> None:
        if action_space not in ACTION_SPACES:
            raise ValueError(f"osworld: action_space must be one of {', '.join(ACTION_SPACES)}, got {action_space!r}")
        if observation not in OBSERVATIONS:
            raise ValueError(f"osworld: observation must be one of {', '.join(OBSERVATIONS)}, got {observation!r}")
        if not 1 <= int(max_steps) <= 500:
            raise ValueError(f"osworld: max_steps must be in [1, 500], got {max_steps}")
        if image_size is not None and (len(image_size) != 2 or min(image_size) < 16):
            raise ValueError(f"osworld: image_size must be [width, height] (>= 16 px), got {image_size}")
        if invalid_action_penalty > 0:
            raise ValueError("osworld: invalid_action_penalty must be <= 0")
        self.action_space_name = action_space
        self.parse = ACTION_SPACES[action_space]
        self.observation_mode = observation
        self.max_steps = int(max_steps)
        self.image_size = tuple(image_size) if image_size else None
        self.a11y_max_tokens, self.som_max_marks = int(a11y_max_tokens), int(som_max_marks)
        self.settle = {"timeout": float(settle_timeout), "quiet": float(settle_quiet)}
        self.valid_action_reward, self.invalid_action_penalty = float(valid_action_reward), float(invalid_action_penalty)
        self.password, self.lease_timeout = password, float(lease_timeout)
        if isinstance(tasks, list):
            self.tasks = list(tasks)
            cache_dirs: list[Path] = []
        else:
            root = suite_dir(tasks)
            self.tasks = load_suite(root, domains)
            cache_dirs = [root / "files"] if (root / "files").is_dir() else []
        if task_ids:
            wanted = set(task_ids)
            self.tasks = [t for t in self.tasks if t.id in wanted]
            missing = wanted - {t.id for t in self.tasks}
            if missing:
                raise ValueError(f"osworld: unknown task ids {sorted(missing)}")
        if not self.tasks:
            raise ValueError(f"osworld: no tasks selected from {tasks!r} (domains={domains}, task_ids={task_ids})")
        self.cache = FileCache([Path(d) for d in (file_cache or [])] + cache_dirs, allow_network=cache_network)
        self._own_pool = pool is None
        self._pool_spec = sandbox
        self.pool = pool
        # a fixed shuffle, so consecutive seeds (a training run's groups) visit mixed domains
        self._order = np.random.default_rng(0x05_0b1d).permutation(len(self.tasks))
        self._work_root = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="vagen-osworld-"))
        self._lease = None
        self.vm: VMController | None = None
        self.task: Task | None = None
        self._steps = 0
        self._last_frame: np.ndarray | None = None
        self._last_hash = b""
        self._done = True
        self._marks: list[tuple[int, int]] = []
        self._set_spaces(None)

    # -- contract ------------------------------------------------------------------------------
    def prompt_pieces(self) -> PromptPieces:
        example = "pyautogui.click(640, 400)" if self.action_space_name == "pyautogui" else \
            '{"action_type": "CLICK", "parameters": {"x": 640, "y": 400}}'
        w, h = self._image_wh()
        return PromptPieces(
            description=("You control a Linux desktop (openbox window manager, an xterm terminal, a text editor and a "
                         f"Chromium browser) through the mouse and keyboard. Screenshots are {w}x{h} pixels; "
                         "coordinates in your actions are pixels of that screenshot, (0, 0) at the top-left. "
                         "Complete the task given in each observation."),
            action_help=GRAMMAR[self.action_space_name] + "\nSpecial actions (alone): WAIT (let the screen change), "
                        "DONE (the task is complete), FAIL (the task is impossible here).",
            example_action=example, max_actions_per_turn=1, action_separator="")

    @classmethod
    def solve_state(cls, state: dict[str, Any]) -> list[str] | None:
        """The stored oracle's remaining actions (coordinates scaled into the observation image)."""
        path = state.get("oracle_path")
        if not path or not Path(path).is_file():
            return None
        import json

        data = json.loads(Path(path).read_text())
        actions = list(data["actions"])[int(state.get("step", 0)):]
        home = state.get("home")
        if home and home != "/home/user":  # the oracle was written for OSWorld's /home/user
            actions = [map_home(a, home) for a in actions]
        sx, sy = state.get("image_scale", (1.0, 1.0))  # screen px per image px
        if (sx, sy) != (1.0, 1.0):
            actions = [_COORD_CALL.sub(lambda m: f"{m.group(1)}{round(float(m.group(2)) / sx)}{m.group(3)}"
                                                 f"{round(float(m.group(4)) / sy)}", a) for a in actions]
        return actions

    @classmethod
    def predict_state(cls, state: dict[str, Any], actions: list[str]) -> dict[str, Any]:
        return {**state, "step": int(state.get("step", 0)) + 1}

    # -- episode -------------------------------------------------------------------------------
    def _image_wh(self) -> tuple[int, int]:
        if self.image_size:
            return int(self.image_size[0]), int(self.image_size[1])
        if self.vm is not None:
            return self.vm.screen
        spec = self._pool_spec or {}
        return int(spec.get("screen_width", 1280)), int(spec.get("screen_height", 800))

    def _scale(self) -> tuple[float, float]:
        assert self.vm is not None
        w, h = self._image_wh()
        return self.vm.screen[0] / w, self.vm.screen[1] / h

    def _release(self) -> None:
        if self._lease is not None:
            self._lease.release()
            self._lease = None
        self.vm = None

    def pick_task(self, seed: int | None, options: dict | None) -> Task:
        if options and options.get("task_id"):
            for t in self.tasks:
                if t.id == options["task_id"]:
                    return t
            raise ValueError(f"osworld: no task {options['task_id']!r} in this env")
        return self.tasks[int(self._order[(seed or 0) % len(self.tasks)])]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        from sandboxes.client import SandboxError

        self._release()
        self.task = self.pick_task(seed, options)
        self._steps, self._done, self._marks = 0, False, []
        work = self._work_root / f"{self.task.id}-{time.monotonic_ns()}"
        work.mkdir(parents=True, exist_ok=True)
        try:
            if self.pool is None:
                self.pool = make_pool(self._pool_spec, size=1)
            self._lease = self.pool.lease(timeout=self.lease_timeout)
            self.vm = VMController(self._lease.client, self.cache, password=self.password, work_dir=work)
            self.vm.task_id = self.task.id
            self.vm.run_steps(self.task.config)
            self._lease.client.settle(**self.settle)
            obs = self._observe(feedback="")
        except SetupError as e:
            raise EnvInfraError(f"osworld task {self.task.id}: setup failed: {e}") from e
        except SandboxError as e:
            raise EnvInfraError(f"osworld task {self.task.id}: sandbox failed during reset: {e}") from e
        info = StepInfo(state=self._state()).as_dict()
        info["task_id"], info["domain"] = self.task.id, self.task.domain
        return obs, info

    def step(self, action: str):
        if self._done or self.vm is None or self.task is None:
            raise RuntimeError("osworld: step() before reset() or after the episode ended")
        from sandboxes.client import SandboxError

        self._steps += 1
        info = StepInfo(state={})
        reward, terminated = 0.0, False
        special: str | None = None
        feedback = ""
        try:
            try:
                parsed = self.parse(str(action), scale=self._scale(), screen=self.vm.screen)
            except ActionParseError as e:
                info.action_valid = False
                info.penalty = self.invalid_action_penalty
                reward += self.invalid_action_penalty
                feedback = f"Invalid action, nothing was executed: {e}"
                parsed = None
            if parsed is not None:
                reward += self.valid_action_reward
                special = parsed.special
                info.executed_actions = [str(action)[:200]]
                settle: dict = {}
                if parsed.actions:
                    settle = self.vm.client.input(parsed.actions, settle=self.settle).get("settle", {})
                elif special == "WAIT":
                    settle = self.vm.client.settle(timeout=max(self.settle["timeout"], 1.0), quiet=0.5)
                if settle:  # readiness: how long the screen took to stop changing
                    info.metrics["env/settle_s"] = float(settle.get("waited", 0.0))
                    info.metrics["env/settled"] = float(bool(settle.get("settled")))
                if parsed.clamped:
                    feedback = "Note: a coordinate was outside the screen and was clamped to its edge."
            terminated = special in ("DONE", "FAIL")
            truncated = not terminated and self._steps >= self.max_steps
            before = self._last_hash
            obs = self._observe(feedback)
            info.action_effective = self._last_hash != before
            if terminated or truncated:
                self._done = True
                result = evaluate(self.task, self.vm, special, self.vm.work_dir)
                reward += result.score
                info.success = result.score >= 1.0
                info.metrics.update({"episode/score": result.score, "episode/success": float(info.success),
                                     f"episode/success/{self.task.domain or 'other'}": float(info.success),
                                     "episode/steps": float(self._steps)})
                info.feedback = result.detail
        except EvalError as e:
            raise EnvInfraError(f"osworld task {self.task.id}: evaluation could not run: {e}") from e
        except SandboxError as e:
            raise EnvInfraError(f"osworld task {self.task.id}: sandbox failed at step {self._steps}: {e}") from e
        info.state = self._state()
        info.metrics["action_valid"] = float(info.action_valid)
        out = info.as_dict()
        out["task_id"], out["domain"] = self.task.id, self.task.domain
        if self._done:  # hand the sandbox back now: the pool resets it while the caller moves on
            self._release()
        return obs, reward, terminated, truncated, out

    # -- observations --------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        assert self.task is not None
        state: dict[str, Any] = {"entities": {}, "task_id": self.task.id, "domain": self.task.domain,
                                 "step": self._steps, "feasible": self.task.feasible}
        op = self.task.oracle_path
        if op is not None and op.is_file():
            state["oracle_path"] = str(op)
        if self.vm is not None:
            state["image_scale"] = self._scale()
            state["home"] = self.vm.home
        return state

    def _screenshot(self) -> np.ndarray:
        from PIL import Image

        assert self.vm is not None
        img = Image.open(io.BytesIO(self.vm.client.screenshot())).convert("RGB")
        if self.image_size and img.size != self._image_wh():
            img = img.resize(self._image_wh(), Image.BILINEAR)
        return np.asarray(img)

    def _observe(self, feedback: str) -> dict[str, Any]:
        assert self.task is not None and self.vm is not None
        lines = [f"Task: {self.vm.substitute(self.task.instruction)}", f"Step {self._steps + 1} of at most {self.max_steps}."]
        if feedback:
            lines.append(feedback)
        images: tuple[np.ndarray, ...] = ()
        frame = self._screenshot()
        self._last_frame = frame
        self._last_hash = hashlib.blake2b(frame.tobytes(), digest_size=16).digest()
        tree = None
        if self.observation_mode in ("a11y_tree", "screenshot_a11y_tree", "som"):
            tree = self.vm.client.accessibility().get("AT")
        if self.observation_mode == "som":
            frame, table = self._set_of_marks(frame, tree)
            lines.append("Marked elements (number, role, name, centre x y):\n" + table)
        if self.observation_mode != "a11y_tree":
            images = (frame,)
            lines.append("Screenshot: <image>")
        if self.observation_mode in ("a11y_tree", "screenshot_a11y_tree"):
            lines.append("Accessibility tree (tag, name, text, position, size):\n" + self.linearize(tree))
        return {"text": "\n".join(lines), "images": images}

    def _nodes(self, tree: str | None) -> list[tuple[str, str, str, int, int, int, int]]:
        if not tree:
            return []
        try:
            root = ET.fromstring(tree)
        except ET.ParseError:
            return []
        sx, sy = self._scale()
        out = []
        for el in root.iter():
            pos = size = None
            for k, v in el.attrib.items():
                if k.endswith("screencoord"):
                    pos = v
                elif k.endswith("}size"):
                    size = v
            if pos is None or size is None:
                continue
            try:
                x, y = (int(float(p)) for p in pos.strip("()").split(","))
                w, h = (int(float(p)) for p in size.strip("()").split(","))
            except ValueError:
                continue
            if w <= 0 or h <= 0 or x < 0 or y < 0:
                continue
            name = el.attrib.get("name", "")
            text = (el.text or "").strip()
            tag = el.tag.split("}")[-1]
            out.append((tag, name, text, round(x / sx), round(y / sy), round(w / sx), round(h / sy)))
        return out

    def linearize(self, tree: str | None) -> str:
        """OSWorld's table layout, cut to ``a11y_max_tokens`` (about 4 characters per token)."""
        rows = ["tag\tname\ttext\tposition (top-left x&y)\tsize (w&h)"]
        for tag, name, text, x, y, w, h in self._nodes(tree):
            if not (name or text):
                continue
            rows.append(f"{tag}\t{name}\t{text[:80]}\t({x}, {y})\t({w}, {h})")
        out, budget = [], self.a11y_max_tokens * 4
        for r in rows:
            if budget - len(r) - 1 < 0:
                out.append("... (truncated)")
                break
            out.append(r)
            budget -= len(r) + 1
        return "\n".join(out) if len(out) > 1 else "(no accessibility tree available)"

    INTERACTIVE = ("push-button", "button", "link", "entry", "text", "check-box", "radio-button", "menu-item",
                   "combo-box", "page-tab", "toggle-button", "list-item", "icon")

    def _set_of_marks(self, frame: np.ndarray, tree: str | None) -> tuple[np.ndarray, str]:
        from PIL import Image, ImageDraw

        img = Image.fromarray(frame)
        draw = ImageDraw.Draw(img)
        rows, self._marks = [], []
        for tag, name, text, x, y, w, h in self._nodes(tree):
            if tag not in self.INTERACTIVE or len(self._marks) >= self.som_max_marks:
                continue
            n = len(self._marks) + 1
            cx, cy = x + w // 2, y + h // 2
            self._marks.append((cx, cy))
            draw.rectangle([x, y, x + w, y + h], outline=(255, 0, 0), width=2)
            draw.rectangle([x, y, x + 8 + 7 * len(str(n)), y + 14], fill=(255, 0, 0))
            draw.text((x + 3, y + 1), str(n), fill=(255, 255, 255))
            rows.append(f"[{n}] {tag} {(name or text)[:60]!r} ({cx}, {cy})")
        return np.asarray(img), "\n".join(rows) or "(none found)"

    def render(self) -> np.ndarray:
        return self._last_frame if self._last_frame is not None else np.zeros((1, 1, 3), np.uint8)

    def close(self) -> None:
        self._release()
        if self._own_pool and self.pool is not None:
            self.pool.close()
            self.pool = None
        shutil.rmtree(self._work_root, ignore_errors=True)
