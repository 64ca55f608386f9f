"""The MM fit and scale that :meth:`MixtureMEstimatorRegressor.flag_outliers` reads (issue 30, rounds 14, L2 and L3).

The flags are robustbase ``lmrob``'s (R's standard MM-estimator, ``lmrob.control()`` defaults) at every ``n``
(round L2, :data:`FLAG_RULE` ``"lmrob"``): the finite-sample S scale, Rousseeuw and Leroy's normalisation by the
residual degrees of freedom, the biweight M-scale with ``sum_i rho(r_i / s) = b (n - p)`` instead of ``b n`` (``b =
1/2``), minimised locally by Fast-S I-steps from each of the S search's finalists, the one of smallest finite-sample
scale kept (round L3, :data:`FLAG_START` ``"lmrob"``: lmrob ranks its S candidates by that scale of all rows, our S
search by the 50 %-breakdown scale of the x-central rows); an MM step (Tukey 4.685) from there at that scale; a row
flagged when ``|r_i| > 2.5 s`` (:func:`flags_mm_fit`).  For even ``n`` and ``p`` this ``b (n - p) / n`` equals ``(n -
h) / n`` at the maximal-breakdown quantile ``h = n // 2 + (p + 1) // 2`` of LMS and LTS.  Measured against
``lmrob``'s own flags (``benchmarks/data/lmrob_flags.json``): the same rows on 118 of the 119 sets of rounds L and L2
(exAM: no finalist reaches lmrob's S fit) and on 17 of 17 of round L3's fresh group; from the fit's S start alone
(``FLAG_START = "first"``, round L2) 115 and 17, by the rule before (``FLAG_RULE = "round14"``) 80 of the 119
(development log, rounds L, L2 and L3).

Why the finite-sample scale: the 50 %-breakdown M-scale ``s`` solving ``mean_i rho(r_i / s) = 1/2`` is biased low
in small samples: the S-estimate minimises it over the coefficients, and with ``n <= 2 p`` rows an exact fit through
half of them is available, towards which the minimised scale collapses (under normal errors of sd 1 its mean was
0.43 at ``n = 15``, ``p = 4``; development log, round 12).  An MM step at that scale then hugs part of the rows, and
``|r_i| > 2.5 s`` flagged 26 % of the rows of clean Gaussian samples at ``n = 12``, ``p = 4`` (nominal 1.24 %).
Choosing the finalist of smallest finite-sample scale (round L3) costs a little there: at 2-4 rows per coefficient it
flagged 0.1-0.5 points more clean rows than the fit's S start alone (normal and t5, ``p = 4``), nothing from 12 rows
per coefficient on.

The rule before (:data:`FLAG_RULE` ``"round14"``, kept as an option): the same S fit and MM step at most
:data:`FINITE_SAMPLE_FLAGS_ROWS_PER_COEF` (4) effective rows per coefficient, flagged at the larger of its S scale and
the corrected MAD of the MM residuals (:func:`mm_for_flags_small_sample`), and round 13's MM fit above the gate
(``_s_start.mm_for_flags``, the 50 %-breakdown scale normalised by ``n``; there it matched statsmodels' MM, which
flags more rows than ``lmrob``).  The fit's coefficients, its loss choice and the MM fit that choice's guard reads
do not depend on the rule: this module serves the flags only (``outlier_mask_``, ``flag_outliers``, ``mm_coef_``,
``residual_scale_``, and the sandwich's clipping of flagged rows).
"""

import numpy as np

from sklearn_bayes.linear_model._mixture._lts_start import weighted_median, wls
from sklearn_bayes.linear_model._mixture._norms import TukeyBiweight
from sklearn_bayes.linear_model._mixture._s_start import _S_MAX_STEPS, B_HALF, _i_steps, m_scale
from sklearn_bayes.linear_model._mixture._selection import irls, residual_scale

__all__ = ["FINITE_SAMPLE_FLAGS_ROWS_PER_COEF", "FLAG_RULE", "FLAG_RULES", "FLAG_START", "FLAG_START_MARGIN", "FLAG_STARTS", "FLAG_S_STEPS",
           "finite_sample_flags", "finite_sample_s_scale", "flags_fit", "flags_mm_fit", "flags_s_fit",
           "mm_for_flags_small_sample"]

#: I-steps at the finite-sample share from the S start (Fast-S's limit for a finalist)
FLAG_S_STEPS = _S_MAX_STEPS
#: ``FLAG_RULE = "round14"``: the flags use :func:`mm_for_flags_small_sample` at most this many (effective) rows
#: per coefficient, the MM fit
#: of the loss choice's guard above (round 14: there the S scale is at most 0.62 of the error sd under normal
#: errors, the round-13 flags marked 16-40 % of clean rows, and no classical set's agreement with statsmodels'
#: MM moves; at 5 aircraft and road lose a row MM flags; ``None``: never, round 13's flags)
FINITE_SAMPLE_FLAGS_ROWS_PER_COEF = 4.0
#: the flag rules :func:`flags_fit` knows
FLAG_RULES = ("lmrob", "round14")
#: the flags' rule, read at each fit: ``"lmrob"`` (round L2, the default: :func:`flags_mm_fit` at every n, flagged
#: at its S scale alone, robustbase ``lmrob``'s rule) or ``"round14"`` (the rule before:
#: :func:`mm_for_flags_small_sample` at most :data:`FINITE_SAMPLE_FLAGS_ROWS_PER_COEF` rows per coefficient, the
#: loss choice's MM fit above)
FLAG_RULE = "lmrob"
#: the S starts the flags know (:data:`FLAG_START`)
FLAG_STARTS = ("first", "lmrob")
#: the flags' S start under ``FLAG_RULE = "lmrob"``, read at each fit: ``"lmrob"`` (round L3, the default: of the S
#: search's finalists, the one whose finite-sample S fit, :func:`flags_s_fit`, reaches the smallest finite-sample
#: scale of all rows, lmrob's criterion; the fit's S start where the search ran on a subsample, above 1500 rows) or
#: ``"first"`` (round L2's default: the fit's S start, the best finalist by the 50 %-breakdown M-scale of the
#: x-central rows)
FLAG_START = "lmrob"
#: a finalist replaces the flags' S fit only when its finite-sample scale is smaller by more than this share: finalists
#: that converged to the same S fit differ by the I-steps' stopping tolerance (1e-5 relative in the coefficients, about
#: 1e-10 in the scale), which rounding decides; distinct local minima differed by 7-30 % (round L3)
FLAG_START_MARGIN = 1e-6


def finite_sample_flags(sw, p, rows_per_coef=None):
    """Whether Kish's effective number of rows is at most ``rows_per_coef * p`` (``None``:
    :data:`FINITE_SAMPLE_FLAGS_ROWS_PER_COEF`, read at the call), to within ``(3 n + 2)`` rounding units
    (as ``_selection.is_small``: uniform weights ``c`` decide as unit weights do)."""
    rows_per_coef = FINITE_SAMPLE_FLAGS_ROWS_PER_COEF if rows_per_coef is None else rows_per_coef
    if rows_per_coef is None:
        return False
    wt = float(sw.sum())
    n_eff = wt * (wt / float(sw @ sw)) if wt > 0 else 0.0
    return n_eff <= rows_per_coef * p * (1.0 + (3 * len(sw) + 2) * np.finfo(float).eps)


def _share(sw, p):
    """``b (n - p) / n`` of :func:`finite_sample_s_scale` (Kish's ``n``; ``n - p`` at least 1)."""
    wt = float(sw.sum())
    n_eff = wt * (wt / float(sw @ sw)) if wt > 0 else 0.0
    return B_HALF * max(n_eff - p, 1.0) / n_eff if n_eff > 0 else B_HALF


def finite_sample_s_scale(r, sw, p):
    """robustbase ``lmrob``'s S scale of residuals ``r``: the biweight M-scale with ``mean rho = b (n - p) / n``.

    ``n`` is Kish's effective number of rows ``(sum w)^2 / sum w^2`` (as in
    :func:`~._selection.residual_scale`), ``p`` the number of coefficients, ``b = 1/2``; ``n - p`` is
    kept at least 1 (at ``n <= p + 1`` the share is ``b / n``).  0 when at most that share of the
    weight is on nonzero residuals.
    """
    if float(sw.sum()) <= 0:
        return 0.0
    return m_scale(r, sw, _share(sw, p))


def flags_s_fit(Xa, y, sw, theta0, floor):
    """The flags' S fit from the S start ``theta0``: Fast-S I-steps at the share ``b (n - p) / n``
    (:func:`finite_sample_s_scale`; at most :data:`FLAG_S_STEPS`, kept only if they lower that scale).
    Returns ``(theta_s, s)``, ``s`` that finite-sample scale of ``theta_s``, never below ``floor``."""
    b = _share(sw, Xa.shape[1])
    s0 = max(m_scale(y - Xa @ theta0, sw, b), floor)
    theta_s, s_fs = _i_steps(Xa, y, sw, theta0, s0, FLAG_S_STEPS, b=b)
    if not s_fs < s0:  # the I-steps lower the scale (or stop where they started); keep the start otherwise
        theta_s, s_fs = theta0, s0
    return theta_s, max(s_fs, floor)


def flags_mm_fit(Xa, y, sw, theta0, floor, finalists=None):
    """The S fit and MM fit of the flags (robustbase ``lmrob``'s finite-sample S scale).

    From the S start ``theta0`` (the minimiser of the M-scale at ``b = 1/2``), Fast-S I-steps at the share
    ``b (n - p) / n`` (:func:`flags_s_fit`) give the flags' S fit and scale ``s``; Tukey (4.685) IRLS from there at
    ``s`` gives the MM fit.  ``finalists`` (round L3, :data:`FLAG_START` ``"lmrob"``): the S search's converged fits
    (``theta0`` among them); the S fit is then the one of smallest ``s`` of ``theta0``'s and theirs, lmrob's
    criterion; a later one replaces an earlier one only when its ``s`` is smaller by more than the share
    :data:`FLAG_START_MARGIN` (one tie rule: equal fits reached from two starts keep the earlier, ``theta0`` first).  Returns ``(theta_mm, s)`` in the units of ``Xa`` and ``y``.
    """
    theta_s, s_fs = flags_s_fit(Xa, y, sw, theta0, floor)
    for theta in finalists or ():
        cand = (theta_s, s_fs) if theta is theta0 else flags_s_fit(Xa, y, sw, theta, floor)
        if cand[1] < s_fs * (1.0 - FLAG_START_MARGIN):
            theta_s, s_fs = cand
    return irls(Xa, y, sw, theta_s, s_fs, TukeyBiweight(4.685), wls)[0], s_fs


def mm_for_flags_small_sample(Xa, y, sw, theta0, floor):
    """The MM fit and flagging scale: :func:`flags_mm_fit`, and the larger of its S scale and the corrected MAD
    of its residuals, never below ``floor``.  Returns ``(theta, scale)`` in the units of ``Xa`` and ``y``."""
    theta, s_fs = flags_mm_fit(Xa, y, sw, theta0, floor)
    return theta, max(s_fs, residual_scale(y - Xa @ theta, sw, Xa.shape[1], weighted_median), floor)


def flags_fit(Xa, y, sw, theta0, floor, mm_fit, finalists=None):
    """The MM fit and flagging scale of ``flag_outliers`` under :data:`FLAG_RULE` and :data:`FLAG_START` (read at
    the call).

    ``"lmrob"``: :func:`flags_mm_fit` (robustbase ``lmrob``'s finite-sample S scale, MM step at it, no floor but
    ``floor``), from ``theta0`` (``FLAG_START = "first"``) or from the best of ``finalists`` (``"lmrob"``; the S
    search's converged fits, ``theta0`` first, ``None`` where it ran on a subsample: ``theta0``).  ``"round14"``:
    :func:`mm_for_flags_small_sample` at most :data:`FINITE_SAMPLE_FLAGS_ROWS_PER_COEF` effective rows per
    coefficient (:func:`finite_sample_flags`), ``mm_fit`` (the loss choice's MM fit, round 13's
    ``_s_start.mm_for_flags``) above.  Returns ``(theta, scale)`` in the units of ``Xa`` and ``y``.
    """
    if FLAG_RULE not in FLAG_RULES:
        raise ValueError(f"_flags.FLAG_RULE must be one of {FLAG_RULES}, got {FLAG_RULE!r}")
    if FLAG_START not in FLAG_STARTS:
        raise ValueError(f"_flags.FLAG_START must be one of {FLAG_STARTS}, got {FLAG_START!r}")
    if FLAG_RULE == "lmrob":
        return flags_mm_fit(Xa, y, sw, theta0, floor, finalists if FLAG_START == "lmrob" else None)
    if finite_sample_flags(sw, Xa.shape[1]):
        return mm_for_flags_small_sample(Xa, y, sw, theta0, floor)
    return mm_fit
