"""Stand-in language models for the worldgen model roles (``scripted:tests.worldgen.llm_fixtures:<fn>``).

``reference_planner`` answers like a planner that is always right: it reads the scene spec and
the task from the prompt and returns the template plan as JSON. ``sloppy_planner`` makes the
mistakes real models make (an element that is not there, a plan without an end, prose
instead of JSON), one per scene. ``yes_judge`` / ``no_judge`` answer a judge's question.
"""

from __future__ import annotations

import json
import random
import re

from worldgen import tasks as T
from worldgen.scene import Scene

MAKERS = [T._setting, T._tab, T._close, T._minimize, T._open_folder, T._type_text, T._cell, T._dialog, T._restore,
          T._scroll_cell, T._move_window, T._move_file, T._trash_icon, T._save_as, T._wait_toast]


def _prompt(chat) -> str:
    content = chat[-1]["content"]
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)


def _scene_and_task(chat):
    text = _prompt(chat)
    scene = Scene.model_validate_json(text.split("JSON scene spec:\n", 1)[1].split("\n", 1)[0])
    instruction = re.search(r"\nTask: (.*)\n", text).group(1)
    seed, i = (int(x) for x in scene.scene_id[1:].split("-"))  # vagen synth's scene ids: s<seed>-<i>
    task = T.make_task(scene, random.Random(seed * 7_919 + i), 0.05)  # what synth drew (default infeasible_p)
    if task.instruction == instruction:
        return scene, task
    for seed in range(400):
        for make in MAKERS:
            task = make(scene, random.Random(seed))
            if task is not None and task.instruction == instruction:
                return scene, task
    return scene, T.Task(instruction, "infeasible", feasible=False)


def _as_json(steps) -> list[dict]:
    return [{**a.model_dump(exclude_defaults=True), "consequence": c} for a, c in steps]


def reference_planner(chat) -> str:
    scene, task = _scene_and_task(chat)
    return "Here is the plan:\n" + json.dumps(_as_json(T.plan(scene, task)))


def sloppy_planner(chat) -> str:
    scene, task = _scene_and_task(chat)
    steps = _as_json(T.plan(scene, task))
    mistake = int(scene.scene_id.rsplit("-", 1)[1]) % 3
    if mistake == 0:
        return json.dumps([{"kind": "click", "target": "w77.close"}, *steps])
    if mistake == 1:
        return json.dumps(steps[:-1]) if len(steps) > 1 else "[]"
    return "I would click on the window and then press done."


def yes_judge(chat) -> str:
    return "Yes."


def no_judge(chat) -> str:
    return "no"
