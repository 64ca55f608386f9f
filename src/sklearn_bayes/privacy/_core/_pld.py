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


_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)

#: every δ the hockey-stick functions return is rounded up by this relative margin: the value
#: before it is within 2.4·10⁻¹² (relative, δ >= 10⁻³⁰⁰) of 50-digit arithmetic over the tested
#: grids (400 times less than the margin), so the returned δ is never below the exact δ and at
#: most 1.01·10⁻⁹ above it
_DELTA_MARGIN = 1e-9
#: a piece is computed in closed form where its margin ``1 - e^ε Q_i/P_i`` is at least this times
#: ``1 + |log P_i| + |log Q_i| + ε`` (4 ulps of the logarithms over 1e-11), by quadrature otherwise
_CLOSED_FORM_MARGIN = 4.0 * 2.0**-52 / 1e-11
#: Gauss-Legendre rule of the quadrature path (exact to rounding on panels where the integrand
#: changes by a factor below e⁸: the error of ``n`` nodes on ``e^{-βu}``, ``βw <= 8``, is ``~(βw/2)^{2n}/(2n)!``)
_QUAD_NODES, _QUAD_WEIGHTS = np.polynomial.legendre.leggauss(20)
#: beyond |t| = 39 a standard normal density is below 1e-330 (no δ >= 1e-300 is lost by ignoring it)
_T_MAX = 39.0


_STEPS = 2.0 ** np.arange(0, 60)


def _panel_breaks(a, b, scale_a, scale_b):
    """Panel ends on ``[a, b]``: geometric from each end (first width ``scale``), then a 1/2 grid."""
    width = b - a
    parts = (
        np.array([a, b, min(max(0.0, a), b)]),
        a + scale_a * _STEPS[scale_a * _STEPS < width],
        b - scale_b * _STEPS[scale_b * _STEPS < width],
        np.arange(math.ceil(2.0 * a), math.floor(2.0 * b) + 1) * 0.5,
    )
    return np.unique(np.clip(np.concatenate(parts), a, b))


def _log_piece_by_quadrature(a, b, g, g_slope):
    """``log ∫_a^b φ(t) (1 - e^{g(t)}) dt`` for ``g <= 0`` on ``(a, b)`` (``-inf`` if empty).

    Every term of the sum is positive (no cancellation).  The integrand is scaled by ``φ(t₀)``,
    ``t₀`` the point of ``[a, b]`` nearest 0, so no term underflows before the logarithm.
    """
    t0 = min(max(0.0, a), b) if a < b else 0.0
    if abs(t0) >= _T_MAX:
        return -math.inf  # the piece lies beyond |t| = 39: its mass is below 1e-330
    # beyond |t| = √(t₀² + 160) the density is below e⁻⁸⁰ φ(t₀), and 1 - e^g grows at most
    # quadratically in t: what is left out is below 10⁻³⁰ of the integral
    reach = min(math.sqrt(t0 * t0 + 160.0), _T_MAX)
    a, b = max(a, -reach), min(b, reach)
    if not a < b:
        return -math.inf
    scale = lambda t: 1.0 / (16.0 * max(1.0, abs(t), abs(g_slope(t))))  # noqa: E731
    edges = _panel_breaks(a, b, scale(a), scale(b))
    lo, hi = edges[:-1], edges[1:]
    half = 0.5 * (hi - lo)
    t = (0.5 * (hi + lo))[:, None] + half[:, None] * _QUAD_NODES[None, :]
    with np.errstate(over="ignore", invalid="ignore"):  # g = -inf far from a root (a huge m): 1 - e^g = 1
        h = -np.expm1(g(t))
    vals = np.exp(-0.5 * (t - t0) * (t + t0)) * np.where(np.isnan(h), 1.0, h)
    total = float(np.sum(half * (vals @ _QUAD_WEIGHTS)))
    if not total > 0.0:
        return -math.inf
    return math.log(total) - 0.5 * t0 * t0 - _LOG_SQRT_2PI


def _standard_hockey_stick(m, k, v, epsilon):
    """``δ(ε)`` for ``P = N(0, 1)`` and ``Q = N(m, v)``, ``v = 1 + k > 0`` given with ``k`` (neither rounded from the other).

    With ``t ~ P`` the privacy loss is ``L(t) = ½ log(1+k) + (m² - 2mt - kt²) / (2(1+k))``
    and ``g(t) = ε - L(t) = (kt² + 2mt + c₀) / (2(1+k))`` with ``c₀ = 2(1+k)(ε - ½ log(1+k)) - m²``;
    ``S = {g < 0}``.  ``g`` is factored as ``(kt - q)(t - c₀/q) / (2(1+k))`` with
    ``q = -(m + sign(m) √D)``, ``D = (1+k)(m² - 2k(ε - ½ log(1+k)))`` (the stable roots
    ``q/k`` and ``c₀/q``; ``k = 0`` is the linear case, no division by ``k``).
    """
    m, k, v, epsilon = float(m), float(k), float(v), float(epsilon)
    if m == 0.0 and k == 0.0:
        return 0.0
    half_log = 0.5 * (math.log1p(k) if abs(k) < 0.5 else math.log(v))
    e1 = epsilon - half_log
    # √(m² - 2k e1) without forming m² or k e1 (no overflow at m = 1e200, no underflow at m = 1e-300)
    root = math.sqrt(2.0 * abs(k)) * math.sqrt(abs(e1))
    if not ((k > 0.0 and e1 > 0.0) or (k < 0.0 and e1 < 0.0)):  # signs, not k·e1 (it may underflow)
        sq = math.hypot(m, root)
    elif abs(m) > root:
        sq = math.sqrt(abs(m) - root) * math.sqrt(abs(m) + root)
    else:  # g keeps one sign: S empty (k > 0) or the whole line (k < 0, δ = 1 - e^ε <= 0)
        return 0.0
    if sq == 0.0:
        return 0.0
    q = -(m + math.copysign(math.sqrt(v) * sq, m))
    near = 2.0 * v * e1 / q - m * (m / q)  # c₀ / q
    if k == 0.0:
        pieces = [(-math.inf, near)] if m > 0 else [(near, math.inf)]
    else:
        far = q / k
        r1, r2 = min(near, far), max(near, far)
        pieces = [(r1, r2)] if k > 0 else [(-math.inf, r1), (r2, math.inf)]
    s = math.sqrt(v)
    denom = 2.0 * v
    g = lambda t: (k * t - q) * (t - near) / denom  # noqa: E731
    g_slope = lambda t: (2.0 * k * t + 2.0 * m) / denom  # noqa: E731
    total = 0.0
    for a, b in pieces:
        log_p = _log_interval_probability(a, b)
        if log_p == -math.inf:
            continue
        log_q = _log_interval_probability((a - m) / s, (b - m) / s)
        x = epsilon + log_q - log_p
        margin = -math.expm1(x) if x < 1.0 else -1.0
        # the closed form's relative error is about (the absolute error of x, a few ulps of |log P_i| +
        # |log Q_i| + ε) / margin: kept where that is below 1e-11 (100 times inside _DELTA_MARGIN)
        if margin >= _CLOSED_FORM_MARGIN * (1.0 + abs(log_p) + abs(log_q) + epsilon):
            total += math.exp(log_p) * margin  # P_i (1 - e^{ε + log Q_i - log P_i})
        else:  # P_i and e^ε Q_i nearly cancel: integrate the positive integrand
            log_d = _log_piece_by_quadrature(a, b, g, g_slope)
            if log_d > -math.inf:
                total += math.exp(log_d)
    return min(total * (1.0 + _DELTA_MARGIN), 1.0)


def gaussian_hockey_stick(m1, s1, m2, s2, epsilon):
    """Exact ``δ(ε) = sup_S P(S) - e^ε Q(S)`` for ``P = N(m1, s1²)``, ``Q = N(m2, s2²)``.

    The supremum is attained at ``S = {t : log p(t)/q(t) > ε}``; ``log p/q = A t² + B t + C'``
    is a quadratic, so ``S`` is a half-line, an interval, the complement of an interval,
    empty or the whole line, and both probabilities are normal CDF differences.

    Parameters
    ----------
    m1, s1, m2, s2 : float
        Means and standard deviations (``s1, s2`` finite and ``> 0``, ``ValueError`` naming them otherwise).
    epsilon : float
        ``ε >= 0`` (``inf`` gives 0; nan or a negative value raise ``ValueError``).

    Returns
    -------
    delta : float in [0, 1]

    Notes
    -----
    Standardised by ``P``, the pair is ``N(0, 1)`` against ``N(m, 1 + k)`` with
    ``m = (m2 - m1)/s1`` and ``k = (s2 - s1)(s2 + s1)/s1²`` formed without rounding ``1 + k``
    (at ``s2/s1 = 1 - 10⁻¹⁰`` the rounded ``(s2/s1)² - 1`` keeps 6 digits).  With
    ``g(t) = ε - log p/q = (k t² + 2 m t + c₀)/(2(1 + k))``, ``c₀ = 2(1+k)(ε - ½ log(1+k)) - m²``,
    ``S = {g < 0}`` and ``δ = Σ_i ∫_{S_i} φ(t) (1 - e^{g(t)}) dt`` over its (at most two) pieces.
    The roots ``q/k`` and ``c₀/q``, ``q = -(m + sign(m)√((1+k)(m² - 2k(ε - ½ log(1+k)))))``, are
    the stable quadratic formula (``k = 0``, equal variances, is the linear case).  A piece whose
    margin ``1 - e^ε Q(S_i)/P(S_i)`` is at least ``8.9·10⁻⁵ (1 + |log P(S_i)| + |log Q(S_i)| + ε)``
    is ``P(S_i)(1 - e^{ε + log Q(S_i) - log P(S_i)})`` from ``log Φ`` (no overflow of ``e^ε``;
    its relative error, a few ulps of the logarithms over the margin, is then below 10⁻¹¹); otherwise the integral of its positive integrand,
    ``g`` factored as ``(kt - q)(t - c₀/q)/(2(1+k))`` (no cancellation near the roots), by
    20-point Gauss-Legendre on panels refined geometrically towards the roots (the closed form
    there lost up to all digits: it returned 0 for a δ of 4·10⁻¹¹ and understated δ by up to 36 %
    at ``1 + k = 1 ± 10⁻¹⁵``).

    Tolerance: before rounding up, the value is within ``2.4·10⁻¹²`` (relative) of 50-digit
    arithmetic wherever ``δ >= 10⁻³⁰⁰`` on the tested grids; it is then multiplied by
    ``1 + 10⁻⁹`` (``_DELTA_MARGIN``), so the returned δ is never below the exact one and at most
    ``1.01·10⁻⁹`` above it (capped at 1).  A variance ratio beyond ``10³⁰⁰`` returns the bound 1.

    Examples
    --------
    >>> round(gaussian_hockey_stick(0.0, 1.0, 1.0, 1.0, 0.0), 6)  # total variation
    0.382925
    >>> gaussian_hockey_stick(0.0, 1.0, 1.0, 1.0, 1e6)
    0.0
    """
    epsilon = _check_nonnegative_epsilon(epsilon)
    for name, value in (("s1", s1), ("s2", s2)):
        if not 0.0 < value < math.inf:
            raise ValueError(f"{name} must be a finite standard deviation > 0, got {value!r}.")
    if math.isinf(epsilon):
        return 0.0
    if abs(math.log(s2) - math.log(s1)) > 345.0:
        return 1.0  # a variance ratio beyond 1e300 (v or k would overflow): the trivial bound
    # standardised by P: Q = N(m, 1 + k), with k = (s2² - s1²)/s1² formed without rounding 1 + k
    m = (m2 - m1) / s1
    k = ((s2 - s1) / s1) * ((s2 + s1) / s1)
    return _standard_hockey_stick(m, k, (s2 / s1) ** 2, epsilon)


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
        Never below the exact δ of the pair and at most ``1.01·10⁻⁹`` (relative) above it
        (:func:`gaussian_hockey_stick`'s tolerance; the variances ``1/(1+μ)`` and ``1 + μ`` enter
        as ``k = -μ/(1+μ)`` and ``k = μ``, so a leverage of ``10⁻¹⁵`` is not rounded against 1).

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
    # standardised by the first law of each direction, with k = s²/s₁² - 1 from μ without rounding 1 + μ:
    # remove: N(0, 1) against N(c/(1+μ), 1/(1+μ)); add: N(0, 1) against N(-c/√(1+μ), 1+μ)
    remove = lambda: _standard_hockey_stick(c / (1.0 + mu), -mu / (1.0 + mu), 1.0 / (1.0 + mu), epsilon)  # noqa: E731
    add = lambda: _standard_hockey_stick(-c / math.sqrt(1.0 + mu), mu, 1.0 + mu, epsilon)  # noqa: E731
    if direction == "remove":
        return remove()
    if direction == "add":
        return add()
    return max(remove(), add())


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
    The equal-variance case of :func:`gaussian_hockey_stick` (``N(0, 1)`` against ``N(-Δ/σ, 1)``):
    never below the exact δ and at most ``1.01·10⁻⁹`` (relative) above it, for σ from 1e-300 to
    1e300 and any finite ε (tested against 50- to 330-digit arithmetic); where the two terms nearly
    cancel (σ >> Δ) the positive integrand is integrated, no difference of two terms is formed.
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
    if 2.0 * a <= 1e100:
        # standardised by N(Δ, σ²): Q = N(-Δ/σ, 1), equal variances (k = 0, the linear case)
        return _standard_hockey_stick(-2.0 * a, 0.0, 1.0, epsilon)
    # Δ/σ beyond 1e100: the two laws are disjoint to rounding; P(S)(1 - e^{ε + log Q(S) - log P(S)})
    log_p, log_q = _log_cdf(a - b), _log_cdf(-a - b)
    x = epsilon + log_q - log_p
    return min(math.exp(log_p) * -math.expm1(x) * (1.0 + _DELTA_MARGIN), 1.0) if x < 0.0 else 0.0


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
