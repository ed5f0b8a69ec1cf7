"""Scripted MiniWoB++ solutions, written in our action grammar (element ids, not DOM calls).

``ORACLES[task](page, goal) -> list[str]`` looks at the live page (after the env has
assigned ``data-vagen-bid`` ids) and returns the action strings that solve the current
episode — clicks, typing, selects, checkboxes, drag and multi-step forms. The env exposes
them as ``info["state"]["oracle"]`` (env option ``oracle=True``) so ``scripted:oracle``
and the tests play them through the same parser and executor as a model's actions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

Oracle = Callable[[object, str], list[str]]
ORACLES: dict[str, Oracle] = {}

_FIND = """([sel, text]) => {
  const norm = (s) => (s || '').replace(/\\s+/g, ' ').trim();
  for (const el of document.querySelectorAll(sel)) {
    if (text === null || norm(el.innerText || el.textContent || el.value) === text) {
      return el.getAttribute('data-vagen-bid');
    }
  }
  return null;
}"""


class OracleError(RuntimeError):
    """The page is not in a state the oracle understands."""


def oracle(*names: str) -> Callable[[Oracle], Oracle]:
    def deco(fn: Oracle) -> Oracle:
        for n in names:
            ORACLES[n] = fn
        return fn
    return deco


def find_bid(page, selector: str, text: str | None = None) -> str:
    """The bid of the first element matching ``selector`` (and whose whitespace-normalized
    text or value equals ``text``); OracleError if there is none."""
    bid = page.evaluate(_FIND, [selector, text])
    if bid is None:
        raise OracleError(f"no element {selector!r}" + (f" with text {text!r}" if text is not None else ""))
    return bid


_bid = find_bid


def _quoted(goal: str) -> list[str]:
    return re.findall(r'"([^"]*)"', goal)


def _click(bid: str) -> str:
    return f"click({json.dumps(bid)})"


@oracle("click-test")
def _click_test(page, goal):
    return [_click(_bid(page, "#subbtn"))]


@oracle("click-test-2", "click-test-transfer")
def _click_one_two(page, goal):
    word = re.search(r"button (\w+)", goal).group(1)
    return [_click(_bid(page, "button", word))]


@oracle("click-button")
def _click_button(page, goal):
    return [_click(_bid(page, "#area button", _quoted(goal)[0]))]


@oracle("click-link")
def _click_link(page, goal):
    return [_click(_bid(page, "#area a, #area span.alink", _quoted(goal)[0]))]


@oracle("click-dialog")
def _click_dialog(page, goal):
    return [_click(_bid(page, ".ui-dialog-titlebar-close"))]


@oracle("click-tab")
def _click_tab(page, goal):
    n = re.search(r"Tab #(\d+)", goal).group(1)
    return [_click(_bid(page, "#area a", f"Tab #{n}"))]


@oracle("click-button-sequence")
def _click_sequence(page, goal):
    return [_click(_bid(page, "#subbtn")), _click(_bid(page, "#subbtn2"))]


@oracle("click-widget")
def _click_widget(page, goal):
    kind = _quoted(goal)[0]
    bid = page.evaluate("(k) => { const el = document.querySelector(`#area [data-type=\"${k}\"]`);"
                        " return el ? el.getAttribute('data-vagen-bid') : null; }", kind)
    if bid is None:
        raise OracleError(f"no {kind} widget")
    return [_click(bid)]


def _label_inputs(page) -> dict[str, str]:
    return page.evaluate("""() => {
      const out = {};
      for (const lab of document.querySelectorAll('#area label')) {
        const inp = lab.querySelector('input');
        if (inp) out[(lab.innerText || lab.textContent).replace(/\\s+/g, ' ').trim()] = inp.getAttribute('data-vagen-bid');
      }
      return out;
    }""")


@oracle("click-checkboxes")
def _click_checkboxes(page, goal):
    m = re.search(r"Select (.*) and click Submit", goal)
    want = [] if m is None or m.group(1).strip() == "nothing" else \
        [w.strip() for w in re.split(r",\s*|\s+and\s+", m.group(1).replace(", and ", ", ")) if w.strip()]
    boxes = _label_inputs(page)
    missing = [w for w in want if w not in boxes]
    if missing:
        raise OracleError(f"no checkboxes for {missing}")
    return [_click(boxes[w]) for w in want] + [_click(_bid(page, "#subbtn"))]


@oracle("click-option")
def _click_option(page, goal):
    word = re.search(r"Select (.*) and click Submit", goal).group(1).strip()
    return [_click(_label_inputs(page)[word]), _click(_bid(page, "#subbtn"))]


@oracle("enter-text", "enter-text-dynamic")
def _enter_text(page, goal):
    text = _quoted(goal)[0]
    return [f"fill({json.dumps(_bid(page, '#tt'))}, {json.dumps(text)})", _click(_bid(page, "#subbtn"))]


@oracle("enter-password")
def _enter_password(page, goal):
    pw = _quoted(goal)[0]
    return [f"fill({json.dumps(_bid(page, '#password'))}, {json.dumps(pw)})",
            f"fill({json.dumps(_bid(page, '#verify'))}, {json.dumps(pw)})", _click(_bid(page, "#subbtn"))]


@oracle("login-user")
def _login(page, goal):
    user, pw = _quoted(goal)[:2]
    return [f"fill({json.dumps(_bid(page, '#username'))}, {json.dumps(user)})",
            f"fill({json.dumps(_bid(page, '#password'))}, {json.dumps(pw)})", _click(_bid(page, "#subbtn"))]


@oracle("focus-text")
def _focus_text(page, goal):
    return [_click(_bid(page, "#tt"))]


@oracle("choose-list")
def _choose_list(page, goal):
    item = re.search(r"Select (.*) from the list and click Submit", goal).group(1).strip()
    return [f"select_option({json.dumps(_bid(page, '#area select'))}, {json.dumps(item)})",
            _click(_bid(page, "#area button"))]


@oracle("drag-box")
def _drag_box(page, goal):
    return [f"drag_and_drop({json.dumps(_bid(page, '#draggableSmall'))}, {json.dumps(_bid(page, '#draggableLarge'))})",
            _click(_bid(page, "#subbtn"))]


@oracle("unicode-test")
def _unicode(page, goal):
    return [_click(_bid(page, "#area button", _quoted(goal)[0]))]


@oracle("focus-text-2")
def _focus_text_2(page, goal):
    n = {"1st": 0, "2nd": 1, "3rd": 2}[re.search(r"(\d(?:st|nd|rd))", goal).group(1)]
    bids = page.evaluate("() => [...document.querySelectorAll('#area input')].map(e => e.getAttribute('data-vagen-bid'))")
    return [_click(bids[n])]
