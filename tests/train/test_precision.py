"""Mixed precision: bf16 checkpoints train with fp32 master weights and bf16 autocast.

Runs on the CPU (bf16 autocast works there); the same code path is what a GPU run uses
(``tests/train/test_gpu.py`` repeats the checks on CUDA).
"""

import pytest
import torch

from tests.train.test_trainer import FAST
from vagen.config import load_config
from vagen.train.model import MixedPrecision
from vagen.train.rl import RLTrainer


def _trainer(tmp_path, *extra):
    cfg = load_config("train/frozenlake", FAST + ["model.dtype=bfloat16", "algo.filter=none", "trainer.steps=1",
                                                  f"trainer.out_dir={tmp_path}", *extra])
    return RLTrainer(cfg)


def test_bf16_training_keeps_fp32_master_weights_and_small_updates(tmp_path):
    """lr 1e-6: with fp32 master weights every trained tensor moves; trained in bf16 itself,
    the same update rounds away in nearly every weight (why master weights are the default)."""
    tr = _trainer(tmp_path / "amp", "trainer.lr=1e-6", "algo.advantage=gae", "algo.kl_coef=0.01")
    assert {p.dtype for p in tr.actor.parameters()} == {torch.float32}
    assert tr.policy.autocast_dtype == torch.bfloat16
    assert {p.dtype for p in tr.ref.parameters()} == {torch.bfloat16}  # frozen: compute dtype only
    assert {p.dtype for p in tr.critic.parameters()} == {torch.float32}
    before = {k: v.detach().clone() for k, v in tr.actor.named_parameters()}
    m = tr.train_step()
    assert torch.isfinite(torch.tensor(m["loss"])) and torch.isfinite(torch.tensor(m["loss/value"]))
    assert m["train/skipped_nonfinite"] == 0
    trained = [k for k, v in tr.actor.named_parameters() if v.grad is not None]  # text obs: no vision grads
    changed = [k for k in trained if not torch.equal(dict(tr.actor.named_parameters())[k], before[k])]
    assert len(trained) > 20 and len(changed) >= 0.9 * len(trained)
    tr.close()

    pure = _trainer(tmp_path / "pure", "trainer.lr=1e-6", "algo.advantage=grpo", "model.master_weights=model")
    assert {p.dtype for p in pure.actor.parameters()} == {torch.bfloat16}
    assert pure.policy.autocast_dtype is None
    before = {k: v.detach().clone() for k, v in pure.actor.named_parameters()}
    pure.train_step()
    moved = sum(int((v != before[k]).sum()) for k, v in pure.actor.named_parameters())
    total = sum(v.numel() for v in before.values())
    assert moved < 0.05 * total  # bf16 rounds most lr-1e-6 steps away
    pure.close()


def rollout_and_recomputed_logprobs(tr) -> tuple[torch.Tensor, torch.Tensor]:
    """One batch's response-token log-probs as generated vs as the training forward recomputes them."""
    trajs, _ = tr.produce(1)
    samples = tr.samples([t for t in trajs if t.turns])
    rollout = torch.tensor([lp for s in samples for lp, m in zip(s.old_logprobs, s.loss_mask, strict=True) if m])
    tr.cfg.trainer.old_logprobs = "recompute"
    new, _, _ = tr.score(samples)
    recomputed = torch.tensor([lp for s, row in zip(samples, new, strict=True)
                               for lp, m in zip(row, s.loss_mask, strict=True) if m])
    return rollout, recomputed


def test_bf16_rollout_logprobs_match_the_training_forward(tmp_path):
    """Generation (autocast bf16 over fp32 weights) and the trainer's recomputation score the
    same tokens alike: the PPO ratio starts near 1."""
    tr = _trainer(tmp_path, "algo.advantage=grpo", "trainer.old_logprobs=rollout")
    rollout, recomputed = rollout_and_recomputed_logprobs(tr)
    assert rollout.numel() > 0 and rollout.shape == recomputed.shape
    assert (rollout - recomputed).abs().mean() < 0.05
    tr.close()


def test_sft_with_bf16_trains_fp32_and_exports_bf16(tmp_path):
    from safetensors import safe_open

    from tests.conftest import run_cli
    from vagen.train.sft import run_sft

    data = tmp_path / "demos"
    r = run_cli("demos", "frozenlake", "--n", "4", "--out", str(data), "--format", "no_think",
                "--system-prompt", "minimal", "observation=text")
    assert r.returncode == 0, r.stderr
    cfg = load_config("sft/default", [f"data={data}", f"out_dir={tmp_path / 'sft'}", "steps=3", "batch_size=4",
                                      "lr=1e-5", "model.device=cpu", "model.dtype=bfloat16"])
    summary = run_sft(cfg)
    with safe_open(f"{summary['model']}/model.safetensors", "pt") as f:
        assert {f.get_slice(k).get_dtype() for k in f.keys()} == {"BF16"}


def test_float16_training_is_refused():
    with pytest.raises(ValueError, match="bfloat16"):
        MixedPrecision(torch.float16, "cpu")


def test_gradient_checkpointing_gives_the_same_step(tmp_path):
    """Recomputing activations in the backward pass changes memory, not the update."""
    rows = []
    for flag in ("false", "true"):
        tr = RLTrainer(load_config("train/frozenlake", FAST + [
            "algo.advantage=gae", "algo.filter=none", "trainer.steps=1", f"trainer.out_dir={tmp_path / flag}",
            f"trainer.gradient_checkpointing={flag}"]))
        m = tr.train_step()
        rows.append((m["loss"], m["actor/grad_norm"], {k: v.detach().clone() for k, v in tr.actor.state_dict().items()}))
        tr.close()
    assert rows[0][0] == pytest.approx(rows[1][0], rel=1e-5, abs=1e-6)
    assert rows[0][1] == pytest.approx(rows[1][1], rel=1e-4)
    assert max(float((rows[0][2][k] - rows[1][2][k]).abs().max()) for k in rows[0][2]) < 1e-5
