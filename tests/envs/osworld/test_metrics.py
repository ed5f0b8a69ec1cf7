"""OSWorld metric functions: a pass, a fail and an edge case (None result / malformed task) each."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envs.osworld.metrics import (
    KNOWN_METRICS,
    METRICS,
    MetricError,
    _lcs_length,
    _match_rule,
    metric,
    similarity,
)


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# ----------------------------------------------------------------------------------------------------
# Registry
# ----------------------------------------------------------------------------------------------------

def test_registered_metrics_are_known_osworld_names():
    assert set(METRICS) <= KNOWN_METRICS
    assert len(KNOWN_METRICS) == 139 and {"compare_table", "infeasible", "check_json"} <= KNOWN_METRICS


def test_decorator_rejects_unknown_and_duplicate_names():
    with pytest.raises(ValueError, match="not an OSWorld metric"):
        metric("no_such_metric")
    with pytest.raises(ValueError, match="registered twice"):
        metric("exact_match")


def test_metric_error_is_a_value_error():
    assert issubclass(MetricError, ValueError)


def test_infeasible_always_scores_zero():
    assert METRICS["infeasible"]() == 0.0
    assert METRICS["infeasible"]("FAIL", {"expected": "FAIL"}) == 0.0


# ----------------------------------------------------------------------------------------------------
# Metrics over in-memory values (result, rules) -> score
# ----------------------------------------------------------------------------------------------------

TAB = {"title": "Example", "url": "https://www.example.com/a?q=1"}
BOOKMARKS = {"roots": {"bookmark_bar": {"children": [
    {"type": "folder", "name": "Work", "children": []},
    {"type": "folder", "name": "Liked Authors", "children": [
        {"type": "url", "name": "A", "url": "https://a.example/"},
        {"type": "url", "name": "B", "url": "https://b.example/"},
    ]},
    {"type": "url", "name": "News", "url": "https://news.example/"},
]}}}

FOLDERS, SITES = "bookmark_bar_folders_names", "bookmark_bar_websites_urls"
LIKED = "liked_authors_websites_urls"
APPROX = "is_expected_active_tab_approximate"

VALUE_CASES: list[tuple[str, Any, Any, float]] = [
    ("exact_match", "42", {"expected": "42"}, 1.0),
    ("exact_match", "41", {"expected": "42"}, 0.0),
    ("exact_match", None, {"expected": None}, 0.0),
    ("match_in_list", "b", {"expected": ["a", "b"]}, 1.0),
    ("match_in_list", "c", {"expected": ["a", "b"]}, 0.0),
    ("match_in_list", None, {"expected": ["a", None]}, 0.0),
    ("is_in_list", ["x", "y"], {"expected": "y"}, 1.0),
    ("is_in_list", ["x"], {"expected": "y"}, 0.0),
    ("is_in_list", None, {"expected": "y"}, 0.0),
    ("is_in_list", [1, 2], {"expected": [1]}, 0.0),
    ("check_include_exclude", "alpha beta", {"include": ["alpha"], "exclude": ["gamma"]}, 1.0),
    ("check_include_exclude", "alpha gamma", {"include": ["alpha"], "exclude": ["gamma"]}, 0.0),
    ("check_include_exclude", "beta", {"include": ["alpha"]}, 0.0),
    ("check_include_exclude", None, {"include": []}, 0.0),
    ("fuzzy_match", "hello", {"expected": "hello"}, 1.0),
    ("fuzzy_match", "abc", {"expected": "xyz"}, 0.0),
    ("fuzzy_match", None, {"expected": "x"}, 0.0),
    ("compare_answer", "Paris", {"expected": "Paris"}, 1.0),
    ("compare_answer", "paris", {"expected": "Paris"}, 0.0),
    ("compare_answer", "", {"expected": ""}, 0.0),
    ("is_extension_installed", "ms-python.python\nfoo", {"type": "contain", "expected": "ms-python.python"},
     1.0),
    ("is_extension_installed", "foo", {"type": "contain", "expected": "ms-python.python"}, 0.0),
    ("is_extension_installed", "foo", {"type": "not_contain", "expected": "ms-python.python"}, 1.0),
    ("is_extension_installed", None, {"type": "not_contain", "expected": "x"}, 0.0),
    ("check_direct_json_object", {"a": 1, "b": "x"}, {"expected": {"a": 1}}, 1.0),
    ("check_direct_json_object", "{'a': 1}", {"expected": {"a": 1}}, 1.0),
    ("check_direct_json_object", {"a": 2}, {"expected": {"a": 1}}, 0.0),
    ("check_direct_json_object", "not json", {"expected": {"a": 1}}, 0.0),
    ("check_direct_json_object", None, {"expected": {"a": 1}}, 0.0),
    ("check_direct_json_object", {"a": 1}, {"expected": {"a": "__EVALUATION_FAILED__"}}, 0.0),
    ("check_direct_json_object", {"a": [2, 1]}, {"expected": {"a": [1, 2]}, "ignore_list_order": True}, 1.0),
    ("check_direct_json_object", {"a": [2, 1]}, {"expected": {"a": [1, 2]}}, 0.0),
    ("check_direct_json_object", {"a": "New York City", "b": ["x", "y"], "c": 3},
     {"expected": {"a": "York", "b": ["y", "z"], "c": 3}, "expect_in_result": True}, 1.0),
    ("check_direct_json_object", {"a": "Boston"}, {"expected": {"a": "York"}, "expect_in_result": True}, 0.0),
    ("check_direct_json_object", {"a": "x"}, {"expected": {"a": ["x", "y"]}, "expect_in_result": True}, 1.0),
    ("is_expected_url_pattern_match", TAB, {"expected": [r"example\.com", r"q=1"]}, 1.0),
    ("is_expected_url_pattern_match", TAB["url"], {"expected": [r"example\.com", r"q=2"]}, 0.0),
    ("is_expected_url_pattern_match", TAB["url"], {"expected": r"q=\d"}, 1.0),
    ("is_expected_url_pattern_match", None, {"expected": ["."]}, 0.0),
    ("is_expected_url_pattern_match", {"title": "no url"}, {"expected": ["."]}, 0.0),
    ("is_expected_tabs", [{"url": "https://www.google.com/"}, {"url": "https://example.com/x"}],
     {"type": "url", "urls": ["https://example.com/x", "https://google.com"]}, 1.0),
    ("is_expected_tabs", [{"url": "https://example.com/x"}],
     {"type": "url", "urls": ["https://example.com/x", "https://google.com"]}, 0.0),
    ("is_expected_tabs", [{"url": "https://a.com/y"}], {"type": "url", "urls": ["https://a.com/x"]}, 0.0),
    ("is_expected_tabs", [], {"type": "url", "urls": []}, 0.0),
    ("is_expected_active_tab", {"url": "https://www.amazon.co.uk/s?k=tv"},
     {"type": "url", "url": "https://amazon.com/s?k=tv"}, 1.0),
    ("is_expected_active_tab", {"url": "https://amazon.com/s?k=radio"},
     {"type": "url", "url": "https://amazon.com/s?k=tv"}, 0.0),
    ("is_expected_active_tab", {"url": "http://a.com/s?k=tv"}, {"type": "url", "url": "a.com/s?k=tv"}, 1.0),
    ("is_expected_active_tab", {"url": "https://mail.a.com/"}, {"type": "url", "url": "https://a.com"}, 0.0),
    ("is_expected_active_tab", None, {"type": "url", "url": "https://a.com"}, 0.0),
    (APPROX, {"url": "https://a.com/p?x=1"}, {"type": "url", "url": "https://a.com/p"}, 1.0),
    (APPROX, {"url": "https://a.com/q?x=1"}, {"type": "url", "url": "https://a.com/p"}, 0.0),
    (APPROX, {}, {"type": "url", "url": "https://a.com/p"}, 0.0),
    ("is_expected_search_query", TAB, {"expect": {"pattern": r"q=1"}}, 1.0),
    ("is_expected_search_query", TAB, {"expect": {"pattern": r"q=2"}}, 0.0),
    ("is_expected_search_query", None, {"expect": {"pattern": r"q"}}, 0.0),
    ("is_expected_installed_extensions", ["Dark Reader", "uBlock"], {"expected": ["uBlock"]}, 1.0),
    ("is_expected_installed_extensions", ["Dark Reader"], {"expected": ["uBlock"]}, 0.0),
    ("is_expected_installed_extensions", None, {"expected": []}, 0.0),
    ("is_expected_bookmarks", BOOKMARKS, {"type": FOLDERS, "names": ["Liked Authors", "Work"]}, 1.0),
    ("is_expected_bookmarks", BOOKMARKS["roots"], {"type": FOLDERS, "names": ["Work"]}, 0.0),
    ("is_expected_bookmarks", BOOKMARKS, {"type": SITES, "urls": ["https://news.example/"]}, 1.0),
    ("is_expected_bookmarks", BOOKMARKS, {"type": SITES, "urls": ["https://x.example/"]}, 0.0),
    ("is_expected_bookmarks", BOOKMARKS,
     {"type": LIKED, "urls": [["https://a.example", "https://a.example/"], "https://b.example/"]}, 1.0),
    ("is_expected_bookmarks", BOOKMARKS, {"type": LIKED, "urls": ["https://a.example/"]}, 0.0),
    ("is_expected_bookmarks", BOOKMARKS, {"type": LIKED, "names": ["Fans"], "urls": []}, 0.0),
    ("is_expected_bookmarks", {}, {"type": FOLDERS, "names": []}, 0.0),
    ("is_expected_bookmarks", None, {"type": SITES, "urls": []}, 0.0),
]


@pytest.mark.parametrize(("name", "result", "rules", "score"), VALUE_CASES)
def test_value_metrics(name: str, result: Any, rules: Any, score: float):
    assert METRICS[name](result, rules) == pytest.approx(score)


def test_liked_authors_rule_is_not_mutated():
    rule = {"type": "liked_authors_websites_urls", "urls": ["https://a.example/", "https://b.example/"]}
    assert METRICS["is_expected_bookmarks"](BOOKMARKS, rule) == 1.0
    assert rule["urls"] == ["https://a.example/", "https://b.example/"]


def test_fuzzy_match_is_partial_credit_without_threshold():
    # 2 * LCS("kitten", "sitting") = 2 * 4 over 13 characters: rapidfuzz's fuzz.ratio gives 61.54.
    assert METRICS["fuzzy_match"]("kitten", {"expected": "sitting"}) == pytest.approx(8 / 13)


@pytest.mark.parametrize(("result", "expected", "options", "score"), [
    ("Hello", "Hello", {}, 1.0),
    ("Hello", "hello", {}, 0.0),
    ("Hello", "hello", {"ignore_case": True}, 1.0),
    (["a", 1], ["a", "1"], {"type": "list"}, 1.0),
    (["a"], ["a", "b"], {"type": "list"}, 0.0),
    ("a", ["a"], {"type": "list"}, 0.0),
    (None, "None", {}, 0.0),
])
def test_literal_match(result: Any, expected: Any, options: dict[str, Any], score: float):
    assert METRICS["literal_match"](result, expected, **options) == score


MALFORMED: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("exact_match", ("x", {}), {}),
    ("exact_match", ("x", ["expected"]), {}),
    ("match_in_list", ("x", {"expected": "abc"}), {}),
    ("is_in_list", (None, {}), {}),
    ("check_include_exclude", ("x", {"include": "abc"}), {}),
    ("fuzzy_match", (None, {"wanted": "x"}), {}),
    ("literal_match", ("x", "x"), {"type": "dict"}),
    ("compare_answer", ("x", {}), {}),
    ("is_extension_installed", ("x", {"type": "maybe", "expected": "x"}), {}),
    ("check_direct_json_object", ({}, {"expected": ["a"]}), {}),
    ("is_expected_url_pattern_match", ("u", {"expected": ["("]}), {}),
    ("is_expected_url_pattern_match", ("u", {"expected": [1]}), {}),
    ("is_expected_tabs", ([], {"type": "title", "urls": []}), {}),
    ("is_expected_active_tab", (None, {"type": "url"}), {}),
    ("is_expected_active_tab_approximate", (None, {"type": "regex", "url": "x"}), {}),
    ("is_expected_search_query", (None, {"expect": {}}), {}),
    ("is_expected_installed_extensions", (None, {"expected": "uBlock"}), {}),
    ("is_expected_bookmarks", (BOOKMARKS, {"type": "reading_list"}), {}),
    ("is_expected_bookmarks", (None, {"type": "bookmark_bar_websites_urls"}), {}),
    ("check_accessibility_tree", ("<a/>", [{"text": "x"}]), {}),
    ("check_accessibility_tree", ("<a/>", {"xpath": "//a"}), {}),
    ("check_accessibility_tree", ("<a/>", [{"selectors": "a"}]), {}),
    ("check_accessibility_tree", ("<a/>", [{"xpath": "//a"}]), {"osname": "beos"}),
    ("compare_table", (None,), {}),
    ("compare_table", (None,), {"rules": [{"type": "chart", "sheet_idx0": 0, "sheet_idx1": "EI0"}]}),
    ("compare_table", (None,), {"rules": [{"type": "sheet_data", "sheet_idx0": 0}]}),
    ("compare_table", (None,), {"rules": [{"type": "sheet_data", "sheet_idx0": "XX0", "sheet_idx1": 0}]}),
    ("compare_table", (None,), {"rules": [{"type": "sheet_data", "sheet_idx0": "RIx", "sheet_idx1": 0}]}),
    ("compare_table", (None,), {"rules": [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}]}),
    ("compare_table", (None,), {"rules": [{"type": "sheet_name"}]}),
    ("compare_table", (None,), {"rules": [{"type": "check_cell", "sheet_idx": 0, "coordinate": "A1",
                                           "props": {"comment": {"method": "eq", "ref": 1}}}]}),
    ("compare_table", (None,), {"rules": [{"type": "check_cell", "sheet_idx": 0, "coordinate": "A1",
                                           "props": {"value": {"method": "eq"}}}]}),
    ("compare_table", (None,), {"rules": [{"type": "sheet_fuzzy", "sheet_idx0": 0, "sheet_idx1": 0,
                                           "rules": [{"range": "A1", "type": "sounds_like"}]}]}),
]


@pytest.mark.parametrize(("name", "args", "options"), MALFORMED)
def test_malformed_task_options_raise_metric_error(name: str, args: tuple[Any, ...], options: dict[str, Any]):
    with pytest.raises(MetricError):
        METRICS[name](*args, **options)


# ----------------------------------------------------------------------------------------------------
# Value-vs-rule matching (check_json, check_cell, zoom)
# ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "rule", "ok"), [
    ("Hello World", {"method": "re", "ref": r"World$"}, True),
    ("hello", {"method": "re.I", "ref": r"^HELLO"}, True),
    ("hello", {"method": "re", "ref": r"^HELLO"}, False),
    ("hello", {"method": "regex", "ref": r"^h"}, True),
    (5, {"method": "re", "ref": "5"}, False),
    (3, {"method": "eq", "ref": 3.0}, True),
    (3, {"method": "ne", "ref": 3}, False),
    (2, {"method": "lt", "ref": 3}, True),
    (3, {"method": "le", "ref": 3}, True),
    (None, {"method": "gt", "ref": 3}, False),
    (4, {"method": "ge", "ref": 5}, False),
    (191.6667, {"method": "approx:0.001", "ref": 191.667}, True),
    ("191.6667", {"method": "approx:0.001", "ref": 191.667}, True),
    (191.6667, {"method": "approx:0.001", "ref": 191.67}, False),
    ("n/a", {"method": "approx:0.1", "ref": 1}, False),
    (2, {"method": "range.te", "ref": [0, 2]}, True),
    (0, {"method": "range.te", "ref": [0, 2]}, False),
    (0, {"method": "range.et", "ref": [0, 2]}, True),
    ("'a,b'", {"method": "str_list_eq", "ref": ["a", "b"]}, True),
    ("b,a", {"method": "str_list_eq", "ref": ["a", "b"]}, False),
    ("b,a", {"method": "str_set_eq", "ref": ["a", "b"]}, True),
    (12.0, {"method": "str_eq", "ref": "12.0"}, True),
    (None, {"method": "str_eq", "ref": "None"}, False),
    ("Total: 12", {"method": "str_contains", "ref": 12}, True),
    ("Total", {"method": "str_contains", "ref": "sum"}, False),
])
def test_match_rule_methods(value: Any, rule: dict[str, Any], ok: bool):
    assert _match_rule(value, rule, "test") is ok


@pytest.mark.parametrize("rule", [
    {"method": "about", "ref": "x"},
    {"method": "re.NOPE", "ref": "x"},
    {"method": "approx:abc", "ref": 1},
    {"method": "approx:0.1", "ref": "1"},
    {"method": "range.xx", "ref": [0, 1]},
    {"method": "range.tt", "ref": 1},
    {"method": "str_set_eq", "ref": "a,b"},
    {"method": "spreadsheet_range", "ref": ["A1", "A2"]},
    {"ref": 1},
])
def test_match_rule_rejects_malformed_rules(rule: dict[str, Any]):
    with pytest.raises(MetricError):
        _match_rule(1, rule, "test")


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="abcab\u00e9", max_size=24), st.text(alphabet="abcab\u00e9", max_size=24))
def test_bit_parallel_lcs_matches_dynamic_programming(a: str, b: str):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, ca in enumerate(a):
        for j, cb in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if ca == cb else max(table[i][j + 1], table[i + 1][j])
    assert _lcs_length(a, b) == table[-1][-1]
    assert 0.0 <= similarity(a, b) <= 1.0 and similarity(a, b) == similarity(b, a)


# ----------------------------------------------------------------------------------------------------
# Text files
# ----------------------------------------------------------------------------------------------------

def test_compare_text_file(tmp_path: Path):
    gold = _write(tmp_path, "gold.txt", "Hello\tWorld\n")
    assert METRICS["compare_text_file"](_write(tmp_path, "same.txt", "Hello\tWorld\n"), gold) == 1.0
    loose = _write(tmp_path, "loose.txt", "  hello   world ")
    assert METRICS["compare_text_file"](loose, gold) == 0.0
    assert METRICS["compare_text_file"](loose, gold, ignore_blanks=True) == 0.0
    assert METRICS["compare_text_file"](loose, gold, ignore_blanks=True, ignore_case=True) == 1.0
    assert METRICS["compare_text_file"](None, gold) == 0.0
    assert METRICS["compare_text_file"](str(tmp_path / "missing.txt"), gold) == 0.0
    with pytest.raises(MetricError, match="expected file"):
        METRICS["compare_text_file"](loose, str(tmp_path / "no_gold.txt"))


def test_diff_text_file(tmp_path: Path):
    gold = _write(tmp_path, "gold.txt", "a\nb\nc\nd\n")
    assert METRICS["diff_text_file"](_write(tmp_path, "same.txt", "a\nb\nc\nd"), gold) == 1.0
    assert METRICS["diff_text_file"](_write(tmp_path, "half.txt", "a\nb\nx\ny\n"), gold) == pytest.approx(0.5)
    assert METRICS["diff_text_file"](None, gold) == 0.0


def test_file_contains(tmp_path: Path):
    path = _write(tmp_path, "out.txt", "alpha\nbeta\n")
    assert METRICS["file_contains"](path, {"expected": ["alpha", "beta"]}) == 1.0
    assert METRICS["file_contains"](path, {"expected": ["alpha", "gamma"]}) == 0.0
    assert METRICS["file_contains"](None, {"expected": ["alpha"]}) == 0.0
    with pytest.raises(MetricError):
        METRICS["file_contains"](path, {"expected": "alpha"})


def test_check_line_number(tmp_path: Path):
    path = _write(tmp_path, "log.txt", "12:00:01 start\nno time here\n23:59:60 end\n24:00:00 invalid\n")
    assert METRICS["check_line_number"](path, {"expected": "2"}) == 1.0
    assert METRICS["check_line_number"](path, {"expected": 3}) == 0.0
    assert METRICS["check_line_number"](None, {"expected": 0}) == 0.0
    with pytest.raises(MetricError):
        METRICS["check_line_number"](path, {"expected": "two"})


def test_check_list(tmp_path: Path):
    path = _write(tmp_path, "list.txt", "apple 3\nbanana 5\n")
    assert METRICS["check_list"](path, {"expect": [r"^apple \d$", "banana"], "unexpect": ["cherry"]}) == 1.0
    assert METRICS["check_list"](path, {"expect": ["cherry"]}) == 0.0
    assert METRICS["check_list"](path, {"unexpect": ["ban+ana"]}) == 0.0
    assert METRICS["check_list"](None, {"expect": []}) == 0.0
    with pytest.raises(MetricError):
        METRICS["check_list"](path, {"expect": ["[unclosed"]})


def test_compare_config(tmp_path: Path):
    path = _write(tmp_path, "cfg", "key=1\n")
    assert METRICS["compare_config"](path, {"expected": "key=1\n"}) == 1.0
    assert METRICS["compare_config"](path, {"expected": "key=2\n"}) == 0.0
    assert METRICS["compare_config"](None, {"expected": ""}) == 0.0
    assert METRICS["compare_config"](path, {"expected": ""}) == 0.0
    # OSWorld's default (containment_ok): the expected text occurs in the file...
    assert METRICS["compare_config"](_write(tmp_path, "name", "my project\n"), {"expected": "project"}) == 1.0
    # ...or, as JSON, its keys are in the file's object with equal values
    settings = _write(tmp_path, "settings.json", '{"workbench.colorTheme": "Visual Studio Dark", "a": {"b": 1, "c": 2}}')
    cfg = METRICS["compare_config"]
    assert cfg(settings, {"expected": '{"workbench.colorTheme": "Visual Studio Dark"}\n'}) == 1.0
    assert cfg(settings, {"expected": '{"a": {"b": 1}}'}) == 1.0
    assert cfg(settings, {"expected": '{"a": {"b": 2}}'}) == 0.0
    assert cfg(settings, {"expected": '{"workbench.colorTheme": "Light"}'}) == 0.0
    # strict: equal text, or equal JSON
    assert cfg(settings, {"expected": '{"a": {"b": 1}}'}, containment_ok=False) == 0.0
    assert cfg(settings, {"expected": '{"a": {"c": 2, "b": 1}, "workbench.colorTheme": "Visual Studio Dark"}'},
               containment_ok=False) == 1.0
    assert cfg(_write(tmp_path, "name2", "my project\n"), {"expected": "project"}, containment_ok=False) == 0.0


def test_validate_metric_reports_what_would_raise():
    from envs.osworld.metrics import NOT_STATIC, validate_metric

    validate_metric("compare_config", {"containment_ok": True}, True, {"expected": "x"})
    with pytest.raises(MetricError, match=r"options \['strict'\] do not fit"):
        validate_metric("compare_config", {"strict": True}, True, {"expected": "x"})
    with pytest.raises(MetricError, match="rules must be an object"):  # the metric's own check, on a missing result
        validate_metric("exact_match", {}, True, "not rules")
    with pytest.raises(MetricError, match="pivot_table"):  # checked without the expected workbook
        validate_metric("compare_table", {"rules": [{"type": "pivot_table"}]}, True, NOT_STATIC)
    validate_metric("compare_csv", {"strict": False}, True, NOT_STATIC)  # a gold file: options only


# ----------------------------------------------------------------------------------------------------
# CSV, JSON, SQLite
# ----------------------------------------------------------------------------------------------------

def test_compare_csv(tmp_path: Path):
    gold = _write(tmp_path, "gold.csv", "Name,Score\nAda,3\n")
    assert METRICS["compare_csv"](_write(tmp_path, "same.csv", "\ufeffName,Score\r\nAda,3"), gold) == 1.0
    loose = _write(tmp_path, "loose.csv", " name,score \nADA,3\n")
    assert METRICS["compare_csv"](loose, gold) == 0.0
    assert METRICS["compare_csv"](loose, gold, strict=False, ignore_case=True) == 1.0
    other = _write(tmp_path, "other.csv", "Name,Score\nBob,1\n")
    assert METRICS["compare_csv"](other, [gold, _write(tmp_path, "gold2.csv", "Name,Score\nBob,1")]) == 1.0
    latin = tmp_path / "latin.csv"
    latin.write_bytes("Name,Score\nAd\u00e1,3\n".encode("latin-1"))
    gold3 = _write(tmp_path, "gold3.csv", "Name,Score\nAd\u00e1,3\n")
    assert METRICS["compare_csv"](str(latin), gold3) == 1.0
    assert METRICS["compare_csv"](None, gold) == 0.0
    with pytest.raises(MetricError, match="none of the expected"):
        METRICS["compare_csv"](other, [str(tmp_path / "nope.csv")])
    with pytest.raises(MetricError):
        METRICS["compare_csv"](other, [])


def test_check_csv(tmp_path: Path):
    path = _write(tmp_path, "t.csv", "name,city\nAda,London\nBob,Paris\n")
    assert METRICS["check_csv"](path, {"expect": [{"name": "Ada", "city": "London"}],
                                       "unexpect": [{"name": "Eve"}]}) == 1.0
    assert METRICS["check_csv"](path, {"expect": [{"name": "Ada", "city": "Paris"}]}) == 0.0
    assert METRICS["check_csv"](path, {"unexpect": [{"city": "Paris"}]}) == 0.0
    assert METRICS["check_csv"](None, {"expect": []}) == 0.0
    with pytest.raises(MetricError):
        METRICS["check_csv"](path, {"expect": ["Ada"]})


def test_check_json(tmp_path: Path):
    path = _write(tmp_path, "s.json", json.dumps({"editor": {"fontSize": 14, "theme": "Dark+"}, "l": [1, 2]}))
    rules = {"expect": [{"key": ["editor", "fontSize"], "method": "eq", "ref": 14},
                        {"key": ["l", 1], "method": "eq", "ref": 2}],
             "unexpect": [{"key": ["editor", "wordWrap"], "method": "eq", "ref": "on"}]}
    assert METRICS["check_json"](path, rules) == 1.0
    def one(kind: str, key: str, method: str, ref: Any) -> float:
        return METRICS["check_json"](path, {kind: [{"key": ["editor", key], "method": method, "ref": ref}]})

    assert one("expect", "theme", "re", "Light") == 0.0
    assert one("expect", "nope", "eq", None) == 0.0
    assert one("unexpect", "theme", "eq", "Dark+") == 0.0
    assert one("unexpect", "nope", "eq", None) == 0.0  # a missing path reads as None
    assert METRICS["check_json"](_write(tmp_path, "bad.json", "{oops"), rules) == 0.0
    assert METRICS["check_json"](None, rules) == 0.0
    with pytest.raises(MetricError):
        METRICS["check_json"](path, {"expect": [{"key": "editor", "method": "eq", "ref": 1}]})
    with pytest.raises(MetricError):
        one("expect", "fontSize", "about", 1)


def test_check_json_reads_yaml(tmp_path: Path):
    path = _write(tmp_path, "c.yaml", "server:\n  port: 8080\n")
    assert METRICS["check_json"](path, {"expect": [{"key": ["server", "port"], "method": "eq", "ref": 8080}]},
                                 is_yaml=True) == 1.0
    assert METRICS["check_json"](path, {"expect": [{"key": ["server", "port"], "method": "eq", "ref": 80}]},
                                 is_yaml=True) == 0.0


def test_check_json_settings(tmp_path: Path):
    path = _write(tmp_path, "settings.json", json.dumps({"editor.fontSize": 16, "files.autoSave": "off"}))
    assert METRICS["check_json_settings"](path, {"expected": {"editor.fontSize": 16}}) == 1.0
    assert METRICS["check_json_settings"](path, {"expected": {"editor.fontSize": 16, "x": 1}}) == 0.0
    assert METRICS["check_json_settings"](path, {"expected": {"editor.fontSize": 12}}) == 0.0
    assert METRICS["check_json_settings"](_write(tmp_path, "list.json", "[1]"), {"expected": {"a": 1}}) == 0.0
    assert METRICS["check_json_settings"](None, {"expected": {}}) == 0.0
    with pytest.raises(MetricError):
        METRICS["check_json_settings"](path, {"expected": ["editor.fontSize"]})


def test_check_json_keybindings(tmp_path: Path):
    binding = {"key": "ctrl+j", "command": "workbench.action.togglePanel"}
    path = _write(tmp_path, "kb.json", "// Place your key bindings in this file\n" + json.dumps([binding]))
    assert METRICS["check_json_keybindings"](path, {"expected": binding}) == 1.0
    assert METRICS["check_json_keybindings"](path, {"expected": {**binding, "key": "ctrl+k"}}) == 0.0
    assert METRICS["check_json_keybindings"](_write(tmp_path, "obj.json", "{}"), {"expected": binding}) == 0.0
    assert METRICS["check_json_keybindings"](None, {"expected": binding}) == 0.0


def test_run_sqlite3(tmp_path: Path):
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (name TEXT)")
        conn.execute("INSERT INTO t VALUES ('Ada')")
    conn.close()
    assert METRICS["run_sqlite3"](str(db), {"sql": "SELECT COUNT(*) = 1 FROM t WHERE name = 'Ada'"}) == 1.0
    assert METRICS["run_sqlite3"](str(db), {"sql": "SELECT COUNT(*) FROM t WHERE name = 'Bob'"}) == 0.0
    assert METRICS["run_sqlite3"](str(db), {"sql": "SELECT 1 FROM missing_table"}) == 0.0
    assert METRICS["run_sqlite3"](None, {"sql": "SELECT 1"}) == 0.0
    with pytest.raises(MetricError):
        METRICS["run_sqlite3"](str(db), {"query": "SELECT 1"})


# ----------------------------------------------------------------------------------------------------
# Accessibility tree
# ----------------------------------------------------------------------------------------------------

A11Y = """<desktop-frame xmlns:st="https://accessibility.ubuntu.example.org/ns/state"
  xmlns:attr="https://accessibility.ubuntu.example.org/ns/attributes" name="main">
  <application name="gnome-terminal-server">
    <frame name="Terminal" st:active="true">
      <terminal name="Terminal" st:focused="true">hello world</terminal>
    </frame>
  </application>
  <application name="gedit"><label name="status">Saved</label></application>
</desktop-frame>"""


def test_check_accessibility_tree():
    focused = "//application[@name='gnome-terminal-server']//terminal[@st:focused='true']"
    check = METRICS["check_accessibility_tree"]
    assert check(A11Y, [{"xpath": focused, "text": "hello world", "exact": True},
                        {"xpath": "/desktop-frame/application/label"}]) == 1.0
    assert check(A11Y, [{"xpath": focused, "text": "hello there", "exact": True}]) == 0.0
    assert check(A11Y, [{"xpath": focused, "text": "hello wrld", "exact": False}]) == pytest.approx(20 / 21)
    assert check(A11Y, [{"xpath": "//application[@name='vlc']"}]) == 0.0
    assert check(A11Y, [{"xpath": "application/label", "text": "Saved"}]) == 1.0  # relative to the root
    assert check(None, [{"xpath": focused}]) == 0.0
    assert check("<not-xml", [{"xpath": focused}]) == 0.0


def test_check_accessibility_tree_without_lxml_rejects_full_xpath():
    try:
        import lxml  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("lxml is installed: full XPath and CSS selectors are available")
    with pytest.raises(MetricError, match="lxml"):
        METRICS["check_accessibility_tree"](A11Y, [{"xpath": "//label[contains(@name, 'stat')]"}])
    with pytest.raises(MetricError, match="cssselect"):
        METRICS["check_accessibility_tree"](A11Y, [{"selectors": ["label"]}])


# ----------------------------------------------------------------------------------------------------
# compare_table
# ----------------------------------------------------------------------------------------------------

@pytest.fixture
def openpyxl():
    return pytest.importorskip("openpyxl", reason="compare_table reads .xlsx with openpyxl")


def _xlsx(openpyxl: Any, path: Path, sheets: dict[str, list[list[Any]]], edit: Any = None) -> str:
    wb = openpyxl.Workbook()
    wb.remove(wb.active)
    for name, rows in sheets.items():
        ws = wb.create_sheet(name)
        for row in rows:
            ws.append(row)
    if edit is not None:
        edit(wb)
    wb.save(path)
    return str(path)


ROWS = [["Item", "Price", "Qty"], ["Pen", 1.5, 10], ["Book", 12.25, 2]]


def _data_rule(a: Any = "RI0", b: Any = "EI0", **extra: Any) -> dict[str, Any]:
    return {"rules": [{"type": "sheet_data", "sheet_idx0": a, "sheet_idx1": b, **extra}]}


def test_compare_table_sheet_data(openpyxl: Any, tmp_path: Path):
    gold = _xlsx(openpyxl, tmp_path / "gold.xlsx", {"Sheet1": ROWS})
    same = _xlsx(openpyxl, tmp_path / "same.xlsx", {"Data": ROWS + [[None, None]]})
    assert METRICS["compare_table"](same, gold, **_data_rule()) == 1.0
    changed = _xlsx(openpyxl, tmp_path / "changed.xlsx", {"Sheet1": [*ROWS[:2], ["Book", 12.5, 2]]})
    assert METRICS["compare_table"](changed, gold, **_data_rule()) == 0.0
    close = _xlsx(openpyxl, tmp_path / "close.xlsx", {"Sheet1": [*ROWS[:2], ["Book", 12.250001, 2]]})
    assert METRICS["compare_table"](close, gold, **_data_rule()) == 1.0
    assert METRICS["compare_table"](close, gold, **_data_rule(precision=6)) == 0.0
    assert METRICS["compare_table"](same, gold, **_data_rule("RNData", "ENSheet1")) == 1.0
    assert METRICS["compare_table"](same, gold, **_data_rule("RNMissing", "ENSheet1")) == 0.0
    assert METRICS["compare_table"](same, gold, **_data_rule("RI3", "EI0")) == 0.0


def test_compare_table_missing_or_broken_result_scores_zero(openpyxl: Any, tmp_path: Path):
    gold = _xlsx(openpyxl, tmp_path / "gold.xlsx", {"Sheet1": ROWS})
    assert METRICS["compare_table"](None, gold, **_data_rule()) == 0.0
    assert METRICS["compare_table"](str(tmp_path / "absent.xlsx"), gold, **_data_rule()) == 0.0
    broken = tmp_path / "broken.xlsx"
    broken.write_bytes(b"not a zip")
    assert METRICS["compare_table"](str(broken), gold, **_data_rule()) == 0.0
    with pytest.raises(MetricError, match="expected workbook"):
        METRICS["compare_table"](gold, str(broken), **_data_rule())


def test_compare_table_check_cell(openpyxl: Any, tmp_path: Path):
    def bold_header(wb: Any) -> None:
        wb["Sheet1"]["A1"].font = openpyxl.styles.Font(bold=True, size=14)

    path = _xlsx(openpyxl, tmp_path / "r.xlsx", {"Sheet1": [["Total", None, None, None, 191.6667]] * 3},
                 bold_header)

    def cell(props: dict[str, Any], coordinate: str = "E3", sheet: Any = 0) -> float:
        rule = {"type": "check_cell", "sheet_idx": sheet, "coordinate": coordinate, "props": props}
        return METRICS["compare_table"](path, rules=[rule])

    assert cell({"value": {"method": "approx:0.001", "ref": 191.667}}) == 1.0
    assert cell({"value": {"method": "approx:0.001", "ref": 191.67}}) == 0.0
    assert cell({"value": {"method": "eq", "ref": "Total"}}, "A2", "RNSheet1") == 1.0
    assert cell({"value": {"method": "str_contains", "ref": "Tot"},
                 "font_bold": {"method": "eq", "ref": True},
                 "font_size": {"method": "ge", "ref": 14}}, "A1") == 1.0
    assert cell({"font_bold": {"method": "eq", "ref": True}}, "A2") == 0.0
    assert cell({"value": {"method": "eq", "ref": None}}, "B1") == 1.0
    assert cell({"value": {"method": "eq", "ref": "Total"}}, "A1", "RNOther") == 0.0
    assert METRICS["compare_table"](None, rules=[{"type": "check_cell", "sheet_idx": 0, "coordinate": "A1",
                                                  "props": {"value": {"method": "eq", "ref": 1}}}]) == 0.0
    with pytest.raises(MetricError, match="coordinate"):
        METRICS["compare_table"](None, rules=[{"type": "check_cell", "sheet_idx": 0, "coordinate": "e3",
                                               "props": {"value": {"method": "eq", "ref": 1}}}])


def test_compare_table_dates_read_as_serial_numbers(openpyxl: Any, tmp_path: Path):
    import datetime as dt

    path = _xlsx(openpyxl, tmp_path / "d.xlsx", {"S": [[dt.datetime(2024, 1, 1)]]})
    rule = {"type": "check_cell", "sheet_idx": 0, "coordinate": "A1",
            "props": {"value": {"method": "eq", "ref": 45292}}}
    assert METRICS["compare_table"](path, rules=[rule]) == 1.0


def test_compare_table_sheet_name_print_and_fuzzy(openpyxl: Any, tmp_path: Path):
    gold = _xlsx(openpyxl, tmp_path / "gold.xlsx", {"A": [["Road name", 1.0]], "B": [["x"]]})
    result = _xlsx(openpyxl, tmp_path / "result.xlsx", {"A": [["ROAD  NAME", 1]], "B": [["x"]]})
    renamed = _xlsx(openpyxl, tmp_path / "renamed.xlsx", {"B": [["x"]], "A": [["Road name", 1]]})
    assert METRICS["compare_table"](result, gold, rules=[{"type": "sheet_name"}]) == 1.0
    assert METRICS["compare_table"](renamed, gold, rules=[{"type": "sheet_name"}]) == 0.0

    printed = {"rules": [{"type": "sheet_print", "sheet_idx0": "RNA", "sheet_idx1": "ENA"}]}
    assert METRICS["compare_table"](renamed, gold, **printed) == 1.0  # 1 and 1.0 both print as "1"
    assert METRICS["compare_table"](result, gold, **printed) == 0.0
    printed_ci = {"rules": [{**printed["rules"][0], "ignore_case": True}]}
    (tmp_path / "result-A.csv").write_text("road name,1\n\n", encoding="utf-8")  # LibreOffice's export wins
    assert METRICS["compare_table"](result, gold, **printed_ci) == 1.0

    def fuzzy(kind: str, **extra: Any) -> float:
        rl = {"range": ["A1"], "type": kind, **extra}
        rule = {"type": "sheet_fuzzy", "sheet_idx0": "RI0", "sheet_idx1": "EI0", "rules": [rl]}
        return METRICS["compare_table"](result, gold, rules=[rule])

    assert fuzzy("exact_match") == 0.0
    assert fuzzy("exact_match", ignore_case=True, ignore_chars=" ") == 1.0
    assert fuzzy("fuzzy_match", ignore_case=True, threshold=85) == 1.0
    assert fuzzy("fuzzy_match", threshold=85) == 0.0
    assert fuzzy("includes", ignore_case=True, normalization=[["  ", " "]]) == 1.0
    assert fuzzy("included_by", ignore_case=True, trim_trailings="ME") == 0.0


def test_compare_table_freeze_and_zoom(openpyxl: Any, tmp_path: Path):
    def freeze(wb: Any) -> None:
        wb.active.freeze_panes = "B2"
        wb.active.sheet_view.zoomScale = 150

    gold = _xlsx(openpyxl, tmp_path / "gold.xlsx", {"S": ROWS}, freeze)
    frozen = _xlsx(openpyxl, tmp_path / "frozen.xlsx", {"S": ROWS}, freeze)
    plain = _xlsx(openpyxl, tmp_path / "plain.xlsx", {"S": ROWS})
    rule = {"type": "freeze", "sheet_idx0": "RI0", "sheet_idx1": "EI0"}
    assert METRICS["compare_table"](frozen, gold, rules=[rule]) == 1.0
    assert METRICS["compare_table"](plain, gold, rules=[rule]) == 0.0
    zoom = {"type": "zoom", "sheet_idx": 0, "method": "ge", "ref": 140}
    assert METRICS["compare_table"](frozen, rules=[zoom]) == 1.0
    assert METRICS["compare_table"](plain, rules=[zoom]) == 0.0  # unset zoom reads as 100


def test_compare_table_needs_every_rule_to_pass(openpyxl: Any, tmp_path: Path):
    gold = _xlsx(openpyxl, tmp_path / "gold.xlsx", {"S": ROWS})
    other = _xlsx(openpyxl, tmp_path / "other.xlsx", {"T": ROWS})
    rules = [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}, {"type": "sheet_name"}]
    assert METRICS["compare_table"](other, gold, rules=rules) == 0.0
    assert METRICS["compare_table"](other, gold, rules=rules[:1]) == 1.0


def test_compare_table_reads_csv_books(openpyxl: Any, tmp_path: Path):
    gold = _xlsx(openpyxl, tmp_path / "gold.xlsx", {"Sheet1": ROWS})
    result = _write(tmp_path, "result.csv", "Item,Price,Qty\nPen,1.5,10\nBook,12.25,2\n")
    assert METRICS["compare_table"](result, gold, **_data_rule()) == 1.0
    assert METRICS["compare_table"](result, gold, **_data_rule("RNresult", "ENSheet1")) == 1.0
    wrong = _write(tmp_path, "wrong.csv", "Item,Price,Qty\nPen,1.5,11\n")
    assert METRICS["compare_table"](wrong, gold, **_data_rule()) == 0.0
    rule = {"type": "check_cell", "sheet_idx": 0, "coordinate": "B3",
            "props": {"value": {"method": "eq", "ref": 12.25}}}
    assert METRICS["compare_table"](result, rules=[rule]) == 1.0
    with pytest.raises(MetricError, match="xlsx"):
        METRICS["compare_table"](result, rules=[{"type": "zoom", "sheet_idx": 0, "method": "eq", "ref": 100}])


def test_compare_table_csv_fields_keep_quoting_and_text(openpyxl: Any, tmp_path: Path):
    gold = _xlsx(openpyxl, tmp_path / "gold.xlsx", {"S": [["Smith, J\nJr", "1_000", 7]]})
    result = _write(tmp_path, "result.csv", '"Smith, J\nJr",1_000,+7\n')
    assert METRICS["compare_table"](result, gold, **_data_rule()) == 1.0
