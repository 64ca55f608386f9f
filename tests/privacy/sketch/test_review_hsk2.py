"""Review HSK2: a shard is merged once (F1); the parent's copy is not merged in a child process (F2).

F1: ``a.merge(b); c.merge(b)`` was accepted (also ``c.merge(deepcopy(b))`` taken before the merge):
``a`` and ``c`` both answered about ``b``'s individuals while each ledger showed ``ε`` (audit: ln
ratio 1.99 +- 0.03 at ``ε = 1``).  Now the merge writes a zero-ε ``merged_into`` record in
``b.ledger_`` and a second merge of ``b`` (or of a copy that shares or carries that ledger) is
refused with a ``ValueError`` naming ``other``, changing neither sketch; ``b.fit`` starts afresh.

F2: in a child process the parent's sketch refuses to release (``DetachedLedgerError``), but
``a.merge(b); a.query(...)`` answered about ``b``'s individuals (300 answers averaged to the true
count).  Now such a merge is refused with the same error, changing nothing.
"""

import copy
import multiprocessing
import os
import pickle
import warnings

import numpy as np
import pytest

from sklearn_bayes.exceptions import DetachedLedgerError
from sklearn_bayes.privacy import PrivacyLedger, PrivateCountSketch
from tests.privacy._fork_tools import in_child

KW = dict(width=64, depth=3)


def _shards():
    a = PrivateCountSketch(**KW).fit(np.arange(100, 110))
    b = PrivateCountSketch(**KW).fit(np.array([5, 5, 6]))
    c = PrivateCountSketch(**KW).fit(np.arange(200, 210))
    return a, b, c


def _refused_unchanged(target, other, match="already merged"):
    """``target.merge(other)`` raises a ValueError naming other and leaves both byte-identical."""
    before = (target.to_bytes(), other.to_bytes(), target.epsilon_spent_, other.epsilon_spent_)
    with pytest.raises(ValueError, match="cannot merge other") as info:
        target.merge(other)
    assert match in str(info.value)
    assert (target.to_bytes(), other.to_bytes(), target.epsilon_spent_, other.epsilon_spent_) == before


# ------------------------------------------------------------------ F1: a shard is merged once


def test_a_shard_merged_into_one_sketch_is_refused_by_another_and_nothing_changes():
    a, b, c = _shards()
    a.merge(b)
    _refused_unchanged(c, b)
    a.query([5])
    c.query([5])  # c never holds b's shard
    assert c.n_items_seen_ == 10 and a.n_items_seen_ == 13


def test_a_copy_taken_before_the_merge_is_refused_too():
    """Deep copy (shares ledger_), pickle and to_bytes loaded in this process while b lives (take b's ledger_)."""
    a, b, c = _shards()
    deep = copy.deepcopy(b)
    pickled = pickle.dumps(b)
    data = b.to_bytes()
    a.merge(b)
    for twin in (deep, pickle.loads(pickled), PrivateCountSketch.from_bytes(data)):
        _refused_unchanged(c, twin)


def test_pickles_and_bytes_taken_after_the_merge_carry_the_record():
    a, b, c = _shards()
    a.merge(b)
    pickled, data = pickle.dumps(b), b.to_bytes()
    del b  # no live original to take a ledger from: the copies' own records refuse
    for twin in (pickle.loads(pickled), PrivateCountSketch.from_bytes(data)):
        _refused_unchanged(c, twin)
    assert any(r["mechanism"] == "PrivateCountSketch/merged_into" and r["epsilon"] == 0.0
               for r in PrivateCountSketch.from_bytes(data).ledger_.records)


def test_partial_fit_keeps_the_refusal_and_a_refit_starts_afresh():
    a, b, c = _shards()
    a.merge(b)
    b.partial_fit([7])  # still holds the merged elements: merging it again would count them twice
    _refused_unchanged(c, b)
    b.fit([8, 8])  # a new stream
    c.merge(b)
    assert c.n_items_seen_ == 12


def test_a_merged_sketch_is_itself_merged_once_and_the_first_merge_is_unchanged():
    """The record is made only by a merge that succeeded, and the merged sketch is a shard like any other."""
    a, b, c = _shards()
    d = PrivateCountSketch(**KW).fit([1])
    a.merge(b)
    assert not [r for r in a.ledger_.records if r["mechanism"] == "PrivateCountSketch/merged_into"]
    c.merge(a)  # allowed: c holds a's and b's shards, a is now merged
    _refused_unchanged(d, a)
    records = [r for r in b.ledger_.records if r["mechanism"] == "PrivateCountSketch/merged_into"]
    assert len(records) == 1 and records[0]["merged_into"] == a.stream_id_ and records[0]["epsilon"] == 0.0
    assert b.epsilon_spent_ == 0.0  # the record spends nothing


def test_one_shard_in_two_sketches_bound_to_one_ledger_is_refused_too():
    ledger = PrivacyLedger()
    a = PrivateCountSketch(**KW, ledger=ledger).fit([100])
    c = PrivateCountSketch(**KW, ledger=ledger).fit([200])
    b = PrivateCountSketch(**KW, ledger=ledger).fit([5, 5, 6])
    a.merge(b)
    _refused_unchanged(c, b)


def test_the_audit_of_two_answers_about_one_merged_shard_cannot_be_run():
    """The review's attack (``atk_double_merge.py``): every trial's second merge is refused."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(5):
            for mode in ("same", "copy"):
                a = PrivateCountSketch(epsilon=1.0, depth=1, width=8, random_state=seed).fit([100])
                c = PrivateCountSketch(epsilon=1.0, depth=1, width=8, random_state=10**7 + seed).fit([100])
                b = PrivateCountSketch(epsilon=1.0, depth=1, width=8, random_state=2 * 10**7 + seed).fit([5])
                twin = copy.deepcopy(b) if mode == "copy" else b
                a.merge(b)
                with pytest.raises(ValueError, match="cannot merge other"):
                    c.merge(twin)


def test_the_width_message_names_the_default_change():
    old = PrivateCountSketch(width=2048).fit([1])
    new = PrivateCountSketch().fit([2])
    with pytest.raises(ValueError, match=r"width=2048\)"):
        new.merge(old)


# ------------------------------------------------------------------ F2: the parent's copy in a child

pytestmark_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _child_merge(b):
    """A child's task: merge the parent's sketch ``b`` into a sketch fitted here, then query."""
    a = PrivateCountSketch(**KW).fit([10**9])
    before = (a.to_bytes(), b.to_bytes())
    try:
        a.merge(b)
    except DetachedLedgerError as exc:
        return {"refused": str(exc), "unchanged": (a.to_bytes(), b.to_bytes()) == before,
                "own answers": a.query([10**9]).shape == (1,)}
    return {"answer": float(a.query([7])[0])}


_POOL_B = None


def _inherited_task(_):
    return _child_merge(_POOL_B)


@pytestmark_fork
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_merge_of_the_inherited_sketch_is_refused_in_a_fork_pool():
    global _POOL_B
    b = PrivateCountSketch(**KW).fit(np.r_[np.full(37, 7), np.arange(100, 140)])
    parent_before = b.to_bytes()
    _POOL_B = b
    try:
        with multiprocessing.get_context("fork").Pool(2) as pool:
            outs = pool.map(_inherited_task, range(4), chunksize=1)
    finally:
        _POOL_B = None
    assert all("refused" in o for o in outs), outs
    assert all("cannot merge other" in o["refused"] and "os.fork()" in o["refused"] for o in outs)
    assert all(o["unchanged"] and o["own answers"] for o in outs)
    assert b.to_bytes() == parent_before and b.epsilon_spent_ == 0.0


@pytestmark_fork
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_merge_of_the_sketch_pickled_as_a_task_argument_is_refused():
    b = PrivateCountSketch(**KW).fit(np.r_[np.full(37, 7), np.arange(100, 140)])
    with multiprocessing.get_context("fork").Pool(2) as pool:
        outs = pool.map(_child_merge, [b] * 4, chunksize=1)
    assert all("refused" in o and "pickled it" in o["refused"] for o in outs), outs
    assert all(o["unchanged"] and o["own answers"] for o in outs)
    assert b.epsilon_spent_ == 0.0


@pytestmark_fork
def test_a_merge_of_the_inherited_sketch_bound_to_a_ledger_file_is_allowed(tmp_path):
    """The inherited sketch may release with a ledger file: so may the sketch it is merged into (same file)."""
    ledger = PrivacyLedger(path=tmp_path / "budget.ledger", budget=(10.0, 0.0))
    b = PrivateCountSketch(**KW, ledger=ledger).fit(np.full(37, 7))

    def child():
        a = PrivateCountSketch(**KW, ledger=ledger).fit([10**9])
        a.merge(b)
        a.query([7])
        return a.epsilon_spent_

    assert in_child(child) == 1.0
    assert ledger.epsilon_spent == 1.0
