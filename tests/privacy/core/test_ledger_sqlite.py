"""A PrivacyLedger in an SQLite file: shared by processes, budget kept in the file, crash-consistent."""

import os
import pickle
import signal
import sqlite3
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import sklearn_bayes
from sklearn_bayes.exceptions import BudgetExceededError, DetachedLedgerError
from sklearn_bayes.privacy import OnePosteriorSampleRidge, PrivacyLedger, PrivateCountSketch

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning")

_SRC = str(Path(sklearn_bayes.__file__).resolve().parents[1])


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([_SRC] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env


def _python(code, *args, **kw):
    """Run ``code`` in a second Python process; its stdout."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, args)], env=_env(),
                         capture_output=True, text=True, timeout=120, **kw)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    return X, X @ np.array([0.5, -0.3]) + 0.1 * rng.standard_normal(n)


def test_a_file_keeps_records_and_its_budget(tmp_path):
    path = tmp_path / "budget.sqlite"
    ledger = PrivacyLedger(budget=(1.0, 1e-5), path=path)
    assert ledger.path == str(path) and ledger.n_releases == 0 and ledger.remaining() == (1.0, 1e-5)
    ledger.record("q", 0.25, n_items=3, note="first", delta=1e-6, extra_field=[1, 2])
    ledger.record("pure", 0.5)
    again = PrivacyLedger(path=str(path))  # budget=None adopts the file's budget
    assert again.budget == (1.0, 1e-5)
    assert again.records == ledger.records
    rec = again.records[0]
    assert (rec["mechanism"], rec["epsilon"], rec["delta"], rec["n_items"], rec["note"], rec["extra_field"]) == (
        "q", 0.25, 1e-6, 3, "first", [1, 2])
    assert "delta" not in again.records[1]  # a pure-ε record has no delta, as in memory
    assert again.epsilon_spent == 0.75 and again.delta_spent == 1e-6
    with pytest.raises(BudgetExceededError, match=r"path=.*budget\.sqlite"):
        again.record("q", 0.5)
    # the budget is the file's: reopening cannot raise (or change) it
    with pytest.raises(ValueError, match=r"budget=\(2\.0, 1e-05\) differs from the budget of the ledger file"):
        PrivacyLedger(budget=(2.0, 1e-5), path=path)
    assert PrivacyLedger(budget=(1.0, 1e-5), path=path).n_releases == 2
    with pytest.raises(AttributeError):
        again.records = []
    assert "path=" in repr(again) and "budget=(1, 1e-05)" in repr(again)


def test_files_that_are_not_ledgers_are_refused(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a database, just some text that is long enough to have a header " * 10)
    with pytest.raises(ValueError, match=r"path=.*notes\.txt.*not a PrivacyLedger file"):
        PrivacyLedger(path=text)
    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(ValueError, match="SQLite database of something else"):
        PrivacyLedger(path=other)
    with pytest.raises(TypeError, match="path must be None, a str or an os.PathLike"):
        PrivacyLedger(path=3)
    with pytest.raises(OSError, match="cannot open the ledger file"):
        PrivacyLedger(path=tmp_path / "missing_dir" / "x.sqlite")
    # a ledger file deleted under a running ledger is an error, never recreated empty
    gone = PrivacyLedger(budget=(1.0, 0.0), path=tmp_path / "gone.sqlite")
    gone.record("q", 0.9)
    (tmp_path / "gone.sqlite").unlink()
    with pytest.raises(OSError, match="cannot open the ledger file"):
        gone.record("q", 0.5)
    assert not (tmp_path / "gone.sqlite").exists()


def test_pickling_a_file_ledger_pickles_its_path(tmp_path):
    ledger = PrivacyLedger(budget=(1.0, 1e-6), path=tmp_path / "l.sqlite")
    est = OnePosteriorSampleRidge(epsilon=0.5, delta=1e-9, ridge_lambda=500.0, x_bound=1.5, y_bound=1.5,
                                  random_state=0, ledger=ledger)
    copy_ = pickle.loads(pickle.dumps(est))
    assert copy_.ledger is not ledger and copy_.ledger.path == ledger.path
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no DetachedLedgerWarning, no error: the copy records into the file
        warnings.filterwarnings("ignore", category=sklearn_bayes.exceptions.SeededNoiseWarning)
        copy_.fit(X, y)
    assert ledger.n_releases == 1 and ledger.records[0]["id"] == copy_.ledger_.records[0]["id"]
    with pytest.raises(BudgetExceededError):
        est.set_params(delta=0.5).fit(X, y)  # delta 0.5 > the file's delta budget
    assert ledger.n_releases == 1 and not hasattr(est, "coef_")


@pytest.mark.slow
def test_grid_search_with_process_workers_records_every_fit_in_the_file(tmp_path):
    from sklearn.model_selection import GridSearchCV

    X, y = _data()
    ledger = PrivacyLedger(budget=(100.0, 1e-3), path=tmp_path / "grid.sqlite")
    est = OnePosteriorSampleRidge(ridge_lambda=500.0, x_bound=1.5, y_bound=1.5, ledger=ledger)
    search = GridSearchCV(est, {"epsilon": [0.5, 1.0]}, cv=3, n_jobs=2).fit(X, y)
    # 2 candidates x 3 folds in the workers + the refit in the parent: every release is in the file
    assert ledger.n_releases == 7
    assert ledger.epsilon_spent == 3 * 0.5 + 3 * 1.0 + search.best_params_["epsilon"]
    assert ledger.delta_spent == pytest.approx(7e-6, rel=1e-12)


@pytest.mark.slow
def test_grid_search_with_process_workers_and_a_memory_ledger_is_refused_naming_path():
    from sklearn.model_selection import GridSearchCV

    X, y = _data()
    ledger = PrivacyLedger()
    est = OnePosteriorSampleRidge(ridge_lambda=500.0, x_bound=1.5, y_bound=1.5, ledger=ledger)
    with pytest.raises(ValueError, match="All the 6 fits failed") as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        GridSearchCV(est, {"epsilon": [0.5, 1.0]}, cv=3, n_jobs=2).fit(X, y)
    assert "DetachedLedgerError" in str(info.value) and "PrivacyLedger(path=...)" in str(info.value)
    assert ledger.n_releases == 0  # nothing was released, nothing escaped


def test_a_budget_exhausted_in_one_process_refuses_in_another(tmp_path):
    path = tmp_path / "shared.sqlite"
    ledger = PrivacyLedger(budget=(1.0, 1e-5), path=path)
    ledger.record("curator query", 0.6, delta=1e-6)
    out = _python(
        """
        import sys
        from sklearn_bayes.exceptions import BudgetExceededError
        from sklearn_bayes.privacy import PrivacyLedger
        ledger = PrivacyLedger(path=sys.argv[1])  # the budget comes from the file
        print(ledger.budget, ledger.epsilon_spent)
        try:
            ledger.record("other session", 0.5)
        except BudgetExceededError:
            print("refused")
        ledger.record("other session", 0.4)
        print(ledger.remaining()[0])
        """,
        path,
    )
    assert out.split("\n")[:3] == ["(1.0, 1e-05) 0.6", "refused", "0.0"]
    assert ledger.epsilon_spent == 1.0 and ledger.n_releases == 2
    X, y = _data()
    est = OnePosteriorSampleRidge(epsilon=0.1, ridge_lambda=500.0, x_bound=1.5, y_bound=1.5, ledger=ledger)
    with pytest.raises(BudgetExceededError, match="remaining epsilon=0.0"):
        est.fit(X, y)


def test_two_processes_racing_cannot_overspend(tmp_path):
    """Two processes each try 8 records of 0.25 against a budget of 3: exactly 12 land in total."""
    path = tmp_path / "race.sqlite"
    PrivacyLedger(budget=(3.0, 0.0), path=path)
    code = textwrap.dedent(
        """
        import sys
        from sklearn_bayes.exceptions import BudgetExceededError
        from sklearn_bayes.privacy import PrivacyLedger
        ledger = PrivacyLedger(path=sys.argv[1])
        ok = 0
        for _ in range(8):
            try:
                ledger.record_shared("Race", "Race/q", 0.25)
                ok += 1
            except BudgetExceededError:
                pass
        print(ok)
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path)], env=_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    assert sum(int(o[0]) for o in outs) == 12
    ledger = PrivacyLedger(path=path)
    assert ledger.n_releases == 12 and ledger.epsilon_spent == 3.0


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_writer_killed_inside_its_transaction_leaves_the_file_consistent(tmp_path):
    path = tmp_path / "crash.sqlite"
    ledger = PrivacyLedger(budget=(10.0, 1e-3), path=path)
    ledger.record("before the crash", 1.0, delta=1e-6)
    code = textwrap.dedent(
        """
        import sys, time
        from sklearn_bayes.privacy import PrivacyLedger
        from sklearn_bayes.privacy._core import _ledger_sqlite

        insert = _ledger_sqlite.SQLiteStore.insert

        def insert_then_hang(self, con, records):  # inside BEGIN IMMEDIATE, after the INSERT
            insert(self, con, records)
            print("inside", flush=True)
            time.sleep(600)

        _ledger_sqlite.SQLiteStore.insert = insert_then_hang
        PrivacyLedger(path=sys.argv[1]).record("killed writer", 2.0, delta=1e-6)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "inside", proc.stderr.read()
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    reopened = PrivacyLedger(path=path)  # the killed writer's lock is gone, its transaction rolled back
    assert [r["mechanism"] for r in reopened.records] == ["before the crash"]
    assert reopened.epsilon_spent == 1.0 and reopened.budget == (10.0, 1e-3)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()
    reopened.record("after the crash", 0.5)
    assert ledger.n_releases == 2 and ledger.epsilon_spent == 1.5


def test_sketch_releases_are_charged_to_the_file_and_refused_when_exhausted(tmp_path):
    path = tmp_path / "sketch.sqlite"
    ledger = PrivacyLedger(budget=(1.5, 0.0), path=path)
    sk = PrivateCountSketch(epsilon=1.0, width=32, random_state=np.random.default_rng(0), ledger=ledger)
    sk.fit(np.arange(100) % 5).query([1])
    worker = pickle.loads(pickle.dumps(sk))  # a fork in "another process": its shared ledger is the file
    with pytest.raises(BudgetExceededError):
        worker.query([2])  # a fork is charged its history afresh: 1 + 1 > 1.5
    assert ledger.n_releases == 1
    # the copy made the original a fork too: its next release charges its history afresh, refused as well
    with pytest.raises(BudgetExceededError):
        sk.query([3])
    assert ledger.epsilon_spent == 1.0 and ledger.records[0]["stream"] == sk.stream_id_


def test_a_memory_ledger_copied_into_a_forked_process_refuses(tmp_path):
    if not hasattr(os, "fork"):
        pytest.skip("needs os.fork")
    ledger = PrivacyLedger()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child holds a copy of the parent's ledger, not the ledger
        code = 1
        try:
            ledger.record_shared("Child", "Child/q", 1.0)
        except DetachedLedgerError as exc:
            code = 0 if "path=" in str(exc) else 2
        os.write(w, bytes([code]))
        os._exit(0)
    os.close(w)
    code = os.read(r, 1)
    os.waitpid(pid, 0)
    os.close(r)
    assert code == bytes([0]) and ledger.n_releases == 0
    ledger.record_shared("Parent", "Parent/q", 1.0)  # the parent's own ledger records as always
    assert ledger.n_releases == 1
