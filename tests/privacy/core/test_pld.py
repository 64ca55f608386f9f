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
