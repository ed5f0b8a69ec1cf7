"""Agent action strings -> structured input actions for the sandbox's ``POST /input``.

OSWorld (Xie et al., 2024, "OSWorld: Benchmarking Multimodal Agents for Open-Ended Tasks
in Real Computer Environments") defines two action spaces, and this module parses both:

- ``pyautogui``: the model writes Python that calls pyautogui. OSWorld's harness
  ``exec()``s that code inside the VM. We never run agent code: :func:`parse_pyautogui`
  reads it with :func:`ast.parse` and accepts only this grammar::

      program   := (statement NEWLINE | statement ";")*
      statement := "import pyautogui" | "import time" | "import pyautogui, time"
                 | "pyautogui." FUNCTION "(" args ")" | "time.sleep(" literal ")"
      literal   := int | float | str | True | False | None | "-" number
                 | "(" literal, ... ")" | "[" literal, ... "]"      (one level, no nesting)

  Anything else (names, attributes, subscripts, f-strings, arithmetic, lambdas, loops,
  assignments, other modules) is an :class:`ActionParseError` naming what was found and
  on which line. The only non-literal argument accepted is a tween name,
  ``tween=pyautogui.easeInQuad``, which is ignored like ``duration``: input is instant.
  The whole action may instead be exactly ``WAIT``, ``DONE`` or ``FAIL``.
- ``computer_13``: a JSON object ``{"action_type": ..., "parameters": {...}}`` (or a list
  of up to 20), with OSWorld's 13 action types plus WAIT/DONE/FAIL and the parameter names
  and ranges of OSWorld's ``desktop_env/actions.py`` ``ACTION_SPACE``.

Both produce the same structured actions (``sandboxes.server.desktop.compile_actions``
validates them again on the server): ``move``, ``click``, ``mouse_down``/``mouse_up``,
``drag``, ``scroll``, ``type``, ``key``, ``key_down``/``key_up``, ``press``, ``wait``.

Coordinates are in the model's image pixels: each is multiplied by ``scale`` (image px ->
screen px), rounded, and, when ``screen`` is given, clamped into the screen (recorded in
:attr:`ParsedAction.clamped`). Negative results are always clamped to 0.

Relative moves (``moveRel``/``move``, ``dragRel``/``drag``) are resolved here into
absolute ``move``/``drag`` items, so the result is always ready to post. The parser
tracks the pointer through the action (``moveTo(100, 100); moveRel(10, 0)`` needs
nothing else); only when a relative move comes before any absolute position does it need
``cursor``: the current pointer position in screen pixels, or a zero-argument callable
returning it (called at most once, and only then). Without it such an action is an
:class:`ActionParseError`.

Limits: code <= 4096 characters, <= 50 calls, <= 200 structured actions, typed text <=
10,000 characters in total, one wait <= 10 s (longer sleeps are shortened), all waits of
one action <= 30 s together (waits beyond that are shortened or dropped), scroll <= 100
notches, ``presses`` <= 100, coordinates <= 100,000 in absolute value before scaling;
computer_13 JSON <= 20,000 characters and <= 20 actions.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from envs.base import MAX_ACTION_CHARS
from sandboxes.server.desktop import MAX_ACTIONS, MAX_TEXT, MAX_WAIT_S, ActionError, keysym

__all__ = ["ACTION_SPACES", "C13_PARAMETERS", "GRAMMAR", "SIGNATURES", "ActionParseError", "ParsedAction",
           "parse_computer13", "parse_pyautogui"]

MAX_CODE_CHARS = MAX_ACTION_CHARS
MAX_CALLS = 50
MAX_TOTAL_WAIT_S = 30.0
MAX_SCROLL = 100
MAX_PRESSES = 100
MAX_COORD = 100_000  # beyond this a coordinate is garbage, not an off-screen click
MAX_JSON_CHARS = 2 * MAX_TEXT  # room for one maximal TYPING text plus the JSON around it
MAX_C13_ACTIONS = 20
SPECIAL_ACTIONS = ("WAIT", "DONE", "FAIL")

Special = Literal["WAIT", "DONE", "FAIL"]
Cursor = tuple[int, int] | Callable[[], tuple[int, int]] | None


class ActionParseError(ValueError):
    """The agent's action string is not in the action space (scored as an invalid action)."""


@dataclass
class ParsedAction:
    """A parsed agent action.

    ``actions`` is ready for ``POST /input`` (it may be empty when every call was a no-op,
    e.g. ``typewrite('')``, or when ``special`` is set). ``special`` is OSWorld's WAIT /
    DONE / FAIL. ``calls`` counts the calls (pyautogui) or action objects (computer_13)
    parsed; ``clamped`` says a coordinate was moved into the screen; ``source`` is the
    text that was parsed (code fences removed).
    """

    actions: list[dict] = field(default_factory=list)
    special: Special | None = None
    calls: int = 0
    clamped: bool = False
    source: str = ""


# --- shared: coordinates, pointer tracking, limits ------------------------------------------------


class _Builder:
    """Accumulates structured actions, applying scale/clamp and the per-action limits."""

    def __init__(self, scale: tuple[float, float], screen: tuple[int, int] | None, cursor: Cursor) -> None:
        if (not isinstance(scale, tuple | list) or len(scale) != 2
                or not all(_is_finite(s) and 0 < s <= 1000 for s in scale)):
            raise ValueError(f"scale must be two numbers in (0, 1000], got {scale!r}")
        if screen is not None and not (isinstance(screen, tuple | list) and len(screen) == 2
                                       and all(isinstance(v, int) and v > 0 for v in screen)):
            raise ValueError(f"screen must be (width, height) in pixels, got {screen!r}")
        self.scale = (float(scale[0]), float(scale[1]))
        self.screen = screen
        self.cursor = cursor
        self.pos: tuple[int, int] | None = None  # pointer position (screen px) once known
        self.actions: list[dict] = []
        self.clamped = False
        self.waited = 0.0
        self.typed = 0

    def _clamp(self, v: int, size: int | None) -> int:
        c = max(v, 0) if size is None else min(max(v, 0), size - 1)
        self.clamped |= c != v
        return c

    def point(self, x: float, y: float) -> tuple[int, int]:
        """Model image coordinates -> clamped screen pixels."""
        w, h = self.screen if self.screen is not None else (None, None)
        return (self._clamp(round(x * self.scale[0]), w), self._clamp(round(y * self.scale[1]), h))

    def offset(self, dx: float, dy: float) -> tuple[int, int]:
        """The pointer position moved by a model-pixel offset, in clamped screen pixels."""
        x0, y0 = self.current()
        w, h = self.screen if self.screen is not None else (None, None)
        return (self._clamp(x0 + round(dx * self.scale[0]), w), self._clamp(y0 + round(dy * self.scale[1]), h))

    def current(self) -> tuple[int, int]:
        if self.pos is None:
            cursor = self.cursor() if callable(self.cursor) else self.cursor
            if cursor is None:
                raise ActionParseError("a relative move needs the pointer position, which is not available; "
                                       "use absolute coordinates (moveTo/dragTo)")
            if not (isinstance(cursor, tuple | list) and len(cursor) == 2
                    and all(isinstance(v, int) and not isinstance(v, bool) for v in cursor)):
                raise ValueError(f"cursor must be (x, y) integers, got {cursor!r}")
            self.pos = (int(cursor[0]), int(cursor[1]))
        return self.pos

    def emit(self, action: dict) -> None:
        if len(self.actions) >= MAX_ACTIONS:
            raise ActionParseError(f"more than {MAX_ACTIONS} input actions")
        self.actions.append(action)
        if "x" in action:
            self.pos = (action["x"], action["y"])

    def pointer(self, kind: str, at: tuple[int, int] | None, **fields: Any) -> None:
        """Emit a pointer action, at ``at`` (screen px) or where the pointer is."""
        action = {"type": kind, **fields}
        if at is not None:
            action["x"], action["y"] = at
        self.emit(action)

    def type_text(self, text: str, interval: float | None) -> None:
        self.typed += len(text)
        if self.typed > MAX_TEXT:
            raise ActionParseError(f"more than {MAX_TEXT} characters of typed text")
        if text:
            self.emit({"type": "type", "text": text} | ({} if interval is None else {"interval": interval}))

    def press_keys(self, keys: list[str]) -> None:
        """Press keys in order; a run of the same key becomes one ``press`` with ``presses``."""
        for key, run in itertools.groupby(keys):
            n = len(list(run))
            while n > 0:
                self.emit({"type": "press", "key": key, "presses": min(n, MAX_PRESSES)})
                n -= MAX_PRESSES

    def wait(self, seconds: float) -> None:
        seconds = min(seconds, MAX_WAIT_S, MAX_TOTAL_WAIT_S - self.waited)
        if seconds > 0:
            self.waited += seconds
            self.emit({"type": "wait", "seconds": seconds})


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _is_finite(v: object) -> bool:
    # math.isfinite would overflow on a huge int, which is finite anyway.
    return _is_number(v) and (isinstance(v, int) or math.isfinite(v))


def _coord(v: object, name: str, lo: float = -MAX_COORD) -> float:
    if not _is_finite(v):
        raise ActionParseError(f"{name} must be a number, got {v!r}")
    if not lo <= v <= MAX_COORD:
        raise ActionParseError(f"{name}={v} is out of range [{lo:g}, {MAX_COORD}]")
    return v


def _whole(v: object, name: str, lo: int, hi: int) -> int:
    if not (_is_finite(v) and (isinstance(v, int) or v.is_integer())):
        raise ActionParseError(f"{name} must be a whole number, got {v!r}")
    if not lo <= v <= hi:
        raise ActionParseError(f"{name}={v} is out of range [{lo}, {hi}]")
    return int(v)


def _seconds(v: object, name: str) -> float:
    if not _is_finite(v) or v < 0:
        raise ActionParseError(f"{name} must be a non-negative number of seconds, got {v!r}")
    return v


def _key(v: object) -> str:
    if v == "\r":  # pyautogui treats carriage return as Enter
        v = "enter"
    try:
        keysym(v)
    except ActionError as e:
        hint = "; press a combination with hotkey('ctrl', 'c')" if isinstance(v, str) and "+" in v[1:] else ""
        raise ActionParseError(f"{e}{hint}") from None
    return v


def _keys(v: object, name: str) -> list[str]:
    if not isinstance(v, list) or not v:
        raise ActionParseError(f"{name} must be a non-empty list of key names, got {v!r}")
    return [_key(k) for k in v]


def _strip_fences(text: str) -> str:
    """Drop surrounding whitespace and one surrounding Markdown code fence (```python ... ```)."""
    s = text.strip()
    if s.startswith("```"):
        s = s[3:-3] if s.endswith("```") and len(s) >= 6 else s[3:]
        tag, newline, rest = s.partition("\n")
        tag = tag.strip()
        if newline and (not tag or (tag.isidentifier() and tag not in SPECIAL_ACTIONS)):
            s = rest  # the fence's language tag (```python, ```json)
        s = textwrap.dedent(s).strip()
    return s


# --- pyautogui ------------------------------------------------------------------------------------

# Parameter names in pyautogui's own order, so positional arguments bind as they would there.
_TAIL = ("pause", "logScreenshot", "_pause")
_CLICK_N = ("x", "y", "interval", "button", "duration", "tween", *_TAIL)
_CLICK_1 = ("x", "y", "interval", "duration", "tween", *_TAIL)
_MOUSE = ("x", "y", "button", "duration", "tween", *_TAIL)
_REL = ("xOffset", "yOffset", "duration", "tween", *_TAIL)
_DRAG_REL = ("xOffset", "yOffset", "duration", "tween", "button", *_TAIL, "mouseDownUp")
_SCROLL = ("clicks", "x", "y", *_TAIL)
_WRITE = ("message", "interval", *_TAIL)
_KEY = ("key", *_TAIL)
SIGNATURES: dict[str, tuple[str, ...]] = {
    "moveTo": ("x", "y", "duration", "tween", *_TAIL),
    "moveRel": _REL, "move": _REL,
    "click": ("x", "y", "clicks", "interval", "button", "duration", "tween", *_TAIL),
    "leftClick": _CLICK_1, "rightClick": _CLICK_1, "middleClick": _CLICK_1,
    "doubleClick": _CLICK_N, "tripleClick": _CLICK_N,
    "mouseDown": _MOUSE, "mouseUp": _MOUSE,
    "dragTo": ("x", "y", "duration", "tween", "button", *_TAIL, "mouseDownUp"),
    "dragRel": _DRAG_REL, "drag": _DRAG_REL,
    "scroll": _SCROLL, "vscroll": _SCROLL, "hscroll": _SCROLL,
    "typewrite": _WRITE, "write": _WRITE,
    "press": ("keys", "presses", "interval", *_TAIL),
    "keyDown": _KEY, "keyUp": _KEY,
    "hotkey": ("interval", *_TAIL),  # plus *keys
    "sleep": ("seconds",),
}
_REQUIRED = {"scroll": "clicks", "vscroll": "clicks", "hscroll": "clicks", "typewrite": "message",
             "write": "message", "press": "keys", "keyDown": "key", "keyUp": "key", "sleep": "seconds"}
_BUTTON_NAMES = {"left": "left", "middle": "middle", "right": "right", "primary": "left",
                 "secondary": "right", 1: "left", 2: "middle", 3: "right"}

_EXPR_KINDS: dict[type, str] = {
    ast.Name: "a name", ast.Attribute: "an attribute", ast.Call: "a call", ast.Subscript: "a subscript",
    ast.JoinedStr: "an f-string", ast.FormattedValue: "an f-string", ast.Lambda: "a lambda",
    ast.BinOp: "arithmetic", ast.UnaryOp: "an operator", ast.BoolOp: "a boolean expression",
    ast.Compare: "a comparison", ast.IfExp: "a conditional expression", ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension", ast.DictComp: "a comprehension", ast.GeneratorExp: "a generator",
    ast.Dict: "a dict", ast.Set: "a set", ast.Starred: "a starred argument",
    ast.NamedExpr: "an assignment expression", ast.Await: "an await", ast.Yield: "a yield",
    ast.YieldFrom: "a yield", ast.Slice: "a slice", ast.List: "a nested list", ast.Tuple: "a nested tuple",
}
_STMT_KINDS: dict[type, str] = {
    ast.Assign: "an assignment", ast.AugAssign: "an assignment", ast.AnnAssign: "an assignment",
    ast.For: "a for loop", ast.AsyncFor: "a for loop", ast.While: "a while loop", ast.If: "an if statement",
    ast.With: "a with statement", ast.AsyncWith: "a with statement", ast.FunctionDef: "a function definition",
    ast.AsyncFunctionDef: "a function definition", ast.ClassDef: "a class definition",
    ast.Try: "a try statement", ast.Delete: "a del statement", ast.Global: "a global statement",
    ast.Nonlocal: "a nonlocal statement", ast.Return: "a return", ast.Raise: "a raise",
    ast.Assert: "an assert", ast.Pass: "`pass`", ast.Break: "a break", ast.Continue: "a continue",
    ast.ImportFrom: "a from-import", ast.Match: "a match statement",
}
_ALLOWED_CALLS = "only pyautogui.<function>(...) and time.sleep(...) calls with literal arguments are allowed"


def _snippet(node: ast.AST, source: str) -> str:
    text = (ast.get_source_segment(source, node) or "").replace("\n", " ")
    return f"`{text[:57]}...`" if len(text) > 60 else f"`{text}`"


def _describe(node: ast.AST, source: str) -> str:
    if isinstance(node, ast.Constant):
        return f"the {type(node.value).__name__} constant {_snippet(node, source)}"
    kind = _EXPR_KINDS.get(type(node), f"a {type(node).__name__} expression")
    return f"{kind} {_snippet(node, source)}"


def _scalar(node: ast.AST, source: str) -> Any:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = node.operand
        if isinstance(operand, ast.Constant) and _is_number(operand.value):
            return -operand.value if isinstance(node.op, ast.USub) else operand.value
    elif isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, str | int | float)):
        if isinstance(node.value, float) and not math.isfinite(node.value):
            raise ActionParseError(f"{_snippet(node, source)} is not a finite number")
        return node.value
    raise ActionParseError(f"{_describe(node, source)} is not allowed as an argument: arguments must be "
                           "literals (numbers, strings, True/False/None, or a list/tuple of them)")


def _literal(node: ast.AST, source: str) -> Any:
    if isinstance(node, ast.Tuple | ast.List):
        return [_scalar(e, source) for e in node.elts]
    return _scalar(node, source)


def _tween(node: ast.AST, source: str) -> None:
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "pyautogui"
            and (node.attr == "linear" or (node.attr.startswith("ease") and node.attr.isalnum()))):
        return None
    if isinstance(node, ast.Constant) and node.value is None:
        return None
    raise ActionParseError(f"tween must be pyautogui.linear or pyautogui.ease*, got {_describe(node, source)}")


def _bind(fn: str, call: ast.Call, source: str) -> tuple[dict[str, Any], list[Any]]:
    """Bind a call's arguments to pyautogui's parameter names; return (named, extra positional)."""
    params, named, rest = SIGNATURES[fn], {}, []
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            raise ActionParseError(f"{_describe(arg, source)} is not allowed")
        if fn == "hotkey":
            rest.append(_literal(arg, source))
        elif i < len(params):
            named[params[i]] = _tween(arg, source) if params[i] == "tween" else _literal(arg, source)
        else:
            raise ActionParseError(f"pyautogui.{fn}() takes at most {len(params)} positional arguments "
                                   f"({len(call.args)} given)")
    for kw in call.keywords:
        if kw.arg is None:
            raise ActionParseError(f"`**{ast.get_source_segment(source, kw.value)}` is not allowed")
        if kw.arg not in params:
            raise ActionParseError(f"pyautogui.{fn}() got an unexpected keyword argument {kw.arg!r}; "
                                   f"it takes {', '.join(params)}")
        if kw.arg in named:
            raise ActionParseError(f"pyautogui.{fn}() got multiple values for argument {kw.arg!r}")
        named[kw.arg] = _tween(kw.value, source) if kw.arg == "tween" else _literal(kw.value, source)
    if fn in _REQUIRED and named.get(_REQUIRED[fn]) is None:
        raise ActionParseError(f"pyautogui.{fn}() needs {_REQUIRED[fn]!r}")
    # Arguments that change nothing here (input is instant) must still be well-formed.
    for name in ("duration", "pause", "interval"):
        if named.get(name) is not None:
            _seconds(named[name], name)
    for name in ("logScreenshot", "_pause", "mouseDownUp"):
        if named.get(name) is not None and not isinstance(named[name], bool):
            raise ActionParseError(f"{name} must be True or False, got {named[name]!r}")
    return named, rest


def _xy(v: dict[str, Any]) -> tuple[float, float] | None:
    """pyautogui's point arguments: x and y, or one (x, y) pair in x; None when neither is given."""
    x, y = v.get("x"), v.get("y")
    if isinstance(x, list):
        if y is not None or len(x) != 2:
            raise ActionParseError("x as a point must be one (x, y) pair")
        x, y = x
    if x is None and y is None:
        return None
    if isinstance(x, str):
        raise ActionParseError("locating an image by file name is not supported; give x and y numbers")
    if x is None or y is None:
        raise ActionParseError("give both x and y")
    return _coord(x, "x"), _coord(y, "y")


def _offset(v: dict[str, Any]) -> tuple[float, float]:
    """pyautogui's relative-move arguments: xOffset and yOffset (None = 0), or one pair in xOffset."""
    dx, dy = v.get("xOffset"), v.get("yOffset")
    if isinstance(dx, list):
        if dy is not None or len(dx) != 2:
            raise ActionParseError("xOffset as a point must be one (dx, dy) pair")
        dx, dy = dx
    return _coord(0 if dx is None else dx, "xOffset"), _coord(0 if dy is None else dy, "yOffset")


def _button(v: dict[str, Any], default: str = "left") -> str:
    b = v.get("button")
    if b is None:
        return default
    key = b.lower() if isinstance(b, str) else b
    if not (isinstance(key, str) or type(key) is int) or key not in _BUTTON_NAMES:
        raise ActionParseError(f"button must be 'left', 'middle' or 'right', got {b!r}")
    return _BUTTON_NAMES[key]


def _pyautogui_call(b: _Builder, fn: str, v: dict[str, Any], rest: list[Any]) -> None:
    """Turn one bound pyautogui call into structured actions (pyautogui's semantics)."""
    if fn == "moveTo":
        p = _xy(v)
        if p is not None:  # moveTo() with no point leaves the pointer where it is
            b.pointer("move", b.point(*p))
    elif fn in ("moveRel", "move", "dragRel", "drag"):
        d = _offset(v)
        if d == (0, 0):
            return  # pyautogui does nothing for a zero offset
        dragging = fn.startswith("drag") and v.get("mouseDownUp", True) is not False
        if dragging:
            b.pointer("drag", b.offset(*d), button=_button(v))
        else:
            b.pointer("move", b.offset(*d))
    elif fn in ("click", "leftClick", "rightClick", "middleClick", "doubleClick", "tripleClick"):
        fixed = {"leftClick": "left", "rightClick": "right", "middleClick": "middle"}
        clicks = {"doubleClick": 2, "tripleClick": 3}.get(fn, 1)
        if fn == "click" and v.get("clicks") is not None:
            clicks = _whole(v["clicks"], "clicks", 1, 3)
        p = _xy(v)
        b.pointer("click", None if p is None else b.point(*p), button=fixed.get(fn) or _button(v), clicks=clicks)
    elif fn in ("mouseDown", "mouseUp"):
        p = _xy(v)
        b.pointer("mouse_down" if fn == "mouseDown" else "mouse_up", None if p is None else b.point(*p),
                  button=_button(v))
    elif fn == "dragTo":
        p = _xy(v)
        if p is None:
            raise ActionParseError("pyautogui.dragTo() needs x and y")
        if v.get("mouseDownUp", True) is False:
            b.pointer("move", b.point(*p))
        else:
            b.pointer("drag", b.point(*p), button=_button(v))
    elif fn in ("scroll", "vscroll", "hscroll"):
        clicks = _whole(v["clicks"], "clicks", -MAX_SCROLL, MAX_SCROLL)
        p = _xy(v)
        b.pointer("scroll", None if p is None else b.point(*p), **{"dx" if fn == "hscroll" else "dy": clicks})
    elif fn in ("typewrite", "write"):
        message = v["message"]
        if isinstance(message, list):  # a list of key names, each pressed in turn
            b.press_keys([_key(k) for k in message])
        elif isinstance(message, str):
            interval = v.get("interval")
            if interval is not None and interval > 1:
                raise ActionParseError(f"interval={interval} is out of range [0, 1] seconds per character")
            b.type_text(message, interval)
        else:
            raise ActionParseError(f"message must be a string or a list of key names, got {message!r}")
    elif fn == "press":
        keys = v["keys"]
        keys = [_key(keys)] if isinstance(keys, str) else _keys(keys, "keys")
        presses = _whole(v.get("presses", 1), "presses", 1, MAX_PRESSES)
        if len(keys) == 1:
            b.emit({"type": "press", "key": keys[0], "presses": presses})
        else:
            if presses * len(keys) > MAX_ACTIONS:
                raise ActionParseError(f"more than {MAX_ACTIONS} input actions")
            b.press_keys(keys * presses)
    elif fn in ("keyDown", "keyUp"):
        b.emit({"type": "key_down" if fn == "keyDown" else "key_up", "key": _key(v["key"])})
    elif fn == "hotkey":
        keys = rest[0] if len(rest) == 1 and isinstance(rest[0], list) else rest
        b.emit({"type": "key", "keys": _keys(keys, "hotkey keys")})
    elif fn == "sleep":
        b.wait(_seconds(v["seconds"], "seconds"))


def _statement(b: _Builder, stmt: ast.stmt, source: str) -> int:
    """Check and apply one statement; return how many calls it made (0 or 1)."""
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.name not in ("pyautogui", "time") or alias.asname is not None:
                raise ActionParseError(f"{_snippet(stmt, source)} is not allowed: only `import pyautogui` "
                                       "and `import time`")
        return 0
    if not isinstance(stmt, ast.Expr):
        kind = _STMT_KINDS.get(type(stmt), f"a {type(stmt).__name__} statement")
        raise ActionParseError(f"{kind} {_snippet(stmt, source)} is not allowed: {_ALLOWED_CALLS}")
    call = stmt.value
    if isinstance(call, ast.Name) and call.id in SPECIAL_ACTIONS:
        raise ActionParseError(f"{call.id} must be the whole action, not mixed with code")
    if not isinstance(call, ast.Call):
        raise ActionParseError(f"{_describe(call, source)} is not allowed: {_ALLOWED_CALLS}")
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            and func.value.id in ("pyautogui", "time")):
        raise ActionParseError(f"calling {_snippet(func, source)} is not allowed: {_ALLOWED_CALLS}")
    if func.value.id == "time":
        if func.attr != "sleep":
            raise ActionParseError(f"time.{func.attr}() is not allowed: only time.sleep(seconds)")
        if call.keywords or len(call.args) != 1 or isinstance(call.args[0], ast.Starred):
            raise ActionParseError("time.sleep() takes exactly one positional argument (seconds)")
        b.wait(_seconds(_scalar(call.args[0], source), "seconds"))
        return 1
    if func.attr not in SIGNATURES:
        raise ActionParseError(f"pyautogui.{func.attr}() is not supported; supported: {', '.join(SIGNATURES)}")
    named, rest = _bind(func.attr, call, source)
    _pyautogui_call(b, func.attr, named, rest)
    return 1


def parse_pyautogui(code: str, *, scale: tuple[float, float] = (1.0, 1.0), screen: tuple[int, int] | None = None,
                    cursor: Cursor = None) -> ParsedAction:
    """Parse pyautogui code (OSWorld's ``pyautogui`` action space) without executing it.

    ``scale`` maps model image pixels to screen pixels; ``screen`` = (width, height) clamps
    coordinates into the screen; ``cursor`` is the pointer position in screen pixels (or a
    callable returning it), needed only by a relative move made before any absolute one.
    Raises :class:`ActionParseError` for anything outside the grammar (module docstring);
    ``ValueError`` only for a bad ``scale``/``screen``/``cursor`` from the caller.
    """
    if not isinstance(code, str):
        raise ActionParseError(f"the action must be a string, got {type(code).__name__}")
    source = _strip_fences(code)
    if not source:
        raise ActionParseError("empty action: expected pyautogui code or WAIT, DONE or FAIL")
    if len(source) > MAX_CODE_CHARS:
        raise ActionParseError(f"the action is {len(source)} characters long; at most {MAX_CODE_CHARS}")
    if source in SPECIAL_ACTIONS:
        return ParsedAction(special=source, source=source)  # type: ignore[arg-type]
    try:
        tree = ast.parse(source, mode="exec")
    except SyntaxError as e:
        raise ActionParseError(f"line {e.lineno}: not valid Python: {e.msg}") from None
    except (ValueError, RecursionError, MemoryError) as e:  # null bytes, absurd nesting
        raise ActionParseError(f"not valid Python: {e}") from None
    b = _Builder(scale, screen, cursor)
    calls = 0
    for stmt in tree.body:
        try:
            calls += _statement(b, stmt, source)
        except ActionParseError as e:
            raise ActionParseError(f"line {stmt.lineno}: {e}") from None
        if calls > MAX_CALLS:
            raise ActionParseError(f"line {stmt.lineno}: more than {MAX_CALLS} calls in one action")
    if calls == 0:
        raise ActionParseError("no action: expected pyautogui calls (or WAIT, DONE or FAIL)")
    return ParsedAction(actions=b.actions, calls=calls, clamped=b.clamped, source=source)


# --- computer_13 ----------------------------------------------------------------------------------

# OSWorld's ACTION_SPACE: action_type -> {parameter: required}. Types and ranges are checked below.
C13_PARAMETERS: dict[str, dict[str, bool]] = {
    "MOVE_TO": {"x": True, "y": True},
    "CLICK": {"button": False, "x": False, "y": False, "num_clicks": False},
    "MOUSE_DOWN": {"button": False},
    "MOUSE_UP": {"button": False},
    "RIGHT_CLICK": {"x": False, "y": False},
    "DOUBLE_CLICK": {"x": False, "y": False},
    "DRAG_TO": {"x": True, "y": True},
    "SCROLL": {"dx": False, "dy": False},  # OSWorld's controller accepts either or both
    "TYPING": {"text": True},
    "PRESS": {"key": True},
    "KEY_DOWN": {"key": True},
    "KEY_UP": {"key": True},
    "HOTKEY": {"keys": True},
    "WAIT": {},
    "FAIL": {},
    "DONE": {},
}


def _c13_parameters(item: dict) -> tuple[str, dict[str, Any]]:
    kind = item.get("action_type")
    if not isinstance(kind, str) or kind not in C13_PARAMETERS:
        raise ActionParseError(f"unknown action_type {kind!r}; allowed: {', '.join(C13_PARAMETERS)}")
    if "parameters" in item:
        extra = sorted(set(item) - {"action_type", "parameters"}, key=str)
        if extra:
            raise ActionParseError(f"unexpected key(s) {', '.join(map(repr, extra))} beside 'parameters'")
        params = item["parameters"] if item["parameters"] is not None else {}
        if not isinstance(params, dict):
            raise ActionParseError(f"'parameters' must be an object, got {params!r}")
    else:  # OSWorld also takes the parameters beside action_type
        params = {k: v for k, v in item.items() if k != "action_type"}
    params = {k: v for k, v in params.items() if v is not None}  # null = not given
    allowed = C13_PARAMETERS[kind]
    unknown = sorted(set(params) - set(allowed), key=str)
    if unknown:
        raise ActionParseError(f"{kind} does not take {', '.join(map(repr, unknown))}; "
                               f"it takes {', '.join(allowed) or 'no parameters'}")
    missing = [p for p, required in allowed.items() if required and p not in params]
    if missing:
        raise ActionParseError(f"{kind} needs {', '.join(map(repr, missing))}")
    if ("x" in params) != ("y" in params):
        raise ActionParseError(f"{kind}: give x and y together")
    return kind, params


def _c13_action(b: _Builder, item: object) -> Special | None:
    """Apply one computer_13 action; return its special kind for WAIT/DONE/FAIL."""
    if isinstance(item, str) and item in SPECIAL_ACTIONS:
        return item  # type: ignore[return-value]
    if not isinstance(item, dict):
        raise ActionParseError(f"an action must be an object with 'action_type', got {item!r:.80}")
    kind, p = _c13_parameters(item)
    at = b.point(_coord(p["x"], "x", lo=0), _coord(p["y"], "y", lo=0)) if "x" in p else None
    button = p.get("button", "left")
    if button not in ("left", "right", "middle"):
        raise ActionParseError(f"button must be 'left', 'right' or 'middle', got {button!r}")
    if kind == "MOVE_TO":
        b.pointer("move", at)
    elif kind == "CLICK":
        clicks = p.get("num_clicks", 1)
        if not isinstance(clicks, int) or isinstance(clicks, bool) or clicks not in (1, 2, 3):
            raise ActionParseError(f"num_clicks must be 1, 2 or 3, got {clicks!r}")
        b.pointer("click", at, button=button, clicks=clicks)
    elif kind in ("MOUSE_DOWN", "MOUSE_UP"):
        b.pointer(kind.lower(), None, button=button)
    elif kind == "RIGHT_CLICK":
        b.pointer("click", at, button="right", clicks=1)
    elif kind == "DOUBLE_CLICK":
        b.pointer("click", at, button="left", clicks=2)
    elif kind == "DRAG_TO":
        b.pointer("drag", at, button="left")
    elif kind == "SCROLL":
        if "dx" not in p and "dy" not in p:
            raise ActionParseError("SCROLL needs 'dx' and/or 'dy'")
        for name in ("dx", "dy"):
            v = p.get(name, 0)
            if not isinstance(v, int) or isinstance(v, bool) or abs(v) > MAX_SCROLL:
                raise ActionParseError(f"{name} must be a whole number in [-{MAX_SCROLL}, {MAX_SCROLL}], got {v!r}")
        b.pointer("scroll", None, dx=p.get("dx", 0), dy=p.get("dy", 0))
    elif kind == "TYPING":
        if not isinstance(p["text"], str):
            raise ActionParseError(f"text must be a string, got {p['text']!r:.80}")
        b.type_text(p["text"], None)
    elif kind in ("PRESS", "KEY_DOWN", "KEY_UP"):
        key = _key(p["key"])
        b.emit({"type": "press", "key": key, "presses": 1} if kind == "PRESS" else {"type": kind.lower(), "key": key})
    elif kind == "HOTKEY":
        b.emit({"type": "key", "keys": _keys(p["keys"], "keys")})
    else:
        return kind  # type: ignore[return-value]
    return None


def parse_computer13(action: str | dict | list, *, scale: tuple[float, float] = (1.0, 1.0),
                     screen: tuple[int, int] | None = None) -> ParsedAction:
    """Parse OSWorld's ``computer_13`` action: a JSON object (or a list of up to 20), or a string of it.

    A string may be wrapped in a code fence, or be exactly WAIT, DONE or FAIL. In a list,
    WAIT/DONE/FAIL may only come last. x/y are model image pixels (>= 0), scaled and clamped
    as in :func:`parse_pyautogui`. Raises :class:`ActionParseError` for anything else.
    """
    if isinstance(action, str):
        source = _strip_fences(action)
        if not source:
            raise ActionParseError("empty action: expected a JSON action object or WAIT, DONE or FAIL")
        if len(source) > MAX_JSON_CHARS:
            raise ActionParseError(f"the action is {len(source)} characters long; at most {MAX_JSON_CHARS}")
        if source in SPECIAL_ACTIONS:
            return ParsedAction(special=source, source=source)  # type: ignore[arg-type]
        try:
            data = json.loads(source)
        except (ValueError, RecursionError) as e:
            raise ActionParseError(f"not valid JSON: {e}") from None
    elif isinstance(action, dict | list):
        data = action
        try:
            source = json.dumps(action, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            source = repr(action)
    else:
        raise ActionParseError(f"the action must be a JSON object or a list of them, got {type(action).__name__}")
    items = data if isinstance(data, list) else [data]
    if not items:
        raise ActionParseError("empty list of actions")
    if len(items) > MAX_C13_ACTIONS:
        raise ActionParseError(f"{len(items)} actions in one turn; at most {MAX_C13_ACTIONS}")
    b = _Builder(scale, screen, None)
    special: Special | None = None
    for i, item in enumerate(items):
        try:
            if special is not None:
                raise ActionParseError(f"{special} must be the last action")
            special = _c13_action(b, item)
        except ActionParseError as e:
            raise ActionParseError(f"action {i + 1}: {e}" if isinstance(data, list) else str(e)) from None
    return ParsedAction(actions=b.actions, special=special, calls=len(items), clamped=b.clamped, source=source)


# --- registry and prompt text ---------------------------------------------------------------------

ACTION_SPACES: dict[str, Callable[..., ParsedAction]] = {
    "pyautogui": parse_pyautogui,
    "computer_13": parse_computer13,
}

GRAMMAR: dict[str, str] = {
    "pyautogui": """\
Reply with Python code that only calls pyautogui (one call per line, literal arguments only;
no variables, loops, arithmetic or other modules; it is parsed, never run). Coordinates are
pixels of the screenshot.
  pyautogui.moveTo(x, y)            pyautogui.moveRel(dx, dy)
  pyautogui.click(x, y, clicks=1, button='left')   doubleClick / tripleClick / rightClick(x, y)
  pyautogui.mouseDown(x, y) / mouseUp(x, y)        pyautogui.dragTo(x, y) / dragRel(dx, dy)
  pyautogui.scroll(clicks, x, y)    (positive scrolls up; hscroll: positive scrolls right)
  pyautogui.write('text')           pyautogui.press('enter', presses=1)
  pyautogui.hotkey('ctrl', 'c')     pyautogui.keyDown('shift') / keyUp('shift')
  time.sleep(seconds)               (at most 10 s each)
Or reply with exactly WAIT, DONE (task finished) or FAIL (task impossible).
Example:
pyautogui.click(640, 360)
pyautogui.write('hello world')
pyautogui.press('enter')""",
    "computer_13": """\
Reply with one JSON object {"action_type": ..., "parameters": {...}} or a list of them (at
most 20). Coordinates are pixels of the screenshot.
  MOVE_TO {x, y}     CLICK {button?, x?, y?, num_clicks? (1-3)}     MOUSE_DOWN / MOUSE_UP {button?}
  RIGHT_CLICK {x?, y?}     DOUBLE_CLICK {x?, y?}     DRAG_TO {x, y}     SCROLL {dx, dy} (dy > 0 scrolls up)
  TYPING {text}     PRESS {key}     KEY_DOWN {key}     KEY_UP {key}     HOTKEY {keys: [...]}
  WAIT, DONE (task finished), FAIL (task impossible)
button is "left", "right" or "middle"; keys are pyautogui key names ("enter", "ctrl", "a").
Example:
{"action_type": "CLICK", "parameters": {"x": 640, "y": 360, "button": "left"}}""",
}
