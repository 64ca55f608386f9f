"""Review HMU's findings on MixtureMEstimatorRegressor's intervals (F4, F5, F7, F8, F3, F10, F11).

Each test failed on the code before the fix (checked against the tree of commit f849832)."""

import warnings

import numpy as np
import pytest

from sklearn_bayes import MixtureMEstimatorRegressor


def _one_row_dummy(seed, n=80):
    """HMU's design: y = 1 + 2 x + 3 d + N(0, 1), d = 1 on row 7 only."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    d = np.zeros(n)
    d[7] = 1.0
    y = 1 + 2 * x + 3 * d + rng.normal(size=n)
    return np.column_stack([x, d]), y


def _fit(X, y, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = MixtureMEstimatorRegressor(random_state=0, **kw).fit(X, y)
    return m, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def test_f5_unidentified_coefficient_is_nan_with_a_warning_never_a_negative_variance():
    """Seed 156: the Tukey (3.44) fit rejects the dummy's only row, so A does not see the dummy's direction; the
    Cholesky of the nearly singular A succeeded and coef_covariance_[1, 1] was -6.0e16, shown as NaN with only
    numpy's sqrt RuntimeWarning."""
    X, y = _one_row_dummy(156)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no 'invalid value encountered in sqrt'
        m, msgs = _fit(X, y)
        ci = m.conf_int()
        table = m.summary().coefficients
    diag = np.diag(m._params_covariance)
    assert not np.any(diag < 0)
    assert np.isnan(diag[1]) and np.all(np.isnan(ci[1]))
    assert np.all(np.isfinite(ci[0])) and np.all(diag[[0, 2]] > 0)
    assert any("x1 not identified" in s for s in msgs)
    assert not any("x0 not identified" in s for s in msgs)
    assert np.isnan(np.asarray(table["std_err"])[1]) and np.all(np.isfinite(np.asarray(table["std_err"])[[0, 2]]))


@pytest.mark.parametrize("seed", [100, 101, 102, 103])
def test_f4_coefficient_resting_on_one_row_of_leverage_one_is_nan_with_a_warning(seed):
    """A one-row dummy whose row the fit passes through: that row adds nothing to B, and the dummy's standard
    error came out 0.14 where the estimate's spread is 1.0 (coverage 0.245 over 200 draws).  Now NaN, named in a
    warning; the slope of x and the intercept keep finite intervals."""
    X, y = _one_row_dummy(seed)
    m, msgs = _fit(X, y)
    ci = m.conf_int()
    assert np.all(np.isnan(ci[1])) and np.all(np.isfinite(ci[0]))
    assert np.isfinite(m._params_covariance[2, 2])  # the intercept is identified by the other rows
    assert any("x1 not identified" in s for s in msgs)


def test_f4_two_row_dummy_and_plain_designs_are_not_flagged():
    """No false alarm: a dummy on two rows (leverages about 1/2) and a plain design keep finite standard errors
    and raise no identification warning."""
    rng = np.random.default_rng(5)
    n = 80
    x = rng.normal(size=n)
    d = np.zeros(n)
    d[[7, 30]] = 1.0
    y = 1 + 2 * x + 3 * d + rng.normal(size=n)
    for X in (np.column_stack([x, d]), np.column_stack([x, rng.normal(size=n)])):
        m, msgs = _fit(X, y)
        assert np.all(np.isfinite(m.conf_int()))
        assert not any("not identified" in s for s in msgs)


@pytest.mark.parametrize("factor", [1e-200, 1e200])
def test_f7_conf_int_scales_exactly_with_y(factor):
    """y * 1e-200 gave coef_covariance_ = 0 and zero-width intervals (summary t = inf, p = 0); y * 1e200 gave
    +-inf.  The standard errors are computed in standardised units and rescaled last: the intervals scale with y
    to rounding (rtol 1e-9 is a million rounding errors, far below any loss of digits to underflow)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 2))
    y = X @ [1.0, 2.0] + rng.normal(size=60)
    base = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    m = MixtureMEstimatorRegressor(random_state=0).fit(X, y * factor)
    np.testing.assert_allclose(m.coef_, base.coef_ * factor, rtol=1e-9)
    np.testing.assert_allclose(m.conf_int(), base.conf_int() * factor, rtol=1e-9)
    table, ref = m.summary().coefficients, base.summary().coefficients
    np.testing.assert_allclose(np.asarray(table["t"]), np.asarray(ref["t"]), rtol=1e-9)
    np.testing.assert_allclose(np.asarray(table["P>|t|"]), np.asarray(ref["P>|t|"]), rtol=1e-6)


def test_f11_tiny_alpha_gives_finite_nested_intervals():
    """alpha = 1e-300: 1 - alpha / 2 rounded to 1 and the t quantile was inf."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 2))
    y = X @ [1.0, 2.0] + rng.normal(size=60)
    m = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    wide, narrow = m.conf_int(alpha=1e-300), m.conf_int(alpha=1e-10)
    assert np.all(np.isfinite(wide))
    assert np.all(wide[:, 0] < narrow[:, 0]) and np.all(wide[:, 1] > narrow[:, 1])
    np.testing.assert_allclose(m.conf_int(alpha=0.05), m.conf_int(), rtol=0, atol=0)


def _count_y():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 2))
    _ = X @ [1.0, 2.0] + rng.normal(size=60)  # HMU's probe3 draws in this order
    return X, rng.poisson(0.3, 60).astype(float)


def test_f8_f3_exact_fit_bootstrap_is_nan_with_a_warning_and_the_fit_warning_names_the_flags():
    """A count y, mostly 0: the exact-fit fallback.  bootstrap_conf_int returned [0, 0] with no warning at the call;
    the fit's warning spoke of the intervals only, while every row off the exact fit is flagged."""
    X, yk = _count_y()
    m, msgs = _fit(X, yk)
    assert m._fitted_with["fallback"] == ["exact"]
    text = " ".join(msgs)
    assert "outlier_mask_" in text and "flag_outliers" in text
    with pytest.warns(UserWarning, match="bootstrap_conf_int: the fit passes exactly"):
        boot = m.bootstrap_conf_int(X, yk, n_boot=5, random_state=0)
    assert np.all(np.isnan(boot))
    assert np.all(np.isfinite(m.conf_int())) and np.all(np.diff(m.conf_int(), axis=1) > 0)


def test_f10_refit_warnings_are_summarised_once_per_message():
    """48 copies of the exact-fit warning came from one call (n = 5..8); now each message once, with its count."""
    rng = np.random.default_rng(7 * 7 + 3)  # HMU's probe2, n = 7, p = 3
    X = rng.normal(size=(7, 3))
    y = X @ np.ones(3) + rng.normal(size=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m.bootstrap_conf_int(X, y, n_boot=20, random_state=0)
    texts = [str(w.message) for w in caught]
    assert texts and len(texts) == len(set(texts))
    assert all(t.startswith("bootstrap_conf_int:") for t in texts)


def test_f12_least_squares_summary_does_not_claim_a_k_factor():
    """diabetes (442 rows) selects least squares, whose Huber K is 1; the label said "x Huber's K^2"."""
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    m, _ = _fit(X, y)
    assert m.selected_loss_ == "least squares"
    assert m.summary().info["covariance"] == "sandwich (HC, selected loss)"


def _hetero(n=100, seed=11):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 1))
    return X, 1.0 + 2.0 * X[:, 0] + np.abs(X[:, 0]) * rng.normal(size=n)


def test_pairs_scheme_is_the_case_bootstrap_and_the_default_is_unchanged():
    """scheme="pairs" refits to rows drawn with replacement, each refit seeded as the residual scheme's; the default
    is the residual scheme, bit for bit; a bad scheme is refused naming it, leaving the estimator as it was."""
    from sklearn.base import clone

    X, y = _hetero(n=40)
    m, _ = _fit(X, y)
    np.testing.assert_array_equal(m.bootstrap_conf_int(X, y, n_boot=4, random_state=3),
                                  m.bootstrap_conf_int(X, y, n_boot=4, random_state=3, scheme="residual"))
    got = m.bootstrap_conf_int(X, y, n_boot=4, random_state=3, scheme="pairs")
    seeds = np.random.default_rng(3).integers(0, 2**31 - 1, size=4)
    coefs = []
    for seed in seeds:
        idx = np.random.default_rng(seed).integers(0, len(y), size=len(y))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            coefs.append(clone(m).set_params(random_state=int(seed)).fit(X[idx], y[idx]).coef_)
    sd = np.std(coefs, axis=0, ddof=1)
    from scipy import stats

    q = stats.t.isf(0.025, m.df_intervals_)
    np.testing.assert_allclose(got, np.column_stack([m.coef_ - q * sd, m.coef_ + q * sd]), rtol=1e-12)
    before = m.conf_int()
    with pytest.raises(ValueError, match="scheme"):
        m.bootstrap_conf_int(X, y, scheme="case")
    np.testing.assert_array_equal(m.conf_int(), before)


def test_pairs_scheme_keeps_heteroscedasticity():
    """Errors with sd |x| (x standard normal): the least-squares slope's variance is E x^4 / n = 3 / n against the
    i.i.d. formula's 1 / n, so the case bootstrap's sd should be about sqrt(3) = 1.7 times the residual
    bootstrap's, which pools the errors (with 60 refits each sd has a relative SE of about 0.09, so the ratio's
    SE is about 0.2 and 1.25 is 2 SE below sqrt(3))."""
    X, y = _hetero(n=100)
    m, _ = _fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = np.diff(m.bootstrap_conf_int(X, y, n_boot=60, random_state=0), axis=1)[0, 0]
        pairs = np.diff(m.bootstrap_conf_int(X, y, n_boot=60, random_state=0, scheme="pairs"), axis=1)[0, 0]
    assert pairs / res > 1.25


@pytest.mark.parametrize("factor", [1e-200, 1e200])
def test_f7_holds_with_a_dead_column(factor):
    """A constant column is fitted aside (_dead_columns.fit_live): the live fit's exact-units standard errors were
    dropped there (their vector had the live columns' length), so the intervals had zero width or were infinite
    again.  Now they are expanded with NaN for the dead column and scale with y."""
    rng = np.random.default_rng(1)
    X = np.column_stack([np.full(60, 3.0), rng.normal(size=(60, 2))])
    y = X[:, 1:] @ [1.0, 2.0] + rng.normal(size=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the dead column's warning
        base = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
        m = MixtureMEstimatorRegressor(random_state=0).fit(X, y * factor)
    ci, ref = m.conf_int(), base.conf_int()
    assert np.all(np.isnan(ci[0])) and np.all(np.isnan(ref[0]))
    np.testing.assert_allclose(ci[1:], ref[1:] * factor, rtol=1e-9)


def test_unidentified_coefficient_is_named_by_its_column_in_the_full_x():
    """With a dead column before it, the one-row dummy's warning named the live fit's column index (x1 for the
    full X's x2)."""
    X, y = _one_row_dummy(100)
    X = np.column_stack([np.zeros(len(y)), X])  # a dead (constant) column 0; the dummy is column 2
    m, msgs = _fit(X, y)
    assert any("x2 not identified" in s for s in msgs)
    assert not any("x1 not identified" in s for s in msgs)
    assert np.all(np.isnan(m.conf_int()[[0, 2]])) and np.all(np.isfinite(m.conf_int()[1]))


def test_the_fits_and_the_bootstraps_warnings_point_at_the_callers_line():
    """They pointed at utils/_transaction.py (a fixed stacklevel below the serialising decorator), so a user's
    warnings filter by module or a traceback of the warning showed the package, not the call."""
    X, y = _one_row_dummy(100)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
        m.bootstrap_conf_int(X, y, n_boot=5, random_state=0)
    assert caught and {w.filename for w in caught} == {__file__}
