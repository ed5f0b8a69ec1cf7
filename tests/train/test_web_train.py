"""`slow` + `desktop`: `vagen train web` on the tiny model, once with one Chromium per env and
once with browser sandboxes from the pool (`sandbox.kind=browser`); `vagen train miniwob`."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli

pytestmark = [pytest.mark.slow, pytest.mark.desktop, pytest.mark.timeout(900)]


@pytest.mark.parametrize(("preset", "extra"), [("web", []), ("web", ["sandbox.kind=browser", "sandbox.num=4"]),
                                               ("miniwob", [])], ids=["web-own-browser", "web-pool", "miniwob"])
def test_vagen_train_web_short_run(tmp_path, preset, extra):
    out = tmp_path / "run"
    r = run_cli("train", preset, "trainer.steps=1", f"trainer.out_dir={out}", "env.params.max_steps=2",
                "rollout.max_turns=2", *extra, env={"VAGEN_SANDBOX_STATE_DIR": str(tmp_path / "state")}, timeout=800)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1]
    assert rows[0]["rollout/trajectories"] == 4 and rows[0]["rollout/dropped_infra"] == 0
    assert not list((tmp_path / "state").glob("*.json"))  # browser sandboxes stopped
