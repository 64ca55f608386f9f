"""The logistic regression's Laplace-moderated predictive (``predictive='moderated'``).

Under the Laplace posterior :math:`N(\\hat\\theta, \\Sigma)` of the coefficients and intercepts the
class scores of a row :math:`\\tilde x = (x, 1)` are Gaussian: the reference class's score is 0,
the others' means are the MAP scores and their covariance is :math:`V_{kl} = \\tilde x^\\top
\\Sigma_{kl} \\tilde x` (:math:`\\Sigma_{kl}` the block of class ``k``'s against class ``l``'s
parameters).  The predictive probability is the expectation of the softmax over that Gaussian;
:func:`moderated_log_proba` approximates it by MacKay's probit approximation, applied to every
pairwise difference of scores (exact in the binary case up to the probit approximation itself).
"""

import numpy as np
from scipy.special import logsumexp

#: MacKay's constant: sigma(a) ~ Phi(sqrt(pi / 8) a), so E sigma(a) ~ sigma(mu / sqrt(1 + pi s^2 / 8))
PROBIT_LAMBDA = np.pi / 8.0

#: rows per block of the score covariances (bounds the temporary array to ~32 MB)
_BLOCK_ELEMENTS = 1 << 22


def score_covariance(X, theta_covariance, n_scores, fit_intercept, intercept_column=None):
    """Covariances of the ``n_scores`` non-reference class scores of every row of ``X``.

    ``theta_covariance`` is ordered as the estimator stores it (``_theta_covariance``): the
    coefficients of the ``n_scores`` linear predictors row by row, then their intercepts (if
    fitted), all in the units of ``X``.  Returns ``V`` of shape ``(n_samples, n_scores,
    n_scores)`` with ``V[i, k, l] = x_i^T Sigma_kl x_i`` (``x_i`` with a 1 appended for the
    intercept).  Cost ``O(n q^2 d^2)`` (``q = n_scores``, ``d`` the parameters per score): one
    matrix product per block of rows, no loop over rows.  ``intercept_column``: the value appended
    to every row in place of 1 (shape ``(n_samples,)``; :func:`scaled_rows`' ``1 / t``).
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    q = n_scores
    if fit_intercept:
        ones = np.ones(n) if intercept_column is None else np.asarray(intercept_column, dtype=np.float64)
        X = np.hstack([X, ones[:, None]])
        idx = np.hstack([np.arange(q * d).reshape(q, d), q * d + np.arange(q)[:, None]])
    else:
        idx = np.arange(q * d).reshape(q, d)
    d1 = idx.shape[1]
    flat = idx.ravel()
    S = np.asarray(theta_covariance, dtype=np.float64)[np.ix_(flat, flat)]
    # S4[i, k, l, j] = Sigma_kl[i, j]: X @ S4 gives, per row, Sigma_kl x for every pair (k, l)
    S4 = S.reshape(q, d1, q, d1).transpose(1, 0, 2, 3).reshape(d1, q * q * d1)
    V = np.empty((n, q, q))
    step = max(1, _BLOCK_ELEMENTS // max(1, q * q * d1))
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, n, step):
            Xb = X[start:start + step]
            A = (Xb @ S4).reshape(Xb.shape[0], q, q, d1)
            V[start:start + step] = np.einsum("nklj,nj->nkl", A, Xb)
    return 0.5 * (V + V.transpose(0, 2, 1))


def scaled_rows(X, offset, scale):
    """``(U, inv_t)``: the standardised rows ``x_s = (x - offset) / scale`` divided by ``t = max(1, max_j |x_s,j|)``
    and ``1 / t``, computed in logarithms, so that no entry overflows whatever ``X`` (``|U| <= 1``).

    For a row far out (``|x_s| >~ 1e154``) the quadratic forms ``x~_s' Sigma x~_s`` overflow; those of
    ``x~_s / t = (U, 1 / t)`` do not, and ``mu / sqrt(1 + c s^2) = (mu / t) / sqrt(1 / t^2 + c s^2 / t^2)``.
    """
    X = np.asarray(X, dtype=np.float64)
    d = X / 2 - np.asarray(offset, dtype=np.float64) / 2  # (x - offset) / 2: no overflow
    with np.errstate(divide="ignore"):
        log_abs = np.log(np.abs(d)) + np.log(2.0) - np.log(np.asarray(scale, dtype=np.float64))
    log_t = np.maximum(0.0, log_abs.max(axis=1, initial=-np.inf))
    return np.sign(d) * np.exp(log_abs - log_t[:, None]), np.exp(-log_t)


def moderated_log_proba(scores, V, inv_t2=None):
    """Log predictive probabilities from the MAP scores and their covariances.

    ``scores``: shape ``(n_samples, K)`` (column 0 the reference class, score 0 with no
    variance); ``V``: shape ``(n_samples, K - 1, K - 1)``, the covariances of the other scores.
    With :math:`a_k` the scores, :math:`m_{kj} = \\mu_k - \\mu_j` and :math:`v_{kj} =
    \\operatorname{Var}(a_k - a_j)`:

    .. math::  \\tilde p_k = \\Big(\\sum_j \\exp\\big(-m_{kj} / \\sqrt{1 + \\pi v_{kj}/8}\\big)\\Big)^{-1},
               \\qquad p_k = \\tilde p_k / \\textstyle\\sum_l \\tilde p_l

    (the sum over all ``j``, the term ``j = k`` being 1): each factor of
    :math:`p_k = 1/(1 + \\sum_{j \\ne k} e^{-(a_k - a_j)})` is replaced by its mean under the
    Gaussian of :math:`a_k - a_j` alone (MacKay's probit approximation of the logistic
    sigmoid), then the result is renormalised.  For ``K = 2`` this is exactly
    :math:`\\sigma(\\mu / \\sqrt{1 + \\pi s^2 / 8})` (and the renormalisation changes nothing);
    with no variance it is the softmax of the scores.  It depends on the scores only through
    their differences, so not on which class is the reference.

    ``inv_t2`` (shape ``(n_samples,)``, default 1): rows given in the units of :func:`scaled_rows`,
    scores and covariances divided by ``t`` and ``t^2``; the ``1`` under the square root is then ``1 / t^2``
    (0 in the limit: ``z = -sign(m) inf`` where ``v = 0``, 0 where ``m = 0`` too).
    """
    scores = np.asarray(scores, dtype=np.float64)
    n, K = scores.shape
    full = np.zeros((n, K, K))
    full[:, 1:, 1:] = V
    diag = np.diagonal(full, axis1=1, axis2=2)
    with np.errstate(over="ignore", invalid="ignore"):
        v = diag[:, :, None] + diag[:, None, :] - 2.0 * full  # Var(a_k - a_j)
        m = scores[:, :, None] - scores[:, None, :]
        one = 1.0 if inv_t2 is None else np.asarray(inv_t2, dtype=np.float64)[:, None, None]
        den = np.sqrt(one + PROBIT_LAMBDA * np.maximum(v, 0.0))
        z = np.where(den > 0, -m / np.where(den > 0, den, 1.0), np.where(m == 0, 0.0, -np.sign(m) * np.inf))
    logp = -logsumexp(z, axis=2)
    if K > 2:
        logp = logp - logsumexp(logp, axis=1, keepdims=True)
    return logp
