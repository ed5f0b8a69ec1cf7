"""``remote`` provider: sandboxes started elsewhere (a cluster, another machine, compose).

Given their URLs and token, it hands them out; it never starts or stops them. Reset uses
the server's in-place ``/reset`` (the remote server must own its session: ``--session``).
"""

from __future__ import annotations

import hashlib

from ..client import SandboxError, SandboxUnavailable
from .base import Provider, SandboxHandle


class RemoteProvider(Provider):
    name = "remote"

    def __init__(self, urls: list[str] | str, token: str | list[str], check: bool = True) -> None:
        if isinstance(urls, str):
            urls = [u for u in urls.replace(",", " ").split() if u]
        if not urls:
            raise ValueError("the remote provider needs at least one URL")
        tokens = token if isinstance(token, list) else [token] * len(urls)
        if len(tokens) != len(urls) or not all(tokens):
            raise ValueError("the remote provider needs a token per URL (or one shared token)")
        self.handles = [SandboxHandle("remote-" + hashlib.sha1(u.encode()).hexdigest()[:8], u.rstrip("/"), t,
                                      self.name, {"remote": True}) for u, t in zip(urls, tokens, strict=True)]
        self.check = check
        self._given: set[str] = set()

    def start(self, n: int = 1) -> list[SandboxHandle]:
        free = [h for h in self.handles if h.id not in self._given]
        if n > len(free):
            raise SandboxUnavailable(f"asked for {n} remote sandboxes, {len(free)} of {len(self.handles)} are free")
        out = free[:n]
        if self.check:
            for h in out:
                self._wait_ready(h)
        self._given.update(h.id for h in out)
        return out

    def _wait_ready(self, handle: SandboxHandle) -> None:
        with handle.client(timeout=10.0) as c:
            c.wait_ready(timeout=30.0)

    def stop(self, handle: SandboxHandle) -> None:
        self._given.discard(handle.id)  # not ours to stop: just hand it back

    def alive(self, handle: SandboxHandle) -> bool:
        try:
            with handle.client(timeout=5.0, retries=0) as c:
                return c.health().get("status") == "ok"
        except SandboxError:
            return False
