"""Agent action strings -> typed web calls, which the web env runs through Playwright.

The agent writes function calls, one per line (or separated by ``;``), with Python-literal
arguments, e.g. ``fill("a12", "hello")`` then ``press("a12", "Enter")``. The action names
and parameters follow BrowserGym's high-level action set (Drouin et al., 2024, "WorkArena:
How Capable Are Web Agents at Solving Common Knowledge Work Tasks?"; Chezelles et al.,
2024, "The BrowserGym Ecosystem for Web Agent Research"), so prompts and demonstrations
written for it carry over. Elements are addressed by their bid, the id the env gives each
DOM element and shows in the page's element tree.

Grammar (:data:`ACTIONS` holds it as data, :data:`GRAMMAR` as prompt text)::

    element      click(bid, button="left", modifiers=[])   dblclick(bid, button="left", modifiers=[])
                 hover(bid)   fill(bid, value)   select_option(bid, options)   press(bid, key_comb)
                 focus(bid)   clear(bid)   drag_and_drop(from_bid, to_bid)
    page         scroll(delta_x, delta_y)
    coordinates  mouse_click(x, y, button="left")   mouse_dblclick(x, y, button="left")   mouse_move(x, y)
                 mouse_down(x, y, button="left")   mouse_up(x, y, button="left")
                 mouse_drag_and_drop(from_x, from_y, to_x, to_y)   scroll_at(x, y, delta_x, delta_y)
                 keyboard_type(text)   keyboard_press(key)
    navigation   goto(url)   go_back()   go_forward()
    tabs         new_tab()   tab_close()   tab_focus(index)
    messages     send_msg_to_user(text)   report_infeasible(reason)
    wait         noop(wait_ms=1000)

Arguments are positional or keyword; defaults are filled in, so every :class:`WebCall`
carries all of its action's parameters. Values are checked here:

- bid: 1-64 characters of ``[A-Za-z0-9_.:-]``; a non-negative int is taken as its digits
  (models often write ``click(12)``);
- button: ``"left"``, ``"middle"`` or ``"right"``; modifiers: a list drawn from Alt, Control,
  ControlOrMeta, Meta, Shift (duplicates dropped);
- key / key_comb: at most 64 characters, keys joined by ``+`` as Playwright splits them
  (``"Control+a"``, ``"Shift++"``); each key is a single printable ASCII character or a
  Playwright key name (``Enter``, ``ArrowLeft``, ``F5``, ``KeyA``, ``Digit1``...). Names match
  case-insensitively and a few common aliases are accepted (``ctrl``, ``cmd``, ``esc``,
  ``return``, ``del``, ``up``...); the call carries the canonical Playwright spelling;
- value / text / reason: a string of at most 10,000 characters; options: a string or a
  list of at most 50 strings;
- x / y (CSS pixels): finite numbers in [-10,000, 100,000]; the env clamps them into the
  viewport. delta_x / delta_y: finite, at most 100,000 in absolute value;
- index: an int in 0..99; wait_ms: a number in 0..10,000;
- url: any string of at most 2,048 characters. Which URLs may be opened (scheme, host) is
  the env's decision, made when it runs the call, not the grammar's.

Why no ``exec``: BrowserGym checks the agent's text against its action grammar and then
``exec``s it as Python with the action functions in scope, so the grammar check is all that
stands between model output and the interpreter. Here the text is only ever read with
:func:`ast.parse`: each statement must be a call of a grammar name (a bare name, never an
attribute such as ``page.click``) whose arguments are literals (str, int, float, bool,
None, a negative number, a flat list/tuple of those). Names, attributes, subscripts,
f-strings, operators, comprehensions, lambdas, ``*args``/``**kwargs``, nested calls,
assignments, imports and control flow are :class:`WebActionError`; nothing is evaluated,
and the env runs the resulting :class:`WebCall` objects through fixed Playwright calls.

The text may be wrapped in a Markdown code fence and may hold comments. Limits: text <=
4096 characters, at most ``max_calls`` calls per action.
"""

from __future__ import annotations

import ast
import json
import math
import re
import string
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from envs.base import MAX_ACTION_CHARS

__all__ = ["ACTIONS", "GRAMMAR", "KINDS", "ArgKind", "Param", "Spec", "WebActionError", "WebCall",
           "grammar_text", "parse_web_actions"]

MAX_BID_CHARS = 64
MAX_KEY_CHARS = 64
MAX_TEXT_CHARS = 10_000
MAX_URL_CHARS = 2048
MAX_OPTIONS = 50
COORD_RANGE = (-10_000, 100_000)
MAX_DELTA = 100_000
MAX_TAB_INDEX = 99
MAX_WAIT_MS = 10_000
BUTTONS = ("left", "middle", "right")
MODIFIERS = ("Alt", "Control", "ControlOrMeta", "Meta", "Shift")

_BID_RE = re.compile(r"[A-Za-z0-9_.:-]+")


class WebActionError(ValueError):
    """The agent's action string is not in the web action grammar (scored as an invalid action)."""


@dataclass(frozen=True)
class WebCall:
    """One parsed action: ``name`` is a key of :data:`ACTIONS`, ``args`` every parameter by name.

    ``args`` holds only str, int, float and lists of str, so it is JSON-serializable;
    ``str(call)`` is the canonical call text, which parses back to an equal call.
    """

    name: str
    args: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.name}({', '.join(f'{k}={v!r}' for k, v in self.args.items())})"


# --- argument kinds ---------------------------------------------------------------------------


def _show(v: object) -> str:
    text = repr(v)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _string(v: object, what: str, limit: int) -> str:
    if not isinstance(v, str):
        raise WebActionError(f"must be {what}, got {_show(v)}")
    if len(v) > limit:
        raise WebActionError(f"is {len(v)} characters long; at most {limit}")
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from an escape like '\ud800': unusable by the browser
        raise WebActionError("holds a lone surrogate escape, which is not text") from None
    return v


def _bid(v: object) -> str:
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 10**MAX_BID_CHARS:
        v = str(v)
    if not isinstance(v, str):
        raise WebActionError(f'must be an element id string such as "a12" (or a non-negative integer), '
                             f"got {_show(v)}")
    if not v or len(v) > MAX_BID_CHARS or not _BID_RE.fullmatch(v):
        raise WebActionError(f"must be 1-{MAX_BID_CHARS} characters of letters, digits and _.:- "
                        f"(an id from the element list), got {_show(v)}")
    return v


def _button(v: object) -> str:
    if not isinstance(v, str) or v not in BUTTONS:
        raise WebActionError(f'must be "left", "middle" or "right", got {_show(v)}')
    return v


def _number(lo: float, hi: float) -> Callable[[object], int | float]:
    def check(v: object) -> int | float:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise WebActionError(f"must be a number, got {_show(v)}")
        if isinstance(v, float) and not math.isfinite(v):
            raise WebActionError(f"must be a finite number, got {_show(v)}")
        if not lo <= v <= hi:
            raise WebActionError(f"must be in [{lo:,}, {hi:,}], got {_show(v)}")
        return v

    return check


def _tab_index(v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_TAB_INDEX:
        raise WebActionError(f"must be an integer in 0..{MAX_TAB_INDEX}, got {_show(v)}")
    return v


# Playwright's key names (its US keyboard layout: codes, plus the modifier aliases).
_KEY_NAMES: tuple[str, ...] = (
    "Alt", "AltLeft", "AltRight", "AltGraph", "Control", "ControlLeft", "ControlRight", "ControlOrMeta",
    "Meta", "MetaLeft", "MetaRight", "Shift", "ShiftLeft", "ShiftRight",
    "Enter", "Tab", "Space", "Backspace", "Delete", "Insert", "Escape", "Home", "End", "PageUp", "PageDown",
    "ArrowLeft", "ArrowUp", "ArrowRight", "ArrowDown", "CapsLock", "NumLock", "ScrollLock", "Pause",
    "PrintScreen", "ContextMenu",
    "Backquote", "Minus", "Equal", "Backslash", "BracketLeft", "BracketRight", "Semicolon", "Quote",
    "Comma", "Period", "Slash",
    "NumpadAdd", "NumpadSubtract", "NumpadMultiply", "NumpadDivide", "NumpadDecimal", "NumpadEnter",
    "AudioVolumeMute", "AudioVolumeDown", "AudioVolumeUp", "MediaTrackNext", "MediaTrackPrevious",
    "MediaPlayPause",
    *(f"F{i}" for i in range(1, 13)), *(f"Digit{i}" for i in range(10)), *(f"Numpad{i}" for i in range(10)),
    *(f"Key{c}" for c in string.ascii_uppercase),
)
# Spellings models borrow from pyautogui/xdotool, which Playwright would reject as unknown keys.
_KEY_ALIASES = {
    "ctrl": "Control", "cmd": "Meta", "command": "Meta", "option": "Alt", "esc": "Escape", "return": "Enter",
    "del": "Delete", "ins": "Insert", "up": "ArrowUp", "down": "ArrowDown", "left": "ArrowLeft",
    "right": "ArrowRight", "pgup": "PageUp", "pgdn": "PageDown", "\n": "Enter", "\r": "Enter", "\t": "Tab",
}
_CANONICAL_KEYS = {name.lower(): name for name in _KEY_NAMES} | _KEY_ALIASES


def _one_key(part: str) -> str:
    if len(part) > 1:  # "Control + a": spaces around a named key or character are layout, not keys
        part = part.strip() or part
    if len(part) == 1 and " " <= part <= "~":  # printable ASCII: a key of the layout as typed
        return part
    name = _CANONICAL_KEYS.get(part.lower() if len(part) > 1 else part)
    if name is None:
        raise WebActionError(f"has the unknown key {_show(part)}; use a single character or a key name such "
                             "as Enter, Tab, Escape, Backspace, Delete, ArrowLeft, Home, F5, Control")
    return name


def _key_combo(v: object) -> str:
    if not isinstance(v, str) or not v:
        raise WebActionError(f'must be a key or combination such as "Enter" or "Control+a", got {_show(v)}')
    if len(v) > MAX_KEY_CHARS:
        raise WebActionError(f"is {len(v)} characters long; at most {MAX_KEY_CHARS}")
    # Split as Playwright's keyboard.press does: a "+" that starts a key is the plus key itself.
    parts, building = [], ""
    for ch in v:
        if ch == "+" and building:
            parts.append(building)
            building = ""
        else:
            building += ch
    parts.append(building)
    if not all(parts):
        raise WebActionError(f"has an empty key (a trailing '+'?): {_show(v)}")
    return "+".join(_one_key(p) for p in parts)


def _modifiers(v: object) -> list[str]:
    if not isinstance(v, list) or not all(isinstance(m, str) for m in v):
        raise WebActionError(f"must be a list of modifier names ({', '.join(MODIFIERS)}), got {_show(v)}")
    out: list[str] = []
    for m in v:
        name = _CANONICAL_KEYS.get(m.strip().lower())
        if name not in MODIFIERS:
            raise WebActionError(f"may only hold {', '.join(MODIFIERS)}, got {_show(m)}")
        if name not in out:
            out.append(name)
    return out


def _options(v: object) -> str | list[str]:
    if isinstance(v, list):
        if len(v) > MAX_OPTIONS:
            raise WebActionError(f"lists {len(v)} options; at most {MAX_OPTIONS}")
        return [_string(o, "a list of option labels or values (strings)", MAX_TEXT_CHARS) for o in v]
    return _string(v, "an option label or value, or a list of them", MAX_TEXT_CHARS)


@dataclass(frozen=True)
class ArgKind:
    """A parameter type: how the prompt shows it, and its check.

    ``check`` takes the literal's value and returns the normalized value, or raises
    :class:`WebActionError` with a message that reads after the parameter's name
    ("must be a number, got True").
    """

    shown: str
    check: Callable[[Any], Any]


KINDS: dict[str, ArgKind] = {
    "bid": ArgKind("str", _bid),
    "button": ArgKind('"left"|"middle"|"right"', _button),
    "modifiers": ArgKind("list[str]", _modifiers),
    "key": ArgKind("str", _key_combo),
    "text": ArgKind("str", lambda v: _string(v, "a string", MAX_TEXT_CHARS)),
    "options": ArgKind("str | list[str]", _options),
    "url": ArgKind("str", lambda v: _string(v, "a URL string", MAX_URL_CHARS)),
    "coord": ArgKind("float", _number(*COORD_RANGE)),
    "delta": ArgKind("float", _number(-MAX_DELTA, MAX_DELTA)),
    "index": ArgKind("int", _tab_index),
    "wait_ms": ArgKind("float", _number(0, MAX_WAIT_MS)),
}


# --- the grammar ------------------------------------------------------------------------------

class _Required:
    """The default of a parameter that has none."""

    def __repr__(self) -> str:
        return "<required>"


_NO_DEFAULT: Any = _Required()


@dataclass(frozen=True)
class Param:
    """One parameter: its name, its kind (a key of ``KINDS``) and its default (JSON value) if optional."""

    name: str
    kind: str
    default: Any = _NO_DEFAULT

    @property
    def required(self) -> bool:
        return self.default is _NO_DEFAULT

    def __str__(self) -> str:
        text = f"{self.name}: {KINDS[self.kind].shown}"
        return text if self.required else f"{text} = {json.dumps(self.default)}"


@dataclass(frozen=True)
class Spec:
    """One action: ordered parameters, a one-line meaning and its group in the prompt."""

    name: str
    params: tuple[Param, ...]
    meaning: str
    group: str

    @property
    def signature(self) -> str:
        return f"{self.name}({', '.join(map(str, self.params))})"


def _spec(group: str, name: str, meaning: str, *params: Param) -> Spec:
    return Spec(name, params, meaning, group)


_BID = Param("bid", "bid")
_X, _Y = Param("x", "coord"), Param("y", "coord")
_BUTTON = Param("button", "button", "left")
_MODS = Param("modifiers", "modifiers", [])
_DX, _DY = Param("delta_x", "delta"), Param("delta_y", "delta")

ACTIONS: dict[str, Spec] = {s.name: s for s in (
    _spec("element", "click", "click an element", _BID, _BUTTON, _MODS),
    _spec("element", "dblclick", "double-click an element", _BID, _BUTTON, _MODS),
    _spec("element", "hover", "move the mouse over an element", _BID),
    _spec("element", "fill", "replace the text of an input or textarea with value", _BID,
          Param("value", "text")),
    _spec("element", "select_option", "choose option(s) of a <select> by label or value", _BID,
          Param("options", "options")),
    _spec("element", "press", 'focus an element and press a key or combination ("Enter", "Control+a")', _BID,
          Param("key_comb", "key")),
    _spec("element", "focus", "focus an element", _BID),
    _spec("element", "clear", "empty an input or textarea", _BID),
    _spec("element", "drag_and_drop", "drag one element onto another", Param("from_bid", "bid"),
          Param("to_bid", "bid")),
    _spec("page", "scroll", "scroll the page by pixels (positive delta_y scrolls down)", _DX, _DY),
    _spec("mouse and keyboard", "mouse_click", "click at page coordinates (CSS pixels)", _X, _Y, _BUTTON),
    _spec("mouse and keyboard", "mouse_dblclick", "double-click at page coordinates", _X, _Y, _BUTTON),
    _spec("mouse and keyboard", "mouse_move", "move the mouse to page coordinates", _X, _Y),
    _spec("mouse and keyboard", "mouse_down", "move there and press a mouse button", _X, _Y, _BUTTON),
    _spec("mouse and keyboard", "mouse_up", "move there and release a mouse button", _X, _Y, _BUTTON),
    _spec("mouse and keyboard", "mouse_drag_and_drop", "drag from one point to another",
          Param("from_x", "coord"), Param("from_y", "coord"), Param("to_x", "coord"), Param("to_y", "coord")),
    _spec("mouse and keyboard", "keyboard_type", "type text into whatever has focus", Param("text", "text")),
    _spec("mouse and keyboard", "keyboard_press", "press a key or combination wherever focus is",
          Param("key", "key")),
    _spec("mouse and keyboard", "scroll_at", "scroll by pixels with the mouse at page coordinates",
          _X, _Y, _DX, _DY),
    _spec("navigation", "goto", "open a URL in the current tab", Param("url", "url")),
    _spec("navigation", "go_back", "go back in the tab's history"),
    _spec("navigation", "go_forward", "go forward in the tab's history"),
    _spec("tabs", "new_tab", "open a new tab and switch to it"),
    _spec("tabs", "tab_close", "close the current tab"),
    _spec("tabs", "tab_focus", "switch to tab number index (0 = first)", Param("index", "index")),
    _spec("messages", "send_msg_to_user", "send a message (e.g. the answer) to the user",
          Param("text", "text")),
    _spec("messages", "report_infeasible", "declare the task impossible, saying why",
          Param("reason", "text")),
    _spec("wait", "noop", "do nothing, waiting wait_ms milliseconds (at most 10000)",
          Param("wait_ms", "wait_ms", 1000)),
)}


# Whole replies for the prompt; grammar_text shows the first two whose actions are all allowed.
_EXAMPLES: tuple[tuple[str, ...], ...] = (
    ('fill("a12", "hello world")', 'press("a12", "Enter")'),
    ('click("13")',),
    ("mouse_click(120, 45)",),
    ('keyboard_type("hello")', 'keyboard_press("Enter")'),
    ("scroll(0, 300)",),
    ('goto("https://example.com")',),
    ('send_msg_to_user("The answer is 42.")',),
    ("noop(500)",),
)


def grammar_text(allowed: frozenset[str] | None = None) -> str:
    """Prompt text for the grammar: every action (or those in ``allowed``) with signature and meaning."""
    specs = [s for s in ACTIONS.values() if allowed is None or s.name in allowed]
    lines = [
        "Reply with action calls, one per line, in Python call syntax with literal arguments only",
        "(strings, numbers, lists); no variables, expressions or other code: calls are parsed, never run.",
        "bid is the id shown in brackets in the element list. Keys use Playwright names (Enter, Tab,",
        "ArrowDown, Control+a); coordinates are CSS pixels of the page.",
    ]
    group = ""
    for s in specs:
        if s.group != group:
            group = s.group
            lines.append(f"{group.capitalize()}:")
        lines.append(f"  {s.signature}  # {s.meaning}")
    examples = [e for e in _EXAMPLES if all(line.split("(")[0] in {s.name for s in specs} for line in e)][:2]
    for label, example in zip(("Example:", "Another example:"), examples, strict=False):
        lines += [label, *example]
    return "\n".join(lines)


GRAMMAR = grammar_text()


# --- parsing ----------------------------------------------------------------------------------

_EXPR_NAMES: dict[type, str] = {
    ast.Name: "a name", ast.Attribute: "an attribute", ast.Call: "a nested call",
    ast.Subscript: "a subscript",
    ast.JoinedStr: "an f-string", ast.FormattedValue: "an f-string", ast.Lambda: "a lambda",
    ast.BinOp: "an operator", ast.UnaryOp: "an operator", ast.BoolOp: "a boolean expression",
    ast.Compare: "a comparison", ast.IfExp: "a conditional expression", ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension", ast.DictComp: "a comprehension", ast.GeneratorExp: "a generator",
    ast.Dict: "a dict", ast.Set: "a set", ast.Starred: "a starred argument", ast.NamedExpr: "a walrus (:=)",
    ast.Await: "an await", ast.Yield: "a yield", ast.YieldFrom: "a yield", ast.Slice: "a slice",
    ast.List: "a list", ast.Tuple: "a tuple",
}
_STMT_NAMES: dict[type, str] = {
    ast.Assign: "an assignment", ast.AugAssign: "an assignment", ast.AnnAssign: "an assignment",
    ast.Import: "an import", ast.ImportFrom: "an import", ast.For: "a loop", ast.AsyncFor: "a loop",
    ast.While: "a loop", ast.If: "an if statement", ast.With: "a with statement",
    ast.AsyncWith: "a with statement",
    ast.FunctionDef: "a function definition", ast.AsyncFunctionDef: "a function definition",
    ast.ClassDef: "a class definition", ast.Try: "a try statement", ast.Delete: "a del statement",
    ast.Global: "a global statement", ast.Nonlocal: "a nonlocal statement", ast.Return: "a return",
    ast.Raise: "a raise", ast.Assert: "an assert", ast.Pass: "`pass`", ast.Break: "a break",
    ast.Continue: "a continue", ast.Match: "a match statement",
}
_ONLY_CALLS = 'write only action calls such as click("12"), one per line'
_LITERALS_ONLY = "arguments must be literals (strings, numbers, True/False/None, or a list of them)"


def _snippet(node: ast.AST, source: str) -> str:
    text = " ".join((ast.get_source_segment(source, node) or "").split())
    return f"`{text[:57]}...`" if len(text) > 60 else f"`{text}`"


def _describe(node: ast.AST, source: str) -> str:
    if isinstance(node, ast.Constant):
        return f"the {type(node.value).__name__} constant {_snippet(node, source)}"
    return f"{_EXPR_NAMES.get(type(node), f'a {type(node).__name__} expression')} {_snippet(node, source)}"


def _literal(node: ast.AST, source: str, *, nested: bool = False) -> Any:
    """The value of a literal argument node; anything that would need evaluating is rejected."""
    number: Any = None
    if isinstance(node, ast.Constant):
        if node.value is None or isinstance(node.value, str | int):
            return node.value
        if isinstance(node.value, float):
            number = node.value
    elif (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd)
          and isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float)):
        number = -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
    elif isinstance(node, ast.List | ast.Tuple):
        if nested:
            raise WebActionError(f"a nested list {_snippet(node, source)} is not allowed: a list holds only "
                                 "strings, numbers, True/False/None")
        return [_literal(e, source, nested=True) for e in node.elts]
    if number is not None:
        if isinstance(number, float) and not math.isfinite(number):
            raise WebActionError(f"{_snippet(node, source)} is not a finite number")
        return number
    raise WebActionError(f"{_describe(node, source)} is not allowed as an argument: {_LITERALS_ONLY}")


def _bind(spec: Spec, call: ast.Call, source: str) -> dict[str, Any]:
    """Bind a call's arguments to the action's parameters, check each, and fill in defaults."""
    raw: dict[str, Any] = {}
    names = [p.name for p in spec.params]
    for i, node in enumerate(call.args):
        if isinstance(node, ast.Starred):
            raise WebActionError(f"{_describe(node, source)} is not allowed: {_LITERALS_ONLY}")
        if i >= len(names):
            raise WebActionError(f"takes {len(names)} positional argument{'' if len(names) == 1 else 's'} "
                            f"but {len(call.args)} were given")
        raw[names[i]] = _literal(node, source)
    for kw in call.keywords:
        if kw.arg is None:
            raise WebActionError(f"`**{ast.get_source_segment(source, kw.value)}` is not allowed: "
                                 f"{_LITERALS_ONLY}")
        if kw.arg not in names:
            raise WebActionError(f"got an unexpected keyword argument {kw.arg!r}")
        if kw.arg in raw:
            raise WebActionError(f"got multiple values for argument {kw.arg!r}")
        raw[kw.arg] = _literal(kw.value, source)
    args: dict[str, Any] = {}
    for p in spec.params:
        if p.name not in raw and p.required:
            raise WebActionError(f"missing argument {p.name!r}")
        try:
            args[p.name] = KINDS[p.kind].check(raw.get(p.name, p.default))
        except WebActionError as e:
            raise WebActionError(f"{p.name} {e}") from None
    return args


def _statement(stmt: ast.stmt, source: str, allowed: frozenset[str] | None) -> WebCall:
    if not isinstance(stmt, ast.Expr):
        kind = _STMT_NAMES.get(type(stmt), f"a {type(stmt).__name__} statement")
        raise WebActionError(f"{kind} {_snippet(stmt, source)} is not allowed: {_ONLY_CALLS}")
    node = stmt.value
    if not isinstance(node, ast.Call):
        if isinstance(node, ast.Name) and node.id in ACTIONS:
            raise WebActionError(f"`{node.id}` is not a call; write {node.id}(...)")
        raise WebActionError(f"{_describe(node, source)} is not allowed: {_ONLY_CALLS}")
    func = node.func
    if not isinstance(func, ast.Name):
        hint = f"; write {func.attr}(...)" if isinstance(func, ast.Attribute) and func.attr in ACTIONS else ""
        raise WebActionError(f"calling {_snippet(func, source)} is not allowed: actions are called by their "
                             f"bare name{hint}")
    spec = ACTIONS.get(func.id)
    if spec is None:
        raise WebActionError(f"unknown action {func.id!r}; actions: {', '.join(ACTIONS)}")
    if allowed is not None and spec.name not in allowed:
        permitted = ", ".join(n for n in ACTIONS if n in allowed) or "none"
        raise WebActionError(f"action {spec.name!r} is not allowed in this task; allowed: {permitted}")
    try:
        return WebCall(spec.name, _bind(spec, node, source))
    except WebActionError as e:
        raise WebActionError(f"{spec.name}(): {e}; usage: {spec.signature}") from None


def _strip_fences(text: str) -> str:
    """Drop surrounding whitespace and one surrounding Markdown fence (```python ... ``` or ``` ... ```)."""
    s = text.strip()
    if not s.startswith("```"):
        return s
    s = s[3:]
    if s.endswith("```"):
        s = s[:-3]
    tag, newline, rest = s.partition("\n")
    if newline and (not tag.strip() or tag.strip().isidentifier()) and tag.strip() not in ACTIONS:
        s = rest  # the fence's language tag
    return textwrap.dedent(s).strip()


def parse_web_actions(text: str, *, max_calls: int = 5,
                      allowed: frozenset[str] | None = None) -> list[WebCall]:
    """Parse an action string into web calls without evaluating any of it.

    ``max_calls`` bounds the calls in one action; ``allowed`` (action names) restricts the
    grammar for a task. Raises :class:`WebActionError`, naming the line and call, for
    anything outside the grammar (module docstring); ``ValueError`` only for a bad
    ``max_calls`` or ``allowed`` from the caller.
    """
    if isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 1:
        raise ValueError(f"max_calls must be a positive integer, got {max_calls!r}")
    if allowed is not None:
        unknown = sorted(set(allowed) - set(ACTIONS))
        if unknown:
            raise ValueError(f"allowed names unknown actions {unknown}; actions: {', '.join(ACTIONS)}")
    if not isinstance(text, str):
        raise WebActionError(f"the action must be a string, got {type(text).__name__}")
    if len(text) > MAX_ACTION_CHARS:
        raise WebActionError(f"the action is {len(text)} characters long; at most {MAX_ACTION_CHARS}")
    source = _strip_fences(text)
    if "\x00" in source:
        raise WebActionError("the action contains a null character (\\x00); write plain text")
    try:
        tree = ast.parse(source, mode="exec")
    except SyntaxError as e:
        where = f"line {e.lineno}: " if e.lineno else ""
        raise WebActionError(f"{where}not a valid call: {e.msg}") from None
    except (ValueError, RecursionError, MemoryError) as e:  # null bytes, absurd nesting
        raise WebActionError(f"not a valid call: {e}") from None
    if not tree.body:
        raise WebActionError('no action: write a call such as click("12")')
    if len(tree.body) > max_calls:
        plural = "" if max_calls == 1 else "s"
        raise WebActionError(f"{len(tree.body)} statements; at most {max_calls} call{plural} per action")
    calls = []
    for i, stmt in enumerate(tree.body, 1):
        where = f"line {stmt.lineno}" + (f", call {i}" if len(tree.body) > 1 else "")
        try:
            calls.append(_statement(stmt, source, allowed))
        except WebActionError as e:
            raise WebActionError(f"{where}: {e}") from None
    return calls
