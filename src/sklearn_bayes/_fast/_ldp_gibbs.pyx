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
from libc.stdint cimport int32_t, int64_t, uint8_t
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


cdef inline bint _member(const int32_t* a, int lo, int hi, int x) noexcept nogil:
    """Whether ``x`` is in the sorted ``a[lo:hi]`` (binary search)."""
    cdef int stop = hi, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo < stop and a[lo] == x


cdef void _alias_table(const double* theta, int K, double total, double* prob, int32_t* alias,
                       int32_t* work) noexcept nogil:
    """Walker's alias table of ``theta / total`` (Vose's construction, O(K)): a draw is
    ``i = floor(K U)``, kept if ``frac(K U) < prob[i]``, else ``alias[i]``."""
    cdef int i, s, l, n_small = 0, n_large = K
    for i in range(K):
        prob[i] = theta[i] * K / total
        alias[i] = i
    # work[0:n_small] small indices (from the front), work[n_large:K] large (from the back)
    for i in range(K):
        if prob[i] < 1.0:
            work[n_small] = i
            n_small += 1
        else:
            n_large -= 1
            work[n_large] = i
    while n_small > 0 and n_large < K:
        n_small -= 1
        s = work[n_small]
        l = work[n_large]
        alias[s] = l
        prob[l] = (prob[l] + prob[s]) - 1.0
        if prob[l] < 1.0:
            n_large += 1
            work[n_small] = l
            n_small += 1
    while n_large < K:  # rounding leftovers: probability 1
        prob[work[n_large]] = 1.0
        n_large += 1
    while n_small > 0:
        n_small -= 1
        prob[work[n_small]] = 1.0


cdef inline int _alias_draw(bitgen_t* bg, const double* prob, const int32_t* alias, int K) noexcept nogil:
    cdef double u = _unif(bg) * K
    cdef int i = <int>u
    if i >= K:
        i = K - 1
    return i if u - i < prob[i] else alias[i]


cdef inline bint _in_set(const uint8_t* brow, const int32_t* a, int lo, int hi, int x) noexcept nogil:
    """``x in A``: a bit test when the set's bit row is given, else a binary search."""
    if brow != NULL:
        return (brow[x >> 3] >> (x & 7)) & 1
    return _member(a, lo, hi, x)


cdef inline bint _bit(const uint8_t* row, int x) noexcept nogil:
    return (row[x >> 3] >> (x & 7)) & 1


cdef double _bits_sum(const uint8_t* row, int K, const double* theta) noexcept nogil:
    """``sum theta`` over the members of a little-endian bit row, in increasing order (as a sorted CSR list)."""
    cdef int b, x, stop
    cdef double t = 0.0
    for b in range((K + 7) >> 3):
        if row[b] == 0:
            continue
        stop = b * 8 + 8
        if stop > K:
            stop = K
        for x in range(b * 8, stop):
            if (row[b] >> (x & 7)) & 1:
                t += theta[x]
    return t


cdef int _bits_pick(const uint8_t* row, int K, const double* theta, double u) noexcept nogil:
    """The first member whose cumulative ``theta`` (increasing order) exceeds ``u``; else the last member."""
    cdef int b, x, stop, last = -1
    cdef double acc = 0.0
    for b in range((K + 7) >> 3):
        if row[b] == 0:
            continue
        stop = b * 8 + 8
        if stop > K:
            stop = K
        for x in range(b * 8, stop):
            if (row[b] >> (x & 7)) & 1:
                last = x
                acc += theta[x]
                if acc > u:
                    return x
    return last


cdef void _bits_add(const uint8_t* row, int K, double* out, double w) noexcept nogil:
    """``out[x] += w`` for every member, in increasing order."""
    cdef int b, x, stop
    for b in range((K + 7) >> 3):
        if row[b] == 0:
            continue
        stop = b * 8 + 8
        if stop > K:
            stop = K
        for x in range(b * 8, stop):
            if (row[b] >> (x & 7)) & 1:
                out[x] += w


cdef enum:
    _REJECT_MIN_SET = 16  # sets larger than this are sampled by rejection from theta first (no O(|A|) work)
    _REJECT_TRIES = 8  # proposals from theta per latent category before the exact O(|A|) draw


cdef void _latent_core(bitgen_t* bg, const double* theta, int K, Py_ssize_t G, const int32_t* a_ptr,
                       const int32_t* A, const int32_t* g_y, const double* f_in, const double* f_y,
                       const double* f_out, const int64_t* g_cnt, int64_t* counts, int32_t* stamp,
                       const uint8_t* bits, Py_ssize_t bits_stride, bint use_bits, bint from_bits, double* cum,
                       double* prob, int32_t* alias, int32_t* work) noexcept nogil:
    """The sweep of :func:`latent_counts` on raw pointers (``cum``: ``K + 1`` zeros-initialised scratch whose
    ``cum[0]`` is 0; ``prob``, ``alias``, ``work``: ``K`` scratch; ``stamp``: ``K`` entries ``< 0``, left so).
    Shared with ``_ldp_hybrid.hybrid_block``'s per-response branch (the same draws from ``bg``); the caller
    holds the generator's lock."""
    cdef Py_ssize_t g
    cdef int64_t c, i
    cdef int x, y, j, tries, start, stop, mark
    cdef int64_t big = 0
    cdef bint direct, have_t, accepted, need_alias
    cdef double tA = 0.0, ty = 0.0, wA = 0.0, wy = 0.0, wo = 0.0, tot = 0.0, u, acc, tout = 0.0
    cdef double fin, fy, fo, fmax, f
    cdef const uint8_t* brow = NULL
    cum[0] = 0.0
    for x in range(K):
        counts[x] = 0
        cum[x + 1] = cum[x] + theta[x]
    # rejection (and its O(K) alias table) only when the sets it spares outweigh the table
    for g in range(G):
        if a_ptr[g + 1] - a_ptr[g] > _REJECT_MIN_SET and g_cnt[g] > 0:
            big += a_ptr[g + 1] - a_ptr[g]
    need_alias = big > K
    if need_alias and cum[K] > 0.0:
        _alias_table(theta, K, cum[K], prob, alias, work)
    for g in range(G):
        c = g_cnt[g]
        if c <= 0:
            continue
        start = a_ptr[g]
        stop = a_ptr[g + 1]
        y = g_y[g]
        fin = f_in[g]
        fo = f_out[g]
        fy = f_y[g] if y >= 0 else 0.0
        fmax = fin if fin > fo else fo
        if fy > fmax:
            fmax = fy
        direct = stop - start <= _REJECT_MIN_SET or not fmax > 0.0 or not cum[K] > 0.0 or not need_alias
        if use_bits:
            brow = bits + g * bits_stride
        mark = <int>(g & 0x3FFFFFFF)
        have_t = False
        for i in range(c):
            if not direct:
                accepted = False
                for tries in range(_REJECT_TRIES):
                    x = _alias_draw(bg, prob, alias, K)
                    if not theta[x] > 0.0:  # (a rounding leftover of the table)
                        f = 0.0
                    elif x == y:
                        f = fy
                    elif _in_set(brow, A, start, stop, x):
                        f = fin
                    else:
                        f = fo
                    if _unif(bg) * fmax < f:
                        accepted = True
                        break
                if accepted:
                    counts[x] += 1
                    continue
            if not have_t:  # the exact draw: sum theta over the set once, stamp its members
                tA = 0.0
                if from_bits:  # membership is a bit test: nothing to stamp
                    tA = _bits_sum(brow, K, theta)
                else:
                    for j in range(start, stop):
                        tA += theta[A[j]]
                        stamp[A[j]] = mark
                ty = theta[y] if y >= 0 else 0.0
                tout = cum[K] - tA - ty
                if tout < 0.0:
                    tout = 0.0
                wA = fin * tA
                wy = fy * ty
                wo = fo * tout
                tot = wA + wy + wo
                have_t = True
            u = _unif(bg) * tot
            if u < wA and stop > start:
                u = u / fin
                if from_bits:
                    x = _bits_pick(brow, K, theta, u)
                else:
                    acc = 0.0
                    x = A[stop - 1]
                    for j in range(start, stop):
                        acc += theta[A[j]]
                        if acc > u:
                            x = A[j]
                            break
            elif u < wA + wy and y >= 0:
                x = y
            else:
                x = -1
                for tries in range(8):
                    x = _search(cum, K, _unif(bg) * cum[K])
                    if x != y and theta[x] > 0.0 and not (_bit(brow, x) if from_bits else stamp[x] == mark):
                        break
                    x = -1
                if x < 0:  # exact scan of the complement
                    u = _unif(bg) * tout
                    acc = 0.0
                    for j in range(K):
                        if j == y or theta[j] <= 0.0 or (_bit(brow, j) if from_bits else stamp[j] == mark):
                            continue
                        x = j
                        acc += theta[j]
                        if acc > u:
                            break
                    if x < 0:  # no mass outside (cannot happen with tot > 0): keep the set
                        if stop > start:
                            x = _bits_pick(brow, K, theta, -1.0) if from_bits else A[start]
                        else:
                            x = y if y >= 0 else 0
            counts[x] += 1
        if have_t and not from_bits:
            for j in range(start, stop):
                stamp[A[j]] = -1


def latent_counts(object generator, const double[::1] theta, const int32_t[::1] a_ptr,
                  const int32_t[::1] a_idx, const int32_t[::1] g_y, const double[::1] f_in,
                  const double[::1] f_y, const double[::1] f_out, const int64_t[::1] g_cnt,
                  int64_t[::1] counts, int32_t[::1] stamp=None, const uint8_t[:, ::1] bits=None):
    """One sweep: counts[x] = number of latent categories equal to x over all responses.

    Parameters
    ----------
    generator : numpy.random.Generator
    theta : (K,) probabilities (entries may be 0).
    a_ptr, a_idx : CSR member lists of the sets ``A_g`` (``a_ptr`` of length ``G + 1``),
        each sorted increasingly (:class:`~sklearn_bayes.privacy._ldp._posterior.Groups`
        guarantees it).
    g_y : (G,) special category of each group, ``-1`` for none (never a member of ``A_g``).
    f_in, f_y, f_out : (G,) likelihood values (only ratios matter).
    g_cnt : (G,) number of responses of each group.
    counts : (K,) output, overwritten.
    stamp : (K,) int32 scratch, optional
        Must hold values ``< 0`` on entry (left so on return); allocated if ``None``.
    bits : (G, ceil(K / 8)) uint8, optional
        The sets as bit rows (bit ``x & 7`` of byte ``x >> 3``, ``numpy.packbits(...,
        bitorder='little')``): ``O(1)`` membership tests instead of binary searches.  When
        ``a_idx`` holds fewer than ``a_ptr[G]`` entries the members are read from the bits
        only (``a_ptr`` still gives the set sizes), in increasing order: the same draws as
        with the member lists, at ``K / 8`` bytes per set instead of 4 bytes per member.

    Notes
    -----
    Each latent category of a group with ``|A_g| > 16`` is first proposed from
    ``theta`` and accepted with probability ``f(x) / max f`` (membership from ``bits``,
    or by binary search in the sorted set): an accepted proposal is an exact draw from
    ``p(x | y_g, theta) ∝ theta_x f(x)`` at ``O(1)`` per proposal (Walker's alias table
    of ``theta``, built once per sweep in ``O(K)``) instead of ``O(|A|)`` per response
    (subset selection at ``K = 1000`` has ``|A| ~ 270`` and one response per set).  It
    is used when those sets hold more than ``K`` members in all (else the table costs
    more than it saves).  After 8 rejections the draw is the exact one below
    (independent of the rejected proposals, so the mixture is still exact).  Smaller
    sets, and the fallback, sum ``theta`` over ``A_g`` once per group (stamping its
    members) and draw directly: inside ``A_g`` by a scan, at ``y_g``, or outside by
    proposals from ``theta`` rejected while in ``A_g`` or at ``y_g`` (after 8
    rejections an exact scan of the complement).
    """
    cdef int K = theta.shape[0]
    cdef Py_ssize_t G = g_cnt.shape[0]
    cdef double[::1] cumv = np.zeros(K + 1)
    cdef double[::1] probv = np.zeros(K)
    cdef int32_t[::1] aliasv = np.zeros(K, dtype=np.int32)
    cdef int32_t[::1] workv = np.zeros(K, dtype=np.int32)
    cdef const int32_t* A = &a_idx[0] if a_idx.shape[0] else NULL
    cdef bint use_bits = bits is not None
    cdef bint from_bits = use_bits and a_idx.shape[0] < a_ptr[G]
    cdef const uint8_t* bptr = NULL
    cdef Py_ssize_t stride = 0
    cdef bitgen_t* bg = _bitgen(generator)
    if stamp is None:
        stamp = np.full(K, -1, dtype=np.int32)
    if stamp.shape[0] < K:
        raise ValueError(f"stamp must have at least {K} entries, got {stamp.shape[0]}.")
    if use_bits and (bits.shape[0] != G or bits.shape[1] < (K + 7) // 8):
        raise ValueError(f"bits must have shape ({G}, {(K + 7) // 8}), got ({bits.shape[0]}, {bits.shape[1]}).")
    if not from_bits and a_idx.shape[0] < a_ptr[G]:
        raise ValueError("a_idx holds fewer members than a_ptr counts and no bits were given.")
    if use_bits and G > 0:
        bptr = &bits[0, 0]
        stride = bits.strides[0]
    with generator.bit_generator.lock, nogil:
        _latent_core(bg, &theta[0], K, G, &a_ptr[0], A, &g_y[0] if G else NULL, &f_in[0] if G else NULL,
                     &f_y[0] if G else NULL, &f_out[0] if G else NULL, &g_cnt[0] if G else NULL, &counts[0],
                     &stamp[0], bptr, stride, use_bits, from_bits, &cumv[0], &probv[0], &aliasv[0], &workv[0])
    return counts


def expected_counts(const double[::1] theta, const int32_t[::1] a_ptr, const int32_t[::1] a_idx,
                    const int32_t[::1] g_y, const double[::1] f_in, const double[::1] f_y,
                    const double[::1] f_out, const int64_t[::1] g_cnt, double[::1] out,
                    const uint8_t[:, ::1] bits=None):
    """E-step: ``out[x] = sum_g c_g theta_x P(y_g | x) / h_g(theta)``; returns the log-likelihood.

    ``O(K + sum_g |A_g|)``: the "outside" part ``theta_x sum_g c_g f_out_g / h_g`` is one
    scalar for all ``x``, corrected on the members of ``A_g`` and on ``y_g``.  ``bits``: the
    sets as little-endian bit rows, read instead of the member lists when ``a_idx`` holds
    fewer than ``a_ptr[G]`` entries (see :func:`latent_counts`; same arithmetic order).
    """
    cdef int K = theta.shape[0]
    cdef Py_ssize_t G = g_cnt.shape[0], g
    cdef int j, y
    cdef double tA, h, w, wout = 0.0, ll = 0.0
    cdef bint from_bits = bits is not None and a_idx.shape[0] < a_ptr[G]
    if not from_bits and a_idx.shape[0] < a_ptr[G]:
        raise ValueError("a_idx holds fewer members than a_ptr counts and no bits were given.")
    if from_bits and (bits.shape[0] != G or bits.shape[1] < (K + 7) // 8):
        raise ValueError(f"bits must have shape ({G}, {(K + 7) // 8}).")
    with nogil:
        for j in range(K):
            out[j] = 0.0
        for g in range(G):
            if g_cnt[g] <= 0:
                continue
            y = g_y[g]
            tA = 0.0
            if from_bits:
                tA = _bits_sum(&bits[g, 0], K, &theta[0])
            else:
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
            if from_bits:
                _bits_add(&bits[g, 0], K, &out[0], w * (f_in[g] - f_out[g]))
            else:
                for j in range(a_ptr[g], a_ptr[g + 1]):
                    out[a_idx[j]] += w * (f_in[g] - f_out[g])
            if y >= 0:
                out[y] += w * (f_y[g] - f_out[g])
        for j in range(K):
            out[j] = theta[j] * (out[j] + wout)
    return ll
