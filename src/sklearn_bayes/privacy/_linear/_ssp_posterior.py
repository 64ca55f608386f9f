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
"""

import math

import numpy as np
from scipy import linalg

from sklearn_bayes.privacy._core import analytic_gaussian_sigma

__all__ = [
    "noise_aware_posterior",
    "release_sufficient_statistics",
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


def ssp_posterior_budget(epsilon, delta):
    """Noise scales of the three releases: one Gaussian mechanism at replace-one ``(ε, δ)``.

    Returns a dict with ``mu`` (the ratio ``1/σ`` of the analytic Gaussian mechanism at
    ``(ε, δ)``, sensitivity 1), ``sigma_gram``, ``sigma_xty``, ``sigma_yty``; the joint
    ``ssp_joint_sensitivity_sq(1/σ_A², 1/σ_b², 1/σ_q²)`` equals ``mu²``.

    Examples
    --------
    >>> b = ssp_posterior_budget(1.0, 1e-6)
    >>> u, v, w = (1 / b[k] ** 2 for k in ("sigma_gram", "sigma_xty", "sigma_yty"))
    >>> bool(abs(ssp_joint_sensitivity_sq(u, v, w) - b["mu"] ** 2) < 1e-12)
    True
    """
    mu = 1.0 / analytic_gaussian_sigma(float(epsilon), float(delta), 1.0)
    m2 = mu * mu
    w = _YTY_SHARE * m2
    v = (m2 - w) / ssp_joint_sensitivity_sq(_GRAM_TO_XTY, 1.0, 0.0)
    u = _GRAM_TO_XTY * v
    return {"mu": mu, "sigma_gram": 1.0 / math.sqrt(u), "sigma_xty": 1.0 / math.sqrt(v),
            "sigma_yty": 1.0 / math.sqrt(w)}


def release_sufficient_statistics(Xs, ys, budget, rng):
    """``(Ã, b̃, q̃)``: the Gaussian release of ``XᵀX`` (symmetric noise), ``Xᵀy`` and ``yᵀy``.

    ``Xs`` must have rows in the unit ball and ``ys`` values in ``[-1, 1]`` (the caller clips).
    """
    p = Xs.shape[1]
    E = rng.normal(scale=budget["sigma_gram"], size=(p, p))
    E = np.triu(E) + np.triu(E, 1).T
    A = Xs.T @ Xs + E
    b = Xs.T @ ys + rng.normal(scale=budget["sigma_xty"], size=p)
    q = float(ys @ ys) + budget["sigma_yty"] * float(rng.standard_normal())
    return A, b, q


def noise_aware_posterior(A, b, q, n, sigma_gram, sigma_xty, intercept_ratio=None):
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
    return mean, cov, tau2, s2
