"""Convergence diagnostics of the exact posterior's draws (``convergence_``, issue 28)."""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp._diagnostics import ESS_MIN, RHAT_MAX, chain_diagnostics

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning")


def _ar1(phi, n, K, seed):
    rng = np.random.default_rng(seed)
    e = rng.standard_normal((n, K))
    x = np.empty((n, K))
    x[0] = e[0] / np.sqrt(1 - phi**2)
    for t in range(1, n):
        x[t] = phi * x[t - 1] + e[t]
    return x


def test_iid_draws_have_rhat_near_one_and_full_ess():
    d = chain_diagnostics(np.random.default_rng(0).standard_normal((4000, 6)))
    assert d["method"] == "mcmc" and d["n_draws"] == 4000 and d["n_segments"] == 4
    # split R-hat of iid draws: 1 + O(1/n); ESS of iid draws about n (min over 6 columns)
    assert abs(d["rhat"] - 1) < 0.01
    assert 0.7 * 4000 < d["ess"] < 1.3 * 4000


def test_ess_of_an_ar1_chain_matches_theory():
    """ESS of AR(1) with coefficient phi is n (1 - phi) / (1 + phi): 1053 for phi = 0.9, n = 20,000."""
    d = chain_diagnostics(_ar1(0.9, 20_000, 3, 1))
    assert d["ess"] == pytest.approx(20_000 * 0.1 / 1.9, rel=0.25)


def test_a_drifting_chain_has_a_large_rhat():
    x = np.random.default_rng(2).standard_normal((2000, 3)) + np.linspace(0, 5, 2000)[:, None]
    assert chain_diagnostics(x)["rhat"] > 1.5


def test_constant_columns_are_ignored():
    x = np.random.default_rng(3).standard_normal((400, 3))
    x[:, 1] = 0.25
    d = chain_diagnostics(x)
    assert np.isfinite(d["rhat"]) and np.isfinite(d["ess"])


def test_fitted_estimator_reports_and_warns():
    X = np.random.default_rng(4).choice(5, size=3000, p=[0.5, 0.2, 0.15, 0.1, 0.05]).reshape(-1, 1)
    short = AdaptiveLDPFrequencyEstimator(n_categories=5, epsilon=0.5, n_final_steps=16,
                                          random_state=np.random.default_rng(5)).fit(X)
    with pytest.warns(ConvergenceWarning, match="n_final_steps"):
        short.theta_
    d = short.convergence_
    assert d["n_draws"] == 8 and not (d["rhat"] <= RHAT_MAX and d["ess"] >= ESS_MIN)
    long = AdaptiveLDPFrequencyEstimator(n_categories=5, epsilon=2.0, n_final_steps=4000,
                                         random_state=np.random.default_rng(5)).fit(X)
    long.theta_
    d = long.convergence_
    assert d["n_draws"] == 2000 and d["rhat"] <= RHAT_MAX and d["ess"] >= ESS_MIN
