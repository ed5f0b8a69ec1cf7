"""envs.osworld.actions: the pyautogui and computer_13 parsers never run agent code.

Tables pin the structured actions each accepted string becomes and the error each
rejected one raises; hypothesis checks that arbitrary and near-valid input only ever
raises ActionParseError, that what parses is accepted by the server's compile_actions
with every coordinate inside the screen, and that parsing never reaches os/subprocess/
exec/eval.
"""

from __future__ import annotations

import builtins
import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envs.osworld.actions import (
    ACTION_SPACES,
    C13_PARAMETERS,
    GRAMMAR,
    SIGNATURES,
    ActionParseError,
    ParsedAction,
    parse_computer13,
    parse_pyautogui,
)
from sandboxes.server.desktop import ACTION_TYPES, compile_actions

# Fuzzed source may hold escapes like '\d', which Python warns about while parsing.
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning", "ignore::DeprecationWarning")

SCREEN = (1920, 1080)


def click(x: int | None = None, y: int | None = None, button: str = "left", clicks: int = 1) -> dict:
    return {"type": "click", "button": button, "clicks": clicks} | ({} if x is None else {"x": x, "y": y})


def move(x: int, y: int) -> dict:
    return {"type": "move", "x": x, "y": y}


def press(key: str, presses: int = 1) -> dict:
    return {"type": "press", "key": key, "presses": presses}


# --- pyautogui: accepted ------------------------------------------------------------------------

PYAUTOGUI_VALID: list[tuple[str, dict, list[dict]]] = [
    ("pyautogui.click(100, 200)", {}, [click(100, 200)]),
    ("import pyautogui\npyautogui.click(x=10, y=20, clicks=2, button='right')", {}, [click(10, 20, "right", 2)]),
    ("import pyautogui, time\npyautogui.click((10, 20))", {}, [click(10, 20)]),
    ("pyautogui.click()", {}, [click()]),
    ("pyautogui.click(5, 6, 1, 0.0, 'middle')", {}, [click(5, 6, "middle")]),
    ("pyautogui.click(5, 6, button='PRIMARY')", {}, [click(5, 6)]),
    ("pyautogui.click(5, 6, button='secondary')", {}, [click(5, 6, "right")]),
    ("pyautogui.click(5, 6, button=3)", {}, [click(5, 6, "right")]),
    ("pyautogui.doubleClick(5, 6)", {}, [click(5, 6, clicks=2)]),
    ("pyautogui.tripleClick(5, 6, interval=0.1)", {}, [click(5, 6, clicks=3)]),
    ("pyautogui.rightClick(5, 6)", {}, [click(5, 6, "right")]),
    ("pyautogui.middleClick()", {}, [click(button="middle")]),
    ("pyautogui.moveTo(100, 200, duration=0.5, tween=pyautogui.easeInOutQuad)", {}, [move(100, 200)]),
    ("pyautogui.moveTo(100.4, 199.6)", {}, [move(100, 200)]),
    ("pyautogui.moveTo()", {}, []),
    # scale maps model image px to screen px; screen clamps into [0, w-1] x [0, h-1]
    ("pyautogui.click(100, 50)", {"scale": (1.5, 2.0)}, [click(150, 100)]),
    ("pyautogui.click(5000, -20)", {"screen": SCREEN}, [click(1919, 0)]),
    ("pyautogui.click(1000, 600)", {"scale": (2.0, 2.0), "screen": SCREEN}, [click(1919, 1079)]),
    ("pyautogui.click(-5, 10)", {}, [click(0, 10)]),
    ("pyautogui.mouseDown(10, 20, button='left')\npyautogui.moveTo(30, 40)\npyautogui.mouseUp()", {},
     [{"type": "mouse_down", "button": "left", "x": 10, "y": 20}, move(30, 40),
      {"type": "mouse_up", "button": "left"}]),
    ("pyautogui.dragTo(300, 400, duration=1.0, button='left')", {},
     [{"type": "drag", "button": "left", "x": 300, "y": 400}]),
    ("pyautogui.dragTo(300, 400, 0.5, pyautogui.linear, 'right')", {},
     [{"type": "drag", "button": "right", "x": 300, "y": 400}]),
    ("pyautogui.dragTo(300, 400, mouseDownUp=False)", {}, [move(300, 400)]),
    # relative moves resolve against the pointer the action itself placed...
    ("pyautogui.moveTo(100, 100)\npyautogui.dragRel(50, -20)", {},
     [move(100, 100), {"type": "drag", "button": "left", "x": 150, "y": 80}]),
    ("pyautogui.moveTo(100, 100)\npyautogui.move(10, 0)", {"scale": (2.0, 2.0)}, [move(200, 200), move(220, 200)]),
    # ... or against the caller's cursor (screen px; offsets are scaled)
    ("pyautogui.moveRel(10, 0)", {"cursor": (5, 5)}, [move(15, 5)]),
    ("pyautogui.moveRel(xOffset=(10, -10))", {"cursor": (5, 5), "scale": (2.0, 2.0)}, [move(25, 0)]),
    ("pyautogui.drag(yOffset=3, button='right')", {"cursor": lambda: (7, 8)},
     [{"type": "drag", "button": "right", "x": 7, "y": 11}]),
    ("pyautogui.moveRel(0, 0)\npyautogui.dragRel()", {}, []),
    ("pyautogui.scroll(5)", {}, [{"type": "scroll", "dy": 5}]),
    ("pyautogui.scroll(-3, x=100, y=200)", {}, [{"type": "scroll", "dy": -3, "x": 100, "y": 200}]),
    ("pyautogui.vscroll(-2, 10, 20)", {"scale": (0.5, 0.5)}, [{"type": "scroll", "dy": -2, "x": 5, "y": 10}]),
    ("pyautogui.hscroll(4)", {}, [{"type": "scroll", "dx": 4}]),
    ("pyautogui.typewrite('hello')", {}, [{"type": "type", "text": "hello"}]),
    ("pyautogui.write('hi\\n', interval=0.05)", {}, [{"type": "type", "text": "hi\n", "interval": 0.05}]),
    ("pyautogui.write('')", {}, []),
    ("pyautogui.typewrite(['a', 'b', 'b', 'enter'])", {}, [press("a"), press("b", 2), press("enter")]),
    ("pyautogui.press('enter')", {}, [press("enter")]),
    ("pyautogui.press('down', presses=3)", {}, [press("down", 3)]),
    ("pyautogui.press(['tab', 'enter'], 2)", {}, [press("tab"), press("enter"), press("tab"), press("enter")]),
    ("pyautogui.press('\\r')", {}, [press("enter")]),
    ("pyautogui.hotkey('ctrl', 'shift', 't')", {}, [{"type": "key", "keys": ["ctrl", "shift", "t"]}]),
    ("pyautogui.hotkey(['ctrl', 'c'], interval=0.1)", {}, [{"type": "key", "keys": ["ctrl", "c"]}]),
    ("pyautogui.keyDown('shift')\npyautogui.click(1, 2)\npyautogui.keyUp('shift')", {},
     [{"type": "key_down", "key": "shift"}, click(1, 2), {"type": "key_up", "key": "shift"}]),
    ("time.sleep(0.5)", {}, [{"type": "wait", "seconds": 0.5}]),
    ("import time\ntime.sleep(30)", {}, [{"type": "wait", "seconds": 10.0}]),  # one wait <= 10 s
    ("pyautogui.sleep(seconds=2)", {}, [{"type": "wait", "seconds": 2}]),
    ("time.sleep(10)\n" * 4, {}, [{"type": "wait", "seconds": 10}] * 3),  # all waits <= 30 s
    ("time.sleep(0)", {}, []),
    ("pyautogui.click(1, 2); pyautogui.press('enter')", {}, [click(1, 2), press("enter")]),
    ("```python\npyautogui.click(1, 2)\n```", {}, [click(1, 2)]),
    ("  ```\n    pyautogui.click(1, 2)\n    pyautogui.press('a')\n```  ", {}, [click(1, 2), press("a")]),
    ("# click the button\npyautogui.click(1, 2)  # there", {}, [click(1, 2)]),
]


@pytest.mark.parametrize(("code", "kwargs", "expected"), PYAUTOGUI_VALID)
def test_pyautogui_valid(code: str, kwargs: dict, expected: list[dict]) -> None:
    result = parse_pyautogui(code, **kwargs)
    assert result.actions == expected
    assert result.special is None
    if expected:
        compile_actions(result.actions, SCREEN)


@pytest.mark.parametrize(("code", "special"), [
    ("WAIT", "WAIT"), ("  DONE\n", "DONE"), ("FAIL", "FAIL"), ("```\nFAIL\n```", "FAIL"),
    ("```python\nDONE\n```", "DONE"), ("```WAIT```", "WAIT"),
])
def test_pyautogui_special(code: str, special: str) -> None:
    assert parse_pyautogui(code) == ParsedAction(actions=[], special=special, calls=0, clamped=False, source=special)


def test_pyautogui_result_fields() -> None:
    code = "```python\nimport pyautogui\npyautogui.click(5000, 10)\ntime.sleep(1)\n```"
    result = parse_pyautogui(code, screen=SCREEN)
    assert (result.calls, result.clamped) == (2, True)
    assert result.source == "import pyautogui\npyautogui.click(5000, 10)\ntime.sleep(1)"
    assert parse_pyautogui("pyautogui.click(10, 10)", screen=SCREEN).clamped is False


def test_cursor_callable_is_called_only_when_needed() -> None:
    calls: list[int] = []

    def cursor() -> tuple[int, int]:
        calls.append(1)
        return (100, 100)

    parse_pyautogui("pyautogui.moveTo(5, 5)\npyautogui.moveRel(1, 1)", cursor=cursor)
    assert calls == []
    result = parse_pyautogui("pyautogui.moveRel(1, 1)\npyautogui.moveRel(1, 1)", cursor=cursor)
    assert calls == [1]
    assert result.actions == [move(101, 101), move(102, 102)]


def test_relative_move_is_clamped_into_the_screen() -> None:
    result = parse_pyautogui("pyautogui.moveRel(-50, 5000)", cursor=(10, 10), screen=SCREEN)
    assert result.actions == [move(0, 1079)] and result.clamped


def test_bad_caller_arguments_are_value_errors() -> None:
    for kwargs in ({"scale": (0, 1)}, {"scale": (1.0,)}, {"screen": (0, 10)}, {"screen": (10.5, 10)}):
        with pytest.raises(ValueError, match="scale|screen"):
            parse_pyautogui("pyautogui.click(1, 2)", **kwargs)
    with pytest.raises(ValueError, match="cursor"):
        parse_pyautogui("pyautogui.moveRel(1, 2)", cursor=("a", 2))


# --- pyautogui: rejected ------------------------------------------------------------------------

PYAUTOGUI_INVALID: list[tuple[str, str]] = [
    ("os.system('rm -rf /')", "calling `os.system` is not allowed"),
    ("import os\nos.system('ls')", "line 1: `import os` is not allowed"),
    ("pyautogui.click(1, 2)\nos.system('ls')", "line 2: calling `os.system`"),
    ("__import__('os').system('ls')", "__import__('os').system"),
    ("exec('import os')", "calling `exec`"),
    ("eval('1')", "calling `eval`"),
    ("getattr(pyautogui, 'click')(1, 2)", "getattr(pyautogui, 'click')"),
    ("getattr(pyautogui, 'click')", "calling `getattr`"),
    ("pyautogui.__dict__['click'](1, 2)", "pyautogui.__dict__['click']"),
    ("pyautogui.click(x)", "a name `x` is not allowed as an argument"),
    ("pyautogui.click(1, y=pyautogui.size()[1])", "a subscript"),
    ("pyautogui.click(pyautogui.size().width, 2)", "an attribute"),
    ("pyautogui.click(__import__('os').system('ls'), 2)", "a call `__import__('os').system('ls')`"),
    ("pyautogui.os.system('ls')", "calling `pyautogui.os.system`"),
    ("pyautogui.click(*[1, 2])", "a starred argument"),
    ("pyautogui.click(**{'x': 1, 'y': 2})", "`**{'x': 1, 'y': 2}` is not allowed"),
    ("(lambda: pyautogui.click(1, 2))()", "calling `lambda: pyautogui.click(1, 2)`"),
    ("pyautogui.click(lambda: 1, 2)", "a lambda"),
    ("pyautogui.write(f'{secret}')", "an f-string"),
    ("pyautogui.click(100 + 5, 2)", "arithmetic `100 + 5`"),
    ("pyautogui.click(--1, 2)", "an operator `--1`"),
    ("pyautogui.click(-True, 2)", "an operator"),
    ("pyautogui.click([i for i in range(2)])", "a comprehension"),
    ("pyautogui.write([['a']])", "a nested list"),
    ("pyautogui.click(b'1', 2)", "the bytes constant"),
    ("pyautogui.click(1j, 2)", "the complex constant"),
    ("pyautogui.click(..., 2)", "the ellipsis constant"),
    ("import os", "`import os` is not allowed"),
    ("import pyautogui as pg\npg.click(1, 2)", "`import pyautogui as pg` is not allowed"),
    ("import pyautogui, subprocess", "`import pyautogui, subprocess` is not allowed"),
    ("from pyautogui import *", "a from-import"),
    ("from os import system", "a from-import"),
    ("while True:\n    pyautogui.click(1, 2)", "a while loop"),
    ("for i in range(3):\n    pyautogui.press('a')", "a for loop"),
    ("if True:\n    pyautogui.click(1, 2)", "an if statement"),
    ("x = 100\npyautogui.click(x, 2)", "line 1: an assignment"),
    ("pyautogui.FAILSAFE = False", "an assignment"),
    ("def f():\n    pass", "a function definition"),
    ("with open('f') as f:\n    pass", "a with statement"),
    ("try:\n    pass\nexcept Exception:\n    pass", "a try statement"),
    ("'docstring'", "the str constant"),
    ("pyautogui.click(1, 2)\nDONE", "line 2: DONE must be the whole action"),
    ("done", "a name `done`"),
    ("pyautogui.screenshot()", "pyautogui.screenshot() is not supported"),
    ("pyautogui.locateOnScreen('ok.png')", "not supported"),
    ("pyautogui.click('ok.png')", "locating an image"),
    ("time.time()", "time.time() is not allowed"),
    ("time.sleep(secs=1)", "exactly one positional"),
    ("time.sleep(-1)", "non-negative"),
    ("time.sleep('1')", "non-negative"),
    ("subprocess.run(['ls'])", "calling `subprocess.run`"),
    ("open('/etc/passwd').read()", "open('/etc/passwd').read"),
    ("pyautogui.click(1)", "give both x and y"),
    ("pyautogui.click((1, 2, 3))", "one (x, y) pair"),
    ("pyautogui.click(1, 2, clicks=5)", "clicks=5 is out of range"),
    ("pyautogui.click(1, 2, clicks=1.5)", "clicks must be a whole number"),
    ("pyautogui.click(1, 2, button='back')", "button must be"),
    ("pyautogui.click(1, 2, button=True)", "button must be"),
    ("pyautogui.click(1, 2, button=[1])", "button must be"),
    ("pyautogui.click(1e999, 2)", "not a finite number"),
    ("pyautogui.click(True, 2)", "x must be a number"),
    ("pyautogui.click(1000000, 2)", "x=1000000 is out of range"),
    ("pyautogui.click(1, 2, duration=-1)", "duration must be a non-negative"),
    ("pyautogui.click(1, 2, _pause='yes')", "_pause must be True or False"),
    ("pyautogui.moveTo(1, 2, tween=os.system)", "tween must be"),
    ("pyautogui.moveTo(1, 2, tween=pyautogui.os)", "tween must be"),
    ("pyautogui.dragTo()", "needs x and y"),
    ("pyautogui.scroll(500)", "clicks=500 is out of range"),
    ("pyautogui.scroll()", "needs 'clicks'"),
    ("pyautogui.press('ctrl+c')", "hotkey('ctrl', 'c')"),
    ("pyautogui.press([])", "non-empty list"),
    ("pyautogui.press('a', presses=1000)", "presses=1000 is out of range"),
    ("pyautogui.press(['a', 'b', 'c'], presses=100)", "more than 200 input actions"),
    ("pyautogui.hotkey('ctrl', 'not a key')", "unknown key 'not a key'"),
    ("pyautogui.hotkey()", "non-empty list"),
    ("pyautogui.keyDown('')", "non-empty string"),
    ("pyautogui.typewrite(['a', 1])", "non-empty string"),
    ("pyautogui.typewrite(5)", "message must be a string"),
    ("pyautogui.write('x', interval=5)", "interval=5 is out of range"),
    ("pyautogui.click(1, 2, 1, 0.0, 'left', 0.0, None, None, None, True, 7)", "at most 10 positional"),
    ("pyautogui.click(1, 2, foo=3)", "unexpected keyword argument 'foo'"),
    ("pyautogui.click(1, 2, x=3)", "multiple values for argument 'x'"),
    ("pyautogui.moveRel(5, 5)", "needs the pointer position"),
    ("pyautogui.click(1, 2) +", "line 1: not valid Python"),
    ("pyautogui.click(1, 2)\n  pyautogui.click(1, 2)", "line 2: not valid Python"),
    ("pyautogui.write('a')\x00", "not valid Python"),
    ("(" * 300 + ")" * 300, "not valid Python"),
    ("", "empty action"),
    ("  \n ", "empty action"),
    ("```python\n```", "empty action"),
    ("import pyautogui\nimport time", "no action"),
    ("pyautogui.write('" + "a" * 5000 + "')", "characters long"),
    ("\n".join(["pyautogui.press('a')"] * 51), "line 51: more than 50 calls"),
    ("\n".join(["pyautogui.press(['a', 'b'], presses=100)"] * 2), "more than 200 input actions"),
]


@pytest.mark.parametrize(("code", "message"), PYAUTOGUI_INVALID)
def test_pyautogui_invalid(code: str, message: str) -> None:
    with pytest.raises(ActionParseError) as info:
        parse_pyautogui(code)
    assert message in str(info.value)


def test_pyautogui_rejects_non_strings() -> None:
    with pytest.raises(ActionParseError, match="must be a string"):
        parse_pyautogui(b"WAIT")  # type: ignore[arg-type]


# --- computer_13 ----------------------------------------------------------------------------------


def c13(kind: str, **params: object) -> dict:
    return {"action_type": kind, "parameters": params}


C13_VALID: list[tuple[object, dict, list[dict], str | None]] = [
    (c13("MOVE_TO", x=10, y=20.4), {}, [move(10, 20)], None),
    (c13("CLICK"), {}, [click()], None),
    (c13("CLICK", button="right", x=5, y=6, num_clicks=3), {}, [click(5, 6, "right", 3)], None),
    (c13("CLICK", x=5, y=6, button=None), {}, [click(5, 6)], None),  # null = not given
    (c13("MOUSE_DOWN"), {}, [{"type": "mouse_down", "button": "left"}], None),
    (c13("MOUSE_UP", button="middle"), {}, [{"type": "mouse_up", "button": "middle"}], None),
    (c13("RIGHT_CLICK", x=1, y=2), {}, [click(1, 2, "right")], None),
    (c13("DOUBLE_CLICK"), {}, [click(clicks=2)], None),
    (c13("DRAG_TO", x=300, y=400), {}, [{"type": "drag", "button": "left", "x": 300, "y": 400}], None),
    (c13("SCROLL", dx=0, dy=-3), {}, [{"type": "scroll", "dx": 0, "dy": -3}], None),
    (c13("SCROLL", dx=2), {}, [{"type": "scroll", "dx": 2, "dy": 0}], None),
    (c13("TYPING", text="hello\nworld"), {}, [{"type": "type", "text": "hello\nworld"}], None),
    (c13("PRESS", key="enter"), {}, [press("enter")], None),
    (c13("KEY_DOWN", key="shift"), {}, [{"type": "key_down", "key": "shift"}], None),
    (c13("KEY_UP", key="shift"), {}, [{"type": "key_up", "key": "shift"}], None),
    (c13("HOTKEY", keys=["ctrl", "alt", "t"]), {}, [{"type": "key", "keys": ["ctrl", "alt", "t"]}], None),
    ({"action_type": "CLICK", "x": 1, "y": 2}, {}, [click(1, 2)], None),  # OSWorld's flattened form
    ({"action_type": "MOUSE_DOWN", "parameters": None}, {}, [{"type": "mouse_down", "button": "left"}], None),
    (c13("CLICK", x=100, y=50), {"scale": (1.5, 2.0)}, [click(150, 100)], None),
    (c13("CLICK", x=3000, y=50), {"screen": SCREEN}, [click(1919, 50)], None),
    (c13("DONE"), {}, [], "DONE"),
    ({"action_type": "WAIT"}, {}, [], "WAIT"),
    ("FAIL", {}, [], "FAIL"),
    (json.dumps(c13("CLICK", x=1, y=2)), {}, [click(1, 2)], None),
    ("```json\n" + json.dumps(c13("PRESS", key="tab")) + "\n```", {}, [press("tab")], None),
    (json.dumps([c13("CLICK", x=1, y=2), c13("TYPING", text="hi"), c13("PRESS", key="enter")]), {},
     [click(1, 2), {"type": "type", "text": "hi"}, press("enter")], None),
    ([c13("HOTKEY", keys=["ctrl", "s"]), c13("DONE")], {}, [{"type": "key", "keys": ["ctrl", "s"]}], "DONE"),
    ([c13("TYPING", text="x"), "DONE"], {}, [{"type": "type", "text": "x"}], "DONE"),
]


@pytest.mark.parametrize(("action", "kwargs", "expected", "special"), C13_VALID)
def test_computer13_valid(action: object, kwargs: dict, expected: list[dict], special: str | None) -> None:
    result = parse_computer13(action, **kwargs)
    assert (result.actions, result.special) == (expected, special)
    if expected:
        compile_actions(result.actions, SCREEN)


def test_computer13_result_fields() -> None:
    result = parse_computer13("```json\n[" + json.dumps(c13("CLICK", x=5000, y=1)) + ', "DONE"]\n```',
                              screen=SCREEN)
    assert (result.calls, result.clamped, result.special) == (2, True, "DONE")
    assert result.source.startswith("[{") and result.source.endswith('"DONE"]')
    assert parse_computer13(c13("CLICK")).source == json.dumps(c13("CLICK"))


C13_INVALID: list[tuple[object, str]] = [
    (c13("TAP", x=1, y=2), "unknown action_type 'TAP'"),
    (c13("click", x=1, y=2), "unknown action_type 'click'"),
    ({"parameters": {}}, "unknown action_type None"),
    (c13("MOVE_TO", x=1), "MOVE_TO needs 'y'"),
    (c13("CLICK", x=1), "give x and y together"),
    (c13("CLICK", x="10", y=2), "x must be a number"),
    (c13("CLICK", x=True, y=2), "x must be a number"),
    (c13("CLICK", x=-1, y=2), "x=-1 is out of range"),
    (c13("CLICK", x=float("nan"), y=2), "x must be a number"),
    (c13("CLICK", num_clicks=4), "num_clicks must be 1, 2 or 3"),
    (c13("CLICK", num_clicks="2"), "num_clicks must be 1, 2 or 3"),
    (c13("CLICK", button="back"), "button must be"),
    (c13("MOUSE_DOWN", button=1), "button must be"),
    (c13("DRAG_TO"), "DRAG_TO needs 'x', 'y'"),
    (c13("SCROLL"), "SCROLL needs 'dx' and/or 'dy'"),
    (c13("SCROLL", dx=1.5, dy=0), "dx must be a whole number"),
    (c13("SCROLL", dx=0, dy=1000), "dy must be a whole number in [-100, 100]"),
    (c13("TYPING", text=5), "text must be a string"),
    (c13("TYPING"), "TYPING needs 'text'"),
    (c13("TYPING", text="a" * 10_001), "more than 10000 characters"),
    (c13("PRESS", key="ctrl+c"), "hotkey('ctrl', 'c')"),
    (c13("PRESS", key=13), "non-empty string"),
    (c13("KEY_DOWN"), "KEY_DOWN needs 'key'"),
    (c13("HOTKEY", keys="ctrl+c"), "non-empty list"),
    (c13("HOTKEY", keys=[]), "non-empty list"),
    (c13("HOTKEY", keys=["ctrl", "bad key"]), "unknown key"),
    (c13("CLICK", x=1, y=2, z=3), "CLICK does not take 'z'"),
    (c13("DONE", reason="x"), "DONE does not take 'reason'; it takes no parameters"),
    ({"action_type": "CLICK", "parameters": [1, 2]}, "'parameters' must be an object"),
    ({"action_type": "CLICK", "parameters": {}, "x": 1}, "unexpected key(s) 'x'"),
    ("{", "not valid JSON"),
    ("click(1, 2)", "not valid JSON"),
    ("done", "not valid JSON"),
    ("5", "must be an object"),
    ('"CLICK"', "must be an object"),
    ([], "empty list"),
    ([c13("CLICK")] * 21, "21 actions in one turn"),
    (["DONE", c13("CLICK")], "action 2: DONE must be the last action"),
    ([c13("CLICK"), c13("TAP")], "action 2: unknown action_type"),
    ("[" * 5000 + "]" * 5000, "not valid JSON"),
    ('{"action_type": "TYPING", "parameters": {"text": "' + "a" * 30_000 + '"}}', "characters long"),
    ("", "empty action"),
    (5, "must be a JSON object"),
]


@pytest.mark.parametrize(("action", "message"), C13_INVALID)
def test_computer13_invalid(action: object, message: str) -> None:
    with pytest.raises(ActionParseError) as info:
        parse_computer13(action)  # type: ignore[arg-type]
    assert message in str(info.value)


def test_computer13_covers_osworld_action_space() -> None:
    assert set(C13_PARAMETERS) == {"MOVE_TO", "CLICK", "MOUSE_DOWN", "MOUSE_UP", "RIGHT_CLICK", "DOUBLE_CLICK",
                                   "DRAG_TO", "SCROLL", "TYPING", "PRESS", "KEY_DOWN", "KEY_UP", "HOTKEY",
                                   "WAIT", "FAIL", "DONE"}


# --- registry and prompt text -----------------------------------------------------------------------


@pytest.mark.parametrize("space", sorted(ACTION_SPACES))
def test_grammar_example_parses(space: str) -> None:
    assert set(GRAMMAR) == set(ACTION_SPACES)
    example = GRAMMAR[space].split("Example:\n", 1)[1]
    result = ACTION_SPACES[space](example, screen=SCREEN)
    assert result.actions and result.special is None
    compile_actions(result.actions, SCREEN)


# --- property tests -------------------------------------------------------------------------------


def assert_well_formed(result: ParsedAction, screen: tuple[int, int]) -> None:
    """Every action is a known type, coordinates are ints on the screen, and the server accepts it."""
    assert isinstance(result, ParsedAction)
    w, h = screen
    for action in result.actions:
        assert isinstance(action, dict) and action["type"] in ACTION_TYPES
        for key, size in (("x", w), ("y", h)):
            if key in action:
                assert type(action[key]) is int and 0 <= action[key] < size, action
    if result.actions:
        compile_actions(result.actions, screen)  # raises ActionError if the server would refuse it


def parse_or_none(parser, action: object, scale: tuple[float, float], screen: tuple[int, int]) -> None:
    """Parse; ActionParseError is the only exception allowed out, and what parses is well-formed."""
    kwargs = {"scale": scale, "screen": screen}
    if parser is parse_pyautogui:
        kwargs["cursor"] = (screen[0] // 2, screen[1] // 2)
    try:
        result = parser(action, **kwargs)
    except ActionParseError:
        return
    assert_well_formed(result, screen)


SCALES = st.tuples(st.floats(0.25, 4.0), st.floats(0.25, 4.0))
SCREENS = st.sampled_from([(1920, 1080), (1280, 720), (640, 480), (1, 1)])

TOKENS = [
    "pyautogui.", "time.", "os.", "subprocess.", "builtins.", "click", "moveTo", "moveRel", "move", "dragTo",
    "dragRel", "drag", "scroll", "hscroll", "vscroll", "typewrite", "write", "press", "hotkey", "keyDown",
    "keyUp", "mouseDown", "mouseUp", "doubleClick", "rightClick", "sleep", "system", "popen", "run", "exec",
    "eval", "__import__", "getattr", "open", "lambda: ", "(", ")", "[", "]", ", ", ",", "\n", "; ", " ", "=",
    "x", "y", "button", "clicks", "presses", "interval", "xOffset", "tween", "'left'", "'right'", "'middle'",
    "'enter'", "'ctrl'", "'c'", "'a'", "'ctrl+c'", "'hello'", "''", '"', "'", "f'{x}'", "0", "1", "2", "3",
    "-", "-7", "10", "100", "1919", "1080", "5000", "1e999", "2.5", "0.1", "None", "True", "False",
    "import ", "pyautogui", "time", "os", "WAIT", "DONE", "FAIL", "```", "```python\n", "#", "*", "**", "+",
    ".", ":", "while True:\n    ", "for i in range(3):\n    ", "x = ", "pass", "easeInQuad",
]
TOKEN_SOUP = st.lists(st.sampled_from(TOKENS), max_size=60).map("".join)

NUMBERS = st.integers(-500, 5000) | st.floats(-500, 5000, allow_nan=False)
KEY_NAMES = st.sampled_from(["enter", "tab", "ctrl", "shift", "alt", "a", "Z", "1", "f5", "esc", "space",
                             "backspace", "down", "pagedown", "/", "win"])
BUTTON_NAMES = st.sampled_from(["left", "right", "middle", "primary"])
# Wrong in some way: bad values, non-literals, dangerous names.
BAD_ARGS = st.sampled_from([
    "x", "os", "os.system('ls')", "__import__('os')", "lambda: 0", "f'{x}'", "1 + 2", "[i for i in 'ab']",
    "pyautogui.os", "1e999", "10**9", "'bad key'", "'ctrl+c'", "[]", "[['a']]", "(1, 2, 3)", "b'x'", "None",
    "True", "-100001", "100000", "'back'", "-1", "500", "'ok.png'", "{'a': 1}",
])
# Plausible values per pyautogui parameter name, mostly right and sometimes out of range.
PLAUSIBLE_ARGS: dict[str, st.SearchStrategy[str]] = {
    "x": NUMBERS.map(repr), "y": NUMBERS.map(repr), "xOffset": NUMBERS.map(repr), "yOffset": NUMBERS.map(repr),
    "clicks": st.integers(-120, 120).map(str), "presses": st.integers(0, 120).map(str),
    "button": (BUTTON_NAMES | st.sampled_from(["back", "LEFT"])).map(repr) | st.sampled_from(["1", "3", "4"]),
    "interval": st.sampled_from(["0", "0.05", "2"]), "duration": st.sampled_from(["0.5", "0", "-1"]),
    "tween": st.sampled_from(["pyautogui.easeInQuad", "pyautogui.linear", "None"]),
    "message": st.text(max_size=20).map(repr) | st.lists(KEY_NAMES, max_size=4).map(repr),
    "keys": KEY_NAMES.map(repr) | st.lists(KEY_NAMES, max_size=4).map(repr), "key": KEY_NAMES.map(repr),
    "seconds": st.floats(-1, 40, allow_nan=False).map(repr),
    "mouseDownUp": st.sampled_from(["True", "False"]), "pause": st.sampled_from(["None", "0.1"]),
    "logScreenshot": st.sampled_from(["None", "False"]), "_pause": st.sampled_from(["True", "False"]),
}


@st.composite
def near_valid_code(draw: st.DrawFn) -> str:
    """Lines that look like pyautogui calls, most of them right, some wrong in one place."""
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        prefix = draw(st.sampled_from(["pyautogui."] * 12 + ["time.", "os.", "", "pyautogui.os."]))
        fn = draw(st.sampled_from(sorted(SIGNATURES) * 4 + ["system", "screenshot", "exec"]))
        params = SIGNATURES.get(fn, ("x", "y"))
        if fn == "hotkey":  # hotkey(*keys, interval=...)
            args, positional = draw(st.lists(KEY_NAMES.map(repr), max_size=3)), ()
        else:
            positional = params[:draw(st.sampled_from([0, 1, 2, 2, 2, 3]))]
            args = [draw(PLAUSIBLE_ARGS[p]) for p in positional]
        named = draw(st.lists(st.sampled_from(params), max_size=2, unique=True))
        kwargs = [f"{p}={draw(PLAUSIBLE_ARGS[p])}" for p in named if p not in positional]
        if draw(st.integers(0, 5)) == 0:  # one argument wrong
            args.append(draw(BAD_ARGS))
        lines.append(f"{prefix}{fn}({', '.join(args + kwargs)})")
    if draw(st.booleans()):
        lines.insert(0, "import pyautogui")
    code = draw(st.sampled_from(["\n", "; "])).join(lines)
    return f"```python\n{code}\n```" if draw(st.booleans()) else code


@st.composite
def valid_call(draw: st.DrawFn) -> str:
    """One call that is in the grammar by construction."""
    x, y = draw(NUMBERS), draw(NUMBERS)
    key, button = draw(KEY_NAMES), draw(BUTTON_NAMES)
    return draw(st.sampled_from([
        f"pyautogui.click({x!r}, {y!r}, clicks={draw(st.integers(1, 3))}, button={button!r})",
        f"pyautogui.moveTo({x!r}, {y!r}, duration=0.2)",
        f"pyautogui.moveRel({x!r}, {y!r})",
        f"pyautogui.dragTo({x!r}, {y!r}, button={button!r})",
        f"pyautogui.dragRel({x!r}, {y!r})",
        f"pyautogui.doubleClick({x!r}, {y!r})",
        f"pyautogui.rightClick(x={x!r}, y={y!r})",
        f"pyautogui.mouseDown({x!r}, {y!r})",
        "pyautogui.mouseUp()",
        f"pyautogui.scroll({draw(st.integers(-100, 100))}, {x!r}, {y!r})",
        f"pyautogui.hscroll({draw(st.integers(-100, 100))})",
        f"pyautogui.write({draw(st.text(max_size=40))!r})",
        f"pyautogui.typewrite({draw(st.lists(KEY_NAMES, max_size=5))!r})",
        f"pyautogui.press({key!r}, presses={draw(st.integers(1, 100))})",
        f"pyautogui.hotkey({', '.join(map(repr, draw(st.lists(KEY_NAMES, min_size=1, max_size=3))))})",
        f"pyautogui.keyDown({key!r})",
        f"time.sleep({draw(st.floats(0, 60))!r})",
    ]))


class Escaped(BaseException):
    """Raised by the trapped functions; a BaseException so that no `except Exception` can hide it."""


@contextmanager
def no_escape() -> Iterator[None]:
    """Make os.system/os.popen/subprocess.Popen/exec/eval/__import__ raise Escaped while parsing."""

    def trap(*args: object, **kwargs: object) -> None:
        raise Escaped(f"the parser called out with {args!r}")

    with ExitStack() as stack:
        for target, name in ((os, "system"), (os, "popen"), (subprocess, "Popen"), (builtins, "exec"),
                             (builtins, "eval"), (builtins, "__import__")):
            stack.enter_context(mock.patch.object(target, name, trap))
        yield


def test_no_escape_traps() -> None:
    with no_escape(), pytest.raises(Escaped):
        os.system("true")
    with no_escape(), pytest.raises(Escaped):
        exec("1")


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300), scale=SCALES, screen=SCREENS)
def test_fuzz_arbitrary_text(text: str, scale: tuple[float, float], screen: tuple[int, int]) -> None:
    parse_or_none(parse_pyautogui, text, scale, screen)
    parse_or_none(parse_computer13, text, scale, screen)


@settings(max_examples=300, deadline=None)
@given(code=TOKEN_SOUP, scale=SCALES, screen=SCREENS)
def test_fuzz_token_soup(code: str, scale: tuple[float, float], screen: tuple[int, int]) -> None:
    parse_or_none(parse_pyautogui, code, scale, screen)


@settings(max_examples=300, deadline=None)
@given(code=near_valid_code(), scale=SCALES, screen=SCREENS)
def test_fuzz_near_valid_calls(code: str, scale: tuple[float, float], screen: tuple[int, int]) -> None:
    parse_or_none(parse_pyautogui, code, scale, screen)


@settings(max_examples=300, deadline=None)
@given(code=st.one_of(TOKEN_SOUP, near_valid_code()), scale=SCALES, screen=SCREENS)
def test_fuzz_never_calls_out(code: str, scale: tuple[float, float], screen: tuple[int, int]) -> None:
    with no_escape():
        parse_or_none(parse_pyautogui, code, scale, screen)


@settings(max_examples=300, deadline=None)
@given(calls=st.lists(valid_call(), min_size=1, max_size=8), scale=SCALES, screen=SCREENS)
def test_fuzz_valid_calls_always_parse(calls: list[str], scale: tuple[float, float],
                                       screen: tuple[int, int]) -> None:
    result = parse_pyautogui("\n".join(calls), scale=scale, screen=screen, cursor=(0, 0))
    assert result.calls == len(calls)
    assert_well_formed(result, screen)


JSON_SCALARS = (st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats() | st.text(max_size=12)
                | st.sampled_from(["left", "right", "middle", "enter", "ctrl", "c", "DONE"]))
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)
# Plausible values per computer_13 parameter, mostly right and sometimes out of range.
PLAUSIBLE_PARAMS: dict[str, st.SearchStrategy[object]] = {
    "x": NUMBERS, "y": NUMBERS, "button": BUTTON_NAMES, "num_clicks": st.integers(0, 4),
    "dx": st.integers(-120, 120), "dy": st.integers(-120, 120), "text": st.text(max_size=30),
    "key": KEY_NAMES, "keys": st.lists(KEY_NAMES, max_size=4),
}


@st.composite
def c13_actions(draw: st.DrawFn) -> object:
    """computer_13 actions, most of them plausible, some wrong; as objects or JSON text."""
    def one() -> object:
        kind = draw(st.sampled_from([*C13_PARAMETERS] * 3 + ["TAP", "click", ""]))
        names = list(C13_PARAMETERS.get(kind, {}))
        params = {name: draw(PLAUSIBLE_PARAMS[name]) for name in names if draw(st.integers(0, 4))}
        if draw(st.integers(0, 4)) == 0:  # one parameter wrong
            params[draw(st.sampled_from([*names, "foo"]))] = draw(JSON_VALUES)
        return draw(st.sampled_from([{"action_type": kind, "parameters": params}] * 4
                                    + [{"action_type": kind, **params}, draw(JSON_VALUES)]))
    action = one() if draw(st.booleans()) else [one() for _ in range(draw(st.integers(0, 4)))]
    return json.dumps(action) if draw(st.booleans()) else action


@settings(max_examples=300, deadline=None)
@given(action=c13_actions(), scale=SCALES, screen=SCREENS)
def test_fuzz_computer13(action: object, scale: tuple[float, float], screen: tuple[int, int]) -> None:
    with no_escape():
        parse_or_none(parse_computer13, action, scale, screen)
