"""rule_relativeTime: OSWorld's phrases resolved on fixed days (hand-computed from OSWorld's rules)."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from envs.osworld.relative_time import RelativeTimeError, format_day, resolve_day, resolve_rules

D = dt.date
WED, SUN, MON, FRI = D(2026, 12, 9), D(2026, 12, 13), D(2026, 12, 7), D(2026, 12, 11)


@pytest.mark.parametrize("today, phrase, day", [
    (WED, "tomorrow", D(2026, 12, 10)),
    (WED, "next Monday", D(2026, 12, 14)),
    (MON, "next Monday", D(2026, 12, 14)),  # today is Monday: a week on
    (SUN, "next Monday", D(2026, 12, 14)),
    (WED, "next Friday", D(2026, 12, 11)),  # this week's, still ahead
    (FRI, "next Friday", D(2026, 12, 18)),
    (SUN, "next Friday", D(2026, 12, 18)),
    (WED, "next Saturday", D(2026, 12, 12)),
    (SUN, "next Saturday", D(2026, 12, 19)),
    (WED, "next Sunday", D(2026, 12, 13)),
    (SUN, "next Sunday", D(2026, 12, 20)),
    (WED, "this Saturday", D(2026, 12, 12)),
    (SUN, "this Saturday", D(2026, 12, 12)),  # this week's, already past
    (WED, "this Sunday", D(2026, 12, 13)),
    (WED, "next week Friday", D(2026, 12, 18)),
    (WED, "next week Saturday", D(2026, 12, 19)),
    (SUN, "next week Sunday", D(2026, 12, 20)),
    (WED, "5th next month", D(2027, 1, 5)),
    (D(2026, 11, 30), "10th next month", D(2026, 12, 10)),
    (WED, "11th next month", D(2027, 1, 11)),
    (WED, "this month", WED),
    (WED, "first monday four months later", D(2027, 4, 5)),
    (WED, "first monday eight months later", D(2027, 8, 2)),
    (D(2026, 8, 20), "first monday four months later", D(2026, 12, 7)),  # OSWorld's code asks for month 0 here
    (WED, "next Monday split", D(2026, 12, 14)),
    (WED, "today", WED), (WED, "yesterday", D(2026, 12, 8)),
    (WED, "3 days ago", D(2026, 12, 6)), (WED, "30 days later", D(2027, 1, 8)),
    (WED, "next month", D(2027, 1, 1)),
])
def test_phrases(today, phrase, day):
    assert resolve_day(phrase, today) == day


def test_ranges_and_split_keys():
    rules = {"relativeTime": {"from": "next Monday split", "to": "next Friday split"},
             "expected": {"puDay": "{DayD}", "puMonth": "{MonthD}", "puYear": "{Year}", "doDay": "{DayD}",
                          "doMonth": "{MonthD}", "doYear": "{Year}", "city": "Zürich"}}
    got = resolve_rules(rules, WED)["expected"]
    assert got == {"puDay": "14", "puMonth": "12", "puYear": "2026", "doDay": "18", "doMonth": "12",
                   "doYear": "2026", "city": "Zürich"}
    assert rules["expected"]["puDay"] == "{DayD}"  # the task's rules are not modified
    weekend = {"relativeTime": {"from": "next Friday", "to": "next Sunday"},
               "expected": {"from": "{DoW}, {Month} {DayD}", "to": "{DoW}, {Month} {DayD}"}}
    assert resolve_rules(weekend, SUN)["expected"] == {"from": "Fri, Dec 18", "to": "Sun, Dec 20"}
    assert resolve_rules(weekend, WED)["expected"] == {"from": "Fri, Dec 11", "to": "Sun, Dec 13"}
    stay = {"relativeTime": {"from": "10th next month", "to": "11th next month"},
            "expected": {"from": "{MonthFull} {Day0D}", "to": "{MonthFull} {Day0D}"}}
    assert resolve_rules(stay, WED)["expected"] == {"from": "January 10", "to": "January 11"}
    one = {"relativeTime": {"from": "next Monday"}, "expected": {"time": ["{Year}-{Month0D}-{Day0D}"], "x": "{Year}"}}
    assert resolve_rules(one, WED)["expected"] == {"time": ["2026-12-14"], "x": "{Year}"}  # only time is filled


def test_formats():
    day = D(2027, 1, 5)
    assert format_day("{DoW}, {Month} {Day0D}, {Year}", day) == "Tue, Jan 05, 2027"
    assert format_day("{month}-weather {MonthFull} {MonthD}/{Month0D} {DayD}", day) == \
        "january-weather January 1/01 5"
    assert format_day("{Year} {Year}", day) == "2027 2027"
    assert format_day("no placeholders {", day) == "no placeholders {"


@pytest.mark.parametrize("rules, match", [
    ({"relativeTime": {"from": "someday"}, "expected": {"time": "{Year}"}}, "'someday' is not a phrase"),
    ({"relativeTime": {"from": "31st next month"}, "expected": {"time": "{Year}"}}, "has no day 31"),
    ({"relativeTime": {"from": "tomorrow"}, "expected": {"time": "{Hour}"}}, r"unknown date placeholder\(s\) \{Hour\}"),
    ({"relativeTime": {"from": "tomorrow"}, "expected": {"date": "{Year}"}}, "expected.time"),
    ({"relativeTime": {"from": "next Monday", "to": "next Friday"}, "expected": {"from": "{Year}"}}, "needs 'to'"),
    ({"relativeTime": {"from": "next Monday split", "to": "next Friday"}, "expected": {"from": "x", "to": "y"}},
     "needs 'puDay'"),
    ({"relativeTime": {"to": "tomorrow"}, "expected": {"time": "{Year}"}}, "'from' phrase"),
    ({"relativeTime": {"from": "tomorrow", "until": "x"}, "expected": {"time": "{Year}"}}, "unknown key"),
    ({"relativeTime": {"from": "tomorrow"}, "expected": {"time": 5}}, "template string"),
])
def test_errors_name_the_problem(rules, match):
    with pytest.raises(RelativeTimeError, match=match):
        resolve_rules(rules, D(2027, 1, 20))  # next month is February


def test_timezone_decides_today_and_unknown_zone_falls_back_to_utc():
    rules = {"relativeTime": {"from": "today"}, "expected": {"time": "{Year}-{Month0D}-{Day0D}"}}
    for tz in ("Pacific/Kiritimati", "Pacific/Pago_Pago"):  # UTC+14 and UTC-11: always different days
        want = dt.datetime.now(ZoneInfo(tz)).date().isoformat()
        assert resolve_rules({**rules, "timezone": tz})["expected"]["time"] == want
    utc = dt.datetime.now(dt.UTC).date().isoformat()
    assert resolve_rules({**rules, "timezone": "Mars/Olympus"})["expected"]["time"] == utc
