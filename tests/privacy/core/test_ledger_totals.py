"""The running exact totals of PrivacyLedger (task HF1).

The ledger used to re-add every record (exact fractions) at each record and each read of
``epsilon_spent``: quadratic in the number of releases.  It now keeps the exact totals up to
date where records change.  These tests check that nothing else changed: the totals equal the
sum recomputed from the records, exactly (Fraction equality), through appends, settles, forwarded
records of snapshots, replaced records, pickles, compositions, threads and files; and budget
refusals are those of the recomputed sums.  (Speed: ``benchmarks/bench_ledger.py``.)
"""

import pickle
import sqlite3
import threading

import numpy as np
import pytest

from sklearn_bayes.exceptions import BudgetExceededError
from sklearn_bayes.privacy import PrivacyLedger
from sklearn_bayes.privacy._core._accounting import _decimal_sum, _record_amounts


def _random_amounts(rng, n):
    """Decimals of 1 to 17 significant digits over 1e-300 .. 1e2 (and some zeros)."""
    mags = 10.0 ** rng.uniform(-300, 2, n)
    digits = rng.integers(1, 18, n)
    out = [float(f"{m:.{int(d)}g}") for m, d in zip(mags, digits)]
    for i in rng.choice(n, n // 20, replace=False):
        out[i] = 0.0
    return out


def _assert_exact(ledger):
    assert ledger._exact_totals() == _record_amounts(ledger.records)


@pytest.mark.parametrize("budget", [None, (1e9, 1.0)])
def test_the_running_totals_equal_the_sum_recomputed_from_the_records(budget):
    rng = np.random.default_rng(0)
    ledger = PrivacyLedger(budget=budget)
    eps, deltas = _random_amounts(rng, 3000), _random_amounts(rng, 3000)
    for i, (e, d) in enumerate(zip(eps, deltas)):
        if i % 3 == 0:
            ledger.record("q", e)  # no delta
        elif i % 3 == 1:
            ledger.record("q", e, delta=min(d, 1e-3))
        else:  # a reservation, then settled lower (as the linear models do)
            target, (rid,) = ledger._reserve("Est", [("Est/fit", e, min(d, 1e-3))])
            target._settle(rid, e * rng.uniform(), min(d, 1e-3) * rng.uniform(), "settled")
        if i % 250 == 0:
            _assert_exact(ledger)
    _assert_exact(ledger)
    assert ledger.epsilon_spent == float(_decimal_sum(r["epsilon"] for r in ledger.records))
    copy = pickle.loads(pickle.dumps(ledger))
    _assert_exact(copy)
    assert copy._exact_totals() == ledger._exact_totals()


def test_replaced_records_and_compositions_have_exact_totals():
    rng = np.random.default_rng(1)
    a, b = PrivacyLedger(), PrivacyLedger()
    for e in _random_amounts(rng, 200):
        a.record("q", e, delta=e % 1e-3)
    b.records = a.records[:120]  # the per-stream ledger of a loaded sketch
    _assert_exact(b)
    b.record("q", 0.1)
    fork = pickle.loads(pickle.dumps(b))
    fork.record("q", 0.7)
    both = PrivacyLedger.compose(a, b, fork)
    _assert_exact(both)
    assert len(both.records) == 200 + 2  # the common history once


def test_a_snapshot_counts_its_forwarded_records_as_settled_in_the_original():
    """A pickled copy forwards its shared records to its live original and keeps the same dicts:
    a settle in the original changes both ledgers' totals (two settles of one record in order)."""
    original = PrivacyLedger(budget=(10.0, 1e-3))
    original.record("before", 0.3)
    snap = pickle.loads(pickle.dumps(original))
    rids = []
    for e in [1.0, 0.5, 0.25]:
        target, (rid,) = snap._reserve("Est", [("Est/fit", e, 1e-6)])
        assert target is original
        rids.append(rid)
    original._settle(rids[0], 0.4, 1e-7, "settled")
    original._settle(rids[0], 0.1, 0.0, "settled again")
    original._settle(rids[2], 0.0, 0.0, "nothing released")
    for ledger in (original, snap):
        _assert_exact(ledger)
    assert original.epsilon_spent == 0.9 and snap.epsilon_spent == 0.9  # 0.3 + 0.1 + 0.5 + 0


def test_threads_recording_keep_the_totals_exact():
    ledger = PrivacyLedger(budget=(1e6, 1.0))
    amounts = _random_amounts(np.random.default_rng(2), 800)
    barrier = threading.Barrier(8)

    def run(i):
        barrier.wait()
        for e in amounts[i::8]:
            ledger.record("q", e, delta=1e-9)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ledger.n_releases == 800
    _assert_exact(ledger)


def _reference_refuses(spent_eps, spent_delta, eps, delta, budget):
    """The rule before the running totals: recompute the exact sums, compare with the budget."""
    return (_decimal_sum(spent_eps + [eps]) > _decimal_sum([budget[0]])
            or _decimal_sum(spent_delta + [delta]) > _decimal_sum([budget[1]]))


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_budget_refusals_are_those_of_the_recomputed_sums(kind, tmp_path):
    """Random releases against a budget, many of them landing exactly on it (decimal amounts
    that sum to the budget exactly, where a binary sum would be off by an ulp)."""
    rng = np.random.default_rng(3)
    budget = (1.2, 1e-5)
    ledger = PrivacyLedger(budget=budget, path=tmp_path / "l.sqlite" if kind == "file" else None)
    spent_eps, spent_delta = [], []
    n = 120 if kind == "file" else 600
    for _ in range(n):
        eps = float(rng.choice([0.1, 0.4, 0.2, 0.3, 0.05, 1e-17, 0.0]))
        delta = float(rng.choice([0.0, 1e-6, 2e-6, 3e-7]))
        refuse = _reference_refuses(spent_eps, spent_delta, eps, delta, budget)
        if refuse:
            with pytest.raises(BudgetExceededError):
                ledger.record("q", eps, delta=delta)
        else:
            ledger.record("q", eps, delta=delta)
            spent_eps.append(eps)
            spent_delta.append(delta)
        if rng.uniform() < 0.02:  # start again under a fresh budget (a new ledger)
            ledger = PrivacyLedger(budget=budget, path=tmp_path / f"l{_}.sqlite" if kind == "file" else None)
            spent_eps, spent_delta = [], []
    _assert_exact(ledger)
    # the classic boundaries: three 0.4 fill 1.2 exactly, ten 0.1 fill 1.0 exactly
    for amount, count, cap in [(0.4, 3, 1.2), (0.1, 10, 1.0)]:
        led = PrivacyLedger(budget=(cap, 0.0))
        for _ in range(count):
            led.record("q", amount)
        assert led.remaining() == (0.0, 0.0)
        with pytest.raises(BudgetExceededError):
            led.record("q", 1e-300)


def test_a_file_recomputes_totals_it_did_not_keep(tmp_path):
    """Records written without the totals (a file of an earlier version, or records inserted by
    another writer) are summed from the records; the next write stores the totals again."""
    path = tmp_path / "old.sqlite"
    ledger = PrivacyLedger(budget=(2.0, 0.0), path=path)
    for e in [0.1, 0.2, 0.3]:
        ledger.record("q", e)
    con = sqlite3.connect(path)
    con.execute("DELETE FROM meta WHERE key LIKE 'spent_%'")  # as written by an earlier version
    con.commit()
    assert ledger.epsilon_spent == 0.6
    con.execute("INSERT INTO records (id, mechanism, epsilon, delta, n_items, note, extra, created) "
                "VALUES ('x', 'q', 0.7, NULL, NULL, '', '{}', 0)")  # a writer that keeps no totals
    con.commit()
    con.close()
    _assert_exact(ledger)
    assert ledger.epsilon_spent == 1.3
    with pytest.raises(BudgetExceededError):
        ledger.record("q", 0.75)
    ledger.record("q", 0.7)
    assert ledger.remaining() == (0.0, 0.0)
    _assert_exact(PrivacyLedger(path=path))
    target, (rid,) = ledger._reserve("Est", [("Est/fit", 0.0, 0.0)])
    target._settle(rid, 0.0, 0.0, "settled")
    _assert_exact(ledger)
