"""The replay env on real `vagen synth gui` output: expert replay, patch budgets, SOP progress,
splits, bad data, and replaying a `vagen eval` run of it (recorded evaluations as data)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import envs
from envs.replay.data import ReplayDataError, load_trajectories
from tests.conftest import synth_gui

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(600)]
VAGEN = str(Path(sys.executable).with_name("vagen"))


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory):
    return synth_gui(tmp_path_factory.mktemp("replay") / "synth", 30, seed=11)


def test_expert_actions_replay_with_full_progress(synth_dir):
    env = envs.make("replay", data=str(synth_dir))
    assert len(env.trajectories) >= 5
    for k in range(3):
        obs, info = env.reset(seed=k)
        assert obs["text"].startswith("Task: ") and obs["images"][0].shape[2] == 3
        assert max(obs["images"][0].shape[:2]) <= 448
        total = 0.0
        for st in env.traj.steps:
            obs, r, term, trunc, info = env.step(st.action)
            total += r
            assert info["match"]["level"] == "exact" and info["patch"] is None
        assert term and info["success"] and info["metrics"]["episode/progress"] == 1.0
        assert total == len(env.traj.steps)


def test_patch_budgets(synth_dir):
    multi = [i for i, t in enumerate(envs.make("replay", data=str(synth_dir)).trajectories) if len(t.steps) >= 3]
    seed = multi[0]
    stop = envs.make("replay", data=str(synth_dir), patch_budget=0)   # SOP: stop at the first error
    stop.reset(seed=seed)
    _, r, term, _, info = stop.step("pyautogui.write('nonsense')")
    assert term and not info["success"] and info["patch"] is None
    assert info["metrics"]["episode/progress"] == 0.0 and r in (0.1, 0.5)
    one = envs.make("replay", data=str(synth_dir), patch_budget=1)
    obs, _ = one.reset(seed=seed)
    expert0 = one.traj.steps[0].action
    obs, _, term, _, info = one.step("pyautogui.write('nonsense')")
    assert not term and info["patch"]["action"] == expert0 and info["patch"]["step"] == 0
    assert f"Previous actions: {expert0}" in obs["text"]           # the history entry is the expert's
    obs, _, term, _, info = one.step("FAIL" if one.traj.steps[1].action != "FAIL" else "DONE")
    assert term and info["metrics"]["episode/progress"] == 0.0   # second error, no patch left
    free = envs.make("replay", data=str(synth_dir), patch_budget=-1)
    free.reset(seed=seed)
    steps = 0
    while True:
        _, _, term, _, info = free.step("pyautogui.click(1, 1)")
        steps += 1
        if term:
            break
    assert steps == len(free.traj.steps) and not info["success"] and info["metrics"]["patches"] == steps
    # a late error: progress counts the matched prefix only
    late = envs.make("replay", data=str(synth_dir), patch_budget=-1)
    late.reset(seed=seed)
    late.step(late.traj.steps[0].action)
    for _ in late.traj.steps[1:]:
        _, _, term, _, info = late.step("WAIT")
    assert info["metrics"]["episode/progress"] == pytest.approx(1 / len(late.traj.steps))


def test_splits_and_bad_data(synth_dir, tmp_path):
    every = {t.id for t in load_trajectories(synth_dir)}
    train = {t.id for t in load_trajectories(synth_dir, split="train", test_fraction=0.3)}
    test = {t.id for t in load_trajectories(synth_dir, split="test", test_fraction=0.3)}
    assert train | test == every and not train & test and test
    bad = tmp_path / "bad"
    bad.mkdir()
    row = json.loads((synth_dir / "samples.jsonl").read_text().splitlines()[0])
    (bad / "samples.jsonl").write_text(json.dumps({**row, "screenshot": "../../etc/passwd", "step": 0,
                                                   "action": "DONE"}) + "\n")
    with pytest.raises(ReplayDataError, match="leaves the data folder"):
        load_trajectories(bad)
    with pytest.raises(ReplayDataError, match="neither samples.jsonl"):
        load_trajectories(tmp_path / "nothing-here")
    with pytest.raises(ValueError, match="data=DIR"):
        envs.make("replay")
    with pytest.raises(ValueError, match="unknown option"):
        envs.make("replay", data=str(synth_dir), patch=3)


def test_vagen_eval_on_replay_is_the_sop_metric_and_its_output_replays(synth_dir, tmp_path):
    """`vagen eval --suite replay` plays every trajectory with no patch (SOP): the oracle
    (the expert) scores progress 1; the run's own output (successful episodes) is replay data."""
    out = tmp_path / "eval"
    proc = subprocess.run([VAGEN, "eval", "replay", "--policy", "scripted:oracle", "--out", str(out),
                           "--max-steps", "12", f"env.params.data={synth_dir}", "env.params.split=all"],
                          capture_output=True, text=True, timeout=500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    n = len(load_trajectories(synth_dir))
    assert summary["episodes"] == n and summary["stats"]["rate"] == 1.0
    assert summary["stats"]["mean_score"] == 1.0        # SOP progress
    again = load_trajectories(out)
    assert len(again) == n and {t.instruction for t in again} == {t.instruction for t in load_trajectories(synth_dir)}
    env = envs.make("replay", data=str(out))
    env.reset(seed=0)
    for st in env.traj.steps:
        _, _, term, _, info = env.step(st.action)
    assert term and info["success"]
    shutil.rmtree(out)


def test_teacher_forced_history_is_the_experts(synth_dir):
    env = envs.make("replay", data=str(synth_dir), patch_budget=-1, expert_history=True)
    multi = next(i for i, t in enumerate(env.trajectories) if len(t.steps) >= 3)
    env.reset(seed=multi)
    first = env.traj.steps[0].action
    obs, _, _, _, info = env.step(first.replace("(", "( ") if first.startswith("pyautogui") else first)  # same action
    assert f"Previous actions: {first}" in obs["text"]
    obs, _, _, _, info = env.step("pyautogui.write('zzz')")
    assert f"{first}; {env.traj.steps[1].action}" in obs["text"] and info["patch"] is not None
