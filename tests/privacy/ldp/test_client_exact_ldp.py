"""The static clients' realised mechanisms are exactly epsilon-LDP (issue 28 review): the law the float sampler
draws, enumerated over every response at K = 3-5 in exact rational arithmetic, against e^eps to 60 digits.

numpy's ``Generator.random`` returns ``j / 2^53``, ``j`` uniform on ``0 .. 2^53 - 1``, so a draw ``u < t`` happens
with probability exactly ``#{j : j / 2^53 < t} / 2^53``.  The count is read off the sampler itself (a stub generator
whose uniforms are all ``j / 2^53``, bisected over ``j``); the rest of each response is uniform by symmetry (SS: the
other members are the smallest of i.i.d. keys; OUE: independent bits), which the Monte Carlo test of
``test_posterior.py`` checks.
"""

import itertools
from decimal import Decimal, getcontext
from fractions import Fraction
from math import comb

import numpy as np
import pytest

from sklearn_bayes.privacy._ldp._mechanisms import SetResponseMechanism, oue_privatize, ss_privatize

GRID = 2**53


class _Uniforms:
    """A generator stub whose uniforms are all ``j / 2^53``, except in redraws: the samplers redraw a row whose
    subset keys tie (all of them here), and the stub's later 2-d draws are distinct keys, so the sampler ends."""

    def __init__(self, j):
        self.value = j / GRID
        self.keys_drawn = False

    def random(self, size=None):
        if isinstance(size, tuple) and self.keys_drawn:
            return np.broadcast_to(np.arange(size[1]) / size[1], size).copy()
        self.keys_drawn |= isinstance(size, tuple)
        return np.full(size, self.value)


def _count_below(event):
    """``#{j : event(j)}`` for an event that holds exactly for ``j`` below some threshold (bisection)."""
    lo, hi = 0, GRID  # event(lo - 1) holds (or lo = 0), event(hi) does not
    while lo < hi:
        mid = (lo + hi) // 2
        if event(mid):
            lo = mid + 1
        else:
            hi = mid
    return lo


def _ss_left_out(K, eps, k):
    """P(the user's category is left out of her SS(k) report), as the sampler realises it (a Fraction)."""
    return Fraction(_count_below(lambda j: not ss_privatize(np.array([0]), K, eps, k, _Uniforms(j))[0, 0]), GRID)


def _oue_other_bit(K, eps):
    """P(another category's OUE bit is set), and P(the own bit is set), as the sampler realises them."""
    other = _count_below(lambda j: bool(oue_privatize(np.array([0]), K, eps, _Uniforms(j))[0, 1]))
    own = _count_below(lambda j: bool(oue_privatize(np.array([0]), K, eps, _Uniforms(j))[0, 0]))
    return Fraction(other, GRID), Fraction(own, GRID)


def _law(kind, K, k, eps):
    """The realised transition matrix ``P[mask, x]`` (Fractions) over all ``2^K`` masks."""
    masks = [np.array(bits, dtype=bool) for bits in itertools.product([0, 1], repeat=K)]
    if kind == "oue":
        q, half = _oue_other_bit(K, eps)
        assert half == Fraction(1, 2)
        P = [[half if m[x] else 1 - half for x in range(K)] for m in masks]
        for row, m in zip(P, masks):
            for x in range(K):
                for v in range(K):
                    if v != x:
                        row[x] *= q if m[v] else 1 - q
        return masks, P
    out = _ss_left_out(K, eps, k)
    P = [[Fraction(0)] * K if m.sum() != k else
         [(1 - out) / comb(K - 1, k - 1) if m[x] else out / comb(K - 1, k) for x in range(K)] for m in masks]
    return masks, P


def _exp(eps):
    getcontext().prec = 60
    return Decimal(eps).exp()


CASES = [("oue", K, None) for K in (3, 4, 5)] + [("ss", K, k) for K in (3, 4, 5) for k in range(1, K)]


@pytest.mark.parametrize("eps", [1e-3, 0.002, 0.5, 1.0, 5.0, 700.0])
@pytest.mark.parametrize("kind, K, k", CASES)
def test_the_realised_client_law_is_exactly_epsilon_ldp(kind, K, k, eps):
    """Every column a distribution (exactly), every response's likelihood ratio at most e^eps (exactly) and,
    where the rare event is not floored to 2^-53, within 2^-40 of it.  OUE at eps = 0.002 realised a ratio above
    e^eps (its other bits' threshold 1 / (e^eps + 1) rounded down onto the 2^-53 grid; relative excess 2e-16)."""
    masks, P = _law(kind, K, k, eps)
    for x in range(K):
        assert sum(row[x] for row in P) == 1
    bound = _exp(eps)
    worst = max(Decimal(max(row).numerator * min(row).denominator) / Decimal(max(row).denominator * min(row).numerator)
                for row in P if max(row) > 0)
    assert all(min(row) > 0 for row in P if max(row) > 0)  # a response is possible for every x or for none
    assert worst <= bound, (kind, K, k, eps, worst - bound)
    if eps < 30:  # the rare event's probability is far above 2^-53: the ratio is e^eps up to its rounding
        assert worst >= bound * (1 - Decimal(2) ** -40)


def test_ss_with_a_large_log_constant_is_rounded_up_too():
    """K = 10, k = 4, eps = 5.030968229583157 (found by a scan of K <= 100): the left-out probability,
    computed as exp(ln(K - k) - logaddexp(ln k + eps, ln(K - k))), carried the rounding of a log of
    magnitude ~6.4 (relative 1.4e-15), beyond its margin of 4 ulps: the realised ratio exceeded e^eps."""
    K, k, eps = 10, 4, 5.030968229583157
    out = _ss_left_out(K, eps, k)
    ratio = (1 - out) * (K - k) / (out * k)  # (1 - q') C(K-1, k) / (q' C(K-1, k-1))
    assert Decimal(ratio.numerator) / Decimal(ratio.denominator) <= _exp(eps)


@pytest.mark.parametrize("eps", [1e-3, 700.0])
@pytest.mark.parametrize("kind, K, k", CASES)
def test_the_servers_likelihood_is_tight_at_extreme_budgets(kind, K, k, eps):
    """log_probability (the likelihood the decoders use): columns sum to 1 and the largest log ratio over the
    enumerated responses is eps to rounding (a few ulps of the log constants, |ln P| <= eps + K ln 2)."""
    mech = SetResponseMechanism(K, eps, "oue" if kind == "oue" else "subset_selection", k)
    logp = np.array([[mech.log_probability(np.array(m, dtype=bool), x) for x in range(K)]
                     for m in itertools.product([0, 1], repeat=K)])
    tol = 16 * np.finfo(float).eps * (eps + K)
    np.testing.assert_allclose(np.logaddexp.reduce(logp, axis=0), 0.0, rtol=0, atol=tol)
    rows = logp[np.isfinite(logp).all(axis=1)]
    assert abs((rows.max(axis=1) - rows.min(axis=1)).max() - eps) <= tol


@pytest.mark.parametrize("bad", [987654, -987654, 987654.0])
def test_a_clients_refusal_never_quotes_a_users_category(bad):
    """The clients privatise the users' true categories: a refused input names the argument and the offending
    rows, never a value.  RRRRMechanism.privatize quoted the first five out-of-range categories."""
    from sklearn_bayes.privacy import RRRRMechanism
    from sklearn_bayes import AdaptiveLDPFrequencyEstimator

    clients = [lambda x: RRRRMechanism(4, 1.0).privatize(x, [0], random_state=np.random.default_rng(0))]
    for mechanism in ("grr", "oue", "subset_selection"):
        client = AdaptiveLDPFrequencyEstimator(n_categories=8, mechanism=mechanism).client_mechanism()
        clients.append(lambda x, c=client: c.privatize(x, np.random.default_rng(0)))
    for privatize in clients:
        with pytest.raises(ValueError, match="x ") as info:
            privatize(np.array([0, bad, 1]))
        assert "987654" not in str(info.value)


@pytest.mark.parametrize("eps", [1e-3, 700.0])
@pytest.mark.parametrize("kappa", [0.5, 0.9, 1.0])
def test_rrrr_transition_matrices_at_extreme_budgets(eps, kappa):
    """RRRR(S) for every subset size at K = 3-5 (every subset at K = 3 and 4): rows are distributions and the
    largest log ratio over the enumerated responses is at most eps, to a few ulps of the log constants."""
    from sklearn_bayes.privacy import RRRRMechanism

    for K in (3, 4, 5):
        mech = RRRRMechanism(K, eps, kappa)
        subsets = [s for k in range(K) for s in itertools.combinations(range(K), k)] if K < 5 else \
            [tuple(range(k)) for k in range(K)]
        for s in subsets:
            logP = mech.log_transition_matrix(list(s))
            tol = 1e-12 + 8 * np.finfo(float).eps * (eps + np.log(K))
            np.testing.assert_allclose(np.logaddexp.reduce(logP, axis=1), 0.0, rtol=0, atol=tol)
            assert np.max(logP.max(axis=0) - logP.min(axis=0)) <= eps + tol, (K, s)
