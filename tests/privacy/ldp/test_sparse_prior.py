"""The spike/bulk-or-symmetric hierarchical prior of round 12 (issue 28): ``_sparse_prior.SpikeBulkChoice``."""

import itertools

import numpy as np
import pytest
from scipy.special import betaln, gammaln

from sklearn_bayes.privacy._ldp._mechanisms import SetResponseMechanism, groups_from_masks
from sklearn_bayes.privacy._ldp._posterior import RHO_GRID, hybrid_chain
from sklearn_bayes.privacy._ldp._sparse_prior import SpikeBulkChoice, symmetric_probability


def _states(K, grid):
    return [(np.array(z, dtype=bool), i) for z in itertools.product([0, 1], repeat=K) for i in range(grid.size)]


def test_prior_of_z_is_the_stated_mixture():
    # summed over all 2^K configurations it is one; z = 1_K holds s + (1 - s) a / (a + K)
    for K, a, s in ((3, 3.0, 0.5), (5, 9.0, 0.25), (4, 1.0, 0.0)):
        h = SpikeBulkChoice(K, w_shape=a, symmetric_mass=s)
        m = np.arange(K + 1)
        binom = np.exp(gammaln(K + 1) - gammaln(m + 1) - gammaln(K - m + 1))
        assert np.sum(binom * np.exp(h.log_prior_z)) == pytest.approx(1.0, abs=1e-12)
        assert np.exp(h.log_prior_z[K]) == pytest.approx(s + (1 - s) * a / (a + K), rel=1e-12)
        # one configuration with m ones under the spike/bulk component alone: E[w^m (1 - w)^(K - m)]
        assert np.exp(h.log_prior_z[1]) == pytest.approx(
            (1 - s) * np.exp(betaln(a + 1, 1 + K - 1) - betaln(a, 1)), rel=1e-12)
        assert h.symmetric_share() == pytest.approx(s / np.exp(h.log_prior_z[K]), rel=1e-12)


def test_log_joint_is_the_dirichlet_multinomial_of_the_concentrations():
    h = SpikeBulkChoice(3)
    z, rho, n = np.array([1, 0, 1], dtype=bool), 0.4, np.array([7, 0, 2])
    a = np.array([0.4, max(RHO_GRID[0], 0.4 / 30), 0.4])
    ref = (h.log_prior_z[2] + gammaln(a.sum()) - gammaln(a.sum() + 9) + np.sum(gammaln(a + n) - gammaln(a)))
    assert h.log_joint(z, rho, n) == pytest.approx(ref, rel=1e-13)
    np.testing.assert_array_equal(h.concentrations(z, rho), a)


@pytest.mark.parametrize("counts", [[30, 12, 0], [5, 5, 5], [0, 0, 40]])
def test_hyperparameter_sweep_leaves_the_exact_posterior_invariant(counts):
    """K = 3: the exact posterior of (z, rho) given the latent counts by enumeration (8 x 97 states) is
    invariant under the transition matrix of one sweep (z_1, z_2, z_3, then rho), built from the step's
    own conditionals; within rounding."""
    K, grid = 3, RHO_GRID
    h = SpikeBulkChoice(K)
    states = _states(K, grid)
    index = {(tuple(z), i): s for s, (z, i) in enumerate(states)}
    lj = np.array([h.log_joint(z, grid[i], counts) for z, i in states])
    pi = np.exp(lj - lj.max())
    pi /= pi.sum()
    P = np.eye(len(states))
    for j in range(K):
        T = np.zeros_like(P)
        for s, (z, i) in enumerate(states):
            p1 = h.z_conditional(j, counts, z, grid[i])
            for v, p in ((1, p1), (0, 1.0 - p1)):
                w = z.copy()
                w[j] = bool(v)
                T[s, index[(tuple(w), i)]] += p
        P = P @ T
    T = np.zeros_like(P)
    for s, (z, i) in enumerate(states):
        T[s, [index[(tuple(z), k)] for k in range(grid.size)]] = h.rho_conditional(counts, z)
    P = P @ T
    np.testing.assert_allclose(pi @ P, pi, rtol=0, atol=1e-12)
    # and the chain moves: from z = 1_K it reaches every z in one sweep where the counts allow
    assert np.all(P.sum(axis=1) == pytest.approx(1.0, abs=1e-12))


def test_step_is_seeded_and_draws_from_the_conditionals():
    h1, h2 = SpikeBulkChoice(4), SpikeBulkChoice(4)
    n = np.array([50, 3, 0, 20])
    a = [h1.step(np.random.default_rng(3), n) for _ in range(5)]
    b = [h2.step(np.random.default_rng(3), n) for _ in range(5)]
    np.testing.assert_array_equal(np.array(a), np.array(b))
    # the first z-uniform of a fresh state decides z_0 against its conditional at z = 1_4, rho = 1
    h = SpikeBulkChoice(4)
    p = h.z_conditional(0, n)
    u = np.random.default_rng(11).random()
    h.step(np.random.default_rng(11), n)
    assert h.z[0] == (u < p)


@pytest.mark.parametrize("bad", [dict(w_shape=0.0), dict(symmetric_mass=1.0), dict(symmetric_mass=-0.1),
                                 dict(spike_divisor=0.5)])
def test_bad_parameters_are_refused(bad):
    with pytest.raises(ValueError, match="SpikeBulkChoice"):
        SpikeBulkChoice(3, **bad)


def _exact_under_choice(g, h):
    """E[theta | y] and P(z = 1_K | y) under ``h``'s prior by enumeration of every response's latent category
    (``g`` expanded to single responses) and of (z, rho)."""
    L = g.likelihood_rows()
    resp = np.repeat(np.arange(g.count.size), g.count)
    K, N = g.n_categories, resp.size
    X = np.array(list(itertools.product(range(K), repeat=N)))
    logw = np.log(L[resp[None, :], X]).sum(axis=1)
    n_of = np.stack([(X == k).sum(axis=1) for k in range(K)], axis=1)
    keys, inv = np.unique(n_of, axis=0, return_inverse=True)
    W = np.zeros(len(keys))
    np.add.at(W, inv.ravel(), np.exp(logw - logw.max()))
    mean, total, ones = np.zeros(K), 0.0, 0.0
    for z, i in _states(K, RHO_GRID):
        a = h.concentrations(z, RHO_GRID[i])
        for n, w in zip(keys, W):
            p = w * np.exp(h.log_joint(z, RHO_GRID[i], n))
            total += p
            mean += p * (a + n) / (a.sum() + N)
            ones += p * bool(z.all())
    return mean / total, ones / total


@pytest.mark.slow
def test_reference_chain_with_the_choice_prior_targets_the_exact_posterior():
    """K = 3, eight SS responses at eps = 3 favouring two categories: the reference chain with the choice
    prior against the exact posterior (enumeration of the 3^8 latent allocations and of (z, rho)): the mean of
    theta and P(z = 1_K | y) within 5 Monte Carlo SEs (batch means over 40 batches)."""
    rng = np.random.default_rng(5)
    masks = SetResponseMechanism(3, 3.0, "subset_selection", 1).privatize(np.array([0, 0, 0, 0, 1, 1, 1, 0]), rng)
    g = groups_from_masks(masks, 3.0)
    h = SpikeBulkChoice(3)
    mean, p_ones = _exact_under_choice(g, h)
    chain = hybrid_chain(g, 200, np.random.default_rng(6), prior=h)
    for _ in range(200):
        next(chain)
    n = 24_000
    th, ones = np.empty((n, 3)), np.empty(n)
    for i in range(n):
        th[i] = next(chain)[0]
        ones[i] = h.z.all()
    def se(x):
        b = x.reshape(40, -1, *x.shape[1:]).mean(axis=1)
        return b.std(axis=0, ddof=1) / np.sqrt(40)
    assert 0.05 < p_ones < 0.95  # the check is informative: both models carry mass
    assert np.all(np.abs(th.mean(axis=0) - mean) <= 5 * se(th))
    assert abs(ones.mean() - p_ones) <= 5 * se(ones)


def test_hierarchical_and_fixed_priors_of_the_reference_chain_draw_as_before():
    """The hook for a step object leaves the string and array priors' draws untouched: the reference chain
    against the compiled chain (which never sees the hook), as in the hybrid tests."""
    from sklearn_bayes.privacy._ldp._hybrid import HybridChain

    rng = np.random.default_rng(2)
    masks = SetResponseMechanism(5, 1.0, "subset_selection", 2).privatize(rng.integers(0, 5, 300), rng)
    g = groups_from_masks(masks, 1.0)
    for prior in ("hierarchical", np.full(5, 0.7)):
        ref = hybrid_chain(g, 40, np.random.default_rng(8), prior=prior)
        a = np.array([next(ref)[0] for _ in range(60)])
        ch = HybridChain(g, 40, np.random.default_rng(8), prior=prior)
        assert ch.compiled
        b = ch.draw(60)[0]
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------ the estimator's prior='spike-bulk'
def _data(K=5, n=1500, seed=0):
    rng = np.random.default_rng(seed)
    theta = np.r_[np.full(K - 2, 0.9 / (K - 2)), 0.095, 0.005]
    return rng.choice(K, n, p=theta).reshape(-1, 1)


def _fit(prior="spike-bulk", seed=3, **params):
    import warnings

    from sklearn_bayes import AdaptiveLDPFrequencyEstimator

    est = AdaptiveLDPFrequencyEstimator(n_categories=5, epsilon=1.0, random_state=np.random.default_rng(seed),
                                        prior=prior, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(_data())
        est.theta_
    return est


@pytest.mark.parametrize("decoder", ["posterior", "counts", "importance"])
def test_every_route_draws_under_the_choice_prior_and_is_seeded(decoder, monkeypatch):
    """Each route's chain gets a fresh SpikeBulkChoice (the Python reference chain); two seeded fits agree bit
    for bit and differ from the symmetric prior's on the same responses."""
    import sklearn_bayes.privacy._ldp._hybrid as H

    seen = []
    original = H.hybrid_chain
    monkeypatch.setattr(H, "hybrid_chain", lambda *a, **k: (seen.append(k["prior"]), original(*a, **k))[1])
    a = _fit(decoder=decoder)
    assert seen and all(isinstance(p, SpikeBulkChoice) for p in seen)
    b = _fit(decoder=decoder)
    np.testing.assert_array_equal(a.theta_, b.theta_)
    assert a.convergence_["method"] == {"posterior": "mcmc"}.get(decoder, decoder)
    assert 0 < a.convergence_["p_symmetric"] < 1 and "symmetric_visits" not in a.convergence_
    h = _fit("hierarchical", decoder=decoder)
    np.testing.assert_array_equal(h._support_counts()[0], a._support_counts()[0])  # the same responses
    assert not np.array_equal(a.theta_, h.theta_)
    assert "p_symmetric" not in h.convergence_


def test_spike_bulk_prior_survives_clone_and_pickle_and_is_frozen():
    import pickle

    from sklearn.base import clone

    est = _fit(decoder="counts")
    assert clone(est).get_params()["prior"] == "spike-bulk"
    back = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(back.theta_, est.theta_)
    s1 = back.sample_posterior(50, random_state=1)
    s2 = pickle.loads(pickle.dumps(est)).sample_posterior(50, random_state=1)
    np.testing.assert_array_equal(s1, s2)
    est.set_params(prior="hierarchical")
    with pytest.raises(ValueError, match="prior was 'spike-bulk'"):
        est.partial_fit(_data(n=10, seed=1))


def test_unknown_prior_string_names_prior():
    from sklearn_bayes import AdaptiveLDPFrequencyEstimator

    with pytest.raises(ValueError, match="prior"):
        AdaptiveLDPFrequencyEstimator(n_categories=5, prior="spike").fit(_data())


def test_merging_spike_bulk_with_hierarchical_is_refused():
    a, b = _fit(decoder="counts"), _fit("hierarchical", seed=4, decoder="counts")
    with pytest.raises(ValueError, match="prior="):
        a.merge(b)


def test_rrrr_collects_the_same_responses_under_both_string_priors():
    """mechanism='rrrr': the online chain that proposes the subsets uses Dir(1) under either string, so the same
    seed records the very same responses; only the posterior behind theta_ differs."""
    import warnings

    from sklearn_bayes import AdaptiveLDPFrequencyEstimator

    X = np.random.default_rng(0).choice(4, 300, p=[0.5, 0.3, 0.19, 0.01]).reshape(-1, 1)
    fits = {}
    for prior in ("hierarchical", "spike-bulk"):
        est = AdaptiveLDPFrequencyEstimator(n_categories=4, epsilon=1.0, mechanism="rrrr", prior=prior,
                                            random_state=np.random.default_rng(1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X)
            est.theta_
        fits[prior] = est
    ga, gb = (f._posterior_groups() for f in fits.values())
    for name in ("a_ptr", "a_idx", "y", "f_in", "f_y", "f_out", "count"):
        np.testing.assert_array_equal(getattr(ga, name), getattr(gb, name))
    assert not np.array_equal(fits["hierarchical"].theta_, fits["spike-bulk"].theta_)


def test_symmetric_probability_is_the_share_of_visits_weighted_and_thinned():
    diag = dict(rhat=1.0, symmetric_visits=np.array([1, 0, 1, 1], dtype=bool), symmetric_share=0.5)
    assert symmetric_probability(diag) == dict(rhat=1.0, p_symmetric=0.375)
    lw = np.log([1.0, 3.0])  # draws 1 and 2: visits 0 and 1
    assert symmetric_probability(diag, np.array([1, 2]), lw)["p_symmetric"] == pytest.approx(0.5 * 3 / 4, rel=1e-15)
    assert symmetric_probability(dict(rhat=1.0)) == dict(rhat=1.0)
