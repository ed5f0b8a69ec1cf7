"""GiGPO: golden values for both levels, anchor grouping and invariants."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

from vagen.algos import discounted_turn_returns, gigpo, grpo

# Three trajectories:
#   traj 0 (group 0), score 1:   turn 0 at "A" r=0,  turn 1 at "B" r=1
#   traj 1 (group 0), score 0:   turn 0 at "A" r=0,  turn 1 at "C" r=0,  turn 2 at "B" r=0
#   traj 2 (group 1), score .5:  turn 0 at "A" r=.5
# Records are given shuffled, to check that order comes from turn_number.
#   record:       0    1    2    3    4    5
#   traj:         1    0    2    1    0    1
#   turn:         2    1    0    0    0    1
#   anchor:      "B"  "B"  "A"  "A"  "A"  "C"
#   reward:       0    1   .5    0    0    0
SCORES = torch.tensor([1.0, 0.0, 0.5])
GROUPS = torch.tensor([0, 0, 1])
TRAJ = torch.tensor([1, 0, 2, 1, 0, 1])
TURN = torch.tensor([2, 1, 0, 0, 0, 1])
KEYS = ["B", "B", "A", "A", "A", "C"]
REWARDS = torch.tensor([0.0, 1.0, 0.5, 0.0, 0.0, 0.0])
TURN_GROUPS = GROUPS[TRAJ]
R2 = 1 / math.sqrt(2)


def close(actual, expected, atol=1e-5):
    assert_close(actual, torch.as_tensor(expected, dtype=actual.dtype), atol=atol, rtol=1e-5)


def run(**kw):
    return gigpo(SCORES, GROUPS, REWARDS, TRAJ, TURN, KEYS, TURN_GROUPS, **kw)


def test_discounted_turn_returns_golden():
    # gamma = .5: traj 0: R1 = 1, R0 = 0 + .5 * 1 = .5; traj 1: all 0; traj 2: R0 = .5
    close(discounted_turn_returns(REWARDS, TRAJ, TURN, gamma=0.5), [0.0, 1.0, 0.5, 0.0, 0.5, 0.0])


def test_gigpo_golden_std_normalised():
    # Episode level (GRPO in group 0: scores 1, 0 -> mean .5, unbiased std sqrt(.5)):
    #   traj 0: +.5 / .70711 = +.70711,  traj 1: -.70711,  traj 2: singleton group -> 0
    # Step level, gamma = .5, anchor groups keyed by (group, key):
    #   (0, "A"): traj0 R=.5, traj1 R=0  -> mean .25, std sqrt(.125) -> +.70711 / -.70711
    #   (0, "B"): traj0 R=1,  traj1 R=0  -> +.70711 / -.70711
    #   (0, "C"): traj1 only             -> 0
    #   (1, "A"): traj2 only (not pooled with group 0's "A") -> 0
    # omega = 1: turn advantage = episode + step
    #   rec0 traj1 "B": -.70711 - .70711 = -1.41421     rec1 traj0 "B": 1.41421
    #   rec2 traj2 "A": 0                               rec3 traj1 "A": -1.41421
    #   rec4 traj0 "A": 1.41421                         rec5 traj1 "C": -.70711 + 0
    close(run(gamma=0.5), [-2 * R2, 2 * R2, 0.0, -2 * R2, 2 * R2, -R2])


def test_gigpo_golden_mean_only_and_omega():
    # norm_by_std=False: episode +.5 / -.5 / 0; step (0,"A"): +.25/-.25, (0,"B"): +.5/-.5.
    # omega = .5: rec0: -.5 + .5 * -.5 = -.75; rec1: .5 + .25 = .75; rec2: 0;
    #             rec3: -.5 - .125 = -.625; rec4: .5 + .125 = .625; rec5: -.5 + 0
    close(run(gamma=0.5, norm_by_std=False, omega=0.5), [-0.75, 0.75, 0.0, -0.625, 0.625, -0.5])


def test_gigpo_omega_zero_is_episode_grpo():
    close(run(omega=0.0), grpo(SCORES, GROUPS)[TRAJ])


def test_gigpo_validation():
    with pytest.raises(ValueError, match="turn_group_index"):
        gigpo(SCORES, GROUPS, REWARDS, TRAJ, TURN, KEYS, torch.zeros_like(TRAJ))
    with pytest.raises(ValueError, match="anchor_keys"):
        gigpo(SCORES, GROUPS, REWARDS, TRAJ, TURN, KEYS[:-1], TURN_GROUPS)
    with pytest.raises(ValueError, match="duplicate"):
        gigpo(SCORES, GROUPS, REWARDS, TRAJ, torch.zeros_like(TURN), KEYS, TURN_GROUPS)
    with pytest.raises(ValueError, match="index into scores"):
        gigpo(SCORES, GROUPS, REWARDS, TRAJ + 1, TURN, KEYS, GROUPS[(TRAJ + 1).clamp(max=2)])


# ---- property: the step term sums to zero within every anchor group ----


@st.composite
def episodes(draw):
    n_groups = draw(st.integers(1, 3))
    trajs = []  # (group, [(key, reward), ...])
    for g in range(n_groups):
        for _ in range(draw(st.integers(1, 3))):
            turns = draw(
                st.lists(
                    st.tuples(st.sampled_from("abc"), st.floats(-1, 1, allow_nan=False, width=32)),
                    min_size=1,
                    max_size=4,
                )
            )
            trajs.append((g, turns))
    return trajs


@settings(max_examples=60, deadline=None)
@given(episodes(), st.floats(0.0, 1.0), st.booleans())
def test_step_advantages_centre_each_anchor_group(trajs, gamma, norm):
    groups = torch.tensor([g for g, _ in trajs])
    scores = torch.tensor([sum(r for _, r in turns) for _, turns in trajs])
    traj = torch.tensor([i for i, (_, turns) in enumerate(trajs) for _ in turns])
    turn = torch.tensor([k for _, turns in trajs for k in range(len(turns))])
    keys = [key for _, turns in trajs for key, _ in turns]
    rewards = torch.tensor([r for _, turns in trajs for _, r in turns])
    args = (scores, groups, rewards, traj, turn, keys, groups[traj])
    full = gigpo(*args, gamma=gamma, norm_by_std=norm)
    episode = gigpo(*args, omega=0.0, gamma=gamma, norm_by_std=norm)
    step = full - episode
    anchor = [(int(groups[t]), k) for t, k in zip(traj, keys, strict=True)]
    for a in set(anchor):
        members = torch.tensor([x == a for x in anchor])
        if members.sum() > 1:
            assert abs(float(step[members].sum())) < 1e-3
        else:
            assert float(step[members]) == 0.0
