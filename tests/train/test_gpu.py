"""The trainer on CUDA with the hf backend: bf16 mixed precision, critic + reference, async.

``gpu`` tier: skipped without CUDA (CI has none); run on a GPU host with
``pytest -m gpu tests/train/test_gpu.py``. The vLLM backend's GPU tests are in
tests/policy/test_vllm.py.
"""

import pytest
import torch

from tests.train.test_precision import rollout_and_recomputed_logprobs
from tests.train.test_trainer import FAST
from vagen.config import load_config
from vagen.train.rl import RLTrainer

pytestmark = pytest.mark.gpu

CUDA = [o for o in FAST if not o.startswith("model.device")] + ["model.device=cuda", "model.dtype=bfloat16",
                                                                "algo.filter=none"]


def _trainer(tmp_path, *extra):
    return RLTrainer(load_config("train/frozenlake", CUDA + [f"trainer.out_dir={tmp_path}", *extra]))


def test_cuda_bf16_steps_with_critic_and_reference(tmp_path):
    tr = _trainer(tmp_path, "algo.advantage=bilevel_gae", "algo.kl_coef=0.01", "trainer.lr=1e-6", "trainer.steps=2")
    assert {p.device.type for p in tr.actor.parameters()} == {"cuda"}
    assert {p.dtype for p in tr.actor.parameters()} == {torch.float32}  # master weights
    assert {p.device.type for p in tr.critic.parameters()} == {"cuda"}  # the value head too
    before = {k: v.detach().clone() for k, v in tr.actor.named_parameters()}
    rows = [tr.train_step() for _ in range(2)]
    for m in rows:
        assert all(torch.isfinite(torch.tensor(m[k])) for k in ("loss", "loss/value", "actor/kl"))
        assert m["train/skipped_nonfinite"] == 0 and m["perf/gpu_peak_gib"] > 0
    trained = [k for k, v in tr.actor.named_parameters() if v.grad is not None]
    assert trained and all(not torch.equal(dict(tr.actor.named_parameters())[k], before[k]) for k in trained)
    tr.close()


def test_cuda_rollout_and_training_logprobs_agree(tmp_path):
    tr = _trainer(tmp_path, "algo.advantage=grpo", "trainer.old_logprobs=rollout")
    rollout, recomputed = rollout_and_recomputed_logprobs(tr)
    assert rollout.numel() > 0 and (rollout - recomputed).abs().mean() < 0.05
    tr.close()


def test_cuda_async_eta1_with_a_bf16_replica(tmp_path):
    tr = _trainer(tmp_path, "algo.advantage=grpo", "trainer.rollout_mode=async", "trainer.max_staleness=1",
                  "algo.off_policy=decoupled", "trainer.steps=3")
    assert {p.dtype for p in tr.rollout_policy.model.parameters()} == {torch.bfloat16}
    summary = tr.run()
    assert summary["steps"] == 3
    assert tr.weight_sync.pushes >= 1 and tr.rollout_policy.policy_version >= 1  # pushed on version changes
