"""Serving AdaptiveLDPFrequencyEstimator to many clients (issue 16, section 3).

Batched proposals (``propose_subsets``), deferred vectorised ingestion
(``partial_fit_responses(update='defer')``), merging of response stores recorded by
separate workers (``merge``) and the posterior refreshed on demand (``refresh``).
"""

import copy
from functools import partial
import pickle
import warnings

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator, RRRRMechanism
from sklearn_bayes.exceptions import SeededNoiseWarning
from sklearn_bayes.privacy._ldp._rrrr import _rrrr_constants

# The papers' adaptive RRRR mode under a fixed Dir(1) prior (the defaults before issue 13);
# the default static mechanism and the hierarchical prior are tested in test_posterior.py.
_rrrr_estimator = partial(AdaptiveLDPFrequencyEstimator, mechanism="rrrr", prior=1.0)

K = 6
EPS = 1.0
THETA = np.array([0.6, 0.15, 0.1, 0.07, 0.05, 0.03])


def _server(seed=0, **kw):
    params = dict(n_categories=K, epsilon=EPS, n_final_steps=200, random_state=np.random.default_rng(seed))
    params.update(kw)
    return _rrrr_estimator(**params)


def _answer(masks, seed):
    """Users with true categories from THETA answer their proposed subsets on their devices."""
    rng = np.random.default_rng(seed)
    x = rng.choice(K, size=masks.shape[0], p=THETA)
    mech = RRRRMechanism(K, EPS, kappa=0.9)
    y = np.empty(masks.shape[0], dtype=np.int64)
    rows, inv = np.unique(masks, axis=0, return_inverse=True)
    for j, row in enumerate(rows):
        idx = np.flatnonzero(inv.ravel() == j)
        y[idx] = mech.privatize(x[idx], np.flatnonzero(row), random_state=rng)
    return y


def _responses(n, seed):
    """Responses to a mix of subsets (as the proposals of a running server would be)."""
    rng = np.random.default_rng(seed)
    masks = np.zeros((n, K), dtype=bool)
    sizes = rng.integers(0, 3, n)
    for k in (1, 2):
        masks[sizes >= k, k - 1] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        return _answer(masks, seed + 1), masks


def _state(est):
    return pickle.dumps(est, protocol=pickle.HIGHEST_PROTOCOL)


def _likelihood_rows(est):
    """The grouped likelihood of the responses an estimator recorded (its response store)."""
    return est._chain.store.likelihood_rows(_rrrr_constants(K, est.epsilon, est.kappa))


def test_deferred_ingestion_stores_what_online_ingestion_stores():
    y, masks = _responses(500, 0)
    online = _server().partial_fit_responses(y, masks)
    deferred = _server().partial_fit_responses(y, masks, update="defer")
    assert deferred.n_responses_ == online.n_responses_ == 500
    np.testing.assert_array_equal(deferred.subset_sizes_, online.subset_sizes_)
    np.testing.assert_array_equal(deferred._chain.store.responses()[0], online._chain.store.responses()[0])
    L1, c1 = _likelihood_rows(online)
    L2, c2 = _likelihood_rows(deferred)
    np.testing.assert_array_equal(L1, L2)
    np.testing.assert_array_equal(c1, c2)
    # no SGLD step was run: the generator and the sample are untouched until refresh
    assert deferred._rng.bit_generator.state == np.random.default_rng(0).bit_generator.state
    assert deferred._stale


def test_deferred_ingestion_of_many_responses_in_one_call():
    n = 200_000
    rng = np.random.default_rng(3)
    y = rng.integers(0, K, n)
    masks = np.zeros((n, K), dtype=bool)
    masks[np.arange(n), rng.integers(0, K, n)] = True
    est = _server().partial_fit_responses(y, masks, update="defer")
    assert est.n_responses_ == n
    got_y, got_masks = est._chain.store.responses()
    np.testing.assert_array_equal(got_y, y)
    np.testing.assert_array_equal(got_masks, masks)


def test_proposals_depend_only_on_the_recorded_responses():
    """Same recorded (y, S) in another arrival order and chunking -> the same proposals, bit for bit.

    The server never sees a true category; what a user faces is a function of the
    recorded responses (as a multiset) and of the server's generator only.
    """
    y, masks = _responses(2000, 5)
    a = _server(7).partial_fit_responses(y, masks, update="defer")
    perm = np.random.default_rng(1).permutation(y.size)
    b = _server(7)
    for chunk in np.array_split(perm, 7):
        b.partial_fit_responses(y[chunk], masks[chunk], update="defer")
    # the MCMC's groups are keyed by subset content, not by the order subsets were first seen
    consts = _rrrr_constants(K, EPS, a.kappa)
    for u, v in zip(a._chain.store.rrrr_structure(consts), b._chain.store.rrrr_structure(consts)):
        np.testing.assert_array_equal(u, v)
    pa = [a.propose_subsets(3), a.propose_subsets(5, draws="user")]
    pb = [b.propose_subsets(3), b.propose_subsets(5, draws="user")]
    for u, v in zip(pa, pb):
        np.testing.assert_array_equal(u, v)
    np.testing.assert_array_equal(a.sample_posterior(5), b.sample_posterior(5))  # the same online sample


@pytest.mark.parametrize("draws", ["batch", "user", "mean"])
def test_every_proposed_mechanism_passes_the_exact_privacy_check(draws):
    y, masks = _responses(1000, 11)
    est = _server(2).partial_fit_responses(y, masks, update="defer")
    proposals = est.propose_subsets(64, draws=draws)
    assert proposals.shape == (64, K) and proposals.dtype == bool
    assert np.all(proposals.sum(axis=1) < K)
    if draws != "user":
        assert np.all(proposals == proposals[0])
    mech = RRRRMechanism(K, EPS, kappa=0.9)
    for row in np.unique(proposals, axis=0):
        logP = mech.log_transition_matrix(np.flatnonzero(row))  # ln P[x, y]
        # max over outputs y and inputs x, x' of ln P(y | x) / P(y | x')
        ratio = np.max(logP.max(axis=0) - logP.min(axis=0))
        assert ratio <= EPS + 1e-12


def test_proposals_are_prefixes_of_the_drawn_order_and_follow_the_posterior():
    # many responses concentrate the posterior: the honest subset is {0} for theta = THETA
    # (utility 0.489 for size 1 against 0.452 for size 2), and nearly every per-user draw agrees
    from sklearn_bayes.privacy._ldp._utilities import choose_subset_size

    assert choose_subset_size(THETA, EPS, 0.9) == 1
    server = _server(4)
    y, masks = _responses(20000, 21)
    server.partial_fit_responses(y, masks, update="defer")
    props = server.propose_subsets(200, draws="user")
    expected = np.zeros(K, dtype=bool)
    expected[0] = True
    assert np.mean(np.all(props == expected, axis=1)) > 0.9
    np.testing.assert_array_equal(server.propose_subsets(7, draws="mean"), np.tile(expected, (7, 1)))


def test_serving_loop_converges():
    server = _server(5)
    for b in range(10):
        masks = server.propose_subsets(500)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeededNoiseWarning)
            y = _answer(masks, 100 + b)
        order = np.random.default_rng(b).permutation(y.size)  # responses arrive out of order
        server.partial_fit_responses(y[order], masks[order], update="defer")
    assert server.n_responses_ == 5000
    # 5000 responses at epsilon = 1: posterior sd of each theta_k is below 0.03
    assert 0.5 * np.abs(server.theta_ - THETA).sum() < 0.1


def test_merge_equals_recording_everything_in_one_store():
    y, masks = _responses(3000, 31)
    whole = _server(9).partial_fit_responses(y, masks, update="defer")
    w1 = _server(9).partial_fit_responses(y[:1000], masks[:1000], update="defer")
    w2 = _server(10).partial_fit_responses(y[1000:2200], masks[1000:2200], update="defer")
    w3 = _server(11).partial_fit_responses(y[2200:], masks[2200:], update="defer")
    w2_before = _state(w2)
    w1.merge(pickle.loads(pickle.dumps(w2))).merge(w3)
    assert _state(w2) == _state(pickle.loads(w2_before))  # other is not changed
    assert w1.n_responses_ == 3000
    L1, c1 = _likelihood_rows(whole)
    L2, c2 = _likelihood_rows(w1)
    np.testing.assert_array_equal(L1, L2)
    np.testing.assert_array_equal(c1, c2)
    # same generator state (deferred ingestion draws nothing) and the same groups: the same
    # proposals and the same theta_, bit for bit
    np.testing.assert_array_equal(whole.propose_subsets(4, draws="user"), w1.propose_subsets(4, draws="user"))
    np.testing.assert_array_equal(whole.theta_, w1.theta_)


def test_merge_refuses_self_copies_and_overlaps():
    y, masks = _responses(300, 41)
    a = _server(1).partial_fit_responses(y, masks, update="defer")
    b = _server(2).partial_fit_responses(y, masks, update="defer")
    before = _state(a)
    with pytest.raises(ValueError, match="itself"):
        a.merge(a)
    for twin in (copy.copy(a), copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        with pytest.raises(ValueError, match="twice"):
            a.merge(twin)
    assert _state(a) == before
    a.merge(b)
    after = _state(a)
    with pytest.raises(ValueError, match="twice"):
        a.merge(b)  # the same store again
    c = _server(3).partial_fit_responses(y, masks, update="defer").merge(b)
    with pytest.raises(ValueError, match="share the responses of 1 store"):
        a.merge(c)  # c holds b's responses, which a already holds
    assert _state(a) == after


@pytest.mark.parametrize(
    "change, pattern",
    [
        ({"epsilon": 2.0}, "epsilon"),
        ({"kappa": 0.8}, "kappa"),
        ({"prior": 0.5}, "prior"),
        ({"utility": "non_adaptive"}, "utility"),
        ({"n_categories": K + 1}, "n_categories"),
    ],
)
def test_merge_requires_the_same_frozen_parameters(change, pattern):
    y, masks = _responses(100, 51)
    a = _server(1).partial_fit_responses(y, masks, update="defer")
    if "n_categories" in change:
        masks = np.c_[masks, np.zeros(masks.shape[0], dtype=bool)]
    b = _server(2, **change).partial_fit_responses(y, masks, update="defer")
    before = _state(a)
    with pytest.raises(ValueError, match=pattern):
        a.merge(b)
    assert _state(a) == before


def test_merge_bad_other():
    y, masks = _responses(100, 61)
    a = _server(1).partial_fit_responses(y, masks, update="defer")
    before = _state(a)
    with pytest.raises(TypeError, match="other must be"):
        a.merge(object())
    with pytest.raises(ValueError, match="other is not fitted"):
        a.merge(_server(2))
    assert _state(a) == before


def test_an_unfitted_hub_merges_with_its_own_parameters():
    y, masks = _responses(100, 62)
    a = _server(1).partial_fit_responses(y, masks, update="defer")
    hub = _server(3)
    hub.merge(a)
    assert hub.n_responses_ == 100 and hub._chain.store.store_ids > a._chain.store.store_ids
    wrong = _server(4, epsilon=2.0)
    before = _state(wrong)
    with pytest.raises(ValueError, match="epsilon"):
        wrong.merge(a)
    assert _state(wrong) == before and "n_responses_" not in vars(wrong)


def test_refresh_reflects_merged_responses():
    # a worker whose sample is stuck at its own few responses, merged with a large store
    small = _server(1).partial_fit_responses([0, 1, 2], [[]] * 3)
    y, masks = _responses(20000, 71)
    big = _server(2).partial_fit_responses(y, masks, update="defer")
    small.merge(big)
    assert small._stale
    small.refresh()
    assert not small._stale
    assert small.propose_subset().tolist() == [0]  # the big store's posterior: honest S = {0}


def test_bad_arguments_leave_the_estimator_unchanged():
    y, masks = _responses(100, 81)
    est = _server(1).partial_fit_responses(y, masks, update="defer")
    before = _state(est)
    for bad in (0, -1, 1.5, True, "3"):
        with pytest.raises(ValueError, match="n must be"):
            est.propose_subsets(bad)
    with pytest.raises(ValueError, match="draws must be"):
        est.propose_subsets(2, draws="each")
    with pytest.raises(ValueError, match="update must be"):
        est.partial_fit_responses(y, masks, update="later")
    with pytest.raises(ValueError, match="y holds categories outside"):
        est.partial_fit_responses(np.r_[y[:-1], K], masks, update="defer")
    with pytest.raises(ValueError, match="subsets\\[0\\] contains all"):
        est.partial_fit_responses(y[:1], np.ones((1, K), dtype=bool), update="defer")
    est.set_params(epsilon=3.0)
    with pytest.raises(ValueError, match="epsilon was 1.0"):
        est.propose_subsets(2)
    with pytest.raises(ValueError, match="epsilon was 1.0"):
        est.refresh()
    est.set_params(epsilon=1.0)
    assert _state(est) == before


def test_propose_subsets_before_any_response():
    est = _server(1)
    props = est.propose_subsets(3)
    expected = np.zeros((3, K), dtype=bool)
    expected[:, est.propose_subset()] = True
    np.testing.assert_array_equal(props, expected)
    assert "n_responses_" not in vars(est)


def test_pickle_keeps_the_store_and_its_identity():
    y, masks = _responses(200, 91)
    a = _server(1).partial_fit_responses(y, masks, update="defer")
    b = pickle.loads(pickle.dumps(a))
    assert b._chain.store.store_ids == a._chain.store.store_ids and b._stale
    np.testing.assert_array_equal(a.propose_subsets(5, draws="user"), b.propose_subsets(5, draws="user"))
