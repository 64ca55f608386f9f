"""Review HSK2 F3: the pool of earlier query sets is kept in O(1) amortised time per query set.

``newest_sets`` rebuilt a list of up to ``POOL_SIZE`` earlier sets at every query (one-item query
sets: 6,553 tuples per query).  It now updates a deque in place.  The released values and the
intervals must not change: a seeded sequence of query sets of mixed sizes (crossing ``POOL_SIZE``
many times) is answered by a sketch using the new code and by a twin using the previous
implementation, copied below verbatim; answers, bounds and the kept pools are compared bit for bit.
"""

import math
import pickle
import warnings

import numpy as np
import pytest

import sklearn_bayes.privacy._sketch._accuracy as accuracy_module
import sklearn_bayes.privacy._sketch._estimator as estimator_module
from sklearn_bayes.privacy import PrivateCountSketch
from sklearn_bayes.privacy._sketch import _bounds
from sklearn_bayes.privacy._sketch._bounds import POOL_SIZE


# ------------------------------------------------------------------ the previous implementation (commit 0df1693)


def _old_newest_sets(sets, values, noise_var):
    out, total = [(values, float(noise_var))], values.shape[0]
    for vals, var in sets or ():
        total += vals.shape[0]
        if total > POOL_SIZE:
            break
        out.append((vals, var))
    return out


def _old_lent_pool(sets, part, rescale):
    pool, var_now = np.sort(sets[0][0]), sets[0][1]
    for vals, var in sets[1:]:
        if math.isfinite(part(pool)):
            break
        factor = math.sqrt(max(1.0, var_now / var)) if rescale and var > 0 else 1.0
        pool = np.sort(np.concatenate([pool, vals * factor]))
    return pool


def _run(params, sizes, old, monkeypatch):
    """Answers and 90 % / 95 % bounds of every query set, and the final pool, of a seeded sketch."""
    with monkeypatch.context() as m:
        if old:
            m.setattr(estimator_module, "newest_sets", _old_newest_sets)
            m.setattr(accuracy_module, "lent_pool", _old_lent_pool)
        gen = np.random.default_rng(7)
        stream = gen.zipf(1.3, 30_000) % 5000
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # seeded noise
            sk = PrivateCountSketch(**params, random_state=3).fit(stream)
        out = []
        for n in sizes:
            items = gen.choice(6000, size=n, replace=False)
            answers = sk.query(items)
            out.append(answers)
            for conf in (0.9, 0.95):
                out.append(sk.lower_bound(items, confidence=conf))
                out.append(sk.upper_bound(items, confidence=conf))
        pool = [(v, var) for v, var in sk._bound_pool]
    return out, pool


SIZES = np.random.default_rng(11).choice([1, 1, 2, 3, 4, 6, 40, 700, 2500, 6000], size=70).tolist()


@pytest.mark.parametrize("params", [
    dict(width=1024, depth=5),
    dict(width=1024, depth=4),  # even depth: the plug-in level
    dict(width=1024, depth=5, kind="count_min"),
    dict(width=1024, depth=5, mechanism="use_and_forget", decay=0.9),  # rescaled borrowed values
])
def test_answers_bounds_and_pools_are_bit_for_bit_those_of_the_previous_code(params, monkeypatch):
    assert sum(SIZES) * params["depth"] > 3 * POOL_SIZE  # the cap is crossed again and again
    new, new_pool = _run(params, SIZES, False, monkeypatch)
    ref, ref_pool = _run(params, SIZES, True, monkeypatch)
    assert len(new) == len(ref)
    for a, b in zip(new, ref):
        np.testing.assert_array_equal(a, b)
        assert a.tobytes() == b.tobytes()  # bit for bit (infinite ends included)
    assert [var for _, var in new_pool] == [var for _, var in ref_pool]
    assert all(a is b or a.tobytes() == b.tobytes() for (a, _), (b, _) in zip(new_pool, ref_pool))


def test_the_pool_is_updated_in_place_and_holds_at_most_pool_size_values():
    pool = None
    gen = np.random.default_rng(0)
    reference = None
    for n in gen.integers(1, 9000, size=200):
        values = gen.random(n)
        var = float(gen.random())
        pool_before = pool
        pool = _bounds.newest_sets(pool, values, var)
        reference = _old_newest_sets(reference, values, var)
        assert pool_before is None or pool is pool_before
        assert pool.total == sum(v.shape[0] for v, _ in pool) <= max(POOL_SIZE, values.shape[0])
        assert [(id(v), w) for v, w in pool] == [(id(v), w) for v, w in reference]


def test_a_pool_pickled_by_the_previous_version_is_continued():
    """A sketch pickled before (its pool a list, newest first) continues with the same pools."""
    gen = np.random.default_rng(1)
    old = None
    for n in (3, 5000, 2, 7000):
        old = _old_newest_sets(old, gen.random(n), 1.0)
    values = gen.random(4)
    new = _bounds.newest_sets(pickle.loads(pickle.dumps(old)), values, 2.0)
    ref = _old_newest_sets(old, values, 2.0)
    assert [(v.tobytes(), w) for v, w in new] == [(v.tobytes(), w) for v, w in ref]
    assert new.total == sum(v.shape[0] for v, _ in ref)
