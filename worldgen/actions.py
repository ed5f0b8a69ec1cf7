"""Atomic GUI actions and their exact effect on a scene spec (the HTML world model's transitions).

An :class:`Action` names its target element by ``data-vid`` (see ``worldgen.html.render``);
:func:`apply_action` returns the next scene and a one-line *consequence* ("the Wi-Fi switch
turns on"), or raises :class:`NoEffect` when the action would change nothing (a click
blocked by a modal dialog, a setting already in that state ...). Scenes are never mutated
in place. ``to_pyautogui`` / ``to_computer13`` give an action in OSWorld's two action spaces,
at a point inside the target's box.
"""

from __future__ import annotations

import random
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from worldgen.scene import (
    PLATFORM_APPS,
    SHEET_MAX_ROW,
    SHEET_ROWS,
    ContextMenu,
    Dialog,
    FileItem,
    Scene,
    Tab,
    Toast,
    Window,
    _file_name,
)

Kind = Literal["click", "double_click", "right_click", "type", "key", "hotkey", "scroll", "drag", "wait", "done", "fail"]
POINTING = ("click", "double_click", "right_click", "drag", "scroll")


class Action(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Kind
    target: str | None = None          # data-vid of the element (pointing actions, and type into)
    text: str | None = None            # type
    keys: list[str] = Field(default_factory=list)  # key / hotkey
    dx: int = 0                        # drag: offset in px; scroll: wheel clicks (dy > 0 = down)
    dy: int = 0
    to: str | None = None              # drag: data-vid of the drop target (then dx/dy come from the boxes)

    def describe(self) -> str:
        if self.kind == "type":
            return f"type {self.text!r}" + (f" into {self.target}" if self.target else "")
        if self.kind in ("key", "hotkey"):
            return f"{self.kind} {'+'.join(self.keys)}"
        if self.kind == "drag":
            return f"drag {self.target} " + (f"onto {self.to}" if self.to else f"by ({self.dx}, {self.dy})")
        if self.kind == "scroll":
            return f"scroll {self.target} {'down' if self.dy > 0 else 'up'} {abs(self.dy)}"
        return f"{self.kind} {self.target}" if self.target else self.kind


class NoEffect(ValueError):
    """The action changes nothing in this scene (the reason says why)."""


def _copy(scene: Scene) -> Scene:
    return scene.model_copy(deep=True)


def _raise(scene: Scene, wid: str) -> None:
    """Move window ``wid`` to the top and focus it."""
    win = scene.window(wid)
    scene.windows = [w for w in scene.windows if w.id != wid] + [win]
    win.minimized = False
    scene.focused = wid


def _refocus(scene: Scene) -> None:
    open_ = [w for w in scene.windows if not w.minimized]
    scene.focused = open_[-1].id if open_ else None


def _title(scene: Scene, w: Window) -> str:
    name = scene.app_name(w.app)
    if w.app == "browser":
        return f"{w.tabs[w.active_tab].title} - {name}"
    if w.app == "file_manager":
        return f"{w.path.rsplit('/', 1)[-1]} - {name}"
    return w.title


def _folder_files(path: str) -> list[FileItem]:
    rng = random.Random(path)  # the same folder always holds the same files
    names = sorted({_file_name(rng) for _ in range(rng.randint(2, 6))})
    return [FileItem(name=n) for n in names]


#: Rows one wheel click scrolls a spreadsheet.
ROWS_PER_CLICK = 3
#: The save shortcut per platform (``hotkey``), which opens a Save As dialog in a text editor.
SAVE_KEYS = {"macos": ["command", "s"]}
MENU_ITEMS = {"folder": ["Open", "Move to Trash"], "file": ["Move to Trash"]}


def save_keys(platform: str) -> list[str]:
    return SAVE_KEYS.get(platform, ["ctrl", "s"])


def _new_dialog_id(scene: Scene) -> str:
    return f"d{max([int(d.id[1:]) for d in scene.dialogs] + [-1]) + 1}"


def _open_folder_window(s: Scene, name: str) -> str:
    if "file_manager" not in PLATFORM_APPS[s.platform]:
        raise NoEffect("no file manager on this platform")
    wid = f"w{max([int(w.id[1:]) for w in s.windows] + [-1]) + 1}"
    path = f"/home/user/Desktop/{name}"
    win = Window(id=wid, app="file_manager", title="x", x=min(160, s.width - 700), y=90, w=min(680, s.width - 200),
                 h=min(460, s.height - 200), path=path, files=_folder_files(path))
    win.title = _title(s, win)
    s.windows.append(win)
    s.focused = wid
    return f"a {s.app_name('file_manager')} window opens showing the {name!r} folder"


def _keys(s: Scene, action: Action) -> tuple[Scene, str]:
    """Keyboard actions: Escape closes the context menu or the top dialog, Enter answers the
    top dialog with its primary (last) button, the save shortcut opens Save As in a text editor."""
    keys = [k.lower() for k in action.keys]
    if keys == ["escape"] and s.menu is not None:
        s.menu = None
        return s, "the context menu closes"
    if keys == ["escape"] and s.dialogs:
        d = s.dialogs.pop()
        return s, f"the {d.title!r} dialog closes (cancelled)"
    if keys == ["enter"] and s.dialogs:
        d = s.dialogs[-1]
        return apply_action(s, Action(kind="click", target=f"{d.id}.button.{d.buttons[-1]}"))
    w = s.window(s.focused) if s.focused else None
    if action.kind == "hotkey" and keys == save_keys(s.platform) and w is not None and not s.dialogs \
            and w.app == "text_editor":
        s.menu = None
        s.dialogs = [Dialog(id=_new_dialog_id(s), window=w.id, kind="save", title="Save As",
                            message="Choose a file name", buttons=["Cancel", "Save"], filename="Untitled.txt")]
        return s, "a Save As dialog opens over the text editor"
    raise NoEffect(f"{action.describe()} does nothing here")


def _menu(s: Scene, action: Action, t: str) -> tuple[Scene, str]:
    """While a context menu is open a click on one of its items runs it; anything else closes it."""
    menu = s.menu
    s.menu = None
    icon = next(i for i in s.desktop if i.name == menu.target)
    if action.kind == "click" and t.startswith("menu."):
        item = t.split(".", 1)[1]
        if item not in menu.items:
            raise NoEffect(f"the menu has no {item!r}")
        if item == "Open":
            return s, _open_folder_window(s, icon.name)
        if item == "Move to Trash":
            s.desktop = [i for i in s.desktop if i is not icon]
            s.toasts = [*s.toasts, Toast(text=f"Moved {icon.name} to Trash")][-2:]
            return s, f"the {icon.name!r} icon moves to the trash"
    return s, "the context menu closes"


def _move_window(s: Scene, w: Window, dx: int, dy: int) -> tuple[Scene, str]:
    if w.maximized:
        raise NoEffect(f"{w.title!r} is maximized: it cannot be dragged")
    # keep the title bar on screen (the scene stays valid and the window reachable)
    x = min(max(w.x + dx, 40 - w.w + 80), s.width - 80)
    y = min(max(w.y + dy, 28 if s.platform in ("ubuntu", "macos") else 0), s.height - 80)
    if (x, y) == (w.x, w.y):
        raise NoEffect(f"{w.title!r} cannot move further that way")
    mx, my = x - w.x, y - w.y
    w.x, w.y = x, y
    _raise(s, w.id)
    where = " and ".join(p for p in (f"{abs(mx)} px {'right' if mx > 0 else 'left'}" if mx else "",
                                     f"{abs(my)} px {'down' if my > 0 else 'up'}" if my else "") if p)
    return s, f"the {w.title!r} window moves {where}"


def apply_action(scene: Scene, action: Action) -> tuple[Scene, str]:
    """The scene after ``action`` and what visibly changed; :class:`NoEffect` if nothing would."""
    s = _copy(scene)
    t = action.target or ""
    head, _, rest = t.partition(".")
    modal = {d.window for d in s.dialogs}
    if action.kind == "wait" and s.toasts:  # notifications time out
        t = s.toasts.pop(0)
        return s, f"the {t.text!r} notification disappears"
    if action.kind in ("wait", "done", "fail"):
        raise NoEffect(f"{action.kind} changes nothing on screen")
    if action.kind in ("key", "hotkey"):
        return _keys(s, action)
    if s.menu is not None and action.kind in POINTING:
        return _menu(s, action, t)
    is_dialog = re.fullmatch(r"d[0-9]+", head) is not None
    if s.dialogs and not is_dialog and action.kind in POINTING + ("type",):
        raise NoEffect(f"a dialog is open: {t} is blocked until it is answered")
    # -- dialogs
    if is_dialog:
        d = next((x for x in s.dialogs if x.id == head), None)
        if d is None:
            raise NoEffect(f"no dialog {head}")
        if action.kind == "click" and rest.startswith("button."):
            button = rest.split(".", 1)[1]
            s.dialogs = [x for x in s.dialogs if x.id != d.id]
            if d.kind == "save" and button == "Save":
                s.toasts = [*s.toasts, Toast(text=f"Saved {d.filename}")]
                return s, f"the save dialog closes and {d.filename!r} is saved"
            return s, f"the {d.title!r} dialog closes ({button})"
        if action.kind == "type" and rest == "filename":
            d.filename = action.text or ""
            return s, f"the file name field shows {d.filename!r}"
        raise NoEffect(f"{action.describe()} does nothing on dialog {d.id}")
    # -- taskbar
    if head == "taskbar" and action.kind == "click":
        w = s.window(rest)
        if w is None:
            raise NoEffect(f"no taskbar entry {t}")
        if w.minimized:
            _raise(s, w.id)
            return s, f"the {w.title!r} window is restored and focused"
        if s.focused == w.id:
            w.minimized = True
            _refocus(s)
            return s, f"the {w.title!r} window is minimized"
        _raise(s, w.id)
        return s, f"the {w.title!r} window comes to the front"
    # -- desktop icons
    if head == "desktop":
        icon = next((i for i in s.desktop if i.name == rest), None)
        if icon is None:
            raise NoEffect(f"no desktop icon {rest!r}")
        if action.kind == "click":
            if icon.selected:
                raise NoEffect(f"{icon.name!r} is already selected")
            for i in s.desktop:
                i.selected = i is icon
            return s, f"the {icon.name!r} icon is selected"
        if action.kind == "double_click" and icon.kind == "folder":
            return s, _open_folder_window(s, icon.name)
        if action.kind == "right_click":
            s.menu = ContextMenu(target=icon.name, items=MENU_ITEMS[icon.kind])
            return s, f"a context menu opens on the {icon.name!r} icon ({', '.join(MENU_ITEMS[icon.kind])})"
        if action.kind == "drag" and action.to and action.to.startswith("desktop."):
            dest = next((i for i in s.desktop if i.name == action.to.split(".", 1)[1]), None)
            if dest is None or dest.kind != "folder" or dest is icon:
                raise NoEffect(f"{action.to} is not another folder on the desktop")
            s.desktop = [i for i in s.desktop if i is not icon]
            return s, f"the {icon.name!r} icon moves into the {dest.name!r} folder"
        raise NoEffect(f"{action.describe()} does nothing to a desktop {icon.kind}")
    # -- windows
    w = s.window(head)
    if w is None or w.minimized:
        raise NoEffect(f"no open window {head!r}")
    if w.id in modal:
        raise NoEffect(f"window {w.id} is behind a dialog")
    focus_change = s.focused != w.id or s.windows[-1].id != w.id
    if action.kind == "click" and rest in ("", "titlebar"):
        if not focus_change:
            raise NoEffect(f"{w.title!r} is already in front")
        _raise(s, w.id)
        return s, f"the {w.title!r} window comes to the front"
    if action.kind == "click" and rest == "close":
        s.windows = [x for x in s.windows if x.id != w.id]
        _refocus(s)
        return s, f"the {w.title!r} window closes"
    if action.kind == "click" and rest == "min":
        w.minimized = True
        _refocus(s)
        return s, f"the {w.title!r} window is minimized to the {'dock' if s.platform == 'macos' else 'taskbar'}"
    if action.kind == "drag" and rest == "titlebar" and not action.to:
        return _move_window(s, w, action.dx, action.dy)
    if action.kind in ("click", "double_click") and rest in ("max", "titlebar"):
        w.maximized = not w.maximized
        _raise(s, w.id)
        return s, f"the {w.title!r} window is {'maximized' if w.maximized else 'restored to its size'}"
    _raise(s, w.id)  # any other interaction with a window also focuses it
    what = rest.split(".", 1)
    if action.kind == "click" and what[0] == "tab":
        i = int(what[1])
        if i == w.active_tab and not focus_change:
            raise NoEffect(f"tab {i} is already active")
        w.active_tab = i
        w.title = _title(s, w)
        return s, f"the {w.tabs[i].title!r} tab is shown"
    if action.kind == "click" and rest == "new_tab":
        w.tabs.append(Tab(title="New Tab", url="about:blank", page=""))
        w.active_tab = len(w.tabs) - 1
        w.title = _title(s, w)
        return s, "a new empty tab opens and is shown"
    if action.kind == "click" and what[0] == "setting":
        st = next(x for x in w.settings if x.key == what[1])
        st.on = not st.on
        return s, f"the {st.label!r} switch turns {'on' if st.on else 'off'}"
    if action.kind == "scroll" and rest == "grid" and w.app == "spreadsheet":
        top = min(max(w.scroll_row + ROWS_PER_CLICK * action.dy, 0), SHEET_MAX_ROW - SHEET_ROWS)
        if top == w.scroll_row:
            raise NoEffect(f"the sheet cannot scroll further {'down' if action.dy > 0 else 'up'}")
        w.scroll_row = top
        return s, f"the sheet scrolls {'down' if action.dy > 0 else 'up'} to show rows {top + 1}-{top + SHEET_ROWS}"
    if what[0] == "cell" and action.kind in ("click", "type") and \
            not w.scroll_row < int(what[1][1:]) <= w.scroll_row + SHEET_ROWS:
        raise NoEffect(f"cell {what[1]} is not on screen (rows {w.scroll_row + 1}-{w.scroll_row + SHEET_ROWS})")
    if action.kind == "click" and what[0] == "cell":
        if w.selected_cell == what[1] and not focus_change:
            raise NoEffect(f"cell {what[1]} is already selected")
        w.selected_cell = what[1]
        return s, f"cell {what[1]} is selected"
    if action.kind == "type" and what[0] == "cell":
        w.selected_cell = what[1]
        w.cells[what[1]] = action.text or ""
        return s, f"cell {what[1]} shows {action.text!r}"
    if action.kind == "type" and rest == "text" and w.app in ("text_editor", "terminal"):
        w.text = (w.text or "") + (action.text or "")
        return s, f"{action.text!r} appears in the {s.app_name(w.app)} window"
    if action.kind == "click" and what[0] == "file":
        f = next((x for x in w.files if x.name == what[1]), None)
        if f is None:
            raise NoEffect(f"no file {what[1]!r}")
        if f.selected and not focus_change:
            raise NoEffect(f"{f.name!r} is already selected")
        for x in w.files:
            x.selected = x is f
        return s, f"{f.name!r} is selected"
    if action.kind == "double_click" and what[0] == "file":
        f = next((x for x in w.files if x.name == what[1]), None)
        if f is None or f.kind != "folder":
            raise NoEffect(f"{what[1]!r} is not a folder here")
        w.path = f"{w.path.rstrip('/')}/{f.name}"
        w.files = _folder_files(w.path)
        w.title = _title(s, w)
        return s, f"the {s.app_name('file_manager')} window shows the {f.name!r} folder"
    if action.kind == "drag" and what[0] == "file" and action.to and action.to.startswith(f"{w.id}.file."):
        f = next((x for x in w.files if x.name == what[1]), None)
        dest = next((x for x in w.files if x.name == action.to.split(".", 2)[2]), None)
        if f is None or dest is None or dest.kind != "folder" or dest is f:
            raise NoEffect(f"cannot drop {what[1]!r} onto {action.to}")
        w.files = [x for x in w.files if x is not f]
        return s, f"{f.name!r} moves into the {dest.name!r} folder"
    if action.kind == "click" and rest == "back" and w.app == "file_manager":
        if w.path.count("/") <= 1:
            raise NoEffect("already at the top folder")
        w.path = w.path.rsplit("/", 1)[0] or "/"
        w.files = _folder_files(w.path)
        w.title = _title(s, w)
        return s, f"the window goes back to {w.path!r}"
    if focus_change:
        return s, f"the {w.title!r} window comes to the front"
    raise NoEffect(f"{action.describe()} changes nothing")


def point_in(box: tuple[int, int, int, int]) -> tuple[int, int]:
    """The point a pointing action uses: the centre of the target's box."""
    x, y, w, h = box
    return x + w // 2, y + h // 2


def to_pyautogui(action: Action, box: tuple[int, int, int, int] | None,
                 to_box: tuple[int, int, int, int] | None = None) -> str:
    """OSWorld's ``pyautogui`` action space (a Python line); ``to_box``: a drag's drop target."""
    if action.kind in ("click", "double_click", "right_click"):
        x, y = point_in(box)
        fn = {"click": "click", "double_click": "doubleClick", "right_click": "rightClick"}[action.kind]
        return f"pyautogui.{fn}({x}, {y})"
    if action.kind == "type":
        prefix = f"pyautogui.click({point_in(box)[0]}, {point_in(box)[1]}); " if box else ""
        return prefix + f"pyautogui.write({action.text!r})"
    if action.kind == "key":
        return f"pyautogui.press({action.keys[0]!r})"
    if action.kind == "hotkey":
        return f"pyautogui.hotkey({', '.join(repr(k) for k in action.keys)})"
    if action.kind == "scroll":
        x, y = point_in(box)
        return f"pyautogui.scroll({-action.dy}, x={x}, y={y})"
    if action.kind == "drag":
        x, y = point_in(box)
        x2, y2 = point_in(to_box) if to_box else (x + action.dx, y + action.dy)
        return f"pyautogui.moveTo({x}, {y}); pyautogui.dragTo({x2}, {y2}, duration=0.5, button='left')"
    return {"wait": "WAIT", "done": "DONE", "fail": "FAIL"}[action.kind]


def to_computer13(action: Action, box: tuple[int, int, int, int] | None,
                  to_box: tuple[int, int, int, int] | None = None) -> dict:
    """OSWorld's ``computer_13`` action space (a dict; a drag is DRAG_TO from the pointer's
    position, which the box's centre gives: ``bbox``)."""
    if action.kind in ("click", "double_click", "right_click"):
        x, y = point_in(box)
        kind = {"click": "CLICK", "double_click": "DOUBLE_CLICK", "right_click": "RIGHT_CLICK"}[action.kind]
        return {"action_type": kind, "parameters": {"x": x, "y": y}}
    if action.kind == "type":
        return {"action_type": "TYPING", "parameters": {"text": action.text or ""}}
    if action.kind == "key":
        return {"action_type": "PRESS", "parameters": {"key": action.keys[0]}}
    if action.kind == "hotkey":
        return {"action_type": "HOTKEY", "parameters": {"keys": list(action.keys)}}
    if action.kind == "scroll":  # OSWorld: dy > 0 scrolls up (pyautogui's sign)
        return {"action_type": "SCROLL", "parameters": {"dx": -action.dx, "dy": -action.dy}}
    if action.kind == "drag":
        x, y = point_in(box)
        x2, y2 = point_in(to_box) if to_box else (x + action.dx, y + action.dy)
        return {"action_type": "DRAG_TO", "parameters": {"x": x2, "y": y2}}
    return {"action_type": action.kind.upper(), "parameters": {}}


__all__ = ["MENU_ITEMS", "POINTING", "ROWS_PER_CLICK", "Action", "NoEffect", "apply_action", "point_in", "save_keys",
           "to_computer13", "to_pyautogui"]
