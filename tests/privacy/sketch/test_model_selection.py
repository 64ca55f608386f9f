"""A scikit-learn user's expectations of the sketch in model selection (task HQH).

Every fit of a pipeline holding a sketch bound to a shared ledger is a new stream charged to that
ledger (use-and-keep: ε at its first query set, nothing at the next); a budget stops the search
at its edge and is never exceeded; ``clone`` gives an unfitted sketch that charges the same
ledger; ``get_params``/``set_params`` and pickle round trips never reset the spent budget.
"""

import math
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline

from sklearn_bayes.exceptions import BudgetExceededError
from sklearn_bayes.privacy import PrivacyLedger, PrivateCountSketch

rng = np.random.default_rng(0)
X = rng.integers(0, 20, size=(300, 1))
y = (X[:, 0] % 2 == 0).astype(int)


def _pipe(ledger, **params):
    return make_pipeline(PrivateCountSketch(width=64, ledger=ledger, **params), LogisticRegression())


def test_cross_val_score_charges_every_fit_once():
    ledger = PrivacyLedger()
    cross_val_score(_pipe(ledger), X, y, cv=3)
    streams = {r["stream"] for r in ledger.records}
    assert len(streams) == 3 and ledger.n_releases == 6  # per fit: the training and the test query sets
    assert ledger.epsilon_spent == 3.0


def test_grid_search_charges_every_candidate_fold_and_the_refit():
    ledger = PrivacyLedger()
    GridSearchCV(_pipe(ledger), {"privatecountsketch__depth": [3, 5]}, cv=3).fit(X, y)
    assert len({r["stream"] for r in ledger.records}) == 7 and ledger.epsilon_spent == 7.0


def test_a_budget_stops_the_search_and_is_never_exceeded():
    ledger = PrivacyLedger(budget=(3.0, 0.0))
    with pytest.raises(BudgetExceededError):
        GridSearchCV(_pipe(ledger), {"privatecountsketch__depth": [3, 5]}, cv=3, error_score="raise").fit(X, y)
    assert ledger.epsilon_spent == 3.0
    with pytest.raises(ValueError, match="All the 3 fits failed(.|\n)*would exceed the budget"):
        cross_val_score(_pipe(ledger), X, y, cv=3, error_score=np.nan)  # (sklearn: every fit failed)
    assert ledger.epsilon_spent == 3.0


def test_a_clone_is_unfitted_and_charges_the_shared_ledger():
    ledger = PrivacyLedger()
    sk = PrivateCountSketch(width=64, ledger=ledger).fit(X)
    sk.query([[1]])
    twin = clone(sk)
    assert twin.ledger is ledger and not hasattr(twin, "ledger_")
    twin.fit(X).query([[1]])
    assert ledger.epsilon_spent == 2.0 and sk.epsilon_spent_ == 1.0 and twin.epsilon_spent_ == 1.0


def test_params_and_pickle_round_trips_keep_the_spent_budget():
    ledger = PrivacyLedger()
    sk = PrivateCountSketch(width=64, ledger=ledger).fit(X)
    sk.query([[1]])
    own = sk.ledger_
    sk.set_params(**sk.get_params())
    assert sk.ledger_ is own and sk.epsilon_spent_ == 1.0
    sk.query([[2]])  # the same stream: nothing more to charge
    assert ledger.epsilon_spent == 1.0
    copy = pickle.loads(pickle.dumps(sk))
    assert copy.epsilon_spent_ == 1.0 and copy.n_query_sets_ == 2
    copy.query([[3]])  # a fork: charged afresh, to the shared ledger too
    assert copy.epsilon_spent_ == 2.0 and ledger.epsilon_spent == 2.0
    assert not math.isnan(sk.epsilon_spent_)
