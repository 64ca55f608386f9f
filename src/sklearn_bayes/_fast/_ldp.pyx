# cython: language_level=3
"""Kernels for :class:`sklearn_bayes.AdaptiveLDPFrequencyEstimator` (AdOBEst-LDP).

Random numbers
--------------
Every kernel draws its random numbers from the ``bitgen_t`` of the caller's
:class:`numpy.random.Generator` (``generator.bit_generator.capsule``), under the bit
generator's lock.  The stream therefore lives in a picklable numpy object, results are
reproducible from the estimator's ``random_state`` and splitting a stream into several
``partial_fit`` calls consumes exactly the same numbers.  Uniforms are ``next_double``;
uniform integers in ``[0, n)`` are exactly uniform (Lemire's multiply-shift on 32 bits
with rejection, see ``_randint``); standard normals use the
Marsaglia-Tsang ziggurat (128 layers) on 64-bit draws (layer from the low 7 bits, the
signed value from the high 32 bits).

Storage of responses
--------------------
A response is ``(y, sid)``: ``y`` the released category (0-based) and ``sid`` the row of
a table of distinct subsets (``masks[sid, x] = 1`` iff ``x`` is in the subset,
``sid_k[sid] = |S|``, ``members[sid, :|S|]`` its elements).  ``consts[k]`` holds, for subset size ``k``, the values of the
RRRR likelihood ``g(y | x)`` (at most three distinct values per response), in the
columns named by the enum below (``CONST_COLUMNS``; the same names and order as
``CONST_FIELDS`` in ``privacy/_rrrr.py``, which builds the table):

======  ===========================  ====================================
column  value                        meaning
======  ===========================  ====================================
A1      a1 = e^{e1} / A              y in S, x = y   (also P(keep) in SRR on S+R)
A0      a0 = 1 / A                   y in S, x != y; and y in S, x not in S
B_SELF  b_self = e^{e1+e2} / (A B)   y not in S, x = y
B_IN    b_in = 1 / ((K - k) A)       y not in S, x in S
B_OUT   b_out = e^{e1} / (A B)       y not in S, x not in S, x != y
R_KEEP  r = e^{e2} / B               P(keep) of SRR on S^c with e2
======  ===========================  ====================================

with ``A = e^{e1} + k`` and ``B = e^{e2} + K - k - 1``.
"""

import numpy as np

cimport numpy as cnp
from libc.float cimport DBL_EPSILON
from libc.math cimport INFINITY, exp, fabs, log, sqrt
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from sklearn_bayes._fast._ldp_rng cimport _Rng, _bitgen, _normal, _unif

cnp.import_array()

cdef enum:  # columns of the RRRR constants table (privacy/_rrrr.py: CONST_FIELDS)
    A1 = 0
    A0 = 1
    B_SELF = 2
    B_IN = 3
    B_OUT = 4
    R_KEEP = 5

cdef enum:  # optional columns of the simulation table (privacy/_ldp/_rrrr_grid.py: simulation_table)
    T1 = 6  # the outer SRR's exact rare-branch threshold on the 2^-53 grid (<= 0: not given)
    T2 = 7  # the SRR on S^c's

#: The column names and indices as the kernels use them (tests check them against ``_rrrr.py``).
CONST_COLUMNS = {"a1": A1, "a0": A0, "b_self": B_SELF, "b_in": B_IN, "b_out": B_OUT, "r": R_KEEP}

cdef inline int _randint(_Rng* r, int n) noexcept nogil:
    # exactly uniform on [0, n): Lemire's multiply-shift on 32 random bits with rejection of
    # the 2^32 mod n low products that would favour some outputs (the plain multiply-shift is
    # uniform only up to n / 2^32, and a privacy mechanism's outputs must have their exact
    # probabilities; a rejection happens with probability below n / 2^32)
    cdef uint64_t m = <uint64_t>r.bg.next_uint32(r.bg.state) * <uint64_t>n
    cdef uint32_t low = <uint32_t>m
    cdef uint32_t t
    if low < <uint32_t>n:
        t = (<uint32_t>0 - <uint32_t>n) % <uint32_t>n
        while low < t:
            m = <uint64_t>r.bg.next_uint32(r.bg.state) * <uint64_t>n
            low = <uint32_t>m
    return <int>(m >> 32)


cdef inline bint _rare(_Rng* r, double q) noexcept nogil:
    # Bernoulli(q) for the rare branch of a randomised response, never rounded down: the
    # uniform is reflected on numpy's 53-bit grid (1 - 2^-53 - u, exact), so
    # P(rare) = ceil(q 2^53) / 2^53 >= q and, with q floored at the smallest double, the
    # rare outputs stay possible at every epsilon; "u < keep" with keep = 1 - q rounded the
    # rare probability down, to exactly 0 once q < 2^-54.  The reflection keeps a seeded
    # stream's outcomes those of "u < keep" except on the grid points next to the threshold.
    return _rare_given(_unif(r), q)


cdef inline bint _rare_given(double u, double q) noexcept nogil:
    return (0.99999999999999988897769753748434595763683319091796875 - u) < q


def rare_given(double u, double q):
    """The rare-branch decision of the RRRR sampler for the uniform ``u`` (tests)."""
    return bool(_rare_given(u, _rare_probability(q)))


# --------------------------------------------------------------------------------------
# RRRR sampling (Algorithm 8)
# --------------------------------------------------------------------------------------

cdef inline double _rare_probability(double q) noexcept nogil:
    # a few units in the last place up (q comes from products of rounded constants) and
    # never 0 (an underflow would make the rare outputs impossible)
    q = q * (1.0 + 8.0 * 2.220446049250313e-16)
    return q if q > 4.9406564584124654e-324 else 4.9406564584124654e-324


cdef inline int _rrrr_one(_Rng* r, int x, const int32_t* sigma, const int32_t* pos, int k, int K,
                          const double* c, Py_ssize_t ncols) noexcept nogil:
    """One RRRR draw: S = sigma[:k], S^c = sigma[k:], pos = inverse of sigma; ``c`` is the
    size-k row (a1, a0, b_self, b_in, b_out, r[, t1, t2]) of the RRRR constants table.

    With the exact grid thresholds ``t1, t2`` (``ncols >= 8``, ``t1 > 0``) the rare branches are
    drawn with exactly those probabilities.  Otherwise each keep/leave branch draws its rare
    side with :func:`_rare`: ``drop1 = 1 - a1`` is ``k a0`` (``(K - 1) a0`` for plain SRR) and
    ``drop2 = 1 - r = (K - k - 1) / B`` is ``(K - k - 1) b_out / a1``, both rounded up by
    :func:`_rare_probability`."""
    if ncols >= 8 and c[T1] > 0.0:
        return _rrrr_draw(r, x, sigma, pos, k, K, c[T1], c[T2])
    cdef double drop1 = _rare_probability((K - 1 if k == 0 else k) * c[A0])
    cdef double drop2 = 0.0
    if k > 0 and pos[x] >= k and K - k > 1:
        drop2 = _rare_probability((K - k - 1) * (c[B_OUT] / c[A1]))
    return _rrrr_draw(r, x, sigma, pos, k, K, drop1, drop2)


cdef inline int _rrrr_draw(_Rng* r, int x, const int32_t* sigma, const int32_t* pos, int k, int K,
                           double drop1, double drop2) noexcept nogil:
    """One RRRR draw given the rare branches' probabilities ``drop1`` (outer SRR) and ``drop2``
    (SRR on S^c, read only when x is not in S and |S^c| > 1)."""
    cdef int px = pos[x]
    cdef int j, rr, sc = K - k
    if k == 0:
        # plain SRR(x; [K], eps): keep x with e^eps / (e^eps + K - 1)
        if not _rare(r, drop1):
            return x
        j = _randint(r, K - 1)
        if j >= px:
            j += 1
        return sigma[j]
    if px < k:
        # x in S: R ~ Uniform(S^c); Y = SRR(x; S + {R}, e1)
        rr = sigma[k + _randint(r, sc)]
        if not _rare(r, drop1):
            return x
        # uniform over (S \ {x}) + {R}: k elements
        j = _randint(r, k)
        if j == px:
            return rr
        return sigma[j]
    # x not in S: R = SRR(x; S^c, e2)
    if sc == 1 or not _rare(r, drop2):
        rr = x
    else:
        j = k + _randint(r, sc - 1)
        if j >= px:
            j += 1
        rr = sigma[j]
    # Y = SRR(R; S + {R}, e1)
    if not _rare(r, drop1):
        return rr
    return sigma[_randint(r, k)]


def rrrr_sample(object generator, const int32_t[::1] x, const int32_t[::1] sigma,
                int k, const double[::1] consts_k, int32_t[::1] out):
    """Privatise every ``x[i]`` with RRRR on ``S = sigma[:k]`` into ``out[i]``.

    ``consts_k`` is the size-``k`` row of the RRRR constants table (a1, a0, b_self, b_in,
    b_out, r; see ``privacy/_rrrr.py``).
    """
    cdef int K = sigma.shape[0]
    cdef Py_ssize_t i, n = x.shape[0]
    cdef _Rng r
    cdef int32_t[::1] pos = np.empty(K, dtype=np.int32)
    for i in range(K):
        pos[sigma[i]] = <int32_t>i
    r.bg = _bitgen(generator)
    r.has_spare = 0
    with generator.bit_generator.lock, nogil:
        for i in range(n):
            out[i] = _rrrr_one(&r, x[i], &sigma[0], &pos[0], k, K, &consts_k[0], consts_k.shape[0])


def rrrr_sample_thresholds(object generator, const int32_t[::1] x, const int32_t[::1] sigma,
                           int k, double t1, double t2, int32_t[::1] out):
    """:func:`rrrr_sample` with the rare branches' probabilities given: ``t1`` (outer SRR) and ``t2``
    (SRR on S^c), multiples of 2^-53 in (0, 1), each realised exactly (``P(rare) = t``)."""
    cdef int K = sigma.shape[0]
    cdef Py_ssize_t i, n = x.shape[0]
    cdef _Rng r
    cdef int32_t[::1] pos = np.empty(K, dtype=np.int32)
    for i in range(K):
        pos[sigma[i]] = <int32_t>i
    r.bg = _bitgen(generator)
    r.has_spare = 0
    with generator.bit_generator.lock, nogil:
        for i in range(n):
            out[i] = _rrrr_draw(&r, x[i], &sigma[0], &pos[0], k, K, t1, t2)


def rare_given_threshold(double u, double t):
    """The rare-branch decision of :func:`rrrr_sample_thresholds` for the uniform ``u`` (tests)."""
    return bool(_rare_given(u, t))


# --------------------------------------------------------------------------------------
# log-likelihood gradient
# --------------------------------------------------------------------------------------

ctypedef struct _SidScratch:
    int64_t stamp
    double thS
    double coef
    int64_t row0


cdef double _grad_lik(const double* theta, int K, const int32_t* ys, const int32_t* sids,
                      const int64_t* idx, Py_ssize_t nb,
                      const uint8_t[:, ::1] masks, const int32_t[:, ::1] members,
                      const int32_t* sid_k, const double[:, ::1] lk,
                      double* point, _SidScratch* scratch,
                      int32_t* touched, int64_t step_id, double* loglik) noexcept nogil:
    """Accumulate sum_b g_b(x) / h_b for b in idx (or 0..nb-1 if idx is NULL).

    ``g_b(x) = c0 + c1 [x in S_b] + c2 [x = y_b]`` with ``(c0, c1, c2) = lk[2 k + [y in S]]``
    (see :func:`_lk_table`), so ``h_b = c0 + c1 theta(S_b) + c2 theta_{y_b}``; the sums
    theta(S) are computed once per distinct subset and step (``stamp``).  Returns the
    scalar part; ``point[x]`` receives the rest.  ``point`` must be zero on entry.  The
    sum of ln h_b is added to ``loglik`` if it is not NULL.
    """
    cdef Py_ssize_t b, t, j
    cdef int y, s, k, row, ntouched = 0
    cdef double base = 0.0, h, ih, ts, c, c0, c1, c2
    cdef _SidScratch* sc
    cdef const double* lr
    for b in range(nb):
        if idx != NULL:
            t = idx[b]
        else:
            t = b
        y = ys[t]
        s = sids[t]
        sc = &scratch[s]
        if sc.stamp != step_id:
            k = sid_k[s]
            sc.stamp = step_id
            ts = 0.0
            for j in range(k):
                ts += theta[members[s, j]]
            sc.thS = ts
            sc.coef = 0.0
            sc.row0 = 2 * k
            touched[ntouched] = s
            ntouched += 1
        row = sc.row0 + masks[s, y]
        lr = &lk[row, 0]
        c0 = lr[0]
        c1 = lr[1]
        c2 = lr[2]
        h = c0 + c1 * sc.thS + c2 * theta[y]
        ih = 1.0 / h
        base += c0 * ih
        sc.coef += c1 * ih
        point[y] += c2 * ih
        if loglik != NULL:
            loglik[0] += log(h)
    for b in range(ntouched):
        s = touched[b]
        c = scratch[s].coef
        for j in range(sid_k[s]):
            point[members[s, j]] += c
    return base


def _lk_table(const double[:, ::1] consts):
    """Rows 2k (y not in S) and 2k+1 (y in S) of (c0, c1, c2): g(y | x) = c0 + c1 [x in S] + c2 [x = y]."""
    cdef int K = consts.shape[0], k
    out = np.zeros((2 * K, 3))
    cdef double[:, ::1] o = out
    for k in range(K):
        o[2 * k, 0] = consts[k, B_OUT]
        o[2 * k, 1] = consts[k, B_IN] - consts[k, B_OUT] if k > 0 else 0.0
        o[2 * k, 2] = consts[k, B_SELF] - consts[k, B_OUT]
        o[2 * k + 1, 0] = consts[k, A0]
        o[2 * k + 1, 1] = 0.0
        o[2 * k + 1, 2] = consts[k, A1] - consts[k, A0]
    return out


cdef struct _Store:
    int K
    int32_t* ys
    int32_t* sids
    int32_t* sid_k
    double* prior
    double* point
    double* grad
    double* theta
    _SidScratch* scratch
    int32_t* touched
    int64_t* idx


cdef int64_t _sgld_step(_Rng* r, _Store* st, double* phi, Py_ssize_t n, int batch_size,
                        double gamma, const uint8_t[:, ::1] masks, const int32_t[:, ::1] members,
                        const double[:, ::1] lk, int64_t step_id) noexcept nogil:
    """One SGLD step on phi using n stored responses; returns the next step id."""
    cdef int K = st.K
    cdef int i
    cdef Py_ssize_t b, nb
    cdef double ssum = 0.0, base, scale, sg = sqrt(gamma), v
    cdef uint64_t u
    cdef int64_t b0
    for i in range(K):
        ssum += phi[i]
    for i in range(K):
        st.theta[i] = phi[i] / ssum
        st.point[i] = 0.0
    if n > 0:
        if n <= batch_size:
            nb = n
            base = _grad_lik(st.theta, K, st.ys, st.sids, NULL, nb, masks, members, st.sid_k, lk,
                             st.point, st.scratch, st.touched, step_id, NULL)
        else:
            nb = batch_size
            # a uniformly random circular block of nb consecutive responses
            u = r.bg.next_uint64(r.bg.state)
            b0 = <int64_t>(((u & 0xFFFFFFFFULL) * <uint64_t>n) >> 32)
            for b in range(nb):
                st.idx[b] = b0 + b if b0 + b < n else b0 + b - n
            base = _grad_lik(st.theta, K, st.ys, st.sids, st.idx, nb, masks, members, st.sid_k, lk,
                             st.point, st.scratch, st.touched, step_id, NULL)
        scale = (<double>n / <double>nb) / ssum
    else:
        base = 0.0
        nb = 0
        scale = 0.0
    for i in range(K):
        v = -1.0
        if st.prior[i] != 1.0:
            v += (st.prior[i] - 1.0) / phi[i]
        v += scale * (base + st.point[i] - nb)
        v = phi[i] + 0.5 * gamma * v + sg * _normal(r)
        if v < 0.0:
            v = -v
        phi[i] = v
    return step_id + 1


cdef inline bint _before(const double* theta, int a, int b) noexcept nogil:
    return theta[a] > theta[b] or (theta[a] == theta[b] and a < b)


cdef void _insertion_sort(const double* theta, int32_t* sigma, int K) noexcept nogil:
    """Sort sigma by decreasing theta, ties by index (sigma is nearly sorted in practice)."""
    cdef int i, j, v
    for i in range(1, K):
        v = sigma[i]
        j = i - 1
        while j >= 0 and _before(theta, v, sigma[j]):
            sigma[j + 1] = sigma[j]
            j -= 1
        sigma[j + 1] = v



cdef double _utility_k(int mode, int k, int K, const double* ts, const double* cum,
                       double Q, const double* cumsq, const double* c, int e,
                       double* h, double* A, double* F) noexcept nogil:
    """Utility of the prefix S = {0..k-1} in sorted coordinates (ts = sorted theta).

    mode 5 fisher (U1, eliminating sorted position e), 6 entropy (U2), 7 TV posterior
    (U3), 8 TV marginal (U4), 9 MSE (U5).  Each costs O(K) per k, using that g is
    diagonal plus rank two (its columns take <= 3 values).
    """
    cdef double a1 = c[A1], a0 = c[A0], bself = c[B_SELF], bin_ = c[B_IN], bout = c[B_OUT]
    cdef double tS = cum[k], QS = cumsq[k], out = 0.0, num, SA0, SBin, SBout, v, d
    cdef int y, x, i, j, m, jj, ii
    cdef int n1 = K - 1
    for y in range(K):
        if y < k:
            h[y] = a0 + (a1 - a0) * ts[y]
        else:
            h[y] = bin_ * tS + bout * (1.0 - tS - ts[y]) + bself * ts[y]
    if mode == 6:
        for y in range(K):
            if h[y] > 0:
                out += h[y] * log(h[y])
        return out
    if mode == 8:
        for y in range(K):
            out += fabs(h[y] - ts[y])
        return -0.5 * out
    if mode == 9:
        for y in range(K):
            if y < k:
                num = a1 * a1 * ts[y] * ts[y] + a0 * a0 * (Q - ts[y] * ts[y])
            else:
                num = bin_ * bin_ * QS + bout * bout * (Q - QS - ts[y] * ts[y]) + bself * bself * ts[y] * ts[y]
            out += num / h[y]
        return out - 1.0
    if mode == 7:
        SA0 = 0.0
        SBin = 0.0
        SBout = 0.0
        for y in range(K):
            if y < k:
                SA0 += fabs(a0 - h[y])
            else:
                SBin += fabs(bin_ - h[y])
                SBout += fabs(bout - h[y])
        for x in range(K):
            if x < k:
                v = SA0 - fabs(a0 - h[x]) + fabs(a1 - h[x]) + SBin
            else:
                v = SA0 + SBout - fabs(bout - h[x]) + fabs(bself - h[x])
            out += ts[x] * v
        return 0.5 * out
    # mode 5: Fisher, O(K).  On the simplex's tangent space g acts as
    # M = diag(c2) + c1 s^T (s = indicator of S), so the information is
    # N = M^T diag(1/h) M = diag(d) + U B U^T with d = c2^2/h, U = [s, p], p = c1 c2/h,
    # B = [[sig, 1], [1, 0]], sig = sum c1^2/h.  The constrained Cramer-Rao covariance
    # is C = N^-1 - z z^T / (1^T z), z = N^-1 1 (Woodbury), and eliminating the sorted
    # position e gives tr F^-1 = tr C - C_ee.
    cdef double c1y, c2y, sig = 0.0, Sss = 0.0, Ssp = 0.0, Spp = 0.0, Rss = 0.0, Rsp = 0.0, Rpp = 0.0
    cdef double q0 = 0.0, q1 = 0.0, trinv = 0.0, H00, H01, H11, det, G00, G01, G11, al, be
    cdef double sy, py, dy, z, sumz = 0.0, sumz2 = 0.0, ze = 0.0, Nee
    for y in range(K):
        if y < k:
            c1y = 0.0
            c2y = a1 - a0
        else:
            c1y = bin_ - bout if k > 0 else 0.0
            c2y = bself - bout
        dy = c2y * c2y / h[y]
        if not (dy > 0.0):
            return -INFINITY
        A[y] = dy
        py = c1y * c2y / h[y]
        F[y] = py
        sig += c1y * c1y / h[y]
        sy = 1.0 if y < k else 0.0
        trinv += 1.0 / dy
        Sss += sy / dy
        Ssp += sy * py / dy
        Spp += py * py / dy
        Rss += sy / (dy * dy)
        Rsp += sy * py / (dy * dy)
        Rpp += py * py / (dy * dy)
        q0 += sy / dy
        q1 += py / dy
    H00 = Sss
    H01 = 1.0 + Ssp
    H11 = -sig + Spp
    det = H00 * H11 - H01 * H01
    if det == 0.0:
        return -INFINITY
    G00 = H11 / det
    G01 = -H01 / det
    G11 = H00 / det
    trinv -= G00 * Rss + 2.0 * G01 * Rsp + G11 * Rpp
    al = G00 * q0 + G01 * q1
    be = G01 * q0 + G11 * q1
    for y in range(K):
        sy = 1.0 if y < k else 0.0
        z = (1.0 - sy * al - F[y] * be) / A[y]
        sumz += z
        sumz2 += z * z
        if y == e:
            ze = z
    sy = 1.0 if e < k else 0.0
    py = F[e]
    dy = A[e]
    Nee = 1.0 / dy - (G00 * sy * sy + 2.0 * G01 * sy * py + G11 * py * py) / (dy * dy)
    out = trinv - sumz2 / sumz - Nee + ze * ze / sumz
    if not (out == out) or out == INFINITY or out == -INFINITY:
        return -INFINITY
    return -out


#: Ties of the subset choice (``privacy/_utilities.py``: ``TIE_ULPS``, ``tie_argmax``): utilities
#: within ``TIE_ULPS * K * DBL_EPSILON * max(1, max |U_k|)`` of the largest are ties, and the
#: smallest prefix size among them wins.
cdef enum:
    _TIE_ULPS = 8
TIE_ULPS = _TIE_ULPS


cdef int _tie_argmax(const double* u, int K) noexcept nogil:
    """The smallest ``k`` whose finite ``u[k]`` is within the tie tolerance of the largest finite one.

    A utility is a sum of ``O(K)`` terms each of magnitude at most ``max(1, |U|)`` (probabilities
    times constants <= 1, or the Fisher trace itself): two evaluations of it in different orders
    (a SIMD width, the numpy reference path) differ by at most a few ``K`` ulps of that, so
    values closer than the tolerance are treated as equal and the choice never depends on
    rounding.  Non-finite values are never chosen; all non-finite: ``0``.  The Python twin
    :func:`sklearn_bayes.privacy._ldp._utilities.tie_argmax` performs the same arithmetic.
    """
    cdef int k
    cdef double best = -INFINITY, scale = 1.0, tol, a
    for k in range(K):
        a = fabs(u[k])
        if a < INFINITY:  # finite (NaN compares false)
            if u[k] > best:
                best = u[k]
            if a > scale:
                scale = a
    if best == -INFINITY:
        return 0
    tol = (<double>_TIE_ULPS * K) * DBL_EPSILON * scale
    for k in range(K):
        if fabs(u[k]) < INFINITY and u[k] >= best - tol:
            return k
    return 0


def tie_argmax(const double[::1] u):
    """The compiled tie rule of the subset choice (see :func:`_tie_argmax`); for tests."""
    cdef int K = u.shape[0]
    if K == 0:
        raise ValueError("tie_argmax: no values.")
    return _tie_argmax(&u[0], K)


ctypedef struct _Choice:
    # scratch of the subset choice: K doubles each (cum, cumsq: K + 1)
    double* u  # the utility of every prefix size
    double* theta
    double* ts
    double* cum
    double* cumsq
    double* h
    double* A
    double* F


cdef _Choice _choice_scratch(double[::1] buf, int K):
    """Pointers of a :class:`_Choice` into ``buf`` (at least ``8 K + 2`` doubles, kept alive by the caller)."""
    cdef _Choice c
    cdef double* b = &buf[0]
    c.u = b + 7 * K + 2
    c.theta = b
    c.ts = b + K
    c.cum = b + 2 * K
    c.cumsq = b + 3 * K + 1
    c.h = b + 4 * K + 2
    c.A = b + 5 * K + 2
    c.F = b + 6 * K + 2
    return c


cdef int _choose_k(int mode, int K, const double* phi, int32_t* sigma, const double[:, ::1] consts,
                   double alpha, _Choice* w) noexcept nogil:
    """The chosen prefix size for ``theta = phi / sum(phi)`` (modes 1-3, 5-9 of :func:`run_online`).

    Sorts ``sigma`` in place by decreasing ``theta`` (ties by index; insertion sort, as
    ``sigma`` is nearly sorted between users) and writes ``theta`` to ``w.theta``.  The one
    implementation of the built-in utilities' choice: the online loop and
    :func:`choose_prefix` (``propose_subset``, ``propose_subsets``) both call it.  The
    utilities of all prefix sizes go to ``w.u`` and :func:`_tie_argmax` picks (ties, within
    a tolerance derived from the arithmetic, go to the smallest size).
    """
    cdef int j, k, e_pos = 0
    cdef double ssum = 0.0, cum, cumsq
    cdef double* theta = w.theta
    for j in range(K):
        ssum += phi[j]
    for j in range(K):
        theta[j] = phi[j] / ssum
    _insertion_sort(theta, sigma, K)
    if mode == 1:
        cum = 0.0
        for k in range(K):
            w.u[k] = consts[k, A1] * (cum + consts[k, R_KEEP] * (1.0 - cum))
            cum += theta[sigma[k]]
        return _tie_argmax(w.u, K)
    if mode == 2:
        cum = 0.0
        for j in range(K - 1):
            cum += theta[sigma[j]]
            if cum >= alpha:
                return j + 1
        return K - 1
    if mode == 3:
        return 0
    cum = 0.0
    cumsq = 0.0
    for j in range(K):
        w.ts[j] = theta[sigma[j]]
        w.cum[j] = cum
        w.cumsq[j] = cumsq
        cum += w.ts[j]
        cumsq += w.ts[j] * w.ts[j]
        if sigma[j] == K - 1:
            e_pos = j
    w.cum[K] = cum
    w.cumsq[K] = cumsq
    for k in range(K):
        w.u[k] = _utility_k(mode, k, K, w.ts, w.cum, cumsq, w.cumsq, &consts[k, 0], e_pos, w.h, w.A, w.F)
    return _tie_argmax(w.u, K)


def choose_prefix(int mode, const double[::1] phi, int32_t[::1] sigma, const double[:, ::1] consts,
                  double alpha=0.0):
    """Size of the prefix of ``sigma`` chosen for ``theta = phi / sum(phi)`` (modes 1-3, 5-9).

    ``sigma`` (a permutation of ``0..K-1``) is sorted in place by decreasing ``theta``,
    ties by index: the subset is ``sigma[:k]``.  The same kernel as the online loop.
    """
    cdef int K = phi.shape[0], k
    if sigma.shape[0] != K or consts.shape[0] < K or consts.shape[1] < 6:
        raise ValueError("choose_prefix: sigma must have K entries and consts K rows of at least 6 columns.")
    if mode not in (1, 2, 3, 5, 6, 7, 8, 9):
        raise ValueError(f"choose_prefix: unknown mode {mode}.")
    cdef double[::1] buf = np.zeros(8 * K + 2)
    cdef _Choice w = _choice_scratch(buf, K)
    with nogil:
        k = _choose_k(mode, K, &phi[0], &sigma[0], consts, alpha, &w)
    return k


def prefix_utilities(int mode, const double[::1] theta, const int32_t[::1] sigma, const double[:, ::1] consts):
    """Utility (mode 5-9, see :func:`_utility_k`) of every prefix of ``sigma``; for tests."""
    cdef int K = theta.shape[0], j, k, e = 0
    out = np.zeros(K)
    cdef double[::1] o = out
    cdef double[::1] ts = np.zeros(K)
    cdef double[::1] cumv = np.zeros(K + 1)
    cdef double[::1] cumsqv = np.zeros(K + 1)
    cdef double[::1] hv = np.zeros(K)
    cdef double[::1] Aw = np.zeros(K)
    cdef double[::1] Fw = np.zeros(K)
    cdef double cum = 0.0, cumsq = 0.0
    for j in range(K):
        ts[j] = theta[sigma[j]]
        cumv[j] = cum
        cumsqv[j] = cumsq
        cum += ts[j]
        cumsq += ts[j] * ts[j]
        if sigma[j] == K - 1:
            e = j
    cumv[K] = cum
    cumsqv[K] = cumsq
    for k in range(K):
        o[k] = _utility_k(mode, k, K, &ts[0], &cumv[0], cumsq, &cumsqv[0], &consts[k, 0], e,
                          &hv[0], &Aw[0], &Fw[0])
    return out


def run_online(object generator, double[::1] phi, int32_t[::1] sigma,
               int32_t[::1] ys, int32_t[::1] sids, uint8_t[:, ::1] masks, int32_t[:, ::1] members,
               int32_t[::1] sid_k,
               const double[:, ::1] consts, const double[::1] prior,
               Py_ssize_t n_old, int n_sids_old,
               const int32_t[::1] values, const int32_t[::1] given,
               int mode, double alpha, const double[::1] gammas,
               int n_steps, int batch_size, int32_t[::1] k_out):
    """Process ``len(values)`` users one at a time (Algorithm 7 with SGLD).

    mode 0: ``values`` are released responses with subset ids ``given`` (deployment).
    mode 1: 'honest' (U6); 2: semi-adaptive(alpha); 3: non-adaptive; 4: subset size
    ``given[i]`` chosen by the caller; 5-9: U1 (Fisher), U2 (entropy), U3 (TV posterior),
    U4 (TV marginal), U5 (MSE) computed here (see :func:`_utility_k`).  In modes 1-4 ``values`` are the true categories,
    the subset is the first k of the categories sorted by the current theta, and the user
    is privatised with RRRR here.  A new subset row is appended to ``masks`` only when it
    differs from the previous user's subset.  ``sigma`` (the sort order) is kept
    between calls.  Returns the number of subset rows now in use.
    """
    cdef int K = phi.shape[0]
    cdef Py_ssize_t n_new = values.shape[0], i, t
    cdef int j, k, x, y, s, n_sids = n_sids_old, prev_sid = -1, same
    cdef int64_t step_id = 1
    cdef _Rng r
    cdef _Store st
    cap = max(n_sids_old + n_new, 1)
    cdef int64_t[::1] scratch = np.zeros(4 * cap, dtype=np.int64)  # _SidScratch[cap]
    cdef int32_t[::1] touched = np.zeros(max(batch_size, 1) + 1, dtype=np.int32)
    cdef const double[:, ::1] lk = _lk_table(consts)
    cdef int64_t[::1] idx = np.zeros(max(batch_size, 1) + 1, dtype=np.int64)
    cdef double[::1] point = np.zeros(K)
    cdef double[::1] grad = np.zeros(K)
    cdef double[::1] theta = np.zeros(K)
    cdef int32_t[::1] pos = np.zeros(K, dtype=np.int32)
    cdef double[::1] choice_buf = np.zeros(8 * K + 2)
    cdef _Choice ch = _choice_scratch(choice_buf, K)
    ch.theta = &theta[0]  # the choice writes theta where the SGLD step reads it (one K-vector hot in cache)
    if n_sids_old > 0:
        prev_sid = -2  # unknown: compare with nothing, always allocate first
    st.K = K
    st.ys = &ys[0]
    st.sids = &sids[0]
    st.sid_k = &sid_k[0]
    st.prior = <double*>&prior[0]
    st.point = &point[0]
    st.grad = &grad[0]
    st.theta = &theta[0]
    st.scratch = <_SidScratch*>&scratch[0]
    st.touched = &touched[0]
    st.idx = &idx[0]
    r.bg = _bitgen(generator)
    r.has_spare = 0
    with generator.bit_generator.lock, nogil:
        for i in range(n_new):
            t = n_old + i
            if mode == 0:
                ys[t] = values[i]
                sids[t] = given[i]
                k_out[i] = sid_k[given[i]]
            else:
                # the subset: the first k categories by decreasing theta (mode 4: k from the caller)
                k = _choose_k(3 if mode == 4 else mode, K, &phi[0], &sigma[0], consts, alpha, &ch)
                if mode == 4:
                    k = given[i]
                for j in range(K):
                    pos[sigma[j]] = j
                x = values[i]
                y = _rrrr_one(&r, x, &sigma[0], &pos[0], k, K, &consts[k, 0], consts.shape[1])
                # subset row: reuse the previous one if identical
                same = 0
                if prev_sid >= 0 and sid_k[prev_sid] == k:
                    same = 1
                    for j in range(k):
                        if not masks[prev_sid, sigma[j]]:
                            same = 0
                            break
                if not same:
                    s = n_sids
                    n_sids += 1
                    for j in range(K):
                        masks[s, j] = 0
                    for j in range(k):
                        masks[s, sigma[j]] = 1
                        members[s, j] = sigma[j]
                    sid_k[s] = k
                    prev_sid = s
                ys[t] = y
                sids[t] = prev_sid
                k_out[i] = k
            for j in range(n_steps):
                step_id = _sgld_step(&r, &st, &phi[0], t + 1, batch_size, gammas[i],
                                     masks, members, lk, step_id)
    return n_sids


def run_sgld(object generator, double[::1] phi, const int32_t[::1] ys, const int32_t[::1] sids,
             const uint8_t[:, ::1] masks, const int32_t[:, ::1] members, const int32_t[::1] sid_k, const double[:, ::1] consts,
             const double[::1] prior, Py_ssize_t n, int n_sids, int batch_size, double gamma,
             int n_iter, int thin, double[:, ::1] out):
    """Run ``n_iter`` SGLD steps on the first ``n`` stored responses (no new users).

    After every ``thin`` steps the current theta is written to the next row of ``out``
    (``out`` has ``n_iter // thin`` rows; it may have zero rows).
    """
    cdef int K = phi.shape[0]
    cdef int it, j, row = 0
    cdef double ssum
    cdef int64_t step_id = 1
    cdef _Rng r
    cdef _Store st
    cap = max(n_sids, 1)
    cdef int64_t[::1] scratch = np.zeros(4 * cap, dtype=np.int64)  # _SidScratch[cap]
    cdef int32_t[::1] touched = np.zeros(max(batch_size, 1) + 1, dtype=np.int32)
    cdef const double[:, ::1] lk = _lk_table(consts)
    cdef int64_t[::1] idx = np.zeros(max(batch_size, 1) + 1, dtype=np.int64)
    cdef double[::1] point = np.zeros(K)
    cdef double[::1] grad = np.zeros(K)
    cdef double[::1] theta = np.zeros(K)
    cdef int32_t[::1] dummy = np.zeros(1, dtype=np.int32)
    st.K = K
    st.ys = <int32_t*>&ys[0] if ys.shape[0] > 0 else &dummy[0]
    st.sids = <int32_t*>&sids[0] if sids.shape[0] > 0 else &dummy[0]
    st.sid_k = <int32_t*>&sid_k[0] if sid_k.shape[0] > 0 else &dummy[0]
    st.prior = <double*>&prior[0]
    st.point = &point[0]
    st.grad = &grad[0]
    st.theta = &theta[0]
    st.scratch = <_SidScratch*>&scratch[0]
    st.touched = &touched[0]
    st.idx = &idx[0]
    r.bg = _bitgen(generator)
    r.has_spare = 0
    with generator.bit_generator.lock, nogil:
        for it in range(n_iter):
            step_id = _sgld_step(&r, &st, &phi[0], n, batch_size, gamma, masks, members, lk, step_id)
            if thin > 0 and (it + 1) % thin == 0 and row < out.shape[0]:
                ssum = 0.0
                for j in range(K):
                    ssum += phi[j]
                for j in range(K):
                    out[row, j] = phi[j] / ssum
                row += 1


def log_likelihood_gradient(const double[::1] phi, const int32_t[::1] ys, const int32_t[::1] sids,
                            const uint8_t[:, ::1] masks, const int32_t[:, ::1] members,
                            const int32_t[::1] sid_k,
                            const double[:, ::1] consts, double[::1] grad):
    """Full-data gradient of sum_t ln h_t(y_t | theta(phi)) w.r.t. phi; returns the sum."""
    cdef int K = phi.shape[0]
    cdef Py_ssize_t n = ys.shape[0]
    cdef int i
    cdef double ssum = 0.0, base, ll = 0.0
    cap = max(masks.shape[0], 1)
    cdef int64_t[::1] scratch = np.zeros(4 * cap, dtype=np.int64)  # _SidScratch[cap]
    cdef int32_t[::1] touched = np.zeros(cap + 1, dtype=np.int32)
    cdef const double[:, ::1] lk = _lk_table(consts)
    cdef double[::1] point = np.zeros(K)
    cdef double[::1] theta = np.zeros(K)
    for i in range(K):
        ssum += phi[i]
    for i in range(K):
        theta[i] = phi[i] / ssum
    with nogil:
        base = _grad_lik(&theta[0], K, &ys[0], &sids[0], NULL, n, masks, members, &sid_k[0], lk,
                         &point[0], <_SidScratch*>&scratch[0], &touched[0], 1, &ll)
        for i in range(K):
            grad[i] = (base + point[i] - n) / ssum
    return ll


def gibbs_counts(object generator, const double[::1] theta, const int32_t[::1] ys,
                 const int32_t[::1] sids, const uint8_t[:, ::1] masks, const int32_t[::1] sid_k,
                 const double[:, ::1] consts, Py_ssize_t n, int64_t[::1] counts):
    """One Gibbs sweep over the latent categories: x_t ~ p(x | y_t, S_t, theta).

    Writes the category counts of the sampled x_{1:n} into ``counts``.
    """
    cdef int K = theta.shape[0]
    cdef Py_ssize_t t
    cdef int x, y, s, k
    cdef double tot, u, l
    cdef double[::1] w = np.zeros(K)
    cdef _Rng r
    r.bg = _bitgen(generator)
    r.has_spare = 0
    with generator.bit_generator.lock, nogil:
        for x in range(K):
            counts[x] = 0
        for t in range(n):
            y = ys[t]
            s = sids[t]
            k = sid_k[s]
            tot = 0.0
            for x in range(K):
                if masks[s, y]:
                    l = consts[k, A1] if x == y else consts[k, A0]
                elif x == y:
                    l = consts[k, B_SELF]
                elif masks[s, x]:
                    l = consts[k, B_IN]
                else:
                    l = consts[k, B_OUT]
                tot += theta[x] * l
                w[x] = tot
            u = _unif(&r) * tot
            x = 0
            while x < K - 1 and w[x] <= u:
                x += 1
            counts[x] += 1
