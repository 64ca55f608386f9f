# cython: language_level=3
"""Shared declarations of ``_ldp_gibbs.pyx`` (cimported by ``_ldp_hybrid.pyx``: its per-response latent branch)."""

from libc.stdint cimport int32_t, int64_t, uint8_t
from numpy.random cimport bitgen_t


cdef void _latent_core(bitgen_t* bg, const double* theta, int K, Py_ssize_t G, const int32_t* a_ptr,
                       const int32_t* A, const int32_t* g_y, const double* f_in, const double* f_y,
                       const double* f_out, const int64_t* g_cnt, int64_t* counts, int32_t* stamp,
                       const uint8_t* bits, Py_ssize_t bits_stride, bint use_bits, bint from_bits, double* cum,
                       double* prob, int32_t* alias, int32_t* work) noexcept nogil
