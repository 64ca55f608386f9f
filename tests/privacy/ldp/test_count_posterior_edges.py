"""Edge cases and attacks on the count posterior (``decoder='counts'``, and ``'auto'`` choosing it; issue 28 round 9):
the decoder changed after fitting, streams, copies, rejected calls, degenerate data and privacy budgets, and the
decoder's inputs (only the released responses' support counts)."""

import copy
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp._count_posterior import (
    AUTO_COUNTS_MAX_RATIO,
    count_groups,
    per_user_latent,
    plug_in_ratio,
    sandwich_ratio,
)
from sklearn_bayes.privacy._ldp._empirical_bayes import AUTO_CV_MIN_CATEGORIES
from sklearn_bayes.privacy._ldp._samplers import adaptive_exact_draws

pytestmark = [pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning"),
              pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]


def _users(K, n, seed, alpha=1.0):
    rng = np.random.default_rng(seed)
    return rng.choice(K, n, p=rng.dirichlet(np.full(K, alpha))).reshape(-1, 1)


def _est(**kw):
    kw = {"epsilon": 1.0, "random_state": 0, "n_final_steps": 300, **kw}
    return AdaptiveLDPFrequencyEstimator(**kw)


def _masks(K, n, seed, eps=1.0):
    """Released SS(k) response sets of ``n`` users (deployment), from the estimator's own client."""
    client = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps).client_mechanism()
    return client.privatize(_users(K, n, seed).ravel(), np.random.default_rng(seed + 100))


def _reads(est):
    return (est.theta_, est.credible_interval(0.9, n_samples=300), est.sample_posterior(40),
            dict(est.convergence_))


def _assert_same_reads(a, b):
    for x, y in zip(a[:3], b[:3]):
        np.testing.assert_array_equal(x, y)
    assert a[3]["method"] == b[3]["method"]


# ---------------------------------------------------------------- the decoder changed after fitting
@pytest.mark.slow
def test_set_params_decoder_after_fit_recomputes_every_reading():
    """decoder is a compute knob: set after fitting, theta_, credible_interval, sample_posterior and
    convergence_ are those of an estimator fitted with that decoder on the same data and seed (bit for bit:
    the read streams depend on the generator's state only), and setting it back gives the first readings
    again -- nothing computed under one decoder is served under another."""
    K, X = 40, _users(40, 3000, 0)
    est = _est(n_categories=K, decoder="counts").fit(X)
    first = _reads(est)
    assert first[3]["method"] == "counts"
    for decoder, method in (("posterior", "mcmc"), ("eb", "eb"), ("auto", None)):
        est.set_params(decoder=decoder)
        got = _reads(est)
        ref = _reads(_est(n_categories=K, decoder=decoder).fit(X))
        _assert_same_reads(got, ref)
        if method is not None:
            assert got[3]["method"] == method
    est.set_params(decoder="counts")
    _assert_same_reads(_reads(est), first)
    # the exact and the count posterior are different computations (the test above can fail)
    est.set_params(decoder="posterior")
    assert not np.array_equal(est.theta_, first[0])


def test_invalid_decoder_after_fit_is_rejected_and_changes_nothing():
    est = _est(n_categories=8, decoder="counts").fit(_users(8, 500, 1))
    theta = est.theta_
    est.set_params(decoder="count")
    for read in (lambda: est.theta_, lambda: est.credible_interval(), lambda: est.sample_posterior(5)):
        with pytest.raises(ValueError, match="decoder"):
            read()
    est.set_params(decoder="counts")
    np.testing.assert_array_equal(est.theta_, theta)


# ---------------------------------------------------------------- streams
def test_chunked_responses_give_the_one_call_estimate_across_the_auto_switch():
    """K = 32, eps = 2 (SS(4)): 400 users all in category 0, then 4000 uniform ones.  The plug-in sandwich ratio
    crosses 1.07 twice (100 responses: 1.069, counts; 400: 1.076, the exact posterior; 1000 and 4400: counts).
    Recorded in those chunks, reading theta_ after every chunk, the choice after each chunk is a fresh
    estimator's on the same prefix (the rule reads the recorded responses only; its memoised values are dropped
    by every recording), and the final theta_, intervals, draws and diagnostics are bit-identical to one call
    with all responses."""
    K, eps = 32, 2.0
    client = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps).client_mechanism()
    rng = np.random.default_rng(0)
    masks = np.r_[client.privatize(np.zeros(400, dtype=int), rng), client.privatize(rng.integers(0, K, 4000), rng)]
    chunked = _est(n_categories=K, epsilon=eps)
    methods = []
    for lo, hi in ((0, 100), (100, 400), (400, 1000), (1000, 4400)):
        chunked.partial_fit_responses(masks[lo:hi])
        chunked.theta_
        fresh = _est(n_categories=K, epsilon=eps).partial_fit_responses(masks[:hi])
        assert chunked._uses_counts() == fresh._uses_counts() and chunked._uses_eb() == fresh._uses_eb()
        methods.append(chunked.convergence_["method"])
        assert methods[-1] == fresh.convergence_["method"]
        np.testing.assert_array_equal(chunked.theta_, fresh.theta_)
    assert methods == ["counts", "mcmc", "counts", "counts"]
    _assert_same_reads(_reads(chunked), _reads(_est(n_categories=K, epsilon=eps).partial_fit_responses(masks)))


def test_auto_switches_exactly_at_the_category_floor():
    """The same kind of data at K = 31 and K = 32 (SS(k > 1), per-user exact chain, plug-in ratio <= 1.07,
    the empirical-Bayes prior not chosen): 'auto' keeps the exact posterior at 31 and uses the counts at 32."""
    assert AUTO_CV_MIN_CATEGORIES == 32
    for K, expected in ((31, False), (32, True)):
        est = _est(n_categories=K).partial_fit_responses(_masks(K, 4000, 3))
        c, n, _, _ = est._support_counts()
        k = est._client.subset_size
        assert k > 1 and per_user_latent(est._chain.store.set_counts()[1].size, K, n)
        assert plug_in_ratio(c, n, K, 1.0, k) <= AUTO_COUNTS_MAX_RATIO and not est._uses_eb()
        assert est._uses_counts() == expected


def test_rejected_responses_leave_the_estimator_unchanged():
    """A batch with a row of the wrong size is refused as a whole: the readings, the counts and later
    recordings are those of an estimator that never saw it."""
    K = 40
    masks = _masks(K, 1500, 4)
    est = _est(n_categories=K, decoder="counts").partial_fit_responses(masks[:1000])
    before = _reads(est)
    counts = est._support_counts()[0].copy()
    bad = masks[1000:1100].copy()
    bad[50] = False
    bad[50, :3] = True  # a set of 3 categories under SS(k), k != 3
    assert est._client.subset_size != 3
    with pytest.raises(ValueError):
        est.partial_fit_responses(bad)
    assert est.n_responses_ == 1000
    np.testing.assert_array_equal(est._support_counts()[0], counts)
    _assert_same_reads(_reads(est), before)
    est.partial_fit_responses(masks[1000:])
    _assert_same_reads(_reads(est), _reads(_est(n_categories=K, decoder="counts").partial_fit_responses(masks)))


def test_copies_and_pickles_mid_stream_continue_like_the_original():
    K = 40
    masks = _masks(K, 2000, 5)
    est = _est(n_categories=K, decoder="counts").partial_fit_responses(masks[:1200])
    before = _reads(est)
    loaded = pickle.loads(pickle.dumps(est))
    deep, shallow = copy.deepcopy(est), copy.copy(est)
    for other in (loaded, deep, shallow):
        _assert_same_reads(_reads(other), before)
    fresh = clone(est)
    assert fresh.get_params() == est.get_params() and not hasattr(fresh, "n_responses_")
    for other in (est, loaded, deep, shallow):
        other.partial_fit_responses(masks[1200:])
    after = _reads(est)
    for other in (loaded, deep, shallow):
        _assert_same_reads(_reads(other), after)
    assert not np.array_equal(after[0], before[0])


# ---------------------------------------------------------------- the decoder's inputs
def test_the_counts_are_the_released_responses_counts():
    """In simulation the support counts are the column sums of the stored released sets, and a deployment
    estimator given those sets has the same count posterior (the same chain on the same groups with the same
    stream): nothing but the releases enters."""
    K = 40
    sim = _est(n_categories=K, decoder="counts").fit(_users(K, 2000, 6))
    released = sim._chain.store.responses()[1]
    c, n, p, q = sim._support_counts()
    np.testing.assert_array_equal(c, released.sum(axis=0))
    dep = _est(n_categories=K, decoder="counts").partial_fit_responses(released)
    np.testing.assert_array_equal(dep._support_counts()[0], c)
    rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
    da = adaptive_exact_draws(sim._posterior_groups(), "hierarchical", 400, rng_a)[0]
    db = adaptive_exact_draws(dep._posterior_groups(), "hierarchical", 400, rng_b)[0]
    np.testing.assert_array_equal(da, db)
    np.testing.assert_array_equal(da, adaptive_exact_draws(count_groups(c, n, p, q), "hierarchical", 400,
                                                           np.random.default_rng(7))[0])


def test_count_decoder_depends_on_the_support_counts_only():
    """Two response sets with the same support counts but different subsets (one category swapped between
    two users) and the same responses in another order give bit-identical readings under 'counts'."""
    K = 40
    masks = _masks(K, 1500, 8)
    i, j = 0, 1
    v = int(np.flatnonzero(masks[i] & ~masks[j])[0])
    w = int(np.flatnonzero(masks[j] & ~masks[i])[0])
    swapped = masks.copy()
    swapped[i, v], swapped[i, w], swapped[j, w], swapped[j, v] = False, True, False, True
    assert not np.array_equal(swapped, masks)
    np.testing.assert_array_equal(swapped.sum(axis=0), masks.sum(axis=0))
    base = _reads(_est(n_categories=K, decoder="counts").partial_fit_responses(masks))
    for other in (swapped, masks[np.random.default_rng(9).permutation(len(masks))]):
        _assert_same_reads(_reads(_est(n_categories=K, decoder="counts").partial_fit_responses(other)), base)


# ---------------------------------------------------------------- degenerate data and budgets
def _check_simplex(est):
    theta = est.theta_
    ci = est.credible_interval(0.95, n_samples=300)
    assert np.all(np.isfinite(theta)) and np.all(theta >= 0) and theta.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(np.isfinite(ci)) and np.all(ci >= 0) and np.all(ci <= 1) and np.all(ci[:, 0] <= ci[:, 1])
    s = est.sample_posterior(30)
    assert np.all(np.isfinite(s)) and np.allclose(s.sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize("K, n, one_category", [(5, 1, False), (40, 1, False), (40, 2000, True), (2, 500, False),
                                                (2, 500, True)])
def test_degenerate_data_give_a_distribution(K, n, one_category):
    X = np.zeros((n, 1), dtype=int) if one_category else _users(K, n, 10)
    est = _est(n_categories=K, decoder="counts").fit(X)
    assert est.convergence_["method"] == "counts"
    _check_simplex(est)
    if one_category and n > 1:
        assert est.theta_.argmax() == 0


def test_no_responses_are_refused():
    est = _est(n_categories=40, decoder="counts")
    with pytest.raises(ValueError, match="at least one response"):
        est.partial_fit_responses(np.zeros((0, 40), dtype=bool))
    assert not hasattr(est, "n_responses_")


def test_two_categories_match_quadrature():
    """K = 2 (GRR): c_1 = n - c_0, so the composite likelihood is Bin(c_0; n, pi_0)^2; under the fixed prior
    Dir(2) the posterior mean of theta_0 (point_estimate='mean') is within 4 Monte Carlo standard errors
    (the chain's ESS) of the quadrature on 20,000 midpoints."""
    est = _est(n_categories=2, decoder="counts", prior=2.0, point_estimate="mean", n_final_steps=2000)
    est.fit(_users(2, 400, 11))
    c, n, p, q = est._support_counts()
    t = (np.arange(20000) + 0.5) / 20000
    pi = q + (p - q) * t
    lw = 2 * (c[0] * np.log(pi) + (n - c[0]) * np.log1p(-pi)) + np.log(t) + np.log1p(-t)
    w = np.exp(lw - lw.max())
    mean = w @ t / w.sum()
    sd = np.sqrt(w @ (t - mean) ** 2 / w.sum())
    conv = est.convergence_
    assert conv["ess"] >= 100
    assert abs(est.theta_[0] - mean) < 4 * sd / np.sqrt(conv["ess"])


def test_category_bound_128_and_129():
    """128 categories run; 129 are refused by fit (review HQV) and, with the decoder set after fitting, by every
    reading with a ValueError naming the bound, and the estimator stays usable with another decoder."""
    X = (np.arange(3000) % 128).reshape(-1, 1)
    ok = _est(n_categories=128, decoder="counts", n_final_steps=100).fit(X)
    assert ok.convergence_["method"] == "counts" and ok.theta_.shape == (128,)
    X129 = (np.arange(3000) % 129).reshape(-1, 1)
    with pytest.raises(ValueError, match="up to 128 categories"):
        _est(n_categories=129, decoder="counts", n_final_steps=100).fit(X129)
    big = _est(n_categories=129, decoder="eb", n_final_steps=100).fit(X129).set_params(decoder="counts")
    for read in (lambda: big.theta_, lambda: big.credible_interval(), lambda: big.sample_posterior(5)):
        with pytest.raises(ValueError, match="up to 128 categories"):
            read()
    big.set_params(decoder="eb")
    assert big.theta_.shape == (129,) and big.convergence_["method"] == "eb"


def test_huge_epsilon_recovers_the_frequencies():
    """epsilon = 1000 (exp overflows without the cap at 700): GRR is noiseless, c_v ~ Bin(n, theta_v); theta_ is
    within 4 binomial sds (plus the prior's pull, < 0.01 here) of the observed frequencies."""
    X = _users(8, 4000, 12)
    est = _est(n_categories=8, epsilon=1000.0, decoder="counts").fit(X)
    freq = np.bincount(X.ravel(), minlength=8) / 4000
    _check_simplex(est)
    assert np.all(np.abs(est.theta_ - freq) < 4 * np.sqrt(freq * (1 - freq) / 4000) + 0.01)


def test_tiny_epsilon_gives_the_prior():
    """epsilon = 1e-17: e^eps rounds to 1 and p = q, the likelihood is flat, so under the fixed prior Dir(1) the
    posterior mean (point_estimate='mean') is 1/K within 4 Monte Carlo standard errors of Dir(1)'s sd."""
    K = 8
    est = _est(n_categories=K, epsilon=1e-17, decoder="counts", prior=1.0, point_estimate="mean",
               n_final_steps=1000).fit(_users(K, 500, 13))
    _, _, p, q = est._support_counts()
    assert p == q
    _check_simplex(est)
    sd = np.sqrt((1 / K) * (1 - 1 / K) / (K + 1))
    assert np.all(np.abs(est.theta_ - 1 / K) < 4 * sd / np.sqrt(est.convergence_["ess"]))


# ---------------------------------------------------------------- the sandwich ratio
def _sandwich_with_the_scores_factors(theta, K, eps, k):
    """The ratio as first written (H and J with the score's factors p - q): the reference at moderate eps."""
    e = float(np.exp(eps))
    p = k * e / (k * e + K - k)
    q = ((k - 1) * p + k * (1 - p)) / (K - 1)
    pi = q + (p - q) * theta
    a_v = p * (k - 1) / (K - 1)
    a_out = (p * (k - 1) * (k - 2) + (1 - p) * k * (k - 1)) / ((K - 1) * (K - 2)) if K > 2 else 0.0
    M = (theta[:, None] + theta[None, :]) * a_v + (1 - theta[:, None] - theta[None, :]) * a_out
    np.fill_diagonal(M, pi)
    S = M - np.outer(pi, pi)
    D = (p - q) / (pi * (1 - pi))
    P = np.eye(K)[:, :-1] - np.eye(K)[:, [-1]]
    Hi = np.linalg.inv(P.T @ np.diag(D * (p - q)) @ P)
    return np.diag(P @ Hi @ (P.T @ (D[:, None] * S * D[None, :]) @ P) @ Hi @ P.T) / np.diag(P @ Hi @ P.T)


@pytest.mark.parametrize("K", [2, 3, 10, 40, 128])
def test_sandwich_ratio_is_finite_for_every_budget(K):
    """For interior theta the ratio is finite and positive at every epsilon (1e-300 to 1000, where p - q rounds
    to 0 and where p rounds to 1), continuous at eps -> 0 (1e-17 against 1e-7: the ratio moves by O(eps) there),
    and equal to the formula with the score's factors p - q at moderate eps (they cancel; rounding: the two
    inverses of matrices of condition number < 1e6 agree to 1e-9 relative)."""
    rng = np.random.default_rng(K)
    theta = rng.dirichlet(np.ones(K))
    for k in sorted({1, max(1, K // 2), K - 1}):
        for eps in (1e-300, 1e-17, 1e-7, 0.1, 1.0, 10.0, 40.0, 1000.0):
            r = sandwich_ratio(theta, K, eps, k)
            assert np.all(np.isfinite(r)) and np.all(r > 0), (k, eps)
        np.testing.assert_allclose(sandwich_ratio(theta, K, 1e-17, k), sandwich_ratio(theta, K, 1e-7, k), rtol=1e-5)
        for eps in (0.5, 2.0):
            np.testing.assert_allclose(sandwich_ratio(theta, K, eps, k),
                                       _sandwich_with_the_scores_factors(theta, K, eps, k), rtol=1e-9)


def test_plug_in_ratio_is_never_nan():
    """The plug-in ratio that 'auto' compares with 1.07 is a number or +inf (then 'auto' refuses the counts),
    never NaN (which would make the comparison silently false) and never an exception: no responses, one-hot
    counts at eps = 1000 under SS(2) (a count without variance), p = q at eps = 1e-17."""
    cases = [(np.zeros(10), 0, 1.0, 2), (np.full(10, 20.0), 100, 1e-17, 2), (np.full(10, 20.0), 100, 1e-300, 5),
             (np.r_[100.0, np.full(9, 100 / 9)], 100, 1000.0, 2), (np.r_[100.0, np.zeros(9)], 100, 1.0, 2)]
    for c, n, eps, k in cases:
        r = plug_in_ratio(c, n, 10, eps, k)
        assert not np.isnan(r) and r > 0, (c, n, eps, k)
    assert plug_in_ratio(np.r_[100.0, np.full(9, 100 / 9)], 100, 10, 1000.0, 2) == np.inf


def test_auto_at_tiny_epsilon_runs():
    """'auto' at K = 40, eps = 1e-17 (every decision rule evaluated where p - q is rounding noise) returns a
    distribution without an exception."""
    est = _est(n_categories=40, epsilon=1e-17).fit(_users(40, 2000, 14))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        _check_simplex(est)


def test_merged_workers_give_the_single_store_estimate():
    """Two ingestion workers' stores merged: the count posterior of the merged store is that of one estimator
    given all responses (the readings cached before the merge are dropped)."""
    K = 40
    masks = _masks(K, 3000, 20)
    hub = _est(n_categories=K, decoder="counts").partial_fit_responses(masks[:1000])
    stale = hub.theta_
    hub.merge(_est(n_categories=K, decoder="counts").partial_fit_responses(masks[1000:]))
    assert hub.n_responses_ == 3000
    _assert_same_reads(_reads(hub), _reads(_est(n_categories=K, decoder="counts").partial_fit_responses(masks)))
    assert not np.array_equal(hub.theta_, stale)


@pytest.mark.parametrize("mechanism", ["oue", "grr"])
def test_auto_never_uses_the_counts_for_oue_or_grr_but_counts_runs_there(mechanism):
    """'auto' keeps the exact posterior for OUE and GRR (K = 40: the exact chain is per group of distinct
    responses there); decoder='counts' still runs (each support count is binomial under both)."""
    X = (np.arange(2000) % 40).reshape(-1, 1)
    auto = _est(n_categories=40, mechanism=mechanism).fit(X)
    assert not auto._uses_counts() and auto.convergence_["method"] in ("mcmc", "eb")
    counts = _est(n_categories=40, mechanism=mechanism, decoder="counts").fit(X)
    assert counts.convergence_["method"] == "counts"
    _check_simplex(counts)


def test_rejected_simulation_batch_leaves_the_stream_unchanged():
    """partial_fit with an unknown category is refused as a whole (the generator rewound): the readings, and the
    stream continued afterwards, are those of an estimator that never saw the batch."""
    K = 40
    X1, X2 = _users(K, 1000, 21), _users(K, 1000, 22)
    est = _est(n_categories=K, decoder="counts").fit(X1)
    before = _reads(est)
    with pytest.raises(ValueError):
        est.partial_fit(np.r_[X2[:10], [[K + 5]]])
    _assert_same_reads(_reads(est), before)
    est.partial_fit(X2)
    _assert_same_reads(_reads(est), _reads(_est(n_categories=K, decoder="counts").fit(X1).partial_fit(X2)))
