"""GAE, turn-level GAE and Bi-Level GAE: golden values, invariants, reference recursions."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

from tests.algos.layouts import GARBAGE, build, insert_masked_columns, rows
from vagen.algos import bilevel_gae, gae, turn_gae

# One sequence, two turns with a masked observation gap (positions 2, 3) and padding (6):
#   pos      0    1    2    3    4    5    6
#   mask     1    1    0    0    1    1    0
#   turn     0    0   -1   -1    1    1   -1
#   reward   0   .5    0    0    0    1    0
#   value   .1   .2   99   99   .3   .4   99     (99 = must never be read)
R = torch.tensor([[0.0, 0.5, 0, 0, 0, 1.0, 0]])
V = torch.tensor([[0.1, 0.2, 99, 99, 0.3, 0.4, 99]])
M = torch.tensor([[1, 1, 0, 0, 1, 1, 0]], dtype=torch.bool)
TI = torch.tensor([[0, 0, -1, -1, 1, 1, -1]])


def close(actual, expected, atol=1e-5):
    assert_close(actual, torch.as_tensor(expected, dtype=actual.dtype), atol=atol, rtol=1e-5)


def test_gae_golden_two_turns_with_gap():
    # gamma=0.9, lam=0.8 (gamma*lam = 0.72); the next token of pos 1 is pos 4 (gap skipped):
    #   t5: delta = 1 + 0 - .4 = .6                        A5 = .6
    #   t4: delta = 0 + .9*.4 - .3 = .06                   A4 = .06 + .72*.6 = .492
    #   t1: delta = .5 + .9*.3 - .2 = .57                  A1 = .57 + .72*.492 = .92424
    #   t0: delta = 0 + .9*.2 - .1 = .08                   A0 = .08 + .72*.92424 = .7454528
    # returns = A + V on response tokens.
    adv, ret = gae(R, V, M, gamma=0.9, lam=0.8)
    close(adv, [[0.7454528, 0.92424, 0, 0, 0.492, 0.6, 0]])
    close(ret, [[0.8454528, 1.12424, 0, 0, 0.792, 1.0, 0]])


def test_gae_lambda_zero_is_one_step_td():
    # lam=0: A_t = delta_t. t1: .5 + 1*.3 - .2 = .6; t0: .2 - .1 = .1; t4: .4 - .3 = .1; t5: .6
    adv, _ = gae(R, V, M, gamma=1.0, lam=0.0)
    close(adv, [[0.1, 0.6, 0, 0, 0.1, 0.6, 0]])


def test_turn_gae_golden():
    # Turn values at each turn's last token: V0 = V(pos 1) = .2, V1 = V(pos 5) = .4;
    # turn rewards R0 = .5, R1 = 1. gamma=0.9, lam=0.8:
    #   k1: delta = 1 - .4 = .6                      A1 = .6,     G1 = 1.0
    #   k0: delta = .5 + .9*.4 - .2 = .66            A0 = .66 + .72*.6 = 1.092,  G0 = 1.292
    adv, ret = turn_gae(R, V, M, TI, gamma=0.9, lam=0.8)
    close(adv, [[1.092, 1.092, 0, 0, 0.6, 0.6, 0]])
    close(ret, [[1.292, 1.292, 0, 0, 1.0, 1.0, 0]])


def test_bilevel_gae_golden():
    # Turn level as in test_turn_gae_golden (gamma_turn=.9, lam_turn=.8): A^turn = [1.092, .6].
    # Token level, gamma_token=.95, lam_token=.9 (product .855), restarted at each turn end:
    #   t5 (end of turn 1): A = .6
    #   t4: delta = .95*.4 - .3 = .08                 A = .08 + .855*.6 = .593
    #   t1 (end of turn 0): A = 1.092
    #   t0: delta = .95*.2 - .1 = .09                 A = .09 + .855*1.092 = 1.02366
    # returns = A + V: [1.12366, 1.292, 0, 0, .893, 1.0, 0]
    adv, ret = bilevel_gae(R, V, M, TI, gamma_turn=0.9, lam_turn=0.8, gamma_token=0.95, lam_token=0.9)
    close(adv, [[1.02366, 1.092, 0, 0, 0.593, 0.6, 0]])
    close(ret, [[1.12366, 1.292, 0, 0, 0.893, 1.0, 0]])


def test_bilevel_reward_on_interior_token_counts_once_at_turn_level():
    # Turn 0 = tokens 0,1,2 with a reward .5 on token 0 (e.g. a folded-in KL term) and 1 on
    # token 2; zero values, gamma_turn=1: A^turn_0 = 1.5. Token level (gamma=lam=1, V=0)
    # carries no rewards, so every token of the turn gets 1.5, not 2.0.
    r = torch.tensor([[0.5, 0.0, 1.0]])
    v = torch.zeros(1, 3)
    m = torch.ones(1, 3, dtype=torch.bool)
    ti = torch.zeros(1, 3, dtype=torch.long)
    adv, _ = bilevel_gae(r, v, m, ti, gamma_turn=1.0, lam_turn=1.0, gamma_token=1.0, lam_token=1.0)
    close(adv, [[1.5, 1.5, 1.5]])


def test_rows_with_different_turn_counts_and_empty_rows():
    # Row 0: two turns; row 1: one turn; row 2: nothing generated at all.
    r, v, m, ti = build([[(1, 2, 1.0), (1, 1, 2.0)], [(0, 3, -1.0)], []])
    for fn in (turn_gae, bilevel_gae):
        adv, ret = fn(r, v, m, ti)
        assert torch.isfinite(adv).all() and torch.isfinite(ret).all()
        assert (adv[2] == 0).all() and (ret[2] == 0).all()
        assert (adv[~m] == 0).all()
    adv, _ = gae(r, v, m)
    assert (adv[2] == 0).all()


def test_no_response_tokens_at_all():
    r, v, m, ti = build([[], []], pad=3)
    for fn in (turn_gae, bilevel_gae):
        adv, ret = fn(r, v, m, ti)
        assert adv.shape == (2, 4) and (adv == 0).all() and (ret == 0).all()


def test_nan_values_on_masked_tokens_are_never_read():
    v = V.clone()
    v[~M] = math.nan
    for adv, _ in (gae(R, v, M, 0.9, 0.8), turn_gae(R, v, M, TI), bilevel_gae(R, v, M, TI)):
        assert torch.isfinite(adv).all()


def test_input_validation():
    with pytest.raises(ValueError, match="masked"):
        gae(torch.tensor([[0.0, 0.0, 1.0]]), torch.zeros(1, 3), torch.tensor([[1, 1, 0]]))
    with pytest.raises(ValueError, match="shape"):
        gae(R, V[:, :3], M)
    with pytest.raises(ValueError, match="-1 elsewhere"):
        turn_gae(R, V, M, torch.zeros_like(TI))
    with pytest.raises(ValueError, match="non-decreasing"):
        turn_gae(R, V, M, torch.tensor([[1, 1, -1, -1, 0, 0, -1]]))


# ---- reference recursions, written per sample and per step (slow but obvious) ----


def ref_gae_row(r, v, m, gamma, lam):
    idx = [t for t in range(len(m)) if m[t]]
    adv = [0.0] * len(m)
    next_adv = 0.0
    for j in reversed(range(len(idx))):
        t = idx[j]
        v_next = v[idx[j + 1]] if j + 1 < len(idx) else 0.0
        next_adv = r[t] + gamma * v_next - v[t] + gamma * lam * next_adv
        adv[t] = next_adv
    return adv


def ref_turns(m, ti):
    turns: dict[int, list[int]] = {}
    for t in range(len(m)):
        if m[t]:
            turns.setdefault(ti[t], []).append(t)
    return [turns[k] for k in sorted(turns)]


def ref_turn_adv(r, v, m, ti, gamma, lam):
    turns = ref_turns(m, ti)
    rew = [sum(r[t] for t in tok) for tok in turns]
    val = [v[tok[-1]] for tok in turns]
    adv = [0.0] * len(turns)
    nxt = 0.0
    for k in reversed(range(len(turns))):
        v_next = val[k + 1] if k + 1 < len(turns) else 0.0
        nxt = rew[k] + gamma * v_next - val[k] + gamma * lam * nxt
        adv[k] = nxt
    return turns, adv


def ref_bilevel_row(r, v, m, ti, g_turn, l_turn, g_tok, l_tok):
    turns, turn_adv = ref_turn_adv(r, v, m, ti, g_turn, l_turn)
    adv = [0.0] * len(m)
    for tok, a_turn in zip(turns, turn_adv, strict=True):
        adv[tok[-1]] = a_turn
        for j in reversed(range(len(tok) - 1)):
            t, t_next = tok[j], tok[j + 1]
            adv[t] = g_tok * v[t_next] - v[t] + g_tok * l_tok * adv[t_next]
    return adv


def rows_of(*tensors):
    return [[x[b].tolist() for x in tensors] for b in range(tensors[0].shape[0])]


coef = st.floats(0.0, 1.0, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(rows, st.integers(0, 2), coef, coef, st.integers(0, 1000))
def test_gae_matches_reference(batch, pad, gamma, lam, seed):
    r, v, m, _ = build(batch, pad=pad, seed=seed)
    adv, ret = gae(r, v, m, gamma, lam)
    expected = torch.tensor([ref_gae_row(rr, vv, mm, gamma, lam) for rr, vv, mm in rows_of(r, v, m)])
    close(adv, expected.view_as(adv), atol=1e-4)
    close(ret, torch.where(m, adv + v, 0.0))


@settings(max_examples=60, deadline=None)
@given(rows, coef, coef, coef, coef, st.integers(0, 1000))
def test_turn_and_bilevel_match_reference(batch, g_turn, l_turn, g_tok, l_tok, seed):
    r, v, m, ti = build(batch, seed=seed)
    adv_b, ret_b = bilevel_gae(r, v, m, ti, g_turn, l_turn, g_tok, l_tok)
    adv_t, ret_t = turn_gae(r, v, m, ti, g_turn, l_turn)
    exp_b = torch.zeros_like(adv_b)
    exp_t = torch.zeros_like(adv_t)
    exp_ret_t = torch.zeros_like(ret_t)
    for b, (rr, vv, mm, tt) in enumerate(rows_of(r, v, m, ti)):
        exp_b[b] = torch.tensor(ref_bilevel_row(rr, vv, mm, tt, g_turn, l_turn, g_tok, l_tok))
        turns, turn_adv = ref_turn_adv(rr, vv, mm, tt, g_turn, l_turn)
        for tok, a in zip(turns, turn_adv, strict=True):
            exp_t[b, tok] = a
            exp_ret_t[b, tok] = a + vv[tok[-1]]
    close(adv_b, exp_b, atol=1e-4)
    close(ret_b, torch.where(m, adv_b + v, 0.0))
    close(adv_t, exp_t, atol=1e-4)
    close(ret_t, exp_ret_t, atol=1e-4)


@settings(max_examples=60, deadline=None)
@given(rows, st.integers(0, 2))
def test_gae_unit_coefficients_zero_values_is_reward_to_go(batch, pad):
    r, _, m, _ = build(batch, pad=pad)
    adv, ret = gae(r, torch.zeros_like(r), m, gamma=1.0, lam=1.0)
    # reward-to-go: sum of rewards at or after t (rewards only sit on response tokens)
    to_go = r.flip(1).cumsum(1).flip(1)
    close(adv, torch.where(m, to_go, 0.0), atol=1e-4)
    close(ret, adv)


@settings(max_examples=60, deadline=None)
@given(rows, coef, coef, st.data())
def test_masked_tokens_anywhere_do_not_change_advantages(batch, gamma, lam, data):
    r, v, m, ti = build(batch)
    n_cols = r.shape[1]
    positions = data.draw(st.lists(st.integers(0, n_cols), min_size=1, max_size=4))
    r2 = insert_masked_columns(r, positions, 0.0)
    v2 = insert_masked_columns(v, positions, GARBAGE)
    m2 = insert_masked_columns(m, positions, False)
    ti2 = insert_masked_columns(ti, positions, -1)
    kept = insert_masked_columns(torch.ones(1, n_cols, dtype=torch.bool), positions, False)[0]
    estimators = (
        lambda r, v, m, ti: gae(r, v, m, gamma, lam),
        lambda r, v, m, ti: turn_gae(r, v, m, ti, gamma, lam),
        lambda r, v, m, ti: bilevel_gae(r, v, m, ti, gamma, lam, lam, gamma),
    )
    for fn in estimators:
        a1, g1 = fn(r, v, m, ti)
        a2, g2 = fn(r2, v2, m2, ti2)
        close(a2[:, kept], a1, atol=1e-5)
        close(g2[:, kept], g1, atol=1e-5)
        assert (a2[:, ~kept] == 0).all()


@settings(max_examples=60, deadline=None)
@given(rows, coef, coef, st.integers(0, 1000))
def test_bilevel_equals_turn_gae_at_turn_ends(batch, gamma, lam, seed):
    r, v, m, ti = build(batch, seed=seed)
    adv_t, ret_t = turn_gae(r, v, m, ti, gamma, lam)
    # Required invariant: gamma_token = lam_token = 1 and zero values -> equal at turn ends
    # (and, since the token level then only copies the injected signal, on every token).
    zero = torch.zeros_like(v)
    adv_b0, _ = bilevel_gae(r, zero, m, ti, gamma, lam, 1.0, 1.0)
    adv_t0, _ = turn_gae(r, zero, m, ti, gamma, lam)
    close(adv_b0, adv_t0, atol=1e-5)
    # Stronger: at turn-end tokens the two agree for any values and token coefficients.
    ends = m & (torch.cat([ti[:, 1:], torch.full_like(ti[:, :1], -1)], 1) != ti)
    adv_b, ret_b = bilevel_gae(r, v, m, ti, gamma, lam, 0.5, 0.7)
    close(adv_b[ends], adv_t[ends], atol=1e-5)
    close(ret_b[ends], ret_t[ends], atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(rows, st.integers(0, 1000))
def test_vectorised_over_batch(batch, seed):
    r, v, m, ti = build(batch, seed=seed)
    for fn, args in (
        (gae, (r, v, m, 0.9, 0.8)),
        (turn_gae, (r, v, m, ti, 0.9, 0.8)),
        (bilevel_gae, (r, v, m, ti, 0.9, 0.8, 0.95, 0.7)),
    ):
        adv, ret = fn(*args)
        for b in range(r.shape[0]):
            a_b, g_b = fn(*(x[b : b + 1] if isinstance(x, torch.Tensor) else x for x in args))
            close(adv[b : b + 1], a_b)
            close(ret[b : b + 1], g_b)


def test_outputs_do_not_require_grad():
    v = V.clone().requires_grad_(True)
    adv, ret = gae(R, v, M)
    assert not adv.requires_grad and not ret.requires_grad
