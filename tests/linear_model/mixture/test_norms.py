"""The M-estimation norms (linear_model/_mixture/_norms.py): rho, psi, weights, psi_deriv."""

import numpy as np
import pytest

import sklearn_bayes.linear_model._mixture._selection as mv
from sklearn_bayes.linear_model._mixture._norms import Cauchy, HuberT, LeastSquares, RobustNorm, TukeyBiweight

NORMS = list(mv.FAMILY) + [HuberT(), TukeyBiweight(), Cauchy(), HuberT(0.5), Cauchy(3.0)]
U = np.linspace(-8, 8, 1601)


def _old_psi_terms(kind, u, c):
    """The string switch the norms replace (verbatim), the reference for bit-identity."""
    a = np.abs(u)
    if kind == "least squares":
        one = np.ones_like(u)
        return one, u, one
    if kind == "huber":
        w = np.minimum(1.0, c / np.maximum(a, np.finfo(float).tiny))
        return w, u * w, (a <= c).astype(float)
    if kind == "tukey":
        t = (u / c) ** 2
        inside = a < c
        w = np.where(inside, (1.0 - t) ** 2, 0.0)
        return w, u * w, np.where(inside, (1.0 - t) * (1.0 - 5.0 * t), 0.0)
    if kind == "cauchy":
        t = (u / c) ** 2
        w = 1.0 / (1.0 + t)
        return w, u * w, (1.0 - t) * w * w
    raise ValueError(f"unknown loss {kind!r}")


def _away_from_kinks(norm, u, gap=1e-3):
    return np.abs(np.abs(u) - norm.c) > gap if norm.c else np.ones_like(u, dtype=bool)


@pytest.mark.parametrize("norm", NORMS, ids=lambda n: n.label())
def test_psi_is_the_derivative_of_rho(norm):
    h = 1e-5
    num = (norm.rho(U + h) - norm.rho(U - h)) / (2 * h)
    away = _away_from_kinks(norm, U)
    np.testing.assert_allclose(norm.psi(U)[away], num[away], rtol=1e-7, atol=1e-7)
    # rho is even, zero at zero and non-decreasing in |u|
    np.testing.assert_array_equal(norm.rho(U), norm.rho(-U))
    assert norm.rho(np.zeros(1))[0] == 0.0
    assert np.all(np.diff(norm.rho(U[U >= 0])) >= 0)


@pytest.mark.parametrize("norm", NORMS, ids=lambda n: n.label())
def test_weights_are_psi_over_u(norm):
    nz = U != 0
    np.testing.assert_allclose(norm.weights(U)[nz], norm.psi(U)[nz] / U[nz], rtol=1e-12, atol=1e-300)
    assert norm.weights(np.zeros(1))[0] == 1.0  # the limit psi(u) / u at 0 (psi'(0) = 1)


@pytest.mark.parametrize("norm", NORMS, ids=lambda n: n.label())
def test_psi_deriv_against_finite_differences(norm):
    h = 1e-6
    num = (norm.psi(U + h) - norm.psi(U - h)) / (2 * h)
    away = _away_from_kinks(norm, U)
    np.testing.assert_allclose(norm.psi_deriv(U)[away], num[away], atol=1e-6)


@pytest.mark.parametrize("norm", NORMS, ids=lambda n: n.label())
def test_norms_equal_the_old_string_switch_bit_for_bit(norm):
    grid = np.concatenate([U, [0.0, -0.0, norm.c, -norm.c, 1e-300, 1e300, np.inf, -np.inf]])
    with np.errstate(all="ignore"):  # u = +-inf, 1e300: the same infs and nans from both
        old = _old_psi_terms(norm.name, grid, norm.c)
        new = norm.psi_terms(grid)
        separate = (norm.weights(grid), norm.psi(grid), norm.psi_deriv(grid))
    if norm.name == "cauchy":  # H30Y: psi' at |u| > 1e154 ((u/c)^2 = inf) is its limit 0, no longer -inf * 0 = NaN
        with np.errstate(over="ignore"):
            big = np.isinf((grid / norm.c) ** 2)
        assert np.isnan(old[2][big]).all() and np.all(new[2][big] == 0.0)
        old = (old[0], old[1], np.where(big, 0.0, old[2]))
    inf = np.isinf(grid)  # round 21: psi at u = +-inf is its limit (c sign(u) for Huber, 0 else), no longer inf * 0
    if norm.name != "least squares":
        assert np.isnan(old[1][inf]).all()
        limit = norm.c * np.sign(grid) if norm.name == "huber" else np.zeros_like(grid)
        old = (old[0], np.where(inf, limit, old[1]), old[2])
    for o, n, s in zip(old, new, separate):
        np.testing.assert_array_equal(n, o)
        np.testing.assert_array_equal(s, o)


def test_huber_and_tukey_closed_forms():
    u = np.array([-3.0, -1.0, 0.0, 0.5, 2.0])
    np.testing.assert_array_equal(HuberT(1.0).psi(u), [-1.0, -1.0, 0.0, 0.5, 1.0])
    np.testing.assert_array_equal(HuberT(1.0).rho(u), [2.5, 0.5, 0.0, 0.125, 1.5])
    # Tukey's rho is constant c^2 / 6 beyond c and psi vanishes there
    assert TukeyBiweight(2.0).rho(np.array([5.0]))[0] == pytest.approx(4.0 / 6.0)
    assert TukeyBiweight(2.0).psi(np.array([5.0]))[0] == 0.0
    # Cauchy: psi(c) = c / 2
    assert Cauchy(1.5).psi(np.array([1.5]))[0] == pytest.approx(0.75)


def test_norms_are_values_with_a_label():
    assert HuberT(1.345) == HuberT(1.345) and hash(HuberT(1.345)) == hash(HuberT(1.345))
    assert HuberT(1.0) != Cauchy(1.0)
    assert len({n: None for n in mv.FAMILY}) == len(mv.FAMILY)
    assert [n.label() for n in mv.FAMILY[:2]] == ["least squares", "huber(c=1)"]
    assert mv.MISSPECIFIED_LOSS.label() == "huber(c=1.345)"
    assert all(isinstance(n, RobustNorm) for n in mv.FAMILY)
    with pytest.raises(AttributeError):
        LeastSquares().c = 1.0  # frozen
