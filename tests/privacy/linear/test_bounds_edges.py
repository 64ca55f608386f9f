"""Public bounds and calibrations at the edges of floating point (task HQI).

Rows at, above and far beyond ``x_bound`` for every magnitude of the bound; the calibrated
inverse temperature at a ridge penalty near the largest double; a subnormal ``x_bound``.
"""

import math
import warnings

import numpy as np
import pytest

from sklearn_bayes.privacy import (
    AdaOPSRegressor,
    DPSGLDLogisticRegression,
    OnePosteriorSampleRidge,
    PrivacyLedger,
)
from sklearn_bayes.privacy._linear._base import _replace_one_pair_budget
from sklearn_bayes.privacy._linear._ops import calibrate_ops_gamma, ops_worst_case_delta

MAKERS = {
    "ops_ridge": lambda **kw: OnePosteriorSampleRidge(ridge_lambda=500.0, y_bound=2.0, **kw),
    "ssp_posterior": lambda **kw: AdaOPSRegressor(y_bound=2.0, **kw),
    "released_norm": lambda **kw: AdaOPSRegressor(y_bound=2.0, calibration="released_norm", **kw),
    "thesis": lambda **kw: AdaOPSRegressor(y_bound=2.0, calibration="thesis", **kw),
    "dpsgld": lambda **kw: DPSGLDLogisticRegression(n_iter=20, n_draws=2, **kw),
}


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _rows(bound, d, seed=0):
    """Rows inside, exactly at (as computed), just above and far beyond the bound, in every direction."""
    rng = np.random.default_rng(seed)
    u = rng.normal(size=(200, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    factors = np.repeat([0.5, 1.0, 1.0 + 1e-15, 1.0 + 1e-9, 2.0, 1e6], 200 // 6 + 1)[:200]
    with np.errstate(over="ignore"):
        X = u * (bound * factors)[:, None]
    X = X[np.all(np.isfinite(X), axis=1)]
    axis = np.zeros((3, d))
    axis[0, 0], axis[1, -1], axis[2, :] = bound, -bound, bound / math.sqrt(d)  # exactly on the bound
    return np.vstack([X, axis])


@pytest.mark.parametrize("x_bound", [1e-300, 1e-150, 1e-3, 1.0, 7.3, 1e150, 1e300])
@pytest.mark.parametrize("d", [1, 3, 50])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_scaled_rows_are_in_the_unit_ball_at_every_bound(x_bound, d, fit_intercept):
    """The design the noise is calibrated for has rows of norm <= 1 (up to the 4-ulp shrink of the
    clipping, i.e. never above 1 + 2 ulp after the division), for every public bound from 1e-300 up."""
    est = OnePosteriorSampleRidge(x_bound=x_bound, y_bound=1.0, fit_intercept=fit_intercept)
    Xs = est._scaled_design(_rows(x_bound, d))
    assert np.all(np.isfinite(Xs))
    assert np.max(np.linalg.norm(Xs, axis=1)) <= 1.0 + 2 * np.finfo(float).eps


@pytest.mark.parametrize("kind", sorted(MAKERS))
@pytest.mark.parametrize("x_bound", [1.5e-323, 1e-310, 1e-301])
def test_a_subnormal_x_bound_is_refused_before_any_noise(kind, x_bound):
    """Below 1e-300 the clipped rows have subnormal entries, whose absolute rounding (5e-324) is no
    longer small against the bound: with clip_rows as it was before 009c2e5 the scaled rows had norm
    up to 1.83 at x_bound = 1.5e-323 (the sensitivity the noise assumes was exceeded) and 1 + 1.5e-13 at
    1e-310.  clip_rows now keeps such rows in the ball; the estimators still refuse the bound (defence
    in depth: every entry then has a few significant bits -- at 1.5e-323 one of 7 values -- so the
    release would describe nothing), naming x_bound and charging nothing."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3)) * 1e-300
    y = (X[:, 0] > 0).astype(int) if kind == "dpsgld" else rng.uniform(-1, 1, 50)
    ledger = PrivacyLedger()
    est = MAKERS[kind](x_bound=x_bound, ledger=ledger, random_state=0)
    with pytest.raises(ValueError, match=r"x_bound=.*1e-300"):
        _quiet(est.fit, X, y)
    assert ledger.n_releases == 0 and not hasattr(est, "coef_")


@pytest.mark.parametrize("eps, delta", [(1.0, 1e-6), (50.0, 1e-3), (1300.0, 1e-6)])
@pytest.mark.parametrize("lam", [1e300, 1e307, 1.7e308, np.finfo(float).max])
@pytest.mark.parametrize("n", [1, 1000, 10**12])
def test_ops_gamma_at_the_largest_ridge_penalties_is_finite_and_certified(eps, delta, lam, n):
    """γ = c²/(μ_max r_max²) with μ_max = 1/λ overflows to inf for λ near the largest double; the
    search then started at log γ = inf and never ended (ε = 50, δ = 1e-3, λ = 1.7e308: a fit that
    hung).  Now γ is at most the largest double and still certified at the worst case."""
    eps0, delta0 = _replace_one_pair_budget(eps, delta)
    mu_max, r_max = 1.0 / lam, 1.0 + math.sqrt((n - 1) / lam)
    gamma = calibrate_ops_gamma(eps0, delta0, mu_max, r_max)
    assert gamma is not None and 0 < gamma < math.inf
    assert ops_worst_case_delta(eps0, gamma, mu_max, r_max) <= delta0


def test_ops_fit_at_the_largest_ridge_penalty_is_a_noisy_draw():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(200, 3))
    y = X @ np.array([0.5, -0.3, 0.2])
    est = _quiet(OnePosteriorSampleRidge(epsilon=50.0, delta=1e-3, ridge_lambda=1.7e308, x_bound=2.0, y_bound=2.0,
                                         random_state=0).fit, X, y)
    assert math.isfinite(est.gamma_) and np.all(np.isfinite(est.coef_))
    assert est.epsilon_spent_ == 50.0
