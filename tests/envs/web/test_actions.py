"""envs.web.actions: the web action grammar is parsed, never run.

Tables pin the calls each accepted string becomes and the error each rejected one raises;
hypothesis checks that arbitrary and near-valid text only ever raises WebActionError, that
whatever parses is a list of WebCall with JSON-serializable arguments inside the documented
limits, that calls built from the grammar always parse to the values written, and that
parsing never reaches exec/eval/__import__/os.system/subprocess.
"""

from __future__ import annotations

import builtins
import json
import math
import os
import re
import string
import subprocess
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envs.web.actions import (
    ACTIONS,
    GRAMMAR,
    KINDS,
    WebActionError,
    WebCall,
    grammar_text,
    parse_web_actions,
)

# Fuzzed source may hold escapes like '\d', which Python warns about while parsing.
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning", "ignore::DeprecationWarning")


def C(name: str, **args: Any) -> WebCall:  # noqa: N802 - reads like the call it stands for
    return WebCall(name, args)


def click(bid: str, button: str = "left", modifiers: list[str] | None = None, name: str = "click") -> WebCall:
    return WebCall(name, {"bid": bid, "button": button, "modifiers": modifiers or []})


# --- accepted -----------------------------------------------------------------------------------

VALID: list[tuple[str, list[WebCall]]] = [
    ('click("a12")', [click("a12")]),
    ("click('13')", [click("13")]),
    ("click(12)", [click("12")]),  # models often write the bid as a number
    ("click(0)", [click("0")]),
    ('click("a12", "right")', [click("a12", "right")]),
    ('click(bid="a12", button="middle", modifiers=["Shift"])', [click("a12", "middle", ["Shift"])]),
    ('click("a12", modifiers=["Control", "Shift"])', [click("a12", modifiers=["Control", "Shift"])]),
    ('click("a12", modifiers=("ctrl", "Control", "shift"))', [click("a12", modifiers=["Control", "Shift"])]),
    ('click("a12", modifiers=["ControlOrMeta", "Meta", "Alt"])',
     [click("a12", modifiers=["ControlOrMeta", "Meta", "Alt"])]),
    ('dblclick("x.1:y-2_z")', [click("x.1:y-2_z", name="dblclick")]),
    ('dblclick(7, "right", [])', [click("7", "right", name="dblclick")]),
    ('hover("b3")', [C("hover", bid="b3")]),
    ('fill("a12", "hello world")', [C("fill", bid="a12", value="hello world")]),
    ('fill(value="", bid="a12")', [C("fill", bid="a12", value="")]),
    ("fill('a12', 'it''s' \"ok\")", [C("fill", bid="a12", value="itsok")]),  # implicit concatenation
    ('fill("a12", "line1\\nline2 \\u00e9")', [C("fill", bid="a12", value="line1\nline2 \u00e9")]),
    ('select_option("s1", "Blue")', [C("select_option", bid="s1", options="Blue")]),
    ('select_option("s1", ["Blue", "Red"])', [C("select_option", bid="s1", options=["Blue", "Red"])]),
    ('select_option("s1", options=("Blue",))', [C("select_option", bid="s1", options=["Blue"])]),
    ('press("a12", "Enter")', [C("press", bid="a12", key_comb="Enter")]),
    ('press("a12", "Control+a")', [C("press", bid="a12", key_comb="Control+a")]),
    ('press("a12", key_comb="ctrl + shift + Z")', [C("press", bid="a12", key_comb="Control+Shift+Z")]),
    ('press("a12", "enter")', [C("press", bid="a12", key_comb="Enter")]),
    ('press("a12", "Shift++")', [C("press", bid="a12", key_comb="Shift++")]),
    ('press("a12", "+")', [C("press", bid="a12", key_comb="+")]),
    ('press("a12", "esc")', [C("press", bid="a12", key_comb="Escape")]),
    ('press("a12", "F12")', [C("press", bid="a12", key_comb="F12")]),
    ('press("a12", "Meta+KeyA")', [C("press", bid="a12", key_comb="Meta+KeyA")]),
    ('focus("a1")', [C("focus", bid="a1")]),
    ('clear("a1")', [C("clear", bid="a1")]),
    ('drag_and_drop("a1", to_bid="b2")', [C("drag_and_drop", from_bid="a1", to_bid="b2")]),
    ('drag_and_drop(1, 2)', [C("drag_and_drop", from_bid="1", to_bid="2")]),
    ("scroll(0, 200)", [C("scroll", delta_x=0, delta_y=200)]),
    ("scroll(delta_x=-50.5, delta_y=-1e3)", [C("scroll", delta_x=-50.5, delta_y=-1000.0)]),
    ("scroll(+3, 100000)", [C("scroll", delta_x=3, delta_y=100000)]),
    ("mouse_click(10, 20.5)", [C("mouse_click", x=10, y=20.5, button="left")]),
    ("mouse_click(-10000, 100000, 'right')", [C("mouse_click", x=-10000, y=100000, button="right")]),
    ("mouse_dblclick(y=1, x=2)", [C("mouse_dblclick", x=2, y=1, button="left")]),
    ("mouse_move(3, 4)", [C("mouse_move", x=3, y=4)]),
    ("mouse_down(3, 4)\nmouse_move(30, 40)\nmouse_up(30, 40)",
     [C("mouse_down", x=3, y=4, button="left"), C("mouse_move", x=30, y=40),
      C("mouse_up", x=30, y=40, button="left")]),
    ("mouse_drag_and_drop(1, 2, to_x=3, to_y=4)",
     [C("mouse_drag_and_drop", from_x=1, from_y=2, to_x=3, to_y=4)]),
    ('keyboard_type("hello")', [C("keyboard_type", text="hello")]),
    ('keyboard_press("Tab")', [C("keyboard_press", key="Tab")]),
    ('keyboard_press(key="Control + c")', [C("keyboard_press", key="Control+c")]),
    ('keyboard_press(" ")', [C("keyboard_press", key=" ")]),
    ("scroll_at(100, 200, 0, -300)", [C("scroll_at", x=100, y=200, delta_x=0, delta_y=-300)]),
    ('goto("https://example.com/a?b=c")', [C("goto", url="https://example.com/a?b=c")]),
    ('goto("file:///etc/passwd")', [C("goto", url="file:///etc/passwd")]),  # the env refuses it
    ("go_back()", [C("go_back")]),
    ("go_forward()", [C("go_forward")]),
    ("new_tab()", [C("new_tab")]),
    ("tab_close()", [C("tab_close")]),
    ("tab_focus(0)", [C("tab_focus", index=0)]),
    ("tab_focus(index=99)", [C("tab_focus", index=99)]),
    ('send_msg_to_user("The answer is 42.")', [C("send_msg_to_user", text="The answer is 42.")]),
    ('report_infeasible(reason="no such page")', [C("report_infeasible", reason="no such page")]),
    ("noop()", [C("noop", wait_ms=1000)]),
    ("noop(0)", [C("noop", wait_ms=0)]),
    ("noop(wait_ms=2500.5)", [C("noop", wait_ms=2500.5)]),
    # fences, comments, several calls
    ('```python\nclick("a12")\n```', [click("a12")]),
    ('```\nclick("a12")\n```', [click("a12")]),
    ('  ```py\n    fill("a", "x")\n    press("a", "Enter")\n```  ', [C("fill", bid="a", value="x"),
                                                                     C("press", bid="a", key_comb="Enter")]),
    ('```click("a12")```', [click("a12")]),
    ('click("a12")  # the OK button', [click("a12")]),
    ('# first fill the box\nfill("a", "x")\n\n# then submit\nclick("b")',
     [C("fill", bid="a", value="x"), click("b")]),
    ('click("a"); click("b")', [click("a"), click("b")]),
    ('(click("a"))', [click("a")]),
    ('click(\n    "a",\n    button="right",\n)', [click("a", "right")]),
]


@pytest.mark.parametrize(("text", "expected"), VALID)
def test_valid(text: str, expected: list[WebCall]) -> None:
    calls = parse_web_actions(text)
    assert calls == expected
    for call in calls:
        assert_well_formed(call)


def test_every_action_has_a_valid_example_and_defaults_are_filled() -> None:
    """Every action parses with only its required arguments, and then carries all of its parameters."""
    examples = {"bid": '"a1"', "key": '"Enter"', "text": '"t"', "options": '"o"', "url": '"about:blank"',
                "coord": "5", "delta": "-5", "index": "1", "wait_ms": "10"}
    for name, spec in ACTIONS.items():
        required = [examples[p.kind] for p in spec.params if p.required]
        (call,) = parse_web_actions(f"{name}({', '.join(required)})")
        assert call.name == name
        assert list(call.args) == [p.name for p in spec.params]
        for p in spec.params:
            if not p.required:
                assert call.args[p.name] == p.default
        assert_well_formed(call)


def test_grammar_names_the_brief() -> None:
    assert set(ACTIONS) == {
        "click", "dblclick", "hover", "fill", "select_option", "press", "focus", "clear", "drag_and_drop",
        "scroll", "mouse_click", "mouse_dblclick", "mouse_move", "mouse_down", "mouse_up",
        "mouse_drag_and_drop", "keyboard_type", "keyboard_press", "scroll_at", "goto", "go_back",
        "go_forward", "new_tab", "tab_close", "tab_focus", "send_msg_to_user", "report_infeasible", "noop"}
    assert "upload_file" not in ACTIONS
    assert ACTIONS["click"].signature == (
        'click(bid: str, button: "left"|"middle"|"right" = "left", modifiers: list[str] = [])')
    assert ACTIONS["noop"].signature == "noop(wait_ms: float = 1000)"
    assert {p.kind for s in ACTIONS.values() for p in s.params} == set(KINDS) == set(CONSTRAINTS)


def test_grammar_text_lists_every_action_and_its_examples_parse() -> None:
    for spec in ACTIONS.values():
        assert f"  {spec.signature}  # {spec.meaning}" in GRAMMAR
    examples = GRAMMAR.split("Example:\n", 1)[1].split("\nAnother example:\n")
    assert len(examples) == 2
    assert [c.name for c in parse_web_actions(examples[0])] == ["fill", "press"]
    assert parse_web_actions(examples[1]) == [click("13")]
    assert set(GRAMMAR) <= set(string.printable)
    subset = grammar_text(frozenset({"click", "noop"}))
    assert "click(bid" in subset and "noop(" in subset and "fill(" not in subset and "Tabs:" not in subset
    assert subset.endswith('Example:\nclick("13")\nAnother example:\nnoop(500)')


@pytest.mark.parametrize("allowed", [frozenset({name}) for name in ACTIONS] + [frozenset()])
def test_grammar_text_examples_use_only_allowed_actions(allowed: frozenset[str]) -> None:
    text = grammar_text(allowed)
    for block in re.split(r"\n(?:Another )?[Ee]xample:\n", text)[1:]:
        assert {c.name for c in parse_web_actions(block, allowed=allowed)} <= allowed


def test_str_is_canonical_call_text() -> None:
    (call,) = parse_web_actions('press(7, "ctrl+ a")')
    assert str(call) == "press(bid='7', key_comb='Control+a')"
    assert parse_web_actions(str(call)) == [call]


# --- max_calls, allowed, caller errors ----------------------------------------------------------


def test_max_calls() -> None:
    five = "\n".join(f'click("{i}")' for i in range(5))
    assert len(parse_web_actions(five)) == 5
    with pytest.raises(WebActionError, match="6 statements; at most 5 calls"):
        parse_web_actions(five + '\nclick("x")')
    with pytest.raises(WebActionError, match="at most 1 call per action"):
        parse_web_actions('click("a"); click("b")', max_calls=1)
    assert len(parse_web_actions(five + "\n" + five, max_calls=10)) == 10


def test_allowed_restricts_the_grammar() -> None:
    allowed = frozenset({"click", "fill", "noop"})
    assert parse_web_actions('fill("a", "x")\nclick("a")', allowed=allowed)[1] == click("a")
    with pytest.raises(WebActionError, match=r"line 2, call 2: action 'new_tab' is not allowed in this task; "
                                             r"allowed: click, fill, noop"):
        parse_web_actions('click("a")\nnew_tab()', allowed=allowed)
    with pytest.raises(WebActionError, match="allowed: none"):
        parse_web_actions("noop()", allowed=frozenset())


@pytest.mark.parametrize("kwargs", [{"max_calls": 0}, {"max_calls": True}, {"max_calls": 1.5},
                                    {"allowed": frozenset({"click", "upload_file"})}])
def test_caller_mistakes_are_not_agent_errors(kwargs: dict) -> None:
    with pytest.raises(ValueError) as info:
        parse_web_actions('click("a")', **kwargs)
    assert not isinstance(info.value, WebActionError)


# --- rejected -----------------------------------------------------------------------------------

CLICK_USAGE = 'usage: click(bid: str, button: "left"|"middle"|"right" = "left", modifiers: list[str] = [])'

REJECTED: list[tuple[object, str]] = [
    # not calls of grammar names
    ("", "no action"),
    ("   \n\t ", "no action"),
    ("# just thinking", "no action"),
    ("```\n```", "no action"),
    ('exec("import os")', "unknown action 'exec'"),
    ('eval("1")', "unknown action 'eval'"),
    ('__import__("os").system("ls")', "calling `__import__(\"os\").system` is not allowed"),
    ('os.system("ls")', "calling `os.system` is not allowed"),
    ('page.click("a")', "calling `page.click` is not allowed: actions are called by their bare name; "
                        "write click(...)"),
    ('self.fill("a", "x")', "write fill(...)"),
    ('getattr(page, "click")("a")', "calling `getattr(page, \"click\")` is not allowed"),
    ('click("a")()', 'calling `click("a")` is not allowed'),
    ('click.__globals__', "an attribute `click.__globals__` is not allowed"),
    ('print("x")', "unknown action 'print'"),
    ('upload_file("a", "/etc/passwd")', "unknown action 'upload_file'"),
    ('Click("a")', "unknown action 'Click'"),
    ("noop", "`noop` is not a call; write noop(...)"),
    ('"click(a12)"', "the str constant"),
    ('[click("a")]', "a list `[click(\"a\")]` is not allowed: write only action calls"),
    ('click("a"), click("b")', "a tuple"),
    ('not click("a")', "an operator"),
    ('click("a") if 1 else noop()', "a conditional expression"),
    ('(x := click("a"))', "a walrus"),
    ('x = click("a")', "an assignment `x = click(\"a\")` is not allowed"),
    ('import os', "an import `import os`"),
    ('from os import system', "an import"),
    ('for i in range(3): click("a")', "a loop"),
    ('while True: noop()', "a loop"),
    ('if 1: click("a")', "an if statement"),
    ('def f(): pass', "a function definition"),
    ('class A: pass', "a class definition"),
    ('with open("f") as f: pass', "a with statement"),
    ('try: click("a")\nexcept: pass', "a try statement"),
    ('del x', "a del statement"),
    ("pass", "`pass`"),
    ('lambda: click("a")', "a lambda"),
    ('await click("a")', "an await"),
    # arguments that are not literals
    ("click(x)", "a name `x` is not allowed as an argument"),
    ("click(*a)", "a starred argument `*a`"),
    ("click(**kw)", "`**kw` is not allowed"),
    ('click("a", **{"button": "left"})', "`**{\"button\": \"left\"}` is not allowed"),
    ("click(f'{a}')", "an f-string"),
    ("click(f'a12')", "an f-string"),
    ("click(lambda: 1)", "a lambda"),
    ("click(str(1))", "a nested call `str(1)`"),
    ('click(__import__("os"))', "a nested call"),
    ("click(a[0])", "a subscript"),
    ("click(a.b)", "an attribute"),
    ('click("a" + "b")', "an operator"),
    ("click(1 + 2)", "an operator"),
    ("click(--1)", "an operator"),
    ("mouse_click(-True, 1)", "an operator"),
    ("click([i for i in x])", "a comprehension"),
    ("click({'a': 1})", "a dict"),
    ("click({1})", "a set"),
    ("click(b'a12')", "the bytes constant"),
    ("click(1j)", "the complex constant"),
    ("click(...)", "the ellipsis constant"),
    ('click("a", modifiers=[["Shift"]])', "a nested list `[\"Shift\"]`"),
    ('select_option("s", [("a", "b")])', "a nested list `(\"a\", \"b\")`"),
    ('click("a", modifiers=[*m])', "a starred argument"),
    ("click((x := 1))", "a walrus"),
    ('click("a" if 1 else "b")', "a conditional expression"),
    # arity and keywords: the message carries the signature
    ("click()", f"click(): missing argument 'bid'; {CLICK_USAGE}"),
    ('click("a", foo=1)', f"click(): got an unexpected keyword argument 'foo'; {CLICK_USAGE}"),
    ('click("a", bid="b")', "got multiple values for argument 'bid'"),
    ('click("a", "left", [], 1)', f"click(): takes 3 positional arguments but 4 were given; {CLICK_USAGE}"),
    ("go_back(1)", "takes 0 positional arguments but 1 were given; usage: go_back()"),
    ('fill("a")', "missing argument 'value'; usage: fill(bid: str, value: str)"),
    ("mouse_drag_and_drop(1, 2, 3)", "missing argument 'to_y'"),
    # values
    ('click("")', "bid must be 1-64 characters"),
    ('click("a b")', "bid must be 1-64"),
    ("click('a\"]')", "bid must be 1-64"),
    (f'click("{"a" * 65}")', "bid must be 1-64"),
    ("click(-1)", "bid must be an element id string"),
    ("click(1.5)", "bid must be an element id string"),
    ("click(True)", "bid must be an element id string"),
    ("click(None)", "bid must be an element id string"),
    ("click(['a'])", "bid must be an element id string"),
    ('click("a", "up")', 'button must be "left", "middle" or "right", got \'up\''),
    ('click("a", button="LEFT")', "button must be"),
    ('click("a", button=1)', "button must be"),
    ('click("a", modifiers="Shift")', "modifiers must be a list of modifier names"),
    ('click("a", modifiers=["Hyper"])', "modifiers may only hold Alt, Control, ControlOrMeta, Meta, Shift"),
    ('click("a", modifiers=["a"])', "modifiers may only hold"),
    ('click("a", modifiers=[1])', "modifiers must be a list"),
    ('press("a", "Foo")', "key_comb has the unknown key 'Foo'"),
    ('press("a", "Control+")', "key_comb has an empty key"),
    ('press("a", "")', "key_comb must be a key or combination"),
    ('press("a", "Control+Hyper+a")', "unknown key 'Hyper'"),
    ('press("a", "\\u00e9")', "unknown key"),
    ('press("a", "F13")', "unknown key"),
    ('press("a", 13)', "key_comb must be a key or combination"),
    (f'keyboard_press("{"a+" * 32}a")', "is 65 characters long; at most 64"),
    ('keyboard_press("Enter Enter")', "unknown key"),
    ("fill('a', 12)", "value must be a string, got 12"),
    ("fill('a', None)", "value must be a string"),
    ('fill("a", "\\ud800")', "lone surrogate"),
    ("keyboard_type(['a'])", "text must be a string"),
    ("select_option('s', 3)", "options must be an option label or value"),
    ("select_option('s', ['a', 3])", "options must be a list of option labels"),
    (f"select_option('s', {['o'] * 51!r})", "lists 51 options; at most 50"),
    (f'goto("https://{"a" * 2041}")', "url is 2049 characters long; at most 2048"),
    ("goto(None)", "url must be a URL string"),
    ("mouse_click(True, 2)", "x must be a number, got True"),
    ("mouse_click(1, False)", "y must be a number, got False"),
    ("mouse_click('1', 2)", "x must be a number"),
    ("mouse_click(None, 2)", "x must be a number"),
    ("mouse_click(1e999, 2)", "`1e999` is not a finite number"),
    ("mouse_click(-1e999, 2)", "is not a finite number"),
    ("mouse_click(nan, 2)", "a name `nan`"),
    ("mouse_click(float('nan'), 2)", "a nested call"),
    ("mouse_click(float('inf'), 2)", "a nested call"),
    ("mouse_click(-10001, 2)", "x must be in [-10,000, 100,000], got -10001"),
    ("mouse_click(1, 100000.5)", "y must be in [-10,000, 100,000]"),
    (f"mouse_move({10**400}, 1)", "x must be in"),
    ("scroll(0, 100001)", "delta_y must be in [-100,000, 100,000]"),
    ("scroll_at(0, 0, -100001, 0)", "delta_x must be in"),
    ("scroll(True, 1)", "delta_x must be a number"),
    ("tab_focus(100)", "index must be an integer in 0..99"),
    ("tab_focus(-1)", "index must be an integer"),
    ("tab_focus(1.0)", "index must be an integer"),
    ("tab_focus(True)", "index must be an integer"),
    ("noop(10001)", "wait_ms must be in [0, 10,000]"),
    ("noop(-1)", "wait_ms must be in"),
    ("noop(False)", "wait_ms must be a number"),
    # text-level limits and garbage
    ("\n".join(['click("a")'] * 6), "6 statements; at most 5 calls"),
    ('click("a"); ' * 5 + 'click("b")', "at most 5 calls"),
    ('noop()  # ' + "x" * 4096, "characters long; at most 4096"),
    ('fill("a", "' + "x" * 5000 + '")', "is 5013 characters long; at most 4096"),
    ('click("a"', "line 1: not a valid call"),
    ("click('a')\nclick('b'", "line 2: not a valid call"),
    ("click('a') click('b')", "not a valid call"),
    ("click('a\x00')", "contains a null character (\\x00)"),
    ("(" * 300 + ")" * 300, "not a valid call"),
    ("```python\nclick(x)\n```", "line 1: click(): a name `x`"),
    ('click("a")\nclick(x)', "line 2, call 2: click(): a name `x`"),
    ('click("a"); press("a", "Nope")', "line 1, call 2: press(): key_comb has the unknown key 'Nope'"),
    (None, "the action must be a string, got NoneType"),
    (b'click("a")', "the action must be a string, got bytes"),
]


@pytest.mark.parametrize(("text", "message"), REJECTED)
def test_rejected(text: object, message: str) -> None:
    with pytest.raises(WebActionError) as info:
        parse_web_actions(text)  # type: ignore[arg-type]
    assert message in str(info.value)


@pytest.mark.parametrize("text", [
    "click(x)", 'click("a", foo=1)', "click()", 'click("a", "up")', "mouse_click(True, 1)", "tab_focus(100)",
    'click("a", "left", [], 1)', 'press("a", "Foo")', "click(*a)", "click(str(1))",
])
def test_argument_errors_name_the_line_and_carry_the_signature(text: str) -> None:
    name = text.split("(", 1)[0]
    with pytest.raises(WebActionError, match=re.escape(f"line 1: {name}(): ")) as info:
        parse_web_actions(text)
    assert str(info.value).endswith(f"usage: {ACTIONS[name].signature}")


# --- the documented constraints, checked independently of the parser ------------------------------

PRINTABLE_ASCII = {chr(c) for c in range(0x20, 0x7F)}


def _key_parts(combo: str) -> list[str]:
    parts, cur = [], ""
    for ch in combo:  # "+" that starts a key is the plus key (Playwright's split)
        if ch == "+" and cur:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [*parts, cur]


def _is_number(v: object, lo: float, hi: float) -> bool:
    return (isinstance(v, int | float) and not isinstance(v, bool)
            and (isinstance(v, int) or math.isfinite(v)) and lo <= v <= hi)


def _is_text(v: object, limit: int) -> bool:
    return isinstance(v, str) and len(v) <= limit


CONSTRAINTS: dict[str, Callable[[Any], bool]] = {
    "bid": lambda v: isinstance(v, str) and re.fullmatch(r"[A-Za-z0-9_.:-]{1,64}", v) is not None,
    "button": lambda v: v in ("left", "middle", "right"),
    "modifiers": lambda v: (isinstance(v, list) and len(set(v)) == len(v)
                            and set(v) <= {"Alt", "Control", "ControlOrMeta", "Meta", "Shift"}),
    "key": lambda v: (isinstance(v, str) and 0 < len(v) <= 64
                      and all(p in PRINTABLE_ASCII or re.fullmatch(r"[A-Z][A-Za-z0-9]+", p)
                              for p in _key_parts(v))),
    "text": lambda v: _is_text(v, 10_000),
    "options": lambda v: _is_text(v, 10_000) or (isinstance(v, list) and len(v) <= 50
                                                  and all(_is_text(o, 10_000) for o in v)),
    "url": lambda v: _is_text(v, 2048),
    "coord": lambda v: _is_number(v, -10_000, 100_000),
    "delta": lambda v: _is_number(v, -100_000, 100_000),
    "index": lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 99,
    "wait_ms": lambda v: _is_number(v, 0, 10_000),
}


def assert_well_formed(call: object) -> None:
    """A WebCall of a grammar action, with every parameter, JSON round-tripping and in its limits."""
    assert isinstance(call, WebCall)
    spec = ACTIONS[call.name]
    assert list(call.args) == [p.name for p in spec.params]
    assert json.loads(json.dumps(call.args)) == call.args
    for p in spec.params:
        assert CONSTRAINTS[p.kind](call.args[p.name]), (call, p.name)
    if len(str(call)) <= 4096:  # repr may escape characters that the source held raw
        assert parse_web_actions(str(call)) == [call]


def parse_or_none(text: str, **kwargs: Any) -> list[WebCall] | None:
    """Parse; only WebActionError may come out, and what parses must be well-formed."""
    try:
        calls = parse_web_actions(text, **kwargs)
    except WebActionError as e:
        assert str(e)
        return None
    assert isinstance(calls, list) and 0 < len(calls) <= kwargs.get("max_calls", 5)
    for call in calls:
        assert_well_formed(call)
    return calls


@pytest.mark.parametrize(("kind", "value"), [
    ("text", "x" * 10_000), ("options", ["o"] * 50), ("url", "u" * 2048), ("bid", "b" * 64),
    ("key", "a+" * 30 + "Home"), ("coord", -10_000), ("coord", 100_000.0), ("delta", -100_000),
    ("wait_ms", 10_000), ("index", 99),
])
def test_kind_limits_are_inclusive(kind: str, value: Any) -> None:
    assert KINDS[kind].check(value) == value
    assert CONSTRAINTS[kind](value)


@pytest.mark.parametrize(("kind", "value"), [
    ("text", "x" * 10_001), ("options", ["o"] * 51), ("options", "o" * 10_001), ("url", "u" * 2049),
    ("bid", "b" * 65), ("key", "a+" * 32 + "b"), ("coord", 100_000.01), ("delta", float("nan")),
    ("wait_ms", float("inf")), ("index", 100), ("modifiers", ["Shift", 3]),
])
def test_kind_checks_reject_past_the_limits(kind: str, value: Any) -> None:
    with pytest.raises(WebActionError):
        KINDS[kind].check(value)
    assert not CONSTRAINTS[kind](value)


# --- property tests -----------------------------------------------------------------------------

NAMES = sorted(ACTIONS)
TOKENS = st.sampled_from([
    *NAMES, "page.", "os.", "self.", "browser.", "system", "exec", "eval", "__import__", "__builtins__",
    "x", "a", "bid", "button", "modifiers", "key_comb", "text", "url", "index", "lambda", "for", "import",
    '"a12"', "'13'", "12", "-3", "1.5", "-2.5e3", "1e999", "0x1F", "True", "None", "...", "b'x'", "1j",
    '"Enter"', '"Control+a"', "'left'", '["Shift"]', "f'{x}'", '"""', "'", '"',
    "(", ")", "[", "]", "{", "}", ",", "=", ":=", ":", ".", "*", "**", "-", "+", "#", "\\",
    "\n", "; ", " ", "    ", "```", "```python\n", "\x00",
])
TOKEN_SOUP = st.lists(TOKENS, max_size=30).map("".join)

# Values that satisfy each kind, with the value the parser must return for them.
VALID_VALUES: dict[str, st.SearchStrategy[tuple[Any, Any]]] = {
    "bid": st.from_regex(r"[A-Za-z0-9_.:-]{1,64}", fullmatch=True).map(lambda b: (b, b))
    | st.integers(0, 10**12).map(lambda i: (i, str(i))),
    "button": st.sampled_from(["left", "middle", "right"]).map(lambda b: (b, b)),
    "modifiers": st.lists(st.sampled_from(["Alt", "Control", "ControlOrMeta", "Meta", "Shift"]), unique=True,
                          max_size=5).map(lambda m: (m, m)),
    "key": st.lists(st.sampled_from(["Enter", "Tab", "Control", "Shift", "Alt", "a", "A", "+", " ", "1", "F5",
                                     "ArrowLeft", "KeyA", "Digit1", "ControlOrMeta", "PageDown", "Numpad0"]),
                    min_size=1, max_size=4).map(lambda parts: ("+".join(parts),) * 2),
    "text": st.text(max_size=40).map(lambda t: (t, t)),
    "options": st.one_of(st.text(max_size=10), st.lists(st.text(max_size=10), max_size=5))
    .map(lambda o: (o, o)),
    "url": st.one_of(st.text(max_size=40), st.sampled_from(["https://example.com/x?y=1", "about:blank"]))
    .map(lambda u: (u, u)),
    "coord": st.one_of(st.integers(-10_000, 100_000), st.floats(-10_000, 100_000)).map(lambda v: (v, v)),
    "delta": st.one_of(st.integers(-100_000, 100_000), st.floats(-100_000, 100_000)).map(lambda v: (v, v)),
    "index": st.integers(0, 99).map(lambda v: (v, v)),
    "wait_ms": st.one_of(st.integers(0, 10_000), st.floats(0, 10_000)).map(lambda v: (v, v)),
}

# Source text per parameter kind that is wrong, or right in a way VALID_VALUES does not write.
ODD_SOURCE: dict[str, st.SearchStrategy[str]] = {
    "bid": st.sampled_from(['"a12"', "'13'", "12", "0", '"x.1:y-2"', '""', '"a b"', "-1", "1.5", "x",
                            "str(1)", "True", "['a']"]),
    "button": st.sampled_from(["'left'", "'right'", "'middle'", "'up'", "None", "1", "button"]),
    "modifiers": st.sampled_from(["[]", "['Shift']", "('Control', 'Alt')", "['ctrl']", "['Hyper']", "'Shift'",
                                  "[['Shift']]", "[*m]"]),
    "key": st.sampled_from(["'Enter'", "'Control+a'", "'Shift++'", "'ctrl + c'", "'Foo'", "''", "'+'",
                            "'Control+'", "'F5'", "13"]) | st.text(max_size=6).map(repr),
    "text": st.text(max_size=20).map(repr) | st.sampled_from(["None", "12", "x", "f'{x}'"]),
    "options": st.sampled_from(["'a'", "['a', 'b']", "('a',)", "[]", "[1]", "3", "None", "['a'] * 3",
                                repr(["o"] * 51)]),
    "url": st.sampled_from(["'https://example.com'", "'about:blank'", "'javascript:alert(1)'", "None", "1",
                            repr("https://" + "a" * 2041)]),
    "coord": st.one_of(st.integers(-20_000, 200_000), st.floats()).map(repr),
    "delta": st.one_of(st.integers(-200_000, 200_000), st.floats()).map(repr),
    "index": st.sampled_from(["0", "3", "99", "100", "-1", "1.0", "True"]),
    "wait_ms": st.one_of(st.integers(-10, 20_000), st.floats()).map(repr),
}
# Mostly valid source text per parameter kind (six in seven), the rest odd.
SOURCE_VALUES: dict[str, st.SearchStrategy[str]] = {
    kind: st.one_of(*[values.map(lambda wv: repr(wv[0]))] * 6, ODD_SOURCE[kind])
    for kind, values in VALID_VALUES.items()
}
BAD_ARGS = st.sampled_from(["x", "*a", "**kw", "os.system('ls')", "lambda: 0", "[i for i in a]", "f'{a}'",
                            "a[0]", "(y := 1)", "__import__('os')", "1 + 2", "{'a': 1}", "foo=1"])


@st.composite
def near_valid_text(draw: st.DrawFn) -> str:
    """Lines that look like grammar calls: most right, some wrong in one place."""
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        prefix = draw(st.sampled_from([""] * 30 + ["page.", "os.", "self.", "x = "]))
        name = draw(st.sampled_from(NAMES * 5 + ["exec", "eval", "__import__", "system", "print",
                                                 "upload_file"]))
        params = ACTIONS[name].params if name in ACTIONS else ()
        k = draw(st.integers(0, len(params)))
        args = [draw(SOURCE_VALUES[p.kind]) for p in params[:k]]
        for p in params[k:]:  # the rest by keyword: optional ones half the time, required ones mostly
            if draw(st.integers(0, 9)) > 0 if p.required else draw(st.booleans()):
                args.append(f"{p.name}={draw(SOURCE_VALUES[p.kind])}")
        if draw(st.integers(0, 9)) == 0:
            args.insert(draw(st.integers(0, len(args))), draw(BAD_ARGS))
        comment = draw(st.sampled_from(["", "", "  # do it"]))
        lines.append(f"{prefix}{name}({', '.join(args)}){comment}")
    text = draw(st.sampled_from(["\n", "; ", "\n# next\n"])).join(lines)
    return draw(st.sampled_from([text, text, f"```python\n{text}\n```", f"```\n{text}\n```"]))


@st.composite
def valid_call(draw: st.DrawFn) -> tuple[str, WebCall]:
    """A call in the grammar by construction (positional/keyword mix, optionals left out) and its parse."""
    spec = ACTIONS[draw(st.sampled_from(NAMES))]
    n_positional = draw(st.integers(0, len(spec.params)))
    parts, args = [], {}
    for i, p in enumerate(spec.params):
        if not p.required and draw(st.integers(0, 2)) == 0:
            args[p.name] = p.default
            n_positional = min(n_positional, i)  # a left-out parameter ends the positional run
            continue
        written, parsed = draw(VALID_VALUES[p.kind])
        args[p.name] = parsed
        parts.append(repr(written) if i < n_positional else f"{p.name}={written!r}")
    return f"{spec.name}({', '.join(parts)})", WebCall(spec.name, args)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300))
def test_fuzz_arbitrary_text(text: str) -> None:
    parse_or_none(text)


@settings(max_examples=300, deadline=None)
@given(text=TOKEN_SOUP)
def test_fuzz_token_soup(text: str) -> None:
    parse_or_none(text)


@settings(max_examples=300, deadline=None)
@given(text=near_valid_text(), max_calls=st.integers(1, 6))
def test_fuzz_near_valid_text(text: str, max_calls: int) -> None:
    parse_or_none(text, max_calls=max_calls)


@st.composite
def one_odd_argument(draw: st.DrawFn) -> str:
    """A call whose arguments are valid but one, which is odd (most often out of its kind's limits)."""
    spec = ACTIONS[draw(st.sampled_from([n for n in NAMES if ACTIONS[n].params]))]
    odd = draw(st.sampled_from(spec.params)).name
    parts = []
    for p in spec.params:
        if p.name == odd:
            parts.append(f"{p.name}={draw(ODD_SOURCE[p.kind])}")
        elif p.required or draw(st.booleans()):
            parts.append(f"{p.name}={draw(VALID_VALUES[p.kind])[0]!r}")
    return f"{spec.name}({', '.join(parts)})"


@settings(max_examples=300, deadline=None)
@given(text=one_odd_argument())
def test_fuzz_one_odd_argument(text: str) -> None:
    parse_or_none(text)


@settings(max_examples=300, deadline=None)
@given(calls=st.lists(valid_call(), min_size=1, max_size=5), sep=st.sampled_from(["\n", "; ", "\n\n# x\n"]))
def test_fuzz_valid_calls_always_parse_to_what_was_written(calls: list[tuple[str, WebCall]],
                                                           sep: str) -> None:
    parsed = parse_web_actions(sep.join(text for text, _ in calls))
    assert parsed == [call for _, call in calls]
    for call in parsed:
        assert_well_formed(call)


@settings(max_examples=300, deadline=None)
@given(call=valid_call(), allowed=st.frozensets(st.sampled_from(NAMES)))
def test_fuzz_allowed(call: tuple[str, WebCall], allowed: frozenset[str]) -> None:
    text, expected = call
    if expected.name in allowed:
        assert parse_web_actions(text, allowed=allowed) == [expected]
    else:
        with pytest.raises(WebActionError, match=f"action '{expected.name}' is not allowed in this task"):
            parse_web_actions(text, allowed=allowed)


class Escaped(BaseException):
    """Raised by the trapped functions; a BaseException so that no `except Exception` can hide it."""


@contextmanager
def no_escape() -> Iterator[None]:
    """Make exec/eval/compile-to-code/__import__/os.system/os.popen/subprocess.Popen raise Escaped."""

    def trap(*args: object, **kwargs: object) -> None:
        raise Escaped(f"the parser called out with {args!r:.200}")

    with ExitStack() as stack:
        for target, name in ((builtins, "exec"), (builtins, "eval"), (builtins, "__import__"), (os, "system"),
                             (os, "popen"), (subprocess, "Popen")):
            stack.enter_context(mock.patch.object(target, name, trap))
        yield


def test_no_escape_traps() -> None:
    with no_escape(), pytest.raises(Escaped):
        exec("1")
    with no_escape(), pytest.raises(Escaped):
        os.system("true")
    with no_escape(), pytest.raises(Escaped):
        __import__("json")


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(TOKEN_SOUP, near_valid_text(), st.lists(valid_call(), min_size=1, max_size=3)
                      .map(lambda calls: "\n".join(t for t, _ in calls))))
def test_fuzz_never_calls_out(text: str) -> None:
    with no_escape():
        try:
            calls = parse_web_actions(text)
        except WebActionError:
            return
    for call in calls:
        assert_well_formed(call)
