"""The n-dimensional (Woodbury) Newton system of _glm._dual on wide data (p > 2 n).

The dual path takes the same Newton steps as the dense one (exact algebra), so the two minimisers differ
by at most what the stopping rule leaves: for an objective ``F`` that is ``mu``-strongly convex around the
optimum, ``|theta - theta*|_2 <= |grad F(theta)|_2 / mu``, hence ``|theta_dual - theta_dense|_2 <=
(|g_dual| + |g_dense| + 2 rho) / mu`` with ``rho`` the rounding bound of the computed gradients
(``gamma_{n+1} (|X|^T |g| + |P| |b - c|)`` per coordinate, ``gamma_k = k eps / (1 - k eps)``) and ``mu``
the smallest eigenvalue of the Hessian at the dense solution.
"""

import numpy as np
import pytest
from scipy import linalg

from sklearn_bayes._glm import _dual
from sklearn_bayes._glm._map import (
    HingeLoss,
    LogisticLoss,
    PoissonLoss,
    SquaredHingeLoss,
    SquaredLoss,
    fit_map,
    inverse_information,
    inverse_spd,
    posterior_hessian,
    rank_tolerance,
)

EPS = np.finfo(float).eps


def _data(kind, n=30, d=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    eta = X[:, :5].sum(axis=1) * 0.5
    y = {"sq": eta + rng.normal(size=n),
         "log": (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float),
         "poi": rng.poisson(np.exp(0.3 * eta)).astype(float),
         "svm": np.where(eta + rng.logistic(size=n) > 0, 1.0, -1.0)}[kind]
    loss = {"sq": SquaredLoss(), "log": LogisticLoss(), "poi": PoissonLoss(), "svm": SquaredHingeLoss()}[kind]
    return X, y, loss, rng


def _gradient(X, y, loss, res, P, mean, w, fit_intercept):
    """The gradient of F at a result and the rounding bound of its computation (per coordinate)."""
    n, d = X.shape
    b = res.coef.ravel()
    eta = X @ b + (res.intercept[0] if fit_intercept else 0.0)
    g, _ = loss.derivatives(y, eta[:, None], w)
    g = g[:, 0]
    r = b - mean
    Pr = P * r if np.ndim(P) < 2 else P @ r
    grad = X.T @ g + Pr
    absP = np.abs(P) * np.abs(r) if np.ndim(P) < 2 else np.abs(P) @ np.abs(r)
    gamma = (n + 1) * EPS / (1 - (n + 1) * EPS)
    rho = gamma * (np.abs(X).T @ np.abs(g) + absP)
    if fit_intercept:
        grad = np.append(grad, g.sum())
        rho = np.append(rho, gamma * np.abs(g).sum())
    return grad, rho


@pytest.mark.parametrize("kind", ["sq", "log", "poi", "svm"])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("prior", ["scalar", "matrix", "weak"])
@pytest.mark.parametrize("weighted", [False, True])
def test_dual_newton_equals_dense_within_stopping_rule(monkeypatch, kind, fit_intercept, prior, weighted):
    X, y, loss, rng = _data(kind)
    n, d = X.shape
    assert _dual.use_dual(n, d, 1)
    w = rng.uniform(0.5, 2.0, n) if weighted else None
    wv = np.ones(n) if w is None else w
    P, mean = {"scalar": (1.0, np.zeros(d)), "matrix": (0.3 * np.eye(d), 0.1 * rng.normal(size=d)),
               "weak": (1e-2, np.zeros(d))}[prior]
    kw = dict(prior_precision=P, prior_mean=mean, fit_intercept=fit_intercept, sample_weight=w)
    calls = []
    build = _dual.DualFactor.build
    monkeypatch.setattr(_dual.DualFactor, "build",
                        classmethod(lambda cls, *a, **k: calls.append(1) or build.__func__(cls, *a, **k)))
    dual = fit_map(X, y, loss, **kw)
    assert calls, "the dual path was not taken"
    monkeypatch.setattr(_dual, "DUAL_RATIO", float("inf"))
    calls.clear()
    dense = fit_map(X, y, loss, **kw)
    assert not calls
    assert dual.converged and dense.converged and not dual.singular and not dense.singular
    H = posterior_hessian(X, y, loss, dense.coef, dense.intercept, sample_weight=wv,
                          prior_precision=P if np.ndim(P) == 2 else np.full(d, P), fit_intercept=fit_intercept)
    mu = linalg.eigvalsh(H, subset_by_index=[0, 0])[0]
    assert mu > 0
    ga, ra = _gradient(X, y, loss, dual, P, mean, wv, fit_intercept)
    gb, rb = _gradient(X, y, loss, dense, P, mean, wv, fit_intercept)
    bound = (np.linalg.norm(ga) + np.linalg.norm(gb) + np.linalg.norm(ra) + np.linalg.norm(rb)) / mu
    theta_a = np.append(dual.coef.ravel(), dual.intercept if fit_intercept else [])
    theta_b = np.append(dense.coef.ravel(), dense.intercept if fit_intercept else [])
    assert np.linalg.norm(theta_a - theta_b) <= bound


def test_smoothed_hinge_dual_equals_dense(monkeypatch):
    # the hinge loss is a homotopy of smoothed stages: the last stage's minimiser, same bound
    X, y, _, rng = _data("svm")
    loss = HingeLoss()
    d = X.shape[1]
    dual = fit_map(X, y, loss, prior_precision=1.0)
    monkeypatch.setattr(_dual, "DUAL_RATIO", float("inf"))
    dense = fit_map(X, y, loss, prior_precision=1.0)
    assert dual.smoothing == dense.smoothing
    stage = [s for s in loss.stages() if s.smoothing == dense.smoothing][0]
    H = posterior_hessian(X, y, stage, dense.coef, dense.intercept, prior_precision=np.ones(d))
    mu = linalg.eigvalsh(H, subset_by_index=[0, 0])[0]
    ones = np.ones(X.shape[0])
    ga, ra = _gradient(X, y, stage, dual, 1.0, np.zeros(d), ones, True)
    gb, rb = _gradient(X, y, stage, dense, 1.0, np.zeros(d), ones, True)
    bound = (np.linalg.norm(ga) + np.linalg.norm(gb) + np.linalg.norm(ra) + np.linalg.norm(rb)) / mu
    diff = np.append(dual.coef.ravel() - dense.coef.ravel(), dual.intercept - dense.intercept)
    assert np.linalg.norm(diff) <= bound


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_dual_inverse_equals_dense_inverse(fit_intercept):
    # H^-1 from the factor: backward-stable solves, so the difference is at most a small multiple of
    # eps * cond(H) * |H^-1| (entrywise, relative to the largest entry)
    X, y, loss, rng = _data("log")
    n, d = X.shape
    b = 0.05 * rng.normal(size=d)
    H = posterior_hessian(X, y, loss, b, [0.2], prior_precision=np.full(d, 0.5), fit_intercept=fit_intercept)
    dense = inverse_spd(H)
    dual = _dual.posterior_inverse(X, y, loss, b, [0.2], sample_weight=None, prior_precision=0.5,
                                   fit_intercept=fit_intercept)
    ev = linalg.eigvalsh(H)
    cond = ev[-1] / ev[0]
    assert np.max(np.abs(dual - dense)) <= 8 * (d + n) * EPS * cond * np.max(np.abs(dense))
    np.testing.assert_array_equal(dual, dual.T)


def test_dual_information_inverse_matches_limit_inverse():
    # the data-only information on wide data is singular: pseudo-inverse + inf where unidentified
    X, y, loss, rng = _data("poi")
    n, d = X.shape
    b = 0.05 * rng.normal(size=d)
    H = posterior_hessian(X, y, loss, b, [0.1], fit_intercept=True)
    dense = inverse_information(H, n)
    dual = _dual.information_inverse(X, y, loss, b, [0.1], sample_weight=None, fit_intercept=True,
                                     rank_tolerance=rank_tolerance)
    np.testing.assert_array_equal(np.isfinite(dual), np.isfinite(dense))
    inf = ~np.isfinite(dense)
    np.testing.assert_array_equal(dual[inf], dense[inf])
    assert inf.any()


def test_dual_information_inverse_finite_part():
    # a design whose null space misses some parameters: their finite pseudo-inverse entries agree
    rng = np.random.default_rng(3)
    n, d = 20, 60
    X = np.zeros((n, d))
    X[:, :5] = rng.normal(size=(n, 5))  # 5 identified columns, 55 zero columns (each unidentified)
    y = rng.normal(size=n)
    b = np.zeros(d)
    H = posterior_hessian(X, y, SquaredLoss(), b, [0.0], fit_intercept=True)
    dense = inverse_information(H, n)
    dual = _dual.information_inverse(X, y, SquaredLoss(), b, [0.0], sample_weight=None, fit_intercept=True,
                                     rank_tolerance=rank_tolerance)
    np.testing.assert_array_equal(np.isfinite(dual), np.isfinite(dense))
    fin = np.isfinite(dense)
    # N N^T is 1 on the zero columns' diagonal and 0 elsewhere: their variances alone are infinite
    np.testing.assert_array_equal(np.flatnonzero(~fin.diagonal()), np.arange(5, d))
    assert (~fin).sum() == d - 5
    ev = linalg.eigvalsh(H[np.ix_(np.r_[0:5, d], np.r_[0:5, d])])
    assert np.max(np.abs(dual[fin] - dense[fin])) <= 8 * (d + n) * EPS * ev[-1] / ev[0] * np.max(np.abs(dense[fin]))


def test_shape_rule_and_isotropic_detection():
    assert _dual.use_dual(10, 21, 1) and not _dual.use_dual(10, 20, 1) and not _dual.use_dual(10, 100, 3)
    assert not _dual.use_dual(0, 5, 1)
    assert _dual.isotropic_scale(2.0) == 2.0
    assert _dual.isotropic_scale(np.full(4, 2.0)) == 2.0
    assert _dual.isotropic_scale(2.0 * np.eye(4)) == 2.0
    assert _dual.isotropic_scale(np.diag([1.0, 2.0])) is None
    P = np.eye(3)
    P[0, 1] = 1e-300
    assert _dual.isotropic_scale(P) is None
    assert _dual.isotropic_scale(0.0) is None and _dual.isotropic_scale(np.inf) is None


def test_switch_off_and_narrow_data_never_enter_the_dual_path(monkeypatch):
    # DUAL_RATIO = inf (and every p <= 2 n problem) runs the dense code of before, untouched
    def boom(*a, **k):
        raise AssertionError("dual path entered")

    X, y, loss, _ = _data("log")
    monkeypatch.setattr(_dual.DualFactor, "build", classmethod(boom))
    monkeypatch.setattr(_dual, "DUAL_RATIO", float("inf"))
    fit_map(X, y, loss, prior_precision=1.0)
    monkeypatch.setattr(_dual, "DUAL_RATIO", 2.0)
    Xn, yn, lossn, _ = _data("log", n=60, d=120)  # p = 2 n: not wide
    fit_map(Xn, yn, lossn, prior_precision=1.0)
    assert _dual.posterior_inverse(Xn, yn, lossn, np.zeros(120), [0.0], sample_weight=None, prior_precision=1.0,
                                   fit_intercept=True) is None
    assert _dual.information_inverse(Xn, yn, lossn, np.zeros(120), [0.0], sample_weight=None, fit_intercept=True,
                                     rank_tolerance=rank_tolerance) is None


def test_identity_inverse_by_cholesky_is_exact():
    # the tuning skips the O(d^3) solve for the identity shape: cho_solve(cho_factor(I), I) is I exactly
    for k in (1, 7, 64):
        E = np.eye(k)
        np.testing.assert_array_equal(linalg.cho_solve(linalg.cho_factor(E, lower=True), E), E)
