"""The subsample fits of Algorithm 1: unregularised with the separation fallback
(``prior_scale='paper'``), or all under the unit prior (``prior_scale='loo'``)."""

import numpy as np

from sklearn_bayes._glm import SquaredLoss, fit_map, mle_exists

#: elements of X per block of the batched ridge subsample fits (a few tens of MB)
_BLOCK_ELEMENTS = 1 << 22


def _fit_one_subsample(X, y, w, loss, fit_intercept, tol, max_iter, null_intercept, start=None,
                       fallback_start=None):
    """Unregularised fit on one subsample, with the documented fallback.

    ``start`` is an optional ``(coef, intercept)`` starting point (a pilot fit shared by all
    subsamples: fewer Newton iterations, same minimiser); ``fallback_start`` likewise for the
    (strictly convex) fallback fit.  Returns
    ``(coef (q*d,), intercept (q,), status)`` with status in
    ``{'ok', 'rank_deficient', 'separated', 'not_converged'}``.
    """
    kw = dict(sample_weight=w, fit_intercept=fit_intercept, tol=tol, max_iter=max_iter, abort_on_divergence=True)
    res = fit_map(X, y, loss, **kw) if start is None else fit_map(
        X, y, loss, coef_init=start[0], intercept_init=start[1], **kw)
    if start is not None and (res.singular or res.diverged):
        # the minimiser is not unique (or may not exist): start from zero like every fit
        # without a pilot, so the null-space component does not depend on the pilot
        res = fit_map(X, y, loss, **kw)
    status = "ok"
    if res.diverged or res.singular or not res.converged:
        direction = np.hstack([res.coef, res.intercept[:, None]]) if fit_intercept else res.coef
        if mle_exists(X, y, loss, fit_intercept=fit_intercept, direction=direction if res.diverged else None):
            if res.diverged:  # large but finite predictor: finish the fit
                res = fit_map(X, y, loss, sample_weight=w, fit_intercept=fit_intercept, tol=tol,
                              max_iter=max_iter, coef_init=res.coef, intercept_init=res.intercept)
            status = "rank_deficient" if res.singular else ("ok" if res.converged else "not_converged")
        else:
            status = "separated"
    if status == "separated" or not (np.all(np.isfinite(res.coef)) and np.all(np.isfinite(res.intercept))):
        # Fallback: unit Gaussian prior N(0, I) on the coefficients and N(b_null, 1) on the
        # intercept (b_null: intercept-only fit on all the data) -- finite by construction.
        q, d = res.coef.shape
        if fit_intercept:
            Xa = np.hstack([X, np.ones((X.shape[0], 1))])
            mean = np.hstack([np.zeros((q, d)), np.asarray(null_intercept).reshape(q, 1)])
        else:
            Xa, mean = X, np.zeros((q, d))
        init = None if fallback_start is None else np.hstack(
            [np.reshape(fallback_start[0], (q, d)), np.reshape(fallback_start[1], (q, 1))])[:, : Xa.shape[1]]
        fb = fit_map(Xa, y, loss, sample_weight=w, fit_intercept=False, prior_mean=mean.ravel(),
                     prior_precision=1.0, tol=tol, max_iter=max_iter, coef_init=init)
        coef = fb.coef[:, :d]
        intercept = fb.coef[:, d] if fit_intercept else np.zeros(q)
        return coef.ravel(), intercept, "separated"
    return res.coef.ravel(), res.intercept, status


def _fit_one_penalised(X, y, w, loss, fit_intercept, tol, max_iter, start=None, precision=1.0):
    """The fit of one subsample under the Gaussian prior ``N(0, I / precision)`` on the coefficients
    (standardised features; the intercept unpenalised; ``precision`` is the mean weight, so that
    the prior is the unit prior per unit of weight): it exists and is unique for every
    subsample -- whatever its size, separation or rank -- so no fit is replaced.  Returns
    ``(coef (q*d,), intercept (q,), status)`` with status ``'ok'`` or ``'not_converged'``."""
    kw = dict(sample_weight=w, fit_intercept=fit_intercept, tol=tol, max_iter=max_iter, prior_precision=precision)
    if start is not None:
        kw.update(coef_init=start[0], intercept_init=start[1])
    res = fit_map(X, y, loss, **kw)
    return res.coef.ravel(), res.intercept, "ok" if res.converged else "not_converged"


def _ridge_batch(X, y, w, index_batch, fit_intercept, precision=1.0):
    """The unit-prior squared-loss fits of equal-sized subsamples at once: on each subsample,
    ``(X_c^T W X_c + precision I) b = X_c^T W y_c`` (columns and target centred at their weighted means
    with an intercept), solved in stacked blocks -- the minimiser :func:`_fit_one_penalised`
    finds by Newton's method (one step, the closed form), without a Python loop per subsample.

    With fewer rows ``n`` than columns the n x n dual system is solved instead, ``b = X_c^T W^1/2 a``
    with ``(W^1/2 X_c X_c^T W^1/2 + precision I) a = W^1/2 y_c`` (the same minimiser), its kernel
    ``X_c X_c^T`` read off the Gram matrix of all rows (``K_S - 1 u^T - u 1^T + t``, ``u = K_S w /
    sum(w)``, ``t = w^T K_S w / sum(w)^2``: the centring in kernel form)."""
    idx = np.asarray(index_batch)
    m, n = idx.shape
    N, d = X.shape
    dual = n < d
    if dual and 0 < N - n <= n // 4:
        return _ridge_downdate(X, y, w, idx, fit_intercept, precision)
    K_all = X @ X.T if dual else None
    per = max(1, _BLOCK_ELEMENTS // max(n * (n if dual else d), 1))
    out = []
    for s in range(0, m, per):
        rows = idx[s:s + per]
        Xs, ys = X[rows], y[rows]
        ws = np.ones(rows.shape) if w is None else w[rows]
        tot = ws.sum(axis=1)
        if fit_intercept:
            xm = np.matmul(ws[:, None, :], Xs)[:, 0, :] / tot[:, None]
            ym = np.einsum("kn,kn->k", ws, ys) / tot
            ys = ys - ym[:, None]
        if dual:
            K = K_all[rows[:, :, None], rows[:, None, :]]
            if fit_intercept:
                u = np.matmul(K, ws[:, :, None])[:, :, 0] / tot[:, None]
                t = np.einsum("kn,kn->k", u, ws) / tot
                K = K - u[:, :, None] - u[:, None, :] + t[:, None, None]
            sws = np.sqrt(ws)
            K = K * sws[:, :, None] * sws[:, None, :]
            K[:, np.arange(n), np.arange(n)] += precision
            a = np.linalg.solve(K, (sws * ys)[:, :, None])[:, :, 0] * sws
            coef = np.matmul(a[:, None, :], Xs)[:, 0, :]
            if fit_intercept:
                coef = coef - xm * a.sum(axis=1)[:, None]
        else:
            if fit_intercept:
                Xs = Xs - xm[:, None, :]
            Xw = Xs * ws[:, :, None]
            G = np.matmul(Xs.transpose(0, 2, 1), Xw)
            G[:, np.arange(d), np.arange(d)] += precision
            b = np.einsum("knd,kn->kd", Xw, ys)
            coef = np.linalg.solve(G, b[:, :, None])[:, :, 0]
        intercept = ym - np.einsum("kd,kd->k", xm, coef) if fit_intercept else np.zeros(len(rows))
        out.extend((coef[k], np.array([intercept[k]]), "ok") for k in range(len(rows)))
    return out


def _ridge_downdate(X, y, w, idx, fit_intercept, precision):
    """:func:`_ridge_batch` for subsamples that leave out only a few of the rows (``k = N - n <= n/4``)
    and have fewer rows than columns: every subsample's dual system is a principal block of one
    system on all rows, so one inverse serves them all.

    The dual of ``min_b,b0 sum_i w_i (y_i - x_i b - b0)^2 + precision |b|^2`` on the rows ``S`` is
    ``[[K_SS + precision W_S^-1, 1], [1^T, 0]] [a; b0] = [y_S; 0]`` with ``b = X_S^T a`` (``K = X
    X^T``; without an intercept the bordered row and column are dropped).  With ``B`` that matrix
    on all rows, ``M = B^-1`` and ``E`` the ``k`` rows left out, the inverse of the block on the
    kept rows is ``M_SS - M_SE M_EE^-1 M_ES``, so ``z = M v - M_.E M_EE^-1 (M v)_E`` (``v`` = the
    right-hand side with zeros on ``E``) solves every subsample's system at the cost of a
    ``k x k`` solve."""
    m, n = idx.shape
    N = X.shape[0]
    wv = np.ones(N) if w is None else w
    K = X @ X.T
    K[np.arange(N), np.arange(N)] += precision / wv
    if fit_intercept:
        B = np.zeros((N + 1, N + 1))
        B[:N, :N] = K
        B[:N, N] = B[N, :N] = 1.0
    else:
        B = K
    M = np.linalg.inv(B)
    M = 0.5 * (M + M.T)
    keep = np.zeros((m, N), dtype=bool)
    keep[np.arange(m)[:, None], idx] = True
    E = np.nonzero(~keep)[1].reshape(m, N - n)  # the rows each subsample leaves out, in order
    V = np.zeros((m, B.shape[0]))
    V[:, :N] = np.where(keep, y[None, :], 0.0)
    U = V @ M
    ME = M[E]  # (m, k, N[+1]): the rows E of M (= its columns, M symmetric)
    MEE = np.take_along_axis(ME, E[:, None, :], axis=2)
    t = np.linalg.solve(MEE, np.take_along_axis(U, E, axis=1)[:, :, None])[:, :, 0]
    Z = U - np.einsum("mkj,mk->mj", ME, t)
    alpha = np.where(keep, Z[:, :N], 0.0)
    coef = alpha @ X
    intercept = Z[:, N] if fit_intercept else np.zeros(m)
    return [(coef[k], np.array([intercept[k]]), "ok") for k in range(m)]


def _fit_subsample_batch(X, y, w, index_batch, loss, fit_intercept, tol, max_iter, null_intercept, start=None,
                         fallback_start=None, penalised=False):
    """Fits of the subsamples ``index_batch``: unregularised with the fallback, or (``penalised``:
    the prior precision, a float) under the prior ``N(0, I / penalised)``."""
    if penalised and isinstance(loss, SquaredLoss) and len(index_batch) and X.shape[1]:
        return _ridge_batch(X, y, w, index_batch, fit_intercept, penalised)
    out = []
    for idx in index_batch:
        if penalised:
            out.append(_fit_one_penalised(X[idx], y[idx], None if w is None else w[idx], loss, fit_intercept, tol,
                                          max_iter, start, penalised))
        else:
            out.append(_fit_one_subsample(X[idx], y[idx], None if w is None else w[idx], loss, fit_intercept, tol,
                                          max_iter, null_intercept, start, fallback_start))
    return out
