"""MixtureMEstimatorRegressor and a row that holds a column's whole spread (lead, this session's review).

The fit standardises the columns by their standard deviation.  With one row 1e9-1e10 times the others the other
rows become about 0 after centring (their digits rounded away in the normal equations, which square the ratio):
the fit set the columns aside as aliased and returned ``coef_ = [1.41, 0, 0]`` where the data give about
``[0.86, 2.17, 3.39]``, with a NaN covariance, silently.  It now refuses, as ``ClosedFormRidge`` does, naming ``X``.
"""

import pickle

import numpy as np
import pytest

from sklearn_bayes import MixtureMEstimatorRegressor


def _data(scale):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = X @ np.array([1.0, 2.0, 3.0]) + rng.normal(size=60)
    X[0] *= scale
    return X, y


@pytest.mark.parametrize("scale", [1e10, 1e150, 1e300])
def test_dominated_row_is_refused_naming_x(scale):
    X, y = _data(scale)
    with pytest.raises(ValueError, match=r"^X: in column \d one row holds nearly all the spread"):
        MixtureMEstimatorRegressor(random_state=0).fit(X, y)


def test_refused_fit_leaves_a_fitted_estimator_as_it_was():
    X, y = _data(1.0)
    est = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    before = pickle.dumps(est)
    with pytest.raises(ValueError, match="^X: "):
        est.fit(*_data(1e12))
    assert pickle.dumps(est) == before


def test_a_large_but_usable_row_is_fitted_as_an_outlier():
    # 1e3 times the others: a bad leverage point the robust fit sets aside; the coefficients are those of the fit
    # without that row to within the estimator's own standard errors (both fits see the same 59 clean rows)
    X, y = _data(1e3)
    est = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    ref = MixtureMEstimatorRegressor(random_state=0).fit(X[1:], y[1:])
    se = np.sqrt(np.diag(ref.coef_covariance_)[:3])
    assert np.all(np.abs(est.coef_ - ref.coef_) < se)
    assert est.outlier_mask_[0]


def test_a_dummy_with_one_nonzero_row_is_not_refused():
    X, y = _data(1.0)
    X = np.column_stack([X, np.zeros(60)])
    X[5, 3] = 1.0  # the other rows are all equal: nothing to lose, not a dominated column
    MixtureMEstimatorRegressor(random_state=0).fit(X, y)
