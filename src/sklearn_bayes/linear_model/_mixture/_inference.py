"""Uncertainty of :class:`~sklearn_bayes.MixtureMEstimatorRegressor`: the sandwich covariance and the summary table.

:func:`parameter_covariance` maps the sandwich covariance of the fitted M-estimator (computed by
:func:`~sklearn_bayes.linear_model._mixture._selection.sandwich_core`, the same code that
chooses the loss) from the standardised augmented design to the data's units;
:class:`MixtureSummary` is what ``summary()`` returns (built by :func:`summarise`, which reads a
fitted estimator and never writes to it).  Everything else takes plain arrays.
"""

import math
import warnings
from dataclasses import dataclass
from numbers import Real

import numpy as np
from scipy import stats

from sklearn_bayes.utils._validation import external_stacklevel
from sklearn_bayes.linear_model._mixture._norms import LeastSquares
from sklearn_bayes.linear_model._mixture._selection import relative_weights, sandwich_core

__all__ = ["MixtureScore", "MixtureSummary", "aliased_columns", "fallback_message", "interval_dof", "parameter_covariance",
           "rounding_level", "summarise", "validate_alpha", "validate_threshold", "wald_intervals"]


@dataclass(frozen=True)
class MixtureScore:
    """The score of the mixture likelihood, ``psi(r) = W(r) r = -d/dr log p(r)``, used as its own information.

    ``psi_terms`` returns ``psi' := psi^2``, so the sandwich ``A^-1 B A^-1`` is ``(sum_i w_i
    psi(r_i)^2 x_i x_i^T)^-1`` for uniform weights: the inverse outer-product-of-scores information of the
    coefficients with the mixture weights and scales held fixed (``variant="paper"``); with non-uniform weights
    ``B`` holds ``w_i^2`` (:func:`sandwich_core`) and the sandwich is no longer that inverse (review HMX F1).  The
    observed ``psi'`` is not usable (the Laplace component's score jumps at 0, so its smoothed
    derivative is a spike on the rows the fit passes through), and with the IRLS weights held
    fixed ``A = sum w_i W_i x_i x_i^T`` is dominated by those rows' weights ``1 / (b |r_i|)``.
    """

    W: np.ndarray

    def psi_terms(self, u):
        psi = self.W * u
        return self.W, psi, psi * psi


@dataclass(frozen=True)
class LeverageAdjusted:
    """``norm`` with ``psi(u_i)`` divided by ``(1 - h_i)^(power / 2)`` in the ``B`` matrix (MacKinnon-White HC2/HC3).

    ``h_i = w_i psi'(u_i) x_i^T A^-1 x_i``, the leverages of the design weighted by ``psi'``
    (clipped to ``[0, 0.99]``); ``A`` is unchanged.
    """

    norm: object
    h: np.ndarray
    power: float

    def psi_terms(self, u):
        w, psi, dpsi = self.norm.psi_terms(u)
        return w, psi / (1.0 - self.h) ** (self.power / 2.0), dpsi


@dataclass(frozen=True)
class FlaggedCurvatureClipped:
    """``norm`` with ``psi'`` clipped at 0 on the ``flagged`` rows (outliers of the MM rule) in ``A``.

    A redescending loss gives an outlier just inside its rejection point a negative ``psi'``; with
    a leverage point that term can cancel most of ``A`` (starsCYG: two giants at ``|u|`` 5.6-5.9
    under Tukey (c = 6) made the slope's standard error 2.8, where resampling the clean residuals
    around the fit gives a spread of 0.44 about the main mode).  Its curvature measures how close
    the outlier sits to the loss's cut-off, not the sampling variability of the fit to the clean
    rows, so a flagged row contributes no negative curvature.  Unflagged rows are unchanged.
    """

    norm: object
    flagged: np.ndarray

    def psi_terms(self, u):
        w, psi, dpsi = self.norm.psi_terms(u)
        return w, psi, np.where(self.flagged, np.maximum(dpsi, 0.0), dpsi)


def leverages(Xa, r, sw, scale, norm, return_A=False):
    """``h_i = w_i psi'(u_i) x_i^T A^-1 x_i`` clipped to ``[0, 0.99]`` (zeros if ``A`` is singular).

    ``return_A``: also return ``A = sum_i w_i psi'(u_i) x_i x_i^T`` (for the sandwich)."""
    dpsi = norm.psi_terms(r / scale)[2]
    A = Xa.T @ (Xa * (sw * dpsi)[:, None])
    try:
        Ai = np.linalg.inv(A)  # p x p; then one n x p product (a solve with n right-hand sides is 4x slower)
    except np.linalg.LinAlgError:
        h = np.zeros(len(r))
    else:
        h = np.clip(sw * dpsi * np.einsum("ij,ij->i", Xa @ Ai, Xa), 0.0, 0.99)
    return (h, A) if return_A else h


_BLOCK = 8192  # rows per block of the all-row rounding levels


def rounding_level(X, y, coef, intercept):
    """Per-row bound on the rounding error of a residual ``y_i - x_i @ coef - intercept``.

    Evaluating the ``d + 2`` terms costs at most ``(d + 2) eps`` times the sum of their
    magnitudes (the dot-product error bound), and the data themselves are rounded to a
    relative ``eps / 2``; residuals below this are rounding, not signal.
    """
    n, ac = len(y), np.abs(coef)
    if n <= _BLOCK or not X.flags.c_contiguous:
        xc = np.abs(X) @ ac
    else:  # blocks of rows through one buffer (no n x d temporary; the same row sums)
        xc, buf = np.empty(n), np.empty((_BLOCK, X.shape[1]))
        for s in range(0, n, _BLOCK):
            e = min(n, s + _BLOCK)
            np.matmul(np.abs(X[s:e], out=buf[: e - s]), ac, out=xc[s:e])
    return (X.shape[1] + 2) * np.finfo(float).eps * (np.abs(y) + xc + abs(intercept))


LEVERAGE_POWER = 2.0


#: a standardised column whose part not explained by the earlier columns has relative norm at most this is aliased
#: (R's ``lm`` uses the same 1e-7 in its pivoted QR); ordinary designs are nowhere near it
ALIAS_TOL = 1e-7


def aliased_columns(Z, sw):
    """Boolean mask of the columns of ``Z`` that are linear combinations of earlier columns (weighted rows).

    ``|R_jj|`` of the QR decomposition of ``sqrt(w) Z`` (rows of positive weight, columns that are not 0) is the
    norm of the part of column ``j`` orthogonal to the columns before it; below :data:`ALIAS_TOL` times the
    column's norm the column adds nothing (a duplicated feature, a sum of others, a dummy of every level with an
    intercept: with ``Z`` centred, the intercept's span is already projected out).  The estimator zeroes such
    columns, which then behave as constant ones: coefficient 0, NaN standard error.
    """
    pos = sw > 0
    A = Z[pos] * np.sqrt(sw[pos])[:, None]
    norms = np.sqrt(np.einsum("ij,ij->j", A, A))
    live = np.flatnonzero(norms > 0)
    out = np.zeros(Z.shape[1], dtype=bool)
    if len(live) < 2:
        return out
    R = np.linalg.qr(A[:, live], mode="r")
    k = min(R.shape)
    out[live[:k]] = np.abs(np.diag(R)[:k]) <= ALIAS_TOL * norms[live[:k]]
    out[live[k:]] = True  # more columns than rows: beyond the rank
    return out


def _identified_columns(Xa, pos, m):
    """Indices of the columns of ``Xa`` that are non-zero on some row of ``pos`` (``m`` of them).

    A column non-zero on one of the first 64 positive-weight rows is identified; only the others
    (typically none) are checked on all rows: the set of ``np.any(Xa[pos] != 0, axis=0)``
    without an ``n x p`` pass."""
    head = np.flatnonzero(pos)[:64] if m < len(pos) else slice(0, 64)
    seen = np.any(Xa[head] != 0, axis=0)
    rest = np.flatnonzero(~seen)
    if len(rest):
        rows = Xa[:, rest] if m == len(pos) else Xa[np.ix_(np.flatnonzero(pos), rest)]
        seen[rest] = np.any(rows != 0, axis=0)
    return np.flatnonzero(seen)


def fallback_message(reason, dof):
    """The warning of a fit whose ``coef_covariance_`` is the least-squares sandwich (see :func:`parameter_covariance`)."""
    if reason == "exact":
        why = ("more than half the rows are fitted exactly (the robust scale is 0: e.g. most y values tie, as a count "
               "that is mostly 0); the M-estimator's sandwich would give intervals of the width of rounding noise")
        how = ("conservative: every residual enters at its full size; bootstrap_conf_int is no remedy here, its "
               "resamples are fitted exactly too, and it returns NaN intervals for such a fit. The fit and its "
               "outlier flags (outlier_mask_, flag_outliers) rest on the tied values of y: the residual scale is "
               "near 0, so every row off the exact fit is flagged (a discrete or rounded response, e.g. pH, a Likert "
               "scale or a count, with a mode near half the rows); read the flags as 'not at the mode'")
    else:
        why = "the selected loss's sandwich matrix A is not positive definite (a redescending loss on few rows)"
        how = "an approximation: not the selected loss's variance; bootstrap_conf_int gives resampling intervals"
    dof = int(dof) if float(dof).is_integer() else f"{dof:.1f}"  # Kish's effective rows minus p (review HMX F1)
    return (f"MixtureMEstimatorRegressor: {why}; coef_covariance_ and conf_int use the least-squares (HC3) sandwich "
            f"of the fit's residuals instead, with t quantiles on {dof} degrees of freedom ({how}).")


def parameter_covariance(Xa, r, sw, scale, norm, st, fit_intercept, power=None, flagged=None, rows=None, exact=False,
                         notes=None, details=None):
    """Sandwich covariance of ``(coef, intercept)`` in the data's units, shape ``(d + 1, d + 1)`` (intercept last).

    ``Xa``, ``r``, ``scale`` are in standardised units (``r = y - Xa @ theta``); the weights
    ``sw`` are rescaled to mean one over the rows with positive weight, ``m`` of them, ``B`` holds their
    squares (:func:`sandwich_core`), and without leverages (``power=0``) the sandwich is multiplied by
    ``m / (m - p)`` (``p`` the columns of ``Xa``).  Columns of ``Xa``
    that are zero on every weighted row (constant features with an intercept) are not
    identified: their rows and columns are NaN.  Without an intercept the last row and column
    are 0.  Returns ``(cov, dof)`` with ``dof = m - p``; ``cov`` is all NaN if ``A`` is not
    positive definite.  ``flagged``: rows whose negative ``psi'`` is clipped at 0
    (:class:`FlaggedCurvatureClipped`).

    ``rows``: indices of a uniform random subsample of the positive-weight rows standing for all of
    them (above 20000 rows: the estimator's 10^4-row subsample).  ``A``, ``B`` and the leverages are
    then averaged over these rows and scaled to all ``m`` (``A`` and ``B`` grow in proportion to the
    rows, the leverages shrink: the covariance of ``m_sub`` rows times ``m_sub / m``); their
    relative sampling error, about ``1 / sqrt(m_sub)`` (1 % at 10^4 rows), is the price of a
    third of the all-row products.  ``dof`` and the identified columns are those of all rows.

    Fallback (H30S): if ``A`` is not positive definite, or ``exact`` (the fit passes exactly through more than
    half the rows, so ``scale`` sits at its floor and every ``psi`` is 0 or saturated), the least-squares sandwich
    ``(X^T X)^-1 X^T diag(r_i^2 / (1 - h_i)^2) X (X^T X)^-1`` of the same residuals is returned instead and the
    reason (``"exact"`` or ``"not_pd"``) appended to the list ``notes``.  Its ``psi(u) = u`` never saturates,
    so outlying residuals enter with their full size (conservative after an exact fit, whose robust scale is 0);
    finite whenever the identified columns have full rank.  For ``"not_pd"`` it only approximates the selected
    loss's variance (n = 12, p = 4: median 1.16, range 0.19-9.1 times the Monte Carlo spread of the fit; development log, "Degenerate responses").

    Identification (review HMU, F4/F5; :func:`_weak_identification`): a direction of the parameters that ``A``
    does not see (an eigenvalue at most :data:`NULL_TOL` times the largest: a one-row dummy whose row the loss
    rejects), or that only rows of leverage 1 see (a one-row dummy whose row the fit passes through: it adds
    nothing to ``B`` and its variance came out 7-9 times too small), leaves every coefficient that moves along it
    unidentified: NaN rows and columns, their indices (intercept ``d``) appended to ``details["unidentified"]``.
    The other coefficients' covariance is that of the identified directions (``A``'s pseudo-inverse when ``A``
    is singular).  A negative variance is never stored (NaN, listed as unidentified).  ``details["se"]``: the
    standard errors (intercept last), the square roots of the diagonal or, where it under- or overflows (``y``
    in units of 1e-156 or 1e156 and beyond, F7), computed in standardised units and rescaled last.
    """
    pos = sw > 0
    m = int(pos.sum())
    d = Xa.shape[1] - int(fit_intercept)
    keep = _identified_columns(Xa, pos, m)
    p = len(keep)
    dof = max(m - p, 1)
    small = m / dof  # without leverages: the small-sample factor m / (m - p) of all rows
    factor = 1.0
    if rows is not None:  # the sandwich of the subsample, scaled to all rows
        Xa, r, sw = Xa[rows], r[rows], sw[rows]
        flagged = None if flagged is None else np.asarray(flagged)[rows]
        m_all, m = m, int(np.count_nonzero(sw > 0))
        factor = m / m_all
    out = np.full((d + 1, d + 1), np.nan)
    if not fit_intercept:
        out[d, :] = out[:, d] = 0.0
    power = LEVERAGE_POWER if power is None else power
    if flagged is not None and np.any(flagged):
        norm = FlaggedCurvatureClipped(norm, np.asarray(flagged, dtype=bool))
    Xk = Xa if p == Xa.shape[1] else Xa[:, keep]  # no copy when every column is identified
    V = None if exact else _sandwich(Xk, r, sw, scale, norm, power, factor)
    unit, used = 1.0, (r, scale, norm)
    if V is None:  # the least-squares sandwich of the same residuals (docstring: Fallback)
        big = _overflow_unit(r, scale)
        if big is None:
            V, used = _sandwich(Xk, r, sw, scale, LeastSquares(), power, factor), (r, scale, LeastSquares())
        else:  # (r / scale)^2 would overflow: the sandwich of r / big at scale 1, times big^2 in the data's units
            V, scale, unit = _sandwich(Xk, r / big, sw, 1.0, LeastSquares(), power, factor), 1.0, big
            used = (r / big, 1.0, LeastSquares())
        if notes is not None:
            notes.append("exact" if exact else "not_pd")
    if V is None:
        return out, dof
    weak = _weak_identification(Xk, *used, sw, power, factor)
    if weak is not None and weak.V is not None:  # A singular: the sandwich of the directions it sees
        V = weak.V
    small = 1.0 if power else small  # small-sample factor: the leverages, else m / (m - p)
    V = V * (scale * scale * float(sw.sum()) / m * small * factor)  # weights of mean 1
    # Jacobian of (coef, intercept) in the data's units with respect to the kept standardised parameters
    kept_x = keep[keep < d]
    J = np.zeros((d + 1, p))
    with np.errstate(over="ignore", invalid="ignore"):
        D = st.y_scale / st.x_scale[kept_x]
        J[kept_x, np.arange(len(kept_x))] = D
        if fit_intercept:
            J[d, : len(kept_x)] = -st.x_offset[kept_x] * D
            J[d, p - 1] = st.y_scale
        C = J @ V @ J.T * unit * unit  # unit 1, or +-inf only where the true value overflows
    idx = np.append(kept_x, d) if fit_intercept else kept_x
    out[np.ix_(idx, idx)] = C[np.ix_(idx, idx)]
    # each data-unit parameter as a combination of the standardised ones, in units of y_scale / x_scale (slopes)
    # and y_scale (intercept): its standard error is computed there and rescaled last (F7)
    Cstd = np.zeros((len(idx), p))
    Cstd[np.arange(len(kept_x)), np.arange(len(kept_x))] = 1.0
    if fit_intercept:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            Cstd[-1, : len(kept_x)] = -st.x_offset[kept_x] / st.x_scale[kept_x]
        Cstd[-1, p - 1] = 1.0
    with np.errstate(over="ignore", invalid="ignore"):
        mult = np.abs(np.append(D, st.y_scale) if fit_intercept else D) * unit
    bad = np.zeros(d + 1, dtype=bool)
    if weak is not None and weak.null is not None:
        norms = np.linalg.norm(Cstd * weak.e, axis=1)
        with np.errstate(invalid="ignore"):
            bad[idx] = ~(np.abs(Cstd @ weak.null).max(axis=1) <= ID_TOL * norms)
    q = np.einsum("ij,jk,ik->i", Cstd, V, Cstd)  # the variances in standardised units (no under- or overflow)
    with np.errstate(invalid="ignore"):
        bad[idx] |= q < 0  # never a negative variance (F5; the data-unit diagonal can be -inf from overflow)
    out[bad, :] = out[:, bad] = np.nan
    if details is not None:
        details["unidentified"] = [int(j) for j in np.flatnonzero(bad)]
        details["se"] = _standard_errors(out, q, mult, idx, bad)
    return out, dof


#: an eigenvalue of the sandwich's ``A`` at most this times the largest is 0 (a direction ``A`` does not see): the
#: square of :data:`ALIAS_TOL`, the relative size at which a column is aliased (review HMU, F5)
NULL_TOL = ALIAS_TOL * ALIAS_TOL

#: a parameter whose combination of the standardised ones has a component above this (relative to its norm) along
#: a direction ``A`` does not see is not identified (review HMU, F4/F5)
ID_TOL = 1e-6

#: rows whose leverage ``w_i psi'_i x_i^T A^+ x_i`` exceeds this (1 to rounding: a row alone in a direction has
#: leverage 1 whatever its weight) are candidates for carrying a direction alone; the eigenvalues of ``A`` without
#: them decide (review HMU, F4).  Rows of leverage 0.99-1 - 1e-6 keep the HC3 clip at 0.99 (removing several of them
#: at once could leave fewer rows than coefficients: n = 8, p = 4, five rows kept)
REST_LEVERAGE = 1.0 - 1e-6


@dataclass(frozen=True)
class _Weak:
    """What :func:`_weak_identification` found: ``null`` (columns: unit vectors of the unseen directions) and
    ``V`` (the sandwich from ``A``'s pseudo-inverse, when ``A`` itself is singular; else None); ``null`` is
    ``e * v`` for unit vectors ``v`` of the equilibrated ``A`` (``e = diag(A)^(-1/2)``), so a parameter ``c`` is
    judged by ``|c^T null| / ||c * e||``."""

    null: np.ndarray
    V: object
    e: np.ndarray


def _null_space(A, top):
    """Eigenvalues, eigenvectors and the mask of the eigenvalues at most :data:`NULL_TOL` ``top`` in absolute value
    (a redescending loss's negative curvature on a row it keeps is seen, not missing)."""
    lam, U = np.linalg.eigh(A)
    return lam, U, np.abs(lam) <= NULL_TOL * top


def _weak_identification(Xk, r, scale, norm, sw, power, factor):
    """None, or the directions of the standardised parameters that ``A = sum_i w_i psi'_i x_i x_i^T`` does not
    see, or sees only through rows of leverage 1 (:class:`_Weak`).

    A row of leverage 1 (the only row of a dummy, fitted exactly) adds nothing to ``B`` (its residual is 0) yet
    its ``x x^T`` sits in ``A``: the direction it alone carries gets a variance from the other rows' residuals,
    which know nothing of it (review HMU F4: standard error 0.14 where the estimate's spread is 1.0, coverage
    0.245).  The directions are the null space of ``A`` without those rows (eigenvalues at most
    :data:`NULL_TOL` times ``A``'s largest)."""
    dpsi = norm.psi_terms(r / scale)[2]
    wd = sw * dpsi
    A = Xk.T @ (Xk * wd[:, None])
    if not np.all(np.isfinite(A)):
        return None
    # equilibrated (unit diagonal where it is positive): a far column (1e15 robust scales on a few rows) must not
    # make every other direction look null next to it
    dg = np.diag(A).copy()
    e = 1.0 / np.sqrt(np.where(dg > 0, dg, 1.0))
    lam, U, null = _null_space(A * np.outer(e, e), 1.0)
    top = float(np.max(np.abs(lam))) if len(lam) else 0.0
    if not top > 0:
        return None
    null = np.abs(lam) <= NULL_TOL * top
    Ap = ((U[:, ~null] / lam[~null]) @ U[:, ~null].T) * np.outer(e, e)  # A's pseudo-inverse on the seen directions
    h = wd * np.einsum("ij,ij->i", Xk @ Ap, Xk)
    rest = h > REST_LEVERAGE
    N = U[:, null]
    if rest.any():
        keep = ~rest
        lam2, U2, null2 = _null_space(Xk[keep].T @ (Xk[keep] * wd[keep, None]) * np.outer(e, e), top)
        N = U2[:, null2]
    N = N * e[:, None]  # back to the standardised coordinates
    V = None
    if null.any():  # the sandwich in the directions A sees (its pseudo-inverse; the Cholesky of a singular A
        # can succeed on rounding and give a negative variance, F5)
        hc = np.clip(h * factor, 0.0, 0.99)
        psi = norm.psi_terms(r / scale)[1]
        if power:
            psi = psi / (1.0 - hc) ** (power / 2.0)
        B = Xk.T @ (Xk * (sw * relative_weights(sw) * psi * psi)[:, None])  # w^2 meat, as sandwich_core
        V = Ap @ B @ Ap
    if N.shape[1] == 0 and V is None:
        return None
    return _Weak(N if N.shape[1] else None, V, e)


def _standard_errors(out, q, mult, idx, bad):
    """Standard errors of ``(coef, intercept)``: ``sqrt(diag(out))`` where that is a normal number, else
    ``mult_k sqrt(q_k)`` (``q_k = c_k^T V c_k`` in standardised units): finite and exact to rounding for ``y`` or
    ``X`` in any units whose standard errors are themselves representable (F7; the data-unit diagonal under- or
    overflows from 1e+-156, and its intercept entry, a sum of overflowed terms, can be NaN).  NaN where ``bad``."""
    diag = np.diag(out)
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        se = np.sqrt(diag)
        ok = (diag > _SE_LOW) & (diag < _SE_HIGH)
        for k, j in enumerate(idx):
            if not ok[j] and not bad[j] and q[k] >= 0:
                se[j] = mult[k] * math.sqrt(float(q[k]))
    return se


#: variances outside ``[_SE_LOW, _SE_HIGH]`` are recomputed in standardised units (their data-unit value has lost
#: digits to underflow, or overflowed)
_SE_LOW, _SE_HIGH = 1e-280, 1e280


def _overflow_unit(r, scale):
    """None, or where ``max |r| / scale`` exceeds ``2^500`` (its square would overflow: a target of 1e300 over a
    floor scale of 1e-9), the power of two at most ``max |r|`` (the least-squares sandwich is quadratic in ``r``
    and free of ``scale``, so it is computed for ``r / unit`` at scale 1 and multiplied by ``unit^2`` at the end;
    exact powers of two)."""
    a = float(np.max(np.abs(r))) if len(r) else 0.0
    if not a > scale * 2.0**500:
        return None
    return math.ldexp(1.0, math.frexp(a)[1] - 1)


def _sandwich(Xk, r, sw, scale, norm, power, factor):
    """``A^-1 B A^-1`` of ``norm`` with leverage-adjusted ``psi`` (``power``), or None (``A`` not positive definite)."""
    A = None
    if power:
        h, A = leverages(Xk, r, sw, scale, norm, return_A=True)
        norm = LeverageAdjusted(norm, h * factor, power)  # the same psi', so the same A
    return sandwich_core(Xk, r, sw, scale, norm, A=A)


def store_covariance(est, cov, k, notes, details):
    """Store ``coef_covariance_``, ``_params_covariance`` (times ``k^2``, Huber's correction) and the standard
    errors ``_params_se`` (times ``k``) of a fit, and warn about the fallback (``notes``) and about coefficients
    that are not identified (``details["unidentified"]``, by name)."""
    if notes:
        warnings.warn(fallback_message(notes[0], est.df_intervals_), UserWarning, stacklevel=external_stacklevel())
    bad = details.get("unidentified") or []
    if bad:
        d = cov.shape[0] - 1
        names = getattr(est, "_column_names", None)  # a fit on the live columns: the full X's names (_dead_columns)
        if names is None:
            names = [str(n) for n in getattr(est, "feature_names_in_", [f"x{j}" for j in range(d)])]
        named = ", ".join("intercept" if j == d else (names[j] if j < len(names) else f"x{j}") for j in bad)
        warnings.warn(f"MixtureMEstimatorRegressor: coefficient(s) {named} not identified by the rows the fit "
                      "keeps (a direction of the design that the selected loss's A matrix does not see, or sees only "
                      "through rows of leverage 1, e.g. a dummy that is 1 on a single row); their standard errors, "
                      "conf_int and summary rows are NaN and their estimates rest on one row or on none.",
                      UserWarning, stacklevel=external_stacklevel())
    est._params_covariance = cov * (k * k)
    est.coef_covariance_ = est._params_covariance[: cov.shape[0] - 1, : cov.shape[0] - 1]
    se = details.get("se")
    if se is not None:  # the square roots of the stored diagonal where that is a normal number (bit for bit as
        # before review HMU), the standardised computation times K where it under- or overflowed
        diag = np.diag(est._params_covariance)
        with np.errstate(invalid="ignore"):
            ok = (diag > _SE_LOW) & (diag < _SE_HIGH)
            se = np.where(ok, np.sqrt(np.where(ok, diag, 1.0)), se * k)
    est._params_se = se


def params_std(est):
    """Standard errors of ``(coef, intercept)``: ``_params_se`` (computed in standardised units where the
    covariance under- or overflows), else the square roots of ``_params_covariance``'s diagonal (a pickle from
    before review HMU)."""
    cov = est._params_covariance
    se = getattr(est, "_params_se", None)
    if se is not None and len(se) == cov.shape[0]:
        return se
    with np.errstate(invalid="ignore"):
        return np.sqrt(np.diag(cov))


def interval_dof(est):
    """Degrees of freedom of the t quantiles of ``est``'s intervals: ``df_intervals_`` (issue 30, round 15), or
    ``df_resid_`` for a fit pickled before it existed."""
    return getattr(est, "df_intervals_", est.df_resid_)


def validate_alpha(alpha):
    """``alpha`` as a float in (0, 1), else ``ValueError`` naming it."""
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, (int, float, np.integer, np.floating)):
        raise ValueError(f"alpha must be a float in (0, 1), got {alpha!r}.")
    if not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must be a float in (0, 1), got {alpha!r}.")
    return float(alpha)


def validate_threshold(threshold):
    """``threshold`` of ``flag_outliers`` as a float, finite and > 0, else ``ValueError`` naming it (a bool is not
    a number here: ``True`` would silently flag at 1)."""
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, Real) or not (
        np.isfinite(threshold) and threshold > 0
    ):
        raise ValueError(f"threshold must be a finite number > 0, got {threshold!r}.")
    return float(threshold)


#: ``summary().info["covariance"]`` of a fit whose covariance is the least-squares (HC3) fallback, by its reason
_FALLBACK_LABELS = {"exact": "least-squares sandwich (HC3; fallback: more than half the rows fitted exactly)",
                    "not_pd": "least-squares sandwich (HC3; fallback: the selected loss's A is not positive definite)"}


def _covariance_label(fitted, corrected):
    """What ``coef_covariance_`` is, as the fit recorded it in ``_fitted_with`` (``"fallback"``: the reasons
    :func:`parameter_covariance` gave for the least-squares sandwich; absent in a pickle from before H30Y)."""
    if fitted["variant"] != "min_variance":
        return "outer product of scores"
    fallback = fitted.get("fallback") or []
    if fallback:
        return _FALLBACK_LABELS.get(fallback[0], "least-squares sandwich (HC3; fallback)")
    return "sandwich (HC, selected loss)" + (" x Huber's K^2" if corrected else "")


def summarise(est, alpha, X, y, threshold):
    """:class:`MixtureSummary` of the fitted ``est`` (``summary()``).

    The variant and whether an intercept was fitted are those of the fit (recorded in
    ``_fitted_with``), not the parameters as they stand: ``set_params`` after ``fit`` must not
    relabel the fit or drop its intercept row.
    """
    alpha = validate_alpha(alpha)
    threshold = validate_threshold(threshold)
    if (X is None) != (y is None):
        raise ValueError("summary: pass both X and y (to flag their outliers) or neither.")
    if X is None:
        if threshold != 2.5:
            raise ValueError("summary: a threshold other than 2.5 needs X and y (the training rows "
                             "were flagged at 2.5 during fit).")  # fmt: skip
        outliers = np.flatnonzero(est.outlier_mask_)
    else:
        outliers = np.flatnonzero(est.flag_outliers(X, y, threshold))
    fitted = getattr(est, "_fitted_with", None)  # a pickle from before it was recorded: the loss tells the variant
    if fitted is None:
        fitted = {"variant": "paper" if est.selected_loss_ is None else "min_variance",
                  "fit_intercept": bool(est.fit_intercept),  # the correction: none before df_intervals_ existed
                  "interval_correction": getattr(est, "interval_correction", "none")
                  if est.selected_loss_ is not None and hasattr(est, "df_intervals_") else "none"}  # fmt: skip
    d = len(est.coef_)
    names = [str(n) for n in getattr(est, "feature_names_in_", [f"x{j}" for j in range(d)])]
    coef, cov = est.coef_, est._params_covariance
    if fitted["fit_intercept"]:
        names, coef = names + ["const"], np.append(coef, est.intercept_)
    std = params_std(est)[: len(coef)]
    # Huber's K is 1 for least squares: the label says "x K^2" only where it can differ from 1 (review HMU F12)
    corrected = fitted.get("interval_correction", "none") == "huber" and est.selected_loss_ != "least squares"
    comps = [str(getattr(c, "name", None) or type(c).__name__) for c in est.components_]
    info = {
        "variant": fitted["variant"],
        "selected loss": est.selected_loss_ or "mixture likelihood (EM)",
        "loss scale": np.nan if est.selected_scale_ is None else est.selected_scale_,
        "residual scale": est.residual_scale_,
        "rows": int(len(est.outlier_mask_)),
        "df resid": int(est.df_resid_),
        "df intervals": float(interval_dof(est)),
        "covariance": _covariance_label(fitted, corrected),
        "threshold": threshold,
        "alpha": alpha,
    }  # fmt: skip
    mixture = (comps, est.mixture_weights_, est.scales_)
    return MixtureSummary(names, coef, std, interval_dof(est), alpha, mixture, outliers, info)


def wald_intervals(estimate, std, dof, alpha):
    """``estimate -+ t_{dof, 1 - alpha/2} std``, shape ``(k, 2)``.  Below ``alpha`` = :data:`_ISF_BELOW` the
    quantile is ``t.isf(alpha / 2)`` (``1 - alpha / 2`` rounds to 1 below ``alpha`` ~ 1e-16: the intervals were
    infinite; review HMU F11); above, ``t.ppf(1 - alpha / 2)`` as before, bit for bit (the two differ by rounding,
    up to 1e-15 relative)."""
    q = stats.t.isf(alpha / 2.0, dof) if alpha < _ISF_BELOW else stats.t.ppf(1.0 - alpha / 2.0, dof)
    return np.column_stack([estimate - q * std, estimate + q * std])


#: ``alpha`` below which :func:`wald_intervals` takes the upper tail's quantile (``1 - alpha / 2`` then carries
#: ``alpha`` to a relative 1e-10 or worse)
_ISF_BELOW = 1e-6


def _records(columns):
    """A pandas DataFrame of ``columns`` (an ordered dict) if pandas is installed, else a record array."""
    try:
        import pandas as pd
    except ImportError:  # pandas is optional
        pd = None
    if pd is not None:
        names = columns.pop("")
        return pd.DataFrame(columns, index=pd.Index(names, name=""))
    return np.rec.fromarrays(list(columns.values()), names=["name" if k == "" else k for k in columns])


def _fmt(v):
    if isinstance(v, str):
        return v
    if not np.isfinite(v):
        return "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")
    return f"{v:.4g}" if abs(v) >= 1e-4 or v == 0 else f"{v:.3e}"


def _table(header, rows):
    cols = list(zip(header, *rows))
    widths = [max(len(str(c)) for c in col) for col in cols]
    line = lambda cells: "  ".join(str(c).rjust(w) if i else str(c).ljust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths)))  # fmt: skip
    return [line(header), "-" * (sum(widths) + 2 * (len(widths) - 1))] + [line(r) for r in rows]


class MixtureSummary:
    """What :meth:`MixtureMEstimatorRegressor.summary` returns: printable tables of a fit.

    Attributes
    ----------
    coefficients : pandas.DataFrame or numpy.recarray
        One row per coefficient (features, then ``const`` if fitted): ``coef``, ``std_err``,
        ``t``, ``P>|t|``, ``lower`` and ``upper`` (the ``1 - alpha`` interval).  A record
        array (with a ``name`` field) when pandas is not installed.
    mixture : pandas.DataFrame or numpy.recarray
        One row per error-law component: ``weight`` and ``scale``.
    outliers : ndarray of int
        Positions (0-based) of the flagged rows.
    info : dict
        Variant, selected loss and its scale, rows, degrees of freedom, ``alpha``, covariance
        type, residual scale, outlier threshold.
    """

    def __init__(self, names, coef, std, dof, alpha, mixture, outliers, info):
        with np.errstate(divide="ignore", invalid="ignore"):
            t = coef / std
        pvals = 2.0 * stats.t.sf(np.abs(t), dof)
        ci = wald_intervals(coef, std, dof, alpha)
        self._coef_rows = [list(names), coef, std, t, pvals, ci[:, 0], ci[:, 1]]
        self._mix_rows = mixture
        self.alpha = alpha
        self.coefficients = _records({"": list(names), "coef": coef, "std_err": std, "t": t, "P>|t|": pvals,
                                      "lower": ci[:, 0], "upper": ci[:, 1]})  # fmt: skip
        self.mixture = _records({"": list(mixture[0]), "weight": np.asarray(mixture[1], dtype=float),
                                 "scale": np.asarray(mixture[2], dtype=float)})  # fmt: skip
        self.outliers = np.asarray(outliers, dtype=np.intp)
        self.info = info

    def to_frame(self):
        """The coefficient table (:attr:`coefficients`)."""
        return self.coefficients

    def as_text(self):
        """The summary as plain text (what ``print`` shows)."""
        info = self.info
        lo, hi = self.alpha / 2.0, 1.0 - self.alpha / 2.0
        lines = [f"MixtureMEstimatorRegressor (variant={info['variant']!r})", "=" * 60]
        for key in ("selected loss", "loss scale", "residual scale", "rows", "df resid", "df intervals",
                    "covariance"):
            v = info[key]
            lines.append(f"{key + ':':<16}{_fmt(v) if not isinstance(v, (int, np.integer)) else v}")
        lines.append("")
        names, coef, std, t, pv, lower, upper = self._coef_rows
        rows = [[n, _fmt(c), _fmt(s), _fmt(z), _fmt(q), _fmt(a), _fmt(b)]
                for n, c, s, z, q, a, b in zip(names, coef, std, t, pv, lower, upper)]  # fmt: skip
        lines += _table(["", "coef", "std err", "t", "P>|t|", f"[{lo:g}", f"{hi:g}]"], rows)
        lines.append("")
        lines += _table(["component", "weight", "scale"],
                        [[n, _fmt(float(w)), _fmt(float(s))] for n, w, s in zip(*self._mix_rows)])  # fmt: skip
        lines.append("")
        k = len(self.outliers)
        shown = ", ".join(str(i) for i in self.outliers[:20]) + (", ..." if k > 20 else "")
        lines.append(f"flagged rows (|r| > {info['threshold']:g} x residual scale; 0-based positions): {k}" + (f": {shown}" if k else ""))
        return "\n".join(lines)

    def __str__(self):
        return self.as_text()

    def __repr__(self):
        return self.as_text()
