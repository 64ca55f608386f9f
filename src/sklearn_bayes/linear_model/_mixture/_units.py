"""Small pieces of :class:`~sklearn_bayes.MixtureMEstimatorRegressor`'s fit kept out of ``_estimator`` (its size limit).

:func:`standardise_robust`: the fit's units.  :class:`caller_random_state`: a legacy ``RandomState`` passed as
``random_state`` is rewound when the fit is rejected (the instance transaction only rewinds ``Generator`` s).
"""

import math

import numpy as np

from sklearn_bayes._glm import Standardisation
from sklearn_bayes._glm._base import _column_offset_scale
from sklearn_bayes.linear_model._mixture._lts_start import weighted_median
from sklearn_bayes.linear_model._mixture._selection import _MAD_TO_SD

__all__ = ["caller_random_state", "standardise_robust"]


def standardise_robust(X, y, sw, rows, fit_intercept):
    """Units of the EM fit: ``X`` columns by weighted mean and sd, ``y`` by weighted mean and its
    robust scale (1.4826 MAD on ``rows``; the sd if more than half the targets tie)."""
    x_offset, x_scale, constant = _column_offset_scale(X, sw, fit_intercept)
    big = float(np.max(np.abs(y)))  # > 0: y is not constant; dividing keeps sums finite
    y1 = y / big
    ys, sws = y1[rows], sw[rows]
    scale = _MAD_TO_SD * weighted_median(np.abs(ys - weighted_median(ys, sws)), sws)
    if scale == 0:  # more than half the (subsampled) targets tie: the sd of all targets
        scale = math.sqrt(np.average((y1 - np.average(y1, weights=sw)) ** 2, weights=sw))
    y_offset = float(np.average(y1, weights=sw)) * big if fit_intercept else 0.0
    return Standardisation(x_offset, x_scale, y_offset, scale * big, constant)


def _legacy_state(rs):
    return rs.get_state(legacy=False)


def _same_state(a, b):
    sa, sb = a["state"], b["state"]
    return (np.array_equal(sa["key"], sb["key"]) and sa["pos"] == sb["pos"] and a["has_gauss"] == b["has_gauss"]
            and a["gauss"] == b["gauss"])  # fmt: skip


class caller_random_state:
    """Context manager: a ``numpy.random.RandomState`` passed as ``random_state`` is put back as it was on entry
    if the block raises -- provided nothing else drew from it since the fit's own draw (the one seed
    :func:`~sklearn_bayes.utils.check_generator` takes); a state that moved since is left alone, so no number
    another caller received is handed out again.  Anything else passes through (a ``Generator`` held by the
    estimator is rewound by :func:`~sklearn_bayes.utils.transactional`)."""

    def __init__(self, random_state):
        self.rs = random_state if isinstance(random_state, np.random.RandomState) else None
        self.after = None

    def __enter__(self):
        if self.rs is not None:
            self.entry = _legacy_state(self.rs)
        return self

    def drawn(self):
        """Record the state right after the fit's draw."""
        if self.rs is not None:
            self.after = _legacy_state(self.rs)

    def __exit__(self, exc_type, *exc):
        if exc_type is not None and self.rs is not None and self.after is not None:
            if _same_state(_legacy_state(self.rs), self.after):
                self.rs.set_state(self.entry)
        return False
