# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Latent-category sweep of the data-augmentation Gibbs sampler for "three-level" LDP likelihoods.

Every static LDP protocol used by :class:`sklearn_bayes.AdaptiveLDPFrequencyEstimator`
has, for a response ``y``, a likelihood ``P(y | x)`` that takes at most three values
as a function of the true category ``x``:

- ``f_in`` for ``x`` in a set ``A(y)`` (subset selection: the reported subset;
  OUE: the set bits; GRR: ``{y}``; RRRR with ``y`` outside ``S``: ``S``),
- ``f_y`` for ``x = y_special`` (RRRR: the released category; ``-1`` if none),
- ``f_out`` for every other ``x``.

Responses with the same likelihood are grouped, with a count ``c_g``.  A sweep draws
``x_u ~ p(x | y_u, theta) ∝ theta_x P(y_u | x)`` for every response and returns the
category counts.  Each draw costs ``O(|A| + log K)`` (expected) instead of ``O(K)``:
the part of the mass in ``A`` and at ``y_special`` is summed directly, and a draw
"outside" is a draw from ``theta`` by binary search on its cumulative sums, rejected
while it falls in ``A`` or on ``y_special`` (after 8 rejections it falls back to an
exact ``O(K)`` scan of the complement).  Random numbers come from the caller's
``numpy.random.Generator`` (``bitgen_t``, under its lock).
"""

import numpy as np

cimport numpy as cnp
from cpython.pycapsule cimport PyCapsule_GetPointer
from libc.math cimport log
from libc.stdint cimport int32_t, int64_t
from numpy.random cimport bitgen_t

cnp.import_array()


cdef bitgen_t* _bitgen(object generator) except NULL:
    capsule = generator.bit_generator.capsule
    return <bitgen_t*> PyCapsule_GetPointer(capsule, "BitGenerator")


cdef inline double _unif(bitgen_t* bg) noexcept nogil:
    return bg.next_double(bg.state)


cdef inline int _search(const double* cum, int K, double u) noexcept nogil:
    """Smallest x with cum[x + 1] > u (cum[0] = 0, cum[K] = total)."""
    cdef int lo = 0, hi = K - 1, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if cum[mid + 1] > u:
            hi = mid
        else:
            lo = mid + 1
    return lo


def latent_counts(object generator, const double[::1] theta, const int32_t[::1] a_ptr,
                  const int32_t[::1] a_idx, const int32_t[::1] g_y, const double[::1] f_in,
                  const double[::1] f_y, const double[::1] f_out, const int64_t[::1] g_cnt,
                  int64_t[::1] counts, int32_t[::1] stamp):
    """One sweep: counts[x] = number of latent categories equal to x over all responses.

    Parameters
    ----------
    generator : numpy.random.Generator
    theta : (K,) probabilities (entries may be 0).
    a_ptr, a_idx : CSR member lists of the sets ``A_g`` (``a_ptr`` of length ``G + 1``).
    g_y : (G,) special category of each group, ``-1`` for none (never a member of ``A_g``).
    f_in, f_y, f_out : (G,) likelihood values (only ratios matter).
    g_cnt : (G,) number of responses of each group.
    counts : (K,) output, overwritten.
    stamp : (K,) int32 scratch, must hold values ``< 0`` on entry (left so on return).
    """
    cdef int K = theta.shape[0]
    cdef Py_ssize_t G = g_cnt.shape[0], g
    cdef int64_t c, i
    cdef int x, y, j, tries, start, stop, mark
    cdef double tA, ty, wA, wy, wo, tot, u, acc, tout
    cdef double[::1] cumv = np.zeros(K + 1)
    cdef double* cum = &cumv[0]
    cdef bitgen_t* bg = _bitgen(generator)
    with generator.bit_generator.lock, nogil:
        for x in range(K):
            counts[x] = 0
            cum[x + 1] = cum[x] + theta[x]
        for g in range(G):
            c = g_cnt[g]
            if c <= 0:
                continue
            start = a_ptr[g]
            stop = a_ptr[g + 1]
            y = g_y[g]
            mark = <int>(g & 0x3FFFFFFF)
            tA = 0.0
            for j in range(start, stop):
                tA += theta[a_idx[j]]
                stamp[a_idx[j]] = mark
            ty = theta[y] if y >= 0 else 0.0
            tout = cum[K] - tA - ty
            if tout < 0.0:
                tout = 0.0
            wA = f_in[g] * tA
            wy = f_y[g] * ty
            wo = f_out[g] * tout
            tot = wA + wy + wo
            for i in range(c):
                u = _unif(bg) * tot
                if u < wA and stop > start:
                    u = u / f_in[g]
                    acc = 0.0
                    x = a_idx[stop - 1]
                    for j in range(start, stop):
                        acc += theta[a_idx[j]]
                        if acc > u:
                            x = a_idx[j]
                            break
                elif u < wA + wy and y >= 0:
                    x = y
                else:
                    x = -1
                    for tries in range(8):
                        x = _search(cum, K, _unif(bg) * cum[K])
                        if stamp[x] != mark and x != y and theta[x] > 0.0:
                            break
                        x = -1
                    if x < 0:  # exact scan of the complement
                        u = _unif(bg) * tout
                        acc = 0.0
                        for j in range(K):
                            if stamp[j] == mark or j == y or theta[j] <= 0.0:
                                continue
                            x = j
                            acc += theta[j]
                            if acc > u:
                                break
                        if x < 0:  # no mass outside (cannot happen with tot > 0): keep the set
                            x = a_idx[start] if stop > start else (y if y >= 0 else 0)
                counts[x] += 1
            for j in range(start, stop):
                stamp[a_idx[j]] = -1
    return counts


def expected_counts(const double[::1] theta, const int32_t[::1] a_ptr, const int32_t[::1] a_idx,
                    const int32_t[::1] g_y, const double[::1] f_in, const double[::1] f_y,
                    const double[::1] f_out, const int64_t[::1] g_cnt, double[::1] out):
    """E-step: ``out[x] = sum_g c_g theta_x P(y_g | x) / h_g(theta)``; returns the log-likelihood.

    ``O(K + sum_g |A_g|)``: the "outside" part ``theta_x sum_g c_g f_out_g / h_g`` is one
    scalar for all ``x``, corrected on the members of ``A_g`` and on ``y_g``.
    """
    cdef int K = theta.shape[0]
    cdef Py_ssize_t G = g_cnt.shape[0], g
    cdef int j, y
    cdef double tA, h, w, wout = 0.0, ll = 0.0
    with nogil:
        for j in range(K):
            out[j] = 0.0
        for g in range(G):
            if g_cnt[g] <= 0:
                continue
            y = g_y[g]
            tA = 0.0
            for j in range(a_ptr[g], a_ptr[g + 1]):
                tA += theta[a_idx[j]]
            h = f_out[g] * (1.0 - tA - (theta[y] if y >= 0 else 0.0)) + f_in[g] * tA
            if y >= 0:
                h += f_y[g] * theta[y]
            if not h > 0.0:
                h = 1e-300
            ll += g_cnt[g] * log(h)
            w = g_cnt[g] / h
            wout += w * f_out[g]
            for j in range(a_ptr[g], a_ptr[g + 1]):
                out[a_idx[j]] += w * (f_in[g] - f_out[g])
            if y >= 0:
                out[y] += w * (f_y[g] - f_out[g])
        for j in range(K):
            out[j] = theta[j] * (out[j] + wout)
    return ll
