"""A user's and an attacker's review of ``DPSGLDLogisticRegression(classes=...)`` (task HQJ).

Failing input before the fix: ``classes=[None, 1]`` raised numpy's unnamed ``TypeError`` ("'<' not supported
between instances of 'int' and 'NoneType'") from sorting the labels; now a ValueError naming ``classes``.
"""

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from sklearn_bayes import DPSGLDLogisticRegression

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning")

KW = dict(x_bound=3.0, n_iter=40, n_draws=10, batch_size=30, random_state=0)


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize("classes", [[0, 1, 2], [1, 1], [[0, 1]], {0, 1}, [None, 1], [0], []])
def test_bad_classes_are_refused_naming_the_argument(classes):
    X, y = _data()
    with pytest.raises(ValueError, match="classes"):
        DPSGLDLogisticRegression(classes=classes, **KW).fit(X, y)


def test_a_label_of_y_outside_classes_is_refused_without_printing_it():
    X, y = _data()
    y = np.where(y == 1, 987654, 0)
    with pytest.raises(ValueError, match="not in classes") as info:
        DPSGLDLogisticRegression(classes=[0, 1], **KW).fit(X, y)
    assert "987654" not in str(info.value)
    with pytest.raises(ValueError, match="not in classes"):  # strings are not the integers they spell
        DPSGLDLogisticRegression(classes=["0", "1"], **KW).fit(X, _data()[1])


@pytest.mark.parametrize("classes", [[1, 0], np.array([0, 1]), (0, 1), pd.Series([1, 0]), [0.0, 1.0]])
def test_list_array_tuple_series_and_float_labels_give_the_same_fit(classes):
    X, y = _data()
    ref = DPSGLDLogisticRegression(**KW).fit(X, y)
    est = DPSGLDLogisticRegression(classes=classes, **KW).fit(X, y)
    np.testing.assert_array_equal(est.classes_, [0, 1])
    np.testing.assert_array_equal(est.coef_, ref.coef_)


def test_string_labels_and_a_single_observed_class():
    X, y = _data()
    ys = np.where(y == 1, "yes", "no")
    est = DPSGLDLogisticRegression(classes=["yes", "no"], **KW).fit(X, ys)
    np.testing.assert_array_equal(est.classes_, ["no", "yes"])
    assert set(est.predict(X)) <= {"no", "yes"}
    one = DPSGLDLogisticRegression(classes=["no", "yes"], **KW).fit(X, np.full(len(y), "yes"))
    np.testing.assert_array_equal(one.classes_, ["no", "yes"])  # the public set, not the observed one


def test_set_params_classes_after_fit_keeps_the_fitted_state_and_clone_pickle_keep_the_parameter():
    X, y = _data()
    est = DPSGLDLogisticRegression(classes=[0, 1], **KW).fit(X, y)
    proba = est.predict_proba(X[:5])
    est.set_params(classes=["a", "b"])
    np.testing.assert_array_equal(est.classes_, [0, 1])
    np.testing.assert_array_equal(est.predict_proba(X[:5]), proba)
    assert clone(est).get_params()["classes"] == ["a", "b"]
    back = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(back.classes_, [0, 1])
    np.testing.assert_array_equal(back.predict_proba(X[:5]), proba)


def test_refused_classes_charge_no_ledger_and_a_refused_refit_keeps_the_fit():
    from sklearn_bayes.privacy import PrivacyLedger

    X, y = _data()
    ledger = PrivacyLedger()
    for classes in ([0, 1, 2], [None, 1], [0, 5]):
        with pytest.raises(ValueError, match="classes"):
            DPSGLDLogisticRegression(classes=classes, ledger=ledger, **KW).fit(X, y)
    assert ledger.n_releases == 0 and ledger.epsilon_spent == 0.0
    est = DPSGLDLogisticRegression(classes=[0, 1], ledger=ledger, **KW).fit(X, y)
    spent, coef = ledger.epsilon_spent, est.coef_.copy()
    est.set_params(classes=[0, 1, 2])
    with pytest.raises(ValueError, match="classes"):
        est.fit(X, y)
    assert ledger.epsilon_spent == spent
    np.testing.assert_array_equal(est.coef_, coef)
    np.testing.assert_array_equal(est.classes_, [0, 1])
