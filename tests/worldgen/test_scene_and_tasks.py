"""Scene specs (schema, sampling, JSON round trip, invalid combinations), exact transitions and
the template planner (every plan reaches its goal, by simulation), action spaces."""

from __future__ import annotations

import random

import pytest
from pydantic import ValidationError

from worldgen.actions import Action, NoEffect, apply_action, to_computer13, to_pyautogui
from worldgen.scene import Scene, SceneDistribution, Window, sample_scene
from worldgen.tasks import make_task, plan


def test_sampling_is_seeded_valid_and_round_trips_through_json():
    seen_platforms = set()
    for seed in range(200):
        scene = sample_scene(seed)
        assert sample_scene(seed) == scene
        assert Scene.from_json(scene.to_json()) == scene
        seen_platforms.add(scene.platform)
        assert scene.focused is None or not scene.window(scene.focused).minimized
    assert seen_platforms == {"ubuntu", "windows", "macos", "chrome"}
    assert sample_scene(1) != sample_scene(2)
    only = SceneDistribution(platforms={"chrome": 1}, apps={"browser": 1, "terminal": 5}, windows=(2, 2))
    for seed in range(20):
        s = sample_scene(seed, only)
        assert s.platform == "chrome" and {w.app for w in s.windows} == {"browser"}  # no terminal on chrome


@pytest.mark.parametrize("change, reason", [
    (lambda d: d.update(platform="chrome", windows=[{**d["windows"][0], "app": "terminal", "text": "$"}]),
     "chrome has no terminal"),
    (lambda d: d.update(focused="w9"), "does not exist"),
    (lambda d: d["windows"][0].update(x=5000), "off the"),
    (lambda d: d.update(windows=d["windows"] * 2), "duplicate window ids"),
    (lambda d: d.update(dialogs=[{"id": "d0", "window": "w7", "title": "x"}]), "not an open window"),
    (lambda d: d.update(version=99), "schema version"),
    (lambda d: d["windows"][0].update(tabs=[], app="browser"), "at least one tab"),
    (lambda d: d["appearance"].update(accent="red"), "pattern"),
    (lambda d: d.update(surprise=1), "Extra inputs"),
])
def test_invalid_scenes_are_rejected_with_the_reason(change, reason):
    base = Scene(scene_id="t", platform="ubuntu", windows=[Window(id="w0", app="text_editor", title="T", x=10, y=40,
                                                                  w=500, h=300, text="")], focused="w0")
    data = base.model_dump()
    change(data)
    with pytest.raises(ValidationError, match=reason):
        Scene.model_validate(data)


def test_every_template_plan_reaches_its_goal_and_every_step_has_an_effect():
    templates = set()
    for seed in range(600):
        scene = sample_scene(seed)
        task = make_task(scene, random.Random(seed), infeasible_p=0.1)
        steps = plan(scene, task)  # raises if the goal is not reached
        templates.add(task.template)
        s = scene
        for action, consequence in steps[:-1]:
            s, said = apply_action(s, action)
            assert said == consequence
        assert task.goal(s)
        assert steps[-1][0].kind == ("done" if task.feasible else "fail")
    assert {"setting", "tab", "close", "minimize", "open_folder", "type_text", "cell", "dialog", "scroll_cell",
            "move_window", "move_file", "trash_icon", "save_as", "dialog_key", "wait_toast"} <= templates
    assert any(t.startswith("infeasible_") for t in templates)


def test_transitions_are_exact_and_refuse_what_would_change_nothing():
    scene = Scene(scene_id="t", platform="windows", focused="w1", windows=[
        Window(id="w0", app="settings", title="Settings", x=20, y=40, w=500, h=400,
               settings=[{"key": "wifi", "label": "Wi-Fi", "on": False}]),
        Window(id="w1", app="browser", title="A - Edge", x=100, y=80, w=600, h=400,
               tabs=[{"title": "A", "url": "https://a/"}, {"title": "B", "url": "https://b/"}])])
    s2, said = apply_action(scene, Action(kind="click", target="w0.setting.wifi"))
    assert s2.window("w0").settings[0].on and s2.focused == "w0" and s2.windows[-1].id == "w0" and "turns on" in said
    assert not scene.window("w0").settings[0].on  # never mutated in place
    s3, _ = apply_action(s2, Action(kind="click", target="w1.tab.1"))
    assert s3.window("w1").active_tab == 1 and s3.window("w1").title == "B - Edge"
    with pytest.raises(NoEffect):
        apply_action(s3, Action(kind="click", target="w1.tab.1"))
    s4, _ = apply_action(s3, Action(kind="click", target="taskbar.w1"))  # focused -> minimise
    assert s4.window("w1").minimized and s4.focused == "w0"
    s5 = Scene.model_validate({**s4.model_dump(), "dialogs": [{"id": "d0", "window": "w0", "title": "Sure?",
                                                             "buttons": ["No", "Yes"]}]})
    with pytest.raises(NoEffect, match="dialog is open"):
        apply_action(s5, Action(kind="click", target="w0.setting.wifi"))
    s6, said = apply_action(s5, Action(kind="click", target="d0.button.Yes"))
    assert not s6.dialogs and "Yes" in said
    with pytest.raises(NoEffect):
        apply_action(scene, Action(kind="done"))


def test_actions_in_both_osworld_action_spaces_point_inside_the_box():
    box = (100, 200, 40, 20)
    assert to_pyautogui(Action(kind="click", target="x"), box) == "pyautogui.click(120, 210)"
    assert to_pyautogui(Action(kind="double_click", target="x"), box) == "pyautogui.doubleClick(120, 210)"
    assert to_computer13(Action(kind="click", target="x"), box) == {"action_type": "CLICK",
                                                                      "parameters": {"x": 120, "y": 210}}
    assert to_computer13(Action(kind="type", text="hi"), None)["parameters"]["text"] == "hi"
    assert to_pyautogui(Action(kind="hotkey", keys=["ctrl", "s"]), None) == "pyautogui.hotkey('ctrl', 's')"
    assert to_pyautogui(Action(kind="fail"), None) == "FAIL"
    assert to_pyautogui(Action(kind="right_click", target="x"), box) == "pyautogui.rightClick(120, 210)"
    drag = Action(kind="drag", target="x", to="y")
    assert to_pyautogui(drag, box, (300, 300, 20, 20)) == \
        "pyautogui.moveTo(120, 210); pyautogui.dragTo(310, 310, duration=0.5, button='left')"
    assert to_computer13(drag, box, (300, 300, 20, 20)) == {"action_type": "DRAG_TO", "parameters": {"x": 310, "y": 310}}
    down = Action(kind="scroll", target="g", dy=4)  # 4 wheel clicks down: negative in pyautogui / OSWorld
    assert to_pyautogui(down, box) == "pyautogui.scroll(-4, x=120, y=210)"
    assert to_computer13(down, box) == {"action_type": "SCROLL", "parameters": {"dx": 0, "dy": -4}}


def test_scroll_drag_menu_and_keyboard_transitions():
    from worldgen.scene import DesktopIcon, FileItem

    scene = Scene(scene_id="k", platform="macos", focused="w1", desktop=[DesktopIcon(name="Music")],
                  windows=[Window(id="w0", app="spreadsheet", title="Numbers", x=40, y=60, w=500, h=400),
                           Window(id="w1", app="file_manager", title="Work - Finder", x=300, y=100, w=500, h=300,
                                  path="/home/user/Work", files=[FileItem(name="a.txt"), FileItem(name="B", kind="folder")])])
    with pytest.raises(NoEffect, match="not on screen"):   # row 20 is below the 12 visible rows
        apply_action(scene, Action(kind="click", target="w0.cell.B20"))
    with pytest.raises(NoEffect, match="cannot scroll further up"):
        apply_action(scene, Action(kind="scroll", target="w0.grid", dy=-1))
    s, said = apply_action(scene, Action(kind="scroll", target="w0.grid", dy=100))  # clamped at the last page
    assert s.window("w0").scroll_row == 28 and said.endswith("rows 29-40")
    s, _ = apply_action(s, Action(kind="click", target="w0.cell.B30"))
    assert s.window("w0").selected_cell == "B30"
    s, said = apply_action(scene, Action(kind="drag", target="w1.titlebar", dx=-5000, dy=0))  # kept reachable
    assert s.window("w1").x == 40 - 500 + 80 and "px left" in said and s.focused == "w1"
    s, said = apply_action(scene, Action(kind="drag", target="w1.file.a.txt", to="w1.file.B"))
    assert [f.name for f in s.window("w1").files] == ["B"] and "into the 'B' folder" in said
    with pytest.raises(NoEffect):
        apply_action(scene, Action(kind="drag", target="w1.file.B", to="w1.file.a.txt"))  # not onto a file
    m, said = apply_action(scene, Action(kind="right_click", target="desktop.Music"))
    assert m.menu is not None and m.menu.items == ["Open", "Move to Trash"] and "context menu" in said
    closed, said = apply_action(m, Action(kind="click", target="w1.titlebar"))  # a click elsewhere closes it
    assert closed.menu is None and said == "the context menu closes"
    esc, _ = apply_action(m, Action(kind="key", keys=["escape"]))
    assert esc.menu is None
    opened, said = apply_action(m, Action(kind="click", target="menu.Open"))
    assert opened.menu is None and opened.windows[-1].path == "/home/user/Desktop/Music"
    trashed, _ = apply_action(m, Action(kind="click", target="menu.Move to Trash"))
    assert trashed.desktop == [] and trashed.toasts[-1].text == "Moved Music to Trash"
    editor = Scene(scene_id="e", platform="macos", focused="w0",
                   windows=[Window(id="w0", app="text_editor", title="TextEdit", x=40, y=60, w=500, h=400, text="")])
    with pytest.raises(NoEffect):   # ctrl+s is not macOS's save shortcut
        apply_action(editor, Action(kind="hotkey", keys=["ctrl", "s"]))
    d, said = apply_action(editor, Action(kind="hotkey", keys=["command", "s"]))
    assert d.dialogs[0].kind == "save" and d.dialogs[0].filename == "Untitled.txt"
    d, _ = apply_action(d, Action(kind="type", target="d0.filename", text="x.txt"))
    saved, said = apply_action(d, Action(kind="key", keys=["enter"]))  # Enter = the primary button
    assert not saved.dialogs and saved.toasts[-1].text == "Saved x.txt"


def test_version_1_scene_documents_still_load():
    data = sample_scene(3).model_dump()
    data["version"] = 1
    for w in data["windows"]:
        w.pop("scroll_row")
    data.pop("menu")
    old = Scene.model_validate(data)
    assert old.menu is None and all(w.scroll_row == 0 for w in old.windows)
