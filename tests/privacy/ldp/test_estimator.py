"""AdaptiveLDPFrequencyEstimator: sampler correctness, convergence, state handling, bad input."""

from functools import partial
import pickle
import warnings

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes._fast._ldp import log_likelihood_gradient
from sklearn_bayes.privacy import RRRRMechanism
from sklearn_bayes.privacy._ldp._store import ResponseStore
from sklearn_bayes.privacy._ldp._rrrr import _rrrr_constants
from sklearn_bayes.exceptions import SeededNoiseWarning

# The papers' adaptive RRRR mode under a fixed Dir(1) prior (the defaults before issue 13);
# the default static mechanism and the hierarchical prior are tested in test_posterior.py.
_rrrr_estimator = partial(AdaptiveLDPFrequencyEstimator, mechanism="rrrr", prior=1.0)


def _gen(seed):
    return np.random.default_rng(seed)


def _responses(K, n, theta, eps, kappa, subsets, seed):
    """n responses: user t privatised with a subset drawn from ``subsets``."""
    rng = _gen(seed)
    mech = RRRRMechanism(K, eps, kappa)
    x = rng.choice(K, size=n, p=theta)
    which = rng.integers(0, len(subsets), size=n)
    y = np.empty(n, dtype=np.int64)
    for j, S in enumerate(subsets):
        m = which == j
        y[m] = mech.privatize(x[m], S, random_state=rng)
    return y, [list(subsets[j]) for j in which]


def _store(K, y, subs):
    """The responses ``(y, subsets)`` in a response store, as the estimator records them."""
    store = ResponseStore(K)
    masks = np.zeros((len(y), K), dtype=bool)
    for i, S in enumerate(subs):
        masks[i, list(S)] = True
    store.append(np.asarray(y, dtype=np.int32), store.intern_masks(masks))
    return store


def _recorded(est):
    """The released categories an estimator recorded (from its response store)."""
    return est._chain.store.responses()[0]


def _log_lik(theta, y, subs, mech):
    return sum(np.log(mech.transition_matrix(S)[:, yy] @ theta) for yy, S in zip(y, subs))


# ---------------------------------------------------------------- gradient
@pytest.mark.parametrize("K, kappa", [(3, 0.8), (6, 0.9), (6, 1.0)])
def test_sgld_gradient_matches_finite_differences(K, kappa):
    eps = 1.0
    theta = _gen(0).dirichlet(np.ones(K))
    subsets = [[], [0], [1, 2], list(range(K - 1))]
    y, subs = _responses(K, 60, theta, eps, kappa, subsets, seed=1)
    st = _store(K, y, subs)
    n = st.n
    mech = RRRRMechanism(K, eps, kappa)
    phi = _gen(3).gamma(2.0, size=K)
    grad = np.zeros(K)
    ll = log_likelihood_gradient(phi, st.ys[:n], st.sids[:n], st.masks, st.members, st.sid_k,
                                 _rrrr_constants(K, eps, kappa), grad)
    assert ll == pytest.approx(_log_lik(phi / phi.sum(), y, subs, mech), rel=1e-12)
    h = 1e-6
    fd = np.empty(K)
    for i in range(K):
        e = np.zeros(K)
        e[i] = h
        fd[i] = (_log_lik((phi + e) / (phi + e).sum(), y, subs, mech)
                 - _log_lik((phi - e) / (phi - e).sum(), y, subs, mech)) / (2 * h)
    # central differences: error O(h^2 * third derivative) + rounding O(eps_mach * |L| / h)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- SGLD vs exact Gibbs
def _batch_means_se(x, n_batches=25):
    """Standard error of the mean of an autocorrelated series by batch means."""
    b = np.array_split(x, n_batches)
    means = np.array([bb.mean() for bb in b])
    return means.std(ddof=1) / np.sqrt(n_batches)


def test_sgld_agrees_with_exact_gibbs():
    """Posterior means and sds of SGLD (small step) equal Gibbs within Monte Carlo error."""
    K, eps, kappa, n = 3, 1.0, 0.8, 400
    theta = np.array([0.6, 0.3, 0.1])
    y, subs = _responses(K, n, theta, eps, kappa, [[], [0], [0, 1], [2]], seed=4)
    common = dict(n_categories=K, epsilon=eps, kappa=kappa, n_final_steps=0)
    # reference: the exact data-augmentation Gibbs sampler on the grouped likelihood
    gibbs = _rrrr_estimator(final_estimate="gibbs", random_state=_gen(5), **common)
    g = gibbs.partial_fit_responses(y, subs).sample_posterior(20_000, random_state=_gen(55))
    # the online SGLD chain continued (final_estimate='sgld' samples the papers' chain)
    sgld = _rrrr_estimator(sampler="sgld", final_estimate="sgld", batch_size=50, step_size=0.1 / n,
                                         n_steps=5, random_state=_gen(6), **common).partial_fit_responses(y, subs)
    s = sgld.sample_posterior(20_000, random_state=_gen(56))
    for j in range(K):
        se_mean = np.hypot(_batch_means_se(g[:, j]), _batch_means_se(s[:, j]))
        assert abs(g[:, j].mean() - s[:, j].mean()) <= 4 * se_mean, (j, g[:, j].mean(), s[:, j].mean(), se_mean)
        dg = (g[:, j] - g[:, j].mean()) ** 2
        ds = (s[:, j] - s[:, j].mean()) ** 2
        se_var = np.hypot(_batch_means_se(dg), _batch_means_se(ds))
        assert abs(dg.mean() - ds.mean()) <= 4 * se_var, (j, dg.mean(), ds.mean(), se_var)
    # the comparison has power: the papers' noise scale (step * W) is far too concentrated
    assert s[:, 0].std() > 0.5 * g[:, 0].std()


def test_gibbs_counts_sample_the_exact_conditional():
    """One Gibbs sweep draws x_t ~ p(x | y_t, S_t, theta): expected counts, exact."""
    from sklearn_bayes._fast._ldp import gibbs_counts

    K, eps, kappa = 4, 1.0, 0.8
    theta = np.array([0.4, 0.3, 0.2, 0.1])
    y, subs = _responses(K, 50, theta, eps, kappa, [[], [0], [1, 3]], seed=7)
    st = _store(K, y, subs)
    consts = _rrrr_constants(K, eps, kappa)
    n = st.n
    mech = RRRRMechanism(K, eps, kappa)
    post = np.array([mech.transition_matrix(S)[:, yy] * theta for yy, S in zip(y, subs)])
    post /= post.sum(axis=1, keepdims=True)
    expected = post.sum(axis=0)
    var = (post * (1 - post)).sum(axis=0)
    reps = 4000
    tot = np.zeros(K)
    counts = np.zeros(K, dtype=np.int64)
    rng = _gen(9)
    for _ in range(reps):
        gibbs_counts(rng, theta, st.ys, st.sids, st.masks, st.sid_k, consts, n, counts)
        tot += counts
    z = (tot / reps - expected) / np.sqrt(var / reps)
    assert np.all(np.abs(z) < 4.5), z


# ---------------------------------------------------------------- convergence
@pytest.mark.parametrize("utility", ["honest", "non_adaptive", "semi_adaptive"])
def test_estimate_converges_to_truth(utility):
    """The error shrinks as n grows and stays within a few posterior sds of theta*."""
    K, eps = 5, 2.0
    theta = np.array([0.45, 0.25, 0.15, 0.1, 0.05])
    rng = _gen(10)
    X = rng.choice(K, size=20_000, p=theta).reshape(-1, 1)
    errs, sds = [], []
    for n in (500, 20_000):
        est = _rrrr_estimator(n_categories=K, epsilon=eps, utility=utility, alpha=0.7,
                                            n_final_steps=1000, random_state=_gen(11)).fit(X[:n])
        errs.append(np.abs(est.theta_ - theta).max())
        sds.append(est.sample_posterior(400).std(axis=0))
        # Bernstein-von Mises: theta* within 5 posterior sds in every coordinate
        assert np.all(np.abs(est.theta_ - theta) <= 5 * sds[-1] + 1e-3), (n, est.theta_, sds[-1])
    # posterior sd shrinks like n^{-1/2}: factor sqrt(40) ~ 6.3; allow 2x slack for adaptivity
    assert np.all(sds[1] < sds[0] / 3.0), sds
    assert errs[1] < errs[0]


def test_adaptive_beats_non_adaptive_on_skewed_theta():
    """Informative subsets: the honest utility picks small subsets when theta is skewed."""
    K = 10
    theta = np.array([0.6, 0.2, 0.08, 0.05, 0.03, 0.01, 0.01, 0.01, 0.005, 0.005])
    X = _gen(12).choice(K, size=5000, p=theta).reshape(-1, 1)
    est = _rrrr_estimator(n_categories=K, epsilon=1.0, random_state=_gen(13),
                                        n_final_steps=200).fit(X)
    sizes = np.bincount(est.subset_sizes_, minlength=K)
    assert sizes[1:4].sum() > 0.9 * est.n_responses_
    assert est.subset_sizes_.shape == (5000,)


# ---------------------------------------------------------------- equivalences of code paths
@pytest.mark.parametrize("name", ["fisher", "entropy", "tv_posterior", "tv_marginal", "mse", "honest"])
def test_cython_utilities_equal_python_reference_path(name):
    """The O(K)-per-candidate Cython utilities choose exactly what the numpy reference
    (evaluated per subset from the transition matrix) chooses, user after user."""
    from sklearn_bayes.privacy._ldp._utilities import utility_value

    def reference(theta, P, subset):
        return utility_value(theta, subset, 1.0, 0.8, name)

    X = _gen(14).choice(6, size=200, p=[0.3, 0.25, 0.2, 0.1, 0.1, 0.05]).reshape(-1, 1)
    kw = dict(n_categories=6, epsilon=1.0, kappa=0.8, n_steps=5, n_final_steps=50)
    a = _rrrr_estimator(utility=name, random_state=_gen(15), **kw).fit(X)
    b = _rrrr_estimator(utility=reference, random_state=_gen(15), **kw).fit(X)
    np.testing.assert_array_equal(a.subset_sizes_, b.subset_sizes_)
    np.testing.assert_array_equal(_recorded(a), _recorded(b))
    np.testing.assert_allclose(a.theta_, b.theta_, rtol=1e-12)


def test_partial_fit_in_chunks_equals_fit_without_final_averaging():
    X = _gen(16).choice(4, size=400, p=[0.4, 0.3, 0.2, 0.1]).reshape(-1, 1)
    kw = dict(n_categories=4, epsilon=1.0, n_final_steps=0)
    a = _rrrr_estimator(random_state=_gen(17), **kw).fit(X)
    b = _rrrr_estimator(random_state=_gen(17), **kw)
    for chunk in np.array_split(X, 7):
        b.partial_fit(chunk)
    # same random stream and same users; only the summation order of duplicated subset rows
    # inside a call can differ (1 ulp)
    np.testing.assert_allclose(a.theta_, b.theta_, rtol=1e-12)
    np.testing.assert_array_equal(a.subset_sizes_, b.subset_sizes_)
    np.testing.assert_array_equal(_recorded(a), _recorded(b))


@pytest.mark.parametrize("sampler", ["sgld", "gibbs"])
def test_pickle_mid_stream_equals_no_pickle(sampler):
    X = _gen(18).choice(5, size=300, p=[0.4, 0.3, 0.15, 0.1, 0.05]).reshape(-1, 1)
    kw = dict(n_categories=5, epsilon=1.0, sampler=sampler, n_steps=5, n_final_steps=40)
    a = _rrrr_estimator(random_state=_gen(19), **kw).partial_fit(X[:150])
    b = pickle.loads(pickle.dumps(a))
    a.partial_fit(X[150:])
    b.partial_fit(X[150:])
    np.testing.assert_array_equal(a.theta_, b.theta_)
    np.testing.assert_array_equal(a.subset_sizes_, b.subset_sizes_)
    np.testing.assert_array_equal(a.sample_posterior(10), b.sample_posterior(10))


def test_deployment_round_trip_with_client_mechanism():
    K, eps = 5, 2.0
    theta = np.array([0.5, 0.2, 0.15, 0.1, 0.05])
    rng = _gen(20)
    server = _rrrr_estimator(n_categories=K, epsilon=eps, n_final_steps=200, random_state=_gen(21))
    client = RRRRMechanism(K, eps, server.kappa)
    assert server.propose_subset().size == 0  # uniform start: SRR is the best prefix
    for _ in range(1500):
        S = server.propose_subset()
        y = client.privatize(rng.choice(K, p=theta), S, random_state=rng)
        server.partial_fit_responses([y], [S])
    assert server.n_responses_ == 1500
    assert server._chain.store.n_sids <= 2 ** K
    sds = server.sample_posterior(300).std(axis=0)
    assert np.all(np.abs(server.theta_ - theta) <= 5 * sds + 1e-3)
    ci = server.credible_interval(0.99)
    assert ci.shape == (K, 2) and np.all(ci[:, 0] <= ci[:, 1])


def test_foreign_srr_responses_are_accepted():
    K = 4
    y = RRRRMechanism(K, 3.0).privatize(_gen(22).choice(K, size=2000, p=[0.7, 0.1, 0.1, 0.1]),
                                        [], random_state=_gen(23))
    est = _rrrr_estimator(n_categories=K, epsilon=3.0, n_final_steps=400, random_state=_gen(24))
    est.partial_fit_responses(y, [])
    assert est._chain.store.n_sids == 1 and np.all(est.subset_sizes_ == 0)
    sds = est.sample_posterior(300).std(axis=0)
    assert np.all(np.abs(est.theta_ - [0.7, 0.1, 0.1, 0.1]) <= 5 * sds + 1e-3)


# ---------------------------------------------------------------- storage, labels, transform
def test_storage_is_compact():
    X = _gen(25).choice(20, size=3000, p=_gen(26).dirichlet(np.full(20, 0.1))).reshape(-1, 1)
    est = _rrrr_estimator(n_categories=20, epsilon=1.0, n_final_steps=0, random_state=_gen(27)).fit(X)
    st = est._chain.store
    per_response = st.ys.itemsize + st.sids.itemsize + st.sizes.itemsize
    assert per_response == 12
    # distinct subsets are interned: no duplicated rows
    rows = st.subset_masks()
    assert np.unique(rows, axis=0).shape[0] == st.n_sids


def test_string_labels_and_transform():
    X = np.array(["b", "a", "c", "a", "a", "b"] * 100, dtype=object).reshape(-1, 1)
    est = _rrrr_estimator(categories=["c", "a", "b"], epsilon=2.0, n_final_steps=50, random_state=_gen(28)).fit(X)
    assert est.categories_.tolist() == ["c", "a", "b"]  # the order given (review HLR F3; was sorted)
    out = est.transform(np.array([["c"], ["a"]], dtype=object))
    np.testing.assert_allclose(out[:, 0], est.theta_[[0, 1]])
    with pytest.raises(ValueError, match="outside the known"):
        est.transform(np.array([["z"]], dtype=object))


def test_int_seed_warns():
    with pytest.warns(SeededNoiseWarning):
        _rrrr_estimator(n_categories=3, n_final_steps=0, random_state=0).fit([[0], [1], [2]])


# ---------------------------------------------------------------- bad input
def _snapshot(est):
    """The whole estimator (parameters, fitted state, generator state) as pickle bytes."""
    return pickle.dumps(est)


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(epsilon=0.0), "epsilon"),
        (dict(epsilon=-1.0), "epsilon"),
        (dict(kappa=0.0), "kappa"),
        (dict(kappa=1.2), "kappa"),
        (dict(n_categories=1), "n_categories"),
        (dict(utility="semi_adaptive"), "alpha"),
        (dict(utility="nope"), "utility"),
        (dict(prior=[1.0, 2.0]), "prior"),
        (dict(step_size="0.5/T"), "step_size"),
    ],
)
def test_bad_parameters(params, match):
    kw = dict(n_categories=3, n_final_steps=0, random_state=_gen(0))
    kw.update(params)
    with pytest.raises(ValueError, match=match):
        _rrrr_estimator(**kw).fit([[0], [1], [2]])


@pytest.mark.parametrize(
    "X, match",
    [
        ([[0.0], [np.nan]], "NaN"),
        ([[0], [3]], "outside"),
        ([[0], [-1]], "outside"),
        ([[0, 1], [1, 0]], "one column|features"),
        ([[0.5], [1]], "non-integer"),
        (np.zeros((2, 1, 1), dtype=int), r"^X .*dim 3"),  # scikit-learn's message did not name X
        (np.zeros((0, 1), dtype=int), r"^X .*0 sample"),
    ],
)
def test_rejected_batch_leaves_estimator_untouched(X, match):
    est = _rrrr_estimator(n_categories=3, n_final_steps=10, random_state=_gen(1))
    with pytest.raises(ValueError, match=match):
        est.fit(X)  # first call rejected: still unfitted
    assert not hasattr(est, "theta_") and not hasattr(est, "n_features_in_")
    est.partial_fit([[0], [1], [2], [0]])
    before = _snapshot(est)
    with pytest.raises(ValueError, match=match):
        est.partial_fit(X)
    assert _snapshot(est) == before


@pytest.mark.parametrize(
    "y, subsets, match",
    [
        ([0, 3], [], "outside"),
        ([0, 1], [0, 1, 2], "all 3 categories"),
        ([0, 1], [[0], [0, 0]], "repeated"),
        ([0, 1], [[0]], "one subset per response"),
        ([0.0, np.nan], [], "NaN"),
        ([0, 1], [[4], []], "outside"),
    ],
)
def test_rejected_responses_leave_estimator_untouched(y, subsets, match):
    est = _rrrr_estimator(n_categories=3, n_final_steps=10, random_state=_gen(2))
    est.partial_fit_responses([0, 1, 2], [0])
    before = _snapshot(est)
    with pytest.raises(ValueError, match=match):
        est.partial_fit_responses(y, subsets)
    assert _snapshot(est) == before


def test_deployment_needs_n_categories():
    with pytest.raises(ValueError, match="n_categories"):
        _rrrr_estimator().partial_fit_responses([0, 1], [])
    with pytest.raises(ValueError, match="n_categories"):
        _rrrr_estimator().propose_subset()


_FLAKY_CALLS = {"n": 0}


def _flaky_utility(theta, P, subset):
    """A user utility that fails after 40 calls (module level, so the estimator pickles)."""
    _FLAKY_CALLS["n"] += 1
    if _FLAKY_CALLS["n"] > 40:
        raise RuntimeError("boom")
    return 0.0


def test_exception_in_user_utility_leaves_state_untouched():
    _FLAKY_CALLS["n"] = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        est = _rrrr_estimator(n_categories=3, n_final_steps=10, utility=_flaky_utility,
                                            random_state=_gen(3))
        est.partial_fit([[0], [1]])
        before = _snapshot(est)
        with pytest.raises(RuntimeError):
            est.partial_fit([[0]] * 30)
        assert _snapshot(est) == before


# ---------------------------------------------------------------- final estimate of theta_
def _quadrature_posterior(y, subs, mech, prior=1.0, n_grid=600):
    """Exact posterior mean and sd of theta (K = 3, Dirichlet(prior) prior) by quadrature."""
    u = (np.arange(n_grid) + 0.5) / n_grid
    t1, t2 = np.meshgrid(u, u, indexing="ij")
    ok = t1 + t2 < 1
    pts = np.stack([t1[ok], t2[ok], 1 - t1[ok] - t2[ok]], axis=1)
    logp = (prior - 1.0) * np.log(pts).sum(axis=1)
    keys = {}
    for yy, S in zip(y, subs):
        keys[(int(yy), tuple(S))] = keys.get((int(yy), tuple(S)), 0) + 1
    for (yy, S), c in keys.items():
        logp += c * np.log(pts @ mech.transition_matrix(list(S))[:, yy])
    w = np.exp(logp - logp.max())
    w /= w.sum()
    mean = w @ pts
    sd = np.sqrt(w @ (pts - mean) ** 2)
    return mean, sd


@pytest.mark.parametrize("final_estimate, n_final_steps, tol", [("mala", 4000, 0.1), ("gibbs", 4000, 0.5)])
def test_final_estimate_is_the_exact_posterior_mean(final_estimate, n_final_steps, tol):
    """theta_ equals the posterior mean computed by quadrature, within a fraction of a posterior sd."""
    K, eps, kappa, n = 3, 1.0, 0.8, 400
    mech = RRRRMechanism(K, eps, kappa)
    y, subs = _responses(K, n, np.array([0.6, 0.3, 0.1]), eps, kappa, [[], [0], [0, 1], [2]], seed=4)
    mean, sd = _quadrature_posterior(y, subs, mech)
    for seed in range(3):
        est = _rrrr_estimator(n_categories=K, epsilon=eps, kappa=kappa, final_estimate=final_estimate,
                                            n_final_steps=n_final_steps, random_state=_gen(30 + seed))
        est.partial_fit_responses(y, subs)
        assert np.all(np.abs(est.theta_ - mean) <= tol * sd), (est.theta_, mean, sd)
        np.testing.assert_allclose(est.theta_.sum(), 1.0)


def test_mala_target_equals_the_dense_grouped_likelihood():
    """The kernel's structured target (h = a + b theta_y + d theta(S)) equals the dense
    per-response log posterior, and its gradient equals finite differences."""
    from sklearn_bayes._fast._ldp_mala import mala_logpost

    K, eps, kappa = 6, 1.0, 0.8
    theta = np.array([0.3, 0.25, 0.2, 0.1, 0.1, 0.05])
    y, subs = _responses(K, 500, theta, eps, kappa, [[], [0], [1, 3], [4, 0, 2], [5]], seed=12)
    prior = np.array([1.0, 0.5, 2.0, 1.0, 1.0, 0.3])
    groups = _store(K, y, subs).rrrr_structure(_rrrr_constants(K, eps, kappa))
    assert groups[5].sum() == 500
    mech = RRRRMechanism(K, eps, kappa)
    z = np.log(_gen(3).gamma(2.0, size=K))

    def dense(z):  # sum_k (rho_k z_k - e^{z_k}) + sum_t ln g_{S_t}(y_t | .) . theta
        t = np.exp(z) / np.exp(z).sum()
        return prior @ z - np.exp(z).sum() + _log_lik(t, y, subs, mech)

    lp, grad = mala_logpost(z, *groups, prior)
    np.testing.assert_allclose(lp, dense(z), rtol=1e-12)
    # central differences, step 1e-4: truncation ~ h^2 f''' / 6 and rounding ~ 1e-16 |f| / h, both < 1e-7
    fd = np.array([(dense(z + 1e-4 * e) - dense(z - 1e-4 * e)) / 2e-4 for e in np.eye(K)])
    np.testing.assert_allclose(grad, fd, rtol=0, atol=1e-6)


@pytest.mark.parametrize("final_estimate, max_dense_k", [("mala", 64), ("mala", 0), ("gibbs", 64)])
def test_posterior_samples_have_the_exact_posterior_moments(final_estimate, max_dense_k, monkeypatch):
    """sample_posterior draws from the exact posterior: means and sds equal quadrature within MC error
    (MALA with the dense preconditioner, and with the diagonal one used for large K)."""
    import sklearn_bayes.privacy._ldp._samplers as module

    monkeypatch.setattr(module, "_DENSE_PRECONDITIONER_MAX_K", max_dense_k)
    K, eps, kappa, n = 3, 1.0, 0.8, 400
    mech = RRRRMechanism(K, eps, kappa)
    y, subs = _responses(K, n, np.array([0.6, 0.3, 0.1]), eps, kappa, [[], [0], [0, 1], [2]], seed=4)
    mean, sd = _quadrature_posterior(y, subs, mech)
    est = _rrrr_estimator(n_categories=K, epsilon=eps, kappa=kappa, final_estimate=final_estimate,
                                        n_final_steps=0, random_state=_gen(60)).partial_fit_responses(y, subs)
    s = est.sample_posterior(8000, random_state=_gen(61))
    assert s.shape == (8000, K)
    for j in range(K):
        # batch means over consecutive draws (MALA interleaves its chains: batches hold every chain)
        se_mean = _batch_means_se(s[:, j])
        assert abs(s[:, j].mean() - mean[j]) <= 4 * se_mean, (j, s[:, j].mean(), mean[j], se_mean)
        dev = (s[:, j] - mean[j]) ** 2
        assert abs(dev.mean() - sd[j] ** 2) <= 4 * _batch_means_se(dev), (j, dev.mean(), sd[j] ** 2)


def test_reading_results_never_changes_later_fitting():
    """theta_ is computed lazily from its own stream: reads do not advance the main generator."""
    X = _gen(62).choice(5, size=600, p=[0.4, 0.3, 0.15, 0.1, 0.05]).reshape(-1, 1)
    kw = dict(n_categories=5, epsilon=1.0, n_steps=5, n_final_steps=40)
    a = _rrrr_estimator(random_state=_gen(63), **kw).partial_fit(X[:300])
    b = _rrrr_estimator(random_state=_gen(63), **kw).partial_fit(X[:300])
    theta_a = a.theta_
    a.sample_posterior(20)
    a.credible_interval(0.9, n_samples=50)
    np.testing.assert_array_equal(a.theta_, theta_a)  # cached, and the same on every read
    a.partial_fit(X[300:])
    b.partial_fit(X[300:])
    np.testing.assert_array_equal(a.subset_sizes_, b.subset_sizes_)
    np.testing.assert_array_equal(_recorded(a), _recorded(b))
    np.testing.assert_array_equal(a.theta_, b.theta_)
    # None: a stream fixed by the fitted state; an explicit seed: another stream
    np.testing.assert_array_equal(a.sample_posterior(10), b.sample_posterior(10))
    assert not np.array_equal(a.sample_posterior(10), a.sample_posterior(10, random_state=_gen(0)))
    # a fitting call invalidates the cached estimate
    before = a.theta_
    a.partial_fit(X[:50])
    assert not np.array_equal(a.theta_, before)


def test_final_mala_beats_the_sgld_average_on_the_same_responses():
    """With step 0.5/n the papers' final SGLD average is about one posterior draw; MALA is the mean."""
    K, eps, kappa, n = 3, 1.0, 0.8, 400
    mech = RRRRMechanism(K, eps, kappa)
    y, subs = _responses(K, n, np.array([0.6, 0.3, 0.1]), eps, kappa, [[]], seed=7)
    mean, sd = _quadrature_posterior(y, subs, mech)
    err = {}
    for fe in ("mala", "sgld"):
        e = []
        for seed in range(8):
            est = _rrrr_estimator(n_categories=K, epsilon=eps, kappa=kappa, final_estimate=fe,
                                                random_state=_gen(40 + seed)).partial_fit_responses(y, subs)
            e.append(np.sum((est.theta_ - mean) ** 2 / sd**2))
        err[fe] = np.mean(e)
    # a posterior draw has E sum((theta - mean)^2 / sd^2) = K; the exact mean has 0
    assert err["mala"] < 0.2 * K, err
    assert err["sgld"] > err["mala"], err


def test_final_estimate_grouped_likelihood_matches_the_kernel_table():
    """The grouped likelihood rows equal the mechanism's g(y | x) and the counts add up to n."""
    K, eps, kappa, n = 5, 1.0, 0.8, 300
    mech = RRRRMechanism(K, eps, kappa)
    y, subs = _responses(K, n, np.full(K, 0.2), eps, kappa, [[], [0], [1, 3], [4, 0, 2]], seed=9)
    L, counts = _store(K, y, subs).likelihood_rows(_rrrr_constants(K, eps, kappa))
    assert counts.sum() == n
    rows = {tuple(np.round(mech.transition_matrix(S)[:, yy], 12)) for yy, S in zip(y, subs)}
    assert {tuple(np.round(r, 12)) for r in L} == rows


# ---------------------------------------------------------------- frozen fitted state
def _fitted(**kw):
    params = dict(n_categories=4, epsilon=1.0, kappa=0.9, n_final_steps=10, random_state=_gen(40))
    params.update(kw)
    X = _gen(41).choice(4, size=60, p=[0.5, 0.3, 0.15, 0.05]).reshape(-1, 1)
    return _rrrr_estimator(**params).fit(X)


_CALLS = {
    "partial_fit": lambda est: est.partial_fit([[0], [1]]),
    "partial_fit_responses": lambda est: est.partial_fit_responses([0, 1], [[0], []]),
    "propose_subset": lambda est: est.propose_subset(),
    "transform": lambda est: est.transform([[0], [3]]),
    "sample_posterior": lambda est: est.sample_posterior(5),
    "credible_interval": lambda est: est.credible_interval(0.9),
    "theta_": lambda est: est.theta_,
}


def _other_utility(theta, P, subset):
    return -len(subset)


@pytest.mark.parametrize("method", list(_CALLS))
@pytest.mark.parametrize(
    "name, value",
    [
        ("epsilon", 0.01),
        ("kappa", 0.5),
        ("n_categories", 5),
        ("utility", "fisher"),
        ("utility", _other_utility),
        ("alpha", 0.5),
        ("prior", 2.0),
        ("prior", [1.0, 1.0, 1.0, 2.0]),
        ("random_state", 7),
    ],
)
def test_changed_frozen_parameter_is_a_clear_error(method, name, value):
    """Regression: set_params(epsilon=0.01) after fit was used live (or ignored) mid-stream.

    Every later call compares get_params() with the values recorded at the first fit,
    names the parameter with both values, and leaves the estimator byte-identical.
    """
    est = _fitted()
    est.set_params(**{name: value})
    before = _snapshot(est)
    with pytest.raises(ValueError, match=rf"^{name} was .* and is now .*call fit to restart"):
        _CALLS[method](est)
    assert _snapshot(est) == before


@pytest.mark.parametrize("name, value", [("prior", 2.0), ("epsilon", 0.01), ("random_state", 7)])
def test_cached_theta_is_not_served_after_a_frozen_parameter_changed(name, value):
    """Regression: theta_ read once was served again after set_params(prior=2.0) (and computed with the
    fitted prior when first read after it), while credible_interval refused: every reading now refuses
    alike, and setting the value back serves the very same estimate."""
    est = _fitted()
    theta = est.theta_
    old = est.get_params()[name]
    est.set_params(**{name: value})
    with pytest.raises(ValueError, match=rf"^{name} was .* and is now .*call fit to restart"):
        est.theta_
    est.set_params(**{name: old})
    np.testing.assert_array_equal(est.theta_, theta)


def test_equivalent_parameter_values_are_not_a_change():
    """1 and 1.0, a scalar prior and the same prior as a vector, the same generator."""
    est = _fitted(prior=1.0)
    est.set_params(epsilon=1, prior=[1.0] * 4, random_state=est.random_state)
    est.partial_fit([[0]]).partial_fit_responses([1], [[1]])
    assert est.n_responses_ == 62


def test_restoring_the_fitted_value_continues_the_stream():
    """The error is reversible: set the value back and the stream goes on as if untouched."""
    a, b = _fitted(), _fitted()
    b.set_params(epsilon=0.01)
    with pytest.raises(ValueError, match="epsilon"):
        b.partial_fit([[0], [1]])
    b.set_params(epsilon=1.0)
    a.partial_fit([[0], [1]])
    b.partial_fit([[0], [1]])
    np.testing.assert_array_equal(_recorded(a), _recorded(b))
    # the same online sample and generator: the same posterior draws and proposals
    np.testing.assert_array_equal(a.sample_posterior(5), b.sample_posterior(5))
    np.testing.assert_array_equal(a.propose_subsets(3, draws="user"), b.propose_subsets(3, draws="user"))


@pytest.mark.parametrize("method", ["partial_fit", "partial_fit_responses", "propose_subset"])
@pytest.mark.parametrize("params", [dict(epsilon=-1), dict(epsilon=np.inf), dict(kappa=2.0), dict(n_steps=0),
                                    dict(batch_size=True), dict(epsilon=True)])
def test_invalid_value_set_mid_stream_is_rejected(method, params):
    """Regression: epsilon=-1 set after fitting was accepted by the next partial_fit."""
    from sklearn.utils._param_validation import InvalidParameterError

    est = _fitted()
    est.set_params(**params)
    before = _snapshot(est)
    with pytest.raises(InvalidParameterError, match=next(iter(params))):
        _CALLS[method](est)
    assert _snapshot(est) == before


def test_compute_knobs_may_change_mid_stream():
    """Sampler, steps, batch size, step size and the final phase are not frozen."""
    est = _fitted()
    est.set_params(sampler="gibbs", n_steps=3, batch_size=7, step_size=0.01, n_final_steps=20,
                   final_estimate="gibbs")
    est.partial_fit([[0], [1], [2]])
    est.partial_fit_responses([3], [[]])
    assert est.n_responses_ == 64 and est.propose_subset().ndim == 1
    assert np.isclose(est.theta_.sum(), 1.0)


def test_fit_restarts_with_the_new_parameters():
    est = _fitted()
    est.set_params(epsilon=0.5, kappa=0.8, prior=2.0)
    est.fit([[0], [1], [2], [3]])
    assert est.n_responses_ == 4
    mech = RRRRMechanism(4, 0.5, 0.8)
    for k in range(4):  # the six constants, then the exact grid thresholds (review HQS V1)
        np.testing.assert_array_equal(est._chain.consts[k, :6], mech._constants(k))
        assert tuple(est._chain.consts[k, 6:]) == mech._thresholds(k)
    np.testing.assert_array_equal(est._chain.prior, np.full(4, 2.0))
    est.partial_fit([[1]])  # the new values are now the recorded ones


def test_rejected_fit_leaves_a_fitted_estimator_untouched():
    """Regression: fit deleted the fitted attributes before validating X."""
    est = _fitted()
    before = _snapshot(est)
    with pytest.raises(ValueError, match="outside"):
        est.fit([[0], [9]])
    assert _snapshot(est) == before
    est.partial_fit([[0]])


def test_theta_cache_follows_the_final_estimate_knobs():
    """Changing final_estimate / n_final_steps after reading theta_ recomputes it."""
    a = _fitted(final_estimate="mala", n_final_steps=40)
    b = _fitted(final_estimate="gibbs", n_final_steps=40)
    theta_mala = a.theta_
    a.set_params(final_estimate="gibbs")
    np.testing.assert_array_equal(a.theta_, b.theta_)
    a.set_params(final_estimate="mala")
    np.testing.assert_array_equal(a.theta_, theta_mala)
    a.set_params(n_final_steps=0)
    np.testing.assert_array_equal(a.theta_, a._chain.phi / a._chain.phi.sum())


@pytest.mark.parametrize("eps", [400.0, 700.0, 1e6])
def test_huge_epsilon_fits(eps):
    """Regression: _rrrr_estimator(epsilon=700).fit(X) raised OverflowError.

    With eps1 = 0.9 eps >= 360 the release is the true category to double precision,
    so the posterior mean is (counts + 1) / (n + K) under the Dir(1) prior.
    """
    X = _gen(42).choice(4, size=300, p=[0.5, 0.3, 0.15, 0.05]).reshape(-1, 1)
    for utility in ("honest", "entropy", "fisher"):
        est = _rrrr_estimator(n_categories=4, epsilon=eps, utility=utility, final_estimate="gibbs",
                                            n_final_steps=200, random_state=_gen(43)).fit(X)
        np.testing.assert_array_equal(_recorded(est), X[:, 0])
        exact = (np.bincount(X[:, 0], minlength=4) + 1.0) / (300 + 4)
        # Rao-Blackwellised Gibbs with a deterministic likelihood: exact up to rounding
        np.testing.assert_allclose(est.theta_, exact, rtol=1e-12)


# ---------------------------------------------------------------- copies and privacy
@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_copies_replay_the_noise_and_never_release_twice(how):
    """A copy of a simulation-mode estimator given the same user releases the same
    response as the original (same noise): copying never yields a second,
    independently randomised release of a user's category."""
    import copy

    est = _fitted(n_final_steps=0)
    other = {"copy": copy.copy, "deepcopy": copy.deepcopy, "pickle": lambda e: pickle.loads(pickle.dumps(e))}[how](est)
    x = [[2]] * 50
    est.partial_fit(x)
    other.partial_fit(x)
    # a shared generator would have advanced between the two calls: other responses
    np.testing.assert_array_equal(_recorded(est), _recorded(other))
    np.testing.assert_array_equal(est.sample_posterior(5), other.sample_posterior(5))


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_copies_of_an_os_seeded_stream_draw_fresh_noise(how):
    """A copy of an OS-seeded (``random_state=None``) simulation-mode estimator reseeds from the OS.

    With the original's generator state it would privatise other users with the original's
    noise: fits of data sets that differ in one user would differ by that user's response
    alone.  Fresh noise: the same 200 users privatised by both give different responses
    (GRR at eps 1 keeps a category with probability e / (e + 3) = 0.475, so 200 identical
    responses by chance have probability below 0.6 ** 200).
    """
    import copy

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = AdaptiveLDPFrequencyEstimator(n_categories=4, mechanism="grr", n_final_steps=0)
        est.partial_fit([[0], [1], [2], [3]])
    other = {"copy": copy.copy, "deepcopy": copy.deepcopy, "pickle": lambda e: pickle.loads(pickle.dumps(e))}[how](est)
    assert other._rng is other._chain.rng  # the chain's generator is the one reseeded
    x = [[2]] * 200
    est.partial_fit(x)
    other.partial_fit(x)
    mine, theirs = est._chain.store.responses()[1], other._chain.store.responses()[1]  # one-hot GRR releases
    assert not np.array_equal(mine[4:], theirs[4:])
    np.testing.assert_array_equal(mine[:4], theirs[:4])  # the copied history is kept


def test_every_parameter_is_either_frozen_or_a_revalidated_knob():
    """The skip of re-validation (identity with the last validated values) must see every parameter."""
    from sklearn_bayes.privacy._ldp._params import FROZEN_PARAMS, PARAM_NAMES

    params = set(_rrrr_estimator().get_params())
    assert set(PARAM_NAMES) == params == set(AdaptiveLDPFrequencyEstimator._parameter_constraints)
    assert set(FROZEN_PARAMS) <= params


@pytest.mark.parametrize("bad", [["purple"], [3], [3.5], [True]])
def test_label_of_another_type_is_refused_naming_x(bad):
    """Regression: an int among string labels raised numpy's TypeError ('<' not supported)."""
    est = _rrrr_estimator(categories=["red", "green"], n_final_steps=0, random_state=_gen(50))
    est.partial_fit(np.array(["red", "green"], dtype=object).reshape(-1, 1))
    before = _snapshot(est)
    with pytest.raises(ValueError, match=r"^X holds categories outside the known ones"):
        est.partial_fit(np.array(["red"] + bad, dtype=object).reshape(-1, 1))
    assert _snapshot(est) == before
    with pytest.raises(ValueError, match=r"^X holds categories of types that cannot be ordered"):
        _rrrr_estimator(categories="from_data", n_final_steps=0).fit(np.array(["a", 1], dtype=object).reshape(-1, 1))


@pytest.mark.parametrize("params", [{"epsilon": -1.0}, {"n_categories": True}, {"kappa": 2.0}])
def test_first_recorded_response_validates_the_parameters(params):
    """partial_fit_responses is not under _fit_context (per-call cost): its first call validates."""
    from sklearn.utils._param_validation import InvalidParameterError

    est = _rrrr_estimator(**{"n_categories": 3, **params})
    with pytest.raises(InvalidParameterError, match=next(iter(params))):
        est.partial_fit_responses([0], [[]])
    assert "n_responses_" not in vars(est)


# ---------------------------------------------------------------- structure (issue 13)
# A sample where the last bits of theta's normalisation decide the semi-adaptive prefix:
# numpy's pairwise phi.sum() gives a first cumulative mass below alpha (k = 2), the online
# kernel's sequential sum gives exactly alpha (k = 1).
_TIE_PHI = [10.834226459258328, 0.5686484067761186, 5.423478186187536, 4.15967885755622, 7.022786547819354,
            2.216270304340959, 1.7341332579835969, 3.023297070967008, 0.9785363299095596, 2.7595432093193084,
            0.3924296071209256, 6.093705356580222]
_TIE_ALPHA = 0.23965957276638167


def test_propose_subset_is_the_subset_the_online_loop_gives_the_next_user():
    """Regression: propose_subset chose with numpy arithmetic (a pairwise sum normalising theta),
    partial_fit with the compiled loop (a sequential sum): at a near-tie they proposed
    different subsets.  Both now call the same kernel (choose_prefix)."""
    K = len(_TIE_PHI)
    est = _rrrr_estimator(n_categories=K, utility="semi_adaptive", alpha=_TIE_ALPHA, n_final_steps=0,
                          random_state=_gen(3)).fit(np.arange(K).reshape(-1, 1))
    est._chain.phi = np.array(_TIE_PHI)  # the online sample at the near-tie
    proposed = est.propose_subset()
    est.partial_fit([[0]])
    used = np.flatnonzero(est._chain.store.responses()[1][-1])
    np.testing.assert_array_equal(proposed, used)
    assert proposed.tolist() == [0]


def test_a_rejected_call_leaves_the_store_as_it_was():
    """The store is replaced by a copy for each recording call: a rejected call (here a failing
    step_size callable after the responses were written into the shared buffers) leaves the
    estimator byte-identical, and the next call records the same responses as an untouched twin."""
    X = _gen(72).choice(5, size=100, p=[0.4, 0.3, 0.15, 0.1, 0.05]).reshape(-1, 1)
    calls = []

    def step(t):
        if calls:
            raise RuntimeError("boom")
        return 0.5 / t

    a = _rrrr_estimator(n_categories=5, step_size=0.01, n_final_steps=0, random_state=_gen(73)).fit(X)
    b = _rrrr_estimator(n_categories=5, step_size=0.01, n_final_steps=0, random_state=_gen(73)).fit(X)
    before = _snapshot(a)
    a.set_params(step_size=step)
    calls.append(1)
    with pytest.raises(RuntimeError, match="boom"):
        a.partial_fit(X[:40])
    a.set_params(step_size=0.01)
    assert _snapshot(a) == before
    a.partial_fit(X[:40])
    b.partial_fit(X[:40])
    np.testing.assert_array_equal(_recorded(a), _recorded(b))
    np.testing.assert_array_equal(a.subset_sizes_, b.subset_sizes_)
