"""Golden tests for point and relation matching (numbers computed by hand)."""

from __future__ import annotations

import math

import pytest

from vagen.rewards.matching import match_points, match_relations, prf


def test_golden_boxes_exact_tolerance():
    # gold {(1,1),(3,3)}, predicted {(1,1),(3,4),(5,5)}: only (1,1) is exact.
    m = match_points([(1, 1), (3, 4), (5, 5)], [(1, 1), (3, 3)], tol=0.0)
    assert (m.tp, m.n_pred, m.n_gold) == (1, 3, 2)
    assert m.precision == pytest.approx(1 / 3) and m.recall == pytest.approx(1 / 2)
    assert m.f1 == pytest.approx(0.4)  # 2 * (1/3 * 1/2) / (1/3 + 1/2) = (1/3) / (5/6)
    assert m.pairs == ((0, 0),)


def test_golden_boxes_with_tolerance_one():
    # (3,4) is 1 away from (3,3): now a hit; (5,5) is still too far from everything.
    m = match_points([(1, 1), (3, 4), (5, 5)], [(1, 1), (3, 3)], tol=1.0)
    assert m.tp == 2 and m.f1 == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))
    assert sorted(m.pairs) == [(0, 0), (1, 1)]


def test_hungarian_beats_greedy_and_min_total_distance():
    # p0=(0,0) sits exactly on g0=(0,0) and 1 away from g1=(1,0); p1=(0,-1) is 1 from g0
    # but sqrt(2) > tol from g1. Greedy (closest pair first) takes p0-g0 and leaves p1-g1:
    # 1 hit; plain min-total-distance also picks it (0 + 1.414 < 1 + 1). Optimal: 2 hits.
    pred, gold = [(0, 0), (0, -1)], [(0, 0), (1, 0)]
    m = match_points(pred, gold, tol=1.0)
    assert m.tp == 2 and m.f1 == 1.0
    assert sorted(m.pairs) == [(0, 1), (1, 0)]


def test_distance_exactly_tol_counts_and_float_tol():
    assert match_points([(0, 0)], [(3, 4)], tol=5.0).tp == 1
    assert match_points([(0, 0)], [(3, 4)], tol=4.99).tp == 0
    assert match_points([(0, 0)], [(1, 1)], tol=math.sqrt(2)).tp == 1


@pytest.mark.parametrize("pred,gold,expected", [
    ([], [], (1.0, 1.0, 1.0)),        # nothing to find, nothing claimed: perfect
    ([], [(1, 1)], (0.0, 0.0, 0.0)),  # missed everything
    ([(1, 1)], [], (0.0, 0.0, 0.0)),  # pure hallucination
])
def test_empty_conventions(pred, gold, expected):
    m = match_points(pred, gold)
    assert (m.precision, m.recall, m.f1) == expected


def test_duplicate_predictions_claim_one_gold_each():
    m = match_points([(1, 1), (1, 1)], [(1, 1)])
    assert (m.tp, m.precision, m.recall) == (1, 0.5, 1.0)


def test_relations_multiset():
    m = match_relations(["below", "below", "left"], ["below", "left", "left"])
    assert (m.tp, m.n_pred, m.n_gold) == (2, 3, 3)
    assert m.f1 == pytest.approx(2 / 3)
    m = match_relations(["above-left"], ["above", "left"])  # a diagonal is not its parts
    assert m.tp == 0 and m.f1 == 0.0
    m = match_relations(["same", "right"], ["right"])
    assert (m.tp, m.precision, m.recall) == (1, 0.5, 1.0)
    assert match_relations([], []).f1 == 1.0


def test_prf():
    assert prf(3, 5, 5) == pytest.approx((0.6, 0.6, 0.6))
    assert prf(0, 2, 3) == (0.0, 0.0, 0.0)
