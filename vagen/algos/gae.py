"""Critic-based advantage estimators over multi-turn token sequences.

Token layout (a batch of B concatenated multi-turn sequences padded to length T):

    token_rewards  [B, T]  reward on the LAST response token of each turn, 0 elsewhere
    values         [B, T]  critic value per token (read only where response_mask is 1)
    response_mask  [B, T]  1 on policy-generated tokens; 0 on prompt/observation/padding
    turn_index     [B, T]  turn number (0, 1, ...) of each response token, -1 elsewhere

Masked tokens (observations between turns, padding) are not steps of the agent: every
recursion below links a response token to the *next response token*, jumping over any
masked gap, exactly as if the masked tokens were deleted (RAGEN / VAGEN multi-turn GAE).
A nonzero reward on a masked token is rejected rather than silently dropped.

All recursions run backwards over time (or over turns) once, vectorised over the batch.
Advantages are returned raw; whiten them with ``masked_whiten`` if the recipe wants that.
"""

from __future__ import annotations

import torch
from torch import Tensor

from vagen.algos.groups import as_float


def _check_tokens(
    token_rewards: Tensor, values: Tensor, response_mask: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    rewards, values = as_float(token_rewards), as_float(values)
    mask = torch.as_tensor(response_mask).bool()
    if rewards.dim() != 2:
        raise ValueError(f"token_rewards must be [B, T], got shape {tuple(rewards.shape)}")
    for name, x in (("values", values), ("response_mask", mask)):
        if x.shape != rewards.shape:
            raise ValueError(f"{name} has shape {tuple(x.shape)}, expected {tuple(rewards.shape)}")
    if bool((rewards[~mask] != 0).any()):
        raise ValueError("token_rewards has nonzero rewards on masked (non-response) tokens")
    return rewards, values, mask


def _check_turns(turn_index: Tensor, mask: Tensor) -> Tensor:
    turn_index = torch.as_tensor(turn_index)
    if turn_index.shape != mask.shape:
        raise ValueError(f"turn_index has shape {tuple(turn_index.shape)}, expected {tuple(mask.shape)}")
    if bool((turn_index[mask] < 0).any()) or bool((turn_index[~mask] != -1).any()):
        raise ValueError("turn_index must be >= 0 on response tokens and -1 elsewhere")
    # Turns must appear in order along the sequence (a later turn never precedes an earlier one).
    running_max = torch.cummax(turn_index, dim=1).values
    if bool((running_max[mask] != turn_index[mask]).any()):
        raise ValueError("turn_index must be non-decreasing along each sequence")
    return turn_index.long()


def _masked_gae(
    rewards: Tensor, values: Tensor, mask: Tensor, gamma: float, lam: float
) -> tuple[Tensor, Tensor]:
    """The GAE recursion over the last dim, linking each unmasked step to the next unmasked one."""
    n_rows, length = rewards.shape
    advantages = torch.zeros_like(rewards)
    next_value = rewards.new_zeros(n_rows)  # V after the last step of the episode is 0
    next_adv = rewards.new_zeros(n_rows)
    for t in reversed(range(length)):
        m = mask[:, t]
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        adv_t = delta + gamma * lam * next_adv
        advantages[:, t] = torch.where(m, adv_t, 0.0)
        # Masked steps leave the carry untouched, so the gap is skipped.
        next_value = torch.where(m, values[:, t], next_value)
        next_adv = torch.where(m, adv_t, next_adv)
    returns = torch.where(mask, advantages + values, 0.0)
    return advantages, returns


@torch.no_grad()
def gae(
    token_rewards: Tensor, values: Tensor, response_mask: Tensor, gamma: float = 1.0, lam: float = 1.0
) -> tuple[Tensor, Tensor]:
    """Generalized Advantage Estimation over response tokens (Schulman et al. 2016, arXiv:1506.02438, §3, eqs. 11-16).

    With t' the next response token after t (observation gaps skipped, V = 0 after the
    last response token):

        delta_t = r_t + gamma * V(t') - V(t)                       (TD residual)
        A_t     = delta_t + gamma * lam * A_{t'}  = sum_l (gamma lam)^l delta_{t+l}   (GAE(gamma, lam))
        G_t     = A_t + V(t)                                       (critic target, TD(lambda) return)

    With gamma = lam = 1 and V = 0, A_t is the reward-to-go over response tokens.
    Returns ``(advantages [B, T], returns [B, T])``, both 0 on masked tokens.
    """
    rewards, values, mask = _check_tokens(token_rewards, values, response_mask)
    return _masked_gae(rewards, values, mask, gamma, lam)


def _turn_level(
    rewards: Tensor, values: Tensor, mask: Tensor, turn_index: Tensor, gamma_turn: float, lam_turn: float
) -> tuple[Tensor, Tensor, Tensor]:
    """Turn-level GAE. Returns (A_turn [B, K], V_turn [B, K], end_pos [B, K])."""
    n_rows, length = rewards.shape
    # At least one slot so a batch without response tokens needs no special case.
    n_turns = max(int(turn_index.max()) + 1, 1)
    slot = turn_index.clamp(min=0)
    # R_k = sum of the turn's token rewards (masked tokens carry none, checked above).
    turn_reward = rewards.new_zeros(n_rows, n_turns).scatter_add_(1, slot, torch.where(mask, rewards, 0.0))
    pos = torch.arange(length, device=rewards.device).expand(n_rows, length)
    end_pos = torch.full((n_rows, n_turns), -1, dtype=torch.long, device=rewards.device).scatter_reduce_(
        1, slot, torch.where(mask, pos, -1), reduce="amax"
    )
    present = end_pos >= 0  # a row may have fewer turns than the batch maximum
    turn_value = torch.where(present, values.gather(1, end_pos.clamp(min=0)), 0.0)
    turn_adv, _ = _masked_gae(turn_reward, turn_value, present, gamma_turn, lam_turn)
    return turn_adv, turn_value, end_pos


@torch.no_grad()
def turn_gae(
    token_rewards: Tensor,
    values: Tensor,
    response_mask: Tensor,
    turn_index: Tensor,
    gamma: float = 1.0,
    lam: float = 1.0,
) -> tuple[Tensor, Tensor]:
    """GAE at the turn level: each agent turn is one MDP step (turn-level PPO; RAGEN/VAGEN).

    For turn k of a sequence:
        R_k = sum of the turn's token rewards
        V_k = critic value at the turn's LAST response token, i.e. V(tau_{<=a_k}), the
              value once the turn's action text has been read (the same turn value the
              VAGEN paper and ``bilevel_gae`` use)
        delta_k = R_k + gamma * V_{k+1} - V_k        (V_K = 0 after the last turn)
        A_k     = delta_k + gamma * lam * A_{k+1}
        G_k     = A_k + V_k

    A_k and G_k are broadcast to every response token of turn k (one advantage and one
    critic target per turn). Returns ``(advantages [B, T], returns [B, T])``.
    """
    rewards, values, mask = _check_tokens(token_rewards, values, response_mask)
    turn_index = _check_turns(turn_index, mask)
    turn_adv, turn_value, _ = _turn_level(rewards, values, mask, turn_index, gamma, lam)
    slot = turn_index.clamp(min=0)
    advantages = torch.where(mask, turn_adv.gather(1, slot), 0.0)
    returns = torch.where(mask, (turn_adv + turn_value).gather(1, slot), 0.0)
    return advantages, returns


@torch.no_grad()
def bilevel_gae(
    token_rewards: Tensor,
    values: Tensor,
    response_mask: Tensor,
    turn_index: Tensor,
    gamma_turn: float = 0.95,
    lam_turn: float = 1.0,
    gamma_token: float = 1.0,
    lam_token: float = 1.0,
) -> tuple[Tensor, Tensor]:
    """Bi-Level GAE (VAGEN, Wang et al. 2025, arXiv:2510.16907, "Bi-Level GAE"; RAGEN's turn-aware GAE).

    Two nested GAEs, an agentic MDP over turns and a token MDP inside each turn.

    1. Turn level (exactly ``turn_gae``): for turn k with last response token e_k,
           R_k = sum of the turn's token rewards,  V_k = V(e_k)
           delta_k = R_k + gamma_turn * V_{k+1} - V_k,   A_k^turn = delta_k + gamma_turn lam_turn A_{k+1}^turn
    2. Token level, inside each turn, restarted at every turn end. The turn-level
       signal is injected at the turn's last token, whose token-MDP "reward" is the
       turn-level return G_k = A_k^turn + V_k with no bootstrap past the turn:
           A(e_k) = G_k - V(e_k) = A_k^turn
       and for the other tokens i of the turn (i' = next response token, same turn):
           delta_i = gamma_token * V(i') - V(i),   A(i) = delta_i + gamma_token lam_token A(i')
       Returns (critic targets) are A(i) + V(i); at e_k that is G_k.

    What we implemented, precisely, and why:
      - Turn values are read at the turn's LAST token (the paper's V(tau_{<=a_t});
        RAGEN's code does the same). Unrolling the token level with
        gamma_token = lam_token = 1 gives, at the turn's first token s_k,
        A(s_k) = A_k^turn + V(e_k) - V(s_k), so the first token is baselined by the
        value *before* the turn, which is what a state-value baseline should be.
      - Token rewards are credited once, at the turn level (R_k sums all of them, so a
        per-token KL penalty folded into the rewards counts toward its turn); the
        within-turn deltas carry only the critic's bootstrap terms. With rewards only on
        turn-end tokens (our layout) this equals the RAGEN/VAGEN reference recursion.
      - One lam per level (``lam_turn``, ``lam_token``); RAGEN shares one lam for both.
      - Observation gaps are skipped at both levels (see the module docstring).
      - No whitening inside (call ``masked_whiten`` if wanted).

    Invariants: at turn-end tokens the result equals ``turn_gae`` for any values; with
    gamma_token = lam_token = 1 and zero values it equals ``turn_gae`` on every token.
    Returns ``(advantages [B, T], returns [B, T])``.
    """
    rewards, values, mask = _check_tokens(token_rewards, values, response_mask)
    turn_index = _check_turns(turn_index, mask)
    turn_adv, _, end_pos = _turn_level(rewards, values, mask, turn_index, gamma_turn, lam_turn)
    n_rows, length = rewards.shape
    slot = turn_index.clamp(min=0)
    pos = torch.arange(length, device=rewards.device).expand(n_rows, length)
    is_end = mask & (pos == end_pos.gather(1, slot))
    injected = turn_adv.gather(1, slot)  # A_k^turn on every token of turn k

    advantages = torch.zeros_like(rewards)
    next_value = rewards.new_zeros(n_rows)
    next_adv = rewards.new_zeros(n_rows)
    for t in reversed(range(length)):
        m = mask[:, t]
        inner = gamma_token * next_value - values[:, t] + gamma_token * lam_token * next_adv
        # At a turn end the token recursion restarts from the turn-level advantage.
        adv_t = torch.where(is_end[:, t], injected[:, t], inner)
        advantages[:, t] = torch.where(m, adv_t, 0.0)
        next_value = torch.where(m, values[:, t], next_value)
        next_adv = torch.where(m, adv_t, next_adv)
    returns = torch.where(mask, advantages + values, 0.0)
    return advantages, returns
