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

__all__ = ["Replay", "caller_random_state", "check_rows", "column_units", "floor_from_start", "refit_detrended",
           "refit_floor_at_fit", "standardise_robust", "trend_dominated"]

#: issue 30, round 21: a start whose residual scale (1.4826 MAD) is more than this many times below the robust scale
#: of ``y`` (a strong trend) makes the fit start again on the start's residuals (:func:`trend_dominated`)
TREND_SPREAD = 1e3
#: a start whose median absolute residual is at most this many times the median rounding bound of its residuals
#: (data and standardised units) fits more than half the rows exactly: no refit (:func:`trend_dominated`)
EXACT_START = 10.0


#: ``y`` is centred on its weighted median instead of its mean where the two are more than this many robust scales
#: apart: a few gross targets (one y of 1e100 among values of order 1) then carry the mean, and centring there would
#: leave the other targets fewer than 10 of their 16 digits (the fit broke down: ``coef_`` of order 1e81).  The
#: intercept column makes the centre arbitrary in exact arithmetic; ordinary data never come near (``|mean - median|``
#: is a few robust scales), so their fits are unchanged bit for bit.
FAR_MEAN = 1e6

#: bins of the screen in :func:`column_units` (a column divided by its largest magnitude, over [-1, 1])
_BINS = 1024


def _concentrated(A, w):
    """Per column of ``A``: whether half the weight ``w`` lies in 3 adjacent bins of 1024 over [-1, 1] after
    dividing the column by its largest magnitude.  An exact screen for :func:`column_units`: a far column has half
    its weight within 2 MADs < 1.35e-6 of its centre (its sd, at most 1, exceeds 1.48e6 MADs), inside 2 adjacent
    bins of width 2e-3 (3 with the bins' rounding); ordinary columns spread over many bins.  One ``bincount`` a
    column: O(n p)."""
    out = np.zeros(A.shape[1], dtype=bool)
    half = 0.49 * float(w.sum())
    for j in range(A.shape[1]):
        a = A[:, j]
        big = float(np.max(np.abs(a)))
        if big > 0:
            h = np.bincount(np.minimum(((a / big + 1.0) * (_BINS / 2)).astype(np.intp), _BINS - 1), weights=w,
                            minlength=_BINS)  # fmt: skip
            out[j] = float(np.max(h[:-2] + h[1:-1] + h[2:])) >= half
    return out


def column_units(X, sw, fit_intercept):
    """Offset, scale, constant and *far* masks of the columns of ``X`` in the fit's units (weights ``sw``).

    Each column is standardised by its weighted mean and sd (``_column_offset_scale``), except a *far* column: one
    whose sd is more than :data:`FAR_MEAN` times its robust scale (1.4826 times its weighted MAD about its weighted
    median, on the rows with positive weight; without an intercept its root mean square and 1.4826 times the
    weighted median of ``|x|``).  Such a column is standardised by its weighted median and that robust scale
    (offset 0 without an intercept): a few gross cells carry its mean and sd, and centring there would
    leave the other rows fewer digits than the fit needs (10 cells of 1e15 among 100 standard normals gave
    ``coef_`` 0 with standard error 0, silently).  Since ``|mean - median| <= sd``, the sd test also covers a mean
    far from the median.  A column whose MAD is 0 (more than half its rows tie) is never far.  Ordinary columns
    (sd a few robust scales) keep their units bit for bit.  Medians and MADs are taken on the column divided by its
    largest magnitude (no overflow at entries near 1e308).

    Returns ``(x_offset, x_scale, constant, far, reach)``; ``reach``: for a far column, its largest standardised
    ``|x|`` (distance from its median, from 0 without an intercept, in robust scales; NaN elsewhere).  Medians are
    only computed for columns with half their weight in 3 adjacent bins of 1024 (an exact screen: O(n) per column,
    so ordinary fits cost ~1 ms more at 1e5 rows)."""
    x_offset, x_scale, constant = _column_offset_scale(X, sw, fit_intercept)
    far = np.zeros(X.shape[1], dtype=bool)
    reach = np.full(X.shape[1], np.nan)
    pos = sw > 0
    A, w = (X, sw) if pos.all() else (X[pos], sw[pos])
    for j in np.flatnonzero(~constant & _concentrated(A, w)):
        big = float(np.max(np.abs(A[:, j])))
        a = A[:, j] / big
        med = weighted_median(a, w)
        centre = med if fit_intercept else 0.0
        rs = _MAD_TO_SD * weighted_median(np.abs(a - centre), w)
        if rs > 0 and x_scale[j] / big > FAR_MEAN * rs:
            far[j] = True
            x_offset[j] = med * big if fit_intercept else 0.0
            x_scale[j] = rs * big
            with np.errstate(over="ignore"):
                reach[j] = float(np.max(np.abs(a - centre))) / rs
    return x_offset, x_scale, constant, far, reach


def _untied_spread(ys, sws):
    """1.4826 MAD of the targets other than the tied majority (about their own median); ``inf`` if it is 0 or
    there are none.  A spread one gross target cannot carry, for :data:`FAR_MEAN` when the MAD of all is 0 (more
    than half tie: one y of 1e20 among ties gave ``coef_`` of order 1e8 where the others give 0)."""
    rest = ys != weighted_median(ys, sws)
    rest &= sws > 0
    if not rest.any():
        return math.inf
    yr, wr = ys[rest], sws[rest]
    spread = _MAD_TO_SD * weighted_median(np.abs(yr - weighted_median(yr, wr)), wr)
    return spread if spread > 0 else math.inf


def standardise_robust(X, y, sw, rows, fit_intercept, units=None):
    """Units of the EM fit: ``X`` columns by :func:`column_units` (weighted mean and sd; median and robust scale
    for a column a few gross cells carry), ``y`` by its weighted mean (its weighted median where the mean is more
    than :data:`FAR_MEAN` robust scales away) and its robust scale (1.4826 MAD on ``rows``).  If more than half the
    targets tie, the scale is their sd, or the spread of the untied targets (:func:`_untied_spread`) where the sd is
    more than :data:`FAR_MEAN` times it (a gross target carries the sd), and the test for the median centre uses
    the smaller of the two.  ``units``: :func:`column_units` of ``X`` if already computed (with ``sw`` or a power
    of two times it: the same units, bit for bit)."""
    x_offset, x_scale, constant = (column_units(X, sw, fit_intercept) if units is None else units)[:3]
    big = float(np.max(np.abs(y)))  # > 0: y is not constant; dividing keeps sums finite
    y1 = y / big
    ys, sws = y1[rows], sw[rows]
    scale = _MAD_TO_SD * weighted_median(np.abs(ys - weighted_median(ys, sws)), sws)
    far_scale = scale
    if scale == 0:  # more than half the (subsampled) targets tie: the sd of all targets
        scale = math.sqrt(np.average((y1 - np.average(y1, weights=sw)) ** 2, weights=sw))
        far_scale = min(scale, _untied_spread(ys, sws))  # the sd may carry a gross target: not for the tests below
        if scale > FAR_MEAN * far_scale:  # it does: the untied targets' spread is the scale
            scale = far_scale
    centre = float(np.average(y1, weights=sw)) if fit_intercept else 0.0
    if fit_intercept and abs(centre - weighted_median(y1, sw)) > FAR_MEAN * far_scale:
        centre = weighted_median(y1, sw)  # a few gross targets carry the mean: centring there rounds the rest away
    return Standardisation(x_offset, x_scale, centre * big, scale * big, constant)


def trend_dominated(Xs, ycs, sws, theta0, mad, noise):
    """Whether the start ``theta0`` leaves residuals far smaller than ``y``'s robust scale: a strong trend.

    ``Xs``, ``ycs``: the standardised design and target (``y``'s robust scale 1); ``mad``: the start's weighted
    median absolute residual; ``noise``: the median rounding bound of its residuals in the units of the data,
    divided by ``y``'s scale.

    Notes
    -----
    True if ``TREND_SPREAD * 1.4826 mad < 1`` and the start is not exact, ``mad > EXACT_START * max(noise,
    nstd)`` with ``nstd`` the median of ``(d + 1) eps (|ycs_i| + |xs_i| @ |theta0|)``, the rounding bound in the
    standardised units (where ``y`` is 0 on most rows ``noise`` can be 0 while the standardisation's rounding is
    not).  The fit's floors (``1e-9`` of ``y``'s scale), its exact-fit test (median ``|r|`` within 100 floors) and
    its stopping rules are relative to ``y``'s scale, which a trend inflates: under ``y + 1e7 x_0`` residuals of
    the size of the noise passed for an exact fit.  Regression equivariance, ``fit(X, y - X g - c) = fit(X, y) - (g,
    c)``, lets the fit run on the start's residuals instead, where all of them are relative to the residuals'
    scale.  An exact start's residual scale is rounding: the fit stays on ``y`` there.  On the benchmark's 2580
    real fits exact starts are within 1.25 rounding bounds, all others above ``4e9`` of them.
    """
    nstd = weighted_median((Xs.shape[1] + 1) * np.finfo(float).eps * (np.abs(ycs) + np.abs(Xs) @ np.abs(theta0)), sws)
    return bool(TREND_SPREAD * _MAD_TO_SD * mad < 1.0 and mad > EXACT_START * max(noise, nstd))


def check_rows(name, y, pos, p, sw=None):
    """Enough positive-weight rows (``pos``) for ``p`` parameters, and a non-constant target (``name``: the
    estimator's, for the message).

    With weights ``sw`` (largest in ``[1, 2)``, :func:`normalise_weights`), the rows must also count as enough
    *effectively*: Kish's effective number of rows ``(sum w)^2 / sum w^2`` (``n`` for equal weights, whatever
    their size; zero weights count for nothing) at least ``p + 1``, and no row holding more than half the total
    weight (the weighted median of ``y`` is then that row's value, so every robust scale is 0 and the fit is that
    row's; review HQV, F5).
    """
    n_pos = int(pos.sum())
    if n_pos < p + 1:
        raise ValueError(
            f"{name} needs at least n_features + fit_intercept + 1 = {p + 1} "
            f"samples with positive weight, got n_samples={n_pos}."
        )
    if sw is not None:
        total, top = float(sw.sum()), float(sw.max())
        n_eff = total**2 / float(sw @ sw)
        if top > 0.5 * total:
            raise ValueError(
                f"sample_weight gives row {int(np.argmax(sw))} {top / total:.1%} of the total weight: with more than "
                f"half the weight on one row every robust scale is 0 and {name}'s fit is that row's; spread the "
                "weight (no row above half of it)."
            )
        if n_eff < p + 1:
            raise ValueError(
                f"sample_weight is concentrated on too few rows: Kish's effective number of rows "
                f"(sum w)^2 / sum w^2 is {n_eff:.3g}, below the n_features + fit_intercept + 1 = {p + 1} that "
                f"{name} needs."
            )
    if np.ptp(y[pos]) == 0:
        raise ValueError(f"y is constant (all values equal {y[pos][0]!r}): there is nothing to regress.")


class Replay:
    """A stand-in for :class:`caller_random_state` handing out the generator ``rng`` at the state it has now."""

    def __init__(self, rng):
        self.rng, self.state = rng, rng.bit_generator.state

    def generator(self):
        self.rng.bit_generator.state = self.state
        return self.rng


#: the fit is redone with its rounding floor at its own coefficients where the start's floor exceeds this many times
#: the floor there (:func:`floor_from_start`)
FLOOR_FROM_START = 1e3


def floor_from_start(tiny, floor, X, y, est, sws, y_scale):
    """Whether the scale floor ``tiny`` (``max(floor, start's rounding level)``, standardised units) exceeds
    :data:`FLOOR_FROM_START` times ``max(floor, the rounding level at est's fit)``: a non-robust start (``init="ols"``
    with one target of 1e20: coefficients of 1e18, whose rounding level is hundreds of noise scales) put the floor
    above the noise, and the loss scale sat on it (standard errors ~2e-3 of the gross target).  Ordinary fits: both
    floors are ``floor``, no refit."""
    from sklearn_bayes.linear_model._mixture._inference import rounding_level  # (an import cycle at module level)

    if not tiny > FLOOR_FROM_START * floor:
        return False
    at_fit = weighted_median(rounding_level(X, y, est.coef_, est.intercept_), sws) / y_scale
    return bool(tiny > FLOOR_FROM_START * max(floor, at_fit))


def refit_floor_at_fit(est, X, y, sample_weight, replay, detrended):
    """Fit ``est`` again with the random numbers of its first fit and the rounding floor at that fit's coefficients
    (:func:`floor_from_start`).  Returns ``est``."""
    inner = type(est)(**est.get_params(deep=False))
    inner._fit(X, y, sample_weight, replay, detrended=detrended, at=(est.coef_, est.intercept_))
    vars(est).update({k: v for k, v in vars(inner).items() if k not in ("n_features_in_", "feature_names_in_")})
    return est


def refit_detrended(est, X, y, sample_weight, replay, coef0, intercept0):
    """Fit ``est`` on ``y - X @ coef0 - intercept0`` with the random numbers of its first fit, then add
    ``coef0``, ``intercept0`` back (:func:`trend_dominated`).  The subtraction's rounding bound is part of the
    refit's rounding level; ``outlier_mask_`` and the rounding floor of ``residual_scale_`` are those of ``y``'s
    residuals.  Returns ``est``."""
    from sklearn_bayes.linear_model._mixture._inference import rounding_level  # (an import cycle at module level)

    inner = type(est)(**est.get_params(deep=False))
    bound = rounding_level(X, y, coef0, intercept0)  # of the subtraction below
    inner._fit(X, y - X @ coef0 - intercept0, sample_weight, replay, detrended=bound)
    state = {k: v for k, v in vars(inner).items() if k not in ("n_features_in_", "feature_names_in_")}
    state["coef_"] = state["coef_"] + coef0
    state["intercept_"] = state["intercept_"] + intercept0 if est.fit_intercept else 0.0
    if state.get("mm_coef_") is not None:
        state["mm_coef_"] = state["mm_coef_"] + coef0
        state["mm_intercept_"] = state["mm_intercept_"] + intercept0 if est.fit_intercept else 0.0
    vars(est).update(state)
    coef, icpt = est._flag_params()
    r, bound = y - X @ coef - icpt, rounding_level(X, y, coef, icpt)
    sw = np.ones(len(y)) if sample_weight is None else np.broadcast_to(np.asarray(sample_weight, dtype=float), y.shape)
    est.residual_scale_ = max(est.residual_scale_, weighted_median(bound, sw))
    est.outlier_mask_ = np.abs(r) > np.maximum(2.5 * est.residual_scale_, bound)
    return est


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
