"""The in-sandbox control server: OSWorld's guest HTTP API, hardened.

Routes (OSWorld-compatible request and response shapes unless noted):

    GET  /health                 {"status": "ok", ...}; 503 when the X display is gone   (ours)
    GET  /screenshot             PNG with the cursor drawn (?cursor=0 to omit, ?format=jpeg)
    POST /execute, /setup/execute  {"command": [argv] | "str", "shell": bool, "timeout": s}
                                 -> {"status", "output", "error", "returncode"}; 504 on timeout
    POST /setup/launch           {"command", "shell"} -> starts a desktop app, does not wait
    POST /setup/open_file        {"path", "window_name"?, "timeout_seconds"?} (xdg-open + wait for a window)
    POST /setup/activate_window, /setup/close_window   {"window_name", "strict"?, "by_class"?}
    POST /setup/upload           multipart: file_path + file_data
    POST /file                   form or JSON file_path -> the file's bytes
    POST /list_directory         {"path"} -> {"directory_tree": {...}}
    GET  /accessibility          {"AT": xml | null, "source": "atspi" | "wmctrl", "message"?}
    GET  /terminal               {"output": text | null, "status"}
    POST /screen_size, GET too   {"width", "height"}
    GET  /cursor_position        [x, y]
    GET  /platform               "Linux"
    POST /start_recording, /end_recording   ffmpeg x11grab -> the MP4 bytes
    POST /input                  {"actions": [{"type": "click", "x", "y"}, ...]}            (ours)
    POST /reset                  in-place reset of an owned session                           (ours)
    GET  /windows                top-level windows (wmctrl)                                   (ours)
    GET  /settle?timeout=&quiet= wait until the screen stops changing -> {"settled", "waited"}  (ours)
                                 (/input takes "settle": {...} too: act, then wait, one request)

Differences from OSWorld's server, by design: every route needs ``Authorization: Bearer
<token>`` (401 otherwise; compared in constant time); it binds 127.0.0.1 unless told
otherwise; request bodies over the limit get 413 before they are read; file routes are
confined to allowed roots (403 on escape, symlinks resolved); every command has a time
limit (its process group is killed); structured input runs through xdotool in-process
chains instead of one Python interpreter per action; AT-SPI dumps run one at a time in a
time-limited subprocess; there is no /setup/download_file (sandboxes have no internet in
tests, and the client uploads instead).
"""

from __future__ import annotations

import email.parser
import email.policy
import hmac
import ipaddress
import json
import logging
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .desktop import ActionError, Desktop, DesktopError

log = logging.getLogger("vagen.sandbox.server")
VERSION = "1"
A11Y_SCRIPT = Path(__file__).with_name("a11y.py")


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 5000
    token: str = ""
    roots: list[str] = field(default_factory=list)  # file routes stay inside these (after ~ expansion)
    max_body: int = 64 * 1024 * 1024
    command_timeout: float = 120.0      # default for /execute (OSWorld's fixed value)
    max_command_timeout: float = 600.0
    a11y_python: str | None = None      # a python with pyatspi; found automatically when None
    a11y_timeout: float = 30.0
    recordings_dir: str = "/tmp"


def is_loopback(host: str) -> bool:
    """True for "localhost" and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class HttpError(Exception):
    def __init__(self, status: int, message: str, **extra) -> None:
        super().__init__(message)
        self.status, self.message, self.extra = status, message, extra


class ControlServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, config: ServerConfig, desktop: Desktop) -> None:
        if not config.token:
            raise ValueError("the control server needs a token (--token or VAGEN_SANDBOX_TOKEN)")
        self.config = config
        self.desktop = desktop
        self.started = time.time()
        self.a11y_lock = threading.Lock()
        self.recording: tuple[subprocess.Popen, Path] | None = None
        self.recording_lock = threading.Lock()
        self.roots = [Path(os.path.realpath(desktop.expand(r))) for r in (config.roots or ["~", "/tmp"])]
        super().__init__((config.host, config.port), Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def confine(self, raw: object) -> Path:
        """Resolve a client path (after ~/$VAR expansion) and refuse anything outside the roots."""
        if not isinstance(raw, str) or not raw:
            raise HttpError(400, "path must be a non-empty string")
        if "\x00" in raw:
            raise HttpError(400, "path contains a NUL byte")
        expanded = self.desktop.expand(raw)
        path = Path(os.path.realpath(expanded))
        if self._inside(path):
            return path
        if self._inside(Path(os.path.normpath(expanded))):  # a symlink inside the roots leads out of them
            raise HttpError(403, f"path {raw!r} is a symbolic link that leads outside the allowed roots",
                            reason="symlink")
        raise HttpError(403, f"path {raw!r} is outside the allowed roots ({', '.join(map(str, self.roots))})")

    def _inside(self, path: Path) -> bool:
        return any(path == root or root in path.parents for root in self.roots)


class Handler(BaseHTTPRequestHandler):
    server: ControlServer
    protocol_version = "HTTP/1.1"
    server_version = "vagen-sandbox/" + VERSION

    # -- plumbing ----------------------------------------------------------------------------
    def log_message(self, fmt: str, *args) -> None:  # route access logs to logging, not stderr
        log.debug("%s %s", self.address_string(), fmt % args)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        self._body: bytes | None = None
        t0 = time.perf_counter()
        parsed = urllib.parse.urlsplit(self.path)
        self.query = dict(urllib.parse.parse_qsl(parsed.query))
        try:
            self._check_auth()
            route = ROUTES.get((method, parsed.path))
            if route is None:
                allowed = [m for (m, p) in ROUTES if p == parsed.path]
                if allowed:
                    raise HttpError(405, f"{method} not allowed on {parsed.path}; use {', '.join(allowed)}")
                raise HttpError(404, f"no route {parsed.path}")
            route(self)
        except HttpError as e:
            self._drain()
            self.send_json({"status": "error", "message": e.message, **e.extra}, e.status)
        except ActionError as e:
            self.send_json({"status": "error", "message": str(e)}, 400)
        except DesktopError as e:
            self.send_json({"status": "error", "message": str(e)}, 503)
        except (BrokenPipeError, ConnectionResetError):
            return
        except Exception as e:  # a bug: report it, keep serving
            log.exception("unhandled error on %s %s", method, parsed.path)
            self.send_json({"status": "error", "message": f"internal error: {type(e).__name__}: {e}"}, 500)
        finally:
            log.info("%s %s %.1f ms", method, parsed.path, (time.perf_counter() - t0) * 1000)

    def _check_auth(self) -> None:
        header = self.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(),
                                                                 self.server.config.token.encode()):
            raise HttpError(401, "missing or wrong bearer token")

    def _drain(self) -> None:
        """Read a small unread body so keep-alive stays in sync; close the connection otherwise."""
        if self._body is not None:
            return
        n = self._length(strict=False)
        if n and n <= 1024 * 1024:
            self.rfile.read(n)
        elif n:
            self.close_connection = True

    def _length(self, strict: bool = True) -> int:
        raw = self.headers.get("Content-Length")
        if raw is None:
            if strict and self.headers.get("Transfer-Encoding"):
                raise HttpError(411, "Content-Length is required (chunked bodies are not accepted)")
            return 0
        try:
            n = int(raw)
        except ValueError:
            if strict:
                raise HttpError(400, "bad Content-Length") from None
            return 0
        if n < 0:
            raise HttpError(400, "bad Content-Length")
        return n

    def body(self) -> bytes:
        if self._body is None:
            n = self._length()
            if n > self.server.config.max_body:
                self.close_connection = True
                raise HttpError(413, f"request body of {n} bytes exceeds the {self.server.config.max_body}-byte limit")
            self._body = self.rfile.read(n) if n else b""
        return self._body

    def json(self) -> dict:
        raw = self.body()
        if not raw:
            return {}
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise HttpError(400, f"body is not valid JSON: {e}") from None
        if not isinstance(data, dict):
            raise HttpError(400, "JSON body must be an object")
        return data

    def form(self) -> tuple[dict[str, str], dict[str, bytes]]:
        """Fields and files of a urlencoded, multipart or JSON body."""
        ctype = self.headers.get("Content-Type", "")
        raw = self.body()
        if ctype.startswith("application/json"):
            return {k: v for k, v in self.json().items() if isinstance(v, str)}, {}
        if ctype.startswith("application/x-www-form-urlencoded") or not ctype:
            return dict(urllib.parse.parse_qsl(raw.decode("utf-8", "replace"))), {}
        if ctype.startswith("multipart/form-data"):
            msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                b"Content-Type: " + ctype.encode("latin-1") + b"\r\n\r\n" + raw)
            if not msg.is_multipart():
                raise HttpError(400, "malformed multipart body")
            fields, files = {}, {}
            for part in msg.iter_parts():
                name = part.get_param("name", header="content-disposition")
                if not name:
                    continue
                payload = part.get_payload(decode=True) or b""
                if part.get_filename() is not None:
                    files[name] = payload
                else:
                    fields[name] = payload.decode("utf-8", "replace")
            return fields, files
        raise HttpError(415, f"unsupported Content-Type {ctype!r}")

    def send_bytes(self, data: bytes, ctype: str, status: int = 200, headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_json(self, obj: object, status: int = 200) -> None:
        self.send_bytes(json.dumps(obj).encode(), "application/json", status)

    def send_text(self, text: str, status: int = 200) -> None:
        self.send_bytes(text.encode(), "text/plain; charset=utf-8", status)

    # -- routes ------------------------------------------------------------------------------
    def health(self) -> None:
        d = self.server.desktop
        ok = d.alive()
        self.send_json({"status": "ok" if ok else "unhealthy", "display": d.spec.display, "version": VERSION,
                        "uptime_s": round(time.time() - self.server.started, 1), "resets": d.resets,
                        "session": d.own_session, "user": d.user.pw_name if d.user else None},
                       200 if ok else 503)

    def screenshot(self) -> None:
        fmt = self.query.get("format", "png").lower()
        if fmt not in ("png", "jpeg"):
            raise HttpError(400, "format must be png or jpeg")
        cursor = self.query.get("cursor", "1") not in ("0", "false")
        self.send_bytes(self.server.desktop.screenshot(cursor=cursor, fmt=fmt.upper()), f"image/{fmt}")

    def _command(self, data: dict) -> tuple[list[str] | str, bool]:
        shell = data.get("shell", False)
        if not isinstance(shell, bool):
            raise HttpError(400, "'shell' must be a boolean")
        command = data.get("command")
        if shell:
            if isinstance(command, list) and all(isinstance(c, str) for c in command):
                command = shlex.join(command)
            if not isinstance(command, str) or not command.strip():
                raise HttpError(400, "'command' must be a non-empty string when shell is true")
            return command, True
        if isinstance(command, str):
            try:
                command = shlex.split(command)
            except ValueError as e:
                raise HttpError(400, f"cannot split command: {e}") from None
        if not (isinstance(command, list) and command and all(isinstance(c, str) for c in command)):
            raise HttpError(400, "'command' must be a non-empty list of strings or a string")
        return [self.server.desktop.expand(c) if c.startswith("~") else c for c in command], False

    def execute(self) -> None:
        data = self.json()
        command, shell = self._command(data)
        cfg = self.server.config
        timeout = data.get("timeout", cfg.command_timeout)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise HttpError(400, "'timeout' must be a positive number of seconds")
        timeout = min(float(timeout), cfg.max_command_timeout)
        try:
            p = subprocess.Popen(command, shell=shell, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, start_new_session=True,
                                 **self.server.desktop.popen_kwargs())
        except (FileNotFoundError, PermissionError) as e:
            self.send_json({"status": "error", "message": str(e), "output": "", "error": str(e),
                            "returncode": 127})
            return
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _killpg(p)
            out, err = p.communicate()
            self.send_json({"status": "timeout", "message": f"command timed out after {timeout:g} s",
                            "output": out.decode("utf-8", "replace"), "error": err.decode("utf-8", "replace"),
                            "returncode": None}, 504)
            return
        self.send_json({"status": "success", "output": out.decode("utf-8", "replace"),
                        "error": err.decode("utf-8", "replace"), "returncode": p.returncode})

    def launch(self) -> None:
        command, shell = self._command(self.json())
        try:
            self.server.desktop.spawn(command, shell=shell)
        except (FileNotFoundError, PermissionError) as e:
            raise HttpError(404, f"cannot launch: {e}") from None
        self.send_text(f"{command if shell else ' '.join(command)} launched successfully")

    def open_file(self) -> None:
        data = self.json()
        path = self.server.confine(data.get("path"))
        if not path.exists():
            raise HttpError(404, f"file not found: {data.get('path')}")
        timeout = data.get("timeout_seconds", 30)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
            raise HttpError(400, "'timeout_seconds' must be a non-negative number")
        argv = _opener(path)
        if argv is None:
            raise HttpError(503, f"no application to open {path.suffix or 'this file'} (and no xdg-open)")
        proc = self.server.desktop.spawn(argv)
        names = [data["window_name"]] if data.get("window_name") else [path.name, path.stem]
        deadline = time.monotonic() + min(float(timeout), self.server.config.max_command_timeout)
        while True:
            for w in self.server.desktop.windows():
                if any(n in w["title"] for n in names):
                    self.server.desktop.window_command("a", w["id"].lower())
                    # The window is mapped before the app can take input (LibreOffice builds its UI
                    # after): wait until the app's processes go idle, at most until the deadline.
                    left = max(0.0, min(15.0, deadline - time.monotonic()))
                    if left > 0:
                        self.server.desktop.wait_idle(proc.pid, timeout=left)
                    self.send_text("File opened and window activated successfully")
                    return
            if time.monotonic() >= deadline:
                raise HttpError(504, f"no window matching {names} within {timeout:g} s")
            time.sleep(0.2)

    def _window(self, op: str) -> None:
        data = self.json()
        name = data.get("window_name")
        if not isinstance(name, str) or not name:
            raise HttpError(400, "window_name required")
        if not shutil.which("wmctrl"):
            raise HttpError(503, "wmctrl is not installed in the sandbox")
        if not self.server.desktop.window_command(op, name, bool(data.get("strict")), bool(data.get("by_class"))):
            raise HttpError(404, f"window {name!r} not found")
        self.send_text("Window activated successfully" if op == "a" else "Window closed successfully")

    def activate_window(self) -> None:
        self._window("a")

    def close_window(self) -> None:
        self._window("c")

    def upload(self) -> None:
        fields, files = self.form()
        if "file_path" not in fields or "file_data" not in files:
            raise HttpError(400, "file_path and file_data are required")
        path = self.server.confine(fields["file_path"])
        d = self.server.desktop
        missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
        path.parent.mkdir(parents=True, exist_ok=True)
        if d.user:  # folders we create belong to the desktop user, or it could not write in them
            for p in missing:
                os.chown(p, d.user.pw_uid, d.user.pw_gid)
        tmp = path.with_name(f".{path.name}.upload-{threading.get_ident()}")
        tmp.write_bytes(files["file_data"])
        if d.user:
            os.chown(tmp, d.user.pw_uid, d.user.pw_gid)
        os.replace(tmp, path)
        self.send_text(f"File Uploaded: {path.stat().st_size} bytes")

    def get_file(self) -> None:
        fields, _ = self.form()
        if "file_path" not in fields:
            raise HttpError(400, "file_path is required")
        path = self.server.confine(fields["file_path"])
        if not path.is_file():
            raise HttpError(404, "File not found")
        self.send_bytes(path.read_bytes(), "application/octet-stream",
                        headers={"Content-Disposition": f'attachment; filename="{path.name}"'})

    def list_directory(self) -> None:
        data = self.json()
        if "path" not in data:
            raise HttpError(400, "Missing 'path' parameter")
        root = self.server.confine(data["path"])
        if not root.is_dir():
            raise HttpError(400, "The provided path is not a directory")
        budget = [10_000]

        def tree(p: Path, depth: int) -> dict:
            node: dict = {"type": "directory", "name": p.name, "children": []}
            try:
                entries = sorted(os.scandir(p), key=lambda e: e.name)
            except OSError as e:
                return {"type": "directory", "name": p.name, "error": str(e)}
            for e in entries:
                budget[0] -= 1
                if budget[0] < 0:
                    node["truncated"] = True
                    break
                if e.is_dir(follow_symlinks=False) and depth < 20:
                    node["children"].append(tree(Path(e.path), depth + 1))
                else:
                    node["children"].append({"type": "file", "name": e.name})
            return node

        self.send_json({"directory_tree": tree(root, 0)})

    def accessibility(self) -> None:
        d = self.server.desktop
        python = self.server.config.a11y_python or _a11y_python()
        reason = "no Python with pyatspi found (install python3-pyatspi and at-spi2-core)"
        if python:
            argv = [python, str(A11Y_SCRIPT)]
            with self.server.a11y_lock:  # AT-SPI is not safe to walk concurrently
                try:
                    r = subprocess.run(argv, capture_output=True, text=True, timeout=self.server.config.a11y_timeout,
                                       start_new_session=True, **d.popen_kwargs())
                except subprocess.TimeoutExpired:
                    r = None
                    reason = f"AT-SPI dump timed out after {self.server.config.a11y_timeout:g} s"
            if r is not None and r.returncode == 0:
                self.send_json({"AT": r.stdout, "source": "atspi"})
                return
            if r is not None:
                reason = (r.stderr.strip().splitlines() or [f"a11y dump exited {r.returncode}"])[-1]
        # Fallback: the window list, so an agent still sees what is open.
        import xml.etree.ElementTree as ET

        root = ET.Element("desktop-frame", {"name": "main", "a11y": "unavailable"})
        for w in d.windows():
            ET.SubElement(root, "frame", {"name": w["title"], "class": w["class"],
                                          "screencoord": f"({w['x']}, {w['y']})",
                                          "size": f"({w['width']}, {w['height']})"})
        self.send_json({"AT": ET.tostring(root, encoding="unicode"), "source": "wmctrl",
                        "message": f"AT-SPI unavailable: {reason}"})

    def terminal(self) -> None:
        text = self.server.desktop.terminal_text()
        if text is None:
            self.send_json({"status": "error", "output": None, "message": "no terminal session (tmux 'vagen')"}, 404)
            return
        self.send_json({"status": "success", "output": text})

    def screen_size(self) -> None:
        self.body()
        w, h = self.server.desktop.screen_size()
        self.send_json({"width": w, "height": h})

    def cursor_position(self) -> None:
        self.send_json(list(self.server.desktop.cursor_position()))

    def platform(self) -> None:
        self.body()
        self.send_text(platform.system())

    def windows(self) -> None:
        self.send_json({"windows": self.server.desktop.windows()})

    def input(self) -> None:
        data = self.json()
        settle = data.get("settle")
        if settle is not None and not isinstance(settle, dict):
            raise HttpError(400, "'settle' must be an object {timeout, quiet}")
        out = self.server.desktop.run_actions(data.get("actions"))
        if settle is not None:
            out["settle"] = self.server.desktop.settle(*self._settle_args(settle))
        self.send_json({"status": "success", **out})

    def settle(self) -> None:
        self.send_json(self.server.desktop.settle(*self._settle_args(self.query)))

    @staticmethod
    def _settle_args(d: dict) -> tuple[float, float]:
        try:
            timeout, quiet = float(d.get("timeout", 2.0)), float(d.get("quiet", 0.15))
        except (TypeError, ValueError):
            raise HttpError(400, "settle timeout/quiet must be numbers") from None
        if not (0 <= timeout <= 30 and 0 <= quiet <= 5):
            raise HttpError(400, "settle timeout must be in [0, 30] s and quiet in [0, 5] s")
        return timeout, quiet

    def reset(self) -> None:
        self.body()
        try:
            self.send_json({"status": "success", **self.server.desktop.reset()})
        except DesktopError as e:
            raise HttpError(409 if "does not own" in str(e) else 503, str(e)) from None

    def start_recording(self) -> None:
        self.body()
        srv = self.server
        if not shutil.which("ffmpeg"):
            raise HttpError(503, "ffmpeg is not installed in the sandbox")
        with srv.recording_lock:
            if srv.recording is not None and srv.recording[0].poll() is None:
                raise HttpError(409, "a recording is already running")
            w, h = srv.desktop.screen_size()
            out = Path(srv.config.recordings_dir) / f"vagen-recording-{os.getpid()}-{int(time.time() * 1000)}.mp4"
            argv = ["ffmpeg", "-nostdin", "-y", "-loglevel", "error", "-f", "x11grab", "-draw_mouse", "1",
                    "-framerate", "10", "-video_size", f"{w}x{h}", "-i", srv.desktop.spec.display,
                    "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(out)]
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 start_new_session=True)
            time.sleep(0.3)
            if p.poll() is not None:
                raise HttpError(503, f"ffmpeg failed: {p.stderr.read().decode(errors='replace')[:300]}")
            srv.recording = (p, out)
        self.send_text("Started recording successfully")

    def end_recording(self) -> None:
        self.body()
        srv = self.server
        with srv.recording_lock:
            if srv.recording is None:
                raise HttpError(400, "no recording in progress")
            p, out = srv.recording
            srv.recording = None
        # ffmpeg opens the output only once its first frame is encoded; stopped before that (a
        # short recording on a loaded machine) it writes no file at all: wait for it (bounded).
        deadline = time.monotonic() + 10.0
        while p.poll() is None and not out.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)  # ffmpeg finalises the MP4 on SIGINT
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            _killpg(p)
        if not out.exists() or out.stat().st_size == 0:
            raise HttpError(500, "recording produced no file")
        data = out.read_bytes()
        out.unlink(missing_ok=True)
        self.send_bytes(data, "video/mp4", headers={"Content-Disposition": 'attachment; filename="recording.mp4"'})


# OSWorld's Ubuntu opens text in an editor, office files in LibreOffice and web pages in
# Chrome; xdg-open without a desktop environment falls back to `run-mailcap` (text in `more`
# inside an xterm), so the server picks the application itself where it can.
OPENERS = [
    ({".txt", ".md", ".py", ".json", ".log", ".sh", ".yaml", ".yml", ".ini", ".cfg", ".xml", ".tex"},
     [["mousepad"]]),
    ({".odt", ".doc", ".docx", ".rtf"}, [["libreoffice", "--writer"]]),
    ({".ods", ".xls", ".xlsx", ".csv"}, [["libreoffice", "--calc"]]),
    ({".odp", ".ppt", ".pptx"}, [["libreoffice", "--impress"]]),
    ({".html", ".htm", ".pdf", ".svg"}, [["vagen-chromium"], ["chromium"]]),
]


def _opener(path: Path) -> list[str] | None:
    for suffixes, candidates in OPENERS:
        if path.suffix.lower() in suffixes:
            for argv in candidates:
                if shutil.which(argv[0]):
                    return [*argv, str(path)]
    return ["xdg-open", str(path)] if shutil.which("xdg-open") else None


def _killpg(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        p.kill()


_A11Y_PY: list[str | None] = []


def _a11y_python() -> str | None:
    """The first Python that can import pyatspi (the system one usually; venvs cannot)."""
    if not _A11Y_PY:
        found = None
        for cand in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
            if os.path.exists(cand) and subprocess.run([cand, "-c", "import pyatspi"], capture_output=True,
                                                       timeout=20).returncode == 0:
                found = cand
                break
        _A11Y_PY.append(found)
    return _A11Y_PY[0]


ROUTES = {
    ("GET", "/health"): Handler.health,
    ("GET", "/screenshot"): Handler.screenshot,
    ("POST", "/execute"): Handler.execute,
    ("POST", "/setup/execute"): Handler.execute,
    ("POST", "/setup/launch"): Handler.launch,
    ("POST", "/setup/open_file"): Handler.open_file,
    ("POST", "/setup/activate_window"): Handler.activate_window,
    ("POST", "/setup/close_window"): Handler.close_window,
    ("POST", "/setup/upload"): Handler.upload,
    ("POST", "/file"): Handler.get_file,
    ("POST", "/list_directory"): Handler.list_directory,
    ("GET", "/accessibility"): Handler.accessibility,
    ("GET", "/terminal"): Handler.terminal,
    ("POST", "/screen_size"): Handler.screen_size,
    ("GET", "/screen_size"): Handler.screen_size,
    ("GET", "/cursor_position"): Handler.cursor_position,
    ("GET", "/platform"): Handler.platform,
    ("GET", "/windows"): Handler.windows,
    ("GET", "/settle"): Handler.settle,
    ("POST", "/input"): Handler.input,
    ("POST", "/reset"): Handler.reset,
    ("POST", "/start_recording"): Handler.start_recording,
    ("POST", "/end_recording"): Handler.end_recording,
}
