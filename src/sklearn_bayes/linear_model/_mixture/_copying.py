"""A pickle or deep copy of :class:`MixtureMEstimatorRegressor` holds one fit, never a mix of two.

A refit binds ``coef_``, ``intercept_``, ``coef_covariance_``, ... one after the other while it holds the instance's
lock (:func:`~sklearn_bayes.utils.instance_lock`); the readers hold that lock too.  ``pickle`` and ``copy.deepcopy``
read the instance's ``__dict__`` through ``__getstate__``, which did not take the lock, so a copy taken during a refit
could hold ``coef_`` of the new fit with ``coef_covariance_`` of the old (HQL's review of H30S).  The mixin's
``__getstate__`` takes the state (a shallow copy of the attributes) under the lock: the copy is the fit before the
refit or the one after it.  The lock is re-entrant, so a copy taken inside a locked call (a bootstrap refit) does not
wait for itself.
"""

from sklearn_bayes.utils import instance_lock

__all__ = ["LockedStateMixin"]


class LockedStateMixin:
    """``__getstate__`` under the instance lock (first in the bases, before :class:`~sklearn.base.BaseEstimator`)."""

    def __getstate__(self):
        """The estimator's state (:meth:`sklearn.base.BaseEstimator.__getstate__`), taken under its instance lock."""
        with instance_lock(self):
            return dict(super().__getstate__())
