"""Edge and attack review of prior='spike-bulk' and of serving under the newest routes (issue 28, round 12).

Every decoder and mechanism under the spike/bulk prior, tiny and one-category samples, extreme budgets,
streams, rejected calls, copies, threads, reproducibility, interval levels; merge under different
decoders, priors and mechanisms.
"""

import copy
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from tests._property_tools import _release_state, run_threads

K = 5
THETA = np.array([0.5, 0.3, 0.15, 0.049, 0.001])


def _users(n, seed=0, k=K):
    p = THETA if k == K else np.full(k, 1.0 / k)
    return np.random.default_rng(seed).choice(k, n, p=p).reshape(-1, 1)


def _est(seed=1, **params):
    params = dict(dict(n_categories=K, epsilon=1.0, prior="spike-bulk"), **params)
    return AdaptiveLDPFrequencyEstimator(random_state=np.random.default_rng(seed), **params)


def _quiet(f, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args, **kwargs)


def _responses(mechanism, n, seed, k=K):
    """Released responses of ``n`` users (the client mechanism of ``mechanism`` at eps = 1)."""
    client = AdaptiveLDPFrequencyEstimator(n_categories=k, epsilon=1.0, mechanism=mechanism).client_mechanism()
    return client.privatize(_users(n, seed, k).ravel(), np.random.default_rng(seed + 100))


# ------------------------------------------------------------------ merge
def test_merge_of_stores_with_different_categories_names_the_categories_not_prior():
    """categories='from_data' (simulation): two stores fitted on 3 and on 4 categories under the same prior.  The
    refusal used to say "fitted with prior='hierarchical' and this estimator with prior='hierarchical': the
    posteriors differ" (the prior vectors' shapes differ); it names the categories, and changes neither."""
    for prior in ("hierarchical", "spike-bulk", 1.0):
        a = _quiet(_est(n_categories=None, categories="from_data", prior=prior).fit, np.repeat([[0], [1], [2]], 30,
                                                                                               axis=0))
        b = _quiet(_est(2, n_categories=None, categories="from_data", prior=prior).fit,
                   np.repeat([[0], [1], [2], [3]], 30, axis=0))
        sa, sb = _release_state(a), _release_state(b)
        with pytest.raises(ValueError, match="other categories") as info:
            a.merge(b)
        assert "prior" not in str(info.value)
        assert _release_state(a) == sa and _release_state(b) == sb


@pytest.mark.parametrize("mechanism", ["grr", "oue", "subset_selection"])
@pytest.mark.parametrize("decoder", ["posterior", "counts", "importance"])
def test_merge_under_spike_bulk_equals_one_store_of_all_responses(mechanism, decoder):
    """Two workers' stores merged give theta_, convergence_ and intervals equal bit for bit to one store that
    recorded every response (either order): the draws depend on the responses and the hub's generator only.
    subset_selection at K = 8, eps = 1 is SS(2) (a latent category per user)."""
    k = 8 if mechanism == "subset_selection" else K
    r1, r2 = _responses(mechanism, 120, 0, k), _responses(mechanism, 140, 1, k)
    kw = dict(n_categories=k, mechanism=mechanism, decoder=decoder, n_final_steps=200)
    a = _est(5, **kw).partial_fit_responses(r1)
    a.merge(_est(6, **kw).partial_fit_responses(r2))
    for order in ((r1, r2), (r2, r1)):
        one = _est(5, **kw).partial_fit_responses(np.vstack(order))
        np.testing.assert_array_equal(_quiet(lambda: a.theta_), _quiet(lambda: one.theta_))
        assert a.convergence_ == one.convergence_ and 0 <= a.convergence_["p_symmetric"] <= 1
        np.testing.assert_array_equal(a.credible_interval(0.9, 300), one.credible_interval(0.9, 300))


def test_merge_across_decoders_uses_the_hubs_decoder():
    """decoder is a compute knob: stores fitted under different decoders merge, and the hub decodes the union with
    its own decoder (equal to one store of all responses under it)."""
    r1, r2 = _responses("grr", 120, 0), _responses("grr", 140, 1)
    a = _est(5, decoder="counts", n_final_steps=200).partial_fit_responses(r1)
    a.merge(_est(6, decoder="importance", n_final_steps=200).partial_fit_responses(r2))
    one = _est(5, decoder="counts", n_final_steps=200).partial_fit_responses(np.vstack([r1, r2]))
    np.testing.assert_array_equal(_quiet(lambda: a.theta_), _quiet(lambda: one.theta_))
    assert a.convergence_["method"] == "counts"


@pytest.mark.parametrize("change, name", [(dict(prior="hierarchical"), "prior"), (dict(prior=1.0), "prior"),
                                          (dict(prior=np.ones(K)), "prior"), (dict(mechanism="oue"), "mechanism"),
                                          (dict(mechanism="grr"), "mechanism"), (dict(epsilon=2.0), "epsilon"),
                                          (dict(n_categories=K + 1), "n_categories")])
def test_a_refused_merge_names_the_difference_and_changes_neither(change, name):
    """Different priors, mechanisms (by name: 'auto' and 'grr' are refused even where 'auto' resolves to GRR),
    budgets or sizes: a ValueError naming the parameter; both estimators keep every attribute."""
    a = _est(5).partial_fit_responses(_responses("auto", 50, 0))
    _quiet(lambda: a.theta_)
    kw = dict(dict(n_categories=K), **change)
    b = _est(6, **kw)
    b.partial_fit_responses(_responses(b.mechanism, 50, 1, b.n_categories) if b.epsilon == 1.0 else
                            b.client_mechanism().privatize(np.zeros(50, int), np.random.default_rng(0)))
    sa, sb = _release_state(a), _release_state(b)
    with pytest.raises(ValueError, match=f"{name}="):
        a.merge(b)
    assert _release_state(a) == sa and _release_state(b) == sb


# ------------------------------------------------------------------ every decoder and mechanism
@pytest.mark.parametrize("mechanism", ["grr", "oue", "subset_selection", "rrrr"])
@pytest.mark.parametrize("decoder", ["auto", "posterior", "counts", "importance", "eb"])
def test_every_decoder_and_mechanism_under_spike_bulk(mechanism, decoder):
    """Static mechanisms accept every decoder under the prior: the chains report p_symmetric in [0, 1], 'eb'
    (no chain) none; a seeded refit gives the same theta_, intervals and draws bit for bit; draws on the simplex.
    RRRR refuses 'counts', 'importance' and 'eb' naming decoder and mechanism."""
    k = 8 if mechanism == "subset_selection" else K
    kw = dict(n_categories=k, mechanism=mechanism, decoder=decoder, n_final_steps=200)
    if mechanism == "rrrr" and decoder in ("counts", "importance", "eb"):
        with pytest.raises(ValueError, match=f"decoder='{decoder}'.*mechanism='rrrr'"):
            _est(**kw).fit(_users(50, 0, k))
        return
    fits = [_quiet(_est(**kw).fit, _users(300, 0, k)) for _ in range(2)]
    theta, conv = (_quiet(lambda: fits[0].theta_), fits[0].convergence_)
    np.testing.assert_array_equal(theta, _quiet(lambda: fits[1].theta_))
    np.testing.assert_array_equal(fits[0].credible_interval(0.9, 200), fits[1].credible_interval(0.9, 200))
    draws = fits[0].sample_posterior(50)
    np.testing.assert_array_equal(draws, fits[1].sample_posterior(50))
    assert np.all(draws >= 0) and np.abs(draws.sum(axis=1) - 1).max() <= 1e-12 * k
    assert np.all(theta >= 0) and abs(theta.sum() - 1) <= 1e-12 * k
    if conv["method"] == "eb":
        assert "p_symmetric" not in conv
    else:
        assert conv["method"] == {"posterior": "mcmc", "auto": "mcmc"}.get(decoder, decoder)
        assert 0 <= conv["p_symmetric"] <= 1


@pytest.mark.parametrize("n_categories", [200, 1000])
def test_large_k_under_spike_bulk_is_refused_by_name_or_routed_to_eb(n_categories):
    """The count chains stop at 128 categories (a ValueError naming decoder); 'auto' decodes by 'eb' from 64 on
    (no chain, no p_symmetric); 'posterior' runs (few iterations here) with its draws on the simplex."""
    rng = np.random.default_rng(0)
    masks = np.zeros((300, n_categories), dtype=bool)
    masks[np.arange(300), rng.integers(0, n_categories, 300)] = True
    for decoder in ("counts", "importance"):  # refused when recording (review HQV), not when theta_ is read
        with pytest.raises(ValueError, match=f"decoder='{decoder}' runs up to 128 categories"):
            _est(n_categories=n_categories, mechanism="grr", decoder=decoder).partial_fit_responses(masks)
    est = _est(n_categories=n_categories, mechanism="grr").partial_fit_responses(masks)
    assert est.convergence_["method"] == "eb-stack" and "p_symmetric" not in est.convergence_
    est = _est(n_categories=n_categories, mechanism="grr", decoder="posterior", n_final_steps=10)
    est.partial_fit_responses(masks)
    theta = _quiet(lambda: est.theta_)
    assert abs(theta.sum() - 1) <= 1e-12 * n_categories and 0 <= est.convergence_["p_symmetric"] <= 1


# ------------------------------------------------------------------ small samples and extreme budgets
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("decoder", ["auto", "posterior", "counts", "importance"])
def test_one_and_two_responses_and_no_response(k, decoder):
    """K = 2, 3 with 1 and 2 responses: an estimate on the simplex, intervals ordered within [0, 1], p_symmetric in
    [0, 1]; an empty batch is refused naming y and leaves the estimator unfitted."""
    for n in (1, 2):
        est = _est(n_categories=k, mechanism="grr", decoder=decoder, n_final_steps=200)
        est.partial_fit_responses(_responses("grr", n, 0, k))
        theta = _quiet(lambda: est.theta_)
        assert np.all(theta >= 0) and abs(theta.sum() - 1) <= 1e-12
        ci = est.credible_interval(0.9, 200)
        assert np.all((0 <= ci[:, 0]) & (ci[:, 0] <= ci[:, 1]) & (ci[:, 1] <= 1))
        assert 0 <= est.convergence_["p_symmetric"] <= 1
    est = _est(n_categories=k, mechanism="grr", decoder=decoder)
    with pytest.raises(ValueError, match="y must hold at least one response"):
        est.partial_fit_responses(np.zeros((0, k), dtype=bool))
    assert "n_responses_" not in vars(est)


@pytest.mark.parametrize("decoder", ["posterior", "counts", "importance"])
def test_all_users_in_one_category_at_a_large_budget(decoder):
    """eps = 50: GRR reports the truth but with probability (K - 1) / (e^50 + K - 1) ~ 1e-21 per user, so 300 users
    of category 0 give 300 responses 0; the posterior mass off category 0 is then at most about (K - 1) rho_max /
    300 with rho_max = 10: theta_[0] > 0.9 under every route (observed: 1.0)."""
    est = _est(n_categories=3, epsilon=50.0, mechanism="grr", decoder=decoder, n_final_steps=200)
    _quiet(est.fit, np.zeros((300, 1), dtype=int))
    assert _quiet(lambda: est.theta_)[0] > 0.9 and 0 <= est.convergence_["p_symmetric"] <= 1


@pytest.mark.parametrize("decoder", ["posterior", "counts", "importance"])
def test_a_tiny_budget_keeps_the_estimate_near_uniform(decoder):
    """eps = 0.01: a GRR response's likelihood ratio is e^0.01 ~ 1.01, so 300 of them leave the posterior about as
    wide as the prior (the unbiased estimate's standard deviation, sqrt(p (1 - p) / 300) / (p - q), is 8 here): theta_
    on the simplex, and every 90 % interval holds the uniform value 1/3."""
    est = _est(n_categories=3, epsilon=0.01, mechanism="grr", decoder=decoder, n_final_steps=200)
    _quiet(est.fit, _users(300, 0, 3))
    theta = _quiet(lambda: est.theta_)
    assert abs(theta.sum() - 1) <= 1e-12 and 0 <= est.convergence_["p_symmetric"] <= 1
    ci = est.credible_interval(0.9, 500)
    assert np.all((ci[:, 0] < 1 / 3) & (1 / 3 < ci[:, 1]))


# ------------------------------------------------------------------ streams, rejected calls, copies, threads
@pytest.mark.parametrize("decoder", ["posterior", "counts", "importance"])
def test_streams_reading_between_calls_and_rejected_batches(decoder):
    """Reading theta_, convergence_, intervals and draws between partial_fit calls changes nothing later; a rejected
    batch (an unknown category, a bad shape) or a changed frozen parameter leaves every attribute as it was."""
    a, b = _est(decoder=decoder, n_final_steps=200), _est(decoder=decoder, n_final_steps=200)
    for est, read in ((a, True), (b, False)):
        _quiet(est.partial_fit, _users(150, 0))
        if read:
            _quiet(lambda: (est.theta_, est.convergence_, est.credible_interval(0.9, 100), est.sample_posterior(20)))
        _quiet(est.partial_fit, _users(150, 1))
    np.testing.assert_array_equal(_quiet(lambda: a.theta_), _quiet(lambda: b.theta_))
    assert a.convergence_ == b.convergence_
    before = _release_state(a)
    for bad in (np.array([[K + 3]]), np.zeros((2, 2), dtype=int), np.array([[0.5]])):
        with pytest.raises(ValueError):
            a.partial_fit(bad)
        assert _release_state(a) == before
    a.set_params(prior="hierarchical")
    with pytest.raises(ValueError, match="prior was 'spike-bulk'"):
        a.partial_fit(_users(5, 2))
    a.set_params(prior="spike-bulk")
    assert _release_state(a) == before


@pytest.mark.parametrize("read_first", [False, True])
def test_copies_before_and_after_theta_was_read(read_first):
    """copy, deepcopy and pickle give the same theta_, convergence_, intervals and draws whether or not theta_ was
    read before copying; clone is unfitted with the same parameters."""
    est = _quiet(_est(decoder="importance", n_final_steps=200).fit, _users(300))
    if read_first:
        _quiet(lambda: est.theta_)
    copies = [copy.copy(est), copy.deepcopy(est), pickle.loads(pickle.dumps(est))]
    theta = _quiet(lambda: est.theta_)
    ci, draws = est.credible_interval(0.8, 200), est.sample_posterior(30)
    for c in copies:
        np.testing.assert_array_equal(_quiet(lambda: c.theta_), theta)
        assert c.convergence_ == est.convergence_
        np.testing.assert_array_equal(c.credible_interval(0.8, 200), ci)
        np.testing.assert_array_equal(c.sample_posterior(30), draws)
    fresh = clone(est)
    assert fresh.get_params()["prior"] == "spike-bulk" and "n_responses_" not in vars(fresh)


def test_two_threads_reading_one_fitted_estimator_get_the_serial_results():
    """theta_, credible_interval and sample_posterior from three threads at once (the instance's lock): the values
    a fresh, identically seeded estimator gives when read one after the other."""
    est = _quiet(_est(decoder="posterior", n_final_steps=200).fit, _users(300))
    ref = _quiet(_est(decoder="posterior", n_final_steps=200).fit, _users(300))
    out = {}
    run_threads(lambda: out.__setitem__("theta", _quiet(lambda: est.theta_)),
                lambda: out.__setitem__("ci", est.credible_interval(0.9, 200)),
                lambda: out.__setitem__("draws", est.sample_posterior(40)))
    np.testing.assert_array_equal(out["theta"], _quiet(lambda: ref.theta_))
    np.testing.assert_array_equal(out["ci"], ref.credible_interval(0.9, 200))
    np.testing.assert_array_equal(out["draws"], ref.sample_posterior(40))


def test_set_params_decoder_after_a_fit_equals_a_fit_under_that_decoder():
    """decoder is a compute knob: switched after fitting, theta_ and convergence_ are a fresh fit's under the new
    decoder (same seed, same responses), and switching back restores the first."""
    est = _quiet(_est(decoder="posterior", n_final_steps=200).fit, _users(300))
    first = _quiet(lambda: est.theta_)
    for decoder in ("counts", "importance", "eb", "auto", "posterior"):
        est.set_params(decoder=decoder)
        ref = _quiet(_est(decoder=decoder, n_final_steps=200).fit, _users(300))
        np.testing.assert_array_equal(_quiet(lambda: est.theta_), _quiet(lambda: ref.theta_))
        assert est.convergence_ == ref.convergence_
    np.testing.assert_array_equal(est.theta_, first)


def test_credible_interval_levels_are_validated_and_nest():
    """level outside (0, 1), NaN, a bool or a string: a ValueError naming level.  On the same draws (same
    random_state and n_samples) the intervals nest exactly as the level grows (quantiles are monotone)."""
    est = _quiet(_est(decoder="counts", n_final_steps=200).fit, _users(300))
    for bad in (0, 1, -0.1, 1.5, np.nan, True, "0.9", None):
        with pytest.raises(ValueError, match="level must be in"):
            est.credible_interval(bad)
    ivs = [est.credible_interval(level, 400, random_state=3) for level in (0.5, 0.8, 0.9, 0.99)]
    for inner, outer in zip(ivs, ivs[1:]):
        assert np.all(outer[:, 0] <= inner[:, 0]) and np.all(inner[:, 1] <= outer[:, 1])
    assert np.all(ivs[0][:, 0] < ivs[-1][:, 1])


# ------------------------------------------------------------------ privacy of the release paths
def test_no_raw_value_reaches_a_message_a_warning_or_a_fitted_attribute():
    """Simulation under the prior with a sentinel value among the refused inputs: the errors of partial_fit and
    transform, every warning of the fit and of the reads, and every fitted attribute but categories_ (the labels
    a simulation fit is given, documented) hold no trace of it."""
    sentinel = 987654321
    est = _est(decoder="importance", n_final_steps=10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(_users(200))
        est.theta_, est.credible_interval(0.9, 50), est.sample_posterior(5)
        for call in (est.partial_fit, est.transform):
            with pytest.raises(ValueError) as info:
                call(np.array([[0], [sentinel]]))
            assert str(sentinel) not in str(info.value)
    assert not any(str(sentinel) in str(w.message) for w in caught)
    state = {k: v for k, v in vars(est).items() if k != "categories_"}
    assert str(sentinel).encode() not in pickle.dumps(state) and str(sentinel) not in repr(state)
    assert sentinel.to_bytes(4, "little") not in pickle.dumps(state)


def test_rrrr_serving_under_spike_bulk_merges_into_one_stores_posterior():
    """mechanism='rrrr': a hub that proposed a batch, recorded it (deferred) and merged a worker's store gives the
    theta_, convergence_ and next proposals of a hub that recorded both batches itself; p_symmetric in [0, 1]."""
    from sklearn_bayes.privacy import RRRRMechanism

    def hub(seed):
        return _est(seed, mechanism="rrrr", n_final_steps=200)

    def answer(est, n, seed):
        subsets = est.propose_subsets(n, draws="user")
        x = _users(n, seed).ravel()
        mech = RRRRMechanism(K, 1.0, 0.9)
        y = np.array([mech.privatize(int(x[i]), np.flatnonzero(subsets[i]), random_state=np.random.default_rng(i))
                      for i in range(n)])
        return y, subsets

    worker = hub(6)
    y2, s2 = answer(worker, 70, 2)
    worker.partial_fit_responses(y2, s2, update="defer")
    a, one = hub(5), hub(5)
    y1, s1 = answer(a, 60, 1)
    np.testing.assert_array_equal(one.propose_subsets(60, draws="user"), s1)
    a.partial_fit_responses(y1, s1, update="defer")
    a.merge(worker)
    one.partial_fit_responses(np.r_[y1, y2], np.vstack([s1, s2]), update="defer")
    np.testing.assert_array_equal(_quiet(lambda: a.theta_), _quiet(lambda: one.theta_))
    assert a.convergence_ == one.convergence_ and 0 <= a.convergence_["p_symmetric"] <= 1
    np.testing.assert_array_equal(a.propose_subsets(5, draws="user"), one.propose_subsets(5, draws="user"))
    a.refresh(), one.refresh()
    np.testing.assert_array_equal(a.propose_subset(), one.propose_subset())


@pytest.mark.parametrize("decoder", ["posterior", "counts", "importance"])
def test_p_symmetric_is_reported_when_the_draws_are_thinned(decoder, monkeypatch):
    """Above MAX_DRAW_VALUES held values the adaptive chain gives way to the fixed-length, evenly thinned one
    (K > 8388 at the default n_final_steps; here a bound of 100 K values forces it at K = 5): convergence_ still
    holds p_symmetric (it was absent), from the visits of the kept (thinned) iterations."""
    import sklearn_bayes.privacy._ldp._decoding as D

    monkeypatch.setattr(D, "MAX_DRAW_VALUES", 100 * K)
    est = _quiet(_est(decoder=decoder, n_final_steps=200).fit, _users(300))
    _quiet(lambda: est.theta_)
    conv = est.convergence_
    assert conv["n_draws"] <= 100 and 0 <= conv["p_symmetric"] <= 1 and "symmetric_visits" not in conv


# ------------------------------------------------------------------ budgets above 700
def test_an_empty_oue_response_stays_uninformative_above_eps_700():
    """OUE sets its own bit with probability 1/2 at any budget, so about half of the responses are the empty set,
    whose likelihood is the same for every category.  Above eps = 700 the groups keep the ratio finite as
    f_in = 1, f_out = e^-eps = 0, which made an empty set's likelihood 0 for every category: the Python chain
    (prior='spike-bulk') crashed in multinomial (NaN weights; 'pvals < 0, pvals > 1 or pvals contains NaNs' from
    sample_posterior, K = 5, eps = 1000, 200 users).  An empty set's row is now 1 for every category."""
    from sklearn_bayes.privacy._ldp._mechanisms import groups_from_masks, groups_from_packed, groups_from_unique

    masks = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 1]], dtype=bool)
    for eps in (5.0, 700.0, 701.0, 1e6):
        for groups in (groups_from_masks(masks, eps), groups_from_unique(masks, [1, 1, 1], eps),
                       groups_from_packed(np.packbits(masks, axis=1), [1, 1, 1], eps, 3)):
            rows = groups.likelihood_rows()
            assert np.all(np.isfinite(rows)) and np.all(rows.max(axis=1) > 0)
            flat = rows[np.ptp(rows, axis=1) == 0]
            assert flat.shape[0] == 1 and flat[0, 0] > 0  # the empty set: one constant, positive row
    theta = np.array([0.5, 0.3, 0.15, 0.049, 0.001])
    x = np.random.default_rng(1).choice(K, 1000, p=theta)
    for prior in ("spike-bulk", "hierarchical"):
        est = _est(epsilon=1000.0, mechanism="oue", decoder="posterior", prior=prior, n_final_steps=200)
        _quiet(est.fit, x.reshape(-1, 1))
        draws = est.sample_posterior(50)
        assert np.all(np.isfinite(draws)) and np.abs(draws.sum(axis=1) - 1).max() <= 1e-12
        # the non-empty responses reveal their users' categories (the other bits are set with probability
        # 2^-53): theta_ is within the revealed frequencies' sampling error (~500 users: sd <= 0.023 per category)
        revealed = _quiet(lambda: est._support_counts())[0] / est._support_counts()[0].sum()
        assert 0.5 * np.abs(_quiet(lambda: est.theta_) - revealed).sum() < 0.05


@pytest.mark.parametrize("eps", [42.0, 50.0, 1000.0])
def test_eb_with_an_empty_category_at_a_large_budget(eps):
    """GRR above eps ~ 37 + ln K rounds 1 - p to 0, so q = 0 and an atom at theta = 0 has pi = 0: the binomial
    log-likelihood of a category with count 0 was 0 * log(0) = NaN, which spread through the NPMLE and made
    theta_ uniform.  The default ('auto' decodes by 'eb' from 64 categories): K = 100, 2000 users in 10
    categories, eps = 50 gave theta_ = 1/100 everywhere (TV 0.9); decoder='eb' at K = 5 with every user in
    category 0 gave 1/5 everywhere.  Expected: near the truth (the responses are the true categories)."""
    X = np.random.default_rng(0).choice(10, 2000).reshape(-1, 1)
    est = _quiet(AdaptiveLDPFrequencyEstimator(n_categories=100, epsilon=eps,
                                               random_state=np.random.default_rng(0)).fit, X)
    truth = np.bincount(X.ravel(), minlength=100) / 2000
    assert est.convergence_["method"] == "eb-stack" and 0.5 * np.abs(est.theta_ - truth).sum() < 0.05
    est.set_params(decoder="eb")  # the previous default on the same responses
    assert 0.5 * np.abs(est.theta_ - truth).sum() < 0.05
    est = _quiet(_est(epsilon=eps, mechanism="grr", decoder="eb").fit, np.zeros((200, 1), dtype=int))
    assert est.theta_[0] > 0.99


@pytest.mark.parametrize("mechanism, name", [("grr", "'grr', or a 1-d array of the released positions 0..4"),
                                             ("oue", "'oue'"), ("auto", "'subset_selection, k=2'")])
def test_a_malformed_response_batch_names_the_resolved_mechanism(mechanism, name):
    """A GRR estimator refusing a malformed batch said "the response sets of mechanism 'subset_selection'" (GRR is
    SS(1) inside): the message names the mechanism the user chose (and, for GRR, the positions it also takes)."""
    kw = dict(n_categories=5, epsilon=0.5 if mechanism == "auto" else 1.0, mechanism=mechanism)
    est = _est(**kw)
    assert mechanism != "auto" or est.client_mechanism().subset_size == 2
    for bad in (np.zeros((1, 3), dtype=bool), np.array([0.5])):
        with pytest.raises(ValueError, match=f"the response sets of mechanism {name}"):
            est.partial_fit_responses(bad)


# ------------------------------------------------------------------ the O(K) sweep
def _reference_z_conditional(h, j, counts, z, rho):
    """The sweep's conditional as first written: the others' concentrations summed afresh (O(K) per category)."""
    from scipy.special import gammaln

    r0 = float(h.spike(rho))
    n = np.asarray(counts, dtype=float)
    N = float(n.sum())
    m_other = int(z.sum()) - int(z[j])
    a_other = float(np.where(z, rho, r0).sum()) - (rho if z[j] else r0)
    l1 = (gammaln(a_other + rho) - gammaln(a_other + rho + N) + gammaln(rho + n[j]) - gammaln(rho)
          + h.log_prior_z[m_other + 1])
    l0 = (gammaln(a_other + r0) - gammaln(a_other + r0 + N) + gammaln(r0 + n[j]) - gammaln(r0)
          + h.log_prior_z[m_other])
    return float(1.0 / (1.0 + np.exp(l0 - l1)))


def test_the_sweep_in_o_of_k_draws_what_the_summed_conditionals_draw():
    """SpikeBulkChoice.step updates z_j from the closed-form total m rho + (K - 1 - m) r0 of the others (O(K) per
    sweep; it summed the K concentrations for each category: 16.5 -> 4.3 s for a K = 1000 'posterior' fit, the
    same theta_ and p_symmetric).  Conditionals within rounding of the summed ones (rtol 1e-12: a few ulps of
    lgamma of totals <= N + K rho_max); 30 seeded sweeps at K = 40 make the same decisions as a loop over them."""
    from sklearn_bayes.privacy._ldp._sparse_prior import SpikeBulkChoice

    rng = np.random.default_rng(0)
    for K in (2, 3, 40):
        h = SpikeBulkChoice(K)
        for _ in range(20):
            z, rho = rng.random(K) < 0.7, float(rng.choice(h.grid))
            counts = rng.integers(0, 50, K) * (rng.random(K) < 0.8)
            j = int(rng.integers(K))
            h.z, h.rho = z.copy(), rho
            np.testing.assert_allclose(h.z_conditional(j, counts), _reference_z_conditional(h, j, counts, z, rho),
                                       rtol=1e-12, atol=1e-300)
    h, ref = SpikeBulkChoice(40), SpikeBulkChoice(40)
    counts = np.r_[rng.integers(0, 200, 30), np.zeros(10, dtype=int)]
    g1, g2 = np.random.default_rng(5), np.random.default_rng(5)
    for _ in range(30):
        h.step(g1, counts)
        for j in range(ref.K):
            ref.z[j] = g2.random() < _reference_z_conditional(ref, j, counts, ref.z, ref.rho)
        cdf = ref.rho_conditional(counts).cumsum()
        ref.rho = float(ref.grid[int((cdf / cdf[-1]).searchsorted(g2.random(), side="right"))])
        np.testing.assert_array_equal(h.z, ref.z)
        assert h.rho == ref.rho


def test_the_importance_fallback_under_spike_bulk_reports_p_symmetric_and_warns(monkeypatch):
    """Weights forced to fail (the ESS threshold above 1): theta_ falls back to the exact chain under the same prior
    ('importance->exact', p_symmetric from that chain, in [0, 1]) with a ConvergenceWarning, and equals
    decoder='posterior' on the same seed; sample_posterior warns and falls back too."""
    from sklearn.exceptions import ConvergenceWarning

    import sklearn_bayes.privacy._ldp._count_importance as CI

    monkeypatch.setattr(CI, "MIN_ESS_FRACTION", 1.5)
    est = _quiet(_est(decoder="importance", n_final_steps=200).fit, _users(300))
    with pytest.warns(ConvergenceWarning, match="importance weights"):
        theta = est.theta_
    conv = est.convergence_
    assert conv["method"] == "importance->exact" and 0 <= conv["p_symmetric"] <= 1
    ref = _quiet(_est(decoder="posterior", n_final_steps=200).fit, _users(300))
    np.testing.assert_array_equal(theta, _quiet(lambda: ref.theta_))
    assert conv["p_symmetric"] == ref.convergence_["p_symmetric"]
    with pytest.warns(ConvergenceWarning, match="fell back"):
        est.sample_posterior(20)


@pytest.mark.parametrize("K", [2, 5])
def test_the_count_posterior_under_grr_is_the_exact_likelihood(K):
    """GRR at K = 2: c_1 = n - c_0, so the composite likelihood Bin(c_0; n, pi_0) Bin(c_1; n, pi_1) is the exact
    one squared and decoder='counts' has intervals 1/sqrt(2) as wide as the posterior's (measured: 60 runs, theta
    (0.3, 0.7), eps 1, n 200, 90 % intervals: width 0.176 against 0.255, coverage 0.85 against 0.95).  Expected:
    the groups of decoder='counts' under GRR (``multinomial=True``) have the exact log likelihood of the responses
    up to a constant, on random theta (rounding: sums of 200 logs of values in (0, 1], relative 1e-9); the binomial
    product (SS(k > 1)'s composite) is not that at K = 2."""
    from sklearn_bayes.privacy._ldp._count_posterior import count_groups
    from sklearn_bayes.privacy._ldp._mechanisms import groups_from_masks, ss_support_probabilities

    eps, n = 1.0, 200
    p, q = ss_support_probabilities(K, eps, 1)
    x = np.random.default_rng(K).choice(K, n, p=np.arange(1, K + 1) / (K * (K + 1) / 2))
    masks = np.eye(K, dtype=bool)[x]
    c = masks.sum(axis=0)
    T = np.random.default_rng(7).dirichlet(np.ones(K), 50)

    def loglik(groups):
        return np.log(T @ groups.likelihood_rows().T) @ groups.count

    exact = loglik(groups_from_masks(masks, eps))
    diff = loglik(count_groups(c, n, p, q, multinomial=True)) - exact
    assert np.ptp(diff) <= 1e-9 * np.abs(exact).max()
    if K == 2:
        assert np.ptp(loglik(count_groups(c, n, p, q)) - exact) > 1e-3 * np.abs(exact).max()
    est = _quiet(AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, mechanism="grr", decoder="counts",
                                               random_state=0).fit, x.reshape(-1, 1))
    assert np.ptp(loglik(est._posterior_groups()) - loglik(est._chain.exact_groups(eps))) <= 1e-9 * np.abs(exact).max()
