"""``fork()`` while another thread is inside a call on an estimator (task HQK, hole 3).

Before the fix a ``fork()``-ed child inherited every instance lock in the state it had: a lock
held by another thread of the parent (a sketch answering a query, recording a batch) stays held
forever in the child, where that thread does not exist, so the child's first call on that
sketch blocked forever.  Now the forking thread waits (at most ``FORK_WAIT`` seconds in all)
for the running calls to finish, holding every instance lock across the fork, so the child
inherits each object between two calls; an object still busy when the wait runs out would be
half-updated in the child, so there it refuses every call with a ``RuntimeError`` that says so,
instead of blocking or answering from a half-updated state.  The module guards and the ledgers'
locks are made usable in the child too.
"""

import os
import pickle
import threading
import time

import numpy as np
import pytest

from sklearn_bayes.privacy import AdaptiveLDPFrequencyEstimator, PrivacyLedger, PrivateCountSketch
from sklearn_bayes.utils import _fork, instance_lock
from tests.privacy._fork_tools import child_result

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # (Python 3.12: fork with threads)
]


def _in_child(fn, timeout=20.0):
    """``fn()`` in a fork()-ed child: its JSON result, or ``"deadlock"`` if it did not end in ``timeout`` s."""
    return child_result(fn, timeout)


class _Holder:
    """A thread that holds ``lock`` from ``start()`` until ``release()`` (a call in progress)."""

    def __init__(self, lock, hold=None):
        self.lock, self.hold = lock, hold
        self.held, self.done = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        with self.lock:
            self.held.set()
            if self.hold is None:
                self.done.wait()
            else:
                time.sleep(self.hold)

    def __enter__(self):
        self.thread.start()
        self.held.wait()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()


def _sketch(tmp_path):
    # bound to a ledger file: without one a sketch inherited by a forked child refuses to release there
    # (DetachedLedgerError, HQN); these tests are about the locks, so the child's queries must be able to answer
    return PrivateCountSketch(width=64, ledger=PrivacyLedger(path=tmp_path / "budget.ledger")).fit(np.arange(50))


def test_a_call_that_ends_within_the_wait_leaves_a_usable_sketch_in_the_child(tmp_path):
    sketch = _sketch(tmp_path)
    with _Holder(instance_lock(sketch), hold=0.3):  # a call that ends 0.3 s after the fork began
        out = _in_child(lambda: sketch.query([1, 2]).tolist())
    assert out != "deadlock" and "ok" in out and len(out["ok"]) == 2


def test_a_sketch_busy_past_the_wait_is_refused_in_the_child_not_deadlocked(monkeypatch, tmp_path):
    monkeypatch.setattr(_fork, "FORK_WAIT", 0.2)
    sketch, other = _sketch(tmp_path), _sketch(tmp_path)
    with _Holder(instance_lock(sketch)):  # a call that outlives the wait
        t0 = time.monotonic()
        out = _in_child(lambda: {"other": other.query([1]).tolist(), "busy": _refused(sketch)})
        waited = time.monotonic() - t0
    assert out != "deadlock"  # (was: the child blocked forever on the sketch's lock)
    assert "ok" in out, out
    assert len(out["ok"]["other"]) == 1  # the idle sketch works in the child
    assert "was inherited by a fork" in out["ok"]["busy"]
    assert waited < 10.0
    sketch.query([1])  # the parent is unaffected once the call ended


def _refused(sketch):
    messages = []
    calls = (lambda: sketch.query([1]), lambda: sketch.partial_fit([1, 2]), sketch.to_bytes,
             lambda: pickle.dumps(sketch))
    for call in calls:
        try:
            call()
        except RuntimeError as exc:
            messages.append(str(exc))
    assert len(messages) == len(calls), messages
    return messages[0]


def test_a_fork_while_a_thread_is_in_a_module_guard_does_not_deadlock_the_child(monkeypatch, tmp_path):
    from sklearn_bayes.utils import _transaction

    monkeypatch.setattr(_fork, "FORK_WAIT", 0.2)
    sketch = _sketch(tmp_path)
    with _Holder(_transaction._LOCKS_GUARD, hold=5.0):
        out = _in_child(lambda: sketch.query([1]).tolist(), timeout=4.0)
    assert out != "deadlock" and "ok" in out, out


def test_an_in_memory_ledger_locked_at_the_fork_is_usable_and_consistent_in_the_child(monkeypatch):
    monkeypatch.setattr(_fork, "FORK_WAIT", 0.2)
    ledger = PrivacyLedger()
    ledger.record("m", 0.5)
    with _Holder(ledger._lock):
        def child():
            ledger.record("m", 0.25)
            return [ledger.epsilon_spent, ledger.n_releases]
        out = _in_child(child)
    assert out == {"ok": [0.75, 2]}


def test_any_estimator_busy_at_the_fork_is_refused_in_the_child(monkeypatch):
    monkeypatch.setattr(_fork, "FORK_WAIT", 0.2)
    est = AdaptiveLDPFrequencyEstimator(n_categories=3, mechanism="grr").partial_fit([[0], [1], [2]])

    def child():
        try:
            est.partial_fit([[1]])
        except RuntimeError as exc:
            return str(exc)
        return "answered"

    with _Holder(instance_lock(est)):
        out = _in_child(child)
    assert out != "deadlock" and "was inherited by a fork" in out["ok"]
    est.partial_fit([[1]])
    assert est.n_responses_ == 4


def test_a_long_call_delays_one_fork_not_every_fork(monkeypatch, tmp_path):
    monkeypatch.setattr(_fork, "FORK_WAIT", 1.0)
    sketch, other = _sketch(tmp_path), _sketch(tmp_path)
    with _Holder(instance_lock(sketch)):  # e.g. a long fit in a background thread
        times = []
        for _ in range(3):
            t0 = time.monotonic()
            out = _in_child(lambda: other.query([1]).tolist())
            times.append(time.monotonic() - t0)
            assert "ok" in out
    assert times[0] >= 1.0  # the first fork waited for the call
    assert max(times[1:]) < 0.9  # the next ones did not wait again
    with _Holder(instance_lock(sketch), hold=0.3):  # not found free since: not waited for
        assert "was inherited by a fork" in _in_child(lambda: sketch.query([1]).tolist())["error"]
    assert "ok" in _in_child(lambda: sketch.query([1]).tolist())  # found free: usable, waited for again
    with _Holder(instance_lock(sketch), hold=0.3):
        assert "ok" in _in_child(lambda: sketch.query([1]).tolist())
