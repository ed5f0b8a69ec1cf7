"""Asynchronous rollouts (trainer.rollout_mode=async): the capacity rule, eta = 0 equals sync,
bounded staleness with versions stamped on every turn, weight pushes, decoupled PPO / TIS,
validation pausing the producer, and a failing producer surfacing in the trainer."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from tests.train.test_trainer import FAST
from vagen import algos
from vagen.config import load_config
from vagen.rollout.async_driver import AsyncRollouts
from vagen.train.rl import RLTrainer


class FakeSync:
    def __init__(self):
        self.rollout_policy = type("P", (), {"policy_version": -1})()
        self.pushes = 0

    def push(self, version):
        self.rollout_policy.policy_version = version
        self.pushes += 1
        return 0.0


@pytest.mark.parametrize("eta", [0, 1, 2])
def test_capacity_rule_bounds_how_far_the_producer_runs_ahead(eta):
    started, version = [], [0]
    lock = threading.Lock()

    def produce(step, slot):
        with lock:
            started.append((step, version[0]))
        time.sleep(0.02)
        return [step], {}

    ar = AsyncRollouts(produce, FakeSync(), version=lambda: version[0], eta=eta, first_step=1, last_step=6)
    try:
        time.sleep(0.3)
        assert sorted(s for s, _ in started) == list(range(1, eta + 2))  # nothing completed: eta + 1 batches
        for step in range(1, 7):
            b = ar.get(step, timeout=10)
            assert b.trajs == [step] and version[0] - b.version <= eta
            version[0] += 1
            ar.completed(step)
        time.sleep(0.1)
        assert sorted(s for s, _ in started) == list(range(1, 7))  # never past last_step
        # every batch started at most eta versions before the trainer used it
        assert all(s - 1 - v <= eta for s, v in started)
    finally:
        ar.close()


def test_pause_holds_the_producer_and_errors_reach_the_trainer():
    calls = []

    def produce(step, slot):
        calls.append(step)
        if step == 3:
            raise OSError("env exploded")
        return [], {}

    ar = AsyncRollouts(produce, FakeSync(), version=lambda: 0, eta=5, first_step=1)
    try:
        with ar.pause():
            n = len(calls)
            time.sleep(0.2)
            assert len(calls) == n  # held
        assert ar.get(1, timeout=5).step == 1
        with pytest.raises(RuntimeError, match="env exploded"):
            ar.get(3, timeout=5)
    finally:
        ar.close()
    with pytest.raises(ValueError, match=">= 0"):
        AsyncRollouts(produce, FakeSync(), version=lambda: 0, eta=-1)


def test_behaviour_weights_and_weighted_ppo_loss():
    prox = torch.tensor([[0.0, -1.0, -2.0, 0.0]])
    behav = torch.tensor([[0.0, -2.0, -1.0, 5.0]])
    mask = torch.tensor([[1, 1, 1, 0]])
    w = algos.behaviour_weights(prox, behav, mask)
    assert torch.allclose(w, torch.tensor([[1.0, torch.e, 1 / torch.e, 0.0]]))
    assert torch.allclose(algos.behaviour_weights(prox, behav, mask, cap=2.0), torch.tensor([[1.0, 2.0, 1 / torch.e, 0.0]]))
    lp = torch.tensor([[0.0, -1.0, -2.0, 0.0]], requires_grad=True)
    adv = torch.tensor([[1.0, 1.0, -1.0, 9.0]])
    plain, _ = algos.ppo_clip_loss(lp, prox, adv, mask, agg="token-mean")
    weighted, _ = algos.ppo_clip_loss(lp, prox, adv, mask, agg="token-mean", token_weights=w)
    # ratio 1 everywhere: L_t = -A_t, weighted by w_t, token-mean over 3 tokens
    assert plain.item() == pytest.approx(-(1 + 1 - 1) / 3)
    assert weighted.item() == pytest.approx(-(1 + torch.e - 1 / torch.e) / 3)


def test_off_policy_config_errors():
    with pytest.raises(ValueError, match="old_logprobs=recompute"):
        load_config("train/frozenlake", ["algo.off_policy=decoupled", "trainer.old_logprobs=rollout"])
    with pytest.raises(ValueError, match="is_cap"):
        load_config("train/frozenlake", ["algo.off_policy=tis"])
    with pytest.raises(ValueError):
        load_config("train/frozenlake", ["trainer.rollout_mode=later"])


def _run(tmp_path, extra, steps=3):
    cfg = load_config("train/frozenlake", FAST + [f"trainer.out_dir={tmp_path}", f"trainer.steps={steps}",
                                                  "algo.filter=none", *extra])
    tr = RLTrainer(cfg)
    out = []
    try:
        while tr.step < steps:
            tr.step += 1
            out.append(tr.train_step())
        weights = {k: v.detach().clone() for k, v in tr.actor.state_dict().items()}
        return out, weights, tr
    finally:
        tr.close()


def _comparable(m):
    return {k: v for k, v in m.items() if not k.startswith(("time/", "async/"))}


def test_async_with_eta_zero_reproduces_sync_exactly(tmp_path):
    sync_m, sync_w, _ = _run(tmp_path / "sync", [])
    async_m, async_w, tr = _run(tmp_path / "async", ["trainer.rollout_mode=async", "trainer.max_staleness=0"])
    assert [_comparable(m) for m in async_m] == [_comparable(m) for m in sync_m]
    assert all(torch.equal(sync_w[k], async_w[k]) for k in sync_w)
    assert [m["async/staleness"] for m in async_m] == [0.0, 0.0, 0.0]
    assert tr.weight_sync.pushes == 3 and tr.rollout_policy is not tr.policy


def test_async_eta_one_is_bounded_and_stamps_versions(tmp_path):
    seen = []
    cfg = load_config("train/frozenlake", FAST + [f"trainer.out_dir={tmp_path}", "trainer.steps=4",
                                                  "trainer.rollout_mode=async", "trainer.max_staleness=1",
                                                  "algo.off_policy=decoupled", "algo.is_cap=5.0"])
    tr = RLTrainer(cfg)
    orig = tr.produce

    def spy(step, policy=None, slot=0):
        start = policy.policy_version
        trajs, m = orig(step, policy, slot)
        seen.append((step, start, slot, {u.policy_version for t in trajs for u in t.turns}))
        return trajs, m

    tr.produce = spy
    try:
        ms = []
        while tr.step < 4:
            tr.step += 1
            ms.append(tr.train_step())
    finally:
        tr.close()
    assert all(0.0 <= m["async/staleness"] <= 1.0 for m in ms)
    assert any(m["async/staleness"] == 1.0 for m in ms)  # it did run ahead
    assert all("actor/behaviour_weight" in m for m in ms)
    for step, start, _, stamped in seen:
        # partial rollouts: turns may use newer weights, never older than the admitted start version
        assert min(stamped) >= start and step - 1 - start <= 1
    assert {slot for *_, slot, _ in seen} == {0, 1}  # two batches in flight on two env sets
    assert tr.policy.policy_version == 4


def test_async_run_with_validation_and_a_failing_producer(tmp_path):
    cfg = load_config("train/frozenlake", FAST + [f"trainer.out_dir={tmp_path / 'ok'}", "trainer.steps=2",
                                                  "trainer.rollout_mode=async", "trainer.val_every=1",
                                                  "trainer.val_episodes=4"])
    summary = RLTrainer(cfg).run()
    assert summary["steps"] == 2 and "val/success_sampled" in summary["last"]
    cfg = load_config("train/frozenlake", FAST + [f"trainer.out_dir={tmp_path / 'bad'}", "trainer.steps=3",
                                                  "trainer.rollout_mode=async"])
    tr = RLTrainer(cfg)

    def boom(step, policy=None, slot=0):
        raise OSError("the rollout worker died")

    tr.produce = boom
    try:
        tr.step = 1
        with pytest.raises(RuntimeError, match="rollout worker died"):
            tr.train_step()
    finally:
        tr.close()


def test_latency_env_and_async_throughput(tmp_path):
    """Envs that sleep like GUI sandboxes: eta = 1 keeps twice the envs busy and hides the update."""
    import envs

    e = envs.make("latency", env="frozenlake", size=4, observation="text", scale=0.05)
    assert e.unwrapped.name == "frozenlake"
    e.reset(seed=0)
    e.step("Up")
    assert e.slept_s > 0
    with pytest.raises(ValueError, match="stall_s"):
        envs.make("latency", env="frozenlake", stall_s=(3, 1))
    import benchmarks.async_rollout as bench

    args = type("A", (), {"steps": 3, "groups": 2, "group_size": 2, "turns": 3, "scale": 0.3, "seed": 0})()
    sync = bench.measure(args, "sync", 0)
    eta1 = bench.measure(args, "async", 1)
    assert eta1["staleness_mean"] <= 1.0
    assert eta1["traj_per_s"] > 1.2 * sync["traj_per_s"], (sync, eta1)
