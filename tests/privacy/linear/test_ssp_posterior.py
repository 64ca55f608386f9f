"""AdaOPSRegressor(calibration="ssp_posterior"): noisy sufficient statistics + noise-aware posterior mean.

Privacy is that of one Gaussian mechanism on (XᵀX, Xᵀy, yᵀy) -- checked here on adversarial
neighbours (joint sensitivity), by the exact δ(ε) of the release and by a Monte Carlo audit of
the implementation's own noise -- and everything after the release is post-processing.
"""

import math
import warnings

import numpy as np
import pytest

from sklearn_bayes.exceptions import SeededNoiseWarning
from sklearn_bayes.privacy import AdaOPSRegressor, PrivacyLedger
from sklearn_bayes.privacy._core._clipping import clip_rows
from sklearn_bayes.privacy._core._pld import analytic_gaussian_delta, gaussian_hockey_stick
from sklearn_bayes.privacy._linear._ssp_posterior import (
    noise_aware_posterior,
    release_sufficient_statistics,
    ssp_joint_sensitivity_sq,
    ssp_posterior_budget,
)


def _fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        return AdaOPSRegressor(**{"x_bound": 1.0, "y_bound": 1.0, "calibration": "ssp_posterior", **kw}).fit(X, y)


def _upper(M):
    return M[np.triu_indices(M.shape[0])]


def _whitened_shift_sq(x, y, x2, y2, budget):
    """μ² of the joint release between neighbours differing in (x, y) vs (x2, y2)."""
    dA = _upper(np.outer(x, x) - np.outer(x2, x2))
    db = y * x - y2 * x2
    dq = y * y - y2 * y2
    return (dA @ dA / budget["sigma_gram"] ** 2 + db @ db / budget["sigma_xty"] ** 2
            + dq * dq / budget["sigma_yty"] ** 2)


def _adversarial_pairs(p, rng, k=4000):
    """Random and structured neighbour records: unit and sub-unit rows, |y| <= 1, all angles."""
    pairs = []
    for _ in range(k):
        x = rng.normal(size=p)
        x /= np.linalg.norm(x)
        if rng.random() < 0.5:  # x' at a chosen angle to x, in a random plane
            t = rng.uniform(-1, 1)
            o = rng.normal(size=p)
            o -= (o @ x) * x
            x2 = t * x + math.sqrt(1 - t * t) * o / np.linalg.norm(o)
        else:
            x2 = clip_rows(rng.normal(size=(1, p)) * rng.uniform(0.2, 2.0), 1.0)[0]
            x = x * min(1.0, rng.uniform(0.5, 1.5))
        y, y2 = rng.choice([-1.0, 1.0, rng.uniform(-1, 1)]), rng.choice([-1.0, 1.0, rng.uniform(-1, 1)])
        pairs.append((x, y, x2, y2))
    # basis vectors and the bound's maximiser angle t = v/u, opposite targets
    e = np.eye(p)
    for t in (0.0, 1 / math.sqrt(2.0), 2 ** -0.25, 0.5, 1.0):
        pairs.append((e[0], 1.0, t * e[0] + math.sqrt(1 - t * t) * e[1], -1.0))
    return pairs


@pytest.mark.parametrize("eps, delta", [(0.1, 1e-6), (1.0, 1e-6), (2.0, 1e-5), (1.0, 1e-3)])
def test_budget_is_one_gaussian_mechanism_at_the_target(eps, delta):
    b = ssp_posterior_budget(eps, delta)
    u, v, w = (1.0 / b[k] ** 2 for k in ("sigma_gram", "sigma_xty", "sigma_yty"))
    mu_sq = ssp_joint_sensitivity_sq(u, v, w)
    assert mu_sq == pytest.approx(b["mu"] ** 2, rel=1e-12)
    # the composed release: a Gaussian mechanism of ratio sqrt(mu_sq) is (eps, delta)-DP
    assert analytic_gaussian_delta(1.0 / math.sqrt(mu_sq), eps) <= delta * (1 + 1e-9)
    # and the budget is used: 1 % more mu would exceed delta
    assert analytic_gaussian_delta(1.0 / (1.01 * math.sqrt(mu_sq)), eps) > delta


@pytest.mark.parametrize("p", [2, 3, 6])
def test_joint_sensitivity_bounds_every_neighbour_pair(p):
    """The derived sup μ² is never exceeded, and the separate sensitivities (√2, 2, 1) are looser."""
    b = ssp_posterior_budget(1.0, 1e-6)
    u, v, w = (1.0 / b[k] ** 2 for k in ("sigma_gram", "sigma_xty", "sigma_yty"))
    bound = ssp_joint_sensitivity_sq(u, v, w)
    worst = max(_whitened_shift_sq(*pair, b) for pair in _adversarial_pairs(p, np.random.default_rng(p)))
    assert worst <= bound * (1 + 1e-12)
    assert bound < 2 * u + 4 * v + w
    # the bound is close to attained (only the y'y term and the diagonal part are slack)
    assert worst >= 0.85 * bound


def test_exact_delta_of_the_worst_pair_is_within_the_target():
    for eps, delta in [(0.5, 1e-6), (1.0, 1e-6), (2.0, 1e-5)]:
        b = ssp_posterior_budget(eps, delta)
        m = math.sqrt(max(_whitened_shift_sq(*pair, b) for pair in _adversarial_pairs(4, np.random.default_rng(0))))
        assert gaussian_hockey_stick(0.0, 1.0, m, 1.0, eps) <= delta * (1 + 1e-9)
        assert gaussian_hockey_stick(m, 1.0, 0.0, 1.0, eps) <= delta * (1 + 1e-9)


def test_monte_carlo_audit_of_the_release_on_worst_case_neighbours():
    """δ̂(ε) = E_P[(1 - e^{ε - L})₊] from the implementation's own releases on a worst-case pair
    equals the exact δ(ε) of its whitened shift (within 4 standard errors) and is <= the target."""
    eps, delta = 1.0, 1e-3  # a δ large enough to resolve by Monte Carlo
    b = ssp_posterior_budget(eps, delta)
    rng = np.random.default_rng(7)
    p = 3
    Z = clip_rows(rng.normal(size=(30, p)) * 0.5, 1.0)
    t = np.clip(rng.normal(size=30) * 0.5, -1, 1)
    # worst pair of the search, in the last row
    pairs = _adversarial_pairs(p, np.random.default_rng(1))
    x, y, x2, y2 = max(pairs, key=lambda pr: _whitened_shift_sq(*pr, b))
    Z1, t1 = Z.copy(), t.copy()
    Z2, t2 = Z.copy(), t.copy()
    Z1[-1], t1[-1], Z2[-1], t2[-1] = x, y, x2, y2
    f1 = np.concatenate([_upper(Z1.T @ Z1), Z1.T @ t1, [t1 @ t1]])
    f2 = np.concatenate([_upper(Z2.T @ Z2), Z2.T @ t2, [t2 @ t2]])
    k = p * (p + 1) // 2
    scale = np.concatenate([np.full(k, b["sigma_gram"]), np.full(p, b["sigma_xty"]), [b["sigma_yty"]]])
    m = float(np.linalg.norm((f1 - f2) / scale))
    n_draws = 200_000
    gen = np.random.default_rng(11)
    losses = np.empty(n_draws)
    for i in range(n_draws):
        A, xb, q = release_sufficient_statistics(Z1, t1, b, gen)
        o = np.concatenate([_upper(A), xb, [q]])
        losses[i] = 0.5 * (np.sum(((o - f2) / scale) ** 2) - np.sum(((o - f1) / scale) ** 2))
    terms = np.maximum(0.0, 1.0 - np.exp(eps - losses))
    est, se = terms.mean(), terms.std(ddof=1) / math.sqrt(n_draws)
    exact = gaussian_hockey_stick(0.0, 1.0, m, 1.0, eps)
    assert abs(est - exact) <= 4 * se
    assert exact <= delta
    assert est <= delta + 4 * se


def test_noise_free_statistics_give_the_bayesian_ridge_posterior():
    """Without privacy noise the model is Bayesian linear regression with prior N(0, τ²I) and noise
    variance s²: the mean is ridge at λ = s²/τ², the covariance s²(XᵀX + λI)⁻¹, and s² is the
    mean squared residual of the mean (at the fixed point)."""
    rng = np.random.default_rng(3)
    Z = clip_rows(rng.normal(size=(500, 4)) * 0.5, 1.0)
    t = np.clip(Z @ np.array([0.3, -0.2, 0.1, 0.4]) + 0.05 * rng.normal(size=500), -1, 1)
    G = Z.T @ Z
    mean, cov, tau2, s2 = noise_aware_posterior(G, Z.T @ t, t @ t, 500, 1e-9, 1e-9)
    H = G + (s2 / tau2) * np.eye(4)
    np.testing.assert_allclose(mean, np.linalg.solve(H, Z.T @ t), rtol=1e-6)
    np.testing.assert_allclose(cov, s2 * np.linalg.inv(H), rtol=1e-6)
    assert s2 == pytest.approx(np.mean((t - Z @ mean) ** 2), rel=1e-6)


@pytest.mark.parametrize("ratio", [None, 9.0, 0.3])
def test_rank_one_intercept_prior_equals_the_dense_posterior(ratio):
    """The eigenbasis / Sherman-Morrison computation equals the dense one: empirical Bayes over
    the same τ² grid with T = τ² diag(1, ..., 1, k), mean (ÃS⁻¹Ã + T⁻¹)⁻¹ÃS⁻¹b̃, same passes."""
    from sklearn_bayes.privacy._linear._ssp_posterior import _N_PASSES, _TAU2_GRID

    rng = np.random.default_rng(12)
    p, n, sA, sb = 6, 300, 0.5, 1.0
    Z = rng.normal(size=(n, p)) * 0.3
    Z[:, -1] = 0.3
    t = Z @ rng.normal(size=p) * 0.5 + 0.1 * rng.normal(size=n)
    E = rng.normal(size=(p, p)) * sA
    A = Z.T @ Z + np.triu(E) + np.triu(E, 1).T
    b = Z.T @ t + sb * rng.normal(size=p)
    q = float(t @ t)
    mean, cov, tau2, s2 = noise_aware_posterior(A, b, q, n, sA, sb, intercept_ratio=ratio)
    a, V = np.linalg.eigh(A)
    k = 1.0 if ratio is None else ratio
    theta_sq, s2_ref = 0.0, min(max(q / n, 0.0), 1.0)
    for _ in range(_N_PASSES):
        S = (V * (sb**2 + sA**2 * theta_sq + s2_ref * np.maximum(a, 0.0))) @ V.T
        best = None
        for t2 in _TAU2_GRID:
            T = np.full(p, t2)
            T[-1] *= k
            C = (A * T) @ A + S
            ll = -0.5 * (np.linalg.slogdet(C)[1] + b @ np.linalg.solve(C, b))
            best = (ll, T, t2) if best is None or ll > best[0] else best
        P = A @ np.linalg.solve(S, A) + np.diag(1.0 / best[1])
        m_ref = np.linalg.solve(P, A @ np.linalg.solve(S, b))
        c_ref = np.linalg.inv(P)
        theta_sq = float(m_ref @ m_ref + np.trace(c_ref))
        s2_ref = min(max((q - 2 * b @ m_ref + m_ref @ A @ m_ref) / n, 0.0), 1.0)
    np.testing.assert_allclose(mean, m_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(cov, c_ref, rtol=1e-8, atol=1e-14)
    assert (tau2, s2) == (best[2], pytest.approx(s2_ref, rel=1e-9))


def test_indefinite_noisy_gram_is_handled():
    """A noisy Gram with negative eigenvalues (small n, small ε) still gives a finite, shrunk estimate."""
    rng = np.random.default_rng(4)
    Z = clip_rows(rng.normal(size=(20, 5)) * 0.3, 1.0)
    t = np.clip(rng.normal(size=20) * 0.3, -1, 1)
    b = ssp_posterior_budget(0.1, 1e-6)
    A, xb, q = release_sufficient_statistics(Z, t, b, rng)
    assert np.linalg.eigvalsh(A).min() < 0
    mean, cov, _, _ = noise_aware_posterior(A, xb, q, 20, b["sigma_gram"], b["sigma_xty"])
    assert np.all(np.isfinite(mean)) and np.all(np.linalg.eigvalsh(cov) > 0)


def test_output_depends_on_the_data_only_through_the_released_statistics():
    """(X, y) and (-X, -y) have bit-identical XᵀX, Xᵀy and yᵀy: the same noise gives the same fit."""
    rng = np.random.default_rng(5)
    X = rng.uniform(-0.5, 0.5, size=(300, 3))
    y = X @ np.array([1.0, -0.5, 0.2]) + 0.1 * rng.normal(size=300)
    a = _fit(X, y, fit_intercept=False, random_state=np.random.default_rng(9))
    b = _fit(-X, -y, fit_intercept=False, random_state=np.random.default_rng(9))
    np.testing.assert_array_equal(a.coef_, b.coef_)
    c = _fit(X[::-1] * 1.0, y[::-1] * 1.0, fit_intercept=False, random_state=np.random.default_rng(10))
    assert not np.array_equal(a.coef_, c.coef_)  # other noise, other fit


def test_ledger_and_attributes():
    rng = np.random.default_rng(6)
    X = rng.uniform(-1, 1, size=(2000, 3))
    y = X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.normal(size=2000)
    shared = PrivacyLedger()
    est = _fit(X, y, epsilon=0.7, delta=1e-7, x_bound=2.0, y_bound=2.0, random_state=np.random.default_rng(0),
               ledger=shared)
    assert (est.epsilon_spent_, est.delta_spent_) == (0.7, 1e-7)
    recs = est.ledger_.records
    assert [r["mechanism"] for r in recs] == ["AdaOPSRegressor/noisy_sufficient_statistics"]
    assert (recs[0]["epsilon"], recs[0]["delta"]) == (0.7, 1e-7)
    assert [r["mechanism"] for r in shared.records] == ["AdaOPSRegressor/noisy_sufficient_statistics"]
    b = ssp_posterior_budget(0.7, 1e-7, p=4)  # the grid of 3 features and the intercept column
    assert est.noise_scale_gram_ == b["sigma_gram"] and est.noise_scale_xty_ == b["sigma_xty"]
    assert est.gamma_ is None and est.lambda_ is None
    with pytest.raises(ValueError, match="per_instance_epsilon.*ssp_posterior"):
        est.per_instance_epsilon(X, y)
    # the posterior-draw calibrations clear the SSP attributes
    draw = _fit(X, y, x_bound=2.0, y_bound=2.0, calibration="released_norm", random_state=np.random.default_rng(0))
    assert draw.noise_scale_gram_ is None and draw.gamma_ > 0


def test_default_is_the_noisy_statistics_posterior():
    assert AdaOPSRegressor().calibration == "ssp_posterior"


def test_beats_adassp_at_n_1e4():
    """Regression test for the issue's target (the released_norm draw was 4.1x AdaSSP here): at
    n = 10⁴, d = 5, ε = 1 the paired excess test MSE over OLS of the SSP posterior is below
    AdaSSP's by more than 3 standard errors over 20 repetitions."""
    from sklearn_bayes.experiments import dp_regression as D

    diffs = []
    for rep in range(20):
        X, y, _, bounds = D.synthetic_regression(int(10_000 / 0.75), 5, seed=rep)
        tr, te = D.split(X.shape[0], rep)
        Z, t = D.design(X[tr], bounds["x_bound"]), np.clip(y[tr], -1.5, 1.5) / 1.5
        Zt = D.design(X[te], bounds["x_bound"], clip=False)
        mse = lambda pred: float(np.mean((pred - y[te]) ** 2))  # noqa: E731
        ols = mse(1.5 * Zt @ D.ols(Z, t))
        ada = mse(1.5 * Zt @ D.adassp(Z, t, 1.0, 1e-6, np.random.default_rng(100 + rep)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeededNoiseWarning)
            # the default estimator (calibration="ssp_posterior"; on the old default, the
            # released_norm draw, this assertion fails: 4.1x AdaSSP's median here)
            est = AdaOPSRegressor(epsilon=1.0, random_state=np.random.default_rng(200 + rep), **bounds)
            est.fit(X[tr], y[tr])
        diffs.append((mse(est.predict(X[te])) - ols) - (ada - ols))
    diffs = np.array(diffs)
    assert diffs.mean() + 3 * diffs.std(ddof=1) / math.sqrt(len(diffs)) < 0


def test_design_rows_are_in_the_unit_ball_and_coefficients_come_back_in_original_units():
    """The SSP design ``[√0.9 x/x_bound, √0.1]`` has rows of norm <= 1 (the sensitivity's premise),
    and at a large ε the coefficients and intercept are least squares in the original units."""
    rng = np.random.default_rng(8)
    X = rng.uniform(-1, 1, size=(20_000, 3)) * 2.0
    y = X @ np.array([0.5, -0.3, 0.2]) + 0.7 + 0.1 * rng.normal(size=20_000)
    est = _fit(X, y, epsilon=50.0, x_bound=4.0, y_bound=5.0, random_state=np.random.default_rng(0))
    Xs = est._scaled_design(X, 0.9)
    assert np.linalg.norm(Xs, axis=1).max() <= 1.0 + 1e-12
    assert Xs[0, -1] == pytest.approx(math.sqrt(0.1))
    ols = np.linalg.lstsq(np.hstack([X, np.ones((len(X), 1))]), y, rcond=None)[0]
    # noise of the release at eps = 50: about 2e-4 per coefficient here; 5e-3 is > 10 standard deviations
    np.testing.assert_allclose(est.coef_, ols[:3], atol=5e-3)
    assert est.intercept_ == pytest.approx(ols[3], abs=5e-3)


def test_gaussian_delta_keeps_a_positive_delta_where_the_terms_nearly_cancel():
    """The certificate of the grid release at a small ratio μ and ε near 0: δ(0) = erf(μ/(2√2)) (the
    total variation), exact to a few roundings; the Φ - e^ε Φ form from two logarithms gave 0 at
    μ = 1e-20 and kept 4 digits at μ = 1e-12 (HQI)."""
    from scipy import special

    from sklearn_bayes.privacy._linear._ssp_posterior import gaussian_delta

    for mu in (1e-300, 1e-20, 1e-12, 1e-6, 0.5, 3.0):
        tv = float(special.erf(mu / (2.0 * np.sqrt(2.0))))
        # never below the exact δ (erf's rounding: 1e-15), at most 1.01e-9 above it (the accountant's margin)
        assert tv * (1 - 1e-15) <= gaussian_delta(mu, 0.0) <= tv * (1 + 1.01e-9 + 1e-15)
    # a negative ε (the snapping's ε - (μ + ω)ω may be one) keeps its closed form: δ >= 1 - e^ε
    assert gaussian_delta(1e-3, -0.5) >= -np.expm1(-0.5)


@pytest.mark.parametrize("mu", [1e-12, 1e-8, 1e-6, 0.5, 3.0])
def test_gaussian_delta_at_a_negative_epsilon_is_never_below_the_exact_value(mu):
    """The snapping's ε - (μ + ω)ω may be negative: that path kept the two-logarithm form, which understated
    δ = 4.0e-13 by 3.5e-4 (relative) at μ = 1e-12, ε = -1e-14.  Against 60-digit arithmetic: never below,
    at most 1.01e-9 above (the accountant's margin)."""
    mp = pytest.importorskip("mpmath")
    from sklearn_bayes.privacy._linear._ssp_posterior import gaussian_delta

    for eps in (-1e-14, -1e-12, -1e-8, -1e-4, -0.5):
        with mp.workdps(60):
            e, m = mp.mpf(eps), mp.mpf(mu)
            ref = mp.ncdf(-e / m + m / 2) - mp.e**e * mp.ncdf(-e / m - m / 2)
        got = gaussian_delta(mu, eps)
        assert ref <= mp.mpf(got) <= ref * (1 + 1.01e-9), (mu, eps, got, float(ref))
