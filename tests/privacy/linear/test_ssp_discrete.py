"""The exact discrete Gaussian release of AdaOPSRegressor's default (no low bits to leak).

The guarantee is checked against the *exact* privacy loss of the discrete Gaussian computed from
its pmf on neighbouring inputs (1-D and 2-D, small parameters where the grid matters most), the
estimator's budgets against the target, and the release for exactness: every output an integer
multiple of a power-of-two grid spacing whose law depends on the data only through the snapped
statistics.
"""

import math
import warnings

import numpy as np
import pytest

from sklearn_bayes.exceptions import SeededNoiseWarning
from sklearn_bayes.privacy import AdaOPSRegressor
from sklearn_bayes.privacy._core._noise import discrete_gaussian_pmf
from sklearn_bayes.privacy._linear._ssp_posterior import (
    check_grid_range,
    discrete_release_delta_bound,
    gaussian_delta,
    release_sufficient_statistics,
    ssp_joint_sensitivity_sq,
    ssp_posterior_budget,
)

# pairs of real statistics (grid units): snapping turns their difference into an integer shift
PAIRS = [(0.49, -0.49), (0.51, -0.51), (1.2, 0.0), (2.49, -0.3), (0.0, 3.4), (1.5, 0.49), (0.0, 0.0)]
EPSILONS = (0.1, 0.5, 1.0, 2.0)


def _exact_delta_1d(s, v, eps):
    """δ(ε) = Σ_k (P(k) - e^ε P(k + v))₊ of N_Z(0, s²) shifted by the integer v, from the pmf."""
    tail = int(60 * s) + 20 + abs(v)
    k = np.arange(-tail, tail + 1)
    return float(np.maximum(discrete_gaussian_pmf(k, s) - math.exp(eps) * discrete_gaussian_pmf(k + v, s), 0).sum())


@pytest.mark.parametrize("s", [2.0, 3.0, 5.0])
def test_exact_delta_of_the_snapped_release_is_within_the_bound_1d(s):
    """On every pair the exact δ(ε) of the snapped discrete release is at most the certified bound
    δ_G(μ_c + ω; ε - (μ_c + ω)ω), μ_c = |f - f'|/s (the unsnapped sensitivity), ω = 1/s."""
    violations_without_grid_term = 0
    for f, f2 in PAIRS:
        v = int(np.rint(f) - np.rint(f2))
        mu_c = abs(f - f2) / s
        for eps in EPSILONS:
            exact = _exact_delta_1d(s, v, eps)
            assert exact <= discrete_release_delta_bound(mu_c, 1.0 / s, eps) * (1 + 1e-9) + 1e-15
            violations_without_grid_term += exact > gaussian_delta(mu_c, eps) * (1 + 1e-9) + 1e-15
    # the grid term is needed: the Gaussian profile at the unsnapped sensitivity is exceeded
    assert violations_without_grid_term > 0


def test_exact_delta_of_the_snapped_release_is_within_the_bound_2d():
    """Two coordinates with different parameters (3 and 4 grid steps): the exact δ from the product pmf."""
    s = np.array([3.0, 4.0])
    tail = 220
    k = np.arange(-tail, tail + 1)
    p1, p2 = discrete_gaussian_pmf(k, s[0]), discrete_gaussian_pmf(k, s[1])
    omega = float(np.sqrt(np.sum(1 / s**2)))
    for f, f2 in [((0.49, 1.2), (-0.49, 0.0)), ((2.4, -0.6), (0.0, 0.7)), ((1.0, 1.0), (0.0, 0.0))]:
        v = np.rint(f).astype(int) - np.rint(f2).astype(int)
        mu_c = float(np.linalg.norm((np.array(f) - np.array(f2)) / s))
        P = np.outer(p1, p2)
        Q = np.outer(np.roll(p1, -v[0]), np.roll(p2, -v[1]))  # pmf(k + v); the wrapped ends carry < e^-1000
        for eps in (0.3, 1.0):
            exact = float(np.maximum(P - math.exp(eps) * Q, 0).sum())
            assert exact <= discrete_release_delta_bound(mu_c, omega, eps) * (1 + 1e-9) + 1e-15


def test_discrete_gaussian_can_exceed_the_continuous_profile():
    """Why the accounting is a bound with a grid term: at an *integer* shift the discrete Gaussian's δ is
    not always below the continuous one's (σ = 1 step, shift 1, ε = 2: about 1.19x)."""
    exact = _exact_delta_1d(1.0, 1, 2.0)
    assert exact > 1.1 * gaussian_delta(1.0, 2.0)
    assert exact <= discrete_release_delta_bound(1.0, 1.0, 2.0)


@pytest.mark.parametrize("eps, delta", [(0.01, 1e-6), (0.1, 1e-6), (1.0, 1e-6), (10.0, 1e-8), (100.0, 1e-6)])
@pytest.mark.parametrize("p", [2, 4, 21])
def test_estimator_budget_certifies_the_target(eps, delta, p):
    """The grid budget: the joint sensitivity at the actual noise sds is <= mu, ω <= √m/64-bounded, and the
    certified δ(ε) <= δ; the noise sds exceed the continuous mechanism's by < 0.5 %."""
    b = ssp_posterior_budget(eps, delta, p=p)
    u, v, w = (1.0 / b[f"sigma_{k}"] ** 2 for k in ("gram", "xty", "yty"))
    mu_c = math.sqrt(ssp_joint_sensitivity_sq(u, v, w))
    assert mu_c <= b["mu"] * (1 + 1e-12)
    m = p * (p + 1) // 2 + p + 1
    s = np.array([b["grid_sigma_gram"]] * (p * (p + 1) // 2) + [b["grid_sigma_xty"]] * p + [b["grid_sigma_yty"]])
    assert b["omega"] == pytest.approx(float(np.sqrt(np.sum(1.0 / s.astype(float) ** 2))), rel=1e-12)
    assert s.min() >= 64 and s.size == m
    for key in ("gram", "xty", "yty"):
        g = b[f"grid_{key}"]
        assert math.frexp(g)[0] == 0.5  # a power of two: snapping and the products are exact
        assert b[f"sigma_{key}"] == g * b[f"grid_sigma_{key}"]
    assert discrete_release_delta_bound(mu_c, b["omega"], eps) <= delta
    cont = ssp_posterior_budget(eps, delta)
    assert 1.0 <= b["sigma_gram"] / cont["sigma_gram"] < 1.005


def test_release_is_exact_multiples_and_depends_only_on_the_snapped_statistics():
    rng = np.random.default_rng(0)
    n, p = 500, 3
    Z = rng.normal(size=(n, p))
    Z /= np.maximum(1.0, np.linalg.norm(Z, axis=1))[:, None]
    t = np.clip(rng.normal(size=n), -1, 1)
    b = ssp_posterior_budget(0.5, 1e-6, p=p, n=n)
    A, xb, q = release_sufficient_statistics(Z, t, b, np.random.default_rng(5))
    for out, g in ((A, b["grid_gram"]), (xb, b["grid_xty"]), (np.array([q]), b["grid_yty"])):
        ints = out / g
        assert np.all(ints == np.rint(ints)) and np.all(np.abs(ints) < 2.0**53)
    assert np.array_equal(A, A.T)
    # a last-bit change of the data (far below half a grid step) changes nothing: the low bits are not released
    Z2, t2 = Z.copy(), t.copy()
    Z2[0] = np.nextafter(Z2[0], 0.0)
    t2[1] = np.nextafter(t2[1], 2.0)
    A2, xb2, q2 = release_sufficient_statistics(Z2, t2, b, np.random.default_rng(5))
    assert np.array_equal(A, A2) and np.array_equal(xb, xb2) and q == q2


def test_too_large_epsilon_is_refused_before_any_noise_with_a_working_limit():
    with pytest.raises(ValueError, match=r"use epsilon <= ") as info:
        check_grid_range(1e200, 1e-6, 1000, 3)
    largest = float(str(info.value).split("use epsilon <= ")[1].split(" ")[0])
    assert check_grid_range(largest, 1e-6, 1000, 3)["grid_gram"] * 2.0**52 > 1000
    X = np.random.default_rng(1).uniform(-1, 1, size=(1000, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        est = AdaOPSRegressor(epsilon=largest, x_bound=1.0, y_bound=1.0, random_state=0).fit(X, X[:, 0])
    assert np.all(np.isfinite(est.coef_))


def test_too_small_epsilon_and_delta_are_refused_naming_them():
    with pytest.raises(ValueError, match=r"epsilon=1e-08 with delta=1e-14 is too small"):
        check_grid_range(1e-8, 1e-14, 1000, 4)
    assert check_grid_range(1e-8, 1e-6, 1000, 4)["grid_sigma_gram"] < 2**40
