"""The exact posterior by importance sampling of a tempered count posterior (``decoder='importance'``; issue 28,
round 11).

Below 32 categories the exact posterior's chain costs ``O(n k)`` per iteration under SS(k) when the ``n``
responses are nearly all distinct subsets (26-166 times IBU on the paper grid's ``K = 20, eps <= 1`` cells),
and the count posterior of :mod:`._count_posterior` (``O(K^2)`` per iteration) is not the exact posterior
(it lost 1.096 +- 0.036 of the exact posterior's TV on spiky ``theta``).  Importance sampling joins them:

1. *Proposal*: the count posterior's chain (:func:`~._samplers.adaptive_exact_draws` on
   :func:`~._count_posterior.count_groups`) on *tempered* counts ``c_a = rint(a c)``, ``n_a = rint(a n)``
   with ``a = TEMPER = 0.9`` (lower where the counts' dependence is stronger, :func:`tempering`): ``q(theta, rho) ∝ prod_v pi_v^{c_a,v} (1 - pi_v)^{n_a - c_a,v} Dir(theta; rho)
   p(rho)``, ``pi_v = q + (p - q) theta_v`` -- wider than the exact posterior (``a < 1``), so its tails cover
   it.  Untempered (``a = 1``) proposals are as narrow as the target and the weights collapse on spiky
   ``theta`` (weight ESS 1-2 of 300 in some Dir(0.01) fits of round 10).
2. *Weights* of ``M = IMPORTANCE_DRAWS`` (1000; round 11: 300) evenly thinned draws: ``ln w = sum_g c_g ln P(g | theta) -
   sum_v [c_a,v ln pi_v + (n_a - c_a,v) ln(1 - pi_v)]``; the prior and ``rho`` are common to target and
   proposal and cancel (the target's ``rho`` marginal is not needed: only ``theta`` is kept).  The exact
   log-likelihood of the ``M`` draws is the cost: the compiled ``exact_loglik_many``
   (``_fast/_ldp_mala.pyx``, ``sum_g |A_g|`` gathers and ``G`` logarithms per draw, without the GIL).
3. *Diagnostics*: the weight ESS ``(sum w)^2 / sum w^2`` over ``M`` (at least ``MIN_ESS_FRACTION``) and
   the Pareto ``k``-hat of the largest weights (:func:`pareto_khat`, at most ``PARETO_K_MAX = 0.7``: above,
   the weights' variance is effectively infinite and importance estimates are unreliable; Vehtari et al.
   2024) where the tail spans at least a factor ``TAIL_RATIO_MIN = 2`` (see :func:`weight_diagnostics`).
   When either fails the caller falls back to the exact chain.
4. *Resampling*: the weighted draws are turned into an unweighted set by systematic resampling
   (:func:`systematic_resample`, ``RESAMPLE_FACTOR * M`` draws for ``theta_``): every consumer of draws
   (``point_estimate``'s 'tv' quantiles, ``credible_interval``'s quantiles, ``sample_posterior``) takes
   plain arrays, and systematic resampling gives draw ``i`` ``floor`` or ``ceil`` of ``N w_i / sum w``
   copies, so an empirical quantile of the resampled set is within ``1 / N`` in level of the weighted one.

References: Zhang, J. and Stephens, M. A. (2009), "A new and efficient estimation method for the
generalized Pareto distribution", Technometrics 51(3), 316-325 (the ``k``-hat estimate); Vehtari, A.,
Simpson, D., Gelman, A., Yao, Y. and Gabry, J. (2024), "Pareto smoothed importance sampling", JMLR 25(72)
(the tail size, the weak prior on ``k`` and the 0.7 threshold).
"""

import numpy as np

from sklearn_bayes.privacy._ldp._count_posterior import AUTO_COUNTS_MAX_RATIO, count_groups
from sklearn_bayes.privacy._ldp._samplers import adaptive_exact_draws, exact_draws
from sklearn_bayes.privacy._ldp._sparse_prior import symmetric_probability

__all__ = ["EXACT_WORK_MAX", "IMPORTANCE_DRAWS", "MIN_ESS_FRACTION", "PARETO_K_MAX", "RESAMPLE_FACTOR",
           "SAMPLE_IMPORTANCE_DRAWS", "TAIL_RATIO_MIN", "TEMPER", "TEMPER_MIN", "exact_loglik",
           "exact_work_ratio", "gpd_fit", "importance_adaptive", "importance_fixed", "log_weights", "pareto_khat", "systematic_resample",
           "tail_ratio", "tempered_counts", "tempering", "weight_diagnostics"]

#: Tempering of the proposal's counts (round 10: 0.8 and 0.9 both matched the exact posterior, 1 did not),
#: lowered where the counts' dependence widens the exact posterior more (:func:`tempering`).
TEMPER = 0.9
#: The lowest tempering :func:`tempering` gives.
TEMPER_MIN = 0.5
#: Proposal draws weighted for ``theta_`` (evenly thinned from the count chain's kept draws; all of them when fewer).
#: Round 11 weighted 300: Monte Carlo error of the 'tv' summary of 300 weighted draws (weight ESS 90-236) left
#: planes K = 35 at 1.029 +- 0.007 of the exact posterior's TV; 1000 gave 1.010 +- 0.013, every kept draw 0.999 +-
#: 0.011 at 1.3-1.8 times the cost of 1000 (round 11b, dev cells).
IMPORTANCE_DRAWS = 1000
#: ``sample_posterior`` and ``credible_interval`` weight at least this many draws (:func:`importance_fixed`).
SAMPLE_IMPORTANCE_DRAWS = 300
#: ``decoder='auto'`` keeps the exact chain where :func:`exact_work_ratio` is at most this (round 11b: the exact
#: chain's fit plus ``theta_`` over IBU grew as 0.54 times the ratio, slope 0.97 on log scales, residual SD 0.55 in
#: log; at 11 the prediction is 5.5 times IBU and one residual SD above it 9.5, within the 10 times IBU goal).
EXACT_WORK_MAX = 11.0
#: Fallback to the exact chain when the weight ESS is below this fraction of the weighted draws ...
MIN_ESS_FRACTION = 0.25
#: ... or the Pareto k-hat of the largest weights is above this (where the tail spans a factor TAIL_RATIO_MIN).
PARETO_K_MAX = 0.7
#: The k-hat check applies only when the largest weight is at least this many times the tail's threshold.
TAIL_RATIO_MIN = 2.0
#: ``theta_``'s point estimate is taken on this many times ``IMPORTANCE_DRAWS`` resampled draws.
RESAMPLE_FACTOR = 4


def tempering(ratio):
    """The proposal's ``a`` given the largest sandwich variance ratio ``r`` of the counts
    (:func:`~._count_posterior.plug_in_ratio`; NaN: unknown): ``TEMPER min(1, 1.07 / r)`` in ``[TEMPER_MIN, TEMPER]``.

    The composite posterior's variance is the exact one's over ``r`` (asymptotically), the tempered one's
    over ``a r``: with ``a r <= 0.9 * 1.07`` the proposal is at least 4 % wider than the target in every
    category, as measured at ``K = 20, 35, 50`` (``r`` 1.02-1.07, ``a = 0.9``).  A proposal narrower than the
    target in some direction has weights growing like ``exp(c z^2)`` along it (infinite variance): at
    ``K = 10`` (SS(3), ``r`` 1.11-1.14 > 1 / 0.9) ``a = 0.9`` gave Pareto k-hat 2.6 in a test fit.
    """
    r = float(ratio)
    if np.isnan(r) or r <= AUTO_COUNTS_MAX_RATIO:
        return TEMPER
    return float(np.clip(TEMPER * AUTO_COUNTS_MAX_RATIO / r, TEMPER_MIN, TEMPER))  # r = inf: TEMPER_MIN


def exact_work_ratio(n_distinct, subset_size, n_categories):
    """The exact chain's gathers per MALA step over the count chain's: ``G k / (K (K - 1))``.

    ``G`` distinct subsets of ``k`` members (``sum_g |A_g| = G k``) against the ``K`` groups of ``K - 1`` members
    of :func:`~._count_posterior.count_groups`.  Where the exact chain draws a latent category per user
    (:func:`~._count_posterior.per_user_latent`) its other per-iteration term is ``n < 4 G K``.
    """
    K = int(n_categories)
    return float(n_distinct) * int(subset_size) / max(K * (K - 1), 1)


def tempered_counts(counts, n, a=None):
    """``(rint(a c), rint(a n))``: the proposal's counts (each ``<= n_a``); ``a`` defaults to ``TEMPER``.
    ``n_a`` is at least 1 when ``n`` is (one response tempered by ``a <= 0.5`` still has a user)."""
    a = TEMPER if a is None else float(a)
    c = np.asarray(counts, dtype=float)
    n_a = max(int(round(a * int(n))), min(int(n), 1))
    return np.minimum(np.rint(a * c), n_a), n_a


def _csr(groups):
    """CSR member lists of ``groups`` (unpacked from the bit rows when the groups hold only those)."""
    if not groups.members_in_bits:
        return np.ascontiguousarray(groups.a_ptr, dtype=np.int32), np.ascontiguousarray(groups.a_idx, dtype=np.int32)
    inside = np.unpackbits(groups.bits, axis=1, count=groups.n_categories, bitorder="little").astype(bool)
    return (np.ascontiguousarray(groups.a_ptr, dtype=np.int32),
            np.ascontiguousarray(np.nonzero(inside)[1], dtype=np.int32))


def exact_loglik(groups, draws):
    """``sum_g count_g ln P(g | theta)`` for every row of ``draws`` (the compiled ``exact_loglik_many``)."""
    from sklearn_bayes._fast._ldp_mala import exact_loglik_many

    draws = np.ascontiguousarray(draws, dtype=float)
    a_ptr, a_idx = _csr(groups)
    out = np.empty(draws.shape[0])
    exact_loglik_many(draws, a_ptr, a_idx, np.ascontiguousarray(groups.y, dtype=np.int32),
                      np.ascontiguousarray(groups.f_in, dtype=float), np.ascontiguousarray(groups.f_y, dtype=float),
                      np.ascontiguousarray(groups.f_out, dtype=float), np.ascontiguousarray(groups.count, dtype=float),
                      out)
    return out


def log_weights(groups, draws, counts_a, n_a, p, q):
    """``ln w`` of ``draws`` of the tempered count posterior: exact log-likelihood minus the proposal's
    composite one (:func:`tempered_counts`' ``counts_a``, ``n_a``)."""
    draws = np.asarray(draws, dtype=float)
    pi = q + (p - q) * draws
    with np.errstate(divide="ignore", invalid="ignore"):
        comp = np.log(pi) @ counts_a + np.log1p(-pi) @ (n_a - counts_a)
    lw = exact_loglik(groups, draws) - comp
    return np.where(np.isfinite(lw), lw, -np.inf)


def gpd_fit(x):
    """``(k, sigma)`` of a generalised Pareto law fitted to the exceedances ``x > 0`` (Zhang and Stephens 2009).

    The profile likelihood in ``b = -k / sigma`` is averaged over ``m = 30 + floor(sqrt(n))`` values
    ``b_j = 1 / x_(n) + (1 - sqrt(m / (j - 1/2))) / (3 x_(q))`` (``x_(q)`` the first quartile) with weights
    proportional to ``exp(l(b_j))``, ``l(b) = n (ln(-b / k(b)) - k(b) - 1)``, ``k(b) = mean ln(1 - b x)``;
    then ``k = k(b_hat)``, ``sigma = -k / b_hat``.  ``k > 0``: a heavy tail (moments of order ``>= 1 / k``
    infinite).  No prior: :func:`pareto_khat` adds the weak one of PSIS.
    """
    x = np.sort(np.asarray(x, dtype=float))
    n = x.size
    m = 30 + int(np.sqrt(n))
    xq = x[max(int(n / 4 + 0.5) - 1, 0)]
    j = np.arange(1, m + 1)
    b = 1.0 / x[-1] + (1.0 - np.sqrt(m / (j - 0.5))) / (3.0 * xq)
    kb = np.log1p(-b[:, None] * x[None, :]).mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lb = n * (np.log(-b / kb) - kb - 1.0)
    lb = np.where(np.isfinite(lb), lb, -np.inf)
    w = np.exp(lb - lb.max())
    b_hat = float(w @ b / w.sum())
    k = float(np.log1p(-b_hat * x).mean())
    return k, -k / b_hat


def pareto_khat(log_w):
    """Pareto ``k``-hat of the largest importance weights (PSIS diagnostic; Vehtari et al. 2024).

    The ``t = ceil(min(S / 5, 3 sqrt(S)))`` largest of ``S`` weights minus the next largest are fitted
    by :func:`gpd_fit`; the estimate is shrunk as ``(t k + 10 * 0.5) / (t + 10)`` (the weakly informative
    prior of PSIS).  ``-inf`` when fewer than 5 exceedances are positive (no tail to speak of: equal
    weights), ``inf`` when at most one weight is positive.
    """
    lw = np.asarray(log_w, dtype=float)
    S = lw.size
    if np.sum(np.isfinite(lw)) <= 1:
        return np.inf
    t = int(np.ceil(min(0.2 * S, 3.0 * np.sqrt(S))))
    w = np.exp(np.sort(lw) - np.max(lw))
    x = w[S - t :] - w[S - t - 1]
    x = x[x > 0]
    if x.size < 5:
        return -np.inf
    k = gpd_fit(x)[0]
    return (x.size * k + 10 * 0.5) / (x.size + 10)


def tail_ratio(log_w):
    """The largest weight over :func:`pareto_khat`'s tail threshold (the next weight below its tail)."""
    lw = np.sort(np.asarray(log_w, dtype=float))
    S = lw.size
    t = int(np.ceil(min(0.2 * S, 3.0 * np.sqrt(S))))
    if S < 2 or not np.isfinite(lw[-1]):
        return np.inf
    return float(np.exp(lw[-1] - lw[S - t - 1])) if S - t - 1 >= 0 else np.inf


def weight_diagnostics(log_w):
    """``weight_ess`` ``(sum w)^2 / sum w^2``, ``weight_ess_fraction`` (over the draws), ``pareto_k``,
    ``tail_ratio``, ``n_weighted`` and ``weights_ok``: ``weight_ess_fraction >= MIN_ESS_FRACTION`` and
    ``pareto_k <= PARETO_K_MAX`` unless ``tail_ratio < TAIL_RATIO_MIN``.

    The exception: ``k``-hat is a shape estimate, blind to scale; where every weight of the tail is within a
    factor 2 of the threshold (nearly equal weights) the fit on the tail's small spread is noise (k-hat 1.7
    measured at a weight ESS of 299 of 300, the tail's weights within 18 % of each other) and no draw holds
    more than twice the weight of the draws below the tail.  A genuinely heavy tail (``k > 0.7``) has its
    largest of ``t`` exceedances near ``t^k`` times the typical one (35 at ``t = 52``).
    """
    lw = np.asarray(log_w, dtype=float)
    if not np.any(np.isfinite(lw)):
        ess = 0.0
    else:
        w = np.exp(lw - np.max(lw))
        ess = float(w.sum() ** 2 / (w @ w))
    k = float(pareto_khat(lw))
    ratio = tail_ratio(lw)
    frac = ess / max(lw.size, 1)
    return dict(weight_ess=ess, weight_ess_fraction=frac, pareto_k=k, tail_ratio=ratio, n_weighted=int(lw.size),
                weights_ok=bool(frac >= MIN_ESS_FRACTION and (k <= PARETO_K_MAX or ratio < TAIL_RATIO_MIN)))


def systematic_resample(log_w, n_out, rng):
    """Indices of ``n_out`` systematic resamples of the weights ``exp(log_w)`` (one uniform of ``rng``):
    index ``i`` appears ``floor`` or ``ceil`` of ``n_out w_i / sum w`` times, in increasing order."""
    lw = np.asarray(log_w, dtype=float)
    w = np.exp(lw - np.max(lw))
    cw = np.cumsum(w)
    cw /= cw[-1]
    u = (rng.random() + np.arange(n_out)) / n_out
    return np.minimum(np.searchsorted(cw, u, side="right"), lw.size - 1)


def _proposal_groups(counts, n, p, q, a=None):
    c_a, n_a = tempered_counts(counts, n, a)
    return count_groups(c_a, n_a, p, q), c_a, n_a


def importance_adaptive(exact, support, prior, max_iter, rng, max_values=None, a=None):
    """``theta_``'s draws: ``(draws, diagnostics)`` with ``draws`` unweighted (resampled), or ``(None,
    diagnostics)`` when the weights fail (the caller runs the exact chain).

    ``exact``: the responses' :class:`~._posterior.Groups`; ``support``: ``(counts, n, p, q)``.  The
    tempered count chain runs as :func:`~._samplers.adaptive_exact_draws` (its R-hat, ESS and
    ``n_draws`` are the returned ``rhat``, ``ess``, ``n_draws``); ``IMPORTANCE_DRAWS`` of its draws,
    evenly thinned, are weighted and resampled ``RESAMPLE_FACTOR`` times as many.  ``a``: the tempering
    (default ``TEMPER``), reported as ``temper``.
    """
    counts, n, p, q = support
    groups, c_a, n_a = _proposal_groups(counts, n, p, q, a)
    draws, diag = adaptive_exact_draws(groups, prior, max_iter, rng, max_values=max_values)
    index = np.arange(draws.shape[0])
    if draws.shape[0] > IMPORTANCE_DRAWS:
        index = np.linspace(0, draws.shape[0] - 1, IMPORTANCE_DRAWS).astype(np.intp)
        draws = draws[index]
    lw = log_weights(exact, draws, c_a, n_a, p, q)
    diag = symmetric_probability(diag, index, lw)
    wd = weight_diagnostics(lw)
    diag = dict(diag, method="importance", temper=TEMPER if a is None else float(a), **wd)
    if not wd["weights_ok"]:
        return None, diag
    return draws[systematic_resample(lw, RESAMPLE_FACTOR * draws.shape[0], rng)], diag


def importance_fixed(exact, support, prior, burn, keep, rng, max_values=None, a=None):
    """``sample_posterior``'s draws: ``max(keep, SAMPLE_IMPORTANCE_DRAWS)`` draws of the tempered count chain after
    ``burn``, all weighted, resampled into as many as :func:`~._samplers.exact_draws` returns for ``keep``
    (``keep``, or fewer when thinned to at most ``max_values`` values); ``(None, diagnostics)`` when the
    weights fail."""
    counts, n, p, q = support
    K = exact.n_categories
    n_out = keep
    if max_values is not None and keep * K > max_values:
        n_out = -(-keep // -(-keep // max(1, max_values // K)))
    groups, c_a, n_a = _proposal_groups(counts, n, p, q, a)
    draws = exact_draws(groups, prior, burn, max(keep, SAMPLE_IMPORTANCE_DRAWS), rng, max_values=max_values)
    lw = log_weights(exact, draws, c_a, n_a, p, q)
    wd = weight_diagnostics(lw)
    if not wd["weights_ok"]:
        return None, wd
    return draws[systematic_resample(lw, n_out, rng)], wd
