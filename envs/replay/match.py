"""Action matching for semi-online RL: does the model's action do what the expert's did?

Both sides are parsed into a :class:`StepAction` (one action per step: its kind and its
arguments) from OSWorld's ``pyautogui`` code or ``computer_13`` JSON
(``envs.osworld.actions``), then compared (UI-S1's step reward, Lu et al. 2025):

- ``click`` / ``double_click`` / ``right_click`` / ``move``: the model's point lies inside the
  expert's target box enlarged by ``box_scale`` (default 1.2, about its centre), or within
  ``max_dist`` (default 0.04) of the expert's point — coordinates normalised by each side's
  own image size, so a model that sees a downscaled screenshot is compared fairly;
- ``type``: the texts' words (case-insensitive runs of letters and digits) overlap with an F1 of at least
  ``text_f1`` (0.5; texts without words: equal after trimming); ``strict_text``: equal. Not
  containment: a model that types everything it can think of would contain the expert's
  text and match every type step (a reward hack); its precision, and so its F1, is low;
- ``key`` (press / hotkey): the same set of keys (case-insensitive, ``ctrl`` = ``control``);
- ``scroll``: the same direction; ``drag``: both ends as a point is matched;
- ``wait`` / ``done`` / ``fail``: the kind alone.

:func:`match_level` says ``exact`` (kind and arguments), ``type`` (kind only), ``wrong`` (parsed,
another kind) or ``unparsed``; :class:`MatchConfig` turns a level into the step's match reward
(1 / 0.5 / 0.1 / 0 by default).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from envs.osworld.actions import ActionParseError, parse_computer13, parse_pyautogui

Level = Literal["exact", "type", "wrong", "unparsed"]
KEY_ALIASES = {"control": "ctrl", "cmd": "command", "win": "super", "windows": "super", "return": "enter",
               "esc": "escape", "del": "delete", "option": "alt"}


@dataclass(frozen=True)
class StepAction:
    kind: str  # click, double_click, right_click, move, type, key, scroll, drag, wait, done, fail
    point: tuple[float, float] | None = None     # pixels of the image the action was given on
    end: tuple[float, float] | None = None       # drag: where it ends
    text: str | None = None
    keys: frozenset[str] = field(default_factory=frozenset)
    direction: str | None = None                 # scroll: up / down / left / right


@dataclass(frozen=True)
class MatchConfig:
    box_scale: float = 1.2
    max_dist: float = 0.04
    strict_text: bool = False
    rewards: dict[str, float] = field(default_factory=lambda: {"exact": 1.0, "type": 0.5, "wrong": 0.1,
                                                               "unparsed": 0.0})
    text_f1: float = 0.5

    def reward(self, level: Level) -> float:
        return float(self.rewards[level])


def _key(k: str) -> str:
    k = k.strip().lower()
    return KEY_ALIASES.get(k, k)


def step_action(action: str | dict | list, space: str = "pyautogui") -> StepAction | None:
    """The one step an action string (or computer_13 object) performs; None if it does not
    parse or performs nothing."""
    try:
        parsed = (parse_pyautogui(action) if space == "pyautogui" and isinstance(action, str)
                  else parse_computer13(action))
    except (ActionParseError, ValueError, TypeError):
        return None
    if parsed.special is not None and not parsed.actions:
        return StepAction(parsed.special.lower())
    items = parsed.actions
    if not items:
        return None
    kinds = [a["type"] for a in items]
    pos = None  # the pointer position as the items move it
    last_click = None
    for a in items:
        if "x" in a and a["type"] != "drag":
            pos = (float(a["x"]), float(a["y"]))
        if a["type"] == "click":
            last_click = a
    if "type" in kinds:
        text = "".join(a["text"] for a in items if a["type"] == "type")
        return StepAction("type", point=pos if last_click is not None else None, text=text)
    if "drag" in kinds:
        d = next(a for a in items if a["type"] == "drag")
        start = pos
        if start is None and "x" not in d:
            return None
        return StepAction("drag", point=start, end=(float(d["x"]), float(d["y"])) if "x" in d else None)
    if last_click is not None:
        kind = ("right_click" if last_click.get("button") == "right" else
                "double_click" if last_click.get("clicks", 1) >= 2 else "click")
        at = (float(last_click["x"]), float(last_click["y"])) if "x" in last_click else pos
        return StepAction(kind, point=at)
    if "scroll" in kinds:
        s = next(a for a in items if a["type"] == "scroll")
        dy, dx = s.get("dy", 0), s.get("dx", 0)
        direction = ("up" if dy > 0 else "down") if dy else ("right" if dx > 0 else "left") if dx else None
        return StepAction("scroll", point=pos, direction=direction)
    keys = [k for a in items if a["type"] in ("key", "press", "key_down")
            for k in (a.get("keys") or [a.get("key")]) if k]
    if keys:
        return StepAction("key", keys=frozenset(_key(k) for k in keys))
    if "move" in kinds:
        return StepAction("move", point=pos)
    if all(k == "wait" for k in kinds):
        return StepAction("wait")
    return None


def _norm(p: tuple[float, float], size: tuple[int, int]) -> tuple[float, float]:
    return p[0] / size[0], p[1] / size[1]


def point_matches(p: tuple[float, float] | None, p_size: tuple[int, int], expert: tuple[float, float] | None,
                  e_size: tuple[int, int], box: tuple[float, float, float, float] | None, cfg: MatchConfig) -> bool:
    """The model's point is inside the expert's box grown by ``box_scale`` or close enough
    to the expert's point (normalised coordinates)."""
    if p is None:
        return False
    px, py = _norm(p, p_size)
    if box is not None:
        bx, by, bw, bh = box
        cx, cy = (bx + bw / 2) / e_size[0], (by + bh / 2) / e_size[1]
        hw, hh = cfg.box_scale * bw / e_size[0] / 2, cfg.box_scale * bh / e_size[1] / 2
        if abs(px - cx) <= hw and abs(py - cy) <= hh:
            return True
    if expert is None:
        return False
    ex, ey = _norm(expert, e_size)
    return math.hypot(px - ex, py - ey) <= cfg.max_dist


def _text_matches(a: str | None, b: str | None, strict: bool, min_f1: float = 0.5) -> bool:
    a, b = (a or "").strip().lower(), (b or "").strip().lower()
    if strict:
        return a == b
    wa, wb = re.findall(r"\w+", a), re.findall(r"\w+", b)
    if not wa or not wb:
        return bool(a) and a == b
    common = sum((Counter(wa) & Counter(wb)).values())
    return common > 0 and 2 * common / (len(wa) + len(wb)) >= min_f1


def match_level(pred: StepAction | None, expert: StepAction, *, pred_size: tuple[int, int],
                expert_size: tuple[int, int], box: tuple[float, float, float, float] | None = None,
                cfg: MatchConfig | None = None) -> Level:
    """How well ``pred`` (on an image of ``pred_size``) matches ``expert`` (on ``expert_size``,
    target ``box`` in expert pixels when known)."""
    cfg = cfg or MatchConfig()
    if pred is None:
        return "unparsed"
    if pred.kind != expert.kind:
        return "wrong"
    k = pred.kind
    if k in ("click", "double_click", "right_click", "move"):
        ok = point_matches(pred.point, pred_size, expert.point, expert_size, box, cfg)
    elif k == "type":
        ok = _text_matches(pred.text, expert.text, cfg.strict_text, cfg.text_f1)
    elif k == "key":
        ok = pred.keys == expert.keys
    elif k == "scroll":
        ok = pred.direction == expert.direction
    elif k == "drag":
        ok = (point_matches(pred.point, pred_size, expert.point, expert_size, box, cfg)
              and point_matches(pred.end, pred_size, expert.end, expert_size, None, cfg))
    else:  # wait / done / fail
        ok = True
    return "exact" if ok else "type"


__all__ = ["Level", "MatchConfig", "StepAction", "match_level", "point_matches", "step_action"]
