"""Exact privacy-loss distributions (_core._pld): the ridge posterior's loss and the analytic Gaussian mechanism."""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import special, stats

from sklearn_bayes.privacy._core._pld import (
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
    gaussian_hockey_stick,
    ops_ridge_delta,
    ops_ridge_epsilon,
    ops_ridge_tail_bound,
    privacy_loss_ops_ridge,
)


# the OPS ridge test data and closed forms, shared with tests/privacy/linear/test_ops.py (loaded by path)
_spec = importlib.util.spec_from_file_location("_ops_ridge_data", Path(__file__).parents[1] / "_ops_ridge_data.py")
_data = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_data)
_gen, _unit_ball_data, _posterior, _mu_r = _data._gen, _data._unit_ball_data, _data._posterior, _data._mu_r


def _tail_two_sided(mu, c, e):
    """Exact P(|L| > e) for L = a Z^2 + b Z + k (normal CDFs at the roots)."""
    a, b, k = 0.5 * mu, -c, -0.5 * math.log1p(mu) + c * c / (2 * (1 + mu))

    def upper(t):  # P(a Z^2 + b Z + k > t)
        disc = b * b - 4 * a * (k - t)
        if disc <= 0:
            return 1.0
        r1, r2 = sorted(((-b - math.sqrt(disc)) / (2 * a), (-b + math.sqrt(disc)) / (2 * a)))
        return special.ndtr(r1) + special.ndtr(-r2)

    return upper(e) + (1.0 - upper(-e))


# ------------------------------------------------------------------ exact privacy loss


def test_privacy_loss_closed_form_equals_log_density_ratio():
    """L(θ) = log p_Z(θ) - log p_{Z∪z}(θ) computed from the two d-dim Gaussians is the closed form."""
    Z, yz = _unit_ball_data(40, 3, seed=1)
    x, y, lam, gamma = np.array([0.6, -0.5, 0.3]), 0.9, 2.0, 3.0
    m0, S0, _ = _posterior(Z, yz, lam, gamma)
    m1, S1, _ = _posterior(np.vstack([Z, x]), np.append(yz, y), lam, gamma)
    mu, r = _mu_r(Z, yz, x, y, lam)
    theta = _gen(2).multivariate_normal(m0, S0, size=2000)
    direct = stats.multivariate_normal(m0, S0).logpdf(theta) - stats.multivariate_normal(m1, S1).logpdf(theta)
    u = (theta @ x - x @ m0) / math.sqrt(mu / gamma)
    closed = privacy_loss_ops_ridge(u, mu, math.sqrt(gamma * mu) * r)
    np.testing.assert_allclose(direct, closed, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("mu, c", [(0.05, 0.3), (0.5, 1.2), (2.0, 0.4)])
def test_monte_carlo_privacy_loss_matches_exact_delta(mu, c):
    """δ(ε) = E[(1 - e^{ε-L})_+]: Monte Carlo over Z within 5 standard errors of the exact value."""
    z = _gen(3).standard_normal(400_000)
    for direction, L in (
        ("remove", privacy_loss_ops_ridge(z, mu, c)),
        # θ ~ P_{Z∪z}: standardised t ~ N(c/(1+mu), 1/(1+mu)); its loss is -L at that t
        ("add", -privacy_loss_ops_ridge(c / (1 + mu) + z / math.sqrt(1 + mu), mu, c)),
    ):
        for eps in (0.0, 0.3, 1.0):
            vals = np.maximum(0.0, 1.0 - np.exp(eps - L))
            se = vals.std() / math.sqrt(vals.size)
            exact = ops_ridge_delta(eps, mu, c, direction=direction)
            assert abs(vals.mean() - exact) <= 5 * se + 1e-12, (direction, eps, vals.mean(), exact, se)


def test_hockey_stick_of_equal_variance_gaussians_is_the_gaussian_mechanism():
    for sigma, eps in [(0.5, 0.1), (2.0, 1.0), (7.0, 0.5)]:
        assert gaussian_hockey_stick(0, sigma, 1.0, sigma, eps) == pytest.approx(
            analytic_gaussian_delta(sigma, eps), rel=1e-9, abs=1e-15
        )


def test_delta_monotone_in_residual_and_in_leverage_for_small_delta():
    """The worst case is at the largest |r| (always) and at the largest μ (where δ < 0.5)."""
    for eps in (0.1, 0.5, 1.0, 2.0):
        for mu in np.geomspace(1e-4, 10, 15):
            d = [ops_ridge_delta(eps, mu, c) for c in np.linspace(0, 6, 40)]
            assert np.all(np.diff(d) >= -1e-15)
        for k in np.linspace(0.0, 3.0, 13):
            d = np.array([ops_ridge_delta(eps, mu, k * math.sqrt(mu)) for mu in np.geomspace(1e-5, 1.0, 40)])
            small = d[:-1] < 0.5
            assert np.all(np.diff(d)[small] >= -1e-15)


def test_exact_delta_is_tighter_than_the_corrected_tail_bound():
    """The corrected eq. 5.5 holds exactly: P(|L| > ε_bound) <= δ, so δ(ε_bound) <= δ."""
    rng = _gen(4)
    for _ in range(30):
        mu, gamma, r = 10 ** rng.uniform(-3, 0), 10 ** rng.uniform(-1, 2), rng.uniform(-2, 2)
        c = math.sqrt(gamma * mu) * abs(r)
        for delta in (1e-2, 1e-3, 1e-6):
            e = ops_ridge_tail_bound(delta, mu, gamma, r, form="corrected")
            assert _tail_two_sided(mu, c, e) <= delta
            assert ops_ridge_delta(e, mu, c) <= delta


def test_thesis_printed_bound_fails():
    """Eq. 5.5 as printed: its tail probability exceeds δ (here ≈ 3 δ at δ = 1e-3, as the spec found)."""
    mu, gamma, r, delta = 1e-3, 1000.0, 1.0, 1e-3
    e = ops_ridge_tail_bound(delta, mu, gamma, r, form="thesis")
    c = math.sqrt(gamma * mu) * abs(r)
    exact_tail = _tail_two_sided(mu, c, e)
    assert exact_tail > 2.5 * delta
    # Monte Carlo confirms (1e6 draws; the binomial SE of the frequency is about 5.5e-5)
    z = _gen(5).standard_normal(1_000_000)
    freq = np.mean(np.abs(privacy_loss_ops_ridge(z, mu, c)) > e)
    assert abs(freq - exact_tail) < 5 * math.sqrt(exact_tail / z.size)
    assert freq > 2 * delta
    # the corrected bound at the same target is valid
    assert _tail_two_sided(mu, c, ops_ridge_tail_bound(delta, mu, gamma, r)) <= delta


@pytest.mark.parametrize("delta, low, high", [(1e-2, 1.05, 1.2), (1e-3, 2.8, 3.1)])
def test_thesis_bound_fails_by_the_factor_the_spec_found(delta, low, high):
    """Spec: exceeded with probability ≈1.2δ at δ=1e-2 and ≈3δ at δ=1e-3 (exact, several targets)."""
    for mu, gamma, r in [(1e-3, 1000.0, 1.0), (1e-2, 100.0, 1.0), (1e-4, 1e4, -1.0)]:
        e = ops_ridge_tail_bound(delta, mu, gamma, r, form="thesis")
        ratio = _tail_two_sided(mu, math.sqrt(gamma * mu) * abs(r), e) / delta
        assert low < ratio < high


def test_ops_ridge_epsilon_inverts_delta():
    for mu, c, delta in [(0.01, 0.2, 1e-6), (0.3, 1.0, 1e-3), (1e-4, 0.01, 1e-8)]:
        e = ops_ridge_epsilon(delta, mu, c)
        assert ops_ridge_delta(e, mu, c) <= delta * (1 + 1e-8)
        assert ops_ridge_delta(e * 0.999, mu, c) > delta


def test_analytic_gaussian_matches_dp_accounting_and_thesis_sigma_is_under_noised():
    dp_accounting = pytest.importorskip("dp_accounting")
    for eps, delta in [(0.5, 5e-7), (1.0, 2.5e-6), (0.05, 1e-8)]:
        assert analytic_gaussian_sigma(eps, delta) == pytest.approx(dp_accounting.get_sigma_gaussian(eps, delta), rel=1e-6)
    # the thesis's sigma_1 = sqrt(log(4/delta)) / (eps/2) misses its (eps/2, delta/2) target
    for eps, delta, achieved in [(1.0, 1e-6, 1.8e-6), (2.0, 1e-5, 1.8e-5)]:
        sigma_thesis = math.sqrt(math.log(4 / delta)) / (eps / 2)
        d = analytic_gaussian_delta(sigma_thesis, eps / 2)
        assert d > delta / 2 and d == pytest.approx(achieved, rel=0.05)


# ------------------------------------------------------------------ edges (HQI): extreme scales, no cancellation


def _analytic_delta_mp(sigma, eps, digits):
    """δ(ε) of the Gaussian mechanism (Δ = 1) in ``digits``-digit arithmetic (mpmath), the difference exact."""
    mp = pytest.importorskip("mpmath")
    with mp.workdps(digits):
        s, e = mp.mpf(sigma), mp.mpf(eps)
        a, b = 1 / (2 * s), e * s
        if a + b > 1e6:  # Φ(-a - b) = 0 to any precision that matters; Φ(a - b) is 0 or 1
            return float(mp.ncdf(a - b)) if a - b > -1e6 else 0.0
        return float(mp.ncdf(a - b) - mp.e**e * mp.ncdf(-a - b))


@pytest.mark.parametrize("sigma", [1e-300, 1e-3, 1.0, 1e3, 1e8, 1e12, 1e15, 1e20, 1e150, 1e300])
def test_analytic_gaussian_delta_is_exact_at_every_scale(sigma):
    """Against 330-digit arithmetic from σ = 1e-300 to 1e300 and ε from 0 to 1e4: relative 1e-8.

    Failed before: Φ(a - b) - e^ε Φ(-a - b) from two logarithms near log ½ kept only their rounding
    (10⁻¹⁶) of the difference: σ = 1e20, ε = 0 gave δ = 0 (truth 3.99e-21; at σ = 1e150, 0 against
    4e-151), σ = 1e15, ε = 1e-30 gave 3.33e-16 (truth 3.99e-16: 16 % too small, an under-stated δ).
    The tolerance: the cancellation-free difference is exact to ~10 roundings; where δ is a small part
    of the difference Φ(a - b) - Φ(-a - b) (at most 1e-6 of it), rounding grows by that ratio.
    """
    for eps in [0.0, 1e-300, 1e-30, 1e-16, 1e-12, 1e-6, 1e-3, 1.0, 10.0, 700.0, 800.0, 1e4]:
        truth = _analytic_delta_mp(sigma, eps, 330)
        got = analytic_gaussian_delta(sigma, eps)
        if truth > 1e-300:  # representable with full precision
            assert got == pytest.approx(truth, rel=1e-8), (sigma, eps, got, truth)
        else:
            assert 0.0 <= got <= 1e-300, (sigma, eps, got, truth)


@pytest.mark.parametrize("c", [1e-300, 1e-100, 1e-20, 1e-12, 1e-8, 1e-3])
def test_a_positive_delta_is_never_rounded_to_zero_at_epsilon_zero(c):
    """At ε = 0 δ is the total variation ``erf(c/(2√2))`` of two unit Gaussians ``c`` apart (exact in
    scipy to a few roundings): the hockey stick, the OPS pair without leverage and the analytic Gaussian
    mechanism (σ = 1/c) agree with it to 1e-12 relative.  Failed before below c ≈ 1e-16 (δ = 0)."""
    tv = float(special.erf(c / (2.0 * math.sqrt(2.0))))
    assert tv > 0
    for got in (gaussian_hockey_stick(0.0, 1.0, c, 1.0, 0.0), ops_ridge_delta(0.0, 0.0, c),
                analytic_gaussian_delta(1.0 / c, 0.0)):
        assert got == pytest.approx(tv, rel=1e-12)


def test_analytic_gaussian_delta_is_monotone_from_1e_300_to_1e300():
    """Decreasing in σ and in ε on dense grids, including ε above 700 (e^ε beyond float range).

    The tolerance: where δ is not recomputed from the exact difference (the margin 1 - e^ε Q/P is at
    least 1e-6), it carries the rounding of two logarithms over that margin, below 1e-8 relative.
    """
    sig = np.geomspace(1e-300, 1e300, 1201)
    for eps in [0.0, 1e-300, 1e-12, 0.1, 1.0, 700.0, 710.0, 1e4]:
        d = np.array([analytic_gaussian_delta(s, eps) for s in sig])
        assert np.all(np.isfinite(d)) and np.all((d >= 0) & (d <= 1))
        assert np.all(d[1:] <= d[:-1] * (1 + 1e-8)), eps
    eps_grid = np.concatenate([[0.0], np.geomspace(1e-300, 1e5, 1201)])
    for sigma in [1e-300, 1e-3, 1.0, 1e3, 1e15, 1e300]:
        d = np.array([analytic_gaussian_delta(sigma, e) for e in eps_grid])
        assert np.all(d[1:] <= d[:-1] * (1 + 1e-8)), sigma


def test_analytic_gaussian_sigma_is_monotone_and_refuses_an_unresolvable_delta():
    """σ(ε, δ) decreases in ε and in δ; a δ below 1e-300 is refused naming delta (was an
    OverflowError from the search at δ = 1e-323, the σ bracket growing past e^709)."""
    eps = [1e-4, 1e-2, 0.1, 1.0, 10.0, 100.0, 800.0]
    deltas = [1e-300, 1e-100, 1e-15, 1e-6, 1e-2, 0.5]
    S = np.array([[analytic_gaussian_sigma(e, d) for d in deltas] for e in eps])
    assert np.all(np.isfinite(S)) and np.all(S > 0)
    assert np.all(np.diff(S, axis=0) < 0) and np.all(np.diff(S, axis=1) < 0)
    for e, row in zip(eps, S):
        for d, s in zip(deltas, row):
            assert analytic_gaussian_delta(s, e) <= d * (1 + 1e-8)
    for d in (1e-301, 1e-323):
        with pytest.raises(ValueError, match=r"delta=.*1e-300"):
            analytic_gaussian_sigma(1.0, d)


@pytest.mark.parametrize("mu", [0.0, 1e-300, 1e-17])
def test_composed_pld_of_a_pair_without_leverage_is_the_composed_gaussian(mu):
    """Cross-check with dp-accounting on the mechanism both have: with μ = 0 (or 1 + μ rounding to 1)
    the draw is a Gaussian mechanism of ratio c, and composed with one of ratio g it is the Gaussian
    mechanism of ratio √(c² + g²) (exact: :func:`analytic_gaussian_delta`).  Pessimistic rounding raises
    each of the two losses by less than the interval, so ``δ(ε) <= composed <= δ(ε - 2 interval)``
    (plus dp-accounting's truncated tail, 1e-15).  Failed before: μ = 0 raised ``ValueError``
    (min() of an empty sequence, a division by A = 0 in the loss's roots)."""
    from sklearn_bayes.privacy._core._pld import ops_ridge_composed_delta

    interval = 1e-3
    for c, g in [(0.5, 0.5), (1.0, 0.2), (0.0, 0.7), (0.3, 0.0)]:
        total = math.hypot(c, g)
        composed_prev = 1.0
        for eps in (0.0, 0.1, 0.5, 1.0, 3.0):
            composed = ops_ridge_composed_delta(eps, mu, c, g, interval)
            # analytic_gaussian_delta is rounded up by at most 1.01e-9 (relative): the exact δ is at least this
            exact = analytic_gaussian_delta(1.0 / total, eps) / (1.0 + 1.01e-9)
            # δ(ε') = Φ(a - b) - e^ε' Φ(-a - b) at ε' = ε - 2 interval (negative at ε = 0: the same formula)
            e2 = eps - 2 * interval
            loose = special.ndtr(total / 2 - e2 / total) - math.exp(e2) * special.ndtr(-total / 2 - e2 / total)
            assert exact - 1e-15 <= composed <= loose + 1e-15, (c, g, eps, composed, exact, loose)
            assert composed <= composed_prev + 1e-15  # decreasing in ε
            composed_prev = composed


def test_composed_pld_grows_with_the_composed_gaussian():
    """More composed noise-to-signal ratio (a larger g, i.e. more or less noisy Gaussian releases)
    never lowers δ; the draw composed with nothing is at least its exact δ."""
    from sklearn_bayes.privacy._core._pld import ops_ridge_composed_delta

    for eps, mu, c in [(0.5, 0.01, 0.3), (1.0, 0.1, 0.8), (2.0, 1e-4, 0.05)]:
        ds = [ops_ridge_composed_delta(eps, mu, c, g) for g in (0.0, 0.05, 0.2, 0.5, 1.0)]
        assert np.all(np.diff(ds) >= -1e-15)
        assert ds[0] >= ops_ridge_delta(eps, mu, c) - 1e-15


@pytest.mark.parametrize("mu, c", [(0.0, 1e-6), (1e-8, 0.0), (1e-8, 1e-6), (1e-3, 0.1), (0.1, 1.0), (1.0, 10.0)])
def test_ops_ridge_epsilon_is_never_below_the_epsilon_that_certifies_delta(mu, c):
    """``δ(ops_ridge_epsilon(δ)) <= δ`` at every δ down to 1e-300, and ε decreases in δ.

    Failed before where δ(ε) is very steep (a tiny shift or leverage: ε ~ 1e-5): the root search's
    absolute tolerance 1e-12 left ε up to 1e-7 relative short, and δ(ε) then exceeded δ by 1e-5
    relative (μ = 0, c = 1e-6, δ = 1e-300: ε = 3.66e-5 gave 1.0000076e-300).  The per-instance ε of
    a record was under-stated by that much."""
    deltas = [1e-300, 1e-100, 1e-20, 1e-10, 1e-6, 1e-3, 0.1, 0.5, 0.9]
    eps = [ops_ridge_epsilon(d, mu, c) for d in deltas]
    assert np.all(np.diff(eps) <= 0)
    for d, e in zip(deltas, eps):
        assert ops_ridge_delta(e, mu, c) <= d, (d, e)
        if e > 0:  # and it is the smallest such ε to 1e-6 relative
            assert ops_ridge_delta(e * (1 - 1e-6), mu, c) > d


def test_composed_pld_of_a_far_pair_is_refused_by_name_not_by_memory():
    """A pair 1e10 sd apart asked dp-accounting for 8e14 loss points (MemoryError: 5.68 PiB); the
    discretisation is refused naming ``interval`` (the loss range over it), and a moderate pair still
    gives its δ, at least the exact one."""
    from sklearn_bayes.privacy._core._pld import ops_ridge_composed_delta

    with pytest.raises(ValueError, match="interval="):
        ops_ridge_composed_delta(1.0, 0.01, 1e10, 1.0)
    assert ops_ridge_composed_delta(1.0, 0.01, 5.0, 0.0) >= ops_ridge_delta(1.0, 0.01, 5.0) - 1e-15
