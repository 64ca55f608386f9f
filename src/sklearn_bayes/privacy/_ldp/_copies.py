"""Copies and pickles of :class:`~sklearn_bayes.AdaptiveLDPFrequencyEstimator` (moved out of ``_estimator``).

A pickle holds only the used part of the response store; a ``copy.copy`` of a fitted estimator is a deep
copy, so two estimators never share a noise generator.  Every noise-drawing call registers the generator's
state with the replay guard (``_process``), so a copy of a seeded estimator that replays the
original's noise warns (:class:`sklearn_bayes.exceptions.SeededNoiseWarning`).
"""

import copy

from sklearn_bayes.utils import serialized

__all__ = ["CopiesMixin"]


class CopiesMixin:
    """``__getstate__``, ``__setstate__`` and ``__copy__`` of the estimator."""

    @serialized
    def __getstate__(self):
        """Pickle only the used part of the response store (see ``ResponseStore.__getstate__``)."""
        state = dict(super().__getstate__())
        if "_chain" in state:
            # a trimmed store; subset_sizes_ is its sizes array (pickled once)
            state["_chain"] = state["_chain"].trimmed()
            state["subset_sizes_"] = state["_chain"].store.sizes
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        if "_chain" in self.__dict__ and "subset_sizes_" in self.__dict__:
            self.subset_sizes_ = self._chain.store.used_sizes()

    def __copy__(self):
        """A copy of a fitted estimator is a deep copy: it never shares the noise generator.

        ``copy.copy`` would otherwise share ``_rng`` between the two estimators.  A copy
        (``copy.copy``, ``copy.deepcopy``, pickle) of a seeded estimator replays the
        original's noise; one of an OS-seeded estimator draws fresh noise (class Notes).
        """
        if "n_responses_" not in vars(self):
            new = type(self).__new__(type(self))
            new.__dict__.update(self.__dict__)
            return new
        return copy.deepcopy(self)
