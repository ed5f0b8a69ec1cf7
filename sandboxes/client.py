"""Typed HTTP client for the in-sandbox control server (and OSWorld-style guest servers).

Every call has a timeout; connection failures and 502/503 answers are retried with
backoff where the call is safe to repeat (reads, uploads, input is *not* retried once
sent); errors surface as typed exceptions so envs can tell an infra failure
(:class:`SandboxUnavailable` — never the agent's fault) from a bad request or a failed
command.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx


class SandboxError(RuntimeError):
    """Base class of every sandbox client error."""

    def __init__(self, message: str, status: int | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.status, self.body = status, body


class SandboxUnavailable(SandboxError):
    """The sandbox cannot be reached or is unhealthy (infra failure, not the agent's)."""


class SandboxLost(SandboxUnavailable):
    """A leased sandbox died mid-episode; the pool is replacing it. Infra, not the agent."""


class SandboxAuthError(SandboxError):
    """401: missing or wrong token."""


class SandboxRequestError(SandboxError):
    """4xx: the request was refused (bad JSON, path outside the roots, body too large...)."""


class SandboxCommandError(SandboxError):
    """A command ran and failed (non-zero exit with check=True, or could not start)."""


class SandboxTimeout(SandboxError):
    """A command or action exceeded its time limit inside the sandbox (504)."""


@dataclass
class CommandResult:
    output: str
    error: str
    returncode: int | None
    status: str = "success"


TRANSIENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError, httpx.ReadError,
             httpx.PoolTimeout, httpx.WriteError)


class SandboxClient:
    """``SandboxClient(url, token)``; use as a context manager or call :meth:`close`."""

    def __init__(self, url: str, token: str, timeout: float = 30.0, retries: int = 3, backoff: float = 0.2,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._http = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"},
                                  timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)), transport=transport,
                                  trust_env=False)

    def __enter__(self) -> SandboxClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def __repr__(self) -> str:
        return f"SandboxClient({self.url!r})"

    # -- transport ---------------------------------------------------------------------------
    def request(self, method: str, path: str, *, retry: bool = True, timeout: float | None = None,
                **kwargs) -> httpx.Response:
        attempts = 1 + (self.retries if retry else 0)
        last: Exception | None = None
        for i in range(attempts):
            if i:
                time.sleep(self.backoff * (2 ** (i - 1)))
            try:
                r = self._http.request(method, path, timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT,
                                       **kwargs)
            except httpx.ConnectError as e:  # nothing was sent: always safe to retry
                last = e
                continue
            except TRANSIENT as e:
                last = e
                if retry:
                    continue
                break
            except httpx.TimeoutException as e:
                raise SandboxUnavailable(f"{method} {path}: no answer from {self.url} within the timeout: {e}") from e
            if r.status_code in (502, 503) and retry and i + 1 < attempts:
                last = SandboxUnavailable(_message(r), r.status_code, _body(r))
                continue
            self._raise_for(r, method, path)
            return r
        if isinstance(last, SandboxError):
            raise last
        raise SandboxUnavailable(f"{method} {path}: cannot reach {self.url}: {type(last).__name__}: {last}") from last

    @staticmethod
    def _raise_for(r: httpx.Response, method: str, path: str) -> None:
        if r.status_code < 400:
            return
        msg = f"{method} {path} -> {r.status_code}: {_message(r)}"
        cls = {401: SandboxAuthError, 504: SandboxTimeout}.get(r.status_code)
        if cls is None:
            cls = SandboxUnavailable if r.status_code >= 500 else SandboxRequestError
        raise cls(msg, r.status_code, _body(r))

    def _json(self, method: str, path: str, **kwargs) -> Any:
        return self.request(method, path, **kwargs).json()

    # -- routes ------------------------------------------------------------------------------
    def health(self, timeout: float = 5.0) -> dict:
        return self._json("GET", "/health", timeout=timeout, retry=False)

    def wait_ready(self, timeout: float = 30.0, interval: float = 0.05) -> dict:
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                return self.health(timeout=min(5.0, max(0.5, deadline - time.monotonic())))
            except SandboxAuthError:
                raise
            except SandboxError as e:
                last = e
            time.sleep(interval)
        raise SandboxUnavailable(f"{self.url} not healthy after {timeout:.0f} s: {last}")

    def screenshot(self, cursor: bool = True, fmt: str = "png") -> bytes:
        return self.request("GET", "/screenshot", params={"cursor": int(cursor), "format": fmt}).content

    def screenshot_array(self, cursor: bool = True):
        """The screenshot as an HxWx3 uint8 numpy array."""
        import io

        import numpy as np
        from PIL import Image

        return np.asarray(Image.open(io.BytesIO(self.screenshot(cursor))).convert("RGB"))

    def execute(self, command: list[str] | str, shell: bool = False, timeout: float | None = None,
                check: bool = False) -> CommandResult:
        body: dict[str, Any] = {"command": command, "shell": shell}
        if timeout is not None:
            body["timeout"] = timeout
        http_timeout = (timeout or 120.0) + 10.0
        data = self._json("POST", "/execute", json=body, retry=False, timeout=http_timeout)
        res = CommandResult(data.get("output", ""), data.get("error", ""), data.get("returncode"),
                            data.get("status", "success"))
        if check and res.returncode != 0:
            raise SandboxCommandError(f"{command!r} exited {res.returncode}: {res.error.strip()[:500]}", body=data)
        return res

    def launch(self, command: list[str] | str, shell: bool = False) -> str:
        return self.request("POST", "/setup/launch", json={"command": command, "shell": shell}, retry=False).text

    def open_file(self, path: str, window_name: str | None = None, timeout: float = 30.0) -> str:
        body = {"path": path, "timeout_seconds": timeout, **({"window_name": window_name} if window_name else {})}
        return self.request("POST", "/setup/open_file", json=body, retry=False, timeout=timeout + 10).text

    def activate_window(self, name: str, strict: bool = False, by_class: bool = False) -> str:
        return self.request("POST", "/setup/activate_window",
                            json={"window_name": name, "strict": strict, "by_class": by_class}).text

    def close_window(self, name: str, strict: bool = False, by_class: bool = False) -> str:
        return self.request("POST", "/setup/close_window",
                            json={"window_name": name, "strict": strict, "by_class": by_class}).text

    def upload(self, path: str, data: bytes) -> str:
        return self.request("POST", "/setup/upload", data={"file_path": path},
                            files={"file_data": ("file", data, "application/octet-stream")}).text

    def download(self, path: str) -> bytes:
        return self.request("POST", "/file", data={"file_path": path}).content

    def list_directory(self, path: str) -> dict:
        return self._json("POST", "/list_directory", json={"path": path})["directory_tree"]

    def accessibility(self) -> dict:
        """``{"AT": xml, "source": "atspi" | "wmctrl", "message"?}``."""
        return self._json("GET", "/accessibility", timeout=max(self.timeout, 60.0))

    def terminal(self) -> str | None:
        try:
            return self._json("GET", "/terminal").get("output")
        except SandboxRequestError as e:
            if e.status == 404:
                return None
            raise

    def screen_size(self) -> tuple[int, int]:
        d = self._json("POST", "/screen_size")
        return int(d["width"]), int(d["height"])

    def cursor_position(self) -> tuple[int, int]:
        x, y = self._json("GET", "/cursor_position")
        return int(x), int(y)

    def platform(self) -> str:
        return self.request("GET", "/platform").text

    def windows(self) -> list[dict]:
        return self._json("GET", "/windows")["windows"]

    def input(self, actions: list[dict], settle: dict | None = None) -> dict:
        """Run structured actions (see ``sandboxes.server.ACTION_TYPES``) in one request; with
        ``settle={"timeout": s, "quiet": s}`` the server then waits for the screen to settle."""
        body: dict = {"actions": actions}
        if settle is not None:
            body["settle"] = settle
        extra = float(settle.get("timeout", 2.0)) if settle else 0.0
        return self._json("POST", "/input", json=body, retry=False, timeout=self.timeout + extra)

    def settle(self, timeout: float = 2.0, quiet: float = 0.15) -> dict:
        """Wait until the screen stops changing (at most ``timeout`` s)."""
        return self._json("GET", "/settle", params={"timeout": timeout, "quiet": quiet}, timeout=self.timeout + timeout)

    def reset(self, timeout: float = 60.0) -> dict:
        return self._json("POST", "/reset", timeout=timeout, retry=False)

    def start_recording(self) -> str:
        return self.request("POST", "/start_recording", retry=False).text

    def end_recording(self) -> bytes:
        return self.request("POST", "/end_recording", retry=False, timeout=60.0).content


def _body(r: httpx.Response) -> Any:
    try:
        return r.json()
    except ValueError:
        return r.text


def _message(r: httpx.Response) -> str:
    b = _body(r)
    if isinstance(b, dict):
        return str(b.get("message") or b.get("error") or b)
    return str(b)[:500]
