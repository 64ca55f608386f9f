# cython: language_level=3
"""The random-number helpers shared by the LDP kernels (``_ldp.pyx``, ``_ldp_mala.pyx``).

A kernel draws from the ``bitgen_t`` of the caller's :class:`numpy.random.Generator`
(see the module docstring of ``_ldp.pyx``): ``_bitgen`` fetches it, ``_unif`` is
``next_double`` and ``_normal`` the 128-layer Marsaglia-Tsang ziggurat of ``_ldp_rng.pyx``.
"""

from cpython.pycapsule cimport PyCapsule_GetPointer
from numpy.random cimport bitgen_t


ctypedef struct _Rng:
    bitgen_t* bg
    int has_spare
    double spare


cdef inline bitgen_t* _bitgen(object generator) except NULL:
    capsule = generator.bit_generator.capsule
    return <bitgen_t*> PyCapsule_GetPointer(capsule, "BitGenerator")


cdef inline double _unif(_Rng* r) noexcept nogil:
    return r.bg.next_double(r.bg.state)


cdef double _normal(_Rng* r) noexcept nogil
