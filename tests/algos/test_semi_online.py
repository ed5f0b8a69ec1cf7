"""Golden tests for UI-S1's semi-online estimators (hand-computed values)."""

from __future__ import annotations

import math

import pytest
import torch

from vagen.algos import cut_step_returns, semi_online_advantages, uis1_task_filter

S = 1 / math.sqrt(2)  # a two-member group normalises to +-1/sqrt(2) (unbiased std)


def test_step_returns_are_discounted_and_cut_at_mismatches():
    # traj 0: r = [1, .5, 1, 1], matched = [1, 0, 1, 1]; traj 1: r = [.1, 1], matched = [0, 1]; gamma .5
    #   R_3 = 1; R_2 = 1 + .5 * 1 = 1.5; R_1 = .5 (mismatch: cut); R_0 = 1 + .5 * .5 = 1.25
    #   traj 1: R_1 = 1; R_0 = .1 (cut)
    r = torch.tensor([1.0, 0.5, 1.0, 1.0, 0.1, 1.0])
    m = torch.tensor([1, 0, 1, 1, 0, 1], dtype=torch.bool)
    traj = torch.tensor([0, 0, 0, 0, 1, 1])
    step = torch.tensor([0, 1, 2, 3, 0, 1])
    R = cut_step_returns(r, m, traj, step, gamma=0.5)
    assert torch.allclose(R, torch.tensor([1.25, 0.5, 1.5, 1.0, 0.1, 1.0]))
    # records in any order give the same per-record returns
    perm = torch.tensor([5, 2, 0, 4, 3, 1])
    assert torch.allclose(cut_step_returns(r[perm], m[perm], traj[perm], step[perm], 0.5), R[perm])
    # all matched + gamma 1: plain return-to-go
    assert torch.allclose(cut_step_returns(r[:4], torch.ones(4, dtype=torch.bool), traj[:4], step[:4], 1.0),
                          torch.tensor([3.5, 2.5, 2.0, 1.0]))
    with pytest.raises(ValueError, match="duplicate"):
        cut_step_returns(r[:2], m[:2], torch.tensor([0, 0]), torch.tensor([1, 1]))


def test_step_and_episode_group_advantages():
    R = torch.tensor([1.25, 0.5, 1.5, 1.0, 0.1, 1.0])
    traj = torch.tensor([0, 0, 0, 0, 1, 1])
    step = torch.tensor([0, 1, 2, 3, 0, 1])
    # both trajectories replay task 0; episode returns G = sum r = 3.5 and 1.1
    adv, m = semi_online_advantages(R, traj, step, torch.tensor([0, 0]), torch.tensor([3.5, 1.1]))
    # A^E = [+S, -S]; A^S: step 0 {1.25, .1} -> [+S, -S]; step 1 {.5, 1} -> [-S, +S]; steps 2, 3 singletons -> 0
    expect = torch.tensor([S + S, S - S, S, S, -S - S, -S + S])
    assert torch.allclose(adv, expect, atol=1e-5)
    assert m["adv/step_abs"] == pytest.approx(4 * S / 6, abs=1e-5)
    # weights: step level only / episode level only
    only_step, _ = semi_online_advantages(R, traj, step, torch.tensor([0, 0]), torch.tensor([3.5, 1.1]),
                                          episode_weight=0.0)
    assert torch.allclose(only_step, torch.tensor([S, -S, 0, 0, -S, S]), atol=1e-5)
    # different tasks never share a group: every group is a singleton -> 0
    alone, _ = semi_online_advantages(R, traj, step, torch.tensor([0, 1]), torch.tensor([3.5, 1.1]))
    assert torch.equal(alone, torch.zeros(6))


def test_uis1_filter_keeps_tasks_whose_step0_returns_vary():
    r0 = torch.tensor([1.25, 0.1, 1.0, 1.0, 0.5, 0.7])
    task = torch.tensor([0, 0, 1, 1, 2, 2])
    keep, m = uis1_task_filter(r0, task, min_std=0.3)   # stds: .813, 0, .141
    assert keep.tolist() == [True, True, False, False, False, False]
    assert m["kept_fraction"] == pytest.approx(1 / 3)
