"""One maximum-a-posteriori (MAP) solver for Gaussian-prior generalised linear models.

The solver minimises, over the coefficients ``B`` (``q`` rows of ``d`` features) and an
unpenalised intercept ``b0`` (``q`` values),

.. math::

    F(B, b_0) = \\sum_{i=1}^N w_i\\, L\\big(y_i,\\; o_i + B x_i + b_0\\big)
               + \\tfrac12 (\\operatorname{vec} B - \\mu)^\\top P\\, (\\operatorname{vec} B - \\mu),

for a loss object ``L`` (:class:`SquaredLoss`, :class:`LogisticLoss`, :class:`MultinomialLoss`,
:class:`SquaredHingeLoss`, :class:`PoissonLoss`), a prior mean ``mu``, a prior precision
``P`` (or its Cholesky factor), a per-sample offset ``o`` and sample weights ``w``.  ``vec``
stacks the rows of ``B`` (row-major), so for a single-output loss (``q = 1``) it is just the
coefficient vector.

Scaling
-------
The data term is the *sum* (not the mean) of the weighted losses, and the prior term carries
the factor 1/2, so ``F`` is a negative log posterior: for the logistic, multinomial and Poisson
losses (negative log-likelihoods) ``P`` is the precision of a Gaussian prior in the usual sense.
The squared loss is :math:`\\tfrac12 (y-\\eta)^2`, hence for it ``F`` is one half of the
dissertation's ridge objective :math:`\\|y - X\\beta\\|^2 + (\\beta-\\beta_0)^\\top \\hat S^{-1}(\\beta-\\beta_0)`
and the minimiser is exactly its closed form
:math:`(X^\\top W X + P)^{-1}(X^\\top W (y - o) + P\\mu)` (after profiling out the intercept).
The squared hinge loss is :math:`\\max(0, 1 - y\\eta)^2` (liblinear's L2-loss SVM with
``C = 1``), so with ``P = I`` and ``mu = 0`` the objective is liblinear's primal
:math:`\\tfrac12\\|\\beta\\|^2 + C\\sum_i \\max(0, 1 - y_i x_i\\beta)^2`.

Algorithm
---------
Damped Newton's method (iteratively reweighted least squares for the GLM losses; the
generalised-Hessian primal Newton method of Keerthi & DeCoste / Chapelle for the squared
hinge loss) with an Armijo backtracking line search.  The Hessian is factorised by Cholesky;
when it is singular (an unregularised, rank-deficient or separable problem) a tiny multiple of
the identity is added (Levenberg damping) and :attr:`MAPResult.singular` is set.  For the
squared loss the Hessian is constant: it is factorised once and the first Newton step is the
closed form; a second step refines it (iterative refinement) and confirms convergence.
On wide data (one output, more than ``_dual.DUAL_RATIO = 2`` columns per row) under an isotropic
prior ``P = a I`` the same Newton step is solved in ``n`` dimensions (Woodbury, the intercept by its
Schur complement; :mod:`sklearn_bayes._glm._dual`): ``O(n^2 d)`` per step instead of ``O(n d^2 + d^3)``;
with ``q > 1`` outputs (multinomial) in ``n q`` dimensions (:mod:`sklearn_bayes._glm._multidual`):
``O(n^2 q^3 + n^3 q^3)`` per step instead of ``O(n q^2 d^2 + q^3 d^3)``.
Along a path of priors (``hessian_init``: the leave-one-out search of the subsampled-prior GLMs) the
steps are chord steps with a Hessian formed at an earlier point, each costing a gradient (``O(n d)``)
instead of a Hessian (``O(n d^2)``), and a fresh Hessian is formed where they converge slowly and for
the convergence test.
"""

import numbers
from dataclasses import dataclass

import numpy as np
from scipy import linalg, optimize
from scipy.linalg import lapack

from sklearn_bayes._glm import _dual, _multidual
from sklearn_bayes._glm._losses import (  # the losses are re-exported: part of this module's API
    HingeLoss,
    LogisticLoss,
    MultinomialLoss,
    PoissonLoss,
    SquaredHingeLoss,
    SquaredLoss,
    _amax,
)

__all__ = [
    "MAPResult",
    "HingeLoss",
    "LogisticLoss",
    "MultinomialLoss",
    "PoissonLoss",
    "SquaredHingeLoss",
    "SquaredLoss",
    "fit_map",
    "mle_exists",
    "inverse_information",
    "inverse_spd",
    "rank_tolerance",
    "split_null_space",
    "unidentified",
]


# --------------------------------------------------------------------------------------
# prior and solver (the losses are in _losses)
# --------------------------------------------------------------------------------------


class _Prior:
    """Gaussian prior term 1/2 (b - mu)^T P (b - mu) with P zero, diagonal or full."""

    def __init__(self, size, mean=None, precision=None, cholesky=None):
        self.size = size
        if precision is not None and cholesky is not None:
            raise ValueError("Give prior_precision or prior_precision_cholesky, not both.")
        self.mean = np.zeros(size) if mean is None else self._vector(mean, "prior_mean")
        self.kind = "none"
        self.P = None
        if cholesky is not None:
            L = np.asarray(cholesky, dtype=float)
            if L.shape != (size, size):
                raise ValueError(f"prior_precision_cholesky must have shape {(size, size)}, got {L.shape}.")
            if not np.all(np.isfinite(L)):
                raise ValueError("prior_precision_cholesky contains NaN or inf.")
            self.kind, self.P = "full", L @ L.T
        elif precision is not None:
            P = np.asarray(precision, dtype=float)
            if not np.all(np.isfinite(P)):
                raise ValueError("prior_precision contains NaN or inf.")
            if P.ndim == 0:
                if P < 0:
                    raise ValueError(f"A scalar prior_precision must be >= 0, got {float(P)}.")
                self.kind, self.P = "diag", np.full(size, float(P))
            elif P.ndim == 1:
                if P.shape != (size,):
                    raise ValueError(f"A diagonal prior_precision must have shape {(size,)}, got {P.shape}.")
                if np.any(P < 0):
                    raise ValueError("A diagonal prior_precision must be >= 0.")
                self.kind, self.P = "diag", P.copy()
            elif P.ndim == 2:
                if P.shape != (size, size):
                    raise ValueError(f"prior_precision must have shape {(size, size)}, got {P.shape}.")
                self.kind, self.P = "full", 0.5 * (P + P.T)
            else:
                raise ValueError(f"prior_precision must be a scalar, 1-D or 2-D array, got ndim={P.ndim}.")

    def _vector(self, v, name):
        v = np.asarray(v, dtype=float).ravel()
        if v.shape != (self.size,):
            raise ValueError(f"{name} must have {self.size} entries, got {v.size}.")
        if not np.all(np.isfinite(v)):
            raise ValueError(f"{name} contains NaN or inf.")
        return v

    def value(self, b):
        if self.kind == "none":
            return 0.0
        r = b - self.mean
        Pr = self.P * r if self.kind == "diag" else self.P @ r
        return 0.5 * float(r @ Pr)

    def gradient(self, b):
        if self.kind == "none":
            return np.zeros(self.size)
        r = b - self.mean
        return self.P * r if self.kind == "diag" else self.P @ r

    def add_hessian(self, H):
        if self.kind == "diag":
            idx = np.arange(self.size)
            H[idx, idx] += self.P
        elif self.kind == "full":
            H[: self.size, : self.size] += self.P


# --------------------------------------------------------------------------------------
# the solver
# --------------------------------------------------------------------------------------


@dataclass
class MAPResult:
    """Result of :func:`fit_map`.

    Attributes
    ----------
    coef : ndarray of shape (q, d)
    intercept : ndarray of shape (q,)
        Zeros when ``fit_intercept=False``.
    n_iter : int
        Number of Newton iterations (Hessian evaluations).
    converged : bool
    objective : float
        The minimised objective ``F``.
    singular : bool
        The Hessian at the solution was numerically singular (damping was needed): the
        minimiser is not unique (rank deficiency, or a separable problem without a prior).
    diverged : bool
        The fit was stopped because the linear predictor exploded (only with
        ``abort_on_divergence=True``): the unregularised minimiser probably does not exist.
    smoothing : float or None
        For a smoothed loss (:class:`HingeLoss`): the width of the last homotopy stage that
        converged, whose minimiser is returned (the hinge objective is within
        ``smoothing * sum(w) / 2`` of its optimum).  None for the other losses.
    hessian : ndarray or None
        With ``keep_factor=True``: the Hessian of the data term alone (the prior left out) last
        formed -- at the returned ``(coef, intercept)`` when ``factor`` is not None, else one Newton
        step before it; None where it was damped or in the dual (wide-data) form.  A
        ``hessian_init`` for a fit at a neighbouring prior.
    factor : ndarray or None
        With ``keep_factor=True``: the lower Cholesky factor of the whole Hessian (data plus prior)
        at the returned point, or None where the last Hessian was formed elsewhere (a step was taken
        after it), damped, or in the dual form.
    data_term : float or None
        With ``keep_factor=True``: the data term ``sum_i w_i L_i`` of the objective at the returned
        point (a ``data_term_init`` for a fit started there).
    point : tuple or None
        With ``factor``: ``(eta, g, h)``, the linear predictor and the loss's first and second
        derivatives at the returned point (those of the last iteration).
    data_gradient : ndarray or None
        With ``point``: the gradient of the data term at the returned point (the coefficients, then the
        intercepts), with ``point`` a ``point_init`` for a fit started there.
    """

    coef: np.ndarray
    intercept: np.ndarray
    n_iter: int
    converged: bool
    objective: float
    singular: bool = False
    diverged: bool = False
    smoothing: float = None
    hessian: np.ndarray = None
    factor: np.ndarray = None
    data_term: float = None
    point: tuple = None
    data_gradient: np.ndarray = None


#: consecutive Newton iterations with an exploding predictor before an unregularised fit is
#: declared diverging
_EXPLODING_PATIENCE = 8
#: chord steps (fit_map's hessian_init): the largest ratio of consecutive decrements at which the
#: Hessian is kept, and the most chord steps of one fit
_CHORD_RATE = 0.1
_CHORD_MAX = 50


def _factor(H, rcond=1e-12):
    """Lower Cholesky factor of H (LAPACK potrf); adds Levenberg damping when H is singular.

    Returns ``(L, damped)``.
    """
    scale = _amax(H.diagonal()) or 1.0
    tau = 0.0
    for _ in range(30):
        Ht = H if tau == 0.0 else H + tau * np.eye(H.shape[0])
        L, info = lapack.dpotrf(Ht, lower=1, clean=1)
        if info == 0:
            dg = L.diagonal()
            dmin = dg.min()
            if np.isfinite(dmin) and dmin * dmin > rcond * scale and np.isfinite(dg.max()):
                return L, tau > 0.0
        tau = rcond * scale if tau == 0.0 else tau * 10.0
    raise FloatingPointError("The Hessian could not be factorised (non-finite entries?).")


def _solve(L, g):
    x, info = lapack.dpotrs(L, g, lower=1)
    return x


#: the n- and n q-dimensional (Woodbury) factors of wide data (fit_map takes Newton steps through their solve)
_DUAL_FACTORS = (_dual.DualFactor, _multidual.MultiDualFactor)

#: rows from which the one-output Hessian is accumulated over row blocks of this size (HSP): the scaled copy of a
#: block stays in cache instead of an N x d array allocated (and page-faulted) at every call; the sums' order
#: differs (within a few ulp of the entries' magnitudes), below this size every Hessian is as before, bit for bit
_BLOCK_ROWS = 4096
_BLOCKED_MIN_ROWS = 8 * _BLOCK_ROWS


def _hessian(X, h, q, fit_intercept, unit):
    """Data Hessian of the objective in (vec B, b0) for per-sample second derivatives h."""
    n, d = X.shape
    if q == 1:  # fast path
        if unit:  # every second derivative is 1: X^T X through BLAS syrk, no copy
            G, xh, s = X.T @ X, X.sum(axis=0), float(n)
        elif n >= _BLOCKED_MIN_ROWS:  # tall: syrk on cache-sized scaled blocks
            hv = h[:, 0]
            r = np.sqrt(hv)
            G = np.zeros((d, d))
            for lo in range(0, n, _BLOCK_ROWS):
                Xs = X[lo:lo + _BLOCK_ROWS] * r[lo:lo + _BLOCK_ROWS, None]
                G += Xs.T @ Xs
            xh, s = X.T @ hv, float(hv.sum())
        else:
            hv = h[:, 0]
            Xs = X * np.sqrt(hv)[:, None]
            G, xh, s = Xs.T @ Xs, X.T @ hv, float(hv.sum())
        if not fit_intercept:
            return np.array(G, dtype=float, copy=True)
        H = np.empty((d + 1, d + 1))
        H[:d, :d] = G
        H[:d, d] = xh
        H[d, :d] = xh
        H[d, d] = s
        return H
    size = q * d + (q if fit_intercept else 0)
    H = np.empty((size, size))
    diag_h = h.ndim == 2
    for k in range(q):
        for l in range(k, q):
            if diag_h and k != l:
                hk = None
            else:
                hk = h[:, k] if diag_h else h[:, k, l]
            if hk is None:
                H[k * d:(k + 1) * d, l * d:(l + 1) * d] = 0.0
                if fit_intercept:
                    H[k * d:(k + 1) * d, q * d + l] = 0.0
                    H[l * d:(l + 1) * d, q * d + k] = 0.0
                    H[q * d + k, q * d + l] = 0.0
                continue
            if unit:  # every second derivative is 1: X^T X through BLAS syrk, no copy
                block, xh, s = X.T @ X, X.sum(axis=0), float(n)
            elif k == l and np.all(hk >= 0):
                Xs = X * np.sqrt(hk)[:, None]
                block, xh, s = Xs.T @ Xs, X.T @ hk, float(hk.sum())
            else:
                Xh = X * hk[:, None]
                block, xh, s = X.T @ Xh, Xh.sum(axis=0), float(hk.sum())
            H[k * d:(k + 1) * d, l * d:(l + 1) * d] = block
            if fit_intercept:
                H[k * d:(k + 1) * d, q * d + l] = xh
                H[l * d:(l + 1) * d, q * d + k] = xh
                H[q * d + k, q * d + l] = s
    # symmetrise (only the upper blocks were written)
    iu = np.triu_indices(size, 1)
    H[(iu[1], iu[0])] = H[iu]
    return H


def fit_map(X, y, loss, **kwargs):
    """Minimise the penalised GLM objective of this module by damped Newton's method.

    A loss with a ``stages()`` method (:class:`HingeLoss`: a smoothing homotopy) is minimised
    stage by stage, each stage started at the previous minimiser; the result is that of the
    last stage (``n_iter`` summed over the stages).  Parameters and return value as
    :func:`_fit_map_stage`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_bayes._glm._map import SquaredLoss, fit_map
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array([1.0, 3.0, 5.0, 7.0])
    >>> res = fit_map(X, y, SquaredLoss(), prior_mean=[0.0], prior_precision=1e-12)
    >>> np.round(res.coef, 6), np.round(res.intercept, 6)
    (array([[2.]]), array([1.]))
    """
    stages = getattr(loss, "stages", None)
    if stages is None:
        return _fit_map_stage(X, y, loss, **kwargs)
    res, n_iter = None, 0
    for stage in stages():
        kw = dict(kwargs)
        if res is not None:
            kw["coef_init"], kw["intercept_init"] = res.coef, res.intercept
            # the starting point and the loss changed: the given data term and Hessian were the first stage's
            kw.pop("data_term_init", None)
            kw.pop("hessian_init", None)
            kw.pop("point_init", None)
        new = _fit_map_stage(X, y, stage, **kw)
        n_iter += new.n_iter
        if res is not None and res.converged and not new.converged:
            # a narrower smoothing whose Newton iteration stalls (a singular generalised
            # Hessian): keep the last converged stage and report its width
            break
        res = new
        res.smoothing = stage.smoothing
        if res.diverged:
            break
    res.n_iter = n_iter
    return res


def _fit_map_stage(
    X,
    y,
    loss,
    *,
    prior_mean=None,
    prior_precision=None,
    prior_precision_cholesky=None,
    offset=None,
    sample_weight=None,
    fit_intercept=True,
    coef_init=None,
    intercept_init=None,
    tol=1e-8,
    max_iter=100,
    abort_on_divergence=False,
    hessian_init=None,
    keep_factor=False,
    data_term_init=None,
    fast_value=False,
    point_init=None,
):
    """Minimise the penalised GLM objective of this module by damped Newton's method.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
        Targets as the loss expects them: reals (squared), {0, 1} (logistic), class codes
        (multinomial), {-1, +1} (squared hinge), non-negative reals (Poisson).
    loss : loss object
        One of :class:`SquaredLoss`, :class:`LogisticLoss`, :class:`MultinomialLoss`,
        :class:`SquaredHingeLoss`, :class:`PoissonLoss`.
    prior_mean : array-like of shape (q * n_features,) or (q, n_features), default=None
        Prior mean ``mu`` (zeros if None).
    prior_precision : float, array-like of shape (q * n_features,) or (q * n_features,) * 2, default=None
        Prior precision ``P``: a scalar (``P = alpha I``), its diagonal, or the full matrix.
        None (and no Cholesky factor) means no prior: the unregularised fit.
    prior_precision_cholesky : array-like of shape (q * n_features, q * n_features), default=None
        A factor ``L`` with ``P = L L^T`` instead of ``prior_precision``.
    offset : array-like of shape (n_samples,) or (n_samples, q), default=None
        Fixed per-sample offset ``o`` added to the linear predictor.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights ``w`` of the losses.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept ``b0``.
    coef_init, intercept_init : array-like, default=None
        Starting point (default: the prior mean and the intercept-only fit).
    tol : float, default=1e-8
        Stop when the Newton step is at most ``tol * max(1, max |theta|)`` in every coordinate,
        or when the Newton decrement ``g^T H^{-1} g`` is at most ``tol**2 * max(1, |F|)``.
    max_iter : int, default=100
        Maximum number of Newton iterations.
    abort_on_divergence : bool, default=False
        Stop early (``diverged=True``) when the iterate separates the classes (logistic,
        multinomial, squared hinge: a certificate that the unregularised fit does not exist)
        or the linear predictor stays beyond the loss's divergence threshold for 8
        consecutive iterations; used for unregularised fits that may not exist.
    hessian_init : ndarray of shape (q * n_features [+ q],) * 2, default=None
        A data Hessian from a nearby point (:attr:`MAPResult.hessian` of the fit at a neighbouring
        prior, e.g. along a path of prior scales).  The iterations are then chord steps with a
        fixed factor -- first that of ``hessian_init + P``, later that of the last Hessian formed --
        each costing a gradient and no Hessian, as long as each full step is accepted (Armijo) and the
        chord decrement ``g^T (H_0 + P)^{-1} g`` falls by at least the factor 10 per step; otherwise,
        and once the chord decrement reaches the stopping level ``tol**2 * max(1, |F|)``, a Hessian is
        formed at the current point and the Newton step and tests above follow.  Convergence is only
        declared by those tests, with the Hessian of the returned point's neighbourhood exactly as
        without ``hessian_init``, so the stopping rule, and the minimiser to within it, are those
        of a cold fit.  Ignored in the dual (wide-data) form and for the squared loss.
    keep_factor : bool, default=False
        Return the last data Hessian and the Cholesky factor of the whole Hessian at the returned
        point (:attr:`MAPResult.hessian`, :attr:`MAPResult.factor`), with the data term and the
        derivatives there (:attr:`MAPResult.data_term`, :attr:`MAPResult.point`).
    data_term_init : float, default=None
        The data term ``sum_i w_i L_i`` at the starting point (:attr:`MAPResult.data_term` of the fit
        it comes from, with the same data), which then is not evaluated again.
    fast_value : bool, default=False
        Evaluate the data term by the loss's ``fast_value`` where it has one (the logistic loss: the
        same to within 1 ulp per row, vectorised; the GLMs' search on tall data).
    point_init : tuple, default=None
        With ``data_term_init``: ``(eta, g, h, data_gradient)`` at the starting point
        (:attr:`MAPResult.point` and :attr:`MAPResult.data_gradient` of the fit it comes from, with the same
        data), which the first iteration then does not compute again (the same arithmetic, bit for bit).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_bayes._glm._map import SquaredLoss, fit_map
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array([1.0, 3.0, 5.0, 7.0])
    >>> res = fit_map(X, y, SquaredLoss(), prior_mean=[0.0], prior_precision=1e-12)
    >>> np.round(res.coef, 6), np.round(res.intercept, 6)
    (array([[2.]]), array([1.]))
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}.")
    n, d = X.shape
    if y.shape != (n,):
        raise ValueError(f"y must have shape ({n},), got {y.shape}.")
    q = loss.n_outputs
    size = q * d
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    if w.shape != (n,) or np.any(w < 0) or not np.all(np.isfinite(w)):
        raise ValueError("sample_weight must be a finite, non-negative array of shape (n_samples,).")
    if offset is None:
        off = np.zeros((n, q))
    else:
        off = np.asarray(offset, dtype=float)
        off = off.reshape(n, q) if off.size == n * q else None
        if off is None or not np.all(np.isfinite(off)):
            raise ValueError(f"offset must be finite with shape ({n},) or ({n}, {q}).")
    if not isinstance(max_iter, numbers.Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}.")
    prior = _Prior(size, prior_mean, prior_precision, prior_precision_cholesky)

    B = (prior.mean if coef_init is None else np.asarray(coef_init, dtype=float).ravel()).copy()
    if B.shape != (size,):
        raise ValueError(f"coef_init must have {size} entries, got {B.size}.")
    if fit_intercept:
        b0 = loss.null_intercept(y, w) if intercept_init is None else np.asarray(intercept_init, float).ravel()
        b0 = np.array(b0, dtype=float).reshape(q)
    else:
        b0 = np.zeros(q)
    unit = loss.constant_hessian and sample_weight is None

    def predictor(B, b0):
        return off + X @ B.reshape(q, d).T + b0

    value = getattr(loss, "fast_value", loss.value) if fast_value else loss.value

    def objective(B, b0):
        eta = predictor(B, b0)
        return value(y, eta, w) + prior.value(B), eta

    factor, singular = None, False
    converged, diverged, it, exploding = False, False, 0, 0
    restarted = False
    # wide data under an isotropic prior: the Newton system in n dimensions (_dual), same steps
    iso = _dual.isotropic_precision(prior) if _dual.use_dual(n, d, q) or _multidual.use_multi_dual(n, d, q) else None
    gram = _multidual.gram_of(X, q) if iso is not None and q > 1 else None  # the q > 1 system's X X^T, once
    # Newton's method with the Hessian kept while it serves (hessian_init): chord steps with a factor formed
    # at an earlier point, a fresh Hessian where they converge slowly and for every convergence test
    reuse = hessian_init is not None and iso is None and not loss.constant_hessian
    chord = _chord(hessian_init, prior, size + (q if fit_intercept else 0)) if reuse else None
    # fresh: the factor was formed at the current point; prev: the point before the last chord step;
    # stale: F not evaluated at the current point (chord steps need only the gradient)
    fresh, H_data, last, n_chord, prev, stale = False, None, np.inf, 0, None, False
    start = None
    if data_term_init is not None and np.isfinite(data_term_init):
        start = point_init
        f, eta = float(data_term_init) + prior.value(B), (predictor(B, b0) if start is None else start[0])
    else:
        f, eta = objective(B, b0)
    if not np.isfinite(f):
        raise FloatingPointError("The objective is not finite at the starting point.")
    it = 0
    while it < max_iter:
        if start is not None:  # the derivatives and the data term's gradient given at the starting point
            _, g, h, gd = start
            start = None
            gdata = (gd[:size], gd[size:])
        else:
            g, h = loss.derivatives(y, eta, w)
            gdata = ((g.T @ X).ravel(), g.sum(axis=0) if fit_intercept else None)
        grad = gdata[0] + prior.gradient(B)
        if fit_intercept:
            grad = np.concatenate([grad, gdata[1]])
        if chord is not None:
            step = -_solve(chord, grad)
            dec = -float(grad @ step)
            if not (np.isfinite(dec) and dec <= _CHORD_RATE * last):
                # the last step did not shrink the chord decrement 10-fold: back to the point before it
                # (if it was a chord step), where a fresh Hessian takes over
                if prev is not None:
                    B, b0, eta, g, h, grad, gdata = prev
                chord = None
            elif dec > tol * tol * max(1.0, abs(f)) and n_chord < _CHORD_MAX:
                # the full chord step, judged at the next point by its decrement (the objective is not
                # evaluated: a strictly convex F has one stationary point, and convergence is declared
                # below only, with a fresh Hessian)
                prev = (B, b0, eta, g, h, grad, gdata)
                B = B + step[:size]
                if fit_intercept:
                    b0 = b0 + step[size:]
                eta = predictor(B, b0)
                last, fresh, stale, n_chord = dec, False, True, n_chord + 1
                continue
            else:
                chord = None  # at the stopping level: a fresh Hessian decides
        if stale:  # F at the current point (skipped along the chord steps)
            f = value(y, eta, w) + prior.value(B)
            stale = False
        it += 1
        if factor is None or not loss.constant_hessian:
            if iso is None:
                factor = None
            elif q == 1:
                factor = _dual.DualFactor.build(X, h[:, 0], iso, fit_intercept, unit)
            else:
                factor = _multidual.MultiDualFactor.build(X, h, iso, fit_intercept, gram)
            if factor is None:  # the dense system (declined dual factors too: damping decides there)
                H = _hessian(X, h, q, fit_intercept, unit)
                H_data = H.copy() if keep_factor else None
                prior.add_hessian(H)
                factor, singular = _factor(H)
            else:
                singular = False
            fresh = True
        step = -(factor.solve(grad) if isinstance(factor, _DUAL_FACTORS) else _solve(factor, grad))
        slope = float(grad @ step)
        theta_scale = max(1.0, _amax(B), _amax(b0))
        small = _amax(step) <= tol * theta_scale
        if -slope <= tol * tol * max(1.0, abs(f)):
            # Newton decrement at rounding level: converged (the step itself may be noise
            # along a null direction of a singular Hessian, so it is not taken)
            converged = True
            break
        if -slope <= 1e-10 * max(1.0, abs(f)):
            # the expected decrease is at the rounding level of F, where the line search
            # cannot judge a step: take the full Newton step (quadratic-convergence region)
            B = B + step[:size]
            if fit_intercept:
                b0 = b0 + step[size:]
            f, eta = objective(B, b0)
            converged, fresh = True, False
            break
        # Armijo backtracking line search
        t, accepted = 1.0, False
        while t >= 1e-12:
            Bn = B + t * step[:size]
            b0n = b0 + t * step[size:] if fit_intercept else b0
            fn, etan = objective(Bn, b0n)
            if np.isfinite(fn) and fn <= f + 1e-4 * t * slope:
                accepted = True
                break
            t *= 0.5
        if accepted:
            B, b0, f, eta, fresh = Bn, b0n, fn, etan, False
            if reuse and not singular and not isinstance(factor, _DUAL_FACTORS):
                chord, last, prev = factor, -slope, None  # keep this Hessian while chord steps converge fast
        elif fit_intercept and not restarted and hasattr(loss, "profile_intercept"):
            # no step length in [1e-12, 1] decreased F: a start far from the data's level (Poisson: an
            # intercept where every e^eta is ~0 next to a huge count gives a Newton step of 1e20).  Restart
            # once from the intercept that solves its own score equation for the current coefficients
            # (a decrease of F: it minimises F over b0), then go on with Newton's method
            restarted = True
            shift = loss.profile_intercept(y, predictor(B, np.zeros(q)), w)
            if shift is not None:
                fr, etar = objective(B, shift)
                if np.isfinite(fr) and fr <= f:
                    b0, f, eta, fresh = shift, fr, etar, False
                    continue
        if small or not accepted:
            # no decrease possible: converged if the Newton decrement is at rounding level
            converged = small or (-slope <= 1e-10 * max(1.0, abs(f)))
            break
        if abort_on_divergence:
            # a separating iterate is a certificate; an exploding predictor only counts if it
            # persists (heavy-tailed features can give a finite MLE with a large |eta|)
            exploding = exploding + 1 if loss.exploding(eta) else 0
            if exploding >= _EXPLODING_PATIENCE or loss.separates(y, eta):
                diverged = True
                break
    if stale:
        f = value(y, eta, w) + prior.value(B)
    return MAPResult(
        coef=B.reshape(q, d).copy(),
        intercept=b0.copy(),
        n_iter=it,
        converged=converged,
        objective=float(f),
        singular=bool(singular),
        diverged=diverged,
        hessian=H_data if keep_factor and H_data is not None and not singular else None,
        factor=factor if keep_factor and fresh and H_data is not None and not singular else None,
        data_term=float(f) - prior.value(B) if keep_factor else None,
        point=(eta, g, h) if keep_factor and fresh and H_data is not None and not singular else None,
        data_gradient=(np.concatenate(gdata) if fit_intercept else gdata[0]) if (
            keep_factor and fresh and H_data is not None and not singular) else None,
    )


def _chord(hessian_init, prior, side):
    """The Cholesky factor of ``hessian_init + P`` for the chord steps of :func:`_fit_map_stage`, or None
    (a wrong shape, non-finite entries or not positive definite: Newton's method from the start)."""
    H = np.array(hessian_init, dtype=float, copy=True)
    if H.shape != (side, side) or not np.all(np.isfinite(H)):
        return None
    prior.add_hessian(H)
    L, info = lapack.dpotrf(H, lower=1, clean=1)
    return L if info == 0 and np.all(L.diagonal() > 0) else None


def objective_value(X, y, loss, coef, intercept=0.0, *, prior_mean=None, prior_precision=None,
                    offset=None, sample_weight=None):
    """Value of the objective ``F`` at ``(coef, intercept)`` (for tests and diagnostics)."""
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    q = loss.n_outputs
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    off = np.zeros((n, q)) if offset is None else np.asarray(offset, dtype=float).reshape(n, q)
    B = np.asarray(coef, dtype=float).reshape(q * d)
    eta = off + X @ B.reshape(q, d).T + np.broadcast_to(np.asarray(intercept, dtype=float), (q,))
    prior = _Prior(q * d, prior_mean, prior_precision)
    return loss.value(np.asarray(y, dtype=float), eta, w) + prior.value(B)


def mle_exists(X, y, loss, *, fit_intercept=True, direction=None, tol=1e-7):
    """Exact check that the unregularised fit has a finite minimiser (no separation).

    Solves the linear programme of Konis (2007), generalised to the loss's recession cone:
    maximise ``sum(A @ delta)`` subject to ``A @ delta >= 0``, ``E @ delta = 0`` and
    ``|delta_j| <= 1`` over directions ``delta`` of the (intercept-augmented, column-scaled)
    design.  A positive optimum is a direction along which the loss never increases and
    strictly decreases for some sample: (quasi-)complete separation for the logistic,
    multinomial and squared hinge losses, a zero-count pattern for the Poisson loss.

    Parameters
    ----------
    X, y : arrays as for :func:`fit_map`
    loss : loss object
    fit_intercept : bool, default=True
    direction : ndarray of shape (q, n_features + fit_intercept), default=None
        A candidate direction (e.g. the iterate of a diverging fit, with the intercepts as last
        column).  If it satisfies the constraints exactly it certifies non-existence and the
        linear programme is skipped.
    tol : float, default=1e-7
        Optimum values above ``tol * n_samples`` count as positive.

    Returns
    -------
    exists : bool
        False when a separating (recession) direction exists.
    """
    X = np.asarray(X, dtype=float)
    Z = np.hstack([X, np.ones((X.shape[0], 1))]) if fit_intercept else X
    scale = np.max(np.abs(Z), axis=0)
    scale[scale == 0] = 1.0
    cons = loss.recession_constraints(Z / scale, np.asarray(y, dtype=float))
    if cons is None:
        return True
    A, E = cons
    if A.shape[0] == 0:
        return True
    if direction is not None:
        delta = (np.asarray(direction, dtype=float) * scale).ravel()
        Ad = A @ delta
        if np.all(Ad >= 0) and np.any(Ad > 0) and (E is None or E.shape[0] == 0 or np.all(E @ delta == 0)):
            return False
    nvar = A.shape[1]
    res = optimize.linprog(
        -A.sum(axis=0),
        A_ub=-A,
        b_ub=np.zeros(A.shape[0]),
        A_eq=None if E is None or E.shape[0] == 0 else E,
        b_eq=None if E is None or E.shape[0] == 0 else np.zeros(E.shape[0]),
        bounds=[(-1.0, 1.0)] * nvar,
        method="highs",
    )
    if res.status != 0:  # pragma: no cover - HiGHS failure: assume the fit exists
        return True
    return bool(-res.fun <= tol * max(1, A.shape[0]))


# --------------------------------------------------------------------------------------
# the Laplace approximation at the MAP
# --------------------------------------------------------------------------------------


def posterior_hessian(X, y, loss, coef, intercept=None, *, sample_weight=None, prior_precision=None,
                      fit_intercept=True):
    """Hessian of the objective of :func:`fit_map` at ``(coef, intercept)``.

    The order of the parameters is that of the solver: ``coef`` flattened row by row (``q``
    rows of ``n_features``), then the ``q`` intercepts (if ``fit_intercept``).  The prior
    precision (a matrix of side ``q * n_features``, a vector of its diagonal or None) is added
    to the coefficient block; the intercepts are unpenalised.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0], [-1.0]])
    >>> posterior_hessian(X, np.zeros(2), SquaredLoss(), [[0.0]], [0.0], prior_precision=[[1.0]])
    array([[3., 0.],
           [0., 2.]])
    """
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    q = loss.n_outputs
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    B = np.asarray(coef, dtype=float).reshape(q, d)
    eta = X @ B.T
    if fit_intercept:
        eta = eta + np.asarray(intercept, dtype=float).reshape(q)[None, :]
    _, h = loss.derivatives(np.asarray(y, dtype=float), eta, w)
    H = _hessian(X, h, q, fit_intercept, unit=False)
    if prior_precision is not None:
        P = np.asarray(prior_precision, dtype=float)
        if P.ndim <= 1:
            idx = np.arange(q * d)
            H[idx, idx] += P
        else:
            H[: q * d, : q * d] += P
    return H


def inverse_spd(H):
    """Inverse of a symmetric positive (semi-)definite matrix: Cholesky, else the pseudo-inverse.

    Examples
    --------
    >>> import numpy as np
    >>> inverse_spd(np.array([[4.0, 0.0], [0.0, 0.5]]))
    array([[0.25, 0.  ],
           [0.  , 2.  ]])
    """
    return _symmetric_inverse(H, linalg.pinvh)


def _symmetric_inverse(H, singular):
    """``H`` symmetrised, inverted by Cholesky or, where that fails, by ``singular(H)``; the result symmetrised."""
    H = 0.5 * (np.asarray(H, dtype=float) + np.asarray(H, dtype=float).T)
    if H.size == 0:
        return H.copy()
    try:
        c = linalg.cho_factor(H, lower=True)
        inv = linalg.cho_solve(c, np.eye(H.shape[0]))
    except (linalg.LinAlgError, ValueError):
        inv = singular(H)
    return 0.5 * (inv + inv.T)


def rank_tolerance(top, n_params, n_rows=0):
    """Eigenvalues of a Gram-type matrix at most this are numerically zero (the one rank rule).

    ``top`` is the largest eigenvalue of a symmetric PSD ``H`` of side ``n_params`` that was
    formed as a sum over ``n_rows`` rows (``H = X^T D X``; 0 when unknown).  Two roundings move
    its eigenvalues: ``eigh`` itself, backward stable, by about ``n_params * eps * top``, and the
    ``n_rows``-term sums that form ``H``, whose rounding errors (one of at most ``eps`` times a
    partial sum per term, the partial sums up to ``top``) accumulate like a random walk to about
    ``sqrt(n_rows) * eps * top``.  An eigenvalue below the sum of the two,
    ``eps * top * (n_params + sqrt(n_rows))``, cannot be told from 0: e.g. the null direction of
    one-hot dummies with an intercept came out at up to 3.3 eps * top with 80 rows and up to
    15 eps * top with 50 000 (20 seeds each), against the tolerance's 13 and 228; a column that
    differs from another by a relative 1e-7 (an eigenvalue of about 11 eps * top) is identified
    with 80 rows and not with 50 000, where the summation noise is as large as the eigenvalue.
    Used by :func:`inverse_information` and ``ClosedFormRidge`` (one rule for both).
    """
    return np.finfo(float).eps * max(float(top), 0.0) * (n_params + np.sqrt(max(n_rows, 0)))


def split_null_space(H, n_rows=0):
    """``(w, V, keep)``: eigendecomposition of the symmetric ``H`` and its numerical range.

    ``keep`` flags the eigenvalues above :func:`rank_tolerance` (``n_rows`` as there).
    """
    w, V = linalg.eigh(H)
    return w, V, w > rank_tolerance(w.max(initial=0.0), H.shape[0], n_rows)


def unidentified(null):
    """Signs of ``N N^T`` where it is not 0 (beyond ``sqrt(eps)``), else 0: ``+-1`` marks the entries of a
    covariance that are infinite along the null space ``N`` (orthonormal columns)."""
    overlap = null @ null.T
    return np.where(np.abs(overlap) > np.sqrt(np.finfo(float).eps), np.sign(overlap), 0.0)


def inverse_information(H, n_rows=0):
    """The covariance of a Wald interval from the observed information ``H`` of the data alone.

    ``H`` symmetric positive semi-definite, formed as a sum over ``n_rows`` rows (0 when unknown).
    Positive definite (every eigenvalue above :func:`rank_tolerance`): its inverse, by Cholesky.
    Otherwise the entrywise limit of ``(H + eps I)^-1`` as ``eps -> 0+``: with ``H = V_r diag(w) V_r^T +
    0 N N^T`` (``N`` an orthonormal basis of the null space, the eigenvalues at most
    :func:`rank_tolerance` counted as 0), ``(H + eps I)^-1 = V_r diag(1 / (w + eps)) V_r^T +
    N N^T / eps``: the pseudo-inverse plus ``+-inf`` wherever ``(N N^T)_ij`` is not 0 -- an infinite
    variance for every parameter with a component in the null space, i.e. one the data do not
    identify (more parameters than rows, collinear or constant columns), where the pseudo-inverse
    alone gives a finite variance the data cannot support.  Parameters in the range of ``H`` keep the
    pseudo-inverse's finite entries.

    A Cholesky factorisation that succeeds does not settle the rank: on a numerically singular ``H``
    (a duplicated column) it succeeded in about half the seeds and gave finite variances of 1e14-1e18.
    So the inverse is kept only when ``1 / ||H^-1||_F`` (a lower bound of the smallest eigenvalue)
    clears the tolerance, and otherwise the eigenvalues decide.

    Examples
    --------
    >>> import numpy as np
    >>> inverse_information(np.array([[2.0, 0.0], [0.0, 0.0]]))
    array([[0.5, 0. ],
           [0. , inf]])
    """
    H = np.asarray(H, dtype=float)
    if H.size == 0:
        return _symmetric_inverse(H, None)
    Hs = 0.5 * (H + H.T)
    try:
        c = linalg.cho_factor(Hs, lower=True)
        inv = linalg.cho_solve(c, np.eye(Hs.shape[0]))
    except (linalg.LinAlgError, ValueError):
        return _limit_inverse(Hs, n_rows)
    inv = 0.5 * (inv + inv.T)
    if np.all(np.isfinite(inv)):
        with np.errstate(over="ignore", divide="ignore"):
            floor = 1.0 / np.linalg.norm(inv)  # <= the smallest eigenvalue of (the computed) H
        if floor > rank_tolerance(np.linalg.norm(Hs), Hs.shape[0], n_rows):
            return inv
    split = split_null_space(Hs, n_rows)
    return inv if split[2].all() else _limit_inverse(Hs, n_rows, split)


def _limit_inverse(H, n_rows=0, split=None):
    """The entrywise limit of ``(H + eps I)^-1`` of a singular symmetric PSD ``H`` (see :func:`inverse_information`)."""
    w, V, keep = split_null_space(H, n_rows) if split is None else split
    inv = (V[:, keep] / w[keep]) @ V[:, keep].T
    null = V[:, ~keep]
    if null.shape[1]:
        lost = unidentified(null)
        inv = np.where(lost != 0, np.copysign(np.inf, lost), inv)
    return 0.5 * (inv + inv.T)
