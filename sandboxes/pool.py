"""A pool of warm sandboxes: lease, reset between episodes, health-check, replace the dead.

    pool = SandboxPool(make_provider("local"), size=4)
    with pool.lease() as lease:          # blocks until a clean sandbox is free
        lease.client.input([...])        # raises SandboxLost if the sandbox dies meanwhile
    pool.close()

Released sandboxes are reset in the background (the next lease does not wait for it
unless none is idle); a sandbox that fails its reset or health check, or dies while
leased, is stopped and a replacement started in the background. A lease whose sandbox
died raises :class:`SandboxLost` (an infra error: envs drop the episode, they never score
it as the agent's failure) and does not disturb other leases.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from .client import SandboxClient, SandboxLost, SandboxUnavailable
from .providers.base import Provider, SandboxHandle

log = logging.getLogger("vagen.sandbox.pool")


class LeasedClient(SandboxClient):
    """A client whose infra failures are checked against the provider: a dead sandbox
    turns into SandboxLost and its replacement starts."""

    def __init__(self, lease: Lease, **kwargs) -> None:
        super().__init__(lease.handle.url, lease.handle.token, **kwargs)
        self._lease = lease

    def request(self, method: str, path: str, **kwargs):
        if self._lease.lost:
            raise SandboxLost(f"sandbox {self._lease.handle.id} was lost earlier in this lease")
        try:
            return super().request(method, path, **kwargs)
        except SandboxUnavailable as e:
            if not self._lease.pool._is_healthy(self._lease.handle):
                self._lease.lost = True
                self._lease.pool._on_lost(self._lease)
                raise SandboxLost(f"sandbox {self._lease.handle.id} died mid-episode ({method} {path}): {e}") from e
            raise


class Lease:
    def __init__(self, pool: SandboxPool, handle: SandboxHandle) -> None:
        self.pool, self.handle = pool, handle
        self.lost = False
        self.released = False
        self.client = LeasedClient(self, timeout=pool.client_timeout)

    def mark_lost(self) -> None:
        """The user saw the sandbox fail (e.g. a browser connection broke): on release the pool
        replaces it instead of resetting it."""
        if not self.lost:
            self.lost = True
            self.pool._on_lost(self)

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.client.close()
            self.pool._release(self)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class SandboxPool:
    def __init__(self, provider: Provider, size: int = 1, reset_on_release: bool = True,
                 health_interval: float = 10.0, client_timeout: float = 30.0, max_replacements: int = 100) -> None:
        if size < 1:
            raise ValueError("pool size must be >= 1")
        self.provider, self.size = provider, size
        self.reset_on_release = reset_on_release
        self.client_timeout = client_timeout
        self.max_replacements = max_replacements
        self._cv = threading.Condition()
        self._idle: deque[SandboxHandle] = deque()
        self._leased: dict[str, Lease] = {}
        self._busy = 0  # resetting or starting
        self._closed = False
        self._bg = ThreadPoolExecutor(max_workers=max(2, size), thread_name_prefix="sandbox-pool")
        self.counters = {"leases": 0, "releases": 0, "resets": 0, "reset_failures": 0, "replacements": 0,
                         "lost": 0, "health_failures": 0}
        self._reset_s: deque[float] = deque(maxlen=200)
        t0 = time.perf_counter()
        self._idle.extend(provider.start(size))
        self.start_s = time.perf_counter() - t0
        self._monitor = threading.Thread(target=self._watch, args=(health_interval,), daemon=True,
                                         name="sandbox-pool-health")
        self._monitor.start()

    # -- leasing -----------------------------------------------------------------------------
    def lease(self, timeout: float | None = 300.0) -> Lease:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            while not self._idle:
                if self._closed:
                    raise SandboxUnavailable("the sandbox pool is closed")
                if self._busy == 0 and not self._idle and self.counters["replacements"] >= self.max_replacements:
                    raise SandboxUnavailable("no sandboxes left: replacement budget exhausted")
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise SandboxUnavailable(f"no sandbox free within {timeout:.0f} s ({self._describe()})")
                self._cv.wait(remaining)
            handle = self._idle.popleft()
            lease = Lease(self, handle)
            self._leased[handle.id] = lease
            self.counters["leases"] += 1
            return lease

    def _release(self, lease: Lease) -> None:
        with self._cv:
            self._leased.pop(lease.handle.id, None)
            self.counters["releases"] += 1
            if lease.lost:
                return  # its replacement is already on the way
            if not self.reset_on_release:
                self._idle.append(lease.handle)
                self._cv.notify_all()
                return
            self._busy += 1
        self._bg.submit(self._reset, lease.handle)

    def _reset(self, handle: SandboxHandle) -> None:
        t0 = time.perf_counter()
        try:
            fresh = self.provider.reset(handle)
        except Exception as e:
            log.warning("reset of %s failed (%s); replacing it", handle.id, e)
            with self._cv:
                self.counters["reset_failures"] += 1
                self._busy -= 1
            self._replace(handle)
            return
        with self._cv:
            self._reset_s.append(time.perf_counter() - t0)
            self.counters["resets"] += 1
        self._back_to_idle(fresh)

    def _back_to_idle(self, fresh: SandboxHandle) -> None:
        """A reset or replacement finished: hand `fresh` to waiting leases (or stop it if closed)."""
        with self._cv:
            self._busy -= 1
            if self._closed:
                self.provider.stop(fresh)
                return
            self._idle.append(fresh)
            self._cv.notify_all()

    # -- failure handling ----------------------------------------------------------------------
    def _is_healthy(self, handle: SandboxHandle) -> bool:
        try:
            return self.provider.healthy(handle)
        except Exception:  # noqa: BLE001 - a provider that cannot tell counts as unhealthy
            return False

    def _on_lost(self, lease: Lease) -> None:
        with self._cv:
            self.counters["lost"] += 1
        self._bg.submit(self._replace, lease.handle)

    def _replace(self, dead: SandboxHandle) -> None:
        with self._cv:
            if self._closed or self.counters["replacements"] >= self.max_replacements:
                self._cv.notify_all()
                return
            self.counters["replacements"] += 1
            self._busy += 1
        try:
            self.provider.stop(dead)
        except Exception as e:
            log.warning("stopping dead sandbox %s failed: %s", dead.id, e)
        try:
            fresh = self.provider.start(1)[0]
        except Exception as e:
            log.error("starting a replacement sandbox failed: %s", e)
            with self._cv:
                self._busy -= 1
                self._cv.notify_all()
            return
        self._back_to_idle(fresh)

    def _watch(self, interval: float) -> None:
        while True:
            with self._cv:
                self._cv.wait_for(lambda: self._closed, timeout=interval)
                if self._closed:
                    return
                idle = list(self._idle)
            for h in idle:
                if self._is_healthy(h):
                    continue
                with self._cv:
                    if h not in self._idle:
                        continue
                    self._idle.remove(h)
                    self.counters["health_failures"] += 1
                self._bg.submit(self._replace, h)

    # -- reporting / shutdown ------------------------------------------------------------------
    def _describe(self) -> str:
        return f"{len(self._idle)} idle, {len(self._leased)} leased, {self._busy} resetting/starting"

    def metrics(self) -> dict:
        with self._cv:
            r = sorted(self._reset_s)
            return {"size": self.size, "idle": len(self._idle), "leased": len(self._leased), "busy": self._busy,
                    **self.counters, "start_s": round(self.start_s, 3),
                    "reset_s_mean": round(sum(r) / len(r), 3) if r else None,
                    "reset_s_p90": round(r[min(len(r) - 1, int(0.9 * len(r)))], 3) if r else None}

    def wait_idle(self, n: int | None = None, timeout: float = 60.0) -> None:
        """Block until `n` (default: size) sandboxes are idle."""
        n = self.size if n is None else n
        with self._cv:
            if not self._cv.wait_for(lambda: len(self._idle) >= n, timeout=timeout):
                raise SandboxUnavailable(f"pool not back to {n} idle within {timeout:.0f} s ({self._describe()})")

    def close(self) -> None:
        with self._cv:
            if self._closed:
                return
            self._closed = True
            self._cv.notify_all()
            handles = list(self._idle) + [lease.handle for lease in self._leased.values()]
            self._idle.clear()
        self._bg.shutdown(wait=True)
        for h in handles:
            try:
                self.provider.stop(h)
            except Exception as e:
                log.warning("stopping %s failed: %s", h.id, e)

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def pool_kind(env_cls: type, sandbox_cfg) -> str | None:
    """Which pool an env class gets from a ``sandbox:`` config: ``"desktop"`` for envs that
    need a desktop (``needs_sandbox``), ``"browser"`` for browser envs (``needs_browser``)
    when ``sandbox.kind`` is browser, else None (a browser env launches its own Chromium)."""
    kind = getattr(sandbox_cfg, "kind", "desktop") if sandbox_cfg is not None else "desktop"
    if getattr(env_cls, "needs_sandbox", False):
        if kind != "desktop":
            raise ValueError(f"env {getattr(env_cls, 'name', env_cls)!r} needs desktop sandboxes; sandbox.kind is {kind}")
        return "desktop"
    if getattr(env_cls, "needs_browser", False) and kind == "browser":
        return "browser"
    return None
