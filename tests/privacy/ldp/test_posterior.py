"""Issue 13: static two-level mechanisms, the exact (hierarchical) Gibbs posterior, the new defaults."""

import itertools
import pickle
import warnings

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes._fast._ldp_gibbs import expected_counts, latent_counts
from sklearn_bayes.exceptions import SeededNoiseWarning
from sklearn_bayes.privacy._ldp._mechanisms import (
    SetResponseMechanism,
    best_subset_size,
    groups_from_masks,
    oue_privatize,
    ss_privatize,
    ss_variance,
)
from sklearn_bayes.privacy._ldp._hybrid import hybrid_draws
from sklearn_bayes.privacy._ldp._posterior import Groups, _log_dirichlet, gibbs_draws, ibu


def _gen(seed):
    return np.random.default_rng(seed)


def _all_masks(K):
    return [np.array(bits, dtype=bool) for bits in itertools.product([0, 1], repeat=K)]


# ------------------------------------------------------------------ exact privacy
@pytest.mark.parametrize("K", [2, 3, 5, 8])
@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 5.0, 50.0, 800.0])
def test_every_default_mechanism_is_exactly_epsilon_ldp(K, epsilon):
    # the transition matrix of every configuration 'auto', 'subset_selection', 'grr' and
    # 'oue' can produce, enumerated over all 2^K responses, in log space
    kinds = [("subset_selection", best_subset_size(K, epsilon)), ("subset_selection", 1), ("oue", None)]
    kinds += [("subset_selection", k) for k in range(1, K)]
    for kind, k in kinds:
        mech = SetResponseMechanism(K, epsilon, kind, k)
        logp = np.array([[mech.log_probability(m, x) for x in range(K)] for m in _all_masks(K)])
        # every column is a distribution
        np.testing.assert_allclose(np.logaddexp.reduce(logp, axis=0), 0.0, atol=1e-9)
        finite = np.isfinite(logp)
        # a response is either impossible for every x or possible for every x
        assert np.all(finite.all(axis=1) | ~finite.any(axis=1))
        rows = logp[finite.all(axis=1)]
        ratio = (rows.max(axis=1) - rows.min(axis=1)).max()
        assert ratio <= epsilon + 1e-12


def test_privatize_matches_the_exact_probabilities():
    K, eps = 4, 1.0
    for kind, k in [("subset_selection", 2), ("oue", None)]:
        mech = SetResponseMechanism(K, eps, kind, k)
        n = 40_000
        masks = mech.privatize(np.zeros(n, dtype=int), _gen(0))
        keys = masks.astype(int) @ (1 << np.arange(K))
        freq = np.bincount(keys, minlength=2**K) / n
        exact = np.array([np.exp(mech.log_probability(m, 0)) for m in
                          [np.array([(v >> j) & 1 for j in range(K)], dtype=bool) for v in range(2**K)]])
        se = np.sqrt(exact * (1 - exact) / n)
        assert np.all(np.abs(freq - exact) <= 5 * se + 1e-12)


class _Uniforms:
    """A generator stub whose uniforms are all ``value`` (the extreme of numpy's 53-bit grid)."""

    def __init__(self, value):
        self.value = value
        self.keys_drawn = False

    def random(self, size=None):
        # the SS sampler redraws rows whose keys tie (all of them here): redraws are distinct keys
        if isinstance(size, tuple) and self.keys_drawn:
            return np.broadcast_to(np.arange(size[1]) / size[1], size).copy()
        self.keys_drawn |= isinstance(size, tuple)
        return np.full(size, self.value)


@pytest.mark.parametrize("kind, k", [("subset_selection", 1), ("subset_selection", 3), ("oue", None)])
@pytest.mark.parametrize("epsilon", [1.0, 38.0, 800.0])
def test_the_rare_branch_of_the_sampler_is_never_rounded_away(kind, k, epsilon):
    """Every response the exact mechanism can give must stay possible in the float sampler: the
    rare event (x left out of the SS report; an OUE bit set for another category) is drawn
    with its own probability rounded up, so the smallest uniform u = 0 (probability 2^-53)
    reaches it at any epsilon.  Drawing "x kept" with p_in = 1 - q instead rounded q down
    (to exactly 0 above eps ~ 37): the report then always held x, an unbounded privacy loss."""
    mech = SetResponseMechanism(10, epsilon, kind, k)
    x = np.array([0, 4])
    # the samplers behind mech.privatize (which accepts only real generators)
    masks = oue_privatize(x, 10, epsilon, _Uniforms(0.0)) if kind == "oue" else \
        ss_privatize(x, 10, epsilon, k, _Uniforms(0.0))
    if kind == "oue":
        assert masks.all()  # every bit set: the other categories' bits are reachable too
    else:
        assert not masks[np.arange(2), x].any() and np.all(masks.sum(axis=1) == k)
        assert np.isfinite(mech.log_probability(masks[0], 0))  # a response the exact mechanism gives


def test_best_subset_size_minimises_the_variance():
    for K, eps in [(10, 0.5), (20, 1.0), (100, 2.0)]:
        k = best_subset_size(K, eps)
        assert all(ss_variance(K, eps, k) <= ss_variance(K, eps, j) for j in range(1, K))
    assert best_subset_size(10, 5.0) == 1  # GRR when K < 3 e^eps + 2


@pytest.mark.parametrize("K", [4, 10, 11, 37])
def test_best_subset_size_at_extreme_budgets(K):
    """Near eps = 0 the variance is (e^eps - 1)^-2 times a smooth function of k, so the choice is that of the
    limit (it followed the rounding noise of p - q below eps ~ 1e-8: k = 9 at K = 10, eps = 1e-17); no
    warning at any budget; ss_variance is the closed form of p - q = k (K - k)(e^eps - 1) / ((K-1)(k e^eps + K - k))."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        limit = best_subset_size(K, 1e-6)
        assert all(best_subset_size(K, eps) == limit for eps in (1e-300, 1e-17, 1e-12, 1e-9))
        assert abs(limit - K / 2) <= 1  # the limit: the subset size of half the categories
        assert best_subset_size(K, 0.0) == 1 and ss_variance(K, 0.0, 2) == np.inf  # no information at any k
        assert best_subset_size(K, 1000.0) == 1  # GRR, exact at eps >> ln K
        for k in range(1, K):  # against the textbook expression where it does not cancel (eps = 1)
            e = np.e
            p = k * e / (k * e + K - k)
            q = ((k - 1) * p + k * (1 - p)) / (K - 1)
            f = p / K + (1 - 1 / K) * q
            assert ss_variance(K, 1.0, k) == pytest.approx(K * f * (1 - f) / (p - q) ** 2, rel=1e-12)


# ------------------------------------------------------------------ kernels
def _dense_groups(seed=0, K=5, n=300, eps=1.0):
    rng = _gen(seed)
    masks = SetResponseMechanism(K, eps, "subset_selection", 2).privatize(rng.integers(0, K, n), rng)
    return groups_from_masks(masks, eps)


def test_latent_counts_follow_the_exact_conditional():
    # three-level groups (RRRR-like, with a special category) and set groups
    K = 4
    g = Groups(K, np.array([0, 2, 3], dtype=np.int32), np.array([0, 1, 3], dtype=np.int32),
               np.array([2, -1], dtype=np.int32), np.array([0.5, 3.0]), np.array([4.0, 0.0]),
               np.array([1.0, 1.0]), np.array([1, 1], dtype=np.int64))
    theta = np.array([0.1, 0.2, 0.3, 0.4])
    L = g.likelihood_rows()
    p = L * theta
    p /= p.sum(axis=1, keepdims=True)
    expected = p.sum(axis=0)
    n_rep = 20_000
    counts = np.zeros(K, dtype=np.int64)
    total = np.zeros(K)
    rng = _gen(1)
    for _ in range(n_rep):
        latent_counts(rng, theta, g.a_ptr, g.a_idx, g.y, g.f_in, g.f_y, g.f_out, g.count, counts)
        total += counts
    var = (p * (1 - p)).sum(axis=0)
    assert np.all(np.abs(total / n_rep - expected) <= 5 * np.sqrt(var / n_rep))


@pytest.mark.parametrize("with_bits", [True, False])
def test_latent_counts_of_large_sets_follow_the_exact_conditional(with_bits):
    """Sets above 16 members are sampled by rejection from theta (alias table; membership from
    bit rows or by binary search), with the exact draw after 8 rejections: still the exact
    conditional, including a set where rejection nearly always fails (f_in / f_out = e^8 on
    a set of almost no mass), a special category and categories of zero probability."""
    from sklearn_bayes.privacy._ldp._posterior import _set_bits

    K = 40
    rng = _gen(5)
    theta = rng.dirichlet(np.full(K, 0.7))
    theta[[3, 17]] = 0.0
    theta /= theta.sum()
    light = np.argsort(theta)[:20]  # the 20 least probable categories
    sets = [rng.permutation(K)[:20],  # unsorted on input: Groups sorts the member lists
            np.setdiff1d(np.arange(K), [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19])[:25],
            light,
            np.arange(3)]
    ys = [-1, 7, -1, 30]
    f_in = np.array([np.e, 0.5, np.exp(8.0), 2.0])
    f_y = np.array([0.0, 5.0, 0.0, 3.0])
    f_out = np.ones(4)
    a_ptr = np.r_[0, np.cumsum([len(a) for a in sets])].astype(np.int32)
    g = Groups(K, a_ptr, np.concatenate(sets).astype(np.int32), np.array(ys, dtype=np.int32), f_in, f_y, f_out,
               np.array([3, 2, 4, 1], dtype=np.int64))
    assert all(np.all(np.diff(g.a_idx[a_ptr[i]:a_ptr[i + 1]]) > 0) for i in range(4))
    bits = _set_bits(g) if with_bits else None
    assert (bits is not None) == with_bits
    L = g.likelihood_rows()
    p = L * theta
    p /= p.sum(axis=1, keepdims=True)
    expected = g.count @ p
    var = g.count @ (p * (1 - p))
    n_rep = 20_000
    counts = np.zeros(K, dtype=np.int64)
    total = np.zeros(K)
    for _ in range(n_rep):
        latent_counts(rng, theta, g.a_ptr, g.a_idx, g.y, g.f_in, g.f_y, g.f_out, g.count, counts, None, bits)
        total += counts
    assert total[[3, 17]].sum() == 0
    # counts of different responses are independent: the variance of a category's count is
    # the sum of the per-response Bernoulli variances (an upper bound for the multinomial sum)
    assert np.all(np.abs(total / n_rep - expected) <= 5 * np.sqrt(var / n_rep) + 1e-12)


def test_expected_counts_and_ibu_match_dense_em():
    g = _dense_groups()
    L = g.likelihood_rows()
    theta = _gen(2).dirichlet(np.ones(5))
    out = np.zeros(5)
    ll = expected_counts(theta, g.a_ptr, g.a_idx, g.y, g.f_in, g.f_y, g.f_out, g.count, out)
    h = L @ theta
    np.testing.assert_allclose(out, theta * ((g.count / h) @ L), rtol=1e-12)
    assert ll == pytest.approx(float(g.count @ np.log(h)), rel=1e-12)
    dense = np.full(5, 0.2)
    for _ in range(3000):
        dense = dense * ((g.count / (L @ dense)) @ L) / g.count.sum()
    np.testing.assert_allclose(ibu(g, n_iter=3000, tol=0.0), dense, atol=1e-10)


def test_log_dirichlet_does_not_underflow():
    a = np.array([1e-3, 1e-3, 1e-3, 50.0])
    lt = _log_dirichlet(_gen(3), a)
    assert np.all(np.isfinite(lt))
    assert np.logaddexp.reduce(lt) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("sampler", [gibbs_draws, hybrid_draws])
def test_samplers_target_the_exact_posterior(sampler, k3_posterior_moments):
    # K = 3, fixed Dir(1) prior: the posterior mean by quadrature on a fine simplex grid
    g = _dense_groups(seed=4, K=3, n=40, eps=1.0)
    mean, sd = k3_posterior_moments(g)
    draws, _ = sampler(g, 20_000, 500, _gen(5), prior=np.ones(3))
    # Monte Carlo error with autocorrelated draws: effective size >= 20000 / 50
    assert np.all(np.abs(draws.mean(axis=0) - mean) <= 5 * sd / np.sqrt(20_000 / 50))


def test_hierarchical_rho_is_learnt():
    # sparse truth: the learnt concentration is far below the Dir(1) default of the papers
    rng = _gen(6)
    K = 20
    theta = rng.dirichlet(np.full(K, 0.05))
    masks = SetResponseMechanism(K, 2.0, "subset_selection", 2).privatize(rng.choice(K, 4000, p=theta), rng)
    _, rho = gibbs_draws(groups_from_masks(masks, 2.0), 300, 200, _gen(7), prior="hierarchical")
    assert np.median(rho) < 0.3


# ------------------------------------------------------------------ estimator: defaults and API
def _fit_default(K=10, rho=0.05, T=3000, eps=1.0, seed=0, **params):
    rng = _gen(seed)
    theta = rng.dirichlet(np.full(K, rho))
    X = rng.choice(K, T, p=theta).reshape(-1, 1)
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=_gen(seed + 1), **params)
    return est.fit(X), theta


def test_defaults_are_the_static_mechanism_with_the_hierarchical_prior():
    est = AdaptiveLDPFrequencyEstimator()
    assert (est.mechanism, est.prior, est.point_estimate) == ("auto", "hierarchical", "tv")
    est, _ = _fit_default()
    assert est.mechanism_ == "subset_selection"
    assert est.client_mechanism().subset_size == best_subset_size(10, 1.0)
    assert est.theta_.sum() == pytest.approx(1.0)
    assert np.all(est.subset_sizes_ == best_subset_size(10, 1.0))


def test_default_beats_the_papers_mode_on_sparse_theta():
    # regression for issue 13 (TV 0.245 vs 0.072 for SS+IBU at K=20, eps=1, rho=0.1):
    # same users, same epsilon; the papers' adaptive RRRR under Dir(1) vs the default
    # (3 seeds: 0.052 vs 0.081 mean TV)
    tv_ours, tv_papers = [], []
    for seed in (10, 20, 30):
        ours, theta = _fit_default(K=10, rho=0.05, T=3000, seed=seed)
        papers, _ = _fit_default(K=10, rho=0.05, T=3000, seed=seed, mechanism="rrrr", prior=1.0)
        tv_ours.append(0.5 * np.abs(ours.theta_ - theta).sum())
        tv_papers.append(0.5 * np.abs(papers.theta_ - theta).sum())
    assert np.mean(tv_ours) < 0.8 * np.mean(tv_papers)


@pytest.mark.slow
def test_credible_intervals_are_calibrated_small():
    # theta* ~ Dir(rho) is the hierarchical model: 95 % intervals cover ~95 % of (k, run)
    hits = []
    for seed, rho in itertools.product(range(6), (0.1, 1.0)):
        est, theta = _fit_default(K=6, rho=rho, T=1500, seed=100 + seed, n_final_steps=1000)
        ci = est.credible_interval(0.95, n_samples=1000)
        hits.extend((ci[:, 0] <= theta) & (theta <= ci[:, 1]))
    # 72 pairs: a binomial(72, 0.95) falls below 0.85 with probability < 0.2 %
    assert np.mean(hits) >= 0.85


@pytest.mark.parametrize("mechanism", ["subset_selection", "grr", "oue"])
def test_deployment_records_client_responses(mechanism):
    K, eps = 6, 1.0
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, mechanism=mechanism, n_final_steps=200,
                                        random_state=_gen(0))
    client = est.client_mechanism()
    masks = client.privatize(_gen(1).integers(0, K, 500), _gen(2))
    est.partial_fit_responses(masks[:300])
    est.partial_fit_responses(masks[300:], update="defer")
    assert est.n_responses_ == 500
    with pytest.raises(ValueError, match="static protocol"):
        est.propose_subset()
    with pytest.raises(ValueError, match="static protocol"):
        est.propose_subsets(3)
    assert est.refresh() is est
    # the same responses in one call give the same posterior
    one = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, mechanism=mechanism, n_final_steps=200,
                                        random_state=_gen(0)).partial_fit_responses(masks[::-1])
    np.testing.assert_array_equal(one.theta_, est.theta_)


def test_static_responses_are_validated_and_a_rejected_call_changes_nothing():
    est = AdaptiveLDPFrequencyEstimator(n_categories=5, epsilon=1.0, mechanism="subset_selection",
                                        n_final_steps=100, random_state=_gen(0))
    k = est.client_mechanism().subset_size
    good = est.client_mechanism().privatize(np.arange(5), _gen(1))
    est.partial_fit_responses(good)
    before = pickle.dumps(est)
    bad_size = good.copy()
    bad_size[0] = False
    with pytest.raises(ValueError, match=f"subset_size={k}"):
        est.partial_fit_responses(bad_size)
    with pytest.raises(ValueError, match="subsets must be None"):
        est.partial_fit_responses(good, [[0]])
    with pytest.raises(ValueError, match="boolean array of shape"):
        est.partial_fit_responses(good.astype(int))
    assert pickle.dumps(est) == before


def test_parameters_are_frozen_and_pickling_continues():
    est, _ = _fit_default(T=500)
    est.set_params(mechanism="oue")
    with pytest.raises(ValueError, match="mechanism was 'auto'"):
        est.partial_fit([[0]])
    est.set_params(mechanism="auto", prior=1.0)
    with pytest.raises(ValueError, match="prior was 'hierarchical'"):
        est.partial_fit([[0]])
    est.set_params(prior="hierarchical")
    copy = pickle.loads(pickle.dumps(est))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        est.partial_fit([[1], [2]])
        copy.partial_fit([[1], [2]])
    np.testing.assert_array_equal(est.theta_, copy.theta_)


def test_merge_static_stores():
    K = 5
    kw = dict(n_categories=K, epsilon=1.0, mechanism="subset_selection", n_final_steps=100)
    a = AdaptiveLDPFrequencyEstimator(random_state=_gen(0), **kw)
    b = AdaptiveLDPFrequencyEstimator(random_state=_gen(1), **kw)
    masks = a.client_mechanism().privatize(_gen(2).integers(0, K, 400), _gen(3))
    a.partial_fit_responses(masks[:200])
    b.partial_fit_responses(masks[200:])
    a.merge(b)
    whole = AdaptiveLDPFrequencyEstimator(random_state=_gen(0), **kw).partial_fit_responses(masks)
    assert a.n_responses_ == 400
    np.testing.assert_array_equal(a.theta_, whole.theta_)
    c = AdaptiveLDPFrequencyEstimator(random_state=_gen(1), **dict(kw, mechanism="oue"))
    c.partial_fit_responses(c.client_mechanism().privatize([0, 1], _gen(4)))
    with pytest.raises(ValueError, match="mechanism"):
        a.merge(c)


def test_point_estimates():
    est, _ = _fit_default(T=800, n_final_steps=400)
    values = {}
    for name in ("tv", "median", "mean"):
        est.set_params(point_estimate=name)
        values[name] = est.theta_
        assert values[name].sum() == pytest.approx(1.0)
    assert not np.array_equal(values["median"], values["mean"])
    assert not np.array_equal(values["tv"], values["mean"])


def test_tv_point_estimate_is_the_constrained_l1_optimum():
    # the common-level quantiles minimise the mean L1 distance to the draws among
    # probability vectors: no random probability vector nearby does better
    from sklearn_bayes.privacy._ldp._posterior import tv_point_estimate

    rng = _gen(11)
    draws = rng.dirichlet([0.05, 0.05, 0.3, 2.0, 5.0], size=4001)
    t = tv_point_estimate(draws)
    assert t.sum() == pytest.approx(1.0) and np.all(t >= 0)
    loss = np.abs(draws - t).sum(axis=1).mean()
    for _ in range(300):
        u = np.clip(t + rng.normal(0, 0.01, 5), 0, None)
        u /= u.sum()
        assert np.abs(draws - u).sum(axis=1).mean() >= loss - 1e-12
    # medians summing to less than 1: tau > 1/2, no collapse onto the largest medians
    sparse = rng.dirichlet(np.full(50, 0.02), size=2000)
    assert tv_point_estimate(sparse).sum() == pytest.approx(1.0)


def _tv_by_bisection(draws, tol=1e-12):
    # the 'tv' summary before issue 28's round 7: the common level tau by bisection to tol
    S = np.sort(draws, axis=0)
    n = S.shape[0]

    def q(tau):
        pos = tau * (n - 1)
        i = min(int(np.floor(pos)), n - 2)
        return (1 - (pos - i)) * S[i] + (pos - i) * S[i + 1]

    lo, hi = 0.0, 1.0
    while hi - lo >= tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if q(mid).sum() < 1.0 else (lo, mid)
    t = q(0.5 * (lo + hi))
    return t / t.sum()


@pytest.mark.parametrize("K, n, alpha", [(2, 2, 1.0), (5, 201, 0.05), (10, 300, 50.0), (50, 451, 0.02),
                                         (200, 40, 2.0)])
def test_tv_crossing_segment_equals_the_bisection_within_its_tolerance(K, n, alpha):
    # round 7: the level tau is read off the sorted rows' sums (the crossing segment) instead of
    # bisected to 1e-12: tau within 1e-12, so every coordinate within 1e-12 (n - 1) times the largest
    # gap between consecutive sorted draws (the slope of Q_k in tau), plus rounding
    from sklearn_bayes.privacy._ldp._posterior import tv_point_estimate

    draws = _gen(K * n).dirichlet(np.full(K, alpha), size=n)
    gap = np.diff(np.sort(draws, axis=0), axis=0).max()
    t = tv_point_estimate(draws)
    assert np.abs(t - _tv_by_bisection(draws)).max() <= 1e-12 * (n - 1) * gap + 1e-15
    assert abs(t.sum() - 1.0) <= K * 1e-16 and np.all(t >= 0)
    # the ends: a level of 0 when the smallest draws already sum to 1, 1 when no row reaches 1
    one = np.array([[0.2, 0.8], [0.3, 0.9]])
    np.testing.assert_array_equal(tv_point_estimate(one), one[0])
    top = np.array([0.3, 0.4])
    np.testing.assert_array_equal(tv_point_estimate(np.array([[0.1, 0.2], top])), top / top.sum())


def test_rrrr_with_the_hierarchical_prior_uses_the_exact_sampler():
    est, theta = _fit_default(T=1500, mechanism="rrrr", n_final_steps=400)
    assert est.mechanism_ == "rrrr"
    assert est.theta_.sum() == pytest.approx(1.0)
    assert 0.5 * np.abs(est.theta_ - theta).sum() < 0.3
    assert est.propose_subset().ndim == 1


def test_tiny_concentration_gives_finite_estimates():
    # regression (found by the benchmark): with K * rho tiny the scale S ~ Gamma(K rho) of
    # the MALA step underflowed to 0 and theta_ became NaN (K=4, GRR, 14/20 seeds at T=60)
    for seed in range(8):
        rng = _gen(seed)
        X = rng.choice(4, 60, p=[0.97, 0.01, 0.01, 0.01]).reshape(-1, 1)
        est = AdaptiveLDPFrequencyEstimator(n_categories=4, epsilon=1.0, n_final_steps=400,
                                            random_state=_gen(seed + 50)).fit(X)
        assert est.mechanism_ == "grr"
        assert np.all(np.isfinite(est.theta_)) and est.theta_.sum() == pytest.approx(1.0)
        assert np.all(np.isfinite(est.credible_interval(n_samples=200)))


def test_static_store_keeps_no_member_lists():
    # regression: every (mostly distinct) reported set also kept a K-long int32 member
    # list and a K-byte index key, 6 K bytes per response (6 GB for 10^6 users at K = 1000);
    # now K bytes (the mask) plus K / 8 (the packed key)
    K, n = 1000, 500
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, random_state=_gen(0))
    est.partial_fit_responses(est.client_mechanism().privatize(_gen(1).integers(0, K, n), _gen(2)))
    assert len(pickle.dumps(est)) < 1.5 * K * n


def test_dense_latent_counts_follow_the_exact_conditional():
    """The per-group multinomial path of the hybrid chain (few distinct responses, issue 28 round 3):
    the mean latent counts are ``sum_g c_g p(. | y_g, theta)``, within 5 standard errors."""
    from sklearn_bayes.privacy._ldp._posterior import _dense_latent, _dense_latent_counts

    g = _dense_groups(seed=2, K=5, n=2000, eps=1.0)
    assert _dense_latent(g)  # G = 10 subsets of 2, 4 G K = 200 <= 2000 responses
    theta = np.array([0.05, 0.1, 0.15, 0.3, 0.4])
    p = g.likelihood_rows() * theta
    p /= p.sum(axis=1, keepdims=True)
    expected = g.count @ p
    var = g.count @ (p * (1 - p))
    rng, n_rep = _gen(3), 4000
    total = sum(_dense_latent_counts(rng, g.likelihood_rows(), theta, g.count) for _ in range(n_rep))
    assert np.all(np.abs(total / n_rep - expected) <= 5 * np.sqrt(var / n_rep))
    assert total.sum() == n_rep * g.n_responses


def test_compiled_coordinate_jumps_match_the_python_steps():
    """The kernel ``coordinate_jumps`` takes the same decisions as the K Metropolis-Hastings steps
    written out in Python with the same proposals and uniforms (the arithmetic is the same
    ``_mala_logpost``: the log posteriors agree to rounding)."""
    from sklearn_bayes._fast._ldp_mala import coordinate_jumps, mala_logpost
    from sklearn_bayes.privacy._ldp._posterior import _mala_form

    g = _dense_groups(seed=6, K=6, n=500, eps=1.0)
    form, prior = _mala_form(g), np.full(6, 0.3)
    rng = _gen(7)
    z = np.log(rng.dirichlet(np.ones(6)))
    accepted = 0
    for _ in range(50):
        props = np.log(rng.gamma(prior + 1.0)) + np.log(rng.random(6)) / prior
        log_u = np.log(rng.random(6))
        ref, lp = z.copy(), mala_logpost(z, *form, prior)[0]
        for k in range(6):
            old, ref[k] = ref[k], props[k]
            new = mala_logpost(ref, *form, prior)[0]
            if np.isfinite(new) and log_u[k] < new - lp - (prior[k] * ref[k] - np.exp(ref[k])) + (
                    prior[k] * old - np.exp(old)):
                lp, accepted = new, accepted + 1
            else:
                ref[k] = old
        out = coordinate_jumps(z, mala_logpost(z, *form, prior)[0], props, log_u, *form, prior,
                               np.arange(6, dtype=np.int32))
        np.testing.assert_array_equal(z, ref)
        assert out == pytest.approx(lp, rel=1e-12)
    assert 0 < accepted < 300  # both branches taken


@pytest.mark.parametrize("K, eps, mechanism", [(6, 1.0, "subset_selection"), (12, 0.5, "subset_selection"),
                                               (8, 2.0, "grr"), (7, 1.0, "oue")])
def test_incremental_coordinate_jumps_match_the_full_kernel(K, eps, mechanism):
    """``coordinate_jumps_incremental`` (O(G + deg_k) per step) takes the same decisions as the full
    evaluation for the same proposals (in order and random scans; SS, GRR, OUE groups); its
    running ``ln pi`` equals a fresh evaluation within rounding (1e-9 relative: a few hundred
    accepted updates of a sum of order 1e2-1e3)."""
    from sklearn_bayes._fast._ldp_mala import mala_logpost
    from sklearn_bayes.privacy._ldp._posterior import _coordinate_jumps, _mala_form, jump_lists

    x = _gen(K).integers(0, K, 800)
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, mechanism=mechanism, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        est.fit(x[:, None])
    g = est._chain.exact_groups(eps)
    form, prior = _mala_form(g), np.full(K, 0.4)
    lists = jump_lists(form, K)
    z1 = np.log(_gen(2).dirichlet(np.ones(K)))
    z2 = z1.copy()
    lp1 = lp2 = mala_logpost(z1, *form, prior)[0]
    moved = 0
    for it in range(100):
        before = z1.copy()
        lp1 = _coordinate_jumps(_gen(it), z1, lp1, form, prior, 3 if it % 2 else None)
        lp2 = _coordinate_jumps(_gen(it), z2, lp2, form, prior, 3 if it % 2 else None, lists)
        np.testing.assert_array_equal(z1, z2)
        moved += int(np.any(z1 != before))
    assert moved > 0
    assert lp2 == pytest.approx(mala_logpost(z2, *form, prior)[0], rel=1e-9)
    assert not np.any(lists[4])  # the scratch weights are left at zero


def test_cached_rho_draws_are_the_uncached_draws():
    """``_draw_rho`` with a ``_RhoTerms`` cache (issue 28, round 4) draws the same grid points and leaves
    the generator in the same state as without (same log-probabilities, numpy's ``choice`` rule);
    both branches of the distinct-count step (bincount and ``np.unique``) and reused cache rows."""
    from sklearn_bayes.privacy._ldp._posterior import RHO_GRID, _draw_rho, _RhoTerms

    rs = _gen(11)
    cache = _RhoTerms(RHO_GRID)
    branches = set()
    for t in range(600):
        K = int(rs.integers(2, 200))
        n = int(rs.integers(1, 10) if t % 3 == 0 else rs.integers(1, 150_000))
        counts = rs.multinomial(n, rs.dirichlet(np.full(K, rs.uniform(0.02, 5.0))))
        branches.add(bool(counts.max() <= 4 * K + (1 << 14)))
        seed = int(rs.integers(1 << 40))
        g1, g2 = _gen(seed), _gen(seed)
        assert _draw_rho(g1, counts, RHO_GRID) == _draw_rho(g2, counts, RHO_GRID, cache)
        assert g1.random() == g2.random()
    assert branches == {True, False}


@pytest.mark.parametrize("kind", ["grr", "subset_selection", "three-level"])
def test_mixture_latent_counts_follow_the_exact_conditional(kind):
    """The mixture draw of the latent counts (issue 28, round 4) has the law of ``sum_g
    Multinomial(c_g, p(. | y_g, theta))``: mean and variance of every category's count within 5
    standard errors (the variance's SE from the normal approximation, ``sqrt(2 / (R - 1))``
    relative); GRR groups (no sets), SS groups (sets) and groups with both a set and a special
    category."""
    from sklearn_bayes.privacy._ldp._posterior import _mixture_latent_counts, _mixture_parts

    K = 6
    theta = np.array([0.02, 0.08, 0.1, 0.2, 0.25, 0.35])
    if kind == "three-level":
        g = Groups(K, np.array([0, 2, 2, 5], dtype=np.int32), np.array([0, 4, 1, 2, 5], dtype=np.int32),
                   np.array([3, 1, -1], dtype=np.int32), np.array([2.0, 1.0, 3.0]), np.array([5.0, 4.0, 0.0]),
                   np.array([1.0, 1.0, 0.5]), np.array([7, 3, 11], dtype=np.int64))
    else:
        rng = _gen(12)
        k = 1 if kind == "grr" else 2
        masks = SetResponseMechanism(K, 1.0, "subset_selection", k).privatize(rng.integers(0, K, 60), rng)
        g = groups_from_masks(masks, 1.0)
    parts = _mixture_parts(g)
    assert (parts[3] is None) == (kind == "grr")
    p = g.likelihood_rows() * theta
    p /= p.sum(axis=1, keepdims=True)
    mean, var = g.count @ p, g.count @ (p * (1 - p))
    rng, R = _gen(13), 20_000
    N = np.array([_mixture_latent_counts(rng, parts, theta, g.count) for _ in range(R)])
    assert np.all(N.sum(axis=1) == g.n_responses)
    assert np.all(np.abs(N.mean(axis=0) - mean) <= 5 * np.sqrt(var / R))
    assert np.all(np.abs(N.var(axis=0, ddof=1) / var - 1) <= 5 * np.sqrt(2 / (R - 1)))


def test_mixture_is_not_used_when_a_weight_would_be_negative():
    # f_in < f_out: the mixture form has a negative weight; the chain keeps the per-row draw
    from sklearn_bayes.privacy._ldp._posterior import _mixture_parts

    g = Groups(4, np.array([0, 2, 3], dtype=np.int32), np.array([0, 1, 3], dtype=np.int32),
               np.array([2, -1], dtype=np.int32), np.array([0.5, 3.0]), np.array([4.0, 0.0]),
               np.array([1.0, 1.0]), np.array([1, 1], dtype=np.int64))
    assert _mixture_parts(g) is None


def test_mala_steps_auto_depends_on_the_latent_step():
    """``mala_steps='auto'`` (issue 28, round 5): 5 Langevin steps per iteration with few distinct
    responses (latent counts per group), 10 with a latent category per user."""
    from sklearn_bayes.privacy._ldp._posterior import _dense_latent, resolve_mala_steps

    few = _dense_groups(seed=1, K=4, n=2000, eps=1.0)
    rng = _gen(3)
    masks = SetResponseMechanism(12, 1.0, "subset_selection", 4).privatize(rng.integers(0, 12, 300), rng)
    many = groups_from_masks(masks, 1.0)
    assert _dense_latent(few) and not _dense_latent(many)
    assert resolve_mala_steps("auto", few) == 5 and resolve_mala_steps("auto", many) == 10
    assert resolve_mala_steps(3, many) == 3
    with pytest.raises(ValueError, match="mala_steps"):
        resolve_mala_steps("fast", few)
