# cython: language_level=3
"""Shared declarations of ``_ldp_mala.pyx`` (cimported by ``_ldp_hybrid.pyx``)."""

from libc.stdint cimport int32_t


cdef struct _Grouped:
    # the grouped likelihood: G groups (y_g, s_g, a_g, b_g, d_g, c_g) and n_sub subsets in CSR form
    Py_ssize_t G
    const int32_t* gy
    const int32_t* gs
    const double* ga
    const double* gb
    const double* gd
    const double* gc
    int n_sub
    const int32_t* s_ptr
    const int32_t* s_idx


cdef _Grouped _grouped(const int32_t[::1] gy, const int32_t[::1] gs, const double[::1] ga, const double[::1] gb,
                       const double[::1] gd, const double[::1] gc, const int32_t[::1] s_ptr,
                       const int32_t[::1] s_idx)

cdef double _mala_logpost(const double* z, int K, const _Grouped* gr, const double* prior,
                          double* theta, double* ths, double* v, double* vs, double* grad) noexcept nogil

cdef double _jumps_incremental(double* z, int K, double lp, const double* props, const double* log_u,
                               const int32_t* order, int m, Py_ssize_t G, const double* ga, const double* gc,
                               double* u, const int32_t* t_ptr, const int32_t* t_grp, const double* t_w,
                               const double* prior, double* h_scratch, double* w_scratch) noexcept nogil
