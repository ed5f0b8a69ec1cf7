"""`desktop` tier: `vagen eval osworld` on local sandboxes — oracle 100%, no-op 0%, and an
episode whose sandbox keeps dying reported as an infrastructure error, never a 0.

The CLI's mechanics (parallel envs, results rows, screenshots, the leaderboard) are checked on
one domain of osworld-lite: every task of the suite is already played with the oracle, a no-op
and FAIL on each provider (tests/envs/osworld/test_env_local.py, test_env_docker.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envs.osworld.tasks import load_suite
from tests.conftest import run_cli

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(1200)]


def rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


DOMAIN = "settings"  # 7 tasks, an infeasible one among them, no slow app start


def test_osworld_lite_oracle_all_noop_none(tmp_path):
    n = len([t for t in load_suite("osworld-lite") if t.domain == DOMAIN])
    assert n >= 5
    state = {"VAGEN_SANDBOX_STATE_DIR": str(tmp_path / "state")}
    for policy, expected in (("scripted:oracle", 1.0), ("scripted:noop", 0.0)):
        out = tmp_path / policy.replace(":", "-")
        r = run_cli("eval", "osworld", "--policy", policy, "--domains", DOMAIN, "--num-envs", "2", "--max-steps", "15", "--out", str(out),
                    "--no-progress", env=state, timeout=1100)
        assert r.returncode == 0, r.stderr[-3000:]
        rs = rows(out)
        assert len(rs) == n and all(x["status"] == "ok" for x in rs), [x for x in rs if x["status"] != "ok"]
        assert {x["score"] for x in rs} == {expected}, [(x["task_id"], x["score"]) for x in rs if x["score"] != expected]
        infeasible = [x for x in rs if "infeasible" in x["task_id"]]
        assert infeasible and all(x["success"] == (expected == 1.0) for x in infeasible)
        shots = list((out / rs[0]["episode_dir"]).glob("step_*.png"))
        assert shots  # OSWorld-style per-step screenshots
    board = tmp_path / "board"
    r = run_cli("leaderboard", str(tmp_path / "scripted-oracle"), str(tmp_path / "scripted-noop"), "--out", str(board))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "osworld" in (board / "leaderboard.md").read_text()


def test_a_sandbox_that_keeps_dying_is_an_infra_error(tmp_path):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    base = {"instruction": "x", "evaluator": {"func": "exact_match",
                                              "result": {"type": "vm_command_line", "command": "echo ok"},
                                              "expected": {"type": "rule", "rules": {"expected": "ok\n"}}}}
    # the setup kills the sandbox's control server (its parent process): the sandbox is gone
    (tasks / "dies.json").write_text(json.dumps({**base, "id": "dies", "config": [
        {"type": "execute", "parameters": {"command": "kill -9 $PPID", "shell": True}}]}))
    (tasks / "fine.json").write_text(json.dumps({**base, "id": "fine", "config": []}))
    out = tmp_path / "run"
    r = run_cli("eval", "osworld", "--tasks", str(tasks), "--policy", "scripted:noop", "--max-steps", "1",
                "--retries", "1", "--out", str(out), "--no-progress",
                env={"VAGEN_SANDBOX_STATE_DIR": str(tmp_path / "state")}, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    by = {x["task_id"]: x for x in rows(out)}
    assert by["dies"]["status"] == "infra_error" and by["dies"]["score"] is None and by["dies"]["attempts"] == 2
    assert by["fine"]["status"] == "ok" and by["fine"]["score"] == 1.0  # noop: "echo ok" passes by itself
    stats = json.loads(r.stdout.strip().splitlines()[-1])["stats"]
    assert stats["infra_errors"] == 1 and stats["n"] == 2
