"""``PrivateCountSketch.merge``: the checks and the binding of a merge of disjoint shards.

A merge moves the individuals of ``other``'s shards into the merged sketch, whose later releases
answer about them.  Two rules keep the accounting of those individuals on one sketch:

- **a shard is merged once** (review HSK2 F1): ``a.merge(b); c.merge(b)`` would let ``a`` and ``c``
  both answer about ``b``'s individuals while each ledger shows ``ε`` (measured loss ``2ε``).  A
  merge writes a zero-ε ``merged_into`` record in ``other.ledger_`` -- the ledger that in-process
  copies of ``other`` share and that pickles and ``to_bytes`` carry -- and a sketch whose
  ``ledger_`` holds one is refused as ``other``.  ``other.fit`` starts a new ``ledger_``, hence a
  shard that can be merged again.
- **the parent's copy is not merged in a child process** (review HSK2 F2): a sketch that refuses
  to release there (``_ForkedStream._check_attached``) is refused as ``other`` with the same
  ``DetachedLedgerError``, else the merged sketch would answer about its individuals unseen by
  the original in the parent.
"""

import contextlib
import os
import threading

from sklearn.utils.validation import check_is_fitted

from sklearn_bayes.exceptions import DetachedLedgerError
from sklearn_bayes.utils import instance_lock

#: The ``mechanism`` name of the zero-ε record a merge writes in ``other.ledger_``.
MERGED_INTO = "PrivateCountSketch/merged_into"


#: Held (after both sketches' locks) from the merge-once check to its record (review HSK3 F3): two threads
#: merging two in-process copies of one shard (``b`` and ``deepcopy(b)``: two sketch locks, one ledger) would
#: both pass the check before either recorded.
_MERGE_LOCK = threading.RLock()


def _new_merge_lock():  # in a fork()-ed child: a lock held by a parent's thread at the fork is never released
    global _MERGE_LOCK
    _MERGE_LOCK = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_merge_lock)


@contextlib.contextmanager
def merge_guard(sk, other):
    """The locks of a merge, in one global order: both sketches' (by ``id``), this process's merge lock, then
    ``other.ledger_``'s (shared by ``other``'s in-process copies).  No lock is taken in the reverse order."""
    first, second = sorted((sk, other), key=id)
    with instance_lock(first), instance_lock(second), _MERGE_LOCK:
        ledger = other.__dict__.get("ledger_")
        with instance_lock(ledger) if ledger is not None else contextlib.nullcontext():
            yield


#: The streams merged in this process (``stream_id_`` -> the ``stream_id_`` it was merged into; review HSK3 F2):
#: the ``merged_into`` record lives in ``other.ledger_``, which dies with the last object holding it, so a copy
#: made before the merge (``to_bytes`` or pickle) and loaded once ``other`` is gone or refit was merged again.
#: Written under ``_MERGE_LOCK``; a ``fork()``-ed child inherits it (its copies of merged shards stay refused).
_MERGED = {}


def merged_into(sketch):
    """The stream ids this sketch's stream was merged into, from the ``merged_into`` records of its ``ledger_``."""
    return [r.get("merged_into") for r in sketch.ledger_._snapshot_records() if r.get("mechanism") == MERGED_INTO]


def _check_mergeable_once(other):
    """Refuse ``other`` if its stream was merged before (a record in its ``ledger_``), or if it carries a shard
    this process merged into a sketch outside ``other``'s own shards (review HSK4 F6: bytes of a shard made
    before its merge, merged in a worker whose hub came back)."""
    own = set(other.shard_ids_)
    elsewhere = sorted(x for x in own if x != other.stream_id_ and x in _MERGED and _MERGED[x] not in own)
    if elsewhere:
        raise ValueError(
            f"cannot merge other: it holds the shard(s) {elsewhere} that this process already merged into another "
            f"sketch (stream {_MERGED[elsewhere[0]]!r}); two sketches would answer about those individuals while "
            "each ledger shows one budget. Merge each shard once."
        )
    into = merged_into(other)
    if not into and other.stream_id_ in _MERGED:
        raise ValueError(
            f"cannot merge other: its stream (stream_id_ {other.stream_id_!r}) was already merged in this process "
            f"into the sketch of stream {_MERGED[other.stream_id_]!r} (the process keeps the stream ids it merged, "
            "so a copy made before that merge -- to_bytes or pickle -- is refused even once the merged object is "
            "gone or refit). Merging it again would let two sketches answer about its individuals while each "
            "ledger shows one budget (their releases compose to twice it). Merge each shard once; to merge new "
            "data, fit the shard anew (fit starts a new stream and ledger_)."
        )
    if into:
        raise ValueError(
            f"cannot merge other: its stream (stream_id_ {other.stream_id_!r}) was already merged into the sketch "
            f"of stream {into[0]!r} (a 'merged_into' record in other.ledger_, which its in-process copies share "
            "and its pickles and to_bytes carry). Merging it again would let two sketches answer about its "
            "individuals while each ledger shows one budget (their releases compose to twice it). Merge each "
            "shard once; to merge new data, fit the shard anew (fit starts a new stream and ledger_)."
        )


def _check_not_parents_copy(other):
    """Refuse ``other`` if it is its parent process's copy that may not release here (review HSK2 F2)."""
    try:
        other._check_attached()
    except DetachedLedgerError as exc:
        raise DetachedLedgerError(
            "cannot merge other: it refuses to release in this process, and the merged sketch would answer "
            f"about its individuals instead. Nothing was merged. {exc}"
        ) from None


def merge_shard(sk, other, stream_params):
    """Merge the fitted sketch ``other`` into ``sk`` (see ``PrivateCountSketch.merge``).

    Every check comes first; ``sk``'s state is then bound (the caller is transactional) and
    ``other`` is changed last, once nothing can fail: a refused merge changes neither sketch.
    """
    check_is_fitted(sk)
    check_is_fitted(other)
    sk._check_stream_params("merge")
    other._check_stream_params("merge (of other)")
    diff = {
        name: (sk.fitted_params_[name], other.fitted_params_[name])
        for name in stream_params
        if sk.fitted_params_[name] != other.fitted_params_[name]
    }
    if diff:
        hint = ""
        if "width" in diff and set(diff["width"]) == {2048, 32768}:
            hint = (" The default width changed from 2048 to 32768 (round HSW2): a sketch saved before continues "
                    "with PrivateCountSketch(width=2048).")
        raise ValueError(f"cannot merge sketches fitted with different parameters (self, other): {diff}.{hint}")
    theirs, mine = other._shared_ledger, sk._shared_ledger
    if theirs is not None and (mine is None or not mine._is_same_budget(theirs)):
        # sk's later releases of other's individuals would be recorded only in sk's ledgers:
        # other's budget (perhaps exhausted) would never see them
        raise ValueError(
            "cannot merge other: its stream is bound to a shared ledger (its ledger parameter when its "
            f"stream started) that is not this sketch's ({'none' if mine is None else 'another ledger'}): the "
            "merged sketch's releases about other's individuals would escape that ledger's budget. "
            "Fit the shards with the same ledger (a PrivacyLedger(path=...) file across processes), or "
            "merge into the sketch bound to other's ledger."
        )
    _check_not_parents_copy(other)
    if other._item_kinds != sk._item_kinds or other.n_features_in_ != sk.n_features_in_:
        raise TypeError(
            f"cannot merge sketches of different item types: {sk._item_kinds} and {other._item_kinds}."
        )
    shared = sorted(set(sk.shard_ids_) & set(other.shard_ids_))
    if shared:
        raise ValueError(
            "cannot merge sketches that share a shard (a sketch with itself, with a copy of itself, or with a "
            f"sketch that already contains one of its shards): shard ids {shared}. Merging them would count "
            "the same stream elements twice."
        )
    _check_mergeable_once(other)
    release = sk._release
    release.check_merge(sk.n_query_sets_, other.n_query_sets_)
    sk._warn_if_same_noise(other)
    uses = release.merge_uses(sk.uses_, other.uses_)
    table = sk.table_ + other.table_
    sk.uses_, sk.table_ = uses, table
    sk._pan_draws += other._pan_draws
    sk.n_items_seen_ += other.n_items_seen_
    sk.n_query_sets_ = max(sk.n_query_sets_, other.n_query_sets_)
    sk.shard_ids_ = tuple(sorted(set(sk.shard_ids_) | set(other.shard_ids_)))
    sk._last_release = None  # the shards' answers are not answers of the merged sketch
    sk._bound_pool = None
    # parallel composition of disjoint shards (use_and_forget: its schedules continue from max(U_a, U_b))
    chain0 = release.merged_spend(max(sk._chain_spent0, other._chain_spent0), uses)
    sk._charge(
        chain0, n_items=None, mechanism="merge",
        note="parallel composition of disjoint shards", merged_streams=list(other.shard_ids_),
    )
    # other, last (nothing can fail any more): merged once (HSK2 F1), and a new fork (HQW F2): its next
    # release composes with the merged sketch's, so it charges its history afresh
    other.ledger_.record(
        MERGED_INTO, 0.0, n_items=None, note="merged into another sketch: it cannot be merged again",
        stream=other.stream_id_, fork=other._fork_id, merged_into=sk.stream_id_,
    )
    _MERGED[other.stream_id_] = sk.stream_id_  # (under _MERGE_LOCK: see merge_guard)
    other._new_fork()
    return sk
