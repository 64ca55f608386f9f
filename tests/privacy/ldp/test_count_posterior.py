"""The posterior of theta given only the support counts (``decoder='counts'``; ``'auto'`` where the exact chain
is O(n k) per iteration; issue 28, round 9)."""

import itertools
import warnings

import numpy as np
import pytest
from scipy.stats import binom, norm
from sklearn.exceptions import ConvergenceWarning

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp._count_posterior import (
    AUTO_COUNTS_MAX_RATIO,
    count_groups,
    count_log_likelihood,
    per_user_latent,
    plug_in_ratio,
    sandwich_ratio,
)
from sklearn_bayes.privacy._ldp._diagnostics import min_ess
from sklearn_bayes.privacy._ldp._empirical_bayes import support_probabilities
from sklearn_bayes.privacy._ldp._mechanisms import SetResponseMechanism, ss_log_probabilities
from sklearn_bayes.privacy._ldp._samplers import adaptive_exact_draws, exact_draws

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning")


def _ss(K, eps, k):
    return support_probabilities(SetResponseMechanism(K, eps, "subset_selection", k))


def test_count_groups_likelihood_is_the_binomial_product():
    """The 2 K groups' log likelihood sum_g c_g ln(L_g . theta) equals sum_v ln Bin(c_v; n, pi_v) up to the
    binomial coefficients (a constant), to rounding."""
    rng = np.random.default_rng(0)
    K, n = 7, 50
    p, q = _ss(K, 1.0, 3)
    c = rng.integers(0, n + 1, K)
    c[2], c[4] = 0, n  # empty groups are dropped
    g = count_groups(c, n, p, q)
    assert g.count.size == 2 * K - 2 and g.count.sum() == n * K
    L = g.likelihood_rows()
    const = binom.logpmf(c, n, 0.5).sum() - (c * np.log(0.5) + (n - c) * np.log(0.5)).sum()
    for _ in range(5):
        theta = rng.dirichlet(np.ones(K))
        pi = q + (p - q) * theta
        direct = float((c * np.log(pi) + (n - c) * np.log1p(-pi)).sum())
        grouped = float(g.count @ np.log(L @ theta))
        assert grouped == pytest.approx(direct, rel=1e-13, abs=1e-11)
        assert count_log_likelihood(theta, c, n, p, q) == pytest.approx(direct + const, rel=1e-12)


def test_support_count_is_binomial_by_brute_force():
    """SS(2) on K = 4, n = 3 users: the law of c_v summed over every user's (category, subset) equals
    Bin(n, q + (p - q) theta_v) exactly (each subset's probability from the mechanism's own table)."""
    K, k, eps, n = 4, 2, 0.8, 3
    theta = np.array([0.1, 0.2, 0.3, 0.4])
    l_in, l_out = ss_log_probabilities(K, eps, k)
    subsets = list(itertools.combinations(range(K), k))
    # one user's outcomes: (probability, support vector)
    outcomes = []
    for x in range(K):
        for s in subsets:
            outcomes.append((theta[x] * np.exp(l_in if x in s else l_out), np.isin(np.arange(K), s).astype(int)))
    assert sum(w for w, _ in outcomes) == pytest.approx(1.0, abs=1e-14)
    law = np.zeros((K, n + 1))
    for combo in itertools.product(outcomes, repeat=n):
        w = np.prod([o[0] for o in combo])
        c = sum(o[1] for o in combo)
        law[np.arange(K), c] += w
    p, q = _ss(K, eps, k)
    for v in range(K):
        np.testing.assert_allclose(law[v], binom.pmf(np.arange(n + 1), n, q + (p - q) * theta[v]), rtol=1e-12,
                                   atol=1e-15)


def _quadrature_k3(c, n, p, q, alpha, m=600):
    """Posterior mean and sd of theta under Dir(alpha) x prod Bin on a (t1, t2) grid (midpoints)."""
    t = (np.arange(m) + 0.5) / m
    t1, t2 = np.meshgrid(t, t, indexing="ij")
    ok = t1 + t2 < 1
    th = np.stack([t1[ok], t2[ok], 1 - t1[ok] - t2[ok]], axis=1)
    pi = q + (p - q) * th
    lw = (c * np.log(pi) + (n - c) * np.log1p(-pi)).sum(axis=1) + ((alpha - 1) * np.log(th)).sum(axis=1)
    w = np.exp(lw - lw.max())
    w /= w.sum()
    mean = w @ th
    return mean, np.sqrt(w @ (th - mean) ** 2)


def test_count_chain_matches_quadrature_on_three_categories():
    """The chain on the 2 K groups (fixed prior Dir(2)) against quadrature: posterior means within 4 Monte
    Carlo SEs (ESS-based) and sds within 10 %."""
    K, n, alpha = 3, 400, 2.0
    p, q = 0.7, 0.2  # a valid (p, q) pair: supports of three levels
    c = np.array([180, 110, 90])
    g = count_groups(c, n, p, q)
    draws = exact_draws(g, np.full(K, alpha), 500, 8000, np.random.default_rng(3))
    mean, sd = _quadrature_k3(c, n, p, q, alpha)
    ess = min_ess(draws)
    assert ess > 500
    np.testing.assert_array_less(np.abs(draws.mean(axis=0) - mean), 4 * sd / np.sqrt(ess))
    np.testing.assert_allclose(draws.std(axis=0), sd, rtol=0.10)


def test_count_chain_matches_the_conjugate_case():
    """p = 1, q = 0 (no noise): the count likelihood is prod theta_v^c_v (1 - theta_v)^(n - c_v), which on two
    categories is Beta(c_0 + c_1' ...): with K = 2 the posterior of theta_0 is Beta(alpha + 2 c_0, alpha + 2 c_1)
    (each count enters twice, as theta_0^c_0 and (1 - theta_1)^(n - c_1)); mean and sd within Monte Carlo error."""
    K, n, alpha = 2, 60, 1.5
    c = np.array([22, 38])
    g = count_groups(c, n, 1.0 - 1e-12, 1e-12)
    draws = exact_draws(g, np.full(K, alpha), 500, 6000, np.random.default_rng(4))[:, 0]
    a, b = alpha + 2 * c[0], alpha + 2 * c[1]
    mean, sd = a / (a + b), np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    ess = min_ess(draws[:, None])
    assert abs(draws.mean() - mean) < 4 * sd / np.sqrt(ess)
    assert draws.std() == pytest.approx(sd, rel=0.1)


def test_sandwich_ratio_is_one_without_dependence_and_matches_simulation():
    """The counts' covariance of :func:`sandwich_ratio` against simulated SS(k) responses: the variance of
    one user's support indicators and their covariance within 4 SEs; the ratio is K/(K - 1) at uniform theta."""
    K, eps, k, n = 6, 1.0, 2, 60_000
    theta = np.array([0.35, 0.25, 0.15, 0.1, 0.1, 0.05])
    client = SetResponseMechanism(K, eps, "subset_selection", k)
    x = np.random.default_rng(5).choice(K, n, p=theta)
    b = client.privatize(x, np.random.default_rng(6)).astype(float)
    p, q = support_probabilities(client)
    pi = q + (p - q) * theta
    a_v = p * (k - 1) / (K - 1)
    a_out = (p * (k - 1) * (k - 2) + (1 - p) * k * (k - 1)) / ((K - 1) * (K - 2))
    for v, w in ((0, 1), (2, 5), (3, 4)):
        e_vw = (theta[v] + theta[w]) * a_v + (1 - theta[v] - theta[w]) * a_out
        sim = b[:, v] * b[:, w]
        assert abs(sim.mean() - e_vw) < 4 * sim.std() / np.sqrt(n)
    np.testing.assert_allclose(b.mean(axis=0), pi, atol=4 * np.sqrt(pi * (1 - pi) / n).max())
    r = sandwich_ratio(np.full(K, 1.0 / K), K, eps, k)
    np.testing.assert_allclose(r, K / (K - 1), rtol=1e-10)
    assert np.all(sandwich_ratio(theta, K, eps, k) > 1)


def test_sandwich_ratio_of_oue_matches_simulated_indicators():
    """OUE (``subset_size=None``): one user's bits are independent given x, so ``E[b_v b_w] = (theta_v +
    theta_w) p q + (1 - theta_v - theta_w) q^2``; the simulated products and the counts' covariance agree
    within 4 SEs, the ratio is above 1 on a spiky theta and at most K/(K - 1) (the SS(k) value) at uniform theta.
    Was: NaN for OUE, so an explicit decoder='importance' under OUE never widened its proposal."""
    K, eps, n = 6, 3.0, 60_000
    theta = np.array([0.45, 0.25, 0.15, 0.1, 0.04, 0.01])
    client = SetResponseMechanism(K, eps, "oue")
    b = client.privatize(np.random.default_rng(8).choice(K, n, p=theta), np.random.default_rng(9)).astype(float)
    p, q = support_probabilities(client)
    for v, w in ((0, 1), (2, 5), (3, 4)):
        e_vw = (theta[v] + theta[w]) * p * q + (1 - theta[v] - theta[w]) * q * q
        sim = b[:, v] * b[:, w]
        assert abs(sim.mean() - e_vw) < 4 * sim.std() / np.sqrt(n)
    r = sandwich_ratio(theta, K, eps, None)
    assert np.all(np.isfinite(r)) and r.max() > 1.02
    assert np.all(sandwich_ratio(np.full(K, 1.0 / K), K, eps, None) <= K / (K - 1))


def test_oue_counts_ratio_reaches_the_importance_tempering():
    """The estimator's plug-in ratio under OUE is :func:`plug_in_ratio` with ``subset_size=None`` (finite),
    and an explicit decoder='importance' tempers its proposal by it."""
    from sklearn_bayes.privacy._ldp._count_importance import tempering

    K, eps = 8, 6.0
    x = np.random.default_rng(3).choice(K, 3000, p=[0.6, 0.3, 0.04, 0.02, 0.02, 0.01, 0.005, 0.005])
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, mechanism="oue", decoder="importance",
                                        random_state=1).fit(x.reshape(-1, 1))
    c, n, _, _ = est._support_counts()
    r = plug_in_ratio(c, n, K, eps, None)
    assert np.isfinite(r) and est._counts_ratio() == r
    assert est._importance_temper() == tempering(r) < 0.9


@pytest.mark.slow
def test_count_posterior_coverage_matches_the_sandwich_theory():
    """SS(2), K = 6, eps = 1, n = 20,000 users from a fixed interior theta, flat prior: over 300 replications
    the 95 % intervals of the count posterior cover 2 Phi(1.96 / sqrt(r_v)) - 1 on average (r_v the
    sandwich ratio, about 1.2 here: 0.926), within 3 SEs of the per-replication coverage; the pairs that
    the composite likelihood would cover with independent counts (0.95) are rejected by the same bound."""
    K, eps, k, n, reps = 6, 1.0, 2, 20_000, 300
    theta = np.array([0.3, 0.25, 0.2, 0.12, 0.08, 0.05])
    client = SetResponseMechanism(K, eps, "subset_selection", k)
    p, q = support_probabilities(client)
    rng = np.random.default_rng(7)
    cov = []
    for _ in range(reps):
        c = client.privatize(rng.choice(K, n, p=theta), rng).sum(axis=0)
        d = exact_draws(count_groups(c, n, p, q), np.ones(K), 200, 1000, rng)
        lo, hi = np.quantile(d, [0.025, 0.975], axis=0)
        cov.append(np.mean((lo <= theta) & (theta <= hi)))
    cov = np.array(cov)
    predicted = float(np.mean(2 * norm.cdf(1.96 / np.sqrt(sandwich_ratio(theta, K, eps, k))) - 1))
    se = cov.std(ddof=1) / np.sqrt(reps)
    assert abs(cov.mean() - predicted) < 3 * se
    assert 0.95 - cov.mean() > 3 * se


def test_per_user_latent_is_the_complement_of_the_dense_rule():
    assert not per_user_latent(100, 10, 4000)  # 4 G K = 4000 <= n
    assert per_user_latent(101, 10, 4000)
    assert per_user_latent(2000, 40, 10 ** 9)  # G K > 2^16


def _users(K, n, seed, alpha=1.0):
    rng = np.random.default_rng(seed)
    return rng.choice(K, n, p=rng.dirichlet(np.full(K, alpha))).reshape(-1, 1)


def test_auto_uses_the_counts_where_the_exact_chain_is_per_user_and_dependence_is_weak():
    X = _users(40, 6000, 0)
    est = AdaptiveLDPFrequencyEstimator(n_categories=40, epsilon=1.0, random_state=0).fit(X)
    assert est._client.subset_size > 1
    assert est.convergence_["method"] == "counts"
    c, n, p, q = est._support_counts()
    assert plug_in_ratio(c, n, 40, 1.0, est._client.subset_size) <= AUTO_COUNTS_MAX_RATIO
    # the same draws as the chain on the count groups with the read stream
    ref, diag = adaptive_exact_draws(count_groups(c, n, p, q), "hierarchical", 4 * est.n_final_steps,
                                     est._read_rng(0))
    assert diag["n_draws"] == est.convergence_["n_draws"]
    ci = est.credible_interval(0.95)
    assert ci.shape == (40, 2) and np.all(ci[:, 0] <= est.theta_ + 1e-12) and np.all(est.theta_ <= ci[:, 1] + 1e-12)
    assert est.sample_posterior(50).shape == (50, 40)
    # 'posterior' keeps the exact chain
    exact = AdaptiveLDPFrequencyEstimator(n_categories=40, epsilon=1.0, random_state=0, decoder="posterior").fit(X)
    assert not exact._uses_counts() and exact._posterior_groups().count.sum() == 6000


@pytest.mark.parametrize("K, eps, n, why", [
    (10, 1.0, 5000, "ratio"),     # SS(3) at K = 10: sandwich ratio 1.11-1.14 > 1.07
    (40, 4.0, 6000, "grr"),       # k = 1: the counts' multinomial is the exact likelihood (<= K groups)
    (16, 2.0, 20000, "few"),      # SS(2): 120 distinct subsets, 4 G K <= n: the exact chain is per group
    (20, 1.0, 20000, "below 32"),  # SS(5), per-user chain, ratio 1.06 <= 1.07, but fewer than 32 categories
])
def test_auto_keeps_the_exact_posterior(K, eps, n, why):
    """Not the count posterior; below 32 categories the per-user case is the exact posterior by importance
    sampling (round 11), elsewhere the exact chain."""
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=1).fit(_users(K, n, 1))
    assert not est._uses_counts()
    assert est.convergence_["method"] == ("importance" if why == "below 32" else "mcmc"), why
    if why == "below 32":  # every other condition of the count posterior holds: only the category floor keeps it out
        c, n_resp, _, _ = est._support_counts()
        assert est._client.subset_size > 1 and per_user_latent(est._chain.store.set_counts()[1].size, K, n_resp)
        assert plug_in_ratio(c, n_resp, K, eps, est._client.subset_size) <= AUTO_COUNTS_MAX_RATIO
        assert AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=1,
                                             decoder="counts").fit(_users(K, n, 1))._uses_counts()


def test_decoder_counts_explicit_and_refusals():
    X = _users(8, 3000, 2)
    est = AdaptiveLDPFrequencyEstimator(n_categories=8, epsilon=1.0, random_state=2, decoder="counts").fit(X)
    assert est.convergence_["method"] == "counts" and est.theta_.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="decoder='counts' needs a static mechanism"):
        AdaptiveLDPFrequencyEstimator(n_categories=8, epsilon=1.0, mechanism="rrrr", decoder="counts").fit(X)
    big = AdaptiveLDPFrequencyEstimator(n_categories=130, epsilon=1.0, random_state=2, decoder="counts")
    with pytest.raises(ValueError, match="decoder='counts' runs up to 128 categories"):
        big.fit(np.arange(130).reshape(-1, 1) % 130)  # refused when fitting (review HQV), not when theta_ is read


def test_count_posterior_warns_when_its_checks_fail():
    """A chain cut short by n_final_steps fails ESS >= 100: convergence_ says so and theta_ warns; a long one
    passes silently."""
    X = _users(40, 6000, 3)
    short = AdaptiveLDPFrequencyEstimator(n_categories=40, epsilon=1.0, random_state=3, n_final_steps=60).fit(X)
    with pytest.warns(ConvergenceWarning, match="may not have converged"):
        short.theta_
    conv = short.convergence_
    assert conv["method"] == "counts" and not (conv["rhat"] <= 1.05 and conv["ess"] >= 100)
    long = AdaptiveLDPFrequencyEstimator(n_categories=40, epsilon=1.0, random_state=3).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        long.theta_
    conv = long.convergence_
    assert conv["rhat"] <= 1.05 and conv["ess"] >= 200
