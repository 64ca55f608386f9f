"""Review HMX F1 (the sandwich's meat holds w^2 with non-uniform sample_weight; Kish's effective rows in the t
quantiles) and F3 (bootstrap_conf_int refuses rows or weights that cannot be the fit's)."""

import pickle
from types import SimpleNamespace

import numpy as np
import pytest

from sklearn_bayes import MixtureMEstimatorRegressor
from sklearn_bayes.linear_model._mixture import _finite_sample, _inference, _selection
from sklearn_bayes.linear_model._mixture._inference import parameter_covariance
from sklearn_bayes.linear_model._mixture._norms import HuberT, LeastSquares


def _design(n=40, seed=0):
    rng = np.random.default_rng(seed)
    Xa = np.column_stack([rng.normal(size=(n, 2)), np.ones(n)])
    r = rng.standard_t(3, size=n)
    return Xa, r


def _old_meat(monkeypatch):
    """Patch the relative weights to 1: the meat ``sum w psi^2 x x^T`` of the code before review HMX F1."""
    one = lambda sw: np.ones_like(sw)  # noqa: E731
    monkeypatch.setattr(_selection, "relative_weights", one)
    monkeypatch.setattr(_inference, "relative_weights", one)


@pytest.mark.parametrize("c", [1.0, 0.3, 7.0])
def test_uniform_weights_sandwich_bit_for_bit(monkeypatch, c):
    """Uniform weights: relative weights exactly 1, so the sandwich is the old one bit for bit (and differs for
    non-uniform weights: the test can fail)."""
    Xa, r = _design()
    sw = np.full(len(r), c)
    np.testing.assert_array_equal(_selection.relative_weights(sw), np.ones(len(r)))
    new = _selection.sandwich_core(Xa, r, sw, 1.3, HuberT(1.345))
    w = np.random.default_rng(1).exponential(size=len(r))
    new_w = _selection.sandwich_core(Xa, r, w, 1.3, HuberT(1.345))
    _old_meat(monkeypatch)
    np.testing.assert_array_equal(new, _selection.sandwich_core(Xa, r, sw, 1.3, HuberT(1.345)))
    assert not np.allclose(new_w, _selection.sandwich_core(Xa, r, w, 1.3, HuberT(1.345)), rtol=0.05)


@pytest.mark.parametrize("variant", ["min_variance", "paper"])
def test_uniform_weights_fit_bit_for_bit(monkeypatch, variant):
    """The estimator with unit weights (or none) or constant weights is the pre-fix estimator bit for bit:
    covariance, t degrees of freedom, intervals, loss."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 2))
    y = X @ [1.0, -2.0] + rng.standard_t(3, size=50)
    y[:3] += 12.0
    weights = (None, np.ones(50), np.full(50, 0.3), np.full(50, 7.0))
    new = [MixtureMEstimatorRegressor(random_state=0, variant=variant).fit(X, y, sample_weight=sw) for sw in weights]
    _old_meat(monkeypatch)
    monkeypatch.setattr(_finite_sample, "kish_rows", lambda sw: float(np.count_nonzero(sw > 0)))
    old = [MixtureMEstimatorRegressor(random_state=0, variant=variant).fit(X, y, sample_weight=sw) for sw in weights]
    for f, o in zip(new, old):
        np.testing.assert_array_equal(f.coef_covariance_, o.coef_covariance_)
        np.testing.assert_array_equal(f.conf_int(), o.conf_int())
        assert f.df_intervals_ == o.df_intervals_ and f.selected_loss_ == o.selected_loss_


def test_weighted_least_squares_is_weighted_hc3():
    """Least squares with non-uniform weights: the covariance is statsmodels' WLS HC3, ``(X^T W X)^-1 sum_i w_i^2
    r_i^2 / (1 - h_i)^2 x_i x_i^T (X^T W X)^-1`` with ``h_i = w_i x_i^T (X^T W X)^-1 x_i``, for the weights in
    any overall size (deterministic; before review HMX F1 the meat held w_i)."""
    rng = np.random.default_rng(7)
    n = 60
    Xa = np.column_stack([rng.normal(size=(n, 2)), np.ones(n)])
    y = Xa @ [1.0, 2.0, 0.5] + rng.normal(size=n)
    w = rng.exponential(size=n)
    theta = np.linalg.solve(Xa.T @ (Xa * w[:, None]), Xa.T @ (w * y))
    r = y - Xa @ theta
    G = np.linalg.inv(Xa.T @ (Xa * w[:, None]))
    h = w * np.einsum("ij,jk,ik->i", Xa, G, Xa)
    ref = G @ (Xa.T @ (Xa * (w * w * r * r / (1.0 - h) ** 2)[:, None])) @ G
    st = SimpleNamespace(y_scale=1.0, x_scale=np.ones(2), x_offset=np.zeros(2))
    for c in (1.0, 1e-3, 250.0):
        cov, dof = parameter_covariance(Xa, r, c * w, 1.0, LeastSquares(), st, True)
        np.testing.assert_allclose(cov, ref, rtol=1e-10)
        assert dof == n - 3
    sm = pytest.importorskip("statsmodels.api")
    np.testing.assert_allclose(cov, sm.WLS(y, Xa, weights=w).fit(cov_type="HC3").cov_params(), rtol=1e-10)


def _se_calibration(w, R, seed):
    n = len(w)
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 1))
    est, se = np.empty(R), np.empty(R)
    for k in range(R):
        y = 1.0 + 2.0 * X[:, 0] + rng.normal(size=n)
        m = MixtureMEstimatorRegressor(random_state=0).fit(X, y, sample_weight=w)
        est[k], se[k] = m.coef_[0], np.sqrt(m.coef_covariance_[0, 0])
    return se.mean() / est.std(ddof=1)


@pytest.mark.parametrize("pattern", ["two_levels", "exponential"])
def test_weighted_standard_errors_match_the_spread(pattern):
    """Monte Carlo (HMX's design, n = 60, Gaussian errors, weights fixed over 150 draws): the mean reported slope SE
    over the estimates' standard deviation is within 3 standard errors of the latter's estimate (relative SE
    ``1 / sqrt(2 (R - 1))`` = 0.058) of 1.  Before the fix: 0.55 (20 rows at 1, 40 at 0.01) and 0.78 (exponential)."""
    R = 150
    w = (np.r_[np.ones(20), np.full(40, 0.01)] if pattern == "two_levels"
         else np.random.default_rng(5).exponential(size=60))
    ratio = _se_calibration(w, R, 12345)
    assert abs(ratio - 1.0) < 3.0 / np.sqrt(2.0 * (R - 1))


def test_tiny_weights_behave_like_dropped_rows():
    """Rows of weight 1e-12 next to 10 rows of weight 1: at the same residuals the covariance is that of the 10 rows
    alone, and the fit's t degrees of freedom are at most Kish's ``n_K - p`` = 8 (HMX F1: 67 degrees of freedom,
    SEs 0.38 times the 10-row fit's)."""
    rng = np.random.default_rng(11)
    n = 69
    X = rng.normal(size=(n, 1))
    y = 2.0 * X[:, 0] + rng.normal(size=n)
    w = np.full(n, 1e-12)
    w[:10] = 1.0
    Xa = np.column_stack([X, np.ones(n)])
    r = y - Xa @ [2.1, 0.1]
    st = SimpleNamespace(y_scale=1.0, x_scale=np.ones(1), x_offset=np.zeros(1))
    a, dof_a = parameter_covariance(Xa, r, w, 0.9, HuberT(1.345), st, True)
    b, dof_b = parameter_covariance(Xa[:10], r[:10], np.ones(10), 0.9, HuberT(1.345), st, True)
    np.testing.assert_allclose(a, b, rtol=1e-9)
    assert (dof_a, dof_b) == (67, 8)
    assert _finite_sample.kish_dof(w, dof_a) == pytest.approx(8.0, rel=1e-9)
    fit = MixtureMEstimatorRegressor(random_state=0).fit(X, y, sample_weight=w)
    assert fit.df_resid_ == 67 and 1.0 <= fit.df_intervals_ <= 8.0 + 1e-9


def test_kish_dof():
    """``n_K - p`` clipped to ``[1, dof]``: exactly ``float(dof)`` for uniform weights, Kish's for others."""
    for sw in (np.ones(30), np.full(30, 0.1), np.r_[np.full(29, 3.0), 0.0]):
        m = int(np.count_nonzero(sw))
        assert _finite_sample.kish_dof(sw, m - 4) == float(m - 4)
    w = np.r_[np.ones(10), np.full(20, 0.5)]
    assert _finite_sample.kish_dof(w, 26) == pytest.approx(20.0**2 / 15.0 - 4.0, rel=1e-14)
    assert _finite_sample.kish_dof(np.r_[1.0, np.full(29, 1e-9)], 26) == 1.0


def _fitted(weights=None):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 2))
    y = X @ [1.0, 0.5] + rng.normal(size=40)
    return MixtureMEstimatorRegressor(random_state=0).fit(X, y, sample_weight=weights), X, y


def _refused(est, match, *args, **kwargs):
    before = pickle.dumps(est)
    with pytest.raises(ValueError, match=match):
        est.bootstrap_conf_int(*args, n_boot=5, random_state=0, **kwargs)
    assert pickle.dumps(est) == before


def test_bootstrap_refuses_other_rows():
    """Review HMX F3: rows other than the training rows (a test split) are refused, naming X."""
    est, X, y = _fitted()
    _refused(est, "X has 30 rows but the estimator was fitted to 40", X[:30], y[:30])
    _refused(est, "X has 50 rows", np.vstack([X, X[:10]]), np.r_[y, y[:10]])


def test_bootstrap_refuses_other_weights():
    """Review HMX F3: a weighted fit bootstrapped without its weights (or an unweighted fit with non-uniform
    weights) is refused, naming sample_weight; the same weights, or uniform ones for an unweighted fit, run."""
    w = np.where(np.arange(40) % 3 == 0, 5.0, 1.0)
    est, X, y = _fitted(w)
    _refused(est, "sample_weight: the fit had non-uniform weights but bootstrap_conf_int got no sample_weight", X, y)
    _refused(est, "got uniform weights", X, y, sample_weight=np.ones(40))
    assert np.all(np.isfinite(est.bootstrap_conf_int(X, y, n_boot=3, random_state=0, sample_weight=w)))
    plain, X, y = _fitted()
    _refused(plain, "the fit had uniform weights but bootstrap_conf_int got non-uniform weights", X, y,
             sample_weight=w)
    assert np.all(np.isfinite(plain.bootstrap_conf_int(X, y, n_boot=3, random_state=0, sample_weight=np.full(40, 2.0))))
