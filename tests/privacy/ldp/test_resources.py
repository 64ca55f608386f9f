"""AdaptiveLDPFrequencyEstimator at large domains (issue 26, item 3).

Regression: ``fit`` at ``K = 10^6`` on 2000 users needed 14.9 GiB (the users x K float64 keys
of subset selection, then users x K bytes in the store); ``K = 10^5`` took 3.4 GiB.  The
privatisers now draw their uniforms in chunks of users and return packed bits, the store
keeps static response sets as packed bits (``ceil(K / 8)`` bytes per distinct set), and the
posterior kernels read the sets from their bits when member lists would be large.  The
checks are on storage sizes and traced allocations, bounded by the compact encoding.
"""

import tracemalloc

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
import sklearn_bayes.privacy._ldp._mechanisms as mech
from sklearn_bayes.privacy._ldp._hybrid import hybrid_draws
from sklearn_bayes.privacy._ldp._posterior import gibbs_draws, ibu
from sklearn_bayes.privacy._ldp._samplers import exact_draws


def _store_nbytes(store):
    return sum(getattr(store, name).nbytes for name in ("ys", "sids", "sizes", "masks", "members", "sid_k"))


@pytest.mark.parametrize("mechanism", ["subset_selection", "oue"])
def test_static_responses_are_stored_as_bits(mechanism):
    """K = 10^5, 2000 users: the store holds at most 2 x (ceil(K / 8) + 16) bytes per response
    (packed set + y, id, size, set size; buffers at most double their use), 25 MB instead of
    the 200 MB of one byte per category (and the 1.6 GB of float64 keys while privatising)."""
    K, n = 10**5, 2000
    X = np.random.default_rng(0).integers(0, K, size=(n, 1))
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, mechanism=mechanism, random_state=np.random.default_rng(1))
    tracemalloc.start()
    try:
        est.fit(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    store = est._chain.store
    assert est.n_responses_ == n and store.n_sids == n  # (distinct sets at this K)
    bound = 2 * n * ((K + 7) // 8 + 16)
    assert _store_nbytes(store) <= bound
    # privatising: one chunk of 2^22 float64 uniforms (32 MiB) and the arrays argpartition and
    # the mask of a chunk derive from it (at most 3 more chunks' worth), plus the packed
    # responses, the store and their copies while interning (3 x the store bound)
    assert peak <= 4 * 8 * (1 << 22) + 3 * bound, peak


def _old_ss_privatize(x, K, epsilon, k, rng):
    """The users x K implementation of subset selection before issue 26 (the reference stream)."""
    x = np.asarray(x, dtype=np.intp)
    n = x.size
    q_out = np.exp(np.log(K - k) - np.logaddexp(np.log(k) + epsilon, np.log(K - k))) * (1.0 + 4 * np.finfo(float).eps)
    q_out = max(q_out, np.nextafter(0.0, 1.0))
    keep = ~(rng.random(n) < q_out)
    keys = rng.random((n, K))
    rows = np.arange(n)
    keys[rows, x] = np.where(keep, -1.0, 2.0)
    idx = np.argpartition(keys, k - 1, axis=1)[:, :k]
    mask = np.zeros((n, K), dtype=bool)
    mask[rows[:, None], idx] = True
    return mask


def _old_oue_privatize(x, K, epsilon, rng):
    x = np.asarray(x, dtype=np.intp)
    q = 1.0 / (np.exp(min(epsilon, 700.0)) + 1.0)
    mask = rng.random((x.size, K)) < q
    mask[np.arange(x.size), x] = rng.random(x.size) < 0.5
    return mask


@pytest.mark.parametrize("chunk", [1, 37, 1 << 22])
def test_chunked_packed_privatisers_give_the_same_responses(monkeypatch, chunk):
    """The chunked draws consume the generator's stream in the same order as one users x K draw:
    the same responses (seeded simulations are unchanged), whatever the chunk size."""
    monkeypatch.setattr(mech, "_CHUNK_CELLS", chunk)
    K, n = 29, 300
    x = np.random.default_rng(0).integers(0, K, n)
    for k in (1, 4, 28):
        got = np.unpackbits(mech.ss_privatize_packed(x, K, 1.0, k, np.random.default_rng(5)), axis=1, count=K)
        np.testing.assert_array_equal(got.astype(bool), _old_ss_privatize(x, K, 1.0, k, np.random.default_rng(5)))
    got = mech.oue_privatize(x, K, 0.7, np.random.default_rng(6))
    np.testing.assert_array_equal(got, _old_oue_privatize(x, K, 0.7, np.random.default_rng(6)))


@pytest.mark.parametrize("K, k", [(12, 3), (40, 19)])
def test_groups_kept_as_bits_give_the_same_draws_as_member_lists(monkeypatch, K, k):
    """Above MAX_CSR_MEMBERS the groups keep the sets as bit rows only; the kernels read the members
    in increasing order, so IBU, the Gibbs sweeps and the hybrid sampler give the same numbers."""
    rng = np.random.default_rng(K)
    theta = rng.dirichlet(np.full(K, 0.5))
    packed = mech.ss_privatize_packed(rng.choice(K, 400, p=theta), K, 0.3, k, rng)
    uniq, inv = np.unique(packed, axis=0, return_inverse=True)
    counts = np.bincount(inv.ravel())
    csr = mech.groups_from_packed(uniq, counts, 0.3, K)
    monkeypatch.setattr(mech, "MAX_CSR_MEMBERS", 0)
    bits = mech.groups_from_packed(uniq, counts, 0.3, K)
    assert csr.bits is None and csr.a_idx.size == csr.a_ptr[-1] > 0
    assert bits.members_in_bits and bits.a_idx.size == 0
    np.testing.assert_array_equal(bits.likelihood_rows(), csr.likelihood_rows())
    np.testing.assert_array_equal(ibu(bits, n_iter=30), ibu(csr, n_iter=30))
    for prior in ("hierarchical", np.full(K, 0.7)):
        a = gibbs_draws(csr, 20, 10, np.random.default_rng(1), prior=prior)[0]
        b = gibbs_draws(bits, 20, 10, np.random.default_rng(1), prior=prior)[0]
        np.testing.assert_array_equal(a, b)
    # the hybrid sampler skips MALA on bit groups (it needs member lists): compare without it.  Both through the
    # Python generator (bit for bit); the member lists' compiled per-response branch (round T; bit groups stay in
    # Python) equals it up to the rounding of the kernel's sums
    a = hybrid_draws(csr, 15, 10, np.random.default_rng(2), mala_steps=0, compiled=False)[0]
    b = hybrid_draws(bits, 15, 10, np.random.default_rng(2), mala_steps=0)[0]
    np.testing.assert_array_equal(a, b)
    c = hybrid_draws(csr, 15, 10, np.random.default_rng(2), mala_steps=0)[0]
    np.testing.assert_allclose(c, b, rtol=1e-9, atol=1e-12)


def test_kept_draws_are_thinned_to_the_value_budget():
    """exact_draws(max_values=...) keeps every thin-th draw of the same chain (same random numbers)."""
    K = 6
    rng = np.random.default_rng(3)
    masks = mech.ss_privatize(rng.integers(0, K, 300), K, 1.0, 2, rng)
    g = mech.groups_from_masks(masks, 1.0)
    full = exact_draws(g, "hierarchical", 20, 10, np.random.default_rng(4))
    thinned = exact_draws(g, "hierarchical", 20, 10, np.random.default_rng(4), max_values=3 * K)
    np.testing.assert_array_equal(thinned, full[::4])  # thin = ceil(10 / 3) = 4


def test_propose_subsets_and_posterior_draws_refuse_sizes_beyond_the_cap():
    """Regression: propose_subsets(n) had no cap (a large n ended in MemoryError)."""
    K = 1000
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, mechanism="rrrr", n_final_steps=10,
                                        random_state=np.random.default_rng(0))
    cap = (1 << 27) // K
    with pytest.raises(ValueError, match=rf"^n={cap + 1} is too large.*at most {cap}"):
        est.propose_subsets(cap + 1)
    est.partial_fit_responses([0, 1], [[0], []])
    before = est._rng.bit_generator.state
    with pytest.raises(ValueError, match=r"^n=1000000000 is too large"):
        est.propose_subsets(10**9, draws="user")
    assert est._rng.bit_generator.state == before
    with pytest.raises(ValueError, match=r"^n_samples=1000000000 is too large"):
        est.sample_posterior(10**9)
    assert est.propose_subsets(3).shape == (3, K)


def test_static_mechanisms_hold_no_rrrr_table_and_no_users_x_k_booleans():
    """Regression: two GRR responses at K = 10^8 took 16 GB: the RRRR constants table (48 bytes per
    category, never read by a static mechanism), copies of the online sample per call and an
    n x K boolean array for GRR positions.  Now the state is categories_, the prior, the sample and
    its order (28 bytes per category) plus ceil(K / 8) bytes per recorded set (at most 4 copies
    while validating, interning and growing the table)."""
    K = 10**6
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, mechanism="grr", random_state=np.random.default_rng(0))
    tracemalloc.start()
    try:
        est.partial_fit_responses(np.arange(50) * 1000)
        est.partial_fit_responses([7])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert est.n_responses_ == 51 and est._chain.consts is None
    assert peak <= 32 * K + 4 * 51 * ((K + 7) // 8), peak


def test_n_categories_beyond_int32_is_refused_by_name():
    from sklearn.utils._param_validation import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="n_categories"):
        AdaptiveLDPFrequencyEstimator(n_categories=2**31, mechanism="grr").partial_fit_responses([0])
