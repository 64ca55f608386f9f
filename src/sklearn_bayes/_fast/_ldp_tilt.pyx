# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""One step's moments of the stacked decoder's exponential tilt in one compiled call (issue 28, round T).

:func:`sklearn_bayes.privacy._ldp._empirical_bayes._tilted_linear` forms, for a tilt ``lambda``, ``a = ln w + lambda u``
(minus its maximum), ``E = e^a [1, u, u^2]`` and ``M = L E`` (one product over the distinct likelihood rows), then
``m = M_1 / M_0`` and ``var = max(M_2 / M_0 - m^2, 0)``, copied to the categories through ``rows``: about twenty numpy
calls a Newton step, 20-25 us at ``K = 64, eps = 8`` where the product itself is 30 x 280 x 3.  Here the same operations
run in one call, the product by BLAS ``dgemm`` (scipy's) in numpy's layout, the rest elementwise in the same order, so
the moments are numpy's up to rounding (another BLAS build; ``exp`` from the C library instead of numpy's own loop).
Rows whose mass ``M_0`` is not above ``floor`` are reported (their count is returned) for the caller's log-space path.
"""

import numpy as np

from libc.math cimport exp
from libc.stdint cimport int64_t
from scipy.linalg.cython_blas cimport dgemm


def tilt_moments(const double[:, ::1] L, const double[::1] logw, const double[::1] u, double lam,
                 const int64_t[::1] rows, double[::1] m_out, double[::1] var_out, double[::1] work,
                 unsigned char[::1] low, double floor):
    """Fill ``m_out``/``var_out`` (one entry per category, row ``rows[k]`` of ``L``) and ``low`` (per row of ``L``:
    its mass is not above ``floor``; those rows' moments are NaN or garbage, for the caller to replace); returns the
    number of low rows.  ``work``: scratch of at least ``3 G + 3 V`` doubles (``L`` is ``V x G``)."""
    cdef int V = L.shape[0], G = L.shape[1], K = rows.shape[0]
    cdef int j, v, k, three = 3
    cdef int n_low = 0
    cdef double amax, e, s, m, alpha = 1.0, beta = 0.0
    cdef char nt = b'N'
    cdef double* E
    cdef double* M
    if logw.shape[0] != G or u.shape[0] != G or m_out.shape[0] != K or var_out.shape[0] != K or low.shape[0] != V:
        raise ValueError("L, logw, u, rows, m_out, var_out and low do not match.")
    if work.shape[0] < 3 * G + 3 * V:
        raise ValueError("work is too small.")
    if G == 0 or V == 0:
        raise ValueError("L must have at least one row and one column.")
    E = &work[0]
    M = &work[3 * G]
    with nogil:
        amax = logw[0] + lam * u[0]
        for j in range(G):  # a = logw + lam * u; a -= a.max()
            e = logw[j] + lam * u[j]
            if e > amax or e != e:
                amax = e
            E[3 * j] = e
        for j in range(G):
            e = exp(E[3 * j] - amax)
            E[3 * j] = e * 1.0  # e[:, None] * [1, u, u * u], row-major (G x 3)
            E[3 * j + 1] = e * u[j]
            E[3 * j + 2] = e * (u[j] * u[j])
        # M (V x 3, row-major) = L (V x G) @ E (G x 3): column-major M^T = E^T L^T
        dgemm(&nt, &nt, &three, &V, &G, &alpha, E, &three, <double*> &L[0, 0], &G, &beta, M, &three)
        for v in range(V):
            s = M[3 * v]
            low[v] = not (s > floor)
            n_low += low[v]
        for k in range(K):
            v = <int> rows[k]
            s = M[3 * v]
            m = M[3 * v + 1] / s
            m_out[k] = m
            e = M[3 * v + 2] / s - m * m
            var_out[k] = e if e > 0.0 else 0.0
    return n_low
