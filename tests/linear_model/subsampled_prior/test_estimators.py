"""SubsampledPrior* estimators: exact identities, determinism, fallbacks and input errors."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.linear_model import LinearRegression, Ridge

from sklearn_bayes import (
    SubsampledPriorLinearSVC,
    SubsampledPriorLogisticRegression,
    SubsampledPriorPoissonRegressor,
    SubsampledPriorRidge,
    SubsampleFitWarning,
)
from sklearn_bayes.utils import check_generator

ALL = [SubsampledPriorRidge, SubsampledPriorLogisticRegression, SubsampledPriorLinearSVC,
       SubsampledPriorPoissonRegressor]


def _regression(n=600, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.array([1.0, 3.0, 0.5, 2.0])[:d] + 1.0
    y = X @ np.array([1.0, -0.5, 2.0, 0.0])[:d] + 3.0 + rng.normal(scale=2.0, size=n)
    return X, y


def _binary(n=600, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    p = 1 / (1 + np.exp(-(X @ np.array([1.0, -0.8, 0.5, 0.0])[:d] + 0.3)))
    return X, (rng.random(n) < p).astype(int)


def _counts(n=600, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, rng.poisson(np.exp(X @ np.array([0.4, -0.3, 0.2, 0.0])[:d] + 0.5))


DATA = {SubsampledPriorRidge: _regression, SubsampledPriorLogisticRegression: _binary,
        SubsampledPriorLinearSVC: _binary, SubsampledPriorPoissonRegressor: _counts}


def _centred_map(X, y, mean, precision, w=None):
    w = np.ones(len(y)) if w is None else w
    xm, ym = w @ X / w.sum(), w @ y / w.sum()
    Xc, yc = X - xm, y - ym
    beta = np.linalg.solve(Xc.T @ (w[:, None] * Xc) + precision, Xc.T @ (w * yc) + precision @ mean)
    return beta, ym - xm @ beta


# --------------------------------------------------------------------------------------
# the prior and the exact MAP
# --------------------------------------------------------------------------------------


def test_ridge_equals_closed_form_and_prior_is_subsample_moments():
    X, y = _regression()
    reg = SubsampledPriorRidge(n_subsamples=30, subsample_size=40, shrinkage=None, prior_scale="paper",
                               random_state=0).fit(X, y)
    C = reg.subsample_coefs_
    assert C.shape == (30, 4)
    assert_allclose(reg.prior_mean_, C.mean(0), rtol=1e-12)
    assert_allclose(reg.prior_covariance_, np.cov(C, rowvar=False), rtol=1e-10)
    assert_allclose(reg.prior_precision_ @ reg.prior_covariance_, np.eye(4), atol=1e-8)
    # noise variance: pooled residual variance of the subsample OLS fits
    rss = sum(np.sum((y[idx] - X[idx] @ c - np.mean(y[idx] - X[idx] @ c)) ** 2)
              for idx, c in zip(_subsample_rows(reg, X, y), C))
    assert_allclose(reg.noise_variance_, rss / (30 * (40 - 5)), rtol=1e-8)
    # MAP = (X'X + sigma^2 S^-1)^-1 (X'y + sigma^2 S^-1 beta0) on centred data
    P = reg.noise_variance_ * np.linalg.inv(reg.prior_covariance_)
    beta, b0 = _centred_map(X, y, reg.prior_mean_, P)
    assert_allclose(reg.coef_, beta, rtol=1e-9)
    assert_allclose(reg.intercept_, b0, rtol=1e-9)
    assert reg.subsample_size_ == 40 and reg.n_subsamples_ == 30 and reg.shrinkage_ == 0.0


def _subsample_rows(reg, X, y):
    """Each subsample's rows, drawn again from an unfitted copy with the same random_state."""
    rng_plan = SubsampledPriorRidge(**reg.get_params())._plan(X.shape[1] + 1, np.ones(len(y)), X)
    return SubsampledPriorRidge(**reg.get_params())._draw(rng_plan)


def test_ridge_with_unit_noise_variance_is_the_dissertations_closed_form():
    """noise_variance=1 gives (X'X + S^-1)^-1 (X'y + S^-1 beta0) exactly (spec, Algorithm 1)."""
    X, y = _regression()
    reg = SubsampledPriorRidge(n_subsamples=30, subsample_size=40, shrinkage=None, noise_variance=1.0,
                               random_state=0).fit(X, y)
    beta, b0 = _centred_map(X, y, reg.prior_mean_, np.linalg.inv(reg.prior_covariance_))
    assert reg.noise_variance_ == 1.0
    assert_allclose(reg.coef_, beta, rtol=1e-9)
    assert_allclose(reg.intercept_, b0, rtol=1e-9)


@pytest.mark.parametrize("scale", [1e-3, 10.0, 1e4])
def test_ridge_is_scale_equivariant_in_y(scale):
    """Multiplying y by c multiplies the fit by c (fails for the dissertation's sigma^2 = 1 form)."""
    X, y = _regression()
    a = SubsampledPriorRidge(random_state=0).fit(X, y)
    b = SubsampledPriorRidge(random_state=0).fit(X, scale * y)
    assert_allclose(b.coef_, scale * a.coef_, rtol=1e-8)
    assert_allclose(b.intercept_, scale * a.intercept_, rtol=1e-8)
    assert_allclose(b.noise_variance_, scale**2 * a.noise_variance_, rtol=1e-8)
    paper_a = SubsampledPriorRidge(noise_variance=1.0, prior_scale="paper", random_state=0).fit(X, y)
    paper_b = SubsampledPriorRidge(noise_variance=1.0, prior_scale="paper", random_state=0).fit(X, scale * y)
    assert not np.allclose(paper_b.coef_, scale * paper_a.coef_, rtol=1e-6)


def test_ridge_noise_variance_estimate_within_its_standard_error():
    """Each subsample's RSS/(n - p) is unbiased for sigma^2 with sd sigma^2 sqrt(2/(n - p)); the
    pooled mean has at most that sd (Cauchy-Schwarz), so 4 sd is a conservative bound."""
    X, y = _regression(n=4000)  # noise sd 2
    reg = SubsampledPriorRidge(random_state=1).fit(X, y)
    dof = reg.subsample_size_ - (X.shape[1] + 1)
    assert abs(reg.noise_variance_ - 4.0) <= 4 * 4.0 * np.sqrt(2.0 / dof)


def test_subsample_fits_are_unregularised_ols():
    X, y = _regression(n=200)
    reg = SubsampledPriorRidge(n_subsamples=5, subsample_size=30, prior_scale="paper", random_state=3).fit(X, y)
    # recover each subsample's rows from the generator the estimator uses
    rng = check_generator(3)
    for coef in reg.subsample_coefs_:
        idx = np.sort(rng.choice(200, size=30, replace=False))
        assert_allclose(coef, LinearRegression().fit(X[idx], y[idx]).coef_, rtol=1e-8, atol=1e-10)


def test_diag_equals_explicit_per_feature_ridge():
    X, y = _regression()
    reg = SubsampledPriorRidge(covariance="diag", n_subsamples=25, subsample_size=50, prior_scale="paper",
                               random_state=1).fit(X, y)
    var = np.diag(reg.prior_covariance_)
    assert_allclose(reg.prior_covariance_, np.diag(var))
    assert_allclose(var, reg.subsample_coefs_.var(0, ddof=1), rtol=1e-12)
    # beta = m + diag(sd) v with v a standard ridge (alpha = sigma^2) of y - X m on X diag(sd)
    m, sd = reg.prior_mean_, np.sqrt(var)
    ridge = Ridge(alpha=reg.noise_variance_, solver="cholesky").fit(X * sd, y - X @ m)
    assert_allclose(reg.coef_, m + sd * ridge.coef_, rtol=1e-8)
    assert_allclose(reg.intercept_, ridge.intercept_, rtol=1e-8)


@pytest.mark.parametrize("scaling", ["subsample_size", "jackknife"])
def test_covariance_scalings(scaling):
    X, y = _regression()
    kw = dict(n_subsamples=30, subsample_size=40, shrinkage=None, prior_scale="paper", random_state=0)
    base = SubsampledPriorRidge(**kw).fit(X, y)
    scaled = SubsampledPriorRidge(covariance_scaling=scaling, **kw).fit(X, y)
    n, m, N = 40, 30, X.shape[0]
    factor = n if scaling == "subsample_size" else n * (m - 1) / ((N - n) * m)
    assert_allclose(scaled.prior_covariance_, factor * base.prior_covariance_, rtol=1e-10)
    assert scaled.noise_variance_ == base.noise_variance_
    P = scaled.noise_variance_ * np.linalg.inv(scaled.prior_covariance_)
    beta, _ = _centred_map(X, y, scaled.prior_mean_, P)
    assert_allclose(scaled.coef_, beta, rtol=1e-9)


def test_ledoit_wolf_when_rank_deficient():
    X, y = _regression(d=4)
    reg = SubsampledPriorRidge(n_subsamples=3, subsample_size=20, prior_scale="paper",
                               random_state=0).fit(X, y)  # m <= d
    assert 0 < reg.shrinkage_ <= 1
    assert np.all(np.linalg.eigvalsh(reg.prior_covariance_) > 0)
    # the target is the diagonal: variances are kept, correlations shrunk
    assert_allclose(np.diag(reg.prior_covariance_), reg.subsample_coefs_.var(0, ddof=1), rtol=1e-10)
    with pytest.raises(ValueError, match="singular"):
        SubsampledPriorRidge(n_subsamples=3, subsample_size=20, shrinkage=None, random_state=0).fit(X, y)
    fixed = SubsampledPriorRidge(n_subsamples=3, subsample_size=20, shrinkage=0.5, prior_scale="paper",
                                 random_state=0).fit(X, y)
    assert fixed.shrinkage_ == 0.5


def test_logistic_is_exact_map_of_its_prior():
    from scipy import optimize

    X, y = _binary(n=300)
    clf = SubsampledPriorLogisticRegression(n_subsamples=20, subsample_size=60, random_state=0).fit(X, y)
    P, m = clf.prior_precision_, clf.prior_mean_

    def F(t):
        eta = X @ t[:-1] + t[-1]
        return np.sum(np.logaddexp(0, eta) - y * eta) + 0.5 * (t[:-1] - m) @ P @ (t[:-1] - m)

    ref = optimize.minimize(F, np.zeros(5), method="BFGS", options={"gtol": 1e-10})
    assert_allclose(np.r_[clf.coef_[0], clf.intercept_], ref.x, rtol=1e-5, atol=1e-6)


def test_multiclass_logistic_and_ovr_svc():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    logits = np.column_stack([np.zeros(600), X[:, 0] * 2, X[:, 1] * 2 - 0.5])
    y = np.array(["a", "b", "c"])[np.argmax(logits + rng.gumbel(size=logits.shape), axis=1)]
    clf = SubsampledPriorLogisticRegression(random_state=0).fit(X, y)
    assert clf.coef_.shape == (3, 3) and clf.intercept_.shape == (3,)
    assert_allclose(clf.coef_[0], 0.0)
    assert clf.prior_mean_.shape == (6,) and clf.prior_covariance_.shape == (6, 6)
    assert_allclose(clf.predict_proba(X).sum(1), 1.0)
    assert_allclose(np.exp(clf.predict_log_proba(X)), clf.predict_proba(X), rtol=1e-10)
    assert clf.score(X, y) > 0.6
    svc = SubsampledPriorLinearSVC(random_state=0).fit(X, y)
    assert svc.coef_.shape == (3, 3)
    assert svc.prior_mean_.shape == (3, 3) and svc.prior_covariance_.shape == (3, 3, 3)
    assert svc.subsample_coefs_.shape[0] == 3
    assert svc.score(X, y) > 0.6


# --------------------------------------------------------------------------------------
# determinism and parallelism
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("Est", ALL)
def test_deterministic_and_n_jobs_invariant(Est):
    X, y = DATA[Est]()
    kw = dict(n_subsamples=12, random_state=7)
    a = Est(**kw).fit(X, y)
    b = Est(**kw).fit(X, y)
    assert_array_equal(a.coef_, b.coef_)
    assert_array_equal(a.subsample_coefs_, b.subsample_coefs_)
    # n_jobs=2: the same fits in worker processes, where joblib limits the BLAS threads -- the
    # same arithmetic up to the order of summation (n eps, amplified by the Newton systems'
    # condition number cond(X_s)^2; see test_dask_backend.rounding_tolerance)
    c = Est(n_jobs=2, **kw).fit(X, y)
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    tol = 4 * X.shape[0] * np.finfo(float).eps * np.linalg.cond(np.c_[Z, np.ones(len(Z))]) ** 2
    for u, v in ((c.subsample_coefs_, a.subsample_coefs_), (c.coef_, a.coef_), (c.intercept_, a.intercept_)):
        assert_allclose(u, v, rtol=0, atol=tol * np.abs(v).max())
    d = Est(n_subsamples=12, random_state=8).fit(X, y)
    assert not np.array_equal(d.subsample_coefs_, a.subsample_coefs_)


@pytest.mark.parametrize("Est", ALL)
def test_zero_weight_rows_are_absent_rows(Est):
    X, y = DATA[Est](n=300)
    rng = np.random.default_rng(0)
    Xj = np.vstack([X, rng.normal(size=(50, X.shape[1])) * 10])
    yj = np.concatenate([y, y[:50]])
    w = np.concatenate([np.ones(300), np.zeros(50)])
    a = Est(random_state=0).fit(X, y)
    b = Est(random_state=0).fit(Xj, yj, sample_weight=w)
    assert_allclose(b.coef_, a.coef_, rtol=1e-10, atol=1e-12)
    assert_allclose(b.intercept_, a.intercept_, rtol=1e-10, atol=1e-12)


def test_sample_weight_enters_the_map_exactly():
    X, y = _regression(n=300)
    w = np.random.default_rng(0).uniform(0.5, 2.0, size=300)
    reg = SubsampledPriorRidge(n_subsamples=20, subsample_size=30, random_state=0).fit(X, y, sample_weight=w)
    # the prior is reported per mean unit of weight (review HQR, F3): it weighs against w / mean(w)
    beta, b0 = _centred_map(X, y, reg.prior_mean_, reg.noise_variance_ * reg.prior_precision_, w / w.mean())
    assert_allclose(reg.coef_, beta, rtol=1e-9)
    assert_allclose(reg.intercept_, b0, rtol=1e-9)


# --------------------------------------------------------------------------------------
# 'auto' sizes, separation and degenerate data
# --------------------------------------------------------------------------------------


def test_auto_sizes_follow_the_rule_of_thumb():
    X, y = _regression(n=20000, d=4)
    reg = SubsampledPriorRidge(random_state=0).fit(X, y)
    assert reg.subsample_size_ == 200  # 1 % of N
    assert reg.n_subsamples_ == 100  # m = N / n
    reg = SubsampledPriorRidge(subsample_size=0.05, n_subsamples=2.0, random_state=0).fit(X, y)
    assert reg.subsample_size_ == 1000 and reg.n_subsamples_ == 40
    Xc, yc = _counts(n=2000)
    pois = SubsampledPriorPoissonRegressor(random_state=0).fit(Xc, yc)
    assert pois.subsample_size_ == 100 and pois.n_subsamples_ == 20  # 5 %, 20 subsamples


def test_separation_fallback_warns_once_and_stays_finite():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)  # separable
    for Est in (SubsampledPriorLogisticRegression, SubsampledPriorLinearSVC):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            clf = Est(subsample_size=30, n_subsamples=10, prior_scale="paper", random_state=0).fit(X, y)
        sub = [w for w in record if issubclass(w.category, SubsampleFitWarning)]
        assert len(sub) == 1, [str(w.message) for w in record]
        assert "separation" in str(sub[0].message)
        assert clf.n_separated_subsamples_ > 0
        assert np.all(np.isfinite(clf.coef_)) and np.all(np.isfinite(clf.subsample_coefs_))
        assert clf.score(X, y) > 0.95


def test_auto_size_grows_when_subsamples_separate():
    X, y = _binary(n=2000, d=4)
    y = np.where(X[:, 0] > 1.5, 1, y)  # a region of pure class 1: small subsamples separate often
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SubsampleFitWarning)
        clf = SubsampledPriorLogisticRegression(prior_scale="paper", random_state=0).fit(X, y)
    assert clf.n_separated_subsamples_ <= 0.25 * clf.n_subsamples_ or clf.subsample_size_ == 1000


def test_poisson_zero_count_subsamples_fall_back():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = np.zeros(300, dtype=int)
    y[:6] = 1  # almost all zero: most subsamples have only zero counts
    with pytest.warns(SubsampleFitWarning, match="zero-count"):
        reg = SubsampledPriorPoissonRegressor(subsample_size=20, n_subsamples=10, prior_scale="paper",
                                              random_state=0).fit(X, y)
    assert np.all(np.isfinite(reg.coef_)) and np.isfinite(reg.intercept_)
    assert np.all(reg.predict(X) < 1.0)


@pytest.mark.parametrize("Est", ALL)
def test_tiny_data_with_auto_sizes_degrades_gracefully(Est):
    X, y = DATA[Est](n=12, d=4)
    y = y.copy()
    if Est in (SubsampledPriorLogisticRegression, SubsampledPriorLinearSVC):
        y[:2] = [0, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SubsampleFitWarning)
        est = Est(random_state=0).fit(X, y)
    assert np.all(np.isfinite(est.coef_)) and np.all(np.isfinite(est.predict(X)))
    assert est.subsample_size_ < 12


# --------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("Est", ALL)
def test_bad_inputs(Est):
    X, y = DATA[Est](n=100)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        Est().fit(Xn, y)
    Xn[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        Est().fit(Xn, y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples|same number of rows"):
        Est().fit(X, y[:-1])
    with pytest.raises(ValueError, match="must be smaller than the number of rows"):
        Est(subsample_size=100).fit(X, y)
    with pytest.raises(ValueError, match="must exceed the number of parameters.*prior_scale='loo'"):
        Est(subsample_size=5, prior_scale="paper").fit(X, y)  # 4 features + intercept, unregularised fits
    with pytest.raises(ValueError, match="covariance"):
        Est(covariance="banana").fit(X, y)
    with pytest.raises(ValueError, match="n_subsamples"):
        Est(n_subsamples=1).fit(X, y)
    est = Est(random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :2])


@pytest.mark.parametrize("Est", [SubsampledPriorLogisticRegression, SubsampledPriorLinearSVC])
def test_classifier_target_errors(Est):
    X, y = _binary(n=100)
    with pytest.raises(ValueError, match="Unknown label type"):
        Est().fit(X, np.linspace(0, 1, 100))
    with pytest.raises(ValueError, match="only one class"):
        Est().fit(X, np.zeros(100))


def test_poisson_target_errors():
    X, y = _counts(n=100)
    with pytest.raises(ValueError, match="non-negative targets y"):
        SubsampledPriorPoissonRegressor().fit(X, y - 5)
    with pytest.raises(ValueError, match="integer counts"):
        SubsampledPriorPoissonRegressor(integer_counts=True).fit(X, y + 0.5)
    # the default accepts non-negative reals, as PoissonRegressor does
    reg = SubsampledPriorPoissonRegressor(random_state=0).fit(X, y + 0.5)
    assert np.all(reg.predict(X) > 0)


# --------------------------------------------------------------------------------------
# the dissertation's own variants (issue 18): penalty without 1/2, extra column, hinge
# --------------------------------------------------------------------------------------


def _brute_force(F, k):
    from scipy import optimize

    return optimize.minimize(F, np.zeros(k), method="BFGS", options={"gtol": 1e-10}).x


@pytest.mark.parametrize("Est", [SubsampledPriorLogisticRegression, SubsampledPriorPoissonRegressor])
def test_full_penalty_is_exactly_twice_the_prior_precision(Est):
    """penalty='full' (Algorithm 1 as printed) = the MAP under the prior precision 2 S^-1; the
    prior itself (same subsamples) does not change."""
    X, y = DATA[Est](n=300)
    kw = dict(n_subsamples=20, subsample_size=60, prior_scale="paper", random_state=0)
    half, full = Est(**kw).fit(X, y), Est(penalty="full", **kw).fit(X, y)
    assert_array_equal(half.prior_precision_, full.prior_precision_)
    P, m = full.prior_precision_, full.prior_mean_
    nll = ((lambda eta: np.sum(np.logaddexp(0, eta) - y * eta)) if Est is SubsampledPriorLogisticRegression
           else (lambda eta: np.sum(np.exp(eta) - y * eta)))
    ref = _brute_force(lambda t: nll(X @ t[:-1] + t[-1]) + (t[:-1] - m) @ P @ (t[:-1] - m), 5)
    assert_allclose(np.r_[np.ravel(full.coef_), full.intercept_], ref, rtol=1e-5, atol=1e-6)
    assert not np.allclose(np.ravel(half.coef_), np.ravel(full.coef_))


def test_extra_column_is_the_dissertations_affine_transformation():
    """coef_ = u + c beta_0 with (u, c, b) minimising sum L(y, X u + c X beta_0 + b) + (u^T P u + c^2) / 2."""
    X, y = _binary(n=300)
    clf = SubsampledPriorLogisticRegression(n_subsamples=20, subsample_size=60, random_state=0,
                                            prior_mean_method="extra_column").fit(X, y)
    P, m = clf.prior_precision_, clf.prior_mean_
    z = X @ m

    def F(t):
        u, c, b = t[:4], t[4], t[5]
        eta = X @ u + c * z + b
        return np.sum(np.logaddexp(0, eta) - y * eta) + 0.5 * (u @ P @ u + c * c)

    ref = _brute_force(F, 6)
    assert_allclose(np.r_[clf.coef_[0], clf.intercept_], np.r_[ref[:4] + ref[4] * m, ref[5]], rtol=1e-5, atol=1e-6)
    exact = SubsampledPriorLogisticRegression(n_subsamples=20, subsample_size=60, random_state=0).fit(X, y)
    assert not np.allclose(exact.coef_, clf.coef_)  # an approximation, not the exact prior mean


def test_extra_column_refused_for_multinomial_without_state_change():
    import pickle

    X, y = _binary(n=300)
    y3 = y + (X[:, 0] > 1)
    clf = SubsampledPriorLogisticRegression(random_state=0, prior_mean_method="extra_column").fit(X, y)
    before = pickle.dumps(clf)
    with pytest.raises(ValueError, match="prior_mean_method='extra_column'"):
        clf.fit(X, y3)
    assert pickle.dumps(clf) == before


def test_hinge_svc_is_the_map_of_the_hinge_primal():
    """loss='hinge': the dissertation's primal sum max(0, 1 - y eta) + 1/2 (b - b0)^T P (b - b0) at its
    minimum, within the smoothing bound mu N / 2 of the homotopy stage reached (mu <= 0.1 on this
    small problem, see test_map), and lower there than the squared-hinge fit."""
    X, y = _binary(n=300)
    s = np.where(y == 1, 1.0, -1.0)
    clf = SubsampledPriorLinearSVC(loss="hinge", n_subsamples=20, subsample_size=60, random_state=0).fit(X, y)
    sq = SubsampledPriorLinearSVC(n_subsamples=20, subsample_size=60, random_state=0).fit(X, y)
    P, m = clf.prior_precision_, clf.prior_mean_

    def F(b, b0):
        return np.sum(np.maximum(0.0, 1.0 - s * (X @ b + b0))) + 0.5 * (b - m) @ P @ (b - m)

    f = F(clf.coef_[0], clf.intercept_[0])
    # optimality: no random direction decreases the convex objective by more than the smoothing bound
    rng = np.random.default_rng(0)
    theta = np.r_[clf.coef_[0], clf.intercept_]
    for _ in range(200):
        d = rng.normal(size=5)
        for t in (1e-1, 1e-2, 1e-3, 1e-4):
            assert F(theta[:4] + t * d[:4], theta[4] + t * d[4]) >= f - 0.1 * len(y) / 2
    # and it is not the squared-hinge fit, which has a larger hinge objective under the same prior
    assert not np.allclose(clf.coef_, sq.coef_, atol=1e-3)
    assert f < F(sq.coef_[0], sq.intercept_[0])


def test_paper_variant_parameters_are_validated():
    X, y = _binary(n=100)
    with pytest.raises(ValueError, match="penalty"):
        SubsampledPriorLogisticRegression(penalty="double").fit(X, y)
    with pytest.raises(ValueError, match="prior_mean_method"):
        SubsampledPriorLogisticRegression(prior_mean_method="column").fit(X, y)
    with pytest.raises(ValueError, match="loss"):
        SubsampledPriorLinearSVC(loss="log").fit(X, y)
