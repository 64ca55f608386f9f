"""Exact grid thresholds of the RRRR device sampler (review HQS V1).

The compiled sampler draws each rare branch -- the outer SRR leaving ``x`` (probability ``P1``) and the
SRR on ``S^c`` leaving ``x`` (``P2``) -- by comparing one of numpy's uniforms ``j / 2^53`` with a
threshold ``t``, which realises ``P = t`` exactly when ``t = n / 2^53``.  The exact probabilities
``P1 = m / (m + e^{eps1})`` (``m = k``, or ``K - 1`` for plain SRR) and ``P2 = (|S^c| - 1) /
(|S^c| - 1 + e^{eps2})`` are not on that grid, and the former thresholds (the float value times
``1 + 8 ulps``) realised likelihood ratios above ``e^eps`` (up to 9.3e-13 nats at ``K = 1000``, about
1e-6 at ``K = 2^31 - 1``).  Here ``n1, n2`` are chosen per subset size and every column's realised
ratio is *verified* with integers and a rational lower bound ``L <= e^eps``:

* in-``S`` columns (and plain SRR): ``(1 - P1)`` against ``P1 / m``;
* out-of-``S`` columns: ``(1 - P2)(1 - P1)`` (``x = y``), ``P1 / (k |S^c|)`` (``x`` in ``S``) and
  ``P2 (1 - P1) / (|S^c| - 1)`` (``x``, ``y`` outside ``S``, ``x != y``),

each pair's ratio at most ``L`` both ways.  The candidates are the grid points next to the exact
probabilities of the mechanism at a budget shaved by a relative ``0, 2^-40, 2^-30, ..., 2^-2``: the
release is then ``epsilon``-LDP (the exact audit) and, where a shave was needed, also
``(1 - s) epsilon``-LDP before rounding.  A budget for which no candidate passes (a tiny ``epsilon`` at
a large ``K``) is refused naming ``epsilon``.
"""

import math
from fractions import Fraction

import numpy as np

__all__ = ["EXACT_SIMULATION_MAX", "grid_thresholds", "realised_entries"]

_N = 2**53
_SHAVES = (0.0,) + tuple(2.0**-e for e in (40, 30, 24, 20, 16, 12, 8, 5, 3, 2))


def _exp_lower(epsilon):
    """An exact rational ``L <= e^eps`` (``e^eps`` for eps above 100 as ``e^100``, still a lower bound):
    ``1 + expm1(eps) (1 - 2^-49)``, ``expm1`` being accurate to a few ulps, and ``1`` at worst."""
    return 1 + Fraction(math.expm1(min(float(epsilon), 100.0))) * Fraction(2**49 - 1, 2**49)


def _tail_pair(log_m, e):
    """``(P, 1 - P)`` of ``P = m / (m + e^e)`` in floats, each with a few ulps of relative error."""
    return math.exp(-np.logaddexp(0.0, e - log_m)), math.exp(-np.logaddexp(0.0, log_m - e))


def _grid_candidates(p, q):
    """Grid counts ``n`` in ``[1, N - 1]`` next to ``p`` (``q = 1 - p``, the smaller one rounded)."""
    c = p * _N if p <= q else _N - q * _N
    base = {math.floor(c), math.ceil(c)}
    return sorted({min(max(n + d, 1), _N - 1) for n in base for d in (-1, 0, 1)}, key=lambda n: abs(n - c))


def realised_entries(K, k, n1, n2):
    """Every column's distinct realised probabilities (as integer numerators over a common denominator per
    column) of the sampler with ``P1 = n1 / 2^53`` and ``P2 = n2 / 2^53``, ``S`` of size ``k``."""
    N = _N
    if k == 0:
        return [((N - n1) * (K - 1), n1)]
    sc = K - k
    cols = [((N - n1) * k, n1)]  # y in S: x = y, x != y
    if sc == 1:
        cols.append(((N - n1) * k, n1))  # y the one outsider: x = y, x in S
    else:
        cols.append(((N - n2) * (N - n1) * k * sc * (sc - 1), n1 * N * (sc - 1), n2 * (N - n1) * k * sc))
    return cols


def _passes(cols, L):
    num, den = L.numerator, L.denominator
    for col in cols:
        hi, lo = max(col), min(col)
        if lo <= 0 or hi * den > num * lo:
            return False
    return True


def grid_thresholds(K, epsilon, kappa, k, epsilon2):
    """``(t1, t2)``: the sampler's exact thresholds for subset size ``k`` (``t2 = 0`` when unused).

    ``epsilon2(eps)`` returns the mechanism's ``eps2`` at the budget ``eps`` (Theorem 6).  Raises
    ``ValueError`` naming ``epsilon`` when no grid point honours the budget.
    """
    L = _exp_lower(epsilon)
    m = K - 1 if k == 0 else k
    sc = K - k
    for s in _SHAVES:
        eps = epsilon * (1.0 - s)
        e1 = eps if k == 0 else kappa * eps
        c1 = _grid_candidates(*_tail_pair(math.log(m), e1))
        if k == 0 or sc == 1:
            c2 = [0]
        else:
            c2 = _grid_candidates(*_tail_pair(math.log(sc - 1), epsilon2(eps)))
        for n1 in c1:
            for n2 in c2:
                if _passes(realised_entries(K, k, n1, n2), L):
                    return n1 / _N, n2 / _N
    raise ValueError(
        f"epsilon={float(epsilon)!r} is below the smallest budget that numpy's 53-bit uniforms can honour "
        f"exactly for RRRR with n_categories={K}, subset size {k}, kappa={kappa!r}: no pair of thresholds on "
        "the 2^-53 grid keeps every likelihood ratio within e^epsilon."
    )


#: Largest ``K`` whose simulation-mode table gets the exact thresholds (80-300 us per subset size: about
#: 0.3 s at 1024); above, the simulation kernel keeps the former 8-ulp rounding.
EXACT_SIMULATION_MAX = 1024
