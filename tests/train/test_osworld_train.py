"""`slow` + `desktop`: `vagen train osworld` end to end on the embedded default (tiny model,
two local sandboxes, osworld-lite), writing metrics, per-domain success and plots."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli

pytestmark = [pytest.mark.slow, pytest.mark.desktop, pytest.mark.timeout(900)]


def test_vagen_train_osworld_short_run(tmp_path):
    out = tmp_path / "run"
    r = run_cli("train", "osworld", "trainer.steps=2", f"trainer.out_dir={out}", "env.params.max_steps=3",
                "rollout.max_turns=3", env={"VAGEN_SANDBOX_STATE_DIR": str(tmp_path / "state")}, timeout=800)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2]
    for row in rows:
        assert row["rollout/trajectories"] == 2 and row["rollout/dropped_infra"] == 0
        assert any(k.startswith("episode/success/") for k in row), sorted(row)
        assert 0.0 <= row["success"] <= 1.0 and row["time/env_s"] > 0
    assert {"success.png", "overview.png"} <= {p.name for p in (out / "plots").glob("*.png")}
    assert (out / "summary.json").is_file() and any((out / "checkpoints").iterdir())
    # every sandbox was stopped at the end
    assert not list((tmp_path / "state").glob("*.json"))


def test_train_refuses_a_pool_smaller_than_the_rollout(tmp_path):
    r = run_cli("train", "osworld", "sandbox.num=1", "rollout.group_size=2", f"trainer.out_dir={tmp_path / 'r'}",
                timeout=120)
    assert r.returncode != 0 and "sandbox.num" in (r.stderr + r.stdout)
