"""The response store of AdaptiveLDPFrequencyEstimator: interning, transactions, pickles."""

import pickle
import warnings

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.exceptions import SeededNoiseWarning
from sklearn_bayes.privacy._ldp._store import ResponseStore, distinct_masks


def _masks(K, subsets):
    m = np.zeros((len(subsets), K), dtype=bool)
    for i, s in enumerate(subsets):
        m[i, list(s)] = True
    return m


@pytest.mark.parametrize("K", [3, 64, 65, 300])
def test_distinct_masks_equals_numpy_unique_rows(K):
    rng = np.random.default_rng(K)
    for n in (1, 2, 40, 400):
        m = rng.random((n, K)) < rng.random()
        m[n // 2:] = m[: n - n // 2]  # duplicates
        u, inv = distinct_masks(m)
        u2, inv2 = np.unique(m, axis=0, return_inverse=True)
        np.testing.assert_array_equal(u, u2)
        np.testing.assert_array_equal(inv, inv2.ravel())


def test_a_copy_shares_the_index_and_stale_entries_count_as_absent():
    """Regression: every recording call copied the subset index (O(number of distinct subsets)
    per call: 100-600 us per one-response call at large K).  The copy now shares it; entries a
    rejected call left behind (rows >= n_sids, or rows a later call filled with another subset)
    are ignored and overwritten."""
    K = 6
    s0 = ResponseStore(K)
    s0.append(np.array([0, 1], dtype=np.int32), s0.intern_masks(_masks(K, [[0], [1, 2]])))
    assert s0.copy().index is s0.index  # O(1): no per-call copy of the index
    rejected = s0.copy()  # a call that interns two new subsets, then fails (never bound)
    rejected.intern_masks(_masks(K, [[3], [4, 5]]))
    assert len(s0.index) == 4 and s0.n_sids == 2  # the shared index holds two stale entries
    s1 = s0.copy()
    ids = s1.intern_masks(_masks(K, [[4, 5], [1, 2], [5]]))  # a stale subset, a known one, a new one
    s1.append(np.array([4, 2, 5], dtype=np.int32), ids)
    assert s1.n_sids == 4
    np.testing.assert_array_equal(s1.subset_masks()[ids], _masks(K, [[4, 5], [1, 2], [5]]))
    y, m = s1.responses()
    np.testing.assert_array_equal(y, [0, 1, 4, 2, 5])
    np.testing.assert_array_equal(m, _masks(K, [[0], [1, 2], [4, 5], [1, 2], [5]]))
    # {3} was interned only by the rejected call, at row 3, which s1 filled with {4, 5}: the
    # stale entry points below n_sids at another subset; {3} is unknown and gets the next row
    assert s1.index[np.packbits(_masks(K, [[3]])[0]).tobytes()] == 3
    assert s1.intern_masks(_masks(K, [[3]]))[0] == 4
    np.testing.assert_array_equal(s1.subset_masks()[[3, 4]], _masks(K, [[4, 5], [3]]))
    # the kernel's rows (intern_new_rows): a stale entry is not taken for a row of this call
    s1.copy().intern_masks(_masks(K, [[0, 1, 2]]))  # another rejected call: {0, 1, 2} -> row 5, stale
    s2 = s1.copy()
    s2.ensure_capacity(3, 3)
    rows = _masks(K, [[0, 1], [0, 1, 2], [0, 1]])  # written by the online kernel, one per change of subset
    n0, ns0 = s2.n, s2.n_sids
    s2.masks[ns0: ns0 + 3] = rows
    s2.sid_k[ns0: ns0 + 3] = rows.sum(axis=1)
    for i, r in enumerate(rows):
        s2.members[ns0 + i, : r.sum()] = np.flatnonzero(r)
    s2.sids[n0: n0 + 3] = np.arange(ns0, ns0 + 3)
    s2.ys[n0: n0 + 3] = [0, 3, 1]
    s2.intern_new_rows(ns0, ns0 + 3, n0, 3)
    s2.commit(3, rows.sum(axis=1))
    assert s2.n_sids == ns0 + 2  # {0, 1} once (row 5), {0, 1, 2} at row 6, not at its stale row 5
    np.testing.assert_array_equal(s2.responses()[1][-3:], rows)
    np.testing.assert_array_equal(s2.subset_masks()[ns0:], rows[:2])


def test_pickles_rebuild_the_index_and_drop_stale_entries():
    K = 5
    s0 = ResponseStore(K)
    s0.append(np.array([0, 1, 2], dtype=np.int32), s0.intern_masks(_masks(K, [[0], [1, 2], []])))
    s0.copy().intern_masks(_masks(K, [[3, 4]]))  # a rejected call's stale entry
    loaded = pickle.loads(pickle.dumps(s0))
    assert loaded.index == {k: v for k, v in s0.index.items() if v < s0.n_sids}
    assert pickle.dumps(loaded) == pickle.dumps(s0)


def _estimator(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        return AdaptiveLDPFrequencyEstimator(n_categories=6, mechanism="rrrr", prior=1.0, n_final_steps=0,
                                             random_state=np.random.default_rng(1), **kw)


def _boom(t):
    raise RuntimeError("boom")


def test_a_rejected_call_that_interned_subsets_leaves_the_estimator_byte_identical():
    """The online update fails after the call's new subsets entered the shared index: the
    estimator pickles as before and then records exactly what an untouched twin records."""
    y = np.array([0, 1, 2, 3])
    old = _masks(6, [[0], [1], [0], []])
    new = _masks(6, [[2, 3], [4], [2, 3], [5]])
    a, b = _estimator(step_size=0.01), _estimator(step_size=0.01)
    a.partial_fit_responses(y, old)
    b.partial_fit_responses(y, old)
    before = pickle.dumps(a)
    a.set_params(step_size=_boom)
    with pytest.raises(RuntimeError, match="boom"):
        a.partial_fit_responses(y, new)
    a.set_params(step_size=0.01)
    assert pickle.dumps(a) == before
    for est in (a, b):
        est.partial_fit_responses(y[::-1], new[::-1])
        est.partial_fit_responses(y, new, update="defer")
    for u, v in zip(a._chain.store.responses(), b._chain.store.responses()):
        np.testing.assert_array_equal(u, v)
    np.testing.assert_array_equal(a.subset_sizes_, b.subset_sizes_)
    np.testing.assert_array_equal(a.sample_posterior(5), b.sample_posterior(5))
    assert a._chain.store.n_sids == b._chain.store.n_sids


@pytest.mark.parametrize("nb", [1, 2, 3, 8, 9])
def test_distinct_packed_matches_unique_rows(nb):
    # the sorted-key path (nb <= 8, round 6) and the byte-row path give np.unique's rows and inverse
    from sklearn_bayes.privacy._ldp._store import distinct_packed

    rng = np.random.default_rng(nb)
    for high in (2, 5, 256):
        packed = rng.integers(0, high, size=(3000, nb)).astype(np.uint8)
        packed[:, 0] |= 128  # keys with the top bit set (unsigned order)
        packed[::7, 0] = 0
        rows, inv = distinct_packed(packed)
        ref, ref_inv = np.unique(packed, axis=0, return_inverse=True)
        assert rows.dtype == np.uint8 and rows.flags.c_contiguous
        np.testing.assert_array_equal(rows, ref)
        np.testing.assert_array_equal(inv, ref_inv.ravel())
        np.testing.assert_array_equal(rows[inv], packed)
