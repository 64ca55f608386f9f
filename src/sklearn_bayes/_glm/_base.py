"""Shared pieces of the linear models: input validation, internal standardisation, prediction.

Every linear estimator of this package solves its problem on *standardised* data -- each column
of ``X`` centred (with an intercept) and divided by its scale, and for the regressors ``y``
likewise -- and maps the solution back to the units of the data.  All the algorithms are
equivariant under such affine changes of units (least squares, GLM maximum likelihood, the
subsample prior, EM over location-scale laws), so the standardisation does not change what
is estimated; it only makes the numerical thresholds of the solvers (rank tolerances, variance
and scale floors, convergence tolerances) relative to the data's own scale, so the fit does
not depend on whether ``X`` is in metres or nanometres.
"""

import math
from dataclasses import dataclass

from numbers import Real

import numpy as np
import scipy.sparse
from scipy.stats import norm
from sklearn.utils import check_array
from sklearn.utils.validation import _check_sample_weight, _num_samples, check_is_fitted, validate_data
from sklearn.utils.validation import _check_feature_names, _check_n_features

from sklearn_bayes.utils._validation import check_container, naming

__all__ = ["LinearPredictorMixin", "Standardisation", "check_consistent_rows", "check_dense", "check_features",
           "check_numeric_target", "naming", "normalise_weights", "rescale",
           "standardise", "validate_regression_data", "wald_interval", "dominated_columns",
           "dominated_candidates", "dominated_columns_below"]


def check_dense(X):
    """A ``TypeError`` naming ``X`` when it is a SciPy sparse matrix or array, with the way out.

    The linear models here centre the columns of ``X`` (which makes a sparse matrix dense) and
    factorise dense Gram matrices, so they take dense arrays only.  scikit-learn's own message
    says only "use .toarray()"; the common source of sparse input is a one-hot encoder, whose
    default output is sparse, so the message names the switches that give dense output and the
    memory a dense copy needs.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> check_dense(sp.eye(3, format="csr"))
    Traceback (most recent call last):
    ...
    TypeError: Sparse data was passed for X, but dense data is required ...
    """
    if scipy.sparse.issparse(X):
        n, p = X.shape
        raise TypeError(
            f"Sparse data was passed for X, but dense data is required (X is a {n} x {p} sparse {X.format} "
            f"matrix; a dense float64 copy takes {8.0 * n * p / 2**20:.3g} MiB): the columns are centred and "
            "the Gram matrices factorised densely. Pass X.toarray(), or ask the transformer for dense output: "
            "OneHotEncoder(sparse_output=False), ColumnTransformer(..., sparse_threshold=0)."
        )


def check_features(estimator, X, *, reset):
    """``validate_data`` of ``X`` alone (float64/float32 for prediction), errors naming ``X``."""
    check_container(X, "X")
    check_dense(X)
    with naming("X", private=getattr(estimator, "_private_inputs", False)):
        return validate_data(estimator, X, reset=reset, dtype=[np.float64, np.float32])


def validate_regression_data(estimator, X, y, sample_weight=None, *, reset=True):
    """``validate_data`` for a regressor: float64 ``X``, numeric float64 ``y``, non-negative weights.

    Returns ``(X, y, sample_weight)``.  Every error names its argument: a target that is not
    numeric (strings) raises a ``ValueError`` naming ``y``, a 3-D or empty ``X`` one naming
    ``X``, a negative weight one naming ``sample_weight``.  ``reset=False`` checks ``X``
    against the fitted ``n_features_in_`` (scoring methods that take ``y``).
    """
    private = getattr(estimator, "_private_inputs", False)
    check_container(X, "X")
    check_container(y, "y")
    check_dense(X)
    if y is not None and np.asarray(y).dtype.kind in "OUS":  # before sklearn's unnamed conversion error
        check_numeric_target(np.asarray(y), type(estimator).__name__, private=private)
    with naming("X", private=private):
        check_array(X, dtype=np.float64, input_name="X", estimator=estimator)
    check_consistent_rows(X, y)
    if not reset:  # X's names and width against the fit, named X (the joint check below names y)
        with naming("X", private=private):
            _check_feature_names(estimator, X, reset=False)
            _check_n_features(estimator, X, reset=False)
    with naming("y", private=private):
        X, y = validate_data(estimator, X, y, y_numeric=True, dtype=np.float64, reset=reset)
    y = check_numeric_target(y, type(estimator).__name__, private=private)
    with naming("sample_weight", private=private):
        sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
    return X, y, sample_weight


def check_consistent_rows(X, y):
    """A ``ValueError`` naming ``X`` and ``y`` when they have different numbers of rows.

    (scikit-learn's own message, "inconsistent numbers of samples: [30, 29]", names neither.)
    """
    if y is None:
        return
    n_x, n_y = _num_samples(X), _num_samples(y)
    if n_x != n_y:
        raise ValueError(f"X and y must have the same number of rows: X has {n_x} and y has {n_y}.")


def check_numeric_target(y, owner, private=False):
    """``y`` as float64, or a ``ValueError`` naming ``y`` if it holds something other than numbers.

    The message quotes the first offending value, except for a private estimator
    (``private=True``), whose errors never print a data value.
    """
    y = np.asarray(y)
    if y.dtype.kind in "biuf":
        return y.astype(np.float64, copy=False)
    try:
        return y.astype(np.float64)
    except (TypeError, ValueError):
        flat = y.ravel()
        if private:
            raise ValueError(
                f"{owner} needs a numeric target y; got an array of dtype {y.dtype} holding a value "
                "that is not a number (not printed: y is private data)."
            ) from None
        bad = next((v for v in flat if not _is_number(v)), flat[0] if flat.size else None)
        raise ValueError(
            f"{owner} needs a numeric target y; got an array of dtype {y.dtype} with the value {bad!r}."
        ) from None


def _is_number(v):
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


def normalise_weights(w):
    """``(w / W, W)`` with ``W`` the power of two that puts the largest weight in ``[1, 2)``.

    Dividing by a power of two is exact (weighted means, and minimisers of weighted sums, are
    bit-identical), so weights whose largest value is already in ``[1, 2)`` -- unit weights --
    are returned unchanged, while weights of any overall size (1e-300, 1e308) no longer
    underflow the solvers' absolute tolerances or overflow their weighted sums.  Entries below
    ``2**-1074 * W`` (relative weight beyond the float64 range) become 0.
    """
    w = np.asarray(w, dtype=np.float64)
    top = float(np.max(w, initial=0.0))
    if not top > 0 or not np.isfinite(top):
        return w, 1.0
    W = math.ldexp(1.0, math.frexp(top)[1] - 1)
    return (w if W == 1.0 else w / W), W


_STAT_BLOCK = 4096  # rows per block of the column statistics (cache-sized work buffer)


def _column_offset_scale(A, w, centre):
    """Weighted mean (0 without centring) and scale of every column of ``A``.

    The scale is the weighted standard deviation (root mean square without centring),
    computed after dividing each column by its largest magnitude among the weighted rows so
    that values near the floating-point limits neither overflow nor underflow.  A column without spread gets
    scale 1 (it is then left alone: its coefficient is determined by the solver, e.g. 0 for a
    constant column with an intercept).
    """
    pos = w > 0  # rows without weight do not count (not even for the magnitude)
    if not pos.all():
        A, w = A[pos], w[pos]
    w = normalise_weights(w)[0]  # only ratios of weights enter: exact, and no overflow of sum(w)
    n, d = A.shape
    wsum = float(w.sum())
    top, bottom = (np.max(A, axis=0), np.min(A, axis=0)) if n else (np.zeros(d), np.zeros(d))
    big = np.maximum(top, -bottom)
    big = np.where(big > 0, big, 1.0)
    # two passes over cache-sized blocks of rows (no n x d temporaries): weighted sums of the
    # columns divided by their magnitudes, then of the squared deviations from the means
    buf = np.empty((min(n, _STAT_BLOCK), d))
    tot = np.zeros(d)
    if centre:
        for s in range(0, n, _STAT_BLOCK):
            e = min(n, s + _STAT_BLOCK)
            tot += w[s:e] @ np.divide(A[s:e], big, out=buf[: e - s])
    offset = tot / wsum
    ss = np.zeros(d)
    for s in range(0, n, _STAT_BLOCK):
        e = min(n, s + _STAT_BLOCK)
        D = np.divide(A[s:e], big, out=buf[: e - s])
        D -= offset
        D *= D
        ss += w[s:e] @ D
    scale = np.sqrt(ss / wsum)
    # a constant column: centring leaves rounding-level values (|offset| * eps) whose size depends on the
    # order of the sums (another BLAS or SIMD width); equal extremes decide it exactly, on every machine
    flat = scale <= 4.0 * np.finfo(float).eps * np.maximum(np.abs(offset), 0.0 if centre else 1.0)
    flat |= ~(scale > 0)
    if centre:
        flat |= top == bottom
    scale = np.where(flat, 1.0, scale)
    return offset * big, scale * big, flat


#: entries per block of :func:`rescale`'s check on a large array (temporaries in cache, not a pass per condition)
_RESCALE_BLOCK = 1 << 15


def _fine(a, t, out):
    """Where ``out = a * t`` is the exact product's rounding: a normal factor and a normal or zero result."""
    tiny = np.finfo(float).tiny
    return (np.isfinite(t) & (np.abs(t) >= tiny)
            & ((np.abs(out) >= tiny) | (a == 0)) & (np.isfinite(out) | ~np.isfinite(a)))


def _all_fine(a, t, out):
    """``np.all(_fine(a, t, out))``, block by block of rows for a large ``out`` (the same answer)."""
    if out.ndim == 0 or out.size <= _RESCALE_BLOCK:
        return bool(np.all(_fine(a, t, out)))
    a, t = np.broadcast_to(a, out.shape), np.broadcast_to(t, out.shape)
    rows = max(1, _RESCALE_BLOCK // max(1, out[0].size))
    return all(np.all(_fine(a[lo:lo + rows], t[lo:lo + rows], out[lo:lo + rows]))
               for lo in range(0, out.shape[0], rows))


def rescale(a, num=(), den=()):
    """``a * prod(num) / prod(den)`` (broadcast), overflowing or underflowing only where the result does.

    The plain product is used wherever every factor ``prod(num) / prod(den)`` and the result
    are normal floats (so results in ordinary units are bit-identical to ``a * (n / d)``);
    elsewhere -- a ratio of scales that overflows or underflows on its own, e.g. with a
    subnormal column scale -- mantissas and binary exponents are combined separately
    (``frexp``/``ldexp``), which rounds each factor's mantissa product (a few ulps) and
    saturates to ``inf`` or ``0`` only when the exact result is outside the float64 range.
    """
    a = np.asarray(a, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        t = np.float64(1.0)
        for f in num:
            t = t * np.asarray(f, dtype=np.float64)
        for f in den:
            t = t / np.asarray(f, dtype=np.float64)
        out = a * t
        if _all_fine(a, t, out):
            return out
        fine = _fine(a, t, out)
        m, e = np.frexp(a)
        e = e.astype(np.int64)
        for f in num:
            mf, ef = np.frexp(np.asarray(f, dtype=np.float64))
            m, e = m * mf, e + ef
        for f in den:
            mf, ef = np.frexp(np.asarray(f, dtype=np.float64))
            m, e = m / mf, e - ef
        # ldexp takes int32 exponents: anything beyond +-2200 is already inf / 0
        safe = np.ldexp(m, np.clip(e, -2200, 2200).astype(np.int32))
        return np.where(fine, out, safe)


@dataclass
class Standardisation:
    """An affine change of units ``X_s = (X - x_offset) / x_scale``, ``y_s = (y - y_offset) / y_scale``.

    ``constant`` flags the columns without spread (scale set to their magnitude, so they are
    exactly representable; with an intercept they are all zero after centring).
    """

    x_offset: np.ndarray
    x_scale: np.ndarray
    y_offset: float
    y_scale: float
    constant: np.ndarray

    def transform(self, X):
        return (X - self.x_offset) / self.x_scale

    def coef(self, coef_s):
        """Coefficients in the data's units from standardised ones (last axis = features).

        ``coef_s * y_scale / x_scale``, evaluated so that it overflows only when the result
        does (a subnormal column scale makes ``y_scale / x_scale`` overflow on its own); a
        finite standardised fit whose coefficients are beyond the float64 range in the
        data's units raises a ``ValueError`` naming ``X``.
        """
        coef_s = np.asarray(coef_s, dtype=np.float64)
        coef = rescale(coef_s, num=(self.y_scale,), den=(self.x_scale,))
        bad = ~np.isfinite(coef) & np.isfinite(coef_s)
        if bad.any():
            cols = np.unique(np.nonzero(bad)[-1]).tolist()
            raise ValueError(
                "X: the fitted coefficients in the units of X are beyond the float64 range (|coef| > "
                f"{np.finfo(float).max:.3g}) for column(s) {cols}: the fit on the standardised data is finite, "
                "but those columns' spread is too small relative to the target's scale (subnormal or near-"
                "subnormal values). Multiply X by a constant (or standardise it) before fitting."
            )
        return coef

    def intercept(self, intercept_s, coef):
        """Intercept in the data's units, given the standardised intercept and the mapped coefficients."""
        return self.y_offset + self.y_scale * np.asarray(intercept_s) - np.asarray(coef) @ self.x_offset


def standardise(X, y, sample_weight, *, fit_intercept, scale_y):
    """Standardise ``X`` (and ``y`` if ``scale_y``) with weighted moments over the weighted rows.

    With ``fit_intercept`` the columns and ``y`` are centred at their weighted means and divided
    by their weighted standard deviations; without it they are only divided by their weighted
    root mean squares (centring would change the model).  ``y`` is never centred or scaled when
    ``scale_y`` is False (counts, class labels).

    Returns ``(X_s, y_s, Standardisation)``.
    """
    w = np.asarray(sample_weight, dtype=np.float64)
    x_offset, x_scale, constant = _column_offset_scale(X, w, fit_intercept)
    if scale_y:
        yo, ys, yflat = _column_offset_scale(y[:, None], w, fit_intercept)
        y_offset, y_scale = float(yo[0]), float(ys[0])
    else:
        y_offset, y_scale = 0.0, 1.0
    st = Standardisation(x_offset, x_scale, y_offset, y_scale, constant)
    Xs = st.transform(X)
    if fit_intercept:
        Xs[:, constant] = 0.0
    ys_ = (y - y_offset) / y_scale if scale_y else y
    return Xs, ys_, st


class LinearPredictorMixin:
    """``predict`` of a linear regressor: ``X @ coef_ + intercept_`` (validated ``X``)."""

    def _linear_predictor(self, X):
        check_is_fitted(self)
        X = check_features(self, X, reset=False)
        return X @ self.coef_ + self.intercept_

    def predict(self, X):
        """Predict ``X @ coef_ + intercept_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return self._linear_predictor(X)


def wald_interval(coef, covariance, alpha):
    """Wald (posterior-normal) intervals ``coef -/+ z_{1 - alpha/2} * sqrt(diag(covariance))``.

    ``alpha`` must be a real number in (0, 1) (a ``ValueError`` naming ``alpha`` otherwise).
    Returns an array of shape ``coef.shape + (2,)`` (lower, upper).

    Examples
    --------
    >>> import numpy as np
    >>> wald_interval(np.array([1.0]), np.array([[4.0]]), 0.05).round(3)
    array([[-2.92,  4.92]])
    """
    if isinstance(alpha, bool) or not isinstance(alpha, Real) or not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must be a float in (0, 1), got {alpha!r}.")
    coef = np.asarray(coef, dtype=np.float64)
    sd = np.sqrt(np.maximum(np.diagonal(np.asarray(covariance, dtype=np.float64)), 0.0)).reshape(coef.shape)
    z = float(norm.ppf(1.0 - float(alpha) / 2.0))
    with np.errstate(over="ignore", invalid="ignore"):
        return np.stack([coef - z * sd, coef + z * sd], axis=-1)


def _weighted_sd(Z, w):
    tot = w.sum(axis=0)
    mean = (w * Z).sum(axis=0) / tot
    return np.sqrt((w * (Z - mean) ** 2).sum(axis=0) / tot)


def dominated_candidates(X, sample_weight, level, mean=None, sd=None):
    """Columns of ``X`` whose :func:`dominated_columns` ratio may be below ``level``: a superset, found in two
    ``arg`` passes from each column's weighted mean and sd (``mean``, ``sd``; computed here when not given).

    With the row of largest ``|x|`` (``x_t``, weight fraction ``a``) and ``z = (x_t - mean) / sd``, the other rows'
    weighted variance over ``sd^2`` is exactly ``(1 - z^2 a / (1 - a)) / (1 - a)`` (the sum of squares about the
    mean split into the rest's and the top row's).  Formed from ``sd^2``, it carries ``sd^2``'s relative rounding
    error, at most ``c n eps`` (``c`` a few), so the estimated ratio of sds is within ``sqrt(c n eps)`` of the
    exact one; a column whose estimate is above ``level + max(1e-3, 8 sqrt(n eps))`` is therefore not below
    ``level`` and is left out.  Constant columns, and columns whose estimate is not finite, stay in (the exact
    computation decides them).  At ``1e5 x 20`` this takes about 3 ms where :func:`dominated_columns` takes 40 ms.
    """
    X = np.asarray(X, dtype=float)
    w = np.asarray(sample_weight, dtype=float)
    n, p = X.shape
    if n < 3 or p == 0:
        return np.ones(p, dtype=bool)
    if mean is None or sd is None:
        mean, sd, _ = _column_offset_scale(X, w, True)
    hi, lo = np.argmax(X, axis=0), np.argmin(X, axis=0)
    k = np.arange(p)
    top = np.where(np.abs(X[hi, k]) >= np.abs(X[lo, k]), hi, lo)
    frac = w[top] / np.sum(w)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        z = (X[top, k] - mean) / sd
        est = (1.0 - z * z * (frac / (1.0 - frac))) / (1.0 - frac)
    margin = max(1e-3, 8.0 * math.sqrt(n * np.finfo(float).eps))
    return ~(est > (level + margin) ** 2)  # NaN (no spread, a single row of weight) stays in


def dominated_columns_below(X, sample_weight, level):
    """:func:`dominated_columns` where it may be below ``level`` (:func:`dominated_candidates`), ``inf`` elsewhere:
    the same answer to ``ratio < level`` at a fraction of the cost."""
    X = np.asarray(X, dtype=float)
    cand = dominated_candidates(X, sample_weight, level)
    out = np.full(X.shape[1], np.inf)
    if cand.any():
        out[cand] = dominated_columns(X if cand.all() else X[:, cand], sample_weight)
    return out


def dominated_columns(X, sample_weight):
    """Per column of ``X``: the weighted sd of the rows other than its largest ``|x|``, over the column's sd.

    Each sd is computed on the rows divided by their own largest ``|x|`` (no overflow at entries
    near 1e308, no underflow of the others at a ratio of 1e300) and the ratio is formed in logs;
    it is 0 below 1e-308.  A column whose other rows are all equal (a dummy with one 1) or which
    is constant gives ``nan`` (nothing to lose).  Example: a column of 79 standard normals and one
    row times 1e6 gives about 1e-5.
    """
    X = np.asarray(X, dtype=float)
    n, p = X.shape
    if n < 3:
        return np.full(p, np.nan)
    w = np.asarray(sample_weight, dtype=float)
    W = np.repeat((w / np.max(w))[:, None], p, axis=1)
    top = np.argmax(np.abs(X), axis=0)
    amax = np.abs(X[top, np.arange(p)])
    rest = np.where(np.arange(n)[:, None] == top[None, :], 0.0, W)
    rmax = np.max(np.where(rest > 0, np.abs(X), 0.0), axis=0)
    safe = lambda a: np.where(a > 0, a, 1.0)  # noqa: E731
    full = _weighted_sd(X / safe(amax), W)
    other = _weighted_sd(np.where(rest > 0, X, 0.0) / safe(rmax), rest)  # the top row out (its weight is 0)
    ok = (full > 0) & (other > 0) & (rmax > 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_ratio = np.log(safe(other)) + np.log(safe(rmax)) - np.log(safe(amax)) - np.log(safe(full))
        return np.where(ok, np.exp(np.minimum(log_ratio, 0.0)), np.nan)
