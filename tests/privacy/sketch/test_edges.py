"""PrivateCountSketch regressions of issue 26 ("Trust 3"): threads, key collisions, copies, input
messages, the default error bound, and the faults found attacking the sketch beyond the issue.

Each test here fails on 8d8c494.
"""

import copy
import hashlib
import math
import pickle
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sklearn_bayes.exceptions import SeededNoiseWarning
from sklearn_bayes.privacy import PrivateCountSketch
import sklearn_bayes.privacy._sketch._estimator as sketch_module
from sklearn_bayes.privacy._core._accounting import PrivacyLedger

sys.path.insert(0, str(Path(__file__).parent))
import _sketch_reference as ref  # noqa: E402


def _sketch(seed=0, **params):
    return PrivateCountSketch(random_state=np.random.default_rng(seed), **params)


def _digest(rng):
    return hashlib.sha256(pickle.dumps(rng.bit_generator.state)).hexdigest()


@pytest.fixture
def noise_states(monkeypatch):
    """The digests of the generator states every noise draw of the sketch started from."""
    states = []
    real = sketch_module.sample_noise

    def recording(rng, *args, **kwargs):
        states.append(_digest(rng))
        return real(rng, *args, **kwargs)

    monkeypatch.setattr(sketch_module, "sample_noise", recording)
    return states


# ------------------------------------------------------------------ item 2: two threads on one sketch


def test_queries_during_failing_partial_fits_never_replay_noise(noise_states, monkeypatch):
    """Thread A queries while thread B sends batches that fail late (a bad item at the end).

    Was (at 3e6 items, 15 s): 28,579 of 28,977 queries drew noise from a generator state already
    used, because B's rollback rewound the generator A had drawn released noise from, and
    ``n_query_sets_`` read 66 (B's rollback undid A's counts).  Here B pauses inside its call (after
    validating the items, before it fails) until A has answered a query or a short wait has
    passed: without the per-instance lock A answers during the pause, every time.
    """
    est = _sketch(width=64).fit(np.arange(100))
    bad = np.arange(20_000).astype(object)
    bad[-1] = "late"  # a mixed column: refused by the key step, after validate_data
    b_inside, a_answered = threading.Event(), threading.Event()
    stop = threading.Event()
    real_item_keys = sketch_module._item_keys
    sender = []

    def pausing_item_keys(X, name):
        if threading.current_thread() in sender:
            a_answered.clear()
            b_inside.set()
            a_answered.wait(0.3)  # A cannot answer while B holds the sketch: the wait times out
        return real_item_keys(X, name)

    monkeypatch.setattr(sketch_module, "_item_keys", pausing_item_keys)
    answered, errors = [], []

    def ask():
        try:
            while not stop.is_set():
                if b_inside.wait(0.05):
                    b_inside.clear()
                est.query([1, 2, 3])
                answered.append(1)
                a_answered.set()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def send():
        try:
            for _ in range(4):
                with pytest.raises(TypeError, match="mixes item types"):
                    est.partial_fit(bad)
        finally:
            stop.set()

    a, b = threading.Thread(target=ask), threading.Thread(target=send)
    sender.append(b)
    a.start()
    b.start()
    b.join()
    a.join()
    assert not errors
    assert len(answered) >= 1
    # every answered query drew its noise from a state never used before, and each is counted
    assert len(noise_states) == len(answered)
    assert len(set(noise_states)) == len(noise_states)
    assert est.n_query_sets_ == len(answered)
    assert est.ledger_.n_releases == len(answered)


def test_merge_reads_the_other_sketch_under_its_lock(monkeypatch):
    """``a.merge(b)`` while another thread is inside ``b.partial_fit``: ``a`` waits for it.

    Was: merge did not hold ``b``'s lock, so it read ``b`` in the middle of an update (here: the
    state before the update, which then also lands in ``b`` -- those items are lost to ``a``).
    Crosswise merges of two threads cannot deadlock (locks taken in one order).
    """
    a, b = _sketch(0, width=32).fit([1, 2]), _sketch(1, width=32).fit([3, 4])
    b_inside, merged = threading.Event(), threading.Event()
    updater = []
    real_item_keys = sketch_module._item_keys

    def pausing_item_keys(X, name):
        if threading.current_thread() in updater:
            b_inside.set()
            merged.wait(0.3)  # the merge cannot finish while b's call holds b: the wait times out
        return real_item_keys(X, name)

    monkeypatch.setattr(sketch_module, "_item_keys", pausing_item_keys)

    def merge():
        b_inside.wait(5)
        a.merge(b)
        merged.set()

    t1 = threading.Thread(target=lambda: b.partial_fit([5] * 7))
    t2 = threading.Thread(target=merge)
    updater.append(t1)
    t1.start()
    t2.start()
    t1.join()
    t2.join()
    assert b.n_items_seen_ == 9
    assert a.n_items_seen_ == 2 + 9  # all of b's update, not the state in the middle of it
    # crosswise merges of two threads terminate (one of them is refused: the shard is shared)
    monkeypatch.setattr(sketch_module, "_item_keys", real_item_keys)
    c, e = _sketch(2, width=32).fit([1]), _sketch(3, width=32).fit([2])
    outcomes = []

    def cross(x, y):
        try:
            x.merge(y)
            outcomes.append("merged")
        except ValueError:
            outcomes.append("refused")

    ts = [threading.Thread(target=cross, args=(c, e)), threading.Thread(target=cross, args=(e, c))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(20)
    assert not any(t.is_alive() for t in ts)
    assert sorted(outcomes) == ["merged", "refused"]


def test_a_failed_record_binds_no_noise_and_rewinds_no_released_generator(noise_states, monkeypatch):
    """A query whose shared-ledger record fails (here: the ledger refuses once) releases nothing.

    Was: the noise was added to the table and the use counts in place before the record, so
    the rollback kept a noisy table, counted uses and a ledger_ record while the generator was
    rewound: the retry added the same noise a second time.
    """
    from sklearn_bayes.exceptions import BudgetExceededError

    shared = PrivacyLedger()
    est = _sketch(width=64, ledger=shared).fit(np.arange(50))
    table, uses, n_records = est.table_.copy(), est.uses_.copy(), est.ledger_.n_releases
    real, refused = PrivacyLedger._append, []

    def refuse_once(self, records, owner=None):
        if self is shared and not refused:
            refused.append(records)
            raise BudgetExceededError("refused once")
        return real(self, records, owner)

    monkeypatch.setattr(PrivacyLedger, "_append", refuse_once)
    with pytest.raises(BudgetExceededError):
        est.query([1, 2, 3])
    np.testing.assert_array_equal(est.table_, table)
    np.testing.assert_array_equal(est.uses_, uses)
    assert est.ledger_.n_releases == n_records and est.n_query_sets_ == 0 and shared.n_releases == 0
    est.query([1, 2, 3])
    assert int(est.uses_.max()) == 1 and est.ledger_.n_releases == 1 and shared.n_releases == 1


# ------------------------------------------------------------------ item 4: keys collide


def test_uint64_items_above_int64_are_refused_not_aliased():
    """Was: ``fit(np.array([2**64 - 1] * 100, dtype=np.uint64)).query([-1])`` answered 101."""
    with pytest.raises(ValueError, match=r"X contains an integer item outside the int64 range") as info:
        _sketch().fit(np.array([2**64 - 1] * 100, dtype=np.uint64))
    assert "18446744073709551615" not in str(info.value)
    est = _sketch(width=64).fit(np.array([-1] * 100))
    for items in (np.array([2**64 - 1], dtype=np.uint64), [2**64 - 1], np.array([2**63], dtype=object)):
        with pytest.raises(ValueError, match=r"items contains an integer item outside the int64 range"):
            est.query(items)
    assert est.n_query_sets_ == 0
    # uint64 items below 2**63 are the ints of the same value (keys unchanged)
    small = _sketch(width=64).fit(np.array([5, 2**63 - 1] * 10, dtype=np.uint64))
    ints = _sketch(width=64).fit(np.array([5, 2**63 - 1] * 10, dtype=np.int64))
    np.testing.assert_array_equal(small.table_, ints.table_)


def test_float_minus_two_to_the_63_is_the_int():
    """Floats with integral values count as ints: -2**63 (exact in float64) was keyed as a float."""
    a = _sketch(width=64).fit(np.array([-(2**63)] * 10, dtype=np.int64))
    b = _sketch(width=64).fit(np.array([-(2.0**63)] * 10))
    np.testing.assert_array_equal(a.table_, b.table_)
    # +2**63 is outside int64: a float item with its own key, not an alias of -2**63
    c = _sketch(width=64).fit(np.array([2.0**63] * 10))
    assert not np.array_equal(a.table_, c.table_)


def test_uint64_refusal_agrees_in_dask_and_old_bytes_answer_the_same():
    pytest.importorskip("dask")
    import dask
    import dask.array as da

    with dask.config.set(scheduler="synchronous"), pytest.raises(ValueError, match="int64 range"):
        PrivateCountSketch.from_dask(da.from_array(np.array([2**64 - 1] * 8, dtype=np.uint64), chunks=4))
    # the keys of every accepted item are unchanged: bytes written by 8d8c494 answer the same
    import base64

    for name in ("INT", "FLOAT", "TEXT"):
        data = base64.b64decode(getattr(ref, f"OLD_{name}_BYTES"))
        loaded = PrivateCountSketch.from_bytes(data, random_state=np.random.default_rng(3))
        answers = loaded.query(getattr(ref, f"OLD_{name}_QUERY"))
        np.testing.assert_array_equal(answers, getattr(ref, f"OLD_{name}_ANSWERS"))


# ------------------------------------------------------------------ item 5: messages and copies


@pytest.mark.parametrize("how", ["deepcopy", "copy", "pickle"])
def test_copies_of_an_unseeded_sketch_draw_fresh_noise(how):
    """A fork of a production sketch (random_state=None) must not replay its source's noise: at
    8d8c494 the two forks' answers differed by exactly the count the source had seen since."""
    copier = {"deepcopy": copy.deepcopy, "copy": copy.copy, "pickle": lambda o: pickle.loads(pickle.dumps(o))}[how]
    diffs = []
    for _ in range(5):
        a = PrivateCountSketch(epsilon=0.1, depth=1, width=64).fit([1, 2, 3])
        b = copier(a)
        a.partial_fit([7] * 3)
        diffs.append(float(a.query([7])[0] - b.query([7])[0]))
    # with replayed noise every difference is exactly 3; with fresh Laplace(10) noise on both
    # sides, P(difference == 3) is 0 for each of the five pairs
    assert diffs != [3.0] * 5


def test_copies_of_a_seeded_sketch_replay_for_reproducibility():
    a = _sketch(seed=4, epsilon=0.1, depth=1, width=64).fit([1, 2, 3])
    b = copy.deepcopy(a)
    np.testing.assert_array_equal(a.query([1, 7]), b.query([1, 7]))


def test_negative_random_state_names_random_state():
    """Was: numpy's "expected non-negative integer"."""
    with pytest.raises(ValueError, match=r"random_state must be None, a non-negative int.*-1"):
        PrivateCountSketch(random_state=-1).fit([1, 2])


def test_copy_copy_is_a_full_copy_and_a_fork():
    """Was: ``copy.copy(sketch)`` shared ``table_`` and ``uses_`` with the original."""
    a = _sketch(width=64).fit(np.arange(20))
    a.query([1])
    b = copy.copy(a)
    assert b.table_ is not a.table_ and b.uses_ is not a.uses_
    table, uses = a.table_.copy(), a.uses_.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b.partial_fit([1] * 5)
        b.query([1, 2])
    np.testing.assert_array_equal(a.table_, table)
    np.testing.assert_array_equal(a.uses_, uses)
    # like deepcopy: the ledger is shared, the copy is a fork charged afresh
    assert b.ledger_ is a.ledger_ and b.stream_id_ == a.stream_id_
    assert a.epsilon_spent_ == 2.0
    with pytest.raises(ValueError, match="share a shard"):
        a.merge(b)
    # an unfitted sketch is copied shallowly, as any estimator
    p = PrivateCountSketch(epsilon=2.0)
    assert copy.copy(p).get_params() == p.get_params()


@pytest.mark.parametrize("method", ["fit", "query"])
def test_bad_items_are_named_and_never_echoed(method):
    est = _sketch(width=64).fit(["a", "b"])
    run = (lambda X: _sketch().fit(X)) if method == "fit" else est.query
    name = "X" if method == "fit" else "items"
    secret = "s987654"
    cases = [
        (pd.Series(pd.array(["x", None, "y"], dtype="string")), ValueError, "missing item"),
        (pd.DataFrame({"a": pd.array(["x", pd.NA], dtype="string")}), ValueError, "missing item"),
        (np.array(["x", pd.NA], dtype=object), ValueError, "missing item"),
        ((v for v in ["a", "b"]), TypeError, "generator"),
        (np.array([1 + 1j, 987654]), ValueError, "complex"),
        (np.array([1, secret], dtype=object), TypeError, "mixes item types"),
        (np.array([{secret: 1}], dtype=object), TypeError, "dict"),
        (secret, TypeError, "single str"),
    ]
    for X, error, match in cases:
        with pytest.raises(error, match=match) as info:
            run(X)
        msg = str(info.value)
        assert f"{name} " in msg or msg.startswith(name), msg
        assert "987654" not in msg and "ambiguous" not in msg and "scalar" not in msg, msg
    assert est.n_query_sets_ == 0


# ------------------------------------------------------------------ item 6: the default error bound


def test_default_error_bound_is_finite_and_the_tightest_valid():
    """Was: ``error_bound(items)`` at its defaults (theorem5, depth 5, 95 %) returned [inf inf inf]."""
    est = _sketch().fit(np.arange(300) % 7)
    auto = est.error_bound([1, 2, 3])
    assert np.all(np.isfinite(auto)) and np.all(auto > 0)
    binom = est.error_bound([1, 2, 3], method="binomial")
    thm = est.error_bound([1, 2, 3], method="theorem5")
    np.testing.assert_array_equal(auto, np.minimum(binom, thm))
    # at many rows with unequal variances Theorem 5 can be the tighter one: auto takes it
    wide = _sketch(depth=101, width=8, epsilon=50.0).fit(np.arange(400) % 50)
    wide.query(np.arange(0, 50, 2))
    a, b, t = (wide.error_bound(np.arange(50), confidence=0.9, f2=1e3, method=m)
               for m in ("auto", "binomial", "theorem5"))
    np.testing.assert_array_equal(a, np.minimum(b, t))
    with pytest.raises(ValueError, match="method must be 'auto', 'binomial' or 'theorem5'"):
        est.error_bound([1], method="chebyshev")


def test_default_error_bound_covers_by_monte_carlo():
    """Coverage of the default bound (d = 5, 95 %) over independent hashes and noise.

    Each run is a fresh sketch (new hash seed, new noise) of a fixed Zipf-like stream with a
    public ``f2``; the bound is computed before the query that it bounds.  The exceedance rate
    must not be above 5 % by more than 3 binomial standard errors, and the same check rejects a
    bound 10 times smaller (it has power).
    """
    freqs = 400 // np.arange(1, 101)
    stream = np.repeat(np.arange(100), freqs)
    f2 = float(np.sum(freqs.astype(float) ** 2))
    rng = np.random.default_rng(11)
    runs, target, delta = 400, 4, 0.05
    errors, bounds = np.empty(runs), np.empty(runs)
    for r in range(runs):
        est = PrivateCountSketch(epsilon=1.0, width=16, hash_seed=5000 + r, random_state=rng).fit(stream)
        bounds[r] = est.error_bound([target], f2=f2)[0]
        errors[r] = abs(est.query([target])[0] - freqs[target])
    se = math.sqrt(delta * (1 - delta) / runs)
    assert np.all(np.isfinite(bounds))
    assert np.mean(errors > bounds) <= delta + 3 * se
    assert np.mean(errors > bounds / 10) > delta + 3 * se


# ------------------------------------------------------------------ item 6: the demo


def test_demo_draws_independent_generators_per_configuration():
    """Was: ``default_rng(rep)`` for each of the 15 configurations: 43 replay warnings."""
    from sklearn_bayes.experiments import count_sketch as experiment

    gens = experiment._demo_generators(n_configs=15, reps=3)
    states = [_digest(g) for row in gens for g in row]
    assert len(states) == 45 and len(set(states)) == 45
    again = experiment._demo_generators(n_configs=15, reps=3)  # reproducible
    assert [_digest(g) for row in again for g in row] == states
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeededNoiseWarning)
        for row in gens:
            for g in row:
                PrivateCountSketch(width=16, random_state=g).fit([1, 2]).query([1])


def test_dask_partitions_get_the_same_messages():
    """The cluster path refuses what ``fit`` refuses, with the same messages naming ``collection``."""
    pytest.importorskip("dask")
    import dask
    import dask.array as da
    import dask.dataframe as dd

    frame = dd.from_pandas(pd.DataFrame({"a": pd.array(["x", None, "y", "s987654"], dtype="string")}), npartitions=2)
    cases = [
        (frame, ValueError, "collection contains a missing item"),
        (da.from_array(np.array([1 + 1j, 987654]), chunks=1), ValueError, "Complex data not supported: collection"),
        (da.from_array(np.array([2**64 - 1], dtype=np.uint64), chunks=1), ValueError, "collection contains an integer"),
    ]
    with dask.config.set(scheduler="synchronous"):
        for coll, error, match in cases:
            with pytest.raises(error, match=match) as info:
                PrivateCountSketch.from_dask(coll, width=16, random_state=np.random.default_rng(0))
            assert "987654" not in str(info.value)
