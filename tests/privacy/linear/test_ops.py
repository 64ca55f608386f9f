"""OPS ridge (_linear._ops): the worst-case calibration of gamma is exact and audited; the estimator."""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone

from sklearn_bayes.privacy import OnePosteriorSampleRidge
from sklearn_bayes.privacy._core._clipping import clip_rows
from sklearn_bayes.privacy._core._pld import ops_ridge_delta, ops_ridge_epsilon
from sklearn_bayes.privacy._linear._base import _replace_one_pair_budget
from sklearn_bayes.privacy._linear._ops import calibrate_ops_gamma, ops_worst_case_delta



# the OPS ridge test data and closed forms, shared with tests/privacy/core/test_pld.py (loaded by path)
_spec = importlib.util.spec_from_file_location("_ops_ridge_data", Path(__file__).parents[1] / "_ops_ridge_data.py")
_data = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_data)
_gen, _unit_ball_data, _posterior, _mu_r = _data._gen, _data._unit_ball_data, _data._posterior, _data._mu_r


def test_calibrated_gamma_is_tight():
    eps0, delta0, mu_max, r_max = 0.25, 2e-7, 0.01, 8.0
    g = calibrate_ops_gamma(eps0, delta0, mu_max, r_max)
    assert ops_worst_case_delta(eps0, g, mu_max, r_max) <= delta0
    assert ops_worst_case_delta(eps0, g * 1.01, mu_max, r_max) > delta0


def _worst_records(Z, yz, lam):
    """Records of the domain with the largest leverage (smallest eigenvector) and residual."""
    H = Z.T @ Z + lam * np.eye(Z.shape[1])
    theta = np.linalg.solve(H, Z.T @ yz)
    w, V = np.linalg.eigh(H)
    out = []
    for s in (1.0, -1.0):
        x = s * V[:, 0]
        y = -np.sign(x @ theta) if x @ theta != 0 else 1.0
        out.append((x, y))
    return out


@pytest.mark.parametrize("n, d, epsilon, delta", [(60, 3, 1.0, 1e-6), (400, 5, 0.5, 1e-5)])
def test_ops_ridge_never_exceeds_its_claim(n, d, epsilon, delta):
    """Exact δ(ε₀) of every add/remove pair around random and worst-case records <= δ₀."""
    est = OnePosteriorSampleRidge(
        epsilon=epsilon, delta=delta, ridge_lambda=200.0, x_bound=1.0, y_bound=1.0, fit_intercept=False,
        random_state=_gen(0),
    )
    X, y = _unit_ball_data(n, d, seed=7)
    est.fit(X, y)
    eps0, delta0 = _replace_one_pair_budget(epsilon, delta)
    assert (1 + math.exp(eps0)) * delta0 == pytest.approx(delta) and 2 * eps0 == pytest.approx(epsilon)
    rng = _gen(8)
    for trial in range(10):
        Z, yz = _unit_ball_data(n - 1, d, seed=100 + trial)
        records = _worst_records(Z, yz, est.lambda_)
        for _ in range(4):
            x = clip_rows(rng.normal(size=(1, d)), 1.0)[0]
            records.append((x, rng.uniform(-1, 1)))
        for x, yy in records:
            mu, r = _mu_r(Z, yz, x, yy, est.lambda_)
            assert mu <= est.worst_case_["mu_max"] and abs(r) <= est.worst_case_["r_max"]
            assert ops_ridge_delta(eps0, mu, math.sqrt(est.gamma_ * mu) * abs(r)) <= delta0


def test_replace_one_audit_by_monte_carlo():
    """The d-dim replace-one pair (Z∪z, Z∪z') at a large δ: Monte Carlo δ(ε) below the claim."""
    epsilon, delta = 1.0, 0.02
    n, d = 50, 2
    Z, yz = _unit_ball_data(n - 1, d, seed=9)
    est = OnePosteriorSampleRidge(
        epsilon=epsilon, delta=delta, ridge_lambda=30.0, x_bound=1.0, y_bound=1.0, fit_intercept=False,
        random_state=_gen(0),
    ).fit(Z[:2], yz[:2])
    # gamma calibrated for n = 2 is larger than for n = 50; recalibrate for n = 50 as fit would
    eps0, delta0 = _replace_one_pair_budget(epsilon, delta)
    gamma = calibrate_ops_gamma(eps0, delta0, 1 / 30.0, 1 + math.sqrt((n - 1) / 30.0))
    (x1, y1), (x2, y2) = _worst_records(Z, yz, est.lambda_)
    m1, S1, _ = _posterior(np.vstack([Z, x1]), np.append(yz, y1), 30.0, gamma)
    m2, S2, _ = _posterior(np.vstack([Z, x2]), np.append(yz, y2), 30.0, gamma)
    p1, p2 = stats.multivariate_normal(m1, S1), stats.multivariate_normal(m2, S2)
    for (a, pa), (b, pb) in (((m1, p1), (m2, p2)), ((m2, p2), (m1, p1))):
        theta = pa.rvs(size=200_000, random_state=11)
        L = pa.logpdf(theta) - pb.logpdf(theta)
        vals = np.maximum(0.0, 1.0 - np.exp(epsilon - L))
        assert vals.mean() <= delta + 5 * vals.std() / math.sqrt(vals.size)


# ------------------------------------------------------------------ OPS ridge estimator


def test_ops_draw_has_the_posterior_law():
    """Many seeds: mean and covariance of the draws are those of N(H⁻¹Xᵀy, (γH)⁻¹)."""
    X, y = _unit_ball_data(80, 2, seed=12)
    est = OnePosteriorSampleRidge(ridge_lambda=50.0, gamma=2.0, epsilon=5.0, delta=1e-3, x_bound=1.0,
                                  y_bound=1.0, fit_intercept=False)
    mean, cov, _ = _posterior(X, y, 50.0, 2.0)
    draws = np.array([clone(est).set_params(random_state=_gen(s)).fit(X, y).coef_ for s in range(2000)])
    se = np.sqrt(np.diag(cov) / draws.shape[0])
    assert np.all(np.abs(draws.mean(0) - mean) < 5 * se)
    # sample variances: relative SE sqrt(2/(m-1)) ~ 3.2%
    np.testing.assert_allclose(draws.var(0, ddof=1), np.diag(cov), rtol=5 * math.sqrt(2 / 1999))


def test_ops_gamma_given_is_checked():
    X, y = _unit_ball_data(100, 2, seed=13)
    base = dict(epsilon=1.0, delta=1e-6, ridge_lambda=100.0, x_bound=1.0, y_bound=1.0, random_state=_gen(0))
    g = OnePosteriorSampleRidge(**base).fit(X, y).gamma_
    OnePosteriorSampleRidge(**base, gamma=0.9 * g).fit(X, y)
    with pytest.raises(ValueError, match="gamma=.*not .*-DP"):
        OnePosteriorSampleRidge(**base, gamma=1.1 * g).fit(X, y)


def test_ops_small_lambda_refused_with_usable_value():
    X, y = _unit_ball_data(50, 2, seed=14)
    with pytest.raises(ValueError, match=r"ridge_lambda=1\.0 is too small.*ridge_lambda >= "):
        OnePosteriorSampleRidge(ridge_lambda=1.0, x_bound=1.0, y_bound=1.0).fit(X, y)


def test_per_instance_epsilon_is_exact_and_below_the_worst_case():
    X, y = _unit_ball_data(120, 3, seed=19)
    est = OnePosteriorSampleRidge(ridge_lambda=100.0, x_bound=1.0, y_bound=1.0, fit_intercept=False,
                                  random_state=_gen(0)).fit(X, y)
    eps_i = est.per_instance_epsilon(X, y, delta=1e-6)
    for i in (0, 7, 50):
        Z, yz = np.delete(X, i, 0), np.delete(y, i)
        mu, r = _mu_r(Z, yz, X[i], y[i], est.lambda_)
        assert eps_i[i] == pytest.approx(ops_ridge_epsilon(1e-6, mu, math.sqrt(est.gamma_ * mu) * abs(r)), rel=1e-6)
    eps0, delta0 = _replace_one_pair_budget(1.0, 1e-6)
    assert np.all(est.per_instance_epsilon(X, y, delta=delta0) <= eps0)
    with pytest.raises(ValueError, match="delta"):
        est.per_instance_epsilon(X, y, delta=2.0)
