"""Critic-free, group-relative advantage estimators.

All functions take one score per trajectory (``scores[N]``) and the group each trajectory
belongs to (``group_index[N]``; a group = rollouts of the same env seed) and return one
advantage per trajectory ``[N]`` (``gigpo``: one per turn ``[M]``). Put them on tokens
with ``vagen.algos.broadcast_to_tokens``.

Singleton groups carry no within-group comparison. Every estimator here gives them
advantage 0 (``grpo`` can instead fall back to the batch mean, see ``singleton``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor

from vagen.algos.groups import as_float, check_1d, group_stats, stats_by_label

Singleton = Literal["zero", "raw"]


def _scores_and_groups(scores: Tensor, group_index: Tensor) -> tuple[Tensor, Tensor]:
    scores = as_float(scores)
    group_index = torch.as_tensor(group_index)
    check_1d("scores", scores)
    check_1d("group_index", group_index, scores.shape[0])
    return scores, group_index


@torch.no_grad()
def grpo(
    scores: Tensor,
    group_index: Tensor,
    norm_by_std: bool = True,
    eps: float = 1e-6,
    singleton: Singleton = "zero",
) -> Tensor:
    """GRPO outcome advantages (Shao et al. 2024, DeepSeekMath, arXiv:2402.03300, §4.1.2).

        A_i = (R_i - mean_g(R)) / (std_g(R) + eps)        norm_by_std=True  (GRPO)
        A_i =  R_i - mean_g(R)                            norm_by_std=False (Dr. GRPO)

    where ``g`` is trajectory ``i``'s group and ``std_g`` the unbiased group std.
    ``norm_by_std=False`` is Dr. GRPO (Liu et al. 2025, "Understanding R1-Zero-Like
    Training", arXiv:2503.20783): dividing by the group std up-weights groups that
    are nearly all-correct or all-wrong, a difficulty bias.

    Singleton groups (one trajectory) have no peers to compare with:
      - ``singleton="zero"``: advantage 0 (the trajectory is still trained on by other
        terms, e.g. KL, but gets no policy-gradient signal);
      - ``singleton="raw"``: ``R_i - mean(R over the whole batch)``, i.e. the batch mean
        is the baseline, not normalised by any std.

    Returns ``[N]``; within every non-singleton group the advantages sum to 0.
    """
    scores, group_index = _scores_and_groups(scores, group_index)
    if singleton not in ("zero", "raw"):
        raise ValueError(f"singleton must be 'zero' or 'raw', got {singleton!r}")
    st = stats_by_label(scores, group_index)
    centered = scores - st.mean[st.ids]
    adv = centered / (st.std[st.ids] + eps) if norm_by_std else centered
    alone = st.count[st.ids] == 1
    fallback = torch.zeros_like(scores) if singleton == "zero" else scores - scores.mean()
    return torch.where(alone, fallback, adv)


def dr_grpo(scores: Tensor, group_index: Tensor, singleton: Singleton = "zero") -> Tensor:
    """Dr. GRPO (Liu et al. 2025, arXiv:2503.20783): ``grpo`` without the std division.

        A_i = R_i - mean_g(R)

    Pair it with ``aggregate(..., mode="seq-mean-token-sum-norm")``, the paper's
    constant-length normaliser, to remove GRPO's length bias as well.
    """
    return grpo(scores, group_index, norm_by_std=False, singleton=singleton)


@torch.no_grad()
def rloo(scores: Tensor, group_index: Tensor) -> Tensor:
    """REINFORCE Leave-One-Out (Ahmadian et al. 2024, arXiv:2402.14740; Kool et al. 2019).

    Each trajectory's baseline is the mean score of the *other* members of its group:

        A_i = R_i - 1/(n-1) * sum_{j != i} R_j  =  n/(n-1) * (R_i - mean_g(R))

    with ``n`` the group size. Singleton groups (no other member) get 0.
    """
    scores, group_index = _scores_and_groups(scores, group_index)
    st = stats_by_label(scores, group_index)
    n = st.count[st.ids]
    others_sum = st.mean[st.ids] * n - scores
    adv = scores - others_sum / (n - 1).clamp(min=1)
    return torch.where(n > 1, adv, torch.zeros_like(scores))


@torch.no_grad()
def reinforce_pp(scores: Tensor, group_index: Tensor, eps: float = 1e-6) -> Tensor:
    """REINFORCE++ with baseline (Hu et al. 2025, arXiv:2501.03262v9, "REINFORCE++ w/ Baseline").

    The group-sampling variant of REINFORCE++: subtract the group mean (a local baseline,
    no local std), then normalise *globally* across the whole batch:

        A'_i = R_i - mean_g(R)
        A_i  = (A'_i - mean_batch(A')) / (std_batch(A') + eps)

    The paper argues the global normaliser is effectively unbiased (its dependence on any
    one sample vanishes as the batch grows), whereas GRPO's per-group std is not. We pick
    this variant rather than plain REINFORCE++ (global normalisation of the raw score)
    because our rollouts are always grouped by env seed. ``std_batch`` is unbiased; a
    batch with fewer than two trajectories gets all-zero advantages. Singleton groups
    have ``A'_i = 0`` and so sit at ``-mean_batch(A') / std``, i.e. near 0.
    """
    scores, group_index = _scores_and_groups(scores, group_index)
    st = stats_by_label(scores, group_index)
    centered = scores - st.mean[st.ids]
    if centered.numel() < 2:
        return torch.zeros_like(centered)
    return (centered - centered.mean()) / (centered.std() + eps)


@torch.no_grad()
def discounted_turn_returns(
    turn_rewards: Tensor, traj_index: Tensor, turn_number: Tensor, gamma: float, n_traj: int | None = None,
    continues: Tensor | None = None,
) -> Tensor:
    """Per-turn discounted return within each trajectory: ``R_t = r_t + gamma * R_{t+1}``.

    Turns are ordered by ``turn_number`` inside their trajectory ``traj_index``; the
    recursion runs once over the (small) number of turns, vectorised over trajectories.
    ``continues`` (bool per record, default all True) cuts the sum after a turn:
    ``R_t = r_t + gamma * c_t * R_{t+1}`` (semi-online RL cuts it at a mismatch).
    Returns ``[M]`` aligned with the input records.
    """
    turn_rewards = as_float(turn_rewards)
    m = turn_rewards.shape[0]
    traj_index = torch.as_tensor(traj_index)
    turn_number = torch.as_tensor(turn_number)
    check_1d("turn_rewards", turn_rewards)
    check_1d("traj_index", traj_index, m)
    check_1d("turn_number", turn_number, m)
    if m == 0:
        return turn_rewards.clone()
    if int(traj_index.min()) < 0 or int(turn_number.min()) < 0:
        raise ValueError("traj_index and turn_number must be >= 0")
    n_traj = int(traj_index.max()) + 1 if n_traj is None else n_traj
    n_turns = int(turn_number.max()) + 1
    flat = traj_index * n_turns + turn_number
    if torch.bincount(flat, minlength=n_traj * n_turns).max() > 1:
        raise ValueError("duplicate (traj_index, turn_number) turn records")
    dense = turn_rewards.new_zeros(n_traj * n_turns).index_put_((flat,), turn_rewards).view(n_traj, n_turns)
    present = torch.zeros(n_traj * n_turns, dtype=torch.bool, device=flat.device)
    present[flat] = True
    present = present.view(n_traj, n_turns)
    cont = torch.ones_like(dense)
    if continues is not None:
        continues = torch.as_tensor(continues, dtype=torch.bool)
        check_1d("continues", continues, m)
        cont = cont.view(-1).index_put_((flat,), continues.to(dense.dtype)).view(n_traj, n_turns)
    returns = torch.zeros_like(dense)
    carry = dense.new_zeros(n_traj)
    for k in reversed(range(n_turns)):
        ret_k = dense[:, k] + gamma * cont[:, k] * carry
        returns[:, k] = ret_k
        # A missing turn number is skipped: the next recorded turn counts as the next step.
        carry = torch.where(present[:, k], ret_k, carry)
    return returns.view(-1)[flat]


@torch.no_grad()
def gigpo(
    scores: Tensor,
    group_index: Tensor,
    turn_rewards: Tensor,
    traj_index: Tensor,
    turn_number: Tensor,
    anchor_keys: Sequence[str],
    turn_group_index: Tensor,
    omega: float = 1.0,
    gamma: float = 0.95,
    norm_by_std: bool = True,
    eps: float = 1e-6,
) -> Tensor:
    """Group-in-Group Policy Optimization (Feng et al. 2025, arXiv:2505.10978, NeurIPS 2025).

    Two nested group-relative advantages, no critic:

    1. Episode relative advantage — GRPO over trajectory scores within their env-seed group:
           A^E(tau_i) = (R(tau_i) - mean_g R) / F_norm,   F_norm = std_g (or 1)
       (``grpo(scores, group_index, norm_by_std)``; singleton groups -> 0).
    2. Step relative advantage (anchor-state grouping) — the discounted return of each turn
       inside its own trajectory,
           R_t = r_t + gamma * R_{t+1},
       is compared with the returns of every turn, across the trajectories of the same
       env group, that acted from the *same observation* (``anchor_keys[m]``, a hash of
       the observation without history):
           A^S(a_t) = (R_t - mean_{anchor} R) / F_norm_{anchor}
       Anchor groups are keyed by ``(turn_group_index, anchor_key)``; singleton anchor
       groups get A^S = 0 (no peer acted from that state).
    3. Group-in-group advantage:  A(a_t) = A^E(tau(t)) + omega * A^S(a_t).

    Inputs per turn record m (length M): ``turn_rewards``, ``traj_index`` (row of
    ``scores`` the turn belongs to), ``turn_number`` (order within the trajectory),
    ``anchor_keys`` and ``turn_group_index`` (must equal ``group_index[traj_index]``).
    ``norm_by_std`` applies to both levels. Returns per-turn advantages ``[M]``.
    """
    scores, group_index = _scores_and_groups(scores, group_index)
    turn_rewards = as_float(turn_rewards)
    m = turn_rewards.shape[0]
    traj_index = torch.as_tensor(traj_index)
    turn_group_index = torch.as_tensor(turn_group_index)
    check_1d("traj_index", traj_index, m)
    check_1d("turn_group_index", turn_group_index, m)
    if len(anchor_keys) != m:
        raise ValueError(f"anchor_keys has {len(anchor_keys)} entries, expected {m}")
    if m and (int(traj_index.max()) >= scores.shape[0] or int(traj_index.min()) < 0):
        raise ValueError("traj_index must index into scores")
    if not torch.equal(turn_group_index, group_index[traj_index]):
        raise ValueError("turn_group_index must equal group_index[traj_index]")

    episode_adv = grpo(scores, group_index, norm_by_std=norm_by_std, eps=eps)[traj_index]

    step_returns = discounted_turn_returns(turn_rewards, traj_index, turn_number, gamma, scores.shape[0])
    # Strings cannot live in a tensor: intern (group, key) pairs to ints once, per turn.
    anchor_ids: dict[tuple[int, str], int] = {}
    pairs = zip(turn_group_index.tolist(), anchor_keys, strict=True)
    labels = [anchor_ids.setdefault(pair, len(anchor_ids)) for pair in pairs]
    ids = torch.tensor(labels, dtype=torch.long, device=step_returns.device)
    st = group_stats(step_returns, ids, len(anchor_ids))
    centered = step_returns - st.mean[ids]
    step_adv = centered / (st.std[ids] + eps) if norm_by_std else centered
    step_adv = torch.where(st.count[ids] > 1, step_adv, torch.zeros_like(step_adv))

    return episode_adv + omega * step_adv
