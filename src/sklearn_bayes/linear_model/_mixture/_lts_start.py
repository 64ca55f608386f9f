"""High-breakdown start of :class:`~sklearn_bayes.MixtureMEstimatorRegressor`: least trimmed squares.

FAST-LTS (Rousseeuw and Van Driessen, "Computing LTS regression for large data sets"):
random elemental subsets, concentration steps, the best candidates refined to convergence.
Also the weighted least-squares and weighted-median kernels the other mixture modules share.

Inputs are the (standardised, augmented) design ``Xa``, the targets ``y``, the sample
weights ``sw`` and a ``numpy.random.Generator``; outputs are plain arrays.
"""

import math

import numpy as np
from scipy import linalg

__all__ = ["lts_candidates", "lts_starts", "weighted_median", "wls"]

_LTS_SUBSAMPLE = 1500  # elemental subsets are searched on at most this many rows
_LTS_SCREEN = 50  # elemental fits with the best raw trimmed objective get concentration steps
_LTS_KEEP = 10  # candidates refined to convergence on the subsample


def weighted_median(x, w):
    """Lower weighted median of ``x`` with non-negative weights ``w`` (not all 0)."""
    if w[0] > 0 and np.all(w == w[0]):  # equal weights: selection in O(n)
        k = (len(x) - 1) // 2
        return float(np.partition(x, k)[k])
    order = np.argsort(x, kind="stable")
    cw = np.cumsum(w[order])
    k = int(np.searchsorted(cw, 0.5 * cw[-1]))
    return float(x[order[min(k, len(x) - 1)]])


def _solve_normal(G, rhs, weighted=None):
    """Solve ``G theta = rhs`` by Cholesky; fall back to least squares if ill-conditioned.

    ``weighted``: optional callable returning the weighted design and target
    ``(Xw, yw)`` with ``G = Xw.T @ Xw``, for a minimum-norm solve of the
    rank-deficient case on the data rather than on ``G``.
    """
    try:
        c, lower = linalg.cho_factor(G, lower=False, check_finite=False)
        d = np.abs(np.diag(c))
        if d.min() > 1e-7 * d.max():
            return linalg.cho_solve((c, lower), rhs, check_finite=False)
    except linalg.LinAlgError:
        pass
    if weighted is None:
        return linalg.lstsq(G, rhs, cond=1e-12, check_finite=False)[0]
    Xw, yw = weighted()
    return linalg.lstsq(Xw, yw, cond=None, check_finite=False, lapack_driver="gelsd")[0]


_WLS_BLOCK = 8192  # rows per block of the weighted Gram accumulation (cache-sized work buffer)


def wls(Xa, y, w, out=None):
    """Weighted least squares ``argmin_theta sum_i w_i (y_i - Xa_i @ theta)^2``.

    The weighted Gram matrix ``sum_i w_i x_i x_i^T`` is accumulated with BLAS
    symmetric rank-k updates (``A.T @ A``) over blocks of ``_WLS_BLOCK`` rows of
    ``A = sqrt(w) * Xa`` (a cache-sized work buffer instead of a weighted copy
    of the whole design) and solved by Cholesky; a badly conditioned or
    singular Gram falls back to a minimum-norm least-squares solve.  ``out``
    (at least ``min(n, _WLS_BLOCK)`` rows) is an optional work buffer.
    """
    n, p = Xa.shape
    sq = np.sqrt(w)
    if out is None or out.shape[0] < min(n, _WLS_BLOCK):
        out = np.empty((min(n, _WLS_BLOCK), p))
    G = np.zeros((p, p))
    rhs = np.zeros(p)
    for s in range(0, n, _WLS_BLOCK):
        e = min(n, s + _WLS_BLOCK)
        A = np.multiply(Xa[s:e], sq[s:e, None], out=out[: e - s])
        G += A.T @ A
        rhs += A.T @ (y[s:e] * sq[s:e])
    return _solve_normal(G, rhs, lambda: (Xa * sq[:, None], y * sq))


def _trim(r, sw, h_w, h_n):
    """Rows with the smallest |r| carrying weight ``h_w`` (``h_n`` rows if unweighted)."""
    a = np.abs(r)
    if h_n is not None:
        idx = np.argpartition(a, h_n - 1)[:h_n] if h_n < len(a) else np.arange(len(a))
        return idx, float(r[idx] @ r[idx])
    order = np.argsort(a, kind="stable")
    cw = np.cumsum(sw[order])
    k = int(np.searchsorted(cw, h_w * (1 - 1e-12))) + 1
    idx = order[:k]
    return idx, float(sw[idx] @ (r[idx] ** 2))


def _cstep(Xa, y, sw, theta, h_w, h_n, n_steps):
    """Concentration steps of FAST-LTS: refit least squares on the ``h`` best-fitting rows."""
    idx, obj = _trim(y - Xa @ theta, sw, h_w, h_n)
    for _ in range(n_steps):
        sq = np.sqrt(sw[idx])
        Xw = Xa[idx] * sq[:, None]
        yw = y[idx] * sq
        new = _solve_normal(Xw.T @ Xw, Xw.T @ yw, lambda: (Xw, yw))
        idx_new, obj_new = _trim(y - Xa @ new, sw, h_w, h_n)
        if obj_new >= obj * (1 - 1e-12):
            if obj_new < obj:
                theta, obj = new, obj_new
            break
        theta, idx, obj = new, idx_new, obj_new
    return theta, obj


def _csteps_batch(X, y, thetas, h, n_steps):
    """Concentration steps for many candidates at once (unweighted rows, keep ``h``).

    Each step refits least squares on every active candidate's ``h``
    best-fitting rows (stacked BLAS products on the gathered rows, one batched
    solve) and keeps a candidate's new fit only if its trimmed sum of squares
    decreased; a candidate whose objective stops decreasing is final.
    Returns ``(thetas, objectives)``.
    """
    n = X.shape[0]
    thetas = np.array(thetas, dtype=float)

    def trim(th):
        A = (y[:, None] - X @ th.T) ** 2
        if h >= n:
            return np.broadcast_to(np.arange(n)[:, None], A.shape), A.sum(axis=0)
        idx = np.argpartition(A, h - 1, axis=0)[:h]
        return idx, np.take_along_axis(A, idx, 0).sum(axis=0)

    idx, obj = trim(thetas)
    idx = np.ascontiguousarray(idx.T)  # (K, h)
    act = np.arange(len(thetas))
    for _ in range(n_steps):
        Xg = X[idx[act]]  # (k, h, p)
        yg = y[idx[act]]
        G = np.matmul(Xg.transpose(0, 2, 1), Xg)
        b = np.matmul(Xg.transpose(0, 2, 1), yg[:, :, None])
        try:
            new = np.linalg.solve(G, b)[:, :, 0]
        except np.linalg.LinAlgError:
            new = np.array([_solve_normal(G[k], b[k, :, 0]) for k in range(len(act))])
        ok = np.all(np.isfinite(new), axis=1)
        new[~ok] = thetas[act[~ok]]
        idx_new, obj_new = trim(new)
        better = ok & (obj_new < obj[act] * (1 - 1e-12))
        keep = act[better]
        thetas[keep] = new[better]
        obj[keep] = obj_new[better]
        idx[keep] = idx_new.T[better]
        act = keep
        if len(act) == 0:
            break
    return thetas, obj


def _elemental_picks(m, p, k, rng):
    """``k`` random ``p``-subsets of ``range(m)`` (rows without repeated indices); ``rng`` is a Generator."""
    draw = rng.integers
    picks = draw(0, m, size=(k, p))
    for _ in range(100):
        srt = np.sort(picks, axis=1)
        dup = np.any(srt[:, 1:] == srt[:, :-1], axis=1)
        if not dup.any():
            return picks
        picks[dup] = draw(0, m, size=(int(dup.sum()), p))
    return np.array([rng.choice(m, p, replace=False) for _ in range(k)])


def lts_starts(Xa, y, sw, n_subsets, n_keep, rng):
    """High-breakdown starting fits: least trimmed squares from elemental subsets.

    ``n_subsets`` random elemental subsets (``p`` rows fitted exactly) are drawn
    from at most ``_LTS_SUBSAMPLE`` positive-weight rows; the ``_LTS_SCREEN``
    with the smallest trimmed sum of squares get two concentration steps; the
    ``_LTS_KEEP`` best are iterated to convergence, and the best ``n_keep``
    distinct ones get (at most 3) concentration steps on all rows.  Trimming
    keeps the ``h = (n + p + 1) / 2`` best rows (in sample weight).  Returns a
    list of parameter vectors sorted by trimmed sum of squares.
    """
    return _lts_search(Xa, y, sw, n_subsets, n_keep, rng, polish=True)[1]


def lts_candidates(Xa, y, sw, n_subsets, n_keep, rng):
    """The LTS search of :func:`lts_starts` without its all-row concentration steps.

    Returns ``(sub, thetas)``: the indices of the rows searched (all positive-weight rows,
    or a random ``_LTS_SUBSAMPLE`` of them) and up to ``n_keep`` distinct fits refined on
    those rows, sorted by their trimmed sum of squares there.  Consumes ``rng`` exactly as
    :func:`lts_starts` does.
    """
    return _lts_search(Xa, y, sw, n_subsets, n_keep, rng, polish=False)


def _lts_search(Xa, y, sw, n_subsets, n_keep, rng, polish):
    p = Xa.shape[1]
    pos = np.flatnonzero(sw > 0)
    n_pos = len(pos)
    unweighted = bool(np.all(sw[pos] == sw[pos[0]]))
    sub = pos if n_pos <= _LTS_SUBSAMPLE else np.sort(rng.choice(pos, _LTS_SUBSAMPLE, replace=False))
    Xs, ys, ws = Xa[sub], y[sub], sw[sub]
    frac = min(1.0, (n_pos + p + 1) / (2.0 * n_pos))
    h_sub, h_all = frac * ws.sum(), frac * sw.sum()
    hn_sub = min(len(sub), int(math.ceil(frac * len(sub)))) if unweighted else None
    hn_all = min(n_pos, (n_pos + p + 1) // 2) if unweighted else None
    if unweighted and len(sub) == n_pos:
        hn_sub = hn_all
    if unweighted and n_pos < len(sw):  # zero-weight rows exist: trim among positive rows only
        Xa, y, sw = Xa[pos], y[pos], sw[pos]

    picks = _elemental_picks(len(sub), p, n_subsets, rng)
    try:
        thetas = np.linalg.solve(Xs[picks], ys[picks][:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:  # some elemental subset is singular
        thetas = np.einsum("kij,kj->ki", np.linalg.pinv(Xs[picks]), ys[picks])
    thetas = thetas[np.all(np.isfinite(thetas), axis=1)]
    if len(thetas) > _LTS_SCREEN:  # pre-screen by the raw trimmed objective (vectorised)
        with np.errstate(over="ignore", invalid="ignore"):  # a gross y: products overflow, inf - inf on some BLAS
            R2 = (ys[:, None] - Xs @ thetas.T) ** 2
        R2[np.isnan(R2)] = np.inf  # an overflowing fit is as bad as it gets, whatever the kernel's inf/nan
        if hn_sub is not None:
            raw = np.partition(R2, hn_sub - 1, axis=0)[:hn_sub].sum(axis=0)
        else:
            order = np.argsort(R2, axis=0)
            cw = np.cumsum(ws[order], axis=0)
            raw = np.where(cw - ws[order] < h_sub, ws[order] * np.take_along_axis(R2, order, 0), 0.0).sum(0)
        thetas = thetas[np.argsort(raw, kind="stable")[:_LTS_SCREEN]]
    if hn_sub is not None:  # unweighted: all candidates' C-steps in a few matrix products
        thetas, obj = _csteps_batch(Xs, ys, thetas, hn_sub, 2)
        order = np.argsort(obj, kind="stable")[:_LTS_KEEP]
        thetas, obj = _csteps_batch(Xs, ys, thetas[order], hn_sub, 100)
        refined = sorted(zip(thetas, obj), key=lambda t: t[1])
    else:
        cands = [_cstep(Xs, ys, ws, th, h_sub, hn_sub, 2) for th in thetas]
        cands.sort(key=lambda t: t[1])
        refined = [_cstep(Xs, ys, ws, th, h_sub, hn_sub, 100) for th, _ in cands[:_LTS_KEEP]]
        refined.sort(key=lambda t: t[1])
    out = []
    for theta, _ in refined:
        if any(np.allclose(theta, o, rtol=1e-6, atol=1e-9) for o in out):
            continue
        out.append(theta)
        if len(out) == n_keep:
            break
    if polish and len(sub) < n_pos:
        out = sorted((_cstep(Xa, y, sw, th, h_all, hn_all, 3) for th in out), key=lambda t: t[1])
        out = [th for th, _ in out]
    return sub, out
