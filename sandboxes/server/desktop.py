"""The X11 desktop the control server drives: session processes, screenshots, input.

Standard library only at import time (PIL is imported when a screenshot is taken), so the
server runs on a bare image's system ``python3`` with ``python3-pil``.

A :class:`Desktop` optionally *owns* its session (``--session``): it starts Xvfb, a window
manager and a terminal, runs apps as the desktop user, and :meth:`Desktop.reset` tears them
down, restores the home directory from a template and starts them again — the in-place
reset that makes a sandbox clean in about a second without recreating its container.
"""

from __future__ import annotations

import io
import os
import pwd
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path


class DesktopError(RuntimeError):
    """The desktop cannot do what was asked (X server gone, tool missing, bad action)."""


class ActionError(ValueError):
    """A structured input action is malformed (the caller's fault: HTTP 400)."""


# pyautogui key names -> X keysym names (xdotool accepts keysyms).
KEY_NAMES = {
    "enter": "Return", "return": "Return", "\n": "Return", "esc": "Escape", "escape": "Escape",
    "tab": "Tab", "\t": "Tab", "space": "space", " ": "space", "backspace": "BackSpace",
    "delete": "Delete", "del": "Delete", "insert": "Insert", "home": "Home", "end": "End",
    "pageup": "Prior", "pgup": "Prior", "pagedown": "Next", "pgdn": "Next",
    "up": "Up", "down": "Down", "left": "Left", "right": "Right",
    "ctrl": "ctrl", "ctrlleft": "Control_L", "ctrlright": "Control_R", "control": "ctrl",
    "alt": "alt", "altleft": "Alt_L", "altright": "Alt_R", "shift": "shift",
    "shiftleft": "Shift_L", "shiftright": "Shift_R", "win": "super", "winleft": "Super_L",
    "winright": "Super_R", "super": "super", "command": "super", "cmd": "super", "meta": "super",
    "capslock": "Caps_Lock", "numlock": "Num_Lock", "scrolllock": "Scroll_Lock",
    "printscreen": "Print", "prtsc": "Print", "pause": "Pause", "menu": "Menu", "apps": "Menu",
    "volumeup": "XF86AudioRaiseVolume", "volumedown": "XF86AudioLowerVolume", "volumemute": "XF86AudioMute",
    "+": "plus", "-": "minus", "=": "equal", ",": "comma", ".": "period", "/": "slash",
    "\\": "backslash", ";": "semicolon", "'": "apostrophe", "`": "grave", "[": "bracketleft",
    "]": "bracketright", "!": "exclam", "@": "at", "#": "numbersign", "$": "dollar", "%": "percent",
    "^": "asciicircum", "&": "ampersand", "*": "asterisk", "(": "parenleft", ")": "parenright",
    "_": "underscore", "{": "braceleft", "}": "braceright", "|": "bar", ":": "colon", '"': "quotedbl",
    "<": "less", ">": "greater", "?": "question", "~": "asciitilde",
}
KEY_NAMES.update({f"f{i}": f"F{i}" for i in range(1, 25)})
KEY_NAMES.update({f"num{i}": f"KP_{i}" for i in range(10)})
BUTTONS = {"left": 1, "middle": 2, "right": 3}
ACTION_TYPES = ("move", "click", "mouse_down", "mouse_up", "drag", "scroll", "type", "key", "key_down",
                "key_up", "press", "wait")
MAX_ACTIONS = 200
MAX_TEXT = 10_000
MAX_WAIT_S = 10.0


def keysym(name: object) -> str:
    """Map a pyautogui-style key name to an X keysym, or raise ActionError."""
    if not isinstance(name, str) or not name:
        raise ActionError(f"key must be a non-empty string, got {name!r}")
    low = name.lower() if len(name) > 1 else name
    if low in KEY_NAMES:
        return KEY_NAMES[low]
    if len(name) == 1 and name.isprintable():
        return name
    if name.replace("_", "").isalnum():  # an X keysym name given directly (e.g. "KP_Enter")
        return name
    raise ActionError(f"unknown key {name!r}")


def _num(action: dict, key: str, default: float | None = None, lo: float | None = None,
         hi: float | None = None) -> float:
    value = action.get(key, default)
    if value is None:
        raise ActionError(f"{action.get('type')} needs {key!r}")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ActionError(f"{key!r} must be a number, got {value!r}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ActionError(f"{key!r}={value} out of range [{lo}, {hi}]")
    return value


def compile_actions(actions: object, screen: tuple[int, int]) -> list[list[str] | float]:
    """Validate structured actions and turn them into xdotool argument chains.

    Returns a plan: lists of xdotool arguments (each run as one ``xdotool`` process; many
    actions chain into one) and floats (seconds to sleep). ``type`` ends a chain because
    xdotool's ``type`` consumes the rest of its command line.
    """
    if not isinstance(actions, list) or not actions:
        raise ActionError("'actions' must be a non-empty list")
    if len(actions) > MAX_ACTIONS:
        raise ActionError(f"at most {MAX_ACTIONS} actions per request, got {len(actions)}")
    w, h = screen
    plan: list[list[str] | float] = []
    chain: list[str] = []

    def flush() -> None:
        nonlocal chain
        if chain:
            plan.append(chain)
            chain = []

    def xy(a: dict, required: bool) -> list[str]:
        if a.get("x") is None and a.get("y") is None and not required:
            return []
        x = _num(a, "x", lo=0, hi=w - 1)
        y = _num(a, "y", lo=0, hi=h - 1)
        return ["mousemove", str(int(round(x))), str(int(round(y)))]

    def button(a: dict) -> str:
        b = a.get("button", "left")
        if b not in BUTTONS:
            raise ActionError(f"button must be one of {', '.join(BUTTONS)}, got {b!r}")
        return str(BUTTONS[b])

    pointer_moved = False
    for a in actions:
        if not isinstance(a, dict):
            raise ActionError(f"each action must be an object, got {a!r}")
        kind = a.get("type")
        if kind not in ACTION_TYPES:
            raise ActionError(f"unknown action type {kind!r}; allowed: {', '.join(ACTION_TYPES)}")
        if kind in ("type", "key", "key_down", "press") and pointer_moved:
            # A click that moves the focus is processed asynchronously by the WM and the app;
            # keys sent at once can arrive before FocusIn and the first one is lost.
            chain += ["sleep", "0.05"]
        pointer_moved = kind in ("click", "mouse_down", "mouse_up", "drag")
        if kind == "move":
            chain += xy(a, True)
        elif kind == "click":
            clicks = int(_num(a, "clicks", 1, lo=1, hi=3))
            b = button(a)
            # Press/release pairs rather than `xdotool click`, which sleeps ~100 ms per click.
            chain += xy(a, False)
            for i in range(clicks):
                chain += (["sleep", "0.03"] if i else []) + ["mousedown", b, "mouseup", b]
        elif kind in ("mouse_down", "mouse_up"):
            chain += xy(a, False) + ["mousedown" if kind == "mouse_down" else "mouseup", button(a)]
        elif kind == "drag":
            frm = a.get("from")
            if frm is not None:
                if not (isinstance(frm, list) and len(frm) == 2):
                    raise ActionError("'from' must be [x, y]")
                chain += xy({"type": kind, "x": frm[0], "y": frm[1]}, True)
            b = button(a)
            chain += ["mousedown", b] + xy(a, True) + ["mouseup", b]
        elif kind == "scroll":
            dy = int(_num(a, "dy", 0, lo=-100, hi=100))  # pyautogui: positive scrolls up
            dx = int(_num(a, "dx", 0, lo=-100, hi=100))  # positive scrolls right
            chain += xy(a, False)
            for n, btn in ((dy, "4" if dy > 0 else "5"), (dx, "7" if dx > 0 else "6")):
                chain += ["mousedown", btn, "mouseup", btn] * abs(n)  # one wheel notch per pair
        elif kind == "type":
            text = a.get("text")
            if not isinstance(text, str):
                raise ActionError("type needs 'text' (a string)")
            if len(text) > MAX_TEXT:
                raise ActionError(f"text longer than {MAX_TEXT} characters")
            delay_ms = int(_num(a, "interval", 0.004, lo=0, hi=1) * 1000)
            # xdotool types "\n" as the Linefeed keysym, which GTK text views ignore: send Return.
            for k, part in enumerate(text.replace("\r\n", "\n").split("\n")):
                if k:
                    chain += ["key", "Return"]
                if part:
                    chain += ["type", "--delay", str(delay_ms), "--", part]
                    flush()
        elif kind == "key":
            keys = a.get("keys", a.get("key"))
            keys = [keys] if isinstance(keys, str) else keys
            if not isinstance(keys, list) or not keys:
                raise ActionError("key needs 'keys' (a key name or a list of key names pressed together)")
            chain += ["key", "--clearmodifiers", "+".join(keysym(k) for k in keys)]
        elif kind in ("key_down", "key_up"):
            chain += ["keydown" if kind == "key_down" else "keyup", keysym(a.get("key"))]
        elif kind == "press":
            presses = int(_num(a, "presses", 1, lo=1, hi=100))
            chain += ["key", "--repeat", str(presses), "--delay", "20", keysym(a.get("key"))]
        elif kind == "wait":
            flush()
            plan.append(float(_num(a, "seconds", lo=0, hi=MAX_WAIT_S)))
    flush()
    return plan


@dataclass
class SessionSpec:
    """What an owned desktop session runs (see ``python -m sandboxes.server --help``)."""

    display: str = ":0"
    width: int = 1280
    height: int = 800
    home: str | None = None            # the desktop user's HOME; restored on reset
    home_template: str | None = None   # copied into `home` on start and reset
    user: str | None = None            # run desktop apps as this user (server must be root)
    window_manager: str = "openbox"
    terminal: bool = True              # xterm running a tmux session named "vagen"
    apps: list[str] = field(default_factory=list)  # extra shell commands started per session
    start_xvfb: bool = True


class Desktop:
    """One X display: its session processes (when owned), screenshots and input."""

    def __init__(self, spec: SessionSpec, own_session: bool = False) -> None:
        self.spec = spec
        self.own_session = own_session
        self._procs: list[subprocess.Popen] = []
        self._xvfb: subprocess.Popen | None = None
        self._lock = threading.RLock()
        self._screen: tuple[int, int] | None = None
        self.user = pwd.getpwnam(spec.user) if spec.user else None
        if self.user and os.geteuid() != 0:
            raise DesktopError(f"--user {spec.user} needs the server to run as root")
        self.home = Path(spec.home) if spec.home else Path(self.user.pw_dir if self.user else Path.home())
        self.tmux_dir = self.home / ".tmux"
        self.resets = 0
        self._dbus: dict[str, str] = {}
        self._wm: subprocess.Popen | None = None
        self._wm_dir: Path | None = None
        self._xlocal = threading.local()  # per-thread python-xlib connections
        self.detail: dict = {}

    # -- environment for processes of the desktop user ------------------------------------
    def user_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("VAGEN_SANDBOX_TOKEN")}
        env.update(DISPLAY=self.spec.display, HOME=str(self.home), TMUX_TMPDIR=str(self.tmux_dir),
                   XDG_RUNTIME_DIR=str(self.home / ".run"), NO_AT_BRIDGE="0")
        if self.user:
            env.update(USER=self.user.pw_name, LOGNAME=self.user.pw_name, SHELL=self.user.pw_shell or "/bin/sh")
        env.pop("SESSION_MANAGER", None)
        env.update(self._dbus)
        return env

    def popen_kwargs(self) -> dict:
        kw: dict = {"env": self.user_env(), "cwd": str(self.home) if self.home.is_dir() else "/"}
        if self.user:
            kw.update(user=self.user.pw_uid, group=self.user.pw_gid, extra_groups=[])
        return kw

    def expand(self, path: str) -> str:
        """`~` and `$VARS` expand against the desktop user's home, not the server's."""
        if path == "~" or path.startswith("~/"):
            path = str(self.home) + path[1:]
        return os.path.expandvars(path)

    # -- session lifecycle -----------------------------------------------------------------
    def start(self, timeout: float = 20.0) -> None:
        with self._lock:
            self._prepare_home()
            if self.spec.start_xvfb and self._xvfb is None:
                self._start_xvfb(timeout)
            self._wait_for_x(timeout)
            self._start_apps()

    def _prepare_home(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        if self.spec.home_template:
            _empty_dir(self.home)  # a restarted container starts from the template too
            shutil.copytree(self.spec.home_template, self.home, dirs_exist_ok=True, symlinks=True)
        for sub in (self.tmux_dir, self.home / ".run"):
            sub.mkdir(exist_ok=True)
            os.chmod(sub, 0o700)
        if self.user:
            for root, dirs, files in os.walk(self.home):
                for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
                    os.lchown(name, self.user.pw_uid, self.user.pw_gid)

    def _start_xvfb(self, timeout: float) -> None:
        num = self.spec.display.lstrip(":").split(".")[0]
        if _lock_is_stale(num):
            # Left by a container restart or a killed run; Xvfb refuses to start over them.
            for stale in (f"/tmp/.X{num}-lock", f"/tmp/.X11-unix/X{num}"):
                try:
                    os.unlink(stale)
                except OSError:
                    pass
        args = ["Xvfb", self.spec.display, "-screen", "0", f"{self.spec.width}x{self.spec.height}x24",
                "-nolisten", "tcp", "-nolisten", "local", "-noreset", "+extension", "RANDR"]
        self._xvfb = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def _wait_for_x(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._xvfb is not None and self._xvfb.poll() is not None:
                raise DesktopError(f"Xvfb exited with code {self._xvfb.returncode} on {self.spec.display}")
            if _x_alive(self.spec.display):
                owner = _lock_owner(self.spec.display)
                if self._xvfb is not None and owner is not None and owner != self._xvfb.pid:
                    # Another X server holds this display (a concurrent start picked the same
                    # number): ours exits with "server already active". Never drive someone
                    # else's screen; the provider retries on another display.
                    self._xvfb.kill()
                    self._xvfb.wait(timeout=5)
                    self._xvfb = None
                    raise DesktopError(f"Xvfb exited: display {self.spec.display} is taken by pid {owner}")
                self._screen = None
                return
            time.sleep(0.02)
        raise DesktopError(f"X display {self.spec.display} not up after {timeout:.0f} s")

    def _spawn(self, argv: list[str] | str, shell: bool = False) -> subprocess.Popen:
        p = subprocess.Popen(argv, shell=shell, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True, **self.popen_kwargs())
        self._procs.append(p)
        return p

    def spawn(self, argv: list[str] | str, shell: bool = False) -> subprocess.Popen:
        """Start an app in the session, tracked: reset and close kill its process group.
        (Chromium rewrites /proc/PID/environ for its process title, so the DISPLAY sweep
        alone cannot find it.) Exited leaders stay listed until the reset: their groups may
        still hold what they started (xdg-open -> the app)."""
        return self._spawn(argv, shell)

    def _start_dbus(self) -> None:
        """A session bus for the desktop user, so GTK apps and Chromium expose AT-SPI."""
        if self._dbus or not shutil.which("dbus-launch"):
            return
        r = subprocess.run(["dbus-launch", "--sh-syntax"], capture_output=True, text=True, timeout=10,
                           stdin=subprocess.DEVNULL, **self.popen_kwargs())
        for line in r.stdout.splitlines():
            key, _, value = line.partition("=")
            if key in ("DBUS_SESSION_BUS_ADDRESS", "DBUS_SESSION_BUS_PID"):
                self._dbus[key] = value.rstrip(";").strip("'")
        if self._dbus:
            self._dbus["ACCESSIBILITY_ENABLED"] = "1"

    def _stop_dbus(self) -> None:
        pid = self._dbus.pop("DBUS_SESSION_BUS_PID", None)
        self._dbus.clear()
        if pid and pid.isdigit():
            try:
                os.kill(int(pid), signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass

    def _start_apps(self) -> None:
        if not self.own_session:
            return
        t = time.perf_counter()
        self._start_dbus()
        self.detail = {"dbus": round(time.perf_counter() - t, 3)}
        # A WM that is still starting up can sit on a client's MapRequest: xterm then waits
        # out its 5 s map timeout (seen in strace). So on a fresh WM the apps map first and
        # the WM adopts them; a running WM (every reset) handles new windows at once.
        fresh_wm = self._wm is None or self._wm.poll() is not None
        if not fresh_wm:
            self._ensure_wm()
        terminal = self.spec.terminal and shutil.which("xterm") is not None
        if terminal:
            inner = (["tmux", "new-session", "-s", "vagen"] if shutil.which("tmux") else [])
            self._spawn(["xterm", "-ut", "-geometry", "100x30+40+40", "-fa", "DejaVu Sans Mono", "-fs", "11",
                         *(["-e", *inner] if inner else [])])
        for cmd in self.spec.apps:
            self._spawn(cmd, shell=True)
        if fresh_wm:
            if terminal:
                self._wait_mapped("xterm", 10.0)
            self._ensure_wm()
        self.detail["wm"] = round(time.perf_counter() - t, 3)
        if terminal:
            if shutil.which("wmctrl"):
                self._wait_for_window("xterm", 10.0)  # managed by the WM
            else:
                self._wait_mapped("xterm", 10.0)
            # Adopted (or new) windows do not always get the focus; the terminal starts focused.
            subprocess.run(["xdotool", "search", "--onlyvisible", "--class", "xterm", "windowactivate"],
                           env={**os.environ, "DISPLAY": self.spec.display}, capture_output=True, timeout=5)
        self.detail["apps"] = round(time.perf_counter() - t, 3)

    def _ensure_wm(self) -> None:
        """The window manager is infrastructure: it runs as the server's user (so the agent
        cannot kill it) and survives resets (restarting it cost time on every reset)."""
        if not self.spec.window_manager or not shutil.which(self.spec.window_manager):
            return
        if self._wm is not None and self._wm.poll() is None:
            return
        wm = [self.spec.window_manager, *(["--replace"] if "openbox" in self.spec.window_manager else [])]
        env = {**self.user_env(), "HOME": str(self._wm_home())}
        for _attempt in range(3):
            self._wm = subprocess.Popen(wm, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True, env=env)
            if self._wait_for_wm(self._wm, 5.0):
                return

    def _wm_home(self) -> Path:
        """A HOME for the WM that the agent cannot write (Debian's default openbox config applies)."""
        if self._wm_dir is None:
            self._wm_dir = Path(tempfile.mkdtemp(prefix="vagen-wm-"))
        return self._wm_dir

    def _wait_mapped(self, wm_class: str, timeout: float) -> None:
        """Wait until a viewable window of this class exists (no window manager needed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = subprocess.run(["xdotool", "search", "--onlyvisible", "--class", wm_class],
                               env={**os.environ, "DISPLAY": self.spec.display}, capture_output=True, timeout=5)
            if r.returncode == 0 and r.stdout.strip():
                return
            time.sleep(0.02)

    def _wait_for_window(self, wm_class: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(wm_class in w["class"].lower() for w in self.windows()):
                return
            time.sleep(0.02)

    def _wait_for_wm(self, proc: subprocess.Popen, timeout: float) -> bool:
        """True once a window manager answers; False if ours exited (start it again)."""
        if not shutil.which("wmctrl"):
            time.sleep(0.2)
            return True
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = subprocess.run(["wmctrl", "-m"], env=self.user_env(), capture_output=True, timeout=5)
            if r.returncode == 0:
                return True
            if proc.poll() is not None:
                return False
            time.sleep(0.02)
        return True

    def stop_apps(self) -> None:
        """Kill everything the desktop user runs in this session (apps, terminal, tmux); not the WM."""
        if self.own_session and shutil.which("tmux"):
            subprocess.run(["tmux", "kill-server"], capture_output=True, timeout=5, **self.popen_kwargs())
        for p in self._procs:
            _kill_tree(p)
        self._procs.clear()
        self._stop_dbus()
        if self.own_session:
            self._sweep_display()
        if self.user and self.own_session:
            # Anything the agent started that escaped our process groups (setsid, daemons).
            subprocess.run(["pkill", "-KILL", "-u", str(self.user.pw_uid)], capture_output=True, timeout=5)

    def _sweep_display(self) -> None:
        sweep_display(self.spec.display, keep={p.pid for p in (self._xvfb, self._wm) if p is not None},
                      sandbox_id=os.environ.get("VAGEN_SANDBOX_ID"))

    def reset(self) -> dict:
        """In-place reset: kill session processes, restore home, start the session again."""
        if not self.own_session:
            raise DesktopError("this server does not own its session (start it with --session)")
        t0 = time.perf_counter()
        phases: dict[str, float] = {}

        def mark(name: str, since: list[float] = [t0]) -> None:  # noqa: B006 - a per-call clock
            now = time.perf_counter()
            phases[name] = round(now - since[0], 3)
            since[0] = now

        with self._lock:
            self.stop_apps()
            mark("stop_apps")
            if self.spec.home_template or self.spec.home:
                _empty_dir(self.home)
                if self.user:
                    _remove_owned(Path("/tmp"), self.user.pw_uid)
            if self._xvfb is not None and self._xvfb.poll() is not None:
                self._xvfb = None
            if self._xvfb is None and self.spec.start_xvfb:
                self._start_xvfb(20.0)
            self._wait_for_x(20.0)
            self._prepare_home()
            _x(["xdotool", "mousemove", str(self.spec.width // 2), str(self.spec.height // 2)], self.spec.display)
            if shutil.which("xset"):  # the X server outlives resets: put its user settings back
                _x(["xset", "s", "default", "b", "on", "r", "on", "r", "rate", "660", "25"], self.spec.display)
            mark("restore_home")
            self._start_apps()
            mark("start_apps")
            self.resets += 1
        return {"seconds": round(time.perf_counter() - t0, 3), "resets": self.resets,
                "phases": {**phases, **{f"start_apps.{k}": v for k, v in self.detail.items()}}}

    def close(self) -> None:
        with self._lock:
            self.stop_apps()
            for attr in ("_wm", "_xvfb"):
                if getattr(self, attr) is not None:
                    _kill_tree(getattr(self, attr))
                    setattr(self, attr, None)
            if self._wm_dir is not None:
                shutil.rmtree(self._wm_dir, ignore_errors=True)
                self._wm_dir = None

    # -- queries ---------------------------------------------------------------------------
    def alive(self) -> bool:
        # Over the cached python-xlib connection first: no process to start, so a loaded
        # machine does not turn a slow `xdotool` start into "unhealthy".
        return self._xlib_pointer() is not None or _x_alive(self.spec.display)

    def screen_size(self) -> tuple[int, int]:
        if self._screen is None:
            out = _x(["xdotool", "getdisplaygeometry"], self.spec.display).split()
            self._screen = (int(out[0]), int(out[1]))
        return self._screen

    def cursor_position(self) -> tuple[int, int]:
        pos = self._xlib_pointer()
        if pos is not None:
            return pos
        out = _x(["xdotool", "getmouselocation", "--shell"], self.spec.display)
        vals = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        return int(vals["X"]), int(vals["Y"])

    def _xlib_pointer(self) -> tuple[int, int] | None:
        """Pointer position over a cached python-xlib connection (~0.1 ms instead of an
        xdotool process); None when python-xlib is missing or the display is gone."""
        try:
            from Xlib import display as xdisplay
        except ImportError:
            return None
        local = self._xlocal
        try:
            if getattr(local, "conn", None) is None:
                local.conn = xdisplay.Display(self.spec.display)
            p = local.conn.screen().root.query_pointer()
            return int(p.root_x), int(p.root_y)
        except Exception:
            conn, local.conn = getattr(local, "conn", None), None
            if conn is not None:
                try:
                    conn.close()
                except Exception:
                    pass
            return None

    def screenshot(self, cursor: bool = True, fmt: str = "PNG") -> bytes:
        from PIL import ImageDraw, ImageGrab

        try:
            img = ImageGrab.grab(xdisplay=self.spec.display)
        except OSError as e:
            raise DesktopError(f"screenshot failed on {self.spec.display}: {e}") from e
        if cursor:
            x, y = self.cursor_position()
            # A 12x19 arrow with a white outline (Xvfb has no cursor image to grab).
            pts = [(0, 0), (0, 16), (4, 12), (7, 18), (9, 17), (6, 11), (11, 11)]
            ImageDraw.Draw(img).polygon([(x + px, y + py) for px, py in pts], fill=(0, 0, 0), outline=(255, 255, 255))
        buf = io.BytesIO()
        img.save(buf, format=fmt, compress_level=1) if fmt == "PNG" else img.save(buf, format=fmt)
        return buf.getvalue()

    def settle(self, timeout: float = 2.0, quiet: float = 0.15, interval: float = 0.05) -> dict:
        """Wait until the screen stops changing: readiness instead of a fixed sleep.

        Grabs frames (no cursor) every ``interval`` s and returns once none changed for
        ``quiet`` s, or after ``timeout`` s with ``settled: false`` (a spinner, a video).
        """
        import hashlib

        from PIL import ImageGrab

        t0 = time.monotonic()
        last, since, frames = None, t0, 0
        while True:
            try:
                digest = hashlib.blake2b(ImageGrab.grab(xdisplay=self.spec.display).tobytes(), digest_size=16).digest()
            except OSError as e:
                raise DesktopError(f"screenshot failed on {self.spec.display}: {e}") from e
            frames += 1
            now = time.monotonic()
            if digest != last:
                last, since = digest, now
            elif now - since >= quiet:
                return {"settled": True, "waited": round(now - t0, 4), "frames": frames}
            if now - t0 >= timeout:
                return {"settled": False, "waited": round(now - t0, 4), "frames": frames}
            time.sleep(interval)

    @staticmethod
    def group_demand_ns(pgid: int) -> int | None:
        """CPU time used plus time spent waiting for a CPU (ns, /proc/<tid>/schedstat) by every
        thread of process group ``pgid``; None when the group has no process left."""
        total, found = 0, False
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry.name}/stat").read_text()
                if int(stat[stat.rindex(")") + 2:].split()[2]) != pgid:
                    continue
                for task in os.scandir(f"/proc/{entry.name}/task"):
                    run, wait, _ = Path(f"{task.path}/schedstat").read_text().split()
                    total += int(run) + int(wait)
                found = True
            except (OSError, ValueError, IndexError):
                continue
        return total if found else None

    @classmethod
    def wait_idle(cls, pgid: int, timeout: float = 15.0, quiet: float = 0.5, interval: float = 0.1,
                  busy: float = 0.05) -> dict:
        """Wait until the app started as process group ``pgid`` is idle: for ``quiet`` s its
        threads ran or waited for a CPU less than ``busy`` of the time. Unlike a quiet screen,
        this is not fooled by an app that is starved of CPU mid-load (it waits on the run queue),
        e.g. LibreOffice building its UI on a loaded machine, when keystrokes sent too early are
        lost. Returns ``idle`` (False after ``timeout`` s or when the group exited) and ``waited``."""
        t0 = time.monotonic()
        last, since = cls.group_demand_ns(pgid), t0
        while True:
            time.sleep(interval)
            now, demand = time.monotonic(), cls.group_demand_ns(pgid)
            if demand is None or last is None:
                return {"idle": False, "exited": True, "waited": round(now - t0, 3)}
            if not 0 <= demand - last <= busy * interval * 1e9:
                since = now
            last = demand
            if now - since >= quiet:
                return {"idle": True, "waited": round(now - t0, 3)}
            if now - t0 >= timeout:
                return {"idle": False, "waited": round(now - t0, 3)}

    def windows(self) -> list[dict]:
        """Top-level windows from the window manager (id, desktop, x, y, w, h, class, title)."""
        if not shutil.which("wmctrl"):
            return []
        r = subprocess.run(["wmctrl", "-lGx"], env=self.user_env(), capture_output=True, text=True, timeout=5)
        out = []
        for line in r.stdout.splitlines():
            parts = line.split(None, 8)
            if len(parts) >= 8:
                out.append({"id": parts[0], "desktop": parts[1], "x": int(parts[2]), "y": int(parts[3]),
                            "width": int(parts[4]), "height": int(parts[5]), "class": parts[6],
                            "title": parts[8] if len(parts) > 8 else ""})
        return out

    def window_command(self, op: str, name: str, strict: bool = False, by_class: bool = False) -> bool:
        """`op` is "a" (activate) or "c" (close); returns whether a window matched."""
        flags = "-" + ("x" if by_class else "") + ("F" if strict else "") + op
        r = subprocess.run(["wmctrl", flags, name], env=self.user_env(), capture_output=True, timeout=10)
        return r.returncode == 0

    def terminal_text(self) -> str | None:
        """Text of the session terminal (tmux pane "vagen"), or None when there is none."""
        if not shutil.which("tmux"):
            return None
        r = subprocess.run(["tmux", "capture-pane", "-p", "-t", "vagen"], capture_output=True, text=True,
                           timeout=5, **self.popen_kwargs())
        return r.stdout.rstrip("\n") if r.returncode == 0 else None

    # -- input -----------------------------------------------------------------------------
    def run_actions(self, actions: object) -> dict:
        plan = compile_actions(actions, self.screen_size())
        t0 = time.perf_counter()
        for step in plan:
            if isinstance(step, float):
                time.sleep(step)
            else:
                _x(["xdotool", *step], self.spec.display, timeout=60)
        return {"executed": len(actions), "processes": sum(1 for s in plan if not isinstance(s, float)),
                "seconds": round(time.perf_counter() - t0, 4)}


def _x(argv: list[str], display: str, timeout: float = 10) -> str:
    try:
        r = subprocess.run(argv, env={**os.environ, "DISPLAY": display}, capture_output=True, text=True,
                           timeout=timeout)
    except FileNotFoundError as e:
        raise DesktopError(f"{argv[0]} is not installed") from e
    except subprocess.TimeoutExpired as e:
        raise DesktopError(f"{shlex.join(argv[:3])}... timed out after {timeout} s") from e
    if r.returncode != 0:
        raise DesktopError(f"{argv[0]} {argv[1] if len(argv) > 1 else ''} failed: {r.stderr.strip()[:300]}")
    return r.stdout


def _lock_owner(display: str) -> int | None:
    """The pid in the X lock file of `display` (":N" or "N": the server that owns it), None
    without a readable one."""
    num = display.lstrip(":").split(".")[0]
    try:
        return int(Path(f"/tmp/.X{num}-lock").read_text().strip())
    except (OSError, ValueError):
        return None


def _lock_is_stale(num: str) -> bool:
    """The X lock for display `num` exists but names no running process."""
    pid = _lock_owner(num)
    if pid is None:
        return os.path.exists(f"/tmp/.X11-unix/X{num}") and not os.path.exists(f"/tmp/.X{num}-lock")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def display_in_use(num: int) -> bool:
    """An X server holds display `num` (a lock left by a killed one does not count: the next
    Xvfb started there removes it)."""
    taken = os.path.exists(f"/tmp/.X{num}-lock") or os.path.exists(f"/tmp/.X11-unix/X{num}")
    return taken and not _lock_is_stale(str(num))


def _x_alive(display: str) -> bool:
    try:
        r = subprocess.run(["xdotool", "getdisplaygeometry"], env={**os.environ, "DISPLAY": display},
                           capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def _kill_tree(p: subprocess.Popen) -> None:
    """SIGTERM the process group (every session process starts its own), SIGKILL what is
    left after a short grace period."""
    if p.poll() is not None:
        # The leader is gone (xdg-open, a `sh -c` wrapper) but what it started may live on
        # in its group: a group id is never reused while members remain.
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return
    for sig, wait in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 2.0)):
        try:
            os.killpg(p.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            p.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        try:
            os.killpg(p.pid, signal.SIGKILL)  # children left in the group
        except (ProcessLookupError, PermissionError):
            pass
        return


def _empty_dir(path: Path) -> None:
    if not path.is_dir():
        return
    for child in path.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            try:
                child.unlink()
            except OSError:
                pass


def _remove_owned(root: Path, uid: int) -> None:
    """Remove top-level entries of `root` owned by `uid` (the agent's /tmp litter)."""
    for child in root.iterdir():
        try:
            if child.lstat().st_uid != uid:
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink()
        except OSError:
            pass


def parent_pid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def display_pids(display: str, sandbox_id: str | None = None) -> list[int]:
    """Processes (that we may read) whose environment names `display` (and, when given,
    ``VAGEN_SANDBOX_ID=sandbox_id``: a display number is reused by the next sandbox as soon as
    its Xvfb exits, so a sweep after a sandbox stopped must not reach its successor's apps)."""
    markers = [b"\0DISPLAY=" + display.encode() + b"\0"]
    if sandbox_id:
        markers.append(b"\0VAGEN_SANDBOX_ID=" + sandbox_id.encode() + b"\0")
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = b"\0" + f.read() + b"\0"
                if all(m in environ for m in markers):
                    out.append(int(entry))
        except OSError:
            continue
    return out


def sweep_display(display: str, keep: set[int] = frozenset(), sandbox_id: str | None = None) -> int:
    """SIGKILL every process (that we may signal) whose environment names `display`.

    Apps the agent started with setsid/nohup or that daemonise escape process groups, not
    this. Never touches the caller or its ancestors. Returns how many were killed.
    """
    keep = set(keep)
    pid: int | None = os.getpid()
    while pid is not None and pid > 1:
        keep.add(pid)
        pid = parent_pid(pid)
    killed = 0
    for pid in display_pids(display, sandbox_id):
        if pid in keep:
            continue
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except (ProcessLookupError, PermissionError):
            continue
    return killed
