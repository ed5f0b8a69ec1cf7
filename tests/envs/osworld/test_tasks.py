"""OSWorld task format: the 13 reference tasks, the bundled suite, and clear errors on bad files."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from envs.osworld.check import KINDS, check_dir, check_task, shell_programs
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
    assert len(reports) == 13 and all(r.status != "invalid" for r in reports.values())
    calc = reports["01b269ae-2111-4a07-81fd-3fcd711993b0"]
    assert any(i.kind == "needs_cache" and "not in the file cache" in i.message and "huggingface.co" in i.message
               for i in calc.items)
    pdf = reports["aa3a8974-2e85-438b-b29e-a64df44deb4b"]
    assert any(i.kind == "unsupported" and "check_pdf_pages" in i.message for i in pdf.items)
    assert pdf.status == "blocked"
    tabs = reports["06fe7178-4491-4589-810f-2e2bc9502122"]
    assert {(i.kind, "proxy" in i.message or "needs the internet" in i.message) for i in tabs.items} == \
        {("needs_network", True)}
    assert tabs.status == "external"
    # an infeasible task has nothing to run
    assert reports["b3d4a89c-53f2-4d6b-8b6a-541fb5d205fa"].status == "runnable"


@needs_reference
def test_check_cli_reference(capsys):
    from typer.testing import CliRunner

    from vagen.cli import app

    r = CliRunner().invoke(app, ["osworld", "check", str(REFERENCE), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert len(data["reports"]) == 13 and {"id", "status", "items", "error"} <= set(data["reports"][0])
    assert all(set(i) == {"kind", "message"} and i["kind"] in KINDS for t in data["reports"] for i in t["items"])
    s = data["summary"]
    assert s["tasks"] == 13 and sum(s["status"].values()) == 13 and s["status"]["invalid"] == 0
    assert set(s["domains"]) == {"os", "chrome", "libreoffice_calc"}
    # a single task file is checked too
    one = REFERENCE / "os__28cc3b7e-b194-4bc9-8353-d04c0f4d56d2.json"
    r = CliRunner().invoke(app, ["osworld", "check", str(one), "--json"])
    assert r.exit_code == 0, r.output
    assert [t["id"] for t in json.loads(r.output)["reports"]] == ["28cc3b7e-b194-4bc9-8353-d04c0f4d56d2"]
    r = CliRunner().invoke(app, ["osworld", "check", str(one)])
    assert "1 task:" in r.output and "domain " not in r.output


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
    (lambda d: d.update(hint=["x"]), "hint", "must be a string"),
    (lambda d: d.update(env_may_change="yes"), "env_may_change", "'yes'"),
    (lambda d: d.update(source=3), "source", "3"),
    (lambda d: d.update(snapshot=["os"]), "snapshot", "must be a string"),
    (lambda d: d["evaluator"].pop("result"), "evaluator.result", "needs a result getter"),
])
def test_bad_task_errors_name_task_field_value(mutate, where, value):
    d = _base()
    mutate(d)
    with pytest.raises(TaskFormatError) as e:
        parse_task(d)
    msg = str(e.value)
    assert "task t1" in msg and where in msg and value in msg, msg


def test_published_optional_fields_load_and_unknown_fields_are_kept():
    d = _base()
    d.update(hint="The input is case sensitive.", env_may_change=True, source=["https://a", "https://b"],
             colour="blue", human_annotation={"steps": 3})
    d["evaluator"]["_config_note"] = "a note for task authors"
    t = parse_task(d)
    assert t.hint == "The input is case sensitive." and t.env_may_change is True
    assert t.source == ("https://a", "https://b") and t.human_annotation == {"steps": 3}
    assert t.extra == {"colour": "blue"} and t.evaluator.extra == {"_config_note": "a note for task authors"}
    assert parse_task(_base()).extra == {} and parse_task(_base()).hint == ""


def test_check_kinds_and_option_validation(tmp_path):
    d = _base()
    d["id"] = "t2"
    d["config"] = [{"type": "googledrive", "parameters": {}},
                   {"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["https://example.com/"]}}]
    d["evaluator"] = {"func": ["check_direct_json_object", "compare_table", "compare_config", "exact_match"],
                      "result": [{"type": "rule", "rules": {}}, {"type": "vm_file", "path": "/home/user/a.xlsx"},
                                 {"type": "vm_file", "path": "/home/user/s.json"},
                                 {"type": "vm_file", "multi": True, "path": ["/a", "/b"], "dest": ["a"]}],
                      "expected": [{"type": "rule_relativeTime", "rules": {"relativeTime": {"from": "someday"},
                                                                           "expected": {"time": "{Year}"}}},
                                   None, {"type": "rule", "rules": {"expected": "{}"}},
                                   {"type": "rule", "rules": {"expected": "x"}}],
                      "options": [{}, {"rules": [{"type": "pivot_table"}]}, {"strictness": 2}, {}]}
    (tmp_path / "t2.json").write_text(json.dumps(d))
    (r,) = check_dir(tmp_path / "t2.json")
    got = {(i.kind, i.message.split(":")[0]) for i in r.items}
    assert ("needs_account", "config[0]") in got and ("unsupported", "config[0]") in got
    assert ("needs_network", "config[1]") in got
    text = " | ".join(f"{i.kind} {i.message}" for i in r.items)
    assert "unsupported expected[0]: evaluation would fail: rule_relativeTime: relativeTime 'someday'" in text
    assert "unsupported evaluator.options[1]: evaluation would fail: compare_table.rules[0]: unsupported rule " \
           "type 'pivot_table'" in text
    assert "unsupported evaluator.options[2]: evaluation would fail: compare_config: options ['strictness']" in text
    assert "unsupported result[3]: evaluation would fail: vm_file multi needs equal-length" in text
    assert r.status == "blocked"
    # with the options fixed, only what the user can supply is left
    d["config"] = [d["config"][1]]
    d["evaluator"]["expected"][0]["rules"]["relativeTime"]["from"] = "10th next month"
    d["evaluator"]["options"] = [{}, {"rules": [{"type": "check_cell", "sheet_idx": 0, "coordinate": "A1", "props": {
        "value": {"method": "eq", "ref": 1}}}]}, {"containment_ok": False}, {}]
    d["evaluator"]["result"][3] = {"type": "vm_file", "path": "/a"}
    (tmp_path / "t2.json").write_text(json.dumps(d))
    (r,) = check_dir(tmp_path / "t2.json")
    assert [i.kind for i in r.items] == ["needs_network"] and r.status == "external"


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
        assert not [i for i in report.items if i.kind == "needs_cache"], (t.id, report.items)
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
    items = " | ".join(f"{i.kind} {i.message}" for i in reports["t1"].items)
    assert "missing_app config[0]: program 'no-such-app-xyz' is not installed" in items
    assert "needs_cache config[1]: download https://example.invalid/f.txt is not in the file cache" in items
    assert "needs_account config[2]: googledrive signs in" in items
    assert "unsupported config[2]: setup type 'googledrive' is not implemented" in items


def test_shell_programs():
    assert shell_programs("pulseaudio --start\npactl list sinks | grep x | head -n 1") == \
        ["pulseaudio", "pactl", "grep", "head"]
    assert shell_programs(["bash", "-c", "echo hi && xset q"]) == ["xset"]
    assert shell_programs("X=1; test -d /tmp && echo yes") == []
    # programs inside quotes (awk scripts, python -c code, messages) are not commands
    assert shell_programs("git log | awk '{for (i=2; i<=NF; i++) {printf $i}; print \"\"}'; echo \"a; b\"") == \
        ["git", "awk"]
