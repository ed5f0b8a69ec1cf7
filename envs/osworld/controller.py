"""Runs OSWorld setup steps against a VAGEN sandbox and gives getters what they need.

:class:`VMController` wraps a :class:`sandboxes.client.SandboxClient` with what OSWorld's
SetupController and getters assume about the VM:

- **paths**: OSWorld tasks hard-code ``/home/user``; here every ``/home/user`` prefix in
  paths and commands maps to the sandbox user's real ``$HOME`` (``/home/agent`` in the
  desktop image, a temporary folder on the local provider), and relative paths are
  relative to ``$HOME`` (as on OSWorld's server, whose working directory is home);
- **placeholders**: ``{SCREEN_WIDTH}``, ``{SCREEN_HEIGHT}``, ``{SCREEN_WIDTH_HALF}``,
  ``{SCREEN_HEIGHT_HALF}``, ``{CLIENT_PASSWORD}`` as OSWorld, plus ours ``{HOME}`` and
  ``{CDP_PORT}``;
- **the browser**: ``google-chrome``/``chromium`` launches run ``vagen-chromium`` (the image's
  wrapper: CDP on the sandbox's own ``$VAGEN_CDP_PORT``, bound to loopback) or the same flags
  inline where the wrapper is missing (local provider); a task's own
  ``--remote-debugging-port`` is replaced by the sandbox's, and OSWorld's
  ``socat tcp-listen:9222`` port forward is skipped (nothing to forward);
- **pyautogui in setup commands**: ``python -c "import pyautogui; pyautogui.hotkey('ctrl', 's')"``
  (OSWorld uses these in setup/postconfig) runs through our safe parser and ``/input``
  instead of a Python inside the sandbox;
- **CDP**: DevTools' HTTP endpoints (``/json/list``, ``/json/new``, ``/json/close``) are
  called *inside* the sandbox with curl, so the DevTools port never leaves it;
- **files**: ``download`` reads a :class:`FileCache` keyed by URL (OSWorld's cache layout
  ``<uuid5(url)>_<basename>`` works too) and only fetches from the network when allowed.

Setup failures raise :class:`SetupError`: the task could not be prepared, which is never
the agent's fault (envs turn it into ``EnvInfraError``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandboxes.client import (
    SandboxClient,
    SandboxCommandError,
    SandboxError,
    SandboxRequestError,
    SandboxTimeout,
)

from .tasks import SetupStep

log = logging.getLogger("vagen.osworld")

OSWORLD_HOME = "/home/user"
BROWSERS = ("google-chrome", "google-chrome-stable", "chromium", "chromium-browser", "vagen-chromium")
# Signals a task may pass to pkill/killall as -N or -NAME (kept when the kill is rescoped).
SIGNALS = {"1", "2", "9", "15", "HUP", "INT", "KILL", "TERM", "QUIT", "USR1", "USR2"}
CHROMIUM_FLAGS = ("--no-sandbox --no-first-run --no-default-browser-check --disable-gpu --disable-dev-shm-usage "
                  "--disable-background-networking --disable-component-update --disable-sync --password-store=basic "
                  "--force-renderer-accessibility --test-type --remote-debugging-address=127.0.0.1")
MAX_SETUP_RETRIES = 5


_HOME_RE = re.compile(r"(?:(?<=file://)|(?<![\w/.-]))/home/user(?=/|\b|$)")


def map_home(text: str, home: str) -> str:
    """OSWorld's ``/home/user`` (also inside ``file://`` URLs) -> the sandbox user's home."""
    return _HOME_RE.sub(home, text)


class SetupError(RuntimeError):
    """A setup/postconfig step failed: the task could not be prepared (not the agent's fault)."""


@dataclass
class FileCache:
    """Files for ``download`` steps, keyed by URL.

    Looks in each folder of ``dirs`` for: an ``index.json`` mapping URL -> relative path;
    ``<uuid5(URL)>_<basename>`` (OSWorld's cache naming), also under a ``<task_id>/``
    subfolder. With ``allow_network`` a miss is fetched into ``dirs[0]`` (never in tests).
    """

    dirs: list[Path] = field(default_factory=list)
    allow_network: bool = False
    timeout: float = 60.0

    def _index(self, d: Path) -> dict[str, str]:
        p = d / "index.json"
        try:
            return json.loads(p.read_text()) if p.is_file() else {}
        except (OSError, json.JSONDecodeError) as e:
            raise SetupError(f"file cache index {p} is unreadable: {e}") from e

    def lookup(self, url: str, basename: str = "", task_id: str = "") -> Path | None:
        basename = basename or Path(url.split("?", 1)[0]).name
        osworld_name = f"{uuid.uuid5(uuid.NAMESPACE_URL, url)}_{basename}"
        for d in self.dirs:
            rel = self._index(d).get(url)
            if rel is not None:
                p = (d / rel).resolve()
                if not p.is_relative_to(d.resolve()):
                    raise SetupError(f"file cache index {d / 'index.json'} points outside its folder: {rel!r}")
                if p.is_file():
                    return p
            for cand in (d / osworld_name, d / task_id / osworld_name if task_id else None):
                if cand is not None and cand.is_file():
                    return cand
        return None

    def fetch(self, url: str, basename: str = "", task_id: str = "") -> Path:
        hit = self.lookup(url, basename, task_id)
        if hit is not None:
            return hit
        if url.startswith("file://"):
            p = Path(url[7:])
            if p.is_file():
                return p
        if not self.allow_network or not self.dirs:
            raise SetupError(f"{url} is not in the file cache ({', '.join(map(str, self.dirs)) or 'no cache folders'})"
                             " and network downloads are off (osworld cache_network=true to allow)")
        dest = self.dirs[0] / f"{uuid.uuid5(uuid.NAMESPACE_URL, url)}_{basename or Path(url).name}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            with urllib.request.urlopen(url, timeout=self.timeout) as r:  # noqa: S310 - user-enabled fetch
                tmp = dest.with_suffix(dest.suffix + ".part")
                tmp.write_bytes(r.read())
                tmp.replace(dest)
        except OSError as e:
            raise SetupError(f"cannot download {url}: {e}") from e
        return dest


def _pyautogui_script(command: list[str] | str) -> str | None:
    """The script of ``python -c "import pyautogui; ..."``, else None."""
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if len(argv) == 3 and Path(argv[0]).name in ("python", "python3") and argv[1] == "-c" and "pyautogui" in argv[2]:
        return argv[2]
    return None


class VMController:
    """One task's view of a sandbox: setup steps, CDP, files, placeholders."""

    def __init__(self, client: SandboxClient, cache: FileCache | None = None, password: str = "password",
                 work_dir: str | Path | None = None, retries: int = 3) -> None:
        self.client = client
        self.cache = cache or FileCache()
        self.password = password
        self.retries = max(1, min(retries, MAX_SETUP_RETRIES))
        self.work_dir = Path(work_dir) if work_dir else None
        self.task_id = ""
        self.refused_reads: list[str] = []  # result paths that were symlinks out of the sandbox's folders
        probe = client.execute('printf "%s\\n%s\\n" "$HOME" "${VAGEN_CDP_PORT:-9222}"', shell=True, timeout=15)
        lines = probe.output.splitlines()
        self.home = lines[0].rstrip("/") if lines and lines[0].startswith("/") else OSWORLD_HOME
        self.cdp_port = int(lines[1]) if len(lines) > 1 and lines[1].isdigit() else 9222
        self.screen = client.screen_size()
        self.has_wrapper = client.execute("command -v vagen-chromium", shell=True, timeout=10).returncode == 0

    # -- mapping -----------------------------------------------------------------------------
    def vm_path(self, path: str) -> str:
        """A task path as the sandbox sees it (``/home/user`` -> $HOME, relative -> under $HOME)."""
        if path == OSWORLD_HOME or path.startswith(OSWORLD_HOME + "/"):
            return self.home + path[len(OSWORLD_HOME):]
        if path.startswith("~"):
            return self.home + path[1:]
        if not path.startswith("/"):
            return f"{self.home}/{path}"
        return path

    def substitute(self, text: str) -> str:
        w, h = self.screen
        for key, value in (("{CLIENT_PASSWORD}", self.password), ("{SCREEN_WIDTH_HALF}", str(w // 2)),
                           ("{SCREEN_HEIGHT_HALF}", str(h // 2)), ("{SCREEN_WIDTH}", str(w)),
                           ("{SCREEN_HEIGHT}", str(h)), ("{HOME}", self.home), ("{CDP_PORT}", str(self.cdp_port))):
            text = text.replace(key, value)
        return map_home(text, self.home)

    def command(self, command: list[str] | str) -> list[str] | str:
        return self.substitute(command) if isinstance(command, str) else [self.substitute(c) for c in command]

    def browser_command(self, argv: list[str]) -> list[str] | None:
        """A browser launch rewritten for this sandbox, or None when ``argv`` is not a browser."""
        if not argv or Path(argv[0]).name not in BROWSERS:
            return None
        args = [a for a in argv[1:] if not a.startswith(("--remote-debugging-port", "--remote-debugging-address"))]
        if self.has_wrapper:
            return ["vagen-chromium", *args]
        return ["sh", "-c", f'exec chromium {CHROMIUM_FLAGS} --remote-debugging-port={self.cdp_port} "$@"',
                "chromium", *args]

    def kill_command(self, argv: list[str]) -> list[str]:
        """``pkill``/``killall`` of the browser, scoped to this sandbox's browser.

        In a container (the vagen-chromium wrapper) the VM is the container, so the command runs
        as written. A local sandbox shares the machine with the user's own browsers (and with
        other sandboxes): there the kill matches only the browser that listens on this sandbox's
        DevTools port; its renderer processes exit with it. Other targets run as written."""
        names = [a for a in argv[1:] if not a.startswith("-")]
        if self.has_wrapper or len(names) != 1 or Path(names[0]).name not in BROWSERS:
            return argv
        signal = [a for a in argv[1:] if a.startswith("-") and a.lstrip("-").upper().removeprefix("SIG")
                  in SIGNALS]
        return ["pkill", *signal[-1:], "-f", "--", f"--remote-debugging-port={self.cdp_port}( |$)"]

    # -- setup steps -------------------------------------------------------------------------
    def run_steps(self, steps: tuple[SetupStep, ...] | list[SetupStep], where: str = "config") -> None:
        for i, step in enumerate(steps):
            fn: Callable[..., Any] | None = getattr(self, f"_setup_{step.type}", None)
            if fn is None:
                raise SetupError(f"{where}[{i}]: setup type {step.type!r} is not supported here")
            try:
                fn(**step.parameters)
            except SetupError as e:
                raise SetupError(f"{where}[{i}] ({step.type}): {e}") from e
            except TypeError as e:  # unexpected parameters in the task file
                raise SetupError(f"{where}[{i}] ({step.type}): bad parameters: {e}") from e
            except SandboxRequestError as e:
                raise SetupError(f"{where}[{i}] ({step.type}): the sandbox refused it: {e}") from e

    def _retry(self, what: str, fn: Callable[[], Any]) -> Any:
        last: Exception | None = None
        for attempt in range(self.retries):
            try:
                return fn()
            except (SandboxCommandError, SandboxTimeout, SetupError) as e:
                last = e
            except SandboxRequestError as e:  # 404: the window/file is not there (yet)
                if e.status != 404:
                    raise
                last = e
                time.sleep(0.2 * (2 ** attempt))
        raise SetupError(f"{what} failed after {self.retries} attempts: {last}")

    def _setup_execute(self, command: list[str] | str, shell: bool = False, stdout: str = "", stderr: str = "",
                       until: dict | None = None, timeout: float = 120.0) -> dict:
        command = self.command(command)
        script = _pyautogui_script(command)
        if script is not None:
            self.run_pyautogui(script)
            return {"output": "", "error": "", "returncode": 0}
        until = until or {}
        if until and not set(until) <= {"returncode", "stdout", "stderr"}:
            raise SetupError(f"'until' takes returncode/stdout/stderr, got {sorted(until)}")
        deadline = time.monotonic() + max(timeout, 1.0)
        failures = 0
        while True:
            try:
                r = self.client.execute(command, shell=shell, timeout=timeout)
            except (SandboxCommandError, SandboxTimeout) as e:  # a timeout inside the sandbox: a failure
                failures += 1
                if failures >= MAX_SETUP_RETRIES:
                    raise SetupError(f"command kept failing: {e}") from e
                continue
            result = {"output": r.output, "error": r.error, "returncode": r.returncode}
            if self.work_dir is not None:
                for key, name in (("output", stdout), ("error", stderr)):
                    if name:
                        (self.work_dir / Path(name).name).write_text(result[key])
            if not until:
                return result
            if (("returncode" in until and r.returncode == until["returncode"])
                    or ("stdout" in until and str(until["stdout"]) in r.output)
                    or ("stderr" in until and str(until["stderr"]) in r.error)):
                return result
            if time.monotonic() > deadline:
                raise SetupError(f"'until' {until} not met within {timeout:.0f} s (last: rc={r.returncode}, "
                                 f"out={r.output[-200:]!r})")
            time.sleep(0.3)

    _setup_command = _setup_execute

    def _setup_launch(self, command: list[str] | str, shell: bool = False) -> None:
        command = self.command(command)
        if not shell and isinstance(command, str):
            command = command.split()
        if isinstance(command, list):
            if Path(command[0]).name == "socat" and any("9222" in c for c in command):
                return  # OSWorld's CDP port forward: our browser already listens on $VAGEN_CDP_PORT
            browser = self.browser_command(command)
            if browser is not None:
                self.client.launch(browser)
                self.wait_cdp()
                self.wait_browser_window()
                return
            if Path(command[0]).name in ("pkill", "killall"):  # OSWorld launches these; they must finish
                self.client.execute(self.kill_command(command), timeout=30)
                time.sleep(0.3)
                return
        self.client.launch(command, shell=shell)

    def _setup_sleep(self, seconds: float) -> None:
        time.sleep(min(float(seconds), 30.0))

    def _setup_open(self, path: str, window_name: str | None = None, timeout: float = 60.0) -> None:
        self._retry(f"open {path}", lambda: self.client.open_file(self.vm_path(path), window_name, timeout))

    def _setup_activate_window(self, window_name: str, strict: bool = False, by_class: bool = False) -> None:
        self._retry(f"activate {window_name!r}", lambda: self.client.activate_window(window_name, strict, by_class))

    def _setup_close_window(self, window_name: str, strict: bool = False, by_class: bool = False) -> None:
        self._retry(f"close {window_name!r}", lambda: self.client.close_window(window_name, strict, by_class))

    def _setup_download(self, files: list[dict]) -> None:
        for f in files:
            src = self.cache.fetch(f["url"], Path(f["path"]).name, self.task_id)
            data = src.read_bytes()
            self._retry(f"upload {f['path']}", lambda d=data, p=f["path"]: self.client.upload(self.vm_path(p), d))

    def _setup_upload_file(self, files: list[dict]) -> None:
        for f in files:
            src = Path(f["local_path"])
            if not src.is_file():
                raise SetupError(f"local file {src} does not exist")
            data = src.read_bytes()
            self._retry(f"upload {f['path']}", lambda d=data, p=f["path"]: self.client.upload(self.vm_path(p), d))

    def _setup_execute_with_verification(self, command: list[str] | str, verification: dict | None = None,
                                         max_wait_time: float = 10, check_interval: float = 1.0,
                                         shell: bool = False) -> None:
        self._setup_launch(command, shell=shell)
        verification = verification or {}
        deadline = time.monotonic() + float(max_wait_time)
        while True:
            ok = True
            if "window_exists" in verification:
                name = str(verification["window_exists"]).lower()
                ok = any(name in w["title"].lower() for w in self.client.windows())
            if ok and "command_success" in verification:
                cmd = self.command(verification["command_success"])
                ok = self.client.execute(cmd, shell=isinstance(cmd, str), timeout=30).returncode == 0
            if ok:
                return
            if time.monotonic() > deadline:
                raise SetupError(f"verification {verification} not met within {max_wait_time} s")
            time.sleep(min(float(check_interval), 1.0))

    def _setup_chrome_open_tabs(self, urls_to_open: list[str]) -> None:
        self.wait_cdp()
        first = self.tabs()
        for url in urls_to_open:
            self.cdp("PUT", f"/json/new?{self.substitute(url)}")
        for t in first:  # OSWorld closes the tab the browser started with
            self.cdp("GET", f"/json/close/{t['id']}")

    def _setup_chrome_close_tabs(self, urls_to_close: list[str]) -> None:
        self.wait_cdp()
        for url in map(self.substitute, urls_to_close):
            for t in self.tabs():
                if _same_url(t["url"], url):
                    self.cdp("GET", f"/json/close/{t['id']}")
                    break

    # -- pyautogui scripts and CDP -----------------------------------------------------------
    def run_pyautogui(self, script: str) -> None:
        from .actions import ActionParseError, parse_pyautogui

        try:
            parsed = parse_pyautogui(script, screen=self.screen)
        except ActionParseError as e:
            raise SetupError(f"setup script is outside the pyautogui grammar: {e}") from e
        if parsed.actions:
            self.client.input(parsed.actions)

    def cdp(self, method: str, path: str, timeout: float = 10.0) -> Any:
        """Call a DevTools HTTP endpoint inside the sandbox; the parsed JSON (or text)."""
        url = f"http://127.0.0.1:{self.cdp_port}{path}"
        r = self.client.execute(["curl", "-sS", "--max-time", str(int(timeout)), "-X", method, url], timeout=timeout + 5)
        if r.returncode != 0:
            raise SetupError(f"DevTools {method} {path} failed: {r.error.strip() or r.output.strip()}")
        try:
            return json.loads(r.output)
        except json.JSONDecodeError:
            return r.output

    def wait_cdp(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            r = self.client.execute(["curl", "-sS", "--max-time", "2", f"http://127.0.0.1:{self.cdp_port}/json/version"],
                                    timeout=10)
            if r.returncode == 0 and r.output.strip().startswith("{"):
                return
            if time.monotonic() > deadline:
                raise SetupError(f"no browser answers on DevTools port {self.cdp_port} after {timeout:.0f} s")
            time.sleep(0.2)

    def wait_browser_window(self, timeout: float = 20.0) -> bool:
        """After a browser launch: wait until its window is on screen. DevTools answers before
        the window is mapped; on a loaded machine the screen could settle (still empty) and an
        agent's first click land on nothing. Best effort: False after ``timeout`` (or where the
        sandbox cannot list windows), and the episode goes on."""
        deadline = time.monotonic() + timeout
        while not any("chrom" in str(w.get("class", "")).lower() for w in self.client.windows()):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def tabs(self) -> list[dict]:
        """Open pages, the most recently active first (DevTools' /json/list order)."""
        data = self.cdp("GET", "/json/list")
        if not isinstance(data, list):
            raise SetupError(f"unexpected DevTools answer: {str(data)[:200]}")
        return [t for t in data if t.get("type") == "page"]

    def browser_running(self) -> bool:
        try:
            r = self.client.execute(["curl", "-sS", "--max-time", "2", f"http://127.0.0.1:{self.cdp_port}/json/version"],
                                    timeout=10)
        except SandboxError:
            return False
        return r.returncode == 0 and r.output.strip().startswith("{")

    def read_file(self, path: str) -> bytes | None:
        """A file's bytes from the sandbox, or None when it does not exist. A path the agent
        turned into a symbolic link leading outside the sandbox's folders reads as missing
        (the agent's doing, scored; noted in ``refused_reads``), not as an evaluation that
        could not run."""
        try:
            return self.client.download(self.vm_path(path))
        except SandboxRequestError as e:
            if e.status == 404:
                return None
            if linked_out(e):
                self.refused_reads.append(path)
                return None
            raise


def linked_out(e: Exception) -> bool:
    """The sandbox refused a path because a symbolic link in it leads out of its folders."""
    body = getattr(e, "body", None)
    return getattr(e, "status", None) == 403 and isinstance(body, dict) and body.get("reason") == "symlink"


def _same_url(a: str, b: str) -> bool:
    norm = lambda u: u.rstrip("/").removeprefix("https://").removeprefix("http://").removeprefix("www.")  # noqa: E731
    return norm(a) == norm(b)


def chrome_profile_dirs(home: str) -> list[str]:
    return [os.path.join(home, ".config", name, "Default") for name in ("chromium", "google-chrome")]
