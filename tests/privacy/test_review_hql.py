"""Second read of today's fork, generator and ledger surfaces (review HQL), tests first.

Each test here is what a user or an attacker would try on the new surfaces; the ones that
failed on the code as it was are named in their docstring with what they saw.
"""

import os
import threading

import pytest

from sklearn_bayes.utils import _fork, instance_lock

from .test_fork_locks import _Holder, _in_child

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # (Python 3.12: fork with threads)
]

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


class _Box:
    """Any object with an instance lock."""


@needs_fork
def test_a_lock_first_taken_while_the_fork_is_being_prepared_does_not_deadlock_the_child(monkeypatch):
    """A call that begins on a new object between the fork's snapshot of the locks and the fork.

    The forking thread listed the live instance locks, then waited for them; a thread that took
    the lock of an object never locked before in that window held, in the child, a lock nobody
    would release: the child's first call on that object blocked forever (it did: ``acquire``
    timed out).  Now the fork lists them again once it holds the registry's guard, and an object
    whose lock was taken meanwhile is refused in the child as busy.
    """
    box = _Box()
    holders = []
    original = _fork._live_instance_locks

    def snapshot_then_a_new_call_begins():
        pairs = original()
        if not holders:  # (only in the fork under test)
            holders.append(_Holder(instance_lock(box)).__enter__())
        return pairs

    monkeypatch.setattr(_fork, "_live_instance_locks", snapshot_then_a_new_call_begins)
    monkeypatch.setattr(_fork, "FORK_WAIT", 0.2)

    def child():
        try:
            lock = instance_lock(box)
        except RuntimeError as exc:
            return {"refused": str(exc)}
        got = lock.acquire(timeout=2.0)
        return {"acquired": got}

    try:
        out = _in_child(child, timeout=10.0)
    finally:
        for h in holders:
            h.__exit__(None, None, None)
    assert out != "deadlock" and "ok" in out, out
    assert "refused" in out["ok"], out  # (was: {'acquired': False} -- the child would block forever)
    assert "was inherited by a fork" in out["ok"]["refused"]


def test_a_ledger_opened_on_a_file_with_records_refuses_an_older_copy_restored_before_its_first_use(tmp_path):
    """A process that opened a ledger file holding records has seen them, at the opening itself.

    The count of records seen started at 0 and was set only by a later access: a file rolled
    back to an older copy (a restored backup) between opening and the first use was taken as the
    ledger, and the releases it lost were forgotten (it was: ``record`` succeeded, the budget
    spent twice).  Now the opening counts the records too.
    """
    import shutil

    from sklearn_bayes.privacy import PrivacyLedger

    path = tmp_path / "budget.ledger"
    writer = PrivacyLedger(budget=(1.0, 0.0), path=path)
    shutil.copyfile(path, tmp_path / "backup")  # same ledger id, nothing spent
    writer.record("release", 1.0)  # the budget is spent
    reader = PrivacyLedger(path=path)  # opens the file holding that release
    shutil.copyfile(tmp_path / "backup", path)
    with pytest.raises(ValueError, match="path=.*fewer records"):
        reader.record("release", 1.0)
    assert PrivacyLedger(path=path).n_releases == 0  # nothing was recorded in the restored copy
