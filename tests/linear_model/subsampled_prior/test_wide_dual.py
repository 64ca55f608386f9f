"""The estimators on wide data (p > 2 n): the n x n (Woodbury) Newton systems of _glm._dual give the fits
and intervals of the dense path; DUAL_RATIO = inf and every narrower problem run the dense code alone.

Bound on the coefficients: both fits stop at a Newton decrement ``lambda^2 = g^T H^-1 g <= tol^2 max(1, |F|)``
(``_map._fit_map_stage``), and near the optimum ``|theta - theta*|_H <= 2 lambda``; since ``|e_j^T v| <=
sqrt((H^-1)_jj) |v|_H`` the two fits' coefficients differ by at most ``4 tol sqrt(max(1, |F|)) sqrt(Sigma_jj)``,
``Sigma = H^-1`` the posterior covariance (``coef_covariance_``, data units).  ``|F|`` is bounded by the
objective at zero coefficients and intercept (its minimum is below it; the logistic loss is >= 0, the
Poisson loss >= sum(y - y log y)).
"""

import warnings

import numpy as np
import pytest

from sklearn_bayes import (
    SubsampledPriorLinearSVC,
    SubsampledPriorLogisticRegression,
    SubsampledPriorPoissonRegressor,
    SubsampledPriorRidge,
)
from sklearn_bayes._glm import _dual


def _wide(kind, n=40, p=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    eta = X[:, :8].sum(axis=1) * 0.5
    y = {"log": (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int),
         "poi": rng.poisson(np.exp(0.3 * eta)),
         "svm": (eta + rng.logistic(size=n) > 0).astype(int),
         "ridge": eta + rng.normal(size=n)}[kind]
    return X, y


def _fit(Est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Est(random_state=0).fit(X, y)


def _dual_and_dense(Est, X, y, monkeypatch):
    """The fit on the default (n-dimensional) path, then with the switch off (``DUAL_RATIO = inf``: dense)."""
    dual = _fit(Est, X, y)
    monkeypatch.setattr(_dual, "DUAL_RATIO", float("inf"))
    return dual, _fit(Est, X, y)


def _f_bound(kind, y):
    n = y.size
    if kind == "log":
        return n * np.log(2.0)
    yl = np.where(y > 0, y * np.log(np.maximum(y, 1)), 0.0)
    return max(float(n), float(np.sum(np.abs(y - yl))))  # F(0) = n; F >= sum(y - y log y)


@pytest.mark.parametrize("kind,Est", [("log", SubsampledPriorLogisticRegression),
                                      ("poi", SubsampledPriorPoissonRegressor)])
@pytest.mark.parametrize("seed", [0, 1])
def test_wide_fit_and_intervals_equal_dense(monkeypatch, kind, Est, seed):
    X, y = _wide(kind, seed=seed)
    assert _dual.use_dual(*X.shape, 1)
    dual, dense = _dual_and_dense(Est, X, y, monkeypatch)
    # the same prior chosen (the leave-one-out risks differ by rounding only)
    np.testing.assert_array_equal(dual.prior_covariance_, dense.prior_covariance_)
    np.testing.assert_array_equal(dual.prior_mean_, dense.prior_mean_)
    tol = Est().tol
    sd = np.sqrt(np.diag(dense.coef_covariance_))
    bound = 4 * tol * np.sqrt(max(1.0, _f_bound(kind, y))) * sd
    assert np.all(np.abs(np.ravel(dual.coef_) - np.ravel(dense.coef_)) <= bound)
    # the posterior covariance: the same matrix up to rounding of two backward-stable inverses
    C, Cd = dual.coef_covariance_, dense.coef_covariance_
    assert np.max(np.abs(C - Cd)) <= 1e-10 * np.max(np.abs(Cd))
    # the sampling covariance of the data alone is singular on wide data: +-inf where unidentified
    S, Sd = dual.coef_sampling_covariance_, dense.coef_sampling_covariance_
    np.testing.assert_array_equal(np.isfinite(S), np.isfinite(Sd))
    np.testing.assert_array_equal(S[~np.isfinite(Sd)], Sd[~np.isfinite(Sd)])
    # the Wald intervals from the sampling covariance: infinite exactly where the dense ones are
    np.testing.assert_array_equal(np.isfinite(dual.conf_int()), np.isfinite(dense.conf_int()))


def test_wide_svm_equals_dense(monkeypatch):
    X, y = _wide("svm")
    dual, dense = _dual_and_dense(SubsampledPriorLinearSVC, X, y, monkeypatch)
    np.testing.assert_array_equal(dual.prior_covariance_, dense.prior_covariance_)
    # the squared-hinge objective at the chosen prior is wbar / (2 tau) |b|^2 + sum(losses): strongly convex
    # with modulus at least the prior precision, which bounds the distance of the two stopped fits via
    # their Newton decrements as in the module docstring (sd <= 1 / sqrt(precision) per coefficient)
    prec = 1.0 / np.diag(dense.prior_covariance_)
    tol = SubsampledPriorLinearSVC().tol
    bound = 4 * tol * np.sqrt(max(1.0, float(X.shape[0]))) / np.sqrt(prec)
    assert np.all(np.abs(np.ravel(dual.coef_) - np.ravel(dense.coef_)) <= bound)
    np.testing.assert_array_equal(dual.predict(X), dense.predict(X))


def test_ridge_wide_unchanged(monkeypatch):
    # the ridge has its own closed form (eigendecomposition, dual subsample fits): the switch changes nothing
    X, y = _wide("ridge")
    a, b = _dual_and_dense(SubsampledPriorRidge, X, y, monkeypatch)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.coef_covariance_, b.coef_covariance_)


@pytest.mark.parametrize("Est,kind", [(SubsampledPriorLogisticRegression, "log"),
                                      (SubsampledPriorPoissonRegressor, "poi"),
                                      (SubsampledPriorLinearSVC, "svm")])
def test_switch_off_and_narrow_data_run_the_dense_code_only(monkeypatch, Est, kind):
    X, y = _wide(kind, n=60, p=100)  # p <= 2 n: not wide
    # no DualFactor is built and the two dual inverses decline (None) on narrow data
    for name in ("posterior_inverse", "information_inverse"):
        orig = getattr(_dual, name)
        monkeypatch.setattr(_dual, name, lambda *a, _o=orig, **k: _o(*a, **k) if _o(*a, **k) is None
                            else pytest.fail("dual inverse"))
    monkeypatch.setattr(_dual.DualFactor, "build", classmethod(lambda cls, *a, **k: pytest.fail("dual built")))
    _fit(Est, X, y)
    Xw, yw = _wide(kind)
    monkeypatch.setattr(_dual, "DUAL_RATIO", float("inf"))
    _fit(Est, Xw, yw)  # wide data with the switch off: the dense path only (the patches above still fail it)
