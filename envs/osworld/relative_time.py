"""OSWorld's ``rule_relativeTime`` getter: relative dates in a task's expected values.

A task that books "a car from next Monday to next Friday" cannot store the dates, so its
expected rules say ``{"relativeTime": {"from": "next Monday", "to": "next Friday"},
"expected": {"from": "{Year}-{Month0D}-{Day0D}", ...}}`` and the getter fills the templates
with the dates resolved against the evaluation day.

Words (OSWorld's, matched case-insensitively): ``tomorrow``, ``this month``, ``Nth next month``
(``5th``, ``10th``, ``11th``, ... of next month), ``this <weekday>`` (this week's, even if past),
``next <weekday>`` (the first one after today; as ``to`` after a ``next <weekday>`` ``from``, the
first one after that day: next Monday .. next Friday is one working week), ``next week
<weekday>``, ``first <weekday> <N> months later`` (N in digits or words), each optionally
followed by `` split`` (the date goes into split keys, see below). Ours on top: ``today``,
``yesterday``, ``N days ago``, ``N days later``, ``next month`` (its 1st).

Where the dates go (OSWorld's rule): with only ``from``, into ``expected["time"]`` (a string or a
list of strings; ours: ``expected`` itself may be a string); with ``from`` and ``to``, into
``expected["from"]`` and ``expected["to"]``, or for a `` split`` word into ``puDay``/``puMonth``/
``puYear`` (from) and ``doDay``/``doMonth``/``doYear`` (to). Placeholders (OSWorld's set): ``{Year}``,
``{Month}`` (Jan), ``{MonthFull}`` (January), ``{month}`` (january), ``{MonthD}`` (1),
``{Month0D}`` (01), ``{DayD}`` (5), ``{Day0D}`` (05), ``{DoW}`` (Mon).

"Today" is the evaluation day in ``rules["timezone"]`` when given (an unknown zone falls back to
UTC, as in OSWorld), otherwise in the local time zone (the sandbox shares this machine's clock).

Deliberate differences from OSWorld's code, which matches each phrase by string: every phrase
of a family works (any weekday, any day of next month, any number of months), where OSWorld
raises ``KeyError`` on a phrase outside its table; ``first <weekday> N months later`` is right in
every month (OSWorld's ``(month + N) % 12`` gives month 0 in some months and raises); a
placeholder that occurs twice is replaced twice (OSWorld replaces the first only). Anything
this grammar cannot resolve raises :class:`RelativeTimeError` naming the phrase, and
``vagen osworld check`` reports it before a run.
"""

from __future__ import annotations

import copy
import datetime as dt
import logging
import re
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

log = logging.getLogger(__name__)

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {w: i for i, w in enumerate(("zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                                         "nine", "ten", "eleven", "twelve"))}
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
PLACEHOLDERS = ("{Year}", "{Month}", "{MonthFull}", "{month}", "{MonthD}", "{Month0D}", "{DayD}", "{Day0D}",
                "{DoW}")
_TOKEN = re.compile(r"\{[A-Za-z0-9]+\}")
_SPLIT_KEYS = {"from": ("puDay", "puMonth", "puYear"), "to": ("doDay", "doMonth", "doYear")}
_WD = "|".join(WEEKDAYS)


class RelativeTimeError(ValueError):
    """A relativeTime rule this grammar cannot resolve (the message names the phrase or key)."""


def _add_months(day: dt.date, n: int) -> tuple[int, int]:
    k = day.month - 1 + n
    return day.year + k // 12, k % 12 + 1


def _after(day: dt.date, weekday: int) -> dt.date:
    """The first ``weekday`` strictly after ``day``."""
    return day + dt.timedelta(days=(weekday - day.weekday() - 1) % 7 + 1)


def resolve_day(phrase: str, today: dt.date, after: dt.date | None = None) -> dt.date:
    """The date ``phrase`` means on ``today``; ``after`` is the resolved ``from`` when this is a ``to``
    (a ``next <weekday>`` pair is then one range: the ``to`` is the first such day after ``from``)."""
    s = " ".join(phrase.strip().lower().split())
    s = s.removesuffix(" split")
    fixed = {"today": 0, "yesterday": -1, "tomorrow": 1}
    if s in fixed:
        return today + dt.timedelta(days=fixed[s])
    if s == "this month":
        return today
    if s == "next month":
        y, m = _add_months(today, 1)
        return dt.date(y, m, 1)
    if m := re.fullmatch(r"(\d+) days? (ago|later)", s):
        n = int(m.group(1))
        return today + dt.timedelta(days=-n if m.group(2) == "ago" else n)
    if m := re.fullmatch(r"(\d+)(?:st|nd|rd|th) next month", s):
        y, mo = _add_months(today, 1)
        try:
            return dt.date(y, mo, int(m.group(1)))
        except ValueError:
            raise RelativeTimeError(f"relativeTime {phrase!r}: next month ({y}-{mo:02d}) has no day "
                                    f"{m.group(1)}") from None
    if m := re.fullmatch(rf"this ({_WD})", s):
        return today + dt.timedelta(days=WEEKDAYS.index(m.group(1)) - today.weekday())
    if m := re.fullmatch(rf"next ({_WD})", s):
        return _after(after or today, WEEKDAYS.index(m.group(1)))
    if m := re.fullmatch(rf"next week ({_WD})", s):
        return today + dt.timedelta(days=7 - today.weekday() + WEEKDAYS.index(m.group(1)))
    if m := re.fullmatch(rf"first ({_WD}) (\w+) months? later", s):
        word = m.group(2)
        n = int(word) if word.isdigit() else _NUMBERS.get(word)
        if n is not None:
            y, mo = _add_months(today, n)
            first = dt.date(y, mo, 1)
            return first + dt.timedelta(days=(WEEKDAYS.index(m.group(1)) - first.weekday()) % 7)
    raise RelativeTimeError(f"relativeTime {phrase!r} is not a phrase this evaluator knows (see "
                            "envs/osworld/relative_time.py for the grammar)")


def format_day(template: str, day: dt.date) -> str:
    """``template`` with OSWorld's date placeholders filled in; an unknown ``{Token}`` raises."""
    unknown = sorted(set(_TOKEN.findall(template)) - set(PLACEHOLDERS))
    if unknown:
        raise RelativeTimeError(f"unknown date placeholder(s) {', '.join(unknown)} in {template!r} "
                                f"(known: {' '.join(PLACEHOLDERS)})")
    name = _MONTHS[day.month - 1]
    subs = {"{Year}": str(day.year), "{Month}": name[:3], "{MonthFull}": name, "{month}": name.lower(),
            "{MonthD}": str(day.month), "{Month0D}": f"{day.month:02d}", "{DayD}": str(day.day),
            "{Day0D}": f"{day.day:02d}", "{DoW}": WEEKDAYS[day.weekday()][:3].capitalize()}
    return _TOKEN.sub(lambda m: subs[m.group(0)], template)


def _fill(value: Any, day: dt.date, where: str) -> Any:
    if isinstance(value, str):
        return format_day(value, day)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [format_day(v, day) for v in value]
    raise RelativeTimeError(f"{where} must be a date template string (or a list of them), got {value!r:.80}")


def today_in(rules: dict) -> dt.date:
    """The evaluation day for these rules (their ``timezone``, else local time)."""
    tz = rules.get("timezone")
    if tz:
        try:
            return dt.datetime.now(ZoneInfo(str(tz))).date()
        except (ZoneInfoNotFoundError, ValueError):
            log.warning("rule_relativeTime: unknown timezone %r, using UTC (as OSWorld does)", tz)
            return dt.datetime.now(dt.UTC).date()
    return dt.date.today()


def resolve_rules(rules: Any, today: dt.date | None = None) -> dict:
    """A copy of ``rules`` with the expected date templates filled for ``today``."""
    if not isinstance(rules, dict):
        raise RelativeTimeError(f"rules must be an object, got {rules!r:.80}")
    rel = rules.get("relativeTime")
    if not isinstance(rel, dict) or not isinstance(rel.get("from"), str):
        raise RelativeTimeError(f"rules.relativeTime must be an object with a 'from' phrase, got {rel!r:.80}")
    if "to" in rel and not isinstance(rel["to"], str):
        raise RelativeTimeError(f"rules.relativeTime.to must be a phrase, got {rel['to']!r:.80}")
    if set(rel) - {"from", "to"}:
        raise RelativeTimeError(f"rules.relativeTime: unknown key(s) {sorted(set(rel) - {'from', 'to'})}")
    out = copy.deepcopy(rules)
    today = today or today_in(rules)
    expected = out.get("expected")
    start = resolve_day(rel["from"], today)
    if "to" not in rel:
        if isinstance(expected, str):  # ours: the whole expected value is the template
            out["expected"] = format_day(expected, start)
        elif isinstance(expected, dict) and "time" in expected:
            expected["time"] = _fill(expected["time"], start, "rules.expected.time")
        else:
            raise RelativeTimeError("rules.relativeTime with only 'from' fills rules.expected.time (or a "
                                    f"template string as rules.expected), got expected={expected!r:.80}")
        return out
    from_next = re.fullmatch(rf"next ({_WD})( split)?", " ".join(rel["from"].lower().split())) is not None
    end = resolve_day(rel["to"], today, after=start if from_next else None)
    if not isinstance(expected, dict):
        raise RelativeTimeError(f"rules.relativeTime with 'to' fills keys of rules.expected, got {expected!r:.80}")
    for part, day in (("from", start), ("to", end)):
        keys = _SPLIT_KEYS[part] if rel[part].strip().lower().endswith(" split") else (part,)
        for key in keys:
            if key not in expected:
                raise RelativeTimeError(f"rules.expected needs {key!r} for relativeTime.{part} {rel[part]!r}")
            expected[key] = _fill(expected[key], day, f"rules.expected.{key}")
    return out
