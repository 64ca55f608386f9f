"""One-posterior-sample ridge regression (OPS): the worst-case calibration of γ and the estimator.

One draw from the tempered ridge posterior on clipped, scaled data (Chapter 5 of
*Statistical and Computational Tradeoffs in Differential Privacy*), with γ calibrated
exactly from the draw's privacy-loss distribution at the public worst case (replace-one
neighbours through the intermediate data set, :mod:`sklearn_bayes.privacy._linear._base`).
The worst-case accounting here is also used by AdaOPS's ``"thesis"`` calibration.  The
accounting is exact for a draw in real arithmetic; the draw itself is a floating-point Gaussian
(see *Floating point* in :class:`OnePosteriorSampleRidge`'s Notes).
"""

import functools
import math
import sys
import warnings

import numpy as np
from sklearn.base import _fit_context

from sklearn_bayes.privacy._core import PrivacyLedger, ops_ridge_delta, ops_ridge_max_c
from sklearn_bayes.privacy._linear._base import (
    WeakReleaseWarning,
    _check_draw_budget,
    _PrivateLinearBase,
    _replace_one_pair_budget,
    _RidgePosteriorBase,
)
from sklearn_bayes.utils import RealInterval, check_privacy_random_state, serialized
from sklearn_bayes.utils._validation import external_stacklevel

__all__ = ["OnePosteriorSampleRidge", "calibrate_ops_gamma", "ops_worst_case_delta"]

# leverages at which the worst case is also evaluated (δ is increasing in μ in the regime of
# small δ -- tested -- and the grid guards the calibration should that ever fail)
_MU_GRID = np.geomspace(1e-3, 1.0, 13)


# --------------------------------------------------------------------------------------
# worst-case accounting of one ridge-posterior draw
# --------------------------------------------------------------------------------------


def ops_worst_case_delta(epsilon0, gamma, mu_max, r_max):
    """Largest add/remove δ(ε₀) of one ridge-posterior draw over records with ``μ <= μ_max``, ``|r| <= r_max``.

    δ is increasing in ``c = √(γμ)|r|``, so ``|r| = r_max``; over ``μ`` the maximum is taken
    on ``μ_max`` and a geometric grid below it.
    """
    return max(
        ops_ridge_delta(epsilon0, m, math.sqrt(gamma * m) * r_max) for m in np.append(mu_max * _MU_GRID, mu_max)
    )


def calibrate_ops_gamma(epsilon0, delta0, mu_max, r_max):
    """Largest inverse temperature γ whose worst-case add/remove pair is (ε₀, δ₀) in both directions.

    Returns ``None`` when no γ works (the leverage bound ``μ_max`` alone is too large).

    Examples
    --------
    >>> g = calibrate_ops_gamma(0.25, 1e-7, 0.01, 5.0)
    >>> bool(ops_worst_case_delta(0.25, g, 0.01, 5.0) <= 1e-7)
    True
    """
    c = ops_ridge_max_c(epsilon0, delta0, mu_max)
    if c is None or c == 0:
        return None
    # at a ridge penalty near the largest double this overflows; any finite γ up to it is then within c
    # (δ grows with γ), and an infinite γ would start the search below at log γ = inf (it never ended)
    with np.errstate(over="ignore"):
        gamma = min(float(np.float64(c) * c / (mu_max * r_max * r_max)), sys.float_info.max)
    f = lambda lg: ops_worst_case_delta(epsilon0, math.exp(lg), mu_max, r_max) - delta0  # noqa: E731
    if f(math.log(gamma)) <= 0:
        return gamma
    lo = math.log(gamma) - 1.0
    while f(lo) > 0:
        lo -= 2.0
        if lo < math.log(gamma) - 200:
            return None
    from scipy.optimize import brentq

    return math.exp(brentq(f, lo, math.log(gamma), xtol=1e-12)) * (1 - 1e-9)


@functools.lru_cache(maxsize=256)
def _min_h_for_variance(eps0, delta0):
    """Smallest h (power of 2) with ``δ(ε₀; μ = 1/h, c = 0) <= δ₀/2``: room left for the residual."""
    h = 1.0
    while ops_ridge_delta(eps0, 1.0 / h, 0.0) > 0.5 * delta0:
        h *= 2.0
        if h > 2.0**1000:  # δ(ε₀; μ → 0, c = 0) -> 0: unreachable for 0 < δ₀ (a guard, never a loop)
            raise ValueError(f"no eigenvalue floor certifies (epsilon0={eps0!r}, delta0={delta0!r}).")
    return h


# --------------------------------------------------------------------------------------
# OPS ridge
# --------------------------------------------------------------------------------------


def ops_noise_proxy(n, p, lam, gamma):
    """Public proxy of the draw's mean squared noise on the training rows (scaled units, ``|y| <= 1``).

    The draw is ``N(θ̂, (γH)⁻¹)``, ``H = XᵀX + λI``; its noise adds
    ``tr(X(γH)⁻¹Xᵀ)/n = tr(H⁻¹XᵀX)/(γn) <= min(p, n/λ)/(γn)`` to the mean squared error of the
    fitted values (eigenvalues ``s/(s + λ) <= min(1, s/λ)`` and ``tr XᵀX <= n`` for rows in the unit
    ball) -- the noise term of :func:`~sklearn_bayes.privacy._linear._adaops_accounting.adaops_risk_proxy`.
    Above 1 the noise alone is expected to cost more than predicting 0 (mean squared error at most 1).
    Uses ``n``, ``p``, ``λ`` and ``γ`` only: public.
    """
    return min(p / n, 1.0 / lam) / gamma


def _smallest_useful_lambda(eps0, delta0, n, p, lam):
    """The smallest ``ridge_lambda >= lam`` whose calibrated γ gives :func:`ops_noise_proxy` ``<= 1``, or ``None``."""
    def proxy(log_lam):
        h = math.exp(log_lam)
        g = calibrate_ops_gamma(eps0, delta0, 1.0 / h, 1.0 + math.sqrt(max(n - 1, 0) / h))
        return math.inf if not g else ops_noise_proxy(n, p, h, g)

    lo, hi = math.log(lam), math.log(max(lam, 1.0) * 1e8)
    if proxy(hi) > 1.0:
        return None
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if proxy(mid) <= 1.0 else (mid, hi)
    k = 1 - math.floor(hi / math.log(10.0))  # rounded up to 2 significant digits: still <= 1
    return math.ceil(math.exp(hi) * 10.0**k) / 10.0**k


class OnePosteriorSampleRidge(_RidgePosteriorBase):
    """Differentially private ridge regression by one draw from a tempered posterior (OPS).

    Clips every row to the public bound ``x_bound`` and every target to ``[-y_bound, y_bound]``,
    maps them into the unit ball, and releases **one** draw

    .. math::  \\theta \\sim N\\big(H^{-1}X^\\top y,\\ (\\gamma H)^{-1}\\big),\\qquad H = X^\\top X + \\lambda I,

    from the ridge posterior at inverse temperature γ (Chapter 5 of *Statistical and
    Computational Tradeoffs in Differential Privacy*).  γ is calibrated *exactly* from the
    privacy-loss distribution of the draw so that the release is (ε, δ)-DP for replace-one
    neighbours, for every data set of ``n`` records within the bounds.

    Read the User Guide: :ref:`private_linear_models`.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget ε (> 0, finite).  ``fit`` refuses an ε whose add/remove budget
        ``(ε/2, δ/(1 + e^{ε/2}))`` leaves floating-point range (ε > 1376 at δ = 1e-6), naming
        the largest supported value.
    delta : float, default=1e-6
        δ in (0, 1).  Take ``δ << 1/n``.
    ridge_lambda : float, default=100.0
        Ridge penalty λ on the scaled data (rows in the unit ball, targets in [-1, 1]).
        It is the *public* lower bound on the eigenvalues of ``H`` that the guarantee
        rests on: larger λ gives a larger γ (less noise) and more shrinkage.  ``fit``
        refuses a λ whose leverage bound ``1/λ`` alone exceeds the budget (the error names
        the smallest usable λ), and warns (``WeakReleaseWarning``) when the draw's noise is
        expected to swamp the fit, ``min(p/n, 1/λ)/γ > 1`` (:func:`ops_noise_proxy`; public),
        naming the smallest λ (rounded up to 2 digits) that brings it to 1.
    gamma : float or None, default=None
        Inverse temperature.  ``None`` calibrates the largest γ that is (ε, δ)-DP; a value
        is used as given, and ``fit`` refuses it if its certified privacy is worse than
        (ε, δ).
    x_bound : float, default=None
        Public bound on ``||x||_2``; rows beyond it are scaled down onto it.  Required.
    y_bound : float, default=None
        Public bound on ``|y|``; targets beyond it are clipped.  Required.
    fit_intercept : bool, default=True
        Append a constant column (the design row is ``[x/x_bound, 1]/√2``, so the
        intercept is penalised by α like the coefficients).
    random_state : None, int, numpy.random.Generator, default=None
        Source of the posterior draw.  An int gives reproducible noise for tests and
        emits ``SeededNoiseWarning``.
    ledger : PrivacyLedger or None, default=None
        An optional shared ledger that the release is also recorded in (shared, not
        copied, by :func:`sklearn.base.clone`).  ``fit`` checks the release against its
        budget before drawing and refuses
        (:class:`~sklearn_bayes.exceptions.BudgetExceededError`) what would exceed it,
        leaving the estimator unchanged; see :ref:`privacy_budget`.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Coefficients of the released draw, in the original units.
    intercept_ : float
        Intercept of the released draw (0 when ``fit_intercept=False``).
    gamma_ : float
        Inverse temperature used.
    lambda_ : float
        Ridge penalty used (= ``ridge_lambda``).
    worst_case_ : dict
        The public worst case the calibration used: ``mu_max = 1/λ`` and
        ``r_max = 1 + √((n-1)/λ)`` (bounds on leverage and residual in scaled units).
    epsilon_spent_, delta_spent_ : float
        The (ε, δ) certified for this release.
    ledger_ : PrivacyLedger
        This fit's own ledger (one record).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    See Also
    --------
    AdaOPSRegressor : chooses λ and γ from a private λ_min and a private norm bound; asymptotically efficient.
    RowNormClipper : the clipping as a Pipeline step.

    Notes
    -----
    **Exact privacy.**  For add/remove pairs ``(Z, Z ∪ {z})`` the privacy loss depends on
    the draw only through ``xᵀθ``; with ``μ = xᵀH_Z⁻¹x``, ``r = y - xᵀθ̂_Z`` and
    ``Z ~ N(0, 1)`` it is
    ``L = -½ log(1+μ) + (μ/2) Z² - √(γμ) r Z + γμr²/(2(1+μ))``, whose hockey-stick
    divergence is a normal-CDF expression (exact in both directions).  The thesis's
    printed tail bound (eq. 5.5) is too small; its corrected form is
    ``½|-log(1+μ) + γμr²/(1+μ)| + μ log(2/δ) + √(2γμ log(2/δ))|r|``.

    **Worst case.**  With rows in the unit ball, ``λ_min(H_Z) >= λ`` gives ``μ <= 1/λ``
    and ``||θ̂_Z|| <= ||y_Z||/√λ <= √((n-1)/λ)``, so ``|r| <= 1 + √((n-1)/λ)``.  γ is the
    largest value whose add/remove pairs are ``(ε/2, δ/(1+e^{ε/2}))`` at this worst case,
    which composes through ``Z`` to replace-one (ε, δ).  ``n`` is public (replace-one).

    Plain OPS therefore needs λ growing with ``n`` to be useful;
    :class:`AdaOPSRegressor` picks it from the data privately.

    **Floating point (not covered by the guarantee).**  The (ε, δ) above is exact for a draw
    in *real* arithmetic.  The implementation computes ``θ̂ + L⁻ᵀz/√γ`` in float64 from
    numpy's ziggurat normals ``z``, and such a release is exposed to the floating-point
    attack (Mironov 2012): the set of floats it can output, and the parity of their last
    bit, depend on the mean, not only through the Gaussian density.  For the scalar form
    ``fl(λ + fl(σ z))`` a review (HQU, 2026) measured outputs that are *impossible* under a
    neighbour -- δ >= 6·10⁻⁵ to 9·10⁻⁴ at *every* ε for means 0 vs 1 at σ = 1 -- and up to
    0.47 nats of extra privacy loss from the last bit on half of the outputs in the bulk
    when ``|mean| <~ σ|z|``; each coordinate of the draw is built the same way (for
    ``p > 1`` a sum of such terms, not measured separately).  Rounding ``coef_`` to a
    coarse grid before publishing is post-processing: it cannot make the release less
    private and it discards the low bits that carry both effects, but no bound for the
    rounded release is proved here, so do not read the (ε, δ) as certified for it either.
    For linear regression with a floating-point-sound release use
    :class:`AdaOPSRegressor` with its default ``calibration="ssp_posterior"`` (exact
    discrete Gaussian on a grid; everything after it is post-processing).

    Examples
    --------
    >>> import numpy as np, warnings
    >>> from sklearn_bayes.privacy import OnePosteriorSampleRidge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(5000, 2))
    >>> y = X @ np.array([0.5, -0.3]) + 0.1 * rng.standard_normal(5000)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # seeded noise: fine for a doctest
    ...     ops = OnePosteriorSampleRidge(epsilon=1.0, ridge_lambda=500.0, x_bound=1.5, y_bound=1.5,
    ...                                   random_state=0).fit(X, y)
    >>> ops.epsilon_spent_, ops.delta_spent_
    (1.0, 1e-06)
    """

    _parameter_constraints = {
        **_PrivateLinearBase._common_constraints,
        "ridge_lambda": [RealInterval(0, None, closed="neither")],
        "gamma": [None, RealInterval(0, None, closed="neither")],
        "y_bound": [None, RealInterval(0, None, closed="neither")],
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-6,
        ridge_lambda=100.0,
        gamma=None,
        x_bound=None,
        y_bound=None,
        fit_intercept=True,
        random_state=None,
        ledger=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.ridge_lambda = ridge_lambda
        self.gamma = gamma
        self.x_bound = x_bound
        self.y_bound = y_bound
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.ledger = ledger

    @serialized
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Clip, scale and release one draw from the ridge posterior.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : OnePosteriorSampleRidge
        """
        Xs, ys = self._prepare(X, y)
        eps, delta, lam = float(self.epsilon), float(self.delta), float(self.ridge_lambda)
        if not math.isfinite(lam):
            raise ValueError(f"ridge_lambda must be finite, got ridge_lambda={lam!r}.")
        n = Xs.shape[0]
        _check_draw_budget(eps, delta, 0.5, 1.0, type(self).__name__)
        mu_max, r_max = 1.0 / lam, 1.0 + math.sqrt((n - 1) / lam)
        eps0, delta0 = _replace_one_pair_budget(eps, delta)
        if self.gamma is None:
            gamma = calibrate_ops_gamma(eps0, delta0, mu_max, r_max)
            if gamma is None:
                raise ValueError(
                    f"ridge_lambda={lam!r} is too small for (epsilon={eps!r}, delta={delta!r}): the leverage "
                    f"bound 1/ridge_lambda alone exceeds the budget; use ridge_lambda >= "
                    f"{_min_h_for_variance(eps0, delta0):g}."
                )
        else:
            gamma = float(self.gamma)
            if not math.isfinite(gamma) or ops_worst_case_delta(eps0, gamma, mu_max, r_max) > delta0:
                best = calibrate_ops_gamma(eps0, delta0, mu_max, r_max)
                raise ValueError(
                    f"gamma={self.gamma!r} is not (epsilon={eps!r}, delta={delta!r})-DP for n={n} and "
                    f"ridge_lambda={lam!r}; the largest gamma that is: {best!r}."
                )
        # the release is checked against the shared ledger's budget and reserved there before
        # the noise is drawn: a refusal leaves the estimator (and its generator) unchanged
        self._check_budget([("posterior_sample", eps, delta)], n_samples=n)
        rng = check_privacy_random_state(self.random_state, owner=type(self).__name__, instance=self)
        theta = self._draw(Xs, ys, lam, gamma, rng)
        ledger_ = PrivacyLedger()
        self._record(ledger_, "posterior_sample", eps, delta, note="replace-one; exact PLD of the ridge posterior")
        self._set_coefficients(theta)
        self.gamma_ = gamma
        self.lambda_ = lam
        self.worst_case_ = {"mu_max": mu_max, "r_max": r_max}
        self.epsilon_spent_ = eps
        self.delta_spent_ = delta
        self.ledger_ = ledger_
        self._warn_noisy_draw(n, Xs.shape[1], lam, gamma, eps0, delta0)
        return self

    def _warn_noisy_draw(self, n, p, lam, gamma, eps0, delta0):
        """Warn when the draw's noise is expected to swamp the fit (review HPL F5; public: n, p, λ, γ)."""
        proxy = ops_noise_proxy(n, p, lam, gamma)
        if proxy <= 1.0:
            return
        if self.gamma is None:
            best = _smallest_useful_lambda(eps0, delta0, n, p, lam)
            what = (f"Use ridge_lambda >= {best:g} (the smallest value that brings it to 1 or below at this epsilon and n, "
                    "rounded up to 2 digits; "
                    "more shrinkage: a larger bias)" if best is not None
                    else "No ridge_lambda brings it to 1 or below at this epsilon and n")
        else:
            what = "A larger gamma (up to the calibrated one, gamma=None) lowers it"
        warnings.warn(
            f"{type(self).__name__}: with ridge_lambda={self.ridge_lambda!r} the draw's inverse temperature is "
            f"gamma_={gamma:.3g}, and its noise is expected to add min(p/n, 1/ridge_lambda)/gamma_ = {proxy:.3g} "
            f"to the mean squared error in units of y_bound**2 (predicting 0 costs at most 1): predictions "
            f"may fall far outside y_bound. {what}; or use more data, a larger epsilon, or "
            "AdaOPSRegressor. (A function of public n, p, ridge_lambda and gamma_ only.)",
            WeakReleaseWarning,
            stacklevel=external_stacklevel(),
        )
