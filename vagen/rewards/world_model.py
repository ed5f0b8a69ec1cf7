"""The world-modeling (WM) reward: how well an agent's stated beliefs match the true states.

VAGEN (Wang et al. 2025, "VAGEN: Reinforcing World Model Reasoning for Multi-Turn VLM
Agents", arXiv:2510.16907) rewards each turn's ``<observation>`` (belief about the
current state) and ``<prediction>`` (belief about the state after the turn's actions)
against the environment's ground truth, object by object. ``score_belief`` is that
per-object match for one parsed belief; ``WorldModelReward`` turns a turn's two texts
into logged scores and a reward, with a rule-based parser or an LLM judge.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from envs.base import StateSchema
from vagen.prompts.belief import REPRESENTATIONS, Belief, gold_points, parse_belief, reference_point, relation
from vagen.rewards.frequency import FrequencyTracker
from vagen.rewards.judge import JudgeItem, LLMJudge
from vagen.rewards.matching import match_points, match_relations, prf


def score_belief(belief: Belief, state: Mapping[str, Any], schema: StateSchema, *, tol: float = 0.0,
                 use_relations: bool = True, entities: Iterable[str] | None = None) -> dict[str, Any]:
    """Micro-averaged precision/recall/F1 of a belief's objects against ``state``.

    Per entity (the per-object match of the VAGEN paper):

    - objects described **with coordinates** are paired with the true objects by optimal
      (Hungarian) assignment; a pair within ``tol`` (Euclidean, cells) is a hit;
    - objects described **only by a relation** to the reference entity ("a box is below
      the player", natural language) are then matched, as a multiset, against the
      relations of the true objects that no coordinate claimed (with
      ``use_relations=False`` they are ignored: neither credited nor penalised);
    - ``n_pred`` counts every described object, ``n_gold`` every true one, so an entity
      not mentioned at all costs recall and a hallucinated object (or an entity the
      schema does not have) costs precision.

    Hits and counts are summed over entities (micro average): ``precision = Σtp/Σn_pred``,
    ``recall = Σtp/Σn_gold``; nothing predicted for an empty world scores 1. A belief that
    did not parse scores 0. ``entities`` restricts scoring to those entity names (e.g.
    only dynamic ones for a prediction).

    Returns ``{"f1", "precision", "recall", "tp", "n_pred", "n_gold", "per_entity"}`` where
    ``per_entity[name]`` has the same counts and ratios plus ``relation_tp``.
    """
    gold = gold_points(state, schema)
    ref = reference_point(gold, schema)
    names = [s.name for s in schema.entities]
    # Entities outside the schema can only be hallucinations: scored against no gold.
    names += [n for n in belief.entities if n not in gold]
    names += [n for n in belief.relation_only if n not in gold and n not in names]
    if entities is not None:
        keep = set(entities)
        names = [n for n in names if n in keep]
    per_entity: dict[str, dict[str, Any]] = {}
    tp_sum = pred_sum = gold_sum = 0
    for name in names:
        g = gold.get(name, [])
        pred = list(belief.entities.get(name, []))
        by_relation = list(belief.relation_only.get(name, [])) if use_relations else []
        points = match_points(pred, g, tol)
        rel_tp = 0
        if by_relation and ref is not None:
            claimed = {j for _, j in points.pairs}
            left = [relation(p, ref) for j, p in enumerate(g) if j not in claimed]
            rel_tp = match_relations(by_relation, left).tp
        tp, n_pred, n_gold = points.tp + rel_tp, len(pred) + len(by_relation), len(g)
        p, r, f = prf(tp, n_pred, n_gold)
        per_entity[name] = {"tp": tp, "n_pred": n_pred, "n_gold": n_gold, "precision": p, "recall": r,
                            "f1": f, "relation_tp": rel_tp}
        tp_sum, pred_sum, gold_sum = tp_sum + tp, pred_sum + n_pred, gold_sum + n_gold
    if not belief.parsed:
        precision = recall = f1 = 0.0
    else:
        precision, recall, f1 = prf(tp_sum, pred_sum, gold_sum)
    return {"f1": f1, "precision": precision, "recall": recall, "tp": tp_sum, "n_pred": pred_sum,
            "n_gold": gold_sum, "per_entity": per_entity}


Matcher = Literal["structured", "natural", "symbolic", "judge"]


@dataclass
class WorldModelRewardConfig:
    """How the WM reward is computed.

    ``representation`` is the belief format the agent was asked to write. ``matcher``
    picks the scorer: a rule-based parser (``structured``/``natural``/``symbolic``; it
    must be the representation's own, and ``None`` means exactly that) or ``judge`` (an
    :class:`LLMJudge`, whose verdict is the score). A component scoring below
    ``min_score_for_reward`` earns nothing. ``prediction_entities="dynamic"`` scores a
    prediction only on the schema's dynamic entities (rule-based matchers only).
    ``frequency_penalty > 0`` enables the :class:`FrequencyTracker` guard.
    """

    observation_weight: float = 0.5
    prediction_weight: float = 0.5
    representation: Literal["natural", "symbolic", "structured"] = "structured"
    matcher: Matcher | None = None
    #: None: the schema's own ``StateSchema.tolerance`` (0 on grids, millimetres in primitive_skill).
    tol: float | None = None
    use_relations: bool = True
    min_score_for_reward: float = 0.0
    prediction_entities: Literal["all", "dynamic"] = "all"
    frequency_penalty: float = 0.0
    frequency_window: int = 1024
    frequency_top_k: int = 8
    frequency_low_score: float = 0.5
    frequency_min_count: int = 3

    def __post_init__(self) -> None:
        if self.representation not in REPRESENTATIONS:
            raise ValueError(f"representation must be one of {REPRESENTATIONS}, got {self.representation!r}")
        if self.matcher is None:
            self.matcher = self.representation
        if self.matcher not in (*REPRESENTATIONS, "judge"):
            raise ValueError(f"matcher must be one of {(*REPRESENTATIONS, 'judge')}, got {self.matcher!r}")
        if self.matcher != "judge" and self.matcher != self.representation:
            raise ValueError(f"matcher {self.matcher!r} cannot parse {self.representation!r} beliefs; "
                             f"use matcher={self.representation!r} (or None) or 'judge'")
        if self.observation_weight < 0 or self.prediction_weight < 0:
            raise ValueError("observation_weight and prediction_weight must be >= 0")
        if (self.tol is not None and self.tol < 0) or self.frequency_penalty < 0:
            raise ValueError("tol and frequency_penalty must be >= 0")


@dataclass
class WorldModelItem:
    """One turn to score: the agent's two texts and the states before/after its actions."""

    observation_text: str | None
    prediction_text: str | None
    state_before: Mapping[str, Any] | None
    state_after: Mapping[str, Any] | None
    schema: StateSchema
    format_valid: bool = True


class WorldModelReward:
    """Scores turns; see :meth:`score` for the keys it returns.

    Holds state only for the frequency guard (one tracker per component), so use one
    instance per training run.
    """

    def __init__(self, config: WorldModelRewardConfig | None = None, judge: LLMJudge | None = None):
        self.config = config or WorldModelRewardConfig()
        if self.config.matcher == "judge" and judge is None:
            raise ValueError("matcher='judge' needs an LLMJudge")
        self.judge = judge
        c = self.config
        self._trackers = {
            part: FrequencyTracker(window=c.frequency_window, top_k=c.frequency_top_k, penalty=c.frequency_penalty,
                                   low_score=c.frequency_low_score, min_count=c.frequency_min_count)
            for part in ("observation", "prediction")
        } if c.frequency_penalty > 0 else {}

    def score(self, observation_text: str | None, prediction_text: str | None,
              state_before: Mapping[str, Any] | None, state_after: Mapping[str, Any] | None,
              schema: StateSchema, format_valid: bool = True) -> dict[str, float]:
        """Score one turn.

        Returns ``wm/observation`` (F1 or judge score of the observation against
        ``state_before``), ``wm/prediction`` (the prediction against ``state_after``),
        ``wm/reward`` = ``w_obs * obs + w_pred * pred - wm/frequency_penalty``,
        ``wm/frequency_penalty`` (>= 0), ``wm/observation_parsed``,
        ``wm/prediction_parsed`` and ``wm/judge_parse_errors``. Nothing is scored (all 0)
        when ``format_valid`` is False; a missing (None/blank) text or state scores 0, and
        the reward is 0 when a component with a positive weight is missing.
        """
        return self.score_batch([WorldModelItem(observation_text, prediction_text, state_before, state_after,
                                                schema, format_valid)])[0]

    def score_batch(self, items: Sequence[WorldModelItem | Mapping[str, Any]]) -> list[dict[str, float]]:
        """:meth:`score` for many turns; with the judge, one batched judge call for all."""
        turns = [it if isinstance(it, WorldModelItem) else WorldModelItem(**it) for it in items]
        c = self.config
        weights = {"observation": c.observation_weight, "prediction": c.prediction_weight}
        # (turn index, part) -> (text, state) for every component that can be scored.
        todo: dict[tuple[int, str], tuple[str, Mapping[str, Any]]] = {}
        for i, t in enumerate(turns):
            if not t.format_valid:
                continue
            for part, text, state in (("observation", t.observation_text, t.state_before),
                                      ("prediction", t.prediction_text, t.state_after)):
                if isinstance(text, str) and text.strip() and state is not None:
                    if c.matcher != "judge" or weights[part] > 0:
                        todo[(i, part)] = (text, state)
        scores, parsed, parse_errors = self._score_components(turns, todo)

        out = []
        for i, t in enumerate(turns):
            row = {"wm/observation": 0.0, "wm/prediction": 0.0, "wm/reward": 0.0, "wm/frequency_penalty": 0.0,
                   "wm/observation_parsed": 0.0, "wm/prediction_parsed": 0.0,
                   "wm/judge_parse_errors": float(parse_errors.get(i, 0))}
            for part in weights:
                row[f"wm/{part}"] = scores.get((i, part), 0.0)
                row[f"wm/{part}_parsed"] = 1.0 if parsed.get((i, part)) else 0.0
            complete = t.format_valid and all(w == 0 or (i, p) in todo for p, w in weights.items())
            if complete:
                reward = sum(w * self._gate(row[f"wm/{p}"]) for p, w in weights.items())
                penalty = 0.0
                for part, tracker in self._trackers.items():
                    if (i, part) in todo:
                        penalty += weights[part] * tracker.update(todo[(i, part)][0], row[f"wm/{part}"])
                row["wm/frequency_penalty"] = penalty
                row["wm/reward"] = reward - penalty
            out.append(row)
        return out

    async def ascore_batch(self, items: Sequence[WorldModelItem | Mapping[str, Any]]) -> list[dict[str, float]]:
        """:meth:`score_batch` from async code (parsing and judge calls run in a worker thread)."""
        return await asyncio.to_thread(self.score_batch, list(items))

    def _gate(self, score: float) -> float:
        return score if score >= self.config.min_score_for_reward else 0.0

    def _score_components(self, turns: list[WorldModelItem], todo: dict[tuple[int, str], tuple[str, Any]]):
        c = self.config
        scores: dict[tuple[int, str], float] = {}
        parsed: dict[tuple[int, str], bool] = {}
        parse_errors: dict[int, int] = {}
        if c.matcher == "judge":
            keys = list(todo)
            assert self.judge is not None
            verdicts = self.judge.judge([JudgeItem(todo[k][0], todo[k][1], turns[k[0]].schema, c.representation)
                                         for k in keys])
            for k, v in zip(keys, verdicts, strict=True):
                scores[k], parsed[k] = v.score, not v.parse_error
                parse_errors[k[0]] = parse_errors.get(k[0], 0) + int(v.parse_error)
            return scores, parsed, parse_errors
        for (i, part), (text, state) in todo.items():
            schema = turns[i].schema
            belief = parse_belief(text, schema, c.matcher)
            only = None
            if part == "prediction" and c.prediction_entities == "dynamic":
                only = [s.name for s in schema.entities if s.dynamic]
            tol = schema.tolerance if c.tol is None else c.tol
            result = score_belief(belief, state, schema, tol=tol, use_relations=c.use_relations, entities=only)
            scores[(i, part)], parsed[(i, part)] = result["f1"], belief.parsed
        return scores, parsed, parse_errors
