"""Edge cases of ``SubsampledPriorLogisticRegression(predictive='moderated')`` (issue 29, round 9) seen by a
scikit-learn user: rows far from the data, constant columns, weights, string labels, more classes, the
parameter changed after fitting, invalid values."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit, logsumexp
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_bayes import SubsampledPriorLogisticRegression
from sklearn_bayes.linear_model._subsampled_prior._predictive import PROBIT_LAMBDA

EPS = np.finfo(float).eps


def _data(n=80, p=4, n_classes=2, seed=0, labels=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * np.linspace(0.5, 5.0, p) + np.linspace(-2.0, 2.0, p)
    score = (X - np.linspace(-2.0, 2.0, p)) @ (rng.normal(size=p) / np.linspace(0.5, 5.0, p))
    y = np.digitize(score + rng.normal(size=n), np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    if labels is not None:
        y = np.asarray(labels)[y]
    return X, y


def _fit(X, y, **params):
    return SubsampledPriorLogisticRegression(random_state=0, predictive="moderated", **params).fit(X, y)


def _assert_distribution(est, X):
    """Rows in [0, 1] summing to 1 (to a few rounding units: a renormalised exp), the log form its logarithm."""
    P, logP = est.predict_proba(X), est.predict_log_proba(X)
    assert np.all(np.isfinite(P)) and np.all(P >= 0) and np.all(P <= 1)
    assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=8 * EPS * P.shape[1])
    assert np.all(logP <= 0) and not np.any(np.isnan(logP))
    assert_allclose(logsumexp(logP, axis=1), 0.0, atol=8 * EPS * P.shape[1])
    assert_array_equal(np.exp(logP), P)
    return P


# ---------------------------------------------------------------- rows far from the data
@pytest.mark.parametrize("n_classes", [2, 3])
def test_far_rows_get_the_limit_probabilities(n_classes):
    """Rows x * s, s from 1e155 to 1e307 (the quadratic forms x~' Sigma x~ overflow beyond ~1e154 in the fit's
    units; before the fix these rows gave NaN): the probabilities are those of s = 1e100, where the 1 under
    the root is 1e-200 of the variance term, i.e. the limit s -> inf.  Both are the same ratios of quantities
    computed on differently scaled rows: they agree to the rounding of the quadratic forms, gamma_(2 d) times the
    covariance's condition number (< 1e6), within 1e-9 relative."""
    X, y = _data(n_classes=n_classes)
    est = _fit(X, y)
    assert np.linalg.cond(est._theta_covariance_std) < 1e6
    rows = X[:5] - X.mean(axis=0)
    ref = _assert_distribution(est, rows * 1e100)
    for s in (1e155, 1e200, 1e300, 1e307):
        assert_allclose(_assert_distribution(est, rows * s), ref, rtol=1e-9, atol=1e-300)
    if n_classes == 2:
        # the limit in closed form: mu / s -> coef . x, s^2 / s^2 -> x' Sigma_coef x (the coefficients' block)
        C = est.coef_covariance_
        limit = expit((rows @ est.coef_.ravel()) / np.sqrt(PROBIT_LAMBDA * np.einsum("ij,jk,ik->i", rows, C, rows)))
        assert_allclose(ref[:, 1], limit, rtol=1e-9)


def test_far_rows_do_not_change_the_other_rows():
    """A batch mixing ordinary and far rows gives the ordinary rows bit-identical probabilities to a batch of
    those rows alone (the far rows' path is taken row by row), and a far row with zero entries is finite."""
    X, y = _data(n_classes=3)
    est = _fit(X, y)
    far = np.array([[1e308, 0.0, 0.0, 0.0], [0.0, -1e200, 0.0, 1e180], X[0] * 1e250])
    mixed = np.r_[X[:10], far]
    P = _assert_distribution(est, mixed)
    assert_array_equal(P[:10], est.predict_proba(X[:10]))
    assert_array_equal(est.predict_log_proba(mixed)[:10], est.predict_log_proba(X[:10]))


def test_far_rows_without_intercept_and_from_a_fit_in_tiny_units():
    X, y = _data()
    no_intercept = _fit(X, y, fit_intercept=False)
    assert_allclose(_assert_distribution(no_intercept, X[:5] * 1e250), no_intercept.predict_proba(X[:5] * 1e100),
                    rtol=1e-9)
    # fitted in units of 1e-300: an ordinary row is 1e300 of the fit's standard deviations away
    tiny = _fit(X * 1e-300, y)
    P = _assert_distribution(tiny, X[:5] - X.mean(axis=0))
    assert_allclose(P, tiny.predict_proba((X[:5] - X.mean(axis=0)) * 1e-200), rtol=1e-9)


# ---------------------------------------------------------------- data a user brings
def test_constant_columns_weights_and_string_labels():
    X, y = _data(n_classes=3, labels=["low", "mid", "high"])
    Xc = np.column_stack([X, np.full(len(X), 7.0), np.zeros(len(X))])
    est = _fit(Xc, y)
    assert list(est.classes_) == ["high", "low", "mid"]
    P = _assert_distribution(est, Xc)
    assert_array_equal(est.predict(Xc), est.classes_[np.argmax(est.decision_function(Xc), axis=1)])
    w = np.random.default_rng(1).uniform(0.0, 3.0, len(X))
    w[:7] = 0.0
    weighted = SubsampledPriorLogisticRegression(random_state=0, predictive="moderated").fit(Xc, y, sample_weight=w)
    _assert_distribution(weighted, Xc)
    assert P.shape == (len(X), 3)


def test_four_classes_and_a_scaling_pipeline():
    X, y = _data(n=120, n_classes=4)
    pipe = make_pipeline(StandardScaler(), SubsampledPriorLogisticRegression(random_state=0, predictive="moderated"))
    pipe.fit(X, y)
    P = pipe.predict_proba(X)
    assert P.shape == (120, 4) and np.all(np.isfinite(P)) and np.all((P >= 0) & (P <= 1))
    assert_allclose(P.sum(axis=1), 1.0, atol=32 * EPS)
    assert_array_equal(np.exp(pipe.predict_log_proba(X)), P)


def test_binary_moderation_keeps_the_sign_and_shrinks_towards_one_half():
    """Binary: sigma(mu / sqrt(1 + pi s^2 / 8)) has the sign of mu and lies between 1/2 and the MAP's sigma(mu)."""
    X, y = _data()
    est = _fit(X, y)
    mod = est.predict_proba(X)[:, 1]
    est.set_params(predictive="map")
    mp = est.predict_proba(X)[:, 1]
    assert np.all((mod - 0.5) * (mp - 0.5) >= 0)
    assert np.all(np.abs(mod - 0.5) <= np.abs(mp - 0.5) + 4 * EPS)
    assert np.any(np.abs(mod - 0.5) < np.abs(mp - 0.5) - 1e-3)  # it does moderate


# ---------------------------------------------------------------- the parameter after fitting
def test_set_params_predictive_after_fit_needs_no_refit():
    """predictive does not enter the fit: switching it after fitting gives, bit for bit, the probabilities of
    an estimator fitted with the new value, and the fitted attributes do not move."""
    X, y = _data(n_classes=3)
    est = SubsampledPriorLogisticRegression(random_state=0).fit(X, y)
    coef = est.coef_.copy()
    for value in ("moderated", "map", "moderated"):
        est.set_params(predictive=value)
        ref = SubsampledPriorLogisticRegression(random_state=0, predictive=value).fit(X, y)
        assert_array_equal(est.predict_proba(X), ref.predict_proba(X))
        assert_array_equal(est.predict_log_proba(X), ref.predict_log_proba(X))
    assert_array_equal(est.coef_, coef)
    est.set_params(predictive="map")
    assert not np.array_equal(est.predict_proba(X), ref.predict_proba(X))  # the two predictives differ


@pytest.mark.parametrize("bad", ["bayes", None, 1, "MAP"])
def test_invalid_predictive_is_refused_naming_it_and_changes_nothing(bad):
    X, y = _data()
    est = _fit(X, y)
    P, coef = est.predict_proba(X), est.coef_.copy()
    est.set_params(predictive=bad)
    for call in (est.predict_proba, est.predict_log_proba):
        with pytest.raises(ValueError, match="predictive"):
            call(X)
    with pytest.raises(ValueError, match="predictive"):
        est.fit(X[:40], y[:40])  # a rejected refit leaves the fitted state
    assert_array_equal(est.coef_, coef)
    est.set_params(predictive="moderated")
    assert_array_equal(est.predict_proba(X), P)


def test_feature_name_warning_once_and_list_input():
    """Fitted on a DataFrame, predicted on an ndarray: scikit-learn's feature-name warning once per call, as
    with 'map' (the moderated path validated X twice); lists give the ndarray's probabilities (the DataFrame's are
    Fortran-ordered: other rounding of the same products, for 'map' too)."""
    pd = pytest.importorskip("pandas")
    X, y = _data()
    df = pd.DataFrame(X, columns=list("abcd"))
    for value in ("map", "moderated"):
        est = SubsampledPriorLogisticRegression(random_state=0, predictive=value).fit(df, y)
        for call in (est.predict_proba, est.predict_log_proba):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                call(X)
            assert sum("feature names" in str(w.message) for w in caught) == 1, (value, call)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            assert_array_equal(est.predict_proba(X.tolist()), est.predict_proba(X))


def test_a_pickle_from_before_predictive_predicts_with_the_map_fit():
    """A fitted state without ``predictive`` (pickled before it existed) reads as 'map'; 'moderated' on it
    asks for a refit instead of failing on a missing attribute."""
    from sklearn.datasets import make_classification

    X, y = make_classification(120, 4, n_informative=3, n_redundant=0, random_state=0)
    est = SubsampledPriorLogisticRegression(random_state=0).fit(X, y)
    state = est.__getstate__()
    for key in ("predictive", "_theta_covariance_std", "_x_standardisation"):
        state.pop(key)
    old = SubsampledPriorLogisticRegression.__new__(SubsampledPriorLogisticRegression)
    old.__setstate__(state)
    assert old.predictive == "map"
    np.testing.assert_array_equal(old.predict_proba(X), est.predict_proba(X))
    old.set_params(predictive="moderated")
    with pytest.raises(AttributeError, match="fit it again"):
        old.predict_proba(X)
