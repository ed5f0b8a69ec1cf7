"""Scene specs: what a synthetic GUI screen shows, as typed, versioned, JSON-round-trippable data.

A :class:`Scene` is AutoGUIWorld's structured scene spec: the OS context (``platform``,
screen size), the visual appearance (theme, accent, wallpaper, fonts, density, corner
radius) and the interface state (windows with their app, content and geometry in z-order,
the focused window, dialogs, toasts, a context menu, browser tabs, spreadsheet scroll offsets,
files on the desktop). Scenes are data:
world models render them (``worldgen.html``) and transitions change them.

:func:`sample_scene` draws one from a :class:`SceneDistribution` with a seed (the same seed
gives the same scene); :meth:`Scene.model_validate` rejects invalid combinations with the
reason (a focused window that is minimised, a dialog without its window, an app the
platform does not have, windows entirely off screen, duplicate ids ...).
"""

from __future__ import annotations

import random
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SCENE_SCHEMA_VERSION = 2
#: Versions this code reads (v1 had no scrolling, context menus or window moves: its fields default).
READABLE_VERSIONS = (1, 2)
#: Rows of a spreadsheet on screen at once; ``Window.scroll_row`` is the first one (0-based).
SHEET_ROWS, SHEET_MAX_ROW = 12, 40

Platform = Literal["ubuntu", "windows", "macos", "chrome"]
App = Literal["file_manager", "text_editor", "browser", "settings", "spreadsheet", "terminal"]

#: Apps each platform offers (ChromeOS-style "chrome": the browser, files and settings only).
PLATFORM_APPS: dict[str, tuple[str, ...]] = {
    "ubuntu": ("file_manager", "text_editor", "browser", "settings", "spreadsheet", "terminal"),
    "windows": ("file_manager", "text_editor", "browser", "settings", "spreadsheet", "terminal"),
    "macos": ("file_manager", "text_editor", "browser", "settings", "spreadsheet", "terminal"),
    "chrome": ("browser", "file_manager", "settings"),
}

#: What each platform calls its apps (window titles, dock/taskbar labels).
APP_NAMES: dict[str, dict[str, str]] = {
    "ubuntu": {"file_manager": "Files", "text_editor": "Text Editor", "browser": "Chromium", "settings": "Settings",
               "spreadsheet": "LibreOffice Calc", "terminal": "Terminal"},
    "windows": {"file_manager": "File Explorer", "text_editor": "Notepad", "browser": "Edge", "settings": "Settings",
                "spreadsheet": "Excel", "terminal": "Command Prompt"},
    "macos": {"file_manager": "Finder", "text_editor": "TextEdit", "browser": "Safari", "settings": "System Settings",
              "spreadsheet": "Numbers", "terminal": "Terminal"},
    "chrome": {"file_manager": "Files", "browser": "Chrome", "settings": "Settings"},
}


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class Appearance(Spec):
    theme: Literal["light", "dark"] = "light"
    accent: str = Field("#3367d6", pattern=r"^#[0-9a-fA-F]{6}$")
    wallpaper: str = Field("#2c3e50", pattern=r"^#[0-9a-fA-F]{6}$")
    wallpaper_to: str = Field("#4ca1af", pattern=r"^#[0-9a-fA-F]{6}$")  # gradient end
    font_family: Literal["sans", "serif", "mono", "rounded"] = "sans"
    font_scale: float = Field(1.0, ge=0.75, le=1.5)
    density: Literal["compact", "normal", "comfortable"] = "normal"
    corner_radius: int = Field(6, ge=0, le=16)


class FileItem(Spec):
    name: str = Field(min_length=1, max_length=64)
    kind: Literal["folder", "file"] = "file"
    selected: bool = False


class Tab(Spec):
    title: str = Field(min_length=1, max_length=60)
    url: str = Field(min_length=1, max_length=200)
    page: str = ""  # the page's heading / body text


class Setting(Spec):
    key: str = Field(pattern=r"^[a-z][a-z0-9_]{0,40}$")
    label: str = Field(min_length=1, max_length=60)
    on: bool = False


class Window(Spec):
    id: str = Field(pattern=r"^w[0-9]{1,3}$")
    app: App
    title: str = Field(min_length=1, max_length=80)
    x: int
    y: int
    w: int = Field(ge=200)
    h: int = Field(ge=150)
    minimized: bool = False
    maximized: bool = False
    # app content (only the parts that app uses are set)
    path: str | None = None                   # file manager: the folder shown
    files: list[FileItem] = Field(default_factory=list)
    text: str | None = None                   # text editor / terminal
    tabs: list[Tab] = Field(default_factory=list)
    active_tab: int = 0
    settings: list[Setting] = Field(default_factory=list)
    cells: dict[str, str] = Field(default_factory=dict)  # spreadsheet, "A1" -> value
    selected_cell: str | None = Field(None, pattern=r"^[A-H][1-9][0-9]?$")
    scroll_row: int = Field(0, ge=0, le=SHEET_MAX_ROW - SHEET_ROWS)  # spreadsheet: rows scrolled past

    @model_validator(mode="after")
    def _content_fits_the_app(self):
        if self.app == "browser" and not self.tabs:
            raise ValueError(f"window {self.id}: a browser needs at least one tab")
        if self.tabs and not 0 <= self.active_tab < len(self.tabs):
            raise ValueError(f"window {self.id}: active_tab {self.active_tab} of {len(self.tabs)} tabs")
        if self.app == "file_manager" and self.path is None:
            raise ValueError(f"window {self.id}: a file manager shows a folder (path)")
        if self.app != "spreadsheet" and (self.cells or self.selected_cell or self.scroll_row):
            raise ValueError(f"window {self.id}: cells belong to spreadsheets")
        for cell in self.cells:
            if not (len(cell) >= 2 and cell[0] in "ABCDEFGH" and cell[1:].isdigit() and 1 <= int(cell[1:]) <= 40):
                raise ValueError(f"window {self.id}: bad cell name {cell!r} (A1..H40)")
        if len({s.key for s in self.settings}) != len(self.settings):
            raise ValueError(f"window {self.id}: duplicate setting keys")
        return self


class Dialog(Spec):
    id: str = Field(pattern=r"^d[0-9]{1,3}$")
    window: str  # the window it belongs to (modal over it)
    kind: Literal["confirm", "alert", "save"] = "confirm"
    title: str = Field(min_length=1, max_length=80)
    message: str = Field("", max_length=300)
    buttons: list[str] = Field(default_factory=lambda: ["Cancel", "OK"], min_length=1, max_length=3)
    filename: str | None = None  # save dialogs


class Toast(Spec):
    text: str = Field(min_length=1, max_length=120)


class DesktopIcon(Spec):
    name: str = Field(min_length=1, max_length=40)
    kind: Literal["folder", "file"] = "folder"
    selected: bool = False


class ContextMenu(Spec):
    """A right-click menu open on a desktop icon (``target`` = the icon's name)."""

    target: str = Field(min_length=1, max_length=40)
    items: list[str] = Field(default_factory=lambda: ["Open", "Rename", "Move to Trash"], min_length=1, max_length=6)


class Scene(Spec):
    version: int = SCENE_SCHEMA_VERSION
    scene_id: str = Field(pattern=r"^[a-z0-9_-]{1,64}$")
    platform: Platform = "ubuntu"
    width: int = Field(1280, ge=640, le=3840)
    height: int = Field(800, ge=480, le=2160)
    appearance: Appearance = Field(default_factory=Appearance)
    windows: list[Window] = Field(default_factory=list)  # bottom to top
    focused: str | None = None
    dialogs: list[Dialog] = Field(default_factory=list)
    toasts: list[Toast] = Field(default_factory=list)
    desktop: list[DesktopIcon] = Field(default_factory=list)
    menu: ContextMenu | None = None

    @model_validator(mode="after")
    def _consistent(self):
        if self.version not in READABLE_VERSIONS:
            raise ValueError(f"scene schema version {self.version}; this code reads {READABLE_VERSIONS}")
        ids = [w.id for w in self.windows]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate window ids: {ids}")
        for w in self.windows:
            if w.app not in PLATFORM_APPS[self.platform]:
                raise ValueError(f"{self.platform} has no {w.app} app (window {w.id})")
            if w.x >= self.width - 40 or w.y >= self.height - 40 or w.x + w.w <= 40 or w.y + w.h <= 40:
                raise ValueError(f"window {w.id} at ({w.x},{w.y}) {w.w}x{w.h} is off the {self.width}x{self.height} screen")
        if self.focused is not None:
            win = self.window(self.focused)
            if win is None:
                raise ValueError(f"focused window {self.focused!r} does not exist")
            if win.minimized:
                raise ValueError(f"focused window {self.focused!r} is minimized")
        dids = [d.id for d in self.dialogs]
        if len(set(dids)) != len(dids):
            raise ValueError(f"duplicate dialog ids: {dids}")
        for d in self.dialogs:
            owner = self.window(d.window)
            if owner is None or owner.minimized:
                raise ValueError(f"dialog {d.id} belongs to {d.window!r}, which is not an open window")
        if len({i.name for i in self.desktop}) != len(self.desktop):
            raise ValueError("duplicate desktop icon names")
        if self.menu is not None and all(i.name != self.menu.target for i in self.desktop):
            raise ValueError(f"context menu on {self.menu.target!r}, which is not a desktop icon")
        if self.menu is not None and self.dialogs:
            raise ValueError("a context menu cannot be open while a dialog is")
        return self

    def window(self, wid: str) -> Window | None:
        return next((w for w in self.windows if w.id == wid), None)

    def app_name(self, app: str) -> str:
        return APP_NAMES[self.platform][app]

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)

    @classmethod
    def from_json(cls, text: str) -> Scene:
        return cls.model_validate_json(text)


# -- sampling ---------------------------------------------------------------------------------

class SceneDistribution(Spec):
    """What :func:`sample_scene` draws from (weights need not sum to 1)."""

    platforms: dict[Platform, float] = Field(default_factory=lambda: {"ubuntu": 3, "windows": 3, "macos": 2,
                                                                       "chrome": 1})
    apps: dict[App, float] = Field(default_factory=lambda: {"file_manager": 2, "text_editor": 2, "browser": 2,
                                                             "settings": 1, "spreadsheet": 1, "terminal": 1})
    screens: list[tuple[int, int]] = Field(default_factory=lambda: [(1280, 800), (1280, 720), (1440, 900)])
    windows: tuple[int, int] = (1, 3)
    dark_p: float = Field(0.35, ge=0, le=1)
    dialog_p: float = Field(0.2, ge=0, le=1)
    toast_p: float = Field(0.15, ge=0, le=1)
    minimized_p: float = Field(0.1, ge=0, le=1)
    desktop_icons: tuple[int, int] = (0, 5)

    @model_validator(mode="after")
    def _positive(self):
        if not any(v > 0 for v in self.platforms.values()) or not any(v > 0 for v in self.apps.values()):
            raise ValueError("platform and app weights need at least one positive entry")
        if not 1 <= self.windows[0] <= self.windows[1] <= 6:
            raise ValueError("windows must be a range within 1..6")
        return self


ACCENTS = ["#3367d6", "#e95420", "#0078d4", "#007aff", "#16a085", "#8e44ad", "#c0392b", "#d35400"]
WALLPAPERS = [("#2c3e50", "#4ca1af"), ("#0f2027", "#2c5364"), ("#42275a", "#734b6d"), ("#134e5e", "#71b280"),
              ("#e96443", "#904e95"), ("#1e3c72", "#2a5298"), ("#3a1c71", "#d76d77"), ("#283c86", "#45a247")]
WORDS = ["report", "budget", "notes", "photos", "draft", "invoice", "plan", "summary", "data", "letter", "music",
         "project", "archive", "todo", "travel", "recipes", "slides", "backup", "results", "design"]
FOLDERS = ["Documents", "Downloads", "Pictures", "Music", "Projects", "Desktop", "Videos", "Work"]
SITES = [("News", "news.example.com", "Top stories today"), ("Mail", "mail.example.com", "Inbox (3)"),
         ("Docs", "docs.example.com", "Quarterly report draft"), ("Shop", "shop.example.com", "Your cart"),
         ("Wiki", "wiki.example.com", "Sokoban - puzzle game"), ("Maps", "maps.example.com", "Directions"),
         ("Weather", "weather.example.com", "Sunny, 21 C"), ("Videos", "video.example.com", "Recommended")]
SETTINGS = [("wifi", "Wi-Fi"), ("bluetooth", "Bluetooth"), ("dark_mode", "Dark mode"),
            ("night_light", "Night light"), ("notifications", "Notifications"), ("auto_updates", "Automatic updates"),
            ("location", "Location services"), ("sounds", "System sounds")]


def _weighted(rng: random.Random, weights: dict[str, float], allowed: tuple[str, ...] | None = None) -> str:
    items = [(k, w) for k, w in weights.items() if w > 0 and (allowed is None or k in allowed)]
    if not items:
        raise ValueError(f"nothing to sample among {allowed}")
    return rng.choices([k for k, _ in items], weights=[w for _, w in items])[0]


def _file_name(rng: random.Random) -> str:
    return f"{rng.choice(WORDS)}_{rng.randint(1, 99)}.{rng.choice(['txt', 'pdf', 'xlsx', 'png', 'docx', 'csv'])}"


def _content(rng: random.Random, app: str) -> dict[str, Any]:
    if app == "file_manager":
        names = set()
        files = []
        for _ in range(rng.randint(3, 8)):
            folder = rng.random() < 0.3
            name = rng.choice(FOLDERS) if folder else _file_name(rng)
            if name not in names:
                names.add(name)
                files.append(FileItem(name=name, kind="folder" if folder else "file"))
        return {"path": f"/home/user/{rng.choice(FOLDERS)}", "files": files}
    if app == "text_editor":
        return {"text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 30)))}
    if app == "terminal":
        return {"text": "user@host:~$ "}
    if app == "browser":
        tabs = [Tab(title=t, url=f"https://{u}/", page=p) for t, u, p in rng.sample(SITES, rng.randint(1, 4))]
        return {"tabs": tabs, "active_tab": rng.randrange(len(tabs))}
    if app == "settings":
        return {"settings": [Setting(key=k, label=label, on=rng.random() < 0.5)
                             for k, label in rng.sample(SETTINGS, rng.randint(3, 6))]}
    if app == "spreadsheet":
        cells = {f"{c}{r}": str(rng.randint(0, 999)) for c in "ABC" for r in range(1, rng.randint(2, 7))}
        cells.update({f"A{r}": str(rng.randint(0, 999)) for r in rng.sample(range(13, SHEET_MAX_ROW + 1), rng.randint(0, 4))})
        return {"cells": cells, "selected_cell": "A1"}
    raise ValueError(app)


def _title(platform: str, app: str, content: dict[str, Any]) -> str:
    name = APP_NAMES[platform][app]
    if app == "file_manager":
        return f"{content['path'].rsplit('/', 1)[-1]} - {name}"
    if app == "browser":
        return f"{content['tabs'][content['active_tab']].title} - {name}"
    if app == "text_editor":
        return f"Untitled - {name}"
    return name


def sample_scene(seed: int, dist: SceneDistribution | None = None, scene_id: str | None = None) -> Scene:
    """A random valid scene; the same ``seed`` (and distribution) gives the same scene."""
    dist = dist or SceneDistribution()
    rng = random.Random(seed)
    platform = _weighted(rng, dist.platforms)
    width, height = rng.choice(dist.screens)
    accent = rng.choice(ACCENTS)
    wall = rng.choice(WALLPAPERS)
    appearance = Appearance(theme="dark" if rng.random() < dist.dark_p else "light", accent=accent,
                            wallpaper=wall[0], wallpaper_to=wall[1],
                            font_family=rng.choice(["sans", "sans", "serif", "mono", "rounded"]),
                            font_scale=rng.choice([0.9, 1.0, 1.0, 1.1, 1.2]),
                            density=rng.choice(["compact", "normal", "normal", "comfortable"]),
                            corner_radius=rng.choice([0, 4, 6, 8, 12]))
    windows = []
    for i in range(rng.randint(*dist.windows)):
        app = _weighted(rng, dist.apps, PLATFORM_APPS[platform])
        content = _content(rng, app)
        w = rng.randint(min(520, width - 120), min(900, width - 80))
        h = rng.randint(min(360, height - 160), min(620, height - 120))
        x = rng.randint(20, max(21, width - w - 20))
        y = rng.randint(40, max(41, height - h - 60))
        windows.append(Window(id=f"w{i}", app=app, title=_title(platform, app, content), x=x, y=y, w=w, h=h,
                              minimized=i < 1 and rng.random() < dist.minimized_p, **content))
    open_windows = [w for w in windows if not w.minimized]
    if not open_windows:  # keep at least one window on screen
        windows[-1].minimized = False
        open_windows = [windows[-1]]
    focused = open_windows[-1].id
    dialogs = []
    if rng.random() < dist.dialog_p:
        owner = open_windows[-1]
        kind = rng.choice(["confirm", "alert", "save"])
        buttons = {"confirm": ["Cancel", "OK"], "alert": ["Close"], "save": ["Cancel", "Save"]}[kind]
        title = {"confirm": "Are you sure?", "alert": "Notice", "save": "Save As"}[kind]
        dialogs.append(Dialog(id="d0", window=owner.id, kind=kind, title=title,
                              message={"confirm": "Discard unsaved changes?", "alert": "The operation completed.",
                                       "save": "Choose a file name"}[kind], buttons=buttons,
                              filename=_file_name(rng) if kind == "save" else None))
    toasts = [Toast(text=rng.choice(["Download complete", "3 updates available", "Battery at 20%",
                                     "Connected to Wi-Fi", "Screenshot saved"]))] if rng.random() < dist.toast_p else []
    names = rng.sample(sorted(set(FOLDERS) | {w.capitalize() for w in WORDS}), rng.randint(*dist.desktop_icons))
    desktop = [DesktopIcon(name=n, kind="folder" if n in FOLDERS else "file") for n in names]
    return Scene(scene_id=scene_id or f"scene-{seed}", platform=platform, width=width, height=height,
                 appearance=appearance, windows=windows, focused=focused, dialogs=dialogs, toasts=toasts,
                 desktop=desktop)


__all__ = ["APP_NAMES", "PLATFORM_APPS", "READABLE_VERSIONS", "SCENE_SCHEMA_VERSION", "SHEET_MAX_ROW", "SHEET_ROWS",
           "Appearance", "ContextMenu", "DesktopIcon", "Dialog", "FileItem",
           "Scene", "SceneDistribution", "Setting", "Tab", "Toast", "Window", "sample_scene"]
