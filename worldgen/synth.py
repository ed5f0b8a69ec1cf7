"""`vagen synth gui --backend html`: synthetic GUI trajectories with exact transitions.

Per scene (``sample_scene(seed * 100_003 + i)``): a task (``make_task``), the template plan
(``plan``), then for every step: the current frame (``HtmlWorld.capture``), the target's box
from the DOM (grounding), the exact transition (``apply_action``), the next frame, and the
transition filters. A kept step becomes one sample; a rejected one keeps its reason.

Filters (each rejection counted by reason in ``report.json``):

* ``target_not_hit`` — the target's box centre does not reach the element (covered by another
  window, off screen): a click there would do something else;
* ``no_box`` — a pointing action whose target is not on screen at all;
* ``blank_frame`` — a frame that is (nearly) uniform or of the wrong size;
* ``no_visible_change`` — the transition changed the spec but not one pixel;
* ``consequence_unverified`` — the DOM after the step does not show the planned state
  (the target's element for the new state is missing where the consequence says it exists).

Output (``DIR``): ``samples.jsonl`` (fields ``instruction``, ``history``, ``screenshot``,
``action`` (pyautogui), ``action_computer13``, ``action_vid``, ``bbox`` [x, y, w, h],
``next_screenshot``, ``consequence``, ``scene_id``, ``step``, ``platform``, ``task``,
``feasible``, ``provenance``), ``frames/*.png``, ``scenes/*.json`` (the specs), ``rejected.jsonl``
and ``report.json``. ``datasets.load_dataset("json", data_files=DIR/samples.jsonl)`` reads it.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

from worldgen.actions import POINTING, apply_action, to_computer13, to_pyautogui
from worldgen.html.world import Frame, HtmlWorld
from worldgen.scene import SceneDistribution, sample_scene
from worldgen.tasks import make_task, plan


def frame_ok(frame: Frame) -> bool:
    img = np.asarray(frame.image(), dtype=np.float32)
    return img.shape[:2] == (frame.height, frame.width) and float(img.std()) > 2.0


def changed(a: Frame, b: Frame) -> bool:
    return a.png != b.png and bool((np.asarray(a.image()) != np.asarray(b.image())).any())


def synth_html(n: int, out: str | Path, seed: int = 0, dist: SceneDistribution | None = None,
               infeasible_p: float = 0.05, progress: Callable[[int], None] | None = None) -> dict:
    """Write at least ``n`` kept step samples (whole trajectories) to ``out``; return the report."""
    out = Path(out)
    (out / "frames").mkdir(parents=True, exist_ok=True)
    (out / "scenes").mkdir(exist_ok=True)
    kept, reasons, tasks = 0, Counter(), Counter()
    t0 = time.perf_counter()
    scenes = 0
    with HtmlWorld() as world, open(out / "samples.jsonl", "w") as fs, open(out / "rejected.jsonl", "w") as fr:
        i = 0
        while kept < n:
            scene = sample_scene(seed * 100_003 + i, dist, scene_id=f"s{seed}-{i}")
            rng = random.Random(seed * 7_919 + i)
            i += 1
            task = make_task(scene, rng, infeasible_p)
            steps = plan(scene, task)
            tasks[task.template] += 1
            scenes += 1
            (out / "scenes" / f"{scene.scene_id}.json").write_text(scene.to_json())
            frame = world.capture(scene)
            shot = f"frames/{scene.scene_id}-0.png"
            (out / shot).write_bytes(frame.png)
            history: list[str] = []
            for k, (action, consequence) in enumerate(steps):
                why = None
                box = frame.box(action.target) if action.target else None
                if action.kind in POINTING and box is None:
                    why = "no_box"
                elif action.kind in POINTING and not frame.clickable(action.target):
                    why = "target_not_hit"
                elif not frame_ok(frame):
                    why = "blank_frame"
                nxt_scene, nxt_frame, nxt_shot = scene, frame, shot
                if action.kind not in ("done", "fail", "wait"):
                    nxt_scene, _ = apply_action(scene, action)
                    nxt_frame = world.capture(nxt_scene)
                    nxt_shot = f"frames/{scene.scene_id}-{k + 1}.png"
                    (out / nxt_shot).write_bytes(nxt_frame.png)
                    if why is None and not frame_ok(nxt_frame):
                        why = "blank_frame"
                    elif why is None and not changed(frame, nxt_frame):
                        why = "no_visible_change"
                    elif why is None and not _dom_confirms(action, nxt_scene, nxt_frame):
                        why = "consequence_unverified"
                record = {"instruction": task.instruction, "history": list(history), "screenshot": shot,
                          "action": to_pyautogui(action, box), "action_computer13": to_computer13(action, box),
                          "action_vid": action.target, "action_kind": action.kind,
                          "bbox": list(box) if box else None, "next_screenshot": nxt_shot,
                          "consequence": consequence, "scene_id": scene.scene_id, "step": k,
                          "platform": scene.platform, "task": task.template, "feasible": task.feasible,
                          "provenance": {"backend": "html", "planner": "template", "seed": seed,
                                         "scene_seed": seed * 100_003 + i - 1, "verified": why is None}}
                if why is None:
                    fs.write(json.dumps(record) + "\n")
                    kept += 1
                    if progress:
                        progress(1)
                else:
                    reasons[why] += 1
                    fr.write(json.dumps({**record, "reason": why}) + "\n")
                history.append(action.describe())
                scene, frame, shot = nxt_scene, nxt_frame, nxt_shot
    wall = time.perf_counter() - t0
    total = kept + sum(reasons.values())
    report = {"backend": "html", "seed": seed, "scenes": scenes, "steps": total, "kept": kept,
              "kept_fraction": kept / max(1, total), "rejected": dict(reasons), "tasks": dict(tasks),
              "wall_s": round(wall, 2), "steps_per_min": round(60 * total / max(wall, 1e-9), 1)}
    (out / "report.json").write_text(json.dumps(report, indent=2))
    return report


def _dom_confirms(action, scene, frame: Frame) -> bool:
    """The next frame's DOM shows what the spec says: every window of the spec that is open has
    its frame element on screen, closed ones are gone, and a typed/selected target exists."""
    open_ids = {w.id for w in scene.windows if not w.minimized}
    on_screen = {k for k in frame.boxes if k.startswith("w") and "." not in k}
    if on_screen != open_ids:
        return False
    if scene.focused and not frame.boxes.get(f"taskbar.{scene.focused}"):
        return False
    if action.kind == "type" and action.target and action.target.split(".")[0] in open_ids:
        return action.target in frame.boxes
    return True


__all__ = ["changed", "frame_ok", "synth_html"]
