"""The shared base class of the SubsampledPrior* estimators (Algorithm 1 + exact MAP).

Algorithm 1 of S. Aydın, *Bayesian Methods for Tackling Complex Inferential Problems in Data
Science* (PhD dissertation, Sabancı University, 2024), Chapter 2: fit the unregularised model on
``m`` random subsamples of ``n`` rows, use the mean and covariance of the subsample coefficients
as the mean and covariance of a Gaussian prior, and return the exact MAP fit on all the data.
"""

import math
import warnings
from numbers import Integral, Real

import numpy as np
from scipy import linalg
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.validation import check_is_fitted

from sklearn_bayes.exceptions import SubsampleFitWarning
from sklearn_bayes.utils import IntegerInterval, check_generator
from sklearn_bayes.utils._intervals import warn_if_swapped_coverage
from sklearn_bayes._glm import (
    HingeLoss,
    LogisticLoss,
    MAPResult,
    SquaredHingeLoss,
    PoissonLoss,
    SquaredLoss,
    _dual,
    _multidual,
    fit_map,
    rank_tolerance,
    rescale,
    inverse_information,
    inverse_spd,
    mle_exists,
    normalise_weights,
    dominated_columns_below,
    posterior_hessian,
    standardise,
    wald_interval,
)
from sklearn_bayes.linear_model._subsampled_prior._fits import _fit_subsample_batch
from sklearn_bayes.linear_model._subsampled_prior._plan import (
    _DOMINATED_REFUSE,
    _DOMINATED_WARN,
    _rare_level_rows,
    _resolve_sizes,
)
from sklearn_bayes.linear_model._subsampled_prior._prior import _subsample_prior, _to_data_units
from sklearn_bayes.linear_model._subsampled_prior._tuning import (
    ridge_map,
    select_glm,
    select_ridge,
    select_svm,
    select_svm_ovr,
    svm_path,
)

#: warnings of fit point at the caller: _report, _fit_problems, _fit_single, fit and its two
#: decorators (transactional, _fit_context)
_STACKLEVEL = 7
#: prior_scale='loo': largest share n / N of the rows in one subsample at which the subsample
#: covariance and mean are candidates for the prior's shape and mean
_SUBSAMPLE_MAX_SHARE = 0.25
#: binary logistic regression, prior_mean_method='offset': where the data's observed information of the
#: 'sampling' interval is evaluated.  "map" (the default): at the MAP.  "midpoint" (an option, review HSR2):
#: halfway between the MAP and the interval's centre (one Newton step of the data's negative log-likelihood
#: from the MAP); the centre is the same in both (its step uses the information at the MAP) and so is the fit.
#: At N = 32-77 the MAP's information is over-stated (its probabilities are pulled towards 1/2: 95 % intervals
#: covered 0.81-0.91 on four real designs); "midpoint" covered 0.877-0.955 there but failed its held-out rule
#: (0.966-0.968 against 0.955-0.957 at N = 123-144, and coefficients at 0.99-1.0 that covered 0.95-0.97), so it
#: is not the default.  See the Limitations of the subsampled-prior guide.
_SAMPLING_INFORMATION = "map"


class _PosteriorMixin:
    """``conf_int`` of the estimators whose loss is a negative log-likelihood (Laplace posterior)."""

    def conf_int(self, alpha=0.05, *, covariance="sampling"):
        """Normal intervals for the entries of ``coef_``.

        ``covariance='sampling'`` (the default): the Wald interval of the data alone,
        ``c -/+ z_{1 - alpha/2} * sqrt(diag(C))`` with ``C`` = ``coef_sampling_covariance_`` (the
        inverse observed information of the data at the MAP) and ``c = coef_ + C P (coef_ -
        prior_mean_)`` (``P`` = ``prior_precision_``), one Newton step of the data's negative
        log-likelihood from the MAP, which removes the prior's pull to first order (with
        ``prior_mean_method='extra_column'``, ``c = coef_``).  ``covariance='posterior'``:
        ``coef_ -/+ z_{1 - alpha/2} * sqrt(diag(coef_covariance_))``, the central ``1 - alpha``
        credible interval of the Laplace approximation of the posterior (marginal over the
        intercept).  The default is the one that reached its nominal coverage in every measured
        setting: the prior is learnt from the same rows, so the posterior counts part of the
        data twice, and with the default ``prior_scale='loo'`` it is tuned for prediction
        (shrinkage biases large coefficients towards the prior mean); see the Notes of the class.
        With ``'sampling'`` a coefficient the data alone do not identify (more features than rows,
        collinear or constant columns) gets ``(-inf, inf)``.

        Parameters
        ----------
        alpha : float in (0, 1), default=0.05
            One minus the nominal coverage (0.05 for a 95 % interval; a value above 0.5, such as
            0.95, gives a narrow interval and a ``UserWarning``).
        covariance : {'sampling', 'posterior'}, default='sampling'
            Which covariance: ``coef_sampling_covariance_`` or ``coef_covariance_``.

        Returns
        -------
        intervals : ndarray of shape (n_features, 2)
            Lower and upper ends (binary classifier: for the one row of ``coef_``; multinomial
            logistic regression: shape ``(n_classes, n_features, 2)``, the reference row
            ``coef_[0] = 0`` getting ``[0, 0]``).
        """
        check_is_fitted(self, "coef_covariance_")
        if covariance == "posterior":
            C = self.coef_covariance_
        elif covariance == "sampling":
            C = self.coef_sampling_covariance_
        else:
            raise ValueError(f"covariance must be 'posterior' or 'sampling', got {covariance!r}.")
        warn_if_swapped_coverage(alpha, "alpha")
        coef = np.asarray(self.coef_, dtype=np.float64)
        if covariance == "sampling" and self._fitted_param("prior_mean_method") == "offset":
            # the Newton step uses the inverse information itself (Poisson dispersion='pearson' scales C only
            # for the width)
            pearson = getattr(self, "_fit_params", {}).get("dispersion", getattr(self, "dispersion", None)) == "pearson"
            centre = getattr(self, "_centre_covariance", None)
            coef = self._debiased(coef, C / self.dispersion_ if pearson else C if centre is None else centre)
        if coef.ndim == 2 and coef.shape[0] == 1:
            return wald_interval(coef[0], C, alpha)
        if coef.ndim == 2:  # multinomial: the reference row is fixed at 0
            rest = wald_interval(coef[1:], C, alpha)
            return np.concatenate([np.zeros((1,) + rest.shape[1:]), rest])
        return wald_interval(coef, C, alpha)


    def _fitted_param(self, name):
        """The value the parameter ``name`` had at the last fit: a fitted estimator answers from its fit, so
        ``set_params`` after ``fit`` changes nothing until the next fit (a pickle from before these values were
        kept: the current value)."""
        return getattr(self, "_fit_params", {}).get(name, getattr(self, name))

    def _debiased(self, coef, C):
        """One Newton step of the data's own negative log-likelihood from the MAP,
        ``coef + C P (coef - prior_mean)`` (``C`` = ``coef_sampling_covariance_``, ``P`` =
        ``prior_precision_``): the prior's pull removed to first order, so the sampling interval
        is centred like the unpenalised fit's Wald interval.  Same shape as ``coef``."""
        flat = coef[1:].ravel() if coef.ndim == 2 and coef.shape[0] > 2 else coef.ravel()
        with np.errstate(over="ignore", invalid="ignore"):
            # parameters the data do not identify have infinite entries (their interval is the whole
            # line whatever the centre); the others' rows are finite and give the step exactly
            step = np.where(np.isfinite(C), C, 0.0) @ (self.prior_precision_ @ (flat - self.prior_mean_))
        out = coef.copy()
        if coef.ndim == 2 and coef.shape[0] > 2:
            out[1:] = (flat + step).reshape(coef[1:].shape)
        else:
            out = (flat + step).reshape(coef.shape)
        return out


def _half_step(res, data_inv, precision, mean, fit_intercept):
    """``(coef, intercept)`` halfway along the Newton step of the data's negative log-likelihood from the MAP
    ``res``: ``theta + 0.5 * H^-1 [P (coef - mean), 0]`` (``H^-1`` = ``data_inv``, the intercept unpenalised;
    entries of parameters the data do not identify, ``+-inf``, taken as 0: their intervals are the whole line)."""
    coef = np.ravel(res.coef)
    pull = precision @ (coef - mean) if np.ndim(precision) == 2 else precision * (coef - mean)
    grad = np.concatenate([pull, np.zeros(data_inv.shape[0] - coef.size)])
    with np.errstate(over="ignore", invalid="ignore"):
        step = 0.5 * (np.where(np.isfinite(data_inv), data_inv, 0.0) @ grad)
    intercept = np.asarray(res.intercept, dtype=np.float64) + (step[coef.size:] if fit_intercept else 0.0)
    return (coef + step[:coef.size]).reshape(np.shape(res.coef)), intercept


def _check_dominated_columns(X, sample_weight, stacklevel):
    """ValueError naming X where one row holds a column's whole spread to rounding; a warning where nearly.

    The fit runs on columns standardised by their standard deviation: a row 10¹⁵⁰ times the others
    made every other row about 0 after centring (their digits rounded away), and the fit returned
    ``coef_ ~ 1e-154`` and a constant prediction without a word (scikit-learn's Ridge: coefficients
    of 1e-132 at 1e150, "array must not contain infs or NaNs" at 1e200).
    """
    ratio = dominated_columns_below(X, sample_weight, _DOMINATED_WARN)  # exact where it may be below; inf elsewhere
    with np.errstate(invalid="ignore"):
        worst = int(np.nanargmin(ratio)) if np.any(np.isfinite(ratio)) else None
    if worst is None or ratio[worst] >= _DOMINATED_WARN:
        return
    what = (f"X: in column {worst} one row holds nearly all the spread (the other rows vary by "
            f"{ratio[worst]:.1e} of the column's standard deviation)")
    if ratio[worst] < _DOMINATED_REFUSE:
        raise ValueError(
            what + ": after centring and scaling the column in float64 the other rows keep fewer than "
            "4 significant digits, so the fit could not use them. Rescale that row (or the column, "
            "e.g. by a log or rank transform), or remove it."
        )
    warnings.warn(
        what + ": the fit runs on standardised columns, where the other rows are about 0 and the prior "
        "dominates them; the coefficients mostly reflect that one row. Consider rescaling that row "
        "or the column (e.g. a log or rank transform).",
        UserWarning, stacklevel=stacklevel,
    )


#: the most rows drawn in all (m * n): each row used this many times on average, or _MAX_DRAWN if larger
_MAX_USES = 100
_MAX_DRAWN = 10**6


class _BaseSubsampledPrior(BaseEstimator):
    """Shared machinery of the SubsampledPrior* estimators (Algorithm 1 + exact MAP)."""

    _parameter_constraints = {
        "n_subsamples": [
            StrOptions({"auto"}),
            IntegerInterval(2, None, closed="left"),
            Interval(RealNotInt, 0, None, closed="neither"),
        ],
        "subsample_size": [
            StrOptions({"auto"}),
            IntegerInterval(2, None, closed="left"),
            Interval(RealNotInt, 0, 1, closed="neither"),
        ],
        "covariance": [StrOptions({"full", "diag"})],
        "covariance_scaling": [StrOptions({"subsample_size", "jackknife"}), None],
        "shrinkage": [StrOptions({"auto", "ledoit-wolf"}), Interval(Real, 0, 1, closed="both"), None],
        "prior_scale": [StrOptions({"loo", "paper"})],
        "penalty": [StrOptions({"half", "full"})],
        "prior_mean_method": [StrOptions({"offset", "extra_column"})],
        "fit_intercept": ["boolean"],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [IntegerInterval(1, None, closed="left")],
        "n_jobs": [IntegerInterval(None, None, closed="neither"), None],
        "random_state": ["random_state", np.random.Generator],
    }

    # 'auto' rule of thumb (overridden per loss): n = max(fraction * N, rows_per_param * p),
    # m = max(N / n, min_subsamples)
    _auto_fraction = 0.01
    _auto_rows_per_param = 2.0
    _auto_min_subsamples = 20
    _auto_events_per_param = 0  # classifiers: rows of the rarest class per parameter

    def __init__(
        self,
        *,
        n_subsamples="auto",
        subsample_size="auto",
        covariance="full",
        covariance_scaling=None,
        shrinkage="auto",
        prior_scale="loo",
        penalty="half",
        prior_mean_method="offset",
        fit_intercept=True,
        tol=1e-8,
        max_iter=100,
        n_jobs=None,
        random_state=None,
    ):
        self.prior_scale = prior_scale
        self.n_subsamples = n_subsamples
        self.subsample_size = subsample_size
        self.covariance = covariance
        self.covariance_scaling = covariance_scaling
        self.shrinkage = shrinkage
        self.penalty = penalty
        self.prior_mean_method = prior_mean_method
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.n_jobs = n_jobs
        self.random_state = random_state

    # ---- the algorithm -------------------------------------------------------------

    def _plan(self, n_params_per_fit, sample_weight, X, labels=None):
        """Resolve the sizes; every draw below comes from one generator (determinism)."""
        pool = np.flatnonzero(sample_weight > 0)
        n_rows = pool.size
        auto_n = isinstance(self.subsample_size, str)
        min_rows = 0
        if auto_n:
            rows = pool if pool.size <= 20000 else pool[:: pool.size // 20000 + 1]
            min_rows = _rare_level_rows(X[rows], None if labels is None else labels[rows])
            if labels is not None and self._auto_events_per_param:
                # classifiers: about 10 events (rows of the rarest class) per parameter
                counts = np.bincount(labels[pool])
                share = counts[counts > 0].min() / pool.size
                min_rows = max(min_rows, math.ceil(self._auto_events_per_param * n_params_per_fit / share))
        n, m, degraded = _resolve_sizes(
            n_rows, n_params_per_fit, self.subsample_size, self.n_subsamples,
            fraction=self._auto_fraction, rows_per_param=self._auto_rows_per_param,
            min_subsamples=self._auto_min_subsamples, min_rows=min_rows, penalised=self.prior_scale != "paper",
        )
        if m * n > max(_MAX_USES * n_rows, _MAX_DRAWN):
            raise ValueError(
                f"n_subsamples={self.n_subsamples!r} gives m = {m} subsamples of n = {n} rows, {m * n} drawn rows "
                f"in all: more than max({_MAX_USES} N, {_MAX_DRAWN}) = {max(_MAX_USES * n_rows, _MAX_DRAWN)} with "
                f"N = {n_rows} rows (each row in {_MAX_USES} subsamples on average), where more subsamples only "
                "cost time and memory. Use a smaller n_subsamples (the default 'auto' uses each row about once)."
            )
        return dict(pool=pool, n_rows=n_rows, n=n, m=m, degraded=degraded, auto_n=auto_n,
                    n_params=n_params_per_fit, rng=check_generator(self.random_state))

    def _draw(self, plan):
        """Row indices of all ``m`` subsamples, drawn up front (so ``n_jobs`` cannot matter)."""
        rng, pool, n = plan["rng"], plan["pool"], plan["n"]
        return [np.sort(pool[rng.choice(plan["n_rows"], size=n, replace=False)]) for _ in range(plan["m"])]

    def _grow(self, plan, results, X, targets, loss):
        """'auto' size only: double ``n`` (up to ``N // 2``) when over a quarter of the fits of a
        target separated, unless all the rows of that target are separated themselves (then no
        subsample size helps)."""
        cap = max(plan["n_params"] + 1, plan["n_rows"] // 2)
        if self.prior_scale != "paper" or not plan["auto_n"] or plan["n"] >= cap:
            return False
        pool = plan["pool"]
        grow = False
        for res, t in zip(results, targets):
            statuses = [r[2] for r in res]
            if statuses.count("separated") > 0.25 * len(statuses):
                if mle_exists(X[pool], t[pool], loss, fit_intercept=self.fit_intercept):
                    grow = True
                    break
                plan["full_separated"] = True
        if not grow:
            return False
        plan["n"] = min(2 * plan["n"], cap)
        if isinstance(self.n_subsamples, str):
            plan["m"] = max(math.ceil(plan["n_rows"] / plan["n"]), self._auto_min_subsamples)
        elif not isinstance(self.n_subsamples, Integral):
            plan["m"] = max(2, math.ceil(float(self.n_subsamples) * plan["n_rows"] / plan["n"]))
        return True

    def _subsample_fits(self, X, y, sample_weight, loss, indices):
        """Unregularised fits of all subsamples (in parallel with joblib when n_jobs > 1)."""
        null_intercept = loss.null_intercept(y, sample_weight)
        if np.all(sample_weight == 1.0):
            sample_weight = None  # unit weights: the solver's faster unweighted path
        n_jobs = effective_n_jobs(self.n_jobs)
        start = fallback_start = None
        # 'loo': the unit prior N(0, I) per mean unit of weight (a weight scale changes nothing)
        penalised = False if self.prior_scale == "paper" else float(
            np.mean(sample_weight) if sample_weight is not None else 1.0)
        if not loss.constant_hessian:
            # pilot: the first subsample's fit, computed here so that every subsample (in any
            # worker) starts from the same point whatever n_jobs is
            first = _fit_subsample_batch(X, y, sample_weight, indices[:1], loss, self.fit_intercept, self.tol,
                                         self.max_iter, null_intercept, penalised=penalised)[0]
            if first[2] == "ok":
                start = (first[0], first[1])
            elif first[2] == "separated":
                fallback_start = (first[0], first[1])
        args = (loss, self.fit_intercept, self.tol, self.max_iter, null_intercept, start, fallback_start, penalised)
        if n_jobs == 1 or len(indices) == 1:
            return _fit_subsample_batch(X, y, sample_weight, indices, *args)
        batches = [b for b in np.array_split(np.arange(len(indices)), n_jobs) if b.size]
        parts = Parallel(n_jobs=self.n_jobs)(
            delayed(_fit_subsample_batch)(X, y, sample_weight, [indices[i] for i in b], *args)
            for b in batches
        )
        return [r for part in parts for r in part]

    def _penalty_scale(self, X, y, sample_weight, indices, results, y_scale):
        """Factor between the prior precision and the penalty matrix of the MAP objective.

        1 for losses that are negative log-likelihoods without a dispersion parameter
        (logistic, Poisson) and for the squared hinge loss; the ridge regressor overrides it
        with the noise variance (in the standardised units of ``y``, whose scale is ``y_scale``).
        """
        return 1.0

    def _svm_candidates(self, X, y, sample_weight, loss, coefs, intercepts, indices, n, n_rows):
        """``prior_scale='loo'``, linear SVM: the candidate path of one problem (``_tuning.svm_path``)."""
        use_subsamples = n <= _SUBSAMPLE_MAX_SHARE * n_rows
        cov0 = _subsample_prior(coefs, covariance=self.covariance, scaling=None, shrinkage=self.shrinkage, n=n,
                                n_rows=n_rows)[1] if use_subsamples else np.eye(coefs.shape[1])
        return svm_path(X, y, sample_weight, loss, self.fit_intercept, coefs, indices, cov0, self.tol,
                        self.max_iter, intercepts.mean(axis=0) if self.fit_intercept else None, use_subsamples,
                        float(np.mean(sample_weight)), penalise_intercept=self.prior_mean_method == "offset")

    def _select_prior(self, X, y, sample_weight, loss, coefs, intercepts, indices, n, n_rows, penalty_scale,
                      weight_unit, forced=None, per_weight=None):
        """``prior_scale='loo'``: the prior ``N(c, tau Sigma)`` with the smallest leave-one-out risk
        (see ``_tuning``).  Returns ``(mean, cov, precision, shrinkage, penalty_scale, choice, start)``
        in the units of the prior (the data term's weights are ``sample_weight``, divided by
        ``weight_unit``; the prior's moments are reported per ``1 / per_weight`` units of weight, see
        :meth:`_prior_and_map`)."""
        per_weight = 1.0 / weight_unit if per_weight is None else per_weight
        start = closed = None
        # the subsample covariance and mean are candidates only when a subsample holds at most a
        # quarter of the rows: fitted on most rows, they follow those rows' noise and their
        # leave-one-out risk is optimistic (measured, n/N = 0.68-0.98: the subsample covariance
        # 1.5x and the subsample mean up to 2x the test error of the identity and 0)
        use_subsamples = n <= _SUBSAMPLE_MAX_SHARE * n_rows
        if use_subsamples:
            _, cov0, _, used = _subsample_prior(coefs, covariance=self.covariance, scaling=None,
                                                shrinkage=self.shrinkage, n=n, n_rows=n_rows)
        else:  # the subsample covariance is no candidate: not estimated, nothing shrunk
            cov0, used = np.eye(coefs.shape[1]), 0.0
        # the prior's scale is searched relative to the mean weight, so multiplying every weight
        # by a constant changes nothing (the objective carries the weights divided by weight_unit)
        wbar = float(np.mean(sample_weight))
        if isinstance(loss, SquaredLoss):
            sel = select_ridge(X, y, sample_weight, self.fit_intercept, coefs, indices, cov0, use_subsamples,
                               rule="evidence" if self.prior_scale == "evidence" else "loo")
            sigma2 = penalty_scale if getattr(self, "noise_variance", "auto") != "auto" else sel["noise_variance"]
            # objective sum_i w_i r_i^2 / 2 + lam / 2 (b - c)^T Sigma^-1 (b - c); times weight_unit / sigma^2
            # it is the negative log posterior: prior covariance sigma^2 / (weight_unit * lam) * Sigma
            num, den, obj = (sigma2, per_weight), (sel["lam"],), sel["lam"]
            penalty_scale = sigma2
            if self.prior_mean_method == "offset":
                # the MAP fit and its inverse Hessians from the eigendecomposition that chose the
                # prior (no Newton fit, no further matrix inversion)
                closed = ridge_map(X, y, sample_weight, self.fit_intercept, sel["st"]) + (1, True)
        elif isinstance(loss, (SquaredHingeLoss, HingeLoss)):
            offset = self.prior_mean_method == "offset"
            sel = forced if forced is not None else select_svm(
                X, y, sample_weight, loss, self.fit_intercept, coefs, indices, cov0, self.tol, self.max_iter,
                intercepts.mean(axis=0) if self.fit_intercept else None, use_subsamples, wbar,
                penalise_intercept=offset)
            num, den, obj = (sel["tau"], per_weight), (wbar,), wbar / sel["tau"]
            start = (sel["coef"], sel["intercept"])
            if offset:  # the fit at the chosen prior is the MAP fit (the intercept possibly penalised)
                closed = (np.ravel(sel["coef"]), np.ravel(sel["intercept"]), None, None, sel["n_iter"], sel["converged"])
        else:
            sel = select_glm(X, y, sample_weight, loss, self.fit_intercept, coefs, indices, cov0, self.tol,
                             self.max_iter, intercepts.mean(axis=0) if self.fit_intercept else None, use_subsamples,
                             wbar, evidence=self.prior_scale == "evidence",
                             near_separated=self.prior_scale != "loo-log-loss")
            # objective sum_i w_i L_i + wbar / (2 tau) (b - c)^T Sigma^-1 (b - c), times weight_unit
            num, den, obj = (sel["tau"], per_weight), (wbar,), wbar / sel["tau"]
            start = (sel["coef"], sel["intercept"])
        S = sel["shape"]
        if sel["shape_name"] == "identity":
            Sinv = np.eye(S.shape[0])
        else:
            Sinv = linalg.cho_solve(linalg.cho_factor(S, lower=True), np.eye(S.shape[0]))
            Sinv = 0.5 * (Sinv + Sinv.T)
        # in the units of the prior (extreme weights may put them beyond float64: inf / 0 there only)
        cov = rescale(S, num=num, den=den)
        precision = rescale(Sinv, num=den, den=num)
        scale = float(rescale(1.0, num=num, den=den))
        choice = dict(shape=sel["shape_name"], mean=sel["mean_name"], scale=scale,
                      loo_risk=float(sel["risk"]) * weight_unit, at_grid_boundary=bool(sel["boundary"]))
        if "scale_rule" in sel and getattr(self, "_evidence", False):
            choice["scale_rule"] = sel["scale_rule"]
        if "intercept_penalised" in sel:
            choice["intercept"] = ("penalised" if sel["intercept_penalised"] else "free") if self.fit_intercept \
                else "none"
        return sel["mean"], cov, precision, used, penalty_scale, choice, start, obj * Sinv, closed

    def _prior_and_map(self, X, y, sample_weight, loss, results, n, n_rows, penalty_scale=1.0, weight_unit=1.0,
                       indices=None, forced=None, per_weight=None):
        """Prior from the subsample fits, then the MAP fit on all rows.

        The objective carries the weights ``sample_weight`` (the user's divided by ``weight_unit``); the
        covariances are reported per ``1 / per_weight`` units of those weights: ``1 / weight_unit`` (the user's
        units: weights as frequencies or exposures) where the likelihood's variance is known given the weights
        (``_absolute_weights``) and for ``prior_scale='paper'``; their mean (per mean unit of the user's weights,
        invariant under ``w -> c w``) for the ridge with an estimated noise variance.  The chosen priors' fit is
        invariant under ``w -> c w`` either way."""
        per_weight = 1.0 / weight_unit if per_weight is None else per_weight
        coefs = np.vstack([r[0] for r in results])
        intercepts = np.vstack([r[1] for r in results])
        choice = start = objective_precision = closed = None
        if self.prior_scale == "paper":
            mean, cov, precision, used = _subsample_prior(
                coefs, covariance=self.covariance, scaling=self.covariance_scaling, shrinkage=self.shrinkage,
                n=n, n_rows=n_rows,
            )
            factor = 2.0 if self.penalty == "full" else 1.0
        else:
            mean, cov, precision, used, penalty_scale, choice, start, objective_precision, closed = self._select_prior(
                X, y, sample_weight, loss, coefs, intercepts, indices, n, n_rows, penalty_scale, weight_unit, forced,
                per_weight)
            factor = 1.0  # the scale is chosen: 'penalty' and 'covariance_scaling' would only be undone
        # the data term carries the weights divided by weight_unit (normalise_weights): so does the prior
        weight = penalty_scale * factor / weight_unit
        P_obj = weight * precision if objective_precision is None else objective_precision
        kw = dict(sample_weight=None if np.all(sample_weight == 1.0) else sample_weight,
                  fit_intercept=self.fit_intercept,
                  intercept_init=intercepts.mean(axis=0) if self.fit_intercept else None,
                  tol=self.tol, max_iter=self.max_iter)
        if start is not None and self.fit_intercept:
            kw["intercept_init"] = start[1]
        extra = centre_cov = None
        if self.prior_mean_method == "extra_column":
            # the dissertation's affine transformation: beta = u + c * beta_0 with the column
            # X beta_0 appended and (u, c) penalised by u^T S^-1 u + c^2 (prior mean 0)
            d = X.shape[1]
            Xa = np.hstack([X, (X @ mean)[:, None]])
            P = np.zeros((d + 1, d + 1))
            P[:d, :d] = precision if objective_precision is None else P_obj / weight
            P[d, d] = 1.0
            res = fit_map(Xa, y, loss, prior_mean=np.zeros(d + 1), prior_precision=weight * P,
                          coef_init=np.append(np.zeros(d), 1.0), **kw)
            extra = float(res.coef[0, d])
            if self._laplace:
                # Laplace approximation in (u, c, b0), mapped linearly to beta = u + c * beta_0
                H = posterior_hessian(Xa, y, loss, res.coef, res.intercept, sample_weight=kw["sample_weight"],
                                      prior_precision=weight * P, fit_intercept=self.fit_intercept)
                J = np.zeros((d + int(self.fit_intercept), d + 1 + int(self.fit_intercept)))
                J[:d, :d] = np.eye(d)
                J[:d, d] = mean
                if self.fit_intercept:
                    J[d, d + 1] = 1.0
                theta_cov = J @ inverse_spd(H) @ J.T
            res.coef = res.coef[:, :d] + extra * mean[None, :]
        elif closed is not None:
            # the squared loss: the MAP fit in closed form (_tuning.ridge_map); the SVMs: the fit at the
            # chosen prior from the search (_tuning.select_svm)
            coef, intercept, theta_cov, data_inv, n_iter, converged = closed
            res = MAPResult(coef=coef[None, :], intercept=intercept if self.fit_intercept else np.zeros(1),
                            n_iter=n_iter, converged=converged, objective=float("nan"))
        else:
            res = fit_map(X, y, loss, prior_mean=mean, prior_precision=P_obj,
                          coef_init=mean if start is None else start[0], **kw)
            if self._laplace:
                # wide data under an isotropic prior: H^-1 from the n x n system (_glm._dual), else dense
                theta_cov = _dual.posterior_inverse(X, y, loss, res.coef, res.intercept,
                                                    sample_weight=kw["sample_weight"], prior_precision=P_obj,
                                                    fit_intercept=self.fit_intercept)
                if theta_cov is None:
                    H = posterior_hessian(X, y, loss, res.coef, res.intercept, sample_weight=kw["sample_weight"],
                                          prior_precision=P_obj, fit_intercept=self.fit_intercept)
                    theta_cov = inverse_spd(H)
        if self._laplace and closed is not None:
            theta_cov = theta_cov * (penalty_scale * per_weight)
            if data_inv is None:  # a rank-deficient design under a non-identity shape
                data_inv = inverse_information(posterior_hessian(X, y, loss, res.coef, res.intercept,
                                                         sample_weight=kw["sample_weight"],
                                                         fit_intercept=self.fit_intercept), X.shape[0])
            sampling_cov = data_inv * (penalty_scale * per_weight)
        elif self._laplace:
            # the objective is (sum_i w_i L_i / sigma^2 + prior) * sigma^2 / weight_unit: the negative
            # log posterior is the objective times weight_unit / penalty_scale (then per 1 / per_weight units)
            theta_cov = theta_cov * (penalty_scale * per_weight)
            # the observed information of the data alone at the MAP (the prior left out)
            data_inv = self._data_inverse(X, y, loss, res.coef, res.intercept, kw["sample_weight"])
            if (_SAMPLING_INFORMATION == "midpoint" and isinstance(loss, LogisticLoss)
                    and self.prior_mean_method == "offset"):
                # the centre's Newton step keeps the information at the MAP; the width takes it halfway along
                # that step (review HSR2: at the MAP it is over-stated, at the step's end under-stated)
                centre_cov = data_inv * (penalty_scale * per_weight)
                data_inv = self._data_inverse(X, y, loss, *_half_step(res, data_inv, P_obj, mean, self.fit_intercept),
                                              kw["sample_weight"])
            sampling_cov = data_inv * (penalty_scale * per_weight)
        else:
            theta_cov = sampling_cov = None
        return dict(
            extra_column_coef=extra,
            coef=res.coef, intercept=res.intercept, n_iter=res.n_iter, converged=res.converged,
            prior_mean=mean, prior_covariance=cov, prior_precision=precision, shrinkage=used,
            subsample_coefs=coefs, statuses=[r[2] for r in results], penalty_scale=penalty_scale,
            theta_covariance=theta_cov, sampling_covariance=sampling_cov, prior_choice=choice,
            centre_covariance=centre_cov,
        )

    def _data_inverse(self, X, y, loss, coef, intercept, sample_weight):
        """The inverse observed information of the data alone at ``(coef, intercept)`` (the rank rule's
        ``+-inf`` for parameters the data do not identify), standardised units, coefficients then intercepts."""
        data_inv = _dual.information_inverse(X, y, loss, coef, intercept, sample_weight=sample_weight,
                                             fit_intercept=self.fit_intercept, rank_tolerance=rank_tolerance)
        if data_inv is None:
            H = posterior_hessian(X, y, loss, coef, intercept, sample_weight=sample_weight,
                                  fit_intercept=self.fit_intercept)
            data_inv = inverse_information(H, X.shape[0])
        return data_inv

    #: standardise the target too (the squared loss); class labels and counts are left alone
    _scale_target = False

    def _absolute_weights(self):
        """Whether the covariances read ``sample_weight`` in its own units (frequencies, exposures): True where the
        likelihood's variance is known given the weights (logistic, Poisson -- whose ``dispersion='pearson'`` is
        estimated with the same weights, so its intervals do not depend on their scale), so that the information
        is :math:`\\sum_i w_i I_i` (review HSR, F1).  The fit does not depend on the weights' scale (the
        Poisson regressor fits the counts, the exposures over their mean: there a factor on the weights at fixed
        ``y`` is more exposure)."""
        return True

    #: the loss is a negative log-likelihood: the Laplace approximation at the MAP is a posterior
    _laplace = True

    def _fit_problems(self, X, targets, sample_weight, loss, n_params, labels=None, stacklevel=_STACKLEVEL):
        """Algorithm 1 for one or more targets sharing the subsamples (one-vs-rest).

        Runs in standardised units (columns of ``X`` centred -- with an intercept -- and divided
        by their weighted standard deviations; the ridge target likewise), so that every
        tolerance of the solver is relative to the data's own scale; returns the results in
        the units of the data.
        """
        keep = sample_weight > 0
        if not keep.all():  # rows without weight are never drawn and add nothing to the MAP fit
            X, sample_weight = X[keep], sample_weight[keep]
            targets = [t[keep] for t in targets]
            labels = None if labels is None else labels[keep]
        # weights of any overall size: scale them (exactly, by a power of two) so the largest is in
        # [1, 2) and scale the prior's weight alike -- the same minimisers, but the solver's
        # absolute tolerances and the weighted sums now see weights of order 1 (unit weights are
        # left as they are)
        sample_weight, weight_unit = normalise_weights(sample_weight)
        # where the variance is known given the weights (logistic, Poisson, ridge with a given noise_variance) and
        # under the fixed 'paper' prior, the covariances are in the user's units of weight (frequencies or
        # exposures: the information is sum_i w_i ...); where a dispersion is estimated (the ridge's 'auto' noise
        # variance), per mean unit of weight (the estimate absorbs the weights' scale).  1.0 for unit weights.
        per_weight = 1.0 / weight_unit if self.prior_scale == "paper" or self._absolute_weights() \
            else float(np.mean(sample_weight))
        _check_dominated_columns(X, sample_weight, stacklevel)
        if self._scale_target:
            Xs, ys, st = standardise(X, targets[0], sample_weight, fit_intercept=self.fit_intercept, scale_y=True)
            targets = [ys]
        else:
            Xs, _, st = standardise(X, targets[0], sample_weight, fit_intercept=self.fit_intercept, scale_y=False)
        plan = self._plan(n_params, sample_weight, Xs, labels)
        while True:
            indices = self._draw(plan)
            results = [self._subsample_fits(Xs, t, sample_weight, loss, indices) for t in targets]
            if not self._grow(plan, results, Xs, targets, loss):
                break
        forced = [None] * len(targets)
        if self.prior_scale != "paper" and isinstance(loss, (SquaredHingeLoss, HingeLoss)) and len(targets) > 1:
            # one-vs-rest SVMs: one prior for all classes, by the leave-one-out error of the prediction
            paths = [self._svm_candidates(Xs, t, sample_weight, loss, np.vstack([f[0] for f in r]),
                                          np.vstack([f[1] for f in r]), indices, plan["n"], plan["n_rows"])
                     for t, r in zip(targets, results)]
            forced = select_svm_ovr(paths, np.argmax(np.stack(targets, axis=1), axis=1), sample_weight)
        outs = [self._prior_and_map(Xs, t, sample_weight, loss, r, plan["n"], plan["n_rows"],
                                    self._penalty_scale(Xs, t, sample_weight, indices, r, st.y_scale), weight_unit,
                                    indices, f, per_weight)
                for t, r, f in zip(targets, results, forced)]
        self._report([s for o in outs for s in o["statuses"]], plan, all(o["converged"] for o in outs),
                     "a zero-count pattern" if isinstance(loss, PoissonLoss) else "separation",
                     stacklevel=stacklevel)
        self.n_subsamples_ = plan["m"]
        self.subsample_size_ = plan["n"]
        # what the predictive and interval methods need of the parameters, as they were at this fit
        self._fit_params = dict(fit_intercept=bool(self.fit_intercept), prior_mean_method=self.prior_mean_method)
        wide = _dual.use_dual(*Xs.shape, loss.n_outputs) or _multidual.use_multi_dual(*Xs.shape, loss.n_outputs)
        return [_to_data_units(o, st, loss.n_outputs, structured=wide) for o in outs]

    def _report(self, statuses, plan, converged, what, stacklevel=5):
        """Warn once per fit about fallbacks, rank deficiency and non-convergence."""
        n_sep = statuses.count("separated")
        n_rank = statuses.count("rank_deficient")
        n_nc = statuses.count("not_converged")
        self.n_separated_subsamples_ = n_sep
        parts = []
        if n_sep:
            parts.append(
                f"{n_sep} of {len(statuses)} unregularised subsample fits do not exist ({what}); they were "
                "replaced by fits with a unit Gaussian prior N(0, I) (the intercept centred on the "
                "intercept-only fit)"
            )
        if n_rank:
            parts.append(f"{n_rank} subsample fits were rank-deficient (minimum-norm-like solution used)")
        if n_nc:
            parts.append(f"{n_nc} subsample fits did not converge within max_iter={self.max_iter}")
        if parts:
            if self.prior_scale != "paper":
                # the penalised fits always exist: only the iteration limit can stop them
                hint = f" Increase max_iter (now {self.max_iter})"
            elif plan["degraded"]:
                hint = " The data have too few rows for subsamples larger than the number of parameters"
            elif plan.get("full_separated"):
                hint = f" All the rows show {what} too, so no subsample size avoids it"
            elif plan["auto_n"] and plan["n"] >= max(plan["n_params"] + 1, plan["n_rows"] // 2):
                hint = (f" The 'auto' subsample size is at its cap N // 2 = {plan['n']}; the data themselves "
                        f"probably show {what}")
            else:
                hint = f" Consider a larger subsample_size (now {plan['n']})"
            warnings.warn("; ".join(parts) + "." + hint + ".", SubsampleFitWarning, stacklevel=stacklevel)
        if not converged:
            warnings.warn(
                f"The MAP fit did not converge within max_iter={self.max_iter} iterations.",
                ConvergenceWarning, stacklevel=stacklevel,
            )

    def _fit_single(self, X, y, sample_weight, loss, labels=None):
        """Algorithm 1 for a single-problem estimator; stores the prior attributes."""
        p = loss.n_outputs * (X.shape[1] + int(self.fit_intercept))
        out = self._fit_problems(X, [y], sample_weight, loss, p, labels)[0]
        self.prior_mean_ = out["prior_mean"]
        self.prior_covariance_ = out["prior_covariance"]
        self.prior_precision_ = out["prior_precision"]
        self.shrinkage_ = out["shrinkage"]
        self.subsample_coefs_ = out["subsample_coefs"]
        self.n_iter_ = out["n_iter"]
        self.prior_choice_ = out["prior_choice"]
        if out.get("coef_covariance") is not None:
            self.coef_covariance_ = out["coef_covariance"]
            self._theta_covariance = out["theta_covariance"]
            # the same in the standardised units X_s = (X - x_offset) / x_scale (coefficients, then intercepts)
            self._theta_covariance_std = out["theta_covariance_std"]
            self._x_standardisation = (out["x_offset"], out["x_scale"])
            self.coef_sampling_covariance_ = out["coef_sampling_covariance"]
            # the covariance of the centre's Newton step where it differs from coef_sampling_covariance_
            self._centre_covariance = out.get("coef_centre_covariance")
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags
