"""The budget of a PrivacyLedger: totals, refusal before any noise, atomicity under threads."""

import copy
import math
import pickle
import threading
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_bayes.exceptions import BudgetExceededError, SeededNoiseWarning
from sklearn_bayes.privacy import (
    AdaOPSRegressor,
    DPSGLDLogisticRegression,
    OnePosteriorSampleRidge,
    PrivacyLedger,
    PrivateCountSketch,
)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning")


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    return X, X @ np.array([0.5, -0.3]) + 0.1 * rng.standard_normal(n)


def _ops(ledger, **kw):
    params = dict(ridge_lambda=500.0, x_bound=1.5, y_bound=1.5, random_state=np.random.default_rng(1), ledger=ledger)
    params.update(kw)
    return OnePosteriorSampleRidge(**params)


def test_totals_remaining_and_the_boundary():
    ledger = PrivacyLedger(budget=(1.0, 1e-5))
    assert ledger.budget == (1.0, 1e-5) and ledger.remaining() == (1.0, 1e-5)
    for _ in range(10):
        ledger.record("q", 0.1, delta=1e-6)  # ten releases of 0.1: exactly the budget (correctly rounded sums)
    assert ledger.epsilon_spent == 1.0 and ledger.delta_spent == pytest.approx(1e-5, rel=1e-15)
    assert ledger.remaining()[0] == 0.0
    with pytest.raises(BudgetExceededError, match=r"budget of this PrivacyLedger.*asks epsilon=1e-09"):
        ledger.record("q", 1e-9)
    # delta alone can exhaust a budget
    d = PrivacyLedger(budget=(math.inf, 1e-6))
    d.record("q", 5.0, delta=1e-6)
    with pytest.raises(BudgetExceededError, match="delta"):
        d.record("q", 0.0, delta=1e-12)
    d.record("q", 3.0)  # pure-ε releases still fit
    assert d.remaining() == (math.inf, 0.0) and d.n_releases == 2
    assert PrivacyLedger().remaining() == (math.inf, math.inf) and PrivacyLedger().delta_spent == 0.0


def test_amounts_add_as_the_decimals_they_print_as():
    """Was: three releases of 0.4 against a budget of 1.2 refused the third (binary sum 1.2000000000000002).

    Totals, ``remaining()`` and the refusal share one rule (exact sums of the amounts' shortest
    decimals), so what the ledger reports spent is what it compared with the budget.
    """
    ledger = PrivacyLedger(budget=(1.2, 3e-6))
    for _ in range(3):
        ledger.record("q", 0.4, delta=1e-6)
    assert ledger.epsilon_spent == 1.2 and ledger.delta_spent == 3e-6
    assert ledger.remaining() == (0.0, 0.0)
    with pytest.raises(BudgetExceededError, match=r"spent epsilon=1.2, delta=3e-06 .*remaining epsilon=0.0"):
        ledger.record("q", 5e-324)  # the smallest positive amount is still refused
    assert ledger.n_releases == 3
    odd = PrivacyLedger(budget=(1.0, 1.0))
    odd.record("q", 0.3)
    assert odd.remaining()[0] == 0.7  # not 0.7000000000000001 or 0.69999...


@pytest.mark.parametrize("budget, error, pattern", [
    (1.0, TypeError, "budget must be None or a pair"),
    ((1.0,), TypeError, "budget must be None or a pair"),
    (("1", 0.0), TypeError, "budget epsilon must be a real number"),
    ((True, 0.0), TypeError, "budget epsilon must be a real number"),
    ((-1.0, 0.0), ValueError, "budget epsilon must be >= 0"),
    ((math.nan, 0.0), ValueError, "budget epsilon must be >= 0"),
    ((1.0, 1.5), ValueError, r"budget delta must be in \[0, 1\]"),
    ((1.0, math.nan), ValueError, r"budget delta must be in \[0, 1\]"),
])
def test_bad_budgets_are_refused_naming_budget(budget, error, pattern):
    with pytest.raises(error, match=pattern):
        PrivacyLedger(budget=budget)


def test_the_budget_cannot_be_changed_and_copies_share_it():
    ledger = PrivacyLedger(budget=(1.0, 0.0))
    with pytest.raises(AttributeError):
        ledger.budget = (2.0, 0.0)
    est = _ops(ledger)
    assert clone(est).ledger is ledger and copy.deepcopy(est).ledger is ledger and copy.copy(ledger) is ledger
    with pytest.raises(ValueError, match=r"delta increment must be in \[0, 1\]"):
        ledger.record("q", 0.1, delta=2.0)
    assert ledger.n_releases == 0


def _assert_refused_unchanged(est, X, y, ledger):
    before, records = pickle.dumps(est), copy.deepcopy(ledger.records)
    with pytest.raises(BudgetExceededError) as info:
        est.fit(X, y)
    assert pickle.dumps(est) == before  # byte-identical: no attribute, no generator step
    assert ledger.records == records
    msg = str(info.value)
    assert type(est).__name__ in msg and "Nothing was released" in msg
    return msg


def test_ops_refuses_before_drawing_and_is_left_byte_identical():
    X, y = _data()
    ledger = PrivacyLedger(budget=(1.5, 1e-5))
    est = _ops(ledger).fit(X, y)
    assert ledger.records[0]["id"] == est.ledger_.records[0]["id"]  # one release, one id in both
    assert ledger.records[0]["note"].startswith("replace-one")  # the note set when the release was recorded
    msg = _assert_refused_unchanged(est, X, y, ledger)  # a fitted estimator keeps its release
    assert "remaining epsilon=0.5" in msg and str(X[0, 0]) not in msg
    fresh = _ops(ledger)
    _assert_refused_unchanged(fresh, X, y, ledger)  # an unfitted one stays unfitted
    assert not hasattr(fresh, "coef_")
    fresh.set_params(epsilon=0.5).fit(X, y)  # what remains can still be spent
    assert ledger.remaining()[0] == 0.0


def test_dpsgld_reserves_both_releases_at_once():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] > 0).astype(int)
    ledger = PrivacyLedger(budget=(0.1, 1e-5))
    # start="ops" (two releases; the default start is one): at n = 300 the exact OPS draw needs
    # n ops_fraction ε / 4 <= log 1e6, so ε = 0.2 (and 0.1)
    est = DPSGLDLogisticRegression(epsilon=0.2, x_bound=3.0, n_iter=40, n_draws=10, start="ops",
                                   random_state=np.random.default_rng(2), ledger=ledger)
    _assert_refused_unchanged(est, X, y, ledger)  # ops_start alone would fit: nothing is recorded (all or nothing)
    assert ledger.n_releases == 0
    est.set_params(epsilon=0.1).fit(X, y)
    assert [r["mechanism"] for r in ledger.records] == ["DPSGLDLogisticRegression/ops_start",
                                                       "DPSGLDLogisticRegression/dp_sgld"]
    assert [r["id"] for r in ledger.records] == [r["id"] for r in est.ledger_.records]
    assert ledger.epsilon_spent == pytest.approx(est.epsilon_spent_, rel=1e-12) and ledger.epsilon_spent <= 0.1


def test_adaops_refuses_and_binds_nothing():
    X, y = _data(2000)
    ledger = PrivacyLedger(budget=(0.5, 1e-5))
    est = AdaOPSRegressor(epsilon=1.0, x_bound=1.5, y_bound=1.5, random_state=0, ledger=ledger)
    before = pickle.dumps(est)
    with pytest.raises(BudgetExceededError):
        est.fit(X, y)
    assert pickle.dumps(est) == before and ledger.n_releases == 0
    est.set_params(epsilon=0.5).fit(X, y)
    assert ledger.epsilon_spent <= 0.5 and ledger.n_releases == est.ledger_.n_releases


def test_sketch_query_refused_by_the_budget_changes_nothing():
    ledger = PrivacyLedger(budget=(1.5, 0.0))
    sk = PrivateCountSketch(epsilon=1.0, mechanism="median_perturbation", decay=0.5, width=32,
                            random_state=np.random.default_rng(0), ledger=ledger).fit(np.arange(100) % 5)
    sk.query([1])  # 0.5
    sk.query([2])  # 0.25 more
    ledger.record("another release about the same people", 0.7)  # leaves 0.05 < 0.125
    before = pickle.dumps(sk)
    with pytest.raises(BudgetExceededError, match="PrivateCountSketch"):
        sk.query([3])
    assert pickle.dumps(sk) == before and ledger.n_releases == 3


@pytest.mark.parametrize("n_threads", [8])
def test_threads_cannot_overspend(n_threads):
    """Eight threads race to record 0.3 each against a budget of 1: exactly three succeed."""
    ledger = PrivacyLedger(budget=(1.0, 1.0))
    barrier = threading.Barrier(n_threads)
    outcomes = []

    def worker():
        barrier.wait()
        try:
            ledger.record_shared("Est", "Est/q", 0.3)
            outcomes.append(True)
        except BudgetExceededError:
            outcomes.append(False)

    threads = [threading.Thread(target=worker) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == [False] * (n_threads - 3) + [True] * 3
    assert ledger.n_releases == 3 and ledger.epsilon_spent <= 1.0


def test_threaded_fits_share_one_budget():
    X, y = _data()
    ledger = PrivacyLedger(budget=(2.0, 1.0))
    ests = [_ops(ledger, random_state=None) for _ in range(5)]
    errors = []

    def fit(est):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SeededNoiseWarning)
                est.fit(X, y)
        except BudgetExceededError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=fit, args=(e,)) for e in ests]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    fitted = [e for e in ests if hasattr(e, "coef_")]
    assert len(fitted) == 2 and len(errors) == 3 and ledger.epsilon_spent == 2.0
    assert sorted(r["id"] for r in ledger.records) == sorted(e.ledger_.records[0]["id"] for e in fitted)


def test_the_records_a_reader_gets_cannot_rewrite_the_budget():
    """Was: ``ledger.records`` was the ledger's own list of dicts: clearing it, or setting a
    record's epsilon to 0, gave the budget back."""
    ledger = PrivacyLedger(budget=(1.0, 0.0))
    ledger.record("q", 1.0)
    ledger.records.clear()
    ledger.records[:] = []
    for r in ledger.records:
        r["epsilon"] = 0.0
    assert ledger.epsilon_spent == 1.0 and ledger.n_releases == 1
    with pytest.raises(AttributeError, match="budget cannot be replaced"):
        ledger.records = []
    with pytest.raises(BudgetExceededError):
        ledger.record("q", 0.1)


@pytest.mark.parametrize("budget, refit_refused", [(1.0, False), (0.95, True)])
def test_a_search_that_runs_out_of_budget_releases_nothing_beyond_it(budget, refit_refused):
    # the privacy guide's account of GridSearchCV with error_score=nan (review HQD F5): 3 folds at epsilon 0.1 (0.3
    # spent), two at 0.3 (0.9), the third refused; the 0.3 candidate's mean score is NaN, so 0.1 is refitted if 0.1
    # remains, else the refit is refused too
    from sklearn.exceptions import FitFailedWarning
    from sklearn.model_selection import GridSearchCV

    X, y = _data()
    ledger = PrivacyLedger(budget=(budget, 1e-3))
    search = GridSearchCV(_ops(ledger), {"epsilon": [0.1, 0.3]}, cv=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if refit_refused:
            with pytest.raises(BudgetExceededError, match="would exceed the budget"):
                search.fit(X, y)
        else:
            search.fit(X, y)
    assert any(issubclass(w.category, FitFailedWarning) for w in caught)
    assert [r["epsilon"] for r in ledger.records] == [0.1] * 3 + [0.3] * 2 + ([] if refit_refused else [0.1])
    assert ledger.epsilon_spent <= budget
    if not refit_refused:
        assert search.best_params_ == {"epsilon": 0.1} and np.isnan(search.cv_results_["mean_test_score"][1])


def test_a_search_with_error_score_raise_stops_at_the_first_refusal():
    from sklearn.model_selection import GridSearchCV

    X, y = _data()
    ledger = PrivacyLedger(budget=(1.0, 1e-3))
    with pytest.raises(BudgetExceededError, match="would exceed the budget"):
        GridSearchCV(_ops(ledger), {"epsilon": [0.1, 0.3]}, cv=3, error_score="raise").fit(X, y)
    assert [r["epsilon"] for r in ledger.records] == [0.1] * 3 + [0.3] * 2
