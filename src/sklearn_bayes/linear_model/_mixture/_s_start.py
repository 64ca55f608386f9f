"""S-estimator start of :class:`~sklearn_bayes.MixtureMEstimatorRegressor` (``init="s"``).

An S-estimator of regression minimises a 50 %-breakdown M-scale of the residuals: the
Tukey-biweight scale ``s`` solving ``mean_i rho(r_i / s) = 1/2`` with ``rho(u) = 1 - (1 -
(u / c)^2)^3`` for ``|u| < c`` and 1 beyond, ``c = 1.5476`` (consistent at the normal).
It is computed as Fast-S does (Salibian-Barrera and Yohai, "A fast algorithm for
S-regression estimates", 2006), from two kinds of starting fits:

* the least-trimmed-squares candidates of :mod:`._mixture_start` (random elemental
  subsets with concentration steps), and
* deterministic starts in the spirit of DetS (Hubert, Rousseeuw and Verdonck, "A
  deterministic algorithm for robust location and scatter", 2012): robust correlation
  matrices of the columns (tanh-transformed, Spearman rank, normal scores, spatial sign,
  and the classical one of the half-sample nearest the coordinatewise median), each
  orthogonalised with robust scales of its principal components; least squares on the
  half of the rows with the smallest robust distances in ``x`` is one start each.  These
  starts look at the design only, so a cluster of leverage points -- however well the
  targets of its rows line up -- is never in them;
* below 12 rows per coefficient (:data:`SMALL_N_STARTS_ROWS_PER_COEF`), also the
  least-absolute-deviations fit and, with one usable column, least squares on the middle half
  of the rows in that column's order (:func:`small_n_starts`); there every start is iterated
  to convergence, so the criterion reached is never above the search without them.

Every start is refined by I-steps (weighted least squares with biweight weights at the
current scale, then one fixed-point update of the scale); the two best after two steps (all
of them below 12 rows per coefficient) are iterated to convergence (at most 60 I-steps, 500
below 12 rows per coefficient: :data:`S_MAX_STEPS_SMALL`) and the fit with the
smallest M-scale of the rows that are not outlying in ``x`` is kept (:func:`x_central_rows`).
A trimmed sum of squares alone can prefer a fit through an exact-fit cluster of leverage
points (about 20 % of the rows lying exactly on one hyperplane): it only sees the best half
of the residuals, of which the cluster's are 0.  The M-scale of all rows can prefer it too once the cluster holds 20-40 %
of the rows (it did for 20 % of the rows at ``x_1 ~ 10`` on ``y = 2 x_1``): the cluster's
zero residuals outweigh the moderate residuals the cluster fit leaves on the good rows.
Rows far out in ``x`` do not enter the comparison, so a fit is judged by how it fits the
bulk of the design.

Inputs are the standardised augmented design ``Xa``, the targets ``y``, the sample weights
``sw`` and a ``numpy.random.Generator`` (for the LTS part); outputs are plain arrays.
"""

import math

import numpy as np
from scipy import optimize, sparse, special, stats

from sklearn_bayes.linear_model._mixture._lts_start import lts_candidates, weighted_median, wls
from sklearn_bayes.linear_model._mixture._norms import TukeyBiweight
from sklearn_bayes.linear_model._mixture._selection import _MAD_TO_SD, _ranks, irls, is_small, residual_scale

__all__ = ["deterministic_starts", "lad_fit", "m_scale", "s_starts", "small_n_starts", "x_central_rows"]

C_BISQUARE = 1.5476450  # Tukey biweight constant of the 50 %-breakdown, normal-consistent M-scale
B_HALF = 0.5  # mean rho at the scale: breakdown point min(b, 1 - b) = 1/2
_S_LTS = 5  # LTS candidates taken into the S refinement
_S_SCREEN_STEPS = 2  # I-steps given to every start
_S_FINAL = 2  # the best after screening are iterated to convergence
_S_MAX_STEPS = 60  # I-steps of a finalist at most (on the searched rows)
_S_POLISH_STEPS = 3  # I-steps on all rows when the search ran on a subsample
_S_TOL = 1e-5  # stop when no coefficient moves more than this (relative, standardised units)
#: below this many (effective) rows per coefficient the S search also starts from the least-absolute-deviations
#: fit and, with one usable design column, from least squares on the central half of the rows in that column's
#: order, and iterates every start to convergence (issue 30, round 5: there these reach smaller S criteria
#: than every elemental and DetS start in a few samples, at the cost of a few milliseconds; the threshold
#: is round 4's small-sample one, so fits from 12 rows per coefficient on are unchanged); ``None``: never
#: (round 4's search: the LTS candidates and :func:`deterministic_starts`, two finalists)
SMALL_N_STARTS_ROWS_PER_COEF = 12.0
#: I-steps of a finalist at most below :data:`SMALL_N_STARTS_ROWS_PER_COEF` rows per coefficient (issue 30, round 20:
#: at 60 the deterministic starts' fit of the good rows can stop short of its basin while a start on a cluster of
#: leverage points has converged -- 30 rows, 3 exact-fit leverage points: criterion 1.094 after 60 steps, 0.978
#: after 300; the benchmark's bad leverage 30/3 cell 1.107 -> 1.024 of statsmodels' MM's slope MSE, the fresh
#: held-out group unchanged but one set by 0.008 %); ``None``: :data:`_S_MAX_STEPS` there too (rounds 5-19)
S_MAX_STEPS_SMALL = 500


def _rho(u):
    t = np.minimum((u / C_BISQUARE) ** 2, 1.0)
    return 1.0 - (1.0 - t) ** 3


def _weights(u):
    """Biweight IRLS weight ``psi(u) / u``, up to a constant factor."""
    t = (u / C_BISQUARE) ** 2
    return np.where(t < 1.0, (1.0 - t) ** 2, 0.0)


def _mean_rho(r, sw, wt, s):
    return float(sw @ _rho(r / s)) / wt


def m_scale(r, sw, b=B_HALF):
    """The biweight M-scale of residuals ``r`` (sample weights ``sw``), 50 %-breakdown at ``b = 1/2``.

    The root ``s`` of ``sum_i sw_i rho(r_i / s) = b sum_i sw_i``; 0 when at least a share ``1 - b``
    of the weight sits on residuals that are exactly 0 (an exact fit of half the data at ``b = 1/2``).
    ``b`` in (0, 1): a smaller ``b`` is robustbase's finite-sample S scale (``b (n - p) / n``,
    :mod:`._flags`).
    """
    wt = float(sw.sum())
    a = np.abs(r)
    if float(sw @ (a > 0)) <= b * wt:
        return 0.0
    # rho(u) <= 3 (u / c)^2, so the mean rho at hi is at most b: hi is an upper bracket
    hi = math.sqrt(3.0 * float(sw @ (a * a)) / wt / b) / C_BISQUARE
    if not math.isfinite(hi):  # residuals beyond 1e154 (a target near 1e300): the squares in units of the largest
        big = float(a.max())
        hi = big * math.sqrt(3.0 * float(sw @ ((a / big) ** 2)) / wt / b) / C_BISQUARE
    hi *= 1.0 + 1e-12
    lo = hi
    for _ in range(2100):  # halve down to a lower bracket (exists: more than b of the weight is nonzero)
        lo *= 0.5
        if lo == 0.0:
            return 0.0
        if _mean_rho(a, sw, wt, lo) > b:
            break
    hi = lo * 2.0  # the last value with mean rho <= b
    return optimize.brentq(lambda s: _mean_rho(a, sw, wt, s) - b, lo, hi, xtol=1e-300, rtol=1e-12)


def _i_steps(Xa, y, sw, theta, scale, n_steps, tol=_S_TOL, b=B_HALF):
    """I-steps of Fast-S from ``theta`` at scale ``scale``; returns ``(theta, scale)``.

    Each step fits weighted least squares with biweight weights at the current scale and
    then moves the scale by one fixed-point step of its M-equation, ``s^2 <- s^2 mean
    rho(r / s) / b``.  Stops after ``n_steps`` or when no coefficient moves by more than
    ``tol (1 + max |theta|)``.  The returned scale is the exact M-scale (at ``b``) of the returned fit.
    """
    wt = float(sw.sum())
    for _ in range(n_steps):
        if scale <= 0.0:
            break
        w = _weights((y - Xa @ theta) / scale)
        if float(sw @ (w > 0)) <= 0.0:
            break
        new = wls(Xa, y, sw * w)
        if not np.all(np.isfinite(new)):
            break
        r = y - Xa @ new
        scale = scale * math.sqrt(max(_mean_rho(r, sw, wt, scale), 0.0) / b)
        done = np.max(np.abs(new - theta)) <= tol * (1.0 + np.max(np.abs(theta)))
        theta = new
        if done:
            break
    return theta, m_scale(y - Xa @ theta, sw, b)


def deterministic_starts(Xa, y, sw):
    """DetS-like starting fits from robust distances in the design (not the targets).

    Columns of ``Xa`` with a positive MAD (the intercept and constant or mostly-constant
    columns are left out) are standardised by median and MAD; for each of five robust
    correlation estimates (tanh transform, Spearman ranks, normal scores, spatial signs,
    the half-sample nearest the median) the data are rotated onto its eigenvectors, the
    rotated columns standardised by median and MAD, and least squares (weights ``sw``) is
    fitted on the ``n // 2 + 1`` positive-weight rows with the smallest squared distance.
    Returns a list of parameter vectors (empty without a usable column).
    """
    pos = np.flatnonzero(sw > 0)
    Z = Xa[pos]
    n = len(pos)
    med = np.median(Z, axis=0)
    mad = np.median(np.abs(Z - med), axis=0)
    keep = mad > 0
    if not keep.any():
        return []
    Z = (Z[:, keep] - med[keep]) / mad[keep]
    q = Z.shape[1]
    h = min(n, max(n // 2 + 1, Xa.shape[1] + 1))
    corrs = []
    T = np.tanh(Z)
    R = _ranks(Z)
    N = special.ndtri((R - 1.0 / 3.0) / (n + 1.0 / 3.0))
    norms = np.sqrt(np.einsum("ij,ij->i", Z, Z))
    U = Z / np.maximum(norms, np.finfo(float).tiny)[:, None]
    near = np.argpartition(norms, h - 1)[:h] if h < n else np.arange(n)
    for M in (T, R, N):
        corrs.append(np.atleast_2d(np.cov(M, rowvar=False)))
    corrs.append(U.T @ U / n)
    corrs.append(np.atleast_2d(np.cov(Z[near], rowvar=False)) if h > 1 else np.eye(q))
    out = []
    for S in corrs:
        if not np.all(np.isfinite(S)):
            continue
        E = np.linalg.eigh(S)[1]
        B = Z @ E
        bm = np.median(B, axis=0)
        bs = np.median(np.abs(B - bm), axis=0)
        ok = bs > 0
        if not ok.any():
            continue
        d = (((B[:, ok] - bm[ok]) / bs[ok]) ** 2).sum(axis=1)
        idx = pos[np.argpartition(d, h - 1)[:h]] if h < n else pos
        theta = wls(Xa[idx], y[idx], sw[idx])
        if np.all(np.isfinite(theta)) and not any(np.array_equal(theta, o) for o in out):
            out.append(theta)
    return out


def lad_fit(Xa, y, sw):
    """Weighted least-absolute-deviations fit ``argmin_theta sum_i sw_i |y_i - Xa_i @ theta|`` (HiGHS LP).

    The linear programme ``min sw @ (u + v)`` subject to ``Xa theta + u - v = y``, ``u, v >= 0``
    (``theta`` free), on the positive-weight rows.  Returns the parameter vector, or ``None`` if the
    solver fails.
    """
    pos = np.flatnonzero(sw > 0)
    A, b, w = Xa[pos], y[pos], sw[pos]
    m, p = A.shape
    eye = sparse.identity(m, format="csr")
    A_eq = sparse.hstack([sparse.csr_matrix(A), eye, -eye], format="csr")
    c = np.concatenate([np.zeros(p), w, w])
    bounds = [(None, None)] * p + [(0.0, None)] * (2 * m)
    res = optimize.linprog(c, A_eq=A_eq, b_eq=b, bounds=bounds, method="highs")
    if res.status != 0 or not np.all(np.isfinite(res.x[:p])):
        return None
    return res.x[:p]


def small_n_starts(Xa, y, sw):
    """The extra starts of small samples (:data:`SMALL_N_STARTS_ROWS_PER_COEF`).

    The least-absolute-deviations fit (:func:`lad_fit`: its breakdown point in ``y`` is 1/2, so
    it is a start of the right kind in samples too small for many distinct elemental subsets),
    and, when exactly one column of ``Xa`` has a positive MAD, least squares on the ``h = n // 2
    + 1`` rows (at least one more than the parameters) in the middle of that column's order
    (equal-tail trimming: the second one-variable start of statsmodels' DetS, where
    :func:`deterministic_starts` has one distinct start only).  Returns a list of parameter
    vectors.
    """
    out = []
    theta = lad_fit(Xa, y, sw)
    if theta is not None:
        out.append(theta)
    pos = np.flatnonzero(sw > 0)
    Z = Xa[pos]
    mad = np.median(np.abs(Z - np.median(Z, axis=0)), axis=0)
    if int((mad > 0).sum()) == 1:
        n = len(pos)
        h = min(n, max(n // 2 + 1, Xa.shape[1] + 1))
        order = np.argsort(Z[:, np.flatnonzero(mad > 0)[0]], kind="stable")
        idx = pos[order[(n - h) // 2 : (n - h) // 2 + h]]
        theta = wls(Xa[idx], y[idx], sw[idx])
        if np.all(np.isfinite(theta)):
            out.append(theta)
    return out


def x_central_rows(Xa, sw, level=0.975):
    """Positive-weight rows that are not outlying in the design: robust distance below a quantile.

    Columns of ``Xa`` with a positive MAD are standardised by median and MAD (times 1.4826),
    rotated onto the eigenvectors of their spatial-sign correlation, the rotated columns
    standardised by median and MAD again; a row is central if its squared distance is at
    most the ``level`` quantile of chi-square with as many degrees of freedom as columns (the
    null law for a Gaussian design), or the median distance if that is larger (at least half
    the rows are central).  Returns the row indices; all positive-weight rows without a usable
    column.
    """
    pos = np.flatnonzero(sw > 0)
    Z = Xa[pos]
    med = np.median(Z, axis=0)
    mad = _MAD_TO_SD * np.median(np.abs(Z - med), axis=0)
    keep = mad > 0
    if not keep.any():
        return pos
    Z = (Z[:, keep] - med[keep]) / mad[keep]
    norms = np.sqrt(np.einsum("ij,ij->i", Z, Z))
    U = Z / np.maximum(norms, np.finfo(float).tiny)[:, None]
    B = Z @ np.linalg.eigh(U.T @ U / len(U))[1]
    bm = np.median(B, axis=0)
    bs = _MAD_TO_SD * np.median(np.abs(B - bm), axis=0)
    ok = bs > 0
    if not ok.any():
        return pos
    d = (((B[:, ok] - bm[ok]) / bs[ok]) ** 2).sum(axis=1)
    return pos[d <= max(stats.chi2.ppf(level, int(ok.sum())), float(np.median(d)))]


def s_starts(Xa, y, sw, n_subsets, n_keep, rng, finalists=False):
    """Starting fits by S-estimation from LTS and deterministic starts, best first.

    The LTS search (:func:`~._mixture_start.lts_candidates`, its ``max(n_keep, 5)`` best
    distinct fits) and :func:`deterministic_starts` run on the same rows (at most 1500,
    randomly subsampled above that), below :data:`SMALL_N_STARTS_ROWS_PER_COEF` rows per
    coefficient with :func:`small_n_starts`; every start gets two I-steps there (on all these
    rows), the best ``max(n_keep, 2)`` by the criterion (all of them, below that threshold) are
    iterated to convergence, and the
    ``n_keep`` distinct fits with the smallest criterion are returned (when the search ran on
    a subsample, after at most three I-steps on all rows, re-sorted there).  The criterion is
    the M-scale of the residuals of the rows that are not outlying in ``x``
    (:func:`x_central_rows`): over all rows, a cluster of leverage points lying exactly on a
    hyperplane can have the smaller M-scale -- 20-40 % of the rows on ``y = 2 x_1`` at ``x_1
    ~ 10`` leave the other rows residuals ``2 x_1 + e`` of sd ``sqrt 5``, and the M-scale of
    that fit was 0.99 against 1.46 for the fit of the good rows (100 rows, 30 % on the
    cluster) -- while on the central rows it is the fit of the good rows that is small (0.74
    against 1.94).  Returns ``(thetas, criteria)``, the criteria ascending.

    ``finalists=True`` (issue 30, round L3, for the flags only: ``_flags.FLAG_START``): also returns, third, the
    distinct fits iterated to convergence, ascending in the criterion (the first is ``thetas[0]``), when the search
    ran on all positive-weight rows, and ``None`` when it ran on a subsample.  Nothing else changes: the same draws,
    the same ``thetas`` and ``criteria``.
    """
    sub, lts = lts_candidates(Xa, y, sw, n_subsets, max(n_keep, _S_LTS), rng)
    Xs, ys, ws = Xa[sub], y[sub], sw[sub]
    central = x_central_rows(Xs, ws)

    def criterion(theta, Xa=Xs, y=ys, sw=ws, rows=central):  # M-scale on the x-central rows
        return m_scale(y[rows] - Xa[rows] @ theta, sw[rows])

    starts = list(lts) + deterministic_starts(Xs, ys, ws)
    n_final, max_steps = max(n_keep, _S_FINAL), _S_MAX_STEPS
    if SMALL_N_STARTS_ROWS_PER_COEF is not None and is_small(ws, Xs.shape[1], SMALL_N_STARTS_ROWS_PER_COEF):
        starts += small_n_starts(Xs, ys, ws)
        n_final = len(starts)  # every start iterated to convergence: the extra ones never displace a finalist
        max_steps = _S_MAX_STEPS if S_MAX_STEPS_SMALL is None else S_MAX_STEPS_SMALL
    screened = []
    for theta in starts:
        theta, _ = _i_steps(Xs, ys, ws, theta, m_scale(ys - Xs @ theta, ws), _S_SCREEN_STEPS)
        screened.append((criterion(theta), theta))
    screened.sort(key=lambda t: t[0])
    final = []
    for _, th in screened[:n_final]:
        th = _i_steps(Xs, ys, ws, th, m_scale(ys - Xs @ th, ws), max_steps)[0]
        final.append((criterion(th), th))
    final.sort(key=lambda t: t[0])
    out, distinct = [], []
    for c, theta in final:
        if any(np.allclose(theta, o, rtol=1e-6, atol=1e-9) for _, o in distinct):
            continue
        distinct.append((c, theta))
        if len(out) < n_keep:
            out.append((c, theta))
        if len(out) == n_keep and not finalists:
            break
    pos = np.flatnonzero(sw > 0)
    found = [th for _, th in distinct] if len(sub) == len(pos) else None
    if len(sub) < len(pos):
        Xp, yp, wp = Xa[pos], y[pos], sw[pos]
        out = [_i_steps(Xp, yp, wp, th, m_scale(yp - Xp @ th, wp), _S_POLISH_STEPS)[0] for _, th in out]
        rows = x_central_rows(Xp, wp) if len(out) > 1 else np.arange(len(pos))  # one fit: nothing to sort
        out = sorted(((criterion(th, Xp, yp, wp, rows), th) for th in out), key=lambda t: t[0])
    if finalists:
        return [th for _, th in out], [c for c, _ in out], found
    return [th for _, th in out], [c for c, _ in out]


def mm_for_flags(Xa, y, sw, theta0, floor):
    """The MM-estimate whose residuals the loss choice's guard reads (and, under ``_flags.FLAG_RULE = "round14"``
    only, ``flag_outliers``'s fit above ``_flags.FINITE_SAMPLE_FLAGS_ROWS_PER_COEF`` rows per coefficient; the
    default flags, round L2, use ``_flags.flags_mm_fit`` at every n).

    Tukey (4.685) IRLS from the high-breakdown start ``theta0`` at the start's 50 %-breakdown
    M-scale ``s_S`` (:func:`m_scale`, the S-estimate's scale); the flagging scale is ``max(s_S,
    residual_scale(r_MM))`` (the corrected MAD of the MM residuals), never below ``floor``.
    Returns ``(theta, scale)`` in the units of ``Xa`` and ``y``.
    """
    s_S = max(m_scale(y - Xa @ theta0, sw), floor)
    theta, _ = irls(Xa, y, sw, theta0, s_S, TukeyBiweight(4.685), wls)
    scale = max(s_S, residual_scale(y - Xa @ theta, sw, Xa.shape[1], weighted_median), floor)
    return theta, scale
