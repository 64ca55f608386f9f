# cython: language_level=3
"""Inline hashing primitives shared by the sketch kernels (see _hashing.pyx)."""

from libc.stdint cimport uint64_t, uint8_t

# 2**64 / golden ratio, the splitmix64 increment: 0x9E3779B97F4A7C15.
# Fixed seed of the byte-string key hash (part of the stable format; never change):
# 0x2545F4914F6CDD1D.  (Written as literals: assignments in a .pxd are not executed.)
cdef inline uint64_t GOLDEN() noexcept nogil:
    return 0x9E3779B97F4A7C15ULL


cdef inline uint64_t BYTES_SEED() noexcept nogil:
    return 0x2545F4914F6CDD1DULL


cdef inline uint64_t mix64(uint64_t z) noexcept nogil:
    """splitmix64 finalizer (Stafford's Mix13): a bijection of the 64-bit words."""
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef inline uint64_t load_le(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """Little-endian load of n <= 8 bytes (portable: independent of the platform's byte order)."""
    cdef uint64_t v = 0
    cdef Py_ssize_t k
    for k in range(n):
        v |= (<uint64_t>p[k]) << (8 * k)
    return v


cdef inline uint64_t hash_bytes(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """64-bit key of a byte string: a chain of mix64 over 8-byte little-endian blocks."""
    cdef uint64_t h = BYTES_SEED() ^ ((<uint64_t>n) * GOLDEN())
    cdef Py_ssize_t i = 0
    while i + 8 <= n:
        h = mix64(h ^ load_le(p + i, 8))
        i += 8
    h = mix64(h ^ load_le(p + i, n - i) ^ GOLDEN())
    return h


cdef inline uint64_t row_hash(uint64_t premixed, uint64_t row_seed) noexcept nogil:
    """Row hash ``h_i(x) = ((mix64(key) ^ s_i) * (s_i | 1)) mod 2**64``; ``premixed`` is ``mix64(key)``.

    Multiply-shift hashing (Dietzfelbinger et al. 1997) of the premixed key: with a random
    odd multiplier the high bits form a universal family, and the rows' seeds are
    independent.  The XOR with the seed removes the fixed point ``premixed = 0``.  One
    multiplication per row keeps the update loop cheap.
    """
    return (premixed ^ row_seed) * (row_seed | 1)


cdef inline Py_ssize_t hash_column(uint64_t h, uint64_t width) noexcept nogil:
    """Column in [0, width) from the high 32 bits (Lemire's multiply-shift range reduction)."""
    return <Py_ssize_t>(((h >> 32) * width) >> 32)


cdef inline int hash_sign(uint64_t h) noexcept nogil:
    """Sign in {-1, +1} from bit 31 (the column uses bits 32..63)."""
    return <int>((h >> 30) & 2) - 1
