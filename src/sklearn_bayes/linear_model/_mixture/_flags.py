"""The MM fit and scale that :meth:`MixtureMEstimatorRegressor.flag_outliers` reads (issue 30, rounds 14 and L2).

The flags are robustbase ``lmrob``'s (R's standard MM-estimator, ``lmrob.control()`` defaults) at every ``n``
(round L2, :data:`FLAG_RULE` ``"lmrob"``): the finite-sample S scale, Rousseeuw and Leroy's normalisation by the
residual degrees of freedom, the biweight M-scale with ``sum_i rho(r_i / s) = b (n - p)`` instead of ``b n`` (``b =
1/2``), minimised locally by Fast-S I-steps from the S start; an MM step (Tukey 4.685) from there at that scale; a row
flagged when ``|r_i| > 2.5 s`` (:func:`flags_mm_fit`).  For even ``n`` and ``p`` this ``b (n - p) / n`` equals ``(n -
h) / n`` at the maximal-breakdown quantile ``h = n // 2 + (p + 1) // 2`` of LMS and LTS.  Measured against
``lmrob``'s own flags (``benchmarks/data/lmrob_flags.json``): the same rows on 101 of 105 classical sets and on 14 of
14 sets of a fresh group, where the rule before agreed on 71 and 9 (development log, rounds L and L2).

Why the finite-sample scale: the 50 %-breakdown M-scale ``s`` solving ``mean_i rho(r_i / s) = 1/2`` is biased low
in small samples: the S-estimate minimises it over the coefficients, and with ``n <= 2 p`` rows an exact fit through
half of them is available, towards which the minimised scale collapses (under normal errors of sd 1 its mean was
0.43 at ``n = 15``, ``p = 4``; development log, round 12).  An MM step at that scale then hugs part of the rows, and
``|r_i| > 2.5 s`` flagged 26 % of the rows of clean Gaussian samples at ``n = 12``, ``p = 4`` (nominal 1.24 %).

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

__all__ = ["FINITE_SAMPLE_FLAGS_ROWS_PER_COEF", "FLAG_RULE", "FLAG_RULES", "FLAG_S_STEPS", "finite_sample_flags",
           "finite_sample_s_scale", "flags_fit", "flags_mm_fit", "mm_for_flags_small_sample"]

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


def flags_mm_fit(Xa, y, sw, theta0, floor):
    """The S fit and MM fit of the flags (robustbase ``lmrob``'s finite-sample S scale).

    From the S start ``theta0`` (the minimiser of the M-scale at ``b = 1/2``), Fast-S I-steps at the share
    ``b (n - p) / n`` (:func:`finite_sample_s_scale`; at most :data:`FLAG_S_STEPS`, kept only if they lower that
    scale) give the flags' S fit and scale ``s``; Tukey (4.685) IRLS from there at ``s`` gives the MM fit.
    Returns ``(theta_mm, s)`` in the units of ``Xa`` and ``y``.
    """
    b = _share(sw, Xa.shape[1])
    s0 = max(m_scale(y - Xa @ theta0, sw, b), floor)
    theta_s, s_fs = _i_steps(Xa, y, sw, theta0, s0, FLAG_S_STEPS, b=b)
    if not s_fs < s0:  # the I-steps lower the scale (or stop where they started); keep the start otherwise
        theta_s, s_fs = theta0, s0
    s_fs = max(s_fs, floor)
    return irls(Xa, y, sw, theta_s, s_fs, TukeyBiweight(4.685), wls)[0], s_fs


def mm_for_flags_small_sample(Xa, y, sw, theta0, floor):
    """The MM fit and flagging scale: :func:`flags_mm_fit`, and the larger of its S scale and the corrected MAD
    of its residuals, never below ``floor``.  Returns ``(theta, scale)`` in the units of ``Xa`` and ``y``."""
    theta, s_fs = flags_mm_fit(Xa, y, sw, theta0, floor)
    return theta, max(s_fs, residual_scale(y - Xa @ theta, sw, Xa.shape[1], weighted_median), floor)


def flags_fit(Xa, y, sw, theta0, floor, mm_fit):
    """The MM fit and flagging scale of ``flag_outliers`` under :data:`FLAG_RULE` (read at the call).

    ``"lmrob"``: :func:`flags_mm_fit` (robustbase ``lmrob``'s finite-sample S scale, MM step at it, no floor but
    ``floor``).  ``"round14"``: :func:`mm_for_flags_small_sample` at most :data:`FINITE_SAMPLE_FLAGS_ROWS_PER_COEF`
    effective rows per coefficient (:func:`finite_sample_flags`), ``mm_fit`` (the loss choice's MM fit, round 13's
    ``_s_start.mm_for_flags``) above.  Returns ``(theta, scale)`` in the units of ``Xa`` and ``y``.
    """
    if FLAG_RULE not in FLAG_RULES:
        raise ValueError(f"_flags.FLAG_RULE must be one of {FLAG_RULES}, got {FLAG_RULE!r}")
    if FLAG_RULE == "lmrob":
        return flags_mm_fit(Xa, y, sw, theta0, floor)
    if finite_sample_flags(sw, Xa.shape[1]):
        return mm_for_flags_small_sample(Xa, y, sw, theta0, floor)
    return mm_fit
