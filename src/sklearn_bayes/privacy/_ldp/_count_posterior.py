"""The posterior of ``theta`` given only the support counts (``decoder='counts'``; issue 28, round 9).

Under subset selection SS(k), GRR (= SS(1)) and OUE a user supports category ``v`` with
probability ``pi_v = q + (p - q) theta_v`` whatever the other categories, so the support count is
exactly ``c_v ~ Binomial(n, pi_v)`` (the fact behind IBU, norm-sub and the empirical-Bayes
decoder).  The *count posterior* is

    p(theta, rho | c) ∝ prod_v Bin(c_v; n, pi_v) Dir(theta; rho 1) p(rho),

the same hierarchical symmetric Dirichlet prior as the exact posterior (``ln rho`` uniform on
``RHO_GRID``, or the estimator's fixed prior), with the product of the exact binomial marginals
as a composite likelihood: it ignores the counts' weak dependence (under SS(k) they sum to
``n k``; ``Cov(c_v, c_w) = n (E[b_v b_w] - pi_v pi_w)``, see :func:`sandwich_ratio`).  For
GRR the multinomial likelihood of the counts is the exact one and the exact chain already runs
on at most ``K`` groups: the count posterior is not used there by ``decoder='auto'``.

Sampler.  Each binomial factor is a product of terms of the three-level form of
:class:`~._posterior.Groups`: ``pi_v = p theta_v + q (1 - theta_v)`` is a group whose special
category is ``v`` (``f_y = p``, ``f_out = q``) with ``c_v`` members, and ``1 - pi_v = (1 - q)
(1 - theta_v) + (1 - p) theta_v`` a group whose set is every other category (``f_in = 1 - q``,
``f_out = 1 - p``) with ``n - c_v`` members (:func:`count_groups`).  The exact chain of the
posterior (:func:`~._samplers.adaptive_exact_draws`: latent counts per group by the mixture form,
``rho`` collapsed on its grid, Fisher-preconditioned MALA steps, one coordinate jump per
category, the same stopping rule and diagnostics) targets ``p(theta, rho | c)`` exactly on these
``2 K`` groups: ``O(K^2)`` per iteration whatever ``n``, against ``O(n k)`` for the exact
posterior when the ``n`` responses are nearly all distinct subsets.
"""

import numpy as np
from scipy.stats import binom

from sklearn_bayes.privacy._ldp._mechanisms import ss_support_probabilities
from sklearn_bayes.privacy._ldp._posterior import DENSE_LATENT_MAX_CELLS, Groups

__all__ = ["AUTO_COUNTS_MAX_RATIO", "COUNTS_MAX_CATEGORIES", "count_groups", "count_log_likelihood", "per_user_latent",
           "plug_in_ratio", "sandwich_ratio"]

#: ``decoder='auto'`` uses the count posterior only where :func:`plug_in_ratio` is at most this: a 95 %
#: interval of the composite posterior then covers at least ``2 Phi(1.96 / sqrt(1.07)) - 1 = 0.942`` under
#: the counts' exact covariance (asymptotically).  SS(k) at ``K = 10`` has ratios 1.11-1.14, at
#: ``K = 20, eps <= 1`` 1.05-1.07, at ``K >= 35, eps <= 1`` 1.02-1.04.
AUTO_COUNTS_MAX_RATIO = 1.07

#: ``decoder='counts'`` runs up to this many categories (the chain's MALA steps and its mixture
#: draws need ``2 K^2 <= DENSE_LATENT_MAX_CELLS``-sized dense rows; above, the pseudo-groups' ``n K``
#: members would be drawn one by one).
COUNTS_MAX_CATEGORIES = 128


def count_groups(counts, n, p, q, multinomial=False):
    """The binomial likelihood ``prod_v Bin(c_v; n, pi_v)`` as :class:`~._posterior.Groups` (``2 K`` groups).

    Group ``v`` (``c_v`` members): special category ``v``, ``f_y = p``, ``f_out = q``, so
    ``P = pi_v``; group ``K + v`` (``n - c_v`` members): the set of every category but ``v``,
    ``f_in = 1 - q``, ``f_out = 1 - p``, so ``P = 1 - pi_v``.  Groups with no members are dropped.
    ``multinomial=True`` (GRR: every response supports exactly one category, ``sum_v c_v = n``): the first
    ``K`` groups only, ``prod_v pi_v^{c_v}``, the counts' exact likelihood (the binomial product counts
    it twice at ``K = 2``, where ``c_1 = n - c_0``).
    """
    c = np.asarray(counts, dtype=float)
    K = c.size
    ci = np.rint(c).astype(np.int64)
    if np.any(np.abs(c - ci) > 1e-6) or np.any(ci < 0) or np.any(ci > n):
        raise ValueError("support counts must be integers in [0, n].")
    count = np.r_[ci, int(n) - ci]
    keep = (count > 0) & (np.arange(2 * K) < K if multinomial else True)
    sizes = np.r_[np.zeros(K, dtype=np.int64), np.full(K, K - 1, dtype=np.int64)][keep]
    a_ptr = np.zeros(sizes.size + 1, dtype=np.int32)
    np.cumsum(sizes, out=a_ptr[1:])
    others = np.arange(K)[None, :].repeat(K, axis=0)
    others = others[~np.eye(K, dtype=bool)].reshape(K, K - 1)  # row v: every category but v, increasing
    a_idx = others[keep[K:]].ravel().astype(np.int32)
    y = np.r_[np.arange(K), np.full(K, -1)].astype(np.int32)[keep]
    f_in = np.r_[np.zeros(K), np.full(K, 1.0 - q)][keep]
    f_y = np.r_[np.full(K, float(p)), np.zeros(K)][keep]
    f_out = np.r_[np.full(K, float(q)), np.full(K, 1.0 - p)][keep]
    return Groups(K, a_ptr, a_idx, y, f_in, f_y, f_out, count[keep])


def count_log_likelihood(theta, counts, n, p, q):
    """``sum_v ln Bin(c_v; n, q + (p - q) theta_v)``: the composite log likelihood of the counts."""
    pi = q + (p - q) * np.asarray(theta, dtype=float)
    return float(binom.logpmf(np.asarray(counts), int(n), pi).sum())


def per_user_latent(n_distinct, n_categories, n_responses):
    """Would the exact posterior's chain draw the latent categories per user (``O(n k)`` per iteration)?

    The complement of :func:`~._posterior._dense_latent` for ``n_distinct`` groups: more than
    ``DENSE_LATENT_MAX_CELLS`` group-category cells, or ``4 G K > n``.
    """
    cells = int(n_distinct) * int(n_categories)
    return cells > DENSE_LATENT_MAX_CELLS or 4 * cells > int(n_responses)


def _support(K, epsilon, subset_size):
    """``(p, q)`` of SS(k) (``subset_size = k``) or, for ``subset_size=None``, of OUE (``p = 1/2``)."""
    if subset_size is None:
        return 0.5, 1.0 / (float(np.exp(min(epsilon, 700.0))) + 1.0)
    return ss_support_probabilities(K, epsilon, int(subset_size))


def sandwich_ratio(theta, n_categories, epsilon, subset_size):
    """Per category, the variance of ``theta_v`` the counts' exact covariance gives over the composite one.

    Under SS(k) (``subset_size = k``) one user's support indicators ``b`` have ``E[b_v b_w] =
    (theta_v + theta_w) p (k - 1) / (K - 1) + (1 - theta_v - theta_w) (p (k - 1)(k - 2) + (1 - p)
    k (k - 1)) / ((K - 1)(K - 2))`` for ``v != w``; under OUE (``subset_size=None``, ``p = 1/2``) the bits
    are independent given ``x``: ``E[b_v b_w] = (theta_v + theta_w) p q + (1 - theta_v - theta_w) q^2``.
    With ``H`` the composite likelihood's
    information and ``J = Var(score)``, both restricted to the simplex's tangent space, the
    returned ratio is ``diag(H^-1 J H^-1) / diag(H^-1)`` (the Godambe sandwich over the naive
    variance; 1 where the counts were independent binomials).  Ratios above 1: the count
    posterior's intervals are too narrow by the ratio's square root.  Finite wherever every ``pi_v`` is in
    ``(0, 1)`` (any ``epsilon``, including ``p - q`` rounded to 0); NaN where a count has no variance
    (``pi_v`` rounded to 0 or 1: ``epsilon`` above ~37 + ln K with ``theta_v`` in ``{0, 1}``).
    """
    theta = np.asarray(theta, dtype=float)
    K = int(n_categories)
    p, q = _support(K, epsilon, subset_size)
    pi = q + (p - q) * theta
    if subset_size is None:  # OUE: the bits are independent given x
        a_v, a_out = p * q, q * q
    else:
        k = int(subset_size)
        a_v = p * (k - 1) / (K - 1)
        a_out = (p * (k - 1) * (k - 2) + (1 - p) * k * (k - 1)) / ((K - 1) * (K - 2)) if K > 2 else 0.0
    M = (theta[:, None] + theta[None, :]) * a_v + (1 - theta[:, None] - theta[None, :]) * a_out
    np.fill_diagonal(M, pi)
    S = M - np.outer(pi, pi)
    # the score's factors (p - q) are left out of H and J: the ratio does not depend on them (H and J both
    # scale as (p - q)^2), and with them H was singular where p - q rounds to 0 (epsilon below ~1e-16)
    P = np.eye(K)[:, :-1] - np.eye(K)[:, [-1]]
    with np.errstate(divide="ignore", invalid="ignore"):
        D = 1.0 / (pi * (1 - pi))
        Hb = P.T @ np.diag(D) @ P
        Jb = P.T @ (D[:, None] * S * D[None, :]) @ P
        if not (np.all(np.isfinite(Hb)) and np.all(np.isfinite(Jb))):
            return np.full(K, np.nan)
        Hi = np.linalg.inv(Hb)
        return np.diag(P @ Hi @ Jb @ Hi @ P.T) / np.diag(P @ Hi @ P.T)


def plug_in_ratio(counts, n, n_categories, epsilon, subset_size):
    """The largest :func:`sandwich_ratio` at the clipped, renormalised unbiased estimate of ``theta``
    (``inf`` where that is not finite; with ``p - q`` rounded to 0 the estimate is uniform)."""
    K = int(n_categories)
    p, q = _support(K, epsilon, subset_size)
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = np.clip((np.asarray(counts, dtype=float) / max(int(n), 1) - q) / (p - q), 0.0, None)
    ok = np.all(np.isfinite(theta)) and theta.sum() > 0
    theta = theta / theta.sum() if ok else np.full(K, 1.0 / K)
    ratio = float(sandwich_ratio(theta, K, epsilon, subset_size).max())
    return ratio if np.isfinite(ratio) else np.inf  # a count without variance: not a ratio 'auto' may accept
