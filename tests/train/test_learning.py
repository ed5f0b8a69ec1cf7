"""The learning recipe's code path, mechanically: solver demos -> SFT -> `vagen train <env>
preset=demo` from the SFT checkpoint -> held-out evaluation, for a few steps each.

Whether RL then *raises* held-out success is a figure, not a mechanism: that long run is
benchmarks/learning/test_learning_recipe.py (`make bench`), with its results in
benchmarks/RESULTS.md. Here: every stage runs through the CLI on the demo presets' own level
options, losses are finite, the RL step moves the SFT weights, metrics and checkpoints are
written, and the evaluator reads the checkpoint back.
"""

import json
import math

import pytest
import torch
from safetensors.torch import load_file

from benchmarks.learning.test_learning_recipe import evaluate, level_options
from tests.conftest import run_cli


def weights(model_dir) -> dict[str, torch.Tensor]:
    out = {}
    for f in sorted(model_dir.glob("*.safetensors")):
        out.update(load_file(str(f)))
    assert out, f"no safetensors in {model_dir}"
    return out


@pytest.mark.parametrize("env", ["frozenlake", "sokoban"])
def test_demos_sft_rl_eval_pipeline(env, tmp_path):
    demos, sft, rl = tmp_path / "demos", tmp_path / "sft", tmp_path / "rl"
    r = run_cli("demos", env, "--n", "16", "--out", str(demos), "--format", "no_think",
                "--system-prompt", "minimal", *level_options(env))
    assert r.returncode == 0, r.stderr
    r = run_cli("sft", f"data={demos}", "prompt.history=none", "prompt.format=no_think", "steps=8",
                "batch_size=8", "lr=1e-3", f"out_dir={sft}", "model.device=cpu", "seed=0")
    assert r.returncode == 0, r.stderr[-2000:]
    start = weights(sft / "final")
    r = run_cli("train", env, "preset=demo", f"model.path={sft / 'final'}", f"trainer.out_dir={rl}",
                "trainer.steps=2", "trainer.save_every=1", "rollout.groups=4", "rollout.group_size=4",
                # a few SFT steps teach no format yet, so every rollout scores alike and the advantages
                # are zero: the entropy term gives the update a gradient that moves the weights
                "algo.entropy_coef=0.01",
                "trainer.seed=0", "trainer.tensorboard=false")
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [json.loads(x) for x in (rl / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2]
    assert all(math.isfinite(row["loss"]) for row in rows), rows
    ckpts = sorted((rl / "checkpoints").glob("step_*"))
    assert [c.name for c in ckpts][-1] == "step_000002"
    end = weights(ckpts[-1] / "model")
    assert start.keys() == end.keys()
    moved = [k for k in start if not torch.equal(start[k], end[k].to(start[k].dtype))]
    assert moved, "two RL steps left every SFT weight unchanged"
    score = evaluate(env, str(ckpts[-1] / "model"), tmp_path, greedy=True, episodes=4)
    assert set(score) == {"sampled", "greedy"} and all(0.0 <= v <= 1.0 for v in score.values())
