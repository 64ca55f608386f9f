"""The coordinate jumps on spiky ``theta`` with small ``rho`` (issue 28, round 10).

``_jumps_incremental`` (``_fast/_ldp_mala.pyx``) updates ``Phi = sum(e^z)`` and the groups' ``u_g``
by adding ``delta``.  When the dominant category (holding all but ``~1e-15`` of the mass) was
proposed near zero, ``Phi + delta`` and ``u_g + delta w_g`` were differences of nearly equal numbers:
rounding garbage, on which the kernel accepted swaps of the dominant category that the posterior
puts ``e^-600``-``e^-2500`` on (both the exact and the count chain, K = 20 Dir(0.01) paper cells).
Such a step is now evaluated on sums taken afresh.
"""

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp
from scipy.stats import binom

from sklearn_bayes._fast._ldp_mala import coordinate_jumps, coordinate_jumps_incremental, mala_logpost
from sklearn_bayes.privacy._ldp._count_posterior import count_groups
from sklearn_bayes.privacy._ldp._diagnostics import min_ess
from sklearn_bayes.privacy._ldp._hybrid import HybridChain
from sklearn_bayes.privacy._ldp._posterior import _mala_form, jump_lists


def _grr_counts(K, eps, n):
    """GRR support counts of ``n`` users all in category 0 (their expectation, rounded)."""
    p = np.exp(eps) / (np.exp(eps) + K - 1)
    q = (1 - p) / (K - 1)
    c = np.rint(n * (q + (p - q) * np.r_[1.0, np.zeros(K - 1)])).astype(np.int64)
    return c, p, q


def test_dominant_category_jumps_take_the_full_evaluations_decisions():
    # a state of the K = 20 reproducer's kind: category 0 holds all but ~e^-35 of the mass, the
    # others are e^-80 .. e^-700; every proposal for category 0 is the prior's (near zero).  The
    # full evaluation (``coordinate_jumps``: softmax of z, no differences) is the reference.  The
    # old incremental kernel accepted the swap at 35 of these 40 states (its lp off by up to 1286 nats).
    K, eps, n = 20, 0.5, 10_000
    c, p, q = _grr_counts(K, eps, n)
    form = _mala_form(count_groups(c, n, p, q))
    t_ptr, t_grp, t_w, h_s, w_s, t_cat = jump_lists(form, K)
    prior = np.full(K, 0.0012)
    rs = np.random.default_rng(5)
    swaps = 0
    for trial in range(40):
        z = np.r_[-46.0, -rs.uniform(80, 700, K - 1)]
        z[1 + trial % (K - 1)] = -81.6  # the candidate successor, e^-35.6 of the mass
        props = np.r_[-rs.uniform(300, 800), z[1:]]  # only category 0 moves
        props[1 + trial % (K - 1)] = -81.6
        log_u = np.log(rs.random(K))
        z1, z2 = z.copy(), z.copy()
        lp = mala_logpost(z, *form, prior)[0]
        order = np.arange(K, dtype=np.int32)
        lp1 = coordinate_jumps(z1, lp, props, log_u, *form, prior, order)
        lp2 = coordinate_jumps_incremental(z2, lp, props, log_u, order, form[2], form[5], None, t_ptr, t_grp,
                                           t_w, prior, h_s, w_s, t_cat)
        np.testing.assert_array_equal(z1, z2)
        swaps += int(z2[0] != z[0])
        assert lp2 == pytest.approx(mala_logpost(z2, *form, prior)[0], rel=1e-9)
    assert swaps == 0  # the swap loses ~660 nats: the full evaluation never takes it


def _posterior_k2(c, n, p, q, rho, m=20_001):
    """``E[1 - theta_0]`` and ``ln P(theta_0 < 1/2)`` of ``Bin(c_0; n, pi_0) Bin(c_1; n, pi_1) Dir(rho, rho)`` (K = 2).

    In ``u = ln(1 - theta_0)`` the density is ``lik e^{rho u} (1 - e^u)^{rho - 1}``: a trapezoid rule
    on ``u in [-60, ln(1 - 1e-12)]`` (``m`` points, the integrand's log smooth there), the tail below
    ``-60`` in closed form (``lik`` is its value at ``theta_0 = 1`` within ``e^-60`` relative, ``(1 -
    e^u)^{rho-1}`` within ``e^-60``: ``int e^{rho u} du = e^{-60 rho} / rho``, ``int e^{(rho+1) u} du``),
    and ``theta_0 < 1 - 1e-12`` near 0 is negligible (``lik`` there is ``e^-1000`` below).
    """
    def loglik(t):
        return binom.logpmf(c[0], n, q + (p - q) * t) + binom.logpmf(c[1], n, q + (p - q) * (1 - t))

    u = np.linspace(-60.0, np.log1p(-1e-12), m)
    w = np.exp(u)
    lf = loglik(1 - w) + rho * u + (rho - 1) * np.log1p(-w)
    du = u[1] - u[0]
    lw = np.log(np.r_[0.5, np.ones(m - 2), 0.5] * du)
    l1 = loglik(1.0)
    l_mass = np.logaddexp(logsumexp(lf + lw), l1 - 60 * rho - np.log(rho))
    l_mean = np.logaddexp(logsumexp(lf + u + lw), l1 - 60 * (rho + 1) - np.log(rho + 1))
    half = u >= np.log(0.5)
    l_half = logsumexp(lf[half] + lw[half]) - l_mass
    return float(np.exp(l_mean - l_mass)), float(l_half)


@pytest.mark.parametrize("K, rho", [(2, 0.001), (2, 0.01)])
def test_spiky_count_chain_matches_quadrature(K, rho):
    # 10,000 users all in category 0, GRR at eps = 0.5; fixed prior Dir(rho, rho).  The posterior puts
    # e^-100 or less on theta_0 < 1/2 (quadrature): a stationary chain's 4 x 2000 draws land there with
    # probability below 8000 e^-100.  The old kernel's chains went there in 2-15 of 2000 draws per seed
    # (swaps of the dominant category) and their mean of 1 - theta_0 was ~0.004 against ~2e-5.
    n = 10_000
    c, p, q = _grr_counts(K, 0.5, n)
    mean, l_half = _posterior_k2(c, n, p, q, rho)
    assert l_half < -100
    g = count_groups(c, n, p, q)
    draws = []
    for seed in range(4):
        chain = HybridChain(g, 200, np.random.default_rng(seed), prior=np.full(K, rho))
        chain.draw(200)
        draws.append(chain.draw(2000)[0][:, 0])
    t = np.concatenate(draws)
    assert np.sum(t < 0.5) == 0
    off = 1 - np.stack(draws, axis=1)  # (draws, chains)
    se = off.std() / np.sqrt(sum(min_ess(off[:, [j]]) for j in range(4)))
    assert abs(off.mean() - mean) <= 5 * se


def test_jumps_and_target_are_invariant_to_an_underflowing_scale():
    # the likelihood depends on theta = softmax(z) only: shifting z (and the proposals) by -900, where
    # e^z underflows to denormals or 0 as a whole, leaves the jumps' decisions and the likelihood part
    # of ln pi unchanged.  Before, theta there was 0/0 (ln pi = -inf) or lost its precision, and the
    # incremental jumps compared against a log-likelihood of -inf (accepting any proposal).
    K, eps, n = 6, 1.0, 2000
    c, p, q = _grr_counts(K, eps, n)
    c[1:3] += 150
    form = _mala_form(count_groups(c, n, p, q))
    lists = jump_lists(form, K)
    prior = np.full(K, 0.3)
    rs = np.random.default_rng(2)
    order = np.arange(K, dtype=np.int32)
    moved = 0
    for trial in range(30):
        z = np.log(rs.dirichlet(np.ones(K))) + rs.normal()
        props = np.log(rs.gamma(0.3, size=K) + 1e-300)
        log_u = np.log(rs.random(K))
        runs = []
        for shift in (0.0, -900.0):
            zs = z + shift
            lp, _ = mala_logpost(zs, *form, prior)
            assert lp - np.sum(prior * zs - np.exp(zs)) == pytest.approx(
                mala_logpost(z, *form, prior)[0] - np.sum(prior * z - np.exp(z)), rel=1e-12)
            z1, z2 = zs.copy(), zs.copy()
            coordinate_jumps(z1, lp, props + shift, log_u, *form, prior, order)
            lp2 = coordinate_jumps_incremental(z2, lp, props + shift, log_u, order, form[2], form[5], None,
                                               *lists[:3], prior, lists[3], lists[4], lists[5])
            np.testing.assert_array_equal(z1, z2)
            assert lp2 == pytest.approx(mala_logpost(z2, *form, prior)[0], rel=1e-9)
            runs.append(z1 != zs)  # the accepted steps
        np.testing.assert_array_equal(runs[0], runs[1])
        moved += int(np.any(runs[0]))
    assert moved > 0
