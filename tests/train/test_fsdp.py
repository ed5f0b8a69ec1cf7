"""FSDP2 (trainer.strategy=fsdp2) on the CPU with the gloo backend and 2 processes under torchrun:
the same losses, gradient norms and weights as one process on the same batches; and a real
2-rank `vagen train` run (each rank plays its share of the groups) that checkpoints, resumes
after being stopped, and continues exactly as an uninterrupted run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from vagen.train import distributed as D

ROOT = Path(__file__).resolve().parents[2]
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
BASE = ["rollout.group_size=2", "rollout.max_turns=2", "sampling.max_tokens=8", "env.params.observation=text",
        "prompt.format=no_think", "prompt.system_prompt=minimal", "trainer.tensorboard=false", "model.device=cpu",
        "trainer.lr=1e-3", "reward.format_penalty=-0.1"]


def _run(cmd: list[str], timeout: int = 300, **extra_env: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), **extra_env}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return proc


def test_round_robin_pads_every_rank_to_the_same_count_and_merge_restores_one_process_order():
    assert D.round_robin(5, 0, 2) == ([0, 2, 4], 3)
    assert D.round_robin(5, 1, 2) == ([1, 3, None], 3)
    assert D.round_robin(0, 1, 2) == ([], 0)
    parts = D.split_groups([10, 11, 12], 2)
    assert parts == [([10, 12], [0, 2]), ([11], [1])]

    class T:  # a trajectory's ids, as a worker numbered them (local groups 0.., traj g * size + k)
        def __init__(self, g, k):
            self.group_id, self.traj_id, self.turns = g, g * 2 + k, []

    merged = D.merge_parts([([T(0, 0), T(0, 1), T(1, 0), T(1, 1)], [0, 2]), ([T(0, 0), T(0, 1)], [1])], 2)
    assert [(t.group_id, t.traj_id) for t in merged] == [(0, 0), (0, 1), (1, 2), (1, 3), (2, 4), (2, 5)]


def test_fsdp2_on_two_gloo_ranks_matches_one_process(tmp_path):
    # GAE (a sharded critic) + KL (a full reference per rank); micro-batches of 1 so the ranks
    # get uneven counts and the padding path runs.
    overrides = BASE + ["rollout.groups=2", "trainer.mini_batch_size=4", "trainer.micro_batch_size=1",
                        "algo.advantage=gae", "algo.kl_coef=0.05", "algo.filter=none", "trainer.save_every=0"]
    script = str(ROOT / "tests/train/fsdp_check.py")
    _run([sys.executable, script, str(tmp_path / "one"), "single", "2", *overrides])
    _run([*TORCHRUN, script, str(tmp_path / "two"), "fsdp2", "2", *overrides])
    one = json.loads((tmp_path / "one/metrics.json").read_text())
    two = json.loads((tmp_path / "two/metrics.json").read_text())
    assert (one["world"], two["world"]) == (1, 2)
    for a, b in zip(one["steps"], two["steps"], strict=True):
        assert set(a) == set(b)
        for k in ("loss", "loss/policy", "loss/value", "actor/kl", "actor/entropy", "actor/grad_norm", "return"):
            assert b[k] == pytest.approx(a[k], rel=1e-4, abs=1e-6), k
    w1, w2 = torch.load(tmp_path / "one/weights.pt"), torch.load(tmp_path / "two/weights.pt")
    assert w1.keys() == w2.keys()
    for k in w1:
        torch.testing.assert_close(w2[k], w1[k], rtol=1e-4, atol=1e-5)
    init = torch.load(tmp_path / "one/init.pt")  # training moved the weights well beyond the tolerance
    assert max(float((w1[k] - init[k]).abs().max()) for k in w1) > 1e-3


@pytest.mark.slow
def test_two_rank_vagen_train_checkpoints_and_resumes_exactly(tmp_path):
    cli = [*TORCHRUN, "-m", "vagen.cli", "train", "frozenlake"]
    args = BASE + ["rollout.groups=3", "trainer.mini_batch_size=4", "trainer.micro_batch_size=2",
                   "trainer.strategy=fsdp2", "trainer.save_every=1", "trainer.val_every=2", "trainer.val_episodes=5"]
    # Two jobs, not three: the uninterrupted run's step-2 checkpoint (written exactly as a run
    # killed after step 2 writes it) starts a second job, whose step 3 must equal the first's.
    # Resuming in place (resume=auto) finds its checkpoint the same way on any strategy:
    # tests/train/test_trainer.py::test_kill_and_resume_matches_an_uninterrupted_run.
    # a cold model cache: both ranks resolve the tiny model at once (rank 0 builds, rank 1 waits)
    _run([*cli, *args, f"trainer.out_dir={tmp_path}/full", "trainer.steps=3"], VAGEN_CACHE_DIR=str(tmp_path / "cache"))
    ckpt = tmp_path / "full/checkpoints/step_000002"
    assert json.loads((ckpt / "trainer_state.json").read_text())["world_size"] == 2
    _run([*cli, *args, f"trainer.out_dir={tmp_path}/cut", "trainer.steps=3", f"trainer.resume={ckpt}"])
    full = [json.loads(line) for line in (tmp_path / "full/metrics.jsonl").read_text().splitlines()]
    cut = [json.loads(line) for line in (tmp_path / "cut/metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in full] == [1, 2, 3] and [m["step"] for m in cut] == [3]
    assert full[0]["rollout/trajectories"] == 6  # 3 groups x 2, played by 2 ranks and gathered
    for k in ("loss", "return", "success", "actor/grad_norm", "rollout/response_length"):
        assert cut[0][k] == pytest.approx(full[2][k], rel=1e-5, abs=1e-7), k
    state = json.loads((tmp_path / "cut/checkpoints/step_000003/trainer_state.json").read_text())
    assert state["world_size"] == 2 and (tmp_path / "cut/checkpoints/step_000003/model").is_dir()
    assert (tmp_path / "cut/summary.json").exists() and (tmp_path / "cut/plots").is_dir()
