"""Noise-aware posterior on privately released sufficient statistics (``calibration="ssp_posterior"``).

The mechanism releases, once, the sufficient statistics of linear regression on the clipped,
scaled data (rows in the unit ball, targets in ``[-1, 1]``) with Gaussian noise:

* ``Ã = XᵀX + E`` (``E`` symmetric, its upper triangle with the diagonal i.i.d. ``N(0, σ_A²)``),
* ``b̃ = Xᵀy + e``, ``e ~ N(0, σ_b² I)``,
* ``q̃ = yᵀy + e_q``, ``e_q ~ N(0, σ_q²)``,

and everything else -- the point estimate, the prior scale, the residual variance -- is
computed from ``(Ã, b̃, q̃)`` and the public constants only: post-processing, which cannot
weaken the guarantee.  This is sufficient-statistics perturbation (SSP; Vu and Slavkovic
2009, Wang 2018) followed by the posterior of θ given the noisy statistics and the known
noise law (the idea of Bernstein and Sheldon 2019, "Differentially private Bayesian linear
regression", here in a first-order Gaussian form with an empirical-Bayes prior scale).

Privacy (replace-one neighbours, ``n`` public)
----------------------------------------------
The three releases are one Gaussian mechanism ``f(D) + N(0, Σ)`` with diagonal ``Σ``.
Whitened, it is ``f̃(D) + N(0, I)`` and its privacy profile is exactly that of the scalar
Gaussian mechanism with ratio ``μ = sup ||f̃(D) - f̃(D')||`` (the hockey-stick divergence of
two Gaussians with the same covariance depends only on the Mahalanobis distance of their
means and is increasing in it; Balle and Wang 2018).  For neighbours differing in the record
``(x, y)`` vs ``(x', y')`` with ``a = ||x||², a' = ||x'||² <= 1``, ``|y|, |y'| <= 1`` and
``c = xᵀx'`` (``|c| <= 1``):

* upper triangle of ``D = xxᵀ - x'x'ᵀ``: ``Σ_{i<=j} D_ij² = (||D||_F² + Σ_i D_ii²)/2``,
  ``||D||_F² = a² + a'² - 2c²`` and ``Σ_i D_ii² = Σ_i (x_i² - x_i'²)² <= a² + a'²``, so
  ``<= a² + a'² - c² <= 2 - c²``;
* ``||yx - y'x'||² = y²a + y'²a' - 2yy'c <= 2 + 2|c|``;
* ``(y² - y'²)² <= 1``.

With ``u = 1/σ_A², v = 1/σ_b², w = 1/σ_q²``:
``μ² <= max_{0<=t<=1} u(2 - t²) + v(2 + 2t) + w = 2u + 2v + v²/u + w`` for ``v <= u``
(the maximiser is ``t = v/u``), which is :func:`ssp_joint_sensitivity_sq`; the separate
sensitivities ``√2``, ``2``, ``1`` would give the larger ``2u + 4v + w``.  ``σ``'s are chosen so
that this ``μ`` equals ``1/σ`` of the analytic Gaussian mechanism at the target ``(ε, δ)``
with sensitivity 1: the release is ``(ε, δ)``-DP for every pair of neighbours.  No event
is excluded (no δ is spent on "good sets"), nothing depends on the data but the noisy
statistics.

The noise: an exact discrete Gaussian on a grid (no low bits to leak)
--------------------------------------------------------------------
Floating-point Gaussian noise leaks the input through the low bits of the sum (Mironov
2012).  The estimator therefore releases each coordinate ``j`` (the upper triangle of
``XᵀX``, ``Xᵀy``, ``yᵀy``; three groups) as ``g_j (⌊f_j/g_j⌉ + K_j)``: the statistic snapped to
a grid of power-of-two spacing ``g_j`` plus an exact discrete Gaussian ``K_j ~ N_Z(0, s_j²)``
with an integer ``s_j`` (Canonne, Kamath and Steinke 2020;
:func:`~sklearn_bayes.privacy._core.sample_noise` with ``"discrete_gaussian"``).  Every output is
an integer below ``2**53`` times ``g_j``, computed exactly; its law depends on the data only
through the snapped integers.

*Accounting (an upper bound, proved here and tested against the exact pmf).*  In grid units
the two neighbours' outputs are ``a + K`` and ``a' + K`` with integer ``v = a - a'``; the privacy
loss is ``L = T + μ_d²/2`` with ``T = Σ_j (v_j/s_j)(K_j/s_j)`` and ``μ_d = ||v/s||``, exactly as for
the continuous Gaussian with ``K_j`` replaced by ``X_j ~ N(0, s_j²)``.  (i) Snapping moves each
coordinate by at most one grid step, so ``μ_d <= μ_c + ω`` with ``μ_c`` the whitened sensitivity
of the exact statistics (the bound above, at the noise scales ``g_j s_j``) and
``ω = (Σ_j 1/s_j²)^{1/2}``.  (ii) The quantile coupling of ``K_j`` and ``X_j`` has ``|K_j - X_j| <= 1``
except on an event of probability ``η_j <= 12 (1 + s_j) e^{-2π² s_j²}`` (compare the tail sums of
the decreasing Gaussian density with its integrals; the normaliser is ``s_j √(2π)`` up to the
factor ``1 + 2Σ_k e^{-2π² s_j² k²}``, Poisson summation), so ``|T_disc - T_cont| <= μ_d ω``; the
hockey-stick integrand ``(1 - e^{ε - L})₊`` is increasing in ``T`` and bounded by 1, hence

``δ_disc(ε) <= δ_G(μ_c + ω; ε - (μ_c + ω) ω) + Σ_j η_j``,

``δ_G(μ; ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2)`` the Gaussian mechanism's profile (increasing
in μ, decreasing in ε).  :func:`ssp_posterior_budget` with ``p`` takes ``M = μ_c + ω`` of the
analytic Gaussian mechanism at ``(ε(1 - κ), δ)``, ``κ = 10⁻³``, and ``s_j >= √m/ω_t`` with
``ω_t = min(κε/M, κM)`` (``m`` coordinates, ``s_j >= 64``: ``Σ η_j < 10^{-30000}``), so that
``Mω <= κε``: the release is ``(ε, δ)``-DP, at the price of ``10⁻³`` of ε and ``ω/M <= 10⁻³`` of μ.

*Rounding.*  The statistics are computed in floating point, ``f̂_j = f_j + r_j`` with
``|r_j| <= e`` (:func:`statistics_error_bound`: blocks of 1024 rows added pairwise,
``e ≈ 1.1e-13 n``), so neighbours' snapped values differ from ``(f_j - f'_j)/g_j`` by up to
``1 + 2e/g_j`` steps: (i) holds with ``ρω``, ``ρ = 1 + 2e/min g_j``, in place of ``ω``.  The grid
parameter is raised to ``s_j >= ρ√m/ω_t`` (``omega_rounding = ρω``), which restores both
conditions; at ``n = 10⁶`` the spacing is still 250-4300 times ``e`` (p 2-50).
"""

import math

import numpy as np
from scipy import linalg, special

from sklearn_bayes.privacy._core import analytic_gaussian_sigma, ops_ridge_delta, sample_noise

__all__ = [
    "check_grid_range",
    "discrete_release_delta_bound",
    "gaussian_delta",
    "cp_point",
    "cp_risk",
    "noise_aware_posterior",
    "release_sufficient_statistics",
    "scalar_grid_budget",
    "scalar_grid_release",
    "ssp_joint_sensitivity_sq",
    "ssp_posterior_budget",
]

#: share of μ² spent on yᵀy (used only for the residual variance of the noise model)
_YTY_SHARE = 0.02
#: u/v = 1/σ_A² : 1/σ_b², the minimiser of σ_b² + σ_A² ||θ||² at ||θ|| = 1 (scaled units)
_GRAM_TO_XTY = math.sqrt(2.0)
#: prior variances (scaled units) searched by empirical Bayes
_TAU2_GRID = np.geomspace(1e-4, 1e4, 161)
#: fixed-point passes for ||θ||² and the residual variance in the noise model
_N_PASSES = 5
#: the prior scales τ² whose log marginal likelihood is within this of the maximum (χ²₁ 95 % / 2)
_PLAUSIBLE_DROP = 1.92
#: ``point="cp"``: Mallows' C_p must beat θ = 0 by this many of its noise sds (review HSR; 1 chosen on dev)
_CP_MARGIN_SD = 1.0
#: share of ε (and of μ) given up to the grid of the discrete Gaussian release
_GRID_KAPPA = 1e-3
#: smallest discrete Gaussian parameter (grid units): the coupling's failure e^{-2π²s²} is nil
_MIN_GRID_SIGMA = 64
#: the released integers stay below this (exact float64 multiples of the grid spacing)
_EXACT_INT = 2.0**53
#: rows per block of the statistics' sums (:func:`sufficient_statistics`): each block one product,
#: the blocks added pairwise, so the rounding error bound grows like ``B + log2(n/B)``, not ``n``
_SUM_BLOCK = 1024


def ssp_joint_sensitivity_sq(u, v, w):
    """``sup μ²`` of the joint release for precisions ``u = 1/σ_A²``, ``v = 1/σ_b²``, ``w = 1/σ_q²``.

    ``max_{0<=t<=1} u(2 - t²) + v(2 + 2t) + w`` (derivation in the module docstring).

    Examples
    --------
    >>> ssp_joint_sensitivity_sq(1.0, 1.0, 0.0)  # t = 1: 1 + 4
    5.0
    >>> ssp_joint_sensitivity_sq(1.0, 0.0, 0.0)  # Gram only: sensitivity sqrt(2)
    2.0
    """
    t = 1.0 if u <= v else v / u
    return u * (2.0 - t * t) + v * (2.0 + 2.0 * t) + w


def gaussian_delta(mu, epsilon):
    """``δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2)`` of the Gaussian mechanism of ratio ``μ`` (log space).

    Examples
    --------
    >>> round(gaussian_delta(1.0, 0.0), 4)  # Φ(1/2) - Φ(-1/2): total variation at μ = 1
    0.3829
    """
    mu, epsilon = float(mu), float(epsilon)
    if mu <= 0.0:  # identical distributions
        return 0.0 if epsilon >= 0.0 else -math.expm1(epsilon)
    if math.isfinite(mu) and epsilon >= 0.0:
        # two unit Gaussians μ apart (the ridge pair without leverage): never below the exact δ and within
        # 1.01e-9 of it, without cancellation where the two terms nearly agree (μ small, ε near 0: the form
        # below rounded δ = 4e-21 at μ = 1e-20 to 0)
        return ops_ridge_delta(epsilon, 0.0, mu)
    if math.isfinite(mu) and epsilon > -math.inf:
        # ε < 0 (the snapping's ε may be one): δ(ε) = 1 - e^ε + e^ε δ(-ε) (complements of the optimal set; the
        # pair is symmetric), a sum of two non-negative terms -- the form below understated δ = 4e-13 by
        # 3.5e-4 at μ = 1e-12, ε = -1e-14 -- rounded up by its four roundings (4 ulps)
        return min((-math.expm1(epsilon) + math.exp(epsilon) * ops_ridge_delta(-epsilon, 0.0, mu)) * (1 + 2.0**-50), 1.0)
    a = special.log_ndtr(-epsilon / mu + 0.5 * mu)
    b = epsilon + special.log_ndtr(-epsilon / mu - 0.5 * mu)
    return float(math.exp(a) * -math.expm1(b - a)) if b < a else 0.0


def discrete_release_delta_bound(mu_c, omega, epsilon):
    """The certified ``δ(ε)`` of the grid release: ``δ_G(μ_c + ω; ε - (μ_c + ω)ω)`` (module docstring).

    ``mu_c``: the whitened sensitivity of the exact statistics; ``omega = (Σ_j 1/s_j²)^{1/2}``.  The
    coupling term ``Σ_j η_j < 10^{-30000}`` (every ``s_j >= 64``) is below float resolution.
    """
    m = float(mu_c) + float(omega)
    return gaussian_delta(m, float(epsilon) - m * float(omega))


def _grid_budget(b, epsilon, delta, p, n):
    """Add the grid of the discrete release of ``p`` features and ``n`` rows to the continuous split ``b`` (in place).

    The snapping allowance is one grid step per coordinate, ``ω <= √m/s₀`` (module docstring); the
    computed statistics may err by ``e = statistics_error_bound(n)``, so neighbours' snapped values
    differ from the exact difference by up to ``1 + 2e/g`` steps: the grid parameter is raised to
    ``s >= ρ s₀``, ``ρ = 1 + 2e/min g``, which keeps ``ρ ω <= √m/s₀`` (``omega_rounding``).
    """
    m = p * (p + 1) // 2 + p + 1
    big_m = b["mu_total"]
    omega_t = min(_GRID_KAPPA * epsilon / big_m, _GRID_KAPPA * big_m)
    s_base = max(_MIN_GRID_SIGMA, math.ceil(math.sqrt(m) / omega_t))
    groups = (("gram", p * (p + 1) // 2), ("xty", p), ("yty", 1))
    sigma = {key: b[f"sigma_{key}"] for key, _ in groups}
    err = 0.0 if n is None else statistics_error_bound(n)  # no n: max_rows None, nothing can be released
    s_min, rho = s_base, 1.0
    for _ in range(64):  # ρ rises a little when a finer grid halves g: a few passes settle it
        grid = {key: math.ldexp(1.0, math.floor(math.log2(sigma[key] / s_min))) for key, _ in groups}
        rho = 1.0 if err == 0.0 else (1.0 + 2.0 * err / min(grid.values())) * (1.0 + 2.0**-40)
        if s_min >= rho * s_base:
            break
        s_min = math.ceil(rho * s_base)
    else:  # pragma: no cover - ρ is within 1e-3 of 1 wherever the grid fits 2**52 steps
        raise ValueError(f"the grid cannot hold the rounding error of n={n} rows.")
    inv_sq = 0.0
    for key, count in groups:
        g = grid[key]  # power of two: exact snapping
        s_j = math.ceil(sigma[key] / g)  # integer in [s_min, 2 s_min]: the noise sd g s_j >= sigma
        b[f"grid_{key}"], b[f"grid_sigma_{key}"] = g, s_j
        b[f"sigma_{key}"] = g * s_j
        inv_sq += count / (s_j * s_j)
    b["omega"] = math.sqrt(inv_sq)
    b["omega_rounding"] = rho * b["omega"]
    b["n_coordinates"] = m
    b["max_rows"] = n
    return b


def ssp_posterior_budget(epsilon, delta, p=None, n=None):
    """Noise scales of the three releases: one Gaussian mechanism at replace-one ``(ε, δ)``.

    Returns a dict with ``mu`` (the ratio ``1/σ`` of the mechanism at sensitivity 1),
    ``sigma_gram``, ``sigma_xty``, ``sigma_yty``; the joint
    ``ssp_joint_sensitivity_sq(1/σ_A², 1/σ_b², 1/σ_q²)`` equals ``mu²`` (at most, with ``p``).

    ``p=None``: the continuous Gaussian mechanism, ``mu`` that of the analytic Gaussian
    mechanism at ``(ε, δ)`` (the reference the tests compare with).  With ``p`` (the number of
    design columns): the exact discrete Gaussian on a grid that the estimator releases
    (module docstring): ``mu_total = M`` at ``(ε(1 - 10⁻³), δ)``, ``mu = M - ω_t``, and per group
    the spacing ``grid_*`` (a power of two), the integer parameter ``grid_sigma_*`` and the
    noise sd ``sigma_* = grid_* · grid_sigma_*``; ``omega`` is ``(Σ_j 1/s_j²)^{1/2}``.
    ``n`` (rows) bounds the rounding of the computed statistics (:func:`statistics_error_bound`);
    the grid is fine enough that ``omega_rounding`` (``ω`` times the snapping's slack for it) is
    still within the allowance, and the budget releases at most ``max_rows = n`` rows
    (``n=None``: a grid that :func:`release_sufficient_statistics` refuses).

    Examples
    --------
    >>> b = ssp_posterior_budget(1.0, 1e-6)
    >>> u, v, w = (1 / b[k] ** 2 for k in ("sigma_gram", "sigma_xty", "sigma_yty"))
    >>> bool(abs(ssp_joint_sensitivity_sq(u, v, w) - b["mu"] ** 2) < 1e-12)
    True
    >>> d = ssp_posterior_budget(1.0, 1e-6, p=4, n=10**6)
    >>> bool(discrete_release_delta_bound(d["mu"], d["omega_rounding"], 1.0) <= 1e-6)
    True
    """
    epsilon, delta = float(epsilon), float(delta)
    if p is None:
        mu = 1.0 / analytic_gaussian_sigma(epsilon, delta, 1.0)
        big_m = mu
    else:
        big_m = 1.0 / analytic_gaussian_sigma(epsilon * (1.0 - _GRID_KAPPA), delta, 1.0)
        m = p * (p + 1) // 2 + p + 1
        omega_t = min(_GRID_KAPPA * epsilon / big_m, _GRID_KAPPA * big_m)
        s_min = max(_MIN_GRID_SIGMA, math.ceil(math.sqrt(m) / omega_t))
        mu = big_m - math.sqrt(m) / s_min  # the grid's ω <= √m / s_min
    m2 = mu * mu
    if not math.isfinite(m2):  # ε near the largest float: no finite noise scales (see check_grid_range)
        raise OverflowError(f"the Gaussian ratio mu={mu!r} squared leaves the float range.")
    w = _YTY_SHARE * m2
    v = (m2 - w) / ssp_joint_sensitivity_sq(_GRAM_TO_XTY, 1.0, 0.0)
    u = _GRAM_TO_XTY * v
    b = {"mu": mu, "mu_total": big_m, "sigma_gram": 1.0 / math.sqrt(u), "sigma_xty": 1.0 / math.sqrt(v),
         "sigma_yty": 1.0 / math.sqrt(w)}
    return b if p is None else _grid_budget(b, epsilon, delta, p, n)


def _grid_fits(b, n):
    """Public check: every statistic (``|·| <= n``) is below ``2**52`` grid steps, the noise parameter below ``2**40``."""
    return all(n / b[f"grid_{k}"] < 2.0**52 and b[f"grid_sigma_{k}"] < 2**40 for k in ("gram", "xty", "yty"))


def _budget_or_none(epsilon, delta, p, n):
    """:func:`ssp_posterior_budget` with a grid, or ``None`` where its arithmetic leaves the float range."""
    try:
        b = ssp_posterior_budget(epsilon, delta, p=p, n=n)
    except (ZeroDivisionError, OverflowError, ValueError):  # ω_t underflowed to 0; μ² overflowed; no grid
        return None
    return b if all(math.isfinite(v) for v in b.values()) else None


def check_grid_range(epsilon, delta, n, p):
    """The grid budget of ``(ε, δ)`` for ``n`` rows and ``p`` columns, or a ``ValueError`` naming the largest ε.

    Before any noise and from public quantities only: an ε so large that the grid (spacing
    ``<= σ/64``) would need more than ``2**52`` steps for a statistic of size ``n`` is refused;
    the message names the largest ε that fits (a release at a smaller ε is also (ε, δ)-DP).
    """
    b = _budget_or_none(epsilon, delta, p, n)
    if b is not None and _grid_fits(b, n):
        return b
    # no budget: ω_t underflowed to 0 (ε near the smallest float) or μ² overflowed (ε near the largest)
    if (b is None and float(epsilon) < 1.0) or (b is not None and any(
            b[f"grid_sigma_{k}"] >= 2**40 for k in ("gram", "xty", "yty"))):
        raise ValueError(
            f"epsilon={epsilon!r} with delta={delta!r} is too small for the exact discrete Gaussian release of "
            "calibration='ssp_posterior': its grid would need a discrete Gaussian of more than 2**40 steps. "
            "Use a larger epsilon or delta."
        )
    lo, hi = 0.0, math.log(float(epsilon))  # log ε; ε = 1 always fits below 2**40 rows
    if not _grid_fits(ssp_posterior_budget(1.0, delta, p=p, n=n), n):
        raise ValueError(f"epsilon={epsilon!r}: the exact discrete Gaussian release does not fit n={n} rows.")
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        mid_budget = _budget_or_none(math.exp(mid), delta, p, n)
        if mid_budget is not None and _grid_fits(mid_budget, n):
            lo = mid
        else:
            hi = mid
    largest = math.exp(lo)
    k = 3 - math.floor(math.log10(largest))
    largest = math.floor(largest * 10.0**k) / 10.0**k
    raise ValueError(
        f"epsilon={epsilon!r} is too large for the exact discrete Gaussian release of calibration='ssp_posterior' "
        f"with n={n} rows: its grid (spacing at most noise sd/64, a power of two) would need more than 2**52 "
        f"steps for a statistic of size n; use epsilon <= {largest!r} (a release at a smaller epsilon is also "
        "(epsilon, delta)-DP)."
    )


def _grid_release(values, g, s, rng):
    """``g (⌊values/g⌉ + K)``, ``K ~ N_Z(0, s²)`` exact: every output an integer below 2**53 times ``g``."""
    snapped = np.rint(np.asarray(values, dtype=float) / g)  # g a power of two: the division is exact
    ints = snapped + sample_noise(rng, "discrete_gaussian", int(s), size=snapped.shape)
    if not np.all(np.abs(ints) < _EXACT_INT):
        raise ValueError(
            "the discrete Gaussian release left the exact integer range of float64 (|statistic| / grid "
            f"spacing >= 2**53 with grid spacing {g:.3g}): use a smaller epsilon or fewer rows."
        )
    return ints * g  # exact: an integer below 2**53 times a power of two


def scalar_grid_budget(epsilon, delta, sensitivity=1.0):
    """The grid of an ``(ε, δ)``-DP exact discrete Gaussian release of one scalar of sensitivity ``Δ``.

    The module docstring's construction with ``m = 1``: ``M = Δ/σ`` of the analytic Gaussian
    mechanism at ``(ε(1 - κ), δ)``, ``ω_t = min(κε/M, κM)``, ``s >= max(64, ⌈1/ω_t⌉)`` and a
    power-of-two spacing ``g`` with ``g s >= Δ/(M - ω_t)``; then ``μ_c + ω <= M`` and
    ``(μ_c + ω) ω <= κε``, so ``δ(ε) <= δ_G(M; ε(1 - κ)) = δ`` (the coupling term is below
    ``10^{-30000}``).  Returns ``(g, s, sigma)``, ``sigma = g s`` the noise sd.
    """
    sensitivity = float(sensitivity)
    big_m = sensitivity / analytic_gaussian_sigma(epsilon * (1.0 - _GRID_KAPPA), delta, sensitivity)
    omega_t = min(_GRID_KAPPA * epsilon / big_m, _GRID_KAPPA * big_m)
    s_min = max(_MIN_GRID_SIGMA, math.ceil(1.0 / omega_t))
    sigma_c = sensitivity / (big_m - omega_t)
    g = math.ldexp(1.0, math.floor(math.log2(sigma_c / s_min)))  # power of two: exact snapping
    s = math.ceil(sigma_c / g)  # integer in [s_min, 2 s_min]
    return g, s, g * s


def scalar_grid_release(value, g, s, rng, *, bound):
    """``g (⌊value/g⌉ + K)``, ``K ~ N_Z(0, s²)``: the exact release of :func:`scalar_grid_budget`'s grid.

    ``bound`` is a public bound on ``|value|``; a grid too fine for it (``bound/g >= 2**52`` or
    ``s >= 2**40``) is refused with a ``ValueError`` *before* any noise is drawn.
    """
    if not (float(bound) / g < 2.0**52 and s < 2**40):
        raise ValueError(
            f"epsilon is too large for an exact grid release of a statistic bounded by {float(bound):.3g}: "
            f"the grid spacing {g:.3g} (noise sd/64 or finer, a power of two) would leave the exact integer "
            "range of float64; use a smaller epsilon."
        )
    return float(_grid_release(np.array([float(value)]), g, s, rng)[0])


def statistics_error_bound(n):
    """A bound on ``|fl(s) - s|`` for every entry ``s`` of ``[X, y]ᵀ[X, y]`` from :func:`sufficient_statistics`.

    Rows of ``X`` in the unit ball and ``|y| <= 1`` give ``Σ_i |z_ik z_il| <= n``.  A product of
    ``k <= B`` rows (any order of the sum, with or without fused multiply-adds) errs by at most
    ``γ_k Σ|terms|``, ``γ_k = k u/(1 - k u)``, ``u = 2⁻⁵³``; the blocks are then added pairwise
    (``⌈log₂ #blocks⌉`` additions per entry), so the whole sum errs by at most
    ``γ_{B + ⌈log₂ #blocks⌉} n`` (Higham, *Accuracy and Stability of Numerical Algorithms*,
    Lemma 3.3 and §3.1).  Computed here rounded up.

    Examples
    --------
    >>> statistics_error_bound(10**6) < 2e-7
    True
    """
    n = int(n)
    if n <= 0:
        return 0.0
    n_blocks = -(-n // _SUM_BLOCK)
    k = min(n, _SUM_BLOCK) + (n_blocks - 1).bit_length()  # ⌈log₂ n_blocks⌉ pairwise additions
    u = 2.0**-53
    return (k * u / (1.0 - k * u)) * n * (1.0 + 2.0**-40)


def sufficient_statistics(Xs, ys):
    """``[X, y]ᵀ[X, y]`` in blocks of ``_SUM_BLOCK`` rows added pairwise (error :func:`statistics_error_bound`).

    Returns ``(XᵀX, Xᵀy, yᵀy)``.
    """
    Z = np.column_stack([np.asarray(Xs, dtype=float), np.asarray(ys, dtype=float)])
    n, d = Z.shape
    n_blocks = max(1, -(-n // _SUM_BLOCK))
    if n_blocks == 1:
        S = Z.T @ Z
    else:
        padded = np.zeros((n_blocks * _SUM_BLOCK, d))  # zero rows add exactly
        padded[:n] = Z
        blocks = padded.reshape(n_blocks, _SUM_BLOCK, d)
        parts = np.matmul(blocks.transpose(0, 2, 1), blocks)  # one product of B rows per block
        while parts.shape[0] > 1:  # pairwise: each entry passes through ⌈log₂ n_blocks⌉ additions
            if parts.shape[0] % 2:
                parts = np.concatenate([parts, np.zeros((1, d, d))])
            parts = parts[0::2] + parts[1::2]
        S = parts[0]
    return S[:-1, :-1], S[:-1, -1].copy(), float(S[-1, -1])


def release_sufficient_statistics(Xs, ys, budget, rng):
    """``(Ã, b̃, q̃)``: the Gaussian release of ``XᵀX`` (symmetric noise), ``Xᵀy`` and ``yᵀy``.

    ``Xs`` must have rows in the unit ball and ``ys`` values in ``[-1, 1]`` (the caller clips).
    A budget with a grid (``ssp_posterior_budget(..., p=...)``, the estimator's) releases the
    exact discrete Gaussian on it (module docstring); one without, the continuous Gaussian
    mechanism of numpy's floating-point sampler (the reference of the tests only).
    """
    n, p = Xs.shape
    if "grid_gram" in budget:
        if budget["n_coordinates"] != p * (p + 1) // 2 + p + 1:
            raise ValueError(f"the budget's grid is for another number of columns than p={p}.")
        if budget.get("max_rows") is None or n > budget["max_rows"]:
            raise ValueError(
                f"the budget's grid holds the rounding error of at most max_rows={budget.get('max_rows')!r} rows, "
                f"not n={n}: build it with ssp_posterior_budget(..., p={p}, n={n})."
            )
        gram, xty, yty = sufficient_statistics(Xs, ys)
        iu = np.triu_indices(p)
        upper = _grid_release(gram[iu], budget["grid_gram"], budget["grid_sigma_gram"], rng)
        A = np.zeros((p, p))
        A[iu] = upper
        A = A + np.triu(A, 1).T
        b = _grid_release(xty, budget["grid_xty"], budget["grid_sigma_xty"], rng)
        q = float(_grid_release(np.array([yty]), budget["grid_yty"], budget["grid_sigma_yty"], rng)[0])
        return A, b, q
    E = rng.normal(scale=budget["sigma_gram"], size=(p, p))
    E = np.triu(E) + np.triu(E, 1).T
    A = Xs.T @ Xs + E
    b = Xs.T @ ys + rng.normal(scale=budget["sigma_xty"], size=p)
    q = float(ys @ ys) + budget["sigma_yty"] * float(rng.standard_normal())
    return A, b, q


def noise_aware_posterior(A, b, q, n, sigma_gram, sigma_xty, intercept_ratio=None, integrate_prior_scale=False,
                          point="posterior_mean"):
    """Gaussian posterior of θ given the noisy statistics (post-processing of the release).

    Model (scaled units): ``y = Xθ + ε``, ``ε ~ N(0, s²)``, so ``Xᵀy ~ N(Gθ, s² G)`` given
    ``G = XᵀX``; with ``G = Ã - E``, ``b̃ = Ãθ + ξ`` where ``ξ = Xᵀε - Eθ + e`` is treated as
    Gaussian with covariance ``S = (σ_b² + σ_A² E||θ||²) I + s² Ã₊`` (first order in ``E``; the
    coordinates of ``Eθ`` have variance exactly ``σ_A² ||θ||²``).  Prior ``θ ~ N(0, τ² I)``,
    or with ``intercept_ratio = k`` (the last coordinate is the intercept)
    ``N(0, τ² diag(1, …, 1, k))``; τ² maximises the marginal likelihood of
    ``b̃ ~ N(0, τ² ÃTÃ + S)`` on a grid (empirical Bayes).  ``E||θ||²`` (posterior mean norm
    plus trace) and ``s² = (q̃ - 2b̃ᵀm + mᵀÃm)/n`` (clipped to ``[0, 1]``) are updated in a
    few fixed-point passes.  In the eigenbasis of ``Ã`` (eigenvalues ``a_i``, ``β = Vᵀb̃``,
    noise variances ``v_i``) the isotropic posterior is diagonal -- precision
    ``a_i²/v_i + 1/τ²``, mean ``(a_i β_i / v_i)/precision``, a Tikhonov solve of ``Ãθ = b̃``
    that stays well defined when the noise makes ``Ã`` indefinite -- and the intercept's
    prior ratio is a rank-one update (Sherman-Morrison): ``O(p³)`` in all.

    With ``integrate_prior_scale=True`` (the estimator's) ``cov`` is instead the covariance about
    ``mean`` of the posteriors at every τ² of the grid whose log marginal likelihood is within
    1.92 (χ²₁ 95 %/2) of the maximum, equally weighted (:func:`_prior_scale_mixture_cov`):
    the plug-in one where τ² is pinned down, wider where the release cannot exclude larger τ².

    With ``point="cp"`` the point estimate is :func:`cp_point` (the prior scale chosen by Mallows'
    C_p on the release, on the positive part of ``Ã``) where it beats ``θ = 0`` by one noise sd,
    else the posterior mean above; ``cov`` is then taken about that point (the spread of the
    plausible posteriors about it, which includes the distance from the posterior mean).

    Returns
    -------
    mean : ndarray of shape (p,)
    cov : ndarray of shape (p, p)
    tau2 : float
    s2 : float
    """
    p = len(b)
    a, V = linalg.eigh(A)
    beta = V.T @ b
    a2, beta2 = a * a, beta * beta
    a_pos = np.maximum(a, 0.0)
    k = 1.0 if intercept_ratio is None else float(intercept_ratio)
    u = V[-1] if intercept_ratio is not None else np.zeros(p)  # the intercept's unit vector, eigenbasis
    w = a * u  # Vᵀ Ã e_p
    t_grid = _TAU2_GRID[:, None]
    theta_sq, s2 = 0.0, min(max(q / n, 0.0), 1.0)
    for _ in range(_N_PASSES):
        noise = sigma_xty**2 + sigma_gram**2 * theta_sq + s2 * a_pos
        c = t_grid * a2 + noise  # (grid, p): the isotropic marginal variances
        kappa = (k - 1.0) * _TAU2_GRID  # the intercept's extra prior variance
        ww = np.sum(w * w / c, axis=1)
        wb = np.sum(w * beta / c, axis=1)
        denom = 1.0 + kappa * ww
        loglik = -0.5 * (np.sum(np.log(c) + beta2 / c, axis=1) + np.log(denom) - kappa * wb * wb / denom)
        tau2 = float(_TAU2_GRID[int(np.argmax(loglik))])
        pi = a2 / noise + 1.0 / tau2
        r = a * beta / noise
        rho = (1.0 / k - 1.0) / tau2
        ud = u / pi
        g = 1.0 + rho * float(u @ ud)
        m_eig = r / pi - rho * ud * float(u @ (r / pi)) / g
        mean = V @ m_eig
        theta_sq = float(m_eig @ m_eig) + float(np.sum(1.0 / pi)) - rho * float(ud @ ud) / g
        s2 = min(max((q - 2.0 * float(b @ mean) + float(mean @ A @ mean)) / n, 0.0), 1.0)
    cov = (V / pi) @ V.T - (rho / g) * np.outer(V @ ud, V @ ud)
    center = mean
    if point == "cp":
        theta, tau2_cp = cp_point(A, b, s2, sigma_gram, sigma_xty, float(mean @ mean), intercept_ratio)
        if theta is not None:
            center, tau2 = theta, tau2_cp
            cov = cov + np.outer(center - mean, center - mean)
    elif point != "posterior_mean":
        raise ValueError(f"point must be 'posterior_mean' or 'cp', got point={point!r}.")
    if integrate_prior_scale:
        cov = _prior_scale_mixture_cov(center, loglik, a2, a, beta, noise, k, u, V)
    return center, cov, tau2, s2


def cp_risk(M, A, Ap, b, s2, sigma_gram, sigma_xty):
    """``(θ̂, R, sd)`` of the linear rule ``θ̂ = Mb̃``: Mallows' C_p on the release and its noise sd (:func:`cp_point`).

    ``R = θ̂ᵀÃθ̂ - 2θ̂ᵀb̃ + 2 (s² tr(MÃ₊) + v tr M)``, ``v = σ_b² + σ_A²||θ̂||²``, estimates the in-sample
    risk ``(θ̂ - θ*)ᵀG(θ̂ - θ*)`` minus ``θ*ᵀGθ*`` (``Ã₊`` symmetric: ``tr(MÃ₊) = Σ M∘Ã₊``); ``sd = 2 (s² θ̂ᵀÃ₊θ̂ + v θ̂ᵀθ̂)^{1/2}``.
    """
    th = M @ b
    v = sigma_xty**2 + sigma_gram**2 * float(th @ th)
    r = float(th @ A @ th) - 2.0 * float(th @ b) + 2.0 * (s2 * float(np.sum(M * Ap)) + v * float(np.trace(M)))
    sd = 2.0 * math.sqrt(max(s2 * float(th @ Ap @ th) + v * float(th @ th), 0.0))
    return th, r, sd


def cp_point(A, b, s2, sigma_gram, sigma_xty, theta_sq, intercept_ratio=None, margin=_CP_MARGIN_SD):
    """Posterior mean on the positive part of ``Ã`` at the prior scale that minimises Mallows' C_p on the release.

    Post-processing of ``(Ã, b̃)`` and of ``s² , E||θ||²`` (themselves post-processing).  The
    family: ``Ã₊ = V max(a, 0) Vᵀ`` (the negative eigenvalues of ``Ã`` are privacy noise: ``XᵀX``
    is positive semi-definite), noise ``S = (σ_b² + σ_A² E||θ||²) I + s² Ã₊`` and prior
    ``N(0, τ² diag(1, …, 1, k))``: ``θ_τ = M_τ b̃``, ``M_τ = (Ã₊S⁻¹Ã₊ + P_τ⁻¹)⁻¹Ã₊S⁻¹``, for the 81
    τ² of every other point of the empirical-Bayes grid (``10⁻⁴ … 10⁴``).

    Notes
    -----
    Write ``b̃ = Gθ* + ξ`` with ``G = XᵀX`` and ``ξ`` of covariance ``Σ = s²G + vI``,
    ``v = σ_b² + σ_A²||θ||²`` (first order in the Gram's noise ``E``, whose mean is 0).  For a
    linear rule ``θ̂ = Mb̃`` the in-sample prediction risk ``(θ̂ - θ*)ᵀG(θ̂ - θ*)`` equals, up to a
    constant not depending on ``M``, ``θ̂ᵀGθ̂ - 2θ̂ᵀb̃ + 2θ̂ᵀξ``, and ``E[θ̂ᵀξ] = tr(MΣ)``.  Hence
    Mallows' C_p on the release

    ``R(M) = θ̂ᵀÃθ̂ - 2θ̂ᵀb̃ + 2 (s² tr(MÃ₊) + v tr M)``

    is an estimate of that risk relative to ``θ̂ = 0`` (for which ``R = 0``).  The τ² of least
    ``R`` is kept only if ``R + margin · 2 (s² θ̂ᵀÃ₊θ̂ + v θ̂ᵀθ̂)^{1/2} < 0``: the gain over
    ``θ = 0`` exceeds ``margin`` standard deviations of the linear noise term ``-2θ̂ᵀξ``;
    otherwise ``None`` is returned and the caller keeps the empirical-Bayes posterior mean
    (review HSR: that mean collapses onto the prior at ε ~ 1 and n ~ 500, where the
    empirical-Bayes likelihood reads the noise of ``Ã``'s small eigenvalues as signal).

    Returns
    -------
    theta : ndarray of shape (p,) or None
    tau2 : float or None
    """
    p = len(b)
    a, V = linalg.eigh(A)
    Ap = (V * np.maximum(a, 0.0)) @ V.T
    prior = np.ones(p)
    if intercept_ratio is not None:
        prior[-1] = float(intercept_ratio)
    v0 = sigma_xty**2 + sigma_gram**2 * float(theta_sq)
    S = v0 * np.eye(p) + s2 * Ap
    AS = linalg.solve(S, Ap, assume_a="pos").T  # Ã₊S⁻¹ (both symmetric, they commute up to rounding)
    K = AS @ Ap
    best_r, best = 0.0, (None, None)
    for t2 in _TAU2_GRID[::2]:
        M = linalg.solve(K + np.diag(1.0 / (t2 * prior)), AS)
        th, r, sd = cp_risk(M, A, Ap, b, s2, sigma_gram, sigma_xty)
        if r < best_r:
            best_r, best, best_sd = r, (th, float(t2)), sd
    if best[0] is None or best_r + margin * best_sd >= 0.0:
        return None, None
    return best


def _prior_scale_mixture_cov(mean, loglik, a2, a, beta, noise, k, u, V):
    """Covariance about ``mean`` of the posteriors of θ over the plausible prior scales τ².

    ``Σ_k w_k (Σ_k + (m_k - mean)(m_k - mean)ᵀ)``, ``w_k`` equal on the grid's τ²_k whose log
    marginal likelihood is within ``_PLAUSIBLE_DROP`` of the maximum (a 95 % likelihood set):
    where the data pin τ² down this is the plug-in covariance; where they do not (a noise-dominated
    Gram, whose marginal likelihood is flat or maximal at the grid's smallest τ²) the larger prior
    scales the data cannot exclude widen the intervals instead of collapsing them onto the prior.
    """
    w = (loglik >= loglik.max() - _PLAUSIBLE_DROP).astype(float)
    w /= w.sum()
    p = len(a)
    cov = np.zeros((p, p))
    r = a * beta / noise
    for wk, t2 in zip(w, _TAU2_GRID):
        if wk < 1e-12:
            continue
        pi = a2 / noise + 1.0 / t2
        rho = (1.0 / k - 1.0) / t2
        ud = u / pi
        g = 1.0 + rho * float(u @ ud)
        m_k = V @ (r / pi - rho * ud * float(u @ (r / pi)) / g)
        d = m_k - mean
        cov += wk * ((V / pi) @ V.T - (rho / g) * np.outer(V @ ud, V @ ud) + np.outer(d, d))
    return cov
