# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Count / Count-Min sketch kernels: batched updates, touched cells of a query set, estimates.

All hashing follows :mod:`sklearn_bayes._fast._hashing`.  Tables are C-contiguous
``(depth, width)`` arrays of int64 (discrete noise) or float64 (continuous noise).
"""

import numpy as np

from libc.stdint cimport int8_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc

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


cdef inline double _median(const double* v, Py_ssize_t d) noexcept nogil:
    """Median (mean of the two middle values for even d) by branch-free ranks, O(d^2).

    For the small d of a sketch this beats sorting, whose branches mispredict on noisy
    data.  Ties are ranked by position, so the ranks are a permutation of 0..d-1.
    """
    cdef Py_ssize_t i, j, r, lo = (d - 1) // 2, hi = d // 2
    cdef double a = 0.0, b = 0.0, x
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
    gathered in blocks of 256, row by row (sequential reads of ``cols``).
    """
    cdef Py_ssize_t d = cols.shape[0], n = cols.shape[1], i, k, b = 0, m
    cdef double v, best
    cdef double* buf = <double*>malloc(256 * d * sizeof(double))
    cdef double* vals
    if buf == NULL:
        raise MemoryError()
    try:
        with nogil:
            while b < n:
                m = n - b if n - b < 256 else 256
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
