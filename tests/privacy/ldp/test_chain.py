"""ChainState (privacy/_ldp/_chain.py): the LDP chain state as one object.

It must round-trip through copies and pickles (with the generator shared with the estimator's
``_rng``), drive the online loop and the samplers to exactly the draws of the six separate
arrays it replaces, and never be changed behind a transaction's back.
"""

import copy
import pickle
import warnings

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes._fast._ldp import run_online
from sklearn_bayes.exceptions import SeededNoiseWarning
from sklearn_bayes.privacy._ldp._chain import ChainState
from sklearn_bayes.privacy._ldp._driver import process_users, step_sizes
from sklearn_bayes.privacy._ldp._rrrr import _rrrr_constants
from sklearn_bayes.privacy._ldp._samplers import sgld_chain

K, EPS, KAPPA = 5, 1.0, 0.9
THETA = np.array([0.45, 0.25, 0.15, 0.1, 0.05])
KNOBS = dict(epsilon=EPS, kappa=KAPPA, utility="honest", alpha=None, sampler="sgld", n_steps=5, batch_size=20,
             step_size="auto")


def _fresh(seed=0):
    return ChainState.start(K, np.random.default_rng(seed), _rrrr_constants(K, EPS, KAPPA), np.ones(K), members=True)


def _users(n, seed=1):
    return np.random.default_rng(seed).choice(K, size=n, p=THETA).astype(np.int32)


def _fields(chain):
    st = chain.store
    return (chain.phi.tolist(), chain.sigma.tolist(), st.responses()[0].tolist(), st.responses()[1].tolist(),
            chain.rng.bit_generator.state, chain.consts.tolist(), chain.prior.tolist())


def test_start_is_the_uniform_sample_with_no_responses():
    chain = _fresh()
    np.testing.assert_array_equal(chain.phi, np.ones(K))
    np.testing.assert_array_equal(chain.sigma, np.arange(K))
    assert chain.sigma.dtype == np.int32 and chain.store.n == 0
    np.testing.assert_array_equal(chain.theta, np.full(K, 1 / K))


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_round_trip_gives_an_independent_chain_that_continues_identically(how):
    chain = _fresh()
    process_users(chain, _users(300), **KNOBS)
    twin = copy.deepcopy(chain) if how == "deepcopy" else pickle.loads(pickle.dumps(chain))
    assert type(twin) is ChainState and twin is not chain
    assert _fields(twin) == _fields(chain)
    assert twin.rng is not chain.rng and twin.phi is not chain.phi and twin.store is not chain.store
    more = _users(200, seed=2)
    process_users(chain, more, **KNOBS)
    process_users(twin, more, **KNOBS)
    assert _fields(twin) == _fields(chain)


def test_pickle_holds_no_attribute_names():
    """The fields travel by position: a loaded chain pickles to the same bytes."""
    chain = _fresh()
    process_users(chain, _users(100), **KNOBS)
    once = pickle.dumps(chain, protocol=pickle.HIGHEST_PROTOCOL)
    assert pickle.dumps(pickle.loads(once), protocol=pickle.HIGHEST_PROTOCOL) == once
    assert b"sigma" not in once


def test_process_users_draws_as_the_six_separate_arrays_did():
    """The driver on a ChainState makes exactly the kernel call it made on the six arguments."""
    values = _users(400)
    chain = _fresh(3)
    process_users(chain, values, **KNOBS)

    ref = _fresh(3)  # the same six arrays, driven by hand as the driver did before the chain
    store, phi, sigma, rng = ref.store, ref.phi, ref.sigma, ref.rng
    store.ensure_capacity(values.size, values.size)
    k_out = np.zeros(values.size, dtype=np.int32)
    ns1 = run_online(rng, phi, sigma, store.ys, store.sids, store.masks, store.members, store.sid_k, ref.consts,
                     ref.prior, 0, store.n_sids, values, values, 1, 0.0, step_sizes("auto", 0, values.size), 5, 20,
                     k_out)
    store.intern_new_rows(0, ns1, 0, values.size)
    store.commit(values.size, k_out)
    assert _fields(chain) == _fields(ref)


def test_continued_is_sgld_chain_on_the_fields_and_leaves_the_chain_as_it_was():
    chain = _fresh()
    process_users(chain, _users(300), **KNOBS)
    before = _fields(chain)
    a = chain.continued(60, 3, np.random.default_rng(7), sampler="sgld", batch_size=20, gamma=1e-3)
    b = sgld_chain(chain, np.random.default_rng(7), n_iter=60, thin=3, sampler="sgld", batch_size=20, gamma=1e-3)
    assert a.shape == (20, K)
    np.testing.assert_array_equal(a, b)
    assert _fields(chain) == before


def test_for_update_copies_what_changes_in_place_and_shares_the_stream():
    chain = _fresh()
    process_users(chain, _users(100), **KNOBS)
    before = _fields(chain)
    new = chain.for_update(copy_sample=True)
    assert new.rng is chain.rng and new.consts is chain.consts and new.prior is chain.prior
    assert new.phi is not chain.phi and new.sigma is not chain.sigma and new.store is not chain.store
    process_users(new, _users(50, seed=5), **KNOBS)
    assert new.store.n == 150
    # the old state is intact but for the shared stream (rewound by the estimator's transaction)
    assert _fields(chain)[:4] == before[:4] and chain.store.n == 100
    static = chain.for_update(copy_sample=False)
    assert static.phi is chain.phi and static.store is not chain.store


def test_moved_to_is_a_new_state_scaled_by_a_gamma_draw():
    chain = _fresh(4)
    clone = copy.deepcopy(chain.rng)
    theta = np.array([0.1, 0.5, 0.2, 0.15, 0.05])
    moved = chain.moved_to(theta)
    np.testing.assert_array_equal(moved.phi, theta * clone.gamma(float(K)))
    np.testing.assert_array_equal(moved.sigma, [1, 2, 3, 0, 4])
    np.testing.assert_array_equal(chain.phi, np.ones(K))  # the old state is unchanged
    assert moved.store is chain.store and moved.rng is chain.rng


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_estimator_copies_keep_the_chain_generator_as_their_rng(how):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        est = AdaptiveLDPFrequencyEstimator(n_categories=K, mechanism="rrrr", prior=1.0, n_final_steps=20,
                                            random_state=0).fit(_users(200).reshape(-1, 1))
    assert est._rng is est._chain.rng
    twin = {"copy": copy.copy, "deepcopy": copy.deepcopy,
            "pickle": lambda e: pickle.loads(pickle.dumps(e))}[how](est)
    assert twin._rng is twin._chain.rng and twin._rng is not est._rng
    more = _users(100, seed=9).reshape(-1, 1)
    est.partial_fit(more)
    twin.partial_fit(more)
    assert _fields(twin._chain) == _fields(est._chain)
    np.testing.assert_array_equal(twin.theta_, est.theta_)


def test_a_rejected_call_keeps_the_old_chain():
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, mechanism="rrrr", prior=1.0, n_final_steps=0,
                                        random_state=np.random.default_rng(0)).fit(_users(100).reshape(-1, 1))
    chain, before = est._chain, _fields(est._chain)
    with pytest.raises(ValueError):
        est.partial_fit(np.array([[0], [K + 3]]))  # refused before any state is touched
    assert est._chain is chain and _fields(est._chain) == before
    # refused inside the online loop, after the update's chain was bound
    est.set_params(step_size=lambda t: float("nan"))
    with pytest.raises(ValueError, match="step_size"):
        est.partial_fit(np.array([[0], [1]]))
    assert est._chain is chain and _fields(est._chain) == before
