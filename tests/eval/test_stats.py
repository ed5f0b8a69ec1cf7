"""Wilson intervals and the manifest-denominator aggregation shared by eval and training."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vagen.eval.stats import SuccessStats, aggregate, success_rate, wilson_interval


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [(0, 10, 0.0, 0.2775), (10, 10, 0.7225, 1.0), (5, 10, 0.2366, 0.7634), (3, 4, 0.3006, 0.9544),
     (1, 100, 0.0018, 0.0545)],
)
def test_wilson_known_values(k, n, low, high):
    lo, hi = wilson_interval(k, n)
    assert lo == pytest.approx(low, abs=1e-3)
    assert hi == pytest.approx(high, abs=1e-3)


def test_wilson_empty_and_invalid():
    assert wilson_interval(0, 0) == (0.0, 1.0)
    for k, n in ((-1, 5), (6, 5), (0, -1)):
        with pytest.raises(ValueError, match="successes"):
            wilson_interval(k, n)


def test_wilson_wider_for_higher_confidence():
    lo95, hi95 = wilson_interval(7, 20)
    lo99, hi99 = wilson_interval(7, 20, z=2.575829)
    assert lo99 < lo95 and hi99 > hi95


@given(st.integers(min_value=1, max_value=500), st.data())
def test_wilson_invariants(n, data):
    k = data.draw(st.integers(min_value=0, max_value=n))
    lo, hi = wilson_interval(k, n)
    assert 0.0 <= lo <= k / n <= hi <= 1.0
    # Symmetric under swapping successes and failures.
    mlo, mhi = wilson_interval(n - k, n)
    assert lo == pytest.approx(1 - mhi, abs=1e-12) and hi == pytest.approx(1 - mlo, abs=1e-12)
    # Monotone in the number of successes.
    if k < n:
        nlo, nhi = wilson_interval(k + 1, n)
        assert nlo >= lo and nhi >= hi


def _row(success: bool, status: str = "ok", score: float | None = None, steps: int = 5, tokens: int = 100,
         wall_s: float = 2.0) -> dict:
    return {"success": success, "status": status, "score": score, "steps": steps, "tokens": tokens,
            "wall_s": wall_s}


def test_aggregate_manifest_is_the_denominator():
    results = [
        _row(True, score=1.0, steps=3, tokens=10, wall_s=1.0),
        _row(True, score=1.0, steps=3, tokens=10, wall_s=1.0),
        _row(True, score=1.0, steps=3, tokens=10, wall_s=1.0),
        _row(False, score=0.2, steps=10, tokens=50, wall_s=4.0),
        _row(False, status="infra_error", score=None, steps=0, tokens=0, wall_s=0.0),
        # An agent_error is a failure with score 0 whatever the row claims.
        _row(True, status="agent_error", score=0.5, steps=2, tokens=30, wall_s=6.0),
    ]
    s = aggregate(results, manifest_size=10)
    assert isinstance(s, SuccessStats)
    assert (s.n, s.successes, s.missing, s.infra_errors, s.agent_errors) == (10, 3, 4, 1, 1)
    assert s.rate == pytest.approx(0.3)
    assert (s.ci_low, s.ci_high) == pytest.approx(wilson_interval(3, 10))
    assert s.mean_score == pytest.approx((3 * 1.0 + 0.2) / 10)
    # Per-episode costs are over the six episodes that have a result line.
    assert s.mean_steps == pytest.approx((3 * 3 + 10 + 0 + 2) / 6)
    assert s.tokens_per_episode == pytest.approx((3 * 10 + 50 + 0 + 30) / 6)
    assert s.wall_s_per_episode == pytest.approx((3 * 1.0 + 4.0 + 0.0 + 6.0) / 6)


def test_aggregate_without_or_below_manifest_uses_results():
    results = [_row(True), _row(False), _row(False)]
    for manifest_size in (None, 2):
        s = aggregate(results, manifest_size=manifest_size)
        assert (s.n, s.successes, s.missing) == (3, 1, 0)
        assert s.rate == pytest.approx(1 / 3)


def test_aggregate_score_defaults_to_success():
    s = aggregate([_row(True, score=None), _row(False, score=None)])
    assert s.mean_score == pytest.approx(0.5)


def test_aggregate_nothing_finished():
    s = aggregate([], manifest_size=5)
    assert (s.n, s.successes, s.missing, s.rate, s.mean_score) == (5, 0, 5, 0.0, 0.0)
    assert math.isnan(s.mean_steps) and math.isnan(s.tokens_per_episode)
    empty = aggregate([])
    assert empty.n == 0 and math.isnan(empty.rate) and (empty.ci_low, empty.ci_high) == (0.0, 1.0)
    with pytest.raises(ValueError, match="manifest_size"):
        aggregate([], manifest_size=-1)


def test_success_rate_wrapper():
    out = success_rate([True, False, True, True])
    assert out["n"] == 4 and out["rate"] == pytest.approx(0.75)
    assert (out["ci_low"], out["ci_high"]) == pytest.approx(wilson_interval(3, 4))
    empty = success_rate([])
    assert empty["n"] == 0 and math.isnan(empty["rate"]) and (empty["ci_low"], empty["ci_high"]) == (0.0, 1.0)
