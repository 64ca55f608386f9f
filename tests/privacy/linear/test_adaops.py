"""AdaOPSRegressor (_linear._adaops): budgets, ledgers, the calibrations' releases on fitted models, utility."""

import math
import warnings

import numpy as np
import pytest
from scipy import special
from sklearn.base import clone
from sklearn.pipeline import make_pipeline

from sklearn_bayes.exceptions import SeededNoiseWarning
from sklearn_bayes.privacy import AdaOPSRegressor, OnePosteriorSampleRidge, PrivacyLedger, RowNormClipper
from sklearn_bayes.privacy._core._clipping import clip_rows
from sklearn_bayes.privacy._core._pld import analytic_gaussian_delta, ops_ridge_delta
from sklearn_bayes.privacy._linear._adaops_accounting import adaops_budget
from sklearn_bayes.privacy._linear._ops import ops_worst_case_delta



def _gen(seed=0):
    return np.random.default_rng(seed)


def _unit_ball_data(n, d, seed):
    rng = _gen(seed)
    X = clip_rows(rng.normal(size=(n, d)) / math.sqrt(d), 1.0)
    y = np.clip(X @ rng.normal(size=d) + 0.3 * rng.standard_normal(n), -1, 1)
    return X, y


def _mu_r(Z, yz, x, y, lam):
    """Out-of-sample leverage and residual of (x, y) with respect to Z."""
    H = Z.T @ Z + lam * np.eye(Z.shape[1])
    theta = np.linalg.solve(H, Z.T @ yz)
    return float(x @ np.linalg.solve(H, x)), float(y - x @ theta)


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


def test_ledgers_record_each_release():
    X, y = _unit_ball_data(300, 2, seed=18)
    shared = PrivacyLedger()
    ops = OnePosteriorSampleRidge(x_bound=1.0, y_bound=1.0, random_state=_gen(0), ledger=shared).fit(X, y)
    ada = AdaOPSRegressor(epsilon=0.5, delta=1e-5, x_bound=1.0, y_bound=1.0, random_state=_gen(0), ledger=shared)
    ada.fit(X, y)
    assert ops.ledger_.epsilon_spent == ops.epsilon_spent_ == 1.0
    assert ada.ledger_.epsilon_spent == pytest.approx(0.5)
    assert sum(r["delta"] for r in ada.ledger_.records) == pytest.approx(1e-5)
    # OPS: one release; AdaOPS (released_norm): its three releases composed into one record
    assert shared.epsilon_spent == pytest.approx(1.5) and shared.n_releases == 2
    assert clone(ada).ledger is shared


# ------------------------------------------------------------------ AdaOPS


def test_adaops_budget_composes_to_the_target():
    for eps, delta in [(0.1, 1e-6), (1.0, 1e-6), (2.0, 1e-5)]:
        b = adaops_budget(eps, delta)
        assert b["eps_lambda"] + b["eps_ops"] <= eps * (1 + 1e-12)
        assert b["delta_lambda"] + b["delta_event"] + b["delta_ops"] <= delta * (1 + 1e-12)
        assert 2 * b["eps0"] == pytest.approx(b["eps_ops"])
        assert (1 + math.exp(b["eps0"])) * b["delta0"] == pytest.approx(b["delta_ops"])


def test_adaops_releases_compose_to_target_on_fitted_models():
    """σ₁ is (ε/2, δ/4) exactly; the margin event has probability δ/4; the draw's worst case <= δ₀."""
    X, y = _unit_ball_data(3000, 4, seed=20)
    for eps, delta in [(0.5, 1e-6), (1.0, 1e-6), (2.0, 1e-5)]:
        est = AdaOPSRegressor(epsilon=eps, delta=delta, x_bound=1.0, y_bound=1.0, calibration="thesis",
                              random_state=_gen(1)).fit(X, y)
        b = adaops_budget(eps, delta)
        assert analytic_gaussian_delta(est.noise_scale_lambda_, b["eps_lambda"]) <= b["delta_lambda"]
        assert special.ndtr(-(est.margin_ - 1.0) / est.noise_scale_lambda_) <= b["delta_event"] * (1 + 1e-9)
        n = X.shape[0]
        worst = ops_worst_case_delta(b["eps0"], est.gamma_, 1 / est.h_, 1 + math.sqrt((n - 1) / est.h_))
        assert worst <= b["delta0"]
        total_eps = sum(r["epsilon"] for r in est.ledger_.records)
        total_delta = sum(r["delta"] for r in est.ledger_.records)
        assert total_eps <= eps * (1 + 1e-12) and total_delta <= delta * (1 + 1e-12)


def test_adaops_lambda_is_never_negative():
    """λ_n >= 0 for every noise draw, including rank-deficient data (thesis: min{0, …} <= 0)."""
    X, y = _unit_ball_data(500, 3, seed=21)
    Xdeg = np.hstack([X, X[:, :1]]) / math.sqrt(2)  # duplicated column: lambda_min(X^T X) = 0
    for data in ((X, y), (Xdeg, y)):
        for kappa in (None, 5.0, 1e4):
            for s in range(15):
                est = AdaOPSRegressor(kappa=kappa, x_bound=1.0, y_bound=1.0, calibration="released_norm",
                                      random_state=_gen(s)).fit(*data)
                assert est.lambda_ >= 0.0 and np.all(np.isfinite(est.coef_))
                # the thesis's min{0, ...} would have been <= 0
                assert min(0.0, est.h_ - est.lambda_min_noisy_ + est.margin_) <= 0.0


def test_adaops_pairs_audited_on_the_event():
    """Given λ̃, every add/remove pair with λ_min(Z) + λ_n >= h is (ε₀, δ₀) exactly."""
    n, d = 400, 3
    X, y = _unit_ball_data(n, d, seed=22)
    est = AdaOPSRegressor(x_bound=1.0, y_bound=1.0, fit_intercept=False, calibration="thesis",
                          random_state=_gen(3)).fit(X, y)
    b = adaops_budget(1.0, 1e-6)
    rng = _gen(23)
    for trial in range(10):
        Z, yz = _unit_ball_data(n - 1, d, seed=200 + trial)
        lam_min = np.linalg.eigvalsh(Z.T @ Z)[0]
        if lam_min + est.lambda_ < est.h_:
            continue
        recs = _worst_records(Z, yz, est.lambda_) + [
            (clip_rows(rng.normal(size=(1, d)), 1.0)[0], rng.uniform(-1, 1)) for _ in range(3)
        ]
        for x, yy in recs:
            mu, r = _mu_r(Z, yz, x, yy, est.lambda_)
            assert ops_ridge_delta(b["eps0"], mu, math.sqrt(est.gamma_ * mu) * abs(r)) <= b["delta0"]


def test_adaops_gamma_grows_linearly_in_n():
    """γ_n ∝ n (asymptotic efficiency): quadrupling n multiplies γ by about 4 (thesis calibration,
    γ = c² h²/n with h ∝ n); with the released norm γ = c² h/R² grows at least linearly (R and
    the leverage term fall towards their limits as h grows)."""
    gammas = {"thesis": [], "released_norm": []}
    for cal in gammas:
        rng = _gen(24)
        for n in (20_000, 80_000):
            X = rng.uniform(-1, 1, size=(n, 3))
            y = X @ np.array([0.3, -0.2, 0.1]) + 0.1 * rng.standard_normal(n)
            est = AdaOPSRegressor(x_bound=2.0, y_bound=2.0, calibration=cal, random_state=_gen(0)).fit(X, y)
            gammas[cal].append(est.gamma_)
    assert 3.0 < gammas["thesis"][1] / gammas["thesis"][0] < 5.0
    assert gammas["released_norm"][1] / gammas["released_norm"][0] > 4.0
    assert gammas["released_norm"][1] > 10 * gammas["thesis"][1]


def test_adaops_is_consistent():
    """Large n: the released coefficients are close to the truth (error ~ (1 + 1/γ) OLS error)."""
    rng = _gen(25)
    n = 200_000
    X = rng.uniform(-1, 1, size=(n, 2))
    beta = np.array([0.4, -0.3])
    y = X @ beta + 0.1 + 0.2 * rng.standard_normal(n)
    est = AdaOPSRegressor(epsilon=1.0, x_bound=1.5, y_bound=2.0, random_state=_gen(1)).fit(X, y)
    np.testing.assert_allclose(est.coef_, beta, atol=0.05)
    assert est.intercept_ == pytest.approx(0.1, abs=0.05)


def test_pipeline_with_clipper():
    X, y = _unit_ball_data(2000, 3, seed=27)
    # an unseeded generator: a seeded one whose state already drew noise in this process
    # (another test) would rightly warn that it replays that noise
    pipe = make_pipeline(RowNormClipper(1.0), AdaOPSRegressor(x_bound=1.0, y_bound=1.0,
                                                              random_state=np.random.default_rng()))
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeededNoiseWarning)
        pipe.fit(X * 3, y)
    assert pipe.predict(X).shape == (2000,)


# ------------------------------------------------------------------ benchmark baselines


def test_baselines_of_the_benchmark_are_sound():
    """Unit-ball design; the constrained ridge respects its radius; every baseline -> OLS as ε grows."""
    from sklearn_bayes.experiments import dp_regression as D

    X, y, f, bounds = D.synthetic_regression(4000, 3, seed=0)
    Z = D.design(X, bounds["x_bound"])
    assert np.all(np.linalg.norm(Z, axis=1) <= 1 + 1e-12)
    t = np.clip(y, -1.5, 1.5) / 1.5
    G, g = Z.T @ Z, Z.T @ t
    free = D._ridge_on_ball(G, g, 1.0, 100.0)
    np.testing.assert_allclose(free, np.linalg.solve(G + np.eye(4), g), rtol=1e-10)
    small = D._ridge_on_ball(G, g, 1.0, 0.1)
    assert np.linalg.norm(small) == pytest.approx(0.1, rel=1e-8)
    theta_ols = D.ols(Z, t)
    rng = _gen(0)
    for fn in (D.ssp, D.adassp, D.objective_perturbation):
        np.testing.assert_allclose(fn(Z, t, 1e6, 0.5, rng), theta_ols, atol=1e-3)
    s = 2.0 * (t > np.median(t)) - 1
    ref = D._logistic_fit(Z, s, 1 / math.sqrt(len(s)))
    np.testing.assert_allclose(D.logistic_output_perturbation(Z, s, 1e9, rng), ref, atol=1e-3)


def test_adaops_default_floor_minimises_the_public_risk_proxy():
    """h is chosen from λ̃ and public quantities only: the grid point of least proxy risk."""
    from sklearn_bayes.privacy._core._pld import ops_ridge_max_c
    from sklearn_bayes.privacy._linear._adaops_accounting import adaops_risk_proxy

    X, y = _unit_ball_data(3000, 4, seed=29)
    est = AdaOPSRegressor(x_bound=1.0, y_bound=1.0, fit_intercept=False, calibration="thesis",
                          random_state=_gen(2)).fit(X, y)
    b = adaops_budget(1.0, 1e-6)
    h_floor = max(4 * (1 + math.log(4e6)), 1.0)
    h_base = max(est.lambda_min_noisy_ - est.margin_, h_floor)
    assert est.h_ >= h_base * (1 - 1e-12)
    c = ops_ridge_max_c(b["eps0"], b["delta0"], 1 / h_base)
    args = (est.lambda_min_noisy_, est.margin_, 3000, 4, b["eps0"], b["delta0"])
    grid = h_base * np.geomspace(1.0, 1e4, 41)
    best = min(adaops_risk_proxy(h, *args, c=c) for h in grid)
    assert adaops_risk_proxy(est.h_, *args, c=c) == pytest.approx(best)


def test_adaops_small_data_shrinks_instead_of_drowning_in_noise():
    """Regression: n = 1e4, d = 20, ε = 1 had test MSE ≈ 12.7 (200 × E y²) with h = λ̃ - margin;
    the risk-proxy floor (bias capped by that of predicting 0) keeps it near E y²."""
    from sklearn_bayes.experiments import dp_regression as D

    X, y, f, bounds = D.synthetic_regression(13_334, 20, seed=0)
    tr, te = D.split(X.shape[0], 0)
    for cal in ("released_norm", "ssp_posterior"):
        est = AdaOPSRegressor(epsilon=1.0, calibration=cal, random_state=_gen(0), **bounds).fit(X[tr], y[tr])
        mse = np.mean((est.predict(X[te]) - y[te]) ** 2)
        assert mse < 2.0 * np.mean(y[te] ** 2)


@pytest.mark.parametrize("calibration", ["ssp_posterior", "released_norm", "thesis"])
def test_budget_refusal_before_any_noise_leaves_the_estimator_and_generator_unchanged(calibration):
    """A shared ledger whose budget the fit would exceed refuses before the release: no attribute is set,
    the generator has not moved and the ledger records nothing; within the budget the fit records."""
    import pickle

    from sklearn_bayes.exceptions import BudgetExceededError

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(3000, 3))
    y = X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.standard_normal(3000)
    ledger = PrivacyLedger(budget=(1.5, 1e-5))
    gen = np.random.default_rng(5)
    est = AdaOPSRegressor(epsilon=1.0, x_bound=2.0, y_bound=2.0, calibration=calibration, random_state=gen,
                          ledger=ledger)
    est.fit(X, y)
    spent = ledger.epsilon_spent
    assert spent == pytest.approx(1.0)
    before = pickle.dumps(est)
    state = gen.bit_generator.state
    with pytest.raises(BudgetExceededError):
        est.fit(X, y)  # a second epsilon = 1 would make 2 > 1.5
    assert pickle.dumps(est) == before
    assert gen.bit_generator.state == state
    assert ledger.epsilon_spent == spent
