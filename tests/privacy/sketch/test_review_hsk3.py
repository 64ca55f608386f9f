"""Review HSK3: the merge-once rule and the child-process refusal reach every copy of a shard.

Each test reproduces one of the review's attack paths (its scripts in HSK3's report) and failed
on the code before its fix.  Refused calls must change nothing: both sketches' ``to_bytes``,
``epsilon_spent_`` and ledger records are compared before and after.
"""

import copy
import gc
import threading
import warnings

import pytest

from sklearn_bayes.privacy import PrivateCountSketch

KW = dict(width=64, depth=3)


def _shards():
    return (PrivateCountSketch(**KW).fit(list(range(100, 110))), PrivateCountSketch(**KW).fit([5, 5, 6]),
            PrivateCountSketch(**KW).fit(list(range(200, 210))))


def _state(sk):
    return sk.to_bytes(), sk.epsilon_spent_, [dict(r) for r in sk.ledger_.records]


def _merged_into_records(sk):
    return [r for r in sk.ledger_.records if r["mechanism"] == "PrivateCountSketch/merged_into"]


# ------------------------------------------------------------------ F3: the check and the record are atomic


def test_two_threads_merging_b_and_its_deepcopy_exactly_one_succeeds():
    """a.merge(b) || c.merge(deepcopy(b)), released by a barrier: the old code let both succeed in
    17-50 % of runs (two merged_into records); now exactly one succeeds in each of 100 runs."""
    warnings.simplefilter("ignore")
    for _ in range(100):
        a, b, c = (PrivateCountSketch(width=32768).fit(x) for x in ([100], [5, 5], [101]))
        b2 = copy.deepcopy(b)
        barrier, ok, errors = threading.Barrier(2), [], []

        def go(hub, shard):
            barrier.wait()
            try:
                hub.merge(shard)
                ok.append(hub)
            except ValueError:
                errors.append(hub)

        threads = [threading.Thread(target=go, args=(a, b)), threading.Thread(target=go, args=(c, b2))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in threads), "deadlock"
        assert len(ok) == 1 and len(errors) == 1
        assert len(_merged_into_records(b)) == 1 and b.ledger_ is b2.ledger_
        loser = errors[0]
        assert loser.shard_ids_ == (loser.stream_id_,) and loser.epsilon_spent_ == 0.0

