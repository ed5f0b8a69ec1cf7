"""OSWorld task files as validated, typed objects.

A task is OSWorld's JSON (Xie et al., 2024, ``evaluation_examples/examples/<domain>/<id>.json``)::

    {"id", "snapshot", "instruction", "source", "config": [{"type", "parameters"}, ...],
     "related_apps", "evaluator": {"func", "conj"?, "result"?, "expected"?, "options"?, "postconfig"?},
     "trajectory"?, "proxy"?, "fixed_ip"?, "possibility_of_env_change"?, "hint"?, "env_may_change"?}

``func`` is a name or a list of names; with a list, ``result``/``expected``/``options`` are
lists of the same length and ``conj`` ("and" default, or "or") combines the scores.
Setup-step types, getter types and metric names are checked against OSWorld's whole
vocabulary: a name OSWorld does not have is an error naming the task, the field and the
value (a typo); a name OSWorld has but we do not implement loads fine and is reported by
:func:`envs.osworld.check.check_task` (``vagen osworld check``).

Every field of the published format loads with its type checked (a wrong type is an error
naming the field). ``hint`` (a note some tasks carry, e.g. "The input is case sensitive.") is
kept but, as in OSWorld's runner, not shown to the agent. Fields the format does not have are
kept, unchecked, in ``Task.extra`` (``Evaluator.extra`` inside ``evaluator``), so a task set
newer than this code still loads and round-trips.

Our extension, ignored by OSWorld: an optional ``"vagen"`` object (``state``: ground truth for
the world-modeling reward; ``oracle`` lives in a ``<id>.oracle.json`` file beside the task).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Every setup-step type OSWorld's SetupController knows.
OSWORLD_SETUP_TYPES = frozenset({
    "download", "upload_file", "change_wallpaper", "tidy_desktop", "open", "launch", "execute",
    "execute_with_verification", "command", "sleep", "act", "replay", "activate_window", "close_window",
    "proxy", "chrome_open_tabs", "chrome_close_tabs", "googledrive", "login", "update_browse_history",
})
#: What our setup executor runs.
SUPPORTED_SETUP_TYPES = frozenset({
    "download", "upload_file", "open", "launch", "execute", "execute_with_verification", "command", "sleep",
    "activate_window", "close_window", "chrome_open_tabs", "chrome_close_tabs",
})
#: Every getter type OSWorld's evaluators know (``get_<type>`` in desktop_env/evaluators/getters).
OSWORLD_GETTER_TYPES = frozenset({
    "default_search_engine", "cookie_data", "bookmarks", "open_tabs_info", "pdf_from_url", "shortcuts_on_desktop",
    "history", "page_info", "enabled_experiments", "chrome_language", "chrome_font_size", "chrome_color_scheme",
    "chrome_appearance_mode_ui", "profile_name", "number_of_search_results", "googledrive_file", "active_tab_info",
    "active_tab_url_and_body_text", "enable_do_not_track", "enable_enhanced_safety_browsing",
    "enable_safe_browsing", "new_startup_page", "find_unpacked_extension_path", "data_delete_automacally",
    "active_tab_html_parse", "active_tab_url_parse", "gotoRecreationPage_and_get_html_content", "url_dashPart",
    "active_url_from_accessTree", "find_installed_extension_name", "info_from_website", "macys_product_url_parse",
    "url_path_parse", "cloud_file", "local_file", "vm_file", "cache_file", "content_from_vm_file",
    "vm_command_line", "vm_terminal_output", "vm_command_error", "gimp_config_file", "audio_in_slide",
    "background_image_in_slide", "vm_screen_size", "vm_window_size", "vm_wallpaper", "list_directory", "rule",
    "accessibility_tree", "rule_relativeTime", "time_diff_range", "replay", "vlc_playing_info", "vlc_config",
    "default_video_player", "vscode_config", "conference_city_in_order", "realtime_gui_bench_state",
    "chrome_saved_address",
})
#: Getter types that are ours (not OSWorld's); documented in getters.py.
VAGEN_GETTER_TYPES = frozenset({"active_url"})
REQUIRED_PARAMS: dict[str, tuple[str, ...]] = {
    "download": ("files",), "upload_file": ("files",), "open": ("path",), "launch": ("command",),
    "execute": ("command",), "execute_with_verification": ("command",), "command": ("command",),
    "sleep": ("seconds",), "activate_window": ("window_name",), "close_window": ("window_name",),
    "chrome_open_tabs": ("urls_to_open",), "chrome_close_tabs": ("urls_to_close",),
}
TOP_LEVEL_KEYS = frozenset({
    "id", "snapshot", "instruction", "source", "config", "trajectory", "related_apps", "evaluator", "proxy",
    "fixed_ip", "possibility_of_env_change", "hint", "env_may_change", "vagen", "human_annotation",
})
EVALUATOR_KEYS = frozenset({"func", "conj", "result", "expected", "options", "postconfig"})


class TaskFormatError(ValueError):
    """A task file is malformed: the message names the task, the field and the value."""


@dataclass(frozen=True)
class SetupStep:
    type: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class Getter:
    """One ``result``/``expected`` entry: ``{"type": ..., <getter params>}``."""

    type: str
    params: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self.params}


@dataclass(frozen=True)
class Evaluator:
    funcs: tuple[str, ...]
    conj: str = "and"
    results: tuple[Getter | None, ...] = ()
    expected: tuple[Getter | None, ...] = ()
    options: tuple[dict[str, Any], ...] = ()
    postconfig: tuple[SetupStep, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def infeasible(self) -> bool:
        return self.funcs == ("infeasible",)


@dataclass(frozen=True)
class Task:
    id: str
    instruction: str
    config: tuple[SetupStep, ...]
    evaluator: Evaluator
    snapshot: str = ""
    source: str | tuple[str, ...] = ""
    related_apps: tuple[str, ...] = ()
    trajectory: str = ""
    proxy: bool = False
    fixed_ip: bool = False
    possibility_of_env_change: str = "low"
    hint: str = ""
    env_may_change: bool = False
    domain: str = ""
    path: str | None = None
    vagen: dict[str, Any] = field(default_factory=dict)
    human_annotation: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def feasible(self) -> bool:
        return not self.evaluator.infeasible

    @property
    def oracle_path(self) -> Path | None:
        return Path(self.path).with_suffix(".oracle.json") if self.path else None

    def oracle(self) -> dict[str, Any]:
        """The stored oracle: ``{"action_space": ..., "actions": [str, ...]}`` (ends with DONE/FAIL)."""
        p = self.oracle_path
        if p is None or not p.is_file():
            raise FileNotFoundError(f"task {self.id}: no oracle file beside it ({p})")
        data = json.loads(p.read_text())
        if not isinstance(data.get("actions"), list) or not all(isinstance(a, str) for a in data["actions"]):
            raise TaskFormatError(f"task {self.id}: {p.name}: 'actions' must be a list of strings")
        return data


def _err(tid: str, where: str, msg: str) -> TaskFormatError:
    return TaskFormatError(f"task {tid}: {where}: {msg}")


def _setup_step(tid: str, where: str, raw: Any) -> SetupStep:
    if not isinstance(raw, dict) or "type" not in raw:
        raise _err(tid, where, f"a setup step must be an object with 'type', got {raw!r:.120}")
    t = raw["type"]
    if t not in OSWORLD_SETUP_TYPES:
        raise _err(tid, f"{where}.type", f"unknown setup type {t!r} (OSWorld has: {', '.join(sorted(OSWORLD_SETUP_TYPES))})")
    params = raw.get("parameters", {})
    if not isinstance(params, dict):
        raise _err(tid, f"{where}.parameters", f"must be an object, got {params!r:.120}")
    for key in REQUIRED_PARAMS.get(t, ()):
        if key not in params:
            raise _err(tid, f"{where}.parameters", f"{t} needs {key!r}")
    if t in ("execute", "command", "execute_with_verification", "launch"):
        cmd = params["command"]
        if not (isinstance(cmd, str) or (isinstance(cmd, list) and cmd and all(isinstance(c, str) for c in cmd))):
            raise _err(tid, f"{where}.parameters.command", f"must be a string or a list of strings, got {cmd!r:.120}")
    if t == "sleep" and (isinstance(params["seconds"], bool) or not isinstance(params["seconds"], (int, float))):
        raise _err(tid, f"{where}.parameters.seconds", f"must be a number, got {params['seconds']!r}")
    if t in ("download", "upload_file"):
        files = params["files"]
        if not isinstance(files, list) or not all(isinstance(f, dict) and "path" in f for f in files):
            raise _err(tid, f"{where}.parameters.files", "must be a list of {url|local_path, path} objects")
        src = "url" if t == "download" else "local_path"
        for i, f in enumerate(files):
            if not isinstance(f.get(src), str):
                raise _err(tid, f"{where}.parameters.files[{i}]", f"needs {src!r} (a string)")
    for key in ("urls_to_open", "urls_to_close"):
        if key in REQUIRED_PARAMS.get(t, ()) and not (isinstance(params[key], list)
                                                      and all(isinstance(u, str) for u in params[key])):
            raise _err(tid, f"{where}.parameters.{key}", "must be a list of URL strings")
    return SetupStep(t, dict(params))


def _getter(tid: str, where: str, raw: Any) -> Getter | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise _err(tid, where, f"a getter must be an object with a string 'type', got {raw!r:.120}")
    t = raw["type"]
    if t not in OSWORLD_GETTER_TYPES and t not in VAGEN_GETTER_TYPES:
        raise _err(tid, f"{where}.type", f"unknown getter type {t!r}")
    return Getter(t, {k: v for k, v in raw.items() if k != "type"})


def _known_metrics() -> frozenset[str]:
    from envs.osworld.metrics import KNOWN_METRICS
    return KNOWN_METRICS


def _evaluator(tid: str, raw: Any) -> Evaluator:
    if not isinstance(raw, dict):
        raise _err(tid, "evaluator", f"must be an object, got {raw!r:.120}")
    if "func" not in raw:
        raise _err(tid, "evaluator", "needs 'func'")
    func = raw["func"]
    many = isinstance(func, list)
    funcs = tuple(func) if many else (func,)
    if not funcs or not all(isinstance(f, str) for f in funcs):
        raise _err(tid, "evaluator.func", f"must be a name or a non-empty list of names, got {func!r}")
    known = _known_metrics()
    for i, f in enumerate(funcs):
        if f not in known:
            raise _err(tid, f"evaluator.func[{i}]" if many else "evaluator.func", f"unknown metric {f!r}")
    conj = raw.get("conj", "and")
    if conj not in ("and", "or"):
        raise _err(tid, "evaluator.conj", f"must be 'and' or 'or', got {conj!r}")
    n = len(funcs)

    def listed(key: str, default: Any) -> tuple:
        value = raw.get(key, default)
        if many:
            if key not in raw:
                return (default,) * n
            if not isinstance(value, list) or len(value) != n:
                raise _err(tid, f"evaluator.{key}", f"with {n} funcs must be a list of {n}, got {value!r:.120}")
            return tuple(value)
        return (value,)

    results = tuple(_getter(tid, f"evaluator.result[{i}]" if many else "evaluator.result", r)
                    for i, r in enumerate(listed("result", None)))
    expected = tuple(_getter(tid, f"evaluator.expected[{i}]" if many else "evaluator.expected", e)
                     for i, e in enumerate(listed("expected", None)))
    raw_opts = raw.get("options", {})
    if many and isinstance(raw_opts, dict):
        opts = (raw_opts,) * n  # OSWorld allows one options object for all funcs
    else:
        opts = listed("options", {})
    for i, o in enumerate(opts):
        if not isinstance(o, dict):
            raise _err(tid, f"evaluator.options[{i}]" if many else "evaluator.options", f"must be an object, got {o!r:.80}")
    if not funcs == ("infeasible",):
        for i, (f, r) in enumerate(zip(funcs, results, strict=True)):
            if r is None:
                raise _err(tid, f"evaluator.result[{i}]" if many else "evaluator.result", f"metric {f!r} needs a result getter")
    post = raw.get("postconfig", [])
    if not isinstance(post, list):
        raise _err(tid, "evaluator.postconfig", "must be a list of setup steps")
    postconfig = tuple(_setup_step(tid, f"evaluator.postconfig[{i}]", s) for i, s in enumerate(post))
    extra = {k: v for k, v in raw.items() if k not in EVALUATOR_KEYS}
    return Evaluator(funcs, conj, results, expected, tuple(opts), postconfig, extra)


def parse_task(raw: Any, path: str | None = None, domain: str = "") -> Task:
    """Validate one task object (parsed JSON); raise TaskFormatError naming task, field and value."""
    if not isinstance(raw, dict):
        raise TaskFormatError(f"{path or 'task'}: a task must be a JSON object")
    tid = raw.get("id")
    if not isinstance(tid, str) or not tid:
        raise TaskFormatError(f"{path or 'task'}: 'id' must be a non-empty string, got {tid!r}")
    instruction = raw.get("instruction")
    if not isinstance(instruction, str) or not instruction.strip():
        raise _err(tid, "instruction", f"must be a non-empty string, got {instruction!r:.80}")
    config = raw.get("config", [])
    if not isinstance(config, list):
        raise _err(tid, "config", f"must be a list, got {config!r:.80}")
    steps = tuple(_setup_step(tid, f"config[{i}]", s) for i, s in enumerate(config))
    apps = raw.get("related_apps", [])
    if not isinstance(apps, list) or not all(isinstance(a, str) for a in apps):
        raise _err(tid, "related_apps", f"must be a list of strings, got {apps!r:.80}")
    for key in ("proxy", "fixed_ip", "env_may_change"):
        if not isinstance(raw.get(key, False), bool):
            raise _err(tid, key, f"must be true or false, got {raw[key]!r}")
    for key in ("snapshot", "trajectory", "hint"):
        if not isinstance(raw.get(key, ""), str):
            raise _err(tid, key, f"must be a string, got {raw[key]!r:.80}")
    source = raw.get("source", "")
    if isinstance(source, list) and all(isinstance(x, str) for x in source):
        source = tuple(source)
    elif not isinstance(source, str):
        raise _err(tid, "source", f"must be a string or a list of strings, got {source!r:.80}")
    change = raw.get("possibility_of_env_change", "low")
    if change not in ("low", "medium", "high"):
        raise _err(tid, "possibility_of_env_change", f"must be low|medium|high, got {change!r}")
    ours = raw.get("vagen", {})
    if not isinstance(ours, dict):
        raise _err(tid, "vagen", "must be an object")
    snapshot = raw.get("snapshot", "")
    return Task(id=tid, instruction=instruction, config=steps, evaluator=_evaluator(tid, raw.get("evaluator")),
                snapshot=snapshot, source=source, related_apps=tuple(apps), trajectory=raw.get("trajectory", ""),
                proxy=raw.get("proxy", False), fixed_ip=raw.get("fixed_ip", False), possibility_of_env_change=change,
                hint=raw.get("hint", ""), env_may_change=raw.get("env_may_change", False),
                domain=domain or snapshot, path=path, vagen=dict(ours),
                human_annotation=raw.get("human_annotation"),
                extra={k: v for k, v in raw.items() if k not in TOP_LEVEL_KEYS})


def load_task(path: str | Path, domain: str = "") -> Task:
    p = Path(path)
    try:
        raw = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise TaskFormatError(f"{p}: not valid JSON: {e}") from e
    if not domain and "__" in p.stem:  # <domain>__<id>.json (flat layout)
        domain = p.stem.split("__", 1)[0]
    elif not domain and p.parent.name not in ("", "."):
        domain = p.parent.name
    return parse_task(raw, str(p), domain)


SUITES_DIR = Path(__file__).with_name("suites")


def suite_dir(name_or_dir: str | Path) -> Path:
    """A bundled suite's folder (``osworld-lite``) or a folder of task files."""
    p = Path(name_or_dir)
    if p.is_dir():
        return p
    bundled = SUITES_DIR / str(name_or_dir)
    if bundled.is_dir():
        return bundled
    names = sorted(d.name for d in SUITES_DIR.iterdir() if d.is_dir()) if SUITES_DIR.is_dir() else []
    raise FileNotFoundError(f"no task suite {str(name_or_dir)!r}: not a folder, and bundled suites are {names}")


def load_suite(name_or_dir: str | Path, domains: list[str] | None = None) -> list[Task]:
    """Every task of a suite, sorted by (domain, id).

    A folder with ``test_all.json`` (OSWorld's index ``{domain: [id, ...]}``) loads exactly those
    ``<domain>/<id>.json``; otherwise every ``*.json`` below it (oracle files excluded).
    """
    root = suite_dir(name_or_dir)
    index = root / "test_all.json"
    tasks: list[Task] = []
    if index.is_file():
        for domain, ids in json.loads(index.read_text()).items():
            for tid in ids:
                tasks.append(load_task(root / domain / f"{tid}.json", domain))
    else:
        for p in sorted(root.rglob("*.json")):
            if p.name.endswith(".oracle.json") or p.name == "test_all.json" or p.name.startswith("_"):
                continue
            tasks.append(load_task(p, "" if p.parent == root else p.parent.name))
    if domains:
        tasks = [t for t in tasks if t.domain in domains]
    ids = [t.id for t in tasks]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise TaskFormatError(f"duplicate task ids in {root}: {sorted(dup)}")
    return sorted(tasks, key=lambda t: (t.domain, t.id))
