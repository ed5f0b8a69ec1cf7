r"""``vagen osworld check PATH``: what OSWorld tasks need to run here, without running them.

For every task file (PATH is a task file, a folder of them or a bundled suite), a list of
:class:`Item`\ s, each with a machine-readable ``kind`` and a message:

- ``needs_network``: the task opens remote pages or expects OSWorld's internet proxy;
- ``needs_cache``: a ``download`` / ``cloud_file`` URL is not in the file cache (the network is
  only probed with ``probe=True``);
- ``needs_account``: a step signs in to an outside service (Google Drive, a website login);
- ``missing_app``: a program the task launches, names in ``related_apps`` or pipes a getter
  through is not installed on this machine (where the local provider's sandboxes run);
- ``unsupported``: ours to fix: a setup step type, getter or metric we do not implement, or
  evaluator options that would make the evaluation raise (getter configs such as relative-time
  rules, metric options checked by the metric itself).

A task whose items are all of the first three kinds needs nothing from us (``external``); one
with ``missing_app`` or ``unsupported`` items is ``blocked``; one with none is ``runnable``; a
file that does not parse is ``invalid`` (the error names the field). Nothing raises.
"""

from __future__ import annotations

import re
import shutil
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .controller import BROWSERS, FileCache
from .getters import GETTERS, GetterError, validate_getter
from .metrics import METRICS, NOT_STATIC, MetricError, validate_metric
from .relative_time import RelativeTimeError, resolve_rules
from .tasks import SUPPORTED_SETUP_TYPES, Getter, SetupStep, Task, TaskFormatError, load_task, suite_dir

KINDS = ("needs_network", "needs_cache", "needs_account", "missing_app", "unsupported")
#: Kinds a user can supply (internet, a filled cache, credentials); the rest are ours to provide.
EXTERNAL_KINDS = frozenset({"needs_network", "needs_cache", "needs_account"})
#: Setup step types that sign in to an outside service.
ACCOUNT_STEPS = frozenset({"googledrive", "login"})
STATUSES = ("runnable", "external", "blocked", "invalid")

#: related_apps -> any of these programs must exist.
APP_BINARIES = {
    "chrome": BROWSERS, "google-chrome": BROWSERS, "chromium": BROWSERS,
    "libreoffice calc": ("soffice", "localc", "libreoffice"), "libreoffice_calc": ("soffice", "localc", "libreoffice"),
    "libreoffice writer": ("soffice", "lowriter", "libreoffice"),
    "libreoffice_writer": ("soffice", "lowriter", "libreoffice"),
    "libreoffice impress": ("soffice", "loimpress", "libreoffice"),
    "libreoffice_impress": ("soffice", "loimpress", "libreoffice"),
    "gimp": ("gimp",), "vlc": ("vlc",), "thunderbird": ("thunderbird",), "vs_code": ("code",), "vscode": ("code",),
    "mousepad": ("mousepad",), "terminal": ("xterm",), "x11": ("xset",),
}
SHELL_BUILTINS = {"echo", "test", "[", "cd", "export", "printf", "true", "false", "if", "then", "else", "fi", "for",
                  "do", "done", "while", "read", "set", "source", ".", "exit", "local", "return", "eval", "exec",
                  "case", "esac", "in", "function", "shift", "unset", "command", "type", "let", "declare", "wait"}
_QUOTED = re.compile(r"'[^']*'|\"(?:\\.|[^\"\\])*\"")
_CMD_WORD = re.compile(r"(?:^|[|;&(\n]|\$\(|&&|\|\||\bthen\b|\bdo\b|\belse\b)\s*([A-Za-z_][\w.+-]*)(?=\s|$|;|\))", re.M)


@dataclass(frozen=True)
class Item:
    """One thing a task needs that this machine lacks: ``kind`` (one of ``KINDS``) and a message."""

    kind: str
    message: str

    def as_dict(self) -> dict:
        return {"kind": self.kind, "message": self.message}


@dataclass
class TaskReport:
    id: str
    domain: str
    path: str
    items: list[Item] = field(default_factory=list)
    error: str | None = None

    @property
    def status(self) -> str:
        if self.error:
            return "invalid"
        if not self.items:
            return "runnable"
        return "external" if all(i.kind in EXTERNAL_KINDS for i in self.items) else "blocked"

    def add(self, kind: str, message: str) -> None:
        assert kind in KINDS, kind
        if not any(i.kind == kind and i.message == message for i in self.items):
            self.items.append(Item(kind, message))

    def as_dict(self) -> dict:
        return {"id": self.id, "domain": self.domain, "path": self.path, "status": self.status,
                "items": [i.as_dict() for i in self.items], "error": self.error}


def _have(names: tuple[str, ...] | list[str]) -> bool:
    return any(shutil.which(n) for n in names)


def _program(argv0: str) -> tuple[str, ...]:
    name = Path(argv0).name
    return BROWSERS if name in BROWSERS else (name,)


def shell_programs(command: str | list[str]) -> list[str]:
    """Programs a shell command line runs (first words of its pipeline stages), minus builtins."""
    if isinstance(command, list):
        if len(command) >= 3 and command[1] == "-c" and Path(command[0]).name in ("sh", "bash"):
            return shell_programs(command[2])
        return [command[0]] if command else []
    found = []
    command = _QUOTED.sub("''", command)  # awk/python programs and messages inside quotes are not commands
    for m in _CMD_WORD.finditer(command):
        w = m.group(1)
        if w not in SHELL_BUILTINS and "=" not in w and w not in found:
            found.append(w)
    return found


def _reachable(url: str, timeout: float = 5.0) -> bool:
    try:
        req = urllib.request.Request(url, method="HEAD")
        with urllib.request.urlopen(req, timeout=timeout):  # noqa: S310 - only with --probe
            return True
    except Exception:
        return False


def _remote(url: str) -> bool:
    from urllib.parse import urlparse

    u = urlparse(url)
    return u.scheme in ("http", "https") and (u.hostname or "") not in ("localhost", "127.0.0.1", "::1")


def _step_items(step: SetupStep, where: str, cache: FileCache, task_id: str, probe: bool, r: TaskReport) -> None:
    p = step.parameters
    if step.type in ACCOUNT_STEPS:
        r.add("needs_account", f"{where}: {step.type} signs in to an outside service (credentials and the "
                               "internet needed)")
    if step.type not in SUPPORTED_SETUP_TYPES:
        r.add("unsupported", f"{where}: setup type {step.type!r} is not implemented here")
        return
    if step.type == "download":
        for f in p["files"]:
            url = f["url"]
            if cache.lookup(url, Path(f["path"]).name, task_id) is None:
                if probe and _reachable(url):
                    r.add("needs_cache", f"{where}: download {url} is not cached but reachable (cache_network=true "
                                         "or `--cache` fetches it)")
                else:
                    r.add("needs_cache", f"{where}: download {url} is not in the file cache"
                                         + (" and unreachable" if probe else " (network not probed; --probe to try)"))
    urls = list(p.get("urls_to_open", [])) if step.type == "chrome_open_tabs" else []
    if step.type == "launch" and isinstance(p["command"], list):
        urls += [a for a in p["command"][1:] if isinstance(a, str) and "://" in a]
    for url in urls:
        if _remote(url):
            r.add("needs_network", f"{where}: opens {url}, which needs the internet")
    if step.type in ("launch", "execute", "command", "execute_with_verification"):
        cmd = p["command"]
        if isinstance(cmd, list) and len(cmd) == 3 and Path(cmd[0]).name.startswith("python") and "pyautogui" in cmd[2]:
            return  # runs through our pyautogui parser, not a Python in the sandbox
        if isinstance(cmd, list) and cmd and Path(cmd[0]).name == "socat" and any("9222" in c for c in cmd):
            return  # OSWorld's CDP forward: skipped by design
        progs = shell_programs(cmd) if (p.get("shell") or isinstance(cmd, str)) else [cmd[0]]
        for prog in progs:
            if not prog.startswith("{") and not _have(_program(prog)):
                r.add("missing_app", f"{where}: program {prog!r} is not installed here")


def _static_expected(g: Getter | None) -> object:
    """The expected value when it is known without a sandbox (rules), else ``NOT_STATIC``."""
    if g is not None and g.type == "rule":
        return g.params.get("rules")
    if g is not None and g.type == "rule_relativeTime":
        try:
            return resolve_rules(g.params.get("rules"))
        except RelativeTimeError:
            return NOT_STATIC  # reported for the getter itself
    return NOT_STATIC


def _getter_items(g: Getter, where: str, cache: FileCache, task_id: str, r: TaskReport) -> bool:
    """Items for one getter; False when it cannot run here at all."""
    if g.type not in GETTERS:
        r.add("unsupported", f"{where} getter {g.type!r} is not implemented here")
        return False
    try:
        validate_getter(g.as_dict())
    except GetterError as e:
        r.add("unsupported", f"{where}: evaluation would fail: {e}")
        return False
    if g.type == "cloud_file":
        urls = g.params.get("path")
        for url in urls if isinstance(urls, list) else [urls]:
            if cache.lookup(str(url), task_id=task_id) is None:
                r.add("needs_cache", f"{where}: reference file {url} is not in the file cache")
    if g.type in ("vm_command_line", "vm_command_error"):
        for prog in shell_programs(g.params.get("command", "")):
            if not _have(_program(prog)):
                r.add("missing_app", f"{where}: command uses {prog!r}, which is not installed here")
    return True


def check_task(task: Task, cache: FileCache, probe: bool = False) -> TaskReport:
    """What ``task`` needs that this machine (with ``cache``) lacks."""
    r = TaskReport(task.id, task.domain, task.path or "")
    if task.proxy:
        r.add("needs_network", "proxy: true (the task expects OSWorld's internet proxy)")
    for i, s in enumerate(task.config):
        _step_items(s, f"config[{i}]", cache, task.id, probe, r)
    ev = task.evaluator
    for i, s in enumerate(ev.postconfig):
        _step_items(s, f"postconfig[{i}]", cache, task.id, probe, r)
    for app in task.related_apps:
        bins = APP_BINARIES.get(app.lower())
        if bins is not None and not _have(bins):
            r.add("missing_app", f"related app {app!r} is not installed here (looked for {', '.join(bins)})")
    if ev.infeasible:
        return r
    many = len(ev.funcs) > 1
    for i, func in enumerate(ev.funcs):
        at = f"[{i}]" if many else ""
        ok = True
        for kind, g in (("result", ev.results[i]), ("expected", ev.expected[i])):
            if g is not None:
                ok = _getter_items(g, f"{kind}{at}", cache, task.id, r) and ok
        if func not in METRICS:
            r.add("unsupported", f"metric {func!r} is not implemented here")
            continue
        expected = _static_expected(ev.expected[i]) if ev.expected[i] is not None else None
        if not ok and expected is NOT_STATIC:
            continue
        try:
            validate_metric(func, ev.options[i], ev.expected[i] is not None, expected)
        except MetricError as e:
            r.add("unsupported", f"evaluator.options{at}: evaluation would fail: {e}")
    return r


def _task_files(base: Path) -> list[Path]:
    return [p for p in sorted(base.rglob("*.json"))
            if not (p.name.endswith(".oracle.json") or p.name in ("test_all.json", "index.json")
                    or "files" in p.relative_to(base).parts)]


def check_dir(root: str | Path, cache: FileCache | None = None, probe: bool = False) -> list[TaskReport]:
    """Reports for ``root``: one task file, every task file below a folder, or a bundled suite."""
    path = Path(root)
    if path.is_file():
        base, files = path.parent, [path]
    else:
        base = suite_dir(root)
        files = _task_files(base)
    dirs = ([base / "files"] if (base / "files").is_dir() else []) + (cache.dirs if cache else [])
    cache = FileCache(dirs, allow_network=False)
    reports = []
    for p in files:
        try:
            t = load_task(p)
        except (TaskFormatError, OSError, ValueError) as e:
            reports.append(TaskReport(p.stem, p.parent.name, str(p), error=str(e)))
            continue
        reports.append(check_task(t, cache, probe))
    return reports


def summary(reports: list[TaskReport]) -> dict:
    """Counts per domain and status, items per kind, and the share that needs nothing from us."""
    domains: dict[str, Counter] = {}
    for r in reports:
        domains.setdefault(r.domain, Counter())[r.status] += 1
    by_kind = Counter(i.kind for r in reports for i in r.items)
    tasks_by_kind = Counter(k for r in reports for k in {i.kind for i in r.items})
    ours = sum(r.status in ("runnable", "external") for r in reports)
    return {"tasks": len(reports), "status": {s: sum(r.status == s for r in reports) for s in STATUSES},
            "needs_nothing_from_us": ours, "needs_nothing_from_us_pct": round(100 * ours / max(len(reports), 1), 1),
            "domains": {d: {s: c[s] for s in STATUSES} for d, c in sorted(domains.items())},
            "items_by_kind": {k: by_kind[k] for k in KINDS}, "tasks_by_kind": {k: tasks_by_kind[k] for k in KINDS}}


def format_report(reports: list[TaskReport]) -> str:
    """Per task its status and items (``kind: message``), then the summary by domain and kind."""
    lines = []
    for r in reports:
        lines.append(f"{r.status:9s} {r.domain}/{r.id}")
        if r.error:
            lines.append(f"          ! {r.error}")
        lines += [f"          - {i.kind}: {i.message}" for i in r.items]
    s = summary(reports)
    if len(s["domains"]) > 1:
        lines.append(f"{'domain':22s} " + " ".join(f"{st:>8s}" for st in STATUSES))
        for d, c in s["domains"].items():
            lines.append(f"{d:22s} " + " ".join(f"{c[st]:8d}" for st in STATUSES))
    kinds = ", ".join(f"{k} {n}" for k, n in s["tasks_by_kind"].items() if n)
    st = s["status"]
    lines.append(f"{s['tasks']} task{'s' if s['tasks'] != 1 else ''}: {st['runnable']} runnable, {st['external']} need only network/cache/account, "
                 f"{st['blocked']} blocked here, {st['invalid']} invalid; {s['needs_nothing_from_us']} "
                 f"({s['needs_nothing_from_us_pct']}%) need nothing from us" + (f"; tasks per kind: {kinds}" if kinds else ""))
    return "\n".join(lines)


__all__ = ["KINDS", "Item", "TaskReport", "check_dir", "check_task", "format_report", "shell_programs", "summary"]
