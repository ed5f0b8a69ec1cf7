"""OSWorld task format: the 13 reference tasks, the bundled suite, and clear errors on bad files."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from envs.osworld.check import check_dir, check_task, shell_programs
from envs.osworld.controller import FileCache
from envs.osworld.tasks import (
    OSWORLD_GETTER_TYPES,
    OSWORLD_SETUP_TYPES,
    SUPPORTED_SETUP_TYPES,
    TaskFormatError,
    load_suite,
    load_task,
    parse_task,
)

REFERENCE = Path(__file__).resolve().parents[4] / "shared" / "osworld_reference"
if not REFERENCE.is_dir():  # a checkout next to shared/ (the usual layout) or CI's copy
    REFERENCE = Path(__file__).resolve().parents[3].parent / "shared" / "osworld_reference"
needs_reference = pytest.mark.skipif(not REFERENCE.is_dir(), reason=f"no OSWorld reference tasks at {REFERENCE}")


@needs_reference
def test_reference_tasks_all_load_typed():
    files = sorted(REFERENCE.glob("*.json"))
    assert len(files) == 13
    tasks = [load_task(p) for p in files]
    domains = {t.domain for t in tasks}
    assert domains == {"os", "chrome", "libreoffice_calc"}
    by_id = {t.id: t for t in tasks}
    # list-valued func with conj "or"
    t = by_id["3ce045a0-877b-42aa-8d2c-b4a863336ab8"]
    assert t.evaluator.funcs == ("check_include_exclude", "check_include_exclude") and t.evaluator.conj == "or"
    assert all(r is not None and r.type == "vm_command_line" for r in t.evaluator.results)
    # infeasible tasks
    assert not by_id["b3d4a89c-53f2-4d6b-8b6a-541fb5d205fa"].feasible
    assert not by_id["3720f614-37fd-4d04-8a6b-76f54f8c222d"].feasible
    # postconfig, download and the newer top-level fields
    calc = by_id["01b269ae-2111-4a07-81fd-3fcd711993b0"]
    assert [s.type for s in calc.config] == ["download", "open"]
    assert [s.type for s in calc.evaluator.postconfig] == ["activate_window", "sleep", "execute", "sleep"]
    assert calc.evaluator.options[0]["rules"][0]["type"] == "sheet_data"
    assert by_id["06fe7178-4491-4589-810f-2e2bc9502122"].proxy is True
    assert all(t.possibility_of_env_change in ("low", "medium", "high") for t in tasks)
    setup_types = {s.type for t in tasks for s in (*t.config, *t.evaluator.postconfig)}
    assert {"download", "launch", "open", "execute", "chrome_open_tabs"} <= setup_types


@needs_reference
def test_check_reports_reference_tasks_without_crashing():
    reports = {r.id: r for r in check_dir(REFERENCE, probe=False)}
    assert len(reports) == 13 and all(r.status in ("runnable", "partial") for r in reports.values())
    calc = reports["01b269ae-2111-4a07-81fd-3fcd711993b0"]
    assert any("not in the file cache" in i and "huggingface.co" in i for i in calc.issues)
    pdf = reports["aa3a8974-2e85-438b-b29e-a64df44deb4b"]
    assert any("check_pdf_pages" in i for i in pdf.issues)
    tabs = reports["06fe7178-4491-4589-810f-2e2bc9502122"]
    assert any("needs the internet" in i for i in tabs.issues) and any("proxy" in i for i in tabs.issues)
    # an infeasible task has nothing to run
    assert reports["b3d4a89c-53f2-4d6b-8b6a-541fb5d205fa"].status == "runnable"


@needs_reference
def test_check_cli_reference(capsys):
    from typer.testing import CliRunner

    from vagen.cli import app

    r = CliRunner().invoke(app, ["osworld", "check", str(REFERENCE), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert len(data) == 13 and {"id", "status", "issues"} <= set(data[0])


def _base() -> dict:
    return {"id": "t1", "instruction": "do it", "config": [{"type": "sleep", "parameters": {"seconds": 0.1}}],
            "evaluator": {"func": "exact_match", "result": {"type": "vm_command_line", "command": "echo hi"},
                          "expected": {"type": "rule", "rules": {"expected": "hi\n"}}}}


@pytest.mark.parametrize("mutate, where, value", [
    (lambda d: d["config"].append({"type": "teleport", "parameters": {}}), "config[1].type", "teleport"),
    (lambda d: d["evaluator"].update(func="exact_mtach"), "evaluator.func", "exact_mtach"),
    (lambda d: d["evaluator"]["result"].update(type="vm_fiel"), "evaluator.result.type", "vm_fiel"),
    (lambda d: d["evaluator"].update(conj="xor"), "evaluator.conj", "xor"),
    (lambda d: d["evaluator"].update(func=["exact_match", "exact_match"]), "evaluator.result", "2"),
    (lambda d: d.update(possibility_of_env_change="sometimes"), "possibility_of_env_change", "sometimes"),
    (lambda d: d["config"].append({"type": "execute", "parameters": {}}), "config[1].parameters", "command"),
    (lambda d: d["config"].append({"type": "sleep", "parameters": {"seconds": "1"}}), "config[1].parameters.seconds",
     "'1'"),
    (lambda d: d.update(colour="blue"), "colour", "unknown top-level"),
    (lambda d: d["evaluator"].pop("result"), "evaluator.result", "needs a result getter"),
])
def test_bad_task_errors_name_task_field_value(mutate, where, value):
    d = _base()
    mutate(d)
    with pytest.raises(TaskFormatError) as e:
        parse_task(d)
    msg = str(e.value)
    assert "task t1" in msg and where in msg and value in msg, msg


def test_vocabularies_are_consistent():
    assert SUPPORTED_SETUP_TYPES <= OSWORLD_SETUP_TYPES
    from envs.osworld.getters import GETTERS

    assert set(GETTERS) - OSWORLD_GETTER_TYPES == {"active_url"}


def test_osworld_lite_suite_shape():
    tasks = load_suite("osworld-lite")
    assert len(tasks) >= 40
    domains = {t.domain for t in tasks}
    assert {"os", "text_editor", "chrome", "libreoffice_calc", "settings"} <= domains
    assert sum(not t.feasible for t in tasks) >= 4
    for t in tasks:
        oracle = t.oracle()
        assert oracle["actions"], t.id
        assert oracle["actions"][-1] == ("DONE" if t.feasible else "FAIL"), t.id
        # offline: every download and reference file is in the bundled cache
        report = check_task(t, FileCache([Path(t.path).parents[1] / "files"]))
        assert not [i for i in report.issues if "cache" in i], (t.id, report.issues)
    funcs = {f for t in tasks for f in t.evaluator.funcs}
    assert {"exact_match", "check_include_exclude", "match_in_list", "is_in_list", "check_list", "compare_text_file",
            "compare_csv", "compare_table", "check_json_settings", "check_direct_json_object",
            "is_expected_url_pattern_match", "infeasible"} <= funcs
    getters = {g.type for t in tasks for g in (*t.evaluator.results, *t.evaluator.expected) if g is not None}
    assert {"vm_file", "vm_command_line", "vm_terminal_output", "rule", "rule_relativeTime", "cloud_file",
            "cache_file", "open_tabs_info", "active_tab_info", "active_url"} <= getters


def test_oracle_actions_parse_in_the_grammar():
    from envs.osworld.actions import parse_pyautogui

    for t in load_suite("osworld-lite"):
        for a in t.oracle()["actions"]:
            parse_pyautogui(a, screen=(1280, 800))  # raises ActionParseError if not


def test_suite_filters_and_errors(tmp_path):
    assert {t.domain for t in load_suite("osworld-lite", domains=["chrome"])} == {"chrome"}
    with pytest.raises(FileNotFoundError, match="osworld-lite"):
        load_suite("no-such-suite")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(TaskFormatError, match="not valid JSON"):
        load_suite(tmp_path)
    d = _base()
    (tmp_path / "bad.json").write_text(json.dumps(d))
    (tmp_path / "dup.json").write_text(json.dumps(copy.deepcopy(d)))
    with pytest.raises(TaskFormatError, match="duplicate task ids"):
        load_suite(tmp_path)


def test_check_reports_invalid_files_and_missing_programs(tmp_path):
    d = _base()
    d["config"] = [{"type": "launch", "parameters": {"command": ["no-such-app-xyz", "--flag"]}},
                   {"type": "download", "parameters": {"files": [{"url": "https://example.invalid/f.txt",
                                                                   "path": "/home/user/f.txt"}]}},
                   {"type": "googledrive", "parameters": {}}]
    (tmp_path / "a.json").write_text(json.dumps(d))
    (tmp_path / "b.json").write_text('{"id": "b", "instruction": "x", "evaluator": {"func": "nope"}}')
    reports = {r.id: r for r in check_dir(tmp_path)}
    assert reports["b"].status == "invalid" and "nope" in reports["b"].error
    issues = " | ".join(reports["t1"].issues)
    assert "'no-such-app-xyz' is not installed" in issues
    assert "example.invalid/f.txt is not in the file cache" in issues
    assert "'googledrive' is not supported" in issues


def test_shell_programs():
    assert shell_programs("pulseaudio --start\npactl list sinks | grep x | head -n 1") == \
        ["pulseaudio", "pactl", "grep", "head"]
    assert shell_programs(["bash", "-c", "echo hi && xset q"]) == ["xset"]
    assert shell_programs("X=1; test -d /tmp && echo yes") == []
