"""A ledger file that is locked, corrupted or tampered with (task HQH).

Before the fix a file locked by another writer raised a bare ``sqlite3.OperationalError:
database is locked`` (from the connection's first statement, before the documented
``TimeoutError`` naming ``path``), reads too; a corrupted file raised a bare
``sqlite3.DatabaseError: database disk image is malformed`` from every call; a file whose
stored running totals were set negative reported ``epsilon_spent`` -5 and a remaining budget
above the budget.  Now: ``TimeoutError`` for a lock, ``ValueError`` for a file that is not a
sound ledger, both naming ``path``; nothing is recorded or released; negative totals are
recomputed from the records.
"""

import pickle
import sqlite3
import warnings

import numpy as np
import pytest

from sklearn_bayes.privacy import PrivacyLedger, PrivateCountSketch


def _filled(path, n=20, budget=(2.0, 0.0)):
    ledger = PrivacyLedger(budget=budget, path=path)
    for _ in range(n):
        ledger.record("m", 0.01, note="x" * 1500)  # a few pages
    return ledger


@pytest.fixture
def locked(tmp_path):
    path = tmp_path / "budget.ledger"
    ledger = _filled(path)
    ledger._store.timeout = 0.05  # (the busy timeout: 60 s by default)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("BEGIN EXCLUSIVE")
    yield ledger
    con.execute("ROLLBACK")
    con.close()


def _read_or_write(ledger, call):
    """One ledger call by name; ``"reopen"`` opens its file again and records (opening reads only the meta pages)."""
    return {
        "record": lambda: ledger.record("m", 0.01),
        "epsilon_spent": lambda: ledger.epsilon_spent,
        "records": lambda: ledger.records,
        "n_releases": lambda: ledger.n_releases,
        "remaining": lambda: ledger.remaining(),
        "reopen": lambda: PrivacyLedger(path=ledger.path).record("m", 0.01),
    }[call]()


@pytest.mark.parametrize("call", ["record", "epsilon_spent", "records", "n_releases", "remaining"])
def test_a_locked_file_is_a_timeout_naming_path(locked, call):
    with pytest.raises(TimeoutError, match="path="):
        _read_or_write(locked, call)


def test_a_sketch_refused_by_a_locked_file_changes_nothing(tmp_path):
    path = tmp_path / "budget.ledger"
    ledger = _filled(path)
    sketch = PrivateCountSketch(width=64, ledger=ledger).fit(np.arange(30))
    ledger._store.timeout = 0.05
    before = pickle.dumps(sketch.__dict__["table_"]), sketch.n_query_sets_, sketch.ledger_.records
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(TimeoutError, match="path="):
            sketch.query([1, 2])
    finally:
        con.execute("ROLLBACK")
        con.close()
    assert (pickle.dumps(sketch.table_), sketch.n_query_sets_, sketch.ledger_.records) == before
    sketch.query([1, 2])  # the lock is gone: the release goes through, charged once
    assert ledger.n_releases == 21 and sketch.epsilon_spent_ == 1.0


def _corrupt(path):
    with open(path, "r+b") as f:
        f.seek(4096 * 2)
        f.write(np.random.default_rng(0).bytes(4096 * 3))


@pytest.mark.parametrize("call", ["record", "epsilon_spent", "records", "n_releases", "reopen"])
def test_a_corrupted_file_is_refused_naming_path(tmp_path, call):
    path = tmp_path / "budget.ledger"
    ledger = _filled(path)
    _corrupt(path)
    with pytest.raises(ValueError, match="path="):
        _read_or_write(ledger, call)


def test_a_truncated_file_refuses_a_sketch_release_and_the_sketch_is_unchanged(tmp_path):
    path = tmp_path / "budget.ledger"
    ledger = _filled(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sketch = PrivateCountSketch(width=64, ledger=ledger, random_state=0).fit(np.arange(30))
    with open(path, "r+b") as f:
        f.truncate(4096 * 3)
    state = pickle.dumps({k: v for k, v in vars(sketch).items() if k not in ("ledger", "_shared_ledger")})
    with pytest.raises(ValueError, match="path="):
        sketch.query([1, 2])
    assert pickle.dumps({k: v for k, v in vars(sketch).items() if k not in ("ledger", "_shared_ledger")}) == state


def test_negative_stored_totals_are_recomputed_from_the_records(tmp_path):
    path = tmp_path / "budget.ledger"
    ledger = PrivacyLedger(budget=(1.0, 0.0), path=path)
    ledger.record("m", 0.5)
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = '-5' WHERE key = 'spent_epsilon'")
    con.commit()
    con.close()
    assert ledger.epsilon_spent == 0.5 and ledger.remaining() == (0.5, 0.0)
    with pytest.raises(Exception, match="budget"):
        ledger.record("m", 0.75)
    ledger.record("m", 0.5)
    assert ledger.epsilon_spent == 1.0


def test_a_pickled_file_ledger_whose_file_is_gone_is_refused_not_recreated_empty(tmp_path):
    """Before the fix unpickling recreated an empty file with the budget: spent went from 0.9 to 0 and
    the same 0.9 could be spent again (a pickled estimator loaded after the file was deleted, moved or
    emptied)."""
    path = tmp_path / "budget.ledger"
    ledger = PrivacyLedger(budget=(1.0, 0.0), path=path)
    ledger.record("m", 0.9)
    data = pickle.dumps(ledger)
    sketch_data = pickle.dumps(PrivateCountSketch(width=32, ledger=ledger).fit([1, 2, 3]))
    path.unlink()
    with pytest.raises(OSError, match="path="):
        pickle.loads(data)
    with pytest.raises(OSError, match="path="):
        pickle.loads(sketch_data)
    assert not path.exists()
    path.write_bytes(b"")  # an emptied file
    with pytest.raises(ValueError, match="path="):
        pickle.loads(data)
    assert path.stat().st_size == 0


def test_a_bytes_path_is_the_file_it_names(tmp_path):
    """``path=b"..."`` passed the type check and then failed with an unnamed TypeError from pathlib."""
    import os

    ledger = PrivacyLedger(budget=(1.0, 0.0), path=os.fsencode(tmp_path / "b.ledger"))
    ledger.record("m", 0.5)
    assert ledger.path == str(tmp_path / "b.ledger")
    assert PrivacyLedger(path=tmp_path / "b.ledger").epsilon_spent == 0.5


def test_the_repr_of_an_unreadable_ledger_file_does_not_raise(tmp_path):
    """``repr`` (hence the repr of an estimator holding the ledger) raised the file's error."""
    path = tmp_path / "budget.ledger"
    ledger = _filled(path)
    _corrupt(path)
    assert "unreadable: ValueError" in repr(ledger) and "path=" in repr(ledger)
    text = repr(PrivateCountSketch(ledger=ledger))
    assert "unreadable" in text
