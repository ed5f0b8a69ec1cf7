"""The shortened learning demo: SFT warm start on solver demos, then RL, on CPU.

Same recipe as benchmarks/learning_demo.py (seed 0); asserts that held-out sampled
success after RL is higher than at the SFT start. Takes a few minutes: `slow` tier.
"""

import pytest

from tests.conftest import run_cli
from vagen.config import load_config
from vagen.train.rl import RLTrainer

EPISODES = 800


def evaluate(model_path: str, tmp_path) -> dict[str, float]:
    cfg = load_config("train/frozenlake-demo", [f"model.path={model_path}", f"trainer.out_dir={tmp_path / 'eval'}",
                                                "trainer.tensorboard=false"])
    tr = RLTrainer(cfg)
    return {"sampled": tr.evaluate(EPISODES, greedy=False), "greedy": tr.evaluate(EPISODES, greedy=True)}


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_rl_after_sft_raises_held_out_success(tmp_path):
    demos, sft, rl = tmp_path / "demos", tmp_path / "sft", tmp_path / "rl"
    r = run_cli("demos", "frozenlake", "--n", "300", "--out", str(demos), "--format", "no_think",
                "--system-prompt", "minimal", "observation=text", "max_actions_per_turn=1", "max_turns=8")
    assert r.returncode == 0, r.stderr
    r = run_cli("sft", f"data={demos}", "prompt.history=none", "prompt.format=no_think", "steps=600",
                "batch_size=32", "lr=1e-3", f"out_dir={sft}", "model.device=cpu", "seed=0", timeout=1200)
    assert r.returncode == 0, r.stderr[-2000:]
    start = evaluate(str(sft / "final"), tmp_path)
    r = run_cli("train", "frozenlake", "preset=demo", f"model.path={sft / 'final'}", f"trainer.out_dir={rl}",
                "trainer.steps=30", "trainer.seed=0", "trainer.tensorboard=false", timeout=1800)
    assert r.returncode == 0, r.stderr[-2000:]
    end = evaluate(str(sorted((rl / "checkpoints").glob("step_*"))[-1] / "model"), tmp_path)
    print({"start": start, "end": end})
    assert start["sampled"] > 0.2  # the warm start works at all
    assert end["sampled"] > start["sampled"] + 0.02, (start, end)
