"""What every sandbox provider does: start, reset, check, stop sandboxes; remember them.

Sandboxes started by ``vagen sandbox up`` outlive the command, so each one is recorded in
a state file (``<state dir>/<id>.json``, mode 0600 because it holds the token) that
``vagen sandbox ls|screenshot|exec|down`` read back.
"""

from __future__ import annotations

import json
import os
import secrets
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..client import SandboxClient


@dataclass
class SandboxHandle:
    id: str
    url: str
    token: str
    provider: str
    meta: dict = field(default_factory=dict)

    def client(self, **kwargs) -> SandboxClient:
        return SandboxClient(self.url, self.token, **kwargs)

    def public(self) -> dict:
        """The JSON `vagen sandbox up --json` prints: {id, url, token, provider}."""
        return {"id": self.id, "url": self.url, "token": self.token, "provider": self.provider}


def new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


def new_token() -> str:
    return secrets.token_urlsafe(24)


def state_dir() -> Path:
    """Where sandbox records live: $VAGEN_SANDBOX_STATE_DIR or <user cache>/vagen/sandboxes."""
    if os.environ.get("VAGEN_SANDBOX_STATE_DIR"):
        d = Path(os.environ["VAGEN_SANDBOX_STATE_DIR"])
    else:
        from platformdirs import user_cache_dir

        d = Path(user_cache_dir("vagen")) / "sandboxes"
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def save_record(h: SandboxHandle) -> Path:
    path = state_dir() / f"{h.id}.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(asdict(h), f)
    return path


def load_records() -> list[SandboxHandle]:
    out = []
    for p in sorted(state_dir().glob("*.json")):
        try:
            out.append(SandboxHandle(**json.loads(p.read_text())))
        except (ValueError, TypeError, OSError):
            continue
    return out


def drop_record(sandbox_id: str) -> None:
    (state_dir() / f"{sandbox_id}.json").unlink(missing_ok=True)


class Provider(ABC):
    """Starts sandboxes of one kind. `close()` stops the ones this object started (not
    detached ones); providers also stop their sandboxes at interpreter exit."""

    name: str = "base"
    _mine: dict[str, SandboxHandle]  # the sandboxes this object started (providers that start any)

    @abstractmethod
    def start(self, n: int = 1) -> list[SandboxHandle]: ...

    @abstractmethod
    def stop(self, handle: SandboxHandle) -> None: ...

    @abstractmethod
    def alive(self, handle: SandboxHandle) -> bool:
        """Cheap liveness (process/container running), without an HTTP round trip."""

    def _start_each(self, n: int, launch, wait) -> list[SandboxHandle]:
        """Launch ``n`` sandboxes one after another (fast), then wait for all of them; on any
        failure stop the ones launched. Started handles are remembered and recorded."""
        handles: list[SandboxHandle] = []
        try:
            for _ in range(n):
                handles.append(launch())
            for h in handles:
                wait(h)
        except BaseException:
            for h in handles:
                self.stop(h)
            raise
        for h in handles:
            self._mine[h.id] = h
            save_record(h)
        return handles

    def healthy(self, handle: SandboxHandle) -> bool:
        """Alive and answering (the pool's health check): the control server's /health."""
        from ..client import SandboxError

        if not self.alive(handle):
            return False
        try:
            with SandboxClient(handle.url, handle.token, timeout=5.0, retries=1) as c:
                return c.health().get("status") == "ok"
        except SandboxError:
            return False

    def reset(self, handle: SandboxHandle) -> SandboxHandle:
        """Restore a clean state; may return a new handle (e.g. a recreated container)."""
        with handle.client(timeout=60.0) as c:
            c.reset()
        return handle

    def kill(self, handle: SandboxHandle) -> None:
        """Hard-kill a sandbox (tests use it to simulate an infra failure)."""
        self.stop(handle)

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
