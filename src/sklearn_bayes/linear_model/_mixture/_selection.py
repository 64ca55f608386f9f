"""The ``variant="min_variance"`` fit of :class:`~sklearn_bayes.MixtureMEstimatorRegressor`.

A family of M-estimators (least squares, Huber, Tukey biweight and Cauchy losses with
several tuning constants) is fitted by iteratively reweighted least squares from one
high-breakdown start, every member with the same fixed robust residual scale (as an
MM-estimator does), and the member with the smallest estimated asymptotic variance

    V = s^2 tr(A^-1 B A^-1),  A = sum psi'(r_i / s) x_i x_i^T,  B = sum psi(r_i / s)^2 x_i x_i^T

(the trace of the sandwich covariance of the slopes, estimated at the residuals of one
common MM step) is kept: an adaptive M-estimator in the
sense of Hogg ("Adaptive robust procedures", JASA 1974) chosen by a predictive criterion,
not by the likelihood of a fitted error density.

Inputs are the standardised augmented design, the targets, the sample weights and the
start; outputs are plain arrays.  No estimator state is touched here.
"""

import math

import numpy as np
from scipy import stats

from sklearn_bayes.linear_model._mixture._norms import Cauchy, HuberT, LeastSquares, TukeyBiweight

_MAD_TO_SD = 1.482602218505602  # 1 / Phi^{-1}(3/4)

#: the candidate losses, each with its tuning constant in units of the robust scale
FAMILY = (
    LeastSquares(),
    HuberT(1.0),
    HuberT(1.345),
    HuberT(2.0),
    HuberT(3.0),
    TukeyBiweight(3.44),
    TukeyBiweight(4.685),
    TukeyBiweight(6.0),
    Cauchy(1.0),
    Cauchy(1.5),
)


def irls(Xa, y, sw, theta, scale, norm, wls, max_iter=200, tol=1e-8):
    """M-estimate of the loss ``norm`` with fixed ``scale`` by IRLS from ``theta``; returns ``(theta, n_iter)``.

    Stops when no coefficient moves by more than ``tol (1 + max |theta|)`` (standardised units,
    where a coefficient's standard error is about ``1 / sqrt(n)``).
    """
    for it in range(1, max_iter + 1):
        w = norm.weights((y - Xa @ theta) / scale)
        new = wls(Xa, y, sw * w)
        done = np.max(np.abs(new - theta)) <= tol * (1.0 + np.max(np.abs(theta)))
        theta = new
        if done:
            return theta, it
    return theta, max_iter


def newton_polish(Xa, y, sw, theta, scale, norm, A, wls, tol=1e-8, max_iter=50):
    """Root of ``sum_i w_i psi((y_i - x_i @ theta) / s) x_i = 0`` near ``theta`` by Newton steps with a fixed matrix.

    ``A`` approximates ``sum_i w_i psi'(u_i) x_i x_i^T`` at the root (the estimating equation's
    Jacobian times ``-s``), e.g. from a subsample fit scaled to the total weight.  Each step,
    ``theta += s A^-1 sum_i w_i psi(u_i) x_i``, costs two products with ``Xa`` (no Gram
    matrix); the error contracts by about ``q = ||I - A^-1 A_true||`` per step.  The root is the
    one IRLS converges to (IRLS solves the same equation, ``psi(u) = w(u) u``).  Stops when a
    step moves no coefficient by more than ``tol (1 + max |theta|)`` (the rule of :func:`irls`)
    or, from the second step on, when the distance left to the root after the step, at most
    ``q / (1 - q)`` times the step with ``q`` estimated by the ratio of the last two steps (the
    a-posteriori bound of a contraction), is below that: one gradient fewer (two products with
    ``Xa``) for the same accuracy.  Falls back to :func:`irls` from the current point if ``A`` is
    not positive definite or a step does not shrink (a contraction factor above 1/2).  Returns
    ``(theta, n_iter)``.
    """
    try:
        L = np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        return irls(Xa, y, sw, theta, scale, norm, wls, tol=tol)
    prev = math.inf
    for it in range(1, max_iter + 1):
        psi = norm.psi((y - Xa @ theta) / scale)
        g = Xa.T @ (sw * psi)
        step = scale * np.linalg.solve(L.T, np.linalg.solve(L, g))
        size = float(np.max(np.abs(step)))
        if not np.isfinite(size) or size > 0.5 * prev:
            th, n = irls(Xa, y, sw, theta, scale, norm, wls, tol=tol)
            return th, it + n
        theta = theta + step
        q = size / prev  # < 1/2 here; no estimate at the first step (prev = inf)
        left = size * q / (1.0 - q) if it > 1 else size  # bound on the distance left to the root (< size)
        if left <= tol * (1.0 + np.max(np.abs(theta))):
            return theta, it
        prev = size
    return theta, max_iter


def polish_from_subsample(sub, full, theta, scale, norm, wls, tol):
    """The all-row root of the ``norm`` M-estimate near ``theta``, its fit on the subsample ``sub``.

    ``sub`` has ``Xa``, ``y``, ``sw`` of the subsample; ``full`` is ``(Xa, y, sw)`` of all rows.
    :func:`newton_polish` with the subsample's ``psi'``-weighted Gram at ``theta`` scaled by
    the ratio of the total weights (no all-row Gram matrix)."""
    A = psi_curvature(sub.Xa, sub.y - sub.Xa @ theta, sub.sw, scale, norm)
    A *= float(full[2].sum()) / float(sub.sw.sum())
    return newton_polish(*full, theta, scale, norm, A, wls, tol=tol)[0]


def psi_curvature(Xa, r, sw, scale, norm):
    """``A = sum_i w_i psi'(r_i / s) x_i x_i^T``."""
    dpsi = norm.psi_terms(r / scale)[2]
    return Xa.T @ (Xa * (sw * dpsi)[:, None])


def _overflowed(M):
    """Whether ``M`` holds an infinity (an overflow: the fit runs under ``np.errstate(over="ignore")``)."""
    return bool(np.isinf(M).any())


def relative_weights(sw):
    """``sw`` divided by its mean over the positive entries: exactly 1.0 on them for uniform weights (divided by
    their largest first), ``sw`` itself, bit for bit, for unit weights."""
    pos = sw > 0
    if not pos.any():
        return sw
    v = sw / float(np.max(sw[pos]))
    return v / float(np.mean(v[pos]))


def sandwich_core(Xa, r, sw, scale, norm, A=None):
    """``A^-1 B A^-1`` of the ``norm`` M-estimator at residuals ``r`` (the sandwich in units of ``s^2``).

    ``A = sum_i w_i psi'(u_i) x_i x_i^T``, ``B = sum_i w_i v_i psi(u_i)^2 x_i x_i^T``, ``u = r / s``, with
    ``v_i = w_i / mean(w)`` (:func:`relative_weights`): the rows of the estimating equation ``sum_i w_i psi(u_i)
    x_i = 0`` are independent, so its variance holds ``w_i^2`` (statsmodels' WLS HC meat; review HMX F1: ``w_i``
    counted a row of weight 0.01 as a full row, coverage 0.72 at nominal 0.95).  Times ``sum(w) / m`` (as the
    callers do) this is the ``w^2`` sandwich at weights of mean one, invariant to the weights' overall size;
    ``v = 1`` for uniform weights (bit for bit for unit weights);
    ``None`` if ``A`` is not positive definite, or if ``A`` or ``B`` overflows (an infinite variance: least
    squares' ``psi^2`` of a gross target, ``y >= 1e155``; its products with zeros were NaN, with ~1500
    ``RuntimeWarning`` s a fit).  A NaN among the residuals or weights is not hidden.  :func:`sandwich_variance`
    (the selection) and the estimator's ``coef_covariance_`` both use it.  ``A``: the matrix if already computed
    (it is then not recomputed).
    """
    _, psi, dpsi = norm.psi_terms(r / scale)
    if A is None:
        XA = Xa * (sw * dpsi)[:, None]
        if _overflowed(XA):
            return None
        A = Xa.T @ XA
    wB = sw * relative_weights(sw) * psi * psi
    if np.isinf(wB).any():
        return None
    XB = Xa * wB[:, None]
    if _overflowed(XB):
        return None
    B = Xa.T @ XB
    if _overflowed(A) or _overflowed(B):
        return None
    try:
        L = np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        # columns that are 0 on every row (a constant or aliased feature with an intercept: the estimator zeroes
        # them) carry no parameter: the sandwich of the others, 0 for theirs (else every loss read inf and the
        # selection fell to its first member, least squares)
        live = np.any(Xa != 0, axis=0)
        if live.all() or not live.any():
            return None
        V = sandwich_core(Xa[:, live], r, sw, scale, norm)
        if V is None:
            return None
        out = np.zeros((len(A), len(A)))
        out[np.ix_(live, live)] = V
        return out
    Ai = np.linalg.solve(L.T, np.linalg.solve(L, np.eye(len(A))))
    return Ai @ B @ Ai


def sandwich_variance(Xa, r, sw, scale, norm, slopes):
    """Trace over the ``slopes`` columns of the sandwich covariance of the ``norm`` M-estimator at residuals ``r``.

    ``s^2 A^-1 B A^-1`` with ``A = sum_i w_i psi'(u_i) x_i x_i^T``, ``B = sum_i w_i v_i psi(u_i)^2
    x_i x_i^T`` (:func:`sandwich_core`: ``v`` the relative weights), ``u = r / s`` (Huber, "Robust regression: asymptotics, conjectures and Monte
    Carlo", 1973), times ``n / (n - p)``; ``inf`` if ``A`` is not positive definite (a
    redescending loss whose ``psi'`` is negative on too many rows).
    """
    V = sandwich_core(Xa, r, sw, scale, norm)
    if V is None:
        return math.inf
    wt, p = float(sw.sum()), Xa.shape[1]
    t = float(np.trace(V[np.ix_(slopes, slopes)])) * scale * scale * wt / max(wt - p, 1.0)
    return t if np.isfinite(t) else math.inf


def residual_scale(r, sw, p, weighted_median):
    """``1.4826 * median |r|`` (sample-weighted), corrected by ``sqrt(n / (n - p))``.

    ``n`` is Kish's effective number of rows ``(sum w)^2 / sum w^2`` (the number of rows with
    positive weight for equal weights): the correction does not depend on the weights'
    overall size (with ``n = sum(w)``, weights 1e-300 shrank the scale by 1e-149).
    """
    wt = float(sw.sum())
    n_eff = wt * (wt / float(sw @ sw)) if wt > 0 else 0.0
    return _MAD_TO_SD * weighted_median(np.abs(r), sw) * math.sqrt(n_eff / max(n_eff - p, 1.0))


def _ranks(Z):
    """Column ranks 1..n (average ranks of ties, as ``scipy.stats.rankdata``), by one argsort."""
    n = Z.shape[0]
    order = np.argsort(Z, axis=0, kind="stable")
    R = np.empty(Z.shape)
    np.put_along_axis(R, order, np.arange(1.0, n + 1.0)[:, None], axis=0)
    srt = np.take_along_axis(Z, order, axis=0)
    for j in np.flatnonzero(np.any(srt[1:] == srt[:-1], axis=0)):  # columns with ties
        R[:, j] = stats.rankdata(Z[:, j])
    return R


def _centred_ranks(v):
    """Average ranks of ``v`` minus their mean (ties share a rank)."""
    rk = stats.rankdata(v)
    return rk - rk.mean()


def mean_misspecification(Xa, y, r, sw, scale, slopes, cutoff=4.685, max_rows=2000):
    """Rank test of a nonlinear mean on the rows a Tukey (``cutoff``) fit does not reject.

    On the rows with ``sw > 0`` and ``|r| < cutoff * scale`` (gross outliers and bad leverage
    points carry no weight in the robust fit and would look like curvature), the Spearman
    correlations ``rho`` of the residuals ``r`` with ``g_0 = (yhat - median yhat)^2`` (``yhat =
    y - r``) and ``g_j = (x_j - median x_j)^2`` for every ``slopes`` column: a RESET-type test in
    ranks.  If the residual ranks are a uniformly random permutation given ``x`` -- a linear mean
    with i.i.d. errors of ANY law, heavy-tailed, skewed or asymmetric -- then ``E rho = 0`` and
    ``cov(rho) = R / (m - 1)`` exactly (``m`` rows, ``R`` the rank-correlation matrix of the
    ``g``), so ``T = (m - 1) rho' R^+ rho`` is asymptotically chi-square with ``rank(R)``
    degrees of freedom.  Above ``max_rows`` kept rows an evenly spaced subset of them is tested
    (the ranks cost ``O(m log m)`` per column; the subset does not depend on ``r``, so the
    null law is unchanged).  Returns ``(T, df, p_value)``; ``(0.0, 0, 1.0)`` with fewer than
    10 rows.
    """
    keep = np.flatnonzero((sw > 0) & (np.abs(r) < cutoff * scale))
    keep = keep[:: max(1, -(-len(keep) // max_rows))]  # at most max_rows, evenly spaced (chosen without r)
    if len(keep) < 10:
        return 0.0, 0, 1.0
    yhat = y[keep] - r[keep]
    cols = [(yhat - np.median(yhat)) ** 2] + [(Xa[keep, j] - np.median(Xa[keep, j])) ** 2 for j in slopes]
    return _rank_chi2(cols, r[keep])


def _rank_chi2(cols, v):
    """``T = (m - 1) rho' R^+ rho`` of the Spearman correlations ``rho`` of ``v`` with the columns ``cols``.

    ``R`` is the columns' rank-correlation matrix; if the ranks of ``v`` are a uniformly random
    permutation given the columns, ``T`` is asymptotically chi-square with ``rank(R)`` degrees of
    freedom.  Returns ``(T, df, p_value)``; ``(0.0, 0, 1.0)`` when no column has two distinct values.
    """
    m = len(v)
    G = _ranks(np.column_stack(cols))  # the columns' average ranks in one argsort
    G -= G.mean(axis=0)
    norms = np.sqrt(np.einsum("ij,ij->j", G, G))
    G = G[:, norms > 0] / norms[norms > 0]
    if G.shape[1] == 0:
        return 0.0, 0, 1.0
    e = _centred_ranks(v)
    e = e / np.sqrt(e @ e) if e @ e > 0 else e
    rho = G.T @ e  # Spearman correlations
    R = G.T @ G  # their rank-correlation matrix
    w, V = np.linalg.eigh(R)
    pos = w > 1e-8 * w.max()
    z = V[:, pos].T @ rho
    T = float((m - 1) * np.sum(z * z / w[pos]))
    df = int(pos.sum())
    return T, df, float(stats.chi2.sf(T, df))


def spread_dependence(Xa, r, sw, slopes):
    """Rank test of heteroscedasticity: does ``|r|`` grow with the distance of ``x`` from its centre?

    On the rows with ``sw > 0``, the Spearman correlations of ``|r|`` with ``(x_j - median x_j)^2``
    for every ``slopes`` column, combined as in :func:`mean_misspecification` (a Koenker-type
    studentised Breusch-Pagan test in ranks): if the errors are i.i.d. and independent of ``x``, the
    ranks of ``|r|`` are a uniformly random permutation given ``x`` (up to the fit's dependence on
    the rows) and ``T`` is asymptotically chi-square.  No rows are left out: the large residuals are
    the signal.  Returns ``(T, df, p_value)``; ``(0.0, 0, 1.0)`` with fewer than 10 rows.
    """
    keep = np.flatnonzero(sw > 0)
    if len(keep) < 10:
        return 0.0, 0, 1.0
    cols = [(Xa[keep, j] - np.median(Xa[keep, j])) ** 2 for j in slopes]
    return _rank_chi2(cols, np.abs(r[keep]))


def spread_growth(Xa, r, sw, slopes):
    """One-sided rank test of spread growing with ``x``: the largest normal-score correlation over the columns.

    On the rows with ``sw > 0`` (``m`` of them), the ranks of ``|r|`` are scored by the half-normal quantiles
    ``a_i = Phi^{-1}(1/2 + rank_i / (2 (m + 1)))`` (the normal scores of a folded variable: the upper ranks, where
    errors whose sd grows with ``|x|`` put their signal, weigh more than in Spearman's ranks), and correlated with
    the ranks of ``(x_j - median x_j)^2`` for every ``slopes`` column: ``z_j = sqrt(m - 1) a' g_j`` with both
    score vectors centred and of unit length.  If the ranks of ``|r|`` are a uniformly random permutation given
    ``x`` (i.i.d. errors of any law, up to the fit's dependence on the rows), each ``z_j`` has mean 0 and variance
    1 exactly and is asymptotically normal, so ``p = min(1, k Phi(-max_j z_j))`` over the ``k`` non-constant
    columns bounds the chance of so large a maximum (Bonferroni; nearly exact at small levels).  Against spread
    growing in one direction of ``x`` it is more powerful than :func:`spread_dependence`'s joint two-sided
    chi-square (errors with sd proportional to ``|x_1|``, three normal slopes, the Huber (1.345) residuals, 40
    rows: 54 of 100 draws rejected at 0.001 against 27; issue 30, round 10).  Returns ``(max_j z_j, k,
    p_value)``; ``(0.0, 0, 1.0)`` with fewer than 10 rows, no column with two distinct values or all ``|r|`` tied.
    """
    keep = np.flatnonzero(sw > 0)
    m = len(keep)
    if m < 10:
        return 0.0, 0, 1.0
    G = _ranks(np.column_stack([(Xa[keep, j] - np.median(Xa[keep, j])) ** 2 for j in slopes]))
    G -= G.mean(axis=0)
    norms = np.sqrt(np.einsum("ij,ij->j", G, G))
    G = G[:, norms > 0] / norms[norms > 0]
    rank = stats.rankdata(np.abs(r[keep]))
    if G.shape[1] == 0 or rank.min() == rank.max():  # all |r| tied: a - mean(a) was rounding noise, not 0
        return 0.0, 0, 1.0
    a = stats.norm.ppf(0.5 + 0.5 * rank / (m + 1))
    a -= a.mean()
    z = float(np.max(G.T @ (a / np.sqrt(a @ a)))) * math.sqrt(m - 1)
    k = G.shape[1]
    return z, k, float(min(1.0, k * stats.norm.sf(z)))


#: what :func:`huber_with_own_scale` returns when its alternation of IRLS steps and scales has not converged in
#: ``max_iter`` steps (issue 30, round 22): ``"min_scale"`` (default) the loss's IRLS at the fixed scale of the
#: iterate whose own scale was smallest, from that iterate; ``"start_scale"`` the same at the scale it was given,
#: from the fit it was given (an MM step; unit-stable to 1e-7 SE but 1.0017 +- 0.0010 of the held-out error on the
#: 20 affected real sets); ``False`` the last iterate, as rounds 1-21 had it (its loss flipped with the units of ``y``)
OWN_SCALE_FALLBACK = "min_scale"


def huber_with_own_scale(Xa, y, sw, theta, scale, norm, wls, weighted_median, floor, max_iter=200, tol=1e-8):
    """M-estimate of the loss ``norm`` (a Huber loss) whose scale is the :func:`residual_scale` of its own residuals.

    Alternates one IRLS step at the current scale with a new scale from the new residuals
    (as statsmodels' ``RLM`` with ``HuberT`` does), from ``theta`` and ``scale``; stops when no
    coefficient moves by more than ``tol (1 + max |theta|)``.  If that does not happen in
    ``max_iter`` steps (a median scale of a few rows can jump between values for ever), the fit is
    the loss's IRLS at a fixed scale chosen by :data:`OWN_SCALE_FALLBACK` (``n_iter`` then exceeds
    ``max_iter``).  Returns ``(theta, scale, n_iter)``.
    """
    p = Xa.shape[1]
    theta0, scale0 = theta, scale
    best = None  # the iterate of smallest own scale (OWN_SCALE_FALLBACK "min_scale")
    for it in range(1, max_iter + 1):
        new = wls(Xa, y, sw * norm.weights((y - Xa @ theta) / scale))
        scale = max(residual_scale(y - Xa @ new, sw, p, weighted_median), floor)
        done = np.max(np.abs(new - theta)) <= tol * (1.0 + np.max(np.abs(theta)))
        theta = new
        if done:
            return theta, scale, it
        if best is None or scale < best[1]:
            best = (theta, scale)
    if not OWN_SCALE_FALLBACK:
        return theta, scale, it
    # not converged: the alternation is not a descent method (a median scale of a few rows jumps as rows cross
    # the rejection point; longley split 7, 12 rows, 5 coefficients: Tukey's scale wandered 31-61 for 200 steps)
    # and its last iterate depended on rounding (the units of y).  The fit is then the loss's IRLS at one fixed
    # scale (monotone in the loss's objective, converges; the scale and start chosen by OWN_SCALE_FALLBACK)
    if OWN_SCALE_FALLBACK == "min_scale":
        theta0, scale0 = best
    elif OWN_SCALE_FALLBACK != "start_scale":
        raise ValueError(f"OWN_SCALE_FALLBACK must be 'min_scale', 'start_scale' or False, got {OWN_SCALE_FALLBACK!r}")
    theta, n = irls(Xa, y, sw, theta0, scale0, norm, wls, max_iter=max_iter, tol=tol)
    return theta, scale0, max_iter + n


#: level of the rank test of a nonlinear mean (:func:`mean_misspecification`) in :func:`select`
MISSPECIFICATION_LEVEL = 0.001
#: the loss kept when the test rejects: Huber's, with the usual 95 %-efficiency constant
MISSPECIFIED_LOSS = HuberT(1.345)


#: below this many (effective) rows per fitted coefficient :func:`select` takes the small-sample path
SMALL_N_ROWS_PER_COEF = 8.0
#: the loss of the small-sample path (polished from a Huber fit, both with their own scales)
SMALL_N_LOSS = TukeyBiweight(4.685)
#: from this many rows per coefficient on, the small-sample fit must flag every row the MM fit rejects
GUARD_ROWS_PER_COEF = 4.0
#: level of the rank test of heteroscedasticity (:func:`spread_dependence`) that keeps the small-sample fit
#: monotone (issue 30, round 3; None: the Tukey step always, as round 2 had it)
HETEROSCEDASTICITY_LEVEL = 0.05
#: the loss fitted (from the Huber 1.345 fit, with its own scale) where the rank test of heteroscedasticity rejects
#: below 12 rows per coefficient (issue 30, round 8; None: the Huber 1.345 fit is kept below 8 rows per
#: coefficient and nothing is tested from 8 to 12, as round 7 had it).  Errors whose sd grows with ``|x|`` have a
#: peaked scale-mixture marginal; the asymptotic slope variance of Huber (c) at its own MAD scale then falls as c
#: falls (sd proportional to ``|x_1|``, three normal slopes: 1.14 times the c -> 0 limit at c = 1.0, 1.20 at 1.345)
#: while c = 1.0 keeps 90 % efficiency at the normal law (1.345: 95 %)
HETEROSCEDASTIC_LOSS = HuberT(1.0)
#: level of that test from 8 to 12 rows per coefficient (below 8: :data:`HETEROSCEDASTICITY_LEVEL`, the test that
#: already keeps the small-sample path monotone); 0.05 and 0.01 lost dev sets whose residual spread follows ``x``
#: but whose best fit is not Huber's (hills, Animals; delivery, rock), 0.001 none
HETEROSCEDASTICITY_BAND_LEVEL = 0.001
#: the test of :func:`heteroscedastic_band`: ``"growth"`` (default) the one-sided normal-score maximum
#: :func:`spread_growth` (issue 30, round 10: 54 of 100 heteroscedastic draws at 40 rows rejected against 27,
#: slope MSE 1.075 of the best M-estimator's against 1.152); ``"chi2"`` :func:`spread_dependence`, as rounds 8
#: and 9 had it.  Below 8 rows per coefficient the small-sample path keeps :func:`spread_dependence` (the maximum
#: lost aircraft, pilot and heart there)
HETEROSCEDASTICITY_BAND_TEST = "growth"
#: the guard asks about the rows the MM fit rejects, beyond this many of its scales (the constant of its Tukey
#: loss: zero weight); round 2 asked about the rows it flags (2.5)
MM_REJECTION = 4.685
#: below 8 rows per coefficient the small-sample path's test of spread also fires where the one-sided maximum
#: :func:`spread_growth` rejects at its level and the Huber (1.345) fit is not drawn towards a row the MM fit
#: rejects: it leaves each such row at least this share of the MM fit's residual (:func:`not_drawn`; issue 30,
#: round 11: heteroscedastic n = 30 cell 1.203 -> 1.156 of the best M-estimator, delivery 1.107 -> 1.041 of
#: statsmodels' MM; without the second condition one bad leverage point at n = 30 took Huber (1.0) with it, 0.35-0.6
#: of the MM residual left, while the heteroscedastic draws left 0.7 or more).  None: round 10's test alone
SMALL_N_GROWTH_PULL = 0.5


def not_drawn(Xa, y, theta, mm, share=None, sw=None):
    """Whether the fit ``theta`` leaves every row the MM fit ``mm = (theta_mm, scale_mm)`` rejects (``|r| >``
    :data:`MM_REJECTION` ``scale_mm``) at least ``share`` (``None``: :data:`SMALL_N_GROWTH_PULL`) of that row's MM
    residual: a monotone fit that a far-out row pulls towards itself (a bad leverage point) shrinks that residual,
    one whose errors merely grow with ``x`` does not.  True when the MM fit rejects no row.  With weights ``sw``
    only rows of positive weight are asked about (a row of weight 0 is not in the fit)."""
    share = SMALL_N_GROWTH_PULL if share is None else share
    r_mm = y - Xa @ mm[0]
    out = np.abs(r_mm) > MM_REJECTION * mm[1]
    if sw is not None:
        out &= np.asarray(sw) > 0
    return bool(np.all(np.abs(y[out] - Xa[out] @ theta) >= share * np.abs(r_mm[out])))


#: from :data:`GUARD_ROWS_PER_COEF` rows per coefficient on, round 4's comparison may not switch to the Huber fit
#: when the MM fit rejects at least this many rows, every one of them far out in ``x``, and the Huber fit is drawn
#: towards them (:func:`leverage_group`; issue 30, round 11b: bad leverage points at n = 30, p = 3, 2.64 -> 1.35
#: times the best M-estimator's slope MSE: in 5 of 100 draws 6-8 rows on one line, more than the 20 % the trimmed
#: risk drops, which the Huber fit interpolates).  None: never, as round 11 had it
LEVERAGE_GROUP = 3
#: a row is far out in ``x`` where its squared Mahalanobis distance from the rows the MM fit keeps exceeds this
#: quantile of the chi-square law with as many degrees of freedom as slopes
LEVERAGE_QUANTILE = 0.975


def leverage_group(Xa, y, sw, theta, mm, slopes, size=None):
    """Whether the fit ``theta`` is drawn towards a group of bad leverage points that the MM fit ``mm = (theta_mm,
    scale_mm)`` rejects: at least ``size`` (``None``: :data:`LEVERAGE_GROUP`) rows of positive weight with ``|r| >``
    :data:`MM_REJECTION` ``scale_mm``, each at a squared Mahalanobis distance over the ``slopes`` columns from the
    weighted mean and covariance of the rows the MM fit keeps beyond the :data:`LEVERAGE_QUANTILE` quantile of
    chi-square (as many degrees of freedom as that covariance's rank: a constant or repeated column adds no
    distance), and ``theta`` leaves one of them less than
    :data:`SMALL_N_GROWTH_PULL` of its MM residual (not :func:`not_drawn`).  A group of rows on one line far out in
    ``x`` is interpolated by a monotone fit, and when it is more than the share :func:`cv_risk` trims, the
    cross-validated risk of that fit is the smaller one (each held-out row of the group is predicted by the others).
    Outliers in ``y`` at ordinary ``x`` (rock, salinity) never count; false with ``size`` None or fewer kept rows than
    slopes + 2."""
    size = LEVERAGE_GROUP if size is None else size
    if size is None:
        return False
    out, d2, dof, _ = _rejected_distances(Xa, y, sw, mm, slopes)
    if out.sum() < size or d2 is None or not np.all(d2[out] > stats.chi2.ppf(LEVERAGE_QUANTILE, dof)):
        return False
    share = 0.5 if SMALL_N_GROWTH_PULL is None else SMALL_N_GROWTH_PULL
    return not not_drawn(Xa, y, theta, mm, share, sw)


def _rejected_distances(Xa, y, sw, mm, slopes):
    """``(out, d2, dof, m)``: the rows of positive weight the MM fit ``mm`` rejects (``|r| >`` :data:`MM_REJECTION`
    ``scale_mm``), every row's squared Mahalanobis distance over the ``slopes`` columns from the weighted mean and
    covariance of the ``m`` rows of positive weight the MM fit keeps, and that covariance's rank; ``d2`` is ``None``
    when no row is rejected, with fewer kept rows than slopes + 2 or a covariance of rank 0."""
    r_mm = y - Xa @ mm[0]
    pos = sw > 0
    out = pos & (np.abs(r_mm) > MM_REJECTION * mm[1])
    inn = pos & ~out
    m = int(inn.sum())
    if not out.any() or m < len(slopes) + 2:
        return out, None, 0, m
    Z = Xa[:, slopes]
    centre = np.average(Z[inn], axis=0, weights=sw[inn])
    cov = np.atleast_2d(np.cov(Z[inn].T, aweights=sw[inn]))
    D = Z - centre
    d2 = np.einsum("ij,jk,ik->i", D, np.linalg.pinv(cov), D)
    dof = int(np.linalg.matrix_rank(cov))
    return (out, None, 0, m) if dof == 0 else (out, d2, dof, m)


#: from 4 to 8 rows per coefficient the small-sample path's tests of spread leave out the rows the MM fit rejects
#: whose distance in ``x`` from the rows it keeps exceeds the Bonferroni cut at this family-wise level of the exact
#: law of a new normal row's distance (:func:`leverage_rows_left_out`; issue 30, round 13: a bad leverage point at
#: 10 sd in ``x_1``, n = 30, p = 3, read as spread growing with ``x`` took Huber (1.0) with it).  None: every row,
#: as round 11b had it
SPREAD_LEVERAGE_LEVEL = 0.025


def prediction_cut(m, k, level):
    """The ``1 - level / m`` quantile of the squared Mahalanobis distance of a new row from the mean and covariance
    (``ddof=1``) of ``m > k`` rows, all ``m + 1`` drawn from one ``k``-variate normal law: ``(k (m - 1) (m + 1) /
    ((m - k) m)) F_{k, m - k}`` (Hotelling's prediction law)."""
    return float(stats.f.ppf(1.0 - level / m, k, m - k)) * k * (m - 1) * (m + 1) / ((m - k) * m)


def leverage_rows_left_out(Xa, y, sw, mm, slopes, level=None):
    """``sw`` with weight 0 on every row the MM fit ``mm`` rejects that lies farther out in ``x`` than any of the
    rows it keeps plausibly could: a bad leverage point's large residual sits at a large distance in ``x``, which a
    test of spread growing with ``x`` reads as heteroscedasticity.

    With ``m`` kept rows and a covariance of rank ``k`` (:func:`_rejected_distances`), a new row drawn from the same
    normal law has ``d^2 (m / (m + 1)) (m - k) / (k (m - 1))`` distributed as ``F(k, m - k)`` (Hotelling's
    prediction law); a row is left out beyond its ``1 - level / m`` quantile (:func:`prediction_cut`: Bonferroni
    over the rows; ``level``
    ``None``: :data:`SPREAD_LEVERAGE_LEVEL`, which ``None`` turns off).  At ``m = 27``, ``k = 3`` the cut is
    ``d^2 = 25.8``: the heteroscedastic draws' rejected rows reach 9.5-24.6, the bad leverage points (``x_1 ~
    N(10, 1)``) 86-166.  Returns ``sw`` itself (the same object) when no row is left out or ``m <= k``."""
    level = SPREAD_LEVERAGE_LEVEL if level is None else level
    if level is None:
        return sw
    out, d2, k, m = _rejected_distances(Xa, y, sw, mm, slopes)
    if d2 is None or m <= k:
        return sw
    far = out & (d2 > prediction_cut(m, k, level))
    if not far.any():
        return sw
    w = np.array(sw, dtype=float)
    w[far] = 0.0
    return w


#: below this many (effective) rows per coefficient the kept fit is compared with the Huber fit (1.345, own scale)
#: by a K-fold cross-validated trimmed prediction risk (:func:`cv_risk`) and the smaller risk wins (issue 30,
#: round 4; None: never, as round 3 had it)
CV_ROWS_PER_COEF = 12.0
#: folds of :func:`cv_risk` (at most one per row)
CV_FOLDS = 10
#: share of the rows (by weight) whose squared cross-validated errors :func:`cv_risk` averages: the smallest
CV_KEEP = 0.8
#: from this many (effective) rows per coefficient on (and below :data:`CV_ROWS_PER_COEF`), round 4's comparison has
#: a third candidate: robustbase ``lmrob``'s finite-sample MM (:func:`._flags.flags_mm_fit`, the flags' fit since
#: round L2 at every n; round 14's below 4 rows per coefficient), Tukey 4.685 at the finite-sample S scale; the smallest :func:`cv_risk` of the three wins (issue 30, round 17;
#: below 4 rows per coefficient that fit broke longley, toxicity, heart and rock in round 16).  The default since
#: round 18 (dev: sets over the goal-1 limits 7 -> 3 of 62, geometric mean error ratio 0.991 +- 0.005; fresh held18:
#: 1 -> 0 of 12, 0.977 +- 0.013).  None: the two candidates of round 4, as rounds 16 and 17 had it
CV_FINITE_SAMPLE_MM_ROWS_PER_COEF = 4.0
#: the finite-sample MM is kept where its :func:`cv_risk` is below this share of the kept fit's (1.0: any smaller risk,
#: the protocol's rule; round 17's dev sets: 0.85 lost one set, freeny 1.016, against four at 1.0)
CV_FINITE_SAMPLE_MM_MARGIN = 1.0
#: the finite-sample MM is not asked where the one-sided :func:`spread_growth` on the residuals of the comparison's
#: Huber (1.345, own scale) fit has a p-value below this level: spread growing with ``x`` puts the large residuals
#: at the rows far out in ``x``, which carry the slopes and which its redescending loss rejects (issue 30, round
#: 18b).  None (default): always asked, as round 18 had it.  Round 18b measured 0.20, 0.10 and 0.01: each took back
#: part of round 18's cost in the heteroscedastic 30/3 cell (+0.018 -> +0.006 / +0.006 / +0.005 of round 17's slope
#: MSE) but changed splits of the spent held-out group held18 and gave back round 18's gain on bad leverage points at
#: 30/3 (worse than round 18 by 1.9 / 1.9 / 1.3 paired SE: their residuals far out in ``x`` read as growing spread).
#: 0.01 (default since round 20, with :data:`CV_FINITE_SAMPLE_MM_SPREAD_ROWS` ``"refit"``: round 19's V2); None:
#: always asked, rounds 18-19
CV_FINITE_SAMPLE_MM_SPREAD_LEVEL = 0.01
#: the rows and residuals that test reads (issue 30, round 19): ``"all"`` the comparison's Huber residuals on every
#: row (round 18b); ``"mm_kept"`` those residuals on the rows the MM fit does not reject (``|r| <=``
#: :data:`MM_REJECTION` ``scale_mm``); ``"refit"`` (default since round 20) the residuals of the Huber fit refitted
#: without the rows :func:`leverage_rows_left_out` leaves out (MM-rejected rows far out in ``x``), on the rows left
#: (the comparison's Huber residuals on every row when none is left out)
CV_FINITE_SAMPLE_MM_SPREAD_ROWS = "refit"
#: from :data:`CV_FINITE_SAMPLE_MM_ROWS_PER_COEF` rows per coefficient on, where the comparison runs and the MM fit
#: rejects a row far out in ``x`` (:func:`leverage_rows_left_out` leaves one out: a bad leverage point), the fit is
#: the MM fit (Tukey 4.685 at its scale) whatever the cross-validated risks say (issue 30, round 19; an option).
#: False (default): the risks decide, as round 18 had it
LEVERAGE_KEEPS_MM = False


def cv_errors(Xa, y, sw, theta, scale, norm, wls, folds=CV_FOLDS):
    """The K-fold cross-validated prediction errors of :func:`cv_risk`, one per row of positive weight
    (in row order): row ``i`` of them is predicted by the fit without its fold ``i mod K``."""
    pos = np.flatnonzero(sw > 0)
    k = min(folds, len(pos))
    e = np.empty(len(pos))
    for f in range(k):
        out = np.arange(f, len(pos), k)
        w = sw.copy()
        w[pos[out]] = 0.0
        th, _ = irls(Xa, y, w, theta, scale, norm, wls, tol=1e-6)
        e[out] = y[pos[out]] - Xa[pos[out]] @ th
    return e


def cv_risk(Xa, y, sw, theta, scale, norm, wls, folds=CV_FOLDS, keep=CV_KEEP):
    """K-fold cross-validated trimmed squared prediction error of the M-estimate ``(theta, norm, scale)``.

    The rows of positive weight are dealt to ``min(folds, their number)`` folds in turn (row ``i`` of
    them to fold ``i mod K``: no randomness); for each fold the loss ``norm`` is refitted at the fixed
    ``scale`` by :func:`irls` from ``theta`` on the other rows and predicts the fold's rows.  Returns the
    mean of the smallest squared errors carrying the share ``keep`` of the weight (at least one row),
    each weighted by its ``sw``: a bounded-influence estimate of the prediction risk on clean rows, which
    a gross outlier among the predicted rows does not dominate.
    """
    pos = np.flatnonzero(sw > 0)
    e = cv_errors(Xa, y, sw, theta, scale, norm, wls, folds)
    order = np.argsort(e * e, kind="stable")
    cum = np.cumsum(sw[pos][order])
    m = max(1, int(np.searchsorted(cum, keep * cum[-1], side="right")))
    return float(np.average((e * e)[order[:m]], weights=sw[pos][order[:m]]))


def is_small(sw, p, rows_per_coef=None):
    """Whether Kish's effective number of rows ``(sum w)^2 / sum w^2`` is below ``rows_per_coef * p``
    (``None``: :data:`SMALL_N_ROWS_PER_COEF`, read at the call, like the module's other constants).

    ``n_eff`` is computed to within a relative ``(3 n + 2)`` rounding units (two sums of ``n`` terms, a square, a
    division), so a value within that of the bound counts as the bound: uniform weights ``c`` give the path of
    unit weights (``c = 0.1``, 32 rows: ``n_eff = 31.999999999999996`` took the small-sample path below 8 rows
    per coefficient at ``p = 4``, unit weights the band's).  Unit weights: ``n_eff`` and the bound are integers
    and the margin is below 1, the same decisions as the plain comparison.
    """
    rows_per_coef = SMALL_N_ROWS_PER_COEF if rows_per_coef is None else rows_per_coef
    wt = float(sw.sum())
    n_eff = wt * (wt / float(sw @ sw)) if wt > 0 else 0.0
    return n_eff < rows_per_coef * p * (1.0 - (3 * len(sw) + 2) * np.finfo(float).eps)


def small_sample_fit(Xa, y, sw, theta, scale, wls, weighted_median, floor, slopes=None, level=None, mm=None):
    """Tukey (4.685) M-estimate started from a Huber (1.345) fit, both re-estimating their scales.

    The two steps of :func:`huber_with_own_scale`: Huber's loss is convex, so its fit does not
    depend on ``theta`` (a high-breakdown start that interpolates ``p + 1`` of 15 rows does not
    trap it), and the redescending Tukey step from it then rejects the gross outliers (as
    ``MASS::rlm(psi = psi.bisquare)`` started from a monotone fit).  The Tukey step is skipped when
    the Huber fit's residuals are heteroscedastic (:func:`spread_dependence` rejects at ``level``
    over the ``slopes`` columns, default all; ``level=None``: :data:`HETEROSCEDASTICITY_LEVEL`, which
    ``None`` turns off, as round 2 had it): their large residuals then
    sit at the rows far out in ``x``, which carry the slopes, and a redescending loss rejects them
    where Huber's keeps a bounded influence (errors with sd proportional to ``|x_1|``, n = 30, p = 3,
    200 draws: slope MSE of statsmodels' RLM 1.43 times HuberRegressor's with Tukey's loss, 1.06
    with Huber's); the fit is then :data:`HETEROSCEDASTIC_LOSS` (Huber, c = 1.0) with its own scale, from
    ``theta`` at the Huber fit's scale (``None``: the Huber 1.345 fit, as round 7 had it).  With the MM fit
    ``mm = (theta, scale)`` given and :data:`SMALL_N_GROWTH_PULL` set, the test also fires where the one-sided
    :func:`spread_growth` rejects at ``level``, the Huber fit is :func:`not_drawn` towards a row the MM fit
    rejects and, from :data:`GUARD_ROWS_PER_COEF` rows per coefficient on, passes :func:`select`'s guard (it flags
    every row the MM fit rejects; otherwise the Tukey step is kept, as before; issue 30, round 11).  From
    :data:`GUARD_ROWS_PER_COEF` rows per coefficient on, where either test fires and the MM fit rejects rows far
    out in ``x`` (:func:`leverage_rows_left_out`), the tests are asked again on the residuals of the Huber fit of
    the other rows, and the Tukey step is kept unless they fire there too: one bad leverage point's large residual
    at a large distance in ``x`` looks like spread growing with ``x`` (issue 30, round 13; the rows left out can
    only stop a firing, never start one).  Returns ``(theta, scale, n_iter, norm)``, ``norm`` the kept loss.
    """
    huber = HuberT(1.345)
    th, sc, n1 = huber_with_own_scale(Xa, y, sw, theta, scale, huber, wls, weighted_median, floor)
    slopes = np.arange(Xa.shape[1]) if slopes is None else slopes
    level = HETEROSCEDASTICITY_LEVEL if level is None else level
    if level is not None and _spread_fires(Xa, y, sw, th, sc, y - Xa @ th, sw, slopes, level, mm):
        sw_t = sw  # round 13: from 4 rows per coefficient on, the tests again without far-out rows the MM fit rejects
        if mm is not None and not is_small(sw, Xa.shape[1], GUARD_ROWS_PER_COEF):
            sw_t = leverage_rows_left_out(Xa, y, sw, mm, slopes)
        if sw_t is not sw:  # the residuals of the Huber fit of the rows left, as if the others were absent
            r = y - Xa @ huber_with_own_scale(Xa, y, sw_t, theta, scale, huber, wls, weighted_median, floor)[0]
            fires = _spread_fires(Xa, y, sw, th, sc, r, sw_t, slopes, level, mm)
        else:
            fires = True
    else:
        fires = False
    if fires:
        if HETEROSCEDASTIC_LOSS is None:
            return th, sc, n1, huber
        th, sc, n2 = huber_with_own_scale(Xa, y, sw, theta, sc, HETEROSCEDASTIC_LOSS, wls, weighted_median, floor)
        return th, sc, n1 + n2, HETEROSCEDASTIC_LOSS
    th, sc, n2 = huber_with_own_scale(Xa, y, sw, th, sc, SMALL_N_LOSS, wls, weighted_median, floor)
    return th, sc, n1 + n2, SMALL_N_LOSS


def _spread_fires(Xa, y, sw, th, sc, r, sw_t, slopes, level, mm):
    """The small-sample path's test of spread on the residuals ``r`` of the rows of weight ``sw_t``: round 3's
    :func:`spread_dependence` at ``level``, or round 11's :func:`spread_growth` at ``level`` with the Huber (1.345)
    fit ``(th, sc)`` of all rows (weights ``sw``) not drawn towards a row the MM fit ``mm`` rejects and, from
    :data:`GUARD_ROWS_PER_COEF` rows per coefficient on, flagging every such row."""
    if spread_dependence(Xa, r, sw_t, slopes)[2] < level:
        return True
    return (mm is not None and SMALL_N_GROWTH_PULL is not None and spread_growth(Xa, r, sw_t, slopes)[2] < level
            and not_drawn(Xa, y, th, mm, sw=sw) and (is_small(sw, Xa.shape[1], GUARD_ROWS_PER_COEF)
                                                     or _sees_the_mm_outliers(Xa, y, th, sc, *mm, sw=sw)))  # fmt: skip


def _spread_blocks_fs(Xa, y, sw, slopes, r, mm, refit):
    """Whether :func:`spread_growth` rejects at :data:`CV_FINITE_SAMPLE_MM_SPREAD_LEVEL` (then :func:`select` does not
    ask the finite-sample MM) on the rows and residuals :data:`CV_FINITE_SAMPLE_MM_SPREAD_ROWS` names: ``r`` the
    comparison's Huber residuals, ``mm = (theta_mm, scale_mm)`` the MM fit, ``refit(w)`` the residuals of the Huber
    fit with weights ``w``; false with the level ``None``."""
    level = CV_FINITE_SAMPLE_MM_SPREAD_LEVEL
    if level is None:
        return False
    w = sw
    if CV_FINITE_SAMPLE_MM_SPREAD_ROWS == "mm_kept":
        w = np.where(np.abs(y - Xa @ mm[0]) > MM_REJECTION * mm[1], 0.0, sw)
    elif CV_FINITE_SAMPLE_MM_SPREAD_ROWS == "refit":
        w = leverage_rows_left_out(Xa, y, sw, mm, slopes)
        r = r if w is sw else refit(w)
    return spread_growth(Xa, r, w, slopes)[2] < level


def heteroscedastic_band(Xa, r, sw, p, slopes):
    """Whether, from :data:`SMALL_N_ROWS_PER_COEF` to :data:`CV_ROWS_PER_COEF` effective rows per coefficient,
    the Huber (1.345) residuals ``r`` grow with ``x`` (the test :data:`HETEROSCEDASTICITY_BAND_TEST`,
    :func:`spread_growth` or :func:`spread_dependence`, rejects at :data:`HETEROSCEDASTICITY_BAND_LEVEL`):
    :func:`select` then fits :data:`HETEROSCEDASTIC_LOSS` in place of the cross-validated comparison (issue 30,
    round 8; the test since round 10).  Always false outside the band or with either constant ``None``."""
    if HETEROSCEDASTIC_LOSS is None or HETEROSCEDASTICITY_BAND_LEVEL is None or is_small(sw, p):
        return False
    if CV_ROWS_PER_COEF is None or not is_small(sw, p, CV_ROWS_PER_COEF):
        return False
    test = spread_growth if HETEROSCEDASTICITY_BAND_TEST == "growth" else spread_dependence
    return test(Xa, r, sw, slopes)[2] < HETEROSCEDASTICITY_BAND_LEVEL


def _sees_the_mm_outliers(Xa, y, theta, scale, theta_mm, scale_mm, cut=2.5, reject=None, sw=None):
    """Whether every row the MM fit ``(theta_mm, scale_mm)`` rejects (``|r| > reject * scale_mm``: zero
    weight in its Tukey loss, whose scale is at most the flagging scale ``scale_mm``) is flagged by
    ``(theta, scale)`` (``|r| > cut * scale``).

    The guard of the small-sample path: a Huber start accommodates a bad leverage point (kootenay:
    one of 13 rows: 1.21 times the best peer's held-out median absolute error with the guard, 2.26 without).
    Rows the MM fit keeps with positive weight are not asked about: with the flagging cut (2.5) in
    place of the rejection point, a row near 2.5 scales in one fit and just under it in the other
    sent 15 % of normal samples (n = 30, p = 3) to the variance rule, at 2.2 times the slope MSE.
    ``reject=None``: :data:`MM_REJECTION` (2.5 gives round 2's guard).  With weights ``sw`` rows of weight 0
    (not in the fit) are not asked about.
    """
    reject = MM_REJECTION if reject is None else reject
    mm_out = np.abs(y - Xa @ theta_mm) > reject * scale_mm
    if sw is not None:
        mm_out &= np.asarray(sw) > 0
    own_out = np.abs(y - Xa @ theta) > cut * scale
    return not np.any(mm_out & ~own_out)


#: the common fit whose residuals and scale the variances are estimated at: ``"mad"`` (default) a Tukey
#: 4.685 fit from the start at the MAD of the start's residuals, scale the corrected MAD of its own
#: residuals; ``"lmrob"`` the MM-estimate ``mm`` of :func:`select` (Tukey 4.685 at the S-estimate's
#: M-scale, scale the larger of that M-scale and the corrected MAD: robustbase's ``lmrob``, the fit the
#: flags read).  Issue 30's round 2 measured ``"lmrob"``: better on the sets that suggested it (alcohol,
#: airmay, rock), not on the sets it had not looked at (forbes, trees, exAM worse), so it is not the default
COMMON_FIT = "mad"


#: a row the common (MM) fit rejects (Tukey 4.685 weight 0) with least-squares leverage above this makes least
#: squares ineligible in the variance rule (H30Y; see :func:`_rejected_leverage_point`)
LS_REJECTED_LEVERAGE = 0.5


def _rejected_leverage_point(Xa, r, sw, scale):
    """Whether the MM fit (residuals ``r``, scale ``s``) rejects a row, ``|r| >= 4.685 s``, whose least-squares
    leverage ``h_i = w_i x_i^T (X^T W X)^-1 x_i`` exceeds :data:`LS_REJECTED_LEVERAGE`: a bad leverage point.

    The variance rule judges every loss at the MM residuals; least squares' ``A`` (``psi' = 1``) then counts that
    row's ``x x^T``, and the larger ``x`` the smaller its sandwich in that direction -- yet least squares would fit
    the row, not leave its residual: a row 1e6-1e8 times the others made it the selected loss, 17 SEs off.  The
    other losses have ``psi' = 0`` there (Huber beyond ``c``, the redescending ones far out) and are unaffected.
    Leverages from the QR factor of ``sqrt(w) X`` on its non-zero columns (stable at 1e100 times the others)."""
    pos = sw > 0
    out = (np.abs(r) >= 4.685 * scale) & pos
    if not out.any():
        return False
    A = Xa[pos] * np.sqrt(sw[pos])[:, None]
    A = A[:, np.any(A != 0, axis=0)]
    if A.shape[1] == 0 or A.shape[0] <= A.shape[1]:
        return False
    Q = np.linalg.qr(A, mode="reduced")[0]
    h = np.einsum("ij,ij->i", Q, Q)
    return bool(np.any(h[out[pos]] > LS_REJECTED_LEVERAGE))


def select(Xa, y, sw, theta0, scale0, wls, weighted_median, floor, slopes, family=FAMILY,
           level=MISSPECIFICATION_LEVEL, small=None, mm=None, tol=1e-8, fs_fit=None):  # fmt: skip
    """Choose the member of ``family`` with the smallest estimated slope variance and fit it.

    From the high-breakdown start ``theta0`` one Tukey (4.685) IRLS fit at the start's scale
    ``scale0`` (an MM step) gives common residuals ``r`` and the robust scale ``s``
    (:func:`residual_scale`, never below ``floor``); with :data:`COMMON_FIT` ``"lmrob"`` (not
    the default) they are those of the MM fit ``mm = (theta, scale)`` instead.  Every member's sandwich variance is
    estimated at these same residuals -- a member is not judged by residuals it fitted itself,
    which would favour the redescending ones -- and the winner is fitted by IRLS from the MM
    fit.

    Before that, the rank test :func:`mean_misspecification` asks whether the mean is linear
    (``level=None``: never).  If it rejects at ``level``, the losses no longer estimate one
    common coefficient vector, their variances do not say which predicts best, and the
    prediction error on clean data favours the loss that down-weights least while still
    resisting gross outliers: the fit is then :data:`MISSPECIFIED_LOSS` (Huber, c = 1.345) with
    its scale re-estimated from its own residuals (:func:`huber_with_own_scale`).

    Small samples (``small=None``: :func:`is_small`, fewer than :data:`SMALL_N_ROWS_PER_COEF`
    effective rows per coefficient; ``small=False``: never): the variances, estimated from
    15-40 rows, pick the loss almost at random, and the 50 %-breakdown start interpolates
    about half the rows, trapping every redescending loss fitted from it (coleman: held-out
    error 2.7 times the best peer's).  The fit is then :func:`small_sample_fit` (Tukey from a
    Huber fit, own scales).  Its Huber start has no resistance to bad leverage points, so
    from :data:`GUARD_ROWS_PER_COEF` rows per coefficient on (where the start's half sample
    has at least two rows per coefficient and is no longer an interpolation) it is kept only
    if it flags every row that the MM fit ``mm = (theta, scale)`` flags (``None``: no guard; where the
    fit is :data:`HETEROSCEDASTIC_LOSS`, the Huber 1.345 fit it started from is asked, as in round 7);
    otherwise the variance rule decides.  Below :data:`CV_ROWS_PER_COEF` rows per coefficient (and with
    ``mm`` given) the fit so chosen is compared with the Huber (1.345) fit with its own scale
    (:func:`huber_with_own_scale` from the MM step) by :func:`cv_risk`, and Huber's replaces it if its
    risk is smaller: the variances cannot see that a redescending fit rejects rows that predict (rock:
    the Tukey fit rejected 28 % of the training rows, at 1.8 times the best peer's held-out median
    absolute error; 1.05 with the comparison); from :data:`GUARD_ROWS_PER_COEF` rows per coefficient on it may not
    switch where the Huber fit is drawn towards a group of bad leverage points the MM fit rejects
    (:func:`leverage_group`; issue 30, round 11b).  From :data:`CV_FINITE_SAMPLE_MM_ROWS_PER_COEF` rows per
    coefficient on (when set and ``fs_fit`` is given: ``fs_fit(Xa, y, sw, theta0, floor) -> (theta, scale)``, the
    estimator passes :func:`._flags.flags_mm_fit`, lmrob's finite-sample MM from ``theta0``) it is a third
    candidate, kept where its risk is below :data:`CV_FINITE_SAMPLE_MM_MARGIN` times the risk of the fit the two-way
    comparison kept (not asked where :data:`CV_FINITE_SAMPLE_MM_SPREAD_LEVEL`, an option, is set and
    :func:`spread_growth` on the comparison's Huber residuals, on the rows :data:`CV_FINITE_SAMPLE_MM_SPREAD_ROWS`
    names, rejects at it); with :data:`LEVERAGE_KEEPS_MM` (an option) the fit there is ``mm`` itself where it rejects
    a row far out in ``x`` (:func:`leverage_rows_left_out`).  Returns a dict with ``theta``,
    ``loss`` (the kept norm),
    ``scale``, ``variances`` of every member, ``misspecification`` (``(T, df, p_value)`` or
    ``None``), ``small`` (whether the small-sample path was taken), ``cross_validation`` (the risks
    ``(kept fit, Huber)`` of the comparison, ``(kept fit, Huber, finite-sample MM)`` with the third candidate, or
    ``None``), ``n_iter`` (IRLS
    iterations) and ``theta_mm`` (the MM step's fit, from which the outliers are flagged).
    ``tol``: stopping rule of the variance rule's fit (:func:`irls` at the fixed scale ``s``); the
    estimator passes a looser one when that fit only starts a polish on all rows (above 20000 rows:
    the polish solves the same equation; the other fits re-estimate a scale and keep ``1e-8``).
    """
    p = Xa.shape[1]
    scale0 = max(scale0, floor)
    if COMMON_FIT == "lmrob" and mm is not None:
        theta_mm, scale = mm
        n_mm = 0
        r = y - Xa @ theta_mm
    else:
        theta_mm, n_mm = irls(Xa, y, sw, theta0, scale0, TukeyBiweight(4.685), wls)
        r = y - Xa @ theta_mm
        scale = max(residual_scale(r, sw, p, weighted_median), floor)
    variances = {norm: sandwich_variance(Xa, r, sw, scale, norm, slopes) for norm in family}
    if _rejected_leverage_point(Xa, r, sw, scale):  # least squares would fit that row: its variance says nothing
        variances = {norm: math.inf if isinstance(norm, LeastSquares) else v for norm, v in variances.items()}
    test = None if level is None else mean_misspecification(Xa, y, r, sw, scale, slopes)
    small = is_small(sw, p) if small is None else bool(small)
    n_iter = 0
    huber = HuberT(1.345)
    if small:
        th_s, sc_s, n_iter, norm_s = small_sample_fit(Xa, y, sw, theta_mm, scale, wls, weighted_median, floor, slopes,
                                                      mm=mm)  # fmt: skip
        guarded = mm is not None and not is_small(sw, p, GUARD_ROWS_PER_COEF)
        th_g, sc_g = th_s, sc_s
        if guarded and norm_s == HETEROSCEDASTIC_LOSS:  # round 7's guard: of the Huber (1.345) fit the test read
            th_g, sc_g, _ = huber_with_own_scale(Xa, y, sw, theta_mm, scale, huber, wls, weighted_median, floor)
        if guarded and not _sees_the_mm_outliers(Xa, y, th_g, sc_g, *mm, sw=sw):
            small = False  # the Huber start accommodates an outlier the high-breakdown fit rejects
        else:
            norm, theta, scale = norm_s, th_s, sc_s
    own_huber = small and norm_s != SMALL_N_LOSS  # the small-sample path kept a Huber fit (errors grow with x)
    common_scale = scale
    if small:
        pass  # norm, theta and scale of the small-sample fit
    elif test is not None and test[2] < level:
        norm, own_huber = MISSPECIFIED_LOSS, MISSPECIFIED_LOSS == huber
        theta, scale, n_more = huber_with_own_scale(Xa, y, sw, theta_mm, scale, norm, wls, weighted_median, floor)
        n_iter += n_more
    else:
        norm = min(family, key=lambda n: variances[n])  # first of equals: family order
        theta, n_more = irls(Xa, y, sw, theta_mm, scale, norm, wls, tol=tol)
        n_iter += n_more
    cv = None
    if CV_ROWS_PER_COEF is not None and mm is not None and not own_huber and is_small(sw, p, CV_ROWS_PER_COEF):
        th_h, sc_h, n_more = huber_with_own_scale(Xa, y, sw, theta_mm, common_scale, huber, wls, weighted_median,
                                                  floor)  # fmt: skip
        n_iter += n_more
        if heteroscedastic_band(Xa, y - Xa @ th_h, sw, p, slopes):
            norm = HETEROSCEDASTIC_LOSS
            theta, scale, n_more = huber_with_own_scale(Xa, y, sw, theta_mm, common_scale, norm, wls,
                                                        weighted_median, floor)  # fmt: skip
            n_iter += n_more
        else:
            cv = (cv_risk(Xa, y, sw, theta, scale, norm, wls), cv_risk(Xa, y, sw, th_h, sc_h, huber, wls))
            best = cv[0]
            if cv[1] < cv[0] and not (not is_small(sw, p, GUARD_ROWS_PER_COEF)
                                      and leverage_group(Xa, y, sw, th_h, mm, slopes)):  # fmt: skip
                norm, theta, scale, best = huber, th_h, sc_h, cv[1]
            fs = CV_FINITE_SAMPLE_MM_ROWS_PER_COEF
            refit = lambda w: y - Xa @ huber_with_own_scale(Xa, y, w, theta_mm, common_scale, huber, wls,  # noqa: E731
                                                            weighted_median, floor)[0]  # fmt: skip
            if (fs is not None and fs_fit is not None and not is_small(sw, p, fs)  # round 17: a third candidate
                    and not _spread_blocks_fs(Xa, y, sw, slopes, y - Xa @ th_h, mm, refit)):  # fmt: skip
                th_f, sc_f = fs_fit(Xa, y, sw, theta0, floor)
                tukey = TukeyBiweight(4.685)
                cv = (*cv, cv_risk(Xa, y, sw, th_f, sc_f, tukey, wls))
                if cv[2] < CV_FINITE_SAMPLE_MM_MARGIN * best:
                    norm, theta, scale = tukey, th_f, sc_f
            if (LEVERAGE_KEEPS_MM and fs is not None and not is_small(sw, p, fs)  # round 19: bad leverage -> MM
                    and leverage_rows_left_out(Xa, y, sw, mm, slopes) is not sw):  # fmt: skip
                norm, theta, scale = TukeyBiweight(4.685), mm[0], mm[1]
    return {"theta": theta, "loss": norm, "scale": scale, "variances": variances, "misspecification": test,
            "small": small, "cross_validation": cv, "n_iter": n_mm + n_iter, "theta_mm": theta_mm}  # fmt: skip
