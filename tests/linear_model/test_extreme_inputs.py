"""The linear models at the edges of float64: subnormal features, weights of any size, threads.

Issue 26, item 5: at ``X * 1e-310`` the six linear models returned ``coef_ = [inf, -inf, inf]``
(and NaN predictions), because the factor ``y_scale / x_scale`` that maps standardised
coefficients to the data's units overflowed on its own, even where the coefficients
themselves are representable.  Now the mapping overflows only where the result does: the
fit is equivariant whenever the coefficients exist in float64, and otherwise ``fit`` raises a
``ValueError`` naming ``X``.

Sample weights of any overall size: the Newton solver's absolute stopping floor made the
unregularised subsample fits stop at their starting point (prior mean 0, ``coef_ = 0``) for
weights 1e-300, and weights near 1e308 overflowed the weighted sums (``FloatingPointError``,
an ``IndexError`` from the mixture, a silent ``coef_ = 0`` from ClosedFormRidge).
"""

import math
import threading
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sklearn_bayes import (
    ClosedFormRidge,
    MixtureMEstimatorRegressor,
    SubsampledPriorLinearSVC,
    SubsampledPriorLogisticRegression,
    SubsampledPriorPoissonRegressor,
    SubsampledPriorRidge,
)
from sklearn_bayes._glm._base import normalise_weights, rescale

EPS = np.finfo(float).eps
N = 300


def _data(kind, seed=0, effect=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 3)) + [0.0, 1.0, 0.0]
    eta = effect * (X @ np.array([0.5, -0.5, 0.25]))
    if kind == "regression":
        return X, 1.0 + eta + (0.3 if effect == 1.0 else 1.0) * rng.normal(size=N)
    if kind == "counts":
        return X, rng.poisson(np.exp(eta)).astype(float)
    return X, (rng.random(N) < 1 / (1 + np.exp(-eta))).astype(int)


# (id, factory, data kind, whether y has units)
SIX = [
    ("ridge", lambda: SubsampledPriorRidge(random_state=0), "regression", True),
    ("logistic", lambda: SubsampledPriorLogisticRegression(random_state=0), "binary", False),
    ("svc", lambda: SubsampledPriorLinearSVC(random_state=0), "binary", False),
    ("poisson", lambda: SubsampledPriorPoissonRegressor(random_state=0), "counts", False),
    ("closed-form-ridge", lambda: ClosedFormRidge(), "regression", True),
    ("mixture", lambda: MixtureMEstimatorRegressor(random_state=0), "regression", True),
]
IDS = [s[0] for s in SIX]


def _eta(est, X):
    """The linear predictor (decision function of the classifiers)."""
    if hasattr(est, "decision_function"):
        return est.decision_function(X)
    return X @ est.coef_ + est.intercept_


@pytest.mark.parametrize("name, make, kind, has_units", SIX, ids=IDS)
def test_subnormal_features_are_equivariant(name, make, kind, has_units):
    """``X * c`` with ``c`` about 1e-309 (subnormal) fits like ``X``, in units of ``1 / c``.

    The effects are weak (standardised coefficients about 0.05), so the coefficients in the
    units of ``X * c`` are below the float64 limit although the ratio ``y_scale / x_scale``
    (about ``2**1025``) is not: the old mapping returned ``inf`` here.

    ``c`` is a power of two, so ``Xr = (X * c) / c`` holds exactly the values the subnormal
    data represent; the two fits differ only by the rounding of subnormal arithmetic in the
    standardisation (the column offsets and the centred values are rounded to multiples of
    2**-1074, i.e. by at most ``2**-1075 / sd`` relative to the column's spread).  The
    standardised design is perturbed by ``delta = 3 * 2**-1075 / min sd`` per entry, so the
    linear predictor moves by at most a few ``kappa * delta`` (``kappa`` the condition number
    of the standardised design) -- plus the solvers' rounding, ``eps`` per step.  Classifiers
    and counts have no units for ``y``: their ``c`` is ``2**-1025``, the regressors' ``2**-1030``
    with ``y * 2**-4``.
    """
    X, y = _data(kind, effect=0.1)
    c, s = (2.0**-1030, 2.0**-4) if has_units else (2.0**-1025, 1.0)
    Xc = X * c
    Xr = Xc / c  # exact
    target = s * y if has_units else y
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = make().fit(Xr, y)
        b = make().fit(Xc, target)
    assert np.all(np.isfinite(b.coef_)) and np.all(np.isfinite(b.intercept_))
    # the case is the one intended: the scale ratio alone is beyond float64, the coefficients are not
    assert np.max(np.abs(b.coef_)) > 2.0**1000
    assert math.log2(s * np.std(y)) - math.log2(c) - math.log2(Xr.std(axis=0).max()) > 1024
    Z = (Xr - Xr.mean(axis=0)) / Xr.std(axis=0)
    kappa = np.linalg.cond(np.c_[Z, np.ones(N)])
    delta = 1.5 * 2.0**-1074 / (c * Xr.std(axis=0).min())  # 3 half-ulps of the subnormal grid
    tol = 16 * kappa * (delta + EPS)
    ea, eb = _eta(a, Xr), _eta(b, Xc) / s
    assert np.max(np.abs(eb - ea)) <= tol * np.max(np.abs(ea))
    assert_allclose(np.ravel(b.coef_) * (c / s), np.ravel(a.coef_), rtol=0, atol=tol * np.max(np.abs(a.coef_)))


@pytest.mark.parametrize("name, make, kind, has_units", SIX, ids=IDS)
def test_unrepresentable_coefficients_are_refused_by_name(name, make, kind, has_units):
    """At ``X * 1e-310`` with ``y`` of order 1 the coefficients are about 1e310 > 1.8e308: a clear
    error naming X (it used to be ``coef_ = [inf, -inf, inf]``), and the estimator keeps its fit.

    An estimator whose coefficients are small (the SVM's default prior can shrink them to ~0.01)
    gets a factor smaller by that much, so the coefficients in X's units are again ~1e310."""
    X, y = _data(kind)
    est = make().fit(X, y)
    before = np.array(est.coef_, copy=True)
    factor = 1e-310 * min(1.0, float(np.max(np.abs(before))))
    with pytest.raises(ValueError, match=r"^X: the fitted coefficients in the units of X are beyond"):
        est.fit(X * factor, y)
    assert_allclose(est.coef_, before, rtol=0, atol=0)


def test_rescale_overflows_only_where_the_result_does():
    tiny = 2.0**-1060  # subnormal: 1 / tiny overflows, 1e-30 / tiny does not
    out = rescale(np.array([1e-30, 1.0, 0.0, -2.0**-60]), num=(1.0,), den=(tiny,))
    assert out[0] == pytest.approx(math.ldexp(1e-30, 1060), rel=4 * EPS)
    assert out[1] == np.inf and out[2] == 0.0 and out[3] == -(2.0**1000)
    # ordinary factors: exactly the plain product (fitted values in ordinary units are unchanged)
    a, n, d = np.array([0.3, -7.1]), 3.7, np.array([0.9, 1e5])
    assert np.array_equal(rescale(a, num=(n,), den=(d,)), a * (n / d))


def test_normalise_weights_is_exact():
    w, W = normalise_weights(np.ones(5))
    assert W == 1.0 and np.array_equal(w, np.ones(5))
    w, W = normalise_weights(np.array([1e308, 1.0, 0.0]))
    assert 1.0 <= w.max() < 2.0 and W * w[0] == 1e308 and w[1] * W == 1.0 and w[2] == 0.0


SUBSAMPLED = [s for s in SIX if s[0] in ("ridge", "logistic", "svc", "poisson")]


@pytest.mark.parametrize("name, make, kind, has_units", SUBSAMPLED, ids=[s[0] for s in SUBSAMPLED])
def test_tiny_weights_keep_the_subsample_prior(name, make, kind, has_units):
    """Uniform weights 1e-300: the unregularised subsample fits do not depend on a weight scale
    (same rows drawn: same fits, to the solver's tolerance), and the MAP fit, whose data term
    is then 1e-300 of the prior's, is the prior mean to rounding.  It used to be 0 (the
    solver's absolute stopping floor ended every fit at its starting point)."""
    X, y = _data(kind)
    a = make().set_params(prior_scale="paper").fit(X, y)
    b = make().set_params(prior_scale="paper").fit(X, y, sample_weight=np.full(N, 1e-300))
    scale = np.abs(a.subsample_coefs_).max()
    assert_allclose(b.subsample_coefs_, a.subsample_coefs_, rtol=0, atol=1e-6 * scale)
    assert_allclose(np.ravel(b.coef_), np.ravel(b.prior_mean_), rtol=0, atol=1e-9 * np.abs(b.prior_mean_).max())


@pytest.mark.parametrize("name, make, kind, has_units", SUBSAMPLED, ids=[s[0] for s in SUBSAMPLED])
@pytest.mark.parametrize("weight", [1e-300, 1e308])
def test_default_prior_is_free_of_the_weights_scale_at_the_float_edges(name, make, kind, has_units, weight):
    """The default (``prior_scale='loo'``) at uniform weights 1e-300 and 1e308: no warning, and the
    same fit as unit weights (its criterion is in units of the mean weight), to the solvers'
    tolerance relative to the coefficients' size.

    Poisson reads weights as exposures (review HSR F1): rates ``y / c`` with exposures ``c`` are the
    counts ``y``, so they fit like them, the intercept shifted by ``-log c`` (the same ``y`` with
    weights ``c`` would be ``c`` times the exposure, hence more information: another fit)."""
    X, y = _data(kind)
    exposure = name == "poisson"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = make().fit(X, y)
        b = make().fit(X, y / weight if exposure else y, sample_weight=np.full(N, weight))
    scale = np.abs(np.ravel(a.coef_)).max()
    assert_allclose(np.ravel(b.coef_), np.ravel(a.coef_), rtol=0, atol=1e-5 * scale)
    if exposure:
        assert_allclose(b.intercept_ + np.log(weight), a.intercept_, rtol=0, atol=1e-5 * max(scale, abs(a.intercept_)))


def _lstsq(X, y):
    return np.linalg.lstsq(np.c_[X, np.ones(len(y))], y, rcond=None)[0]


@pytest.mark.parametrize("name, make, kind, has_units", SIX, ids=IDS)
def test_huge_weights_do_not_overflow(name, make, kind, has_units):
    """Weights 1e308 (their sum is beyond float64) on half the rows, 1 on the rest: a finite fit.

    The light rows weigh 1e-308 of the others: the fit is the fit of the heavy rows alone with
    weight 1e308, to rounding (ClosedFormRidge: ``N = sum(w)`` counts rows, identical in both),
    and the penalised ridge fits have a data term 1e308 times their prior's, so they are the
    least-squares fit of the heavy rows.  It used to raise ``FloatingPointError`` (SubsampledPrior*),
    ``IndexError`` (mixture) or silently return ``coef_ = 0`` (ClosedFormRidge)."""
    X, y = _data(kind)
    w = np.r_[np.full(N // 2, 1e308), np.ones(N - N // 2)]
    est = make()
    if "prior_scale" in est.get_params():  # Algorithm 1's prior does not scale with the weights
        est.set_params(prior_scale="paper")
    est = est.fit(X, y, sample_weight=w)
    assert np.all(np.isfinite(est.coef_)) and np.all(np.isfinite(est.intercept_))
    h = N // 2
    if name in ("ridge", "closed-form-ridge"):
        ols = _lstsq(X[:h], y[:h])
        # ridge on 150 rows with a prior weighing 1e-308 of the data: OLS to the solver's rounding
        # (condition number of the design ~ 3, so a few hundred eps is a wide margin)
        tol = 1e3 * EPS * np.abs(ols).max()
        ref = ols[:3] if name == "ridge" else ClosedFormRidge().fit(X[:h], y[:h], sample_weight=w[:h]).coef_
        assert_allclose(est.coef_, ref, rtol=0, atol=tol if name == "ridge" else 1e-12 * np.abs(ref).max())


def test_mixture_weights_scale_free():
    """Multiplying every weight by 1e-300 or 3 changes no fitted value of the mixture (the scale
    prior counts pseudo-observations of the mean weight); the log-likelihood scales with them.
    It used to fail (``slice step cannot be zero`` at 1e-300: the small-sample correction
    ``sqrt(wt / max(wt - p, 1))`` of the residual scale read the weights' sum as a row count,
    shrinking the scale by 1e-149; at 3 it changed the scale, and so the coefficients, by 1e-5)."""
    X, y = _data("regression")
    a = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    for c in (1e-300, 3.0):
        b = MixtureMEstimatorRegressor(random_state=0).fit(X, y, sample_weight=np.full(N, c))
        # EM stops when the log-likelihood changes by < tol = 1e-5 per unit weight: the weights and
        # scales are equal to that accuracy; the coefficients (IRLS, before EM) to rounding
        assert_allclose(b.coef_, a.coef_, rtol=1e-6)
        assert_allclose(b.scales_, a.scales_, rtol=1e-5)
        assert_allclose(b.mixture_weights_, a.mixture_weights_, rtol=0, atol=1e-5)
        assert b.log_likelihood_ / c == pytest.approx(a.log_likelihood_, rel=1e-6)


def test_concurrent_fits_on_one_instance_are_serialised():
    """Two threads fitting one SubsampledPriorRidge on different data: ``fit`` holds the instance's
    lock, so the final state is exactly one complete serial fit (every attribute from the same
    data), never a mixture of the two.  The estimators of this module have no ``partial_fit``
    (no streaming state); ``fit`` is their only state-changing method."""
    Xa, ya = _data("regression", seed=1)
    Xb, yb = _data("regression", seed=2)
    Xb, yb = Xb[:200], 3.0 * yb[:200]
    refs = [SubsampledPriorRidge(random_state=0).fit(X, y) for X, y in ((Xa, ya), (Xb, yb))]
    keys = ["coef_", "intercept_", "prior_mean_", "prior_covariance_", "subsample_coefs_", "noise_variance_",
            "n_subsamples_", "subsample_size_"]
    est = SubsampledPriorRidge(random_state=0)
    barrier = threading.Barrier(2)
    errors = []

    def work(X, y):
        try:
            barrier.wait()
            for _ in range(5):
                est.fit(X, y)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=d) for d in ((Xa, ya), (Xb, yb))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    # the same code on the same data in one process: bit-identical to one of the serial fits
    matches = [all(np.array_equal(np.asarray(getattr(est, k)), np.asarray(getattr(r, k))) for k in keys)
               for r in refs]
    assert any(matches)
