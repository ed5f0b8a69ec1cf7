"""Golden tests for action matching (envs.replay.match)."""

from __future__ import annotations

import pytest

from envs.replay.match import MatchConfig, match_level, step_action

E = (1000, 500)            # expert screen
BOX = (100, 100, 50, 20)   # centre (125, 110); grown x1.2: x 95..155, y 98..122


def level(pred: str, expert: str, box=BOX, pred_size=E, cfg=None, space="pyautogui"):
    return match_level(step_action(pred, space), step_action(expert), pred_size=pred_size, expert_size=E, box=box,
                       cfg=cfg)


@pytest.mark.parametrize("pred, want", [
    ("pyautogui.click(128, 100)", "exact"),     # inside the grown box
    ("pyautogui.click(157, 110)", "exact"),     # outside the box, 0.032 from the expert point (<= 0.04)
    ("pyautogui.click(170, 110)", "type"),      # 0.045 away, outside: right kind, wrong place
    ("pyautogui.doubleClick(125, 110)", "wrong"),
    ("pyautogui.click(x=125, y=110, clicks=2)", "wrong"),  # a double click by another name
    ("DONE", "wrong"),
    ("import os; os.system('rm -rf /')", "unparsed"),
    ("", "unparsed"),
])
def test_clicks(pred, want):
    assert level(pred, "pyautogui.click(125, 110)") == want


def test_coordinates_are_normalised_by_each_sides_image():
    # the model saw a 500x250 image: (64, 55) is (0.128, 0.22) — inside the grown box
    assert level("pyautogui.click(64, 55)", "pyautogui.click(125, 110)", pred_size=(500, 250)) == "exact"
    assert level("pyautogui.click(64, 55)", "pyautogui.click(125, 110)") == "type"  # read as screen px: far off


def test_without_a_box_only_the_distance_counts():
    assert level("pyautogui.click(128, 100)", "pyautogui.click(125, 110)", box=None) == "exact"   # 0.02 away
    assert level("pyautogui.click(166, 110)", "pyautogui.click(125, 110)", box=None) == "type"    # 0.041 away


def test_typing_keys_scroll_drag_and_specials():
    assert level("pyautogui.write('Hello World')", "pyautogui.write('hello')") == "exact"      # containment
    assert level("pyautogui.write('hello')", "pyautogui.write('HELLO WORLD')") == "exact"
    assert level("pyautogui.write('Hello World')", "pyautogui.write('hello')", cfg=MatchConfig(strict_text=True)) == "type"
    assert level("pyautogui.write('bye')", "pyautogui.write('hello')") == "type"
    # Typing everything at once is not a match (it would contain every expert text): word F1 >= 0.5.
    spray = "pyautogui.write('hello world report.txt password 42 yes no ok cancel save')"
    assert level(spray, "pyautogui.write('hello')") == "type"
    assert level("pyautogui.write('h')", "pyautogui.write('hello')") == "type"        # a fragment is not it
    assert level("pyautogui.write('Report.txt')", "pyautogui.write('report.txt ')") == "exact"
    assert level("pyautogui.write('+')", "pyautogui.write('+')") == "exact"           # no words: equal
    assert level("pyautogui.write('-')", "pyautogui.write('+')") == "type"
    assert level("pyautogui.hotkey('control', 'S')", "pyautogui.hotkey('ctrl', 's')") == "exact"
    assert level("pyautogui.press('return')", "pyautogui.press('enter')") == "exact"
    assert level("pyautogui.hotkey('ctrl', 'c')", "pyautogui.hotkey('ctrl', 's')") == "type"
    assert level("pyautogui.scroll(-10, x=5, y=5)", "pyautogui.scroll(-3, x=125, y=110)") == "exact"  # both down
    assert level("pyautogui.scroll(3)", "pyautogui.scroll(-3, x=125, y=110)") == "type"
    drag = "pyautogui.moveTo(125, 110); pyautogui.dragTo(600, 300, duration=0.5, button='left')"
    assert level("pyautogui.moveTo(128, 105); pyautogui.dragTo(610, 300)", drag) == "exact"
    assert level("pyautogui.moveTo(128, 105); pyautogui.dragTo(900, 300)", drag) == "type"   # wrong drop point
    assert level("DONE", "DONE") == "exact" and level("FAIL", "DONE") == "wrong"
    assert level("WAIT", "WAIT") == "exact"


def test_computer13_answers_match_pyautogui_experts():
    c13 = '{"action_type": "CLICK", "parameters": {"x": 128, "y": 100}}'
    assert level(c13, "pyautogui.click(125, 110)", space="computer_13") == "exact"
    assert level('{"action_type": "TYPING", "parameters": {"text": "hello"}}', "pyautogui.write('Hello')",
                 space="computer_13") == "exact"
    assert level("not json", "pyautogui.click(125, 110)", space="computer_13") == "unparsed"


def test_rewards_by_level_are_configurable():
    cfg = MatchConfig()
    assert [cfg.reward(x) for x in ("exact", "type", "wrong", "unparsed")] == [1.0, 0.5, 0.1, 0.0]
    assert MatchConfig(rewards={"exact": 2, "type": 0, "wrong": 0, "unparsed": -1}).reward("unparsed") == -1
