"""A refit paused half-way, for the tests of what another thread sees meanwhile (H30S, HQL)."""

import threading

import numpy as np

from sklearn_bayes import MixtureMEstimatorRegressor
from sklearn_bayes.linear_model._mixture import _inference


def t3_data(seed, n=60, p=2):
    """A linear model with t3 errors."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, 1.0 + X @ np.arange(1.0, p + 1) + rng.standard_t(3, size=n)


def answers(est, X, y):
    """What a reader of the fit gets: intervals, predictions, flags."""
    return (est.conf_int(), est.predict(X), est.flag_outliers(X, y))


def during_a_paused_refit(monkeypatch, action):
    """Run ``action(est)`` in another thread while ``est`` (fitted on data A) refits on data B.

    The refit is paused after it bound ``coef_`` / ``intercept_`` and before ``coef_covariance_``
    (until ``action`` has returned, or 0.5 s).  Returns ``(result, fits)``: ``action``'s result
    and, for ``"A"`` and ``"B"``, the :func:`answers` of a fit on that data alone, read on A.
    """
    XA, yA = t3_data(0)
    XB, yB = t3_data(1)
    yB = 10.0 * yB - 50.0  # the two fits differ in every attribute
    fits = {k: answers(MixtureMEstimatorRegressor(random_state=0).fit(X, y), XA, yA)
            for k, (X, y) in (("A", (XA, yA)), ("B", (XB, yB)))}
    est = MixtureMEstimatorRegressor(random_state=0).fit(XA, yA)
    in_fit, done = threading.Event(), threading.Event()
    original = _inference.parameter_covariance

    def paused(*args, **kwargs):  # called after coef_ / intercept_ are bound, before coef_covariance_ is
        in_fit.set()
        done.wait(0.5)
        return original(*args, **kwargs)

    monkeypatch.setattr(_inference, "parameter_covariance", paused)
    seen = {}

    def other_thread():
        in_fit.wait(10.0)
        seen["result"] = action(est)
        done.set()

    t = threading.Thread(target=other_thread)
    t.start()
    est.fit(XB, yB)
    t.join(10.0)
    monkeypatch.undo()
    return seen["result"], fits


def one_of(got, fits):
    """The names of the fits whose answers ``got`` equals exactly."""
    return [k for k, ans in fits.items() if all(np.array_equal(a, b) for a, b in zip(got, ans))]
