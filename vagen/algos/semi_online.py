"""Semi-online RL on offline trajectories (UI-S1: Lu et al. 2025, "UI-S1: Advancing GUI
Automation via Semi-online Reinforcement Learning", arXiv:2509.11543): step returns that
stop at mismatches, step- and episode-level group advantages, and the task filter.

The rollout replays an expert trajectory while keeping the model's own history: every step
``t`` has a reward ``r_t`` (format + action match, ``envs.replay``) and a flag ``m_t``
(the model's action matched the expert's). Steps after a mismatch are still played when a
patch replaced the wrong history entry, but what happens there is owed to the patch, not to
the action at ``t``; so the discounted return is cut at a mismatch:

    R_t = r_t + gamma * m_t * R_{t+1}            (gamma = 0.5 by default, as in UI-S1)

Advantages (UI-S1 §3.3, "semi-online policy optimisation"):

    A^S_t = (R_t - mean_{(task, t)} R) / std_{(task, t)} R     step level: the same task, the same step
    A^E   = (G   - mean_{task} G)     / std_{task} G             episode level, G = sum_t r_t
    A_t   = w_E * A^E + w_S * A^S_t                              (w_E = w_S = 1 by default)

A group with one member has no peers: its advantage is 0 (as ``grpo(singleton="zero")``).
Group statistics are the shared ``vagen.algos.groups`` scatters (unbiased std, no Python loop
per step record); the return recursion is ``discounted_turn_returns`` (a loop over step
*positions* only, vectorised over trajectories) with the sum cut at mismatches.

:func:`uis1_task_filter` keeps a task only when the std of its step-0 returns across the
group exceeds a threshold (0.3 in UI-S1): a task every rollout solves (or fails) alike
teaches nothing.
"""

from __future__ import annotations

import torch
from torch import Tensor

from vagen.algos.group_advantages import discounted_turn_returns, grpo
from vagen.algos.groups import as_float, check_1d, dense_ids, stats_by_label


def cut_step_returns(step_rewards: Tensor, matched: Tensor, traj_index: Tensor, step_number: Tensor,
                     gamma: float = 0.5) -> Tensor:
    """``R_t = r_t + gamma * m_t * R_{t+1}`` inside each trajectory (see the module docstring):
    ``discounted_turn_returns`` with the sum cut after every mismatched step.

    ``matched[i]``: step record ``i``'s action matched the expert's. Records are ordered by
    ``step_number`` within ``traj_index``; the last recorded step has ``R = r``. Returns ``[M]``.
    """
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    return discounted_turn_returns(step_rewards, traj_index, step_number, gamma, continues=matched)


def semi_online_advantages(step_returns: Tensor, traj_index: Tensor, step_number: Tensor, task_index: Tensor,
                           episode_returns: Tensor, step_weight: float = 1.0, episode_weight: float = 1.0,
                           norm_by_std: bool = True, eps: float = 1e-6) -> tuple[Tensor, dict[str, float]]:
    """Per step record: ``episode_weight * A^E(traj) + step_weight * A^S(step)``.

    ``episode_returns[j]`` is trajectory ``j``'s return ``G_j`` (indexed by ``traj_index``),
    ``task_index[j]`` its task (the group: rollouts of the same expert trajectory). Returns
    ``[M]`` advantages aligned with the step records, and the mean |A^S| / |A^E| for logging.
    """
    step_returns = as_float(step_returns)
    traj_index, step_number = torch.as_tensor(traj_index), torch.as_tensor(step_number)
    task_index, episode_returns = torch.as_tensor(task_index), as_float(episode_returns)
    m = step_returns.shape[0]
    check_1d("step_returns", step_returns)
    check_1d("traj_index", traj_index, m)
    check_1d("step_number", step_number, m)
    check_1d("task_index", task_index)
    check_1d("episode_returns", episode_returns, task_index.shape[0])
    if m == 0:
        return step_returns.clone(), {"adv/step_abs": 0.0, "adv/episode_abs": 0.0}
    a_e = grpo(episode_returns, task_index, norm_by_std=norm_by_std, eps=eps)     # [N] per trajectory
    n_steps = int(step_number.max()) + 1
    task_of_step = task_index[traj_index]
    tid, _ = dense_ids(task_of_step)
    st = stats_by_label(step_returns, tid * n_steps + step_number)                # groups: (task, step)
    centered = step_returns - st.mean[st.ids]
    a_s = centered / (st.std[st.ids] + eps) if norm_by_std else centered
    a_s = torch.where(st.count[st.ids] == 1, torch.zeros_like(a_s), a_s)
    adv = episode_weight * a_e[traj_index] + step_weight * a_s
    return adv, {"adv/step_abs": float(a_s.abs().mean()), "adv/episode_abs": float(a_e.abs().mean())}


def uis1_task_filter(step0_returns: Tensor, task_index: Tensor, min_std: float = 0.3) -> tuple[Tensor, dict[str, float]]:
    """Keep trajectory ``j`` iff the (unbiased) std of step-0 returns in its task's group
    is > ``min_std``. Returns the ``[N]`` bool mask and the kept fraction of tasks."""
    r0 = as_float(step0_returns)
    task_index = torch.as_tensor(task_index)
    check_1d("step0_returns", r0)
    check_1d("task_index", task_index, r0.shape[0])
    if r0.shape[0] == 0:
        return torch.zeros(0, dtype=torch.bool), {"kept_fraction": 0.0, "tasks": 0.0}
    st = stats_by_label(r0, task_index)
    keep_group = st.std > min_std
    return keep_group[st.ids], {"kept_fraction": float(keep_group.float().mean()), "tasks": float(st.n_groups)}


__all__ = ["cut_step_returns", "semi_online_advantages", "uis1_task_filter"]
