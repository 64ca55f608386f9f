"""The one-output data Hessian accumulated over row blocks from ``_map._BLOCKED_MIN_ROWS`` rows (round HSP).

``G = sum_i h_i x_i x_i^T`` summed in another order: each entry of either computation is within ``gamma_n
S_jk`` of the exact sum, ``S = |X|^T diag(h) |X|`` and ``gamma_n = n eps / (1 - n eps)`` (the standard bound
for a recursive sum of ``n`` terms; the BLAS's blocked sums are within it), so the two differ by at most
``2 gamma_n S_jk``.  Below the threshold the Hessian is the previous computation, bit for bit.  A fit through
either Hessian stops at a Newton decrement ``<= tol^2 max(1, |F|)``, so two fits differ by at most
``4 tol sqrt(max(1, |F|))`` in the Hessian's norm (tests/linear_model/subsampled_prior/test_tall_path.py).
"""

import numpy as np
import pytest

from sklearn_bayes import SubsampledPriorLogisticRegression
from sklearn_bayes._glm import _map


def _previous(X, h, fit_intercept):
    """The computation before round HSP (one scaled copy of X)."""
    hv = h[:, 0]
    Xs = X * np.sqrt(hv)[:, None]
    G, xh, s = Xs.T @ Xs, X.T @ hv, float(hv.sum())
    if not fit_intercept:
        return G
    d = X.shape[1]
    H = np.empty((d + 1, d + 1))
    H[:d, :d], H[:d, d], H[d, :d], H[d, d] = G, xh, xh, s
    return H


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_blocked_hessian_within_the_summation_bound(fit_intercept):
    rng = np.random.default_rng(0)
    n, d = _map._BLOCKED_MIN_ROWS + 1234, 7
    X = rng.normal(size=(n, d)) * rng.uniform(0.1, 10.0, size=d)
    h = rng.uniform(0.0, 0.25, size=(n, 1))
    H = _map._hessian(X, h, 1, fit_intercept, False)
    H0 = _previous(X, h, fit_intercept)
    S = np.abs(X).T @ (h[:, 0][:, None] * np.abs(X))
    eps = np.finfo(float).eps
    gamma = n * eps / (1 - n * eps)
    np.testing.assert_array_less(np.abs(H[:d, :d] - H0[:d, :d]), 2 * gamma * S + 1e-300)
    if fit_intercept:  # the intercept's row and column are computed as before
        assert np.array_equal(H[:d, d], H0[:d, d]) and H[d, d] == H0[d, d]
    assert np.array_equal(H, H.T)


def test_below_the_threshold_bit_for_bit():
    rng = np.random.default_rng(1)
    n, d = _map._BLOCKED_MIN_ROWS - 1, 5
    X = rng.normal(size=(n, d))
    h = rng.uniform(0.0, 0.25, size=(n, 1))
    assert np.array_equal(_map._hessian(X, h, 1, True, False), _previous(X, h, True))


def test_fit_through_blocked_hessians_makes_the_same_choice(monkeypatch):
    rng = np.random.default_rng(2)
    n, p = _map._BLOCKED_MIN_ROWS + 8000, 8
    X = rng.normal(size=(n, p))
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ (0.3 * rng.normal(size=p))))).astype(int)
    new = SubsampledPriorLogisticRegression(random_state=0).fit(X, y)
    monkeypatch.setattr(_map, "_BLOCKED_MIN_ROWS", 10 ** 12)
    old = SubsampledPriorLogisticRegression(random_state=0).fit(X, y)
    for key in ("shape", "mean", "at_grid_boundary", "scale_rule"):
        assert new.prior_choice_[key] == old.prior_choice_[key]
    assert new.prior_choice_["scale"] == pytest.approx(old.prior_choice_["scale"], rel=1e-9)
    # |F| <= F(0) = N log 2 (the logistic objective at zero coefficients, in its units)
    bound = 4 * old.tol * np.sqrt(n * np.log(2.0)) * np.sqrt(np.diag(old.coef_covariance_))
    assert np.all(np.abs(np.ravel(new.coef_) - np.ravel(old.coef_)) <= bound)
