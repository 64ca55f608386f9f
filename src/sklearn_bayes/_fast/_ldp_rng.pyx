# cython: language_level=3
"""Standard normals for the LDP kernels: the Marsaglia-Tsang ziggurat (128 layers).

Declared in ``_ldp_rng.pxd`` (with the inline ``_Rng`` helpers) and cimported by
``_ldp.pyx`` (SGLD) and ``_ldp_mala.pyx`` (MALA), so both draw the same normals from
the same 64-bit words: the layer from the low 7 bits, the signed value from the high 32.
"""

from libc.math cimport exp, log, sqrt
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t


cdef uint32_t _KN[128]
cdef double _WN[128]
cdef double _FN[128]


cdef void _zigset() noexcept:
    cdef double m1 = 2147483648.0
    cdef double dn = 3.442619855899, tn = 3.442619855899, vn = 9.91256303526217e-3, q
    cdef int i
    q = vn / exp(-0.5 * dn * dn)
    _KN[0] = <uint32_t>((dn / q) * m1)
    _KN[1] = 0
    _WN[0] = q / m1
    _WN[127] = dn / m1
    _FN[0] = 1.0
    _FN[127] = exp(-0.5 * dn * dn)
    for i in range(126, 0, -1):
        dn = sqrt(-2.0 * log(vn / dn + exp(-0.5 * dn * dn)))
        _KN[i + 1] = <uint32_t>((dn / tn) * m1)
        tn = dn
        _FN[i] = exp(-0.5 * dn * dn)
        _WN[i] = dn / m1


_zigset()


cdef double _normal(_Rng* r) noexcept nogil:
    """Standard normal by the ziggurat method (Marsaglia and Tsang, 2000)."""
    cdef uint64_t u
    cdef int32_t hz
    cdef int iz
    cdef uint32_t ahz
    cdef double x, y
    while True:
        u = r.bg.next_uint64(r.bg.state)
        iz = <int>(u & 127)
        hz = <int32_t>(<uint32_t>(u >> 32))
        ahz = <uint32_t>(-<int64_t>hz) if hz < 0 else <uint32_t>hz
        x = hz * _WN[iz]
        if ahz < _KN[iz]:
            return x
        if iz == 0:
            # tail beyond r = 3.442620
            while True:
                x = -log(_unif(r)) * 0.2904764
                y = -log(_unif(r))
                if y + y >= x * x:
                    break
            return 3.442620 + x if hz > 0 else -3.442620 - x
        if _FN[iz] + _unif(r) * (_FN[iz - 1] - _FN[iz]) < exp(-0.5 * x * x):
            return x
