"""GRPO / Dr. GRPO / RLOO / REINFORCE++: golden values and invariants."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

from vagen.algos import dr_grpo, grpo, reinforce_pp, rloo

# Two groups of three, interleaved, with non-contiguous labels 5 and 7:
#   group 5: scores 1, 2, 3   mean 2, unbiased std sqrt(((-1)^2 + 0 + 1^2) / 2) = 1
#   group 7: scores 0, 0, 3   mean 1, unbiased std sqrt((1 + 1 + 4) / 2) = sqrt(3)
SCORES = torch.tensor([1.0, 0.0, 2.0, 0.0, 3.0, 3.0])
GROUPS = torch.tensor([5, 7, 5, 7, 5, 7])
S3 = math.sqrt(3)


def close(actual, expected, atol=1e-5):
    assert_close(actual, torch.as_tensor(expected, dtype=actual.dtype), atol=atol, rtol=1e-5)


def test_grpo_golden():
    # (score - mean) / (std + 1e-6): group 5 -> -1, 0, 1; group 7 -> -1/s3, -1/s3, 2/s3
    close(grpo(SCORES, GROUPS), [-1.0, -1 / S3, 0.0, -1 / S3, 1.0, 2 / S3])


def test_dr_grpo_golden_is_mean_only():
    # score - mean: group 5 -> -1, 0, 1; group 7 -> -1, -1, 2
    expected = [-1.0, -1.0, 0.0, -1.0, 1.0, 2.0]
    close(grpo(SCORES, GROUPS, norm_by_std=False), expected)
    close(dr_grpo(SCORES, GROUPS), expected)


def test_grpo_singleton_policies():
    # Group 0 = [1, 2, 3]; group 1 = [10] alone. Batch mean = 16 / 4 = 4.
    scores, groups = torch.tensor([1.0, 2.0, 3.0, 10.0]), torch.tensor([0, 0, 0, 1])
    close(grpo(scores, groups, singleton="zero"), [-1.0, 0.0, 1.0, 0.0])
    close(grpo(scores, groups, singleton="raw"), [-1.0, 0.0, 1.0, 6.0])  # 10 - 4
    with pytest.raises(ValueError, match="singleton"):
        grpo(scores, groups, singleton="drop")


@settings(max_examples=80, deadline=None)
@given(st.floats(-100, 100, allow_nan=False, width=32), st.integers(2, 7))
def test_all_equal_group_gets_exactly_zero(x, n):
    # A float32 group mean can be 1 ulp off x; divided by (std ~ 1e-8) + 1e-6 that would
    # give an all-equal group advantages of several percent. It must be exactly 0.
    scores, groups = torch.full((n,), x), torch.zeros(n, dtype=torch.long)
    assert (grpo(scores, groups) == 0).all()
    assert (grpo(scores, groups, norm_by_std=False) == 0).all()
    # REINFORCE++ centres exactly too; the global whitening then shifts every entry by
    # -mean(A')/std(A'), which is only float-rounding small here.
    mixed = reinforce_pp(torch.cat([scores, torch.tensor([x + 1, x - 1])]), torch.tensor([0] * n + [1, 1]))
    assert mixed[:n].abs().max() < 1e-5


def test_rloo_golden():
    # Leave-one-out baseline = mean of the other two:
    #   group 5: 1 - 2.5 = -1.5, 2 - 2 = 0, 3 - 1.5 = 1.5
    #   group 7: 0 - 1.5 = -1.5, 0 - 1.5 = -1.5, 3 - 0 = 3
    close(rloo(SCORES, GROUPS), [-1.5, -1.5, 0.0, -1.5, 1.5, 3.0])
    close(rloo(torch.tensor([4.0, 1.0, 2.0]), torch.tensor([0, 1, 1])), [0.0, -1.0, 1.0])  # singleton -> 0


def test_reinforce_pp_golden():
    # Group-mean centred: [-1, -1, 0, -1, 1, 2] (mean 0); unbiased batch std:
    # sum of squares 8, / (6 - 1) -> var 1.6, std 1.2649111 -> A = centred / 1.2649111
    s = math.sqrt(1.6)
    close(reinforce_pp(SCORES, GROUPS), [-1 / s, -1 / s, 0.0, -1 / s, 1 / s, 2 / s])
    close(reinforce_pp(torch.tensor([3.0]), torch.tensor([0])), [0.0])


def test_input_validation():
    with pytest.raises(ValueError, match="length"):
        grpo(SCORES, GROUPS[:3])
    with pytest.raises(ValueError, match="1-D"):
        rloo(SCORES.view(2, 3), GROUPS.view(2, 3))


def test_integer_scores_are_accepted():
    close(grpo(torch.tensor([0, 1]), torch.tensor([0, 0]), norm_by_std=False), [-0.5, 0.5])


# ---- properties ----

score = st.floats(-10, 10, allow_nan=False, width=32)
grouped = st.lists(st.lists(score, min_size=1, max_size=5), min_size=1, max_size=6)


def flatten(groups, data):
    """Scores and non-contiguous labels, in a random order."""
    scores = [s for g in groups for s in g]
    labels = [3 * k - 4 for k, g in enumerate(groups) for _ in g]
    perm = data.draw(st.permutations(range(len(scores))))
    return torch.tensor([scores[i] for i in perm]), torch.tensor([labels[i] for i in perm])


@settings(max_examples=80, deadline=None)
@given(grouped, st.booleans(), st.data())
def test_grpo_sums_to_zero_in_each_non_singleton_group(groups, norm, data):
    scores, labels = flatten(groups, data)
    adv = grpo(scores, labels, norm_by_std=norm)
    for label in labels.unique():
        members = labels == label
        if members.sum() > 1:
            assert abs(float(adv[members].sum())) < 1e-3
        else:
            assert float(adv[members]) == 0.0


@settings(max_examples=80, deadline=None)
@given(grouped, st.data())
def test_rloo_is_scaled_mean_baseline(groups, data):
    scores, labels = flatten(groups, data)
    adv = rloo(scores, labels)
    for label in labels.unique():
        members = labels == label
        n = int(members.sum())
        s = scores[members]
        expected = n / (n - 1) * (s - s.mean()) if n > 1 else torch.zeros_like(s)
        close(adv[members], expected, atol=1e-4)


@settings(max_examples=60, deadline=None)
@given(grouped, st.booleans(), st.data())
def test_group_estimators_are_vectorised_over_groups(groups, norm, data):
    # The whole batch at once == each group on its own (singleton policy "zero", which
    # does not look outside the group).
    scores, labels = flatten(groups, data)
    batch = {"grpo": grpo(scores, labels, norm_by_std=norm), "rloo": rloo(scores, labels)}
    for label in labels.unique():
        members = labels == label
        alone = {
            "grpo": grpo(scores[members], labels[members], norm_by_std=norm),
            "rloo": rloo(scores[members], labels[members]),
        }
        for name in batch:
            close(batch[name][members], alone[name], atol=1e-5)


@settings(max_examples=60, deadline=None)
@given(grouped, st.data())
def test_reinforce_pp_is_globally_whitened(groups, data):
    scores, labels = flatten(groups, data)
    adv = reinforce_pp(scores, labels)
    centred = scores - torch.stack([scores[labels == g].mean() for g in labels]).view(-1)
    if len(scores) > 1 and float(centred.std()) > 1e-2:
        assert abs(float(adv.mean())) < 1e-4
        assert abs(float(adv.std()) - 1.0) < 1e-3
