"""Every linear model is equivariant under changes of units, and refuses bad input by name.

Multiplying ``X`` by ``c`` and ``y`` by ``s`` multiplies the coefficients by ``s / c`` and the
intercept by ``s`` (predictions by ``s``), as for least squares: the estimators standardise
internally, so no threshold of their solvers depends on the units.  Before, at ``X * 1e-8`` the
SubsampledPrior* coefficients collapsed towards 0 with a "rank-deficient" warning, and
ClosedFormRidge and the mixture returned ``coef_ = 0`` at ``X * 1e-20``.
"""

import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_bayes import (
    ClosedFormRidge,
    MixtureMEstimatorRegressor,
    SubsampledPriorLinearSVC,
    SubsampledPriorLogisticRegression,
    SubsampledPriorPoissonRegressor,
    SubsampledPriorRidge,
)

UNITS = [1e-20, 1e-8, 1.0, 1e8, 1e20]


def _data(kind, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(600, 4)) * np.array([1.0, 3.0, 0.5, 2.0]) + 1.0
    eta = (X - 1.0) @ np.array([0.4, -0.2, 0.8, 0.0])
    if kind == "regression":
        y = 3.0 + 2.5 * eta + rng.normal(scale=2.0, size=600)
        y[:30] += 15.0  # a few outliers (the mixture's use case; harmless for the others)
    elif kind == "counts":
        y = rng.poisson(np.exp(0.5 + eta)).astype(float)
    elif kind == "binary":
        y = (rng.random(600) < 1 / (1 + np.exp(-eta))).astype(int)
    else:  # three classes
        y = np.digitize(eta + rng.logistic(size=600), [-0.7, 0.7])
    return X, y


# (name, factory, data kind, whether y may be rescaled)
ESTIMATORS = [
    ("ridge-full", lambda: SubsampledPriorRidge(random_state=0), "regression", True),
    ("ridge-diag", lambda: SubsampledPriorRidge(covariance="diag", random_state=0), "regression", True),
    ("ridge-ledoit-wolf", lambda: SubsampledPriorRidge(shrinkage="ledoit-wolf", random_state=0), "regression", True),
    ("ridge-adj", lambda: SubsampledPriorRidge(covariance_scaling="subsample_size", random_state=0), "regression",
     True),
    ("ridge-jackknife", lambda: SubsampledPriorRidge(covariance_scaling="jackknife", random_state=0), "regression",
     True),
    ("ridge-no-intercept", lambda: SubsampledPriorRidge(fit_intercept=False, random_state=0), "regression", True),
    ("poisson", lambda: SubsampledPriorPoissonRegressor(random_state=0), "counts", False),
    ("logistic", lambda: SubsampledPriorLogisticRegression(random_state=0), "binary", False),
    ("logistic-multinomial", lambda: SubsampledPriorLogisticRegression(random_state=0), "multiclass", False),
    ("svc", lambda: SubsampledPriorLinearSVC(random_state=0), "binary", False),
    ("svc-ovr", lambda: SubsampledPriorLinearSVC(random_state=0), "multiclass", False),
    ("closed-form-ridge", lambda: ClosedFormRidge(), "regression", True),
    ("closed-form-ridge-no-intercept", lambda: ClosedFormRidge(fit_intercept=False), "regression", True),
    # EM stops when the log-likelihood changes by less than tol per unit weight: its answers are
    # equal up to that accuracy (the SQUAREM steps taken can differ in the last bits), so the
    # comparison uses a tol well below the 1e-6 asked for
    ("mixture", lambda: MixtureMEstimatorRegressor(tol=1e-9, random_state=0), "regression", True),
]

_FITS = {}


def _reference(name, make, kind):
    if name not in _FITS:
        X, y = _data(kind)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the reference fit is clean
            _FITS[name] = make().fit(X, y)
    return _FITS[name]


# y is rescaled only for real-valued targets (counts and class labels have no units)
CASES = [
    pytest.param(name, make, kind, scale_y, c, s, id=f"{name}-c={c:g}-s={s:g}")
    for name, make, kind, scale_y in ESTIMATORS
    for c in UNITS
    for s in (UNITS if scale_y else [1.0])
]


@pytest.mark.parametrize("name, make, kind, scale_y, c, s", CASES)
def test_coefficients_follow_the_units(name, make, kind, scale_y, c, s):
    ref = _reference(name, make, kind)
    X, y = _data(kind)
    with warnings.catch_warnings():
        # no warning may be triggered by the units alone (e.g. "rank-deficient, use a larger subsample")
        warnings.simplefilter("error")
        est = make().fit(c * X, s * y if scale_y else y)
    assert_allclose(est.coef_, ref.coef_ * (s / c), rtol=1e-6, atol=1e-6 * np.max(np.abs(ref.coef_)) * s / c)
    assert_allclose(est.intercept_, np.asarray(ref.intercept_) * s, rtol=1e-6,
                    atol=1e-6 * np.max(np.abs(ref.intercept_)) * s)
    if kind in ("binary", "multiclass"):
        # the fits agree to rtol 1e-6 (the comparison above), so a sample whose decision is
        # within that of a tie (the sign of a binary score, the top two scores of several
        # classes) may go either way: compare the samples clear of a tie by 1e-5 of the scores'
        # magnitude, and check that those are nearly all samples
        d = ref.decision_function(X)
        top = np.abs(d) if d.ndim == 1 else np.diff(np.sort(d, axis=1)[:, -2:], axis=1)[:, 0]
        clear = top > 1e-5 * np.abs(d).max()
        assert clear.sum() >= len(y) - 2
        assert_array_equal(est.predict(c * X)[clear], ref.predict(X)[clear])
    if hasattr(ref, "prior_mean_"):
        t = s / c
        assert_allclose(est.prior_mean_, ref.prior_mean_ * t, rtol=1e-6, atol=1e-6 * np.abs(ref.prior_mean_).max() * t)
        assert_allclose(est.prior_covariance_, ref.prior_covariance_ * t * t, rtol=1e-6,
                        atol=1e-6 * np.abs(ref.prior_covariance_).max() * t * t)
    if hasattr(ref, "noise_variance_"):
        assert est.noise_variance_ == pytest.approx(ref.noise_variance_ * s * s, rel=1e-6)
    if hasattr(ref, "scales_"):
        assert_allclose(est.scales_, ref.scales_ * s, rtol=1e-6)


# --------------------------------------------------------------------------------------
# bad input is refused by name, and leaves the estimator as it was
# --------------------------------------------------------------------------------------

REGRESSORS = [
    (lambda: SubsampledPriorRidge(random_state=0), "regression"),
    (lambda: SubsampledPriorPoissonRegressor(random_state=0), "counts"),
    (lambda: ClosedFormRidge(), "regression"),
    (lambda: MixtureMEstimatorRegressor(n_subsets=50, random_state=0), "regression"),
]
ALL = REGRESSORS + [
    (lambda: SubsampledPriorLogisticRegression(random_state=0), "binary"),
    (lambda: SubsampledPriorLinearSVC(random_state=0), "binary"),
]


@pytest.mark.parametrize("make, kind", ALL)
def test_negative_sample_weight_is_refused_by_name(make, kind, capfd):
    X, y = _data(kind)
    w = np.ones(len(y))
    w[5] = -0.5
    est = make().fit(X, y)
    before = pickle.dumps(est)
    with pytest.raises(ValueError, match="sample_weight"):
        est.fit(X[:200], y[:200], sample_weight=w[:200])
    assert pickle.dumps(est) == before  # a rejected fit changes nothing
    assert capfd.readouterr().err == ""  # no LAPACK noise


@pytest.mark.parametrize("make, kind", REGRESSORS)
def test_string_target_is_refused_by_name(make, kind):
    X, _ = _data(kind)
    with pytest.raises(ValueError, match="numeric target y"):
        make().fit(X, np.array(["low", "high"] * 300))


@pytest.mark.parametrize("s", [1e-300, 1e300])
@pytest.mark.parametrize("make", [lambda: SubsampledPriorRidge(random_state=0), lambda: ClosedFormRidge()])
def test_extreme_target_units(make, s):
    """y * 1e+-300 used to overflow (FloatingPointError) or underflow to coef_ = 0."""
    X, y = _data("regression")
    a = make().fit(X, y)
    b = make().fit(X, s * y)
    assert_allclose(b.coef_, s * a.coef_, rtol=1e-6)
    assert b.intercept_ == pytest.approx(s * a.intercept_, rel=1e-6)


def test_integer_parameters_refuse_booleans():
    from sklearn.utils._param_validation import InvalidParameterError

    X, y = _data("regression")
    for est in (SubsampledPriorRidge(max_iter=True), SubsampledPriorRidge(n_subsamples=True),
                MixtureMEstimatorRegressor(n_subsets=True)):
        with pytest.raises(InvalidParameterError):
            est.fit(X, y)


@pytest.mark.parametrize("make, kind", ALL)
def test_bad_X_is_refused_by_name(make, kind):
    """scikit-learn's "Found array with dim 3" and "Found array with 0 sample(s)" name no argument."""
    X, y = _data(kind)
    word = r"(?<![A-Za-z0-9_])X(?![A-Za-z0-9_])"
    for bad, target in ((X.reshape(len(y), 4, 1), y), (X[:0], y[:0]), (np.full(X.shape, "a", dtype=object), y)):
        with pytest.raises((ValueError, TypeError), match=word):
            make().fit(bad, target)
    est = make().fit(X, y)
    with pytest.raises(ValueError, match=word):
        est.predict(X.reshape(len(y), 4, 1))
    if kind != "binary":  # regressors: an object array of strings is named as y, not converted
        with pytest.raises(ValueError, match="numeric target y"):
            make().fit(X, np.array([f"v{i}" for i in range(len(y))], dtype=object))


@pytest.mark.parametrize("make, kind", [r for r in ALL if "Mixture" not in repr(r[0]())])
def test_huge_zero_weight_rows_do_not_change_the_units(make, kind):
    """Rows without weight are absent: their magnitude (here 1e200) must not enter the standardisation."""
    X, y = _data(kind)
    Xj = np.vstack([X, np.full((5, X.shape[1]), 1e200)])
    yj = np.concatenate([y, y[:5]])
    w = np.r_[np.ones(len(y)), np.zeros(5)]
    a = make().fit(X, y)
    b = make().fit(Xj, yj, sample_weight=w)
    assert_allclose(b.coef_, a.coef_, rtol=1e-6, atol=1e-9 * np.abs(a.coef_).max())
