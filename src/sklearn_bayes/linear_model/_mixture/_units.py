"""Small pieces of :class:`~sklearn_bayes.MixtureMEstimatorRegressor`'s fit kept out of ``_estimator`` (its size limit).

:func:`standardise_robust`: the fit's units.  :class:`caller_random_state`: a legacy ``RandomState`` passed as
``random_state`` is rewound when the fit is rejected (the instance transaction only rewinds ``Generator`` s).
"""

import contextlib
import math

import numpy as np

from sklearn_bayes._glm import Standardisation
from sklearn_bayes._glm._base import _column_offset_scale
from sklearn_bayes.linear_model._mixture._lts_start import weighted_median
from sklearn_bayes.linear_model._mixture._selection import _MAD_TO_SD
from sklearn_bayes.utils import check_generator

__all__ = ["caller_random_state", "standardise_robust"]


#: ``y`` is centred on its weighted median instead of its mean where the two are more than this many robust scales
#: apart: a few gross targets (one y of 1e100 among values of order 1) then carry the mean, and centring there would
#: leave the other targets fewer than 10 of their 16 digits (the fit broke down: ``coef_`` of order 1e81).  The
#: intercept column makes the centre arbitrary in exact arithmetic; ordinary data never come near (``|mean - median|``
#: is a few robust scales), so their fits are unchanged bit for bit.
FAR_MEAN = 1e6


def standardise_robust(X, y, sw, rows, fit_intercept):
    """Units of the EM fit: ``X`` columns by weighted mean and sd, ``y`` by its weighted mean (its weighted median
    where the mean is more than :data:`FAR_MEAN` robust scales away) and its robust scale (1.4826 MAD on ``rows``;
    the sd if more than half the targets tie)."""
    x_offset, x_scale, constant = _column_offset_scale(X, sw, fit_intercept)
    big = float(np.max(np.abs(y)))  # > 0: y is not constant; dividing keeps sums finite
    y1 = y / big
    ys, sws = y1[rows], sw[rows]
    scale = _MAD_TO_SD * weighted_median(np.abs(ys - weighted_median(ys, sws)), sws)
    if scale == 0:  # more than half the (subsampled) targets tie: the sd of all targets
        scale = math.sqrt(np.average((y1 - np.average(y1, weights=sw)) ** 2, weights=sw))
    centre = float(np.average(y1, weights=sw)) if fit_intercept else 0.0
    if fit_intercept and abs(centre - weighted_median(y1, sw)) > FAR_MEAN * scale:
        centre = weighted_median(y1, sw)  # a few gross targets carry the mean: centring there rounds the rest away
    return Standardisation(x_offset, x_scale, centre * big, scale * big, constant)


def _legacy_state(rs):
    return rs.get_state(legacy=False)


def _same_state(a, b):
    sa, sb = a["state"], b["state"]
    return (np.array_equal(sa["key"], sb["key"]) and sa["pos"] == sb["pos"] and a["has_gauss"] == b["has_gauss"]
            and a["gauss"] == b["gauss"])  # fmt: skip


class caller_random_state:
    """Context manager: a ``numpy.random.RandomState`` passed as ``random_state`` gets back the one seed the fit drew
    from it (:meth:`generator`) if the block raises -- only that draw: the state is put back to the one read just
    before it, and only if nothing else drew from it since (a state that moved is left alone, so no number another
    caller received is handed out again).  A draw another thread made between the fit's start and its own draw
    stays consumed (issue 30, round 19: the state used to be put back to the fit's start), and if one lands between
    the reads just before and just after the fit's draw (the replay of the fit's draw from the first does not give
    the second) nothing is rewound.  The check and the rewind hold the generator's own lock (the one its draws
    take), so no draw slips in between.  Anything else passes through (a ``Generator`` held by the estimator is
    rewound by :func:`~sklearn_bayes.utils.transactional`)."""

    def __init__(self, random_state):
        self.random_state = random_state
        self.rs = random_state if isinstance(random_state, np.random.RandomState) else None
        self.before = self.after = None

    def __enter__(self):
        return self

    def generator(self):
        """The fit's generator, ``check_generator(random_state)``; for a ``RandomState``, the states just before and
        just after its one draw are recorded if that draw was the only one between them."""
        if self.rs is None:
            return check_generator(self.random_state)
        before = _legacy_state(self.rs)
        rng = check_generator(self.rs)
        after = _legacy_state(self.rs)
        replay = np.random.RandomState()
        replay.set_state(before)
        check_generator(replay)
        if _same_state(_legacy_state(replay), after):
            self.before, self.after = before, after
        return rng

    def __exit__(self, exc_type, *exc):
        if exc_type is not None and self.rs is not None and self.after is not None:
            lock = getattr(getattr(self.rs, "_bit_generator", None), "lock", None)
            with lock if lock is not None else contextlib.nullcontext():
                if _same_state(_legacy_state(self.rs), self.after):
                    self.rs.set_state(self.before)
        return False
