"""A ledger file is known by a random id, checked on every access (task HQK, hole 2a).

Before the fix a ``PrivacyLedger(path=...)`` was its path: a file replaced by another ledger
file with the same budget (a fresh one, or an older copy restored from a backup) was read and
recorded into as if it were the same ledger, so everything spent so far was forgotten and the
budget could be spent again.  Now the file holds a random ``ledger_id`` (written when it is
created; added to a file of an older version when it is first opened) and the number of records
this process has seen: every access checks both and refuses, with a ``ValueError`` naming
``path``, a file that is another ledger or that lost records.
"""

import pickle
import shutil
import sqlite3

import pytest

from sklearn_bayes.privacy import PrivacyLedger


def _replace_with_fresh(path, budget):
    path.unlink()
    PrivacyLedger(budget=budget, path=path)  # another ledger at the same path, same budget, nothing spent


@pytest.mark.parametrize("call", ["record", "epsilon_spent", "records", "n_releases", "remaining"])
def test_a_file_replaced_by_another_ledger_with_the_same_budget_is_refused(tmp_path, call):
    path = tmp_path / "budget.ledger"
    ledger = PrivacyLedger(budget=(1.0, 0.0), path=path)
    ledger.record("release", 1.0)  # the budget is spent
    _replace_with_fresh(path, (1.0, 0.0))
    calls = {
        "record": lambda: ledger.record("release", 1.0),
        "epsilon_spent": lambda: ledger.epsilon_spent,
        "records": lambda: ledger.records,
        "n_releases": lambda: ledger.n_releases,
        "remaining": lambda: ledger.remaining(),
    }
    with pytest.raises(ValueError, match="path=.*another ledger"):
        calls[call]()
    assert PrivacyLedger(path=path).n_releases == 0  # nothing was recorded in the impostor


def test_a_pickled_ledger_refuses_a_file_replaced_since(tmp_path):
    path = tmp_path / "budget.ledger"
    ledger = PrivacyLedger(budget=(1.0, 0.0), path=path)
    ledger.record("release", 1.0)
    blob = pickle.dumps(ledger)  # e.g. sent to a joblib worker
    _replace_with_fresh(path, (1.0, 0.0))
    with pytest.raises(ValueError, match="path=.*another ledger"):
        pickle.loads(blob)


def test_a_file_rolled_back_to_an_older_copy_is_refused(tmp_path):
    path = tmp_path / "budget.ledger"
    ledger = PrivacyLedger(budget=(1.0, 0.0), path=path)
    shutil.copyfile(path, tmp_path / "backup")  # same ledger id, nothing spent
    ledger.record("release", 1.0)
    shutil.copyfile(tmp_path / "backup", path)
    with pytest.raises(ValueError, match="path=.*fewer records"):
        ledger.record("release", 1.0)
    with pytest.raises(ValueError, match="path=.*fewer records"):
        ledger.epsilon_spent


def test_a_pickled_ledger_remembers_the_records_it_saw(tmp_path):
    path = tmp_path / "budget.ledger"
    ledger = PrivacyLedger(budget=(1.0, 0.0), path=path)
    shutil.copyfile(path, tmp_path / "backup")
    ledger.record("release", 0.5)
    ledger.epsilon_spent  # this process saw the record
    blob = pickle.dumps(ledger)
    shutil.copyfile(tmp_path / "backup", path)
    with pytest.raises(ValueError, match="path=.*fewer records"):
        pickle.loads(blob)


def test_the_same_file_opened_twice_and_pickled_is_one_ledger(tmp_path):
    path = tmp_path / "budget.ledger"
    a = PrivacyLedger(budget=(2.0, 0.0), path=path)
    b = PrivacyLedger(path=path)
    c = pickle.loads(pickle.dumps(a))
    a.record("m", 0.5)
    b.record("m", 0.5)
    c.record("m", 0.5)
    assert a.epsilon_spent == b.epsilon_spent == c.epsilon_spent == 1.5
    assert a._store.ledger_id == b._store.ledger_id == c._store.ledger_id
    assert len(a._store.ledger_id) == 32


def test_two_ledger_files_have_different_ids(tmp_path):
    a = PrivacyLedger(path=tmp_path / "a.ledger")
    b = PrivacyLedger(path=tmp_path / "b.ledger")
    assert a._store.ledger_id != b._store.ledger_id


def test_a_file_of_an_older_version_gets_an_id_when_first_opened(tmp_path):
    path = tmp_path / "old.ledger"
    PrivacyLedger(budget=(1.0, 0.0), path=path).record("m", 0.25)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("DELETE FROM meta WHERE key = 'ledger_id'")  # as written by the previous version
    con.close()
    old = PrivacyLedger(path=path)
    assert old.epsilon_spent == 0.25 and old.budget == (1.0, 0.0)
    assert len(old._store.ledger_id) == 32
    assert PrivacyLedger(path=path)._store.ledger_id == old._store.ledger_id  # stored, not redrawn


def test_a_pickle_of_an_older_version_adopts_the_files_id(tmp_path):
    path = tmp_path / "budget.ledger"
    ledger = PrivacyLedger(budget=(1.0, 0.0), path=path)
    state = {"path": str(path), "budget": (1.0, 0.0)}  # an older version's state: no id
    copy = PrivacyLedger.__new__(PrivacyLedger)
    copy.__setstate__(state)
    copy.record("m", 0.5)
    assert ledger.epsilon_spent == 0.5
