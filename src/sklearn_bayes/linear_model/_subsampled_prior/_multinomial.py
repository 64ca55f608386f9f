"""The approximate leave-one-out step of :func:`._tuning.alo_risk` for ``q > 1`` outputs (the multinomial
logistic loss).

Row ``i``'s leave-one-out predictor is ``eta_{-i} = eta_i + J_i (I - W_i J_i)^{-1} g_i + s_i`` with the
``q x q`` blocks ``J_i = T_i H^{-1} T_i^T`` (``T_i`` the rows of the design that enter ``eta_i``: ``x_i`` in
the block of each output, then its intercept), ``W_i`` the loss's ``q x q`` second derivatives and ``s_i``
the cross-fitted shift of the prior mean (``T_i H^{-1} P (D_i, 0)``).  Dense: ``H^{-1}`` of side ``q d + q``
(``O(q^3 d^3)``).  On wide data under an isotropic prior (``d > _dual.DUAL_RATIO * n``,
``_multidual.MULTI_DUAL``): ``J_i`` and ``s_i`` from the ``n q``-dimensional Woodbury system
(:class:`sklearn_bayes._glm._multidual.MultiDualFactor`), the same numbers up to rounding.
"""

import numpy as np
from scipy import linalg

from sklearn_bayes._glm import _dual, _multidual, posterior_hessian


def _design_rows(X, q, fit_intercept):
    """Column blocks of the parameter vector (vec B row-major, then intercepts) per output."""
    d = X.shape[1]
    blocks = []
    for k in range(q):
        cols = list(range(k * d, (k + 1) * d))
        if fit_intercept:
            cols.append(q * d + k)
        blocks.append(np.array(cols))
    return blocks


def _inverse(H):
    """``H^-1`` by Cholesky, the pseudo-inverse where that fails."""
    try:
        return linalg.cho_solve(linalg.cho_factor(H, lower=True), np.eye(H.shape[0]))
    except (linalg.LinAlgError, ValueError):
        return linalg.pinvh(H)


def alo_multi(X, y, w, loss, B, b0, eta, g, h, precision, fit_intercept, D, rows, factor, Xa):
    """:func:`._tuning.alo_risk` for ``q > 1`` outputs (its arguments; ``eta, g, h`` at the fit)."""
    N, d = X.shape
    q = loss.n_outputs
    shift = np.zeros((N, q))
    iso = _dual.isotropic_scale(precision) if _multidual.use_multi_dual(N, d, q) else None
    dual = None if iso is None else _multidual.MultiDualFactor.build(X, h, iso, fit_intercept)
    if dual is not None:
        J = dual.leverage_blocks()
        if D is not None:
            shift = dual.shifts(D)
    else:
        if factor is not None:
            Hinv = linalg.cho_solve((factor, True), np.eye(factor.shape[0]))
        else:
            Hinv = _inverse(posterior_hessian(X, y, loss, B, b0, sample_weight=w, prior_precision=precision,
                                              fit_intercept=fit_intercept))
        blocks = _design_rows(X, q, fit_intercept)
        if D is not None:
            k = q * d
            Pm = precision * np.eye(k) if np.ndim(precision) == 0 else precision
            T = D @ (Pm @ Hinv[:k, :])  # (N, K): row i is (H^-1 P D_i)^T
            for a, cols in enumerate(blocks):
                shift[:, a] = np.einsum("ij,ij->i", Xa, T[:, cols])
        J = np.empty((N, q, q))
        for a, ca in enumerate(blocks):
            Z = Xa @ Hinv[np.ix_(ca, np.concatenate(blocks))]
            for b, cb in enumerate(blocks):
                J[:, a, b] = np.einsum("ij,ij->i", Z[:, b * len(cb):(b + 1) * len(cb)], Xa)
    Wm = h if h.ndim == 3 else np.einsum("ij,jk->ijk", h, np.eye(q))
    M = np.eye(q)[None, :, :] - Wm @ J
    u = np.linalg.solve(M, g[:, :, None])[:, :, 0]
    eta_loo = eta + np.einsum("iab,ib->ia", J, u) + shift
    if rows:
        v = loss.values(y, eta_loo, w)
        return float(np.sum(v)), v
    return loss.value(y, eta_loo, w)
