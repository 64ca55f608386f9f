# cython: language_level=3
"""The hybrid chain of the LDP exact posterior, whole iterations in one kernel call (issue 28, round 5).

``hybrid_block`` runs a block of iterations of ``privacy/_ldp/_posterior.py``'s ``hybrid_chain``
(the branch whose latent counts are drawn through the mixture form, ``_mixture_latent_counts``):
latent counts, the hierarchical ``rho`` on its grid, ``theta ~ Dir(rho + n)`` in log space, and,
once the preconditioner exists, the Gamma scale, ``mala_steps`` MALA steps and one coordinate
jump per category.  The random numbers come from the caller's :class:`numpy.random.Generator`
through numpy's own C samplers (``random_standard_gamma``, ``random_multinomial``,
``next_double``; the MALA normals from the ziggurat of ``_ldp_rng``) in the order of the Python
generator, so the two paths consume the same random numbers and agree up to floating-point
rounding (the sums are taken in a different order; ``ln Gamma`` rows from C's ``lgamma`` instead
of ``scipy.special.gammaln``).  One call per block replaces ~25 numpy calls per iteration.
"""

import numpy as np

cimport numpy as cnp
from libc.math cimport INFINITY, NAN, exp, lgamma, log, log1p, sqrt
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.string cimport memset
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport binomial_t, random_multinomial, random_standard_gamma
from scipy.linalg.cython_blas cimport dgemv, dtrmv

from sklearn_bayes._fast._ldp_gibbs cimport _latent_core
from sklearn_bayes._fast._ldp_mala cimport _Grouped, _grouped, _jumps_incremental, _mala_logpost
from sklearn_bayes._fast._ldp_rng cimport _Rng, _bitgen, _normal

cnp.import_array()

cdef double _LOGE2 = 0.693147180559945309417232121458176568


cdef inline double _next_double(bitgen_t* bg) noexcept nogil:
    return bg.next_double(bg.state)


cdef inline double _logaddexp(double x, double y) noexcept nogil:
    """numpy's ``logaddexp`` (``npy_logaddexp``): the same branches."""
    cdef double tmp
    if x == y:
        return x + _LOGE2
    tmp = x - y
    if tmp > 0:
        return x + log1p(exp(-tmp))
    elif tmp <= 0:
        return y + log1p(exp(tmp))
    return tmp


cdef void _log_normalise(double* lt, int K) noexcept nogil:
    """``lt -= logaddexp.reduce(lt)`` (sequential, as numpy reduces)."""
    cdef double s = lt[0]
    cdef int k
    for k in range(1, K):
        s = _logaddexp(s, lt[k])
    for k in range(K):
        lt[k] -= s


cdef inline void _matvec(const double* A, const double* x, double* y, int K, bint diag) noexcept nogil:
    """``y = A x`` for a symmetric row-major ``K x K`` matrix (BLAS ``dgemv``), or its diagonal only."""
    cdef int i, one = 1
    cdef double alpha = 1.0, beta = 0.0
    cdef char trans = b'T'
    if diag:
        for i in range(K):
            y[i] = A[i * K + i] * x[i]
    else:
        # row-major A is A^T in Fortran order; A^T^T x = A x
        dgemv(&trans, &K, &K, &alpha, <double*> A, &K, <double*> x, &one, &beta, y, &one)


cdef inline void _lower_matvec(const double* R, double* x, int K, bint diag) noexcept nogil:
    """``x <- R x`` in place for a lower-triangular row-major ``R`` (BLAS ``dtrmv``), or its diagonal only."""
    cdef int i, one = 1
    cdef char uplo = b'U', trans = b'T', unit = b'N'
    if diag:
        for i in range(K):
            x[i] *= R[i * K + i]
    else:
        # row-major lower R is an upper matrix R^T in Fortran order; (R^T)^T x = R x
        dtrmv(&uplo, &trans, &unit, &K, <double*> R, &K, x, &one)


cdef inline void _add_row(double* lp, const double* row, int n) noexcept nogil:
    """``lp[j] += row[j]``, element by element (each ``lp[j]`` gets the same additions in the same order: the same
    numbers), four at a time with the loads before the stores, so the compiler need not store every sum before the
    next load (round T: the store was a quarter of the kernel body's own time)."""
    cdef int j = 0
    cdef double a0, a1, a2, a3
    while j + 4 <= n:
        a0 = lp[j] + row[j]
        a1 = lp[j + 1] + row[j + 1]
        a2 = lp[j + 2] + row[j + 2]
        a3 = lp[j + 3] + row[j + 3]
        lp[j] = a0
        lp[j + 1] = a1
        lp[j + 2] = a2
        lp[j + 3] = a3
        j += 4
    while j < n:
        lp[j] += row[j]
        j += 1


cdef inline double _copy_sumsq(const double* xi, double* out, int K) noexcept nogil:
    """``out = xi`` and ``sum xi_i^2`` in index order (a local sum, kept in a register; the same additions)."""
    cdef int i
    cdef double s = 0.0
    for i in range(K):
        out[i] = xi[i]
        s += xi[i] * xi[i]
    return s


cdef double _rho_draw(bitgen_t* bg, const int64_t* counts, int K, const double* grid, const double* head,
                      int n_grid, double* table, uint8_t* known, int n_rows, double* lp, double* lg0,
                      bint* have_lg0) noexcept nogil:
    """``rho`` on ``grid`` from ``p(rho | n) ∝ exp(head + sum_k [lgamma(rho + n_k) - lgamma(rho)])``.

    Rows ``lgamma(grid + v) - lgamma(grid)`` memoised for ``v < n_rows`` in ``table``; the grid
    point drawn as ``_posterior._draw_rho`` draws it (one uniform, the normalised cumulative sum,
    the first point whose cumulative probability exceeds it).  ``lgamma(grid)`` is computed once
    into ``lg0`` when a row is first needed (``have_lg0``): the same numbers as calling it per row.
    """
    cdef int j, k
    cdef int64_t v
    cdef double m = -INFINITY, u, c, last
    cdef double* row
    for j in range(n_grid):
        lp[j] = head[j]
    for k in range(K):
        v = counts[k]
        if v == 0:
            continue
        if (v >= n_rows or not known[v]) and not have_lg0[0]:
            for j in range(n_grid):
                lg0[j] = lgamma(grid[j])
            have_lg0[0] = 1
        if v < n_rows:
            row = table + v * n_grid
            if not known[v]:
                for j in range(n_grid):
                    row[j] = lgamma(grid[j] + v) - lg0[j]
                known[v] = 1
            _add_row(lp, row, n_grid)
        else:
            for j in range(n_grid):
                lp[j] += lgamma(grid[j] + v) - lg0[j]
    for j in range(n_grid):
        if lp[j] > m:
            m = lp[j]
    # the cumulative sum of exp(lp - max); the first point whose share of the total exceeds u
    # (numpy's normalised cumsum and searchsorted(side='right'), without the divisions)
    c = 0.0
    for j in range(n_grid):
        c += exp(lp[j] - m)
        lp[j] = c
    last = lp[n_grid - 1]
    u = _next_double(bg) * last
    for j in range(n_grid):
        if lp[j] > u:
            return grid[j]
    return grid[n_grid - 1]


def hybrid_block(object generator, int it0, int n_iter, int burn, bint first_mala_only, bint last_gibbs_only,
                 double[::1] lt, double[::1] state, bint hier, const double[::1] prior,
                 const int64_t[::1] count, const double[::1] f0, const double[::1] d_in, const double[::1] d_y,
                 const double[:, ::1] inside, const int64_t[::1] y, const uint8_t[::1] has_y,
                 const double[::1] grid, const double[::1] head, double[:, ::1] table, uint8_t[::1] known,
                 bint mala, int mala_steps,
                 const int32_t[::1] gy, const int32_t[::1] gs, const double[::1] ga, const double[::1] gb,
                 const double[::1] gd, const double[::1] gc, const int32_t[::1] s_ptr, const int32_t[::1] s_idx,
                 const double[:, ::1] C, const double[:, ::1] R, const double[:, ::1] M, bint diag,
                 bint jumps, const int32_t[::1] t_ptr, const int32_t[::1] t_grp, const double[::1] t_w,
                 const int32_t[::1] t_cat, double[:, ::1] out, double[::1] rho_out, int row0,
                 bint per_response=False, const int32_t[::1] a_ptr=None, const int32_t[::1] a_idx=None,
                 const int32_t[::1] g_y=None, const double[::1] f_in=None, const double[::1] f_y=None,
                 const double[::1] f_out=None):
    """Run iterations ``it0 .. it0 + n_iter - 1`` of the hybrid chain (the mixture branch).

    State, updated in place: ``lt`` (``ln theta``), ``state = [rho, ln h, MALA step counter]``
    and the memo ``table``/``known`` of the ``rho`` rows.  ``hier``: ``rho`` drawn on ``grid``
    (``head = lgamma(K grid) - lgamma(K grid + N)``), else the fixed concentration ``prior``.
    ``mala``: the MALA steps (preconditioner ``C = R R^T = M^{-1}``, diagonal when ``diag``)
    and, with ``jumps``, one jump per category (transposed lists ``t_*`` of ``_posterior.jump_lists``)
    follow the Gibbs part; the step size adapts while ``it < burn``.  ``first_mala_only``: the
    first iteration starts at its MALA part (its Gibbs part ran in the previous call, with
    ``last_gibbs_only``, which stops the last iteration before its MALA part and writes no row).
    ``theta = exp(lt)`` and ``rho`` (``nan`` for a fixed prior) of every completed iteration go to
    ``out`` and ``rho_out`` from row ``row0``.  Returns the next row.

    ``per_response`` (issue 28, round T): the latent counts drawn per response as the Python generator's branch
    without dense rows does (``_ldp_gibbs.latent_counts`` on the groups' CSR sets ``a_ptr``/``a_idx``, special
    categories ``g_y`` and likelihood values ``f_in``/``f_y``/``f_out``, counts ``count``; no bit rows): the same
    code (``_ldp_gibbs._latent_core``) on the same random numbers; the mixture arrays are then not read.
    """
    cdef int K = lt.shape[0], n_grid = grid.shape[0], n_rows = table.shape[0]
    cdef Py_ssize_t G = count.shape[0], g
    cdef int n_sub = s_ptr.shape[0] - 1
    cdef bint has_inside = inside.shape[0] > 0
    cdef int it, k, i, j, step, row = row0
    cdef int64_t N0, m1
    cdef double rho = state[0], log_h = state[1], pv_sum, t, s, w0, w1, w2, tot, hh, sq, lp_c, lp_new
    cdef double lq_f, lq_b, log_a, a, mx
    cdef int64_t it_mala = <int64_t> state[2]
    cdef binomial_t binom
    cdef double W[3]
    cdef int64_t mg[3]
    cdef int64_t[::1] counts = np.zeros(K, dtype=np.int64), tmp = np.zeros(K, dtype=np.int64)
    cdef int64_t[:, ::1] m = np.zeros((max(G, 1), 3), dtype=np.int64)
    cdef double[::1] theta = np.zeros(K), P = np.zeros(K), pvec = np.zeros(K), gam = np.zeros(K)
    cdef double[::1] lpg = np.zeros(n_grid), lg0 = np.zeros(n_grid)
    cdef bint have_lg0 = 0
    cdef double[::1] z = np.zeros(K), grad = np.zeros(K), th = np.zeros(K), v = np.zeros(K)
    cdef double[::1] z_new = np.zeros(K), g_new = np.zeros(K), mu = np.zeros(K), mu_new = np.zeros(K)
    cdef double[::1] xi = np.zeros(K), d = np.zeros(K), cg = np.zeros(K), cg_new = np.zeros(K)
    cdef double[::1] rxi = np.zeros(K), md = np.zeros(K)
    cdef double[::1] ths = np.zeros(max(n_sub, 1)), vs = np.zeros(max(n_sub, 1))
    cdef double[::1] props = np.zeros(K), log_u = np.zeros(K), u = np.zeros(max(ga.shape[0], 1))
    cdef double[::1] h_scr = np.zeros(max(ga.shape[0], 1)), w_scr = np.zeros(max(ga.shape[0], 1))
    cdef int32_t[::1] order = np.arange(K, dtype=np.int32)
    cdef _Grouped gr
    cdef _Rng r
    cdef bitgen_t* bg = _bitgen(generator)
    cdef double[::1] cumv = np.zeros(K + 1), probv = np.zeros(max(K, 1))
    cdef int32_t[::1] aliasv = np.zeros(max(K, 1), dtype=np.int32), workv = np.zeros(max(K, 1), dtype=np.int32)
    cdef int32_t[::1] stampv = np.full(max(K, 1), -1, dtype=np.int32)
    cdef const int32_t* A = NULL
    if per_response:
        if a_ptr is None or a_idx is None or g_y is None or f_in is None or f_y is None or f_out is None:
            raise ValueError("per_response needs a_ptr, a_idx, g_y, f_in, f_y and f_out.")
        if a_ptr.shape[0] != G + 1 or g_y.shape[0] != G or f_in.shape[0] != G or f_y.shape[0] != G \
                or f_out.shape[0] != G or (G > 0 and a_idx.shape[0] < a_ptr[G]):
            raise ValueError("a_ptr, a_idx, g_y, f_in, f_y and f_out do not match count.")
        A = &a_idx[0] if a_idx.shape[0] else NULL
    if mala:
        gr = _grouped(gy, gs, ga, gb, gd, gc, s_ptr, s_idx)
        if C.shape[0] != K or C.shape[1] != K or R.shape[0] != K or R.shape[1] != K or M.shape[0] != K \
                or M.shape[1] != K:
            raise ValueError("C, R and M must be K x K.")
    if out.shape[1] != K or out.shape[0] < row0 + n_iter or rho_out.shape[0] < row0 + n_iter:
        raise ValueError("out and rho_out need n_iter rows from row0 and one column per category.")
    if prior.shape[0] != K or head.shape[0] != n_grid or table.shape[1] != n_grid or known.shape[0] < n_rows:
        raise ValueError("prior, head, table and known do not match lt and grid.")
    if has_inside and (inside.shape[0] != G or inside.shape[1] != K):
        raise ValueError("inside must be G x K.")
    memset(&binom, 0, sizeof(binomial_t))
    r.bg = bg
    r.has_spare = 0
    with generator.bit_generator.lock, nogil:
        for it in range(it0, it0 + n_iter):
            if not (first_mala_only and it == it0):
                # (i) latent counts through the mixture form (_posterior._mixture_latent_counts)
                for k in range(K):
                    theta[k] = exp(lt[k])
                N0 = 0
                if per_response:  # or per response (_ldp_gibbs.latent_counts), the same code
                    _latent_core(bg, &theta[0], K, G, &a_ptr[0], A, &g_y[0] if G else NULL,
                                 &f_in[0] if G else NULL, &f_y[0] if G else NULL, &f_out[0] if G else NULL,
                                 &count[0] if G else NULL, &counts[0], &stampv[0], NULL, 0, 0, 0, &cumv[0],
                                 &probv[0], &aliasv[0], &workv[0])
                for g in range(G if not per_response else 0):
                    w0 = f0[g]
                    w1 = 0.0
                    if has_inside:
                        t = 0.0
                        for k in range(K):
                            t += inside[g, k] * theta[k]
                        w1 = d_in[g] * t
                    w2 = d_y[g] * theta[y[g]]
                    tot = w0 + w1 + w2
                    W[0] = w0 / tot
                    W[1] = w1 / tot
                    W[2] = w2 / tot
                    mg[0] = 0
                    mg[1] = 0
                    mg[2] = 0
                    random_multinomial(bg, count[g], mg, W, 3, &binom)
                    m[g, 0] = mg[0]
                    m[g, 1] = mg[1]
                    m[g, 2] = mg[2]
                    N0 += mg[0]
                if not per_response:
                    s = 0.0
                    for k in range(K):
                        s += theta[k]
                    for k in range(K):
                        P[k] = theta[k] / s
                        counts[k] = 0
                    random_multinomial(bg, N0, &counts[0], &P[0], K, &binom)
                if has_inside and not per_response:
                    for g in range(G):
                        m1 = m[g, 1]
                        if m1 == 0:
                            continue
                        s = 0.0
                        for k in range(K):
                            P[k] = inside[g, k] * theta[k]
                            s += P[k]
                        for k in range(K):
                            P[k] /= s
                            tmp[k] = 0
                        random_multinomial(bg, m1, &tmp[0], &P[0], K, &binom)
                        for k in range(K):
                            counts[k] += tmp[k]
                for g in range(G if not per_response else 0):
                    if has_y[g]:
                        counts[y[g]] += m[g, 2]
                # (ii) rho | n on its grid, (iii) theta ~ Dir(rho + n) in log space
                if hier:
                    rho = _rho_draw(bg, &counts[0], K, &grid[0], &head[0], n_grid,
                                    &table[0, 0] if n_rows else NULL, &known[0] if n_rows else NULL, n_rows,
                                    &lpg[0], &lg0[0], &have_lg0)
                    for k in range(K):
                        pvec[k] = rho
                else:
                    for k in range(K):
                        pvec[k] = prior[k]
                for k in range(K):
                    gam[k] = random_standard_gamma(bg, pvec[k] + counts[k] + 1.0)
                for k in range(K):
                    lt[k] = log(gam[k]) + log(_next_double(bg)) / (pvec[k] + counts[k])
                mx = -INFINITY
                for k in range(K):
                    if lt[k] > mx:
                        mx = lt[k]
                s = 0.0
                for k in range(K):
                    s += exp(lt[k] - mx)
                s = mx + log(s)
                for k in range(K):
                    lt[k] -= s
                if last_gibbs_only and it == it0 + n_iter - 1:
                    break
            elif hier:
                for k in range(K):
                    pvec[k] = rho
            else:
                for k in range(K):
                    pvec[k] = prior[k]
            if mala:
                # a fresh Gamma scale, then MALA steps on z = ln phi given rho
                pv_sum = 0.0
                for k in range(K):
                    pv_sum += pvec[k]
                t = log(random_standard_gamma(bg, pv_sum + 1.0)) + log(_next_double(bg)) / pv_sum
                for k in range(K):
                    z[k] = lt[k] + t
                lp_c = _mala_logpost(&z[0], K, &gr, &pvec[0], &th[0], &ths[0], &v[0], &vs[0], &grad[0])
                _matvec(&C[0, 0], &grad[0], &cg[0], K, diag)  # C grad at the current state, kept
                for step in range(mala_steps):
                    hh = exp(log_h)
                    sq = sqrt(hh)
                    for i in range(K):
                        mu[i] = z[i] + 0.5 * hh * cg[i]
                        xi[i] = _normal(&r)
                    lq_f = _copy_sumsq(&xi[0], &rxi[0], K)
                    _lower_matvec(&R[0, 0], &rxi[0], K, diag)
                    for i in range(K):
                        z_new[i] = mu[i] + sq * rxi[i]
                    lq_f *= -0.5
                    lp_new = _mala_logpost(&z_new[0], K, &gr, &pvec[0], &th[0], &ths[0], &v[0], &vs[0], &g_new[0])
                    if lp_new == -INFINITY:
                        a = 0.0
                    else:
                        _matvec(&C[0, 0], &g_new[0], &cg_new[0], K, diag)
                        for i in range(K):
                            mu_new[i] = z_new[i] + 0.5 * hh * cg_new[i]
                            d[i] = z[i] - mu_new[i]
                        _matvec(&M[0, 0], &d[0], &md[0], K, diag)
                        lq_b = 0.0
                        for i in range(K):
                            lq_b += d[i] * md[i]
                        lq_b *= -0.5 / hh
                        log_a = lp_new - lp_c + lq_b - lq_f
                        a = 1.0 if log_a >= 0.0 else exp(log_a)
                        if _next_double(bg) < a:
                            lp_c = lp_new
                            for i in range(K):
                                z[i] = z_new[i]
                                grad[i] = g_new[i]
                                cg[i] = cg_new[i]
                    if it < burn:
                        log_h += (a - 0.574) / sqrt(it_mala + step + 1.0)
                it_mala += mala_steps
                if jumps:
                    # one independence jump per category from its prior (_posterior._coordinate_jumps)
                    for k in range(K):
                        gam[k] = random_standard_gamma(bg, pvec[k] + 1.0)
                    for k in range(K):
                        props[k] = log(gam[k]) + log(_next_double(bg)) / pvec[k]
                    for k in range(K):
                        log_u[k] = log(_next_double(bg))
                    for g in range(ga.shape[0]):
                        u[g] = 0.0
                    for k in range(K):
                        th[k] = exp(z[k])
                    for j in range(t_grp.shape[0]):
                        u[t_grp[j]] += t_w[j] * th[t_cat[j]]
                    _jumps_incremental(&z[0], K, lp_c, &props[0], &log_u[0], &order[0], K, ga.shape[0],
                                       &ga[0], &gc[0], &u[0], &t_ptr[0], &t_grp[0] if t_grp.shape[0] else NULL,
                                       &t_w[0] if t_w.shape[0] else NULL, &pvec[0], &h_scr[0], &w_scr[0])
                for k in range(K):
                    lt[k] = z[k]
                _log_normalise(&lt[0], K)
            for k in range(K):
                out[row, k] = exp(lt[k])
            rho_out[row] = rho if hier else NAN
            row += 1
    state[0] = rho
    state[1] = log_h
    state[2] = <double> it_mala
    return row
