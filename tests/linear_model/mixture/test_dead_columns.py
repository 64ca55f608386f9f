"""Dead columns of MixtureMEstimatorRegressor (``_dead_columns.py``): constant (with an intercept) or aliased features
are set aside, and the fit is that of the other columns, bit for bit, with coefficient 0 and NaN standard errors.

Before: a constant column with an intercept made every loss's sandwich ``A`` singular, every estimated variance
inf, and the default selected its first member, least squares (slopes 0.46 off with 5 % gross outliers); duplicated
or collinear columns did the same.
"""

import numpy as np
import pytest

from sklearn_bayes import MixtureMEstimatorRegressor
from sklearn_bayes.linear_model._mixture._dead_columns import dead_columns
from sklearn_bayes.linear_model._mixture._inference import ALIAS_TOL, aliased_columns

EPS = np.finfo(float).eps


def _data(n=120, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = 1.0 + X @ np.linspace(2.0, -1.0, d) + rng.standard_t(3, size=n)
    y[:6] += 15.0
    return X, y


def test_aliased_columns_are_the_later_ones_at_the_tolerance():
    rng = np.random.default_rng(0)
    n = 50
    Z = rng.normal(size=(n, 3))
    sw = np.ones(n)
    assert not aliased_columns(Z, sw).any()
    u = rng.normal(size=n)
    u -= Z @ np.linalg.lstsq(Z, u, rcond=None)[0]  # orthogonal to the columns: its size is the residual norm
    base = Z[:, 0] - 2.0 * Z[:, 2]
    for rel, expected in ((10 * ALIAS_TOL, False), (ALIAS_TOL / 10, True)):
        col = base + rel * np.linalg.norm(base) / np.linalg.norm(u) * u  # relative residual norm ~ rel
        np.testing.assert_array_equal(aliased_columns(np.c_[Z, col], sw), [False] * 3 + [expected])
    # the later of two equal columns; zero columns are not "aliased" (they are constant: the caller's)
    got = aliased_columns(np.c_[Z[:, 1], Z, np.zeros(n)], sw)
    np.testing.assert_array_equal(got, [False, False, True, False, False])
    # weights: rows of weight 0 do not count
    w = np.ones(n)
    w[:5] = 0.0
    Zw = np.c_[Z, Z[:, 0]]
    Zw[:5, 3] += 1.0  # differs from column 0 only on rows of weight 0
    np.testing.assert_array_equal(aliased_columns(Zw, w), [False] * 3 + [True])
    np.testing.assert_array_equal(aliased_columns(Zw, np.ones(n)), [False] * 4)


def test_dead_columns_constant_only_with_an_intercept():
    rng = np.random.default_rng(1)
    X = np.c_[rng.normal(size=(30, 2)), np.full(30, 2.0), np.zeros(30)]
    sw = np.ones(30)
    np.testing.assert_array_equal(dead_columns(X, sw, True), [False, False, True, True])
    np.testing.assert_array_equal(dead_columns(X, sw, False), [False, False, False, True])


def _same_fit_without(reg, base, live):
    """``reg`` (fitted with extra dead columns) is ``base`` (fitted without them), bit for bit, the dead columns
    reported with coefficient 0 and NaN standard errors."""
    dead = ~live
    np.testing.assert_array_equal(reg.coef_[live], base.coef_)
    assert np.all(reg.coef_[dead] == 0.0)
    assert reg.intercept_ == base.intercept_ and reg.selected_loss_ == base.selected_loss_
    np.testing.assert_array_equal(reg.coef_covariance_[np.ix_(live, live)], base.coef_covariance_)
    assert np.isnan(reg.coef_covariance_[dead]).all() and np.isnan(reg.coef_covariance_[:, dead]).all()
    np.testing.assert_array_equal(reg.outlier_mask_, base.outlier_mask_)
    np.testing.assert_array_equal(reg.responsibilities_, base.responsibilities_)
    assert reg.df_resid_ == base.df_resid_ and reg.residual_scale_ == base.residual_scale_
    ci = reg.conf_int()
    np.testing.assert_array_equal(ci[live], base.conf_int())
    assert np.isnan(ci[dead]).all()
    if base.mm_coef_ is not None:
        np.testing.assert_array_equal(reg.mm_coef_[live], base.mm_coef_)
        assert reg.mm_intercept_ == base.mm_intercept_


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("variant", ["min_variance", "paper"])
def test_constant_and_aliased_columns_give_the_fit_without_them(variant, fit_intercept):
    # a constant column (with an intercept) made every loss's sandwich singular, every variance inf, and the default
    # selected its first member, least squares: slopes 0.46 off with 5 % gross outliers; duplicated / collinear
    # columns did the same.  Now such columns are set aside and the fit is that of the other columns
    X, y = _data()
    n = len(y)
    base = MixtureMEstimatorRegressor(variant=variant, fit_intercept=fit_intercept, random_state=0).fit(X, y)
    aliased = [X[:, 0], X[:, 0] + 2.0 * X[:, 1], X[:, :2] @ [0.3, -0.7] + X[:, 2] * 1e-9]
    constant = [np.zeros(n)] + ([np.full(n, 3.0)] if fit_intercept else [])
    cases = [(np.c_[X, e], 3) for e in aliased] + [(np.insert(X, k, e, axis=1), k) for e in constant for k in (0, 3)]
    for Xd, k in cases:
        live = np.ones(4, dtype=bool)
        live[k] = False
        reg = MixtureMEstimatorRegressor(variant=variant, fit_intercept=fit_intercept, random_state=0).fit(Xd, y)
        _same_fit_without(reg, base, live)
        # predictions: the same sum with an extra 0 term, to rounding ((d + 2) eps of the terms' magnitudes)
        bound = 6 * EPS * (np.abs(Xd) @ np.abs(reg.coef_) + abs(reg.intercept_))
        assert np.all(np.abs(reg.predict(Xd) - base.predict(X)) <= bound)
        s = reg.summary()
        assert len(s.coefficients) == 4 + fit_intercept
        assert np.isnan(s.coefficients["std_err"].to_numpy()[:4][~live]).all()


def test_dead_columns_with_weights_and_names():
    pd = pytest.importorskip("pandas")
    X, y = _data()
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=len(y))
    w[:10] = 0.0
    Xd = X.copy()
    Xd[10:, 2] = 1.0  # constant on the rows with positive weight: dead, whatever it is on the others
    df = pd.DataFrame(np.c_[Xd, Xd[:, 0] - Xd[:, 1]], columns=["a", "b", "c", "a-b"])
    reg = MixtureMEstimatorRegressor(random_state=0).fit(df, y, sample_weight=w)
    base = MixtureMEstimatorRegressor(random_state=0).fit(X[:, :2], y, sample_weight=w)
    _same_fit_without(reg, base, np.array([True, True, False, False]))
    assert list(reg.feature_names_in_) == ["a", "b", "c", "a-b"] and reg.n_features_in_ == 4
    assert list(reg.summary().coefficients.index) == ["a", "b", "c", "a-b", "const"]


def test_only_constant_columns_fit_the_intercept():
    X, y = _data()
    reg = MixtureMEstimatorRegressor(random_state=0).fit(np.full((len(y), 2), 5.0), y)
    assert np.all(reg.coef_ == 0.0) and np.isnan(reg.coef_covariance_).all()
    # a robust location of y: within 4 standard errors of the median (sqrt(pi / 2) s / sqrt(n))
    assert abs(reg.intercept_ - np.median(y)) < 4 * np.sqrt(np.pi / 2) * reg.residual_scale_ / np.sqrt(len(y))


def test_full_set_of_dummies_with_an_intercept():
    # one-hot encoding without dropping a level, with fit_intercept=True: the last dummy is aliased
    rng = np.random.default_rng(4)
    n = 150
    level = rng.integers(0, 3, size=n)
    x = rng.normal(size=n)
    y = 2.0 * x + np.array([0.0, 1.0, -1.0])[level] + rng.standard_t(3, size=n)
    y[:5] += 20.0
    D = np.eye(3)[level]
    full = MixtureMEstimatorRegressor(random_state=0).fit(np.c_[x, D], y)
    dropped = MixtureMEstimatorRegressor(random_state=0).fit(np.c_[x, D[:, :2]], y)
    _same_fit_without(full, dropped, np.array([True, True, True, False]))
    np.testing.assert_array_equal(full.outlier_mask_[:5], True)
