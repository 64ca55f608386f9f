# cython: language_level=3
"""Convergence checks of :class:`sklearn_bayes.AdaptiveLDPFrequencyEstimator`'s chain, compiled
(issue 28, round 7): the centring, variances and Geyer's sum of the effective sample size and the
split R-hat of :mod:`sklearn_bayes.privacy._ldp._diagnostics`.  Each does numpy's arithmetic in
numpy's order (sums over the draws' rows in order, as numpy reduces axis 0 of a C-ordered array with
two or more columns), so the diagnostics, the chain's stopping decisions and the seeded ``theta_``
are the same bit for bit; the FFTs stay numpy's.
"""

import numpy as np

from libc.math cimport NAN, sqrt

def ess_centre(const double[:, ::1] x):
    """``(xc, var)`` of the draws ``x`` (``n x K``) for :func:`privacy._ldp._diagnostics._ess`:
    ``xc[k] = x[:, k] - mean_k`` (one contiguous row per category) and ``var[k] = mean(xc[k]^2)``.

    The same arithmetic as numpy's ``x - x.mean(axis=0)`` and ``(c * c).mean(axis=0)`` on a
    C-ordered ``x`` (sums over the rows in order, then one division by ``n``): equal bit for bit.
    """
    cdef Py_ssize_t n = x.shape[0], K = x.shape[1], i, k
    xc_arr = np.empty((K, n))
    var_arr = np.zeros(K)
    mean_arr = np.zeros(K)
    cdef double[:, ::1] xc = xc_arr
    cdef double[::1] var = var_arr, mean = mean_arr
    cdef double c
    with nogil:
        for i in range(n):
            for k in range(K):
                mean[k] += x[i, k]
        for k in range(K):
            mean[k] = mean[k] / n
        for i in range(n):
            for k in range(K):
                c = x[i, k] - mean[k]
                xc[k, i] = c
                var[k] += c * c
        for k in range(K):
            var[k] = var[k] / n
    return xc_arr, var_arr


def geyer_tau(const double[:, ::1] a, Py_ssize_t n):
    """Integrated autocorrelation time of every row of ``a`` (the unnormalised autocovariances
    ``irfft(|rfft(x)|^2)`` of one category per row, lags ``0 .. n - 1`` used): ``acov = a / n``,
    ``rho = acov / acov_0``, Geyer's pairs ``rho_{2i} + rho_{2i+1}`` (``i < (n - 1) // 2``) summed
    in order until the first non-positive one, ``tau = -1 + 2 sum``.  The same operations in the
    same order as the numpy expressions they replace (equal bit for bit); it stops at the first
    non-positive pair instead of summing the zeros after it.
    """
    cdef Py_ssize_t L = a.shape[0], n_pairs = (n - 1) // 2, l, i
    tau_arr = np.empty(L)
    cdef double[::1] tau = tau_arr
    cdef double a0, p, s
    with nogil:
        for l in range(L):
            a0 = a[l, 0] / n
            s = 0.0
            for i in range(n_pairs):
                p = (a[l, 2 * i] / n) / a0 + (a[l, 2 * i + 1] / n) / a0
                if not p > 0:
                    break
                s = s + p if i else p
            tau[l] = -1.0 + 2.0 * s
    return tau_arr


def split_rhat(const double[:, ::1] draws, Py_ssize_t n_segments):
    """Worst split R-hat of ``draws`` (``n x K``) cut into ``n_segments`` segments of ``seg = n //
    n_segments`` rows (:func:`privacy._ldp._diagnostics.chain_diagnostics`): ``W`` the mean of the
    segments' variances (``ddof = 1``), ``B = seg`` times the variance of their means, ``max_k
    sqrt(((seg - 1) / seg W_k + B_k / seg) / W_k)`` over the ``W_k > 0`` (``nan`` when none).
    The same operations in the same order as numpy's ``var``/``mean`` over those axes (sums over
    the rows in order when ``K >= 2``): equal bit for bit.
    """
    cdef Py_ssize_t n = draws.shape[0], K = draws.shape[1], seg = n // n_segments, c, i, k
    cdef double[:, ::1] M = np.zeros((n_segments, K))
    cdef double[::1] W = np.zeros(K), V = np.zeros(K), mm = np.zeros(K), bb = np.zeros(K)
    cdef double d, f = (seg - 1) / <double> seg, worst = NAN, r
    with nogil:
        for c in range(n_segments):
            for i in range(seg):
                for k in range(K):
                    M[c, k] += draws[c * seg + i, k]
            for k in range(K):
                M[c, k] = M[c, k] / seg
                V[k] = 0.0
            for i in range(seg):
                for k in range(K):
                    d = draws[c * seg + i, k] - M[c, k]
                    V[k] += d * d
            for k in range(K):
                W[k] += V[k] / (seg - 1)
                mm[k] += M[c, k]
        for k in range(K):
            W[k] = W[k] / n_segments
            mm[k] = mm[k] / n_segments
        for c in range(n_segments):
            for k in range(K):
                d = M[c, k] - mm[k]
                bb[k] += d * d
        for k in range(K):
            if W[k] > 0:
                r = sqrt((f * W[k] + (seg * (bb[k] / (n_segments - 1))) / seg) / W[k])
                if not r <= worst:
                    worst = r
    return worst
