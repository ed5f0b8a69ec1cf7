"""`vagen synth gui --backend html` end to end in headless Chromium: samples with the published
fields, PNG frames, every kept pointing step's box reaching the targeted element (re-checked
independently from the DOM by replaying the scene), filter rejections with their reasons."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from worldgen.actions import Action, apply_action, point_in
from worldgen.html.world import HtmlWorld
from worldgen.scene import DesktopIcon, Scene, Window
from worldgen.synth import changed, frame_ok

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(600)]
VAGEN = str(Path(sys.executable).with_name("vagen"))
FIELDS = {"instruction", "history", "screenshot", "action", "action_computer13", "bbox", "next_screenshot",
          "consequence", "scene_id", "step", "platform", "provenance"}


def test_vagen_synth_gui_html_writes_grounded_verified_steps(tmp_path):
    out = tmp_path / "synth"
    proc = subprocess.run([VAGEN, "synth", "gui", "--n", "40", "--backend", "html", "--seed", "5", "--out", str(out)],
                          capture_output=True, text=True, timeout=500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert report["kept"] == len(rows) >= 40 and report["steps_per_min"] > 0
    assert json.loads((out / "report.json").read_text()) == report
    for r in rows:
        assert FIELDS <= set(r)
        for key in ("screenshot", "next_screenshot"):
            img = Image.open(out / r[key])
            assert img.size[0] >= 640 and img.format == "PNG"
    # Replay every trajectory from its saved scene spec and check each kept pointing step from the DOM.
    by_scene: dict[str, list[dict]] = {}
    for r in rows + [json.loads(x) for x in (out / "rejected.jsonl").read_text().splitlines()]:
        by_scene.setdefault(r["scene_id"], []).append(r)
    checked = 0
    with HtmlWorld() as world:
        for sid, steps in by_scene.items():
            scene = Scene.from_json((out / "scenes" / f"{sid}.json").read_text())
            for r in sorted(steps, key=lambda x: x["step"]):
                action = _action(r)
                if r["bbox"] and r["action_kind"] in ("click", "double_click", "right_click", "drag", "scroll") \
                        and "reason" not in r:
                    x, y = point_in(tuple(r["bbox"]))
                    (vid,) = world.vids_at(scene, [(x, y)])
                    if r["action_kind"] == "scroll":  # the wheel acts on the grid; its centre is on a cell
                        assert vid == r["action_vid"] or vid.startswith(r["action_vid"].split(".")[0] + ".cell."), r
                    else:
                        assert vid == r["action_vid"], r
                    if r.get("to_bbox"):
                        assert world.vids_at(scene, [point_in(tuple(r["to_bbox"]))]) == [r["to_vid"]], r
                    bx, by, bw, bh = r["bbox"]
                    assert bx <= x < bx + bw and by <= y < by + bh
                    checked += 1
                if action.kind not in ("done", "fail"):
                    scene, said = apply_action(scene, action)
                    assert said == r["consequence"]
    assert checked >= 10
    import datasets  # the published format: the Hugging Face json loader reads it as it is

    ds = datasets.load_dataset("json", data_files=str(out / "samples.jsonl"), split="train",
                               cache_dir=str(tmp_path / "hf-cache"))
    assert ds.num_rows == len(rows) and FIELDS <= set(ds.column_names)
    assert [r["bbox"] for r in rows] == ds["bbox"] and all((out / p).is_file() for p in ds["screenshot"])
    page = (out / "index.html").read_text()  # the static viewer lists every trajectory
    assert all(sid in page for sid in by_scene) and "<script" not in page
    # every sample is also a chat that `vagen sft` reads (downscaled screenshot, the action as the answer)
    from vagen.policy.hf import HFPolicy
    from vagen.rollout import ContextBuilder
    from vagen.train.sft import load_samples

    builder = ContextBuilder(HFPolicy("tiny", device="cpu").processor, history="none")
    samples = load_samples(out, builder, max_length=4096)
    assert len(samples) == len(rows) and all(r["messages"][-1]["content"] == r["action"] for r in rows)


def _action(r: dict) -> Action:
    return Action.model_validate(r["action_spec"])


def test_filters_reject_covered_targets_blank_frames_and_no_change():
    icon_under_window = Scene(scene_id="cover", platform="windows", desktop=[DesktopIcon(name="Work")],
                              windows=[Window(id="w0", app="text_editor", title="T", x=0, y=0, w=900, h=600, text="")],
                              focused="w0")
    with HtmlWorld() as world:
        frame = world.capture(icon_under_window)
        assert frame.box("desktop.Work") is not None and not frame.clickable("desktop.Work")  # covered
        assert frame.clickable("w0.close") and frame_ok(frame)
        same = world.capture(icon_under_window)
        assert not changed(frame, same)
        moved, _ = apply_action(icon_under_window, Action(kind="click", target="w0.max"))
        assert changed(frame, world.capture(moved))
    blank = type(frame)(png=_png_uniform(frame.width, frame.height), width=frame.width, height=frame.height)
    assert not frame_ok(blank)


def _png_uniform(w: int, h: int) -> bytes:
    import io

    buf = io.BytesIO()
    Image.new("RGB", (w, h), (40, 40, 40)).save(buf, format="PNG")
    return buf.getvalue()


def _scene_for_every_new_kind() -> Scene:
    from worldgen.scene import FileItem, Toast

    return Scene(scene_id="kinds", platform="ubuntu", focused="w2", toasts=[Toast(text="Download complete")],
                 desktop=[DesktopIcon(name="Music"), DesktopIcon(name="Notes", kind="file")],
                 windows=[Window(id="w0", app="spreadsheet", title="Calc", x=700, y=60, w=560, h=520,
                                 cells={"A1": "1", "A20": "20"}, selected_cell="A1"),
                          Window(id="w1", app="file_manager", title="Files", x=300, y=320, w=600, h=380,
                                 path="/home/user/Work", files=[FileItem(name="a.txt"), FileItem(name="Old", kind="folder")]),
                          Window(id="w2", app="text_editor", title="Untitled - Text Editor", x=420, y=90, w=420, h=200,
                                 text="hi")])


@pytest.mark.parametrize("template", ["scroll_cell", "move_window", "move_file", "trash_icon", "save_as",
                                      "wait_toast"])
def test_scroll_drag_context_menu_and_hotkey_transitions_render_exactly(template):
    """Each new action kind, planned on a fixed scene: the target (and a drag's drop target) is
    reached at its box centre in Chromium, the next frame differs and its DOM shows the planned
    state (window position, first visible row, menu, dialog, icons), so no filter rejects it."""
    import random

    from worldgen import tasks as T
    from worldgen.synth import _reject_html

    scene = _scene_for_every_new_kind()
    make = {"scroll_cell": T._scroll_cell, "move_window": T._move_window, "move_file": T._move_file,
            "trash_icon": T._trash_icon, "save_as": T._save_as, "wait_toast": T._wait_toast}[template]
    task = next(t for seed in range(50) if (t := make(scene, random.Random(seed))) is not None)
    steps = T.plan(scene, task)
    kinds = [a.kind for a, _ in steps]
    assert {"scroll_cell": "scroll", "move_window": "drag", "move_file": "drag", "trash_icon": "right_click",
            "save_as": "hotkey", "wait_toast": "wait"}[template] in kinds
    with HtmlWorld() as world:
        s, frame = scene, world.capture(scene)
        for action, consequence in steps[:-1]:
            if action.target and not action.target.startswith("@"):
                reach = frame.reachable if action.kind == "scroll" else frame.clickable
                assert reach(action.target), (template, action)
            if action.to:
                assert frame.clickable(action.to)
            nxt, said = apply_action(s, action)
            assert said == consequence
            nframe = world.capture(nxt)
            assert _reject_html(action, nxt, nframe, frame.image(), nframe.image()) is None, (template, action)
            s, frame = nxt, nframe
    assert task.goal(s)


def test_llm_planner_plans_are_checked_by_simulation_and_the_dom(tmp_path):
    """A planner model through a policy spec: a right one's plans are kept and DOM-verified like
    the templates'; a sloppy one's are rejected with the reason (unknown element, no end,
    no JSON); the tiny random model's garbage never crashes a run (every plan rejected)."""
    import os

    fx = "scripted:tests.worldgen.llm_fixtures"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}  # the fixtures' package
    good = tmp_path / "good"
    proc = subprocess.run([VAGEN, "synth", "gui", "--n", "8", "--seed", "9", "--planner-model",
                           f"{fx}:reference_planner", "--out", str(good)], capture_output=True, text=True, timeout=500, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["kept"] >= 8 and report["plans_rejected"] == {}
    rows = [json.loads(x) for x in (good / "samples.jsonl").read_text().splitlines()]
    assert all(r["provenance"]["planner"] == f"{fx}:reference_planner" for r in rows)
    assert any(r["metrics"].get("intended") == r["consequence"] for r in rows)

    sloppy = tmp_path / "sloppy"
    proc = subprocess.run([VAGEN, "synth", "gui", "--n", "2", "--seed", "9", "--planner-model",
                           f"{fx}:sloppy_planner", "--out", str(sloppy)], capture_output=True, text=True, timeout=500, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["kept"] == 0 and set(report["plans_rejected"]) == {"plan_unknown_target", "plan_unfinished",
                                                                     "plan_unparsable"}
    assert sum(report["plans_rejected"].values()) == report["scenes"] >= 20  # gave up after 20 scenes, reported
    rejected = [json.loads(x) for x in (sloppy / "rejected.jsonl").read_text().splitlines()]
    assert all(r["step"] is None and r["reason"].startswith("plan_") for r in rejected)

    tiny = tmp_path / "tiny"
    proc = subprocess.run([VAGEN, "synth", "gui", "--n", "1", "--seed", "9", "--task-model", "tiny", "--planner-model",
                           "tiny", "--out", str(tiny)], capture_output=True, text=True, timeout=500, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["kept"] == 0 and set(report["plans_rejected"]) <= {"task_unparsable", "plan_unparsable",
                                                                     "plan_invalid_action", "plan_unfinished"}
    bad = subprocess.run([VAGEN, "synth", "gui", "--n", "1", "--judge-model", "tiny", "--out", str(tmp_path / "x")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "diffusion" in bad.stderr
