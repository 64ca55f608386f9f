"""Edges and attacks on ``decoder='importance'`` and ``'auto'``'s route to it below 32 categories (issue 28, rounds
11/11b): every mechanism, ``set_params`` between decoders after the fit, streams crossing the route boundary, rejected
batches, copies mid-stream, threads, tiny samples, one category, ``K = 2, 3, 31, 32`` and extreme ``epsilon``."""

import copy
import functools
import importlib.util
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp._count_importance import (
    EXACT_WORK_MAX,
    TEMPER_MIN,
    exact_work_ratio,
    tempered_counts,
)
from sklearn_bayes.privacy._ldp._empirical_bayes import AUTO_CV_MIN_CATEGORIES

# the shared test tools (threads released together, errors re-raised), loaded by path
_tools_spec = importlib.util.spec_from_file_location("_property_tools", Path(__file__).parents[2] / "_property_tools.py")
_tools = importlib.util.module_from_spec(_tools_spec)
_tools_spec.loader.exec_module(_tools)
run_threads = _tools.run_threads

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning")

WEIGHT_KEYS = ("weight_ess", "weight_ess_fraction", "pareto_k", "tail_ratio")


def _users(K, n, seed, alpha=1.0):
    rng = np.random.default_rng(seed)
    return rng.choice(K, n, p=rng.dirichlet(np.full(K, alpha))).reshape(-1, 1)


def _est(K, eps=1.0, seed=0, **kw):
    return AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=seed, **kw)


def _responses(est):
    return [np.array(r, copy=True) for r in est._chain.store.responses()]


def _same_responses(a, b):
    ra, rb = _responses(a), _responses(b)
    return len(ra) == len(rb) and all(np.array_equal(u, v) for u, v in zip(ra, rb))


def _check_simplex(draws, K, n):
    """Draws of theta: shape (n, K), non-negative, rows summing to 1.  The samplers yield ``exp(l_k - L)``, ``L =
    logaddexp.reduce(l)``: ``K - 1`` pairwise steps, each rounding at most ``|L| u`` absolute with ``|L| < 745``
    (exp's range), a relative error of every entry, plus the ``K``-term sum's ``K u``: within ``746 K u`` of 1."""
    assert draws.shape == (n, K)
    assert np.all(np.isfinite(draws)) and np.all(draws >= 0)
    assert np.all(np.abs(draws.sum(axis=1) - 1.0) <= 746 * K * np.finfo(float).eps)


@pytest.mark.parametrize("mechanism", ["oue", "grr", "ss"])
def test_explicit_importance_under_every_static_mechanism_matches_the_exact_posterior(mechanism):
    """decoder='importance' is accepted under OUE, GRR and SS (the weights make any proposal exact): its posterior
    mean (4000 resampled draws of sample_posterior) agrees with decoder='posterior''s within 5 Monte Carlo standard
    errors.  Each mean's MC standard error is at most the posterior SD over sqrt(ESS); ESS >= 100 for the chain (its
    stopping rule) and the weights keep >= 25 % of >= 300 draws: >= 75; a conservative bound uses ESS = 75 for both."""
    K, kw = 6, ({} if mechanism == "ss" else {"mechanism": mechanism})
    X = _users(K, 1500, 0)
    imp = _est(K, 1.0, 1, decoder="importance", **kw).fit(X)
    post = _est(K, 1.0, 1, decoder="posterior", **kw).fit(X)
    assert _same_responses(imp, post)
    assert imp.convergence_["method"] == "importance" and post.convergence_["method"] == "mcmc"
    assert all(np.isfinite(imp.convergence_[k]) for k in WEIGHT_KEYS)
    s_imp, s_post = imp.sample_posterior(4000, random_state=2), post.sample_posterior(4000, random_state=2)
    _check_simplex(s_imp, K, 4000)
    sd = np.maximum(s_imp.std(axis=0), s_post.std(axis=0))
    assert np.all(np.abs(s_imp.mean(axis=0) - s_post.mean(axis=0)) <= 5 * sd * np.sqrt(2 / 75))


def test_rrrr_refuses_importance_also_through_set_params():
    """mechanism='rrrr' refuses decoder='importance' at fit (existing test) and, after a fit, when set_params
    switches the compute knob to it: the error names decoder."""
    est = _est(5, 1.0, 0, mechanism="rrrr", n_steps=5).fit(_users(5, 200, 0))
    est.set_params(decoder="importance")
    with pytest.raises(ValueError, match="decoder='importance'"):
        est.theta_


@pytest.mark.slow
def test_set_params_between_decoders_after_the_fit_matches_fresh_fits():
    """One fit (K = 14, eps = 1, 800 users, SS(k > 1), work ratio 12.3: 'auto' routes to importance), the decoder switched after the fit in the
    order importance -> counts -> eb -> posterior -> auto -> importance: theta_, convergence_['method'], the 90 %
    intervals and seeded draws equal those of a fresh fit with that decoder on the same responses and seed (no
    cached draws leak across decoders)."""
    K, X = 14, _users(14, 800, 3)
    est = _est(K, 1.0, 5, decoder="importance").fit(X)
    est.theta_
    assert exact_work_ratio(est._n_distinct(), est._client.subset_size, K) > EXACT_WORK_MAX
    for decoder in ["counts", "eb", "posterior", "auto", "importance"]:
        est.set_params(decoder=decoder)
        fresh = _est(K, 1.0, 5, decoder=decoder).fit(X)
        assert _same_responses(est, fresh)
        np.testing.assert_array_equal(est.theta_, fresh.theta_)
        assert est.convergence_["method"] == fresh.convergence_["method"]
        np.testing.assert_array_equal(est.credible_interval(0.9), fresh.credible_interval(0.9))
        np.testing.assert_array_equal(est.sample_posterior(7, random_state=3), fresh.sample_posterior(7, random_state=3))
    assert est.convergence_["method"] == "importance"


@pytest.mark.slow
def test_stream_crossing_the_auto_route_boundary():
    """K = 20, eps = 1 (SS(5)): 400 users leave the exact chain's work ratio G k / (K (K - 1)) below EXACT_WORK_MAX
    ('auto' is decoder='posterior' bit for bit); 2600 more take it above ('auto' is decoder='importance' bit for
    bit, the cached exact-chain theta_ of the first batch not reused)."""
    K, X = 20, _users(20, 3000, 3)
    streams = {d: _est(K, 1.0, 5, decoder=d) for d in ("auto", "posterior", "importance")}
    for est in streams.values():
        est.partial_fit(X[:400])
    auto = streams["auto"]
    assert exact_work_ratio(auto._n_distinct(), auto._client.subset_size, K) <= EXACT_WORK_MAX
    assert auto.convergence_["method"] == "mcmc"
    np.testing.assert_array_equal(auto.theta_, streams["posterior"].theta_)
    for est in streams.values():
        est.partial_fit(X[400:])
    assert exact_work_ratio(auto._n_distinct(), auto._client.subset_size, K) > EXACT_WORK_MAX
    assert auto.convergence_["method"] == "importance"
    np.testing.assert_array_equal(auto.theta_, streams["importance"].theta_)
    np.testing.assert_array_equal(auto.credible_interval(0.8), streams["importance"].credible_interval(0.8))
    assert not np.array_equal(auto.theta_, streams["posterior"].theta_)


@pytest.mark.parametrize("bad", [np.array([[20]]), np.array([[-1]]), np.array([[0.5]]), np.array([[0, 1]])])
def test_a_rejected_partial_fit_leaves_the_estimator_unchanged(bad):
    """After theta_ (importance) was cached, a batch with a category out of range, a fraction or two columns is
    refused; the responses, theta_, convergence_ and later results equal those of a twin that never saw it."""
    K, X = 20, _users(20, 1500, 4)
    est, twin = _est(K, 1.0, 6, decoder="importance"), _est(K, 1.0, 6, decoder="importance")
    est.partial_fit(X[:1000])
    twin.partial_fit(X[:1000])
    theta, conv = est.theta_.copy(), dict(est.convergence_)
    with pytest.raises(ValueError):
        est.partial_fit(np.vstack([X[1000:1010], bad]) if bad.shape[1] == 1 else bad)
    assert est.n_responses_ == 1000 and _same_responses(est, twin)
    np.testing.assert_array_equal(est.theta_, theta)
    assert est.convergence_.keys() == conv.keys()
    est.partial_fit(X[1000:])
    twin.partial_fit(X[1000:])
    assert _same_responses(est, twin)
    np.testing.assert_array_equal(est.theta_, twin.theta_)


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_copies_mid_stream_after_theta_was_cached(how):
    """A copy (pickle or deepcopy) taken mid-stream after theta_ was read continues exactly as the original: the
    same next responses, theta_, intervals and read-stream draws; clone is unfitted with the same parameters."""
    K, X = 20, _users(20, 2000, 7)
    est = _est(K, 1.0, 8, decoder="importance")
    est.partial_fit(X[:1200])
    est.theta_
    cp = pickle.loads(pickle.dumps(est)) if how == "pickle" else copy.deepcopy(est)
    np.testing.assert_array_equal(cp.theta_, est.theta_)
    est.partial_fit(X[1200:])
    cp.partial_fit(X[1200:])
    assert _same_responses(est, cp)
    np.testing.assert_array_equal(cp.theta_, est.theta_)
    np.testing.assert_array_equal(cp.credible_interval(0.9), est.credible_interval(0.9))
    np.testing.assert_array_equal(cp.sample_posterior(5), est.sample_posterior(5))
    fresh = clone(est)
    assert fresh.get_params() == est.get_params() and not hasattr(fresh, "n_responses_")


def test_threads_reading_credible_interval_theta_and_draws_agree_with_sequential_reads():
    """Two threads calling credible_interval, one reading theta_ and one sample_posterior (nothing cached yet) on one
    fitted estimator get what one call each on a deep copy gets (the read streams and memoised draws are not torn)."""
    K, X = 20, _users(20, 1500, 9)
    est = _est(K, 1.0, 10, decoder="importance").fit(X)
    ref = copy.deepcopy(est)
    expected = [ref.credible_interval(0.9), ref.credible_interval(0.9), ref.theta_, ref.sample_posterior(5)]
    reads = [lambda: est.credible_interval(0.9), lambda: est.credible_interval(0.9), lambda: est.theta_,
             lambda: est.sample_posterior(5)]
    out = [None] * 4

    def read(i):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[i] = reads[i]()

    run_threads(*(functools.partial(read, i) for i in range(4)))  # re-raises a thread's error
    for got, want in zip(out, expected):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("K, n", [(3, 1), (4, 1), (2, 2), (3, 2), (2, 3)])
def test_one_two_three_responses(K, n):
    """With one to three responses decoder='importance' gives a theta_ in the simplex, ordered intervals inside
    [0, 1] and simplex draws."""
    est = _est(K, 1.0, 0, decoder="importance").fit(np.zeros((n, 1), dtype=int))
    assert est.convergence_["method"] in ("importance", "importance->exact")
    _check_simplex(est.theta_[None, :], K, 1)
    ci = est.credible_interval(0.9)
    assert ci.shape == (K, 2) and np.all((0 <= ci[:, 0]) & (ci[:, 0] <= ci[:, 1]) & (ci[:, 1] <= 1))
    _check_simplex(est.sample_posterior(4, random_state=1), K, 4)


def test_one_response_at_the_lowest_tempering():
    """K = 2 is GRR; its plug-in variance ratio is 2, so the proposal's tempering is TEMPER_MIN = 0.5, and one
    response would be tempered to rint(0.5) = 0 (round half to even), and the proposal's chain on no counts crashed in
    numpy's multinomial: the tempered number of responses is at least 1, and theta_ is a point of the simplex (as for
    decoder='posterior' and 'counts' on the same response)."""
    est = _est(2, 1.0, 0, decoder="importance").fit(np.zeros((1, 1), dtype=int))
    assert est._importance_temper() == TEMPER_MIN
    assert tempered_counts(est._support_counts()[0], 1, TEMPER_MIN)[1] == 1
    for other in ("posterior", "counts"):
        _check_simplex(_est(2, 1.0, 0, decoder=other).fit(np.zeros((1, 1), dtype=int)).theta_[None, :], 2, 1)
    _check_simplex(est.theta_[None, :], 2, 1)


@pytest.mark.parametrize("K", [2, 3, 31, 32])
def test_all_users_in_one_category(K):
    """500 users all in category 0: theta_ puts at least the mass decoder='posterior' puts there, less 0.05 (both
    near 1: the exact posterior's mean of theta_0 is above 1 - K / 500 * 10 at eps = 1), finite weights, simplex
    draws."""
    X = np.zeros((500, 1), dtype=int)
    est = _est(K, 1.0, 0, decoder="importance").fit(X)
    conv = est.convergence_
    assert conv["method"] == "importance" and all(np.isfinite(conv[k]) for k in WEIGHT_KEYS)
    post = _est(K, 1.0, 0, decoder="posterior").fit(X)
    assert est.theta_[0] >= post.theta_[0] - 0.05 and est.theta_[0] > 0.5
    _check_simplex(est.sample_posterior(3, random_state=0), K, 3)


@pytest.mark.parametrize("K", [31, 32])
def test_auto_route_at_31_and_32_categories(K):
    """3000 users, eps = 1: at 31 categories (SS(8), work ratio about 26 > EXACT_WORK_MAX) 'auto' is
    decoder='importance' bit for bit; at 32 it is not (the count posterior's or EB's route)."""
    X = _users(K, 3000, 1)
    auto = _est(K, 1.0, 0).fit(X)
    assert exact_work_ratio(auto._n_distinct(), auto._client.subset_size, K) > EXACT_WORK_MAX
    if K < AUTO_CV_MIN_CATEGORIES:
        assert auto.convergence_["method"] == "importance"
        np.testing.assert_array_equal(auto.theta_, _est(K, 1.0, 0, decoder="importance").fit(X).theta_)
    else:
        assert auto.convergence_["method"] in ("counts", "eb") and not auto._uses_importance()


@pytest.mark.parametrize("eps", [50.0, 700.0, 1e6, 1e-3])
@pytest.mark.parametrize("K", [3, 10])
def test_extreme_epsilon(eps, K):
    """No overflow at eps = 50, 700, 1e6 (exp(eps) huge: the released category is the true one, theta_ within 3
    binomial SDs of the users' shares plus the prior's pull 2 K / n) nor at eps = 1e-3 (theta_ in the simplex); the
    weights' diagnostics are finite and the draws are simplex rows."""
    n = 300
    X = _users(K, n, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        est = _est(K, eps, 0, decoder="importance").fit(X)
        theta, conv = est.theta_, est.convergence_
        ci = est.credible_interval(0.9)
        draws = est.sample_posterior(6, random_state=0)
    assert conv["method"] == "importance" and all(np.isfinite(conv[k]) for k in WEIGHT_KEYS)
    _check_simplex(theta[None, :], K, 1)
    _check_simplex(draws, K, 6)
    assert np.all(np.isfinite(ci))
    if eps >= 50:
        share = np.bincount(X[:, 0], minlength=K) / n
        assert np.all(np.abs(theta - share) <= 3 * np.sqrt(share * (1 - share) / n) + 2 * K / n)


@pytest.mark.parametrize("n_samples", [1, 2, 301])
def test_sample_posterior_shapes(n_samples):
    """sample_posterior(n) under importance: n simplex rows, reproducible with a seed, the read stream repeatable."""
    K = 20
    est = _est(K, 1.0, 3, decoder="importance").fit(_users(K, 1500, 5))
    s = est.sample_posterior(n_samples, random_state=4)
    _check_simplex(s, K, n_samples)
    np.testing.assert_array_equal(s, est.sample_posterior(n_samples, random_state=4))


@pytest.mark.parametrize("n_final_steps", [0, 1, 2, 10])
def test_tiny_final_chains(n_final_steps):
    """n_final_steps 0 and 1 keep no draw: a static mechanism has no online sample to report, so reading theta_
    raises (as for decoder='posterior', review HQV F2); 2 and 10 weight the 4 and 20 draws the capped chain (4
    n_final_steps iterations, half kept) gives: theta_ in the simplex, finite weights, intervals and draws of the
    right shapes."""
    K = 10
    est = _est(K, 1.0, 0, decoder="importance", n_final_steps=n_final_steps).fit(_users(K, 800, 1))
    if n_final_steps < 2:
        for decoder in ("importance", "posterior"):
            with pytest.raises(ValueError, match="n_final_steps"):
                est.set_params(decoder=decoder).theta_
        est.set_params(decoder="importance")
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theta, conv = est.theta_, est.convergence_
        _check_simplex(theta[None, :], K, 1)
        assert conv["method"] in ("importance", "importance->exact")
        assert conv["n_weighted"] == conv["n_draws"] == 2 * n_final_steps
        assert all(np.isfinite(conv[k]) for k in ("weight_ess", "weight_ess_fraction"))
    assert est.credible_interval(0.9).shape == (K, 2)
    _check_simplex(est.sample_posterior(2, random_state=0), K, 2)


@pytest.mark.parametrize("max_values", [None, 70, 10, 5])
def test_thinned_draws_have_the_exact_samplers_count(max_values):
    """credible_interval holds at most MAX_DRAW_VALUES values by thinning (exact_draws: thin = ceil(n / max(1,
    max_values // K)), ceil(n / thin) draws); the importance path resamples into as many draws as decoder='posterior'
    gives for the same n and max_values (50 draws at K = 10: 50, 7, 1 and 1)."""
    K, X = 10, _users(10, 800, 2)
    imp = _est(K, 1.0, 0, decoder="importance").fit(X)
    post = _est(K, 1.0, 0, decoder="posterior").fit(X)
    a = imp._posterior_draws(50, 3, max_values=max_values)
    b = post._posterior_draws(50, 3, max_values=max_values)
    assert a.shape == b.shape == ({None: 50, 70: 7, 10: 1, 5: 1}[max_values], K)
    _check_simplex(a, K, a.shape[0])


def test_fixed_dirichlet_prior_matches_the_exact_posterior():
    """A fixed Dir(0.5) prior (the exact Gibbs chain with that prior, which the importance weights share: it cancels):
    the posterior means of 4000 draws under 'importance' and 'posterior' agree within 5 Monte Carlo standard errors
    (ESS >= 75 each, as in the per-mechanism test)."""
    K, X = 12, _users(12, 1500, 6, alpha=0.3)
    imp = _est(K, 1.0, 2, decoder="importance", prior=0.5).fit(X)
    post = _est(K, 1.0, 2, decoder="posterior", prior=0.5).fit(X)
    assert imp.convergence_["method"] == "importance"
    s_imp, s_post = imp.sample_posterior(4000, random_state=1), post.sample_posterior(4000, random_state=1)
    sd = np.maximum(s_imp.std(axis=0), s_post.std(axis=0))
    assert np.all(np.abs(s_imp.mean(axis=0) - s_post.mean(axis=0)) <= 5 * sd * np.sqrt(2 / 75))


@pytest.mark.parametrize("mechanism", ["oue", "grr"])
def test_oue_and_grr_importance_draws_match_quadrature(mechanism, k3_posterior_moments):
    """K = 3, 400 users, eps = 1, fixed Dir(1) prior (the conftest's quadrature reference): the mean of 6000
    sample_posterior draws under decoder='importance' is within 4 Monte Carlo SEs (ESS of the resampled draws, whose
    copies sit next to each other, so their autocorrelation counts them) of the exact posterior mean, for the two
    mechanisms the importance tests of round 11 did not weigh."""
    X = _users(3, 400, 11)
    est = _est(3, 1.0, 12, decoder="importance", prior=1.0, mechanism=mechanism).fit(X)
    mean_q, sd_q = k3_posterior_moments(est._chain.exact_groups(1.0))
    draws = est.sample_posterior(6000, random_state=13)
    from sklearn_bayes.privacy._ldp._diagnostics import min_ess

    ess = min_ess(draws)
    assert ess > 300
    np.testing.assert_array_less(np.abs(draws.mean(axis=0) - mean_q), 4 * sd_q / np.sqrt(ess))


def test_refit_across_the_route_boundary_forgets_the_memoised_route():
    """fit on 400 users (exact chain), theta_ read, then fit on 3000 (importance), and the reverse: the route, the
    distinct-subset count and theta_ are a fresh estimator's on the second data (the memoised n_distinct, counts
    ratio and theta_ of the first fit are not reused)."""
    K, small, big = 20, _users(20, 400, 3), _users(20, 3000, 4)
    for first, second in ((small, big), (big, small)):
        est = _est(K, 1.0, 5).fit(first)
        first_method = est.convergence_["method"]
        est.fit(second)
        fresh = _est(K, 1.0, 5).fit(second)
        assert est.convergence_["method"] == fresh.convergence_["method"] != first_method
        assert est._n_distinct() == fresh._n_distinct()
        np.testing.assert_array_equal(est.theta_, fresh.theta_)


def test_no_responses_is_refused_and_an_empty_batch_changes_nothing():
    """fit on zero users is refused (ValueError naming the batch); an empty partial_fit on a fitted estimator too,
    leaving its responses and theta_ unchanged."""
    with pytest.raises(ValueError, match="0 sample"):
        _est(5, 1.0, 0, decoder="importance").fit(np.zeros((0, 1), dtype=int))
    est = _est(5, 1.0, 0, decoder="importance").fit(_users(5, 300, 0))
    theta, before = est.theta_.copy(), _responses(est)
    with pytest.raises(ValueError):
        est.partial_fit(np.zeros((0, 1), dtype=int))
    assert est.n_responses_ == 300 and all(np.array_equal(u, v) for u, v in zip(_responses(est), before))
    np.testing.assert_array_equal(est.theta_, theta)


def test_fallback_is_deterministic_given_random_state(monkeypatch):
    """An overconfident proposal (TEMPER = 3, as in test_count_importance) makes the weights fail: two fits with the
    same seed give the same 'importance->exact' theta_, diagnostics and intervals."""
    import sklearn_bayes.privacy._ldp._count_importance as ci_mod
    from sklearn.exceptions import ConvergenceWarning

    monkeypatch.setattr(ci_mod, "TEMPER", 3.0)
    X = _users(12, 3000, 5, alpha=0.3)
    out = []
    for _ in range(2):
        est = _est(12, 1.0, 7, decoder="importance").fit(X)
        with pytest.warns(ConvergenceWarning, match="fell back"):
            theta = est.theta_
        out.append((theta, est.convergence_, est.credible_interval(0.9)))
    assert out[0][1]["method"] == "importance->exact"
    np.testing.assert_array_equal(out[0][0], out[1][0])
    assert out[0][1].keys() == out[1][1].keys()
    for key, value in out[0][1].items():  # NaN (an unmeasured key) equals NaN
        assert value == out[1][1][key] or (value != value and out[1][1][key] != out[1][1][key])
    np.testing.assert_array_equal(out[0][2], out[1][2])


def test_draws_that_fall_back_say_so(monkeypatch):
    """sample_posterior and credible_interval draw their own importance sample; when its weights fail (an
    overconfident proposal, TEMPER = 3) they fall back to the exact chain with a ConvergenceWarning, as theta_ does,
    and the draws are decoder='posterior''s from the same generator state, bit for bit."""
    import sklearn_bayes.privacy._ldp._count_importance as ci_mod
    from sklearn.exceptions import ConvergenceWarning

    monkeypatch.setattr(ci_mod, "TEMPER", 3.0)
    X = _users(12, 3000, 5, alpha=0.3)
    est = _est(12, 1.0, 7, decoder="importance").fit(X)
    with pytest.warns(ConvergenceWarning, match="these posterior draws fell back"):
        draws = est.sample_posterior(20, random_state=3)
    exact = _est(12, 1.0, 7, decoder="posterior").fit(X).sample_posterior(20, random_state=3)
    np.testing.assert_array_equal(draws, exact)
    with pytest.warns(ConvergenceWarning, match="these posterior draws fell back"):
        est.credible_interval(0.9)


def test_fallback_warnings_point_at_the_users_line(monkeypatch):
    """The ConvergenceWarnings of the fallback name the line that read theta_ / drew the samples (this file), not a
    wrapper of the package (they pointed at utils/_transaction.py)."""
    import warnings

    import sklearn_bayes.privacy._ldp._count_importance as ci_mod
    from sklearn.exceptions import ConvergenceWarning

    monkeypatch.setattr(ci_mod, "TEMPER", 3.0)
    est = _est(12, 1.0, 7, decoder="importance").fit(_users(12, 3000, 5, alpha=0.3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.theta_
        est.sample_posterior(5, random_state=1)
    fell_back = [w for w in caught if issubclass(w.category, ConvergenceWarning) and "fell back" in str(w.message)]
    assert len(fell_back) == 2
    assert all(w.filename == __file__ for w in fell_back), [w.filename for w in fell_back]
