"""The calibrations of :class:`~sklearn_bayes.privacy.AdaOPSRegressor`: one small class each.

A calibration holds, next to each other, the privacy accounting of its mechanism (its
budget split, :meth:`~Calibration.budget`, and the ledger records it certifies,
:meth:`~Calibration.ledger_entries`), its release step on the clipped, scaled data
(:meth:`~Calibration.release`) and the fitted attributes it gives a value
(:attr:`~Calibration.attributes`).  The estimator looks its calibration up once by name
(:func:`get_calibration`) and delegates; every calibration sets every name of
:data:`FITTED_ATTRIBUTES` (``None`` where it has no value), so which fitted attributes
exist never depends on the string.  A new calibration is a new class registered in
:data:`CALIBRATIONS`.

The full derivations are in the Notes of :class:`~sklearn_bayes.privacy.AdaOPSRegressor`;
each class's docstring gives its privacy argument in short.
"""

import math
from typing import NamedTuple

import numpy as np
from scipy import linalg, special

from sklearn_bayes.privacy._linear._adaops_accounting import (
    _choose_floor,
    _choose_floor_norm,
    _composed_c,
    _min_h_composed,
    _mu_grid,
    _norm_floor,
    _ridge_solution,
    adaops_budget,
    released_norm_budget,
    ridge_norm_sensitivity,
)
from sklearn_bayes.privacy._linear._base import _check_draw_budget, draw_ridge_posterior
from sklearn_bayes.privacy._linear._ops import _min_h_for_variance, calibrate_ops_gamma
from sklearn_bayes.privacy._linear._ssp_posterior import (
    check_grid_range,
    noise_aware_posterior,
    release_sufficient_statistics,
    scalar_grid_budget,
    scalar_grid_release,
    ssp_posterior_budget,
)

__all__ = [
    "CALIBRATIONS",
    "FITTED_ATTRIBUTES",
    "Calibration",
    "LedgerEntry",
    "Release",
    "ReleasedNormCalibration",
    "SSPCpCalibration",
    "SSPPosteriorCalibration",
    "ThesisCalibration",
    "get_calibration",
]

#: "ssp_posterior": share of the unit ball given to the features, the intercept column being
#: √(1 - share) (the draws use 1/2).  A public constant, chosen on the synthetic cells of
#: bench_dp_regression.py (0.5 -> 0.9 lowers the excess MSE by 30-45 %, measured)
_SSP_X_SHARE = 0.9

#: ``residual_variance_upper_`` = the residual variance's numerator plus this many of its noise sds, over
#: n (review HQX F4; chosen on 4 dev cells as the smallest of {1, 1.645, 2} covering >= 0.94 in each,
#: then held out on 4 others: 0.943-0.971; /tmp/hqxf/f4_rule.txt)
_RESIDUAL_UPPER_SD = 1.0

#: the calibration-dependent fitted attributes of AdaOPSRegressor, in the order they are set;
#: every calibration sets all of them (``None`` for those outside its ``attributes``)
FITTED_ATTRIBUTES = (
    "noise_scale_gram_",
    "noise_scale_xty_",
    "noise_scale_yty_",
    "prior_variance_",
    "residual_variance_",
    "residual_variance_upper_",
    "gram_signal_to_noise_",
    "lambda_min_noisy_",
    "noise_scale_lambda_",
    "margin_",
    "log_norm_noisy_",
    "noise_scale_norm_",
    "residual_bound_",
    "h_base_",
    "h_",
    "lambda_",
    "gamma_",
)



def _draw_above_floor(Xs, ys, lam_n, gamma, h, rng):
    """One ridge-posterior draw; a Cholesky failure (only on the accounted event
    ``lambda_min + lam_n < h``) retries with ``lam_n`` raised to the floor ``h``.

    Returns ``(theta, lam_n)``, the draw and the ``lam_n`` it used.
    """
    try:
        return draw_ridge_posterior(Xs, ys, lam_n, gamma, rng), lam_n
    except linalg.LinAlgError:
        lam_n = max(lam_n, h)
        return draw_ridge_posterior(Xs, ys, lam_n, gamma, rng), lam_n

#: the smallest δ of the analytic Gaussian mechanism's accounting (``analytic_gaussian_sigma``)
_MIN_GRID_DELTA = 1e-300
#: the exact grid release refuses ``s >= 2**40`` (``scalar_grid_release``)
_MAX_GRID_S = 2**40


def _thesis_grid(b, n):
    """``(g, s, sigma)`` of the thesis's λ_min grid release, or ``None`` if the grid cannot hold it (public inputs)."""
    try:
        g, s, sigma = scalar_grid_budget(b["eps_lambda"], b["delta_lambda"], 1.0)
    except (ZeroDivisionError, OverflowError, ValueError):  # ε so small that ω_t or 1/ω_t leave float range
        return None
    if not (s < _MAX_GRID_S and float(max(n, 1)) / g < 2.0**52):
        return None
    return g, s, sigma


def _thesis_too_small(epsilon, delta, n=None):
    """The message refusing a thesis ε too small for its exact λ_min grid, with the smallest usable ε (public)."""
    ok = lambda e: _thesis_grid(adaops_budget(e, delta), 1 if n is None else n) is not None  # noqa: E731
    lo, hi = math.log(1e-300), math.log(1.0)
    if not ok(1.0):
        return (f"epsilon={epsilon!r} is outside what calibration='thesis' supports at delta={delta!r} "
                f"(n={n}); use calibration='ssp_posterior'.")
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if ok(math.exp(mid)) else (mid, hi)
    smallest = float(f"{math.exp(hi) * 1.01:.2g}")
    while not ok(smallest):
        smallest = float(f"{smallest * 1.1:.2g}")
    return (f"epsilon={epsilon!r} is too small for calibration='thesis' at delta={delta!r}: the exact discrete "
            f"Gaussian release of lambda_min at epsilon/2 would need more than 2**40 grid steps of noise (and "
            f"epsilon/4 of the draw underflows below about 1e-323). The smallest epsilon it supports at this delta "
            f"is about {smallest!r}; use epsilon >= {smallest!r}, or calibration='ssp_posterior'.")


class LedgerEntry(NamedTuple):
    """One record a calibration certifies: the mechanism's name (without the estimator's), its (ε, δ) and a note."""

    mechanism: str
    epsilon: float
    delta: float
    note: str


class Release(NamedTuple):
    """What a calibration's release step returns.

    ``theta`` are the coefficients on the scaled design (the draw, or the posterior mean),
    ``attributes`` the values of the calibration's fitted attributes and ``ledger`` its
    ledger entries (:meth:`Calibration.ledger_entries`).
    """

    theta: np.ndarray
    attributes: dict
    ledger: tuple
    #: the posterior covariance of ``theta`` (scaled units) where the release determines one
    #: (``"ssp_posterior"``), else ``None``: post-processing of the release like ``theta``
    covariance: np.ndarray = None


class Calibration:
    """Base of the AdaOPS calibrations: accounting, release step and fitted attributes of one mechanism.

    Attributes
    ----------
    name : str
        The value of ``AdaOPSRegressor(calibration=...)`` that selects it.
    x_share : float or None
        Share of the unit ball given to the features when the intercept column is appended
        (the design row is ``[√s x/x_bound, √(1-s)]``); ``None`` for ``[x/x_bound, 1]/√2``.
    attributes : tuple of str
        The names of :data:`FITTED_ATTRIBUTES` the release gives a value.
    """

    name = None
    x_share = None
    attributes = ()

    def budget(self, epsilon, delta):
        """The checked budget split at the total replace-one ``(epsilon, delta)`` (a dict).

        Raises ``ValueError`` (naming ``epsilon`` or ``delta``) for a budget the accounting
        cannot certify.
        """
        raise NotImplementedError

    def ledger_entries(self, epsilon, delta, budget):
        """The :class:`LedgerEntry` records of one release; they compose to ``(epsilon, delta)``."""
        raise NotImplementedError

    def fit_budget(self, epsilon, delta, n, p):
        """The budget of a fit on ``n`` rows and ``p`` design columns, checked before any noise (public inputs)."""
        return self.budget(epsilon, delta)

    def release(self, Xs, ys, rng, *, epsilon, delta, kappa, fit_intercept, budget=None):
        """Release on the clipped, scaled design ``Xs`` (rows in the unit ball) and ``ys`` (in [-1, 1]).

        ``budget``: the :meth:`fit_budget` of the fit (computed here if ``None``).  Returns a :class:`Release`.
        """
        raise NotImplementedError

    def _release(self, theta, attributes, epsilon, delta, budget, covariance=None):
        return Release(theta, attributes, self.ledger_entries(epsilon, delta, budget), covariance)


class SSPPosteriorCalibration(Calibration):
    """``"ssp_posterior"``: Gaussian release of ``(XᵀX, Xᵀy, yᵀy)`` and the noise-aware posterior mean.

    Privacy (replace-one, ``n`` public, every neighbouring pair): rows in the unit ball (the
    features get the share 0.9 of it), ``|y| <= 1``; the release is one Gaussian mechanism
    with diagonal covariance whose whitened neighbouring means are at most ``μ`` apart
    (:func:`~sklearn_bayes.privacy._linear._ssp_posterior.ssp_joint_sensitivity_sq`), and the
    σ's make ``μ`` the ratio of the analytic Gaussian mechanism (Balle and Wang 2018) at
    ``(ε, δ)`` (:func:`~sklearn_bayes.privacy._linear._ssp_posterior.ssp_posterior_budget`).
    No event is excluded; the posterior mean (Bernstein and Sheldon 2019, *Differentially
    private Bayesian linear regression*, first-order form), the prior scale and the residual
    variance are post-processing.  One ledger record at ``(ε, δ)``; no posterior draw.
    """

    name = "ssp_posterior"
    x_share = _SSP_X_SHARE
    #: the point estimate (``noise_aware_posterior``'s ``point``)
    point = "posterior_mean"
    attributes = ("noise_scale_gram_", "noise_scale_xty_", "noise_scale_yty_", "prior_variance_",
                  "residual_variance_", "residual_variance_upper_", "gram_signal_to_noise_")

    def budget(self, epsilon, delta, p=None):
        """The split; with ``p`` (design columns) the grid of the exact discrete Gaussian it releases."""
        return ssp_posterior_budget(epsilon, delta, p=p)

    def ledger_entries(self, epsilon, delta, budget):
        return (
            LedgerEntry(
                "noisy_sufficient_statistics", epsilon, delta,
                "replace-one; X'X (symmetric), X'y and y'y with Gaussian noise, one Gaussian mechanism of "
                "joint sensitivity ratio mu (analytic Gaussian mechanism); the noise-aware posterior mean is "
                "post-processing; no posterior draw (not OPS)",
            ),
        )

    def fit_budget(self, epsilon, delta, n, p):
        """The grid of the exact discrete Gaussian; refuses an epsilon it cannot hold (public inputs only)."""
        return check_grid_range(epsilon, delta, n, p)

    def release(self, Xs, ys, rng, *, epsilon, delta, kappa, fit_intercept, budget=None):
        n = Xs.shape[0]
        b = budget if budget is not None else self.fit_budget(epsilon, delta, n, Xs.shape[1])
        A, xty, q = release_sufficient_statistics(Xs, ys, b, rng)
        # everything below is post-processing of (A, xty, q) and public constants
        # prior N(0, τ² diag(1, …, 1, share/(1 - share))): the same scale for the intercept and for
        # a slope per unit of x_bound, in units of y, as an isotropic prior on [x/x_bound, 1]/√2
        ratio = _SSP_X_SHARE / (1.0 - _SSP_X_SHARE) if fit_intercept else None
        mean, cov, tau2, s2 = noise_aware_posterior(A, xty, q, n, b["sigma_gram"], b["sigma_xty"], intercept_ratio=ratio,
                                                  integrate_prior_scale=True, point=self.point)
        # review HQX F4: the plug-in s2 = clip(num/n) ignores the noise of its numerator
        # num = q - 2 b'm + m'Am (sd sqrt(σ_q² + 4σ_b²|m|² + 2σ_A²|m|⁴) for the release's noise at the
        # released m); predictions use num + 1 sd (measured: coverage 0.80-0.91 -> 0.94-0.97)
        num = q - 2.0 * float(xty @ mean) + float(mean @ A @ mean)
        m2 = float(mean @ mean)
        sd_num = math.sqrt(b["sigma_yty"] ** 2 + 4.0 * b["sigma_xty"] ** 2 * m2 + 2.0 * b["sigma_gram"] ** 2 * m2 * m2)
        attributes = {
            "noise_scale_gram_": b["sigma_gram"],
            "noise_scale_xty_": b["sigma_xty"],
            "noise_scale_yty_": b["sigma_yty"],
            "prior_variance_": tau2,
            "residual_variance_": s2,
            "residual_variance_upper_": min(max((num + _RESIDUAL_UPPER_SD * sd_num) / n, s2), 1.0),
            # λ_min(Ã) over the spectral scale 2σ_A√p of the Gram's noise: the first-order posterior
            # (and its intervals) is reliable only well above 1 (measured: >= 3; AdaOPSRegressor.conf_int)
            "gram_signal_to_noise_": float(linalg.eigvalsh(A)[0]) / (2.0 * b["sigma_gram"] * math.sqrt(A.shape[0])),
        }
        return self._release(mean, attributes, epsilon, delta, b, covariance=cov)


class SSPCpCalibration(SSPPosteriorCalibration):
    """``"ssp_cp"``: the release of ``"ssp_posterior"``, with the prior scale chosen by Mallows' C_p.

    The same mechanism, budget and ledger record as ``"ssp_posterior"`` (the same noise for the
    same generator); only the post-processing differs: the point estimate is the posterior mean
    on the positive part of ``Ã`` at the prior scale τ² that minimises Mallows' C_p on the
    release, kept where it beats ``θ = 0`` by one noise sd and otherwise the empirical-Bayes
    posterior mean (:func:`~sklearn_bayes.privacy._linear._ssp_posterior.cp_point`; review HSR).
    """

    name = "ssp_cp"
    point = "cp"


class ReleasedNormCalibration(Calibration):
    """``"released_norm"``: AdaOPS of Wang (2018), *Revisiting differentially private linear regression*.

    Releases λ̃_min (sensitivity 1) and ``log(1 + ||θ̂_{λ₀}||)`` (add/remove sensitivity
    ``log(1 + 1/h₀)``, :func:`~sklearn_bayes.privacy._linear._adaops_accounting.ridge_norm_sensitivity`),
    turns them into an eigenvalue floor ``h`` and a residual bound ``R`` and releases one
    ridge-posterior draw calibrated at leverage ``<= 1/h``, ``|r| <= R``.

    Privacy (replace-one, ``n`` public): accounted for add/remove pairs at
    ``(ε/2, δ_ar = δ/(1 + e^{ε/2}))``
    (:func:`~sklearn_bayes.privacy._linear._adaops_accounting.adaops_norm_budget`).  On the good
    set (λ̃ - margin below ``λ_min(Z)``, ``R`` above ``1 + ||θ̂_Z||``; each fails with
    probability ``<= δ_ar/8``) the two Gaussian releases (one Gaussian mechanism, μ-GDP) and
    the draw (its exact privacy-loss distribution, rounded up) are composed by
    ``dp-accounting`` within ``3δ_ar/4``; adding the two events gives ``(ε/2, δ_ar)`` and
    replace-one ``(ε, δ)``.  One ledger record (the releases composed) at ``(ε, δ)``.
    """

    name = "released_norm"
    attributes = ("lambda_min_noisy_", "noise_scale_lambda_", "margin_", "log_norm_noisy_", "noise_scale_norm_",
                  "residual_bound_", "h_base_", "h_", "lambda_", "gamma_")

    def budget(self, epsilon, delta):
        return released_norm_budget(epsilon, delta)

    def fit_budget(self, epsilon, delta, n, p):
        """The budget and the base floor ``h_floor`` with its draw's ``c``, checked before any noise (review HPL F2).

        ``_min_h_composed`` and ``c`` at the largest leverage ``1/h_floor`` use public inputs only:
        their refusals come before the shared ledger's reservation, and the guard after the
        releases (``c`` at ``1/h <= 1/h_floor``, no smaller) cannot fire.
        """
        b = self.budget(epsilon, delta)
        h_floor = max(_min_h_composed(b["eps_ar"], b["delta_mech"], b["mu_gauss"], b["interval"]),
                      _norm_floor(b["mu_norm"], float(-special.ndtri(b["delta_event_norm"]))))
        if not _composed_c(b, 1.0 / h_floor):
            raise ValueError(
                f"calibration='released_norm' found no inverse temperature for (epsilon={epsilon!r}, "
                f"delta={delta!r}); use a larger epsilon or calibration='ssp_posterior'."
            )
        return {**b, "h_floor": h_floor}

    def ledger_entries(self, epsilon, delta, budget):
        return (
            LedgerEntry(
                "lambda_min+norm+posterior_sample", epsilon, delta,
                "replace-one via add/remove (eps/2, delta/(1+e^(eps/2))): Gaussian lambda_min and "
                "log(1+||theta||) releases and the ridge-posterior draw composed by dp-accounting PLD; "
                "includes 2 x delta_ar/8 for the two bound events",
            ),
        )

    def release(self, Xs, ys, rng, *, epsilon, delta, kappa, fit_intercept, budget=None):
        n, p = Xs.shape
        b = budget if budget is not None else self.fit_budget(epsilon, delta, n, p)
        # 1. release lambda_min (sensitivity 1)
        sigma1 = 1.0 / b["mu_lambda"]
        gram = Xs.T @ Xs
        xty = Xs.T @ ys
        lam_min = float(linalg.eigvalsh(gram, subset_by_index=[0, 0])[0])
        lam_noisy = lam_min + sigma1 * float(rng.standard_normal())
        margin = 1.0 + sigma1 * float(-special.ndtri(b["delta_event_lambda"]))
        # 2. base floor and penalty (post-processing of lam_noisy)
        q2 = float(-special.ndtri(b["delta_event_norm"]))
        h_floor = b["h_floor"] if "h_floor" in b else max(
            _min_h_composed(b["eps_ar"], b["delta_mech"], b["mu_gauss"], b["interval"]), _norm_floor(b["mu_norm"], q2))
        h0 = max(lam_noisy - margin, h_floor)
        if kappa is not None:
            h0 = max(h0, n / (p * float(kappa)))
        lam0 = max(0.0, h0 - (lam_noisy - margin))
        # 3. release log(1 + ||theta_hat(lam0)||) (add/remove sensitivity log(1 + 1/h0) on the event)
        try:
            norm0 = float(np.linalg.norm(_ridge_solution(gram, xty, lam0)))
        except linalg.LinAlgError:  # only on the accounted event lambda_min + lam0 < h0
            norm0 = float(np.linalg.norm(_ridge_solution(gram, xty, max(lam0, h0))))
        sigma2 = 0.5 * ridge_norm_sensitivity(h0) / b["mu_norm"]
        log_norm_noisy = math.log1p(norm0) + sigma2 * float(rng.standard_normal())
        # |r| = |y - x'theta_Z| <= 1 + ||theta_Z(lam)|| <= 1 + ||theta_Z(lam0)|| for lam >= lam0
        r_max = math.exp(log_norm_noisy + sigma2 * q2) * (1.0 + 1.0 / h0)
        # 4. floor, penalty and gamma (post-processing of both releases)
        if kappa is None:
            # a two-sigma upper estimate: a point estimate near 0 would make shrinkage look free
            theta_norm = max(math.expm1(log_norm_noisy + 2.0 * sigma2), 0.0)
            h = _choose_floor_norm(h0, lam_noisy, margin, n, p, r_max, theta_norm, _composed_c(b, 1.0 / h0))
        else:
            h = h0
        lam_n = max(lam0, h - (lam_noisy - margin))
        mu_max = _mu_grid(1.0 / h)
        c = _composed_c(b, 1.0 / h)
        if not c:  # None or 0: a guard (h >= h_floor leaves half of delta_mech for the residual)
            raise ValueError(
                f"calibration='released_norm' found no inverse temperature for (epsilon={epsilon!r}, "
                f"delta={delta!r}); use a larger epsilon or calibration='ssp_posterior'."
            )
        gamma = c * c / (mu_max * r_max * r_max)
        theta, lam_n = _draw_above_floor(Xs, ys, lam_n, gamma, h, rng)
        attributes = {
            "lambda_min_noisy_": lam_noisy,
            "noise_scale_lambda_": sigma1,
            "margin_": margin,
            "log_norm_noisy_": log_norm_noisy,
            "noise_scale_norm_": sigma2,
            "residual_bound_": r_max,
            "h_base_": h0,
            "h_": h,
            "lambda_": lam_n,
            "gamma_": gamma,
        }
        return self._release(theta, attributes, epsilon, delta, b)


class ThesisCalibration(Calibration):
    """``"thesis"``: Algorithm 6 of *Statistical and Computational Tradeoffs in Differential Privacy*, corrected.

    Releases λ̃_min (sensitivity 1 by Weyl) and one ridge-posterior draw calibrated at the
    public worst case ``μ <= 1/h``, ``|r| <= 1 + √((n-1)/h)``.

    λ̃_min is an exact discrete Gaussian on a power-of-two grid,
    ``g (⌊λ_min/g⌉ + K)`` (:func:`~sklearn_bayes.privacy._linear._ssp_posterior.scalar_grid_budget`,
    the SSP release's proved snapping bound with one coordinate): an exact multiple of ``g``
    whose law depends on the data only through ``⌊λ_min/g⌉``, so the low bits of ``λ_min``
    do not leak; it is ``(ε/2, δ/4)``-DP at ``10⁻³`` of that ε given up to the grid, and
    ``margin_`` adds ``1.5 g`` (snapping and coupling).  The posterior draw stays a
    floating-point Gaussian: see *Floating point* in the estimator's Notes.

    Privacy (replace-one, ``n`` public;
    :func:`~sklearn_bayes.privacy._linear._adaops_accounting.adaops_budget`): the λ_min release
    is ``(ε/2, δ/4)``; given λ̃, the draw is ``(ε/2, δ/2)`` for every pair whose shared part
    ``Z`` has ``λ_min(Z) + λ_n >= h`` (add/remove pairs at ``(ε/4, (δ/2)/(1 + e^{ε/4}))``,
    exact privacy-loss distribution), which fails only if λ̃ exceeds ``λ_min(Z) + margin``,
    with probability at most ``δ/4``.  Two ledger records: ``(ε/2, δ/4)`` and
    ``(ε/2, δ/2 + δ/4)``.
    """

    name = "thesis"
    attributes = ("lambda_min_noisy_", "noise_scale_lambda_", "margin_", "residual_bound_", "h_base_", "h_",
                  "lambda_", "gamma_")

    def budget(self, epsilon, delta):
        _check_draw_budget(epsilon, delta, 0.25, 0.5, "calibration='thesis'")
        b = adaops_budget(epsilon, delta)
        if not (b["eps0"] > 0.0 and b["eps_lambda"] > 0.0):  # review HPL F1: ε/4 underflows to 0
            raise ValueError(_thesis_too_small(epsilon, delta))
        return b

    def fit_budget(self, epsilon, delta, n, p):
        """The budget, the λ_min release's grid and the floor's γ, all checked before any noise (review HPL F1/F2).

        Every refusal here uses public inputs only (ε, δ, n), so it comes before the shared
        ledger's reservation and names the user's ``epsilon``/``delta``.
        """
        b = self.budget(epsilon, delta)
        if b["delta_lambda"] < _MIN_GRID_DELTA:
            raise ValueError(
                f"delta={delta!r} is too small for calibration='thesis': its lambda_min release is accounted at "
                f"delta/4, below {_MIN_GRID_DELTA:g}, the smallest delta the analytic Gaussian mechanism's "
                f"accounting resolves; use delta >= {4.0 * _MIN_GRID_DELTA:g} (or calibration='ssp_posterior')."
            )
        grid = _thesis_grid(b, n)
        if grid is None:
            raise ValueError(_thesis_too_small(epsilon, delta, n))
        h_floor = max(4.0 * (1.0 + math.log(4.0 / delta)) / epsilon, _min_h_for_variance(b["eps0"], b["delta0"]))
        # γ at the floor (the largest leverage and residual bound any release can lead to) exists,
        # so the guard after the release below is unreachable
        if not (math.isfinite(h_floor) and calibrate_ops_gamma(b["eps0"], b["delta0"], 1.0 / h_floor,
                                                                1.0 + math.sqrt(max(n - 1, 0) / h_floor))):
            raise ValueError(_thesis_too_small(epsilon, delta, n))
        return {**b, "grid": grid, "h_floor": h_floor}

    def ledger_entries(self, epsilon, delta, budget):
        b = budget
        return (
            LedgerEntry("lambda_min", b["eps_lambda"], b["delta_lambda"],
                        "exact discrete Gaussian on a power-of-two grid (snapping bound)"),
            LedgerEntry(
                "posterior_sample", b["eps_ops"], b["delta_ops"] + b["delta_event"],
                "replace-one; exact PLD of the ridge posterior; includes delta/4 for lambda_tilde > lambda_min + margin",
            ),
        )

    def release(self, Xs, ys, rng, *, epsilon, delta, kappa, fit_intercept, budget=None):
        n, p = Xs.shape
        b = budget if budget is not None else self.fit_budget(epsilon, delta, n, p)
        # 1. release lambda_min (sensitivity 1 for rows in the unit ball)
        # on a grid: g (round(lambda_min/g) + K), K an exact discrete Gaussian (no low bits to leak)
        g1, s1, sigma1 = b["grid"] if "grid" in b else _thesis_grid(b, n)
        gram = Xs.T @ Xs
        lam_min = float(linalg.eigvalsh(gram, subset_by_index=[0, 0])[0])
        lam_noisy = scalar_grid_release(lam_min, g1, s1, rng, bound=max(n, 1))  # 0 <= lambda_min <= n
        # overshoot: snapping <= g/2, coupling K <= X + 1 with X ~ N(0, s^2) (module _ssp_posterior)
        margin = 1.0 + 1.5 * g1 + sigma1 * float(-special.ndtri(b["delta_event"]))
        # 2. eigenvalue floor and penalty (post-processing of lam_noisy and public n, d)
        h_floor = b["h_floor"] if "h_floor" in b else max(4.0 * (1.0 + math.log(4.0 / delta)) / epsilon,
                                                          _min_h_for_variance(b["eps0"], b["delta0"]))
        if kappa is None:
            h = _choose_floor(max(lam_noisy - margin, h_floor), lam_noisy, margin, n, p, b["eps0"], b["delta0"])
        else:
            h = max(n / (p * float(kappa)), h_floor)
        lam_n = max(0.0, h - (lam_noisy - margin))
        # 3. gamma, exactly at the worst case of the event lambda_min(H_Z) >= h
        mu_max, r_max = 1.0 / h, 1.0 + math.sqrt(max(n - 1, 0) / h)
        gamma = calibrate_ops_gamma(b["eps0"], b["delta0"], mu_max, r_max)
        if gamma is None:  # a guard: h >= h_floor leaves room for the residual
            raise ValueError(
                f"calibration='thesis' found no inverse temperature for (epsilon={epsilon!r}, delta={delta!r}) "
                f"at n={n}; use a larger epsilon or calibration='ssp_posterior'."
            )
        # 4. one draw (a Cholesky failure is only possible on the accounted event lambda_min + lam_n < h)
        theta, lam_n = _draw_above_floor(Xs, ys, lam_n, gamma, h, rng)
        attributes = {
            "lambda_min_noisy_": lam_noisy,
            "noise_scale_lambda_": sigma1,
            "margin_": margin,
            "residual_bound_": r_max,
            "h_base_": h,
            "h_": h,
            "lambda_": lam_n,
            "gamma_": gamma,
        }
        return self._release(theta, attributes, epsilon, delta, b)


#: the calibrations by name (the values of ``AdaOPSRegressor(calibration=...)``)
CALIBRATIONS = {cal.name: cal for cal in (SSPPosteriorCalibration(), SSPCpCalibration(), ReleasedNormCalibration(),
                                          ThesisCalibration())}


def get_calibration(name):
    """The calibration named ``name`` (validated beforehand by the estimator's parameter constraints)."""
    return CALIBRATIONS[name]
