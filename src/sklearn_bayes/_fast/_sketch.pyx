# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Count / Count-Min sketch kernels: batched updates, touched cells of a query set, estimates.

All hashing follows :mod:`sklearn_bayes._fast._hashing`.  Tables are C-contiguous
``(depth, width)`` arrays of int64 (discrete noise) or float64 (continuous noise).
"""

import numpy as np

from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid
from libc.stdint cimport int8_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from numpy.random cimport bitgen_t

from sklearn_bayes._fast._hashing cimport hash_column, hash_sign, mix64, row_hash


ctypedef fused cell_t:
    int64_t
    double

ctypedef fused key_t:
    uint32_t
    uint64_t


cdef void _update_range(cell_t[:, ::1] table, const key_t[::1] keys, Py_ssize_t lo, Py_ssize_t hi,
                        const uint64_t[::1] seeds, bint signed) noexcept nogil:
    """Add ``keys[lo:hi]``: blocks of 512 items, premixed once, then swept row by row.

    For a power-of-two width ``2^k`` the column ``((h >> 32) * w) >> 32`` equals
    ``h >> (64 - k)``, which saves a multiplication (same hash format).
    """
    cdef Py_ssize_t d = table.shape[0], i, k, b = lo, m
    cdef uint64_t w = <uint64_t>table.shape[1]
    cdef uint64_t h, a
    cdef uint64_t pre[512]
    cdef cell_t* row
    cdef int shift = 64
    cdef bint pow2 = w > 1 and (w & (w - 1)) == 0
    if pow2:
        while ((<uint64_t>1) << (64 - shift)) < w:
            shift -= 1
    while b < hi:
        m = hi - b if hi - b < 512 else 512
        for k in range(m):
            pre[k] = mix64(<uint64_t>keys[b + k])
        for i in range(d):
            row = &table[i, 0]
            a = seeds[i]
            if signed and pow2:
                for k in range(m):
                    h = row_hash(pre[k], a)
                    row[h >> shift] += hash_sign(h)
            elif signed:
                for k in range(m):
                    h = row_hash(pre[k], a)
                    row[hash_column(h, w)] += hash_sign(h)
            elif pow2:
                for k in range(m):
                    row[row_hash(pre[k], a) >> shift] += 1
            else:
                for k in range(m):
                    row[hash_column(row_hash(pre[k], a), w)] += 1
        b += m


def update(cell_t[:, ::1] table, const uint64_t[::1] keys, const uint64_t[::1] seeds, bint signed):
    """Add the items with the given keys: ``C[i, h_i(x)] += s_i(x)`` (Count) or ``+= 1`` (Count-Min).

    Items are processed in blocks of 512: premix the block, then sweep it row by row, so
    that one row of the table stays in cache during the sweep.
    """
    with nogil:
        _update_range(table, keys, 0, keys.shape[0], seeds, signed)


def distinct_cells(const int64_t[:, ::1] cols, Py_ssize_t width):
    """Flat indices ``i * width + j`` of the distinct cells touched by a query set, in first-touch order.

    ``cols`` has shape (depth, n).  Each cell appears once, which is how a query set
    noises every touched cell at most once.
    """
    cdef Py_ssize_t d = cols.shape[0], n = cols.shape[1], i, k, m = 0
    cdef int64_t flat
    mask_arr = np.zeros(d * width, dtype=np.uint8)
    out_arr = np.empty(min(d * n, d * width), dtype=np.int64)
    cdef uint8_t[::1] mask = mask_arr
    cdef int64_t[::1] out = out_arr
    with nogil:
        for k in range(n):
            for i in range(d):
                flat = i * width + cols[i, k]
                if not mask[flat]:
                    mask[flat] = 1
                    out[m] = flat
                    m += 1
    return out_arr[:m]


cdef inline double _select(double* v, Py_ssize_t n, Py_ssize_t k) noexcept nogil:
    """The ``k``-th smallest of ``v[0..n-1]`` (0-based), reordering ``v`` in place.

    Hoare's quickselect with the median of three as pivot: expected O(n); for the
    adversarial inputs that make it quadratic the sketch's depth is bounded anyway.
    """
    cdef Py_ssize_t lo = 0, hi = n - 1, i, j, mid
    cdef double pivot, tmp
    while hi > lo:
        mid = lo + (hi - lo) // 2
        # order v[lo] <= v[mid] <= v[hi]; the pivot is the middle one
        if v[mid] < v[lo]:
            tmp = v[mid]; v[mid] = v[lo]; v[lo] = tmp
        if v[hi] < v[lo]:
            tmp = v[hi]; v[hi] = v[lo]; v[lo] = tmp
        if v[hi] < v[mid]:
            tmp = v[hi]; v[hi] = v[mid]; v[mid] = tmp
        pivot = v[mid]
        i = lo
        j = hi
        while i <= j:
            while v[i] < pivot:
                i += 1
            while pivot < v[j]:
                j -= 1
            if i <= j:
                tmp = v[i]; v[i] = v[j]; v[j] = tmp
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return v[k]
    return v[k]


cdef inline double _median(double* v, Py_ssize_t d) noexcept nogil:
    """Median of ``v[0..d-1]`` (mean of the two middle values for even d); reorders ``v``.

    Small d (the usual sketch): branch-free ranks, O(d^2), which beats sorting because
    its branches mispredict on noisy data.  Larger d: quickselect, expected O(d) (the
    second middle value of an even d is the minimum of the upper part, O(d)).
    """
    cdef Py_ssize_t i, j, r, lo = (d - 1) // 2, hi = d // 2
    cdef double a = 0.0, b = 0.0, x
    if d > 32:
        a = _select(v, d, lo)
        if lo == hi:
            return a
        b = v[hi]
        for i in range(hi + 1, d):
            if v[i] < b:
                b = v[i]
        return 0.5 * (a + b)
    for i in range(d):
        x = v[i]
        r = 0
        for j in range(i):
            r += v[j] <= x
        for j in range(i + 1, d):
            r += v[j] < x
        if r == lo:
            a = x
        if r == hi:
            b = x
    return a if lo == hi else 0.5 * (a + b)


def estimate(const cell_t[:, ::1] table, const int64_t[:, ::1] cols, const int8_t[:, ::1] signs,
             bint median, double[::1] out):
    """Per item: median of ``s_i(x) C[i, h_i(x)]`` (Count) or minimum of ``C[i, h_i(x)]`` (Count-Min).

    The median of an even number of rows is the mean of the two middle values.  Items are
    gathered in blocks of up to 256 (at most 32768 values), row by row (sequential reads of
    ``cols``).
    """
    cdef Py_ssize_t d = cols.shape[0], n = cols.shape[1], i, k, b = 0, m
    # items per block: 256, fewer for deep sketches so that the block (blk * d doubles) stays in L2
    cdef Py_ssize_t blk = max(1, min(256, 32768 // d))
    cdef double v, best
    cdef double* buf = <double*>malloc(blk * d * sizeof(double))
    cdef double* vals
    if buf == NULL:
        raise MemoryError()
    try:
        with nogil:
            while b < n:
                m = n - b if n - b < blk else blk
                for i in range(d):
                    for k in range(m):
                        v = <double>table[i, cols[i, b + k]]
                        buf[k * d + i] = signs[i, b + k] * v if median else v
                for k in range(m):
                    vals = buf + k * d
                    if median:
                        out[b + k] = _median(vals, d)
                    else:
                        best = vals[0]
                        for i in range(1, d):
                            if vals[i] < best:
                                best = vals[i]
                        out[b + k] = best
                b += m
    finally:
        free(buf)


def simulate_use_and_keep(cell_t[:, ::1] table, const uint64_t[::1] seeds, bint signed,
                          const key_t[::1] stream, const int64_t[::1] query_times,
                          const uint64_t[::1] query_keys, const int64_t[::1] query_offsets,
                          const cell_t[::1] noise, int64_t[::1] stamps, int64_t stamp0,
                          Py_ssize_t start, double[::1] out, int64_t[::1] exact, double[::1] truth):
    """Event loop of Algorithm 6 for experiments: stream updates interleaved with query sets.

    ``stream`` holds uint64 keys, or uint32 keys (non-negative int32 items, half the
    memory of long streams).  Query set ``q`` (keys ``query_keys[query_offsets[q]:query_offsets[q + 1]]``) is
    answered after the stream prefix ``stream[:query_times[q]]`` has been added
    (``start`` items were added before the call).  Each distinct cell touched by a set
    receives the next value of ``noise`` once; ``stamps`` (``depth * width``) holds the
    id of the last set that noised a cell, sets being numbered from ``stamp0``.
    Estimates go to ``out`` (aligned with ``query_keys``).  ``exact`` holds the exact
    counts of the keys ``0 .. len(exact) - 1`` (updated with the stream; larger keys are
    not tracked) and ``truth`` receives the exact count of each query key (-1 if
    untracked).  Returns
    ``(stream position, number of noise values consumed)``; raises if ``noise`` runs out.
    """
    cdef Py_ssize_t d = table.shape[0], n_sets = query_times.shape[0]
    cdef uint64_t w = <uint64_t>table.shape[1]
    cdef Py_ssize_t pos = start, q, k, i, t, used = 0, n_noise = noise.shape[0]
    cdef Py_ssize_t j, flat, n_exact = exact.shape[0]
    cdef uint64_t pre, h
    cdef double v, best
    cdef int sgn
    cdef bint exhausted = False
    cdef double* buf = <double*>malloc(d * sizeof(double))
    if buf == NULL:
        raise MemoryError()
    try:
        with nogil:
            for q in range(n_sets):
                t = query_times[q]
                if t > pos:
                    for i in range(pos, t):
                        if <uint64_t>stream[i] < <uint64_t>n_exact:
                            exact[<Py_ssize_t>stream[i]] += 1
                    _update_range(table, stream, pos, t, seeds, signed)
                    pos = t
                for k in range(query_offsets[q], query_offsets[q + 1]):
                    truth[k] = exact[query_keys[k]] if query_keys[k] < <uint64_t>n_exact else -1.0
                    pre = mix64(query_keys[k])
                    for i in range(d):
                        h = row_hash(pre, seeds[i])
                        j = hash_column(h, w)
                        flat = i * <Py_ssize_t>w + j
                        if stamps[flat] != stamp0 + q:
                            if used >= n_noise:
                                exhausted = True
                                break
                            stamps[flat] = stamp0 + q
                            table[i, j] += noise[used]
                            used += 1
                        sgn = hash_sign(h) if signed else 1
                        buf[i] = sgn * <double>table[i, j]
                    if exhausted:
                        break
                    if signed:
                        out[k] = _median(buf, d)
                    else:
                        best = buf[0]
                        for i in range(1, d):
                            if buf[i] < best:
                                best = buf[i]
                        out[k] = best
                if exhausted:
                    break
    finally:
        free(buf)
    if exhausted:
        raise ValueError("noise buffer exhausted")
    return pos, used


# --------------------------------------------------------------------------------------
# exact discrete Laplace sampling (Canonne, Kamath and Steinke 2020, Algorithm 2)
# --------------------------------------------------------------------------------------


cdef inline uint64_t _uniform_below(bitgen_t* bg, uint64_t n) noexcept nogil:
    """Uniform integer in ``{0, ..., n - 1}`` (``n >= 1``) by masked rejection: exact, unbiased."""
    cdef uint64_t mask = n - 1, r
    if mask == 0:
        return 0
    mask |= mask >> 1
    mask |= mask >> 2
    mask |= mask >> 4
    mask |= mask >> 8
    mask |= mask >> 16
    mask |= mask >> 32
    while True:
        r = bg.next_uint64(bg.state) & mask
        if r < n:
            return r


cdef inline bint _bernoulli_exp(bitgen_t* bg, uint64_t num, uint64_t den) noexcept nogil:
    """Exact ``Bernoulli(exp(-num/den))`` for ``0 <= num <= den`` (CKS 2020, Algorithm 1).

    Draw ``A_k ~ Bernoulli(γ/k)`` for ``k = 1, 2, ...`` until the first failure; the
    index ``K`` of that failure is odd with probability ``exp(-γ)``.  Each ``A_k`` is an
    exact comparison of a uniform integer below ``k * den`` with ``num``.  ``K`` exceeds
    64 with probability below ``1/64!``; beyond that (``k * den`` could overflow) the
    draw stops there: each ratio ``P(k)/P(k+1)`` of the discrete Laplace built on it moves
    off ``e^{1/b}`` by at most ``1.4e-87`` nats (``1/64! = 7.9e-90`` is a double: small, not
    unrepresentable).
    """
    cdef uint64_t k = 1
    while k < 64:
        if _uniform_below(bg, k * den) >= num:
            return k & 1
        k += 1
    return k & 1


cdef inline bint _discrete_laplace_one(bitgen_t* bg, uint64_t s, int shift, int64_t* out) noexcept nogil:
    """One draw of scale ``s / 2**shift``; returns False to ask for a retry (the output is unset)."""
    cdef uint64_t u, v = 0, x, y
    u = _uniform_below(bg, s)                      # U uniform on {0..s-1}
    if not _bernoulli_exp(bg, u, s):               # ... accepted w.p. exp(-U/s)
        return False
    while _bernoulli_exp(bg, 1, 1):                # V ~ Geometric: P(V = v) ∝ e^{-v}
        v += 1
        if v > (<uint64_t>0x7FFFFFFFFFFFFFFF - u) // s:
            return False                           # X would leave int64: probability < e^{-128}
    x = u + s * v                                  # X geometric with ratio e^{-1/s}
    y = x >> shift if shift < 64 else 0            # floor(X / 2^shift): ratio e^{-2^shift/s}
    if bg.next_uint64(bg.state) & 1:               # the sign; -0 is rejected (else 0 counted twice)
        if y == 0:
            return False
        out[0] = -<int64_t>y
    else:
        out[0] = <int64_t>y
    return True


def discrete_laplace(object bit_generator, const uint64_t[::1] numer, const int64_t[::1] shift, int64_t[::1] out):
    """Fill ``out`` with exact discrete Laplace draws of scales ``numer[k] / 2**shift[k]``.

    ``P(Z = z) ∝ exp(-|z| / b)`` with ``b = numer / 2**shift``: a geometric ``X`` with
    ratio ``exp(-1/numer)`` is built as ``U + numer * V`` (``U`` uniform below
    ``numer`` accepted with probability ``exp(-U/numer)``, ``V`` geometric with ratio
    ``e^{-1}``), ``Y = floor(X / 2**shift)`` is geometric with ratio ``exp(-1/b)``, and
    a random sign is attached, rejecting ``-0``.  Only uniform integers from the bit
    generator are used (no floating point), for ``1 <= numer < 2**57``.  Exact up to: the
    Bernoulli series cut at 64 terms (``<= 1.4e-87`` nats on each ratio) and ``X`` kept in
    int64, which conditions ``|Y| <= (2**63 - 1) >> shift`` (0 below ``b = 2**-10``: the
    callers refuse such scales, ``check_noise_scale``).  ``numer`` and ``shift`` have
    length 1 (one scale for all) or ``len(out)``.
    """
    cdef Py_ssize_t n = out.shape[0], k, kn = 0 if numer.shape[0] == 1 else 1
    cdef Py_ssize_t ks = 0 if shift.shape[0] == 1 else 1
    cdef bitgen_t* bg
    capsule = bit_generator.capsule
    if not PyCapsule_IsValid(capsule, "BitGenerator"):
        raise ValueError("invalid bit generator capsule")
    bg = <bitgen_t*>PyCapsule_GetPointer(capsule, "BitGenerator")
    with bit_generator.lock, nogil:
        for k in range(n):
            while not _discrete_laplace_one(bg, numer[k * kn], <int>shift[k * ks], &out[k]):
                pass
