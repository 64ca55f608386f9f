"""The SQLite file of a :class:`~sklearn_bayes.privacy.PrivacyLedger` created with ``path=...``.

One file holds one budget and every release recorded against it, by any number of
threads and processes (joblib workers, separate Python sessions).  Design:

* **One connection per operation** (opened, used, closed): nothing is shared between
  threads or inherited by a ``fork``; every process reads the file as it is now.
* **Check-and-record is one transaction** opened with ``BEGIN IMMEDIATE``: it takes the
  file's write lock *before* reading what was spent, so two writers (threads or
  processes) can never both pass the check on the same total.  Others wait up to
  ``timeout`` seconds (SQLite's busy timeout), then the release is refused with an error.
* **Crash consistency** comes from SQLite's rollback journal with ``synchronous=FULL``:
  a process killed inside a transaction leaves the file as it was before that
  transaction (the next connection rolls the hot journal back); a committed record is
  on disk.
* **The budget lives in the file**, written once when the file is created: a process
  that opens the file with another budget is refused (a budget cannot be raised by
  reopening), one that gives ``budget=None`` adopts it.  A ``budget=None`` that finds no
  ledger at ``path`` creates one without a budget and warns (``UserWarning``): if the file
  had been deleted, its spend is lost, and the new file cannot know it (review HQX F6).
* **The file is known by a random id** (``ledger_id``, 128 bits, in the ``meta`` table),
  drawn when the file is created (added, once, to a file of an older version when it is
  first opened).  Every transaction checks it, and that the file holds at least as many
  records as this store has seen (records are never deleted): a file replaced by another
  ledger, even with the same budget, or by an older copy of itself (restored from a backup)
  is refused with a ``ValueError`` naming ``path`` -- its spend would otherwise be
  forgotten.  A pickled ledger carries both (the copy in a worker checks them too).  An
  older copy is seen only by a process that saw the records it lost (at the opening or since).
"""

import fractions
import json
import os
import pathlib
import sqlite3
import time
import uuid
import warnings

from sklearn_bayes.privacy._core._decimal import decimal_sum

_FORMAT = "sklearn_bayes.PrivacyLedger/1"
#: seconds a writer waits for another one's transaction (SQLite's busy timeout)
BUSY_TIMEOUT = 60.0

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value)",
    "CREATE TABLE IF NOT EXISTS records ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " id TEXT NOT NULL UNIQUE,"
    " mechanism TEXT NOT NULL,"
    " epsilon REAL NOT NULL CHECK (epsilon >= 0),"
    " delta REAL CHECK (delta IS NULL OR (delta >= 0 AND delta <= 1)),"
    " n_items INTEGER,"
    " note TEXT NOT NULL,"
    " extra TEXT NOT NULL,"
    " created REAL NOT NULL)",
)


def _json_default(value):
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        return item()
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    raise TypeError(f"a ledger record stored in a file holds a {type(value).__name__}, which JSON cannot store.")


def _translated(store, exc):
    """The error to raise for an ``sqlite3`` error on the ledger file: named by its path, never bare.

    A lock held past the busy timeout is a :class:`TimeoutError`; a file SQLite cannot read as a
    database ("malformed", "not a database": corrupted, truncated, overwritten) a ``ValueError``;
    anything else (a read-only file, a full disk, an I/O error) an ``OSError``.
    """
    msg = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in msg or "busy" in msg):
        return TimeoutError(
            f"the ledger file path={store.path!r} stayed locked by another writer for {store.timeout:g} s "
            f"({msg}); nothing was recorded."
        )
    if not isinstance(exc, sqlite3.OperationalError) or "malformed" in msg or "not a database" in msg:
        return ValueError(
            f"path={store.path!r} is not a PrivacyLedger file, or a corrupted one ({msg}): nothing was "
            "recorded. Restore it from a backup; a ledger file cannot be repaired by this package."
        )
    return OSError(f"cannot use the ledger file path={store.path!r} ({msg}); nothing was recorded.")


class SQLiteStore:
    """The records and budget of a ledger file (see the module docstring)."""

    def __init__(self, path, budget, timeout=BUSY_TIMEOUT, create=True, ledger_id=None, seen=0):
        self.path = os.path.abspath(os.fsdecode(os.fspath(path)))  # (a bytes path as the file system decodes it)
        self.timeout = float(timeout)
        #: the file's id and the number of records this store has seen in it (checked at every
        #: transaction; None while the file is being opened)
        self.ledger_id, self.seen = None, int(seen)
        self.budget, file_id, last = self._open(budget, create)
        if ledger_id is None:  # the records in the file at the opening were seen (a pickle checks its own count)
            self.seen = max(self.seen, last)
        if ledger_id is not None and ledger_id != file_id:
            raise self._impostor(file_id, ledger_id)
        self.ledger_id = file_id
        if ledger_id is not None:  # a pickled ledger: check what its writer saw
            with self.transaction(immediate=False):
                pass

    def _impostor(self, found, expected):
        return ValueError(
            f"the ledger file path={self.path!r} is another ledger (id {found}) than the one this PrivacyLedger "
            f"opened (id {expected}): the file was replaced, so the releases recorded in the original would be "
            "forgotten. Nothing was recorded or released. Restore the original file."
        )

    def check_identity(self, con):
        """Inside a transaction: refuse a file that is not the one opened, or that lost records."""
        if self.ledger_id is None:
            return
        found, last = con.execute(
            "SELECT (SELECT value FROM meta WHERE key = 'ledger_id'), (SELECT MAX(seq) FROM records)").fetchone()
        if found != self.ledger_id:
            raise self._impostor(found, self.ledger_id)
        last = int(last or 0)
        if last < self.seen:
            raise ValueError(
                f"the ledger file path={self.path!r} holds fewer records ({last}) than this PrivacyLedger has seen "
                f"in it ({self.seen}): it was replaced by an older copy (a backup?), which forgets the releases "
                "recorded since. Nothing was recorded or released. Restore the current file."
            )
        self.seen = last

    # ------------------------------------------------------------------ plumbing
    def _connect(self, create=False):
        # after the file was created, "rw": a ledger file deleted under a running ledger is an
        # error, never silently recreated empty (with its budget forgotten)
        uri = pathlib.Path(self.path).as_uri() + ("?mode=rwc" if create else "?mode=rw")
        try:
            con = sqlite3.connect(uri, uri=True, timeout=self.timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise OSError(f"cannot open the ledger file path={self.path!r}: {exc}") from None
        try:
            con.execute("PRAGMA synchronous=FULL")  # (reads the file: locked or corrupt shows here first)
        except sqlite3.Error as exc:
            con.close()
            raise _translated(self, exc) from None
        return con

    def transaction(self, immediate=True, create=False):
        """A context manager: one connection, one transaction (``BEGIN IMMEDIATE`` to write)."""
        return _Transaction(self, immediate, create)

    def _open(self, budget, create=True):
        try:
            return self._open_checked(budget, create)
        except sqlite3.Error as exc:  # (the transaction translates its own errors)
            raise _translated(self, exc) from None

    def _open_checked(self, budget, create):
        # create=False (a pickled ledger reopening its file): the file must hold the ledger; a
        # missing one is an error of the connection, an empty one is refused here -- never a new,
        # empty ledger whose budget would start again from nothing
        with self.transaction(create=create) as con:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not create and "meta" not in tables:
                raise ValueError(
                    f"path={self.path!r} does not hold the ledger this PrivacyLedger was pickled with (the file "
                    "is empty or was replaced): a pickled ledger reopens its file, it never starts a new one."
                )
            if tables and "meta" not in tables:
                raise ValueError(
                    f"path={self.path!r} is an SQLite database of something else (tables {sorted(tables)}), "
                    "not a PrivacyLedger file."
                )
            for stmt in _SCHEMA:
                con.execute(stmt)
            meta = dict(con.execute("SELECT key, value FROM meta"))
            if not meta:
                if budget is None:
                    # review HQX F6: a deleted file reopened with budget=None (to adopt its budget) would
                    # silently become a new ledger without a budget, its spend forgotten
                    warnings.warn(
                        f"path={self.path!r} held no ledger: a new ledger file WITHOUT a budget was created. If "
                        "this ledger's file was deleted or moved, its recorded spend is lost; pass budget=(epsilon, "
                        "delta) to create a ledger with a budget.",
                        UserWarning,
                        stacklevel=5,
                    )
                eps, delta = budget if budget is not None else (None, None)
                ledger_id = uuid.uuid4().hex
                con.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [("format", _FORMAT), ("budget_epsilon", eps), ("budget_delta", delta),
                     ("created", time.time()), ("ledger_id", ledger_id)],
                )
                return budget, ledger_id, 0
            if meta.get("format") != _FORMAT:
                raise ValueError(f"path={self.path!r} is not a PrivacyLedger file of format {_FORMAT!r}.")
            stored = None if meta.get("budget_epsilon") is None else (
                float(meta["budget_epsilon"]), float(meta["budget_delta"]))
            if budget is not None and budget != stored:
                raise ValueError(
                    f"budget={budget!r} differs from the budget of the ledger file path={self.path!r}, "
                    f"{stored!r}, fixed when the file was created: a budget cannot be changed by reopening "
                    "its file. Open it with budget=None (or the same budget)."
                )
            ledger_id = meta.get("ledger_id")
            if not isinstance(ledger_id, str) or not ledger_id:  # a file of an older version: give it its id
                ledger_id = uuid.uuid4().hex
                con.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('ledger_id', ?)", (ledger_id,))
            last = con.execute("SELECT MAX(seq) FROM records").fetchone()[0]
            return stored, ledger_id, int(last or 0)

    # ------------------------------------------------------------------ reads
    @staticmethod
    def _row_to_record(row):
        rid, mechanism, epsilon, delta, n_items, note, extra = row
        rec = {"mechanism": mechanism, "epsilon": float(epsilon), "n_items": n_items, "note": note}
        rec.update(json.loads(extra))
        if delta is not None:
            rec["delta"] = float(delta)
        rec["id"] = rid
        return rec

    def records(self):
        with self.transaction(immediate=False) as con:
            rows = con.execute(
                "SELECT id, mechanism, epsilon, delta, n_items, note, extra FROM records ORDER BY seq"
            ).fetchall()
        return [self._row_to_record(r) for r in rows]

    def count(self):
        with self.transaction(immediate=False) as con:
            return int(con.execute("SELECT COUNT(*) FROM records").fetchone()[0])

    def spent(self, con, write=False):
        """The exact totals ``(Σ ε_i, Σ δ_i)`` (Fractions) of the records, inside the caller's transaction.

        Kept in the ``meta`` table (``spent_epsilon``, ``spent_delta`` as exact ``"p/q"``
        fractions, and ``spent_seq``, the last record they cover), updated by :meth:`insert`
        and :meth:`settle` in the transaction that changes the records, so a read or a budget
        check does not sum every record.  Totals that do not cover the last record (a file
        written before they were kept) are recomputed from the records (the exact rule of
        the ledger, :func:`decimal_sum`) and, with ``write=True`` (a write transaction), stored.
        """
        meta = dict(con.execute(
            "SELECT key, value FROM meta WHERE key IN ('spent_epsilon', 'spent_delta', 'spent_seq')"))
        last = con.execute("SELECT MAX(seq) FROM records").fetchone()[0] or 0
        if len(meta) == 3 and meta["spent_seq"] == last:
            try:
                totals = fractions.Fraction(meta["spent_epsilon"]), fractions.Fraction(meta["spent_delta"])
            except (TypeError, ValueError, ZeroDivisionError):
                totals = None
            if totals is not None and totals[0] >= 0 and totals[1] >= 0:  # else: not kept by us, recompute
                return totals
        rows = con.execute("SELECT epsilon, delta FROM records").fetchall()
        totals = decimal_sum(r[0] for r in rows), decimal_sum(r[1] or 0.0 for r in rows)
        if write:
            self.write_totals(con, totals)
        return totals

    @staticmethod
    def write_totals(con, totals):
        """Store the exact ``totals`` of the records as they are now (see :meth:`spent`)."""
        last = con.execute("SELECT MAX(seq) FROM records").fetchone()[0] or 0
        con.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [("spent_epsilon", str(totals[0])), ("spent_delta", str(totals[1])), ("spent_seq", int(last))],
        )

    # ------------------------------------------------------------------ writes
    @staticmethod
    def _row(rec):
        rec = dict(rec)
        rid, mechanism, epsilon, note = rec.pop("id"), rec.pop("mechanism"), rec.pop("epsilon"), rec.pop("note")
        n_items, delta = rec.pop("n_items"), rec.pop("delta", None)
        if n_items is not None:
            n_items = int(n_items)
        extra = json.dumps(rec, default=_json_default, allow_nan=False, sort_keys=True)
        return (str(rid), str(mechanism), float(epsilon), None if delta is None else float(delta), n_items,
                str(note), extra, time.time())

    def insert(self, con, records):
        """Insert ``records`` inside the caller's transaction (check done by the caller).

        The caller then stores the new totals (:meth:`write_totals`) in the same transaction.
        """
        con.executemany(
            "INSERT INTO records (id, mechanism, epsilon, delta, n_items, note, extra, created) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [self._row(r) for r in records],
        )

    def settle(self, con, rid, epsilon, delta, note):
        """Lower a reserved record to the amounts actually spent and set its note."""
        row = con.execute("SELECT epsilon, delta FROM records WHERE id = ?", (rid,)).fetchone()
        if row is None:
            raise KeyError(rid)
        if epsilon > row[0] or (delta or 0.0) > (row[1] or 0.0):
            raise ValueError("a reserved record can only be lowered.")
        eps_total, delta_total = self.spent(con, write=True)
        con.execute(
            "UPDATE records SET epsilon = ?, delta = ?, note = ? WHERE id = ?",
            (float(epsilon), None if delta is None else float(delta), str(note), rid),
        )
        self.write_totals(con, (
            eps_total - decimal_sum([row[0]]) + decimal_sum([epsilon]),
            delta_total - decimal_sum([row[1] or 0.0]) + decimal_sum([delta or 0.0]),
        ))


class _Transaction:
    def __init__(self, store, immediate, create):
        self.store, self.immediate, self.create = store, immediate, create

    def __enter__(self):
        self.con = self.store._connect(self.create)
        try:
            self.con.execute("BEGIN IMMEDIATE" if self.immediate else "BEGIN")
            self.store.check_identity(self.con)
        except BaseException as exc:
            if self.con.in_transaction:
                self.con.execute("ROLLBACK")
            self.con.close()
            if isinstance(exc, sqlite3.Error):
                raise _translated(self.store, exc) from None
            raise
        return self.con

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                try:
                    last = self.con.execute("SELECT MAX(seq) FROM records").fetchone()[0] if self.immediate else None
                    self.con.execute("COMMIT")
                except sqlite3.Error as commit_exc:  # (rolled back by SQLite)
                    raise _translated(self.store, commit_exc) from None
                if last is not None and self.store.ledger_id is not None:  # what this write left in the file
                    self.store.seen = max(self.store.seen, int(last))
            elif self.con.in_transaction:
                try:
                    self.con.execute("ROLLBACK")
                except sqlite3.Error:  # the transaction's own error is the one to report
                    pass
        finally:
            self.con.close()
        if exc_type is not None and issubclass(exc_type, sqlite3.Error):
            raise _translated(self.store, exc) from None  # replaces the bare sqlite3 error
        return False

