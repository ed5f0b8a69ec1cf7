"""Policy-gradient losses, KL penalties, entropy and loss aggregation.

Per-token tensors are ``[B, T]`` with ``response_mask [B, T]`` marking the loss tokens.
Losses are to be *minimised*. Metrics are detached 0-dim tensors (call ``.item()`` when
logging; keeping them as tensors avoids a device sync per micro-batch).
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

AggMode = Literal["token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"]
AGG_MODES: tuple[str, ...] = (
    "token-mean",
    "seq-mean-token-mean",
    "seq-mean-token-sum",
    "seq-mean-token-sum-norm",
)
KLKind = Literal["k1", "k2", "k3"]
KL_KINDS: tuple[str, ...] = ("k1", "k2", "k3")


def aggregate(
    loss_mat: Tensor, mask: Tensor, mode: AggMode = "token-mean", norm: float | None = None
) -> Tensor:
    """Reduce a per-token loss ``[B, T]`` over the tokens where ``mask`` is 1 to a scalar.

    With m_bt the mask, n_b = sum_t m_bt and S = the set of sequences with n_b > 0:

        token-mean               sum_bt m L / sum_bt m                (DAPO token-level loss, §3.3)
        seq-mean-token-mean      1/|S| sum_b (sum_t m L / n_b)        (original GRPO, per-sequence mean)
        seq-mean-token-sum       1/|S| sum_b  sum_t m L
        seq-mean-token-sum-norm  1/|S| sum_b (sum_t m L / norm)       (Dr. GRPO: a constant horizon)

    ``norm`` is the constant of the last mode (default ``T``, the padded length, which
    is constant only if the trainer pads to a fixed length — pass the generation budget
    to make it truly constant); it is ignored by the other modes. Sequences without any
    loss token are left out of the sequence means; with no loss token at all the result
    is 0 (and still differentiable). When every sequence has the same number L of loss
    tokens: token-mean == seq-mean-token-mean == seq-mean-token-sum / L, and
    seq-mean-token-sum-norm == token-mean * L / norm.
    """
    if mode not in AGG_MODES:
        raise ValueError(f"unknown aggregation mode {mode!r}; expected one of {', '.join(AGG_MODES)}")
    mask = torch.as_tensor(mask).bool()
    if loss_mat.shape != mask.shape:
        raise ValueError(f"loss_mat has shape {tuple(loss_mat.shape)}, mask {tuple(mask.shape)}")
    # where, not multiply: a NaN/inf on a padding token must not leak into the loss.
    masked = torch.where(mask, loss_mat, torch.zeros_like(loss_mat))
    m = mask.to(masked.dtype)
    if mode == "token-mean":
        return masked.sum() / m.sum().clamp(min=1)
    if loss_mat.dim() != 2:
        raise ValueError(f"sequence modes need a [B, T] loss, got shape {tuple(loss_mat.shape)}")
    tokens_per_seq = m.sum(-1)
    seq_sum = masked.sum(-1)
    n_seq = (tokens_per_seq > 0).sum().clamp(min=1)
    if mode == "seq-mean-token-mean":
        return (seq_sum / tokens_per_seq.clamp(min=1)).sum() / n_seq
    if mode == "seq-mean-token-sum":
        return seq_sum.sum() / n_seq
    norm = float(loss_mat.shape[-1]) if norm is None else float(norm)
    if norm <= 0:
        raise ValueError(f"norm must be > 0, got {norm}")
    return seq_sum.sum() / (n_seq * norm)


def ppo_clip_loss(
    logprobs: Tensor,
    old_logprobs: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.28,
    dual_clip: float | None = None,
    agg: AggMode = "token-mean",
    norm: float | None = None,
    token_weights: Tensor | None = None,
) -> tuple[Tensor, dict[str, Tensor]]:
    """PPO clipped surrogate with clip-higher and optional dual-clip, per token.

    r_t = exp(log pi(a_t) - log pi_old(a_t)); the per-token loss is

        L_t = max(-A_t r_t, -A_t clip(r_t, 1 - clip_low, 1 + clip_high))

    i.e. minus PPO's L^CLIP (Schulman et al. 2017, arXiv:1707.06347, eq. 7) with the
    asymmetric range of DAPO's Clip-Higher (Yu et al. 2025, arXiv:2503.14476, §3.1):
    a larger ``clip_high`` lets low-probability tokens grow, against entropy collapse.
    Dual-clip (Ye et al. 2020, arXiv:1912.09729, "dual-clip PPO"), for ``dual_clip = c > 1`` and
    A_t < 0 only, bounds the loss of a token whose ratio has blown up:

        L_t = min(L_t, -c A_t)

    The per-token loss is reduced with ``aggregate(L, response_mask, agg, norm)``, after
    multiplying it by ``token_weights`` when given (detached; e.g. the behaviour importance
    weights of decoupled PPO, see :func:`behaviour_weights`).

    Metrics (token-mean over loss tokens, detached): ``clip_fraction`` (tokens where
    the clipped branch is active, so their gradient is 0), ``dual_clip_fraction`` (only
    when dual-clip is on), ``approx_kl`` (Schulman's k3 estimate of KL(pi_old || pi):
    mean of (r - 1) - log r), ``ratio_mean``.
    """
    if clip_low <= 0 or clip_high <= 0:
        raise ValueError(f"clip_low and clip_high must be > 0, got {clip_low}, {clip_high}")
    if dual_clip is not None and dual_clip <= 1.0:
        raise ValueError(f"dual_clip must be > 1, got {dual_clip}")
    mask = torch.as_tensor(response_mask).bool()
    advantages = advantages.detach()
    # Padding may hold garbage log-probs; exp() of them must not produce inf/NaN.
    log_ratio = torch.where(mask, logprobs - old_logprobs.detach(), torch.zeros_like(logprobs))
    ratio = torch.exp(log_ratio)
    loss_unclipped = -advantages * ratio
    loss_clipped = -advantages * torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    loss_mat = torch.maximum(loss_unclipped, loss_clipped)
    if dual_clip is not None:
        loss_pre_dual = loss_mat
        loss_mat = torch.where(advantages < 0, torch.minimum(loss_mat, -dual_clip * advantages), loss_mat)
    if token_weights is not None:
        loss_mat = loss_mat * torch.where(mask, token_weights.detach(), torch.zeros_like(loss_mat))
    loss = aggregate(loss_mat, mask, agg, norm)

    with torch.no_grad():
        n = mask.sum().clamp(min=1)

        def token_mean(x: Tensor) -> Tensor:
            return torch.where(mask, x, torch.zeros_like(x)).sum() / n

        metrics = {
            "clip_fraction": token_mean((loss_clipped > loss_unclipped).to(ratio.dtype)),
            "approx_kl": token_mean((ratio - 1.0) - log_ratio),
            "ratio_mean": token_mean(ratio),
        }
        if dual_clip is not None:
            metrics["dual_clip_fraction"] = token_mean(
                ((advantages < 0) & (-dual_clip * advantages < loss_pre_dual)).to(ratio.dtype)
            )
        metrics = {k: v.detach() for k, v in metrics.items()}
    return loss, metrics


def behaviour_weights(prox_logprobs: Tensor, behaviour_logprobs: Tensor, response_mask: Tensor,
                      cap: float | None = None) -> Tensor:
    """Per-token importance weights pi_prox / pi_behaviour for off-policy (stale) rollouts.

    Decoupled PPO (Hilton, Cobbe & Schulman 2022, "Batch size-invariance for policy
    optimization", arXiv:2110.00641, eq. 2; used for asynchronous RL by AReaL, Fu et al.
    2025, arXiv:2505.24298, eq. 5) separates the *behaviour* policy that sampled the tokens
    (here: the rollout log-probs) from the *proximal* policy the clip is anchored to (the
    recomputed log-probs of the weights before this update):

        L_t = (pi_prox / pi_behav)(a_t) * max(-A_t r_t, -A_t clip(r_t, 1-e_low, 1+e_high)),
        r_t = pi_theta / pi_prox

    ``cap`` truncates the weight from above (truncated importance sampling; Ionides 2008,
    "Truncated importance sampling"; used against rollout/trainer mismatch by Yao et al.
    2025, "Your efficient RL framework secretly brings you off-policy RL training"). Padding
    gets weight 0; the result is detached.
    """
    mask = torch.as_tensor(response_mask).bool()
    log_w = torch.where(mask, prox_logprobs.detach() - behaviour_logprobs.detach(), torch.zeros_like(prox_logprobs))
    w = torch.exp(log_w.clamp(max=20.0))
    if cap is not None:
        if cap <= 0:
            raise ValueError(f"cap must be > 0, got {cap}")
        w = w.clamp(max=cap)
    return torch.where(mask, w, torch.zeros_like(w)).detach()


def kl_penalty(logprobs: Tensor, ref_logprobs: Tensor, kind: KLKind = "k3") -> Tensor:
    """Per-token estimator of KL(pi || pi_ref) from tokens sampled by pi (J. Schulman,
    "Approximating KL Divergence", 2020, http://joschu.net/blog/kl-approx.html).

    With x ~ pi and r = pi_ref(x) / pi(x), i.e. log r = ref_logprobs - logprobs:

        k1 = -log r                  unbiased, high variance, can be negative
        k2 = (log r)^2 / 2           biased (low bias near pi = pi_ref), always >= 0
        k3 = (r - 1) - log r         unbiased and always >= 0 (GRPO's KL term)

    Returns ``[B, T]`` (0-padding is the caller's business). Use it either as a loss
    term, ``coef * aggregate(kl_penalty(...), mask, mode)``, or as a reward penalty via
    ``apply_kl_to_rewards``. Note that k3 computes exp(log r); when the policy has moved
    far from the reference (log r > ~88 in float32) it overflows, as the math says.
    """
    if kind not in KL_KINDS:
        raise ValueError(f"unknown KL estimator {kind!r}; expected one of {', '.join(KL_KINDS)}")
    log_r = ref_logprobs - logprobs
    if kind == "k1":
        return -log_r
    if kind == "k2":
        return 0.5 * log_r.square()
    return torch.expm1(log_r) - log_r


def apply_kl_to_rewards(
    token_rewards: Tensor, kl: Tensor, coef: float, response_mask: Tensor | None = None
) -> Tensor:
    """In-reward KL penalty (Ouyang et al. 2022, InstructGPT, eq. 2; Ziegler et al. 2019):

        r'_t = r_t - coef * KL_t

    applied only on response tokens when ``response_mask`` is given (so observation and
    padding tokens stay reward-free, as the GAE estimators require). ``kl`` is detached:
    rewards are never differentiated.
    """
    penalty = coef * kl.detach()
    if response_mask is not None:
        penalty = torch.where(torch.as_tensor(response_mask).bool(), penalty, torch.zeros_like(penalty))
    return token_rewards - penalty


def entropy_from_logits(logits: Tensor) -> Tensor:
    """Entropy of the softmax distribution over the last dim, per position: ``[..., V] -> [...]``.

        H = -sum_v p_v log p_v,   log p = log_softmax(z)

    computed from ``log_softmax`` (stable for large logits); ``-inf`` logits (banned
    tokens) contribute 0 rather than NaN. Low-precision logits are upcast to float32.
    The entropy bonus of a PPO loss is ``-coef * aggregate(entropy_from_logits(z),
    response_mask, mode)`` (maximising entropy = minimising its negative).
    """
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()
    logp = torch.log_softmax(logits, dim=-1)
    p = logp.exp()
    return -torch.where(p > 0, p * logp, torch.zeros_like(p)).sum(-1)
