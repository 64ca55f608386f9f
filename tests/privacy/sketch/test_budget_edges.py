"""A sketch against a budget at its exact edge, from one thread or many (task HQH).

``median_perturbation`` (η = 1/2) charges ε/2, ε/4, ε/8, ... : a budget of exactly 7ε/8 admits
three query sets and refuses the fourth, whatever the number of threads racing for it, and each
refused call leaves the sketch as it was (every attribute, and the ledgers' records).
"""

import functools
import importlib.util
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

from sklearn_bayes.exceptions import BudgetExceededError
from sklearn_bayes.privacy import PrivacyLedger, PrivateCountSketch

_spec = importlib.util.spec_from_file_location("_property_tools", Path(__file__).parents[2] / "_property_tools.py")
_tools = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_tools)
run_threads, _state = _tools.run_threads, _tools._release_state


def _sketch(ledger, seed=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PrivateCountSketch(
            epsilon=1.0, depth=3, width=32, mechanism="median_perturbation", ledger=ledger,
            random_state=np.random.default_rng(seed),
        ).fit(np.arange(300) % 11)


@pytest.mark.parametrize("path", [False, True])
def test_a_budget_of_exactly_three_query_sets_admits_three(tmp_path, path):
    ledger = PrivacyLedger(budget=(0.875, 0.0), path=tmp_path / "b.ledger" if path else None)
    sk = _sketch(ledger)
    for k in range(3):
        sk.query([k, k + 1])
    assert ledger.epsilon_spent == 0.875 and ledger.remaining() == (0.0, 0.0)
    before, records = _state(sk), ledger.records
    with pytest.raises(BudgetExceededError):
        sk.query([1])
    assert _state(sk) == before and ledger.records == records and sk.n_query_sets_ == 3


@pytest.mark.parametrize("path", [False, True])
def test_threads_racing_for_the_last_query_sets_get_exactly_the_budget(tmp_path, path):
    """Eight threads, each querying once: exactly three answer, five are refused (five repetitions)."""
    for rep in range(5):
        ledger = PrivacyLedger(budget=(0.875, 0.0), path=tmp_path / f"b{rep}.ledger" if path else None)
        sk = _sketch(ledger, seed=rep)
        answered, refused = [], []
        lock = threading.Lock()

        def run(i):
            try:
                out = sk.query([i, 100 + i])
            except BudgetExceededError:
                with lock:
                    refused.append(i)
            else:
                with lock:
                    answered.append((i, out))

        run_threads(*(functools.partial(run, i) for i in range(8)))
        assert len(answered) == 3 and len(refused) == 5
        assert sk.n_query_sets_ == 3 and ledger.n_releases == 3 and len(sk.ledger_.records) == 3
        assert ledger.epsilon_spent == 0.875 and sk.epsilon_spent_ == 0.875
        amounts = sorted(r["epsilon"] for r in ledger.records)
        assert amounts == [0.125, 0.25, 0.5]  # ε(1-η)η^k, k = 0, 1, 2: nothing charged twice or skipped
