"""Expert trajectories for the replay env, from the two formats VAGEN writes.

- **Synthetic step samples** (``vagen synth gui``: ``DIR/samples.jsonl``): rows grouped by
  ``scene_id`` and ordered by ``step``; a trajectory is complete when its steps run 0..k
  without a gap and the last one is ``DONE`` / ``FAIL`` (a trajectory cut by a rejected step
  is incomplete and skipped unless ``complete_only=False``). Each step carries its target box.
- **Evaluation episodes** (``vagen eval --out DIR``: ``results.jsonl`` + ``episodes/.../traj.jsonl``
  in OSWorld's layout): the screenshot before step ``n`` is the one saved after step ``n - 1``
  (``step_0`` after reset); the task statement comes from the episode's ``task.json``. Only
  successful episodes are read by default (``success_only``), so recorded successful
  evaluations become training data. No boxes: clicks are matched by distance.

Every path stays inside ``DIR`` (a row naming ``../x.png`` is an error, not a read elsewhere).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path


class ReplayDataError(ValueError):
    """The data folder cannot be read as trajectories (the message says where and why)."""


@dataclass
class ExpertStep:
    screenshot: Path
    action: str                              # pyautogui code, computer_13 JSON text, or WAIT/DONE/FAIL
    box: tuple[float, float, float, float] | None = None
    end_box: tuple[float, float, float, float] | None = None
    thought: str = ""                         # the expert's reasoning when stored ("" otherwise)
    screen: tuple[int, int] | None = None     # (width, height) the action's pixels refer to


@dataclass
class ExpertTrajectory:
    id: str
    instruction: str
    steps: list[ExpertStep]
    final_screenshot: Path
    domain: str = "replay"
    meta: dict = field(default_factory=dict)


def _inside(root: Path, rel: str, where: str) -> Path:
    p = (root / rel).resolve()
    if root.resolve() not in p.parents:
        raise ReplayDataError(f"{where}: path {rel!r} leaves the data folder")
    if not p.is_file():
        raise ReplayDataError(f"{where}: missing file {rel!r}")
    return p


def _box(v) -> tuple[float, float, float, float] | None:
    if v is None:
        return None
    if not (isinstance(v, list | tuple) and len(v) == 4 and all(isinstance(x, int | float) for x in v)):
        raise ReplayDataError(f"bad box {v!r}")
    return tuple(float(x) for x in v)  # type: ignore[return-value]


def load_synthetic(root: Path, complete_only: bool = True) -> list[ExpertTrajectory]:
    rows_by: dict[str, list[dict]] = {}
    path = root / "samples.jsonl"
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            rows_by.setdefault(str(r["scene_id"]), []).append(r)
        except (ValueError, KeyError, TypeError) as e:
            raise ReplayDataError(f"{path}:{n}: not a step sample ({e})") from None
    out = []
    for sid, rows in rows_by.items():
        rows.sort(key=lambda r: r["step"])
        complete = [r["step"] for r in rows] == list(range(len(rows))) and rows[-1]["action"] in ("DONE", "FAIL")
        if complete_only and not complete:
            continue
        steps = []
        for r in rows:
            where = f"{path} scene {sid} step {r['step']}"
            screen = tuple(r["screen"]) if r.get("screen") else None
            steps.append(ExpertStep(screenshot=_inside(root, r["screenshot"], where), action=r["action"],
                                    box=_box(r.get("bbox")), end_box=_box(r.get("to_bbox")),
                                    thought=str(r.get("thought") or ""), screen=screen))  # type: ignore[arg-type]
        last = rows[-1]
        out.append(ExpertTrajectory(id=sid, instruction=rows[0]["instruction"], steps=steps,
                                    final_screenshot=_inside(root, last["next_screenshot"], f"{path} scene {sid}"),
                                    domain=str(rows[0].get("task") or "synthetic"),
                                    meta={"platform": rows[0].get("platform"), "feasible": rows[0].get("feasible")}))
    return out


def load_eval(root: Path, success_only: bool = True) -> list[ExpertTrajectory]:
    results = root / "results.jsonl"
    out = []
    for n, line in enumerate(results.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except ValueError:
            continue  # a torn last line from a killed run
        if r.get("status") != "ok" or (success_only and not r.get("success")):
            continue
        d = root / r["episode_dir"]
        where = f"{results}:{n}"
        task = d / "task.json"
        if not task.is_file():
            raise ReplayDataError(f"{where}: {task} is missing (episodes recorded before task.json was written "
                                  "cannot be replayed)")
        instruction = json.loads(task.read_text())["instruction"]
        before = _inside(root, str(Path(r["episode_dir"]) / "step_0.png"), where)
        steps = []
        for m, row in enumerate((d / "traj.jsonl").read_text().splitlines(), 1):
            s = json.loads(row)
            steps.append(ExpertStep(screenshot=before, action=str(s["action"]).strip()))
            if s.get("screenshot_file"):
                before = _inside(root, str(Path(r["episode_dir"]) / s["screenshot_file"]), f"{d}/traj.jsonl:{m}")
        if steps:
            key = f"{r['suite']}/{r['domain']}/{r['task_id']}" + ("" if r.get("seed") is None else f"@{r['seed']}")
            out.append(ExpertTrajectory(id=key, instruction=instruction, steps=steps, final_screenshot=before,
                                        domain=str(r.get("domain") or "eval"), meta={"score": r.get("score")}))
    return out


def load_trajectories(data: str | Path, complete_only: bool = True, success_only: bool = True,
                      split: str = "all", test_fraction: float = 0.2) -> list[ExpertTrajectory]:
    """Trajectories in ``data`` (either format), sorted by id; ``split`` = ``train`` / ``test``
    picks a stable hash split of the ids (``test_fraction`` of them are test)."""
    root = Path(data)
    if (root / "samples.jsonl").is_file():
        trajs = load_synthetic(root, complete_only)
    elif (root / "results.jsonl").is_file():
        trajs = load_eval(root, success_only)
    else:
        raise ReplayDataError(f"{root}: neither samples.jsonl (vagen synth) nor results.jsonl (vagen eval) found")
    if split not in ("all", "train", "test"):
        raise ReplayDataError(f"split must be all, train or test, got {split!r}")
    if split != "all":
        def is_test(t: ExpertTrajectory) -> bool:
            h = int(hashlib.sha256(t.id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
            return h < test_fraction
        trajs = [t for t in trajs if is_test(t) == (split == "test")]
    trajs.sort(key=lambda t: t.id)
    if not trajs:
        raise ReplayDataError(f"{root}: no {'complete ' if complete_only else ''}trajectories"
                              + (f" in split {split!r}" if split != "all" else ""))
    return trajs


__all__ = ["ExpertStep", "ExpertTrajectory", "ReplayDataError", "load_eval", "load_synthetic", "load_trajectories"]
