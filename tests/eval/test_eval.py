"""`vagen eval`: manifests, results layout, retries of infrastructure failures, resume after
SIGKILL, and a real OpenAI client against a real `vagen serve`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import envs
from tests.conftest import REPO, free_port, run_cli
from vagen.eval.runner import EvalError, EvalSettings, run_eval
from vagen.eval.suites import manifest, parse_seeds

REQUIRED = {"suite", "task_id", "domain", "score", "success", "steps", "status"}


def rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def settings(tmp_path: Path, suite: str, policy: str, **kw) -> EvalSettings:
    return EvalSettings(suite=suite, policy=policy, out=tmp_path / kw.pop("name", "run"), progress=False, **kw)


@pytest.mark.parametrize("suite", ["sokoban", "frozenlake"])
def test_oracle_is_perfect_on_embodied_suites(tmp_path, suite):
    summary = run_eval(settings(tmp_path, suite, "scripted:oracle", limit=12, num_envs=3, max_steps=10,
                                env_params={"observation": "image"}))
    assert summary["stats"]["rate"] == 1.0 and summary["stats"]["n"] == 12
    out = tmp_path / "run"
    rs = rows(out)
    assert len(rs) == 12 and all(REQUIRED <= set(r) and r["status"] == "ok" and r["success"] for r in rs)
    assert len({r["task_id"] for r in rs}) == 12
    meta = json.loads((out / "run.json").read_text())
    assert [m["task_id"] for m in meta["manifest"]] == [f"seed-{i}" for i in range(12)]
    assert meta["policy"] == "scripted:oracle" and meta["ended"] and "python" in meta["versions"]
    ep = out / rs[0]["episode_dir"]
    assert float((ep / "result.txt").read_text()) == 1.0
    steps = [json.loads(line) for line in (ep / "traj.jsonl").read_text().splitlines()]
    assert steps and {"step_num", "action_timestamp", "action", "response", "reward", "done", "info",
                      "screenshot_file"} <= set(steps[0])
    assert steps[-1]["done"] and (ep / steps[0]["screenshot_file"]).is_file() and (ep / "step_0.png").is_file()


def test_noop_scores_zero_and_denominator_is_the_manifest(tmp_path):
    summary = run_eval(settings(tmp_path, "frozenlake", "scripted:noop", limit=5, max_steps=3))
    assert summary["stats"]["rate"] == 0.0 and summary["stats"]["n"] == 5
    assert all(r["status"] == "ok" and not r["success"] and r["steps"] == 3 for r in rows(tmp_path / "run"))


def test_infra_failures_are_retried_then_reported_never_scored(tmp_path, monkeypatch):
    envs.register("flaky-lake", "tests.eval.helpers:FlakyLake", "test double")
    monkeypatch.setenv("VAGEN_TEST_ALWAYS_BROKEN", "1")
    monkeypatch.setenv("VAGEN_TEST_BROKEN_ONCE", "2")
    summary = run_eval(settings(tmp_path, "flaky-lake", "scripted:oracle", seeds=[0, 1, 2, 3], retries=2))
    by = {r["seed"]: r for r in rows(tmp_path / "run")}
    assert by[1]["status"] == "infra_error" and by[1]["score"] is None and by[1]["attempts"] == 3
    assert "died" in by[1]["error"]
    assert by[2]["status"] == "ok" and by[2]["success"] and by[2]["attempts"] == 2
    assert by[0]["attempts"] == by[3]["attempts"] == 1
    s = summary["stats"]
    assert s["infra_errors"] == 1 and s["n"] == 4 and s["rate"] == 0.75  # the crash counts, it is not dropped


def test_bad_requests_are_clear_errors(tmp_path):
    with pytest.raises(EvalError, match="unknown suite"):
        run_eval(settings(tmp_path, "no-such-env", "scripted:oracle"))
    run_eval(settings(tmp_path, "frozenlake", "scripted:oracle", limit=2))
    with pytest.raises(EvalError, match="--resume"):
        run_eval(settings(tmp_path, "frozenlake", "scripted:oracle", limit=2))
    with pytest.raises(EvalError, match="different run"):
        run_eval(settings(tmp_path, "frozenlake", "scripted:noop", limit=2, resume=True))
    with pytest.raises(ValueError, match="bad seed"):
        parse_seeds(["1-x"])
    assert parse_seeds(["0-3", "7", "2"]) == [0, 1, 2, 3, 7]
    eps = manifest("osworld", {"tasks": "osworld-lite"}, domains=["chrome"])
    assert eps and {e.domain for e in eps} == {"chrome"}


def _eval_cmd(out: Path, *extra: str) -> list[str]:
    exe = Path(sys.executable).with_name("vagen")
    return [str(exe), "eval", "frozenlake", "--policy", "scripted:tests.eval.helpers:slow_oracle_fn", "--limit", "40",
            "--num-envs", "2", "--max-steps", "8", "--out", str(out), "--no-progress", *extra]


def test_sigkill_then_resume_equals_an_uninterrupted_run(tmp_path):
    env = {**os.environ, "VAGEN_TEST_POLICY_DELAY": "0.05", "PYTHONPATH": str(REPO)}  # tests.eval.helpers
    full = tmp_path / "full"
    subprocess.run(_eval_cmd(full), check=True, env={**env, "VAGEN_TEST_POLICY_DELAY": "0"}, cwd=REPO,
                   capture_output=True, timeout=300)
    cut = tmp_path / "cut"
    p = subprocess.Popen(_eval_cmd(cut), env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        f = cut / "results.jsonl"
        if f.is_file() and f.read_text().count("\n") >= 8:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    before = rows(cut)
    assert 8 <= len(before) < 40, "the run finished before it could be killed"
    r = subprocess.run(_eval_cmd(cut, "--resume"), env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    after = rows(cut)
    assert len(after) == 40 and len({x["task_id"] for x in after}) == 40  # nothing duplicated
    key = lambda rs: sorted((x["task_id"], x["score"], x["success"], x["steps"], x["status"]) for x in rs)  # noqa: E731
    assert key(after) == key(rows(full))
    meta = json.loads((cut / "run.json").read_text())
    assert meta["resumed"] and meta["ended"]


def test_openai_client_against_vagen_serve(tmp_path):
    port = free_port()
    exe = Path(sys.executable).with_name("vagen")
    server = subprocess.Popen([str(exe), "serve", "--model", "tiny", "--host", "127.0.0.1", "--port", str(port)],
                              cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        import httpx

        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, "vagen serve did not start"
            time.sleep(0.2)
        out = tmp_path / "oa"
        r = run_cli("eval", "frozenlake", "--policy", "openai:tiny", "--base-url", f"http://127.0.0.1:{port}/v1",
                    "--api-key-env", "VAGEN_TEST_NO_KEY", "--limit", "3", "--max-steps", "2", "--max-tokens", "16",
                    "--num-envs", "2", "--out", str(out), "--no-progress", timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        rs = rows(out)
        assert len(rs) == 3 and all(x["status"] == "ok" and x["tokens"] > 0 and x["steps"] >= 1 for x in rs)
        assert json.loads(r.stdout.strip().splitlines()[-1])["stats"]["n"] == 3
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


def test_cli_eval_then_leaderboard(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for out, pol in ((a, "scripted:oracle"), (b, "scripted:noop")):
        r = run_cli("eval", "frozenlake", "--policy", pol, "--limit", "4", "--max-steps", "4", "--out", str(out),
                    "--no-progress", "--no-screenshots")
        assert r.returncode == 0, r.stderr[-2000:]
    board = tmp_path / "board"
    r = run_cli("leaderboard", str(a), str(b), "--out", str(board))
    assert r.returncode == 0, r.stderr[-2000:]
    for name in ("index.html", "leaderboard.csv", "leaderboard.md"):
        assert (board / name).is_file()
    assert list((board / "plots").glob("*.png"))
    r = run_cli("leaderboard", str(tmp_path / "nothing"), "--out", str(board))
    assert r.returncode != 0 and "nothing" in r.stderr


def test_split_suites_play_every_split_at_each_seed(tmp_path):
    eps = manifest("navigation", {}, seeds=[0, 1])
    assert [e.task_id for e in eps[:5]] == [f"{s}/seed-0" for s in envs.env_class("navigation").eval_splits]
    assert len(eps) == 10 and {e.domain for e in eps} == set(envs.env_class("navigation").eval_splits)
    assert eps[0].reset_args() == {"seed": 0, "options": {"split": "base"}}
    # --limit spreads over the splits; --domains picks splits and names unknown ones
    assert {e.domain for e in manifest("navigation", {}, limit=5)} == set(envs.env_class("navigation").eval_splits)
    assert {e.domain for e in manifest("navigation", {}, seeds=[0], domains=["long_horizon"])} == {"long_horizon"}
    with pytest.raises(ValueError, match="no split 'kitchen'|no split kitchen"):
        manifest("navigation", {}, seeds=[0], domains=["kitchen"])
    summary = run_eval(settings(tmp_path, "navigation", "scripted:oracle", seeds=[0], num_envs=2, max_steps=20,
                                env_params={"image_size": [64, 64]}))
    assert summary["stats"]["rate"] == 1.0 and summary["stats"]["n"] == 5
    by_split = {r["domain"]: r for r in rows(tmp_path / "run")}
    assert set(by_split) == set(envs.env_class("navigation").eval_splits)
    assert (tmp_path / "run" / "episodes" / "navigation" / "long_horizon" / "seed-0").is_dir()


def test_oracle_on_the_five_vagen_suites_gives_a_full_vagen_average(tmp_path):
    from vagen.eval.leaderboard import EMBODIED, build, load_run

    small = {"navigation": {"image_size": [48, 48]}, "primitive_skill": {"image_size": [48, 64]},
             "svg": {"image_size": [48, 48]}, "sokoban": {}, "frozenlake": {}}
    dirs = []
    for suite in EMBODIED:
        summary = run_eval(settings(tmp_path, suite, "scripted:oracle", name=suite, seeds=[0, 1], num_envs=2,
                                    max_steps=15, env_params=small[suite]))
        assert summary["stats"]["rate"] == 1.0, suite
        dirs.append(tmp_path / suite)
    (avg,) = build([load_run(d) for d in dirs]).average
    assert set(avg.rates) == set(EMBODIED) and avg.average == 1.0
