"""Shared fixtures of the mixture regressor's tests."""

import numpy as np
import pytest

import sklearn_bayes.linear_model._mixture._selection as mv
from sklearn_bayes import MixtureMEstimatorRegressor


@pytest.fixture
def unchanged_without(monkeypatch):
    """``check(name, value, X, y, flags=True, **params)``: fits the regressor (``random_state=0``, ``params``) with
    ``_selection`` as it stands and with its constant ``name`` set to ``value`` (an earlier round's rule), asserts
    bit-identical coefficients, intercept and selected loss (and ``flag_outliers`` with ``flags``), and returns the
    first fit.  The constant is restored before it returns."""

    def check(name, value, X, y, flags=True, **params):
        new = MixtureMEstimatorRegressor(random_state=0, **params).fit(X, y)
        with monkeypatch.context() as m:
            m.setattr(mv, name, value)
            old = MixtureMEstimatorRegressor(random_state=0, **params).fit(X, y)
        np.testing.assert_array_equal(new.coef_, old.coef_)
        assert new.intercept_ == old.intercept_ and new.selected_loss_ == old.selected_loss_
        if flags:
            np.testing.assert_array_equal(new.flag_outliers(X, y), old.flag_outliers(X, y))
        return new

    return check


#: the slopes of :func:`bad_leverage`'s rows
LEVERAGE_BETA = np.array([1.0, 0.0, -1.0])


def _bad_leverage_rows(n, seed, k=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X @ LEVERAGE_BETA + rng.normal(size=n)
    X[:k, 0] = 10.0 + rng.normal(size=k)
    y[:k] = X[:k] @ LEVERAGE_BETA + 2.0 * X[:k, 0]
    return X, y


@pytest.fixture
def bad_leverage():
    """``make(n, seed, k=1) -> (X, y)``: ``n`` rows, three normal slopes ``(1, 0, -1)``, N(0, 1) errors; the first
    ``k`` rows moved to ``x_1 = 10 + N(0, 1)`` with a residual of ``2 x_1`` (the error-law grid's bad leverage
    points: all on one line through the origin)."""
    return _bad_leverage_rows
