"""The Newton system of :func:`~sklearn_bayes._glm._map.fit_map` in ``n`` dimensions on wide data.

Under an isotropic prior ``P = a I`` (``a > 0``; any prior mean) and one output, the Hessian of the
objective in ``(b, b0)`` is

.. math::

    H = \\begin{pmatrix} A & c \\\\ c^\\top & s \\end{pmatrix},\\qquad
    A = X^\\top D X + a I,\\quad c = X^\\top h,\\quad s = \\textstyle\\sum_i h_i,

``D = diag(h)`` the per-row second derivatives (``h >= 0``).  With ``X_s = D^{1/2} X`` (``n x d``) the
Woodbury identity gives ``A^{-1} r = (r - X_s^T M^{-1} X_s r) / a`` with the ``n x n`` matrix
``M = a I + X_s X_s^T``, and the unpenalised intercept is eliminated by its Schur complement
``sigma = s - c^T A^{-1} c``: ``v = (g_0 - c^T A^{-1} g) / sigma``, ``u = A^{-1}(g - c v)`` solve
``H (u, v) = (g, g_0)``.  The cost per factorisation is ``O(n^2 d)`` instead of the ``O(d^2 n + d^3)``
of forming and factorising ``H``: the same Newton step (exact algebra; they differ by rounding), so the
solver's iterates and stopping rule are unchanged.  It is used when ``d > DUAL_RATIO * n``; setting
:data:`DUAL_RATIO` to ``inf`` restores the dense path everywhere (bit for bit).  With ``q > 1`` outputs (the
multinomial loss) :func:`posterior_inverse` and :func:`information_inverse` hand over to
:mod:`sklearn_bayes._glm._multidual` (its own shape rule and switch).
"""

import numpy as np
from scipy.linalg import lapack

from sklearn_bayes._glm import _multidual

#: the n-dimensional (Woodbury) Newton system is used when n_features > DUAL_RATIO * n_samples
#: (one output, isotropic prior); ``float('inf')`` turns it off (the dense (d+1) x (d+1) path)
DUAL_RATIO = 2.0

#: the dual factorisation is declined (the dense path, with its Levenberg damping, decides) when the
#: prior precision or the intercept's Schur complement is at most this times the Hessian's largest
#: diagonal entry -- stricter than the dense path's own damping threshold (1e-12)
_DUAL_RCOND = 1e-10


def use_dual(n, d, q):
    """The shape rule: one output, some rows, and more than ``DUAL_RATIO`` times as many columns as rows."""
    return q == 1 and n > 0 and d > DUAL_RATIO * n


def isotropic_precision(prior):
    """``a`` when the prior precision of ``prior`` (a ``_Prior``) is ``a I`` with ``a > 0``, else None."""
    if prior.kind not in ("diag", "full"):
        return None
    return isotropic_scale(prior.P)


def isotropic_scale(P):
    """``a`` when the precision ``P`` (a scalar, a diagonal or a matrix) is ``a I`` with ``a > 0``, else None."""
    P = np.asarray(P, dtype=float)
    if P.ndim == 2:
        diag = P.diagonal()
        if P.shape[0] != P.shape[1] or np.count_nonzero(P) != np.count_nonzero(diag):
            return None
        P = diag
    P = P.reshape(-1)
    a = float(P[0]) if P.size else 0.0
    if not (a > 0.0 and np.isfinite(a)) or np.any(P != a):
        return None
    return a


class DualFactor:
    """The factorised Newton system ``H`` of the module docstring (``None`` from :meth:`build` when declined)."""

    def __init__(self, Xs, sqrt_h, L, a, c, Ac, schur):
        self.Xs, self.sqrt_h, self.L, self.a, self.c, self.Ac, self.schur = Xs, sqrt_h, L, a, c, Ac, schur

    @classmethod
    def build(cls, X, h, a, fit_intercept, unit):
        """Factor for the per-row second derivatives ``h`` (shape (n,)); ``unit``: every ``h_i`` is 1."""
        n, d = X.shape
        if unit:
            Xs, sqrt_h, hv = X, None, None
        else:
            hv = np.asarray(h, dtype=float).reshape(n)
            if np.any(hv < 0) or not np.all(np.isfinite(hv)):
                return None
            sqrt_h = np.sqrt(hv)
            Xs = X * sqrt_h[:, None]
        col = np.einsum("ij,ij->j", Xs, Xs)  # diagonal of X^T D X
        s = float(n) if unit else float(hv.sum())
        scale = max(float(col.max(initial=0.0)) + a, s if fit_intercept else 0.0)
        if not np.isfinite(scale) or a <= _DUAL_RCOND * scale:
            return None
        M = Xs @ Xs.T
        M[np.diag_indices(n)] += a
        L, info = lapack.dpotrf(M, lower=1, clean=1)
        if info != 0:
            return None
        f = cls(Xs, sqrt_h, L, a, None, None, None)
        if fit_intercept:
            c = X.sum(axis=0) if unit else X.T @ hv
            Ac = f.apply_A_inverse(c)
            schur = s - float(c @ Ac)
            if not (schur > _DUAL_RCOND * scale):
                return None
            f.c, f.Ac, f.schur = c, Ac, schur
        return f

    def apply_A_inverse(self, R):
        """``A^{-1} R`` for ``R`` of shape (d,) or (d, k)."""
        t, _ = lapack.dpotrs(self.L, self.Xs @ R, lower=1)
        return (R - self.Xs.T @ t) / self.a

    def solve(self, g):
        """``H^{-1} g`` for ``g`` of shape (d [+ 1],) or (d [+ 1], k) (the intercept last)."""
        if self.c is None:
            return self.apply_A_inverse(g)
        d = self.Xs.shape[1]
        y1 = self.apply_A_inverse(g[:d])
        v = (g[d] - self.c @ y1) / self.schur
        u = y1 - np.multiply.outer(self.Ac, v) if np.ndim(v) else y1 - self.Ac * v
        return np.concatenate([u, np.reshape(v, (1,) + np.shape(v))], axis=0)

    def inverse(self):
        """The dense ``H^{-1}`` (symmetric; ``O(n d^2)``): ``A^{-1} = (I - W^T W) / a`` with ``W = L^{-1} X_s``
        (``M = L L^T``), bordered by the intercept's ``[[A^{-1} + A^{-1}c c^T A^{-1} / sigma, -A^{-1}c / sigma],
        [., 1 / sigma]]``."""
        d = self.Xs.shape[1]
        W, _ = lapack.dtrtrs(self.L, self.Xs, lower=1)
        Ainv = -(W.T @ W)
        Ainv[np.diag_indices(d)] += 1.0
        Ainv /= self.a
        if self.c is None:
            return 0.5 * (Ainv + Ainv.T)
        out = np.empty((d + 1, d + 1))
        out[:d, :d] = Ainv + np.outer(self.Ac, self.Ac) / self.schur
        out[:d, d] = out[d, :d] = -self.Ac / self.schur
        out[d, d] = 1.0 / self.schur
        return 0.5 * (out + out.T)


def posterior_inverse(X, y, loss, coef, intercept, *, sample_weight, prior_precision, fit_intercept):
    """``H^{-1}`` of :func:`~sklearn_bayes._glm._map.posterior_hessian` through :class:`DualFactor` on wide
    data under an isotropic prior; None where the shape rule or the prior does not apply (or the factor
    is declined): the caller's dense path then.  ``q > 1`` outputs: :func:`._multidual.posterior_inverse`."""
    X = np.asarray(X, dtype=float)
    if loss.n_outputs > 1:
        a = isotropic_scale(prior_precision) if prior_precision is not None and _multidual.use_multi_dual(
            *X.shape, loss.n_outputs) else None
        return None if a is None else _multidual.posterior_inverse(
            X, y, loss, coef, intercept, sample_weight=sample_weight, a=a, fit_intercept=fit_intercept)
    n, d = X.shape
    a = isotropic_scale(prior_precision) if prior_precision is not None and use_dual(n, d, loss.n_outputs) else None
    if a is None:
        return None
    h = _second_derivatives(X, y, loss, coef, intercept, sample_weight, fit_intercept)
    f = DualFactor.build(X, h, a, fit_intercept, False)
    return None if f is None else f.inverse()


def _second_derivatives(X, y, loss, coef, intercept, sample_weight, fit_intercept):
    n = X.shape[0]
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    eta = X @ np.asarray(coef, dtype=float).reshape(-1)
    if fit_intercept:
        eta = eta + float(np.asarray(intercept, dtype=float).reshape(-1)[0])
    _, h = loss.derivatives(np.asarray(y, dtype=float), eta[:, None], w)
    return np.asarray(h, dtype=float).reshape(n)


def information_inverse(X, y, loss, coef, intercept, *, sample_weight, fit_intercept, rank_tolerance):
    """:func:`~sklearn_bayes._glm._map.inverse_information` of the data-only Hessian ``Z^T Z`` (``Z = D^{1/2}
    [X, 1]``) on wide data, from the thin SVD of the ``n x (d + 1)`` matrix ``Z`` (``O(n^2 d)``) instead of
    the eigendecomposition of ``Z^T Z`` (``O(d^3)``): its nonzero eigenvalues are the squared singular
    values, the rest 0; the same rank rule keeps ``s^2 > rank_tolerance(s_max^2, d + 1, n)``, and the result
    is the pseudo-inverse ``V_r diag(1 / s_r^2) V_r^T`` with ``+-inf`` where ``I - V_r V_r^T`` is not 0.
    None where the shape rule does not apply.  ``q > 1`` outputs: :func:`._multidual.information_inverse`."""
    if loss.n_outputs > 1:
        return _multidual.information_inverse(X, y, loss, coef, intercept, sample_weight=sample_weight,
                                              fit_intercept=fit_intercept, rank_tolerance=rank_tolerance)
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    if not use_dual(n, d, loss.n_outputs):
        return None
    h = _second_derivatives(X, y, loss, coef, intercept, sample_weight, fit_intercept)
    if np.any(h < 0) or not np.all(np.isfinite(h)):
        return None
    Z = np.hstack([X, np.ones((n, 1))]) if fit_intercept else X
    Z = Z * np.sqrt(h)[:, None]
    _, s, Vt = np.linalg.svd(Z, full_matrices=False)
    w = s * s
    keep = w > rank_tolerance(w.max(initial=0.0), Z.shape[1], n)
    Vr = Vt[keep].T
    inv = (Vr / w[keep]) @ Vr.T
    null = -(Vr @ Vr.T)
    null[np.diag_indices(Z.shape[1])] += 1.0
    lost = unidentified_from_overlap(null)
    inv = np.where(lost != 0, np.copysign(np.inf, lost), inv)
    return 0.5 * (inv + inv.T)


def unidentified_from_overlap(overlap):
    """The signs of :func:`~sklearn_bayes._glm._map.unidentified` from the projector ``N N^T`` itself."""
    return np.where(np.abs(overlap) > np.sqrt(np.finfo(float).eps), np.sign(overlap), 0.0)
