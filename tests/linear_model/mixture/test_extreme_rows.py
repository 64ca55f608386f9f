"""MixtureMEstimatorRegressor and extreme rows: gross targets, and a row holding a column's whole spread (lead).

A robust fit sets aside a minority of gross targets whatever their size: the target is centred on its median where
a few gross values carry the mean (one y of 1e100 among values of order 1 gave ``coef_`` of order 1e81: centring on
the mean rounded the other targets away), and the S scale's bracket is formed without overflow (y = 1e300 crashed in
brentq with an unnamed error).

The fit standardises the columns by their standard deviation.  With one row 1e9-1e10 times the others the other
rows become about 0 after centring (their digits rounded away in the normal equations, which square the ratio):
the fit set the columns aside as aliased and returned ``coef_ = [1.41, 0, 0]`` where the data give about
``[0.86, 2.17, 3.39]``, with a NaN covariance, silently.  It then refused, as ``ClosedFormRidge`` does, naming ``X``;
since H30Y such a column is standardised by its median and MAD and the row is fitted as a bad leverage point up to
``FAR_REFUSE`` (1e100) robust scales (test_gross_cells), and refused, naming ``X``, beyond.
"""

import pickle
import warnings

import numpy as np
import pytest

from sklearn_bayes import MixtureMEstimatorRegressor


def _data(scale):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = X @ np.array([1.0, 2.0, 3.0]) + rng.normal(size=60)
    X[0] *= scale
    return X, y


@pytest.mark.parametrize("scale", [1e150, 1e300])
def test_dominated_row_is_refused_naming_x(scale):
    X, y = _data(scale)  # 1e10 is fitted since H30Y (test_gross_cells); beyond FAR_REFUSE robust scales, refused
    with pytest.raises(ValueError, match=r"^X: column \d has a value .* robust scales"):
        MixtureMEstimatorRegressor(random_state=0).fit(X, y)


def test_refused_fit_leaves_a_fitted_estimator_as_it_was():
    X, y = _data(1.0)
    est = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    before = pickle.dumps(est)
    with pytest.raises(ValueError, match="^X: "):
        est.fit(*_data(1e120))
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


def _fit(y_first, k=1):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = X @ np.array([1.0, 2.0, 3.0]) + rng.normal(size=60)
    y[:k] = y_first
    return MixtureMEstimatorRegressor(random_state=0).fit(X, y), X, y


def _se(est):
    return np.sqrt(np.diag(est.coef_covariance_)[:3])


@pytest.mark.parametrize("value", [1e10, 1e100, 1e300, 1.7e308, -1e300])
def test_one_gross_target_is_set_aside_whatever_its_size(value):
    est, X, y = _fit(value)
    clean = MixtureMEstimatorRegressor(random_state=0).fit(X[1:], y[1:])
    assert est.outlier_mask_[0]
    assert np.all(np.isfinite(est.coef_covariance_))
    # Huber's bounded influence: the row still pulls by at most c robust scales over n, far below one SE
    assert np.all(np.abs(est.coef_ - clean.coef_) < _se(clean))


def test_the_fit_does_not_depend_on_how_gross_the_target_is():
    # once the influence is saturated the fit is the same for 1e10 and 1e308: the only differences are roundings
    # of the centring, below 1e6 (FAR_MEAN) ulps of the coefficients
    fits = [_fit(v)[0] for v in (1e10, 1e100, 1e300)]
    for est in fits[1:]:
        assert np.allclose(est.coef_, fits[0].coef_, rtol=0, atol=1e6 * np.finfo(float).eps)


def test_a_fifth_of_gross_targets_is_rejected_as_a_fifth_of_moderate_ones():
    # 12 of 60 targets at 1e100 and at 1e3: Tukey's loss gives both sets weight 0, so the fits agree up to the EM's
    # convergence tolerance (a small fraction of an SE); before, 1e100 gave coefficients of order 1e82
    gross, _, _ = _fit(1e100, k=12)
    moderate, _, _ = _fit(1e3, k=12)
    assert gross.outlier_mask_[:12].all()
    assert np.all(np.abs(gross.coef_ - moderate.coef_) < 0.01 * _se(moderate))


def test_the_exact_fit_warning_does_not_send_users_to_a_bootstrap_that_is_exact_too():
    # 80 % of y tied at 0 (more than half the rows fitted exactly): the bootstrap's resamples are exact fits as well,
    # so its intervals are as narrow as rounding; the warning used to recommend it (review HQP, M6)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    y = np.zeros(40)
    y[:8] = X[:8] @ np.array([1.0, -1.0]) + rng.normal(size=8)
    with pytest.warns(UserWarning, match="fitted exactly") as record:
        est = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    text = " ".join(str(w.message) for w in record if "fitted exactly" in str(w.message))
    assert "bootstrap_conf_int is no remedy here" in text
    # the resampled fits are exact too (their spread was rounding, intervals of width < 1e-6): since review HMU
    # (F8) the call warns and returns NaN rather than intervals of zero width
    with pytest.warns(UserWarning, match="bootstrap_conf_int: the fit passes exactly"):
        ci = est.bootstrap_conf_int(X, y, n_boot=50, random_state=0)
    assert np.all(np.isnan(ci))
