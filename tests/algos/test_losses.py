"""PPO clip loss, KL estimators, entropy and aggregation: golden values and invariants."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

from vagen.algos import (
    AGG_MODES,
    aggregate,
    apply_kl_to_rewards,
    entropy_from_logits,
    kl_penalty,
    ppo_clip_loss,
)

# Four loss tokens with ratios r = 1, 1.5, .5, 3 and advantages 1, 1, -1, -1;
# clip range [1 - .2, 1 + .28] = [.8, 1.28]. Per token, L = max(-A r, -A clip(r)):
#   t0: r=1,   A=+1: max(-1, -1)       = -1     (not clipped)
#   t1: r=1.5, A=+1: max(-1.5, -1.28)  = -1.28  (clipped)
#   t2: r=.5,  A=-1: max(.5, .8)       = .8     (clipped)
#   t3: r=3,   A=-1: max(3, 1.28)      = 3      (unclipped: ratio up, advantage negative)
# token-mean: (-1 - 1.28 + .8 + 3) / 4 = .38
# dual-clip c=2 caps t3 at -c A = 2: (-1 - 1.28 + .8 + 2) / 4 = .13
RATIO = torch.tensor([[1.0, 1.5], [0.5, 3.0]])
ADV = torch.tensor([[1.0, 1.0], [-1.0, -1.0]])
OLD = torch.tensor([[-1.0, -2.0], [-0.5, -3.0]])
MASK = torch.ones(2, 2, dtype=torch.bool)


def close(actual, expected, atol=1e-5):
    assert_close(actual, torch.as_tensor(expected, dtype=actual.dtype), atol=atol, rtol=1e-5)


def logprobs():
    return (OLD + RATIO.log()).requires_grad_(True)


def test_ppo_clip_golden_loss_and_metrics():
    loss, metrics = ppo_clip_loss(logprobs(), OLD, ADV, MASK)
    close(loss, 0.38)
    close(metrics["clip_fraction"], 0.5)  # t1, t2
    close(metrics["ratio_mean"], 1.5)  # (1 + 1.5 + .5 + 3) / 4
    # k3 = (r - 1) - log r: 0, .5 - .405465, -.5 + .693147, 2 - 1.098612 -> mean .2972675
    close(metrics["approx_kl"], (0.5 - math.log(1.5) - 0.5 + math.log(2) + 2 - math.log(3)) / 4)
    assert "dual_clip_fraction" not in metrics
    assert all(not v.requires_grad and v.dim() == 0 for v in metrics.values())


def test_ppo_dual_clip_golden():
    loss, metrics = ppo_clip_loss(logprobs(), OLD, ADV, MASK, dual_clip=2.0)
    close(loss, 0.13)
    close(metrics["dual_clip_fraction"], 0.25)  # t3 only
    with pytest.raises(ValueError, match="dual_clip"):
        ppo_clip_loss(logprobs(), OLD, ADV, MASK, dual_clip=1.0)


def test_ppo_golden_gradients():
    # dL/dlogp_t = -A_t r_t / 4 where unclipped, 0 where clipped:
    #   t0: -1 * 1 / 4 = -.25; t1, t2: 0; t3: +1 * 3 / 4 = .75 (0 with dual clip)
    lp = logprobs()
    ppo_clip_loss(lp, OLD, ADV, MASK)[0].backward()
    close(lp.grad, [[-0.25, 0.0], [0.0, 0.75]])
    lp = logprobs()
    ppo_clip_loss(lp, OLD, ADV, MASK, dual_clip=2.0)[0].backward()
    close(lp.grad, [[-0.25, 0.0], [0.0, 0.0]])


def test_ppo_symmetric_clip_and_masking():
    # clip_high = .2: t1's clipped loss becomes -1.2. Masking t3 out: (-1 - 1.2 + .8) / 3
    mask = torch.tensor([[1, 1], [1, 0]], dtype=torch.bool)
    lp = logprobs().detach().clone()
    lp[1, 1] = math.inf  # garbage log-prob on a masked token must not reach the loss
    loss, metrics = ppo_clip_loss(lp, OLD, ADV, mask, clip_high=0.2)
    close(loss, (-1 - 1.2 + 0.8) / 3)
    close(metrics["ratio_mean"], 1.0)  # (1 + 1.5 + .5) / 3


def test_ppo_seq_mean_token_sum():
    # per-sequence sums: row 0: -1 - 1.28 = -2.28; row 1: .8 + 3 = 3.8 -> mean .76
    loss, _ = ppo_clip_loss(logprobs(), OLD, ADV, MASK, agg="seq-mean-token-sum")
    close(loss, 0.76)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.floats(-2, 2), st.floats(-3, 3)), min_size=1, max_size=12),
    st.sampled_from([None, 1.5, 3.0]),
)
def test_ppo_gradient_is_zero_exactly_on_clipped_tokens(tokens, dual):
    log_ratio = torch.tensor([[lr for lr, _ in tokens]])
    adv = torch.tensor([[a for _, a in tokens]])
    old = torch.zeros_like(log_ratio)
    lp = log_ratio.clone().requires_grad_(True)
    mask = torch.ones_like(lp, dtype=torch.bool)
    ppo_clip_loss(lp, old, adv, mask, dual_clip=dual)[0].backward()
    r = log_ratio.exp()
    unclipped, clipped = -adv * r, -adv * r.clamp(0.8, 1.28)
    cut = clipped > unclipped + 1e-6
    if dual is not None:
        cut |= (adv < 0) & (-dual * adv < torch.maximum(unclipped, clipped) - 1e-6)
    live = ~cut & (clipped < unclipped - 1e-6)  # strictly on the unclipped branch
    n = log_ratio.numel()
    assert (lp.grad[cut] == 0).all()
    close(lp.grad[live], (-adv * r / n)[live])


def test_ratio_one_loss_is_minus_mean_advantage():
    adv = torch.tensor([[0.3, -1.2, 2.0]])
    lp = torch.zeros(1, 3)
    loss, metrics = ppo_clip_loss(lp, lp, adv, torch.ones(1, 3, dtype=torch.bool))
    close(loss, -adv.mean())
    close(metrics["clip_fraction"], 0.0)
    close(metrics["approx_kl"], 0.0)


# ---- aggregation ----

# loss [[1, 2, 3], [4, x, x]] with mask [[1, 1, 1], [1, 0, 0]]:
#   token-mean               (1 + 2 + 3 + 4) / 4           = 2.5
#   seq-mean-token-mean      (6/3 + 4/1) / 2                = 3
#   seq-mean-token-sum       (6 + 4) / 2                    = 5
#   seq-mean-token-sum-norm  (6/3 + 4/3) / 2  (norm = T = 3) = 1.6667;  norm = 4: 1.25
LOSS = torch.tensor([[1.0, 2.0, 3.0], [4.0, math.nan, math.inf]])
AMASK = torch.tensor([[1, 1, 1], [1, 0, 0]], dtype=torch.bool)


@pytest.mark.parametrize(
    ("mode", "norm", "expected"),
    [
        ("token-mean", None, 2.5),
        ("seq-mean-token-mean", None, 3.0),
        ("seq-mean-token-sum", None, 5.0),
        ("seq-mean-token-sum-norm", None, 10 / 6),
        ("seq-mean-token-sum-norm", 4, 1.25),
    ],
)
def test_aggregate_golden(mode, norm, expected):
    close(aggregate(LOSS, AMASK, mode, norm=norm), expected)


def test_aggregate_skips_empty_sequences_and_handles_no_tokens():
    mask = torch.tensor([[1, 1, 1], [0, 0, 0]], dtype=torch.bool)
    close(aggregate(LOSS, mask, "seq-mean-token-mean"), 2.0)  # only row 0 counts
    close(aggregate(LOSS, mask, "seq-mean-token-sum"), 6.0)
    x = torch.ones(2, 3, requires_grad=True)
    out = aggregate(x, torch.zeros(2, 3, dtype=torch.bool), "token-mean")
    out.backward()
    assert float(out.detach()) == 0.0 and (x.grad == 0).all()


def test_aggregate_validation():
    with pytest.raises(ValueError, match="unknown aggregation"):
        aggregate(LOSS, AMASK, "sum")
    with pytest.raises(ValueError, match="norm"):
        aggregate(LOSS, AMASK, "seq-mean-token-sum-norm", norm=0)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 6), st.integers(0, 3), st.integers(0, 10_000))
def test_aggregation_modes_agree_for_equal_lengths(n_seq, n_tok, pad, seed):
    gen = torch.Generator().manual_seed(seed)
    length = n_tok + pad
    loss = torch.randn(n_seq, length, generator=gen)
    # each row: exactly n_tok loss tokens at random positions
    order = torch.rand(n_seq, length, generator=gen).argsort(1)
    mask = order < n_tok
    token_mean = aggregate(loss, mask, "token-mean")
    close(aggregate(loss, mask, "seq-mean-token-mean"), token_mean)
    close(aggregate(loss, mask, "seq-mean-token-sum"), token_mean * n_tok)
    close(aggregate(loss, mask, "seq-mean-token-sum-norm", norm=n_tok), token_mean)
    close(aggregate(loss, mask, "seq-mean-token-sum-norm"), token_mean * n_tok / length)


def test_agg_modes_constant():
    assert AGG_MODES == ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm")


# ---- KL ----


def test_kl_golden():
    # p = .5, p_ref = .25: log r = log(.25/.5) = -.693147
    #   k1 = -log r = .693147; k2 = (log r)^2 / 2 = .240227; k3 = (.5 - 1) + .693147 = .193147
    lp, ref = torch.tensor([math.log(0.5)]), torch.tensor([math.log(0.25)])
    close(kl_penalty(lp, ref, "k1"), [math.log(2)])
    close(kl_penalty(lp, ref, "k2"), [0.5 * math.log(2) ** 2])
    close(kl_penalty(lp, ref, "k3"), [math.log(2) - 0.5])
    with pytest.raises(ValueError, match="k1, k2, k3"):
        kl_penalty(lp, ref, "k4")


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 8))
def test_k1_k3_are_unbiased_and_k2_k3_nonnegative(seed, vocab):
    # Exact expectation over x ~ p: sum_x p(x) k(x) must equal KL(p || p_ref) for k1, k3.
    gen = torch.Generator().manual_seed(seed)
    logp = torch.log_softmax(torch.randn(vocab, generator=gen, dtype=torch.float64), 0)
    logref = torch.log_softmax(torch.randn(vocab, generator=gen, dtype=torch.float64), 0)
    kl = (logp.exp() * (logp - logref)).sum()
    for kind in ("k1", "k3"):
        close((logp.exp() * kl_penalty(logp, logref, kind)).sum(), kl, atol=1e-9)
    assert (kl_penalty(logp, logref, "k2") >= 0).all() and (kl_penalty(logp, logref, "k3") >= -1e-12).all()


def test_apply_kl_to_rewards():
    rewards = torch.tensor([[0.0, 1.0, 0.0]])
    kl = torch.tensor([[0.5, 0.2, 9.0]], requires_grad=True)
    out = apply_kl_to_rewards(rewards, kl, coef=0.1, response_mask=torch.tensor([[1, 1, 0]]))
    close(out, [[-0.05, 0.98, 0.0]])  # the masked token keeps reward 0
    assert not out.requires_grad
    close(apply_kl_to_rewards(rewards, kl, coef=1.0), [[-0.5, 0.8, -9.0]])


# ---- entropy ----


def test_entropy_golden():
    # uniform over 2 -> log 2; probs (.25, .75) -> -(.25 ln .25 + .75 ln .75) = .562335
    logits = torch.tensor([[0.0, 0.0], [0.0, math.log(3)]])
    close(entropy_from_logits(logits), [math.log(2), 0.5623351446])


def test_entropy_is_stable():
    logits = torch.tensor([[1000.0, 0.0, -1000.0], [0.0, -math.inf, 0.0]])
    out = entropy_from_logits(logits)
    close(out, [0.0, math.log(2)])
    assert entropy_from_logits(torch.zeros(2, 3, dtype=torch.bfloat16)).dtype == torch.float32


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000))
def test_entropy_matches_categorical_and_bonus_aggregates(seed):
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(2, 3, 7, generator=gen) * 5
    ent = entropy_from_logits(logits)
    close(ent, torch.distributions.Categorical(logits=logits).entropy())
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]], dtype=torch.bool)
    close(aggregate(ent, mask, "token-mean"), ent[mask].mean())
