"""ClosedFormRidge: the Appendix A.1 formula on a case computed by hand."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.linear_model import Ridge
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_bayes import ClosedFormRidge
from sklearn_bayes.linear_model._closed_form_ridge import closed_form_alpha


def test_hand_computed_case():
    # Two centred, orthogonal columns with unit (population) variance: S = X^T X / N = I.
    X = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]])
    y = np.array([3.0, 1.0, -1.0, -2.0])
    # By hand: mean(y) = 0.25, y_c = (2.75, 0.75, -1.25, -2.25); X^T y_c = (7, 3);
    # OLS beta = (7, 3) / 4 = (1.75, 0.75); fitted (2.5, 1, -1, -2.5); residuals +-0.25,
    # RSS = 0.25, sigma^2 = RSS / (N - d - 1) = 0.25.
    # lambda = tr S^-1 / (tr S^-2 / N + beta^T S^-1 beta / sigma^2) = 2 / (0.5 + 3.625 / 0.25) = 2 / 15.
    # Ridge: (X^T X + lambda I)^-1 X^T y_c = (7, 3) / (4 + 2/15) = (105/62, 45/62).
    reg = ClosedFormRidge().fit(X, y)
    assert_allclose(reg.sigma2_, 0.25)
    assert_allclose(reg.alpha_, 2.0 / 15.0)
    assert_allclose(reg.coef_, [105.0 / 62.0, 45.0 / 62.0])
    assert_allclose(reg.intercept_, 0.25)
    assert_allclose(closed_form_alpha(np.eye(2), np.array([1.75, 0.75]), 0.25, 4), 2.0 / 15.0)


def test_scaling_back_and_agreement_with_ridge_on_standardised_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4)) * np.array([1.0, 10.0, 0.1, 3.0]) + 5.0
    y = X @ np.array([1.0, 0.1, 5.0, 0.0]) + rng.normal(scale=3.0, size=200)
    reg = ClosedFormRidge().fit(X, y)
    sc = StandardScaler().fit(X)
    Xs = sc.transform(X)
    ref = Ridge(alpha=reg.alpha_).fit(Xs, y)
    assert_allclose(reg.coef_ * sc.scale_, ref.coef_, rtol=1e-10)
    assert_allclose(reg.predict(X), ref.predict(Xs), rtol=1e-10)
    # the formula itself, with OLS plug-ins, on the standardised features
    ols = np.linalg.lstsq(Xs, y - y.mean(), rcond=None)[0]
    rss = np.sum((y - y.mean() - Xs @ ols) ** 2)
    S = Xs.T @ Xs / 200
    Si = np.linalg.inv(S)
    lam = np.trace(Si) / (np.trace(Si @ Si) / 200 + ols @ Si @ ols / (rss / (200 - 4 - 1)))
    assert_allclose(reg.alpha_, lam, rtol=1e-10)


def test_integer_weights_equal_repeated_rows_and_constant_columns():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 3))
    X[:, 2] = 7.0  # constant column: coefficient 0
    y = X[:, 0] - X[:, 1] + rng.normal(size=30)
    w = rng.integers(1, 4, size=30)
    a = ClosedFormRidge().fit(X, y, sample_weight=w)
    b = ClosedFormRidge().fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    assert_allclose(a.coef_, b.coef_, rtol=1e-10)
    assert_allclose(a.alpha_, b.alpha_, rtol=1e-10)
    assert a.coef_[2] == 0.0


def test_no_residual_degrees_of_freedom_gives_ols():
    X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]])
    y = np.array([1.0, 2.0, 0.0])
    reg = ClosedFormRidge().fit(X, y)
    assert reg.alpha_ == 0.0
    assert_allclose(reg.predict(X), y, atol=1e-10)


def test_bad_inputs():
    X = np.ones((5, 2))
    with pytest.raises(ValueError, match="NaN"):
        ClosedFormRidge().fit(np.full((5, 2), np.nan), np.ones(5))
    with pytest.raises(ValueError, match="X and y must have the same number of rows"):
        ClosedFormRidge().fit(X, np.ones(4))


def test_negative_weight_and_string_target_are_named():
    """Negative weights used to reach LAPACK (LinAlgError and DLASCL noise on stderr)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 2))
    y = X[:, 0] + rng.normal(size=20)
    w = np.ones(20)
    w[3] = -1.0
    with pytest.raises(ValueError, match="sample_weight"):
        ClosedFormRidge().fit(X, y, sample_weight=w)
    with pytest.raises(ValueError, match="numeric target y"):
        ClosedFormRidge().fit(X, np.array(["a", "b"] * 10))
    with pytest.raises(InvalidParameterError, match="fit_intercept"):
        ClosedFormRidge(fit_intercept="yes").fit(X, y)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_tiny_feature_units_are_not_dropped(fit_intercept):
    """X * 1e-20 used to fall below an absolute variance threshold: coef_ was 0."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3)) + 1.0
    y = X @ [1.0, -2.0, 0.5] + rng.normal(size=100)
    a = ClosedFormRidge(fit_intercept=fit_intercept).fit(X, y)
    b = ClosedFormRidge(fit_intercept=fit_intercept).fit(1e-20 * X, y)
    assert_allclose(b.coef_, 1e20 * a.coef_, rtol=1e-10)
    assert_allclose(b.alpha_, a.alpha_, rtol=1e-10)


# ---- uncertainty (issue 32) ---------------------------------------------------------------------


def test_covariance_is_the_ridge_posterior_in_data_units():
    from sklearn.exceptions import NotFittedError

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4)) * [1.0, 10.0, 0.1, 3.0] + 5.0
    y = X @ [1.0, 0.1, 5.0, 0.0] + 2.0 + rng.normal(size=200)
    reg = ClosedFormRidge().fit(X, y)
    Xc = X - X.mean(axis=0)
    s = Xc.std(axis=0)
    # the penalty acts on the standardised columns X_c / s: lambda I there is lambda diag(s^2) here
    expected = reg.sigma2_ * np.linalg.inv(Xc.T @ Xc + reg.alpha_ * np.diag(s**2))
    assert_allclose(reg.coef_covariance_, expected, rtol=1e-8)
    sd = np.sqrt(np.diag(expected))
    assert_allclose(reg.conf_int(), np.column_stack([reg.coef_ - 1.959963984540054 * sd,
                                                     reg.coef_ + 1.959963984540054 * sd]), rtol=1e-8)
    for bad in (0, 1, -1.0, "0.05", None, True):
        with pytest.raises(ValueError, match="alpha"):
            reg.conf_int(alpha=bad)
    with pytest.raises(NotFittedError):
        ClosedFormRidge().conf_int()
    # a constant column: coefficient 0 with zero variance
    Xk = np.column_stack([X, np.ones(200)])
    cov = ClosedFormRidge().fit(Xk, y).coef_covariance_
    assert np.all(cov[-1] == 0.0) and np.all(cov[:, -1] == 0.0)


def _coverage(beta, n, R, rho=0.0):
    L = np.linalg.cholesky(rho + (1.0 - rho) * np.eye(beta.size))
    hits = []
    for r in range(R):
        rng = np.random.default_rng(r)
        X = rng.normal(size=(n, beta.size)) @ L.T
        ci = ClosedFormRidge().fit(X, X @ beta + rng.normal(size=n)).conf_int()
        hits.append((ci[:, 0] <= beta) & (beta <= ci[:, 1]))
    return np.array(hits).mean(axis=0)


def _band(r_eff):
    return 0.02 + 3.0 * np.sqrt(0.95 * 0.05 / r_eff)


def test_coverage_well_specified():
    # coefficients of similar size: the ridge posterior is about right (measured 0.956, R = 400)
    beta = np.array([0.5, -0.25, 0.0, 0.25, 0.1])
    cov = _coverage(beta, 300, 400)
    assert abs(cov.mean() - 0.95) <= _band(400 * 5), cov
    assert np.all(np.abs(cov - 0.95) <= _band(400)), cov


def test_coverage_documents_the_ridge_bias():
    # low signal: a large penalty, wide posterior intervals -> conservative (measured 0.978)
    cov = _coverage(np.array([0.5, -0.25, 0.0, 0.25, 0.1]) / 10, 300, 400)
    assert cov.mean() > 0.95 + _band(400 * 5) - 0.02, cov
    # one moderate coefficient among zeros, N = 50: shrinkage bias undercovers it (measured 0.888)
    cov = _coverage(np.array([0.3, 0.0, 0.0, 0.0, 0.0]), 50, 400)
    assert 0.84 <= cov[0] <= 0.92 and np.all(cov[1:] >= 0.94), cov


def test_near_collinear_columns_collapse_the_closed_form_to_the_smallest_eigenvalue():
    """Documented behaviour (Notes, *Near-collinear columns*): with two columns of correlation
    1 - 1e-10 the first-order formula gives alpha_ = N w_min / (1 + t^2) up to O(w_min) terms (w_min
    the smallest eigenvalue of S = X_s^T X_s / N, t the OLS t-statistic along its eigenvector): OLS
    along the collinear direction, where RidgeCV picks an alpha a million times larger or more."""
    from sklearn.linear_model import RidgeCV

    N = 50
    for seed in range(10):
        rng = np.random.default_rng(seed)
        Z = rng.normal(size=(N, 5))
        gap = 1e-10
        Z[:, 1] = Z[:, 0] * (1 - gap) + np.sqrt(2 * gap - gap**2) * Z[:, 1]
        y = Z @ np.array([1.0, 1.0, 0.5, 0.0, -0.5]) + rng.normal(size=N)
        reg = ClosedFormRidge().fit(Z, y)
        Xs, ys = (Z - Z.mean(0)) / Z.std(0), (y - y.mean()) / y.std()
        beta = np.linalg.lstsq(Xs, ys, rcond=None)[0]
        sigma2 = np.sum((ys - Xs @ beta) ** 2) / (N - 5 - 1)
        w, V = np.linalg.eigh(Xs.T @ Xs / N)
        t2 = (V[:, 0] @ beta) ** 2 * N * w[0] / sigma2
        # neglected terms O(w_min), O(N w_min^2 |beta|^2 / sigma2): < 1e-6 relative; w_min itself is computed
        # to eps ||S|| / w_min ~ 4e-6 relative (eigh of a nearly singular S): rel=1e-4
        assert reg.alpha_ == pytest.approx(N * w[0] / (1.0 + t2), rel=1e-4), seed
        assert RidgeCV(alphas=np.logspace(-6, 6, 61)).fit(Z, y).alpha_ > 1e6 * reg.alpha_


@pytest.mark.parametrize("scale", [1e9, 1e150, 1e300])
def test_a_row_holding_a_column_whole_spread_is_refused_naming_x(scale):
    """One row times 1e9 and more: the other rows enter the normal equations at (1e-8)^2 of it and below;
    the fit returned 0.90/0.89/-0.71 at 1e9 (the data give 1.08/1.46/-1.35), coef_ ~ 1e-150 with a
    coef_covariance_ of 1e-283 (certainty) at 1e150, and a zero covariance at 1e300, silently.  Now a
    ValueError naming X, and the fitted estimator is unchanged."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(80, 3))
    y = X @ np.array([1.0, 2.0, -1.0]) + 0.1 * rng.normal(size=80)
    reg = ClosedFormRidge().fit(X, y)
    before = reg.coef_.copy()
    Xb = X.copy()
    Xb[0] *= scale
    with pytest.raises(ValueError, match=r"^X: in column \d one row holds nearly all the spread"):
        reg.fit(Xb, y)
    assert_allclose(reg.coef_, before, rtol=0, atol=0)


def test_a_high_leverage_row_below_the_threshold_is_kept_and_solved_accurately():
    """At 1e6 times the others (ratio 1e-5) the fit is kept.  The standardised weak directions have
    eigenvalues ~1e-8, comparable to alpha_ (~4e-9, the near-collinear regime of the Notes), so this is
    ridge, 0.2 % from least squares; it equals the ridge solution with that alpha_ computed by a stable
    augmented least squares to 1e-5 (the normal equations' condition number is ~1e10)."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(80, 3))
    y = X @ np.array([1.0, 2.0, -1.0]) + 0.1 * rng.normal(size=80)
    X[0] *= 1e6
    reg = ClosedFormRidge().fit(X, y)
    xs, ys = X.std(0), y.std()
    Xs, yc = (X - X.mean(0)) / xs, (y - y.mean()) / ys
    aug = np.vstack([Xs, np.sqrt(reg.alpha_) * np.eye(3)])
    beta = np.linalg.lstsq(aug, np.r_[yc, np.zeros(3)], rcond=None)[0]
    assert_allclose(reg.coef_, beta * ys / xs, rtol=1e-5)
