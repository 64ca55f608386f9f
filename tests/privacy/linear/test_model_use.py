"""An experienced scikit-learn user's review of the private linear models (task HQI).

Model selection with a shared ledger, public labels for the private classifier, pandas input,
errors that name the argument and print no data value.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score

from sklearn_bayes.privacy import (
    AdaOPSRegressor,
    DPSGLDLogisticRegression,
    OnePosteriorSampleRidge,
    PrivacyLedger,
)
from tests.privacy.linear._data import bounded_regression




def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _sgld(**kw):
    return DPSGLDLogisticRegression(x_bound=2.0, n_iter=30, n_draws=3, random_state=0, **kw)


# ------------------------------------------------------------------ model selection and a shared ledger


def test_grid_search_charges_every_fit_and_the_refit_to_the_shared_ledger():
    """GridSearchCV clones the estimator; the clones share the ledger (clone shares, never copies it), so
    every fold's fit and the refit are recorded: 2 candidates x 3 folds + 1 refit, the total their sum."""
    X, y = bounded_regression()
    ledger = PrivacyLedger()
    grid = {"epsilon": [0.5, 1.0]}
    search = GridSearchCV(AdaOPSRegressor(x_bound=2.0, y_bound=2.0, ledger=ledger), grid, cv=3)
    _quiet(search.fit, X, y)
    assert ledger.n_releases == 2 * 3 + 1
    best = search.best_params_["epsilon"]
    assert ledger.epsilon_spent == pytest.approx(3 * 0.5 + 3 * 1.0 + best, rel=1e-12)
    assert search.best_estimator_.ledger is ledger and search.best_estimator_.epsilon_spent_ == best


def test_cross_val_score_over_a_budgeted_ledger_stops_at_the_budget():
    """A budget smaller than the folds' total: the folds beyond it are refused (scored as errors by
    scikit-learn), nothing beyond the budget is recorded, and the refused folds charge nothing."""
    X, y = bounded_regression()
    ledger = PrivacyLedger(budget=(2.0, 1e-3))
    est = OnePosteriorSampleRidge(epsilon=1.0, ridge_lambda=500.0, x_bound=2.0, y_bound=2.0, ledger=ledger)
    scores = _quiet(cross_val_score, est, X, y, cv=3, error_score=np.nan)
    assert np.isfinite(scores).sum() == 2 and np.isnan(scores).sum() == 1
    assert ledger.n_releases == 2 and ledger.epsilon_spent == pytest.approx(2.0)


def test_clone_of_a_fitted_estimator_keeps_the_ledger_and_refits_into_it():
    X, y = bounded_regression()
    ledger = PrivacyLedger()
    est = _quiet(AdaOPSRegressor(x_bound=2.0, y_bound=2.0, ledger=ledger).fit, X, y)
    twin = clone(est)
    assert twin.ledger is ledger and not hasattr(twin, "coef_")
    _quiet(twin.fit, X, y)
    assert ledger.n_releases == 2 and ledger.epsilon_spent == pytest.approx(2.0)


# ------------------------------------------------------------------ pandas input


@pytest.mark.parametrize(
    "make",
    [
        lambda: OnePosteriorSampleRidge(ridge_lambda=500.0, x_bound=2.0, y_bound=2.0, random_state=0),
        lambda: AdaOPSRegressor(x_bound=2.0, y_bound=2.0, random_state=0),
    ],
)
def test_pandas_feature_names_are_kept_and_checked(make):
    X, y = bounded_regression()
    df = pd.DataFrame(X, columns=["age", "income", "score"])
    est = _quiet(make().fit, df, pd.Series(y, name="target"))
    assert list(est.feature_names_in_) == ["age", "income", "score"]
    # a DataFrame converts to a Fortran-ordered array: the 3-term dot product may round in another
    # order (a few ulps of the largest term)
    scale = np.abs(X).sum(1).max() * np.abs(est.coef_).max() + abs(est.intercept_)
    np.testing.assert_allclose(est.predict(df), _quiet(est.predict, X), rtol=0, atol=8 * np.finfo(float).eps * scale)
    assert np.isfinite(est.score(df, y))  # RegressorMixin.score: post-processing of the release
    with pytest.raises(ValueError, match="feature names"):
        est.predict(df.rename(columns={"age": "height"}))
    with pytest.warns(UserWarning, match="valid feature names"):  # scikit-learn's own convention
        est.predict(X)


# ------------------------------------------------------------------ public labels of the private classifier


def test_dpsgld_with_public_classes_releases_on_one_class_data_and_publishes_only_them():
    """With ``classes`` (public labels) the label set is not read from the data: a data set whose
    records all have one label is fitted and charged like any other (without ``classes`` this is a
    refusal, and whether ``fit`` refuses tells the neighbours -- one positive record or none -- apart
    with certainty); ``classes_`` is the public labels, whatever the data hold."""
    X, _ = bounded_regression()
    y = np.zeros(X.shape[0], dtype=int)
    y_neighbour = y.copy()
    y_neighbour[0] = 1
    for labels in (y, y_neighbour):
        est = _quiet(_sgld(classes=[0, 1]).fit, X, labels)
        np.testing.assert_array_equal(est.classes_, [0, 1])
        assert est.epsilon_spent_ <= 1.0 and len(est.ledger_.records) == 1
        assert set(est.predict(X)) <= {0, 1}


def test_dpsgld_classes_order_and_string_labels():
    X, y = bounded_regression()
    labels = np.where(y > 0, "yes", "no")
    est = _quiet(_sgld(classes=["yes", "no"]).fit, X, labels)
    np.testing.assert_array_equal(est.classes_, ["no", "yes"])  # sorted, as scikit-learn's classes_
    ref = _quiet(_sgld().fit, X, (labels == "yes").astype(int))  # the same labels as 0/1: the same fit
    np.testing.assert_array_equal(est.coef_samples_, ref.coef_samples_)


@pytest.mark.parametrize("classes", [[0], [0, 0], [0, 1, 2], [[0, 1]], "ab"])
def test_dpsgld_bad_classes_are_named(classes):
    X, y = bounded_regression()
    with pytest.raises((ValueError, TypeError), match="classes"):
        _quiet(_sgld(classes=classes).fit, X, (y > 0).astype(int))


def test_dpsgld_a_label_outside_classes_is_refused_without_printing_it():
    X, y = bounded_regression()
    labels = (y > 0).astype(int)
    labels[5] = 987654321
    est = _sgld(classes=[0, 1])
    with pytest.raises(ValueError, match="y has a label that is not in classes") as info:
        _quiet(est.fit, X, labels)
    assert "987654321" not in str(info.value)
    assert not hasattr(est, "classes_")
