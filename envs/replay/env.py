"""``envs.make("replay", data=DIR)``: replay expert GUI trajectories step by step (semi-online RL).

UI-S1 (Lu et al. 2025) trains on offline trajectories while keeping the model's own
history. Each step shows the expert's screenshot and the task; the model answers one action
(``pyautogui`` code or ``computer_13`` JSON, as OSWorld); it is matched against the expert's
(``envs.replay.match``) and rewarded ``exact`` 1 / ``type`` 0.5 / ``wrong`` 0.1 /
``unparsed`` 0 (``MatchConfig.rewards``; the agent layer adds its format part). The next
observation is always the expert's next screenshot — the world does not follow the model.

When the model's action does not match:

- with patches left (``patch_budget``: 0 = none, -1 = unlimited), the trajectory goes on and
  ``info["patch"]`` carries the expert action (and its stored thought) for the agent layer,
  which replaces the model's history entry with it (``vagen.rollout``: thought-free,
  off-policy thought or on-policy thought); the env's own "Previous actions" line records
  the expert action too;
- otherwise the episode ends there (``patch_budget=0`` is UI-S1's SOP evaluation: stop at
  the first error).

``info["metrics"]`` has ``match/level``, ``episode/progress`` (steps matched before the first
mismatch / steps: SOP progress) and ``episode/score`` (the same, for ``vagen eval``); success =
every step matched. ``reset(seed=k)`` plays trajectory ``k mod N``; ``options={"task_id": id}``
a named one (eval suites). Screenshots are shown at most ``image_size`` px on the long side;
``coordinates="screen"`` (default, as ``vagen synth`` data asks) means the model answers in
screen pixels, ``"image"`` in the shown image's pixels.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from envs.base import EntitySpec, PromptPieces, StateSchema, StepInfo, VagenEnv
from envs.replay.data import ExpertTrajectory, load_trajectories
from envs.replay.match import MatchConfig, match_level, step_action


@dataclass
class ReplayConfig:
    data: str = ""
    split: str = "all"
    test_fraction: float = 0.2
    action_space: str = "pyautogui"
    patch_budget: int = 0
    max_steps: int = 0          # 0: as long as the trajectory; else truncate (eval step budgets)
    image_size: int = 448
    coordinates: str = "screen"
    action_history: bool = True
    expert_history: bool = False   # "Previous actions" always the expert's (offline RL / teacher forcing)
    complete_only: bool = True
    success_only: bool = True
    box_scale: float = 1.2
    max_dist: float = 0.04
    strict_text: bool = False
    text_f1: float = 0.5          # type steps: least word F1 for a match (envs.replay.match)
    rewards: dict[str, float] = field(default_factory=lambda: {"exact": 1.0, "type": 0.5, "wrong": 0.1,
                                                               "unparsed": 0.0})

    def validate(self) -> None:
        if not self.data:
            raise ValueError("replay needs data=DIR (a vagen synth or vagen eval output folder)")
        if self.action_space not in ("pyautogui", "computer_13"):
            raise ValueError(f"action_space must be pyautogui or computer_13, got {self.action_space!r}")
        if self.patch_budget < -1:
            raise ValueError(f"patch_budget must be -1 (unlimited), 0 or more, got {self.patch_budget}")
        if self.coordinates not in ("screen", "image"):
            raise ValueError(f"coordinates must be screen or image, got {self.coordinates!r}")
        if not 32 <= self.image_size <= 4096:
            raise ValueError(f"image_size must be in [32, 4096], got {self.image_size}")
        if not 0.0 < self.text_f1 <= 1.0:
            raise ValueError(f"text_f1 must be in (0, 1], got {self.text_f1}")
        if set(self.rewards) != {"exact", "type", "wrong", "unparsed"}:
            raise ValueError(f"rewards needs exactly exact, type, wrong, unparsed; got {sorted(self.rewards)}")


class ReplayEnv(VagenEnv):
    name = "replay"
    description = "Replay of expert GUI trajectories (vagen synth / vagen eval data): semi-online RL and SOP eval"
    action_grammar = "pyautogui code (or computer_13 JSON) for one step; DONE / FAIL / WAIT"
    needs_data = True  # data=DIR: a vagen synth / vagen eval output folder
    state_schema = StateSchema(entities=(EntitySpec("target", "point", "T", ("target",), "the expert's target"),))

    def __init__(self, data: str = "", max_steps: int = 0, **cfg: Any) -> None:
        unknown = set(cfg) - set(ReplayConfig.__dataclass_fields__)
        if unknown:
            raise ValueError(f"replay: unknown option(s) {', '.join(sorted(unknown))}")
        self.config = ReplayConfig(data=data, max_steps=max_steps, **cfg)
        self.config.validate()
        c = self.config
        self.trajectories: list[ExpertTrajectory] = load_trajectories(c.data, c.complete_only, c.success_only,
                                                                      c.split, c.test_fraction)
        self._by_id = {t.id: t for t in self.trajectories}
        self.match_cfg = MatchConfig(c.box_scale, c.max_dist, c.strict_text, dict(c.rewards), c.text_f1)
        self.traj: ExpertTrajectory | None = None
        self.t = 0
        self._set_spaces(None)

    # -- prompt ---------------------------------------------------------------------------------
    def prompt_pieces(self) -> PromptPieces:
        space = ("pyautogui code, e.g. pyautogui.click(x, y), pyautogui.doubleClick(x, y), pyautogui.rightClick(x, y), "
                 "pyautogui.write('text'), pyautogui.press('enter'), pyautogui.hotkey('ctrl', 's'), "
                 "pyautogui.scroll(-3, x=x, y=y), pyautogui.moveTo(x, y); pyautogui.dragTo(x2, y2)"
                 if self.config.action_space == "pyautogui" else
                 'one computer_13 JSON object, e.g. {"action_type": "CLICK", "parameters": {"x": 10, "y": 20}}')
        where = "screen pixels" if self.config.coordinates == "screen" else "pixels of the image you see"
        return PromptPieces(
            description="You operate a computer to complete a task. Each turn shows the task, your previous actions "
                        "and a screenshot.",
            action_help=f"Answer one action per turn: {space}; DONE when the task is complete, FAIL if it cannot be "
                        f"done. Coordinates are {where}.",
            example_action="pyautogui.click(100, 200)" if self.config.action_space == "pyautogui" else
            '{"action_type": "CLICK", "parameters": {"x": 100, "y": 200}}',
            max_actions_per_turn=1, action_separator="\n")

    # -- episode --------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        tid = (options or {}).get("task_id")
        if tid is not None:
            if tid not in self._by_id:
                raise ValueError(f"replay: no trajectory {tid!r}")
            self.traj = self._by_id[tid]
        else:
            self.traj = self.trajectories[(seed or 0) % len(self.trajectories)]
        self.t, self.matched_prefix, self.patches, self.history = 0, 0, 0, []
        self._first_miss = False
        self._done = False
        info = StepInfo(state=self._state(), metrics={"steps": float(len(self.traj.steps))})
        return self._observation(self.traj.steps[0].screenshot), info.as_dict()

    def _image(self, path) -> tuple[np.ndarray, tuple[int, int]]:
        from PIL import Image

        img = Image.open(path).convert("RGB")
        size = img.size
        img.thumbnail((self.config.image_size, self.config.image_size))
        return np.asarray(img), size

    def _observation(self, path) -> dict[str, Any]:
        arr, screen = self._image(path)
        self._shown = (arr.shape[1], arr.shape[0])
        self._screen = screen
        hist = "; ".join(self.history[-4:]) or "none"
        text = f"Task: {self.traj.instruction}\n"
        if self.config.action_history:
            text += f"Previous actions: {hist}\n"
        text += f"Screen ({screen[0]}x{screen[1]}): <image>"
        return {"text": text, "images": (arr,)}

    def _state(self) -> dict[str, Any]:
        step = self.traj.steps[min(self.t, len(self.traj.steps) - 1)]
        box = step.box
        centre = [(box[1] + box[3] / 2), (box[0] + box[2] / 2)] if box else [0, 0]
        return {"entities": {"target": centre}, "trajectory": self.traj.id, "step": self.t,
                "expert_action": step.action}

    def step(self, action: Any):
        if self.traj is None or self._done:
            raise RuntimeError("call reset() before step()")
        c = self.config
        exp = self.traj.steps[self.t]
        expert = step_action(exp.action, "pyautogui" if not exp.action.lstrip().startswith(("{", "[")) else "computer_13")
        if expert is None:
            raise RuntimeError(f"replay: expert action {exp.action!r} of {self.traj.id} step {self.t} does not parse")
        text = action if isinstance(action, str) else str(action)
        pred = step_action(text, c.action_space)
        screen = exp.screen or self._screen
        pred_size = screen if c.coordinates == "screen" else self._shown
        level = match_level(pred, expert, pred_size=pred_size, expert_size=screen, box=exp.box, cfg=self.match_cfg)
        matched = level == "exact"
        reward = self.match_cfg.reward(level)
        if matched and not self._first_miss:
            self.matched_prefix += 1
        patch = None
        stop = False
        if matched:  # the model's own action (or, teacher-forced, the expert's)
            self.history.append((exp.action if c.expert_history else text.strip())[:200])
        else:
            self._first_miss = True
            if c.patch_budget == -1 or self.patches < c.patch_budget:
                self.patches += 1
                patch = {"action": exp.action, "thought": exp.thought, "step": self.t}
                self.history.append(exp.action[:200])
            else:
                stop = True
        self.t += 1
        n = len(self.traj.steps)
        finished = self.t >= n
        truncated = not (stop or finished) and bool(c.max_steps) and self.t >= c.max_steps
        terminated = stop or finished
        self._done = terminated or truncated
        success = finished and not self._first_miss
        progress = self.matched_prefix / n
        nxt = self.traj.final_screenshot if finished or stop else self.traj.steps[self.t].screenshot
        obs = self._observation(nxt)
        metrics = {"match/exact": float(level == "exact"), "match/type": float(level == "type"),
                   "match/wrong": float(level == "wrong"), "match/unparsed": float(level == "unparsed"),
                   "patches": float(self.patches)}
        if terminated or truncated:
            metrics.update({"episode/progress": progress, "episode/score": progress,
                            "episode/steps": float(n)})
        info = StepInfo(state=self._state(), action_valid=pred is not None, action_effective=matched,
                        success=success, metrics=metrics,
                        feedback=f"match: {level}" + (" (patched with the expert action)" if patch else ""))
        out = info.as_dict()
        out["match"] = {"level": level, "expert": exp.action, "matched": matched}
        out["patch"] = patch
        return obs, float(reward), bool(terminated), bool(truncated), out

    @property
    def instruction(self) -> str:
        """The current trajectory's task (what `vagen eval` records in task.json)."""
        return self.traj.instruction if self.traj is not None else ""

    @classmethod
    def solve_state(cls, state: dict[str, Any]) -> list[str] | None:
        """The expert's action at this step (``scripted:oracle`` replays the expert)."""
        return [state["expert_action"]] if state.get("expert_action") else None

    @classmethod
    def predict_state(cls, state: dict[str, Any], actions: list[str]) -> dict[str, Any]:
        return state

    def render(self):
        return self._image(self.traj.steps[min(self.t, len(self.traj.steps) - 1)].screenshot)[0]

    def config_dict(self) -> dict[str, Any]:
        return asdict(self.config)


__all__ = ["ReplayConfig", "ReplayEnv"]
