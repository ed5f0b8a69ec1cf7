"""``local`` provider: a desktop as local processes (no Docker needed).

Each sandbox is one ``python -m sandboxes.server --session`` process (its own process
group) that starts Xvfb on a free display, openbox, an xterm running tmux, and serves the
control API on a free loopback port, with HOME in a fresh temporary directory. Reset is
the server's in-place ``/reset``. Sandboxes stop on :meth:`close`, at interpreter exit, and
(unless detached) when the Python process that started them dies.

The server runs as the same user as the apps here, so unlike the docker provider an
agent could kill it; use the docker provider where that matters.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..client import SandboxUnavailable
from ..server.desktop import display_in_use, sweep_display
from .base import Provider, SandboxHandle, drop_record, new_id, new_token, save_record
from .docker import free_port

_ALLOC_LOCK = threading.Lock()


class LocalProvider(Provider):
    name = "local"

    def __init__(self, size: str = "1280x800", apps: list[str] | tuple[str, ...] = (), terminal: bool = True,
                 detach: bool = False, first_display: int = 100, start_timeout: float = 30.0,
                 extra_args: list[str] | tuple[str, ...] = ()) -> None:
        missing = [b for b in ("Xvfb", "xdotool") if shutil.which(b) is None]
        if missing:
            raise SandboxUnavailable(f"local sandboxes need {', '.join(missing)} "
                                     "(apt-get install xvfb xdotool openbox xterm tmux wmctrl)")
        self.size, self.apps, self.terminal = size, list(apps), terminal
        self.detach = detach
        self.first_display = first_display
        self.start_timeout = start_timeout
        self.extra_args = list(extra_args)
        self._mine: dict[str, SandboxHandle] = {}
        self._procs: dict[str, subprocess.Popen] = {}
        self._claimed: set[int] = set()
        if not detach:
            atexit.register(self.close)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, n: int = 1) -> list[SandboxHandle]:
        if n == 1:
            return [self._start_one()]
        with ThreadPoolExecutor(max_workers=n) as ex:
            futures = [ex.submit(self._start_one) for _ in range(n)]
            handles, errors = [], []
            for f in futures:
                try:
                    handles.append(f.result())
                except Exception as e:  # stop the ones that came up, report the first failure
                    errors.append(e)
        if errors:
            for h in handles:
                self.stop(h)
            raise errors[0]
        return handles

    def _claim_display(self) -> int:
        with _ALLOC_LOCK:
            num = self.first_display
            while display_in_use(num) or num in self._claimed:
                num += 1
            self._claimed.add(num)
            return num

    def _start_one(self) -> SandboxHandle:
        last = ""
        for _attempt in range(5):  # another process may grab the display we picked
            num = self._claim_display()
            try:
                return self._launch(num)
            except _DisplayTaken as e:
                last = str(e)
            finally:
                self._claimed.discard(num)
        raise SandboxUnavailable(f"could not start a local sandbox: {last}")

    def _launch(self, num: int) -> SandboxHandle:
        sid = new_id("local")
        tmp = Path(tempfile.mkdtemp(prefix=f"vagen-{sid}-"))
        token = new_token()
        log = tmp / "server.log"
        argv = [sys.executable, "-m", "sandboxes.server", "--session", "--display", f":{num}", "--port", "0",
                "--size", self.size, "--home", str(tmp / "home"), "--root", str(tmp), *self.extra_args]
        if not self.terminal:
            argv.append("--no-terminal")
        for app in self.apps:
            argv += ["--app", app]
        if not self.detach:
            argv.append("--exit-with-parent")
        cdp_port = free_port()  # Chromium's DevTools port for this sandbox (vagen-chromium / OSWorld getters)
        # VAGEN_SANDBOX_ID reaches every process of the sandbox: stop_local sweeps by it and the display
        env = {**os.environ, "VAGEN_SANDBOX_TOKEN": token, "PYTHONPATH": _import_root(), "VAGEN_CDP_PORT": str(cdp_port),
               "VAGEN_SANDBOX_ID": sid}
        env.pop("DISPLAY", None)
        with open(log, "wb") as logf:
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=logf, stdin=subprocess.DEVNULL, env=env,
                                 start_new_session=True, cwd=str(tmp))
        ready = _read_ready(p, self.start_timeout)
        if ready is None:
            _terminate(p.pid)
            text = log.read_text(errors="replace")
            shutil.rmtree(tmp, ignore_errors=True)
            if "Xvfb exited" in text or "not up after" in text:
                raise _DisplayTaken(f":{num}: {text.strip().splitlines()[-1] if text.strip() else 'Xvfb failed'}")
            raise SandboxUnavailable(f"local sandbox did not start within {self.start_timeout:.0f} s: "
                                     f"{text.strip()[-800:]}")
        p.stdout.close()
        h = SandboxHandle(sid, ready["url"], token, self.name,
                          {"pid": p.pid, "display": f":{num}", "tmpdir": str(tmp), "log": str(log),
                           "detached": self.detach, "cdp_port": cdp_port})
        self._procs[sid] = p
        self._mine[sid] = h
        save_record(h)
        return h

    def alive(self, handle: SandboxHandle) -> bool:
        p = self._procs.get(handle.id)
        if p is not None:
            return p.poll() is None
        return _pid_alive(int(handle.meta.get("pid", -1)))

    def stop(self, handle: SandboxHandle) -> None:
        stop_local(handle)
        p = self._procs.pop(handle.id, None)
        if p is not None:
            try:
                p.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        self._mine.pop(handle.id, None)

    def kill(self, handle: SandboxHandle) -> None:
        """SIGKILL the server's process group (the server and its Xvfb) without a clean shutdown."""
        try:
            os.killpg(int(handle.meta["pid"]), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        p = self._procs.get(handle.id)
        if p is not None:
            p.wait(timeout=5)

    def close(self) -> None:
        for h in list(self._mine.values()):
            if not h.meta.get("detached"):
                self.stop(h)


class _DisplayTaken(RuntimeError):
    pass


def stop_local(handle: SandboxHandle) -> None:
    """Stop a local sandbox from its record (works from another process: `vagen sandbox down`)."""
    pid = int(handle.meta.get("pid", -1))
    if pid > 0:
        _terminate(pid)
    if handle.meta.get("display"):
        # only this sandbox's processes: once its Xvfb is gone another sandbox may own the display
        sweep_display(handle.meta["display"], sandbox_id=handle.id)
    tmp = handle.meta.get("tmpdir")
    if tmp and Path(tmp).name.startswith("vagen-local-"):
        shutil.rmtree(tmp, ignore_errors=True)
    drop_record(handle.id)


def _terminate(pid: int, grace: float = 5.0) -> None:
    """SIGTERM the process group (the server tears its session down), SIGKILL after `grace`."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            break
        time.sleep(0.05)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _read_ready(p: subprocess.Popen, timeout: float) -> dict | None:
    """Wait for the server's {"event": "ready"} line on stdout."""
    deadline = time.monotonic() + timeout
    buf = b""
    fd = p.stdout.fileno()
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], max(0.0, min(0.2, deadline - time.monotonic())))
        if r:
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if isinstance(msg, dict) and msg.get("event") == "ready":
                    return msg
        elif p.poll() is not None:
            return None
    return None


def _import_root() -> str:
    """The folder that holds the `sandboxes` package, so `-m sandboxes.server` imports it."""
    root = str(Path(__file__).resolve().parents[2])
    old = os.environ.get("PYTHONPATH")
    return f"{root}{os.pathsep}{old}" if old else root
