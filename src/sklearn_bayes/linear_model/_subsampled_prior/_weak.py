"""The weak-prior end of the GLMs' search of ``log10 tau`` (:func:`._tuning.select_glm`, HSPT2).

Along a candidate's decades (strong to weak) the prior precision ``P_t = wbar Sigma^-1 / 10^t`` falls
ten-fold per decade.  Once it is small against the Hessian of the fit, the fit and its approximate
leave-one-out risk ``R`` are smooth functions of ``P`` near 0 with a common limit ``R_inf`` -- the risk
of the maximum-likelihood fit, the same for every candidate shape and mean (the cross-fitted mean
shifts ``x_i^T H^-1 P D_i`` vanish with ``P``) -- and ``R(P) = R_inf + a P + O(P^2)``.  The decades
beyond decade ``t`` are then certified not to matter when the bound below exceeds what they would
have to beat.

Notes
-----
With ``s = P / P_t`` (``s = 1`` at decade ``t``, 10 at ``t - 1``, ``10^-m`` at ``t + m``) and the
quadratic ``q(s)`` through ``(0, R_inf)``, ``(1, R_t)`` and ``(10, R_{t-1})``, the deviation of the
third point from the chord through the first two is ``dev = R_{t-1} - R_inf - 10 (R_t - R_inf) = 90 b``
(``b`` the quadratic's coefficient).  ``q`` lies above the chord through ``(0, R_inf)`` and ``(1, R_t)``
less ``|b| / 4 = |dev| / 360`` on ``[0, 1]`` and above the chord through ``(1, R_t)``, ``(10, R_{t-1})``
less ``81 |b| / 4 = 0.225 |dev|`` on ``[1, 10]``, so

.. math::

    R(s) \\ge \\min(R_t, R_\\infty) - |dev| - \\epsilon \\quad (0 \\le s \\le 1), \\qquad
    R(s) \\ge \\min(R_{t-1}, R_t, R_\\infty) - |dev| - \\epsilon \\quad (0 \\le s \\le 10)

with a margin of 4.4 (360 on the tail) times the quadratic model's dip; ``epsilon =
sqrt(eps) max(1, |R_inf|) + 1e-6 |R_t - R_inf|`` covers the rounding of the risks and the limit fit's
own prior (``1e-6`` of the weakest decade's, :data:`LIMIT_DECADES`).  The bound is used only where the
prior is small: ``kappa = lambda_max(L^-1 P_{t-1} L^-T) <= KAPPA`` (``L L^T`` the Hessian of the fit at
decade ``t - 1``, the prior included), where the fit's expansion in powers of ``P`` converges fast.
The three points are where the quadratic model is checked: a curved profile (a large ``|dev|``)
widens the margin by itself.
"""

import numpy as np
from scipy import linalg

#: the largest prior-to-Hessian ratio (kappa, see the module's Notes) at which the bound is used
KAPPA = 0.1
#: the limit fit's ``log10 tau``: this many decades beyond the weakest decade of the search
LIMIT_DECADES = 6.0
#: testing hook: None, or a list to which every truncation appends ``(family, decade, bound, kind)``
TRACE = None


def prior_ratio(factor, precision):
    """``kappa = lambda_max(L^-1 P L^-T)`` for the lower Cholesky factor ``L`` of the Hessian (side
    ``d`` or ``d + 1`` with an intercept, whose prior is flat) and the ``d x d`` prior precision ``P``."""
    k, d = factor.shape[0], precision.shape[0]
    Pf = np.zeros((k, k))
    Pf[:d, :d] = precision
    A = linalg.solve_triangular(factor, Pf, lower=True)
    M = linalg.solve_triangular(factor, A.T, lower=True)
    return float(np.linalg.eigvalsh(0.5 * (M + M.T))[-1])


def bounds(r_prev, r_t, r_inf):
    """``(tail, wide)``: lower bounds of the risk at every ``log10 tau`` beyond decade ``t`` (``tail``)
    and beyond decade ``t - 1`` (``wide``) from the risks at decades ``t - 1``, ``t`` and the limit
    (module Notes)."""
    dev = abs(r_prev - (r_inf + 10.0 * (r_t - r_inf)))
    slack = np.sqrt(np.finfo(float).eps) * max(1.0, abs(r_inf)) + 1e-6 * abs(r_t - r_inf)
    tail = min(r_t, r_inf) - dev - slack
    return tail, min(tail, r_prev - dev - slack)


def walk(grid, risk, cache, prior_at, limit, found, family):
    """The decades of one candidate, strong to weak, stopping where the rest cannot matter.

    ``risk(t)`` evaluates (and caches in ``cache``) decade ``t``; ``prior_at(t)`` is its ``d x d``
    prior precision; ``limit()`` returns ``R_inf`` (NaN where the limit fit failed: no truncation);
    ``found`` the smallest grid risk of the candidates walked before.  Stops after decade ``t`` when

    * the tail bound exceeds the candidate's smallest risk so far: its best decade and that decade's
      neighbours are computed and the decades left are above them (the search is unchanged), or
    * decade ``t`` is its best so far and the wide bound exceeds ``found``: no ``log10 tau`` from
      decade ``t - 1`` on can win, and the bounded search about its best decade (``t`` or beyond) would
      not run there -- the candidate is then marked ``dominated`` and not searched.

    Returns ``(vals, dominated)``."""
    vals = []
    for idx, t in enumerate(grid):
        vals.append(risk(t))
        if idx < 1 or idx == len(grid) - 1:
            continue
        prev = cache[grid[idx - 1]][1]
        if prev.factor is None or not np.all(np.isfinite(vals[-2:])):
            continue
        if prior_ratio(prev.factor, prior_at(grid[idx - 1])) > KAPPA:
            continue
        r_inf = limit()
        if not np.isfinite(r_inf):
            continue
        tail, wide = bounds(vals[idx - 1], vals[idx], r_inf)
        kind = None
        if tail > min(vals):
            kind = "tail"
        elif int(np.argmin(vals)) == idx and wide > found:
            kind = "dominated"
        if kind is not None:
            if TRACE is not None:
                TRACE.append((family, float(t), float(tail if kind == "tail" else wide), kind))
            return vals, kind == "dominated"
    return vals, False


def search_bound(vals, j, grid, cache, prior_at, r_inf):
    """A lower bound of the risk over the bounded search's interval ``[grid[j-1], grid[j+1]]`` of a
    candidate whose best decade is ``j``, or None where the prior is not small there.

    With ``s = P / P_{j+1}`` the interval is ``1 <= s <= 100``; the cubic through ``(0, R_inf)``,
    ``(1, R_{j+1})``, ``(10, R_j)``, ``(100, R_{j-1})`` is minimised on a fine grid of that interval, less
    ``|dev|`` -- the whole cubic term at ``s = 100`` (the fourth point's deviation from the quadratic
    through the first three) -- and the rounding slack of :func:`bounds`.  Used where ``kappa`` (module
    Notes) at ``P_{j-1}``, the interval's strongest prior, is at most :data:`KAPPA`."""
    if not (1 <= j <= len(vals) - 2) or not np.isfinite(r_inf):
        return None
    r = np.array([r_inf, vals[j + 1], vals[j], vals[j - 1]], dtype=float)
    prev = cache[grid[j - 1]][1]
    if not np.all(np.isfinite(r)) or prev.factor is None or prior_ratio(prev.factor, prior_at(grid[j - 1])) > KAPPA:
        return None
    s, d = np.array([0.0, 1.0, 10.0, 100.0]), r - r_inf  # differences from the limit: no cancellation
    cubic = np.polyfit(s, d, 3)
    dev = abs(d[3] - np.polyval(np.polyfit(s[:3], d[:3], 2), 100.0))
    slack = np.sqrt(np.finfo(float).eps) * max(1.0, abs(r_inf)) + 1e-6 * abs(d[1])
    return r_inf + float(np.polyval(cubic, np.linspace(1.0, 100.0, 991)).min()) - dev - slack
