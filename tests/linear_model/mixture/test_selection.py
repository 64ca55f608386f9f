"""MixtureMEstimatorRegressor(variant="min_variance"): the M-estimator of least estimated variance."""

import numpy as np
import pytest

from sklearn_bayes import MixtureMEstimatorRegressor
from sklearn_bayes.datasets import load_hbk, load_stars_cyg
import sklearn_bayes.linear_model._mixture._selection as mv
from sklearn_bayes.linear_model._mixture._lts_start import wls as _wls
from sklearn_bayes.linear_model._mixture._norms import Cauchy, HuberT, LeastSquares, TukeyBiweight


def _reg(**kw):  # the default since issue 15; explicit so the tests keep their meaning
    return MixtureMEstimatorRegressor(variant="min_variance", random_state=0, **kw)


def test_sandwich_variance_closed_forms():
    rng = np.random.default_rng(0)
    Xa = np.column_stack([rng.normal(size=(50, 2)), np.ones(50)])
    r = rng.normal(size=50)
    sw = np.ones(50)
    slopes = np.arange(2)
    # least squares: the HC0 sandwich (X'X)^-1 X' diag(r^2) X (X'X)^-1, times n / (n - p)
    G = np.linalg.inv(Xa.T @ Xa)
    hc0 = G @ (Xa.T * r**2) @ Xa @ G
    v = mv.sandwich_variance(Xa, r, sw, 2.0, LeastSquares(), slopes)
    assert v == pytest.approx(np.trace(hc0[:2, :2]) * 50 / 47, rel=1e-10)
    # Huber: A counts the rows with |u| <= c, B sums the clipped psi^2
    u = r / 0.5
    inside = (np.abs(u) <= 1.345).astype(float)
    A = np.linalg.inv((Xa.T * inside) @ Xa)
    V = 0.25 * A @ (Xa.T * np.clip(u, -1.345, 1.345) ** 2) @ Xa @ A
    assert mv.sandwich_variance(Xa, r, sw, 0.5, HuberT(1.345), slopes) == pytest.approx(np.trace(V[:2, :2]) * 50 / 47)
    # weights are relative weights on independent rows (review HMX F1): B holds w_i (w_i / mean w), so integer
    # weights are not repeated rows (the variance of the weighted estimator, the same as coef_covariance_'s)
    w = rng.integers(1, 4, size=50).astype(float)
    _, psi, dpsi = TukeyBiweight(4.685).psi_terms(r / 0.7)
    Ai = np.linalg.inv((Xa.T * (w * dpsi)) @ Xa)
    V = 0.49 * Ai @ (Xa.T * (w * w / w.mean() * psi**2)) @ Xa @ Ai
    got = mv.sandwich_variance(Xa, r, w, 0.7, TukeyBiweight(4.685), slopes)
    assert got == pytest.approx(np.trace(V[:2, :2]) * w.sum() / (w.sum() - 3), rel=1e-10)
    rows = np.repeat(np.arange(50), w.astype(int))
    repeated = mv.sandwich_variance(Xa[rows], r[rows], np.ones(len(rows)), 0.7, TukeyBiweight(4.685), slopes)
    assert got != pytest.approx(repeated, rel=0.01)
    # a redescending loss with psi' < 0 on most rows has no finite sandwich
    assert mv.sandwich_variance(Xa, 100 * r, sw, 1.0, Cauchy(1.0), slopes) == np.inf


def test_irls_with_huber_loss_matches_huber_with_the_same_fixed_scale():
    """Huber IRLS at a fixed scale solves sum psi(r / s) x = 0: check the estimating equation."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3))
    y = X @ [1.0, -2.0, 0.5] + rng.standard_t(2, size=200)
    Xa = np.column_stack([X, np.ones(200)])
    theta, _ = mv.irls(Xa, y, np.ones(200), np.zeros(4), 1.0, HuberT(1.345), _wls, tol=1e-13, max_iter=2000)
    psi = HuberT(1.345).psi(y - Xa @ theta)
    np.testing.assert_allclose(Xa.T @ psi, 0.0, atol=1e-9)


def test_gaussian_errors_select_an_efficient_loss():
    """With Gaussian errors least squares is efficient; Huber(1.345), Tukey(4.685) have 95 %
    efficiency, Huber(1) 90 %, Cauchy(1.5) about 85 %: at n = 5000 the paired differences of
    the estimated variances are many standard errors, so one of the >= 98 % members wins."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(5000, 3))
    reg = _reg().fit(X, 1 + X @ [1.0, 2.0, 3.0] + rng.normal(size=5000))
    assert reg.selected_loss_ in {"least squares", "huber(c=2)", "huber(c=3)", "tukey(c=6)"}


def test_cauchy_errors_select_a_redescending_loss():
    """With Cauchy errors least squares has infinite variance and Huber(3) loses ~40 % to the
    redescending members; every redescending member is within a few % of the Cauchy MLE."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 3))
    reg = _reg().fit(X, 1 + X @ [1.0, 2.0, 3.0] + rng.standard_cauchy(size=3000))
    assert reg.selected_loss_.startswith(("cauchy", "tukey"))


def test_hbk_flags_exactly_the_bad_leverage_points():
    X, y = load_hbk(return_X_y=True)
    reg = _reg().fit(X, y)
    assert set(np.flatnonzero(reg.flag_outliers(X, y)) + 1) == set(range(1, 11))


def test_stars_cyg_slope_is_positive():
    X, y = load_stars_cyg(return_X_y=True)
    reg = _reg().fit(X, y)
    assert reg.coef_[0] > 0  # lmrob +2.25, least squares -0.41
    assert {11, 20, 30, 34} <= set(np.flatnonzero(reg.flag_outliers(X, y)) + 1)


def test_interpretable_attributes():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 2))
    y = 1 + X @ [1.0, -1.0] + rng.normal(size=300)
    y[:30] += 20.0
    reg = _reg().fit(X, y)
    assert reg.mixture_weights_.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(reg.responsibilities_, reg.predict_proba_components(X, y), atol=1e-12)
    assert np.all(reg.irls_weights_ >= 0)
    # the gross outliers are discounted below every clean row and flagged
    assert reg.irls_weights_[:30].max() < reg.irls_weights_[30:].min()
    assert set(np.flatnonzero(reg.flag_outliers(X, y))) >= set(range(30))
    assert MixtureMEstimatorRegressor(variant="paper", random_state=0).fit(X, y).selected_loss_ is None


@pytest.mark.parametrize("offset", [0.0, 1e8])
def test_rounding_level_residuals_are_never_flagged(offset):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 3))
    y = offset + X @ [1.0, 2.0, -1.0]
    y[:6] += 10
    reg = _reg().fit(X, y)
    assert set(np.flatnonzero(reg.flag_outliers(X, y))) == set(range(6))
    assert set(np.flatnonzero(reg.flag_outliers(np.asfortranarray(X), y))) == set(range(6))


def test_scale_equivariance():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(150, 3))
    y = 2 + X @ [1.0, 0.0, -1.0] + rng.standard_t(3, size=150)
    a, b = _reg().fit(X, y), _reg().fit(X, 1e6 * y)
    assert a.selected_loss_ == b.selected_loss_
    np.testing.assert_allclose(b.coef_, 1e6 * a.coef_, rtol=1e-7)


def test_large_n_subsample_then_all_rows():
    """Above 20000 rows the selection runs on a subsample and the kept loss is refitted on all rows:
    the answer solves the kept loss's estimating equation on all rows."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(25000, 2))
    y = 1 + X @ [1.0, 2.0] + rng.standard_t(3, size=25000)
    reg = _reg().fit(X, y)
    assert np.max(np.abs(reg.coef_ - [1.0, 2.0])) < 5 * np.sqrt(3.0 / 25000)  # 5 SE of least squares
    assert reg.responsibilities_.shape == (25000, 3)


# --------------------------------------------------------------------------------------
# the rank test of a nonlinear mean and the Huber fallback (issue 15, Boston)
# --------------------------------------------------------------------------------------


def _s_select(X, y, level=mv.MISSPECIFICATION_LEVEL):
    from sklearn_bayes.linear_model._mixture._s_start import s_starts
    from sklearn_bayes.linear_model._mixture._lts_start import weighted_median

    Xa = np.column_stack([X, np.ones(len(y))])
    sw = np.ones(len(y))
    theta0, scale0 = s_starts(Xa, y, sw, 200, 1, np.random.default_rng(0))
    return mv.select(Xa, y, sw, theta0[0], scale0[0], _wls, weighted_median, 1e-12, np.arange(X.shape[1]), level=level)


@pytest.mark.parametrize("law", ["cauchy", "asymmetric contamination", "skewed"])
def test_rank_statistic_has_its_permutation_mean_under_any_error_law(law):
    """With errors independent of x, the residual ranks are a uniform permutation and
    ``E T = df`` exactly; over 400 draws the mean of T is within 4 standard errors
    (``sd T ~ sqrt(2 df)``) of df, whatever the error law."""
    rng = np.random.default_rng(11)
    Ts, dfs = [], []
    for _ in range(400):
        X = rng.normal(size=(80, 3))
        e = {"cauchy": rng.standard_cauchy(80),
             "asymmetric contamination": np.where(rng.random(80) < 0.1, 4.0 + rng.normal(size=80), rng.normal(size=80)),
             "skewed": rng.chisquare(2, size=80)}[law]  # fmt: skip
        Xa = np.column_stack([X, np.ones(80)])
        y = 1.0 + X @ [1.0, -1.0, 0.5] + e
        r = e - np.median(e)
        scale = 1.4826 * np.median(np.abs(r))
        T, df, _ = mv.mean_misspecification(Xa, y, r, np.ones(80), scale, np.arange(3))
        Ts.append(T)
        dfs.append(df)
    assert set(dfs) == {4}
    assert abs(np.mean(Ts) - 4) < 4 * np.sqrt(2 * 4 / 400)


@pytest.mark.slow  # Monte-Carlo level check over many fitted data sets (about 2 s)
def test_rank_test_level_holds_for_fitted_residuals_under_cauchy_errors_and_bad_leverage():
    """At level 0.05 the rejection count over 100 linear data sets is below the binomial
    0.05 + 4 SE bound, with Cauchy errors and with 10 % bad leverage points (whose residuals
    are beyond the Tukey cutoff and so not tested)."""
    rng = np.random.default_rng(12)
    for bad_leverage in (False, True):
        rej = 0
        for _ in range(100):
            X = rng.normal(size=(100, 4))
            e = rng.normal(size=100) if bad_leverage else rng.standard_cauchy(100)
            if bad_leverage:
                X[:10, 0] = 10.0 + rng.normal(size=10)
                e[:10] = 2.0 * X[:10, 0]
            rej += _s_select(X, e)["misspecification"][2] < 0.05
        assert rej <= 100 * (0.05 + 4 * np.sqrt(0.05 * 0.95 / 100))


def test_a_nonlinear_mean_under_cauchy_errors_is_detected_and_gets_huber():
    rng = np.random.default_rng(13)
    X = rng.normal(size=(300, 3))
    y = X @ [1.0, 1.0, 1.0] + 0.5 * X[:, 0] ** 2 + 0.3 * rng.standard_cauchy(300)
    sel = _s_select(X, y)
    assert sel["misspecification"][2] < 1e-6
    assert sel["loss"] == HuberT(1.345)
    assert _s_select(X, y, level=None)["misspecification"] is None


def test_huber_with_own_scale_is_a_fixed_point():
    """The returned fit solves Huber's estimating equation at the returned scale, and that scale
    is the residual scale of the returned fit."""
    from sklearn_bayes.linear_model._mixture._lts_start import weighted_median

    rng = np.random.default_rng(14)
    X = rng.normal(size=(200, 3))
    Xa = np.column_stack([X, np.ones(200)])
    y = X @ [1.0, 2.0, 3.0] + rng.standard_t(2, size=200)
    sw = np.ones(200)
    theta, s, _ = mv.huber_with_own_scale(Xa, y, sw, np.zeros(4), 1.0, HuberT(1.345), _wls, weighted_median, 1e-12,
                                          max_iter=5000, tol=1e-14)  # fmt: skip
    assert s == pytest.approx(mv.residual_scale(y - Xa @ theta, sw, 4, weighted_median), rel=1e-10)
    psi = HuberT(1.345).psi((y - Xa @ theta) / s)
    np.testing.assert_allclose(Xa.T @ psi, 0.0, atol=1e-8)


def test_boston_with_shifted_targets_keeps_huber():
    """Boston's mean is not linear (rank statistic 47-85 on 14 df over 120 contaminated training
    sets, 1 % point 29): the variance rule picked a redescending loss in 19-20 of 20 splits and
    predicted 0.004-0.033 worse than RLM's Huber; the default now fits Huber (c = 1.345)."""
    from sklearn.model_selection import train_test_split

    from sklearn_bayes.experiments import robust

    X, y = robust.load_standardised_boston()
    rng = np.random.default_rng(1)
    Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.25, random_state=1)
    ytr, _ = robust.contaminate(ytr, 0.10, robust.SETTINGS["[2,4]sd"], rng, "symmetric")
    reg = _reg().fit(Xtr, ytr)
    assert reg.selected_loss_ == "huber(c=1.345)"


# --------------------------------------------------------------------------------------
# the all-rows polish by Newton steps with the subsample's matrix (issue 30, speed)
# --------------------------------------------------------------------------------------


def _tukey_problem(n=4000, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X @ [1.0, -2.0, 0.5] + rng.normal(size=n)
    y[: n // 10] += 15.0  # 10 % gross outliers, rejected by Tukey (4.685) at scale 1
    return np.column_stack([X, np.ones(n)]), y, np.ones(n)


@pytest.mark.parametrize("norm", [TukeyBiweight(4.685), Cauchy(1.5), HuberT(1.345), LeastSquares()])
def test_newton_polish_with_a_subsample_matrix_finds_the_irls_root(norm):
    """From a 10 % subsample's fit, Newton steps with that subsample's psi'-weighted Gram (scaled to all
    rows) reach the root IRLS reaches on all rows.  Each accepted step contracts the error by q <= 1/2,
    so the error left after a step is at most q / (1 - q) <= 1 times it: stopping when that bound (q
    estimated from the last two steps) or the step is <= tol (1 + max |theta|) leaves an error below
    that bound; the IRLS reference is run to tol 1e-13."""
    Xa, y, sw = _tukey_problem()
    sub = np.arange(0, len(y), 10)
    th_sub, _ = mv.irls(Xa[sub], y[sub], sw[sub], np.zeros(4), 1.0, norm, _wls, tol=1e-10)
    A = mv.psi_curvature(Xa[sub], y[sub] - Xa[sub] @ th_sub, sw[sub], 1.0, norm) * (len(y) / len(sub))
    th_ref, _ = mv.irls(Xa, y, sw, th_sub, 1.0, norm, _wls, tol=1e-13, max_iter=5000)
    th, n_iter = mv.newton_polish(Xa, y, sw, th_sub, 1.0, norm, A, _wls, tol=1e-10)
    tol = 1e-10 * (1 + np.max(np.abs(th))) + 1e-13 * (1 + np.max(np.abs(th_ref)))
    assert np.max(np.abs(th - th_ref)) <= tol
    assert n_iter < 50


def test_newton_polish_falls_back_to_irls_without_a_positive_definite_matrix():
    """A matrix that is not positive definite (no Newton direction): the answer is IRLS's, exactly."""
    Xa, y, sw = _tukey_problem(n=500)
    norm = TukeyBiweight(4.685)
    th0 = np.linalg.lstsq(Xa[50:], y[50:], rcond=None)[0]
    expected = mv.irls(Xa, y, sw, th0, 1.0, norm, _wls, tol=1e-8)[0]
    got = mv.newton_polish(Xa, y, sw, th0, 1.0, norm, -np.eye(4), _wls, tol=1e-8)[0]
    np.testing.assert_array_equal(got, expected)


def test_lmrob_common_fit_option_takes_the_variances_at_the_given_mm_fit(monkeypatch):
    """``COMMON_FIT = "lmrob"`` (round 2's option, not the default): the variances are those of the given
    MM fit's residuals at its scale, and the selected loss is fitted from it."""
    from sklearn_bayes.linear_model._mixture._lts_start import weighted_median

    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 2))
    y = X @ [1.0, -1.0] + rng.standard_t(3, size=200)
    Xa, sw = np.column_stack([X, np.ones(200)]), np.ones(200)
    theta_mm = mv.irls(Xa, y, sw, np.zeros(3), 1.3, TukeyBiweight(4.685), _wls)[0]
    monkeypatch.setattr(mv, "COMMON_FIT", "lmrob")
    out = mv.select(Xa, y, sw, np.zeros(3), 1.0, _wls, weighted_median, 1e-12, np.arange(2), mm=(theta_mm, 1.3))
    assert np.array_equal(out["theta_mm"], theta_mm)
    r = y - Xa @ theta_mm
    for norm, v in out["variances"].items():
        assert v == mv.sandwich_variance(Xa, r, sw, 1.3, norm, np.arange(2))
    monkeypatch.setattr(mv, "COMMON_FIT", "mad")
    old = mv.select(Xa, y, sw, np.zeros(3), 1.0, _wls, weighted_median, 1e-12, np.arange(2), mm=(theta_mm, 1.3))
    assert not np.array_equal(old["theta_mm"], theta_mm)  # the default fits its own MM step at scale0 = 1


def test_large_n_polish_reaches_the_all_row_root_and_the_mixture_describes_the_subsample(monkeypatch):
    """Above 20000 rows: the subsample's fit of the kept loss (to 1e-4) is polished on all rows to within
    1e-6 (1 + max |theta|) (standardised units) of the all-row root, so IRLS on all rows from ``coef_``
    at the selected loss and scale moves no coefficient by more than that (1e-5 in these units, where a
    standard error is 6e-3); the mixture is fitted by EM on the 10^4-row subsample at those coefficients
    and the responsibilities and log-likelihood are one E-step on all rows at its weights and scales."""
    import sklearn_bayes.linear_model._mixture._estimator as E
    from sklearn_bayes.linear_model._mixture._norms import Cauchy, HuberT, TukeyBiweight

    calls = []

    def spy(prob, theta, scales, max_iter, tol, W, a=None, r=None):
        res = describe(prob, theta, scales, max_iter, tol, W, a=a, r=r)
        calls.append((len(prob.y), max_iter, None if a is None else a.copy(), np.array(scales), res))
        return res

    describe = E.describe_residuals
    monkeypatch.setattr(E, "describe_residuals", spy)
    rng = np.random.default_rng(7)
    n = 25000
    X = rng.normal(size=(n, 2))
    y = 1 + X @ [1.0, 2.0] + rng.standard_t(3, size=n)
    reg = _reg().fit(X, y)
    (n_sub, it_sub, _, _, sub), (n_all, it_all, a_all, s_all, _) = calls
    assert (n_sub, n_all, it_all) == (10000, n, 0) and it_sub > 0
    np.testing.assert_array_equal(a_all, sub.a)
    np.testing.assert_array_equal(s_all, sub.scales)
    np.testing.assert_array_equal(reg.mixture_weights_, sub.a)
    assert reg.n_iter_ == sub.n_iter and reg.converged_ == sub.converged
    np.testing.assert_allclose(reg.responsibilities_, reg.predict_proba_components(X, y), rtol=1e-9, atol=1e-12)
    assert reg.log_likelihood_ == pytest.approx(reg.score_samples(X, y).sum(), rel=1e-10)
    name, c = reg.selected_loss_.split("(c=")
    norm = {"huber": HuberT, "tukey": TukeyBiweight, "cauchy": Cauchy}[name](float(c.rstrip(")")))
    Xa = np.column_stack([X, np.ones(n)])
    theta = np.append(reg.coef_, reg.intercept_)
    root, _ = mv.irls(Xa, y, np.ones(n), theta, reg.selected_scale_, norm, _wls, tol=1e-12, max_iter=1000)
    assert np.max(np.abs(root - theta)) <= 1e-5
