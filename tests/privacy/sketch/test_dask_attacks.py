"""Attacks on PrivateCountSketch.from_dask: failures, partition layouts, subsampling seeds, answers.

The equality with ``fit`` on the usual layouts is in ``test_dask.py``; here the partitions are
made hostile (failing, empty, of other item types, identical) and the accounting is checked
around them.  The hash family's independence from Python's randomized ``hash()`` (what lets
workers agree) is checked across ``PYTHONHASHSEED`` values in ``test_hashing.py``.
"""

import copy
import math
import time
import warnings

import numpy as np
import pandas as pd
import pytest

from sklearn_bayes.exceptions import SeededNoiseWarning
from sklearn_bayes.privacy import PrivacyLedger, PrivateCountSketch
from sklearn_bayes.privacy._core import sample_noise

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
db = pytest.importorskip("dask.bag")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client(dask_clients):
    """An in-process cluster of one worker thread (fast; the task really runs on a worker)."""
    return dask_clients(n_workers=1, threads_per_worker=1, processes=False)


@pytest.fixture
def sync():
    with dask.config.set(scheduler="synchronous"):
        yield


def _ints(n=5_000, seed=0):
    return np.random.default_rng(seed).zipf(1.3, size=n) % 700


def _failing(items, chunks, bad_block):
    """A dask array whose block ``bad_block`` raises on the worker (after the others ran)."""
    arr = da.from_array(items, chunks=chunks)

    def block(x, block_info=None):
        if block_info[0]["chunk-location"][0] == bad_block:
            raise RuntimeError("partition lost")
        return x

    return arr.map_blocks(block, dtype=arr.dtype)


@pytest.mark.parametrize("rate", [1.0, 0.5])
def test_failed_partition_changes_nothing_and_the_retry_is_not_a_copy(client, rate):
    """A partition that raises: the error reaches the caller, the ledger and generator are untouched,
    and the retry (same generator, same ledger) is exactly the call that never failed, without a
    replay warning (before: the failed attempt registered the generator's state for a discarded
    sketch, so the retry was reported as a copy replaying noise)."""
    items = _ints()
    ledger = PrivacyLedger()
    seed = [11, int(rate * 10)]  # a state of its own (the replay registry is process-wide)
    gen = np.random.default_rng(seed)
    state = copy.deepcopy(gen.bit_generator.state)
    params = dict(width=128, pan_private=True, sampling_rate=rate, ledger=ledger)
    with pytest.raises(RuntimeError, match="partition lost"):
        PrivateCountSketch.from_dask(_failing(items, 500, bad_block=7), random_state=gen, **params)
    assert gen.bit_generator.state == state
    assert ledger.records == [] and ledger.epsilon_spent == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeededNoiseWarning)
        retry = PrivateCountSketch.from_dask(da.from_array(items, chunks=500), random_state=gen, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)  # a deliberate replay of the retry's generator
        clean = PrivateCountSketch.from_dask(
            da.from_array(items, chunks=500), random_state=np.random.default_rng(seed), **{**params, "ledger": None}
        )
    np.testing.assert_array_equal(retry.table_, clean.table_)
    q = items[:200]
    np.testing.assert_array_equal(retry.query(q), clean.query(q))
    assert ledger.epsilon_spent == retry.epsilon_spent_ == clean.epsilon_spent_  # the retry's release only
    # 1.0 up to the rounding of the amplification round trip ln(1 + rho (e^{eps0} - 1)), a few ulps
    assert math.isclose(retry.epsilon_spent_, 1.0, rel_tol=8 * np.finfo(float).eps)


def test_empty_partitions_and_any_number_of_partitions_give_one_table(sync):
    """rate 1: the same random_state gives the same sketch whatever the partitioning (1 partition,
    many, empty ones), equal to fit (empty partitions included, in a bag of composite items too)."""
    items = _ints(3_000)
    params = dict(width=96, depth=4, kind="count_min", pan_private=True)
    layouts = [
        da.from_array(items, chunks=3_000),                                         # one partition
        da.from_array(items, chunks=37),                                            # 82 partitions
        da.concatenate([da.from_array(items[:0], chunks=1), da.from_array(items, chunks=1_000),
                        da.from_array(items[:0], chunks=1)]),                       # empty first/last
        db.from_sequence(items.tolist(), npartitions=9).filter(lambda v: True),
        db.from_sequence(list(items) + [-1] * 50, npartitions=30).filter(lambda v: v >= 0),  # empties
    ]
    for coll in layouts:
        sk = PrivateCountSketch.from_dask(coll, random_state=np.random.default_rng(5), **params)
        reference = PrivateCountSketch(random_state=np.random.default_rng(5), **params).fit(items)  # fresh: queries add noise
        np.testing.assert_array_equal(sk.table_, reference.table_)
        assert sk.n_items_seen_ == items.shape[0]
        np.testing.assert_array_equal(sk.query(items[:50]), reference.query(items[:50]))
    # composite items: a bag of tuples whose filter empties some partitions (was: "different numbers of columns")
    pairs = sorted((int(v) % 11, int(v) // 11) for v in items)  # the pairs (3, .) fill whole partitions
    bag = db.from_sequence(pairs, npartitions=60).filter(lambda t: t[0] != 3)
    assert 0 in bag.map_partitions(lambda p: [len(list(p))]).compute()  # the attack: empty partitions
    kept = [t for t in pairs if t[0] != 3]
    sk = PrivateCountSketch.from_dask(bag, random_state=np.random.default_rng(5), **params)
    ref = PrivateCountSketch(random_state=np.random.default_rng(5), **params).fit(kept)
    np.testing.assert_array_equal(sk.table_, ref.table_)
    assert sk.n_features_in_ == 2


def test_partitions_of_other_item_kinds_are_refused_with_the_collection_named(sync):
    pytest.importorskip("dask.dataframe")
    import dask.dataframe as dd

    # ints in one partition, strings in another (dask's string conversion off: the column stays object)
    df = pd.DataFrame({"c": pd.Series([1, 2, 3, "a", "b", "c"], dtype=object)})
    with dask.config.set({"dataframe.convert-string": False}):
        col = dd.from_pandas(df, npartitions=2)["c"]
    gen = np.random.default_rng(0)
    state = copy.deepcopy(gen.bit_generator.state)
    with pytest.raises(TypeError, match="collection has items of different kinds in different partitions"):
        PrivateCountSketch.from_dask(col, random_state=gen)
    assert gen.bit_generator.state == state
    # ints and integral floats are one kind, with the same keys as in fit
    bag = db.from_sequence([1, 2, 2, 1.0, 2.0, 7.0], npartitions=2)
    sk = PrivateCountSketch.from_dask(bag, width=64, random_state=np.random.default_rng(0))
    ref = PrivateCountSketch(width=64, random_state=np.random.default_rng(0)).fit([1, 2, 2, 1.0, 2.0, 7.0])
    np.testing.assert_array_equal(sk.table_, ref.table_)
    # a partition of 2-D rows next to one of single items
    arr2 = db.from_sequence([(1, 2), (3, 4), 5, 6], npartitions=2)
    with pytest.raises(ValueError, match="collection has partitions with different numbers of columns"):
        PrivateCountSketch.from_dask(arr2, random_state=np.random.default_rng(0))


def test_subsampling_key_and_partitions_do_not_share_draws(sync):
    """sampling_rate < 1.  (1) The workers get one 128-bit key, the generator's first two draws, and
    the pan-private noise comes from the draws after it (never from outputs the workers saw).
    (2) Two identical partitions get independent subsamples (a shared seed would keep the same
    items in both): the items kept in both are Binomial(n, rate^2), not n * rate."""
    from sklearn_bayes.privacy._sketch import _dask

    n, rate, d, w = 4_000, 0.5, 2, 64
    seen = []
    original = _dask._partial_sketch

    def spy(part, row_seeds, width, signed, sampling_rate, key, index):
        seen.append((key, index))
        return original(part, row_seeds, width, signed, sampling_rate, key, index)

    gen = np.random.default_rng(21)
    probe = copy.deepcopy(gen)
    try:
        _dask._partial_sketch = spy
        sk = PrivateCountSketch.from_dask(
            da.from_array(np.tile(np.arange(n), 2), chunks=n), kind="count_min", depth=d, width=w,
            pan_private=True, sampling_rate=rate, random_state=gen,
        )
    finally:
        _dask._partial_sketch = original
    first = probe.integers(0, 2**64, size=2, dtype=np.uint64)
    key = int(first[0]) << 64 | int(first[1])
    assert sorted(seen) == [(key, 0), (key, 1)]
    eps0 = sk._base_epsilon()
    pan = sample_noise(probe, "discrete_laplace", d / eps0, size=(d, w))
    exact = sk.table_ - pan
    assert exact.min() >= 0 and (exact.sum(axis=1) == exact[0].sum()).all()  # counts, the same total per row
    # (2) independent subsamples of two identical partitions
    keep = [np.random.default_rng(np.random.SeedSequence(key, spawn_key=(i,))).random(n) < rate for i in (0, 1)]
    both = int(np.sum(keep[0] & keep[1]))
    p = rate**2
    assert abs(both - n * p) < 5 * math.sqrt(n * p * (1 - p))  # 5 standard errors; n * rate = 2000 if shared
    assert int(exact[0].sum()) == int(keep[0].sum() + keep[1].sum())  # the sketch holds exactly these draws


def test_unseeded_subsampling_key_is_fresh_entropy(sync):
    """random_state=None: the key comes from the OS, not from the noise generator; two calls differ."""
    items = da.from_array(np.arange(20_000), chunks=5_000)
    a = PrivateCountSketch.from_dask(items, kind="count_min", depth=1, width=4096, sampling_rate=0.5)
    b = PrivateCountSketch.from_dask(items, kind="count_min", depth=1, width=4096, sampling_rate=0.5)
    assert not np.array_equal(a.table_, b.table_)  # P(equal) is astronomically small


def test_count_min_answers_never_below_the_true_count_minus_the_noise(client):
    """Count-Min from the cluster: every exact row value is >= the true count, and each released
    answer min_i(C_i + N_i) >= f - t except with probability <= d P(N < -t) per item.
    With discrete Laplace of scale b = d/eps, P(N <= -t) = e^{-t/b} / (1 + e^{-1/b}) <= e^{-t/b};
    t = b ln(d Q / 1e-6) bounds the chance of any failure over Q items by 1e-6."""
    items = _ints(20_000, seed=3)
    d, eps = 4, 1.0
    sk = PrivateCountSketch.from_dask(da.from_array(items, chunks=1_500), kind="count_min", depth=d, width=256,
                                      epsilon=eps, random_state=np.random.default_rng(9))
    uniq, true = np.unique(items, return_counts=True)
    cols, signs = sk._locate(uniq.astype(np.int64).view(np.uint64))
    rows = np.take_along_axis(sk.table_, cols, axis=1)
    assert (rows >= true).all()  # no noise in the merged table
    answers = sk.query(uniq)
    t = (d / eps) * math.log(d * uniq.shape[0] / 1e-6)
    assert (answers >= true - t).all()
    assert sk.epsilon_spent_ == eps and len(sk.ledger_.records) == 1


def test_partials_stay_on_the_cluster(client):
    """Nothing of the reduction is left in the cluster's memory after the call (no partial table to
    fetch later), and the only object the caller gets is the sketch."""
    sk = PrivateCountSketch.from_dask(da.from_array(_ints(), chunks=700), random_state=np.random.default_rng(1))
    assert type(sk) is PrivateCountSketch
    # the client releases the computed keys with a message: wait (bounded) for the scheduler to forget them
    for _ in range(200):
        left = client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))
        if left == 0:
            break
        time.sleep(0.05)
    assert left == 0, f"{left} tasks (partial tables) still held by the cluster"
    assert sk.ledger_.records == [] and sk.epsilon_spent_ == 0.0
