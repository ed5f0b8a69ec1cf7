"""Success rates with Wilson confidence intervals: the one aggregation used by eval and training.

``vagen eval`` summaries, the leaderboard and the trainer's validation all report success
through this module, so a number printed during training and the same policy's number in a
leaderboard are computed the same way.

The denominator of every rate is the *manifest* (the episodes a run was asked to play), not
the episodes that happened to finish: an episode with no result line (a killed run) counts
as a failure and as ``missing``; an ``infra_error`` or ``agent_error`` episode counts as a
failure (score 0) and is also counted separately, so a flaky sandbox is visible instead of
silently shrinking the denominator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Z_95 = 1.959964  # the 97.5% quantile of the standard normal: a two-sided 95% interval
ERROR_STATUSES = ("infra_error", "agent_error")


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (Wilson, 1927, JASA 22(158):209-212).

    With p = successes / n::

        centre    = (p + z^2 / 2n) / (1 + z^2 / n)
        halfwidth = z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / 4n^2)

    Unlike the normal (Wald) interval it stays inside [0, 1] and is not degenerate at 0/n or
    n/n, which matters for small eval suites. ``n == 0`` carries no information: (0.0, 1.0).
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n))
    # At p = 0 (p = 1) the exact lower (upper) bound is 0 (1); set it rather than keep float noise.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


@dataclass
class SuccessStats:
    """Aggregate of one group of episodes (a run, a suite, a domain).

    ``n`` is the denominator (the manifest size when known); ``rate`` is successes / n with
    its Wilson 95% interval ``[ci_low, ci_high]``. ``mean_score`` is over all n episodes
    (errors and missing episodes score 0). ``mean_steps``, ``tokens_per_episode`` and
    ``wall_s_per_episode`` are over episodes that have a result line. Undefined means
    (nothing to average) are NaN.
    """

    n: int
    successes: int
    rate: float
    ci_low: float
    ci_high: float
    mean_score: float
    mean_steps: float
    infra_errors: int
    agent_errors: int
    missing: int
    tokens_per_episode: float
    wall_s_per_episode: float


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _is_success(row: dict) -> bool:
    # An errored episode is a failure even if a partial run flagged success.
    return bool(row.get("success")) and row.get("status", "ok") not in ERROR_STATUSES


def _score(row: dict) -> float:
    if row.get("status", "ok") in ERROR_STATUSES:
        return 0.0
    score = row.get("score")
    # Suites without a graded score (score null) score their success.
    return float(score) if score is not None else float(_is_success(row))


def _numbers(results: list[dict], key: str) -> list[float]:
    return [float(r[key]) for r in results if isinstance(r.get(key), int | float) and not isinstance(r[key], bool)]


def aggregate(results: list[dict], manifest_size: int | None = None) -> SuccessStats:
    """Aggregate result rows (``results.jsonl`` objects) into a :class:`SuccessStats`.

    ``manifest_size`` is how many episodes were asked for; when it exceeds ``len(results)``
    the difference is counted as ``missing`` and as failures. Without it the results are the
    denominator. Rows need ``success`` and may carry ``status``, ``score``, ``steps``,
    ``tokens`` and ``wall_s``; a row without ``status`` is taken as ``ok``.
    """
    if manifest_size is not None and manifest_size < 0:
        raise ValueError(f"manifest_size must be >= 0, got {manifest_size}")
    n = max(len(results), manifest_size or 0)
    successes = sum(_is_success(r) for r in results)
    low, high = wilson_interval(successes, n)
    return SuccessStats(
        n=n,
        successes=successes,
        rate=successes / n if n else math.nan,
        ci_low=low,
        ci_high=high,
        mean_score=sum(_score(r) for r in results) / n if n else math.nan,
        mean_steps=_mean(_numbers(results, "steps")),
        infra_errors=sum(r.get("status") == "infra_error" for r in results),
        agent_errors=sum(r.get("status") == "agent_error" for r in results),
        missing=n - len(results),
        tokens_per_episode=_mean(_numbers(results, "tokens")),
        wall_s_per_episode=_mean(_numbers(results, "wall_s")),
    )


def success_rate(successes: list[bool]) -> dict[str, float | int]:
    """Success rate of a list of episode outcomes with its Wilson 95% interval.

    Returns ``{"rate", "ci_low", "ci_high", "n"}`` (rate is NaN for an empty list); used by
    training validation so its numbers match ``vagen eval``'s.
    """
    n, k = len(successes), sum(bool(s) for s in successes)
    low, high = wilson_interval(k, n)
    return {"rate": k / n if n else math.nan, "ci_low": low, "ci_high": high, "n": n}
