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
                if r["bbox"] and r["action_kind"] in ("click", "double_click") and "reason" not in r:
                    x, y = point_in(tuple(r["bbox"]))
                    assert world.vids_at(scene, [(x, y)]) == [r["action_vid"]], r
                    bx, by, bw, bh = r["bbox"]
                    assert bx <= x < bx + bw and by <= y < by + bh
                    checked += 1
                if action.kind not in ("done", "fail", "wait"):
                    scene, said = apply_action(scene, action)
                    assert said == r["consequence"]
    assert checked >= 10
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
    kind = r["action_kind"]
    text = r["action_computer13"]["parameters"].get("text") if kind == "type" else None
    return Action(kind=kind, target=r["action_vid"], text=text)


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
