"""A sketch inherited by a ``fork()``-ed process is a copy (task HQH).

Before the fix the child held the parent's generator *in its state* and was not marked as a
fork: with ``random_state=None`` the two processes drew the same noise, so after consuming
different elements their answers differed by exactly the difference of their counts, and the
child's first query set was charged nothing to a shared ledger file (use-and-keep had already
charged ε in the parent).  Now the child is a copy like an unpickled one: a fresh generator
from the operating system (a seeded stream replays and warns), charged afresh.
"""

import os
import warnings

import numpy as np
import pytest

from sklearn_bayes.exceptions import SeededNoiseWarning
from sklearn_bayes.privacy import PrivacyLedger, PrivateCountSketch
from tests.privacy._fork_tools import in_child as _in_child

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

ITEMS = list(range(40))


def test_a_forked_child_draws_fresh_noise_and_is_charged_afresh(tmp_path):
    ledger = PrivacyLedger(path=tmp_path / "budget.ledger")
    sketch = PrivateCountSketch(width=64, ledger=ledger).fit(np.arange(50))
    sketch.query([1])
    assert ledger.epsilon_spent == 1.0

    def child():
        sketch.partial_fit([3] * 10)
        return {"answers": sketch.query(ITEMS).tolist(), "spent": sketch.epsilon_spent_}

    out = _in_child(child)
    answers = sketch.query(ITEMS)
    diff = np.asarray(out["answers"]) - answers
    # replayed noise: the answers differ by exactly the counts' difference (10 for item 3, else 0)
    exact = np.where(np.asarray(ITEMS) == 3, 10.0, 0.0)
    assert np.sum(diff == exact) < len(ITEMS)  # (was: all 40)
    # the child's first release is a new fork's: ε again in the shared file (was: 1.0 in total)
    assert out["spent"] == 2.0  # its ledger_: the common history plus its own charge
    assert ledger.epsilon_spent == 2.0
    assert sketch.epsilon_spent_ == 1.0  # the parent is the original: not marked (cf. another process)


def test_a_forked_child_with_an_exhausted_budget_is_refused(tmp_path):
    ledger = PrivacyLedger(budget=(1.0, 0.0), path=tmp_path / "budget.ledger")
    sketch = PrivateCountSketch(width=64, ledger=ledger).fit(np.arange(50))
    sketch.query([1])

    def child():
        try:
            sketch.query(ITEMS)
        except Exception as exc:  # the budget refuses the child's new fork
            return {"refused": type(exc).__name__, "n_query_sets": sketch.n_query_sets_}
        return {"refused": None}

    out = _in_child(child)
    assert out == {"refused": "BudgetExceededError", "n_query_sets": 1}
    assert ledger.n_releases == 1
    sketch.query([2])  # the parent goes on (use-and-keep: nothing more to charge)
    assert ledger.epsilon_spent == 1.0


def test_a_forked_child_of_a_seeded_sketch_replays_and_warns():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        sketch = PrivateCountSketch(width=64, random_state=np.random.default_rng(3)).fit(np.arange(50))
        sketch.query([1])

    def child():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            answers = sketch.query(ITEMS).tolist()
            sketch.query(ITEMS)
        seeded = [w for w in caught if issubclass(w.category, SeededNoiseWarning)]
        return {"answers": answers, "warnings": len(seeded), "spent": sketch.epsilon_spent_}

    out = _in_child(child)
    assert out["warnings"] == 1 and out["spent"] == 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the parent is not a copy: it does not warn
        assert out["answers"] == sketch.query(ITEMS).tolist()  # seeded: reproducible (replayed)
