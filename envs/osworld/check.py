"""``vagen osworld check DIR``: which parts of OSWorld tasks this machine can run, without running them.

For every task: setup/postconfig step types we do not implement, ``download``/``cloud_file``
URLs missing from the file cache (the network is only probed with ``probe=True``), apps and
commands missing on this machine (``launch`` programs, ``related_apps``, the programs a
``vm_command_line`` getter pipes through), getters and metrics we do not implement. A task
file that does not parse is reported as such; nothing raises.
"""

from __future__ import annotations

import re
import shutil
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from .controller import BROWSERS, FileCache
from .getters import GETTERS
from .tasks import SUPPORTED_SETUP_TYPES, SetupStep, Task, TaskFormatError, load_task

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
_CMD_WORD = re.compile(r"(?:^|[|;&(\n]|\$\(|&&|\|\||\bthen\b|\bdo\b|\belse\b)\s*([A-Za-z_][\w.+-]*)(?=\s|$|;|\))", re.M)


@dataclass
class TaskReport:
    id: str
    domain: str
    path: str
    issues: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def status(self) -> str:
        if self.error:
            return "invalid"
        return "runnable" if not self.issues else "partial"

    def as_dict(self) -> dict:
        return {"id": self.id, "domain": self.domain, "path": self.path, "status": self.status,
                "issues": self.issues, "error": self.error}


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


def _step_issues(step: SetupStep, where: str, cache: FileCache, task_id: str, probe: bool) -> list[str]:
    out = []
    p = step.parameters
    if step.type not in SUPPORTED_SETUP_TYPES:
        return [f"{where}: setup type {step.type!r} is not supported here"]
    if step.type == "download":
        for f in p["files"]:
            url = f["url"]
            if cache.lookup(url, Path(f["path"]).name, task_id) is None:
                if probe and _reachable(url):
                    out.append(f"{where}: download {url} is not cached but reachable (needs cache_network=true)")
                else:
                    out.append(f"{where}: download {url} is not in the file cache"
                               + (" and unreachable" if probe else " (network not probed; --probe to try)"))
    urls = list(p.get("urls_to_open", [])) if step.type == "chrome_open_tabs" else []
    if step.type == "launch" and isinstance(p["command"], list):
        urls += [a for a in p["command"][1:] if isinstance(a, str) and "://" in a]
    for url in urls:
        if _remote(url):
            out.append(f"{where}: opens {url}, which needs the internet (sandboxes have none in tests)")
    if step.type in ("launch", "execute", "command", "execute_with_verification"):
        cmd = p["command"]
        if isinstance(cmd, list) and len(cmd) == 3 and Path(cmd[0]).name.startswith("python") and "pyautogui" in cmd[2]:
            return out  # runs through our pyautogui parser, not a Python in the sandbox
        if isinstance(cmd, list) and cmd and Path(cmd[0]).name == "socat" and any("9222" in c for c in cmd):
            return out  # OSWorld's CDP forward: skipped by design
        progs = shell_programs(cmd) if (p.get("shell") or isinstance(cmd, str)) else [cmd[0]]
        for prog in progs:
            if prog.startswith("{") or not _have(_program(prog)):
                if not prog.startswith("{"):
                    out.append(f"{where}: program {prog!r} is not installed here")
    return out


def check_task(task: Task, cache: FileCache, probe: bool = False) -> TaskReport:
    from .metrics import METRICS

    r = TaskReport(task.id, task.domain, task.path or "")
    if task.proxy:
        r.issues.append("proxy: true (the task expects OSWorld's internet proxy; none here)")
    for i, s in enumerate(task.config):
        r.issues += _step_issues(s, f"config[{i}]", cache, task.id, probe)
    ev = task.evaluator
    for i, s in enumerate(ev.postconfig):
        r.issues += _step_issues(s, f"postconfig[{i}]", cache, task.id, probe)
    for app in task.related_apps:
        bins = APP_BINARIES.get(app.lower())
        if bins is not None and not _have(bins):
            r.issues.append(f"related app {app!r} is not installed here (looked for {', '.join(bins)})")
    if ev.infeasible:
        return r
    for i, func in enumerate(ev.funcs):
        if func not in METRICS:
            r.issues.append(f"metric {func!r} is not implemented here")
        for kind, getters in (("result", ev.results), ("expected", ev.expected)):
            g = getters[i] if i < len(getters) else None
            if g is None:
                continue
            if g.type not in GETTERS:
                r.issues.append(f"{kind} getter {g.type!r} is not implemented here")
                continue
            if g.type == "cloud_file":
                urls = g.params.get("path")
                for url in urls if isinstance(urls, list) else [urls]:
                    if cache.lookup(str(url), task_id=task.id) is None:
                        r.issues.append(f"{kind}: reference file {url} is not in the file cache")
            if g.type in ("vm_command_line", "vm_command_error"):
                for prog in shell_programs(g.params.get("command", "")):
                    if not _have(_program(prog)):
                        r.issues.append(f"{kind}: command uses {prog!r}, which is not installed here")
    return r


def check_dir(root: str | Path, cache: FileCache | None = None, probe: bool = False) -> list[TaskReport]:
    """Reports for every task file under ``root`` (a bundled suite name works too)."""
    from .tasks import suite_dir

    base = suite_dir(root)
    dirs = ([base / "files"] if (base / "files").is_dir() else []) + (cache.dirs if cache else [])
    cache = FileCache(dirs, allow_network=False)
    reports = []
    for p in sorted(base.rglob("*.json")):
        if p.name.endswith(".oracle.json") or p.name in ("test_all.json", "index.json") or "files" in p.parts:
            continue
        try:
            t = load_task(p)
        except (TaskFormatError, OSError, ValueError) as e:
            reports.append(TaskReport(p.stem, p.parent.name, str(p), error=str(e)))
            continue
        reports.append(check_task(t, cache, probe))
    return reports


def format_report(reports: list[TaskReport]) -> str:
    lines = []
    for r in reports:
        lines.append(f"{r.status:9s} {r.domain}/{r.id}")
        if r.error:
            lines.append(f"          ! {r.error}")
        lines += [f"          - {i}" for i in r.issues]
    counts = {s: sum(r.status == s for r in reports) for s in ("runnable", "partial", "invalid")}
    lines.append(f"{len(reports)} tasks: {counts['runnable']} runnable, {counts['partial']} partial, "
                 f"{counts['invalid']} invalid")
    return "\n".join(lines)


__all__ = ["TaskReport", "check_dir", "check_task", "format_report", "shell_programs"]
