"""The error bars of :class:`PrivateCountSketch`.

``error_bound`` (a query made now; Theorem 5, corrected, and a binomial bound): with ``σ_i²``
the error variance of a Count Sketch row at the queried item (hashing plus noise), the median
of ``d`` independent rows is off by more than ``κ`` only if at least ``ceil(d/2)`` rows are;
:func:`_kappa_from_variances` finds the smallest ``κ`` that either bound certifies.  The
validity argument is in the Notes of ``error_bound``.

``lower_bound`` / ``upper_bound`` (the answers of the last query set, post-processing): the
pieces below the second banner -- exact noise tails and quantiles, the order-statistic upper
confidence bound of a quantile, the median's row tail, the Gaussian-calibrated residuals.  The
maths is in the Notes of ``lower_bound``.
"""

import collections
import functools
import math

import numpy as np
from scipy import integrate, optimize, stats

__all__ = ["estimate_f2", "kappas"]

#: The bounds ``error_bound(method=...)`` knows; ``"auto"`` is the smaller of the two.
METHODS = ("binomial", "theorem5")


def _theorem5_tail(lam, d):
    """The bound ``exp(-(d/2)(1 - 2 λ)) [2 (1 - λ)]^{d/2}`` of Lemma 2 / Theorem 5."""
    return math.exp(-0.5 * d * (1.0 - 2.0 * lam) + 0.5 * d * math.log(2.0 * (1.0 - lam)))


def _kappa_from_variances(sigma2, delta, method):
    """Smallest κ certified by the median-of-rows bound for per-row error variances ``sigma2`` (d,)."""
    d = sigma2.shape[0]
    s_max, s_mean = float(sigma2.max()), float(sigma2.mean())
    if s_max == 0:
        return 0.0
    if method == "theorem5":
        if _theorem5_tail(0.0, d) >= delta:  # the bound never falls below (2/e)^{d/2}
            return math.inf
        lam = optimize.brentq(lambda t: _theorem5_tail(t, d) - delta, 0.0, 0.5, xtol=1e-14, rtol=1e-14)
        kappa2 = max(s_mean / lam, 2.0 * s_max)
    else:  # exact binomial tail of the number of rows off by more than κ (Chebyshev per row)
        t = d // 2 if d % 2 == 0 else (d + 1) // 2
        t = max(t, 1)
        lam = optimize.brentq(lambda q: stats.binom.sf(t - 1, d, q) - delta, 1e-300, 1.0, xtol=1e-300, rtol=1e-14)
        kappa2 = s_max / lam
    return math.sqrt(kappa2) * (1.0 + 1e-12)


def estimate_f2(table, draws, var1):
    """Plug-in ``||f||²₂``: the median over rows of ``Σ_j C_ij²`` minus the noise variance (curator state).

    ``draws`` (broadcast to the table) counts the noise draws of each cell, each of variance ``var1``.
    """
    noise_var = draws * var1
    per_row = (table.astype(np.float64) ** 2).sum(axis=1) - noise_var.sum(axis=1)
    return max(float(np.median(per_row)), 0.0)


def kappas(sigma2, delta, method):
    """The error bar of each query (column of ``sigma2``, (d, n)) at level ``1 - delta``.

    ``method`` is ``"binomial"``, ``"theorem5"`` or ``"auto"`` (the smaller of the two).
    """
    methods = METHODS if method == "auto" else (method,)
    return np.array([min(_kappa_from_variances(sigma2[:, k], delta, m) for m in methods) for k in range(sigma2.shape[1])])


# ---------------------------------------------------------------------------------------------
# The intervals of lower_bound / upper_bound: post-processing of one released query set.
# ---------------------------------------------------------------------------------------------

#: Share of ``1 - confidence`` spent on the estimation of the row-error quantile from the
#: released pool (the order-statistic upper confidence bound); the rest goes to the median's tail.
ESTIMATION_SHARE = 0.2

#: Largest number of released values kept to estimate the row-error distribution (the newest).
POOL_SIZE = 2**15

#: A noise class of a query set with at least this many released values gets its own pool.
OWN_POOL_SIZE = 500


class SetPool:
    """The pools of the newest query sets, newest first, holding at most ``POOL_SIZE`` values.

    ``sets`` is a deque of ``(values, noise_var)``; ``total`` the number of values it holds.
    Adding a set is O(1) amortised in the number of earlier sets (review HSK2 F3: a list rebuilt
    at every query set made a one-item query several times slower after a few thousand sets).
    """

    def __init__(self):
        self.sets = collections.deque()
        self.total = 0

    def __copy__(self):
        """A pool of its own with the same sets (the sets' arrays are never changed in place): what a
        pickle or deepcopy of the sketch takes under its lock, since queries update the pool in place."""
        new = SetPool()
        new.sets, new.total = collections.deque(self.sets), self.total
        return new

    def __len__(self):
        return len(self.sets)

    def __iter__(self):
        return iter(self.sets)


def newest_sets(sets, values, noise_var):
    """The pools of the query sets, newest first: ``(values, noise_var)`` of this one, then the earlier
    ones while the total stays within ``POOL_SIZE`` (the newest set is always kept).

    ``sets`` is the previous :class:`SetPool` (updated in place and returned), None, or a list of
    ``(values, noise_var)`` (the pool of a sketch pickled by an earlier version).  The earlier sets
    kept are the longest run of the newest whose values fit with this set's: the previous pool was
    such a run and this set only adds values, so the new run is the previous pool cut at its
    oldest end, and each set is added and dropped once.
    """
    if not isinstance(sets, SetPool):
        pool = SetPool()
        sets = [(sets, 0.0)] if isinstance(sets, np.ndarray) else sets  # (an even older version's one pool)
        for vals, var in sets or ():  # an earlier version's list, newest first: keep its order
            pool.sets.append((vals, var))
            pool.total += vals.shape[0]
        sets = pool
    sets.sets.appendleft((values, float(noise_var)))
    sets.total += values.shape[0]
    while sets.total > POOL_SIZE and len(sets.sets) > 1:
        vals, _ = sets.sets.pop()
        sets.total -= vals.shape[0]
    return sets


def lent_pool(sets, part, rescale):
    """The sorted pool of the newest query set, lent the earlier sets' values only while ``part`` of it is infinite.

    A query set's residuals describe the row errors of *its* release; an earlier set's come from
    a shorter stream (fewer collisions) and fewer or smaller noise draws (use-and-keep adds one
    draw per use, use-and-forget's scale grows with the uses), so they are too small for a later
    release (review HQW: 95 % intervals of the 10th top-50 set covered 0.83, 0.20 under
    use-and-forget, when every set under 500 values pooled all the earlier ones).  The newest set
    is therefore its own pool whenever ``part(pool)`` (its ``κ`` or Count-Min ``q``) is finite, which
    at ``d = 5`` and 95 % takes 3 items (``min_finite_items``).  Only a smaller set borrows, the newest sets first, until
    finite; with ``rescale`` (Count Sketch residuals, >= 0) a borrowed value is multiplied by
    ``sqrt(max(1, v_now / v_then))``, ``v`` a set's mean noise variance per released row value
    (a public function of the hashes and the query sets), so its noise part has at least the
    current set's scale.  The collision part is not rescaled (the stream's length is not
    released): the intervals of sets of fewer than 3 items stay approximate.
    """
    sets = iter(sets)  # a SetPool or a list, newest first
    values, var_now = next(sets)
    pool = np.sort(values)
    for vals, var in sets:
        if math.isfinite(part(pool)):
            break
        factor = math.sqrt(max(1.0, var_now / var)) if rescale and var > 0 else 1.0
        pool = np.sort(np.concatenate([pool, vals * factor]))
    return pool


def quantile_upper(sorted_pool, level, delta):
    """Distribution-free upper confidence bound, at ``1 - delta``, of the ``level``-quantile.

    For ``m`` i.i.d. draws ``X_(1) <= ... <= X_(m)`` and the quantile ``ξ`` of a continuous
    law, ``P(X_(k) < ξ) = P(Binomial(m, level) >= k)``; the order statistic of the smallest ``k``
    with that probability ``<= delta`` is returned (``inf`` when even the largest cannot certify).
    """
    m = sorted_pool.shape[0]
    if m == 0 or level <= 0:
        return 0.0 if m and level <= 0 else math.inf
    k = int(stats.binom.isf(delta, m, level)) + 1  # smallest k with P(Bin >= k) <= delta (checked below)
    while k > 1 and stats.binom.sf(k - 2, m, level) <= delta:
        k -= 1
    while k <= m and stats.binom.sf(k - 1, m, level) > delta:
        k += 1
    return float(sorted_pool[k - 1]) if k <= m else math.inf


def median_row_tail(d, delta):
    """Per-row two-sided exceedance ``p = P(|Y_i| > κ)`` at which ``P(|median_i Y_i| > κ) = delta``.

    For rows independent and symmetric about 0, ``median > κ`` needs ``t`` rows above ``κ``
    (``t = (d+1)/2`` for odd ``d``, ``d/2`` for even ``d``, whose median is the mean of the two
    middle values), each with probability ``p/2``; the same below ``-κ``:
    ``P(|median| > κ) <= 2 P(Binomial(d, p/2) >= t)``, solved for ``p``.
    """
    t = max((d + 1) // 2 if d % 2 else d // 2, 1)
    if 2 * stats.binom.sf(t - 1, d, 0.5) <= delta:
        return 1.0
    return optimize.brentq(lambda p: 2 * stats.binom.sf(t - 1, d, p / 2) - delta, 0.0, 1.0, xtol=1e-15, rtol=1e-13)


@functools.lru_cache(maxsize=None)
def gaussian_median_variance(d):
    """``Var(median of d standard normals)`` (the mean of the two middle values for an even ``d``).

    Exact by numerical integration over the order statistics' densities for ``d <= 41``; above,
    the asymptotic ``π/(2d)`` (within 5 %; it enters the residual's scale through
    ``sqrt(1 - 2/d + v_d)``, which it moves by less than 0.1 %).
    """
    if d == 1:
        return 1.0
    if d > 41:
        return math.pi / (2 * d)
    phi, cdf = stats.norm.pdf, stats.norm.cdf
    k = (d + 1) // 2
    if d % 2:
        c = math.exp(math.lgamma(d + 1) - 2 * math.lgamma(k))
        val, _ = integrate.quad(lambda x: x * x * c * (cdf(x) * cdf(-x)) ** (k - 1) * phi(x), -12, 12, limit=200)
        return float(val)
    # the middle pair X_(k) < X_(k+1), y = x + s: joint density c F(x)^{k-1} (1-F(x+s))^{k-1} φ(x) φ(x+s),
    # smooth on the rectangle x in [-9, 9], s in [0, 12]: the trapezoid rule (step 0.01) is exact to ~1e-6
    k = d // 2
    c = math.exp(math.lgamma(d + 1) - 2 * math.lgamma(k))
    x = np.linspace(-9.0, 9.0, 1801)[:, None]
    s = np.linspace(0.0, 12.0, 1201)[None, :]
    y = x + s
    logf = (k - 1) * (stats.norm.logcdf(x) + stats.norm.logsf(y)) + stats.norm.logpdf(x) + stats.norm.logpdf(y)
    g = c * np.exp(logf) * (x + y) ** 2 / 4
    return float(integrate.trapezoid(integrate.trapezoid(g, s[0], axis=1), x[:, 0]))


def count_residuals(rows, estimates):
    """Calibrated absolute row errors of a released Count Sketch query set.

    ``rows`` (d, n) are the released signed row values, ``estimates`` (n,) their medians.  The
    residual ``v_i - median`` of a row understates its error ``Y_i`` (the median follows the
    rows); for rows i.i.d. Gaussian ``Var(Y_i - median) = σ² (1 - 2/d + v_d)``, ``v_d`` the
    variance of the median of ``d`` standard normals (``Cov(Y_i, median) = σ²/d`` because the
    mean is sufficient and ``median - mean`` ancillary), so every residual is divided by
    ``sqrt(1 - 2/d + v_d)``.  All ``d`` rows are kept (the median's row too, residual 0 for an
    odd ``d``): rows hit by a heavy item keep their share of the pool.
    """
    d = rows.shape[0]
    if d == 1:
        return np.empty(0)
    factor = 1.0 / math.sqrt(1.0 - 2.0 / d + gaussian_median_variance(d))
    return (np.abs(rows - estimates[None, :]) * factor).ravel()


#: Draws of ``d`` rows from the pool used to find the quantile level for an even ``d`` (fixed seed:
#: the same pool gives the same interval; the Monte Carlo error of the level is about 0.1 %).
EVEN_DEPTH_DRAWS = 20_000


def even_depth_level(sorted_pool, d, delta):
    """Quantile level ``1 - p`` of ``|Y|`` at which the mean of the two middle rows exceeds it w.p. ``delta``.

    For an even ``d`` the binomial step of :func:`median_row_tail` is loose (the mean of the two
    middle rows rarely exceeds ``κ`` when one of them does: for Gaussian rows, ``d = 4``, the
    miss rate is 0.005 where 0.04 is allowed).  Here the law of ``|median|`` is computed under
    the pool itself (rows drawn from it with random signs, ``EVEN_DEPTH_DRAWS`` times, a fixed
    seed: post-processing, no privacy randomness), its ``1 - delta`` quantile ``κ₀`` found, and
    the level is the pool's fraction at or below ``κ₀``: a plug-in (the shape of the rows' law is
    estimated), whereas the odd-``d`` level is distribution-free.
    """
    m = sorted_pool.shape[0]
    gen = np.random.default_rng(20260324)
    rows = sorted_pool[gen.integers(0, m, size=(EVEN_DEPTH_DRAWS, d))] * gen.choice([-1.0, 1.0], size=(EVEN_DEPTH_DRAWS, d))
    kappa0 = float(np.quantile(np.abs(np.median(rows, axis=1)), 1.0 - delta))
    return float(np.searchsorted(sorted_pool, kappa0, side="right")) / m


def count_kappa(sorted_pool, d, delta):
    """``κ`` of a released Count Sketch answer from the pool of absolute row residuals (see Notes of ``lower_bound``)."""
    delta_est = ESTIMATION_SHARE * delta
    if d % 2 == 0 and sorted_pool.shape[0] > 0:
        return quantile_upper(sorted_pool, even_depth_level(sorted_pool, d, delta - delta_est), delta_est)
    p = median_row_tail(d, delta - delta_est)
    return quantile_upper(sorted_pool, 1.0 - p, delta_est)


def count_min_collision(sorted_pool, d, delta):
    """The Count-Min lower side: ``q`` with ``P(min_i Z_i > q) <= delta`` from the pool of released values.

    ``Z_i = C_i + N_i`` (collisions >= 0 plus noise) is dominated by a released value
    ``v_i(y) = f_y + Z_i(y)``; independent rows: ``P(min Z > q) = Π P(Z_i > q) <= r^d`` with
    ``r = P(v > q)``, so the ``1 - delta^{1/d}`` quantile of the pool (upper confidence bound) serves.
    """
    delta_est = ESTIMATION_SHARE * delta
    r = (delta - delta_est) ** (1.0 / d)
    return quantile_upper(sorted_pool, 1.0 - r, delta_est)
def min_finite_items(d, delta, count):
    """Smallest number of items of a query set whose own pool gives a finite bound (None: never).

    A set of ``n`` items releases ``d n`` row values; the bound is finite once the order statistic
    of :func:`quantile_upper` exists, which for an odd ``d`` (and Count-Min) depends on ``d n``
    only: found here by calling the bound itself on a pool of ``d n`` distinct values (doubling,
    then bisection).  For an even ``d`` the quantile level is a plug-in of the pool's values, so
    the number is that of a pool of distinct values (about right).  A Count Sketch of ``d = 1``
    releases no residual: None.
    """
    if count and d == 1:
        return None

    def finite(n):
        pool = np.arange(1.0, d * n + 1.0)
        return math.isfinite(count_kappa(pool, d, delta) if count else count_min_collision(pool, d, delta / 2))

    hi = 1
    while not finite(hi):
        hi *= 2
        if hi > 2**24:  # pragma: no cover - a confidence this close to 1 needs millions of items
            return None
    lo = hi // 2  # not finite (or 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if finite(mid) else (mid, hi)
    return hi




def noise_sf(noise, scale, draws, t):
    """Exact ``P(N > t)`` for ``N`` the sum of ``draws`` independent noise draws of scale ``scale``.

    Laplace: ``N = G_1 - G_2`` with ``G_j ~ Gamma(draws, scale)`` (numerical integral).  Discrete
    Laplace (``p = e^{-1/scale}``): the difference of two negative binomials ``NB(draws, 1 - p)``
    (a finite sum truncated where the remaining mass is below ``1e-16``).
    """
    draws = int(draws)
    if draws == 0:
        return float(t < 0)
    if t < 0:
        return 1.0 - noise_sf(noise, scale, draws, -t) - (noise_pmf0(noise, scale, draws, -t))
    if noise == "laplace":
        if draws == 1:
            return 0.5 * math.exp(-t / scale)
        g = stats.gamma(draws, scale=scale)
        hi = g.isf(1e-17)
        val, _ = integrate.quad(lambda y: g.pdf(y) * g.sf(t + y), 0.0, hi, limit=200, epsabs=1e-16)
        return float(min(max(val, 0.0), 0.5))
    p = math.exp(-1.0 / scale)
    nb = stats.nbinom(draws, 1.0 - p)
    k = np.arange(int(nb.isf(1e-17)) + 2)
    return float(min(np.sum(nb.pmf(k) * nb.sf(math.floor(t) + k)), 0.5))


def noise_pmf0(noise, scale, draws, t):
    """``P(N = t)`` (0 for Laplace; the atom of the discrete law at an integer ``t``)."""
    if noise == "laplace" or t != math.floor(t):
        return 0.0
    p = math.exp(-1.0 / scale)
    nb = stats.nbinom(int(draws), 1.0 - p)
    k = np.arange(int(nb.isf(1e-17)) + 2)
    return float(np.sum(nb.pmf(k) * nb.pmf(int(abs(t)) + k)))


def noise_quantile(noise, scale, draws, s):
    """Smallest ``a >= 0`` with ``P(N > a) <= s`` (``N`` as in :func:`noise_sf`; an integer for discrete noise)."""
    if draws == 0:
        return 0.0
    sd = math.sqrt(2.0 * draws) * scale
    hi = sd / math.sqrt(s) + scale  # Chebyshev: P(N > hi) <= var / hi^2 < s
    if noise == "laplace":
        if noise_sf(noise, scale, draws, 0.0) <= s:
            return 0.0
        return optimize.brentq(lambda a: noise_sf(noise, scale, draws, a) - s, 0.0, hi, xtol=1e-9 * scale)
    lo, hi = -1, int(math.ceil(hi))  # sf(lo) > s >= sf(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if noise_sf(noise, scale, draws, mid) <= s:
            hi = mid
        else:
            lo = mid
    return float(hi)


def count_min_noise(noise, scales, draws, d, delta):
    """The Count-Min upper side: ``a`` per item with ``P(min_i N_i < -a) <= delta``.

    The rows' noises are independent and symmetric; each row's law is dominated (in its tails) by
    that of the item's largest ``(scale, draws)``, so ``P(min_i N_i < -a) <= 1 - (1 - P(N > a))^d``
    and ``a`` is the exact quantile of ``N`` at ``1 - (1 - delta)^{1/d}``.
    """
    s = -math.expm1(math.log1p(-delta) / d)
    out = np.empty(scales.shape[0])
    cache = {}
    for j, key in enumerate(zip(scales.tolist(), draws.tolist())):
        if key not in cache:
            cache[key] = noise_quantile(noise, key[0], key[1], s)
        out[j] = cache[key]
    return out
