"""One row scaled by 1e150 or 1e300: a ValueError naming X, not a silent constant fit.

Before: ``SubsampledPriorRidge`` returned ``coef_ ~ 1e-154`` (1e-304 at 1e300), a constant
prediction (the mean of y), an infinite ``coef_sampling_covariance_`` and at 1e300 an infinite
``prior_precision_`` with a zero ``coef_covariance_``, without a warning: after centring and
scaling by the column's standard deviation the other rows were rounded to one value.
scikit-learn's ``Ridge`` on the same data: coefficients of 1e-132 at 1e150 and "array must not
contain infs or NaNs" at 1e200.
"""

import warnings

import numpy as np
import pytest

from sklearn_bayes import SubsampledPriorLogisticRegression, SubsampledPriorRidge
from sklearn_bayes._glm import dominated_columns


def _data(n=80, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, X @ np.array([1.0, 2.0, -1.0]) + 0.1 * rng.normal(size=n)


@pytest.mark.parametrize("scale", [1e150, 1e300, 1e308])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_one_huge_row_is_refused_by_name_and_leaves_the_fit(scale, fit_intercept):
    X, y = _data()
    est = SubsampledPriorRidge(random_state=0, fit_intercept=fit_intercept).fit(X, y)
    before = est.coef_.copy(), float(est.intercept_)
    Xb = X.copy()
    Xb[0] *= scale
    with pytest.raises(ValueError, match=r"^X: in column \d one row holds nearly all the spread"):
        est.fit(Xb, y)
    np.testing.assert_array_equal(est.coef_, before[0])
    assert float(est.intercept_) == before[1]


def test_the_classifiers_share_the_check():
    X, y = _data()
    Xb = X.copy()
    Xb[5] *= 1e200
    with pytest.raises(ValueError, match=r"^X: in column"):
        SubsampledPriorLogisticRegression(random_state=0).fit(Xb, (y > 0).astype(int))


def test_a_row_holding_nearly_all_the_spread_warns():
    """At 1e6 the fit is finite but its coefficients are 0 to 3 digits (OLS: 1.18, 1.65, 0.11): warned."""
    X, y = _data()
    Xb = X.copy()
    Xb[0] *= 1e6
    with pytest.warns(UserWarning, match=r"^X: in column \d one row holds nearly all the spread"):
        SubsampledPriorRidge(random_state=0).fit(Xb, y)


def test_ordinary_heavy_tailed_and_dummy_columns_pass_silently():
    rng = np.random.default_rng(3)
    X = np.c_[rng.lognormal(0.0, 2.0, size=400), rng.standard_t(2, size=400), np.r_[1.0, np.zeros(399)]]
    y = X[:, 1] + rng.normal(size=400)
    ratio = dominated_columns(X, np.ones(400))
    assert np.all(ratio[:2] > 0.05) and np.isnan(ratio[2])  # a dummy with a single 1 has nothing to lose
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SubsampledPriorRidge(random_state=0).fit(X, y)


def test_dominated_columns_is_exact_on_a_small_case_and_scale_free():
    """Rows (0, 1, 2, 1e k): the others' sd is sqrt(2/3), the column's sd is computed directly."""
    for k in (3, 100, 300):
        col = np.array([0.0, 1.0, 2.0, 10.0**k])
        full = np.std(col / 10.0**k) * 10.0**k
        expected = np.sqrt(2.0 / 3.0) / full
        got = dominated_columns(col[:, None], np.ones(4))[0]
        assert got == pytest.approx(expected, rel=1e-12)
    # weights: a zero weight on the huge row's neighbours changes the others' spread exactly
    col = np.array([0.0, 1.0, 2.0, 4.0, 1e9])
    w = np.array([1.0, 0.0, 1.0, 1.0, 1.0])
    expected = np.std([0.0, 2.0, 4.0]) / np.sqrt(np.cov(col, aweights=w, bias=True))
    assert dominated_columns(col[:, None], w)[0] == pytest.approx(expected, rel=1e-12)
