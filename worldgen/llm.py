"""Language and vision models in the synthesis pipeline, through any policy backend.

AutoGUIWorld writes tasks and plans with an LLM and checks edited frames with a VLM. Here each
role takes a policy spec (``openai:<model>``, ``hf:<path>``, ``vllm:<path>``, ``tiny``,
``scripted:<module>:<fn>``) and everything a model says is *checked*, never trusted:

* :func:`llm_task` — a task written for the scene (``{"instruction", "feasible"}``);
* :func:`llm_plan` — atomic actions as JSON, each validated as an :class:`Action` and simulated
  on the spec (:func:`~worldgen.actions.apply_action`): a step that would change nothing, an
  unknown element, a plan that does not end in ``done``/``fail`` or (for template tasks) does
  not reach the task's goal is rejected with its reason. The consequence recorded is the
  simulator's (exact); the model's own stays in the step's metrics as ``intended``;
* :func:`vlm_ground` — a box ``[x, y, w, h]`` for a pointing action on a generated frame;
* :func:`vlm_judge` — yes/no: does the next frame show the intended consequence.

A model that answers garbage costs only rejected steps (reasons counted in ``report.json``).
Prompts carry the scene spec as JSON and the element ids (``data-vid``) a target may name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from html import unescape

from pydantic import ValidationError

from worldgen.actions import POINTING, Action, NoEffect, apply_action
from worldgen.scene import Scene
from worldgen.tasks import Task

KINDS = "click, double_click, right_click, type, key, hotkey, scroll, drag, wait, done, fail"


class PlanRejected(ValueError):
    """A model's task or plan failed a check; ``reason`` is the report key."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


@dataclass
class ModelRoles:
    """The models a synthesis run uses (policy specs; None = not used)."""

    tasks: str | None = None      # writes tasks (else: templates)
    planner: str | None = None    # plans them (else: the template planner)
    grounder: str | None = None   # boxes on generated frames (else: DOM / change mask)
    judge: str | None = None      # confirms consequences on generated frames


def elements(scene: Scene) -> list[str]:
    """Every element id an action may target in ``scene`` (as rendered)."""
    from worldgen.html.render import render_html

    return sorted({unescape(v) for v in re.findall(r'data-vid="([^"]+)"', render_html(scene))})


def _ask(policy, content, max_tokens: int) -> str:
    from vagen.policy import SamplingParams

    chat = [{"role": "user", "content": content}]
    (gen,) = policy.generate([chat], SamplingParams(temperature=0.0, max_tokens=max_tokens, logprobs=False))
    return gen.text


def _json_block(text: str, opener: str):
    """The first JSON value starting with ``opener`` in ``text`` (models wrap JSON in prose)."""
    closer = {"[": "]", "{": "}"}[opener]
    start = text.find(opener)
    while start != -1:
        depth = 0
        for i in range(start, len(text)):
            depth += {opener: 1, closer: -1}.get(text[i], 0)
            if depth == 0:
                try:
                    return json.loads(text[start:i + 1])
                except json.JSONDecodeError:
                    break
        start = text.find(opener, start + 1)
    return None


def task_prompt(scene: Scene, infeasible: bool) -> str:
    kind = ("one task that CANNOT be done in this scene (it names something that is not there)" if infeasible
            else "one task a user could ask for that CAN be done in a few GUI actions in this scene")
    return (f"A desktop screen, as a JSON scene spec:\n{scene.model_dump_json()}\n"
            f"Write {kind}. Answer only JSON: {{\"instruction\": \"...\", \"feasible\": {str(not infeasible).lower()}}}")


def llm_task(policy, scene: Scene, infeasible: bool = False, max_tokens: int = 128) -> Task:
    data = _json_block(_ask(policy, task_prompt(scene, infeasible), max_tokens), "{")
    if not isinstance(data, dict) or not isinstance(data.get("instruction"), str) or not data["instruction"].strip():
        raise PlanRejected("task_unparsable")
    feasible = data.get("feasible", True)
    if not isinstance(feasible, bool):
        raise PlanRejected("task_unparsable", f"feasible={feasible!r}")
    return Task(instruction=data["instruction"].strip()[:300], template="llm", feasible=feasible)


def plan_prompt(scene: Scene, task: Task) -> str:
    return (f"A desktop screen, as a JSON scene spec:\n{scene.model_dump_json()}\n"
            f"Element ids an action may target: {json.dumps(elements(scene))}\n"
            f"Task: {task.instruction}\n"
            "Plan it as a JSON list of atomic actions, each {\"kind\": one of " + KINDS + ", \"target\": an element "
            "id (pointing actions; type into), \"text\" (type), \"keys\" (key/hotkey), \"dx\"/\"dy\" (drag: pixels; "
            "scroll: wheel clicks, dy > 0 = down), \"to\" (drag: the drop target id), \"consequence\": what changes "
            "on screen}. End with {\"kind\": \"done\"}, or answer [{\"kind\": \"fail\"}] if the task cannot be done.")


def llm_plan(policy, scene: Scene, task: Task, max_tokens: int = 512) -> list[tuple[Action, str, str]]:
    """``(action, consequence, intended)`` per step; raises :class:`PlanRejected`."""
    data = _json_block(_ask(policy, plan_prompt(scene, task), max_tokens), "[")
    if not isinstance(data, list) or not data or not all(isinstance(x, dict) for x in data):
        raise PlanRejected("plan_unparsable")
    known = set(elements(scene))
    steps: list[tuple[Action, str, str]] = []
    s = scene
    for i, item in enumerate(data):
        intended = str(item.pop("consequence", ""))[:300]
        try:
            action = Action.model_validate(item)
        except ValidationError as e:
            raise PlanRejected("plan_invalid_action", f"step {i}: {e.errors()[0]['msg']}") from None
        if action.kind in ("done", "fail"):
            if i != len(data) - 1:
                raise PlanRejected("plan_invalid_action", f"step {i}: {action.kind} before the end")
            if (action.kind == "fail") == task.feasible and task.template != "llm":
                raise PlanRejected("plan_wrong_outcome", f"{action.kind} for a task that is "
                                   f"{'feasible' if task.feasible else 'infeasible'}")
            steps.append((action, "the task is complete" if action.kind == "done" else
                          "nothing changes: the task cannot be done in this scene", intended))
            break
        if action.kind in POINTING and action.target not in known:
            raise PlanRejected("plan_unknown_target", f"step {i}: {action.target!r}")
        try:
            s, consequence = apply_action(s, action)
        except NoEffect as e:
            raise PlanRejected("plan_step_no_effect", f"step {i}: {e}") from None
        except (KeyError, ValueError, IndexError, StopIteration) as e:  # a target the spec cannot resolve
            raise PlanRejected("plan_invalid_action", f"step {i}: {e!r:.120}") from None
        known = set(elements(s))
        steps.append((action, consequence, intended))
    if not steps or steps[-1][0].kind not in ("done", "fail"):
        raise PlanRejected("plan_unfinished")
    if steps[-1][0].kind == "done" and task.template != "llm" and not task.goal(s):
        raise PlanRejected("plan_misses_goal")
    return steps


def _image_part(img) -> dict:
    return {"type": "image", "image": img.convert("RGB")}


def vlm_ground(policy, img, action: Action, consequence: str, max_tokens: int = 48):
    """A box ``(x, y, w, h)`` inside the frame for ``action``'s target, or None."""
    w, h = img.size
    text = (f"This is a {w}x{h} screenshot. Give the box of the element this action acts on: "
            f"{action.describe()} (so that {consequence}). Answer only [x, y, width, height] in screen pixels.")
    data = _json_block(_ask(policy, [_image_part(img), {"type": "text", "text": text}], max_tokens), "[")
    if not (isinstance(data, list) and len(data) == 4 and all(isinstance(v, (int, float)) for v in data)):
        return None
    x, y, bw, bh = (int(round(v)) for v in data)
    if bw < 2 or bh < 2 or x < 0 or y < 0 or x + bw > w or y + bh > h:
        return None
    return x, y, bw, bh


def vlm_judge(policy, before, after, consequence: str, max_tokens: int = 8) -> bool | None:
    """Does ``after`` show ``consequence`` happening to ``before``? None: no clear answer."""
    text = f"The first screenshot is before an action, the second after. Did this happen: {consequence}? Answer yes or no."
    answer = _ask(policy, [_image_part(before), _image_part(after), {"type": "text", "text": text}], max_tokens)
    word = re.match(r"\W*(yes|no)\b", answer.strip().lower())
    return None if word is None else word.group(1) == "yes"


__all__ = ["KINDS", "ModelRoles", "PlanRejected", "elements", "llm_plan", "llm_task", "plan_prompt", "task_prompt",
           "vlm_ground", "vlm_judge"]
