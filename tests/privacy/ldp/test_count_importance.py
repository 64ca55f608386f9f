"""The exact posterior by importance sampling of the tempered count posterior (``decoder='importance'``; ``'auto'``
below 32 categories where the exact chain is O(n k) per iteration; issue 28, round 11)."""

import pickle
import warnings

import numpy as np
import pytest
from scipy.stats import genpareto
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

import sklearn_bayes.privacy._ldp._count_importance as ci_mod
from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp._count_importance import (
    EXACT_WORK_MAX,
    IMPORTANCE_DRAWS,
    MIN_ESS_FRACTION,
    PARETO_K_MAX,
    SAMPLE_IMPORTANCE_DRAWS,
    exact_loglik,
    exact_work_ratio,
    gpd_fit,
    importance_fixed,
    log_weights,
    pareto_khat,
    TEMPER,
    TEMPER_MIN,
    systematic_resample,
    tempered_counts,
    tempering,
    weight_diagnostics,
)
from sklearn_bayes.privacy._ldp._count_posterior import count_groups, plug_in_ratio
from sklearn_bayes.privacy._ldp._diagnostics import min_ess
from sklearn_bayes.privacy._ldp._empirical_bayes import support_probabilities
from sklearn_bayes.privacy._ldp._mechanisms import SetResponseMechanism, ss_log_probabilities
from sklearn_bayes.privacy._ldp._posterior import Groups
from sklearn_bayes.privacy._ldp._samplers import exact_draws

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning")

U = np.finfo(float).eps


def _users(K, n, seed, alpha=1.0):
    rng = np.random.default_rng(seed)
    return rng.choice(K, n, p=rng.dirichlet(np.full(K, alpha))).reshape(-1, 1)


def _random_groups(rng, K=9, G=40, bits=False):
    """Groups with random sets, some with a special category (f_in, f_y > f_out > 0: every term positive)."""
    masks = rng.random((G, K)) < 0.4
    y = np.where(rng.random(G) < 0.5, rng.integers(0, K, G), -1).astype(np.int32)
    masks[np.arange(G)[y >= 0], y[y >= 0]] = False
    sizes = masks.sum(axis=1)
    a_ptr = np.r_[0, np.cumsum(sizes)].astype(np.int32)
    a_idx = np.nonzero(masks)[1].astype(np.int32)
    f_out = rng.uniform(0.2, 1.0, G)
    f_in, f_y = f_out + rng.uniform(0.1, 2.0, G), f_out + rng.uniform(0.1, 2.0, G)
    count = rng.integers(1, 50, G)
    packed = np.packbits(masks, axis=1, bitorder="little")
    return (Groups(K, a_ptr, np.zeros(0, np.int32) if bits else a_idx, y, f_in, f_y, f_out, count,
                   packed if bits else None), masks)


def test_kernel_equals_the_dense_numpy_reference():
    """exact_loglik_many against ln(L theta) . count (numpy): both sum positive terms, so each ln P_g is off by at
    most (|A_g| + K + 8) u (the sums' rounding, relative, times d ln P = dP / P) and the two outer sums by
    (G + 1) u sum_g |c_g ln P_g| each."""
    rng = np.random.default_rng(0)
    g, masks = _random_groups(rng)
    draws = rng.dirichlet(np.full(g.n_categories, 0.3), size=25)
    got = exact_loglik(g, draws)
    terms = np.log(g.likelihood_rows() @ draws.T).T * g.count
    ref = terms.sum(axis=1)
    tol = U * ((g.count * (masks.sum(axis=1) + g.n_categories + 8)).sum() + 2 * (g.count.size + 1) * np.abs(terms).sum(1))
    assert np.all(np.abs(got - ref) <= tol)
    assert np.any(got != 0)


def test_kernel_reads_bit_only_groups_like_member_lists():
    """Groups holding their sets only as bit rows give the very same numbers (same members, same order)."""
    rng = np.random.default_rng(1)
    g, _ = _random_groups(np.random.default_rng(1))
    g_bits, _ = _random_groups(np.random.default_rng(1), bits=True)
    assert g_bits.members_in_bits and not g.members_in_bits
    draws = rng.dirichlet(np.ones(g.n_categories), size=10)
    np.testing.assert_array_equal(exact_loglik(g_bits, draws), exact_loglik(g, draws))


def test_kernel_zero_probability_is_minus_infinity():
    K = 3
    g = Groups(K, np.array([0, 1], np.int32), np.array([0], np.int32), np.array([-1], np.int32), np.array([1.0]),
               np.array([0.0]), np.array([0.0]), np.array([2]))
    out = exact_loglik(g, np.array([[0.0, 0.5, 0.5], [0.5, 0.25, 0.25]]))
    assert out[0] == -np.inf and out[1] == pytest.approx(2 * np.log(0.5), rel=1e-15)


@pytest.mark.parametrize("k", [-0.2, 0.3, 0.7, 1.0])
def test_gpd_fit_recovers_the_shape(k):
    """On 2000 draws of a generalised Pareto law the Zhang-Stephens estimate is within 3 asymptotic SEs
    ((1 + k) / sqrt(n), the MLE's, for k > -1/2) of the true shape."""
    n = 2000
    x = genpareto.rvs(k, scale=1.5, size=n, random_state=np.random.default_rng(int(10 * k) + 20))
    k_hat, sigma = gpd_fit(x)
    assert abs(k_hat - k) < 3 * (1 + k) / np.sqrt(n)
    assert sigma > 0


@pytest.mark.parametrize("k", [0.3, 0.9])
def test_pareto_khat_of_weights_with_a_pareto_tail(k):
    """Weights whose law is generalised Pareto: the exceedances of the tail are GPD with the same shape, so the
    PSIS k-hat (t = 3 sqrt(S) = 300 tail draws, shrunk as (t k + 5) / (t + 10)) is within 3 SEs of
    (t k + 5) / (t + 10)."""
    S = 10_000
    w = genpareto.rvs(k, size=S, random_state=np.random.default_rng(int(10 * k)))
    t = 300
    target = (t * k + 5) / (t + 10)
    assert abs(pareto_khat(np.log(w)) - target) < 3 * (1 + k) / np.sqrt(t)


def test_pareto_khat_edges_and_weight_diagnostics():
    assert pareto_khat(np.zeros(300)) == -np.inf  # equal weights: no tail
    assert pareto_khat(np.r_[0.0, np.full(299, -np.inf)]) == np.inf  # one weight holds everything
    d = weight_diagnostics(np.zeros(300))
    assert d["weight_ess"] == pytest.approx(300) and d["weights_ok"] and d["n_weighted"] == 300
    bad = weight_diagnostics(np.r_[50.0, np.zeros(299)])
    assert bad["weight_ess"] < 1.01 and not bad["weights_ok"]
    assert bad["weight_ess_fraction"] < MIN_ESS_FRACTION
    # k = 1.5 on S = 3000 (t = 165 tail draws): the shrunk estimate's mean (165 k + 5) / 175 = 1.44 is more than
    # 3 SEs ((1 + k) / sqrt(t) = 0.19) above 0.7; the tail spans far more than a factor 2
    heavy = weight_diagnostics(np.log(genpareto.rvs(1.5, size=3000, random_state=np.random.default_rng(2))))
    assert heavy["pareto_k"] > PARETO_K_MAX and heavy["tail_ratio"] > 2 and not heavy["weights_ok"]
    # nearly equal weights (within 1 %): whatever k-hat says, no draw dominates
    flat = weight_diagnostics(np.log1p(0.01 * genpareto.rvs(1.5, size=300, random_state=np.random.default_rng(3)) /
                                       genpareto.rvs(1.5, size=300, random_state=np.random.default_rng(3)).max()))
    assert flat["tail_ratio"] < 2 and flat["weights_ok"]


def test_systematic_resample_copies_are_floor_or_ceil():
    rng = np.random.default_rng(3)
    lw = rng.normal(size=50)
    w = np.exp(lw) / np.exp(lw).sum()
    idx = systematic_resample(lw, 1000, rng)
    copies = np.bincount(idx, minlength=50)
    assert copies.sum() == 1000 and np.all(np.diff(idx) >= 0)
    assert np.all(copies >= np.floor(1000 * w) - 1e-9) and np.all(copies <= np.ceil(1000 * w) + 1e-9)


def _ss_k3_case(n=400, eps=0.7, seed=4):
    """SS(2) on K = 3: exact groups (the three subsets), support counts, p, q."""
    K, k = 3, 2
    client = SetResponseMechanism(K, eps, "subset_selection", k)
    rng = np.random.default_rng(seed)
    masks = client.privatize(rng.choice(K, n, p=[0.6, 0.3, 0.1]), rng)
    rows, count = np.unique(masks, axis=0, return_counts=True)
    l_in, l_out = ss_log_probabilities(K, eps, k)
    G = rows.shape[0]
    groups = Groups(K, np.r_[0, np.cumsum(rows.sum(1))].astype(np.int32), np.nonzero(rows)[1].astype(np.int32),
                    np.full(G, -1, np.int32), np.full(G, np.exp(l_in)), np.zeros(G), np.full(G, np.exp(l_out)),
                    count.astype(np.int64))
    p, q = support_probabilities(client)
    return groups, masks.sum(axis=0), n, p, q


def _quadrature(groups, alpha, m=500):
    t = (np.arange(m) + 0.5) / m
    t1, t2 = np.meshgrid(t, t, indexing="ij")
    ok = t1 + t2 < 1
    th = np.stack([t1[ok], t2[ok], 1 - t1[ok] - t2[ok]], axis=1)
    lw = np.log(groups.likelihood_rows() @ th.T).T @ groups.count + ((alpha - 1) * np.log(th)).sum(axis=1)
    w = np.exp(lw - lw.max())
    return th, w / w.sum()


def test_importance_draws_match_the_exact_posterior_by_quadrature():
    """SS(2), K = 3, 400 users, Dir(2) prior: the weighted means of the tempered count posterior's draws are within
    4 Monte Carlo SEs of the exact posterior's (quadrature), with the ESS of the chain times the weights' ESS
    fraction; the resampled draws' 2.5 % and 97.5 % quantiles sit at quadrature levels within 4 binomial SEs."""
    groups, c, n, p, q = _ss_k3_case()
    alpha = 2.0
    c_a, n_a = tempered_counts(c, n)
    draws = exact_draws(count_groups(c_a, n_a, p, q), np.full(3, alpha), 500, 6000, np.random.default_rng(5))
    lw = log_weights(groups, draws, c_a, n_a, p, q)
    d = weight_diagnostics(lw)
    assert d["weights_ok"] and d["weight_ess_fraction"] > 0.5
    w = np.exp(lw - lw.max())
    w /= w.sum()
    th, wq = _quadrature(groups, alpha)
    mean_q = wq @ th
    sd_q = np.sqrt(wq @ (th - mean_q) ** 2)
    ess = min_ess(draws) * d["weight_ess_fraction"]
    assert ess > 500
    np.testing.assert_array_less(np.abs(w @ draws - mean_q), 4 * sd_q / np.sqrt(ess))
    # the weights matter here: on K = 3 the counts' dependence (sandwich ratio K / (K - 1) = 1.5 > 1 / a) leaves
    # the tempered proposal narrower than the exact posterior, by more than 10 %
    assert np.all(draws.std(axis=0) < 0.9 * sd_q)
    res = importance_fixed(groups, (c, n, p, q), np.full(3, alpha), 500, 6000, np.random.default_rng(5))[0]
    for j in range(3):
        for level in (0.025, 0.975):
            qv = np.quantile(res[:, j], level)
            cdf = wq[th[:, j] <= qv].sum()
            assert abs(cdf - level) < 4 * np.sqrt(level * (1 - level) / ess) + 1.0 / 500


def test_tempering_keeps_the_proposal_wider_than_the_counts_dependence():
    """a = 0.9 up to the sandwich ratio 1.07; above, a r stays 0.9 * 1.07 (the proposal's variance over the exact
    one's, asymptotically), within [0.5, 0.9]; NaN (OUE: no ratio) gives 0.9, inf gives 0.5."""
    assert tempering(1.0) == tempering(1.07) == TEMPER == 0.9
    for r in (1.1, 1.14, 1.5):
        assert tempering(r) * r == pytest.approx(0.9 * 1.07, rel=1e-12)
    assert tempering(3.0) == TEMPER_MIN == 0.5 and tempering(np.inf) == 0.5 and tempering(np.nan) == 0.9
    est = AdaptiveLDPFrequencyEstimator(n_categories=10, epsilon=1.0, random_state=0, decoder="importance")
    est.fit(_users(10, 3000, 3, alpha=0.05))
    c, n, _, _ = est._support_counts()
    ratio = plug_in_ratio(c, n, 10, 1.0, est._client.subset_size)
    assert ratio > 1.07 and est.convergence_["temper"] == pytest.approx(tempering(ratio))


def test_untempered_or_narrower_proposals_degenerate():
    """The same case with an overconfident proposal (a = 3: three times the counts) fails the checks."""
    groups, c, n, p, q = _ss_k3_case(n=3000)
    c_a, n_a = tempered_counts(c, n, a=3.0)
    draws = exact_draws(count_groups(c_a, n_a, p, q), np.full(3, 2.0), 300, 2000, np.random.default_rng(6))
    assert not weight_diagnostics(log_weights(groups, draws, c_a, n_a, p, q))["weights_ok"]


def test_auto_routes_below_32_categories_where_the_exact_chain_is_per_user():
    X = _users(20, 20000, 1)
    est = AdaptiveLDPFrequencyEstimator(n_categories=20, epsilon=1.0, random_state=1).fit(X)
    conv = est.convergence_
    assert conv["method"] == "importance" and est._uses_importance() and not est._uses_counts()
    assert conv["n_weighted"] == min(IMPORTANCE_DRAWS, conv["n_draws"]) and conv["weight_ess_fraction"] >= MIN_ESS_FRACTION
    assert conv["pareto_k"] <= PARETO_K_MAX and conv["rhat"] <= 1.05
    explicit = AdaptiveLDPFrequencyEstimator(n_categories=20, epsilon=1.0, random_state=1, decoder="importance")
    np.testing.assert_array_equal(explicit.fit(X).theta_, est.theta_)
    ci = est.credible_interval(0.95)
    assert ci.shape == (20, 2) and np.all(ci[:, 0] <= ci[:, 1])
    # the exact chain stays the option: decoder='posterior' on the same responses
    est.set_params(decoder="posterior")
    assert est.convergence_["method"] == "mcmc"


@pytest.mark.parametrize("K, eps, n", [
    (16, 2.0, 20000),  # SS(2): 120 distinct subsets, the exact chain is per group (cheap)
    (12, 5.0, 3000),   # GRR (k = 1)
    (40, 1.0, 6000),   # from 32 categories: the count posterior's route, not this one
])
def test_auto_keeps_its_other_routes_bit_identical(K, eps, n):
    X = _users(K, n, 2)
    auto = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=3).fit(X)
    assert not auto._uses_importance() and auto.convergence_["method"] in ("mcmc", "counts", "eb")
    if auto.convergence_["method"] == "mcmc":
        post = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=3, decoder="posterior").fit(X)
        np.testing.assert_array_equal(auto.theta_, post.theta_)
        np.testing.assert_array_equal(auto.credible_interval(0.9), post.credible_interval(0.9))


def test_cost_gate_keeps_the_exact_chain_where_its_work_is_small():
    """Round 11b: SS(4) at K = 10, eps = 0.5, n = 5000 (the paper grid's cell) is per user (4 G K > n) but its
    exact chain gathers G k = 840 members per MALA step, 9.3 times the count chain's K (K - 1) = 90 (at most
    EXACT_WORK_MAX = 11): 'auto' keeps the exact chain, bit for bit decoder='posterior''s; 'importance' stays
    available there."""
    X = _users(10, 5000, 12, alpha=0.1)
    auto = AdaptiveLDPFrequencyEstimator(n_categories=10, epsilon=0.5, random_state=13).fit(X)
    assert auto._client.subset_size == 4 and auto._per_user_subsets()
    groups = auto._chain.exact_groups(0.5)
    G = groups.count.size
    assert int(np.diff(groups.a_ptr).sum()) == G * 4  # sum_g |A_g| = G k
    ratio = exact_work_ratio(auto._n_distinct(), 4, 10)
    assert ratio == G * 4 / 90 and ratio <= EXACT_WORK_MAX
    assert not auto._uses_importance() and auto.convergence_["method"] == "mcmc"
    post = AdaptiveLDPFrequencyEstimator(n_categories=10, epsilon=0.5, random_state=13, decoder="posterior").fit(X)
    np.testing.assert_array_equal(auto.theta_, post.theta_)
    np.testing.assert_array_equal(auto.credible_interval(0.9), post.credible_interval(0.9))
    np.testing.assert_array_equal(auto.sample_posterior(5), post.sample_posterior(5))
    explicit = AdaptiveLDPFrequencyEstimator(n_categories=10, epsilon=0.5, random_state=13, decoder="importance")
    assert explicit.fit(X).convergence_["method"] in ("importance", "importance->exact")


def test_cost_gate_threshold_decides_the_route(monkeypatch):
    """The same fit routes to importance sampling as soon as its work ratio exceeds the threshold, and the
    K = 20, eps = 1 fit (ratio far above 11) routes there with the default threshold."""
    import sklearn_bayes.privacy._ldp._decoding as dec_mod

    X = _users(10, 5000, 12, alpha=0.1)
    est = AdaptiveLDPFrequencyEstimator(n_categories=10, epsilon=0.5, random_state=13).fit(X)
    ratio = exact_work_ratio(est._n_distinct(), 4, 10)
    monkeypatch.setattr(dec_mod, "EXACT_WORK_MAX", ratio)
    assert not est._uses_importance()  # at the threshold: the exact chain
    monkeypatch.setattr(dec_mod, "EXACT_WORK_MAX", np.nextafter(ratio, 0))
    assert est._uses_importance()
    est.set_params(decoder="posterior")
    est.set_params(decoder="auto")
    assert est.convergence_["method"] == "importance"
    monkeypatch.undo()
    big = AdaptiveLDPFrequencyEstimator(n_categories=20, epsilon=1.0, random_state=1).fit(_users(20, 20000, 1))
    assert exact_work_ratio(big._n_distinct(), big._client.subset_size, 20) > 4 * EXACT_WORK_MAX
    assert big._uses_importance()


def test_theta_weights_importance_draws_and_samples_keep_their_own(monkeypatch):
    """theta_ weights min(IMPORTANCE_DRAWS, kept) draws; sample_posterior and credible_interval weight
    max(n, SAMPLE_IMPORTANCE_DRAWS) draws whatever IMPORTANCE_DRAWS is (bit for bit round 11's)."""
    X = _users(20, 6000, 8)
    est = AdaptiveLDPFrequencyEstimator(n_categories=20, epsilon=0.5, random_state=9, decoder="importance").fit(X)
    conv = est.convergence_
    assert conv["method"] == "importance" and conv["n_weighted"] == min(IMPORTANCE_DRAWS, conv["n_draws"])
    s, ci = est.sample_posterior(30, random_state=4), est.credible_interval(0.9, random_state=4)
    monkeypatch.setattr(ci_mod, "IMPORTANCE_DRAWS", 300)
    again = AdaptiveLDPFrequencyEstimator(n_categories=20, epsilon=0.5, random_state=9, decoder="importance").fit(X)
    assert again.convergence_["n_weighted"] == min(300, conv["n_draws"])
    np.testing.assert_array_equal(again.sample_posterior(30, random_state=4), s)
    np.testing.assert_array_equal(again.credible_interval(0.9, random_state=4), ci)
    assert SAMPLE_IMPORTANCE_DRAWS == 300


def test_fallback_runs_the_exact_chain_and_says_so(monkeypatch):
    """With an overconfident proposal (TEMPER = 3) the weights fail: theta_, its diagnostics, the intervals and
    sample_posterior are decoder='posterior''s, bit for bit, and a ConvergenceWarning names the fallback."""
    X = _users(20, 8000, 5, alpha=0.3)
    monkeypatch.setattr(ci_mod, "TEMPER", 3.0)
    est = AdaptiveLDPFrequencyEstimator(n_categories=20, epsilon=1.0, random_state=7, decoder="importance").fit(X)
    with pytest.warns(ConvergenceWarning, match="fell back to the exact"):
        theta = est.theta_
    conv = est.convergence_
    assert conv["method"] == "importance->exact"
    assert conv["weight_ess_fraction"] < MIN_ESS_FRACTION or conv["pareto_k"] > PARETO_K_MAX
    post = AdaptiveLDPFrequencyEstimator(n_categories=20, epsilon=1.0, random_state=7, decoder="posterior").fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        np.testing.assert_array_equal(theta, post.theta_)
    for key in ("rhat", "ess", "n_draws"):
        assert conv[key] == post.convergence_[key]
    np.testing.assert_array_equal(est.sample_posterior(20, random_state=2), post.sample_posterior(20, random_state=2))


def test_refusals_and_bounds():
    X = _users(6, 200, 0)
    with pytest.raises(ValueError, match="decoder='importance' needs a static mechanism"):
        AdaptiveLDPFrequencyEstimator(n_categories=6, epsilon=1.0, mechanism="rrrr", decoder="importance",
                                      random_state=0).fit(X)
    with pytest.raises(ValueError, match="decoder"):
        AdaptiveLDPFrequencyEstimator(n_categories=6, epsilon=1.0, decoder="importanc", random_state=0).fit(X)
    big = AdaptiveLDPFrequencyEstimator(n_categories=130, epsilon=1.0, decoder="importance", random_state=0)
    with pytest.raises(ValueError, match="up to 128 categories"):
        big.fit(_users(130, 500, 0))  # refused when fitting (review HQV), not when theta_ is read


def test_clone_pickle_set_params_and_reproducibility():
    X = _users(20, 6000, 8)
    est = AdaptiveLDPFrequencyEstimator(n_categories=20, epsilon=0.5, random_state=9, decoder="importance")
    assert clone(est).get_params()["decoder"] == "importance"
    est.fit(X)
    theta = est.theta_
    again = AdaptiveLDPFrequencyEstimator(n_categories=20, epsilon=0.5, random_state=9, decoder="importance").fit(X)
    np.testing.assert_array_equal(again.theta_, theta)
    loaded = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(loaded.theta_, theta)
    s1 = est.sample_posterior(30, random_state=4)
    np.testing.assert_array_equal(s1, loaded.sample_posterior(30, random_state=4))
    assert not np.array_equal(s1, est.sample_posterior(30, random_state=5))
    np.testing.assert_array_equal(est.sample_posterior(30), est.sample_posterior(30))  # the read stream
    # set_params after the fit (a compute knob): the exact chain, then back
    est.set_params(decoder="posterior")
    assert est.convergence_["method"] == "mcmc"
    est.set_params(decoder="importance")
    np.testing.assert_array_equal(est.theta_, theta)


def test_decoding_is_post_processing():
    """The recorded responses and later privatisations do not depend on the decoder or on reading theta_,
    intervals or draws (they use a separate read stream)."""
    X = _users(20, 4000, 10)
    a = AdaptiveLDPFrequencyEstimator(n_categories=20, epsilon=1.0, random_state=11, decoder="importance").fit(X)
    b = AdaptiveLDPFrequencyEstimator(n_categories=20, epsilon=1.0, random_state=11, decoder="posterior").fit(X)
    a.theta_, a.credible_interval(0.95), a.sample_posterior(10)
    a.partial_fit(X[:500])
    b.partial_fit(X[:500])
    for u, v in zip(a._chain.store.responses(), b._chain.store.responses()):
        np.testing.assert_array_equal(u, v)
