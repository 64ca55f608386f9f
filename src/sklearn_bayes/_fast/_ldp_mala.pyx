# cython: language_level=3
"""MALA kernels of :class:`sklearn_bayes.AdaptiveLDPFrequencyEstimator`: the grouped log posterior.

Preconditioned Metropolis-adjusted Langevin chains on ``z = ln phi`` with the grouped
likelihood of the recorded responses (``privacy/_ldp/_samplers.py``: ``mala``; the
hierarchical hybrid sampler of ``privacy/_ldp/_posterior.py``).  Random numbers come from
the caller's generator as in ``_ldp.pyx`` (helpers in ``_ldp_rng.pxd``).
"""

import numpy as np

cimport numpy as cnp
from libc.math cimport INFINITY, exp, fabs, log, sqrt
from libc.stdlib cimport free, malloc
from libc.stdint cimport int32_t

from sklearn_bayes._fast._ldp_rng cimport _Rng, _bitgen, _normal, _unif

cnp.import_array()

# --------------------------------------------------------------------------------------
# Final estimate: preconditioned MALA chains on the grouped likelihood
# --------------------------------------------------------------------------------------

cdef int32_t _NO_INT[1]  # what an empty array's pointer points to (never read: its loops are empty)
cdef double _NO_DBL[1]

# the grouped likelihood's pointers (struct _Grouped) are declared in _ldp_mala.pxd


cdef _Grouped _grouped(const int32_t[::1] gy, const int32_t[::1] gs, const double[::1] ga, const double[::1] gb,
                       const double[::1] gd, const double[::1] gc, const int32_t[::1] s_ptr,
                       const int32_t[::1] s_idx):
    """Pointers into the caller's arrays (which keep them alive for the call)."""
    cdef _Grouped gr
    gr.G = gy.shape[0]
    gr.gy = &gy[0] if gr.G else _NO_INT
    gr.gs = &gs[0] if gr.G else _NO_INT
    gr.ga = &ga[0] if gr.G else _NO_DBL
    gr.gb = &gb[0] if gr.G else _NO_DBL
    gr.gd = &gd[0] if gr.G else _NO_DBL
    gr.gc = &gc[0] if gr.G else _NO_DBL
    gr.n_sub = s_ptr.shape[0] - 1
    gr.s_ptr = &s_ptr[0]
    gr.s_idx = &s_idx[0] if s_idx.shape[0] else _NO_INT
    return gr


cdef double _mala_logpost(const double* z, int K, const _Grouped* gr, const double* prior,
                          double* theta, double* ths, double* v, double* vs, double* grad) noexcept nogil:
    """Log posterior of ``z = ln phi`` and its gradient (into ``grad``); ``theta`` = softmax(z).

    Group ``g`` has ``h_g = a_g + b_g theta[y_g] + d_g theta(S_{s_g})`` (``s_g < 0``: no
    subset term) and count ``c_g``; ``ln pi = sum_k (rho_k z_k - e^{z_k}) + sum_g c_g ln h_g``.
    Returns ``-inf`` if some ``h_g <= 0`` (impossible for valid input).  ``theta`` is taken of
    ``e^{z - max z}`` when ``sum(e^z)`` is below ``2^-900`` (the same ``theta``, without underflow).
    """
    cdef int k, j
    cdef Py_ssize_t g, G = gr.G
    cdef int n_sub = gr.n_sub
    cdef const int32_t* gy = gr.gy
    cdef const int32_t* gs = gr.gs
    cdef const double* ga = gr.ga
    cdef const double* gb = gr.gb
    cdef const double* gd = gr.gd
    cdef const double* gc = gr.gc
    cdef const int32_t* s_ptr = gr.s_ptr
    cdef const int32_t* s_idx = gr.s_idx
    cdef double s = 0.0, lp = 0.0, h, w, tv = 0.0, phi, mx
    for k in range(K):
        phi = exp(z[k])
        grad[k] = phi  # temporarily e^{z}
        s += phi
        lp += prior[k] * z[k] - phi
    if s > 2.0 ** -900:
        for k in range(K):
            theta[k] = grad[k] / s
            v[k] = 0.0
    else:
        # e^z underflows (to denormals or 0) as a whole: theta = softmax(z) from e^{z - max z}
        # (issue 28, round 10; before, theta lost its precision or was 0/0 and ln pi -inf)
        mx = z[0]
        for k in range(1, K):
            if z[k] > mx:
                mx = z[k]
        s = 0.0
        for k in range(K):
            theta[k] = exp(z[k] - mx)
            s += theta[k]
        for k in range(K):
            theta[k] /= s
            v[k] = 0.0
    for j in range(n_sub):
        h = 0.0
        for k in range(s_ptr[j], s_ptr[j + 1]):
            h += theta[s_idx[k]]
        ths[j] = h
        vs[j] = 0.0
    for g in range(G):
        h = ga[g] + gb[g] * theta[gy[g]]
        if gs[g] >= 0:
            h += gd[g] * ths[gs[g]]
        if not h > 0.0:
            return -INFINITY
        lp += gc[g] * log(h)
        w = gc[g] / h
        v[gy[g]] += w * gb[g]
        if gs[g] >= 0:
            vs[gs[g]] += w * gd[g]
    for j in range(n_sub):
        for k in range(s_ptr[j], s_ptr[j + 1]):
            v[s_idx[k]] += vs[j]
    for k in range(K):
        tv += theta[k] * v[k]
    for k in range(K):
        grad[k] = prior[k] - grad[k] + theta[k] * (v[k] - tv)
    return lp


def mala_logpost(const double[::1] z, const int32_t[::1] gy, const int32_t[::1] gs, const double[::1] ga,
                 const double[::1] gb, const double[::1] gd, const double[::1] gc, const int32_t[::1] s_ptr,
                 const int32_t[::1] s_idx, const double[::1] prior):
    """Python access to the MALA target (for tests): returns ``(ln pi(z), gradient)``."""
    cdef int K = z.shape[0]
    cdef int n_sub = s_ptr.shape[0] - 1
    cdef double[::1] theta = np.zeros(K), v = np.zeros(K), grad = np.zeros(K)
    cdef double[::1] ths = np.zeros(max(n_sub, 1)), vs = np.zeros(max(n_sub, 1))
    cdef _Grouped gr = _grouped(gy, gs, ga, gb, gd, gc, s_ptr, s_idx)
    cdef double lp
    lp = _mala_logpost(&z[0], K, &gr, &prior[0], &theta[0], &ths[0], &v[0], &vs[0], &grad[0])
    return lp, np.asarray(grad)


def mala_chains(object generator, double[:, ::1] Z, double[::1] lp, double[:, ::1] grad,
                const int32_t[::1] gy, const int32_t[::1] gs, const double[::1] ga, const double[::1] gb,
                const double[::1] gd, const double[::1] gc, const int32_t[::1] s_ptr, const int32_t[::1] s_idx,
                const double[::1] prior, const double[:, ::1] C, const double[:, ::1] R, const double[:, ::1] M,
                double log_h, int it0, int n_iter, bint adapt, double[::1] acc, int thin,
                double[:, ::1] draws, int draw0, double[:, ::1] record, int record_from, bint diag=False):
    """Advance ``Z.shape[0]`` MALA chains ``n_iter`` iterations (global indices ``it0 ...``).

    State per chain: ``Z[c]``, ``lp[c] = ln pi(Z[c])`` and ``grad[c]``, updated in place.
    Proposal ``z' = z + (h/2) C grad + sqrt(h) R xi`` (``R R^T = C = M^{-1}``), accepted
    with the Metropolis-Hastings ratio.  With ``adapt``, ``ln h`` moves by
    ``(mean acceptance - 0.574) / sqrt(it + 1)`` after every iteration.  Otherwise the
    chains' ``theta`` are added to ``acc`` every iteration and, if ``thin > 0``, written
    to ``draws`` (rows from ``draw0``, chains interleaved) every ``thin``-th iteration.
    With ``record_from >= 0`` the states ``Z`` of iterations ``>= record_from`` are
    copied to ``record`` (rows ``(it - record_from) * nc + c``).  Returns
    ``(log_h, next draw row)``.  With ``diag`` only the diagonals of ``C``, ``R`` and
    ``M`` are used (they must then be diagonal matrices): ``O(K)`` instead of
    ``O(K^2)`` per proposal, for large ``K``.
    """
    cdef int nc = Z.shape[0], K = Z.shape[1]
    cdef int n_sub = s_ptr.shape[0] - 1
    cdef int it, c, i, j, row = draw0
    cdef double hh, sq, lp_new, log_a, a, a_sum, lq_f, lq_b, t
    cdef double[::1] theta = np.zeros(K), v = np.zeros(K), g_new = np.zeros(K)
    cdef double[::1] z_new = np.zeros(K), mu = np.zeros(K), mu_new = np.zeros(K), xi = np.zeros(K)
    cdef double[::1] d = np.zeros(K), theta_new = np.zeros(K)
    cdef double[:, ::1] T = np.zeros((nc, K))
    cdef double[::1] ths = np.zeros(max(n_sub, 1)), vs = np.zeros(max(n_sub, 1))
    cdef _Grouped gr = _grouped(gy, gs, ga, gb, gd, gc, s_ptr, s_idx)
    cdef _Rng r
    r.bg = _bitgen(generator)
    r.has_spare = 0
    with generator.bit_generator.lock, nogil:
        # theta of the current states
        for c in range(nc):
            t = 0.0
            for j in range(K):
                T[c, j] = exp(Z[c, j])
                t += T[c, j]
            if not t > 2.0 ** -900:  # e^Z underflows as a whole: softmax from e^{Z - max Z}
                hh = Z[c, 0]
                for j in range(1, K):
                    if Z[c, j] > hh:
                        hh = Z[c, j]
                t = 0.0
                for j in range(K):
                    T[c, j] = exp(Z[c, j] - hh)
                    t += T[c, j]
            for j in range(K):
                T[c, j] /= t
        for it in range(it0, it0 + n_iter):
            hh = exp(log_h)
            sq = sqrt(hh)
            a_sum = 0.0
            for c in range(nc):
                for i in range(K):
                    if diag:
                        t = C[i, i] * grad[c, i]
                    else:
                        t = 0.0
                        for j in range(K):
                            t += C[i, j] * grad[c, j]
                    mu[i] = Z[c, i] + 0.5 * hh * t
                    xi[i] = _normal(&r)
                lq_f = 0.0
                for i in range(K):
                    if diag:
                        t = R[i, i] * xi[i]
                    else:
                        t = 0.0
                        for j in range(i + 1):
                            t += R[i, j] * xi[j]
                    z_new[i] = mu[i] + sq * t
                    lq_f += xi[i] * xi[i]
                lq_f *= -0.5  # (sqrt(h) R xi)^T M (sqrt(h) R xi) / h = |xi|^2
                lp_new = _mala_logpost(&z_new[0], K, &gr, &prior[0], &theta_new[0], &ths[0], &v[0], &vs[0], &g_new[0])
                if lp_new == -INFINITY:
                    a = 0.0
                else:
                    for i in range(K):
                        if diag:
                            t = C[i, i] * g_new[i]
                        else:
                            t = 0.0
                            for j in range(K):
                                t += C[i, j] * g_new[j]
                        mu_new[i] = z_new[i] + 0.5 * hh * t
                        d[i] = Z[c, i] - mu_new[i]
                    lq_b = 0.0
                    for i in range(K):
                        if diag:
                            t = M[i, i] * d[i]
                        else:
                            t = 0.0
                            for j in range(K):
                                t += M[i, j] * d[j]
                        lq_b += d[i] * t
                    lq_b *= -0.5 / hh
                    log_a = lp_new - lp[c] + lq_b - lq_f
                    a = 1.0 if log_a >= 0.0 else exp(log_a)
                    if _unif(&r) < a:
                        lp[c] = lp_new
                        for i in range(K):
                            Z[c, i] = z_new[i]
                            grad[c, i] = g_new[i]
                            T[c, i] = theta_new[i]
                a_sum += a
            if adapt:
                log_h += (a_sum / nc - 0.574) / sqrt(it + 1.0)
            else:
                for c in range(nc):
                    for i in range(K):
                        acc[i] += T[c, i]
                if thin > 0 and (it - it0 + 1) % thin == 0:
                    for c in range(nc):
                        if row < draws.shape[0]:
                            for i in range(K):
                                draws[row, i] = T[c, i]
                            row += 1
            if record_from >= 0 and it >= record_from:
                j = (it - record_from) * nc
                for c in range(nc):
                    if j + c < record.shape[0]:
                        for i in range(K):
                            record[j + c, i] = Z[c, i]
    return log_h, row


# --------------------------------------------------------------------------------------
# Coordinate jumps: independence Metropolis-Hastings from the prior, one per coordinate
# --------------------------------------------------------------------------------------

def coordinate_jumps(double[::1] z, double lp, const double[::1] props, const double[::1] log_u,
                     const int32_t[::1] gy, const int32_t[::1] gs, const double[::1] ga, const double[::1] gb,
                     const double[::1] gd, const double[::1] gc, const int32_t[::1] s_ptr,
                     const int32_t[::1] s_idx, const double[::1] prior, const int32_t[::1] order):
    """One independence MH step per coordinate ``k = order[j]`` of ``z = ln phi``, in turn (in place).

    ``props[j]`` is the proposal for ``z_k``, a draw of ``ln Gamma(prior_k, 1)`` (its prior,
    independent of the state, so the caller draws them in advance), ``log_u[j]`` the log of
    the uniform of its acceptance test; ``lp = ln pi(z)`` on entry (the MALA target,
    ``_mala_logpost``).  Accepted when ``ln pi(z') - ln pi(z) - (prior_k(z'_k) - prior_k(z_k))
    > log_u[k]`` with ``prior_k(u) = prior_k u - e^u`` (the likelihood ratio) and ``ln pi(z')``
    finite.  Returns ``ln pi`` of the final ``z``.  ``O(len(order) (K + G + sum |S|))``.
    """
    cdef int K = z.shape[0]
    cdef int n_sub = s_ptr.shape[0] - 1
    cdef int k, j, m = order.shape[0]
    cdef double old, new_lp, log_a, a
    cdef double[::1] theta = np.zeros(K), v = np.zeros(K), grad = np.zeros(K)
    cdef double[::1] ths = np.zeros(max(n_sub, 1)), vs = np.zeros(max(n_sub, 1))
    cdef _Grouped gr = _grouped(gy, gs, ga, gb, gd, gc, s_ptr, s_idx)
    if props.shape[0] != m or log_u.shape[0] != m or prior.shape[0] != K:
        raise ValueError("props and log_u need one entry per step (order), prior one per coordinate of z.")
    for j in range(m):
        if not 0 <= order[j] < K:
            raise ValueError("order must hold coordinates of z.")
    with nogil:
        for j in range(m):
            k = order[j]
            old = z[k]
            a = prior[k]
            z[k] = props[j]
            new_lp = _mala_logpost(&z[0], K, &gr, &prior[0], &theta[0], &ths[0], &v[0], &vs[0], &grad[0])
            if new_lp > -INFINITY and new_lp < INFINITY:
                log_a = new_lp - lp - (a * z[k] - exp(z[k])) + (a * old - exp(old))
                if log_u[j] < log_a:
                    lp = new_lp
                    continue
            z[k] = old
    return lp


def coordinate_jumps_incremental(double[::1] z, double lp, const double[::1] props, const double[::1] log_u,
                                 const int32_t[::1] order, const double[::1] ga, const double[::1] gc,
                                 const double[::1] u0, const int32_t[::1] t_ptr, const int32_t[::1] t_grp,
                                 const double[::1] t_w, const double[::1] prior, double[::1] h_scratch,
                                 double[::1] w_scratch, const int32_t[::1] t_cat=None):
    """The steps of :func:`coordinate_jumps` with ``O(G + deg_k)`` work per step instead of a full evaluation.

    With ``phi = e^z`` and ``Phi = sum(phi)`` the likelihood term of the MALA target is
    ``sum_g c_g ln(a_g Phi + u_g) - N ln Phi`` (``u_g = b_g phi[y_g] + d_g phi(S_g)``, ``N =
    sum_g c_g``).  ``u0`` holds ``u_g`` at the entry ``z``; category ``k`` enters ``u_g`` with
    weight ``t_w[j]`` for the groups ``t_grp[j]``, ``t_ptr[k] <= j < t_ptr[k + 1]`` (the transposed
    membership lists).  A step on ``k`` changes ``Phi`` by ``delta = e^{z'_k} - e^{z_k}`` and ``u_g``
    by ``delta t_w`` on those groups only.  The acceptance test is the likelihood ratio (the
    proposal is the prior), as in :func:`coordinate_jumps`.  ``h_scratch`` and ``w_scratch`` are
    work arrays of ``G`` values (``w_scratch`` all zero on entry and on return).  Returns ``lp``
    (the full target of the entry ``z``) updated by the accepted steps.  ``u0=None``: ``u_g`` is
    computed here from ``z`` and ``t_cat`` (``t_cat[j]``: the category of entry ``j``), the sum
    ``np.bincount(t_grp, weights=t_w * exp(z)[t_cat])`` takes, in the same order.
    """
    cdef int K = z.shape[0]
    cdef Py_ssize_t G = ga.shape[0]
    cdef int j, m = order.shape[0]
    cdef double[::1] u, phi
    if u0 is None:
        if t_cat is None or t_cat.shape[0] != t_grp.shape[0] or t_w.shape[0] != t_grp.shape[0]:
            raise ValueError("without u0, t_cat and t_w need one entry per entry of t_grp.")
        u = np.zeros(G)
        phi = np.empty(K)
        for j in range(t_grp.shape[0]):
            if not (0 <= t_cat[j] < K and 0 <= t_grp[j] < G):
                raise ValueError("t_cat must hold coordinates of z and t_grp groups.")
        with nogil:
            for j in range(K):
                phi[j] = exp(z[j])
            for j in range(t_grp.shape[0]):
                u[t_grp[j]] += t_w[j] * phi[t_cat[j]]
    else:
        u = np.array(u0, dtype=np.float64)
    if props.shape[0] != m or log_u.shape[0] != m or prior.shape[0] != K or t_ptr.shape[0] != K + 1:
        raise ValueError("props and log_u need one entry per step, prior one per coordinate, t_ptr K + 1.")
    if gc.shape[0] != G or u.shape[0] != G or h_scratch.shape[0] < G or w_scratch.shape[0] < G:
        raise ValueError("ga, gc, u0 and the scratch arrays need one entry per group.")
    for j in range(m):
        if not 0 <= order[j] < K:
            raise ValueError("order must hold coordinates of z.")
    with nogil:
        lp = _jumps_incremental(&z[0], K, lp, &props[0] if m else _NO_DBL, &log_u[0] if m else _NO_DBL,
                                &order[0] if m else _NO_INT, m, G, &ga[0] if G else _NO_DBL, &gc[0] if G else _NO_DBL,
                                &u[0] if G else _NO_DBL, &t_ptr[0], &t_grp[0] if t_grp.shape[0] else _NO_INT,
                                &t_w[0] if t_w.shape[0] else _NO_DBL, &prior[0], &h_scratch[0] if G else _NO_DBL,
                                &w_scratch[0] if G else _NO_DBL)
    return lp


cdef inline double _cubic(double x) noexcept nogil:
    """``x - x^2 / 2 + x^3 / 3 >= ln(1 + x)`` for every ``x > -1`` (the Taylor remainder is ``<= 0``)."""
    return x * (1.0 - x * (0.5 - x / 3.0))


cdef inline double _quartic_gap(double x) noexcept nogil:
    """``x^4 / (4 (1 + min(x, 0))^4)``: ``_cubic(x) - _quartic_gap(x) <= ln(1 + x)`` for every ``x > -1``
    (the Lagrange remainder ``-x^4 / (4 (1 + xi)^4)``, ``xi`` between 0 and ``x``)."""
    cdef double q = 1.0 + (x if x < 0.0 else 0.0)
    return 0.25 * (x * x) * (x * x) / ((q * q) * (q * q))


cdef double _loglik(int K, Py_ssize_t G, double Phi, const double* ga, const double* gc, const double* u,
                    double N, double* abs_l) noexcept nogil:
    """``sum_g c_g ln(a_g Phi + u_g) - N ln Phi`` and (into ``abs_l``) ``sum_g |c_g ln h_g|``."""
    cdef Py_ssize_t g
    cdef double lik = 0.0, a = 0.0, l
    for g in range(G):
        l = gc[g] * log(ga[g] * Phi + u[g])
        lik += l
        a += fabs(l)
    abs_l[0] = a
    return lik - N * log(Phi)


cdef double _fresh_sums(const double* z, int K, int k, double zk, double sh, Py_ssize_t G, const int32_t* t_ptr,
                        const int32_t* t_grp, const double* t_w, double* u) noexcept nogil:
    """``Phi = sum_c e^{z_c - sh}`` and ``u_g = sum_c t_w e^{z_c - sh}`` summed afresh, ``z_k`` replaced by ``zk``
    (``k = -1``: none); ``u`` overwritten, ``Phi`` returned.  ``O(K + sum deg)``."""
    cdef Py_ssize_t g
    cdef int c, i
    cdef double Phi = 0.0, e
    for g in range(G):
        u[g] = 0.0
    for c in range(K):
        e = exp((zk if c == k else z[c]) - sh)
        Phi += e
        for i in range(t_ptr[c], t_ptr[c + 1]):
            u[t_grp[i]] += t_w[i] * e
    return Phi


cdef double _jumps_incremental(double* z, int K, double lp, const double* props, const double* log_u,
                               const int32_t* order, int m, Py_ssize_t G, const double* ga, const double* gc,
                               double* u, const int32_t* t_ptr, const int32_t* t_grp, const double* t_w,
                               const double* prior, double* h_scratch, double* w_scratch) noexcept nogil:
    """The steps of :func:`coordinate_jumps_incremental` on raw pointers (``u`` updated in place).

    Bounds first (issue 28, round 5): a step on ``k`` changes ``h_g`` by the factor ``1 + x_g``,
    ``x_g = delta (a_g + w_g) / h_g`` (``w_g`` the weight of ``k`` in group ``g``, 0 for most), and
    ``l(x) = x - x^2/2 + x^3/3 - x^4 / (4 (1 + min(x, 0))^4) <= ln(1 + x) <= x - x^2/2 + x^3/3``.
    Summed, with ``S_p = sum_g c_g (a_g / h_g)^p`` (refreshed after an accepted step) and the exact
    terms of the ``deg_k`` groups that hold ``k``, they bound the log-likelihood ratio from above
    and below in ``O(deg_k)``.  When the upper bound is below ``ln u`` (the lower one above it) by
    more than ``1e-9`` times the magnitude of the terms -- far above the rounding of the exact
    evaluation, relative ``2 G 2^-53`` -- the step is rejected (accepted) as the exact evaluation
    would decide it, without its ``G`` logarithms.  The log-likelihood of the current state is then
    computed only when a step needs the exact evaluation and once at the end for ``lp`` (when a
    step was accepted).  The decisions, and so the chain, are those of the exact evaluation.

    Cancellation guard (issue 28, round 10).  ``Phi`` and ``u`` are updated by adding ``delta``;
    their rounding error is of order ``2^-52`` times the largest ``Phi`` since they were last
    summed afresh (``Phi_hi``).  A step that removes most of the mass (a dominant category proposed
    near zero: ``Phi + delta < Phi_hi / 2``) computed ``Phi_new`` and ``h_g`` as differences of
    nearly equal numbers -- on spiky ``theta`` with small ``rho`` (the other categories holding
    below ``~1e-15`` of the mass) garbage, which accepted swaps of the dominant category thousands
    of nats below the posterior's typical set.  Such a step now skips the bounds and is evaluated
    on ``Phi`` and ``u`` summed afresh from ``z`` with ``z_k`` replaced (``O(K + sum deg)``), which
    become the state's if it is accepted.  Every other step is computed as before.  When ``e^z``
    underflows as a whole (``Phi`` below ``2^-900``; the log-likelihood is invariant to scaling
    ``phi``), ``Phi`` and ``u`` are those of ``e^{z - max z}``.
    """
    cdef Py_ssize_t g
    cdef int j, k, i
    cdef double Phi = 0.0, N = 0.0, lik = 0.0, lik0 = 0.0, new_lik, delta, Phi_new, h, a, old
    cdef double S1 = 0.0, S2 = 0.0, S3 = 0.0, S4 = 0.0, A1 = 0.0, A3 = 0.0, rmax = 0.0, abs_l = 0.0
    cdef double upper, lower, scale, l, r, xb, xf, corr, corr_lo, corr_abs, lP, lPn, q, prior_sum = 0.0
    cdef bint lik_known = False, lik0_known = False, sums_known = False, moved = False, feasible, take, decided
    cdef double sh = 0.0, Phi_hi
    cdef bint fresh
    cdef double* inv_h = <double*> malloc(max(G, 1) * sizeof(double))
    cdef double* u_f = <double*> malloc(max(G, 1) * sizeof(double))
    cdef bint bound = inv_h != NULL
    if u_f == NULL:
        free(inv_h)
        return lp  # out of memory: no step (the state is left as it is; pi stays invariant)
    for k in range(K):
        Phi += exp(z[k])
    if not Phi > 2.0 ** -900:
        # e^z underflows as a whole: the same likelihood on e^{z - max z} (scale-invariant)
        sh = z[0]
        for k in range(1, K):
            if z[k] > sh:
                sh = z[k]
        if sh > -INFINITY:
            Phi = _fresh_sums(z, K, -1, 0.0, sh, G, t_ptr, t_grp, t_w, u)
        else:
            sh = 0.0
    Phi_hi = Phi
    for g in range(G):
        N += gc[g]
    for j in range(m):
        k = order[j]
        old = z[k]
        a = prior[k]
        if not (props[j] > -INFINITY and props[j] < INFINITY):
            continue  # ln pi(z') = -inf: rejected, as in coordinate_jumps
        if sh == 0.0:
            delta = exp(props[j]) - exp(old)
        else:
            delta = exp(props[j] - sh) - exp(old - sh)
        Phi_new = Phi + delta
        fresh = delta < 0.0 and not Phi_new >= 0.5 * Phi_hi
        if fresh:
            # most of the mass removed: Phi_new and u summed afresh (no cancellation)
            Phi_new = _fresh_sums(z, K, k, props[j], sh, G, t_ptr, t_grp, t_w, u_f)
        if not Phi_new > 0.0:
            continue
        for i in range(t_ptr[k], t_ptr[k + 1]):
            w_scratch[t_grp[i]] += t_w[i]
        take = False
        decided = False
        if bound and not fresh:
            if not sums_known:
                S1 = S2 = S3 = S4 = A1 = A3 = rmax = 0.0
                abs_l = 0.0
                for g in range(G):
                    h = ga[g] * Phi + u[g]
                    inv_h[g] = 1.0 / h
                    r = ga[g] * inv_h[g]
                    S1 += gc[g] * r
                    S2 += gc[g] * r * r
                    S3 += gc[g] * r * r * r
                    S4 += gc[g] * (r * r) * (r * r)
                    A1 += fabs(gc[g] * r)
                    A3 += fabs(gc[g] * r * r * r)
                    if r > rmax:
                        rmax = r
                    abs_l += fabs(gc[g]) * (h - 1.0 if h >= 1.0 else 1.0 / h - 1.0)  # >= |ln h|
                sums_known = True
            corr = 0.0
            corr_lo = 0.0
            corr_abs = 0.0
            feasible = True
            for i in range(t_ptr[k], t_ptr[k + 1]):
                g = t_grp[i]
                if h_scratch[g] != -1.0:  # each group once (h_scratch is free until the exact evaluation)
                    h_scratch[g] = -1.0
                    xb = delta * ga[g] * inv_h[g]
                    xf = delta * (ga[g] + w_scratch[g]) * inv_h[g]
                    if not xf > -1.0:
                        feasible = False
                    corr += gc[g] * (_cubic(xf) - _cubic(xb))
                    corr_lo += gc[g] * (_cubic(xf) - _quartic_gap(xf) - _cubic(xb))
                    corr_abs += fabs(gc[g] * _cubic(xf)) + fabs(gc[g] * _quartic_gap(xf)) + fabs(gc[g] * _cubic(xb))
            for i in range(t_ptr[k], t_ptr[k + 1]):
                h_scratch[t_grp[i]] = 0.0
            lP = log(Phi)
            lPn = log(Phi_new)
            upper = delta * S1 - 0.5 * delta * delta * S2 + delta * delta * delta * S3 / 3.0 - N * (lPn - lP)
            q = 1.0 + (delta * rmax if delta < 0.0 else 0.0)
            scale = (abs_l + N * (fabs(lP) + fabs(lPn)) + fabs(delta) * A1 + 0.5 * delta * delta * S2
                     + fabs(delta * delta * delta) * A3 / 3.0 + corr_abs + 1.0)
            if upper + corr < log_u[j] - 1e-9 * scale:
                decided = True  # rejected
            elif feasible and q > 0.0:
                l = 0.25 * delta * delta * delta * delta * S4 / ((q * q) * (q * q))
                lower = upper - l + corr_lo
                scale += l
                if lower > log_u[j] + 1e-9 * scale:
                    decided = True
                    take = True
        if not decided:
            # the exact evaluation
            if not lik_known:
                lik = _loglik(K, G, Phi, ga, gc, u, N, &abs_l)
                lik_known = True
            if not lik0_known:
                lik0 = lik  # nothing accepted yet: the entry state
                lik0_known = True
            new_lik = 0.0
            for g in range(G):
                if fresh:
                    h = ga[g] * Phi_new + u_f[g]
                else:
                    h = ga[g] * Phi_new + u[g] + delta * w_scratch[g]
                h_scratch[g] = h
                new_lik += gc[g] * log(h)
            new_lik -= N * log(Phi_new)
            if new_lik > -INFINITY and new_lik < INFINITY and log_u[j] < new_lik - lik:
                take = True
                lik = new_lik
                lik_known = True
        if take:
            if not lik0_known:
                lik0 = _loglik(K, G, Phi, ga, gc, u, N, &abs_l)  # the entry state (nothing accepted yet)
                lik0_known = True
            if decided:
                lik_known = False  # accepted by the bound: the new state's log-likelihood is not computed
            if fresh:
                for g in range(G):
                    u[g] = u_f[g]
                Phi_hi = Phi_new  # summed afresh: the reference of the rounding from here
            else:
                for i in range(t_ptr[k], t_ptr[k + 1]):
                    u[t_grp[i]] += delta * t_w[i]
                if Phi_new > Phi_hi:
                    Phi_hi = Phi_new
            prior_sum += (a * props[j] - exp(props[j])) - (a * old - exp(old))
            Phi = Phi_new
            z[k] = props[j]
            sums_known = False
            moved = True
        for i in range(t_ptr[k], t_ptr[k + 1]):
            w_scratch[t_grp[i]] = 0.0
    if moved:
        if not lik_known:
            lik = _loglik(K, G, Phi, ga, gc, u, N, &abs_l)
        lp += lik - lik0 + prior_sum
    free(inv_h)
    free(u_f)
    return lp


# --------------------------------------------------------------------------------------
# The exact log-likelihood of many draws (importance weights of decoder='importance')
# --------------------------------------------------------------------------------------

def exact_loglik_many(const double[:, ::1] draws, const int32_t[::1] a_ptr, const int32_t[::1] a_idx,
                      const int32_t[::1] y, const double[::1] f_in, const double[::1] f_y, const double[::1] f_out,
                      const double[::1] count, double[::1] out):
    """``out[m] = sum_g count_g ln(f_out_g + (f_in_g - f_out_g) sum_{x in A_g} theta_x + (f_y_g - f_out_g)
    theta_{y_g})`` for every row ``theta = draws[m]`` (the grouped likelihood of ``_posterior.Groups``, CSR
    member lists ``a_ptr, a_idx``; ``y_g = -1``: no special category).  ``O(M sum_g |A_g|)`` gathers and
    ``M G`` logarithms, without the GIL; a probability ``<= 0`` gives ``-inf``."""
    cdef Py_ssize_t M = draws.shape[0], G = count.shape[0], m, g
    cdef int32_t i
    cdef double s, P, ll
    if a_ptr.shape[0] != G + 1 or y.shape[0] != G or f_in.shape[0] != G or f_y.shape[0] != G \
            or f_out.shape[0] != G or out.shape[0] != M:
        raise ValueError("exact_loglik_many: inconsistent group arrays")
    if G and a_ptr[G] > a_idx.shape[0]:
        raise ValueError("exact_loglik_many: a_idx shorter than a_ptr says")
    with nogil:
        for m in range(M):
            ll = 0.0
            for g in range(G):
                s = 0.0
                for i in range(a_ptr[g], a_ptr[g + 1]):
                    s = s + draws[m, a_idx[i]]
                P = f_out[g] + (f_in[g] - f_out[g]) * s
                if y[g] >= 0:
                    P = P + (f_y[g] - f_out[g]) * draws[m, y[g]]
                if P > 0.0:
                    ll = ll + count[g] * log(P)
                elif count[g] > 0.0:
                    ll = -INFINITY
                    break
            out[m] = ll
