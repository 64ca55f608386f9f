"""Red-team tests of the AdaptiveLDPFrequencyEstimator response store (shared subset index, commit 51bbb2a).

A fuzzer drives several estimators through random sequences of recording calls (online and
deferred), calls that fail after they interned new subsets (fault injection), deep copies,
pickles and merges, and checks after every step that each estimator's store holds exactly the
responses it recorded, in order -- no response of a sibling, of a rejected call or of a copy
leaks in, none is lost -- and that the store's tables are self-consistent.  Passes when safe.
"""

import copy
import pickle

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp._store import ResponseStore


class _Boom(RuntimeError):
    pass


def _check_store(est, expected):
    store = est._chain.store
    y, m = store.responses()
    assert store.n == len(expected) == est.n_responses_
    exp_y = np.array([e[0] for e in expected], dtype=np.int64).reshape(-1)
    exp_m = np.array([e[1] for e in expected], dtype=bool).reshape(-1, store.K)
    np.testing.assert_array_equal(y, exp_y)
    np.testing.assert_array_equal(m, exp_m)
    ns = store.n_sids
    masks = store.masks[:ns].astype(bool)
    # the used table holds distinct subsets, sizes and member lists agree with the masks
    assert len({r.tobytes() for r in np.packbits(masks, axis=1)}) == ns
    np.testing.assert_array_equal(store.sid_k[:ns], masks.sum(axis=1))
    if store.keep_members:
        for s in range(ns):
            np.testing.assert_array_equal(store.members[s, : store.sid_k[s]], np.flatnonzero(masks[s]))
    np.testing.assert_array_equal(store.sizes[: store.n], masks[store.sids[: store.n]].sum(axis=1))
    np.testing.assert_array_equal(est.subset_sizes_, store.sizes[: store.n])
    # every index entry used by the rules (row below n_sids holding that subset) is right
    for key, s in store.index.items():
        if s < ns and np.packbits(masks[s]).tobytes() == key:
            continue
        assert s >= ns or np.packbits(masks[s]).tobytes() != key


def _random_subsets(rng, n, K):
    """Random RRRR subsets (any size but K: S = [K] is not allowed)."""
    s = rng.random((n, K)) < 0.5
    full = s.all(axis=1)
    s[full, rng.integers(0, K, size=int(full.sum()))] = False
    return s


def _random_batch(rng, K, pool):
    n = int(rng.integers(1, 4))
    y = rng.integers(0, K, size=n)
    subsets = np.zeros((n, K), dtype=bool)
    for i in range(n):
        subsets[i] = pool[int(rng.integers(len(pool)))]
    return y, subsets


@pytest.mark.parametrize("seed", range(6))
def test_fuzz_copies_merges_rejected_calls_never_mix_responses(monkeypatch, seed):
    K = 5
    rng = np.random.default_rng(seed)
    # a small pool of subsets so that rejected calls and siblings intern the same keys
    pool = _random_subsets(rng, 7, K)
    fail = {"append": False, "commit": False}
    real_append, real_commit = ResponseStore.append, ResponseStore.commit

    def append(self, ys, sids):
        if fail["append"]:
            raise _Boom("injected failure after interning")
        return real_append(self, ys, sids)

    def commit(self, n_new, sizes):
        if fail["commit"]:
            raise _Boom("injected failure after the kernel wrote its rows")
        return real_commit(self, n_new, sizes)

    monkeypatch.setattr(ResponseStore, "append", append)
    monkeypatch.setattr(ResponseStore, "commit", commit)

    def new_est():
        return AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=1.0, mechanism="rrrr", n_steps=2,
                                             n_final_steps=5, random_state=np.random.default_rng(rng.integers(1 << 30)))

    ests, expected = [], []
    for _ in range(2):
        e = new_est()
        y, s = _random_batch(rng, K, pool)
        e.partial_fit_responses(y, s, update="defer")
        ests.append(e)
        expected.append([(int(a), b.copy()) for a, b in zip(y, s)])
    ops = {}
    for step in range(100):
        i = int(rng.integers(len(ests)))
        est, exp = ests[i], expected[i]
        op = rng.choice(["defer", "online", "reject_defer", "reject_online", "bad_input", "deepcopy", "pickle",
                         "merge", "merge_self_copy", "reject_merge"])
        if op in ("defer", "online"):
            y, s = _random_batch(rng, K, pool)
            est.partial_fit_responses(y, s, update=op)
            exp.extend((int(a), b.copy()) for a, b in zip(y, s))
        elif op in ("reject_defer", "reject_online"):
            # new subsets that the estimator has never seen are interned, then the call fails
            y, _ = _random_batch(rng, K, pool)
            s = _random_subsets(rng, y.size, K)
            before = pickle.dumps(est)
            key = "append" if op == "reject_defer" else "commit"
            fail[key] = True
            try:
                with pytest.raises(_Boom):
                    est.partial_fit_responses(y, s, update="defer" if op == "reject_defer" else "online")
            finally:
                fail[key] = False
            assert pickle.dumps(est) == before
        elif op == "bad_input":
            before = pickle.dumps(est)
            with pytest.raises(ValueError):
                est.partial_fit_responses([0, K], pool[:2], update="defer")
            assert pickle.dumps(est) == before
        elif op in ("deepcopy", "pickle"):
            twin = copy.deepcopy(est) if op == "deepcopy" else pickle.loads(pickle.dumps(est))
            ests.append(twin)
            expected.append(list(exp))
        elif op == "merge":
            j = int(rng.integers(len(ests)))
            other = ests[j]
            shared = est._chain.store.store_ids & other._chain.store.store_ids
            if other is est or shared:
                before = pickle.dumps(est)
                with pytest.raises(ValueError):
                    est.merge(other)
                assert pickle.dumps(est) == before
            else:
                est.merge(other)
                exp.extend(expected[j])
        elif op == "reject_merge":  # a merge that fails after interning the other store's subsets
            fresh = new_est()
            y, _ = _random_batch(rng, K, pool)
            fresh.partial_fit_responses(y, _random_subsets(rng, y.size, K), update="defer")
            before = pickle.dumps(est)
            fail["append"] = True
            try:
                with pytest.raises(_Boom):
                    est.merge(fresh)
            finally:
                fail["append"] = False
            assert pickle.dumps(est) == before
        else:  # a copy merged back into its original: refused (it would count the common history twice)
            twin = copy.deepcopy(est)
            y, s = _random_batch(rng, K, pool)
            twin.partial_fit_responses(y, s, update="defer")
            before = pickle.dumps(est)
            with pytest.raises(ValueError):
                est.merge(twin)
            assert pickle.dumps(est) == before
        for e, x in zip(ests, expected):
            _check_store(e, x)
        ops[str(op)] = ops.get(str(op), 0) + 1
    assert min(ops.values()) > 0 and len(ops) == 10  # every attack was tried


def test_fitted_subset_sizes_is_not_a_window_into_the_store():
    """``subset_sizes_`` is a fitted attribute handed to the user: writing into it must not
    change the recorded responses (it is a view of the store's buffer)."""
    K = 4
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=1.0, mechanism="rrrr",
                                        random_state=np.random.default_rng(0))
    est.partial_fit_responses([0, 1, 2], [[0, 1], [1], [2, 3]], update="defer")
    sizes = est._chain.store.sizes[: est._chain.store.n].copy()
    try:
        est.subset_sizes_[:] = 0
    except ValueError:  # read-only: safe
        return
    np.testing.assert_array_equal(est._chain.store.sizes[: est._chain.store.n], sizes)


def test_static_mechanism_copies_and_rejected_calls(monkeypatch):
    """The set-valued store (subset selection): a failing call after interning, then a copy and
    both recording: each keeps exactly its own sets."""
    K = 6
    rng = np.random.default_rng(2)
    a = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=1.0, mechanism="subset_selection",
                                      random_state=np.random.default_rng(1))
    client = a.client_mechanism()

    def batch(n):
        return client.privatize(rng.integers(0, K, size=n), rng)

    first = batch(4)
    a.partial_fit_responses(first)
    exp_a = [tuple(r) for r in first]
    real_append = ResponseStore.append

    def boom(self, ys, sids):
        raise _Boom("injected")

    monkeypatch.setattr(ResponseStore, "append", boom)
    before = pickle.dumps(a)
    with pytest.raises(_Boom):
        a.partial_fit_responses(batch(3))
    monkeypatch.setattr(ResponseStore, "append", real_append)
    assert pickle.dumps(a) == before
    b = copy.deepcopy(a)
    exp_b = list(exp_a)
    for _ in range(5):
        ma, mb = batch(2), batch(2)
        a.partial_fit_responses(ma)
        b.partial_fit_responses(mb)
        exp_a += [tuple(r) for r in ma]
        exp_b += [tuple(r) for r in mb]
    assert [tuple(r) for r in a._chain.store.responses()[1]] == exp_a
    assert [tuple(r) for r in b._chain.store.responses()[1]] == exp_b
    assert all(sum(r) == client.subset_size for r in exp_a + exp_b)
