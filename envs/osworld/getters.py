"""OSWorld evaluator getters: fetch what a metric compares (a file, a command's output, tabs).

Each getter is ``fn(vm: VMController, cfg: dict, work_dir: Path) -> Any`` registered under
OSWorld's getter type (``get_<type>`` in OSWorld's desktop_env/evaluators/getters). File
getters return a local path under ``work_dir`` (the task's scratch folder on the host) or
None when the file does not exist in the sandbox (the metric then scores 0; an agent that
did not produce the file failed the task, which is not an infrastructure error).

Ours, not OSWorld's: ``active_url`` (the active tab's URL as a string).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .controller import SetupError, VMController, chrome_profile_dirs, linked_out
from .relative_time import RelativeTimeError, resolve_rules

Getter = Callable[[VMController, dict, Path], Any]
GETTERS: dict[str, Getter] = {}


class GetterError(RuntimeError):
    """A getter cannot run as configured (task error or an unreachable browser)."""


def getter(name: str, needs: tuple[str, ...] = (), check: Callable[[dict], None] | None = None
           ) -> Callable[[Getter], Getter]:
    """Register a getter; ``needs`` are its required keys and ``check`` validates the rest of its
    config (both run before the getter, and in ``vagen osworld check`` without a sandbox)."""
    def deco(fn: Getter) -> Getter:
        GETTERS[name] = fn
        _NEEDS[name] = needs
        if check is not None:
            _CHECKS[name] = check
        return fn
    return deco


_NEEDS: dict[str, tuple[str, ...]] = {}
_CHECKS: dict[str, Callable[[dict], None]] = {}


def validate_getter(cfg: dict) -> None:
    """Raise GetterError if the getter ``cfg`` names is ours and ``cfg`` could not run (a missing key,
    a malformed rule); nothing is fetched."""
    t = cfg.get("type")
    missing = [k for k in _NEEDS.get(t, ()) if k not in cfg]
    if missing:
        raise GetterError(f"getter {t!r} needs {', '.join(map(repr, missing))}")
    if t in _CHECKS:
        _CHECKS[t](cfg)


def run_getter(vm: VMController, cfg: dict, work_dir: Path) -> Any:
    t = cfg.get("type")
    fn = GETTERS.get(t)
    if fn is None:
        raise GetterError(f"getter {t!r} is not implemented here")
    validate_getter(cfg)
    return fn(vm, cfg, work_dir)


def _check_multi(cfg: dict) -> None:
    if cfg.get("multi"):
        paths, dests = cfg["path"], cfg.get("dest")
        if not (isinstance(paths, list) and isinstance(dests, list) and len(paths) == len(dests)):
            raise GetterError(f"{cfg['type']} multi needs equal-length 'path' and 'dest' lists")
        gives = cfg.get("gives", [0])
        if not (isinstance(gives, list) and gives and all(isinstance(i, int) and 0 <= i < len(paths)
                                                          for i in gives)):
            raise GetterError(f"{cfg['type']}: 'gives' must list indices into 'path', got {gives!r:.80}")
    elif not isinstance(cfg["path"], str):
        raise GetterError(f"{cfg['type']}: 'path' must be a string (or use multi), got {cfg['path']!r:.80}")


def _check_relative_time(cfg: dict) -> None:
    try:
        resolve_rules(cfg["rules"])
    except RelativeTimeError as e:
        raise GetterError(f"rule_relativeTime: {e}") from e


def _dest(work_dir: Path, name: str) -> Path:
    p = (work_dir / Path(name).name)
    p.parent.mkdir(parents=True, exist_ok=True)
    return p


# -- files ---------------------------------------------------------------------------------------
@getter("vm_file", needs=("path",), check=_check_multi)
def get_vm_file(vm: VMController, cfg: dict, work_dir: Path) -> str | list[str | None] | None:
    """``{"path", "dest"}`` or ``{"multi": true, "path": [...], "dest": [...], "gives": [i, ...]}``."""
    if cfg.get("multi"):
        paths, dests = cfg["path"], cfg["dest"]
        got = [_fetch(vm, p, _dest(work_dir, d)) for p, d in zip(paths, dests, strict=True)]
        gives = cfg.get("gives", [0])
        return got[gives[0]] if len(gives) == 1 else [got[i] for i in gives]
    return _fetch(vm, cfg["path"], _dest(work_dir, cfg.get("dest") or Path(cfg["path"]).name))


def _fetch(vm: VMController, path: str, dest: Path) -> str | None:
    data = vm.read_file(path)
    if data is None:
        return None
    dest.write_bytes(data)
    return str(dest)


@getter("cloud_file", needs=("path",), check=_check_multi)
def get_cloud_file(vm: VMController, cfg: dict, work_dir: Path) -> str | list[str]:
    """A reference file by URL, from the file cache (or the network when allowed)."""
    paths = cfg["path"] if cfg.get("multi") else [cfg["path"]]
    dests = cfg["dest"] if cfg.get("multi") else [cfg.get("dest") or Path(cfg["path"]).name]
    out = []
    for url, dest in zip(paths, dests, strict=True):
        try:
            src = vm.cache.fetch(url, Path(dest).name, vm.task_id)
        except SetupError as e:
            raise GetterError(str(e)) from e
        target = _dest(work_dir, dest)
        target.write_bytes(src.read_bytes())
        out.append(str(target))
    if cfg.get("multi"):
        gives = cfg.get("gives", [0])
        return out[gives[0]] if len(gives) == 1 else [out[i] for i in gives]
    return out[0]


@getter("cache_file", needs=("path",))
def get_cache_file(vm: VMController, cfg: dict, work_dir: Path) -> str:
    """A file already in the task's cache (e.g. written by a setup step's ``stdout``)."""
    p = (work_dir / cfg["path"]).resolve()
    if not p.is_relative_to(work_dir.resolve()):
        raise GetterError(f"cache_file path escapes the task folder: {cfg['path']!r}")
    if not p.is_file():
        hit = vm.cache.lookup(cfg["path"], task_id=vm.task_id)
        if hit is None:
            raise GetterError(f"cache_file {cfg['path']!r} is neither in the task folder nor the file cache")
        return str(hit)
    return str(p)


@getter("local_file", needs=("path",))
def get_local_file(vm: VMController, cfg: dict, work_dir: Path) -> str:
    return str(cfg["path"])


@getter("content_from_vm_file", needs=("path",))
def get_content_from_vm_file(vm: VMController, cfg: dict, work_dir: Path) -> str | None:
    data = vm.read_file(cfg["path"])
    return None if data is None else data.decode("utf-8", errors="replace")


@getter("list_directory", needs=("path",))
def get_list_directory(vm: VMController, cfg: dict, work_dir: Path) -> dict | None:
    try:
        return vm.client.list_directory(vm.vm_path(cfg["path"]))
    except Exception as e:  # a missing folder (or one linked out of the sandbox) is the agent's outcome
        if getattr(e, "status", None) in (400, 404):
            return None
        if linked_out(e):
            vm.refused_reads.append(cfg["path"])
            return None
        raise


# -- commands, terminal, screen ------------------------------------------------------------------
@getter("vm_command_line", needs=("command",))
def get_vm_command_line(vm: VMController, cfg: dict, work_dir: Path) -> str:
    cmd = vm.command(cfg["command"])
    return vm.client.execute(cmd, shell=bool(cfg.get("shell", False)), timeout=float(cfg.get("timeout", 60))).output


@getter("vm_command_error", needs=("command",))
def get_vm_command_error(vm: VMController, cfg: dict, work_dir: Path) -> str:
    cmd = vm.command(cfg["command"])
    return vm.client.execute(cmd, shell=bool(cfg.get("shell", False)), timeout=float(cfg.get("timeout", 60))).error


@getter("vm_terminal_output")
def get_vm_terminal_output(vm: VMController, cfg: dict, work_dir: Path) -> str | None:
    return vm.client.terminal()


@getter("vm_screen_size")
def get_vm_screen_size(vm: VMController, cfg: dict, work_dir: Path) -> dict:
    w, h = vm.client.screen_size()
    return {"width": w, "height": h}


@getter("accessibility_tree")
def get_accessibility_tree(vm: VMController, cfg: dict, work_dir: Path) -> str | None:
    return vm.client.accessibility().get("AT")


# -- rules -----------------------------------------------------------------------------------------
def _subst(vm: VMController, value: Any) -> Any:
    """``/home/user`` in rules means the sandbox's home, as everywhere else in a task."""
    if isinstance(value, str):
        return vm.substitute(value) if "/home/user" in value else value
    if isinstance(value, list):
        return [_subst(vm, v) for v in value]
    if isinstance(value, dict):
        return {k: _subst(vm, v) for k, v in value.items()}
    return value


@getter("rule", needs=("rules",))
def get_rule(vm: VMController, cfg: dict, work_dir: Path) -> Any:
    return _subst(vm, cfg["rules"])


@getter("rule_relativeTime", needs=("rules",), check=_check_relative_time)
def get_rule_relativeTime(vm: VMController, cfg: dict, work_dir: Path) -> dict:
    """``rules`` with its expected date templates filled for today (grammar: relative_time.py)."""
    try:
        return resolve_rules(_subst(vm, cfg["rules"]))
    except RelativeTimeError as e:
        raise GetterError(f"rule_relativeTime: {e}") from e


# -- Chrome (DevTools inside the sandbox + the profile's files) -----------------------------------
def _tabs(vm: VMController) -> list[dict]:
    if not vm.browser_running():
        return []
    try:
        return vm.tabs()
    except SetupError as e:
        raise GetterError(str(e)) from e


@getter("open_tabs_info")
def get_open_tabs_info(vm: VMController, cfg: dict, work_dir: Path) -> list[dict]:
    """Open tabs ``[{"title", "url"}]``, most recently active first; [] when no browser runs."""
    return [{"title": t.get("title", ""), "url": t.get("url", "")} for t in _tabs(vm)]


@getter("active_tab_info")
def get_active_tab_info(vm: VMController, cfg: dict, work_dir: Path) -> dict | None:
    tabs = _tabs(vm)
    return {"title": tabs[0].get("title", ""), "url": tabs[0].get("url", "")} if tabs else None


@getter("active_url")
def get_active_url(vm: VMController, cfg: dict, work_dir: Path) -> str | None:
    tabs = _tabs(vm)
    return tabs[0].get("url") if tabs else None


@getter("active_url_from_accessTree")
def get_active_url_from_access_tree(vm: VMController, cfg: dict, work_dir: Path) -> str | None:
    """OSWorld reads the address bar from the accessibility tree; DevTools gives the same URL."""
    return get_active_url(vm, cfg, work_dir)


def _profile_file(vm: VMController, name: str) -> bytes | None:
    for d in chrome_profile_dirs(vm.home):
        data = vm.read_file(f"{d}/{name}")
        if data is not None:
            return data
    return None


@getter("bookmarks")
def get_bookmarks(vm: VMController, cfg: dict, work_dir: Path) -> dict | None:
    """The profile's ``Bookmarks`` JSON ``roots`` (bookmark_bar, other, synced)."""
    data = _profile_file(vm, "Bookmarks")
    if data is None:
        return None
    try:
        return json.loads(data).get("roots")
    except json.JSONDecodeError:
        return None


@getter("history")
def get_history(vm: VMController, cfg: dict, work_dir: Path) -> list[tuple] | None:
    """Rows ``(url, title, last_visit_time)`` of the profile's History database."""
    data = _profile_file(vm, "History")
    if data is None:
        return None
    db = _dest(work_dir, cfg.get("dest", "History.sqlite"))
    db.write_bytes(data)
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            return con.execute("SELECT url, title, last_visit_time FROM urls").fetchall()
    except sqlite3.Error:
        return None


def _preferences(vm: VMController) -> dict:
    data = _profile_file(vm, "Preferences")
    try:
        return json.loads(data) if data else {}
    except json.JSONDecodeError:
        return {}


@getter("enable_do_not_track")
def get_enable_do_not_track(vm: VMController, cfg: dict, work_dir: Path) -> str:
    return "true" if _preferences(vm).get("enable_do_not_track", False) else "false"


@getter("default_search_engine")
def get_default_search_engine(vm: VMController, cfg: dict, work_dir: Path) -> str:
    prefs = _preferences(vm)
    return str(prefs.get("default_search_provider_data", {}).get("template_url_data", {}).get("short_name", "Google"))


@getter("chrome_font_size")
def get_chrome_font_size(vm: VMController, cfg: dict, work_dir: Path) -> dict:
    fonts = _preferences(vm).get("webkit", {}).get("webprefs", {})
    return {"default_fixed_font_size": fonts.get("default_fixed_font_size", 13),
            "default_font_size": fonts.get("default_font_size", 16),
            "minimum_font_size": fonts.get("minimum_font_size", 0)}
