# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The NPMLE's EM of the stacked empirical-Bayes decoder in one compiled call (issue 28, round G3).

:func:`sklearn_bayes.privacy._ldp._empirical_bayes.npmle_weights` runs 400-1700 iterations at ``eps = 8``, each seven
numpy calls on vectors of 64-1000 entries: at ``K = 64`` the calls' overhead is half an iteration's time.  Here the
same iteration (``r = 1 / m``, ``g = L' r``, ``w <- w g / K``, ``m = L w``, ``ll = sum log m``) runs in one loop: the two
products by BLAS ``dgemv`` (scipy's), the rest elementwise in the same order; the log-likelihood as the log of the
product of the ``m_v``'s mantissas plus their exponents times ``ln 2`` (:func:`_log_sum`: one ``log`` per 256 rows,
not per row).  The weights are the numpy loop's up to rounding (another BLAS build); the stopping test reads a
log-likelihood within a few ulps of the numpy sum's.
"""

import numpy as np

from libc.math cimport frexp, log
from scipy.linalg.cython_blas cimport dgemv


cdef double LN2 = 0.6931471805599453


cdef inline double _log_sum(const double* m, int K) noexcept nogil:
    """``sum_v log m_v`` as ``log(prod of mantissas) + (sum of exponents) ln 2``, renormalised every 256 factors (each
    mantissa is in ``[0.5, 1)``, so a block's product stays above ``2^-256``).  ``-inf`` when some ``m_v`` is 0, NaN
    when one is NaN (as the sum of logs)."""
    cdef double prod = 1.0, total = 0.0, mant
    cdef int e, k = 0, v
    cdef long long exps = 0
    for v in range(K):
        if not m[v] > 0.0:  # 0, negative or NaN: the sum of logs' value
            return log(m[v]) if m[v] == m[v] else m[v]
        mant = frexp(m[v], &e)
        prod *= mant
        exps += e
        k += 1
        if k == 256:
            total += log(prod)
            prod, k = 1.0, 0
    return total + log(prod) + exps * LN2


def npmle_em(const double[:, ::1] L, double[::1] w, int max_iter, double tol):
    """EM for the NPMLE weights ``w`` (updated in place) of the likelihood rows ``L`` (``K x G``, C order).

    Stops when an iteration raises ``sum_v log (L w)_v`` by less than ``tol`` (or after ``max_iter`` iterations).
    Returns ``(n_iter, converged)``.
    """
    cdef int K = L.shape[0], G = L.shape[1], one = 1, it = 0, v, j
    cdef double zero = 0.0, unit = 1.0, ll = 0.0, new = 0.0, dK = K
    cdef char tn = b'N', tt = b'T'
    cdef bint done = False
    if w.shape[0] != G:
        raise ValueError("w must have one weight per column of L.")
    if K == 0 or G == 0 or max_iter < 1:
        return 0, False
    m = np.empty(K)
    r = np.empty(K)
    g = np.empty(G)
    cdef double[::1] mv = m, rv = r, gv = g
    cdef double* A = <double*> &L[0, 0]
    with nogil:
        # L (K x G, C order) is L' (G x K) in Fortran order: L w = dgemv('T'), L' r = dgemv('N')
        dgemv(&tt, &G, &K, &unit, A, &G, &w[0], &one, &zero, &mv[0], &one)
        ll = _log_sum(&mv[0], K)
        while it < max_iter and not done:
            it += 1
            for v in range(K):
                rv[v] = 1.0 / mv[v]
            dgemv(&tn, &G, &K, &unit, A, &G, &rv[0], &one, &zero, &gv[0], &one)
            for j in range(G):
                w[j] = w[j] * gv[j] / dK
            dgemv(&tt, &G, &K, &unit, A, &G, &w[0], &one, &zero, &mv[0], &one)
            new = _log_sum(&mv[0], K)
            if new - ll < tol:
                done = True
            ll = new
    return it, bool(done)


def npmle_em_weighted(const double[:, ::1] L, const double[::1] mult, double[::1] w, int max_iter, double tol):
    """:func:`npmle_em` on distinct likelihood rows ``L`` (``K_u x G``), row ``v`` standing for ``mult[v]`` equal rows
    (round S: categories with equal support counts have equal rows).

    The same iteration with the sums over categories taken as weighted sums over the distinct rows:
    ``r_v = mult_v / m_v``, ``w <- w (L' r) / sum(mult)``, ``ll = sum_v mult_v log m_v``.  Returns ``(n_iter, converged)``.
    """
    cdef int K = L.shape[0], G = L.shape[1], one = 1, it = 0, v, j
    cdef double zero = 0.0, unit = 1.0, ll = 0.0, new = 0.0, dK = 0.0
    cdef char tn = b'N', tt = b'T'
    cdef bint done = False
    if w.shape[0] != G or mult.shape[0] != K:
        raise ValueError("w must have one weight per column of L and mult one count per row.")
    if K == 0 or G == 0 or max_iter < 1:
        return 0, False
    m = np.empty(K)
    r = np.empty(K)
    g = np.empty(G)
    cdef double[::1] mv = m, rv = r, gv = g
    cdef double* A = <double*> &L[0, 0]
    for v in range(K):
        dK += mult[v]
    with nogil:
        dgemv(&tt, &G, &K, &unit, A, &G, &w[0], &one, &zero, &mv[0], &one)
        ll = _weighted_log_sum(&mv[0], &mult[0], K)
        while it < max_iter and not done:
            it += 1
            for v in range(K):
                rv[v] = mult[v] / mv[v]
            dgemv(&tn, &G, &K, &unit, A, &G, &rv[0], &one, &zero, &gv[0], &one)
            for j in range(G):
                w[j] = w[j] * gv[j] / dK
            dgemv(&tt, &G, &K, &unit, A, &G, &w[0], &one, &zero, &mv[0], &one)
            new = _weighted_log_sum(&mv[0], &mult[0], K)
            if new - ll < tol:
                done = True
            ll = new
    return it, bool(done)


cdef inline double _weighted_log_sum(const double* m, const double* mult, int K) noexcept nogil:
    """``sum_v mult_v log m_v`` (one ``log`` per distinct row)."""
    cdef double total = 0.0
    cdef int v
    for v in range(K):
        total += mult[v] * log(m[v])
    return total
