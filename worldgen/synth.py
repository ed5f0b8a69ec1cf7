"""`vagen synth gui`: synthetic GUI trajectories from a scene spec, a task and a plan.

Per scene (``sample_scene(seed * 100_003 + i)``): a task (``make_task``), the template plan
(``plan``), then for every step: the exact render of the current spec (``HtmlWorld.capture``:
the target's box and hit test from the DOM — grounding), the spec transition
(``apply_action``), the next frame, and the transition filters. A kept step becomes one
sample; a rejected one keeps its reason.

Backends: ``html`` — frames are the Chromium renders of the specs, so every step is exact
and verified against the DOM; ``diffusion`` — the first frame is the HTML render (or, with
``DiffusionConfig.initial="text2image"``, a text-to-image generation from the spec's
description), each next frame is an image edit of the current one by a diffusers pipeline
(``worldgen.diffusion``), given the planned action and consequence; the box comes from the
spec's DOM (the planner's target) — for generated first frames from the change mask's box —
and the change mask is recorded (``metrics.change_bbox``); pixel filters judge the edit.

Filters (each rejection counted by reason in ``report.json``):

* ``target_not_hit`` — the target's box centre does not reach the element (covered by another
  window, off screen): a click there would do something else;
* ``no_box`` — a pointing action whose target is not on screen at all;
* ``blank_frame`` — a frame that is (nearly) uniform or of the wrong size;
* ``no_visible_change`` — the transition changed the spec but not one pixel;
* ``consequence_unverified`` — (html) the DOM after the step does not show the planned state
  (open windows, focus, the typed-into element);
* ``change_not_localized`` — (diffusion) most changed pixels are far from the target;
* ``rest_not_preserved`` — (diffusion) SSIM outside the target's neighbourhood below 0.85;
* ``no_grounding`` — (text-to-image first frames) a pointing step whose edit changed nothing
  that could locate it, or a drag onto a drop target (not locatable in generated pixels);
* ``after_rejected_step`` — every later step of a trajectory with a rejected step (its
  frames and history build on a transition that was not kept).
* ``grounder_failed`` / ``judge_rejected`` / ``judge_unparsable`` — (diffusion, with a VLM
  grounder / judge: ``ModelRoles``) no usable box for a generated frame; the judge says the
  next frame does not show the consequence, or gives no clear yes/no.

Tasks and plans come from the templates or from models (``ModelRoles.tasks`` / ``.planner``:
any policy spec, ``worldgen.llm``); a model's task or plan that fails its checks is counted in
``report.json["plans_rejected"]`` by reason and written to ``rejected.jsonl`` (``step: null``).

Output (``DIR``): ``samples.jsonl`` (fields ``instruction``, ``history``, ``screenshot``,
``action`` (pyautogui), ``action_computer13``, ``action_vid``, ``action_spec`` (the planner's
:class:`~worldgen.actions.Action`, replayable), ``bbox`` [x, y, w, h], for drags ``to_vid`` / ``to_bbox``,
``next_screenshot``, ``consequence``, ``scene_id``, ``step``, ``platform``, ``task``,
``feasible``, ``metrics``, ``provenance``, and ``messages``: the step as a chat that `vagen sft
data=DIR` trains on, with a downscaled screenshot ``frames/small/*.png``), ``frames/*.png``,
``scenes/*.json`` (the specs), ``rejected.jsonl``, ``report.json`` and ``index.html`` (a static
viewer of the trajectories, rejected steps with their reasons).
``datasets.load_dataset("json", data_files=DIR/samples.jsonl)`` reads it.
"""

from __future__ import annotations

import io
import json
import random
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

from worldgen import filters as F
from worldgen.actions import POINTING, apply_action, to_computer13, to_pyautogui
from worldgen.diffusion import DiffusionConfig, describe_scene
from worldgen.html.world import Frame, HtmlWorld
from worldgen.llm import ModelRoles, PlanRejected, llm_plan, llm_task, vlm_ground, vlm_judge
from worldgen.scene import SceneDistribution, sample_scene
from worldgen.tasks import make_task, plan

#: Generated (text-to-image) first frames: a pointing step's change-mask box may cover at most
#: this share of the screen — a larger change does not say where the action acted.
MASK_BOX_MAX = 0.25


def frame_ok(frame: Frame) -> bool:
    return F.frame_ok(frame.image(), (frame.width, frame.height))


def changed(a: Frame, b: Frame) -> bool:
    return a.png != b.png and bool((np.asarray(a.image()) != np.asarray(b.image())).any())


def _png(img) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


SYSTEM_PROMPT = ("You are a GUI agent. You see a screenshot of a {w}x{h} screen. Answer with one action: "
                 "pyautogui.click(x, y), pyautogui.doubleClick(x, y), pyautogui.rightClick(x, y), "
                 "pyautogui.write('text'), pyautogui.press('key'), pyautogui.hotkey(...), "
                 "pyautogui.scroll(clicks, x=x, y=y), pyautogui.moveTo(x, y); pyautogui.dragTo(x, y), DONE or FAIL. "
                 "Coordinates are screen pixels.")


def sft_messages(record: dict, image: str, width: int, height: int) -> list[dict]:
    """One step as a chat for `vagen sft`: system, user (screenshot + task + history), assistant (action)."""
    history = "; ".join(record["history"][-4:]) or "none"
    return [{"role": "system", "content": SYSTEM_PROMPT.format(w=width, h=height)},
            {"role": "user", "content": [{"type": "image", "image": image},
                                         {"type": "text", "text": f"Task: {record['instruction']}\n"
                                                                  f"Previous actions: {history}"}]},
            {"role": "assistant", "content": record["action"]}]


def synth(n: int, out: str | Path, seed: int = 0, backend: str = "html", dist: SceneDistribution | None = None,
          infeasible_p: float = 0.05, diffusion: DiffusionConfig | None = None, sft_image_size: int = 448,
          progress: Callable[[int], None] | None = None, models: ModelRoles | None = None) -> dict:
    """Write at least ``n`` kept step samples (whole trajectories) to ``out``; return the report.
    ``models``: policy specs for an LLM task writer / planner and a VLM grounder / judge."""
    if backend not in ("html", "diffusion"):
        raise ValueError(f"backend must be html or diffusion, got {backend!r}")
    models = models or ModelRoles()
    if models.tasks and not models.planner:
        raise ValueError("LLM-written tasks need an LLM planner (the templates only plan template tasks)")
    if backend == "html" and (models.grounder or models.judge):
        raise ValueError("a VLM grounder / judge checks generated frames: use it with --backend diffusion")
    roles = _policies(models)
    out = Path(out)
    (out / "frames").mkdir(parents=True, exist_ok=True)
    (out / "scenes").mkdir(exist_ok=True)
    if sft_image_size:
        (out / "frames" / "small").mkdir(exist_ok=True)
    kept, reasons, tasks, plan_rejected = 0, Counter(), Counter(), Counter()
    t0 = time.perf_counter()
    scenes = 0
    dw = None
    if backend == "diffusion":
        from worldgen.diffusion import DiffusionWorld

        dw = DiffusionWorld(diffusion)
    generated = dw is not None and dw.t2i is not None
    with HtmlWorld() as world, open(out / "samples.jsonl", "w") as fs, open(out / "rejected.jsonl", "w") as fr:
        i = 0
        while kept < n:
            scene_seed = seed * 100_003 + i
            scene = sample_scene(scene_seed, dist, scene_id=f"s{seed}-{i}")
            rng = random.Random(seed * 7_919 + i)
            i += 1
            scenes += 1
            try:
                task = (llm_task(roles["tasks"], scene, infeasible=rng.random() < infeasible_p) if "tasks" in roles
                        else make_task(scene, rng, infeasible_p))
                steps = (llm_plan(roles["planner"], scene, task) if "planner" in roles
                         else [(a, c, "") for a, c in plan(scene, task)])
            except PlanRejected as e:  # the model's task or plan failed a check: nothing to render
                plan_rejected[e.reason] += 1
                fr.write(json.dumps({"scene_id": scene.scene_id, "step": None, "reason": e.reason,
                                     "detail": str(e)[:300], "planner": models.planner}) + "\n")
                if kept == 0 and scenes >= max(20, n):
                    break
                continue
            tasks[task.template] += 1
            (out / "scenes" / f"{scene.scene_id}.json").write_text(scene.to_json())
            dom = world.capture(scene)          # the exact render of the spec: boxes (and html frames)
            img, shot = dom.image(), f"frames/{scene.scene_id}-0.png"
            if generated:  # a text-to-image first frame: no DOM behind its pixels
                img = dw.generate(describe_scene(scene), (scene.width, scene.height), seed=scene_seed)
                (out / shot).write_bytes(_png(img))
            else:
                (out / shot).write_bytes(dom.png)
            history: list[str] = []
            tainted = False  # a rejected step: the rest of the trajectory builds on a frame we did not keep
            for k, (action, consequence, intended) in enumerate(steps):
                box = dom.box(action.target) if action.target and not generated else None
                vlm_box = "grounder" in roles and action.kind in POINTING and (generated or k > 0)
                if vlm_box:  # a generated frame: the VLM finds the target in its pixels
                    box = vlm_ground(roles["grounder"], img, action, consequence)
                to_box = dom.box(action.to) if action.to and not generated else None
                reaches = dom.reachable if action.kind == "scroll" else dom.clickable  # a wheel acts on the container
                why = None
                if tainted:
                    why = "after_rejected_step"
                elif vlm_box and box is None:
                    why = "grounder_failed"
                elif generated and action.kind == "drag" and action.to:
                    why = "no_grounding"  # a drop target cannot be found in generated pixels
                elif not generated and action.kind in POINTING and (box is None or (action.to and to_box is None)):
                    why = "no_box"
                elif not generated and action.kind in POINTING and not (
                        reaches(action.target) and (not action.to or dom.clickable(action.to))):
                    why = "target_not_hit"
                elif not F.frame_ok(img, (scene.width, scene.height)):
                    why = "blank_frame"
                nxt_scene, nxt_dom, nxt_img, nxt_shot = scene, dom, img, shot
                metrics: dict = {}
                if action.kind not in ("done", "fail"):  # (a planned wait has an effect: a toast times out)
                    nxt_scene, _ = apply_action(scene, action)
                    nxt_dom = world.capture(nxt_scene)
                    nxt_shot = f"frames/{scene.scene_id}-{k + 1}.png"
                    if dw is None:
                        nxt_img = nxt_dom.image()
                        (out / nxt_shot).write_bytes(nxt_dom.png)
                    else:
                        nxt_img = dw.edit(img, f"{action.describe()}: {consequence}", seed=scene_seed * 101 + k)
                        (out / nxt_shot).write_bytes(_png(nxt_img))
                    if dw is None:  # exact frames: judged against the DOM, no pixel statistics needed
                        if why is None:
                            why = _reject_html(action, nxt_scene, nxt_dom, img, nxt_img)
                    else:
                        mask = F.change_mask(img, nxt_img)
                        by_mask = generated and action.kind in POINTING and not vlm_box
                        if by_mask:  # grounded by where the edit changed the screen
                            box = F.mask_bbox(mask)
                        metrics = {"changed_px": int(mask.sum()), "change_bbox": F.mask_bbox(mask),
                                   "change_localized": F.change_localized(mask, box) if not by_mask else
                                   box is not None and box[2] * box[3] <= MASK_BOX_MAX * scene.width * scene.height,
                                   "ssim_outside": round(F.ssim_outside(img, nxt_img, box), 4)}
                        if why is None:
                            why = _reject_diffusion(nxt_scene, nxt_img, mask, metrics, by_mask and box is None)
                        if why is None and "judge" in roles:  # the VLM confirms the consequence
                            verdict = vlm_judge(roles["judge"], img, nxt_img, consequence)
                            metrics["judge"] = verdict
                            why = None if verdict else ("judge_rejected" if verdict is False else "judge_unparsable")
                if intended:
                    metrics["intended"] = intended
                record = {"instruction": task.instruction, "history": list(history), "screenshot": shot,
                          "action": to_pyautogui(action, box, to_box),
                          "action_computer13": to_computer13(action, box, to_box),
                          "action_vid": action.target, "action_kind": action.kind,
                          "action_spec": action.model_dump(exclude_defaults=True),
                          "bbox": list(box) if box else None, "next_screenshot": nxt_shot,
                          **({"to_vid": action.to, "to_bbox": list(to_box) if to_box else None} if action.to else {}),
                          "consequence": consequence, "scene_id": scene.scene_id, "step": k,
                          "platform": scene.platform, "screen": [scene.width, scene.height],
                          "task": task.template, "feasible": task.feasible,
                          "metrics": metrics,
                          "provenance": {"backend": backend, "planner": models.planner or "template",
                                         "tasks": models.tasks or "template", "seed": seed,
                                         "scene_seed": scene_seed, "verified": why is None and dw is None,
                                         "initial_frame": "text2image" if generated else "html",
                                         "grounding": "vlm" if vlm_box else ("change_mask" if generated else "dom"),
                                         **({"judge": models.judge} if models.judge and dw else {}),
                                         **({"pipeline": dw.cfg.pipeline, "model": dw.cfg.model_path} if dw else {}),
                                         **({"t2i_pipeline": dw.cfg.t2i_pipeline, "t2i_model": dw.cfg.t2i_model_path}
                                            if generated else {})}}
                if why is None:
                    image = shot
                    if sft_image_size:  # a downscaled copy for the chat (coordinates stay in screen pixels)
                        image = f"frames/small/{Path(shot).name}"
                        if not (out / image).exists():
                            small = img.copy()
                            small.thumbnail((sft_image_size, sft_image_size))
                            small.save(out / image)
                    record["messages"] = sft_messages(record, image, scene.width, scene.height)
                    fs.write(json.dumps(record) + "\n")
                    kept += 1
                    if progress:
                        progress(1)
                else:
                    reasons[why] += 1
                    tainted = True
                    fr.write(json.dumps({**record, "reason": why}) + "\n")
                history.append(action.describe())
                scene, dom, img, shot = nxt_scene, nxt_dom, nxt_img, nxt_shot
            if (dw is not None or models.planner) and kept == 0 and scenes >= max(20, n):
                break  # a world model whose every step is rejected: stop and report, never loop forever
    wall = time.perf_counter() - t0
    total = kept + sum(reasons.values())
    for p in {id(p): p for p in roles.values()}.values():  # each loaded model once
        p.close()
    report = {"backend": backend, "seed": seed, "scenes": scenes, "steps": total, "kept": kept,
              "kept_fraction": kept / max(1, total), "rejected": dict(reasons), "tasks": dict(tasks),
              "plans_rejected": dict(plan_rejected), "models": {k: v for k, v in vars(models).items() if v},
              "wall_s": round(wall, 2), "steps_per_min": round(60 * total / max(wall, 1e-9), 1)}
    (out / "report.json").write_text(json.dumps(report, indent=2))
    from worldgen.viewer import write_viewer

    write_viewer(out)
    return report


def _policies(models: ModelRoles) -> dict:
    """One policy per distinct spec (a model that plans and judges is loaded once)."""
    from vagen.policy import make_policy

    built: dict[str, object] = {}
    for spec in {v for v in vars(models).values() if v}:
        built[spec] = make_policy(spec)
    return {role: built[spec] for role, spec in vars(models).items() if spec}


def _reject_html(action, scene, dom: Frame, before, img) -> str | None:
    """The first filter an exact (html) transition fails, or None. A raise or a taskbar
    highlight may legitimately change pixels far from the target, so locality is not asked:
    the DOM must show the planned state instead."""
    if not F.frame_ok(img, (scene.width, scene.height)):
        return "blank_frame"
    if not (np.asarray(before) != np.asarray(img)).any():  # exact frames: any pixel counts
        return "no_visible_change"
    return None if _dom_confirms(action, scene, dom) else "consequence_unverified"


def _reject_diffusion(scene, img, mask, metrics: dict, ungrounded: bool = False) -> str | None:
    """The first pixel filter an image-edit transition fails, or None: the edit must change
    something, near the target (for generated first frames: in a small region, which grounds
    the action), and leave the rest of the screen alone."""
    if not F.frame_ok(img, (scene.width, scene.height)):
        return "blank_frame"
    if not mask.any():
        return "no_visible_change"
    if ungrounded:
        return "no_grounding"
    if not metrics["change_localized"]:
        return "change_not_localized"
    if metrics["ssim_outside"] < 0.85:
        return "rest_not_preserved"
    return None


def _dom_confirms(action, scene, frame: Frame) -> bool:
    """The next frame's DOM shows what the spec says: every window of the spec that is open has
    its frame element on screen, closed ones are gone, a typed/selected target exists, dialogs
    and the context menu are there exactly when the spec has them, desktop icons match, a
    dragged window's frame sits where the spec puts it, and a scrolled sheet shows its new
    first row."""
    open_ids = {w.id for w in scene.windows if not w.minimized}
    on_screen = {k for k in frame.boxes if k.startswith("w") and "." not in k}
    if on_screen != open_ids:
        return False
    if scene.focused and not frame.boxes.get(f"taskbar.{scene.focused}"):
        return False
    if {k for k in frame.boxes if k.startswith("d") and "." not in k} != {d.id for d in scene.dialogs}:
        return False
    if ("menu" in frame.boxes) != (scene.menu is not None):
        return False
    if {k.split(".", 1)[1] for k in frame.boxes if k.startswith("desktop.")} != {i.name for i in scene.desktop}:
        return False
    if sum(k.startswith("toast.") for k in frame.boxes) != len(scene.toasts):
        return False
    head = (action.target or "").split(".")[0]
    w = scene.window(head) if head.startswith("w") else None
    if action.kind == "drag" and w is not None and action.target.endswith(".titlebar"):
        box = frame.box(w.id)
        return box is not None and (box[0], box[1]) == (w.x, w.y)
    if action.kind == "scroll" and w is not None and w.app == "spreadsheet":
        first = frame.box(f"{w.id}.cell.A{w.scroll_row + 1}")
        return first is not None and f"{w.id}.cell.A{w.scroll_row}" not in frame.boxes
    if action.kind == "type" and action.target and head in open_ids:
        return action.target in frame.boxes
    return True


__all__ = ["changed", "frame_ok", "synth"]
