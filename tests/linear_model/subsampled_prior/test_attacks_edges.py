"""The SubsampledPrior* estimators and ClosedFormRidge seen by an experienced scikit-learn user and by someone
trying to make their statistics silently wrong: parameters changed after fitting, rejected weights, random
states, threads, copies, model selection, feature names, input kinds."""

import copy
import importlib.util
import pickle
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import DataConversionWarning
from sklearn.model_selection import GridSearchCV

from sklearn_bayes import (
    ClosedFormRidge,
    SubsampledPriorLinearSVC,
    SubsampledPriorLogisticRegression,
    SubsampledPriorPoissonRegressor,
    SubsampledPriorRidge,
)

# the shared test tools (threads released together, errors re-raised; state snapshots), loaded by path
_tools_spec = importlib.util.spec_from_file_location("_property_tools", Path(__file__).parents[2] / "_property_tools.py")
_tools = importlib.util.module_from_spec(_tools_spec)
_tools_spec.loader.exec_module(_tools)
run_threads = _tools.run_threads
_release_state = _tools._release_state

EPS = np.finfo(float).eps
N, D = 200, 4
BETA = np.array([1.0, -0.5, 0.0, 0.3])

SUBSAMPLED = [SubsampledPriorRidge, SubsampledPriorLogisticRegression, SubsampledPriorLinearSVC,
              SubsampledPriorPoissonRegressor]
ALL = SUBSAMPLED + [ClosedFormRidge]
LAPLACE = [SubsampledPriorRidge, SubsampledPriorLogisticRegression, SubsampledPriorPoissonRegressor]


def _data(Est, n=N, seed=0, n_classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D)) * [1.0, 2.0, 0.5, 3.0] + [0.0, 1.0, -2.0, 5.0]
    eta = (X - [0.0, 1.0, -2.0, 5.0]) / [1.0, 2.0, 0.5, 3.0] @ BETA
    if Est in (SubsampledPriorRidge, ClosedFormRidge):
        y = eta + rng.normal(size=n)
    elif Est is SubsampledPriorPoissonRegressor:
        y = rng.poisson(np.exp(0.5 * eta)).astype(float)
    else:
        y = np.digitize(eta + rng.logistic(size=n), np.quantile(eta, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y


def _make(Est, **params):
    return Est(**params) if Est is ClosedFormRidge else Est(random_state=0, **params)


def _outputs(est, X):
    """Everything a fitted estimator answers about new rows and its coefficients."""
    out = {"predict": est.predict(X)}
    if hasattr(est, "decision_function"):
        out["decision_function"] = est.decision_function(X)
    if hasattr(est, "predict_proba"):
        out["predict_proba"] = est.predict_proba(X)
    if isinstance(est, SubsampledPriorRidge):
        out["std"] = est.predict(X, return_std=True)[1]
    if hasattr(est, "conf_int"):
        out["conf_int"] = est.conf_int()
        if isinstance(est, tuple(LAPLACE)):
            out["conf_int_posterior"] = est.conf_int(covariance="posterior")
    return out


def _assert_same_outputs(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert_array_equal(a[k], b[k], err_msg=k)


# ---------------------------------------------------------------- parameters changed after fitting
# Failing inputs before the fix (X, y = _data(Est), random_state=0):
# - SubsampledPriorRidge(fit_intercept=True).fit(X, y).set_params(fit_intercept=False).predict(X, return_std=True):
#   ValueError "operands could not be broadcast together" (the (d+1)x(d+1) covariance against d columns);
#   fitted with fit_intercept=False and set to True: the same error the other way round;
# - SubsampledPriorLogisticRegression(predictive='moderated').fit(X, y).set_params(fit_intercept=False):
#   predict_proba silently changed by 5e-4 (the intercept's variance dropped from s^2); fitted without an
#   intercept and set to True: IndexError;
# - Ridge, logistic, Poisson .fit(X, y).set_params(prior_mean_method='extra_column').conf_int(): silently
#   different intervals (the debiasing step of the 'offset' fit dropped: by 0.01-0.17).
# A fitted estimator answers from its fit: the parameters are read again only by the next fit.
_AFTER_FIT = {
    "fit_intercept": lambda v: not v,
    "prior_mean_method": lambda v: "extra_column" if v == "offset" else "offset",
    "covariance": lambda v: "diag" if v == "full" else "full",
    "prior_scale": lambda v: "paper" if v != "paper" else "loo",
    "shrinkage": lambda v: None,
    "penalty": lambda v: "full" if v == "half" else "half",
    "covariance_scaling": lambda v: "jackknife",
    "noise_variance": lambda v: 1.0,
    "integer_counts": lambda v: not v,
    "loss": lambda v: "hinge" if v == "squared_hinge" else "squared_hinge",
}


@pytest.mark.parametrize("Est", ALL)
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_a_fitted_estimator_answers_from_its_fit_whatever_set_params_changes(Est, fit_intercept):
    """Every model parameter changed after fit, one at a time and all together: predictions, probabilities
    (both predictives of the logistic regression), predictive sds and intervals stay those of the fit."""
    X, y = _data(Est)
    est = _make(Est, fit_intercept=fit_intercept)
    if Est is SubsampledPriorLogisticRegression:
        est.set_params(predictive="moderated")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    ref = _outputs(est, X[:7])
    params = est.get_params()
    changed = {k: f(params[k]) for k, f in _AFTER_FIT.items() if k in params}
    assert "fit_intercept" in changed
    for k, v in changed.items():
        _assert_same_outputs(_outputs(est.set_params(**{k: v}), X[:7]), ref)
        est.set_params(**{k: params[k]})
    est.set_params(**changed)
    _assert_same_outputs(_outputs(est, X[:7]), ref)


@pytest.mark.parametrize("Est", ALL)
def test_refit_after_set_params_is_a_fresh_fit(Est):
    """``set_params`` then ``fit`` is bit-identical to a fresh estimator with those parameters (nothing of the
    first fit leaks into the second, not even through a warm start)."""
    X, y = _data(Est)
    new = {"fit_intercept": False}
    if Est is not ClosedFormRidge:
        new.update(covariance="diag", n_subsamples=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = _make(Est).fit(X, y).set_params(**new).fit(X, y)
        fresh = _make(Est, **new).fit(X, y)
    _assert_same_outputs(_outputs(est, X[:7]), _outputs(fresh, X[:7]))
    assert_array_equal(est.coef_, fresh.coef_)


# ---------------------------------------------------------------- rejected weights
@pytest.mark.parametrize("Est", ALL)
@pytest.mark.parametrize("bad, pattern", [
    (np.nan, "sample_weight.*NaN"),
    (np.inf, "sample_weight.*infinity"),
    (-1.0, "Negative values.*sample_weight"),
    ("short", r"sample_weight\.shape"),
    ("zeros", "sample_weight"),
])
def test_bad_weights_are_refused_naming_sample_weight_and_change_nothing(Est, bad, pattern):
    X, y = _data(Est)
    est = _make(Est).fit(X, y)
    before = _release_state(est)
    if bad == "short":
        w = np.ones(N - 1)
    elif bad == "zeros":
        w = np.zeros(N)
    else:
        w = np.ones(N)
        w[7] = bad
    with pytest.raises(ValueError, match=pattern):
        est.fit(X, y, sample_weight=w)
    assert _release_state(est) == before


def test_closed_form_ridge_integer_weights_are_frequencies():
    """``ClosedFormRidge`` counts ``N = sum(w)``: a weight of 3 on every row is the data set three times (the
    penalty and sigma^2 change with N), not the unweighted fit -- the documented frequency semantics.  The two
    fits solve the same normal equations up to rounding (condition number of the standardised Gram matrix
    < 10: agreement within 1e-12 relative)."""
    X, y = _data(ClosedFormRidge)
    w = ClosedFormRidge().fit(X, y, sample_weight=np.full(N, 3.0))
    rep = ClosedFormRidge().fit(np.tile(X, (3, 1)), np.tile(y, 3))
    one = ClosedFormRidge().fit(X, y)
    assert_allclose(w.coef_, rep.coef_, rtol=1e-12)
    assert_allclose(w.alpha_, rep.alpha_, rtol=1e-12)
    assert_allclose(w.sigma2_, rep.sigma2_, rtol=1e-12)
    assert not np.allclose(w.alpha_, one.alpha_, rtol=1e-3)


# ---------------------------------------------------------------- random states, copies, threads
@pytest.mark.parametrize("Est", SUBSAMPLED)
def test_random_state_kinds(Est):
    """An int and a Generator seeded with it draw the same subsamples; a RandomState and None are accepted; a
    clone of a fitted estimator with an int seed refits identically; a deep copy refits without touching the
    original; a Generator is consumed by each fit (the next fit draws new subsamples), and a rejected fit
    leaves it where it was."""
    X, y = _data(Est)
    a = Est(random_state=3, n_subsamples=12).fit(X, y)
    b = Est(random_state=np.random.default_rng(3), n_subsamples=12).fit(X, y)
    assert_array_equal(a.subsample_coefs_, b.subsample_coefs_)
    assert_array_equal(a.coef_, b.coef_)
    Est(random_state=np.random.RandomState(3), n_subsamples=12).fit(X, y)
    Est(random_state=None, n_subsamples=12).fit(X, y)
    assert_array_equal(clone(a).fit(X, y).subsample_coefs_, a.subsample_coefs_)
    c = copy.deepcopy(a)
    ref = _release_state(a)
    c.fit(X[:150], y[:150])
    assert _release_state(a) == ref
    g = np.random.default_rng(5)
    est = Est(random_state=g, n_subsamples=12)
    first = est.fit(X, y).subsample_coefs_.copy()
    state = copy.deepcopy(g.bit_generator.state)
    with pytest.raises(ValueError):
        est.fit(X, y, sample_weight=-np.ones(N))
    assert g.bit_generator.state == state
    assert not np.array_equal(est.fit(X, y).subsample_coefs_, first)


@pytest.mark.parametrize("Est", ALL)
def test_threads_predicting_on_one_estimator_and_fitting_clones(Est):
    """Four threads predicting on one fitted estimator get the serial answers; three threads fitting clones
    get the serial fit, bit for bit."""
    X, y = _data(Est)
    est = _make(Est)
    if Est is SubsampledPriorLogisticRegression:
        est.set_params(predictive="moderated")
    est.fit(X, y)
    ref = _outputs(est, X)
    got = [None] * 4

    def predict(i):
        def run():
            got[i] = _outputs(est, X)
        return run

    run_threads(*[predict(i) for i in range(4)])
    for g in got:
        _assert_same_outputs(g, ref)
    clones = [clone(est) for _ in range(3)]
    run_threads(*[(lambda c=c: c.fit(X, y)) for c in clones])
    for c in clones:
        _assert_same_outputs(_outputs(c, X), ref)


# ---------------------------------------------------------------- model selection, pickles
@pytest.mark.parametrize("Est", [SubsampledPriorRidge, SubsampledPriorLogisticRegression])
def test_grid_search_with_two_jobs_is_the_serial_search(Est):
    X, y = _data(Est)
    grid = {"covariance": ["full", "diag"], "fit_intercept": [True, False]}
    one = GridSearchCV(_make(Est), grid, cv=3, n_jobs=1).fit(X, y)
    two = GridSearchCV(_make(Est), grid, cv=3, n_jobs=2).fit(X, y)
    assert_array_equal(one.cv_results_["mean_test_score"], two.cv_results_["mean_test_score"])
    assert one.best_params_ == two.best_params_
    back = pickle.loads(pickle.dumps(two))
    assert_array_equal(back.predict(X), one.predict(X))


# ---------------------------------------------------------------- input kinds
@pytest.mark.parametrize("Est", ALL)
def test_input_kinds(Est):
    """Sparse X is refused naming X (the estimator stays as fitted); a 2-column y is refused naming y; a
    column-vector y is the 1-d y with scikit-learn's DataConversionWarning; float32 X fits exactly like its
    float64 values (the fit runs in float64), a DataFrame like its values; a DataFrame's names are kept and
    checked."""
    X, y = _data(Est)
    est = _make(Est).fit(X, y)
    before = _release_state(est)
    with pytest.raises(TypeError, match="X"):
        est.fit(sp.csr_matrix(X), y)
    with pytest.raises(ValueError, match="y"):
        est.fit(X, np.column_stack([y, y]))
    assert _release_state(est) == before
    with pytest.warns(DataConversionWarning):
        col = _make(Est).fit(X, y[:, None])
    assert_array_equal(col.coef_, est.coef_)
    X32 = X.astype(np.float32)
    f32 = _make(Est).fit(X32, y)
    f64 = _make(Est).fit(X32.astype(np.float64), y)
    assert_array_equal(f32.coef_, f64.coef_)
    assert_array_equal(f32.predict(X32), f64.predict(X32.astype(np.float64)))
    names = ["a", "b", "c", "d"]
    df = pd.DataFrame(X, columns=names)
    fd = _make(Est).fit(df, y)
    assert_array_equal(fd.feature_names_in_, names)
    # the frame's values (column-major: BLAS may sum in another order than on X itself)
    assert_array_equal(fd.coef_, _make(Est).fit(df.to_numpy(), y).coef_)
    with pytest.warns(UserWarning, match="feature names"):
        fd.predict(X)
    with pytest.raises(ValueError, match="feature names"):
        fd.predict(df[["b", "a", "c", "d"]])


@pytest.mark.parametrize("Est", [SubsampledPriorLogisticRegression, SubsampledPriorLinearSVC])
def test_a_class_with_only_zero_weight_rows_is_known_but_never_predicted(Est):
    """A label that appears only on rows of weight 0 stays in ``classes_`` (scikit-learn's convention: the
    classes are those of y) but carries no data: it is never predicted and, for the logistic regression, gets a
    probability far below the others'."""
    X, y = _data(Est)
    y = y.copy()
    y[:5] = 2
    w = np.ones(N)
    w[:5] = 0.0
    est = _make(Est).fit(X, y, sample_weight=w)
    assert_array_equal(est.classes_, [0, 1, 2])
    assert not np.any(est.predict(X) == 2)
    if hasattr(est, "predict_proba"):
        assert est.predict_proba(X)[:, 2].max() < 1e-3


# ---------------------------------------------------------------- uncertainty where the data run out
@pytest.mark.parametrize("N, p, snr", [(20, 100, 1.0), (50, 80, 5.0)])
def test_wide_ridge_intervals_do_not_collapse(N, p, snr):
    """p > N, beta ~ N(0, snr / p I), unit noise, 20 fits of the default ridge with 200 new rows each.  Before
    the fix the noise variance was RSS / max(N - 1 - tr H, 1): where the leave-one-out penalty made the fit
    nearly interpolate, both went to 0 -- noise_variance_ 1e-300 (N = 20) and 2e-12 (N = 50), predictive
    coverage 0.422 and 0.738 of nominal 0.95, posterior intervals of zero width.  Now RSS / (N - 1 - tr(2H -
    H^2)), unbiased when the fit has no bias and conservative otherwise: every noise variance is of the order
    of the true 1 (a weighted mean of the squared residual components, each with expectation >= 1; below 0.1
    would be a lower tail beyond 1e-6), and the mean coverage is at least nominal within 3 standard errors of
    the 20 fits' coverages."""
    cover, noise, widths = [], [], []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(N, p))
        beta = rng.normal(size=p) * np.sqrt(snr / p)
        y = X @ beta + rng.normal(size=N)
        Xt = rng.normal(size=(200, p))
        yt = Xt @ beta + rng.normal(size=200)
        est = SubsampledPriorRidge(random_state=seed).fit(X, y)
        mean, sd = est.predict(Xt, return_std=True)
        cover.append(np.mean(np.abs(yt - mean) <= 1.959963984540054 * sd))
        noise.append(est.noise_variance_)
        widths.append(np.diff(est.conf_int(covariance="posterior"), axis=1).min())
    cover = np.array(cover)
    assert min(noise) > 0.1, noise
    assert min(widths) > 0.0
    assert cover.mean() >= 0.95 - 3 * cover.std(ddof=1) / np.sqrt(cover.size), cover


@pytest.mark.parametrize("shape, weight", [((4, 4), 1.0), ((5, 4), 1.0), ((200, 4), 0.01)])
def test_closed_form_ridge_without_residual_degrees_of_freedom_has_no_intervals(shape, weight):
    """N = sum(w) <= d + 1: sigma^2 is not estimable.  The closed form is then the OLS (alpha_ = 0, the
    minimum-norm interpolant where N < d + 1), and sigma2_, coef_covariance_ and conf_int are NaN -- before
    the fix they were 0 (intervals of zero width, claiming certainty from 4 rows).  One more row (N = d + 2)
    gives finite, positive intervals again.  Where the rows are many and only the weights' sum is small (weights
    given as probabilities, summing to 2 here) a UserWarning says how the weights are read; few rows do not
    warn."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=shape)
    y = X[:, 0] + rng.normal(size=shape[0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = ClosedFormRidge().fit(X, y, sample_weight=np.full(shape[0], weight))
    messages = [str(c.message) for c in caught if issubclass(c.category, UserWarning)]
    if weight < 1:
        assert len(messages) == 1 and "sample_weight sums to 2" in messages[0] and "frequencies" in messages[0]
    else:
        assert messages == []
    assert est.alpha_ == 0.0
    assert np.isnan(est.sigma2_)
    assert np.all(np.isnan(est.conf_int()))
    assert np.all(np.isnan(est.coef_covariance_))
    if shape[0] <= shape[1] + 1:
        assert_allclose(est.predict(X), y, atol=1e-10 * np.abs(y).max())
    X6 = rng.normal(size=(6, 4))
    ok = ClosedFormRidge().fit(X6, X6[:, 0] + rng.normal(size=6))
    assert ok.sigma2_ > 0 and np.all(np.diff(ok.conf_int(), axis=1) > 0)


@pytest.mark.parametrize("Est, n_classes", [(SubsampledPriorRidge, 0), (SubsampledPriorLogisticRegression, 2),
                                            (SubsampledPriorLogisticRegression, 3),
                                            (SubsampledPriorPoissonRegressor, 0)])
def test_coefficients_the_data_do_not_identify_have_unbounded_sampling_intervals(Est, n_classes):
    """``conf_int()`` (the default, covariance='sampling') is the Wald interval of the data alone, from the
    inverse of the data's observed information.  Where that is singular the pseudo-inverse was used: with 30
    rows and 50 features (seed 0) it gave every coefficient a finite interval (widths 0.42-2.4) although the
    data identify none of them.  Now the variance is the limit of (H + eps I)^-1, infinite for every
    coefficient with a component in the null space: all of them with p > N, the two copies of a duplicated
    column and a constant column (with an intercept) -- the other coefficients' intervals stay finite.  The
    posterior intervals (the prior makes the Hessian positive definite) stay finite throughout."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 50))
    eta = X @ (rng.normal(size=50) * 0.2)
    if Est is SubsampledPriorRidge:
        y = eta + rng.normal(size=30)
    elif Est is SubsampledPriorPoissonRegressor:
        y = rng.poisson(np.exp(0.3 * eta)).astype(float)
    else:
        y = np.digitize(eta + rng.logistic(size=30), np.quantile(eta, np.linspace(0, 1, n_classes + 1)[1:-1]))
    est = Est(random_state=0).fit(X, y)
    ci = est.conf_int()
    if n_classes == 3:
        ci = ci[1:]  # the reference class's row is fixed at 0
    assert np.all(ci[..., 0] == -np.inf) and np.all(ci[..., 1] == np.inf)
    assert np.all(np.isfinite(est.conf_int(covariance="posterior")))
    X, y = _data(Est if n_classes == 0 else SubsampledPriorLogisticRegression, n_classes=max(n_classes, 2))
    X = np.column_stack([X, X[:, 0], np.full(N, 2.5)])
    est = Est(random_state=0).fit(X, y)
    ci = est.conf_int()
    if n_classes == 3:
        ci = ci[1:]
    unbounded = np.isinf(ci).all(axis=-1)
    assert np.all(unbounded[..., [0, 4, 5]]) and not np.any(unbounded[..., 1:4])
    assert np.all(np.isfinite(ci[..., 1:4, :]))
    assert np.all(np.isfinite(est.conf_int(covariance="posterior")))


@pytest.mark.parametrize("Est", LAPLACE + [ClosedFormRidge])
def test_intervals_are_nested_in_the_level_and_the_level_is_validated(Est):
    """A higher level gives a wider interval around the same centre (alpha 0.5 -> 0.01: nested, strictly for
    every coefficient with a positive variance); alpha outside (0, 1), a bool or a string is refused naming
    alpha, and the estimator is unchanged."""
    X, y = _data(Est)
    est = _make(Est).fit(X, y)
    kinds = [{}] if Est is ClosedFormRidge else [{}, {"covariance": "posterior"}]
    for kw in kinds:
        prev = None
        for alpha in (0.5, 0.2, 0.05, 0.01):
            ci = est.conf_int(alpha=alpha, **kw)
            assert_allclose(ci.mean(axis=-1), est.conf_int(alpha=0.5, **kw).mean(axis=-1), rtol=1e-12, atol=1e-12)
            if prev is not None:
                assert np.all(ci[..., 0] < prev[..., 0]) and np.all(ci[..., 1] > prev[..., 1])
            prev = ci
    before = _release_state(est)
    for bad in (0.0, 1.0, -0.1, 1.5, True, "0.05", np.nan):
        with pytest.raises(ValueError, match="alpha"):
            est.conf_int(alpha=bad)
    assert _release_state(est) == before


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_multinomial_moderated_answers_from_its_fit_after_set_params(fit_intercept):
    """Three classes, predictive='moderated' (the Laplace covariance of 2 x (4 + 1) parameters): switching
    fit_intercept or prior_mean_method after fit changes neither the probabilities nor the intervals (before
    the fix: an IndexError one way and a silently different covariance of the scores the other)."""
    X, y = _data(SubsampledPriorLogisticRegression, n_classes=3)
    est = _make(SubsampledPriorLogisticRegression, fit_intercept=fit_intercept, predictive="moderated").fit(X, y)
    ref = _outputs(est, X[:9])
    est.set_params(fit_intercept=not fit_intercept, prior_mean_method="extra_column")
    _assert_same_outputs(_outputs(est, X[:9]), ref)
