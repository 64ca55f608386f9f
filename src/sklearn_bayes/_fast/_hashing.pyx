# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Seeded, stable 64-bit hashing of stream items for the sketches.

The format is part of the package's contract (sketches built on different machines or
package versions must agree, e.g. to be merged), pinned by known-answer tests:

* an item's 64-bit *key*: the two's-complement value of an int64 item; for a byte string
  (str items are UTF-8 encoded) a chain of splitmix64 finalizers over 8-byte
  little-endian blocks (:func:`bytes_keys`); several columns are combined with
  :func:`combine_keys`;
* row seeds ``s_i`` = splitmix64 outputs of the state ``hash_seed + i * GOLDEN``
  (:func:`row_seeds`);
* row hash ``h_i(x) = (mix64(key) ^ s_i) * (s_i | 1) mod 2**64`` (multiply-shift); column
  ``((h >> 32) * w) >> 32``; sign ``+1`` if bit 31 of ``h`` is set, else ``-1``.

Python's ``hash()`` is never used (it is salted per process for str and bytes).
"""

import numpy as np

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from libc.stdint cimport int8_t, int64_t, uint8_t, uint64_t

from sklearn_bayes._fast._hashing cimport GOLDEN, hash_bytes, hash_column, hash_sign, mix64, row_hash



def splitmix64_mix(x):
    """The splitmix64 finalizer of a Python int taken modulo 2**64 (for tests)."""
    cdef uint64_t z = <uint64_t>(int(x) % (1 << 64))
    return int(mix64(z))


def row_seeds(hash_seed, Py_ssize_t depth):
    """Per-row 64-bit seeds derived from ``hash_seed`` (any Python int, taken modulo 2**64)."""
    cdef uint64_t state = <uint64_t>(int(hash_seed) % (1 << 64))
    out = np.empty(depth, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    cdef Py_ssize_t i
    for i in range(depth):
        state = state + GOLDEN()
        o[i] = mix64(state)
    return out


def bytes_keys(object[:] items):
    """64-bit keys of an object array of ``str`` (UTF-8 encoded) or ``bytes`` items.

    The caller has checked the types; anything else raises ``TypeError``.
    """
    cdef Py_ssize_t n = items.shape[0], k
    cdef Py_ssize_t size
    cdef const char* buf
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    cdef object item
    for k in range(n):
        item = items[k]
        if type(item) is str:
            buf = PyUnicode_AsUTF8AndSize(item, &size)
        elif type(item) is bytes:
            buf = PyBytes_AS_STRING(item)
            size = PyBytes_GET_SIZE(item)
        elif isinstance(item, str):
            buf = PyUnicode_AsUTF8AndSize(item, &size)
        elif isinstance(item, bytes):
            buf = PyBytes_AS_STRING(item)
            size = PyBytes_GET_SIZE(item)
        else:
            raise TypeError(f"expected str or bytes items, got {type(item).__name__}")
        o[k] = hash_bytes(<const uint8_t*>buf, size)
    return out


def combine_keys(const uint64_t[::1] acc, const uint64_t[::1] col):
    """Key of a composite item (one row of several columns): ``mix64(acc ^ mix64(col + GOLDEN))``."""
    cdef Py_ssize_t n = acc.shape[0], k
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    with nogil:
        for k in range(n):
            o[k] = mix64(acc[k] ^ mix64(col[k] + GOLDEN()))
    return out


def locate(const uint64_t[::1] keys, const uint64_t[::1] seeds, Py_ssize_t width,
           int64_t[:, ::1] cols, int8_t[:, ::1] signs):
    """Fill ``cols[i, k] = h_i(keys[k])`` and ``signs[i, k] = s_i(keys[k])`` (shape (depth, n))."""
    cdef Py_ssize_t n = keys.shape[0], d = seeds.shape[0], i, k
    cdef uint64_t pre, h
    cdef uint64_t w = <uint64_t>width
    with nogil:
        for k in range(n):
            pre = mix64(keys[k])
            for i in range(d):
                h = row_hash(pre, seeds[i])
                cols[i, k] = hash_column(h, w)
                signs[i, k] = <int8_t>hash_sign(h)
