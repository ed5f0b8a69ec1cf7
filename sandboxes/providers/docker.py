"""``docker`` provider: one container per sandbox, from ``dockerfiles/desktop.Dockerfile``.

Containers are unprivileged (``cap_drop ALL`` plus the few capabilities the root control
server needs to run the session as ``agent``: SETUID/SETGID/CHOWN/FOWNER/DAC_OVERRIDE/KILL),
``no-new-privileges``, memory/CPU/pids limits, ``--init`` and a 1 GiB /dev/shm for
Chromium. The token travels as an environment variable and is never put in a label.
Labels (``vagen.sandbox=1``, ``vagen.id``) let ``vagen sandbox down`` remove exactly ours.

Networking: ``host`` (the default on machines whose engine has no bridge; each sandbox
gets its own free loopback ports for the server, CDP and VNC) or ``bridge`` (the server
listens on 0.0.0.0 inside and is published on 127.0.0.1:<free port>).

Reset modes (``reset_mode``): ``inplace`` (the server's ``/reset``: kill the agent's
processes, restore HOME from the image's template, restart the session), ``restart``
(``docker restart``), ``recreate`` (remove + run). ``benchmarks/sandbox.py`` measures
all three; ``inplace`` is the default because it is the fastest that restores a clean
state (figures in benchmarks/RESULTS.md).
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import socket
import time
from pathlib import Path

from ..client import SandboxClient, SandboxError, SandboxUnavailable
from .base import Provider, SandboxHandle, drop_record, new_id, new_token, save_record, state_dir

REPO = Path(__file__).resolve().parents[2]
log = logging.getLogger("vagen.sandbox.docker")
DEFAULT_IMAGE = "vagen/desktop:latest"
LABEL = "vagen.sandbox"
# The records folder (state_dir()) of the process that started the container: `vagen sandbox down
# --all` removes only the containers of its own records folder (never compose-managed ones).
STATE_LABEL = "vagen.state_dir"
CAPS = ["SETUID", "SETGID", "CHOWN", "FOWNER", "DAC_OVERRIDE", "KILL"]
RESET_MODES = ("inplace", "restart", "recreate")


def docker_client():
    try:
        import docker
    except ImportError as e:  # pragma: no cover - a base dependency
        raise SandboxUnavailable("the docker SDK is not installed (pip install docker)") from e
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as e:
        raise SandboxUnavailable(f"no Docker engine reachable: {e} (as root: scripts/start-dockerd.sh)") from e
    return client


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_hash() -> str:
    """Hash of the control-server sources that images copy (sandboxes/server/*.py)."""
    h = hashlib.sha256()
    for p in sorted((REPO / "sandboxes" / "server").glob("*.py")):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def build_image(kind: str = "desktop", tag: str | None = None, base_image: str | None = None,
                with_office: bool = True, log=None) -> str:
    """Build ``dockerfiles/<kind>.Dockerfile`` from the repo root (classic builder, host network)."""
    client = docker_client()
    tag = tag or f"vagen/{kind}:latest"
    args = {"WITH_OFFICE": "1" if with_office else "0", "SERVER_HASH": server_hash()}
    if base_image:
        args["BASE_IMAGE"] = base_image
    stream = client.api.build(path=str(REPO), dockerfile=f"dockerfiles/{kind}.Dockerfile", tag=tag, buildargs=args,
                              network_mode="host", rm=True, forcerm=True, decode=True)
    tail: list[str] = []
    for chunk in stream:
        line = chunk.get("stream") or chunk.get("status") or ""
        if line.strip():
            tail = (tail + [line.rstrip()])[-40:]
            if log is not None:
                log(line.rstrip())
        if "error" in chunk:
            hint = ""
            if not base_image and any(k in chunk["error"] for k in ("pull", "registry", "dial tcp", "not found")):
                hint = ("\nno registry reachable? build a base image with scripts/build-base-image.sh and pass "
                        "--base-image vagen/debian:bookworm")
            raise SandboxError(f"building {tag} failed: {chunk['error']}{hint}\n" + "\n".join(tail[-20:]))
    return tag


class DockerProvider(Provider):
    name = "docker"

    def __init__(self, image: str = DEFAULT_IMAGE, network: str = "host", mem_limit: str = "2g",
                 cpus: float = 1.0, pids_limit: int = 1024, shm_size: str = "1g", reset_mode: str = "inplace",
                 screen: str = "1280x800", detach: bool = False, start_timeout: float = 60.0,
                 env: dict[str, str] | None = None, vnc: bool = False) -> None:
        if network not in ("host", "bridge"):
            raise ValueError(f"network must be host or bridge, got {network!r}")
        if reset_mode not in RESET_MODES:
            raise ValueError(f"reset_mode must be one of {', '.join(RESET_MODES)}, got {reset_mode!r}")
        self.client = docker_client()
        try:
            img = self.client.images.get(image)
        except Exception as e:
            raise SandboxUnavailable(f"image {image} not found: build it with `vagen sandbox build` "
                                     f"(or docker build -f dockerfiles/desktop.Dockerfile -t {image} .)") from e
        built_from = (img.labels or {}).get("org.vagen.server-hash")
        if built_from and built_from not in ("unknown", server_hash()):
            log.warning("image %s runs control-server code %s but this checkout's is %s: rebuild it "
                        "(vagen sandbox build)", image, built_from, server_hash())
        self.image, self.network = image, network
        self.limits = {"mem_limit": mem_limit, "nano_cpus": int(cpus * 1e9), "pids_limit": pids_limit,
                       "shm_size": shm_size}
        self.reset_mode, self.screen, self.detach = reset_mode, screen, detach
        self.start_timeout, self.extra_env, self.vnc = start_timeout, dict(env or {}), vnc
        self._mine: dict[str, SandboxHandle] = {}
        if not detach:
            atexit.register(self.close)

    # -- lifecycle ---------------------------------------------------------------------------
    id_prefix = "docker"

    def _token(self) -> str:
        return new_token()

    def start(self, n: int = 1) -> list[SandboxHandle]:
        return self._start_each(n, lambda: self._run(new_id(self.id_prefix), self._token()), self._wait)

    def _run(self, sid: str, token: str, ports: dict | None = None) -> SandboxHandle:
        ports = ports or {"server": free_port(), "cdp": free_port(), "vnc": free_port() if self.vnc else None,
                          "novnc": free_port() if self.vnc else None}
        env = {"VAGEN_SANDBOX_TOKEN": token, "VAGEN_SCREEN": self.screen, **self.extra_env}
        kwargs: dict = {}
        if self.network == "host":
            env.update(VAGEN_SANDBOX_HOST="127.0.0.1", VAGEN_SANDBOX_PORT=str(ports["server"]),
                       VAGEN_CDP_PORT=str(ports["cdp"]))
            if ports.get("vnc"):
                env.update(VAGEN_VNC_PORT=str(ports["vnc"]), VAGEN_NOVNC_PORT=str(ports["novnc"]))
            kwargs["network_mode"] = "host"
        else:
            env.update(VAGEN_SANDBOX_HOST="0.0.0.0", VAGEN_SANDBOX_PORT="5000")
            kwargs["ports"] = {"5000/tcp": ("127.0.0.1", ports["server"])}
        container = self.client.containers.run(
            self.image, detach=True, name=f"vagen-{sid}", environment=env, init=True,
            labels={LABEL: "1", "vagen.id": sid, "vagen.provider": self.name,
                    "vagen.url": f"http://127.0.0.1:{ports['server']}", STATE_LABEL: str(state_dir())},
            cap_drop=["ALL"], cap_add=CAPS, security_opt=["no-new-privileges"], **self.limits, **kwargs)
        return SandboxHandle(sid, f"http://127.0.0.1:{ports['server']}", token, self.name,
                             {"container": container.id, "name": container.name, "ports": ports,
                              "network": self.network, "detached": self.detach})

    def _wait(self, h: SandboxHandle) -> None:
        deadline = time.monotonic() + self.start_timeout
        with SandboxClient(h.url, h.token, timeout=5.0, retries=0) as c:
            while time.monotonic() < deadline:
                try:
                    c.health()
                    return
                except SandboxError:
                    pass
                if not self.alive(h):
                    raise SandboxUnavailable(f"container {h.meta['name']} exited: {self._logs(h)}")
                time.sleep(0.05)
        raise SandboxUnavailable(f"{h.meta['name']} not healthy after {self.start_timeout:.0f} s: {self._logs(h)}")

    def _container(self, h: SandboxHandle):
        return self.client.containers.get(h.meta["container"])

    def _logs(self, h: SandboxHandle) -> str:
        try:
            return self._container(h).logs(tail=30).decode(errors="replace").strip()[-1500:]
        except Exception as e:
            return f"(no logs: {e})"

    def alive(self, handle: SandboxHandle) -> bool:
        try:
            c = self._container(handle)
            c.reload()
            return c.status == "running"
        except Exception:
            return False

    def reset(self, handle: SandboxHandle) -> SandboxHandle:
        if self.reset_mode == "inplace":
            return super().reset(handle)
        if self.reset_mode == "restart":
            self._container(handle).restart(timeout=2)
            self._wait(handle)
            return handle
        self._remove(handle)
        fresh = self._run(handle.id, handle.token, handle.meta["ports"])
        self._wait(fresh)
        if handle.id in self._mine:
            self._mine[handle.id] = fresh
        save_record(fresh)
        return fresh

    def _remove(self, handle: SandboxHandle) -> None:
        try:
            self._container(handle).remove(force=True)
        except Exception:
            pass

    def stop(self, handle: SandboxHandle) -> None:
        self._remove(handle)
        drop_record(handle.id)
        self._mine.pop(handle.id, None)

    def kill(self, handle: SandboxHandle) -> None:
        try:
            self._container(handle).kill()
        except Exception:
            pass

    def close(self) -> None:
        for h in list(self._mine.values()):
            if not h.meta.get("detached"):
                self.stop(h)

    def stats(self, handle: SandboxHandle) -> dict:
        """Memory use of the container (bytes), from the engine."""
        s = self._container(handle).stats(stream=False)
        mem = s.get("memory_stats", {})
        cache = mem.get("stats", {}).get("inactive_file", 0)
        return {"memory_bytes": max(0, mem.get("usage", 0) - cache), "memory_limit": mem.get("limit")}


def remove_all(only_ids: set[str] | None = None, this_state_dir: bool = False) -> list[str]:
    """Remove every container labelled as a VAGEN sandbox (or just `only_ids`). With
    ``this_state_dir``, only those started under this process's records folder (state_dir()):
    another records folder (another session, a test) and compose-managed sandboxes (no such
    label; `docker-compose down` owns them) keep theirs."""
    from docker.errors import NotFound

    client = docker_client()
    removed = []
    mine = str(state_dir())
    # ignore_removed: a container removed while we list (a pool replacing a dead sandbox, another
    # `down`) is skipped, not an error that stops the rest from being removed
    for c in client.containers.list(all=True, filters={"label": f"{LABEL}=1"}, ignore_removed=True):
        sid = c.labels.get("vagen.id", "")
        if only_ids is not None and sid not in only_ids:
            continue
        if this_state_dir and c.labels.get(STATE_LABEL) != mine:
            continue
        try:
            c.remove(force=True)
        except NotFound:
            pass  # removed by someone else meanwhile: gone either way
        drop_record(sid)
        removed.append(sid)
    return removed


def list_containers() -> list[dict]:
    client = docker_client()
    return [{"id": c.labels.get("vagen.id"), "url": c.labels.get("vagen.url"), "status": c.status,
             "container": c.name}
            for c in client.containers.list(all=True, filters={"label": f"{LABEL}=1"}, ignore_removed=True)]


__all__ = ["DEFAULT_IMAGE", "RESET_MODES", "DockerProvider", "build_image", "free_port", "list_containers",
           "remove_all"]
