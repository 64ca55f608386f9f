"""The error bars of :meth:`PrivateCountSketch.error_bound` (Theorem 5, corrected, and a binomial bound).

With ``σ_i²`` the error variance of a Count Sketch row at the queried item (hashing plus noise),
the median of ``d`` independent rows is off by more than ``κ`` only if at least ``ceil(d/2)``
rows are; :func:`_kappa_from_variances` finds the smallest ``κ`` that either bound certifies.
The validity argument is in the Notes of ``error_bound``.
"""

import math

import numpy as np
from scipy import optimize, stats

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
