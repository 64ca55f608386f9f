"""Cost of one release in a PrivacyLedger as the ledger grows (task HF1).

Run ``python benchmarks/bench_ledger.py [--quick]`` (about 40 s; ``--quick`` a few seconds).

One *release* is what an estimator does per query: ``record`` an increment (with a budget: the
atomic check-and-record) and read ``epsilon_spent``.  For each ledger kind (in memory without
a budget, in memory with a budget, an SQLite file with a budget) the table prints the mean time
of the releases number ``n - 100 .. n`` (ms per release, median of ``--reps`` runs) for growing
``n``, so a cost that grows with the ledger shows as a growing column.  The ``reference``
column is the exact sum of the records recomputed from scratch (what the ledger did before
HF1 at every record and every read), timed in the same process on the same records.

Amounts are random decimals with 1 to 17 significant digits, as the estimators record them.
"""

import argparse
import fractions
import os
import tempfile
import time
import warnings

import numpy as np

from sklearn_bayes.privacy import PrivacyLedger
from sklearn_bayes.privacy._core._accounting import _make_record


def _amounts(n, seed=0):
    rng = np.random.default_rng(seed)
    return [float(f"{x:.{int(p)}g}") for x, p in zip(rng.uniform(1e-4, 1e-2, n), rng.integers(1, 18, n))]


def _reference_sum(values):
    """The pre-HF1 rule: every record's repr read as an exact decimal, summed from scratch."""
    total = fractions.Fraction(0)
    for v in values:
        total += fractions.Fraction(repr(float(v)))
    return float(total)


def _time_releases(make, amounts, n, window=100):
    """ms per release of the releases ``n - window .. n`` of a fresh ledger (``make()``)."""
    ledger = make()
    # the first n - window records in one transaction (a file would take ~20 ms per fsync-ed record)
    ledger._append([_make_record("q", a, None, "", {}) for a in amounts[: n - window]])
    t0 = time.perf_counter()
    for a in amounts[n - window: n]:
        ledger.record("q", a)
        ledger.epsilon_spent
    return (time.perf_counter() - t0) / window * 1e3


def _time_reference(amounts, n, window=100):
    t0 = time.perf_counter()
    for k in range(n - window, n):
        _reference_sum(amounts[: k + 1])  # the check at record time
        _reference_sum(amounts[: k + 1])  # the read of epsilon_spent
    return (time.perf_counter() - t0) / window * 1e3


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    sizes = [250, 1000] if args.quick else [250, 1000, 2000, 4000]
    amounts = _amounts(max(sizes))
    tmp = tempfile.mkdtemp()
    counter = iter(range(10**9))

    kinds = {
        "memory": lambda: PrivacyLedger(),
        "memory+budget": lambda: PrivacyLedger(budget=(1e9, 1.0)),
        "file+budget": lambda: PrivacyLedger(budget=(1e9, 1.0), path=os.path.join(tmp, f"l{next(counter)}.sqlite")),
    }
    print(f"{'n':>6} {'reference':>10} " + " ".join(f"{k:>14}" for k in kinds) + "   (ms per release)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in sizes:
            ref = np.median([_time_reference(amounts, n) for _ in range(args.reps)])
            row = []
            for kind, make in kinds.items():
                row.append(np.median([_time_releases(make, amounts, n) for _ in range(args.reps)]))
            print(f"{n:>6} {ref:>10.3f} " + " ".join(f"{v:>14.3f}" for v in row))
    # exactness: the running total equals the sum recomputed from the records
    led = PrivacyLedger()
    for a in amounts:
        led.record("q", a)
    assert led.epsilon_spent == _reference_sum(r["epsilon"] for r in led.records)
    print(f"exact: epsilon_spent of {len(amounts)} records equals the recomputed sum ({led.epsilon_spent!r})")


if __name__ == "__main__":
    main()
