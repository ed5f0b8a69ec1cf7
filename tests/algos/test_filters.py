"""StarPO-S and zero-variance filtering: golden keeps and metrics, invariants."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vagen.algos import drop_zero_variance, keep_all, starpo_s

# Four groups of three (labels 0..3), unbiased within-group stds:
#   g0 [0, 0, 0] -> 0;  g1 [0, 1, 2] -> 1;  g2 [0, 2, 4] -> 2;  g3 [1, 1, 4] -> sqrt(3) = 1.73205
SCORES = torch.tensor([0.0, 0, 0, 0, 1, 2, 0, 2, 4, 1, 1, 4])
GROUPS = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3])
S3 = math.sqrt(3)
STD_BEFORE = (0 + 1 + 2 + S3) / 4  # 1.18301


def kept_groups(keep):
    return sorted(set(GROUPS[keep].tolist()))


def test_starpo_s_top_fraction_golden():
    # keep_ratio .5 of 4 groups -> 2 highest-std groups: g2 (2) and g3 (1.732)
    keep, metrics = starpo_s(SCORES, GROUPS, keep_ratio=0.5)
    assert kept_groups(keep) == [2, 3]
    assert metrics["kept_fraction"] == pytest.approx(6 / 12)
    assert metrics["n_groups_kept"] == 2
    assert metrics["reward_std_before"] == pytest.approx(STD_BEFORE, abs=1e-6)
    assert metrics["reward_std_after"] == pytest.approx((2 + S3) / 2, abs=1e-6)


def test_starpo_s_keeps_at_least_one_group_and_rounds_up():
    # .25 * 4 = 1 group -> g2 only; .1 * 4 = .4 -> still 1; .6 * 4 = 2.4 -> ceil 3: g1, g2, g3
    assert kept_groups(starpo_s(SCORES, GROUPS, keep_ratio=0.25)[0]) == [2]
    assert kept_groups(starpo_s(SCORES, GROUPS, keep_ratio=0.1)[0]) == [2]
    assert kept_groups(starpo_s(SCORES, GROUPS, keep_ratio=0.6)[0]) == [1, 2, 3]
    assert starpo_s(SCORES, GROUPS, keep_ratio=1.0)[0].all()


def test_starpo_s_top_p_golden():
    # stds sorted: 2, 1.732, 1, 0 (total 4.732); cumulative shares .4226, .7887, 1.0, 1.0
    assert kept_groups(starpo_s(SCORES, GROUPS, 0.4, mode="top_p")[0]) == [2]
    assert kept_groups(starpo_s(SCORES, GROUPS, 0.5, mode="top_p")[0]) == [2, 3]
    assert kept_groups(starpo_s(SCORES, GROUPS, 0.9, mode="top_p")[0]) == [1, 2, 3]
    # p = 1 keeps exactly the groups with nonzero std (g0 carries no share)
    assert kept_groups(starpo_s(SCORES, GROUPS, 1.0, mode="top_p")[0]) == [1, 2, 3]


def test_starpo_s_top_p_all_zero_variance_keeps_everything():
    keep, metrics = starpo_s(torch.ones(4), torch.tensor([0, 0, 1, 1]), 0.5, mode="top_p")
    assert keep.all() and metrics["n_groups_kept"] == 2 and metrics["reward_std_after"] == 0.0


def test_starpo_s_ties_break_by_label():
    # two groups with equal std 1: the smaller label wins
    keep, _ = starpo_s(torch.tensor([0.0, 1, 5, 6]), torch.tensor([9, 9, 4, 4]), keep_ratio=0.5)
    assert keep.tolist() == [False, False, True, True]


def test_starpo_s_validation():
    with pytest.raises(ValueError, match="keep_ratio"):
        starpo_s(SCORES, GROUPS, keep_ratio=0.0)
    with pytest.raises(ValueError, match="mode"):
        starpo_s(SCORES, GROUPS, mode="top_k")


def test_drop_zero_variance_golden():
    keep, metrics = drop_zero_variance(SCORES, GROUPS)
    assert kept_groups(keep) == [1, 2, 3]
    assert metrics["kept_fraction"] == pytest.approx(9 / 12)
    assert metrics["n_groups_kept"] == 3
    assert metrics["reward_std_after"] == pytest.approx((1 + 2 + S3) / 3, abs=1e-6)


def test_drop_zero_variance_drops_singletons_and_near_ties():
    keep, _ = drop_zero_variance(
        torch.tensor([1.0, 1.0 + 1e-9, 3.0, 0.0, 1.0]), torch.tensor([0, 0, 1, 2, 2])
    )
    assert keep.tolist() == [False, False, False, True, True]


def test_keep_all():
    keep, metrics = keep_all(SCORES, GROUPS)
    assert keep.all() and metrics["kept_fraction"] == 1.0 and metrics["n_groups_kept"] == 4
    assert metrics["reward_std_after"] == pytest.approx(STD_BEFORE, abs=1e-6)


score = st.floats(-5, 5, allow_nan=False, width=32).map(lambda x: round(x, 1))


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.lists(score, min_size=1, max_size=4), min_size=1, max_size=8),
    st.floats(0.01, 1.0),
    st.sampled_from(["top_fraction", "top_p"]),
)
def test_starpo_s_keeps_whole_groups_with_the_highest_std(groups, ratio, mode):
    scores = torch.tensor([s for g in groups for s in g])
    labels = torch.tensor([k for k, g in enumerate(groups) for _ in g])
    keep, metrics = starpo_s(scores, labels, keep_ratio=ratio, mode=mode)
    stds = {k: (torch.tensor(g).std().item() if len(g) > 1 else 0.0) for k, g in enumerate(groups)}
    kept = {k for k in stds if keep[labels == k].all()}
    assert all(keep[labels == k].any() == (k in kept) for k in stds)  # whole groups only
    assert len(kept) >= 1 and metrics["n_groups_kept"] == len(kept)
    dropped = set(stds) - kept
    if kept and dropped:
        assert min(stds[k] for k in kept) >= max(stds[k] for k in dropped) - 1e-5
    if mode == "top_fraction":
        assert len(kept) == max(1, math.ceil(ratio * len(groups) - 1e-9))
    assert metrics["reward_std_after"] >= metrics["reward_std_before"] - 1e-5
