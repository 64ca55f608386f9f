"""Round RT: the stacked decoder's cost route (``_stacking.STACK_ROUTE``; issue 28 goal 3 at high eps).

The route's decision on designed inputs (exact arithmetic of its two clauses), its output (``'eb'``'s estimate bit for
bit where it fires, the stack's bit for bit where it does not or when it is switched off), ``convergence_``'s report,
and the credible intervals (a function of the counts only: equal bit for bit either way).
"""

import warnings

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp import _empirical_bayes as E
from sklearn_bayes.privacy._ldp import _stacking as S
from sklearn_bayes.privacy._ldp._mechanisms import ss_support_probabilities

ROUTE_KEYS = ("stack_predicted_cost", "stack_noise_ratio", "stack_skipped")


def _grr(K, eps):
    return ss_support_probabilities(K, float(eps), 1)


def _grr_counts(K, eps, n, seed):
    """GRR support counts of n users whose frequencies are one Dir(1) draw: (c, p, q)."""
    p, q = _grr(K, eps)
    rng = np.random.default_rng(seed)
    return rng.binomial(n, q + (p - q) * rng.dirichlet(np.ones(K))).astype(float), p, q


def _users(K, n, seed):
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.ones(K))
    return rng.choice(K, size=n, p=theta).reshape(-1, 1)


def _fit(K, eps, X, route, decoder="auto", monkeypatch=None):
    monkeypatch.setattr(S, "STACK_ROUTE", route)
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, decoder=decoder,
                                        random_state=np.random.default_rng(11))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
        theta = est.theta_.copy()
        ci = est.credible_interval(0.95)
    return theta, dict(est.convergence_), ci


# --------------------------------------------------------------------------- the decision on designed inputs
def test_noise_ratio_identity_grr_and_degenerate():
    assert S.noise_ratio(50, 1.0, 0.0) == pytest.approx(1.0, rel=1e-15)
    for K, eps in ((64, 8.0), (200, 6.0), (1000, 2.0)):
        p, q = _grr(K, eps)
        # GRR is symmetric: pi = 1 / K at the uniform theta, so R = 1 / (p - q)^2 exactly (up to rounding)
        assert S.noise_ratio(K, p, q) == pytest.approx(1.0 / (p - q) ** 2, rel=1e-12)
    assert S.noise_ratio(10, 0.3, 0.3) == np.inf
    assert S.noise_ratio(1, 1.0, 0.0) == np.inf


def test_noise_ratio_at_the_corner():
    """The clause reads the channel only: GRR at eps = 8 is near the identity for K <= 1000 (R = 1.04-1.78), at
    eps = 6 for K = 64 (1.34) but not K = 200 (2.24), at eps = 4 for none of them."""
    R = {(K, e): S.noise_ratio(K, *_grr(K, e)) for K in (64, 200, 1000) for e in (4.0, 6.0, 8.0)}
    assert all(R[(K, 8.0)] <= S.ROUTE_MAX_NOISE_RATIO for K in (64, 200, 1000))
    assert R[(64, 6.0)] <= S.ROUTE_MAX_NOISE_RATIO < R[(200, 6.0)]
    assert all(R[(K, 4.0)] > S.ROUTE_MAX_NOISE_RATIO for K in (64, 200, 1000))


def test_stack_route_decision_on_designed_inputs():
    p, q = _grr(64, 8.0)  # near the identity
    F, U = S.STACK_FOLDS, S.ROUTE_WORK_PER_IBU
    # r_hat = (F + 1) * 2 * n_iter * G / (n * U): choose n_iter so that r_hat is just above / at / below the budget
    G, n = 250, 1000
    at_budget = S.ROUTE_BUDGET * n * U / ((F + 1) * 2 * G)
    skip, reason, r_hat, R = S.stack_route(64, n, p, q, 2 * at_budget, G)
    assert skip and r_hat == pytest.approx(2 * S.ROUTE_BUDGET, rel=1e-12) and reason.startswith("cost:")
    skip, reason, r_hat, _ = S.stack_route(64, n, p, q, 0.5 * at_budget, G)
    assert not skip and reason is None and r_hat == pytest.approx(0.5 * S.ROUTE_BUDGET, rel=1e-12)
    # the budget itself is not exceeded (strict inequality)
    n_iter, G_eq = 575, 200
    n_eq = (F + 1) * 2 * n_iter * G_eq / (S.ROUTE_BUDGET * U)  # 1200 with the shipped constants
    assert float(n_eq).is_integer()
    assert S.stack_route(64, int(n_eq), p, q, n_iter, G_eq)[2] == S.ROUTE_BUDGET
    assert not S.stack_route(64, int(n_eq), p, q, n_iter, G_eq)[0]
    assert S.stack_route(64, int(n_eq) - 1, p, q, n_iter, G_eq)[0]
    # far from the identity: never, however costly
    p4, q4 = _grr(64, 4.0)
    assert not S.stack_route(64, 10, p4, q4, 2000, 400)[0]
    # more folds, more predicted cost (proportional to F + 1)
    r5 = S.stack_route(64, n, p, q, 100, G, folds=5)[2]
    r9 = S.stack_route(64, n, p, q, 100, G, folds=9)[2]
    assert r9 / r5 == pytest.approx(10 / 6, rel=1e-12)


def test_eb_estimate_stats_reports_the_atoms_and_changes_nothing():
    K, eps, n = 64, 8.0, 1000
    c, p, q = _grr_counts(K, eps, n, 3)
    stats = {}
    a, info_a = E.eb_estimate(c, n, p, q, stats=stats)
    b, info_b = E.eb_estimate(c, n, p, q)
    assert np.array_equal(a, b) and repr(info_a) == repr(info_b)
    f = (c / n - q) / (p - q)
    u = E._grid(f, n, p, q)
    L = E._likelihood(c, n, p, q, u)
    assert stats["atoms_used"] == int((L > 0).any(axis=0).sum()) < info_a["n_atoms"]


# --------------------------------------------------------------------------- the output and its report
def test_route_fires_at_high_eps_small_n_and_returns_eb_exactly(monkeypatch):
    """K = 64, eps = 8, n = 1000 (near the identity, 16.7 times IBU predicted): 'eb''s estimate bit for bit, the
    intervals unchanged, ``convergence_`` says why."""
    K, eps = 64, 8.0
    X = _users(K, 1000, 0)
    theta_r, conv_r, ci_r = _fit(K, eps, X, True, monkeypatch=monkeypatch)
    theta_eb, conv_eb, ci_eb = _fit(K, eps, X, True, decoder="eb", monkeypatch=monkeypatch)
    theta_s, conv_s, ci_s = _fit(K, eps, X, False, monkeypatch=monkeypatch)
    assert conv_r["method"] == "eb-stack"
    assert conv_r["stack_skipped"].startswith("cost: predicted") and not conv_r["stack_used"]
    assert conv_r["stack_predicted_cost"] > S.ROUTE_BUDGET
    assert conv_r["stack_noise_ratio"] <= S.ROUTE_MAX_NOISE_RATIO
    assert conv_r["stack_weights"] == {"eb": 1.0, "smooth": 0.0, "dir": 0.0, "ns": 0.0, "mi": 0.0}
    assert np.isnan(conv_r["stack_gain"]) and np.isnan(conv_r["stack_se"]) and np.isnan(conv_r["rho"])
    # the stack's way of returning 'eb''s row (as where its guard refuses): clipped at 0 and divided by its sum
    expect = np.maximum(theta_eb, 0.0)
    assert np.array_equal(theta_r, expect / expect.sum())
    np.testing.assert_allclose(theta_r, theta_eb, rtol=0, atol=1e-15)
    for key in ("n_iter", "converged", "n_atoms", "tilt", "tilt_converged"):
        assert repr(conv_r[key]) == repr(conv_eb[key])
    assert np.array_equal(ci_r, ci_s) and np.array_equal(ci_r, ci_eb)
    # switched off: the stack ran (its folds and guard), no route keys
    assert not any(k in conv_s for k in ROUTE_KEYS) and np.isfinite(conv_s["stack_gain"])


@pytest.mark.parametrize("K, eps, n", [(64, 2.0, 2000), (64, 8.0, 20000), (200, 6.0, 1000)])
def test_route_not_firing_is_the_stack_bit_for_bit(monkeypatch, K, eps, n):
    """Where the route does not fire (far from the identity; cheap; R = 2.24 > 2) the output is the stack's bit for
    bit and ``convergence_`` differs only by the route's keys (``stack_skipped`` None)."""
    X = _users(K, n, 7)
    theta_r, conv_r, ci_r = _fit(K, eps, X, True, monkeypatch=monkeypatch)
    theta_s, conv_s, ci_s = _fit(K, eps, X, False, monkeypatch=monkeypatch)
    assert conv_r["stack_skipped"] is None
    assert np.array_equal(theta_r, theta_s) and np.array_equal(ci_r, ci_s)
    assert repr({k: v for k, v in conv_r.items() if k not in ROUTE_KEYS}) == repr(conv_s)


def test_fast_numerics_off_or_gmodel_ignore_the_route(monkeypatch):
    """``STACK_FAST_NUMERICS = False`` (round 18b's code path) and ``decoder='eb-gmodel'`` run the stack whatever
    ``STACK_ROUTE`` says."""
    K, eps = 64, 8.0
    X = _users(K, 1000, 5)
    a, conv_a, _ = _fit(K, eps, X, True, decoder="eb-gmodel", monkeypatch=monkeypatch)
    b, conv_b, _ = _fit(K, eps, X, False, decoder="eb-gmodel", monkeypatch=monkeypatch)
    assert np.array_equal(a, b) and repr(conv_a) == repr(conv_b) and "stack_skipped" not in conv_a
    monkeypatch.setattr(S, "STACK_FAST_NUMERICS", False)
    a, conv_a, _ = _fit(K, eps, X, True, monkeypatch=monkeypatch)
    b, conv_b, _ = _fit(K, eps, X, False, monkeypatch=monkeypatch)
    assert np.array_equal(a, b) and repr(conv_a) == repr(conv_b) and "stack_skipped" not in conv_a


def test_stacked_estimate_route_reads_no_folds(monkeypatch):
    """Where the route fires the folds are not formed: ``stacked_estimate`` returns before reading ``sids``/``masks``
    or drawing from ``rng`` (None here would fail if they were read)."""
    monkeypatch.setattr(S, "STACK_ROUTE", True)
    K, eps, n = 64, 8.0, 1000
    c, p, q = _grr_counts(K, eps, n, 5)
    stats = {}
    eb, info = E.eb_estimate(c, n, p, q, stats=stats)
    if not S.stack_route(K, n, p, q, info["n_iter"], stats["atoms_used"])[0]:
        pytest.skip("designed counts not in the route's region")  # pragma: no cover
    theta, conv = S.stacked_estimate(c, n, p, q, None, None, None, np.array([0.1, 1.0]))
    expect = np.maximum(eb, 0.0)
    assert np.array_equal(theta, expect / expect.sum()) and conv["stack_skipped"] is not None
