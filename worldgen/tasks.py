"""Tasks conditioned on a scene, and the template planner that solves them.

:func:`make_task` picks a template that fits the scene (a setting to flip, a tab to show, a
window to close, minimise or drag to a corner, a folder to open, text to type, a cell to
fill — scrolling the sheet first when the row is below the view —, a dialog to answer, a
file to drag into a folder, a desktop icon to trash through its context menu, a document to
save with the keyboard shortcut, a dialog to answer with Enter, a notification to wait out) or, with probability ``infeasible_p``, an infeasible one (a
folder, tab or setting that is not there: the right plan is ``fail``). :func:`plan` turns a task into atomic
actions with their intended consequences, first clearing what stands in the way (an open
dialog is answered, a covered or minimised window is brought to the front). Plans are
checked by simulation: every step must have an effect and the goal must hold at the end
(``Task.goal``), so the template planner is correct by construction *and* by test.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from worldgen.actions import ROWS_PER_CLICK, Action, NoEffect, apply_action, save_keys
from worldgen.scene import SHEET_ROWS, Scene

WORDS = ["hello world", "meeting at 10", "buy milk", "total: 42", "draft v2", "see you soon", "ok"]


@dataclass
class Task:
    instruction: str
    template: str
    feasible: bool = True
    target_window: str | None = None
    final: list[Action] = field(default_factory=list)          # the actions that achieve it once unblocked
    goal: Callable[[Scene], bool] = field(default=lambda s: True, repr=False)


def _open_windows(scene: Scene, app: str | None = None):
    return [w for w in scene.windows if not w.minimized and (app is None or w.app == app)]


def _setting(scene, rng):
    wins = _open_windows(scene, "settings")
    if not wins:
        return None
    w = rng.choice(wins)
    st = rng.choice(w.settings)
    want = not st.on
    return Task(f"Turn {'on' if want else 'off'} {st.label} in {scene.app_name('settings')}", "setting", True, w.id,
                [Action(kind="click", target=f"{w.id}.setting.{st.key}")],
                lambda s, wid=w.id, k=st.key, v=want: any(x.key == k and x.on == v for x in s.window(wid).settings))


def _tab(scene, rng):
    wins = [w for w in _open_windows(scene, "browser") if len(w.tabs) > 1]
    if not wins:
        return None
    w = rng.choice(wins)
    i = rng.choice([j for j in range(len(w.tabs)) if j != w.active_tab])
    return Task(f"Switch to the {w.tabs[i].title} tab in {scene.app_name('browser')}", "tab", True, w.id,
                [Action(kind="click", target=f"{w.id}.tab.{i}")],
                lambda s, wid=w.id, i=i: s.window(wid) is not None and s.window(wid).active_tab == i)


def _close(scene, rng):
    wins = _open_windows(scene)
    if not wins:
        return None
    w = rng.choice(wins)
    return Task(f"Close the {w.title} window", "close", True, w.id, [Action(kind="click", target=f"{w.id}.close")],
                lambda s, wid=w.id: s.window(wid) is None)


def _minimize(scene, rng):
    wins = _open_windows(scene)
    if not wins:
        return None
    w = rng.choice(wins)
    return Task(f"Minimize the {w.title} window", "minimize", True, w.id, [Action(kind="click", target=f"{w.id}.min")],
                lambda s, wid=w.id: s.window(wid) is not None and s.window(wid).minimized)


def _restore(scene, rng):
    wins = [w for w in scene.windows if w.minimized]
    if not wins:
        return None
    w = rng.choice(wins)
    return Task(f"Bring back the minimized {scene.app_name(w.app)} window", "restore", True, w.id,
                [Action(kind="click", target=f"taskbar.{w.id}")],
                lambda s, wid=w.id: s.window(wid) is not None and not s.window(wid).minimized and s.focused == wid)


def _open_folder(scene, rng):
    folders = [i for i in scene.desktop if i.kind == "folder"]
    if not folders:
        return None
    icon = rng.choice(folders)
    path = f"/home/user/Desktop/{icon.name}"
    return Task(f"Open the {icon.name} folder on the desktop", "open_folder", True, None,
                [Action(kind="double_click", target=f"desktop.{icon.name}")],
                lambda s, p=path: any(w.app == "file_manager" and w.path == p and not w.minimized for w in s.windows))


def _type_text(scene, rng):
    wins = _open_windows(scene, "text_editor")
    if not wins:
        return None
    w = rng.choice(wins)
    text = rng.choice(WORDS)
    return Task(f"Type '{text}' at the end of the document in {scene.app_name('text_editor')}", "type_text", True, w.id,
                [Action(kind="type", target=f"{w.id}.text", text=text)],
                lambda s, wid=w.id, t=text: s.window(wid) is not None and (s.window(wid).text or "").endswith(t))


def _cell(scene, rng):
    wins = _open_windows(scene, "spreadsheet")
    if not wins:
        return None
    w = rng.choice(wins)
    cell = f"{rng.choice('ABCDEF')}{rng.randint(1, 12)}"
    value = str(rng.randint(1, 999))
    return Task(f"Set cell {cell} to {value}", "cell", True, w.id,
                [Action(kind="click", target=f"{w.id}.cell.{cell}"),
                 Action(kind="type", target=f"{w.id}.cell.{cell}", text=value)],
                lambda s, wid=w.id, c=cell, v=value: s.window(wid) is not None and s.window(wid).cells.get(c) == v)


def _scroll_cell(scene, rng):
    """A cell below the visible rows: scroll the grid (wheel clicks of ROWS_PER_CLICK rows) so
    the row lands near the top of the view, then click and type."""
    wins = _open_windows(scene, "spreadsheet")
    if not wins:
        return None
    w = rng.choice(wins)
    row = rng.randint(w.scroll_row + SHEET_ROWS + 1, 34)  # <= 34: the row stays in the upper half after a clamp
    cell = f"{rng.choice('ABCDEF')}{row}"
    value = str(rng.randint(1, 999))
    clicks = max(1, (row - 1 - w.scroll_row) // ROWS_PER_CLICK)
    return Task(f"Scroll down to row {row} and set cell {cell} to {value}", "scroll_cell", True, w.id,
                [Action(kind="scroll", target=f"{w.id}.grid", dy=clicks),
                 Action(kind="click", target=f"{w.id}.cell.{cell}"),
                 Action(kind="type", target=f"{w.id}.cell.{cell}", text=value)],
                lambda s, wid=w.id, c=cell, v=value: s.window(wid) is not None and s.window(wid).cells.get(c) == v)


CORNERS = {"top-left corner": (0.0, 0.0), "top-right corner": (1.0, 0.0), "bottom-left corner": (0.0, 1.0),
           "centre": (0.5, 0.5)}


def _move_window(scene, rng):
    wins = [w for w in _open_windows(scene) if not w.maximized]
    if not wins:
        return None
    w = rng.choice(wins)
    where = rng.choice(sorted(CORNERS))
    fx, fy = CORNERS[where]
    top = 28 if scene.platform in ("ubuntu", "macos") else 0
    left = 64 if scene.platform == "ubuntu" else 0
    bottom = {"windows": 48, "chrome": 48, "macos": 64}.get(scene.platform, 0)
    tx = round(left + 8 + fx * (scene.width - left - 16 - w.w))
    ty = round(top + 8 + fy * (scene.height - top - bottom - 16 - w.h))
    if abs(tx - w.x) + abs(ty - w.y) < 40:
        return None
    return Task(f"Drag the {w.title} window to the {where} of the screen", "move_window", True, w.id,
                [Action(kind="drag", target=f"{w.id}.titlebar", dx=tx - w.x, dy=ty - w.y)],
                lambda s, wid=w.id, x=tx, y=ty: s.window(wid) is not None and (s.window(wid).x, s.window(wid).y) == (x, y))


def _move_file(scene, rng):
    wins = [w for w in _open_windows(scene, "file_manager")
            if any(f.kind == "folder" for f in w.files) and any(f.kind == "file" for f in w.files)]
    if not wins:
        return None
    w = rng.choice(wins)
    f = rng.choice([x for x in w.files if x.kind == "file"])
    dest = rng.choice([x for x in w.files if x.kind == "folder"])
    return Task(f"Move {f.name} into the {dest.name} folder in {scene.app_name('file_manager')}", "move_file", True,
                w.id, [Action(kind="drag", target=f"{w.id}.file.{f.name}", to=f"{w.id}.file.{dest.name}")],
                lambda s, wid=w.id, n=f.name: s.window(wid) is not None and all(x.name != n for x in s.window(wid).files))


def _trash_icon(scene, rng):
    if not scene.desktop:
        return None
    icon = rng.choice(scene.desktop)
    return Task(f"Move the {icon.name} icon on the desktop to the trash", "trash_icon", True, None,
                [Action(kind="right_click", target=f"desktop.{icon.name}"),
                 Action(kind="click", target="menu.Move to Trash")],
                lambda s, n=icon.name: all(i.name != n for i in s.desktop))


def _save_as(scene, rng):
    wins = _open_windows(scene, "text_editor")
    if not wins:
        return None
    w = rng.choice(wins)
    name = f"{rng.choice(['notes', 'draft', 'todo', 'letter', 'minutes'])}_{rng.randint(1, 99)}.txt"
    keys = save_keys(scene.platform)
    return Task(f"Save the document in {scene.app_name('text_editor')} as {name} using the keyboard shortcut",
                "save_as", True, w.id,
                [Action(kind="hotkey", keys=keys), Action(kind="type", target="@dialog.filename", text=name),
                 Action(kind="click", target="@dialog.button.Save")],
                lambda s, n=name: any(t.text == f"Saved {n}" for t in s.toasts) and not s.dialogs)


def _dialog(scene, rng):
    if not scene.dialogs:
        return None
    d = scene.dialogs[-1]
    button = d.buttons[-1]
    if rng.random() < 0.3:  # the keyboard way: Enter presses the primary (last) button
        return Task(f"Answer the '{d.title}' dialog with {button} using the keyboard", "dialog_key", True, d.window,
                    [Action(kind="key", keys=["enter"])], lambda s, did=d.id: all(x.id != did for x in s.dialogs))
    return Task(f"Answer the '{d.title}' dialog with {button}", "dialog", True, d.window,
                [Action(kind="click", target=f"{d.id}.button.{button}")],
                lambda s, did=d.id: all(x.id != did for x in s.dialogs))


def _wait_toast(scene, rng):
    if not scene.toasts:
        return None
    text = scene.toasts[0].text
    return Task(f"Wait until the '{text}' notification is gone", "wait_toast", True, None,
                [Action(kind="wait")], lambda s, t=text: all(x.text != t for x in s.toasts))


def _infeasible(scene: Scene, rng: random.Random) -> Task:
    kind = rng.choice(["folder", "setting", "tab"])
    thing = {"folder": "the Taxes2019 folder on the desktop", "setting": "Airplane mode in Settings",
             "tab": "the Calendar tab in the browser"}[kind]
    return Task(f"Open {thing}", f"infeasible_{kind}", False, None, [Action(kind="fail")], lambda s: True)


def make_task(scene: Scene, rng: random.Random, infeasible_p: float = 0.05) -> Task:
    """A task that fits ``scene`` (or an infeasible one with probability ``infeasible_p``)."""
    if rng.random() < infeasible_p:
        return _infeasible(scene, rng)
    makers: list[Callable[[Scene, random.Random], Task | None]] = [
        _setting, _tab, _close, _minimize, _open_folder, _type_text, _cell, _dialog, _restore, _scroll_cell,
        _move_window, _move_file, _trash_icon, _save_as, _wait_toast]
    rng.shuffle(makers)
    generic = [m for m in makers if m in (_close, _minimize, _move_window)]
    specific = [m for m in makers if m not in generic]
    # app-specific tasks first (closing or minimising a window fits every scene)
    for make in (generic + specific if rng.random() < 0.2 else specific + generic):
        task = make(scene, rng)
        if task is not None:
            return task
    return _infeasible(scene, rng)


def plan(scene: Scene, task: Task) -> list[tuple[Action, str]]:
    """Atomic actions with their intended consequences; simulated step by step, so every
    returned step has an effect. A target ``@dialog.<part>`` names the dialog open at that
    step (one an earlier step opened). Raises ``ValueError`` if the template cannot be solved."""
    if not task.feasible:
        return [(Action(kind="fail"), "nothing changes: the task cannot be done in this scene")]
    steps: list[tuple[Action, str]] = []
    s = scene
    prefix: list[Action] = []
    if s.dialogs and task.template != "dialog":  # answer the dialog first (its last button)
        d = s.dialogs[-1]
        cancel = "Cancel" if "Cancel" in d.buttons else d.buttons[0]
        prefix.append(Action(kind="click", target=f"{d.id}.button.{cancel}"))
    w = s.window(task.target_window) if task.target_window else None
    if w is not None and task.template not in ("restore", "dialog"):
        if w.minimized:
            prefix.append(Action(kind="click", target=f"taskbar.{w.id}"))
        elif s.windows[-1].id != w.id:  # possibly covered: bring it to the front first
            prefix.append(Action(kind="click", target=f"taskbar.{w.id}"))
    for action in prefix + task.final:
        if action.target and action.target.startswith("@dialog."):  # the dialog an earlier step opened
            if not s.dialogs:
                raise ValueError(f"template plan for {task.template!r}: no dialog open for {action.target}")
            action = action.model_copy(update={"target": s.dialogs[-1].id + action.target[len("@dialog"):]})
        try:
            s, consequence = apply_action(s, action)
        except NoEffect:
            continue  # e.g. the window came to the front already
        steps.append((action, consequence))
    if not task.goal(s):
        raise ValueError(f"template plan for {task.template!r} does not reach its goal")
    steps.append((Action(kind="done"), "the task is complete"))
    return steps


__all__ = ["Task", "make_task", "plan"]
