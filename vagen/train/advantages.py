"""From trajectories to per-token advantages: the glue between records and ``vagen.algos``.

Group estimators (grpo, rloo, reinforce_pp) score whole trajectories; GiGPO scores
turns (as does semi_online, UI-S1); the GAE family runs on each trajectory's *response-token view* — its generated
tokens in order, with the turn reward on each turn's last token and the critic's values —
which is exactly mask-aware GAE over the concatenated trajectory (observation tokens
skipped) whether the samples are per turn or per trajectory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from vagen import algos
from vagen.rollout.context import Sample
from vagen.rollout.records import Trajectory

GROUP_ESTIMATORS = ("grpo", "rloo", "reinforce_pp")
GAE_ESTIMATORS = ("gae", "turn_gae", "bilevel_gae")


def needs_critic(name: str) -> bool:
    return name in GAE_ESTIMATORS


def trajectory_scores(trajs: list[Trajectory]) -> tuple[torch.Tensor, torch.Tensor]:
    scores = torch.tensor([t.total_reward for t in trajs], dtype=torch.float32)
    groups = torch.tensor([t.group_id for t in trajs], dtype=torch.long)
    return scores, groups


def compute_advantages(algo, trajs: list[Trajectory], samples: list[Sample],
                       values: list[list[float]] | None = None) -> tuple[list[list[float]], list[list[float]] | None, dict[str, Any]]:
    """Per-sample, per-token advantages (and returns for the critic) aligned to sample ids."""
    name = algo.advantage
    index = {id(t): j for j, t in enumerate(trajs)}
    if name in GROUP_ESTIMATORS:
        scores, groups = trajectory_scores(trajs)
        if name == "grpo":
            adv = algos.grpo(scores, groups, norm_by_std=algo.norm_by_std)
        else:
            adv = algos.get_advantage(name)(scores, groups)
        per_traj = adv.tolist()
        out = [[per_traj[index[id(s.traj)]] * m for m in s.loss_mask] for s in samples]
        return out, None, {"adv/mean": float(adv.mean()), "adv/std": float(adv.std()) if len(adv) > 1 else 0.0}
    if name == "gigpo":
        return _gigpo(algo, trajs, samples, index)
    if name == "semi_online":
        return _semi_online(algo, trajs, samples, index)
    if name in GAE_ESTIMATORS:
        if values is None:
            raise ValueError(f"{name} needs critic values")
        return _gae_family(algo, trajs, samples, values, index)
    raise ValueError(f"unknown advantage estimator {name!r}")


@dataclass
class TurnRecords:
    """Every turn of a batch as flat columns (one row per turn), for the turn-level estimators;
    ``pos[(j, turn)]`` is the row of trajectory ``j``'s turn."""

    rewards: torch.Tensor
    traj_index: torch.Tensor
    turn_number: torch.Tensor
    matched: torch.Tensor          # the action took effect (replay env: it matched the expert's)
    anchor_keys: list[str]
    turn_groups: torch.Tensor      # the trajectory's group id
    pos: dict[tuple[int, int], int]


def turn_records(trajs: list[Trajectory]) -> TurnRecords:
    rows = [(j, t, u) for j, t in enumerate(trajs) for u in t.turns]
    return TurnRecords(rewards=torch.tensor([u.reward for _, _, u in rows], dtype=torch.float32),
                       traj_index=torch.tensor([j for j, _, _ in rows], dtype=torch.long),
                       turn_number=torch.tensor([u.turn for _, _, u in rows], dtype=torch.long),
                       matched=torch.tensor([u.action_effective for _, _, u in rows], dtype=torch.bool),
                       anchor_keys=[u.anchor_key for _, _, u in rows],
                       turn_groups=torch.tensor([t.group_id for _, t, _ in rows], dtype=torch.long),
                       pos={(j, u.turn): k for k, (j, _, u) in enumerate(rows)})


def _on_tokens(adv: list[float], rec: TurnRecords, samples: list[Sample], index) -> list[list[float]]:
    """Each response token gets its turn's advantage (0 elsewhere)."""
    out = []
    for s in samples:
        j = index[id(s.traj)]
        out.append([adv[rec.pos[(j, ti)]] if m else 0.0 for m, ti in zip(s.loss_mask, s.turn_index, strict=True)])
    return out


def _gigpo(algo, trajs, samples, index):
    scores, groups = trajectory_scores(trajs)
    rec = turn_records(trajs)
    adv = algos.gigpo(scores, groups, rec.rewards, rec.traj_index, rec.turn_number, rec.anchor_keys, rec.turn_groups,
                      omega=algo.gigpo_omega, gamma=algo.gigpo_gamma, norm_by_std=algo.norm_by_std).tolist()
    return _on_tokens(adv, rec, samples, index), None, {"adv/mean": sum(adv) / max(len(adv), 1)}


def semi_online_step_returns(algo, rec: TurnRecords) -> torch.Tensor:
    """UI-S1 step returns (cut at mismatches) for every row of ``rec``."""
    if not len(rec.rewards):
        return rec.rewards.clone()
    return algos.cut_step_returns(rec.rewards, rec.matched, rec.traj_index, rec.turn_number,
                                  gamma=algo.semi_online_gamma)


def _semi_online(algo, trajs, samples, index):
    """UI-S1: step returns cut at mismatches, (task, step) and task groups (``vagen.algos.semi_online``)."""
    rec = turn_records(trajs)
    episode = torch.tensor([t.total_reward for t in trajs], dtype=torch.float32)
    tasks = torch.tensor([t.group_id for t in trajs])
    adv, m = algos.semi_online_advantages(semi_online_step_returns(algo, rec), rec.traj_index, rec.turn_number,
                                          tasks, episode, step_weight=algo.semi_online_step_weight,
                                          episode_weight=algo.semi_online_episode_weight,
                                          norm_by_std=algo.norm_by_std)
    adv = adv.tolist()
    return _on_tokens(adv, rec, samples, index), None, {"adv/mean": sum(adv) / max(len(adv), 1), **m}


def _gae_family(algo, trajs, samples, values, index):
    # Response-token view per trajectory: (sample k, position p) of each generated token in order.
    views: list[list[tuple[int, int]]] = [[] for _ in trajs]
    for k, s in enumerate(samples):
        j = index[id(s.traj)]
        views[j].extend((k, p) for p, m in enumerate(s.loss_mask) if m)
    width = max((len(v) for v in views), default=1)
    n = len(trajs)
    rewards = torch.zeros(n, width)
    vals = torch.zeros(n, width)
    mask = torch.zeros(n, width)
    turn = torch.full((n, width), -1, dtype=torch.long)
    for j, view in enumerate(views):
        turn_reward = {u.turn: u.reward for u in trajs[j].turns}
        for q, (k, p) in enumerate(view):
            mask[j, q] = 1
            vals[j, q] = values[k][p]
            turn[j, q] = samples[k].turn_index[p]
        for q in range(len(view)):
            last_of_turn = q == len(view) - 1 or turn[j, q + 1] != turn[j, q]
            if last_of_turn:
                rewards[j, q] = turn_reward[int(turn[j, q])]
    if algo.advantage == "gae":
        adv, ret = algos.gae(rewards, vals, mask, algo.gamma, algo.lam)
    elif algo.advantage == "turn_gae":
        adv, ret = algos.turn_gae(rewards, vals, mask, turn, algo.gamma, algo.lam)
    else:
        adv, ret = algos.bilevel_gae(rewards, vals, mask, turn, algo.gamma, algo.lam, algo.gamma_token, algo.lam_token)
    out_adv = [[0.0] * len(s.input_ids) for s in samples]
    out_ret = [[0.0] * len(s.input_ids) for s in samples]
    for j, view in enumerate(views):
        for q, (k, p) in enumerate(view):
            out_adv[k][p] = float(adv[j, q])
            out_ret[k][p] = float(ret[j, q])
    valid = mask.bool()
    return out_adv, out_ret, {"adv/mean": float(adv[valid].mean()) if valid.any() else 0.0,
                              "critic/value_mean": float(vals[valid].mean()) if valid.any() else 0.0}
