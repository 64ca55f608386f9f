"""AdaOPS accounting: the budget splits, the public risk proxies and the eigenvalue floors of its draws.

Free functions used by the two posterior-draw calibrations of
:class:`~sklearn_bayes.privacy.AdaOPSRegressor` (:mod:`sklearn_bayes.privacy._linear._calibration`):
``"thesis"`` (Algorithm 6 of *Statistical and Computational Tradeoffs in Differential
Privacy*, corrected: :func:`adaops_budget`, :func:`adaops_risk_proxy`) and
``"released_norm"`` (AdaOPS of Wang 2018, *Revisiting differentially private linear
regression*: :func:`adaops_norm_budget`, :func:`released_norm_budget`,
:func:`ridge_norm_sensitivity`, :func:`adaops_norm_risk_proxy`).
"""

import functools
import math

import numpy as np
from scipy import linalg

from sklearn_bayes.privacy._core import (
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
    log1p_exp,
    ops_ridge_composed_delta,
    ops_ridge_composed_max_c,
    ops_ridge_max_c,
)
from sklearn_bayes.privacy._linear._base import _replace_one_pair_budget, _round_down
from sklearn_bayes.privacy._linear._ops import _min_h_for_variance

__all__ = [
    "adaops_budget",
    "adaops_norm_budget",
    "adaops_norm_risk_proxy",
    "adaops_risk_proxy",
    "released_norm_budget",
    "ridge_norm_sensitivity",
]


# --------------------------------------------------------------------------------------
# AdaOPS, thesis calibration (Algorithm 6): the worst-case residual 1 + √((n-1)/h)
# --------------------------------------------------------------------------------------


def adaops_budget(epsilon, delta):
    """The budget split of :class:`AdaOPSRegressor` (a dict of its parts).

    ``eps_lambda = ε/2``, ``delta_lambda = δ/4`` for the λ_min release (analytic Gaussian
    mechanism, sensitivity 1); ``delta_event = δ/4`` for the event that the released λ̃
    overshoots ``λ_min(Z)`` by more than ``margin``; ``(ε/2, δ/2)`` replace-one for the
    posterior draw, i.e. add/remove pairs at ``(ε/4, (δ/2)/(1+e^{ε/4}))``.
    """
    eps0, delta0 = _replace_one_pair_budget(0.5 * epsilon, 0.5 * delta)
    return {
        "eps_lambda": 0.5 * epsilon,
        "delta_lambda": 0.25 * delta,
        "delta_event": 0.25 * delta,
        "eps_ops": 0.5 * epsilon,
        "delta_ops": 0.5 * delta,
        "eps0": eps0,
        "delta0": delta0,
    }


def adaops_risk_proxy(h, lam_noisy, margin, n, p, eps0, delta0, c=None):
    """Public upper proxy of AdaOPS's excess prediction risk (scaled units) for the floor ``h``.

    Noise: ``tr(Σ (γH)⁻¹) <= min(p/n, 1/h)/γ(h)`` with ``Σ = XᵀX/n``, ``tr XᵀX <= n`` and
    ``γ(h) = c(1/h)² h / (1 + √((n-1)/h))²`` (the worst case at ``μ_max = 1/h``).  Bias of the
    penalty ``λ_n``: ``(1/n) Σ_i s_i λ_n²/(s_i+λ_n)² θ_i² <= λ_n ||θ̂||²/(4n) <= λ_n/(4 h₀)``
    with ``||θ̂||² <= n/h₀``, ``h₀ = λ̃ - margin``, and never more than 1 (the fitted values
    of a ridge fit have mean square at most that of ``y``, ≤ 1).  Uses only λ̃ and public
    quantities, so choosing ``h`` by it is post-processing.  ``c`` (default: the exact
    ``c(1/h)``) may be given; a ``c`` computed at a larger leverage is a lower bound.
    """
    if c is None:
        c = ops_ridge_max_c(eps0, delta0, 1.0 / h)
    if c is None or c == 0:
        return math.inf
    gamma = c * c * h / (1.0 + math.sqrt(max(n - 1, 0) / h)) ** 2
    noise = min(p / n, 1.0 / h) / gamma
    lam_n = max(0.0, h - lam_noisy + margin)
    h0 = lam_noisy - margin
    bias = 1.0 if h0 <= 0 else min(1.0, lam_n / (4.0 * h0))
    return noise + (bias if lam_n > 0 else 0.0)


def _choose_floor(h_base, lam_noisy, margin, n, p, eps0, delta0):
    """The floor ``h >= h_base`` minimising :func:`adaops_risk_proxy` on a geometric grid.

    ``c`` is computed once, at the grid's largest leverage ``1/h_base`` (it increases as the
    leverage falls, so the proxy's noise term is an upper bound on the grid).
    """
    c = ops_ridge_max_c(eps0, delta0, 1.0 / h_base)
    grid = h_base * np.geomspace(1.0, 1e4, 41)
    risks = [adaops_risk_proxy(h, lam_noisy, margin, n, p, eps0, delta0, c=c) for h in grid]
    return float(grid[int(np.argmin(risks))])


# --------------------------------------------------------------------------------------
# AdaOPS with a released norm bound (Wang 2018, "Revisiting differentially private linear
# regression", AdaOPS): the residual bound comes from a private ||θ̂||, not from n/h
# --------------------------------------------------------------------------------------

#: share of the add/remove-level μ_T² (μ-GDP) given to the two Gaussian releases together
_NORM_GAUSS_SHARE = 0.25
#: share of the Gaussian part's μ² spent on λ_min; the rest goes to the norm
_NORM_LAMBDA_SHARE = 0.68
#: leverages are rounded up to this geometric grid before the (cached) calibration of c
_MU_STEP = 2.0 ** 0.125


def adaops_norm_budget(epsilon, delta):
    """The budget split of :class:`AdaOPSRegressor` with ``calibration="released_norm"``.

    Everything is accounted for **add/remove** pairs ``(D, Z)`` at ``(eps_ar, delta_ar) =
    (ε/2, δ/(1 + e^{ε/2}))``, which gives replace-one ``(ε, δ)`` through the intermediate
    ``Z``:

    * ``delta_event_lambda = delta_event_norm = delta_ar/8``: λ̃ overshoots
      ``λ_min(Z) + margin``; the released norm undershoots ``||θ̂_Z||``;
    * ``delta_mech = 3 delta_ar/4`` for the three releases composed *exactly* by
      ``dp-accounting``'s privacy-loss distributions: the two Gaussian releases (λ_min,
      add/remove sensitivity 1; ``log(1 + ||θ̂||)``, sensitivity ``log(1 + 1/h₀)``) and the
      posterior draw.  Adaptively composed Gaussian mechanisms are one Gaussian mechanism of
      ratio ``mu_gauss = √(mu_lambda² + mu_norm²)`` (μ-GDP); ``mu_gauss² = μ_T²/4`` with
      ``μ_T = 1/σ`` of the analytic Gaussian mechanism at ``(eps_ar, delta_mech)``, and
      ``mu_lambda² = 0.68 mu_gauss²``.  The draw gets what is left (its ``c`` is calibrated on
      the composed PLD, :func:`~sklearn_bayes.privacy._core._pld.ops_ridge_composed_max_c`).

    Total replace-one: ``(2 eps_ar, (1 + e^{eps_ar}) (delta_mech + 2 delta_ar/8)) = (ε, δ)``.
    """
    eps_ar = 0.5 * epsilon
    delta_ar = delta / (1.0 + math.exp(eps_ar))
    delta_mech = 0.75 * delta_ar
    mu_t = 1.0 / analytic_gaussian_sigma(eps_ar, delta_mech, 1.0)
    mu_g = mu_t * math.sqrt(_NORM_GAUSS_SHARE)
    return {
        "eps_ar": eps_ar,
        "delta_ar": delta_ar,
        "delta_mech": delta_mech,
        "delta_event_lambda": 0.125 * delta_ar,
        "delta_event_norm": 0.125 * delta_ar,
        "mu_gauss": mu_g,
        "mu_lambda": mu_g * math.sqrt(_NORM_LAMBDA_SHARE),
        "mu_norm": mu_g * math.sqrt(1.0 - _NORM_LAMBDA_SHARE),
    }


def _mu_grid(mu):
    """``mu`` rounded up to the grid ``_MU_STEP^k`` (δ increases with the leverage)."""
    return _MU_STEP ** math.ceil(math.log(mu) / math.log(_MU_STEP) - 1e-12)


def _composed_c(b, mu):
    """Largest ``c = √(γμ)|r|`` of the draw at leverage ``<= mu`` within the composed budget."""
    interval = b.get("interval", _PLD_INTERVAL)
    return ops_ridge_composed_max_c(b["eps_ar"], b["delta_mech"], _mu_grid(mu), b["mu_gauss"], interval)


#: discretisation of the composed privacy-loss distributions (finer only where it cannot certify)
_PLD_INTERVAL = 1e-3
#: a leverage so small that the draw's loss is ~0: the composed δ at it is the limit h -> inf
_MU_LIMIT = 1e-12
#: the composed δ of the released-norm budget bottoms out at about 5e-16 (dp-accounting truncates
#: tails of mass <= 1e-15 into the infinite loss): ``delta_mech >= 4e-15`` is certifiable for sure
#: (the error messages name the ε where it is reached), ``delta_mech < 1e-17`` surely not
_MIN_DELTA_MECH = 4e-15
_PLD_FLOOR_SURE = 1e-17
#: at most this many doublings of the floor (a guard: with the limit below the target it ends)
_MAX_DOUBLINGS = 200


def _pld_limit(eps_ar, mu_gauss, interval):
    """The composed δ(ε_ar) as the draw's leverage goes to 0 (the Gaussian pair and the PLD's floor)."""
    try:
        return ops_ridge_composed_delta(eps_ar, _MU_LIMIT, 0.0, mu_gauss, interval)
    except (IndexError, ValueError):  # dp-accounting fails on degenerate (one-point) distributions
        return math.inf


#: the share of ``delta_mech`` the composed δ's limit at leverage 0 must stay below
_LIMIT_SHARE = 0.45
#: most discretisation points of the Gaussian pair's PLD (about ``16 mu_gauss / interval``; review
#: HPL F8: 3e6 points took 3.7 s and 0.86 GB, 1.2e7 a MemoryError): the refinement stops there
_MAX_GAUSS_POINTS = 2.5e5


def _gauss_pair_limit(eps_ar, mu_gauss):
    """The exact δ(eps_ar) of the two Gaussian releases (one Gaussian mechanism of ratio ``mu_gauss``).

    The composed δ at leverage 0, which every discretisation of :func:`_pld_limit` over-estimates
    (pessimistic PLDs): if it is not below ``0.45 delta_mech`` no interval can certify (review HPL
    F8/F9); public inputs only, milliseconds.
    """
    if not (eps_ar > 0.0 and mu_gauss > 0.0):
        return math.inf
    return analytic_gaussian_delta(1.0 / mu_gauss, eps_ar)


def _smallest_interval(eps_ar, mu_gauss):
    """The finest PLD interval the refinement tries: ``eps_ar/100`` and at most ``_MAX_GAUSS_POINTS`` points."""
    return max(eps_ar / 100.0, 16.0 * mu_gauss / _MAX_GAUSS_POINTS)


@functools.lru_cache(maxsize=256)
def _composed_interval(eps_ar, delta_mech, mu_gauss):
    """The coarsest PLD interval (1e-3, then /4 down to :func:`_smallest_interval`) at which the
    composition can certify the target: the limit of the composed δ at leverage -> 0 is below
    ``0.45 delta_mech``.

    Returns ``None`` when no interval can (ε too small for the Gaussian pair to leave room, or
    δ below the PLD's floor); checks the exact limit first, so an impossible target costs no PLD,
    and bounds the PLD's size before building it (review HPL F8).
    """
    if not _gauss_pair_limit(eps_ar, mu_gauss) < _LIMIT_SHARE * delta_mech:
        return None
    interval, smallest = _PLD_INTERVAL, _smallest_interval(eps_ar, mu_gauss)
    while True:
        if _pld_limit(eps_ar, mu_gauss, interval) < _LIMIT_SHARE * delta_mech:
            return interval
        interval /= 4.0
        if not interval >= smallest:
            return None


@functools.lru_cache(maxsize=256)
def _min_h_composed(eps_ar, delta_mech, mu_gauss, interval=_PLD_INTERVAL):
    """Smallest h (power of 2) whose leverage alone (``c = 0``) uses at most half of ``delta_mech``.

    Bounded: the composed δ decreases to its limit at leverage 0, which
    :func:`_composed_interval` has checked is below the target.
    """
    h = _min_h_for_variance(eps_ar, delta_mech)  # the draw alone, exact and cheap: a lower start
    for _ in range(_MAX_DOUBLINGS):
        if ops_ridge_composed_delta(eps_ar, 1.0 / h, 0.0, mu_gauss, interval) <= 0.5 * delta_mech:
            return h
        h *= 2.0
    raise ValueError(
        f"the released-norm calibration found no eigenvalue floor for (epsilon/2={eps_ar!r}, "
        f"delta_mech={delta_mech!r}) in {_MAX_DOUBLINGS} doublings."
    )


def released_norm_budget(epsilon, delta):
    """:func:`adaops_norm_budget` checked for the PLD accounting, with its ``"interval"``.

    Refuses (``ValueError`` naming ``epsilon``) a budget the composed privacy-loss
    distributions cannot certify: an add/remove ``delta_mech = 0.75 δ/(1 + e^{ε/2})`` at the
    PLD's floor (ε too large; the message names the largest ε supported for certain,
    where ``delta_mech >= 4e-15``), or an ε so small that the two Gaussian releases alone use
    the composed δ at every discretisation down to ``ε/200``.  The first test is in log
    space: no overflow at any ε.
    """
    epsilon, delta = float(epsilon), float(delta)
    what = "calibration='released_norm'"

    def too_large():
        if 0.75 * delta <= 2.0 * _MIN_DELTA_MECH:
            return ValueError(
                f"epsilon={epsilon!r} is too large for {what} at delta={delta!r}: its composed accounting "
                f"(dp-accounting privacy-loss distributions) cannot certify the add/remove delta "
                f"0.75 delta/(1 + e^(epsilon/2)) below about 1e-15, and at this delta no epsilon is supported "
                f"for certain; use delta >= {_round_down(8.0 * _MIN_DELTA_MECH / 0.75)!r} or "
                "calibration='ssp_posterior'."
            )
        largest = _round_down(2.0 * math.log(0.75 * delta / _MIN_DELTA_MECH - 1.0))
        return ValueError(
            f"epsilon={epsilon!r} is too large for {what} at delta={delta!r}: its composed accounting "
            f"(dp-accounting privacy-loss distributions) cannot certify the add/remove delta "
            f"0.75 delta/(1 + e^(epsilon/2)) below about 1e-15. The largest epsilon it supports for certain "
            f"at this delta is {largest!r}; use epsilon <= {largest!r} (a release at a smaller epsilon is "
            "also (epsilon, delta)-DP), or calibration='ssp_posterior'."
        )

    if math.log(0.75 * delta) - log1p_exp(0.5 * epsilon) < math.log(_PLD_FLOOR_SURE):
        raise too_large()
    if not 0.5 * epsilon > 0.0:  # review HPL F8: ε/2 underflows (5e-324)
        raise ValueError(_released_norm_too_small(epsilon, delta))
    b = adaops_norm_budget(epsilon, delta)
    interval = _composed_interval(b["eps_ar"], b["delta_mech"], b["mu_gauss"])
    if interval is None:
        if b["delta_mech"] < _MIN_DELTA_MECH:
            raise too_large()
        raise ValueError(_released_norm_too_small(epsilon, delta))
    b["interval"] = interval
    return b


def _gauss_pair_fits(epsilon, delta, share=0.4):
    """Whether the exact limit of :func:`_composed_interval` leaves room at ``(ε, δ)`` (with a margin: 0.4 < 0.45)."""
    if not 0.5 * epsilon > 0.0:
        return False
    b = adaops_norm_budget(epsilon, delta)
    return b["delta_mech"] >= _MIN_DELTA_MECH and _gauss_pair_limit(b["eps_ar"], b["mu_gauss"]) < share * b["delta_mech"]


def _verified(step, value, budget_of, tries=3):
    """``value`` (or up to ``tries - 1`` further ``step``s of it) that the full check accepts, else ``None``."""
    for _ in range(tries):
        eps, delta = budget_of(value)
        b = adaops_norm_budget(eps, delta)
        if b["delta_mech"] >= _MIN_DELTA_MECH and _composed_interval(b["eps_ar"], b["delta_mech"], b["mu_gauss"]):
            return value
        value = step(value)
    return None


def _released_norm_too_small(epsilon, delta):
    """The refusal of an ε too small for the released-norm accounting at ``delta`` (review HPL F9).

    The two Gaussian releases (λ_min and the norm) get a quarter of the add/remove μ²; when ε is
    small against that μ (δ large against ε: the boundary is about δ ≈ 10 ε), they alone use about half of the
    composed δ and no draw fits.  A smaller δ shrinks μ and helps, as does a larger ε; the message
    names both limits, found by bisection on the exact limit with a margin (public, milliseconds).
    """
    what = "calibration='released_norm'"
    parts = []
    lo, hi = math.log(max(epsilon, 1e-300)), 0.0  # ε = 1 fits wherever δ is not at the PLD's floor
    if _gauss_pair_fits(math.exp(hi), delta):
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if _gauss_pair_fits(math.exp(mid), delta) else (mid, hi)
        eps_min = _verified(lambda e: e * 2.0, float(f"{math.exp(hi) * 1.05:.2g}"), lambda e: (e, delta))
        if eps_min is not None:
            parts.append(f"epsilon >= {eps_min!r} at this delta")
    if 0.5 * epsilon > 0.0:
        lo, hi = math.log(2.0 * _MIN_DELTA_MECH * (1.0 + math.exp(min(0.5 * epsilon, 700.0))) / 0.75), math.log(delta)
        if _gauss_pair_fits(epsilon, math.exp(lo)):
            for _ in range(60):
                mid = 0.5 * (lo + hi)
                lo, hi = (mid, hi) if _gauss_pair_fits(epsilon, math.exp(mid)) else (lo, mid)
            delta_max = _verified(lambda d: float(f"{d / 10.0:.1g}"), float(f"{math.exp(lo) * 0.95:.1g}"),
                                  lambda d: (epsilon, d))
            if delta_max is not None:
                    parts.append(f"delta <= {delta_max!r} at this epsilon (a smaller delta shrinks the Gaussian "
                             "releases' share of it)")
    how = (" Usable: " + ", or ".join(parts) + ";") if parts else " Use"
    return (f"epsilon={epsilon!r} is too small for {what} at delta={delta!r}: the two Gaussian releases "
            f"(lambda_min and the norm) alone use the whole composed delta, leaving nothing for the posterior "
            f"draw.{how} or calibration='ssp_posterior' (which supports every epsilon >= 1e-4).")


def ridge_norm_sensitivity(h):
    """Replace-one sensitivity of ``log(1 + ||θ̂_λ||)`` when ``λ_min(X_ZᵀX_Z) + λ >= h``.

    ``2 log(1 + 1/h)`` for rows in the unit ball and ``|y| <= 1`` (derivation in the Notes of
    :class:`AdaOPSRegressor`; tested on adversarial neighbours).

    Examples
    --------
    >>> round(ridge_norm_sensitivity(100.0), 6)
    0.019901
    """
    return 2.0 * math.log1p(1.0 / h)


def adaops_norm_risk_proxy(h, lam_noisy, margin, n, p, r_max, c, theta_norm):
    """Public proxy of the excess risk (scaled units) for the floor ``h`` given the releases.

    Noise ``min(p/n, 1/h)/γ(h)`` with ``γ(h) = c² h / r_max²`` (``c`` computed at a leverage
    ``>= 1/h``, so this is an upper bound); bias of the penalty
    ``λ_n = max(0, h - λ̃ + margin)``: ``(1/n) Σ_i s_i λ_n²/(s_i + λ_n)² θ_i² <= λ_n ||θ̂||²/(4n)``
    with the released estimate ``theta_norm = e^{ℓ̃ + 2σ₂} - 1`` of ``||θ̂||`` (a proxy need
    not be a bound: the bound ``r_max - 1`` over-shrinks, the point estimate ``e^{ℓ̃} - 1``
    can be 0 and make shrinkage look free), capped at 1 (predicting 0).
    """
    if c is None or c == 0:
        return math.inf
    gamma = c * c * h / (r_max * r_max)
    noise = min(p / n, 1.0 / h) / gamma
    lam_n = max(0.0, h - lam_noisy + margin)
    bias = min(1.0, lam_n * theta_norm**2 / (4.0 * n))
    return noise + bias


def _choose_floor_norm(h_base, lam_noisy, margin, n, p, r_max, theta_norm, c):
    """The grid point ``h >= h_base`` minimising :func:`adaops_norm_risk_proxy` (``c`` at ``1/h_base``)."""
    grid = h_base * np.geomspace(1.0, 1e4, 41)
    risks = [adaops_norm_risk_proxy(h, lam_noisy, margin, n, p, r_max, c, theta_norm) for h in grid]
    return float(grid[int(np.argmin(risks))])


def _norm_floor(mu_norm, q2):
    """Smallest base floor ``h₀`` with ``σ₂ q₂ <= log 2`` (the norm bound at most doubled by noise)."""
    # sigma2 = log(1 + 1/h0) / mu_norm <= 1 / (h0 mu_norm)  (add/remove sensitivity)
    return q2 / (math.log(2.0) * mu_norm)


def _ridge_solution(gram, xty, lam):
    H = gram.copy()
    H[np.diag_indices(H.shape[0])] += lam
    return linalg.cho_solve(linalg.cho_factor(H, lower=True), xty)

