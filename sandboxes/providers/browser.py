"""Browser sandboxes: a headless Chromium exposing CDP on loopback, for the web env.

Two kinds, both handed out by the same :class:`sandboxes.pool.SandboxPool` as desktops:

* ``local-browser``: one Chromium process per sandbox (its own process group and a fresh
  temporary profile), ``--remote-debugging-address=127.0.0.1`` on a free port;
* ``docker-browser``: one ``vagen/browser`` container per sandbox
  (``dockerfiles/browser.Dockerfile``: unprivileged user, ``cap_drop ALL``,
  ``no-new-privileges``, memory/CPU/pids limits), host networking with CDP bound to
  127.0.0.1 on a free port.

A handle's ``url`` is the CDP endpoint (``http://127.0.0.1:<port>``) that
``Browser(cdp_url=...)`` / Playwright's ``connect_over_cdp`` takes; there is no token
(CDP has no authentication, which is why it only ever listens on loopback). Health is
``GET /json/version``. Reset restarts the browser (local: a new process and profile;
docker: ``docker restart``, whose entrypoint makes a fresh profile), so nothing of one
env's browsing survives into the next lease.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import tempfile
import time

import httpx

from ..client import SandboxUnavailable
from .base import Provider, SandboxHandle, drop_record, new_id, save_record, state_dir
from .docker import LABEL, STATE_LABEL, DockerProvider, free_port
from .remote import RemoteProvider

BROWSER_IMAGE = "vagen/browser:latest"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                  "--disable-dev-shm-usage", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--disable-quic", "--password-store=basic", "--hide-scrollbars", "--mute-audio"]
# Memory (benchmarks/web_env.py measures it): no zygote processes, the GPU thread inside the
# browser process, software compositing only, a small V8 young generation in the page, no
# spare renderer / back-forward cache / background features: 4 processes instead of 9.
# dockerfiles/browser/entrypoint.sh passes the same flags.
LEAN_ARGS = ["--no-zygote", "--in-process-gpu", "--disable-gpu-compositing", "--disable-software-rasterizer",
             "--js-flags=--max-semi-space-size=1",
             "--disable-features=Translate,MediaRouter,OptimizationHints,BackForwardCache,"
             "SpareRendererForSitePerProcess"]


def find_chromium(headless: bool = True) -> str | None:
    """The browser binary: Debian's ``chromium-headless-shell`` (the old headless mode, what
    Playwright itself runs headless: about half full Chromium's memory and reset time) when
    headless and installed, else ``chromium``."""
    for name in (["chromium-headless-shell"] if headless else []) + ["chromium", "chromium-browser"]:
        path = shutil.which(name)
        if path:
            return path
    return None


def cdp_version(url: str, timeout: float = 2.0) -> dict | None:
    """The browser's ``/json/version`` (None if it does not answer)."""
    try:
        r = httpx.get(url.rstrip("/") + "/json/version", timeout=timeout)
        return r.json() if r.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


def wait_cdp(url: str, timeout: float, alive=lambda: True, what: str = "browser") -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cdp_version(url, timeout=1.0)
        if v and "Browser" in v:
            return v
        if not alive():
            raise SandboxUnavailable(f"{what} exited before CDP answered")
        time.sleep(0.05)
    raise SandboxUnavailable(f"{what}: no CDP answer at {url} after {timeout:.0f} s")


def stop_local_browser(handle: SandboxHandle) -> None:
    """Kill a local-browser sandbox's process group and remove its profile (also for
    detached ones, from their record: `vagen sandbox down`)."""
    pid = handle.meta.get("pid")
    if pid:
        try:
            os.killpg(int(pid), signal.SIGKILL)
        except (OSError, ValueError):
            pass
    if handle.meta.get("profile"):
        shutil.rmtree(handle.meta["profile"], ignore_errors=True)


class LocalBrowserProvider(Provider):
    name = "local-browser"

    def __init__(self, executable: str | None = None, window: str = "1280,800", start_timeout: float = 30.0,
                 extra_args: list[str] | tuple[str, ...] = (), detach: bool = False) -> None:
        exe = executable or find_chromium(headless=True)
        if exe is None:
            raise SandboxUnavailable("local-browser sandboxes need Chromium (apt-get install chromium-headless-shell)")
        self.exe, self.window, self.start_timeout = exe, window, start_timeout
        self.extra_args, self.detach = list(extra_args), detach
        self._procs: dict[str, subprocess.Popen] = {}
        self._mine: dict[str, SandboxHandle] = {}
        if not detach:
            atexit.register(self.close)

    def start(self, n: int = 1) -> list[SandboxHandle]:
        return self._start_each(n, lambda: self._launch(new_id("browser"), free_port()), self._wait)

    def _launch(self, sid: str, port: int) -> SandboxHandle:
        profile = tempfile.mkdtemp(prefix=f"vagen-{sid}-")
        headless = [] if self.exe.endswith("headless-shell") else ["--headless=new"]
        cmd = [self.exe, *headless, *CHROMIUM_FLAGS, *LEAN_ARGS, f"--user-data-dir={profile}", f"--window-size={self.window}",
               "--remote-debugging-address=127.0.0.1", f"--remote-debugging-port={port}", *self.extra_args,
               f"--vagen-sandbox={sid}", "about:blank"]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        self._procs[sid] = proc
        return SandboxHandle(sid, f"http://127.0.0.1:{port}", "", self.name,
                             {"pid": proc.pid, "port": port, "profile": profile, "kind": "browser"})

    def _wait(self, h: SandboxHandle) -> None:
        try:
            wait_cdp(h.url, self.start_timeout, lambda: self.alive(h), f"chromium {h.id}")
        except SandboxUnavailable:
            self._kill(h)
            raise

    def alive(self, handle: SandboxHandle) -> bool:
        proc = self._procs.get(handle.id)
        if proc is not None:
            return proc.poll() is None
        try:  # a detached sandbox from an earlier process: check the pid
            os.kill(int(handle.meta["pid"]), 0)
            return True
        except (OSError, KeyError, ValueError):
            return False

    def healthy(self, handle: SandboxHandle) -> bool:
        return self.alive(handle) and cdp_version(handle.url) is not None

    def reset(self, handle: SandboxHandle) -> SandboxHandle:
        self._kill(handle)
        fresh = self._launch(handle.id, handle.meta["port"])
        self._wait(fresh)
        if handle.id in self._mine:
            self._mine[handle.id] = fresh
        save_record(fresh)
        return fresh

    def _kill(self, handle: SandboxHandle) -> None:
        proc = self._procs.pop(handle.id, None)
        stop_local_browser(handle)
        if proc is not None:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def stop(self, handle: SandboxHandle) -> None:
        self._kill(handle)
        drop_record(handle.id)
        self._mine.pop(handle.id, None)

    def kill(self, handle: SandboxHandle) -> None:
        proc = self._procs.get(handle.id)
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass

    def close(self) -> None:
        if self.detach:
            return
        for h in list(self._mine.values()):
            self.stop(h)


class DockerBrowserProvider(DockerProvider):
    name = "docker-browser"

    def __init__(self, image: str = BROWSER_IMAGE, mem_limit: str = "1g", cpus: float = 1.0, pids_limit: int = 512,
                 shm_size: str = "1g", window: str = "1280,800", detach: bool = False, start_timeout: float = 60.0,
                 env: dict[str, str] | None = None) -> None:
        super().__init__(image=image, network="host", mem_limit=mem_limit, cpus=cpus, pids_limit=pids_limit,
                         shm_size=shm_size, reset_mode="restart", detach=detach, start_timeout=start_timeout,
                         env={"VAGEN_WINDOW": window, **(env or {})})

    id_prefix = "browser"

    def _token(self) -> str:
        return ""  # CDP has no authentication: loopback only

    def _run(self, sid: str, token: str, ports: dict | None = None) -> SandboxHandle:
        ports = ports or {"cdp": free_port()}
        url = f"http://127.0.0.1:{ports['cdp']}"
        env = {**self.extra_env, "VAGEN_CDP_HOST": "127.0.0.1", "VAGEN_CDP_PORT": str(ports["cdp"])}
        container = self.client.containers.run(
            self.image, detach=True, name=f"vagen-{sid}", environment=env, init=True, network_mode="host",
            labels={LABEL: "1", "vagen.id": sid, "vagen.provider": self.name, "vagen.url": url,
                    STATE_LABEL: str(state_dir())},
            cap_drop=["ALL"], security_opt=["no-new-privileges"], **self.limits)
        return SandboxHandle(sid, url, "", self.name, {"container": container.id, "name": container.name,
                                                        "ports": ports, "network": "host", "detached": self.detach,
                                                        "kind": "browser"})

    def _wait(self, h: SandboxHandle) -> None:
        wait_cdp(h.url, self.start_timeout, lambda: self.alive(h), f"container {h.meta['name']}")

    def healthy(self, handle: SandboxHandle) -> bool:
        return self.alive(handle) and cdp_version(handle.url) is not None


class RemoteBrowserProvider(RemoteProvider):
    """CDP endpoints started elsewhere (e.g. ``docker compose`` browsers): handed out, never stopped."""

    name = "remote-browser"

    def __init__(self, urls: list[str] | str, check: bool = True) -> None:
        super().__init__(urls, token="-", check=check)
        for h in self.handles:
            h.id, h.token, h.provider = "cdp-" + h.id.removeprefix("remote-"), "", self.name
            h.meta["kind"] = "browser"

    def _wait_ready(self, handle: SandboxHandle) -> None:
        wait_cdp(handle.url, 30.0, what=f"remote browser {handle.url}")

    def alive(self, handle: SandboxHandle) -> bool:
        return cdp_version(handle.url) is not None

    def healthy(self, handle: SandboxHandle) -> bool:
        return self.alive(handle)

    def reset(self, handle: SandboxHandle) -> SandboxHandle:
        return handle  # not ours to restart; each episode gets a fresh browser context anyway


__all__ = ["BROWSER_IMAGE", "CHROMIUM_FLAGS", "LEAN_ARGS", "find_chromium", "DockerBrowserProvider", "LocalBrowserProvider", "RemoteBrowserProvider", "cdp_version",
           "stop_local_browser", "wait_cdp"]
