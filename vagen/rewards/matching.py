"""Matching predicted objects to true ones: the core of the world-modeling reward.

The VAGEN paper (Wang et al. 2025, "VAGEN: Reinforcing World Model Reasoning for
Multi-Turn VLM Agents", arXiv:2510.16907) scores a belief object by object: each
described object must be paired with a distinct true object. Pairing is a bipartite
assignment problem, so we solve it optimally with the Hungarian algorithm rather than
greedily (greedy nearest-neighbour pairing can use up the only partner of another
prediction and under-count).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment


@dataclass(frozen=True)
class MatchResult:
    """True positives and the precision/recall/F1 they give.

    ``pairs`` are the ``(pred_index, gold_index)`` pairs counted as true positives.
    """

    tp: int
    n_pred: int
    n_gold: int
    precision: float
    recall: float
    f1: float
    pairs: tuple[tuple[int, int], ...] = ()


def prf(tp: int, n_pred: int, n_gold: int) -> tuple[float, float, float]:
    """Precision, recall and F1 from counts.

    Convention: nothing predicted and nothing to find is a perfect answer (1, 1, 1);
    otherwise an empty side gives 0 for its ratio (no credit for saying nothing).
    """
    if n_pred == 0 and n_gold == 0:
        return 1.0, 1.0, 1.0
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f1


def result(tp: int, n_pred: int, n_gold: int, pairs: Sequence[tuple[int, int]] = ()) -> MatchResult:
    """A :class:`MatchResult` from counts."""
    p, r, f = prf(tp, n_pred, n_gold)
    return MatchResult(tp, n_pred, n_gold, p, r, f, tuple(pairs))


def match_points(pred: Sequence[Sequence[float]], gold: Sequence[Sequence[float]], tol: float = 0.0) -> MatchResult:
    """Optimally pair predicted with true points; a pair within ``tol`` (Euclidean) is a hit.

    The assignment maximises the number of hits first and, among those, minimises the
    total distance (so the reported pairs are the closest ones): the cost of a pair is its
    distance, plus a constant larger than any sum of distances when it is beyond ``tol``.
    Minimising plain total distance would not do: it can prefer two near misses over one
    exact hit and one miss.
    """
    n_pred, n_gold = len(pred), len(gold)
    if n_pred == 0 or n_gold == 0:
        return result(0, n_pred, n_gold)
    p = np.asarray(pred, dtype=float).reshape(n_pred, -1)
    g = np.asarray(gold, dtype=float).reshape(n_gold, -1)
    dist = np.sqrt(((p[:, None, :] - g[None, :, :]) ** 2).sum(-1))
    # 1e-9 absorbs float noise in sqrt, so a distance of exactly tol still counts.
    hit = dist <= tol + 1e-9
    finite = np.where(np.isfinite(dist), dist, 0.0)
    big = finite.max() * min(n_pred, n_gold) + 1.0
    cost = np.where(hit, finite, finite + big)
    rows, cols = linear_sum_assignment(cost)
    pairs = [(int(i), int(j)) for i, j in zip(rows, cols, strict=True) if hit[i, j]]
    return result(len(pairs), n_pred, n_gold, pairs)


def match_relations(pred_relations: Sequence[str], gold_relations: Sequence[str]) -> MatchResult:
    """Multiset matching of relation words: each true relation can be claimed once.

    ``["below", "below", "left"]`` against ``["below", "left", "left"]`` has 2 hits.
    """
    available: dict[str, list[int]] = defaultdict(list)
    for j, rel in enumerate(gold_relations):
        available[rel].append(j)
    pairs = []
    for i, rel in enumerate(pred_relations):
        if available.get(rel):
            pairs.append((i, available[rel].pop(0)))
    return result(len(pairs), len(pred_relations), len(gold_relations), pairs)
