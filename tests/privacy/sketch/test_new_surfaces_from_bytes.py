"""A user's and an attacker's review of ``PrivateCountSketch.from_bytes(data, ledger=...)`` (task HQJ).

Found in HQJ, fixed in HQK: the bytes recorded only that the writer's stream was bound to a shared ledger
(flag bit 0), not which one, so ``from_bytes`` accepted any ledger: bytes whose ledger's budget is exhausted
loaded with a fresh ``PrivacyLedger`` of another file and released again.  Format version 2 writes the
ledger's id into the bytes of a bound stream (see test_format_ledger_id.py).
"""

import numpy as np
import pytest

from sklearn_bayes.exceptions import BudgetExceededError
from sklearn_bayes.privacy import PrivacyLedger, PrivateCountSketch

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning")


def _bound_bytes(ledger):
    sketch = PrivateCountSketch(width=64, ledger=ledger, random_state=0).fit(np.arange(30) % 5)
    sketch.query([1])
    return sketch.to_bytes()


def test_the_right_ledger_twice_charges_every_release_to_it():
    ledger = PrivacyLedger(budget=(10.0, 0.0))
    data = _bound_bytes(ledger)
    for seed in (1, 2):
        PrivateCountSketch.from_bytes(data, ledger=ledger, random_state=seed).query([2])
    assert ledger.n_releases == 3 and ledger.epsilon_spent == 3.0


def test_the_right_ledger_twice_stops_at_its_budget(tmp_path):
    path = tmp_path / "shared.ledger"
    data = _bound_bytes(PrivacyLedger(budget=(2.0, 0.0), path=path))
    PrivateCountSketch.from_bytes(data, ledger=PrivacyLedger(path=path), random_state=1).query([2])
    again = PrivateCountSketch.from_bytes(data, ledger=PrivacyLedger(path=path), random_state=2)
    with pytest.raises(BudgetExceededError):
        again.query([2])
    assert PrivacyLedger(path=path).epsilon_spent == 2.0


@pytest.mark.parametrize("ledger", ["/tmp/budget.ledger", 3, True])
def test_a_ledger_that_is_not_a_privacy_ledger_is_refused_naming_ledger(ledger):
    data = _bound_bytes(PrivacyLedger())
    with pytest.raises(ValueError, match="ledger"):
        PrivateCountSketch.from_bytes(data, ledger=ledger)


def test_another_ledger_than_the_writers_is_refused(tmp_path):
    data = _bound_bytes(PrivacyLedger(budget=(1.0, 0.0), path=tmp_path / "spent.ledger"))
    with pytest.raises(ValueError, match="ledger"):
        PrivateCountSketch.from_bytes(data, ledger=PrivacyLedger(budget=(5.0, 0.0), path=tmp_path / "other.ledger"))
