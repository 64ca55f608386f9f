"""Exact privacy-loss computations for Gaussian releases (one posterior sample of ridge, λ_min).

Everything here is closed form in normal CDFs (no sampling, no accountant library):

* :func:`gaussian_hockey_stick`: the exact hockey-stick divergence
  ``δ(ε) = sup_S P(S) - e^ε Q(S)`` between two univariate Gaussians of any means and
  variances (the privacy loss ``log p/q`` is a quadratic, so ``{log p/q > ε}`` is an
  interval or the complement of one);
* :func:`ops_ridge_delta` / :func:`ops_ridge_epsilon`: the exact (ε, δ) of one draw from
  the ridge posterior ``N(H⁻¹Xᵀy, (γH)⁻¹)`` for the pair of data sets ``Z`` and ``Z ∪ {(x, y)}``
  (both directions), a function of the out-of-sample leverage ``μ = xᵀH⁻¹x`` and of
  ``c = √(γμ) |r|`` with the residual ``r = y - xᵀθ̂`` (``H``, ``θ̂`` from ``Z``);
* :func:`analytic_gaussian_sigma`: the analytic Gaussian mechanism (Balle and Wang 2018).

Why one dimension suffices
--------------------------
The log-ratio of the two posteriors depends on θ only through ``t = xᵀθ``:
``log p_Z(θ)/p_{Z∪z}(θ) = -½ log(1+μ) + γ/2 [(y - t)² - (y - xᵀθ̂)²/(1+μ)]``
(proof of Theorem 5.15 of *Statistical and Computational Tradeoffs in Differential
Privacy*, Wang's thesis), so the hockey-stick divergence of the two ``d``-dimensional
Gaussians equals that of the laws of ``t``: ``N(xᵀθ̂, μ/γ)`` under ``Z`` and
``N(xᵀθ̂', μ/(γ(1+μ)))`` under ``Z ∪ z`` with ``y - xᵀθ̂' = r/(1+μ)``.  Standardised by the
first, the pair is ``N(0, 1)`` and ``N(c/(1+μ), 1/(1+μ))``, and with ``Z ~ N(0, 1)`` the
privacy-loss random variable is

.. math::  L = -\\tfrac12 \\log(1+\\mu) + \\tfrac{\\mu}{2} Z^2 - c Z + \\frac{c^2}{2(1+\\mu)} .
"""

import functools
import math

import numpy as np
from scipy import optimize, special

_SQRT2 = math.sqrt(2.0)

__all__ = [
    "analytic_gaussian_delta",
    "analytic_gaussian_sigma",
    "gaussian_hockey_stick",
    "ops_ridge_delta",
    "ops_ridge_epsilon",
    "ops_ridge_tail_bound",
    "ops_ridge_max_c",
    "privacy_loss_ops_ridge",
]


def _log_cdf(x):
    return float(special.log_ndtr(x))


def _log1mexp(x):
    """``log(1 - e^x)`` for ``x <= 0`` (accurate near 0 and in the far tail)."""
    if x >= 0.0:
        return -math.inf
    return math.log(-math.expm1(x)) if x > -math.log(2.0) else math.log1p(-math.exp(x))


def _log_interval_probability(a, b):
    """``log P(a < Z < b)`` for a standard normal ``Z``, without cancellation or underflow in the tails."""
    if a >= b:
        return -math.inf
    if a > 0:  # both in the upper tail: log(sf(a) - sf(b))
        la, lb = _log_cdf(-a), _log_cdf(-b)
        return la + _log1mexp(lb - la)
    if b < 0:  # both in the lower tail
        la, lb = _log_cdf(a), _log_cdf(b)
        return lb + _log1mexp(la - lb)
    outside = float(special.ndtr(a)) + float(special.ndtr(-b))  # a <= 0 <= b: at most 1
    return math.log1p(-outside) if outside < 1.0 else -math.inf


def _check_nonnegative_epsilon(epsilon, name="epsilon"):
    """``epsilon`` as a float ``>= 0`` (``inf`` allowed); ``ValueError`` naming it for nan or a negative value."""
    if isinstance(epsilon, (bool, np.bool_)):
        raise ValueError(f"{name} must be a real number >= 0, got a bool ({epsilon!r}).")
    try:
        epsilon = float(epsilon)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number >= 0, got {type(epsilon).__name__}.") from None
    if math.isnan(epsilon) or epsilon < 0:
        raise ValueError(f"{name} must be a real number >= 0, got {epsilon!r}.")
    return epsilon


#: Gauss-Legendre nodes and weights for the mass of a narrow interval (exact to rounding there)
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(8)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _log_normal_difference(v, w):
    """``log(Φ(v + w) - Φ(v))`` for a width ``w >= 0`` given apart from ``v`` (``-inf`` at ``w = 0``).

    The width is an argument of its own: ``u = v + w`` rounded would lose the digits of a
    narrow interval (at ``v = -1``, ``w = 10⁻¹²`` keeps only 4).  A narrow interval
    (``w (1 + |m|) < 10⁻²``, ``m = v + w/2`` its midpoint): ``φ(m)`` times the Gauss-Legendre
    integral of ``e^{-mt - t²/2}`` over ``|t| <= w/2`` (a smooth integrand varying by less than
    1 %: exact to rounding); both ends in one tail: the difference of the tail probabilities in
    log space; around 0, the sum ``(erf(u/√2) + erf(-v/√2))/2`` of two non-negative terms.
    """
    if not w > 0:
        return -math.inf
    u, m = v + w, v + 0.5 * w
    if math.isfinite(w) and w * (1.0 + abs(m)) < 1e-2:
        t = 0.5 * w * _GL_NODES
        integral = float(np.dot(_GL_WEIGHTS, np.exp(-m * t - 0.5 * t * t)))
        return -0.5 * m * m - _LOG_SQRT_2PI + math.log(0.5 * w) + math.log(integral)
    if v > 0 or u < 0:
        return _log_interval_probability(v, u)
    p = 0.5 * (float(special.erf(u / _SQRT2)) + float(special.erf(-v / _SQRT2)))
    return math.log(p) if p > 0.0 else -math.inf


def _log_expm1(x):
    """``log(e^x - 1)`` for ``x > 0`` (no overflow for large ``x``, exact for tiny ``x``)."""
    return x + _log1mexp(-x)


#: below this relative margin ``1 - e^{ε + log Q - log P}`` a piece is recomputed from ``log(P - Q)``
_CANCELLATION = 1e-6


def _hockey_stick_pieces(pieces, epsilon):
    """``Σ_i max(P_i - e^ε Q_i, 0)`` from the pairs ``(log P_i, log Q_i)`` of the disjoint pieces of ``S``.

    Each piece is ``P_i (1 - e^{ε + log Q_i - log P_i})``: no ``e^ε`` is formed (no overflow for
    any finite ε), no tail probability underflows to 0 before it is multiplied by ``e^ε``, and
    the pieces (each >= 0 on the optimal set) are subtracted separately, not after summing a
    large tail with a small one.

    A piece may carry a third entry, ``log(P_i - Q_i)`` computed without cancellation (equal
    variances: an interval probability of one normal law).  Where ``1 - e^{ε + log Q_i - log P_i}``
    is below ``10⁻³`` (``P_i`` and ``e^ε Q_i`` agree to three digits and the two logarithms'
    rounding, about ``10⁻¹⁶ |log P_i|``, would dominate the difference -- it rounded a
    positive δ of ``4·10⁻²¹`` to 0 and under-stated one of ``4·10⁻¹⁶`` by 16 %), the piece is
    ``(P_i - Q_i) - (e^ε - 1) Q_i``, both terms in log space.
    """
    total = 0.0
    for piece in pieces:
        log_p, log_q = piece[0], piece[1]
        if log_p == -math.inf:
            continue
        x = epsilon + log_q - log_p
        margin = -math.expm1(x) if x < 1.0 else -1.0  # 1 - e^ε Q_i/P_i (<= 0: the piece adds nothing)
        if len(piece) > 2 and margin < _CANCELLATION:
            # P_i and e^ε Q_i agree to rounding: (P_i - Q_i) - (e^ε - 1) Q_i from the exact difference
            log_d = piece[2]
            if log_d == -math.inf:
                continue
            y = _log_expm1(epsilon) + log_q - log_d if epsilon > 0.0 else -math.inf
            if y < 0.0:
                total += math.exp(log_d) * -math.expm1(y)
        elif margin > 0.0:
            total += math.exp(log_p) * margin
    return min(max(total, 0.0), 1.0)


def gaussian_hockey_stick(m1, s1, m2, s2, epsilon):
    """Exact ``δ(ε) = sup_S P(S) - e^ε Q(S)`` for ``P = N(m1, s1²)``, ``Q = N(m2, s2²)``.

    The supremum is attained at ``S = {t : log p(t)/q(t) > ε}``; ``log p/q = A t² + B t + C'``
    is a quadratic, so ``S`` is a half-line, an interval, the complement of an interval,
    empty or the whole line, and both probabilities are normal CDF differences.

    Parameters
    ----------
    m1, s1, m2, s2 : float
        Means and standard deviations (``s1, s2 > 0``).
    epsilon : float
        ``ε >= 0`` (``inf`` gives 0; nan or a negative value raise ``ValueError``).

    Returns
    -------
    delta : float in [0, 1]

    Notes
    -----
    Computed in log space, piece by piece of ``S`` (:func:`_hockey_stick_pieces`):
    ``P(S_i) - e^ε Q(S_i) = P(S_i)(1 - e^{ε + log Q(S_i) - log P(S_i)})`` with the log
    probabilities from ``log Φ``, so any finite ``ε`` is exact (no overflow of ``e^ε`` above
    709, no tail probability ``Q(S_i)`` underflowing to 0 before it is scaled by ``e^ε``).
    With equal variances, where ``P(S)`` and ``e^ε Q(S)`` agree to six digits (a shift far
    below the sd, ε near 0), the piece is ``(P - Q) - (e^ε - 1) Q`` with ``P - Q`` the mass of
    one normal law on an interval of known width: a positive δ is never rounded to 0.

    Examples
    --------
    >>> round(gaussian_hockey_stick(0.0, 1.0, 1.0, 1.0, 0.0), 6)  # total variation
    0.382925
    >>> gaussian_hockey_stick(0.0, 1.0, 1.0, 1.0, 1e6)
    0.0
    """
    epsilon = _check_nonnegative_epsilon(epsilon)
    if math.isinf(epsilon):
        return 0.0
    A = 0.5 / s2**2 - 0.5 / s1**2
    B = m1 / s1**2 - m2 / s2**2
    C = 0.5 * m2**2 / s2**2 - 0.5 * m1**2 / s1**2 + math.log(s2 / s1) - epsilon
    scale = max(abs(B), abs(C), 1e-300)
    if abs(A) <= 1e-15 * scale:  # equal variances: a half-line
        if B == 0:
            return 0.0  # log p/q is the constant C + ε; with ε >= 0, P(S) - e^ε Q(S) <= 1 - e^ε <= 0
        t = -C / B
        # log(P(S) - Q(S)) without cancellation: with (numerically) equal variances it is the mass of
        # one normal law between the two standardised ends
        if B > 0:  # S = (t, inf)
            u, v = -(t - m1) / s1, -(t - m2) / s2
        else:  # S = (-inf, t)
            u, v = (t - m1) / s1, (t - m2) / s2
        pieces = [(_log_cdf(u), _log_cdf(v), _log_normal_difference(v, abs(m1 - m2) / s1))]
        return _hockey_stick_pieces(pieces, epsilon)
    disc = B * B - 4.0 * A * C
    if disc <= 0:
        return 0.0  # S is empty or the whole line (then δ = 1 - e^ε <= 0)
    sq = math.sqrt(disc)
    q = -0.5 * (B + math.copysign(sq, B)) if B != 0 else -0.5 * sq
    t1, t2 = sorted((q / A, C / q))
    if A > 0:  # S = (-inf, t1) ∪ (t2, inf): two pieces
        pieces = [
            (_log_cdf((t1 - m1) / s1), _log_cdf((t1 - m2) / s2)),
            (_log_cdf(-(t2 - m1) / s1), _log_cdf(-(t2 - m2) / s2)),
        ]
    else:  # S = (t1, t2)
        pieces = [(
            _log_interval_probability((t1 - m1) / s1, (t2 - m1) / s1),
            _log_interval_probability((t1 - m2) / s2, (t2 - m2) / s2),
        )]
    return _hockey_stick_pieces(pieces, epsilon)


def _ops_pair(mu, c):
    """Standardised laws of ``t = xᵀθ`` under ``Z`` and under ``Z ∪ z``."""
    return 0.0, 1.0, c / (1.0 + mu), 1.0 / math.sqrt(1.0 + mu)


def ops_ridge_delta(epsilon, mu, c, direction="both"):
    """Exact δ(ε) of one ridge-posterior draw for the pair ``Z``, ``Z ∪ {z}``.

    Parameters
    ----------
    epsilon : float
        ``ε >= 0``; ``inf`` gives 0, nan and negative values raise ``ValueError`` naming ``epsilon``.
    mu : float
        Out-of-sample leverage ``μ = xᵀH⁻¹x >= 0`` of the record ``z = (x, y)`` (``H`` from ``Z``);
        ``inf`` (a record the posterior has not seen in any direction) gives δ = 1 at finite ε.
    c : float
        ``√(γ μ) |r|`` with ``r = y - xᵀθ̂`` the residual of ``z`` under the ridge fit on ``Z``
        (``inf`` gives δ = 1 at finite ε).
    direction : {"both", "remove", "add"}, default="both"
        ``"remove"``: ``sup_S P_Z(S) - e^ε P_{Z∪z}(S)``; ``"add"``: the reverse; ``"both"``:
        the larger (what (ε, δ)-indistinguishability of the pair needs).

    Returns
    -------
    delta : float

    Examples
    --------
    >>> ops_ridge_delta(1.0, 0.0, 0.0)
    0.0
    >>> bool(ops_ridge_delta(0.5, 0.1, 1.0) > ops_ridge_delta(0.5, 0.1, 0.5))
    True
    """
    epsilon = _check_nonnegative_epsilon(epsilon)
    # mu and c are functions of the data (per-instance accounting): the errors never print them
    if not mu >= 0:
        raise ValueError("mu must be a real number >= 0 (a leverage); got a negative or nan value.")
    if not c >= 0:
        raise ValueError("c must be a real number >= 0 (a scaled absolute residual); got a negative or nan value.")
    if direction not in ("both", "remove", "add"):
        raise ValueError(f"direction must be 'both', 'remove' or 'add', got {direction!r}.")
    if math.isinf(epsilon):
        return 0.0
    if math.isinf(mu) or math.isinf(c):
        # the pair's laws are mutually singular in the limit (a point mass or an infinite shift): δ = 1
        return 1.0
    if mu == 0:
        return 0.0 if c == 0 else gaussian_hockey_stick(0.0, 1.0, c, 1.0, epsilon)
    m1, s1, m2, s2 = _ops_pair(mu, c)
    if direction == "remove":
        return gaussian_hockey_stick(m1, s1, m2, s2, epsilon)
    if direction == "add":
        return gaussian_hockey_stick(m2, s2, m1, s1, epsilon)
    return max(gaussian_hockey_stick(m1, s1, m2, s2, epsilon), gaussian_hockey_stick(m2, s2, m1, s1, epsilon))


#: the largest ε bracket :func:`ops_ridge_epsilon` searches (beyond it the answer is reported as ``inf``)
_MAX_EPSILON_SEARCH = 2.0**20
#: the smallest target δ of :func:`ops_ridge_epsilon` (δ(ε) underflows below ~1e-308)
_MIN_TARGET_DELTA = 1e-300


def ops_ridge_epsilon(delta, mu, c):
    """Smallest ε with ``ops_ridge_delta(ε, μ, c) <= δ`` (the exact per-instance ε at δ).

    Returns ``inf`` when even ``ε = 2²⁰ ≈ 10⁶`` leaves ``δ(ε) > δ`` (or when ``μ`` or ``c`` is
    infinite: δ = 1 at every finite ε).

    Examples
    --------
    >>> eps = ops_ridge_epsilon(1e-6, 0.01, 0.2)
    >>> bool(ops_ridge_delta(eps, 0.01, 0.2) <= 1e-6 * (1 + 1e-9))
    True
    """
    if isinstance(delta, (bool, np.bool_)) or not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
    if delta < _MIN_TARGET_DELTA:
        # δ(ε) is a double: below ~1e-308 it underflows to 0 and the search would stop too early
        raise ValueError(
            f"delta={delta!r} is below {_MIN_TARGET_DELTA:g}, the smallest delta the exact accounting "
            "resolves in floating point; use a larger delta."
        )
    f = lambda e: ops_ridge_delta(e, mu, c) - delta  # noqa: E731  (decreasing in e)
    if f(0.0) <= 0:
        return 0.0
    hi = 1.0
    while f(hi) > 0:
        if hi >= _MAX_EPSILON_SEARCH:
            return math.inf
        hi *= 2.0
    eps = optimize.brentq(f, 0.0, hi, xtol=1e-300, rtol=1e-12) * (1 + 1e-10)
    # relative tolerance only (an absolute 1e-12 left a tiny ε 1e-7 short, or 4e-5 long); where δ(ε) is
    # very steep (a small shift or leverage) the last digits still matter: step up until δ is certified
    step = 1e-10
    while f(eps) > 0:
        step *= 4.0
        eps = max(eps * (1.0 + step), eps + 1e-300)
    return eps


def ops_ridge_max_c(epsilon, delta, mu):
    """Largest ``c = √(γμ)|r|`` with ``ops_ridge_delta(ε, μ, c) <= δ`` (δ is increasing in c).

    Returns ``None`` when even ``c = 0`` (no residual) exceeds δ: the leverage ``μ`` alone
    (the variance change of the posterior) is too large for (ε, δ).  ``ε`` must be finite and
    ``>= 0`` and ``δ`` in ``(0, 1)`` (``ValueError`` naming the argument otherwise).
    """
    epsilon = _check_nonnegative_epsilon(epsilon)
    if math.isinf(epsilon):
        raise ValueError("epsilon must be finite: at epsilon=inf every c is allowed (no largest c).")
    if isinstance(delta, (bool, np.bool_)) or not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
    if ops_ridge_delta(epsilon, mu, 0.0) > delta:
        return None
    f = lambda c: ops_ridge_delta(epsilon, mu, c) - delta  # noqa: E731
    hi = 1.0
    while f(hi) <= 0:
        hi *= 2.0
    return optimize.brentq(f, 0.0, hi, xtol=1e-14, rtol=1e-13) * (1 - 1e-9)


def privacy_loss_ops_ridge(z, mu, c):
    """The privacy-loss random variable ``L(Z) = log p_Z(θ)/p_{Z∪z}(θ)`` at standard normal ``z``."""
    z = np.asarray(z, dtype=float)
    return -0.5 * math.log1p(mu) + 0.5 * mu * z**2 - c * z + c * c / (2.0 * (1.0 + mu))


def ops_ridge_tail_bound(delta, mu, gamma, r, form="corrected"):
    """Closed-form ε with ``P(|L| > ε) <= δ`` (Theorem 5.15 of the thesis, eq. 5.5).

    ``form="corrected"``: ``½|-log(1+μ) + γμr²/(1+μ)| + μ log(2/δ) + √(2γμ log(2/δ)) |r|``
    (valid: uses ``|Z| <= √(2 log(2/δ))`` w.p. ``1-δ``).  ``form="thesis"``: the printed
    ``(μ/2) log(2/δ)`` and ``√(γμ log(2/δ))``, whose tail probability exceeds δ.
    """
    if isinstance(delta, (bool, np.bool_)) or not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
    mu, gamma = _check_nonnegative_epsilon(mu, "mu"), _check_nonnegative_epsilon(gamma, "gamma")
    if not (math.isfinite(mu) and math.isfinite(gamma) and math.isfinite(r)):
        raise ValueError("mu, gamma and r must be finite.")
    lg = math.log(2.0 / delta)
    base = 0.5 * abs(-math.log1p(mu) + gamma * mu * r * r / (1.0 + mu))
    if form == "thesis":
        return base + 0.5 * mu * lg + math.sqrt(gamma * mu * lg) * abs(r)
    if form == "corrected":
        return base + mu * lg + math.sqrt(2.0 * gamma * mu * lg) * abs(r)
    raise ValueError(f"form must be 'corrected' or 'thesis', got {form!r}.")


# --------------------------------------------------------------------------------------
# the analytic Gaussian mechanism
# --------------------------------------------------------------------------------------


def analytic_gaussian_delta(sigma, epsilon, sensitivity=1.0):
    """Exact δ(ε) of the Gaussian mechanism ``f(D) + N(0, σ²)`` with L2 sensitivity Δ.

    ``Φ(Δ/(2σ) - εσ/Δ) - e^ε Φ(-Δ/(2σ) - εσ/Δ)`` (Balle and Wang 2018, Theorem 8); ``σ = 0`` (no
    noise) gives 1.  A negative or nan ``σ`` or ``ε``, or a sensitivity not finite and > 0, raises ValueError.
    Exact (10⁻⁸ relative, tested against 330-digit arithmetic) for σ from 1e-300 to 1e300 and any
    finite ε: where the two terms nearly cancel (σ >> Δ) their difference is computed directly.
    """
    sigma, epsilon = _check_nonnegative_epsilon(sigma, "sigma"), _check_nonnegative_epsilon(epsilon)
    if isinstance(sensitivity, (bool, np.bool_)) or not (0 < sensitivity < math.inf):
        raise ValueError(f"sensitivity must be finite and > 0, got {sensitivity!r}.")
    if sigma == 0:
        return 1.0
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    # P(S) - e^ε Q(S) with S = {t > ε σ²/Δ + Δ/2}, P = N(Δ, σ²), Q = N(0, σ²): one piece of
    # gaussian_hockey_stick's, with the cancellation-free difference Φ(a - b) - Φ(-a - b) where
    # both are nearly equal (σ >> Δ)
    u, v = a - b, -a - b
    return _hockey_stick_pieces([(_log_cdf(u), _log_cdf(v), _log_normal_difference(v, 2.0 * a))], epsilon)


@functools.lru_cache(maxsize=256)
def analytic_gaussian_sigma(epsilon, delta, sensitivity=1.0):
    """Smallest σ for which the Gaussian mechanism with sensitivity Δ is (ε, δ)-DP (cached).

    Examples
    --------
    >>> s = analytic_gaussian_sigma(0.5, 5e-7)
    >>> bool(analytic_gaussian_delta(s, 0.5) <= 5e-7 * (1 + 1e-9))
    True
    """
    epsilon = _check_nonnegative_epsilon(epsilon)
    if math.isinf(epsilon):
        raise ValueError("epsilon must be finite: at epsilon=inf no noise is needed (sigma = 0).")
    if isinstance(delta, (bool, np.bool_)) or not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
    if delta < _MIN_TARGET_DELTA:
        # δ(σ) is a double: near 1e-308 it loses its digits and then underflows (the search overflowed)
        raise ValueError(
            f"delta={delta!r} is below {_MIN_TARGET_DELTA:g}, the smallest delta the analytic Gaussian "
            "mechanism's accounting resolves in floating point; use a larger delta."
        )
    if isinstance(sensitivity, (bool, np.bool_)) or not (0 < sensitivity < math.inf):
        raise ValueError(f"sensitivity must be finite and > 0, got {sensitivity!r}.")
    f = lambda ls: math.log(max(analytic_gaussian_delta(math.exp(ls), epsilon, sensitivity), 1e-320)) - math.log(delta)  # noqa: E731
    lo, hi = math.log(sensitivity) - 10.0, math.log(sensitivity) + 1.0
    while f(hi) > 0:
        hi += 2.0
    while f(lo) < 0:
        lo -= 2.0
    return math.exp(optimize.brentq(f, lo, hi, xtol=1e-13, rtol=1e-13)) * (1 + 1e-9)


# --------------------------------------------------------------------------------------
# the ridge-posterior draw composed with Gaussian releases (dp-accounting PLD)
# --------------------------------------------------------------------------------------


def _quadratic_loss_sf(A, B, C0, ell):
    """``P(A t² + B t + C0 > ℓ)`` for ``t ~ N(0, 1)``, vectorised over ``ℓ``.

    ``A = 0`` (equal variances: ``μ = 0``, or ``1 + μ`` rounding to 1) is a linear loss, a half-line.
    """
    ell = np.asarray(ell, dtype=float)
    if A == 0:
        if B == 0:
            return np.where(C0 > ell, 1.0, 0.0)
        return special.ndtr(-(ell - C0) / B) if B > 0 else special.ndtr((ell - C0) / B)
    disc = B * B - 4.0 * A * (C0 - ell)
    sq = np.sqrt(np.maximum(disc, 0.0))
    r1, r2 = (-B - sq) / (2.0 * A), (-B + sq) / (2.0 * A)
    lo, hi = np.minimum(r1, r2), np.maximum(r1, r2)
    if A > 0:  # loss above ell outside the roots
        out = special.ndtr(lo) + special.ndtr(-hi)
        return np.where(disc > 0, out, 1.0)
    between = np.where(lo > 0, special.ndtr(-lo) - special.ndtr(-hi),
                       np.where(hi < 0, special.ndtr(hi) - special.ndtr(lo),
                                1.0 - special.ndtr(lo) - special.ndtr(-hi)))
    return np.where(disc > 0, np.maximum(between, 0.0), 0.0)


#: most points of one discretised privacy-loss distribution (memory: about 100 bytes each in dp-accounting)
_MAX_PLD_POINTS = 10**7


def _rounded_loss_pmf(m1, s1, m2, s2, interval):
    """Pessimistic PMF (rounded up to multiples of ``interval``) of ``log p/q`` under ``p = N(m1, s1²)``."""
    # in the standardised variable t = (x - m1)/s1 ~ N(0, 1): log p/q = A t² + B t + C0
    a = 0.5 / s2**2 - 0.5 / s1**2
    b = m1 / s1**2 - m2 / s2**2
    c0 = 0.5 * m2**2 / s2**2 - 0.5 * m1**2 / s1**2 + math.log(s2 / s1)
    A, B, C0 = a * s1 * s1, (2 * a * m1 + b) * s1, a * m1 * m1 + b * m1 + c0
    t = np.linspace(-40.0, 40.0, 4001)
    vals = A * t * t + B * t + C0
    k_lo = int(math.floor(vals.min() / interval))
    k_hi = int(math.ceil(vals.max() / interval))
    if k_hi - k_lo > _MAX_PLD_POINTS:
        # a shift c of 1e10 asked for 8e14 points (a MemoryError of 5.68 PiB): refuse by name instead
        raise ValueError(
            f"the privacy loss spans {k_hi - k_lo} multiples of interval={interval!r} (more than "
            f"{_MAX_PLD_POINTS:g}): the pair is too far apart for this discretisation; use a larger interval."
        )
    ks = np.arange(k_lo, k_hi + 1)
    sf = _quadratic_loss_sf(A, B, C0, ks * interval)
    mass = np.empty(ks.shape[0])
    mass[0] = 1.0 - sf[0]
    mass[1:] = np.maximum(sf[:-1] - sf[1:], 0.0)
    keep = mass > 0
    return dict(zip(ks[keep].tolist(), mass[keep].tolist())), float(sf[-1])


def ops_ridge_composed_delta(epsilon, mu, c, gaussian_mu, interval=1e-3):
    """δ(ε) of one ridge-posterior draw (pair ``Z``, ``Z ∪ {z}``) composed with a Gaussian mechanism.

    The draw's privacy-loss distributions in both directions are discretised pessimistically
    (losses rounded up, the tail beyond ``|t| = 40`` standard deviations counted as infinite
    loss) and composed with the Gaussian mechanism of ratio sensitivity/σ ``gaussian_mu`` by
    Google's ``dp-accounting`` (pessimistic PLD).  Without the Gaussian part it is an upper
    bound on :func:`ops_ridge_delta`.

    Examples
    --------
    >>> d = ops_ridge_composed_delta(0.5, 0.01, 0.05, 0.0)
    >>> bool(d >= ops_ridge_delta(0.5, 0.01, 0.05))
    True
    """
    from dp_accounting.pld import privacy_loss_distribution as P

    m1, s1, m2, s2 = _ops_pair(mu, c)
    pmf_r, inf_r = _rounded_loss_pmf(m1, s1, m2, s2, interval)
    pmf_a, inf_a = _rounded_loss_pmf(m2, s2, m1, s1, interval)
    pld = P.PrivacyLossDistribution.create_from_rounded_probability(
        pmf_r, inf_r, interval, pessimistic_estimate=True,
        rounded_probability_mass_function_add=pmf_a, infinity_mass_add=inf_a, symmetric=False,
    )
    if gaussian_mu > 0:
        pld = pld.compose(_gaussian_pld(gaussian_mu, interval))
    return float(pld.get_delta_for_epsilon(epsilon))


@functools.lru_cache(maxsize=64)
def _gaussian_pld(gaussian_mu, interval):
    from dp_accounting.pld import privacy_loss_distribution as P

    return P.from_gaussian_mechanism(1.0 / gaussian_mu, sensitivity=1.0, value_discretization_interval=interval)


@functools.lru_cache(maxsize=1024)
def ops_ridge_composed_max_c(epsilon, delta, mu, gaussian_mu, interval=1e-3):
    """Largest ``c`` with :func:`ops_ridge_composed_delta` ``<= δ`` (``None`` if even ``c = 0`` fails; cached)."""
    f = lambda c: ops_ridge_composed_delta(epsilon, mu, c, gaussian_mu, interval) <= delta  # noqa: E731
    if not f(0.0):
        return None
    # bracket around the Gaussian approximation sqrt(mu_T^2 - mu_G^2) of the answer
    mu_t = 1.0 / analytic_gaussian_sigma(epsilon, delta)
    guess = math.sqrt(max(mu_t * mu_t - gaussian_mu * gaussian_mu, 0.0))
    lo, hi = 0.9 * guess, 1.05 * guess
    if not f(lo):
        lo = 0.0
    if hi <= 0.0:  # the Gaussian part alone uses the budget: search up from a tiny c
        hi = 1e-12
    while f(hi):
        lo, hi = hi, 2.0 * hi
    # bisection to relative precision 1e-3; bounded, since with lo = 0 the relative gap never closes
    for _ in range(200):
        if hi - lo <= 1e-3 * hi:
            break
        mid = 0.5 * (lo + hi)
        if f(mid):
            lo = mid
        else:
            hi = mid
    return lo
