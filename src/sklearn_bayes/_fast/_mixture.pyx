# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Fused EM passes of :class:`sklearn_bayes.MixtureMEstimatorRegressor` for the built-in laws.

Component kinds: 0 Gaussian (scale sigma), 1 Laplace (scale b), 2 Cauchy (scale gamma).
The numpy implementation in ``linear_model/_mixture_m_estimator.py`` (component objects'
``log_pdf`` / ``weight`` / ``fit_scale_map``) is the reference; tests check that both give
the same E-step, weights and scale roots.

* :func:`estep` -- one pass over the residuals: responsibilities ``z_ij`` (densities
  summed in probability space, log-sum-exp for rows where that under/overflows), the sample-weighted log-likelihood and, per component, the sufficient
  statistics ``sum_i w_i z_ij``, ``sum_i w_i z_ij r_i^2`` and ``sum_i w_i z_ij |r_i|``.
* :func:`irls_weights` -- ``W_i = sum_j z_ij w_j(r_i)`` with the IRLS weight functions.
* :func:`cauchy_root` -- the Cauchy (MAP) scale M-step: the root in ``u = log gamma^2``
  of ``g(u) = sum_i c_i (r_i^2 - t) / (r_i^2 + t) + 2 k (s0^2 / t - 1)``, ``t = e^u``,
  which decreases strictly in ``u``; Newton from the warm start with a bracket narrowed by
  every evaluation (bisection once a step leaves a closed bracket, bounded steps while it is open).
"""

from libc.math cimport exp, fabs, log, log1p, sqrt, INFINITY, M_PI

cdef double LOG_2PI = 1.8378770664093453


def estep(const double[::1] r, const double[::1] sw, const long[::1] kinds,
          const double[::1] a, const double[::1] scales, double[:, ::1] z, double[:, ::1] stats):
    """Responsibilities into ``z`` (J, n); ``stats`` (3, J) gets sum w z, sum w z r^2, sum w z |r|.

    Returns the log-likelihood ``sum_i sw_i log sum_j a_j p_j(r_i)``.  Components
    with ``a_j = 0`` get ``z_ij = 0``.  The densities are summed in probability space
    (one ``exp`` per Gaussian / Laplace term, none for Cauchy) and a row falls back to
    log-sum-exp when that sum under- or overflows.
    """
    cdef Py_ssize_t n = r.shape[0], J = kinds.shape[0], i, j
    cdef double ll = 0.0, m, s, ri, ai, r2, wi, v
    cdef double c0[16]
    cdef double c1[16]
    cdef double e0[16]
    cdef double L[16]
    cdef long kd[16]
    cdef int act[16]
    if J > 16:
        raise ValueError("at most 16 components")
    for j in range(J):
        kd[j] = kinds[j]
        act[j] = a[j] > 0
        for i in range(3):
            stats[i, j] = 0.0
        if not act[j]:
            continue
        if kd[j] == 0:
            c0[j] = log(a[j]) - 0.5 * LOG_2PI - log(scales[j])
            c1[j] = -0.5 / (scales[j] * scales[j])
        elif kd[j] == 1:
            c0[j] = log(a[j]) - log(2.0 * scales[j])
            c1[j] = -1.0 / scales[j]
        else:
            c0[j] = log(a[j]) - log(M_PI * scales[j])
            c1[j] = 1.0 / (scales[j] * scales[j])
        e0[j] = exp(c0[j])
    with nogil:
        for i in range(n):
            ri = r[i]
            r2 = ri * ri
            ai = fabs(ri)
            # a_j p_j(r_i) in probability space
            s = 0.0
            for j in range(J):
                if not act[j]:
                    continue
                if kd[j] == 0:
                    v = e0[j] * exp(c1[j] * r2)
                elif kd[j] == 1:
                    v = e0[j] * exp(c1[j] * ai)
                else:
                    v = e0[j] / (1.0 + r2 * c1[j])
                L[j] = v
                s += v
            if s > 1e-290 and s < 1e290:
                m = log(s)
            else:  # log-sum-exp for this row
                m = -INFINITY
                for j in range(J):
                    if not act[j]:
                        continue
                    if kd[j] == 0:
                        v = c0[j] + c1[j] * r2
                    elif kd[j] == 1:
                        v = c0[j] + c1[j] * ai
                    else:
                        v = c0[j] - log1p(r2 * c1[j])
                    L[j] = v
                    if v > m:
                        m = v
                s = 0.0
                for j in range(J):
                    if act[j]:
                        L[j] = exp(L[j] - m)
                        s += L[j]
                m = m + log(s)
            wi = sw[i]
            ll += wi * m
            for j in range(J):
                if act[j]:
                    v = L[j] / s
                    z[j, i] = v
                    v = v * wi
                    stats[0, j] += v
                    stats[1, j] += v * r2
                    stats[2, j] += v * ai
                else:
                    z[j, i] = 0.0
    return ll


def irls_weights(const double[::1] r, const long[::1] kinds, const double[:, ::1] z,
                 const double[::1] scales, const double[::1] deltas, double[::1] W):
    """``W[i] = sum_j z_ij w_j(r_i)`` in place: ``1/sigma^2``, ``1/(b max(delta b, |r|))``, ``2/(gamma^2 + r^2)``."""
    cdef Py_ssize_t n = r.shape[0], J = kinds.shape[0], i, j
    cdef double ai, r2, v
    cdef double c0[16]
    cdef double c1[16]
    cdef long kd[16]
    if J > 16:
        raise ValueError("at most 16 components")
    for j in range(J):
        kd[j] = kinds[j]
        if kd[j] == 0:
            c0[j] = 1.0 / (scales[j] * scales[j])
        elif kd[j] == 1:
            c0[j] = scales[j]
            c1[j] = deltas[j] * scales[j]
        else:
            c0[j] = scales[j] * scales[j]
    with nogil:
        for i in range(n):
            ai = fabs(r[i])
            r2 = ai * ai
            v = 0.0
            for j in range(J):
                if kd[j] == 0:
                    v += z[j, i] * c0[j]
                elif kd[j] == 1:
                    v += z[j, i] / (c0[j] * (ai if ai > c1[j] else c1[j]))
                else:
                    v += z[j, i] * 2.0 / (c0[j] + r2)
            W[i] = v


cdef inline void _g(const double[::1] r, const double[::1] c, Py_ssize_t n, double u, double k2, double s02,
                    double* g, double* dg) noexcept nogil:
    """g(u) and dg/du (see module docstring)."""
    cdef Py_ssize_t i
    cdef double t = exp(u), r2, d, gs = 0.0, ds = 0.0
    for i in range(n):
        if c[i] != 0.0:
            r2 = r[i] * r[i]
            d = r2 + t
            if d > 0.0:
                gs += c[i] * (r2 - t) / d
                ds -= c[i] * 2.0 * r2 * t / (d * d)
            else:  # r = 0 and t underflowed: (r^2 - t) / (r^2 + t) -> -1
                gs -= c[i]
    g[0] = gs + k2 * (s02 / t - 1.0)
    dg[0] = ds - k2 * s02 / t


def cauchy_root(const double[::1] r, const double[::1] c, double u0, double prior_scale, double strength,
                double xtol):
    """``gamma = exp(u / 2)`` at the root of ``g`` (weights ``c_i = sw_i z_i``); 0 if there is none.

    Without a prior (``strength = 0``) there is no positive root when the weight on
    exact zeros is at least the weight on non-zero residuals; 0 is returned.  The
    returned ``u`` satisfies ``|u - u*| <= xtol`` (bisection bracket) or came from a
    Newton step smaller than ``xtol``.
    """
    cdef Py_ssize_t n = r.shape[0], i, it
    cdef double k2 = 2.0 * strength, s02 = prior_scale * prior_scale if strength > 0 else 0.0
    cdef double lo, hi, lim, u, g, dg, step, unew, r2min = INFINITY, r2max = 0.0, wz = 0.0, wnz = 0.0
    if strength == 0.0:  # (with a prior the root always exists: no pass needed)
        for i in range(n):
            if c[i] > 0.0:
                if r[i] == 0.0:
                    wz += c[i]
                else:
                    wnz += c[i]
                    if r[i] * r[i] < r2min:
                        r2min = r[i] * r[i]
                    if r[i] * r[i] > r2max:
                        r2max = r[i] * r[i]
        if wnz <= wz:
            return 0.0
        if r2min == r2max and wz == 0.0:
            return sqrt(r2min)
    # Newton from the warm start u0, safeguarded: every evaluation narrows the bracket
    # (g decreases in u, so g > 0 puts the root above u); a step that leaves a closed
    # bracket is replaced by bisection, and while a side is still open a step is at most
    # ``lim`` (doubled each time it is hit).  Warm-started EM calls take 2-3 passes.
    lo = -INFINITY
    hi = INFINITY
    lim = 2.0
    u = u0
    for it in range(400):
        _g(r, c, n, u, k2, s02, &g, &dg)
        if g > 0.0:
            lo = u
        elif g < 0.0:
            hi = u
        else:
            break
        if hi - lo <= xtol:
            break
        unew = u - g / dg if dg < 0.0 else u + (lim if g > 0.0 else -lim)
        if lo > -INFINITY and hi < INFINITY:
            if not (lo < unew < hi):
                unew = 0.5 * (lo + hi)
        elif unew - u > lim:
            unew = u + lim
            lim *= 2.0
        elif u - unew > lim:
            unew = u - lim
            lim *= 2.0
        step = unew - u
        u = unew
        if u > 1400.0:
            return exp(700.0)
        if u < -1400.0:
            return 0.0
        if fabs(step) <= xtol:
            break
    return exp(0.5 * u)
