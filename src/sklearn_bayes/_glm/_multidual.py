"""The Newton system of :func:`~sklearn_bayes._glm._map.fit_map` in ``n q`` dimensions for ``q > 1`` outputs
(the multinomial loss) on wide data: :mod:`sklearn_bayes._glm._dual` generalised to blocks.

The parameters are ``theta = (vec B, b0)`` (``B`` of ``q`` rows of ``d`` features, row-major, then ``q``
intercepts); row ``i`` enters through ``eta_i = B x_i + b0 = T_i theta`` with ``T_i = [I_q (x) x_i^T, I_q]``
and its second derivatives are a ``q x q`` matrix ``h_i`` (PSD).  With ``h_i = F_i F_i^T`` (``F_i`` the
symmetric square root, from the eigendecomposition of ``h_i``) the scaled rows ``S_(i,c) = (F_i^T T_i)_c``
give the Hessian of the objective under an isotropic prior ``P = a I`` on the coefficients,

.. math::

    H = \\begin{pmatrix} A & C \\\\ C^\\top & \\Sigma_0 \\end{pmatrix},\\qquad
    A = S_B^\\top S_B + a I,\\quad C = S_B^\\top S_0,\\quad \\Sigma_0 = \\textstyle\\sum_i h_i,

``S_B`` (``n q x q d``) and ``S_0`` (``n q x q``) the coefficient and intercept columns of ``S``.  Woodbury:
``A^{-1} r = (r - S_B^T M^{-1} S_B r) / a`` with the ``n q x n q`` matrix ``M = a I + S_B S_B^T``, whose
entries are ``M_(i,c),(j,e) = a [.] + K_ij (F_i^T F_j)_ce`` (``K = X X^T``, formed once per design), and the
intercepts by their ``q x q`` Schur complement ``Sigma = Sigma_0 - C^T A^{-1} C``.  A factorisation costs
``O(n^2 q^3 + (n q)^3)`` instead of forming ``H`` (``O(n q^2 d^2)``) and factorising it (``O(q^3 d^3)``):
the same Newton step (exact algebra; they differ by rounding), so the solver's iterates and stopping rule
are unchanged.

The leave-one-out step (:func:`~sklearn_bayes.linear_model._subsampled_prior._tuning.alo_risk`) needs the
``q x q`` blocks ``J_i = T_i H^{-1} T_i^T``; with ``G`` the rows ``(i, a)`` of ``T`` without the intercepts
(``G G^T = K (x) I_q``) they are the diagonal blocks of

.. math::

    G A^{-1} G^\\top + (G A^{-1} C - E)\\, \\Sigma^{-1} (G A^{-1} C - E)^\\top,\\qquad
    G A^{-1} G^\\top = (K \\otimes I_q - Y^\\top M^{-1} Y) / a,

``Y = S_B G^T`` (``Y_(i,c),(j,b) = K_ij F_i[b, c]``) and ``E`` the intercepts' rows, all in ``n q``
dimensions.  Used when ``q > 1`` and ``d > MULTI_DUAL_RATIO * n`` (:func:`use_multi_dual`); setting
:data:`MULTI_DUAL` to False restores the dense path everywhere (bit for bit).
"""

import numpy as np
from scipy.linalg import lapack

#: the n q-dimensional (Woodbury) Newton system for q > 1 outputs on wide data (d > MULTI_DUAL_RATIO * n) under
#: an isotropic prior; False: the dense (q d + q) x (q d + q) path of before, bit for bit
MULTI_DUAL = True
#: ... from this many columns per row
MULTI_DUAL_RATIO = 1.0
#: the factor is declined (the dense path, with its Levenberg damping, decides) when the prior precision or the
#: intercepts' Schur complement is at most this times the Hessian's largest diagonal entry (_dual._DUAL_RCOND)
_RCOND = 1e-10


def use_multi_dual(n, d, q):
    """The shape rule for ``q > 1`` outputs: some rows, and more than :data:`MULTI_DUAL_RATIO` times as many
    columns as rows."""
    return MULTI_DUAL and q > 1 and n > 0 and d > MULTI_DUAL_RATIO * n


def row_roots(h):
    """``F_i`` (shape (n, q, q)) with ``F_i F_i^T = h_i``: the symmetric square roots of the per-row second
    derivatives, or None where one is not finite or has an eigenvalue below ``-sqrt(eps)`` times its largest
    (not PSD beyond rounding).  Eigenvalues in ``[-sqrt(eps) max, 0)`` (rounding) count as 0."""
    h = np.asarray(h, dtype=float)
    if not np.all(np.isfinite(h)):
        return None
    lam, U = np.linalg.eigh(0.5 * (h + np.swapaxes(h, 1, 2)))
    top = np.maximum(lam[:, -1:], 0.0)
    if np.any(lam < -np.sqrt(np.finfo(float).eps) * top):
        return None
    root = np.sqrt(np.maximum(lam, 0.0))
    return np.einsum("iab,ib,icb->iac", U, root, U)


def gram_of(X, q):
    """``(K, K_q)``: ``K = X X^T`` and its expansion ``K_q[(i, c), (j, e)] = K_ij`` (side ``n q``), formed once
    per design (the ``gram`` of :meth:`MultiDualFactor.build`)."""
    K = X @ X.T
    return K, np.repeat(np.repeat(K, q, axis=0), q, axis=1)


class MultiDualFactor:
    """The factorised Newton system ``H`` of the module docstring (``None`` from :meth:`build` when declined).

    Its ``solve`` and ``inverse`` mean what those of :class:`~sklearn_bayes._glm._dual.DualFactor` do, so
    :func:`~sklearn_bayes._glm._map.fit_map` takes its Newton steps through either alike."""

    def __init__(self, X, F, L, a, gram):
        self.X, self.F, self.L, self.a, self.gram = X, F, L, a, gram
        self.n, self.d = X.shape
        self.q = F.shape[1]
        self.c = self.Ac = self.schur = self.schur_inv = None

    @classmethod
    def build(cls, X, h, a, fit_intercept, gram=None):
        """Factor for the per-row second derivatives ``h`` (shape (n, q, q), or (n, q) for diagonal ones);
        ``gram``: :func:`gram_of` ``(X, q)`` if at hand."""
        n, d = X.shape
        h = np.asarray(h, dtype=float)
        if h.ndim == 2:
            h = np.einsum("ia,ab->iab", h, np.eye(h.shape[1]))
        F = row_roots(h)
        if F is None or not (a > 0.0 and np.isfinite(a)):
            return None
        q = h.shape[1]
        hd = np.einsum("iaa->ia", h)
        col = (X * X).T @ hd  # (d, q): the diagonal of the data Hessian's coefficient block
        S0 = h.sum(axis=0)
        scale = max(float(col.max(initial=0.0)) + a, float(np.diagonal(S0).max(initial=0.0)) if fit_intercept else 0.0)
        if not np.isfinite(scale) or a <= _RCOND * scale:
            return None
        K, Kq = gram_of(X, q) if gram is None else gram
        # M_(i,c),(j,e) = K_ij (F_i^T F_j)_ce (+ a on the diagonal): the rows (i, c) of Ft are F_i[:, c]
        Ft = np.swapaxes(F, 1, 2).reshape(n * q, q)
        M = Ft @ Ft.T
        M *= Kq
        M[np.diag_indices(n * q)] += a
        L, info = lapack.dpotrf(M, lower=1, clean=1)
        if info != 0:
            return None
        f = cls(X, F, L, a, K)
        if fit_intercept:
            # C = S_B^T S_0: column b is sum_i (h_i)_(a, b) x_i in the block of output a
            C = (X.T @ h.reshape(n, q * q)).reshape(d, q, q).transpose(1, 0, 2).reshape(q * d, q)
            Ac = f.apply_A_inverse(C)
            schur = S0 - C.T @ Ac
            schur = 0.5 * (schur + schur.T)
            ev = np.linalg.eigvalsh(schur)
            if not (ev[0] > _RCOND * scale):
                return None
            f.c, f.Ac, f.schur, f.schur_inv = C, Ac, schur, np.linalg.inv(schur)
        return f

    # ---- S_B and its transpose, applied without forming them -----------------------------------------------

    def _scaled(self, R):
        """``S_B R`` for ``R`` of shape (q d, k): rows ``(i, c)``, ``sum_a F_i[a, c] x_i . R_(a, :)``."""
        q, d, k = self.q, self.d, R.shape[1]
        P = (self.X @ R.reshape(q, d, k).transpose(1, 0, 2).reshape(d, q * k)).reshape(self.n, q, k)
        return np.einsum("iac,iak->ick", self.F, P).reshape(self.n * q, k)

    def _scaled_t(self, V):
        """``S_B^T V`` for ``V`` of shape (n q, k)."""
        q, d, k = self.q, self.d, V.shape[1]
        T = np.einsum("iac,ick->iak", self.F, V.reshape(self.n, q, k)).reshape(self.n, q * k)
        return (self.X.T @ T).reshape(d, q, k).transpose(1, 0, 2).reshape(q * d, k)

    def apply_A_inverse(self, R):
        """``A^{-1} R`` for ``R`` of shape (q d,) or (q d, k)."""
        vec = R.ndim == 1
        R2 = R[:, None] if vec else R
        t, _ = lapack.dpotrs(self.L, self._scaled(R2), lower=1)
        out = (R2 - self._scaled_t(t)) / self.a
        return out[:, 0] if vec else out

    def solve(self, g):
        """``H^{-1} g`` for ``g`` of shape (q d [+ q],) or (q d [+ q], k) (the intercepts last)."""
        if self.c is None:
            return self.apply_A_inverse(g)
        qd = self.q * self.d
        y1 = self.apply_A_inverse(g[:qd])
        v = self.schur_inv @ (g[qd:] - self.c.T @ y1)
        u = y1 - self.Ac @ v
        return np.concatenate([u, v], axis=0)

    def scaled_rows(self):
        """``S_B`` itself (shape (n q, q d)): ``S_B[(i, c), (a, j)] = F_i[a, c] x_ij``."""
        return np.einsum("iac,ij->icaj", self.F, self.X).reshape(self.n * self.q, self.q * self.d)

    def inverse(self):
        """The dense ``H^{-1}`` (symmetric; ``O(n q^3 d^2)``): ``A^{-1} = (I - W^T W) / a`` with ``W = L^{-1}
        S_B``, bordered by the intercepts' ``[[A^{-1} + A^{-1} C Sigma^{-1} C^T A^{-1}, -A^{-1} C Sigma^{-1}],
        [., Sigma^{-1}]]``: ``H^{-1} = diag(I / a, 0) - Z_1^T Z_1 + Z_2^T Z_2`` with ``Z_1 = [W, 0] / sqrt(a)``
        and ``Z_2 = R^T [(A^{-1} C)^T, -I]`` (``Sigma^{-1} = R R^T``), one product of side ``q d + q``."""
        qd, q = self.q * self.d, self.q
        W, _ = lapack.dtrtrs(self.L, self.scaled_rows(), lower=1)
        W /= np.sqrt(self.a)
        side = qd + (0 if self.c is None else q)
        Z1 = W if self.c is None else np.hstack([W, np.zeros((W.shape[0], q))])
        out = Z1.T @ Z1  # BLAS syrk: exactly symmetric, as are the terms added below
        out *= -1.0
        if self.c is not None:
            Z2 = np.linalg.cholesky(self.schur_inv).T @ np.hstack([self.Ac.T, -np.eye(q)])
            out += Z2.T @ Z2
        out.ravel()[: qd * (side + 1): side + 1] += 1.0 / self.a
        return out

    def leverage_blocks(self):
        """``J`` of shape (n, q, q): ``J_i = T_i H^{-1} T_i^T`` (see the module docstring)."""
        n, q = self.n, self.q
        K, F = self.gram, self.F
        Y = np.einsum("ij,ibc->icjb", K, F).reshape(n * q, n * q)  # Y_(i,c),(j,b) = K_ij F_i[b, c]
        V, _ = lapack.dtrtrs(self.L, Y, lower=1)
        V = V.reshape(n * q, n, q)
        J = -np.einsum("ria,rib->iab", V, V)
        J[:, np.arange(q), np.arange(q)] += np.diagonal(K)[:, None]
        J /= self.a
        if self.c is not None:
            # rows (i, a) of G A^{-1} C - E
            Q = np.einsum("ij,ajb->iab", self.X, self.Ac.reshape(q, self.d, q))
            Q[:, np.arange(q), np.arange(q)] -= 1.0
            J += np.einsum("iab,bc,idc->iad", Q, self.schur_inv, Q)
        return 0.5 * (J + np.swapaxes(J, 1, 2))

    def shifts(self, D):
        """``s`` of shape (n, q): ``s_(i,a) = a T_(i,a) H^{-1} (D_i, 0)`` for the rows ``D_i`` (length ``q d``)
        of ``D`` (the first-order change of row ``i``'s predictor with the prior mean, ``P = a I``)."""
        n, q, d = self.n, self.q, self.d
        Tt = np.zeros((q, d, n, q))
        for a in range(q):
            Tt[a, :, :, a] = self.X.T
        Tt = Tt.reshape(q * d, n * q)
        if self.c is not None:
            Tt = np.vstack([Tt, np.tile(np.eye(q), n)])
        Z = self.solve(Tt)[: q * d]  # (q d, n q): column (i, a) is the coefficient part of H^{-1} T_(i,a)^T
        return self.a * np.einsum("kia,ik->ia", Z.reshape(q * d, n, q), D)


def posterior_inverse(X, y, loss, coef, intercept, *, sample_weight, a, fit_intercept):
    """``H^{-1}`` of :func:`~sklearn_bayes._glm._map.posterior_hessian` through :class:`MultiDualFactor` for
    ``q > 1`` outputs under the isotropic prior ``a I`` (:func:`sklearn_bayes._glm._dual.posterior_inverse`
    decides the shape rule and ``a``); None where the factor is declined."""
    X = np.asarray(X, dtype=float)
    h = _second_derivatives(X, y, loss, coef, intercept, sample_weight, fit_intercept)
    f = MultiDualFactor.build(X, h, a, fit_intercept)
    return None if f is None else f.inverse()


def _second_derivatives(X, y, loss, coef, intercept, sample_weight, fit_intercept):
    n = X.shape[0]
    q = loss.n_outputs
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    eta = X @ np.asarray(coef, dtype=float).reshape(q, -1).T
    if fit_intercept:
        eta = eta + np.asarray(intercept, dtype=float).reshape(q)[None, :]
    _, h = loss.derivatives(np.asarray(y, dtype=float), eta, w)
    return np.asarray(h, dtype=float)


def information_inverse(X, y, loss, coef, intercept, *, sample_weight, fit_intercept, rank_tolerance):
    """:func:`~sklearn_bayes._glm._map.inverse_information` of the data-only Hessian ``S^T S`` (the scaled
    rows of the module docstring, ``n q x (q d + q)``) for ``q > 1`` outputs on wide data, from the thin SVD
    of ``S`` (``O(n^2 q^3 d)``) instead of the eigendecomposition of ``S^T S`` (``O(q^3 d^3)``), as
    :func:`~sklearn_bayes._glm._dual.information_inverse` does for one output: the same rank rule (``S^T S``
    formed as a sum over ``n`` rows), the pseudo-inverse with ``+-inf`` where ``I - V_r V_r^T`` is not 0
    (with every ``h_i`` nonsingular the null space is ``I_q (x)`` that of ``[X, 1]``: the blocks between two
    outputs stay finite).  None where the shape rule does not apply."""
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    q = loss.n_outputs
    if not use_multi_dual(n, d, q):
        return None
    h = _second_derivatives(X, y, loss, coef, intercept, sample_weight, fit_intercept)
    F = row_roots(h)
    if F is None:
        return None
    # S_(i,c) = sum_a F_i[a, c] (e_a (x) x_i, e_a): coefficients of output a, then the intercepts
    S = np.einsum("iac,ij->icaj", F, X).reshape(n * q, q * d)
    if fit_intercept:
        S = np.hstack([S, np.swapaxes(F, 1, 2).reshape(n * q, q)])
    _, s, Vt = np.linalg.svd(S, full_matrices=False)
    w = s * s
    keep = w > rank_tolerance(w.max(initial=0.0), S.shape[1], n)
    Vr = Vt[keep]
    # the null-space projector I - V_r V_r^T: +-inf wherever it exceeds sqrt(eps) (_dual.unidentified_from_overlap).
    # Both products are of the form Y Y^T (BLAS syrk, exactly symmetric), so the result is symmetric as it is
    null = Vr.T @ Vr
    null *= -1.0
    null.ravel()[:: S.shape[1] + 1] += 1.0
    thr = np.sqrt(np.finfo(float).eps)
    lost = (null > thr) | (null < -thr)
    Y = Vr.T / np.sqrt(w[keep])
    inv = Y @ Y.T
    with np.errstate(invalid="ignore"):
        null *= np.inf  # +-inf where lost (the other entries are not used)
    np.copyto(inv, null, where=lost)
    return inv
