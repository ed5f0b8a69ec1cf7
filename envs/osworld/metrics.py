"""OSWorld evaluator metrics: score what the getters fetched after an episode.

Each metric is a plain function registered in ``METRICS`` under OSWorld's name and called as

    METRICS[func](result, expected, **options)    # ``expected`` omitted when the task has none

``result`` / ``expected`` are what the getters return: a host file path (str) or None for file
getters, a str for command getters, the rules dict for ``rule`` getters, and plain Python data for
the Chrome getters (tab dicts ``{"title", "url"}``, the ``Bookmarks`` JSON, ...). Every metric returns
a float in [0, 1]. Anything the agent is responsible for (a file it did not produce, a workbook that
does not open, output that is not JSON) scores 0.0 and never raises. A malformed *task* (a missing
option, an unknown rule type or comparison method) raises ``MetricError``; options are checked before
the result is looked at, so a broken task fails loudly even when the agent produced nothing.

Semantics (argument names, rule shapes, defaults) follow the OSWorld benchmark's evaluators
(Xie et al., 2024, "OSWorld: Benchmarking Multimodal Agents for Open-Ended Tasks in Real Computer
Environments", ``desktop_env/evaluators/metrics``), re-implemented here so OSWorld task JSON scores
the same. Deliberate differences:

- Every metric returns 0.0 for a None/missing/unreadable result, where OSWorld sometimes raises.
- Unknown rule types / methods raise ``MetricError`` where OSWorld logs and returns 0 or raises
  ``NotImplementedError``/``TypeError``.
- Fuzzy ratios (``fuzzy_match``, ``sheet_fuzzy``, a11y text) use our exact LCS-based ratio,
  2*LCS/(len(a)+len(b)), which is the quantity ``rapidfuzz.fuzz.ratio`` computes (no rapidfuzz).
- URL comparison (``is_expected_tabs``, ``is_expected_active_tab``) drops the public suffix with a
  small built-in heuristic instead of ``tldextract``'s suffix list (see ``_registrable_host``).
- ``compare_table`` reads workbooks with openpyxl only (no pandas): ``sheet_data`` compares values
  (ints and floats compare by value, not by pandas dtype); ``sheet_print`` uses the LibreOffice
  per-sheet CSV export next to the workbook when present (as OSWorld does) and otherwise renders
  raw cell values without number formats; ``check_cell`` also accepts methods ``str_eq`` and
  ``str_contains``; boolean cells read as bools (OSWorld reads them as None); the ``hyperlink``
  prop is the link target string. Chart, style, pivot, filter, sparkline, data-validation and
  row/column-property rules are not supported and raise ``MetricError``.
- ``check_direct_json_object`` reads ``ignore_list_order`` from the rules (OSWorld looks for it
  inside ``expected``, where it can never pass) and, with ``expect_in_result``, compares values
  that are neither lists nor strings for equality (OSWorld scores them 0).
- ``check_accessibility_tree`` defaults ``exact`` to True and, without lxml, evaluates xpaths with
  xml.etree's XPath subset (CSS ``selectors`` then raise ``MetricError``).
- ``is_expected_url_pattern_match`` accepts a single regex string as well as a list.
- ``compare_csv`` raises ``MetricError`` when none of the gold files can be read.
- ``run_sqlite3`` opens the database read-only and clips the score to [0, 1].
- ``infeasible`` returns 0.0; the evaluator applies OSWorld's infeasible rule (the agent must answer
  FAIL) itself.
"""

from __future__ import annotations

import csv
import datetime as dt
import difflib
import inspect
import io
import json
import logging
import operator
import os
import re
import sqlite3
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Mapping
from contextlib import closing
from itertools import product
from pathlib import Path
from typing import Any
from urllib.parse import urlparse, urlunparse

import yaml

logger = logging.getLogger(__name__)

__all__ = ["KNOWN_METRICS", "METRICS", "NOT_STATIC", "MetricError", "metric", "similarity", "validate_metric"]


class MetricError(ValueError):
    """The task's evaluator options are malformed or unsupported (our fault, not the agent's)."""


# Every metric name in OSWorld's desktop_env/evaluators/metrics/__init__.py.
KNOWN_METRICS: frozenset[str] = frozenset("""
check_gnome_favorite_apps is_utc_0 check_text_enlarged check_moved_jpgs is_in_vm_clickboard
is_expected_tabs is_expected_bookmarks compare_pdfs compare_htmls compare_archive is_cookie_deleted
is_shortcut_on_desktop check_font_size check_enabled_experiments check_history_deleted
is_expected_search_query is_expected_active_tab is_expected_url_pattern_match is_added_to_steam_cart
is_expected_installed_extensions compare_pdf_images is_expected_active_tab_approximate
compare_font_names compare_subscript_contains has_page_numbers_in_footers compare_docx_lines
evaluate_colored_words_in_tables check_highlighted_words evaluate_strike_through_last_paragraph
evaluate_conversion evaluate_spacing check_italic_font_size_14 evaluate_alignment
get_unique_train_ids check_no_duplicates compare_init_lines find_default_font contains_page_break
compare_docx_files compare_docx_tables compare_line_spacing compare_insert_equation
compare_highlighted_text is_first_line_centered check_file_exists check_tabstops
compare_contains_image compare_docx_files_and_ignore_new_lines compare_docx_images compare_image_text
compare_references compare_unique_train_records check_csv check_accessibility_tree run_sqlite3
check_json check_list exact_match match_in_list is_in_list fuzzy_match check_include_exclude
check_direct_json_object compare_time_in_speedtest_results is_included_all_json_objects
is_gold_text_included_in_pdf check_line_number file_contains compare_terminal_and_txt
fuzzy_place_math compare_python_pure_text diff_text_file literal_match check_structure_sim_resized
check_structure_sim_with_threshold check_brightness_decrease_and_structure_sim
check_contrast_increase_and_structure_sim check_saturation_increase_and_structure_sim
check_image_size check_image_mirror check_palette_and_structure_sim check_textbox_on_leftside
check_green_background check_file_exists_and_structure_sim check_triangle_position
check_structure_sim check_config_status compare_image_list increase_saturation decrease_brightness
compare_triangle_positions check_sharper check_image_file_size check_libre_locale compare_epub
check_mp3_meta check_pdf_pages check_presenter_console_disable check_image_stretch_and_center
check_slide_numbers_color compare_pptx_files check_strikethrough check_slide_orientation_Portrait
evaluate_presentation_fill_to_rgb_distance check_left_panel check_transition check_page_number_colors
check_auto_saving_time compare_table compare_csv compare_conference_city_in_order
check_thunderbird_prefs check_thunderbird_filter check_thunderbird_folder is_vlc_playing
is_vlc_recordings_folder is_vlc_fullscreen compare_images compare_audios compare_videos
check_qt_bgcone check_one_instance_when_started_from_file check_qt_minimal_view check_qt_max_volume
check_qt_slider_colours check_global_key_play_pause check_play_and_exit compare_text_file
compare_config compare_answer compare_result_files is_extension_installed check_json_settings
check_json_keybindings check_python_file_by_test_suite check_python_file_by_gold_file
check_html_background_image compare_zip_files infeasible
""".split())

Metric = Callable[..., float]
METRICS: dict[str, Metric] = {}


_OPTION_CHECKS: dict[str, Callable[[Mapping[str, Any], bool], None]] = {}


def metric(name: str, check: Callable[[Mapping[str, Any], bool], None] | None = None
           ) -> Callable[[Metric], Metric]:
    """Register the decorated function in ``METRICS`` under OSWorld metric ``name``.

    ``check(options, has_expected)`` raises MetricError for options the metric cannot run with,
    for options that are not looked at until the expected file is open (``validate_metric``).
    """
    if name not in KNOWN_METRICS:
        raise ValueError(f"{name!r} is not an OSWorld metric name")
    if name in METRICS:
        raise ValueError(f"metric {name!r} is registered twice")

    def register(fn: Metric) -> Metric:
        METRICS[name] = fn
        if check is not None:
            _OPTION_CHECKS[name] = check
        return fn

    return register


#: ``validate_metric``'s ``expected`` when the expected value is a file only known at evaluation.
NOT_STATIC = object()


def validate_metric(name: str, options: Mapping[str, Any], has_expected: bool, expected: Any = NOT_STATIC) -> None:
    """Raise MetricError if metric ``name`` would fail on these options before scoring anything.

    Checks that the options are arguments the metric takes, runs the metric's own option check,
    and, when ``expected`` is known without a sandbox (a ``rule`` getter's rules, or no expected
    at all), calls the metric on a missing result: metrics check their options first, so a
    malformed task raises here while a well-formed one scores the missing result 0.
    """
    fn = METRICS[name]
    args: list[Any] = [None] + ([None] if has_expected else [])
    try:
        inspect.signature(fn).bind(*args, **options)
    except TypeError as e:
        raise MetricError(f"{name}: options {sorted(options)} do not fit the metric: {e}") from None
    if name in _OPTION_CHECKS:
        _OPTION_CHECKS[name](options, has_expected)
    if expected is NOT_STATIC:
        return
    try:
        fn(None, expected, **options) if has_expected else fn(None, **options)
    except MetricError:
        raise
    except Exception as e:  # noqa: BLE001 - a metric must score a missing result 0, never raise
        raise MetricError(f"{name} raised {type(e).__name__} on a missing result: {e}") from e


# --------------------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------------------

def _rules(rules: Any, where: str, *required: str) -> Mapping[str, Any]:
    """``rules`` as a mapping holding every ``required`` key, else MetricError naming ``where``."""
    if not isinstance(rules, Mapping):
        raise MetricError(f"{where}: rules must be an object, got {rules!r:.80}")
    missing = [k for k in required if k not in rules]
    if missing:
        raise MetricError(f"{where}: rules need key(s) {', '.join(map(repr, missing))}; got {sorted(rules)}")
    return rules


def _str_list(value: Any, where: str) -> list[str]:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise MetricError(f"{where}: expected a list of strings, got {value!r:.80}")


def _compile(pattern: Any, where: str, flags: int = 0) -> re.Pattern[str]:
    if not isinstance(pattern, str):
        raise MetricError(f"{where}: regex must be a string, got {pattern!r:.80}")
    try:
        return re.compile(pattern, flags)
    except re.error as e:
        raise MetricError(f"{where}: bad regex {pattern!r}: {e}") from e


def _read_result_text(path: Any) -> str | None:
    """Text of the agent's result file, or None when it is missing or unreadable."""
    if not isinstance(path, str | os.PathLike) or not path or not os.path.isfile(path):
        return None
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        logger.debug("result file %s unreadable: %s", path, e)
        return None


def _read_expected_text(path: Any, where: str) -> str:
    """Text of the task's gold file; a missing gold file is a task error."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, TypeError, UnicodeDecodeError) as e:
        raise MetricError(f"{where}: cannot read expected file {path!r}: {e}") from e


def _read_text_any_encoding(path: str) -> str:
    """Text of a CSV-like file: UTF-8 (BOM allowed), else Latin-1, which decodes any bytes."""
    raw = Path(path).read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _read_lines_any_encoding(path: str) -> list[str]:
    return _read_text_any_encoding(path).splitlines()


def _lcs_length(a: str, b: str) -> int:
    """Length of the longest common subsequence, bit-parallel (Hyyrö 2004), O(len(b)) big-int ops."""
    if len(a) < len(b):
        a, b = b, a
    masks: dict[str, int] = {}
    for i, ch in enumerate(b):
        masks[ch] = masks.get(ch, 0) | (1 << i)
    full = (1 << len(b)) - 1
    v = full
    for ch in a:
        u = v & masks.get(ch, 0)
        v = ((v + u) | (v - u)) & full
    return len(b) - v.bit_count()


def similarity(a: str, b: str) -> float:
    """Indel similarity 2*LCS/(len(a)+len(b)) in [0, 1]; 1.0 for two empty strings.

    This is the normalised quantity behind ``rapidfuzz.fuzz.ratio`` (which OSWorld divides by 100).
    """
    total = len(a) + len(b)
    return 1.0 if total == 0 else 2.0 * _lcs_length(a, b) / total


# Value-vs-rule matching shared by check_json, compare_table (check_cell, zoom) ---------------------

_COMPARATORS: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
    "ge": operator.ge,
}


def _regex_flags(method: str, where: str) -> int:
    flags = 0
    for name in method.split(".")[1:]:
        flag = getattr(re, name, None)
        if not isinstance(flag, re.RegexFlag):
            raise MetricError(f"{where}: unknown regex flag {name!r} in method {method!r}")
        flags |= flag
    return flags


def _match_rule(value: Any, rule: Any, where: str) -> bool:
    """Whether ``value`` satisfies ``{"method": ..., "ref": ...}`` (OSWorld's _match_value_to_rule).

    Methods: ``re[.FLAG...]`` (re.search), ``eq ne lt le gt ge``, ``approx:EPS`` (|float(v)-ref|<=EPS),
    ``range.XY`` (X,Y in t/e: ref[0] <X v <Y ref[1], t = strict, e = or-equal), ``str_list_eq`` /
    ``str_set_eq`` (comma-split string vs list/set), and our ``str_eq`` / ``str_contains``.
    A value of the wrong type for the comparison simply does not match.
    """
    rule = _rules(rule, where, "method", "ref")
    method, ref = rule["method"], rule["ref"]
    if not isinstance(method, str):
        raise MetricError(f"{where}: method must be a string, got {method!r:.80}")
    if method.startswith("re"):  # "re", "re.I", "re.I.M"; like OSWorld, any "re..." name is a regex
        pattern = _compile(ref, where, _regex_flags(method, where))
        return isinstance(value, str) and pattern.search(value) is not None
    if method in _COMPARATORS:
        try:
            return bool(_COMPARATORS[method](value, ref))
        except TypeError:
            return False
    if method.startswith("approx:"):
        return _match_approx(value, ref, method, where)
    if method.startswith("range."):
        return _match_range(value, ref, method, where)
    if method in ("str_list_eq", "str_set_eq"):
        container: type = list if method == "str_list_eq" else set
        if not isinstance(ref, list):
            raise MetricError(f"{where}: {method} needs a list ref, got {ref!r:.80}")
        return isinstance(value, str) and container(value.strip("\"'").split(",")) == container(ref)
    if method == "str_eq":
        return value is not None and str(value) == str(ref)
    if method == "str_contains":
        return value is not None and str(ref) in str(value)
    raise MetricError(f"{where}: unsupported match method {method!r}")


def _match_approx(value: Any, ref: Any, method: str, where: str) -> bool:
    try:
        eps = float(method.split(":", 1)[1])
    except ValueError as e:
        raise MetricError(f"{where}: bad tolerance in {method!r}") from e
    if isinstance(ref, bool) or not isinstance(ref, int | float):
        raise MetricError(f"{where}: {method} needs a numeric ref, got {ref!r:.80}")
    try:
        return abs(float(value) - ref) <= eps
    except (TypeError, ValueError):
        return False


def _match_range(value: Any, ref: Any, method: str, where: str) -> bool:
    ends = method[len("range."):]
    if len(ends) != 2 or any(e not in "te" for e in ends):
        raise MetricError(f"{where}: range method must be range.XY with X, Y in 't'/'e', got {method!r}")
    if not isinstance(ref, list) or len(ref) != 2:
        raise MetricError(f"{where}: {method} needs ref [low, high], got {ref!r:.80}")
    left, right = getattr(operator, "l" + ends[0]), getattr(operator, "l" + ends[1])
    try:
        return bool(left(ref[0], value) and right(value, ref[1]))
    except TypeError:
        return False


# URL normalisation shared by the Chrome metrics ------------------------------------------------------

_HAS_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+\-.]*://")
_IPV4 = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
# Second-level labels that sit under a two-letter country TLD as part of the public suffix
# (co.uk, com.au, ac.jp, ...): enough of the public-suffix list for the sites OSWorld tasks use.
_CC_SECOND_LEVEL = frozenset({"ac", "co", "com", "edu", "gob", "go", "gov", "ne", "net", "or", "org"})


def _registrable_host(host: str) -> str:
    """``host`` without its public suffix and without a lone ``www`` subdomain.

    ``www.amazon.co.uk`` -> ``amazon``; ``mail.google.com`` -> ``mail.google``; IPs and single-label
    hosts are kept as they are. Mirrors OSWorld's tldextract-based normalisation.
    """
    if not host or "." not in host or _IPV4.match(host) or ":" in host:
        return host
    labels = host.split(".")
    cc_pair = len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in _CC_SECOND_LEVEL
    rest = labels[: -2 if cc_pair else -1]
    domain, sub = rest[-1], ".".join(rest[:-1])
    return domain if sub in ("", "www") else f"{sub}.{domain}"


def _normalize_url(url: str, full: bool = True) -> str:
    parsed = urlparse(url if _HAS_SCHEME.match(url) else f"http://{url}")
    host = _registrable_host(parsed.hostname or "")
    path = "" if parsed.path == "/" else parsed.path
    if not full:
        return urlunparse((parsed.scheme.lower(), host, path, "", "", ""))
    return urlunparse((parsed.scheme.lower(), host, path, parsed.params, parsed.query, parsed.fragment))


def _same_url(a: str | None, b: str | None, full: bool = True) -> bool:
    """OSWorld's compare_urls: scheme, host minus suffix/www, path ('/' == ''), query, fragment."""
    if a is None or b is None:
        return a == b
    return _normalize_url(a, full) == _normalize_url(b, full)


def _tab_url(tab: Any) -> str | None:
    if isinstance(tab, Mapping):
        url = tab.get("url")
        return url if isinstance(url, str) else None
    return tab if isinstance(tab, str) else None


# --------------------------------------------------------------------------------------------------
# General: strings, lists, text files
# --------------------------------------------------------------------------------------------------

@metric("exact_match")
def exact_match(result: Any, rules: Any) -> float:
    """1 if ``result == rules["expected"]``."""
    expected = _rules(rules, "exact_match", "expected")["expected"]
    return float(result is not None and result == expected)


@metric("match_in_list")
def match_in_list(result: Any, rules: Any) -> float:
    """1 if ``result`` is one of the list ``rules["expected"]``."""
    expected = _rules(rules, "match_in_list", "expected")["expected"]
    if not isinstance(expected, list):
        raise MetricError(f"match_in_list: expected must be a list, got {expected!r:.80}")
    return float(result is not None and result in expected)


@metric("is_in_list")
def is_in_list(result: Any, rules: Any) -> float:
    """1 if ``rules["expected"]`` is an element (or substring) of ``result``."""
    expected = _rules(rules, "is_in_list", "expected")["expected"]
    try:
        return float(result is not None and expected in result)
    except TypeError:
        return 0.0


@metric("check_include_exclude")
def check_include_exclude(result: Any, rules: Any) -> float:
    """1 if every ``rules["include"]`` string is in ``result`` and no ``rules["exclude"]`` one is."""
    rules = _rules(rules, "check_include_exclude")
    include = _str_list(rules.get("include", []), "check_include_exclude.include")
    exclude = _str_list(rules.get("exclude", []), "check_include_exclude.exclude")
    if not isinstance(result, str | list | tuple | set | dict):
        return 0.0
    return float(all(s in result for s in include) and all(s not in result for s in exclude))


@metric("literal_match")
def literal_match(result: Any, expected: Any, **options: Any) -> float:
    """Compare as strings (``type: "str"``, default) or element-wise as string lists (``"list"``).

    ``ignore_case`` lower-cases both sides first.
    """
    kind, ignore_case = options.get("type", "str"), bool(options.get("ignore_case", False))
    if kind not in ("str", "list"):
        raise MetricError(f"literal_match: type must be 'str' or 'list', got {kind!r}")
    if result is None:
        return 0.0
    norm: Callable[[Any], str] = (lambda s: str(s).lower()) if ignore_case else str
    if kind == "str":
        return float(norm(result) == norm(expected))
    if not isinstance(result, list | tuple) or not isinstance(expected, list | tuple):
        return 0.0
    return float([norm(s) for s in result] == [norm(s) for s in expected])


@metric("fuzzy_match")
def fuzzy_match(result: Any, rules: Any) -> float:
    """Similarity in [0, 1] of ``result`` to ``rules["expected"]`` (2*LCS/total length).

    No threshold is applied: like OSWorld, the raw ratio is the score, so a near miss earns partial
    credit and only an identical string scores 1.0.
    """
    expected = _rules(rules, "fuzzy_match", "expected")["expected"]
    if result is None:
        return 0.0
    return similarity(str(result), str(expected))


@metric("compare_text_file")
def compare_text_file(result: Any, expected: Any, **options: Any) -> float:
    """1 if the result file's text equals the gold file's.

    ``ignore_blanks``: tabs/newlines become spaces, whitespace runs collapse, ends are stripped.
    ``ignore_case``: compare lower-cased.
    """
    gold = _read_expected_text(expected, "compare_text_file")
    text = _read_result_text(result)
    if text is None:
        return 0.0
    if options.get("ignore_blanks", False):
        text, gold = _collapse_blanks(text), _collapse_blanks(gold)
    if options.get("ignore_case", False):
        text, gold = text.lower(), gold.lower()
    return float(text == gold)


def _collapse_blanks(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[\t\n]", " ", text).strip())


@metric("diff_text_file")
def diff_text_file(result: Any, expected: Any) -> float:
    """Line-level similarity of the two files: difflib ``SequenceMatcher(result, gold).ratio()``."""
    gold = _read_expected_text(expected, "diff_text_file").splitlines()
    text = _read_result_text(result)
    if text is None:
        return 0.0
    return difflib.SequenceMatcher(a=text.splitlines(), b=gold).ratio()


@metric("file_contains")
def file_contains(result: Any, rules: Any) -> float:
    """1 if the result file contains every string in ``rules["expected"]``."""
    wanted = _str_list(_rules(rules, "file_contains", "expected")["expected"], "file_contains.expected")
    text = _read_result_text(result)
    return 0.0 if text is None else float(all(s in text for s in wanted))


_TIME_OF_DAY = re.compile(r"([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)")


@metric("check_line_number")
def check_line_number(result: Any, rules: Any) -> float:
    """1 if exactly ``rules["expected"]`` lines of the result file contain an HH:MM:SS time."""
    raw = _rules(rules, "check_line_number", "expected")["expected"]
    try:
        want = int(raw)
    except (TypeError, ValueError) as e:
        raise MetricError(f"check_line_number: expected must be an integer, got {raw!r:.80}") from e
    text = _read_result_text(result)
    if text is None:
        return 0.0
    return float(sum(1 for line in text.splitlines() if _TIME_OF_DAY.search(line)) == want)


@metric("check_list")
def check_list(result: Any, rules: Any) -> float:
    """1 if each ``expect`` regex matches some line of the file and no ``unexpect`` regex any line."""
    rules = _rules(rules, "check_list")
    expect, unexpect = (
        [_compile(p, f"check_list.{key}") for p in _str_list(rules.get(key, []), f"check_list.{key}")]
        for key in ("expect", "unexpect")
    )
    text = _read_result_text(result)
    if text is None:
        return 0.0
    lines = text.splitlines()
    found = all(any(p.search(line) for line in lines) for p in expect)
    clean = not any(p.search(line) for p in unexpect for line in lines)
    return float(found and clean)


@metric("compare_config")
def compare_config(result: Any, rules: Any, containment_ok: bool = True) -> float:
    """Whether the result file holds ``rules["expected"]`` (OSWorld's current compare_config).

    ``containment_ok`` (default True): when both texts are JSON, every key of the expected object
    must be in the result with a value that holds it in turn (lists and scalars equal); otherwise
    the expected text (stripped) must occur in the file. With ``containment_ok: false``: the texts
    are equal, or equal as JSON. An empty expected text scores 0.
    """
    expected = _rules(rules, "compare_config", "expected")["expected"]
    if not isinstance(expected, str):
        raise MetricError(f"compare_config: expected must be a string, got {expected!r:.80}")
    text = _read_result_text(result)
    if text is None or not expected:
        return 0.0
    try:
        got, want, as_json = json.loads(text), json.loads(expected), True
    except json.JSONDecodeError:
        got = want = None
        as_json = False
    if containment_ok:
        return float(_json_subset(want, got) if as_json else expected.strip() in text)
    return float(text == expected or (as_json and got == want))


def _json_subset(want: Any, got: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and _json_subset(v, got[k]) for k, v in want.items())
    return want == got


@metric("compare_answer")
def compare_answer(result: Any, rules: Any) -> float:
    """1 if the result string equals ``rules["expected"]`` (an empty result scores 0)."""
    expected = _rules(rules, "compare_answer", "expected")["expected"]
    return float(bool(result) and result == expected)


@metric("is_extension_installed")
def is_extension_installed(result: Any, rules: Any) -> float:
    """``type: "contain"``: ``rules["expected"]`` occurs in the result text; ``"not_contain"``: it does not.
    """
    rules = _rules(rules, "is_extension_installed", "type", "expected")
    if rules["type"] not in ("contain", "not_contain"):
        raise MetricError(f"is_extension_installed: type must be contain/not_contain, got {rules['type']!r}")
    if not isinstance(result, str):
        return 0.0
    present = str(rules["expected"]) in result
    return float(present if rules["type"] == "contain" else not present)


# --------------------------------------------------------------------------------------------------
# CSV, JSON, SQLite
# --------------------------------------------------------------------------------------------------

@metric("compare_csv")
def compare_csv(result: Any, expected: Any, **options: Any) -> float:
    """1 if the result CSV's lines equal those of the gold file (or of any gold file in a list).

    ``strict`` (default True): when False, lines are stripped first. ``ignore_case``: lower-case.
    Files are read as UTF-8 (BOM allowed), falling back to Latin-1.
    """
    golds = [expected] if isinstance(expected, str) else expected
    if not isinstance(golds, list) or not golds:
        raise MetricError(f"compare_csv: expected must be a path or a list of paths, got {expected!r:.80}")
    if not isinstance(result, str) or not os.path.isfile(result):
        return 0.0
    try:
        lines = _normalize_csv_lines(_read_lines_any_encoding(result), options)
    except OSError:
        return 0.0
    readable = 0
    for gold in golds:
        try:
            gold_lines = _normalize_csv_lines(_read_lines_any_encoding(gold), options)
        except (OSError, TypeError):  # like OSWorld, skip a gold alternative that cannot be read
            logger.warning("compare_csv: cannot read expected file %r", gold)
            continue
        readable += 1
        if lines == gold_lines:
            return 1.0
    if not readable:
        raise MetricError(f"compare_csv: none of the expected files can be read: {golds!r:.200}")
    return 0.0


def _normalize_csv_lines(lines: list[str], options: Mapping[str, Any]) -> list[str]:
    if not options.get("strict", True):
        lines = [line.strip() for line in lines]
    if options.get("ignore_case", False):
        lines = [line.lower() for line in lines]
    return lines


@metric("check_csv")
def check_csv(result: Any, rules: Any) -> float:
    """1 if each ``expect`` record pattern matches some CSV row and no ``unexpect`` one matches any.

    A pattern ``{column: value}`` matches a row (csv.DictReader) whose columns all hold those values.
    """
    rules = _rules(rules, "check_csv")
    expect, unexpect = rules.get("expect", []), rules.get("unexpect", [])
    for name, pats in (("expect", expect), ("unexpect", unexpect)):
        if not isinstance(pats, list) or not all(isinstance(p, Mapping) for p in pats):
            raise MetricError(f"check_csv.{name}: expected a list of {{column: value}} objects")
    text = _read_result_text(result)
    if text is None:
        return 0.0
    records = list(csv.DictReader(io.StringIO(text)))

    def matches(pattern: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
        return all(k in row and row[k] == v for k, v in pattern.items())

    found = all(any(matches(p, row) for row in records) for p in expect)
    clean = not any(matches(p, row) for p in unexpect for row in records)
    return float(found and clean)


def _load_json_file(path: Any, is_yaml: bool = False) -> Any:
    """Parsed JSON (or YAML) file; raises ValueError when missing or unparsable."""
    text = _read_result_text(path)
    if text is None:
        raise ValueError(f"cannot read {path!r}")
    try:
        return yaml.safe_load(text) if is_yaml else json.loads(text)
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        raise ValueError(f"cannot parse {path!r}: {e}") from e


_MISSING = object()


def _dig(data: Any, keys: Iterable[Any]) -> Any:
    """``data[k0][k1]...``, or ``_MISSING`` when a key is absent or a level cannot be indexed."""
    for key in keys:
        try:
            data = data[key]
        except (KeyError, IndexError, TypeError):
            return _MISSING
    return data


@metric("check_json")
def check_json(result: Any, rules: Any, is_yaml: bool = False) -> float:
    """Path rules on a JSON (or ``is_yaml``) file.

    ``rules = {"expect": [{"key": [k0, k1, ...], "method": m, "ref": r}], "unexpect": [...]}``: every
    ``expect`` path must exist and match (see ``_match_rule``); no ``unexpect`` path may match (a
    missing path counts as the value None).
    """
    rules = _rules(rules, "check_json")
    checks = {name: rules.get(name, []) for name in ("expect", "unexpect")}
    for name, items in checks.items():
        if not isinstance(items, list) or not all(isinstance(r, Mapping) and isinstance(r.get("key"), list)
                                                   for r in items):
            raise MetricError(f"check_json.{name}: expected a list of {{key: [...], method, ref}} objects")
    try:
        data = _load_json_file(result, is_yaml)
    except ValueError as e:
        logger.debug("check_json: %s", e)
        return 0.0
    for rule in checks["expect"]:
        value = _dig(data, rule["key"])
        if value is _MISSING or not _match_rule(value, rule, "check_json.expect"):
            return 0.0
    for rule in checks["unexpect"]:
        value = _dig(data, rule["key"])
        if _match_rule(None if value is _MISSING else value, rule, "check_json.unexpect"):
            return 0.0
    return 1.0


@metric("check_json_settings")
def check_json_settings(result: Any, expected: Any, **options: Any) -> float:
    """1 if the settings JSON file has every ``expected["expected"]`` key with an equal value."""
    want = _rules(expected, "check_json_settings", "expected")["expected"]
    if not isinstance(want, Mapping):
        raise MetricError(f"check_json_settings: expected must be an object, got {want!r:.80}")
    try:
        data = _load_json_file(result)
    except ValueError:
        return 0.0
    return float(isinstance(data, Mapping) and all(k in data and data[k] == v for k, v in want.items()))


@metric("check_json_keybindings")
def check_json_keybindings(result: Any, expected: Any, **options: Any) -> float:
    """1 if the keybindings JSON list (first line may be a ``//`` comment) holds ``expected["expected"]``."""
    want = _rules(expected, "check_json_keybindings", "expected")["expected"]
    text = _read_result_text(result)
    if text is None:
        return 0.0
    for candidate in (text, text.partition("\n")[2]):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, list):
            return float(want in data)
    return 0.0


@metric("check_direct_json_object")
def check_direct_json_object(result: Any, rules: Any) -> float:
    """Compare a JSON object (dict, or a JSON string; single quotes are read as double) to the rules.

    Default: every key of ``rules["expected"]`` must equal ``result[key]`` (lists sorted first when
    ``rules["ignore_list_order"]``). With ``rules["expect_in_result"]``: a list expected value passes
    when any element is in the result's list (or equals its string); a string passes when it is a
    substring of the result's value; other values must be equal. An expected value of
    ``"__EVALUATION_FAILED__"`` (OSWorld's marker for a gold value its getter could not compute)
    always scores 0.
    """
    rules = _rules(rules, "check_direct_json_object", "expected")
    expected = rules["expected"]
    if not isinstance(expected, Mapping):
        raise MetricError(f"check_direct_json_object: expected must be an object, got {expected!r:.80}")
    ignore_order = bool(rules.get("ignore_list_order", expected.get("ignore_list_order", False)))
    expected = {k: v for k, v in expected.items() if k != "ignore_list_order"}
    if isinstance(result, str):
        try:
            result = json.loads(result.strip().replace("'", '"'))
        except json.JSONDecodeError:
            return 0.0
    if not isinstance(result, Mapping) or "__EVALUATION_FAILED__" in expected.values():
        return 0.0
    if rules.get("expect_in_result", False):
        return float(all(_expected_in(v, result.get(k)) for k, v in expected.items()))
    return float(all(_json_equal(v, result.get(k), ignore_order) for k, v in expected.items()))


def _json_equal(want: Any, got: Any, ignore_order: bool) -> bool:
    if ignore_order and isinstance(want, list) and isinstance(got, list):
        try:
            return sorted(want) == sorted(got)
        except TypeError:
            return False
    return want == got


def _expected_in(want: Any, got: Any) -> bool:
    if isinstance(want, list):
        if isinstance(got, list):
            return any(w in got for w in want)
        return isinstance(got, str) and got in want
    if isinstance(want, str):
        return isinstance(got, str) and want in got
    return want == got


@metric("run_sqlite3")
def run_sqlite3(result: Any, rules: Any) -> float:
    """Open the result SQLite file read-only, run ``rules["sql"]``; the score is the first column of
    the first row (clipped to [0, 1]); no row, NULL, a missing file or an SQL error score 0."""
    sql = _rules(rules, "run_sqlite3", "sql")["sql"]
    if not isinstance(sql, str):
        raise MetricError(f"run_sqlite3: sql must be a string, got {sql!r:.80}")
    if not isinstance(result, str) or not os.path.isfile(result):
        return 0.0
    try:
        with closing(sqlite3.connect(f"{Path(result).resolve().as_uri()}?mode=ro", uri=True)) as conn:
            row = conn.execute(sql).fetchone()
    except sqlite3.Error as e:
        logger.debug("run_sqlite3: %s", e)
        return 0.0
    try:
        return min(1.0, max(0.0, float(row[0] or 0))) if row else 0.0
    except (TypeError, ValueError):
        return 0.0


# --------------------------------------------------------------------------------------------------
# Chrome
# --------------------------------------------------------------------------------------------------

@metric("is_expected_url_pattern_match")
def is_expected_url_pattern_match(result: Any, rules: Any) -> float:
    """1 if every regex in ``rules["expected"]`` is found (re.search) in the URL.

    ``result`` is a URL string or an active-tab dict with ``"url"``. A single regex string is
    accepted as a one-item list.
    """
    patterns = _rules(rules, "is_expected_url_pattern_match", "expected")["expected"]
    patterns = [patterns] if isinstance(patterns, str) else patterns
    compiled = [_compile(p, "is_expected_url_pattern_match") for p in _str_list(patterns, "expected")]
    url = _tab_url(result)
    return 0.0 if not url else float(all(p.search(url) for p in compiled))


def _url_rule(rule: Any, where: str, key: str) -> Any:
    rule = _rules(rule, where, "type", key)
    if rule["type"] != "url":
        raise MetricError(f"{where}: only rule type 'url' is supported, got {rule['type']!r}")
    return rule[key]


@metric("is_expected_tabs")
def is_expected_tabs(result: Any, rule: Any) -> float:
    """1 if the open tabs' URLs match ``rule["urls"]`` (``type: "url"``): same count, and every
    expected URL equals some open tab's URL after normalisation (see ``_same_url``)."""
    expected = _str_list(_url_rule(rule, "is_expected_tabs", "urls"), "is_expected_tabs.urls")
    if not isinstance(result, list) or not result:
        return 0.0
    actual = [_tab_url(tab) for tab in result]
    return float(len(actual) == len(expected) and all(any(_same_url(e, a) for a in actual) for e in expected))


@metric("is_expected_active_tab")
def is_expected_active_tab(result: Any, rule: Any) -> float:
    """1 if the active tab's URL equals ``rule["url"]`` after normalisation (``type: "url"``)."""
    expected = _url_rule(rule, "is_expected_active_tab", "url")
    url = _tab_url(result)
    return float(bool(url) and _same_url(expected, url))


@metric("is_expected_active_tab_approximate")
def is_expected_active_tab_approximate(result: Any, rule: Any) -> float:
    """1 if the active tab's URL equals ``rule["url"]`` once both query strings are dropped."""
    expected = _url_rule(rule, "is_expected_active_tab_approximate", "url")
    url = _tab_url(result)
    if not url or not isinstance(expected, str):
        return 0.0

    def strip_query(u: str) -> str:
        return urlunparse(urlparse(u)._replace(query=""))

    return float(strip_query(expected) == strip_query(url))


@metric("is_expected_search_query")
def is_expected_search_query(result: Any, rules: Any) -> float:
    """1 if ``rules["expect"]["pattern"]`` is found in the active tab's URL."""
    expect = _rules(rules, "is_expected_search_query", "expect")["expect"]
    pattern = _compile(_rules(expect, "is_expected_search_query.expect", "pattern")["pattern"],
                       "is_expected_search_query")
    url = _tab_url(result)
    return float(bool(url) and pattern.search(url) is not None)


@metric("is_expected_installed_extensions")
def is_expected_installed_extensions(result: Any, expected: Any) -> float:
    """1 if every name in ``expected["expected"]`` is among the installed extensions."""
    want = _str_list(_rules(expected, "is_expected_installed_extensions", "expected")["expected"],
                     "is_expected_installed_extensions.expected")
    if not isinstance(result, list) or not result:
        return 0.0
    return float(set(want) <= set(result))


_BOOKMARK_RULES = ("bookmark_bar_folders_names", "bookmark_bar_websites_urls", "liked_authors_websites_urls")


@metric("is_expected_bookmarks")
def is_expected_bookmarks(result: Any, rule: Any) -> float:
    """Check the bookmark bar of Chrome's ``Bookmarks`` JSON (its ``roots`` object, or the whole file).

    - ``bookmark_bar_folders_names``: the bar's folder names, as a set, equal ``rule["names"]``;
    - ``bookmark_bar_websites_urls``: the bar's URL bookmarks, as a set, equal ``rule["urls"]``;
    - ``liked_authors_websites_urls``: a bar folder named one of ``rule["names"]`` (default
      ``["Liked Authors"]``) holds exactly one URL per entry of ``rule["urls"]``, where an entry is
      a URL or a list of acceptable alternatives.
    """
    rule = _rules(rule, "is_expected_bookmarks", "type")
    kind = rule["type"]
    if kind not in _BOOKMARK_RULES:
        raise MetricError(f"is_expected_bookmarks: type must be one of {_BOOKMARK_RULES}, got {kind!r}")
    key = "names" if kind == "bookmark_bar_folders_names" else "urls"
    _rules(rule, f"is_expected_bookmarks[{kind}]", key)
    bar = _bookmark_bar(result)
    if bar is None:
        return 0.0
    if kind == "bookmark_bar_folders_names":
        return float({b.get("name") for b in bar if b.get("type") == "folder"} == set(rule["names"]))
    if kind == "bookmark_bar_websites_urls":
        return float({b.get("url") for b in bar if b.get("type") == "url"} == set(rule["urls"]))
    return _liked_authors(bar, rule)


def _bookmark_bar(bookmarks: Any) -> list[Mapping[str, Any]] | None:
    if not isinstance(bookmarks, Mapping) or not bookmarks:
        return None
    roots = bookmarks.get("roots", bookmarks)
    children = _dig(roots, ["bookmark_bar", "children"])
    if not isinstance(children, list):
        return None
    return [c for c in children if isinstance(c, Mapping)]


def _liked_authors(bar: list[Mapping[str, Any]], rule: Mapping[str, Any]) -> float:
    names = rule.get("names", ["Liked Authors"])
    folder = next((b for b in bar if b.get("type") == "folder" and b.get("name") in names), None)
    if folder is None:
        return 0.0
    children = [c for c in folder.get("children", []) if isinstance(c, Mapping)]
    urls = {c.get("url") for c in children if c.get("type") == "url"}
    choices = [[u] if isinstance(u, str) else list(u) for u in rule["urls"]]
    return float(any(set(combo) == urls for combo in product(*choices)))


# --------------------------------------------------------------------------------------------------
# Accessibility tree
# --------------------------------------------------------------------------------------------------

def _a11y_namespaces(osname: str) -> dict[str, str]:
    base = f"https://accessibility.{osname}.example.org/ns"
    names = {"st": "state", "attr": "attributes", "cp": "component", "doc": "document", "txt": "text",
             "val": "value", "act": "action"}
    extra = {"ubuntu": {"docattr": "document/attributes"},
             "windows": {"docattr": "document/attributes", "class": "class"},
             "macos": {"role": "role"}}[osname]
    return {prefix: f"{base}/{path}" for prefix, path in (names | extra).items()}


def _a11y_select(tree: Any, rule: Mapping[str, Any], ns: dict[str, str]) -> list[Any]:
    """Elements chosen by the rule's ``xpath`` (preferred) or CSS ``selectors``."""
    try:
        import lxml.etree as LET
    except ImportError:
        LET = None
    if "xpath" in rule:
        if LET is None:
            return _etree_xpath(tree, rule["xpath"], ns)
        try:
            found = tree.xpath(rule["xpath"], namespaces=ns)
        except LET.XPathError as e:
            raise MetricError(f"check_accessibility_tree: bad xpath {rule['xpath']!r}: {e}") from e
        if not isinstance(found, list):
            raise MetricError(f"check_accessibility_tree: xpath {rule['xpath']!r} must select elements")
        return found
    try:
        from lxml.cssselect import CSSSelector
    except ImportError as e:
        raise MetricError("check_accessibility_tree: CSS 'selectors' need lxml and cssselect") from e
    try:  # cssselect's errors subclass SyntaxError (parsing) or RuntimeError (untranslatable)
        return list(CSSSelector(", ".join(rule["selectors"]), namespaces=ns)(tree))
    except (SyntaxError, RuntimeError) as e:
        raise MetricError(f"check_accessibility_tree: bad selectors {rule['selectors']!r}: {e}") from e


def _etree_xpath(root: ET.Element, xpath: str, ns: dict[str, str]) -> list[ET.Element]:
    """The subset of XPath that xml.etree understands.

    Absolute paths ("/a/b", "//b") start from a wrapper around the root, as XPath's document node
    does; relative ones start from the root element, as lxml's ``root.xpath`` does.
    """
    document = ET.Element("document")
    document.append(root)
    start, path = (document, "." + xpath) if xpath.startswith("/") else (root, xpath)
    try:
        return start.findall(path, ns)
    except (SyntaxError, KeyError) as e:
        raise MetricError(f"check_accessibility_tree: xpath {xpath!r} needs lxml ({e})") from e


@metric("check_accessibility_tree")
def check_accessibility_tree(result: Any, rules: Any, osname: str = "ubuntu") -> float:
    """Score the accessibility-tree XML against a list of element rules; the product of rule scores.

    Each rule: ``xpath`` (or CSS ``selectors``, joined with ", ") picks elements, none found -> 0;
    with ``text``, the rule scores 1 if some element's own text equals it (``exact``, default True)
    or else the best similarity ratio of the texts; without ``text`` it scores 1. Namespace prefixes
    (``st:``, ``attr:``, ...) are those of OSWorld's tree for ``osname``. Uses lxml when installed,
    otherwise xml.etree's XPath subset (no functions such as ``contains()``).
    """
    if osname not in ("ubuntu", "windows", "macos"):
        raise MetricError(f"check_accessibility_tree: osname must be ubuntu/windows/macos, got {osname!r}")
    if not isinstance(rules, list) or not rules:
        raise MetricError("check_accessibility_tree: rules must be a non-empty list of objects")
    for r in rules:
        if not isinstance(r, Mapping) or not ("xpath" in r or "selectors" in r):
            raise MetricError(f"check_accessibility_tree: a rule needs 'xpath' or 'selectors', got {r!r:.80}")
        if "xpath" in r and not isinstance(r["xpath"], str):
            raise MetricError(f"check_accessibility_tree: xpath must be a string, got {r['xpath']!r:.80}")
        if "xpath" not in r:
            _str_list(r["selectors"], "check_accessibility_tree.selectors")
    tree = _parse_a11y(result)
    if tree is None:
        return 0.0
    ns = _a11y_namespaces(osname)
    score = 1.0
    for rule in rules:
        elements = _a11y_select(tree, rule, ns)
        if not elements:
            return 0.0
        if "text" in rule:
            score *= max(_a11y_text_score(getattr(e, "text", None), rule) for e in elements)
    return score


def _a11y_text_score(text: str | None, rule: Mapping[str, Any]) -> float:
    if rule.get("exact", True):
        return float(text == rule["text"])
    return similarity(text, str(rule["text"])) if text else 0.0


def _parse_a11y(xml: Any) -> Any:
    if not isinstance(xml, str | bytes) or not xml:
        return None
    try:
        import lxml.etree as LET
    except ImportError:
        try:
            return ET.fromstring(xml)
        except ET.ParseError:
            return None
    try:
        return LET.fromstring(xml.encode() if isinstance(xml, str) else xml)
    except LET.XMLSyntaxError:
        return None


# --------------------------------------------------------------------------------------------------
# Spreadsheets: compare_table
# --------------------------------------------------------------------------------------------------

# rule type -> keys it requires
_TABLE_RULES: dict[str, tuple[str, ...]] = {
    "sheet_name": (),
    "sheet_data": ("sheet_idx0", "sheet_idx1"),
    "sheet_print": ("sheet_idx0", "sheet_idx1"),
    "sheet_fuzzy": ("sheet_idx0", "sheet_idx1", "rules"),
    "freeze": ("sheet_idx0", "sheet_idx1"),
    "zoom": ("sheet_idx", "method", "ref"),
    "check_cell": ("sheet_idx", "coordinate", "props"),
}
_CELL_STYLES = frozenset({"number_format", "font_name", "font_family", "font_color", "font_bold",
                          "font_italic", "font_underline", "font_size", "fill_type", "bgcolor", "fgcolor",
                          "hyperlink", "merge"})
_FUZZY_TYPES = ("includes", "included_by", "fuzzy_match", "exact_match")
_COORDINATE = re.compile(r"^[A-Z]{1,3}[1-9][0-9]*$")


class _Book:
    """One workbook (.xlsx via openpyxl, or a .csv read as a single sheet named after the file)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.is_csv = path.lower().endswith(".csv")
        if self.is_csv:
            rows = list(csv.reader(io.StringIO(_read_text_any_encoding(path), newline="")))
            self._csv_rows = [[_csv_cell(c) for c in row] for row in rows]
            self.sheet_names = [Path(path).stem]
        else:
            import openpyxl

            self._values = openpyxl.load_workbook(path, data_only=True)
            self.sheet_names = list(self._values.sheetnames)
        self._styled: Any = None

    def has(self, sheet: str) -> bool:
        return sheet in self.sheet_names

    def grid(self, sheet: str) -> list[list[Any]]:
        """Cell values row by row, trailing empty cells and rows trimmed."""
        if self.is_csv:
            rows = self._csv_rows
        else:  # pandas (OSWorld's reader) reads an empty-string cell as missing, like an empty cell
            cells = self._values[sheet].iter_rows(values_only=True)
            rows = [[None if v == "" else v for v in r] for r in cells]
        trimmed = [_rstrip_none(r) for r in rows]
        while trimmed and not trimmed[-1]:
            trimmed.pop()
        return trimmed

    def printed(self, sheet: str) -> list[str]:
        """The sheet as CSV lines: LibreOffice's ``<book>-<sheet>.csv`` export if it exists."""
        export = f"{os.path.splitext(self.path)[0]}-{sheet}.csv"
        if self.is_csv:
            lines = _read_lines_any_encoding(self.path)
        elif os.path.isfile(export):
            lines = _read_lines_any_encoding(export)
        else:
            lines = [_render_row(row) for row in self.grid(sheet)]
        lines = [line.strip() for line in lines]
        while lines and not lines[-1]:
            lines.pop()
        return lines

    def cell_value(self, sheet: str, coordinate: str) -> Any:
        """A cell's value as OSWorld's read_cell_value gives it: numbers (and dates) as float."""
        if self.is_csv:
            from openpyxl.utils import coordinate_to_tuple

            row, col = coordinate_to_tuple(coordinate)
            cells = self._csv_rows[row - 1] if row <= len(self._csv_rows) else []
            value = cells[col - 1] if col <= len(cells) else None
        else:
            value = self._values[sheet][coordinate].value
        return _cell_number(value, None if self.is_csv else self._values.epoch)

    def worksheet(self, sheet: str) -> Any:
        """The openpyxl worksheet with styles (formulas, not cached values)."""
        if self.is_csv:
            raise MetricError("compare_table: style, freeze and zoom rules need an .xlsx workbook, not CSV")
        if self._styled is None:
            import openpyxl

            self._styled = openpyxl.load_workbook(self.path)
        return self._styled[sheet]


_DECIMAL = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def _csv_cell(text: str) -> Any:
    """A CSV field as a spreadsheet would read it: empty -> None, decimal numbers -> int/float."""
    if text == "":
        return None
    if not _DECIMAL.match(text):
        return text
    number = float(text)
    return int(text) if text.lstrip("+-").isdigit() else number


def _rstrip_none(row: list[Any]) -> list[Any]:
    end = len(row)
    while end and row[end - 1] is None:
        end -= 1
    return row[:end]


def _render_row(row: list[Any]) -> str:
    def text(v: Any) -> str:
        if v is None:
            return ""
        if isinstance(v, bool):
            return "TRUE" if v else "FALSE"
        if isinstance(v, float) and v.is_integer():
            return str(int(v))
        return str(v)

    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow([text(v) for v in row])
    return out.getvalue()


def _cell_number(value: Any, epoch: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dt.datetime | dt.date | dt.time | dt.timedelta):
        from openpyxl.utils.datetime import CALENDAR_WINDOWS_1900, to_excel

        return float(to_excel(value, epoch or CALENDAR_WINDOWS_1900))
    return value


def _cell_style(ws: Any, coordinate: str, prop: str) -> Any:
    """OSWorld's _read_cell_style for one cell; font props are None on empty cells."""
    cell = ws[coordinate]
    if prop == "merge":
        from openpyxl.cell.cell import MergedCell

        return isinstance(cell, MergedCell)
    if prop in ("fill_type", "bgcolor", "fgcolor"):
        fill = cell.fill
        return getattr(fill, "tagname", None) if prop == "fill_type" else getattr(fill.fgColor, "rgb", None)
    if cell.value is None:
        return None
    if prop == "number_format":
        return cell.number_format if cell.data_type == "n" else None
    if prop == "hyperlink":
        return cell.hyperlink.target if cell.hyperlink is not None else ""
    font = cell.font
    if prop == "font_color":
        return font.color.rgb if font.color is not None else None
    return getattr(font, {"font_name": "name", "font_family": "family", "font_bold": "bold",
                          "font_italic": "italic", "font_underline": "underline",
                          "font_size": "size"}[prop])


def _check_table_rules(rules: Any, has_expected: bool) -> list[Mapping[str, Any]]:
    if not isinstance(rules, list) or not rules:
        raise MetricError("compare_table: options['rules'] must be a non-empty list of rule objects")
    for i, rule in enumerate(rules):
        where = f"compare_table.rules[{i}]"
        rule = _rules(rule, where, "type")
        if rule["type"] not in _TABLE_RULES:
            raise MetricError(f"{where}: unsupported rule type {rule['type']!r}; "
                              f"supported: {sorted(_TABLE_RULES)}")
        _rules(rule, f"{where} ({rule['type']})", *_TABLE_RULES[rule["type"]])
        if rule["type"] == "sheet_name" and not has_expected:
            raise MetricError(f"{where}: sheet_name needs an expected workbook")
        for key in ("sheet_idx", "sheet_idx0", "sheet_idx1"):
            if key in rule:
                _check_sheet_idx(rule[key], has_expected, f"{where}.{key}")
        if rule["type"] == "check_cell":
            if not isinstance(rule["coordinate"], str) or not _COORDINATE.match(rule["coordinate"]):
                raise MetricError(f"{where}: coordinate must look like 'E3', got {rule['coordinate']!r}")
            _check_cell_props(rule["props"], where)
        if rule["type"] == "sheet_fuzzy":
            _check_fuzzy_rules(rule["rules"], where)
    return rules


def _check_sheet_idx(idx: Any, has_expected: bool, where: str) -> None:
    if isinstance(idx, int) and not isinstance(idx, bool):
        return
    if not isinstance(idx, str) or idx[:2] not in ("RI", "RN", "EI", "EN"):
        raise MetricError(f"{where}: sheet index must be an int or 'RI<n>'/'RN<name>'/'EI<n>'/'EN<name>', "
                          f"got {idx!r}")
    if idx[1] == "I" and not idx[2:].isdigit():
        raise MetricError(f"{where}: {idx!r} needs a number after {idx[:2]!r}")
    if idx[0] == "E" and not has_expected:
        raise MetricError(f"{where}: {idx!r} refers to the expected workbook but the task has none")


def _check_cell_props(props: Any, where: str) -> None:
    if not isinstance(props, Mapping) or not props:
        raise MetricError(f"{where}: check_cell props must be a non-empty object")
    for prop, rule in props.items():
        if prop != "value" and prop not in _CELL_STYLES:
            raise MetricError(f"{where}: unsupported cell prop {prop!r}; "
                              f"supported: value, {sorted(_CELL_STYLES)}")
        _rules(rule, f"{where}.props.{prop}", "method", "ref")


def _check_fuzzy_rules(rules: Any, where: str) -> None:
    if not isinstance(rules, list) or not rules:
        raise MetricError(f"{where}: sheet_fuzzy rules must be a non-empty list")
    for rl in rules:
        rl = _rules(rl, f"{where}.rules", "range", "type")
        if rl["type"] not in _FUZZY_TYPES:
            raise MetricError(f"{where}: sheet_fuzzy type must be one of {_FUZZY_TYPES}, got {rl['type']!r}")


def _resolve_sheet(idx: int | str, result: _Book, expected: _Book | None) -> tuple[_Book, str] | None:
    """(book, sheet name) for OSWorld's sheet index: int / "RI<n>" / "RN<name>" / "EI<n>" / "EN<name>".

    None when the sheet does not exist (the agent deleted or renamed it).
    """
    if isinstance(idx, int):
        book, key = result, idx
    else:
        book = result if idx[0] == "R" else expected
        key = int(idx[2:]) if idx[1] == "I" else idx[2:]
    assert book is not None  # E* indexes were rejected up front when there is no expected book
    if isinstance(key, int):
        return (book, book.sheet_names[key]) if 0 <= key < len(book.sheet_names) else None
    return (book, key) if book.has(key) else None


def _rounded(grid: list[list[Any]], digits: int) -> list[list[Any]]:
    return [[round(v, digits) if isinstance(v, float) else v for v in row] for row in grid]


def _fuzzy_cells(a: str, b: str, rl: Mapping[str, Any]) -> bool:
    for old, new in rl.get("normalization", []):
        a, b = a.replace(old, new), b.replace(old, new)
    if "trim_leadings" in rl:
        a, b = a.lstrip(rl["trim_leadings"]), b.lstrip(rl["trim_leadings"])
    if "trim_trailings" in rl:
        a, b = a.rstrip(rl["trim_trailings"]), b.rstrip(rl["trim_trailings"])
    if "ignore_chars" in rl:
        drop = set(rl["ignore_chars"])
        a, b = "".join(c for c in a if c not in drop), "".join(c for c in b if c not in drop)
    if rl.get("ignore_case", False):
        a, b = a.lower(), b.lower()
    kind = rl["type"]
    if kind == "includes":
        return b in a
    if kind == "included_by":
        return a in b
    if kind == "fuzzy_match":
        return similarity(a, b) * 100 >= rl.get("threshold", 85.0)
    return a == b


def _range_coordinates(spec: Any) -> list[str]:
    from openpyxl.utils import get_column_letter
    from openpyxl.worksheet.cell_range import CellRange

    ranges = spec.split() if isinstance(spec, str) else list(spec)
    try:
        return [f"{get_column_letter(c)}{r}" for rng in ranges for r, c in CellRange(rng).cells]
    except (TypeError, ValueError) as e:
        raise MetricError(f"compare_table: bad sheet_fuzzy range {spec!r}: {e}") from e


def _freeze_key(ws: Any) -> tuple[Any, ...]:
    """Frozen row/column counts; topLeftCell alone moves when the user scrolls, so it is not used."""
    pane = ws.sheet_view.pane
    if pane is None:
        return ("none",)
    state = (pane.state or "").lower()
    key = (int(pane.xSplit or 0), int(pane.ySplit or 0))
    return ("frozen", *key) if state in ("frozen", "frozensplit") else ("other", *key, pane.topLeftCell)


def _table_rule_passes(rule: Mapping[str, Any], result: _Book, expected: _Book | None) -> bool:
    kind = rule["type"]
    if kind == "sheet_name":
        return expected is not None and result.sheet_names == expected.sheet_names
    if kind in ("zoom", "check_cell"):
        target = _resolve_sheet(rule["sheet_idx"], result, expected)
        if target is None:
            return False
        if kind == "zoom":
            zoom = target[0].worksheet(target[1]).sheet_view.zoomScale or 100.0
            return _match_rule(zoom, rule, "compare_table.zoom")
        return _cell_passes(rule, *target)
    first = _resolve_sheet(rule["sheet_idx0"], result, expected)
    second = _resolve_sheet(rule["sheet_idx1"], result, expected)
    if first is None or second is None:
        return False
    (book0, sheet0), (book1, sheet1) = first, second
    if kind == "sheet_data":
        digits = int(rule.get("precision", 4))
        return _rounded(book0.grid(sheet0), digits) == _rounded(book1.grid(sheet1), digits)
    if kind == "sheet_print":
        lines0, lines1 = book0.printed(sheet0), book1.printed(sheet1)
        if rule.get("ignore_case", False):
            lines0, lines1 = [s.lower() for s in lines0], [s.lower() for s in lines1]
        return lines0 == lines1
    if kind == "freeze":
        return _freeze_key(book0.worksheet(sheet0)) == _freeze_key(book1.worksheet(sheet1))
    return all(_fuzzy_cells(str(book0.cell_value(sheet0, c)), str(book1.cell_value(sheet1, c)), rl)
               for rl in rule["rules"] for c in _range_coordinates(rl["range"]))


def _cell_passes(rule: Mapping[str, Any], book: _Book, sheet: str) -> bool:
    coordinate = rule["coordinate"]
    for prop, prop_rule in rule["props"].items():
        try:
            value = (book.cell_value(sheet, coordinate) if prop == "value"
                     else _cell_style(book.worksheet(sheet), coordinate, prop))
        except (ValueError, IndexError, AttributeError) as e:
            raise MetricError(f"compare_table.check_cell: cannot read {prop} of {coordinate!r}: {e}") from e
        if not _match_rule(value, prop_rule, f"compare_table.check_cell.{prop}"):
            return False
    return True


def _open_book(path: Any) -> _Book | None:
    if not isinstance(path, str) or not os.path.isfile(path):
        return None
    try:
        return _Book(path)
    except Exception as e:  # openpyxl raises many types (zipfile, KeyError, lxml) on a corrupt file
        logger.debug("compare_table: cannot open %s: %s", path, e)
        return None


@metric("compare_table", check=lambda options, has_expected: _check_table_rules(options.get("rules"), has_expected))
def compare_table(result: Any, expected: Any = None, **options: Any) -> float:
    """1 if every rule in ``options["rules"]`` holds, checked in order (OSWorld's compare_table).

    Sheets are named by index: an int or ``"RI<n>"`` (result's n-th sheet), ``"RN<name>"``,
    ``"EI<n>"`` / ``"EN<name>"`` (the expected workbook). Rule types:

    - ``sheet_name``: both workbooks have the same sheet names in the same order;
    - ``sheet_data``: ``sheet_idx0`` and ``sheet_idx1`` hold equal values (floats rounded to
      ``precision`` digits, default 4; trailing empty rows/columns ignored);
    - ``sheet_print``: equal as printed CSV lines (``ignore_case`` optional);
    - ``sheet_fuzzy``: per range, cell texts compared by ``includes``/``included_by``/
      ``exact_match``/``fuzzy_match`` (``threshold`` 0-100, default 85) after optional
      ``normalization``, ``trim_leadings``, ``trim_trailings``, ``ignore_chars``, ``ignore_case``;
    - ``freeze``: same frozen rows/columns; ``zoom``: zoom scale matches ``method``/``ref``;
    - ``check_cell``: the ``coordinate`` cell of ``sheet_idx`` satisfies each ``props`` rule
      ``{prop: {"method", "ref"}}`` for ``value`` or a style prop (see ``_CELL_STYLES``).

    Inputs may be .xlsx (openpyxl; formulas read as their cached values) or .csv files.
    """
    rules = _check_table_rules(options.get("rules"), expected is not None)
    gold: _Book | None = None
    if expected is not None:
        gold = _open_book(expected)
        if gold is None:
            raise MetricError(f"compare_table: cannot open expected workbook {expected!r}")
    book = _open_book(result)
    if book is None:
        return 0.0
    return float(all(_table_rule_passes(rule, book, gold) for rule in rules))


# --------------------------------------------------------------------------------------------------
# Infeasible tasks
# --------------------------------------------------------------------------------------------------

@metric("infeasible")
def infeasible(*_: Any, **__: Any) -> float:
    """Always 0.0: the evaluator scores infeasible tasks itself (1 iff the agent's last action is FAIL)."""
    return 0.0

