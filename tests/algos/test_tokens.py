"""broadcast_to_tokens and masked_whiten."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from vagen.algos import broadcast_to_tokens, gigpo, masked_whiten

# Row 0: turn 0 at 0-1, observation at 2, turn 1 at 3; row 1: turn 0 at 1-2, padding at 3.
MASK = torch.tensor([[1, 1, 0, 1], [0, 1, 1, 0]], dtype=torch.bool)
TURNS = torch.tensor([[0, 0, -1, 1], [-1, 0, 0, -1]])


def test_per_sequence():
    out = broadcast_to_tokens(torch.tensor([2.0, -1.0]), MASK)
    assert_close(out, torch.tensor([[2.0, 2, 0, 2], [0, -1, -1, 0]]))


def test_per_row_and_turn():
    per_turn = torch.tensor([[1.0, 3.0], [5.0, 7.0]])  # row 1 has no turn 1: unused
    out = broadcast_to_tokens(per_turn, MASK, TURNS)
    assert_close(out, torch.tensor([[1.0, 1, 0, 3], [0, 5, 5, 0]]))


def test_per_turn_records_any_order():
    # records (row, turn, value): (1, 0, 5), (0, 1, 3), (0, 0, 1)
    out = broadcast_to_tokens(
        torch.tensor([5.0, 3.0, 1.0]),
        MASK,
        TURNS,
        traj_index=torch.tensor([1, 0, 0]),
        turn_number=torch.tensor([0, 1, 0]),
    )
    assert_close(out, torch.tensor([[1.0, 1, 0, 3], [0, 5, 5, 0]]))


def test_gigpo_output_onto_tokens():
    # Two trajectories (rows) in one group, one anchor each per turn; the layout above.
    adv = gigpo(
        torch.tensor([1.0, 0.0]),
        torch.tensor([0, 0]),
        torch.tensor([0.0, 1.0, 0.0]),
        traj_index=torch.tensor([0, 0, 1]),
        turn_number=torch.tensor([0, 1, 0]),
        anchor_keys=["s0", "s1", "s0"],
        turn_group_index=torch.tensor([0, 0, 0]),
        gamma=1.0,
        norm_by_std=False,
    )
    # episode: +.5 / -.5; step: ("s0": R = 1 vs 0 -> +.5 / -.5), "s1" singleton -> 0
    assert_close(adv, torch.tensor([1.0, 0.5, -1.0]))
    out = broadcast_to_tokens(
        adv, MASK, TURNS, traj_index=torch.tensor([0, 0, 1]), turn_number=torch.tensor([0, 1, 0])
    )
    assert_close(out, torch.tensor([[1.0, 1, 0, 0.5], [0, -1, -1, 0]]))


def test_missing_or_duplicate_turn_records_raise():
    with pytest.raises(ValueError, match="no per-turn record"):
        broadcast_to_tokens(
            torch.tensor([5.0, 1.0]),
            MASK,
            TURNS,
            traj_index=torch.tensor([1, 0]),
            turn_number=torch.tensor([0, 0]),
        )
    with pytest.raises(ValueError, match="duplicate"):
        broadcast_to_tokens(
            torch.tensor([5.0, 1.0, 2.0, 3.0]),
            MASK,
            TURNS,
            traj_index=torch.tensor([1, 0, 0, 0]),
            turn_number=torch.tensor([0, 0, 1, 1]),
        )
    with pytest.raises(ValueError, match="outside"):
        broadcast_to_tokens(torch.tensor([[1.0], [2.0]]), MASK, TURNS)
    with pytest.raises(ValueError, match="length"):
        broadcast_to_tokens(torch.tensor([1.0, 2.0, 3.0]), MASK)


def test_masked_whiten():
    x = torch.tensor([[1.0, 2.0, 99.0], [3.0, 99.0, 99.0]])
    m = torch.tensor([[1, 1, 0], [1, 0, 0]], dtype=torch.bool)
    # masked entries 1, 2, 3: mean 2, unbiased var 1 -> -1, 0, 1
    out = masked_whiten(x, m, eps=0.0)
    assert_close(out, torch.tensor([[-1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]))
    assert_close(
        masked_whiten(x, m, eps=0.0, shift_mean=False), torch.tensor([[1.0, 2.0, 0.0], [3.0, 0.0, 0.0]])
    )
    single = torch.tensor([[1, 0, 0], [0, 0, 0]], dtype=torch.bool)
    assert_close(masked_whiten(x, single), torch.tensor([[1.0, 0, 0], [0, 0, 0]]))
