"""Shared base of the private linear models: the OPS bound, the draw budget, validation, bounds, ledger, prediction.

Part I (Ch. 3 and 5) of *Statistical and Computational Tradeoffs in Differential Privacy*
(Yu-Xiang Wang's thesis), with the corrections of ``spec/dp_posterior_sampling.md``: the
per-instance bound of Theorem 5.15, the λ_min noise and the ``min{0, …}`` of AdaOPS
(Algorithm 6) are wrong as printed; here the ridge posterior's privacy is computed
*exactly* from its privacy-loss distribution (:mod:`sklearn_bayes.privacy._core._pld`).

Neighbouring relation
---------------------
All guarantees of this sub-package's posterior draws are for **replace-one** neighbours
(data sets of the same, public size ``n`` that differ in one record), the relation of
Theorem 3.4.  The ridge posterior is analysed exactly for add/remove pairs ``(Z, Z ∪ {z})``
and a replace pair ``(Z ∪ {z}, Z ∪ {z'})`` goes through the intermediate ``Z``: if every
add/remove pair is ``(ε₀, δ₀)``-indistinguishable in both directions, every replace pair is
``(2ε₀, (1 + e^{ε₀}) δ₀)``-indistinguishable (:func:`_replace_one_pair_budget`).
"""

import functools
import math
import numbers
import threading
import uuid
import warnings
import weakref

import numpy as np
from scipy import linalg
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import _num_samples, check_is_fitted

from sklearn_bayes._glm._base import LinearPredictorMixin, validate_regression_data
from sklearn_bayes.privacy._core import PrivacyLedger, clip_rows, clip_values, log1p_exp, ops_ridge_epsilon
from sklearn_bayes.utils import RealInterval, check_epsilon, instance_lock
from sklearn_bayes.utils._validation import external_stacklevel
from sklearn_bayes.exceptions import WeakReleaseWarning

__all__ = ["WeakReleaseWarning", "draw_ridge_posterior", "ops_epsilon", "ops_tempering"]

_SQRT2 = math.sqrt(2.0)


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
# the add/remove budget of one posterior draw
# --------------------------------------------------------------------------------------


def _replace_one_pair_budget(epsilon, delta):
    """(ε₀, δ₀) of the add/remove pairs that compose to replace-one (ε, δ) through ``Z``."""
    eps0 = 0.5 * epsilon
    return eps0, delta / (1.0 + math.exp(eps0))


#: smallest public ``x_bound``: clipped rows' entries stay normal doubles (their rounding, at most
#: √d 2.5e-324 on the norm, is covered by the clipping's 4-ulp shrink for d up to 10¹⁷)
_MIN_X_BOUND = 1e-300

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
    if eps0 <= _MAX_EPS0 and math.log(d) - log1p_exp(eps0) >= math.log(_MIN_DELTA0):
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


def _warn_large_delta(delta, n_samples, what):
    """Warn when ``delta >= 1/n`` (review HQX F6): a mechanism may then publish a record outright
    with probability δ and still be (ε, δ)-DP, so the guarantee protects little.  ``n`` is public for
    replace-one neighbours; a warning, not a refusal (the user's (ε, δ) is certified either way)."""
    delta = float(delta)
    if n_samples > 0 and delta >= 1.0 / n_samples:
        warnings.warn(
            f"delta={delta!r} is at least 1/n = 1/{n_samples} for {what}: an (epsilon, delta)-DP mechanism may then "
            "publish some records outright; choose delta much smaller than 1/n (1e-6 is the default).",
            UserWarning,
            stacklevel=external_stacklevel(),
        )


# --------------------------------------------------------------------------------------
# shared base
# --------------------------------------------------------------------------------------


def draw_ridge_posterior(Xs, ys, lam, gamma, rng):
    """``θ ~ N(H⁻¹Xᵀy, (γH)⁻¹)``, ``H = XᵀX + λI``: one Gram, one Cholesky, one draw.

    Raises ``scipy.linalg.LinAlgError`` when ``H`` is not positive definite.
    """
    p = Xs.shape[1]
    H = Xs.T @ Xs
    H[np.diag_indices(p)] += lam
    L = linalg.cholesky(H, lower=True)
    mean = linalg.cho_solve((L, True), Xs.T @ ys)
    z = rng.standard_normal(p)
    return mean + linalg.solve_triangular(L, z, lower=True, trans="T") / math.sqrt(gamma)


#: the reservations of the fits in progress (see ``_PrivateLinearBase._check_budget``), per
#: estimator, outside its ``__dict__`` so that a fit's state is only what it binds
_RESERVED = weakref.WeakKeyDictionary()
_RESERVED_LOCK = threading.Lock()


def _refusal_changes_nothing(fit):
    """Wrap ``fit`` so that a fit that raises (any refusal) leaves ``__dict__`` as it was.

    Validation sets attributes such as ``n_features_in_`` before the budget is checked and
    before the parameters that depend on the data (``ridge_lambda`` against ``n``, the
    SGLD share of ε) are; on *any* exception -- a refusal of the ledger
    (:class:`~sklearn_bayes.exceptions.BudgetExceededError`,
    :class:`~sklearn_bayes.exceptions.DetachedLedgerError`), a late ``ValueError``, an
    interrupt -- they are put back, so the refused estimator is byte-identical to what it
    was (a fitted one keeps predicting with its fitted width).

    Outside ``__dict__``: the generator is *not* rewound (a reserved release is refused
    before any noise is drawn, and an unreserved one after its draw must not replay that
    noise); releases the failed fit reserved in the shared ``ledger`` stay recorded there
    (conservative: noise may have been drawn), and its pending reservations are dropped
    (:data:`_RESERVED`), so a later fit cannot settle -- and lower -- them as its own.
    Holds the instance's (re-entrant) lock, so a concurrent fit of the same object cannot
    interleave with the restore.
    """

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        with instance_lock(self):
            saved = dict(self.__dict__)
            try:
                return fit(self, *args, **kwargs)
            except BaseException:
                self.__dict__.clear()
                self.__dict__.update(saved)
                with _RESERVED_LOCK:
                    _RESERVED.pop(self, None)
                raise

    wrapper._refusal_changes_nothing = True
    return wrapper


class _PrivateLinearBase(BaseEstimator):
    """Validation, public-bound scaling, ledger and prediction shared by the estimators."""

    def __init_subclass__(cls, **kwargs):
        # every private linear model's fit restores its state when the ledger refuses
        super().__init_subclass__(**kwargs)
        fit = cls.__dict__.get("fit")
        if fit is not None and not getattr(fit, "_refusal_changes_nothing", False):
            cls.fit = _refusal_changes_nothing(fit)

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
            if name == "x_bound" and value < _MIN_X_BOUND:
                # rows clipped onto a smaller bound have subnormal entries, whose absolute rounding
                # (5e-324) pushed the scaled row out of the unit ball (norm 1.83 at x_bound = 1.5e-323
                # with clip_rows before its exact subnormal path) and leaves them a few significant bits
                raise ValueError(
                    f"x_bound={value!r} is below {_MIN_X_BOUND:g}: rows clipped onto it have subnormal "
                    "entries with a few significant bits left (their rounding is not small against the "
                    "bound the noise is calibrated for); express X in larger units (a public constant) "
                    "and use x_bound >= 1e-300."
                )

    @staticmethod
    def _check_same_length(X, y):
        """Refuse ``y`` with another number of rows than ``X``, naming ``y``."""
        try:
            nx, ny = _num_samples(X), _num_samples(y)
        except TypeError:  # not array-like: validate_data names it
            return
        if nx != ny:
            raise ValueError(f"y has {ny} samples but X has {nx}; they must have the same number of rows.")

    def _scaled_design(self, X, x_share=None, scaling=None):
        """Clip rows to ``x_bound`` and map them into the unit ball (with the intercept column).

        The row is ``[x/x_bound, 1]/√2``, or ``[√s x/x_bound, √(1-s)]`` with ``s = x_share``.
        ``scaling`` (the fitted ``{"x_bound", "fit_intercept"}``, see :meth:`_fitted_scaling`)
        replaces the current parameters when describing a fitted release.
        """
        x_bound = float(self.x_bound if scaling is None else scaling["x_bound"])
        fit_intercept = self.fit_intercept if scaling is None else scaling["fit_intercept"]
        Xs = clip_rows(X, x_bound) / x_bound
        if fit_intercept:
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

    def _check_budget(self, events, n_samples=None):
        """Reserve this fit's releases in the shared ``ledger`` before any noise is drawn.

        ``events`` is the list of ``(mechanism, epsilon, delta)`` that this fit will
        record with :meth:`_record` (the same ``mechanism`` names, amounts at least those
        recorded).  With a ``ledger``, the releases are checked against its budget and
        recorded in it in one atomic step (under the ledger's lock, or one ``BEGIN
        IMMEDIATE`` transaction for a ledger file): two threads or processes cannot both
        pass the check on the same total.  Refuses with
        :class:`~sklearn_bayes.exceptions.BudgetExceededError` (the budget would be
        exceeded) or :class:`~sklearn_bayes.exceptions.DetachedLedgerError` (the ledger is
        an in-memory copy in another process) and then changes nothing: call it before
        drawing noise and before setting any attribute, so that a refusal leaves the
        estimator byte-identical.  Without a ``ledger`` it only validates ``events``.

        The reservation is kept outside the estimator (no attribute is set) until
        :meth:`_record` settles it; a fit that fails after the reservation leaves the
        reserved releases recorded (conservative: noise may have been drawn).
        """
        if n_samples is not None:
            _warn_large_delta(self.delta, n_samples, type(self).__name__)
        checked = []
        for mechanism, epsilon, delta in events:
            epsilon, delta = float(epsilon), float(delta)
            if not (math.isfinite(epsilon) and 0 <= delta <= 1):
                raise ValueError(f"the release {mechanism!r} has an invalid budget ({epsilon!r}, {delta!r}).")
            if not epsilon > 0:
                # review HPL F1: a release that draws noise spends ε > 0; a share of a tiny ε that
                # underflows to 0 would leave a record claiming a free release
                raise ValueError(
                    f"epsilon={self.epsilon!r} is too small for {type(self).__name__}: the share of it given to the "
                    f"release {mechanism!r} underflows to 0 in floating point; use a larger epsilon."
                )
            checked.append((f"{type(self).__name__}/{mechanism}", epsilon, delta))
        if self.ledger is None or not checked:
            return
        target, ids = self.ledger._reserve(type(self).__name__, checked)
        with _RESERVED_LOCK:
            _RESERVED[self] = [(name, eps, delta, target, rid) for (name, eps, delta), rid in zip(checked, ids)]

    def _record(self, ledger_, mechanism, epsilon, delta, note=""):
        """Record a release in ``ledger_`` and in the shared ``ledger`` (settling its reservation).

        A release reserved by :meth:`_check_budget` (same mechanism, amounts no larger)
        gets its note (and its actual amounts) in the shared ledger and the same id in
        both.  A release that was not reserved is checked and recorded now (after its noise
        was drawn; a refusal still binds nothing, the caller sets its attributes after
        this call).
        """
        name = f"{type(self).__name__}/{mechanism}"
        epsilon, delta = float(epsilon), float(delta)
        match = None
        with _RESERVED_LOCK:
            pending = _RESERVED.get(self)
            for i, entry in enumerate(pending or ()):
                if entry[0] == name and epsilon <= entry[1] and delta <= entry[2]:
                    match = pending.pop(i)
                    break
            if pending is not None and not pending:
                del _RESERVED[self]
        if match is not None:
            rid = match[4]
            match[3]._settle(rid, epsilon, delta, note)
        else:
            rid = uuid.uuid4().hex
            if self.ledger is not None:
                self.ledger.record_shared(type(self).__name__, name, epsilon, note=note, delta=delta, id=rid)
        ledger_.record(name, epsilon, note=note, delta=delta, id=rid)

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

    #: one draw from the ridge posterior (:func:`draw_ridge_posterior`)
    _draw = staticmethod(draw_ridge_posterior)

    def _set_coefficients(self, theta, x_share=None):
        self.coef_, self.intercept_ = self._unscale(theta, float(self.y_bound), x_share)
        self.intercept_ = float(self.intercept_)
        # the public scaling the release was made with: what describes the fitted release after a
        # later set_params (per_instance_epsilon, predict(return_std=True)); equal on neighbours
        self._fit_scaling = {
            "x_bound": float(self.x_bound),
            "y_bound": float(self.y_bound),
            "fit_intercept": bool(self.fit_intercept),
        }

    def _fitted_scaling(self):
        """``{"x_bound", "y_bound", "fit_intercept"}`` of the fitted release (not the current parameters)."""
        scaling = getattr(self, "_fit_scaling", None)
        if scaling is None:  # fitted by a version that did not record it
            raise ValueError(
                "this estimator does not record the x_bound, y_bound and fit_intercept its release was "
                "made with (it was fitted by an older version); refit it."
            )
        return scaling

    def per_instance_epsilon(self, X, y, delta=None):
        """Exact per-instance ε of each record of ``(X, y)`` for the fitted draw (curator-side diagnostic).

        For record ``z_i`` of the data set ``D = (X, y)`` this is the smallest ε such that the
        ridge-posterior draw (with the fitted ``lambda_`` and ``gamma_``) on ``D`` and on
        ``D \\ {z_i}`` are (ε, δ)-indistinguishable in both directions: the exact add/remove
        per-instance DP of Theorem 5.15 (corrected), from the leave-one-out leverage
        ``μ = μ'/(1-μ')`` and residual ``r = (y - xᵀθ̂)/(1-μ')``.

        .. warning::  These values are computed from the data and are **not private**:
           they are a diagnostic for the data curator, never to be published.

        The accounting is that of the fitted release: the ``x_bound``, ``y_bound`` and
        ``fit_intercept`` it was made with (recorded at ``fit``), whatever ``set_params``
        changed since.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The data the estimator was fitted on (clipped and scaled as in ``fit``).
        y : array-like of shape (n_samples,)
        delta : float in (0, 1) or None, default=None
            δ of the per-instance guarantee; ``None`` uses the δ of the fit (``delta_spent_``,
            not a ``delta`` set since).

        Returns
        -------
        epsilon : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        delta = self.delta_spent_ if delta is None else delta
        if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not 0 < delta < 1:
            raise ValueError(f"delta must be a real number in (0, 1), got {delta!r}.")
        self._check_same_length(X, y)
        X, y, _ = validate_regression_data(self, X, y, reset=False)
        # the bounds and design of the fitted release, not parameters set after fit
        scaling = self._fitted_scaling()
        Xs = self._scaled_design(X, scaling=scaling)
        ys = clip_values(y, scaling["y_bound"]) / scaling["y_bound"]
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

