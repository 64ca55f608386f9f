"""Differentially private linear models by posterior sampling: OPS ridge, AdaOPS, hybrid DP-SGLD.

:class:`AdaOPSRegressor`'s default, ``calibration="ssp_posterior"``, is not a posterior
draw: it releases noisy sufficient statistics and returns their noise-aware posterior
mean (:mod:`._ssp_posterior`); the draws below are its ``"released_norm"`` and
``"thesis"`` calibrations and :class:`OnePosteriorSampleRidge`.

Part I (Ch. 3 and 5) of *Statistical and Computational Tradeoffs in Differential Privacy*
(Yu-Xiang Wang's thesis), with the corrections of ``spec/dp_posterior_sampling.md``: the
per-instance bound of Theorem 5.15, the λ_min noise and the ``min{0, …}`` of AdaOPS
(Algorithm 6) are wrong as printed; here the ridge posterior's privacy is computed
*exactly* from its privacy-loss distribution (:mod:`._pld`).

Neighbouring relation
---------------------
All guarantees of this module are for **replace-one** neighbours (data sets of the same,
public size ``n`` that differ in one record), the relation of Theorem 3.4.  The ridge
posterior is analysed exactly for add/remove pairs ``(Z, Z ∪ {z})`` and a replace pair
``(Z ∪ {z}, Z ∪ {z'})`` goes through the intermediate ``Z``: if every add/remove pair is
``(ε₀, δ₀)``-indistinguishable in both directions, every replace pair is
``(2ε₀, (1 + e^{ε₀}) δ₀)``-indistinguishable.
"""

import functools
import math
import numbers

import numpy as np
from scipy import linalg, special
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import _num_samples, check_is_fitted

from sklearn_bayes._glm._base import LinearPredictorMixin, validate_regression_data
from sklearn_bayes.privacy._core._accounting import PrivacyLedger, _log1p_exp
from sklearn_bayes.privacy._core._clipping import clip_rows, clip_values
from sklearn_bayes.privacy._core._pld import (
    analytic_gaussian_sigma,
    ops_ridge_composed_delta,
    ops_ridge_composed_max_c,
    ops_ridge_delta,
    ops_ridge_epsilon,
    ops_ridge_max_c,
)
from sklearn_bayes.privacy._linear._ssp_posterior import (
    noise_aware_posterior,
    release_sufficient_statistics,
    ssp_posterior_budget,
)
from sklearn_bayes.utils import RealInterval, check_epsilon, check_privacy_random_state, serialized

__all__ = [
    "AdaOPSRegressor",
    "OnePosteriorSampleRidge",
    "adaops_budget",
    "adaops_norm_budget",
    "adaops_norm_risk_proxy",
    "adaops_risk_proxy",
    "calibrate_ops_gamma",
    "ops_epsilon",
    "ops_tempering",
    "ops_worst_case_delta",
    "ridge_norm_sensitivity",
]

_SQRT2 = math.sqrt(2.0)
#: "ssp_posterior": share of the unit ball given to the features, the intercept column being
#: √(1 - share) (the draws use 1/2).  A public constant, chosen on the synthetic cells of
#: bench_dp_regression.py (0.5 -> 0.9 lowers the excess MSE by 30-45 %, measured)
_SSP_X_SHARE = 0.9
# leverages at which the worst case is also evaluated (δ is increasing in μ in the regime of
# small δ -- tested -- and the grid guards the calibration should that ever fail)
_MU_GRID = np.geomspace(1e-3, 1.0, 13)


# --------------------------------------------------------------------------------------
# OPS (Theorem 3.4, Algorithm 2): bounded log-likelihood
# --------------------------------------------------------------------------------------


def ops_epsilon(loss_bound, rho=1.0):
    """ε of one exact draw from the ρ-tempered posterior when ``sup_{x,θ} |log p(x|θ)| <= B``.

    ``4ρB`` for replace-one neighbours (Theorem 3.4: the likelihood ratio and the ratio of
    normalising constants are each bounded by ``e^{2ρB}``).  Only an *exact* sampler gets
    this pure-ε claim.

    Examples
    --------
    >>> ops_epsilon(16.0)  # Ch. 4's bounded 1-D regression with gamma = 1: 64 gamma
    64.0
    """
    if not (loss_bound >= 0 and math.isfinite(loss_bound)):
        raise ValueError(f"loss_bound must be finite and >= 0, got {loss_bound!r}.")
    return 4.0 * float(rho) * float(loss_bound)


def ops_tempering(epsilon, loss_bound):
    """The tempering ``ρ = min(1, ε/(4B))`` of Algorithm 2 that makes one draw ε-DP.

    Examples
    --------
    >>> ops_tempering(1.0, 2.0)
    0.125
    """
    epsilon = check_epsilon(epsilon)
    if not (loss_bound > 0 and math.isfinite(loss_bound)):
        raise ValueError(f"loss_bound must be finite and > 0, got {loss_bound!r}.")
    return min(1.0, epsilon / (4.0 * loss_bound))


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
    gamma = c * c / (mu_max * r_max * r_max)
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


def _replace_one_pair_budget(epsilon, delta):
    """(ε₀, δ₀) of the add/remove pairs that compose to replace-one (ε, δ) through ``Z``."""
    eps0 = 0.5 * epsilon
    return eps0, delta / (1.0 + math.exp(eps0))


#: largest add/remove ε₀ of a posterior draw: ``e^{ε₀}`` must stay within float range
_MAX_EPS0 = 700.0
#: smallest add/remove δ₀ = δ'/(1 + e^{ε₀}) the normal-CDF accounting resolves (normal floats, tails of ~37 sd)
_MIN_DELTA0 = 1e-305


def _round_down(x, digits=4):
    """``x > 0`` rounded *down* to ``digits`` significant digits (a printed limit that is accepted)."""
    k = digits - 1 - math.floor(math.log10(x))
    return math.floor(x * 10.0**k) / 10.0**k


def _check_draw_budget(epsilon, delta, eps0_share, delta_share, what):
    """Refuse an ε whose add/remove pair budget ``(ε₀, δ₀)`` is outside the exact accounting's range.

    ``ε₀ = eps0_share ε`` and ``δ₀ = delta_share δ / (1 + e^{ε₀})`` (computed in log space); the
    calibration needs ``ε₀ <= 700`` (``e^{ε₀}`` finite) and ``δ₀ >= 1e-305``.  The error names
    ``epsilon`` and the largest value supported at this ``delta`` (a release at a smaller ε
    is also (ε, δ)-DP, so nothing is lost but the name of the number).
    """
    eps0 = eps0_share * epsilon
    d = delta_share * delta
    if eps0 <= _MAX_EPS0 and math.log(d) - _log1p_exp(eps0) >= math.log(_MIN_DELTA0):
        return
    if d > 2.0 * _MIN_DELTA0:
        largest = _round_down(min(_MAX_EPS0, math.log(d / _MIN_DELTA0 - 1.0)) / eps0_share)
        raise ValueError(
            f"epsilon={epsilon!r} exceeds the largest epsilon {what} supports at delta={delta!r}: "
            f"{largest!r}. Beyond it the add/remove budget delta/(1 + e^(epsilon/2)) of the exact "
            f"accounting leaves floating-point range; a release at a smaller epsilon is also "
            f"(epsilon, delta)-DP, so use epsilon <= {largest!r}."
        )
    raise ValueError(
        f"delta={delta!r} is too small for {what} at any epsilon (epsilon={epsilon!r}): the add/remove "
        f"delta of the exact accounting falls below {_MIN_DELTA0:g}; use delta >= {4 * _MIN_DELTA0 / delta_share:g}."
    )


# --------------------------------------------------------------------------------------
# shared base
# --------------------------------------------------------------------------------------


class _PrivateLinearBase(BaseEstimator):
    """Validation, public-bound scaling, ledger and prediction shared by the estimators."""

    #: errors about the inputs never print a data value (see ``utils._validation.naming``)
    _private_inputs = True

    _common_constraints = {
        "epsilon": [RealInterval(0, None, closed="neither")],
        "delta": [RealInterval(0, 1, closed="neither")],
        "x_bound": [None, RealInterval(0, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "random_state": ["random_state", np.random.Generator],
        "ledger": [None, PrivacyLedger],
    }

    def _check_bounds(self, names):
        for name in names:
            value = getattr(self, name)
            if value is None:
                raise ValueError(
                    f"{name} must be given: the privacy guarantee needs a public bound chosen without "
                    f"looking at the data (records beyond it are clipped), got {name}=None."
                )
            if not math.isfinite(value):
                raise ValueError(f"{name} must be a finite public bound, got {name}={value!r}.")

    @staticmethod
    def _check_same_length(X, y):
        """Refuse ``y`` with another number of rows than ``X``, naming ``y``."""
        try:
            nx, ny = _num_samples(X), _num_samples(y)
        except TypeError:  # not array-like: validate_data names it
            return
        if nx != ny:
            raise ValueError(f"y has {ny} samples but X has {nx}; they must have the same number of rows.")

    def _scaled_design(self, X, x_share=None):
        """Clip rows to ``x_bound`` and map them into the unit ball (with the intercept column).

        The row is ``[x/x_bound, 1]/√2``, or ``[√s x/x_bound, √(1-s)]`` with ``s = x_share``.
        """
        Xs = clip_rows(X, float(self.x_bound)) / float(self.x_bound)
        if self.fit_intercept:
            if x_share is not None:
                return np.hstack([Xs * math.sqrt(x_share), np.full((Xs.shape[0], 1), math.sqrt(1.0 - x_share))])
            Xs = np.hstack([Xs, np.ones((Xs.shape[0], 1))]) / _SQRT2
        return Xs

    def _unscale(self, theta, y_scale, x_share=None):
        """Coefficients and intercept in the original units from ``theta`` on the scaled design."""
        theta = np.asarray(theta, dtype=float)
        if self.fit_intercept and x_share is not None:
            coef = theta[..., :-1] * y_scale * math.sqrt(x_share) / float(self.x_bound)
            intercept = theta[..., -1] * y_scale * math.sqrt(1.0 - x_share)
        elif self.fit_intercept:
            coef = theta[..., :-1] * y_scale / (float(self.x_bound) * _SQRT2)
            intercept = theta[..., -1] * y_scale / _SQRT2
        else:
            coef = theta * y_scale / float(self.x_bound)
            intercept = np.zeros(theta.shape[:-1]) if theta.ndim > 1 else 0.0
        if not (np.all(np.isfinite(coef)) and np.all(np.isfinite(intercept))):
            # a function of the release and the public bounds: refusing reveals nothing more
            raise ValueError(
                f"the coefficients in the original units overflow the float range with x_bound={self.x_bound!r}"
                + (f" and y_bound={self.y_bound!r}: the scale y_bound/x_bound" if hasattr(self, "y_bound")
                   else ": the scale 1/x_bound")
                + " is too large; choose bounds of a more moderate ratio."
            )
        return coef, intercept

    def _record(self, ledger_, mechanism, epsilon, delta, note=""):
        name = f"{type(self).__name__}/{mechanism}"
        ledger_.record(name, epsilon, note=note, delta=delta)
        if self.ledger is not None:
            self.ledger.record_shared(type(self).__name__, name, epsilon, note=note, delta=delta)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        tags.input_tags.sparse = False
        return tags


class _RidgePosteriorBase(LinearPredictorMixin, RegressorMixin, _PrivateLinearBase):
    # predict: X @ coef_ + intercept_, post-processing of the release (LinearPredictorMixin)
    """One draw from the ridge posterior on the clipped, scaled data (shared by OPS and AdaOPS)."""

    def _prepare(self, X, y, x_share=None):
        self._check_bounds(("x_bound", "y_bound"))
        check_epsilon(self.epsilon)
        self._check_same_length(X, y)
        X, y, _ = validate_regression_data(self, X, y)
        Xs = self._scaled_design(X, x_share)
        ys = clip_values(y, float(self.y_bound)) / float(self.y_bound)
        return Xs, ys

    @staticmethod
    def _draw(Xs, ys, lam, gamma, rng):
        """``θ ~ N(H⁻¹Xᵀy, (γH)⁻¹)``, ``H = XᵀX + λI``: one Gram, one Cholesky, one draw."""
        p = Xs.shape[1]
        H = Xs.T @ Xs
        H[np.diag_indices(p)] += lam
        L = linalg.cholesky(H, lower=True)
        mean = linalg.cho_solve((L, True), Xs.T @ ys)
        z = rng.standard_normal(p)
        return mean + linalg.solve_triangular(L, z, lower=True, trans="T") / math.sqrt(gamma)

    def _set_coefficients(self, theta, x_share=None):
        self.coef_, self.intercept_ = self._unscale(theta, float(self.y_bound), x_share)
        self.intercept_ = float(self.intercept_)

    def per_instance_epsilon(self, X, y, delta=None):
        """Exact per-instance ε of each record of ``(X, y)`` for the fitted draw (curator-side diagnostic).

        For record ``z_i`` of the data set ``D = (X, y)`` this is the smallest ε such that the
        ridge-posterior draw (with the fitted ``lambda_`` and ``gamma_``) on ``D`` and on
        ``D \\ {z_i}`` are (ε, δ)-indistinguishable in both directions: the exact add/remove
        per-instance DP of Theorem 5.15 (corrected), from the leave-one-out leverage
        ``μ = μ'/(1-μ')`` and residual ``r = (y - xᵀθ̂)/(1-μ')``.

        .. warning::  These values are computed from the data and are **not private**:
           they are a diagnostic for the data curator, never to be published.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The data the estimator was fitted on (clipped and scaled as in ``fit``).
        y : array-like of shape (n_samples,)
        delta : float in (0, 1) or None, default=None
            δ of the per-instance guarantee; ``None`` uses ``delta``.

        Returns
        -------
        epsilon : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        delta = self.delta if delta is None else delta
        if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not 0 < delta < 1:
            raise ValueError(f"delta must be a real number in (0, 1), got {delta!r}.")
        self._check_same_length(X, y)
        X, y, _ = validate_regression_data(self, X, y, reset=False)
        Xs = self._scaled_design(X)
        ys = clip_values(y, float(self.y_bound)) / float(self.y_bound)
        p = Xs.shape[1]
        H = Xs.T @ Xs
        H[np.diag_indices(p)] += self.lambda_
        L = linalg.cholesky(H, lower=True)
        theta = linalg.cho_solve((L, True), Xs.T @ ys)
        W = linalg.solve_triangular(L, Xs.T, lower=True)
        lev_in = np.einsum("ij,ij->j", W, W)
        resid = ys - Xs @ theta
        out = np.empty(Xs.shape[0])
        for i, (m_in, r_in) in enumerate(zip(lev_in, resid)):
            if m_in >= 1.0 - 1e-12:
                out[i] = math.inf
                continue
            mu = m_in / (1.0 - m_in)
            r = r_in / (1.0 - m_in)
            out[i] = ops_ridge_epsilon(float(delta), mu, math.sqrt(self.gamma_ * mu) * abs(r))
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags


# --------------------------------------------------------------------------------------
# OPS ridge
# --------------------------------------------------------------------------------------


class OnePosteriorSampleRidge(_RidgePosteriorBase):
    """Differentially private ridge regression by one exact draw from a tempered posterior (OPS).

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
        the smallest usable λ).
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
        copied, by :func:`sklearn.base.clone`).

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
        return self


# --------------------------------------------------------------------------------------
# AdaOPS
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


@functools.lru_cache(maxsize=256)
def _composed_interval(eps_ar, delta_mech, mu_gauss):
    """The coarsest PLD interval (1e-3, then /4 down to ``eps_ar/100``) at which the composition can
    certify the target: the limit of the composed δ at leverage -> 0 is below ``0.45 delta_mech``.

    Returns ``None`` when no interval can (ε too small for the Gaussian pair to leave room, or
    δ below the PLD's floor).
    """
    interval = _PLD_INTERVAL
    while True:
        if _pld_limit(eps_ar, mu_gauss, interval) < 0.45 * delta_mech:
            return interval
        interval /= 4.0
        if interval < eps_ar / 100.0:
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

    if math.log(0.75 * delta) - _log1p_exp(0.5 * epsilon) < math.log(_PLD_FLOOR_SURE):
        raise too_large()
    b = adaops_norm_budget(epsilon, delta)
    interval = _composed_interval(b["eps_ar"], b["delta_mech"], b["mu_gauss"])
    if interval is None:
        if b["delta_mech"] < _MIN_DELTA_MECH:
            raise too_large()
        raise ValueError(
            f"epsilon={epsilon!r} is too small for {what} at delta={delta!r}: the two Gaussian releases "
            "alone use the whole composed delta, leaving nothing for the posterior draw. Use a larger "
            "epsilon, or calibration='ssp_posterior' (which supports every epsilon > 0)."
        )
    b["interval"] = interval
    return b


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
        supports every ε; ``fit`` refuses, naming the largest supported value, an ε beyond
        the accounting of ``"thesis"`` (2751 at δ = 1e-6) or of ``"released_norm"`` (whose
        privacy-loss distributions certify δ down to about 1e-15: 38.09 at δ = 1e-6), and an
        ε below about 1e-5 for ``"released_norm"`` (User Guide, *Limits*).
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
    calibration : {"ssp_posterior", "released_norm", "thesis"}, default="ssp_posterior"
        The mechanism.  ``"ssp_posterior"``: Gaussian release of ``(XᵀX, Xᵀy, yᵀy)`` and the
        noise-aware posterior mean (no posterior draw; ``kappa`` is ignored).  The two others
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
        The empirical-Bayes prior variance τ² (scaled units; ``"ssp_posterior"``).
    residual_variance_ : float or None
        The residual variance of the noise model estimated from the releases (scaled units;
        ``"ssp_posterior"``).
    lambda_min_noisy_ : float
        The released λ̃ (scaled units).  This and the attributes below are those of the
        posterior draw and are ``None`` with ``calibration="ssp_posterior"``.
    noise_scale_lambda_ : float
        σ₁ of the λ_min release.
    margin_ : float
        ``1 + σ₁ Φ⁻¹(1 - δ_event)`` (``δ_ar/8`` released_norm, ``δ/4`` thesis).
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
    ``(ε, δ)``-indistinguishable.  No event is excluded.  The posterior mean, the prior
    scale and the residual variance are functions of ``(Ã, b̃, q̃)`` and public constants:
    post-processing (the prior is ``N(0, τ² diag(1, …, 1, 9))`` on the scaled design, i.e.
    the same scale for the intercept and for a slope per unit of ``x_bound``, in units of
    ``y``, with τ² by empirical Bayes).  Tested: the bound on adversarial neighbours, the
    exact δ(ε) of the worst pair, and a Monte Carlo audit of the implementation's
    releases.  Utility-side
    approximations (the noise ``Eθ`` treated as Gaussian and independent of ``Ã``) affect the
    estimate, never the guarantee.

    **Corrections to the thesis.**  (1) ``λ_n = max{0, …}`` (printed ``min``, which makes
    it ≤ 0); (2) σ₁ from the analytic Gaussian mechanism (the printed
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

    **Default floor (thesis calibration).**  ``h_floor = max(4(1 + log(4/δ))/ε, h_var)`` (the thesis's bound
    on κ, and the smallest floor whose leverage alone uses at most half of δ₀).  Raising
    ``h`` above ``λ̃ - margin`` adds the penalty ``λ_n`` (bias) but raises γ like ``h²/n``
    (noise falls like ``h⁻³``); ``h`` is the point of a geometric grid from
    ``max(λ̃ - margin, h_floor)`` up (×10⁴) that minimises
    ``min(p/n, 1/h)/γ(h) + min(1, λ_n/(4(λ̃ - margin)))`` (:func:`adaops_risk_proxy`,
    scaled units).  Well-conditioned large data get ``λ_n = 0``; small or ill-conditioned
    data get shrinkage instead of a draw drowned in noise.

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
        "calibration": [StrOptions({"ssp_posterior", "released_norm", "thesis"})],
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
        x_share = _SSP_X_SHARE if self.calibration == "ssp_posterior" else None
        Xs, ys = self._prepare(X, y, x_share)
        if self.kappa is not None and not math.isfinite(self.kappa):
            raise ValueError(f"kappa must be finite, got kappa={self.kappa!r}.")
        rng = check_privacy_random_state(self.random_state, owner=type(self).__name__, instance=self)
        if self.calibration == "ssp_posterior":
            return self._fit_ssp_posterior(Xs, ys, rng)
        if self.calibration == "thesis":
            return self._fit_thesis(Xs, ys, rng)
        return self._fit_released_norm(Xs, ys, rng)

    def _clear_ssp_attributes(self):
        for name in ("noise_scale_gram_", "noise_scale_xty_", "noise_scale_yty_", "prior_variance_",
                     "residual_variance_"):
            setattr(self, name, None)

    def _fit_ssp_posterior(self, Xs, ys, rng):
        eps, delta = float(self.epsilon), float(self.delta)
        n = Xs.shape[0]
        b = ssp_posterior_budget(eps, delta)
        A, xty, q = release_sufficient_statistics(Xs, ys, b, rng)
        # everything below is post-processing of (A, xty, q) and public constants
        # prior N(0, τ² diag(1, …, 1, share/(1 - share))): the same scale for the intercept and for
        # a slope per unit of x_bound, in units of y, as an isotropic prior on [x/x_bound, 1]/√2
        ratio = _SSP_X_SHARE / (1.0 - _SSP_X_SHARE) if self.fit_intercept else None
        mean, _, tau2, s2 = noise_aware_posterior(A, xty, q, n, b["sigma_gram"], b["sigma_xty"], intercept_ratio=ratio)
        ledger_ = PrivacyLedger()
        self._record(
            ledger_, "noisy_sufficient_statistics", eps, delta,
            note="replace-one; X'X (symmetric), X'y and y'y with Gaussian noise, one Gaussian mechanism of "
            "joint sensitivity ratio mu (analytic Gaussian mechanism); the noise-aware posterior mean is "
            "post-processing; no posterior draw (not OPS)",
        )
        self._set_coefficients(mean, _SSP_X_SHARE)
        self.noise_scale_gram_ = b["sigma_gram"]
        self.noise_scale_xty_ = b["sigma_xty"]
        self.noise_scale_yty_ = b["sigma_yty"]
        self.prior_variance_ = tau2
        self.residual_variance_ = s2
        for name in ("lambda_min_noisy_", "noise_scale_lambda_", "margin_", "log_norm_noisy_", "noise_scale_norm_",
                     "residual_bound_", "h_base_", "h_", "lambda_", "gamma_"):
            setattr(self, name, None)
        self.epsilon_spent_ = eps
        self.delta_spent_ = delta
        self.ledger_ = ledger_
        return self

    def per_instance_epsilon(self, X, y, delta=None):
        """Exact per-instance ε of each record for the fitted posterior draw (curator-side diagnostic).

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
                f"calibration={self.calibration!r} (noisy sufficient statistics, no draw), whose privacy is "
                f"the same (epsilon={self.epsilon_spent_!r}, delta={self.delta_spent_!r}) for every record."
            )
        return super().per_instance_epsilon(X, y, delta)

    def _fit_released_norm(self, Xs, ys, rng):
        eps, delta = float(self.epsilon), float(self.delta)
        n, p = Xs.shape
        b = released_norm_budget(eps, delta)
        # 1. release lambda_min (sensitivity 1)
        sigma1 = 1.0 / b["mu_lambda"]
        gram = Xs.T @ Xs
        xty = Xs.T @ ys
        lam_min = float(linalg.eigvalsh(gram, subset_by_index=[0, 0])[0])
        lam_noisy = lam_min + sigma1 * float(rng.standard_normal())
        margin = 1.0 + sigma1 * float(-special.ndtri(b["delta_event_lambda"]))
        # 2. base floor and penalty (post-processing of lam_noisy)
        q2 = float(-special.ndtri(b["delta_event_norm"]))
        h_floor = max(_min_h_composed(b["eps_ar"], b["delta_mech"], b["mu_gauss"], b["interval"]),
                      _norm_floor(b["mu_norm"], q2))
        h0 = max(lam_noisy - margin, h_floor)
        if self.kappa is not None:
            h0 = max(h0, n / (p * float(self.kappa)))
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
        if self.kappa is None:
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
                f"calibration='released_norm' found no inverse temperature for (epsilon={eps!r}, "
                f"delta={delta!r}); use a larger epsilon or calibration='ssp_posterior'."
            )
        gamma = c * c / (mu_max * r_max * r_max)
        try:
            theta = self._draw(Xs, ys, lam_n, gamma, rng)
        except linalg.LinAlgError:
            lam_n = max(lam_n, h)
            theta = self._draw(Xs, ys, lam_n, gamma, rng)
        ledger_ = PrivacyLedger()
        self._record(
            ledger_, "lambda_min+norm+posterior_sample", eps, delta,
            note="replace-one via add/remove (eps/2, delta/(1+e^(eps/2))): Gaussian lambda_min and "
            "log(1+||theta||) releases and the ridge-posterior draw composed by dp-accounting PLD; "
            "includes 2 x delta_ar/8 for the two bound events",
        )
        self._set_coefficients(theta)
        self.lambda_min_noisy_ = lam_noisy
        self.noise_scale_lambda_ = sigma1
        self.margin_ = margin
        self.log_norm_noisy_ = log_norm_noisy
        self.noise_scale_norm_ = sigma2
        self.residual_bound_ = r_max
        self.h_base_ = h0
        self.h_ = h
        self._clear_ssp_attributes()
        self.lambda_ = lam_n
        self.gamma_ = gamma
        self.epsilon_spent_ = eps
        self.delta_spent_ = delta
        self.ledger_ = ledger_
        return self

    def _fit_thesis(self, Xs, ys, rng):
        eps, delta = float(self.epsilon), float(self.delta)
        n, p = Xs.shape
        _check_draw_budget(eps, delta, 0.25, 0.5, "calibration='thesis'")
        b = adaops_budget(eps, delta)
        # 1. release lambda_min (sensitivity 1 for rows in the unit ball)
        sigma1 = analytic_gaussian_sigma(b["eps_lambda"], b["delta_lambda"], 1.0)
        gram = Xs.T @ Xs
        lam_min = float(linalg.eigvalsh(gram, subset_by_index=[0, 0])[0])
        lam_noisy = lam_min + sigma1 * float(rng.standard_normal())
        margin = 1.0 + sigma1 * float(-special.ndtri(b["delta_event"]))
        # 2. eigenvalue floor and penalty (post-processing of lam_noisy and public n, d)
        h_floor = max(4.0 * (1.0 + math.log(4.0 / delta)) / eps, _min_h_for_variance(b["eps0"], b["delta0"]))
        if self.kappa is None:
            h = _choose_floor(max(lam_noisy - margin, h_floor), lam_noisy, margin, n, p, b["eps0"], b["delta0"])
        else:
            h = max(n / (p * float(self.kappa)), h_floor)
        lam_n = max(0.0, h - (lam_noisy - margin))
        # 3. gamma, exactly at the worst case of the event lambda_min(H_Z) >= h
        mu_max, r_max = 1.0 / h, 1.0 + math.sqrt(max(n - 1, 0) / h)
        gamma = calibrate_ops_gamma(b["eps0"], b["delta0"], mu_max, r_max)
        if gamma is None:  # a guard: h >= h_floor leaves room for the residual
            raise ValueError(
                f"calibration='thesis' found no inverse temperature for (epsilon={eps!r}, delta={delta!r}) "
                f"at n={n}; use a larger epsilon or calibration='ssp_posterior'."
            )
        # 4. one draw (a Cholesky failure is only possible on the accounted event lambda_min + lam_n < h)
        try:
            theta = self._draw(Xs, ys, lam_n, gamma, rng)
        except linalg.LinAlgError:
            lam_n = max(lam_n, h)
            theta = self._draw(Xs, ys, lam_n, gamma, rng)
        ledger_ = PrivacyLedger()
        self._record(ledger_, "lambda_min", b["eps_lambda"], b["delta_lambda"], note="analytic Gaussian mechanism")
        self._record(
            ledger_, "posterior_sample", b["eps_ops"], b["delta_ops"] + b["delta_event"],
            note="replace-one; exact PLD of the ridge posterior; includes delta/4 for lambda_tilde > lambda_min + margin",
        )
        self._set_coefficients(theta)
        self.lambda_min_noisy_ = lam_noisy
        self.noise_scale_lambda_ = sigma1
        self.margin_ = margin
        self.log_norm_noisy_ = None
        self.noise_scale_norm_ = None
        self.residual_bound_ = r_max
        self.h_base_ = h
        self.h_ = h
        self._clear_ssp_attributes()
        self.lambda_ = lam_n
        self.gamma_ = gamma
        self.epsilon_spent_ = eps
        self.delta_spent_ = delta
        self.ledger_ = ledger_
        return self
