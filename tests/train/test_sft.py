import json

import pytest

from tests.conftest import run_cli
from vagen.config import load_config
from vagen.train.sft import SFTDataError, run_sft


@pytest.fixture(scope="module")
def demos(tmp_path_factory):
    out = tmp_path_factory.mktemp("demos")
    r = run_cli("demos", "frozenlake", "--n", "12", "--out", str(out), "--format", "no_think",
                "--system-prompt", "minimal", "observation=image+text", "max_actions_per_turn=1")
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize("history", ["full", "none"])
def test_sft_learns_the_demonstrations(demos, tmp_path, history):
    cfg = load_config("sft/default", [f"data={demos}", f"out_dir={tmp_path}", "steps=30", "batch_size=8",
                                      "lr=3e-3", "log_every=5", f"prompt.history={history}", "model.device=cpu"])
    summary = run_sft(cfg)
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["loss"] < rows[0]["loss"] * 0.7
    assert summary["samples"] > 0
    from vagen.policy.hf import HFPolicy

    HFPolicy(summary["model"], device="cpu")  # loads for RL


def test_sft_cli_and_bad_data(tmp_path):
    r = run_cli("sft", f"data={tmp_path}", f"out_dir={tmp_path / 'o'}", "steps=1")
    assert r.returncode != 0 and "samples.jsonl" in r.stderr
    (tmp_path / "samples.jsonl").write_text('{"messages": [{"role": "system", "content": "s"}, '
                                            '{"role": "user", "content": [{"type": "image", "image": "../../etc/x.png"}]},'
                                            ' {"role": "assistant", "content": "<answer>Up</answer>"}]}\n')
    with pytest.raises(SFTDataError, match="escapes"):
        run_sft(load_config("sft/default", [f"data={tmp_path}", f"out_dir={tmp_path / 'o'}", "steps=1"]))
    (tmp_path / "samples.jsonl").write_text("not json\n")
    r = run_cli("sft", f"data={tmp_path}", f"out_dir={tmp_path / 'o'}", "steps=1")
    assert r.returncode != 0 and "not JSON" in r.stderr
