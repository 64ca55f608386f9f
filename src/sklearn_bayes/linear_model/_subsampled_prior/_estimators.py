"""Hyperparameter tuning by subsampling: GLMs with a Gaussian prior estimated from subsamples.

Algorithm 1 of S. Aydın, *Bayesian Methods for Tackling Complex Inferential Problems in Data
Science* (PhD dissertation, Sabancı University, 2024), Chapter 2: fit the unregularised model on
``m`` random subsamples of ``n`` rows, use the mean and covariance of the subsample coefficients
as the mean and covariance of a Gaussian prior, and return the exact MAP fit on all the data.
"""

import math
import warnings
from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from scipy import linalg
from scipy.special import expit, log_softmax, softmax
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.covariance import ledoit_wolf_shrinkage
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.metrics import d2_tweedie_score
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils import check_array
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from sklearn_bayes.exceptions import SubsampleFitWarning
from sklearn_bayes.utils import IntegerInterval, check_generator, transactional
from sklearn_bayes._glm._base import (
    LinearPredictorMixin,
    check_consistent_rows,
    check_features,
    naming,
    normalise_weights,
    rescale,
    standardise,
    validate_regression_data,
)
from sklearn_bayes._glm._map import (
    HingeLoss,
    LogisticLoss,
    MultinomialLoss,
    PoissonLoss,
    SquaredHingeLoss,
    SquaredLoss,
    fit_map,
    mle_exists,
)

__all__ = [
    "SubsampleFitWarning",
    "SubsampledPriorLinearSVC",
    "SubsampledPriorLogisticRegression",
    "SubsampledPriorPoissonRegressor",
    "SubsampledPriorRidge",
]

#: condition number of the subsample correlation matrix above which shrinkage='auto' shrinks
_MAX_CONDITION = 1e10
#: relative floor of the subsample coefficient variances (a zero variance would be an
#: infinite prior precision; the floor makes it a very large one)
_VARIANCE_FLOOR = 1e-10
#: 'auto' subsample size: expected number of rows of the rarest level of a column (or class)
_RARE_LEVEL_COUNT = 5
#: warnings of fit point at the caller: _report, _fit_problems, _fit_single, fit and its two
#: decorators (transactional, _fit_context)
_STACKLEVEL = 7


# --------------------------------------------------------------------------------------
# free functions: sizes, subsample fits, the prior
# --------------------------------------------------------------------------------------


def _rare_level_rows(X, labels=None, count=_RARE_LEVEL_COUNT):
    """Rows needed for ``count`` expected occurrences of the rarest level.

    For every non-constant column the share of rows that differ from its more frequent
    extreme value (e.g. the share of ones of a 0/1 dummy; about 1 for a continuous column) and,
    for classifiers, the share of the rarest class.  Returns ``ceil(count / min share)``.
    """
    shares = []
    if X.shape[0]:
        lo = (X == X.min(axis=0)).mean(axis=0)
        hi = (X == X.max(axis=0)).mean(axis=0)
        share = 1.0 - np.maximum(lo, hi)
        shares.extend(share[share > 0].tolist())
    if labels is not None and labels.size:
        counts = np.bincount(labels)
        shares.append(counts[counts > 0].min() / labels.size)
    return math.ceil(count / min(shares)) if shares else 0


def _resolve_sizes(n_rows, n_params, subsample_size, n_subsamples, *, fraction, rows_per_param, min_subsamples,
                   min_rows=0):
    """Return ``(n, m, degraded)``: the subsample size, the number of subsamples and whether
    the ``'auto'`` size had to fall below ``n_params + 1`` (data too small)."""
    if n_rows < 2:
        raise ValueError(
            f"Found n_samples={n_rows} row(s) with positive sample weight; subsampling needs at least 2."
        )
    degraded = False
    if isinstance(subsample_size, str):  # 'auto'
        n = max(math.ceil(fraction * n_rows), math.ceil(rows_per_param * n_params), n_params + 1, min_rows)
        n = min(n, max(n_params + 1, n_rows // 2), n_rows - 1)
        n = max(n, 1)
        degraded = n <= n_params
    else:
        if isinstance(subsample_size, Integral):
            n = int(subsample_size)
        else:
            n = math.ceil(float(subsample_size) * n_rows)
        if n >= n_rows:
            raise ValueError(
                f"subsample_size={subsample_size!r} means {n} rows per subsample, but only {n_rows} rows "
                "(with positive sample weight) are available: the subsample size must be smaller than "
                "the number of rows."
            )
        if n <= n_params:
            raise ValueError(
                f"subsample_size={subsample_size!r} means {n} rows per subsample, which must exceed the "
                f"number of parameters of one unregularised fit ({n_params}: features plus intercept) for "
                "that fit to exist."
            )
    if isinstance(n_subsamples, str):  # 'auto': each row used about once (m ~ N / n)
        m = max(math.ceil(n_rows / n), min_subsamples)
    elif isinstance(n_subsamples, Integral):
        m = int(n_subsamples)
    else:  # a float: expected number of times each row is used, m = coverage * N / n
        m = max(2, math.ceil(float(n_subsamples) * n_rows / n))
    return n, m, degraded


def _fit_one_subsample(X, y, w, loss, fit_intercept, tol, max_iter, null_intercept, start=None,
                       fallback_start=None):
    """Unregularised fit on one subsample, with the documented fallback.

    ``start`` is an optional ``(coef, intercept)`` starting point (a pilot fit shared by all
    subsamples: fewer Newton iterations, same minimiser); ``fallback_start`` likewise for the
    (strictly convex) fallback fit.  Returns
    ``(coef (q*d,), intercept (q,), status)`` with status in
    ``{'ok', 'rank_deficient', 'separated', 'not_converged'}``.
    """
    kw = dict(sample_weight=w, fit_intercept=fit_intercept, tol=tol, max_iter=max_iter, abort_on_divergence=True)
    res = fit_map(X, y, loss, **kw) if start is None else fit_map(
        X, y, loss, coef_init=start[0], intercept_init=start[1], **kw)
    if start is not None and (res.singular or res.diverged):
        # the minimiser is not unique (or may not exist): start from zero like every fit
        # without a pilot, so the null-space component does not depend on the pilot
        res = fit_map(X, y, loss, **kw)
    status = "ok"
    if res.diverged or res.singular or not res.converged:
        direction = np.hstack([res.coef, res.intercept[:, None]]) if fit_intercept else res.coef
        if mle_exists(X, y, loss, fit_intercept=fit_intercept, direction=direction if res.diverged else None):
            if res.diverged:  # large but finite predictor: finish the fit
                res = fit_map(X, y, loss, sample_weight=w, fit_intercept=fit_intercept, tol=tol,
                              max_iter=max_iter, coef_init=res.coef, intercept_init=res.intercept)
            status = "rank_deficient" if res.singular else ("ok" if res.converged else "not_converged")
        else:
            status = "separated"
    if status == "separated" or not (np.all(np.isfinite(res.coef)) and np.all(np.isfinite(res.intercept))):
        # Fallback: unit Gaussian prior N(0, I) on the coefficients and N(b_null, 1) on the
        # intercept (b_null: intercept-only fit on all the data) -- finite by construction.
        q, d = res.coef.shape
        if fit_intercept:
            Xa = np.hstack([X, np.ones((X.shape[0], 1))])
            mean = np.hstack([np.zeros((q, d)), np.asarray(null_intercept).reshape(q, 1)])
        else:
            Xa, mean = X, np.zeros((q, d))
        init = None if fallback_start is None else np.hstack(
            [np.reshape(fallback_start[0], (q, d)), np.reshape(fallback_start[1], (q, 1))])[:, : Xa.shape[1]]
        fb = fit_map(Xa, y, loss, sample_weight=w, fit_intercept=False, prior_mean=mean.ravel(),
                     prior_precision=1.0, tol=tol, max_iter=max_iter, coef_init=init)
        coef = fb.coef[:, :d]
        intercept = fb.coef[:, d] if fit_intercept else np.zeros(q)
        return coef.ravel(), intercept, "separated"
    return res.coef.ravel(), res.intercept, status


def _fit_subsample_batch(X, y, w, index_batch, loss, fit_intercept, tol, max_iter, null_intercept, start=None,
                         fallback_start=None):
    out = []
    for idx in index_batch:
        out.append(_fit_one_subsample(X[idx], y[idx], None if w is None else w[idx], loss, fit_intercept, tol,
                                      max_iter, null_intercept, start, fallback_start))
    return out


def _subsample_prior(coefs, *, covariance, scaling, shrinkage, n, n_rows):
    """Prior mean, covariance and precision from the subsample coefficients (m, k).

    Returns ``(mean, cov, precision, shrinkage_used)``.
    """
    m, k = coefs.shape
    mean = coefs.mean(axis=0)
    centred = coefs - mean
    cov = centred.T @ centred / (m - 1)
    var = np.diag(cov).copy()
    vmax = float(var.max(initial=0.0))
    floor = _VARIANCE_FLOOR * vmax if vmax > 0 else 1e-12 * (1.0 + float(mean @ mean) / k)
    var = np.maximum(var, floor)
    sd = np.sqrt(var)
    used = 0.0
    if covariance == "diag":
        R = np.eye(k)
    else:
        R = cov / np.outer(sd, sd)
        np.fill_diagonal(R, 1.0)
        if shrinkage is None:
            used = 0.0
        elif isinstance(shrinkage, Real) and not isinstance(shrinkage, str):
            used = float(shrinkage)
        else:
            ill = m <= k
            if not ill and shrinkage == "auto":
                ev = np.linalg.eigvalsh(R)
                ill = ev[0] <= 0 or ev[-1] / ev[0] > _MAX_CONDITION
            if shrinkage == "ledoit-wolf" or ill:
                used = float(ledoit_wolf_shrinkage(centred / sd, assume_centered=True)) if k > 1 else 0.0
        R = (1.0 - used) * R
        np.fill_diagonal(R, 1.0)
    factor = 1.0
    if scaling == "subsample_size":
        factor = float(n)
    elif scaling == "jackknife":
        factor = n * (m - 1) / ((n_rows - n) * m)
    try:
        cR = linalg.cho_factor(R, lower=True)
    except linalg.LinAlgError:
        raise ValueError(
            f"The covariance of the {m} subsample coefficient vectors (dimension {k}) is singular; "
            "use shrinkage='auto' or 'ledoit-wolf', covariance='diag', or more subsamples."
        ) from None
    Rinv = linalg.cho_solve(cR, np.eye(k))
    precision = Rinv / np.outer(sd, sd) / factor
    precision = 0.5 * (precision + precision.T)
    prior_cov = factor * R * np.outer(sd, sd)
    return mean, prior_cov, precision, used


def _to_data_units(out, st, q):
    """Map one problem's standardised results (coefficients, intercepts, prior) to the data's units.

    With ``x = x_offset + x_scale * x_s`` and ``y = y_offset + y_scale * y_s`` a standardised
    coefficient ``b_s`` is ``b = b_s * y_scale / x_scale``; the prior moments transform with
    the same factors ``t`` (flattened like the prior, ``q`` rows of features): mean ``* t``,
    covariance ``* t t^T``, precision ``/ t t^T``.
    """
    x = np.tile(st.x_scale, q)
    out = dict(out)
    out["coef"] = st.coef(out["coef"])  # a ValueError naming X if beyond the float64 range
    out["intercept"] = np.atleast_1d(st.intercept(out["intercept"], out["coef"]))
    # the factors y_scale / x_scale are applied by rescale(), which overflows or underflows only
    # where the result does (a subnormal column scale alone makes y_scale / x_scale infinite)
    out["prior_mean"] = rescale(out["prior_mean"], num=(st.y_scale,), den=(x,))
    out["subsample_coefs"] = rescale(out["subsample_coefs"], num=(st.y_scale,), den=(x,))
    # second moments in extreme units (y ~ 1e300) may not be representable: inf / 0, not an error
    xi, xj = x[:, None], x[None, :]
    out["prior_covariance"] = rescale(out["prior_covariance"], num=(st.y_scale, st.y_scale), den=(xi, xj))
    out["prior_precision"] = rescale(out["prior_precision"], num=(xi, xj), den=(st.y_scale, st.y_scale))
    with np.errstate(over="ignore", under="ignore"):
        out["noise_variance"] = float(out["penalty_scale"] * np.square(np.float64(st.y_scale)))
    return out


# --------------------------------------------------------------------------------------
# the shared base class
# --------------------------------------------------------------------------------------


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
        penalty="half",
        prior_mean_method="offset",
        fit_intercept=True,
        tol=1e-8,
        max_iter=100,
        n_jobs=None,
        random_state=None,
    ):
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
            min_subsamples=self._auto_min_subsamples, min_rows=min_rows,
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
        if not plan["auto_n"] or plan["n"] >= cap:
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
        if not loss.constant_hessian:
            # pilot: the first subsample's fit, computed here so that every subsample (in any
            # worker) starts from the same point whatever n_jobs is
            first = _fit_subsample_batch(X, y, sample_weight, indices[:1], loss, self.fit_intercept, self.tol,
                                         self.max_iter, null_intercept)[0]
            if first[2] == "ok":
                start = (first[0], first[1])
            elif first[2] == "separated":
                fallback_start = (first[0], first[1])
        args = (loss, self.fit_intercept, self.tol, self.max_iter, null_intercept, start, fallback_start)
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

    def _prior_and_map(self, X, y, sample_weight, loss, results, n, n_rows, penalty_scale=1.0, weight_unit=1.0):
        """Prior from the subsample fits, then the MAP fit on all rows."""
        coefs = np.vstack([r[0] for r in results])
        intercepts = np.vstack([r[1] for r in results])
        mean, cov, precision, used = _subsample_prior(
            coefs, covariance=self.covariance, scaling=self.covariance_scaling, shrinkage=self.shrinkage,
            n=n, n_rows=n_rows,
        )
        # the data term carries the weights divided by weight_unit (normalise_weights): so does the prior
        weight = penalty_scale * (2.0 if self.penalty == "full" else 1.0) / weight_unit
        kw = dict(sample_weight=None if np.all(sample_weight == 1.0) else sample_weight,
                  fit_intercept=self.fit_intercept,
                  intercept_init=intercepts.mean(axis=0) if self.fit_intercept else None,
                  tol=self.tol, max_iter=self.max_iter)
        extra = None
        if self.prior_mean_method == "extra_column":
            # the dissertation's affine transformation: beta = u + c * beta_0 with the column
            # X beta_0 appended and (u, c) penalised by u^T S^-1 u + c^2 (prior mean 0)
            d = X.shape[1]
            Xa = np.hstack([X, (X @ mean)[:, None]])
            P = np.zeros((d + 1, d + 1))
            P[:d, :d] = precision
            P[d, d] = 1.0
            res = fit_map(Xa, y, loss, prior_mean=np.zeros(d + 1), prior_precision=weight * P,
                          coef_init=np.append(np.zeros(d), 1.0), **kw)
            extra = float(res.coef[0, d])
            res.coef = res.coef[:, :d] + extra * mean[None, :]
        else:
            res = fit_map(X, y, loss, prior_mean=mean, prior_precision=weight * precision, coef_init=mean, **kw)
        return dict(
            extra_column_coef=extra,
            coef=res.coef, intercept=res.intercept, n_iter=res.n_iter, converged=res.converged,
            prior_mean=mean, prior_covariance=cov, prior_precision=precision, shrinkage=used,
            subsample_coefs=coefs, statuses=[r[2] for r in results], penalty_scale=penalty_scale,
        )

    #: standardise the target too (the squared loss); class labels and counts are left alone
    _scale_target = False

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
        outs = [self._prior_and_map(Xs, t, sample_weight, loss, r, plan["n"], plan["n_rows"],
                                    self._penalty_scale(Xs, t, sample_weight, indices, r, st.y_scale), weight_unit)
                for t, r in zip(targets, results)]
        self._report([s for o in outs for s in o["statuses"]], plan, all(o["converged"] for o in outs),
                     "a zero-count pattern" if isinstance(loss, PoissonLoss) else "separation",
                     stacklevel=stacklevel)
        self.n_subsamples_ = plan["m"]
        self.subsample_size_ = plan["n"]
        return [_to_data_units(o, st, loss.n_outputs) for o in outs]

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
            if plan["degraded"]:
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
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags


# --------------------------------------------------------------------------------------
# shared documentation
# --------------------------------------------------------------------------------------

_PARAMETERS = """
    n_subsamples : 'auto', int >= 2 or float > 0, default='auto'
        Number ``m`` of subsamples.  ``'auto'`` is the dissertation's rule of thumb
        ``m = ceil(N / n)`` (each row used about once, so the subsample fits are weakly
        dependent), but at least {min_subsamples}.  A float is the expected number of times each
        row is used: ``m = ceil(n_subsamples * N / n)``.
    subsample_size : 'auto', int >= 2 or float in (0, 1), default='auto'
        Rows ``n`` per subsample, drawn without replacement.  ``'auto'`` is
        ``max(ceil({fraction} N), ceil({rows_per_param} p), ceil(5 / r))`` with ``p`` the number of
        parameters of one unregularised fit (features, times the number of linear predictors, plus
        the intercepts) and ``r`` the share of the rarest level (the rarer extreme value of a
        column such as a 0/1 dummy, or the rarest class), so that a subsample sees each level
        about 5 times{epv}; capped at ``max(p + 1, N // 2)`` and at ``N - 1``; on data so small that
        this is at most ``p``, the fits are rank-deficient or separated and the fallback below
        applies (with a :class:`SubsampleFitWarning`).  A float is a fraction of ``N``.  An
        explicit size must satisfy ``p < n < N``, otherwise ``fit`` raises a ``ValueError``.
    covariance : {{'full', 'diag'}}, default='full'
        Prior covariance: the full covariance of the subsample coefficients, or only their
        variances (independent per-coefficient shrinkage, easy to interpret).
    covariance_scaling : {{None, 'subsample_size', 'jackknife'}}, default=None
        Multiply the subsample covariance by nothing, by ``n`` (the dissertation's
        ``subs.adj``: a unit-information prior, the weakest penalty) or by the Monte-Carlo
        delete-d jackknife correction ``n (m - 1) / ((N - n) m)`` (roughly the variance of an
        estimate from all ``N`` rows: the strongest penalty).
    shrinkage : 'auto', 'ledoit-wolf', float in [0, 1] or None, default='auto'
        Shrinkage of the subsample *correlation* matrix towards the identity (i.e. of the
        covariance towards its diagonal).  ``'auto'`` applies the Ledoit-Wolf intensity only when
        the covariance is rank-deficient (``m <= p``) or its correlation matrix has a condition
        number above 1e10; ``'ledoit-wolf'`` always; a float is a fixed intensity; None never
        (``fit`` raises if the covariance is then singular).  Ignored with ``covariance='diag'``.
    penalty : {{'half', 'full'}}, default='half'
        ``'half'`` adds :math:`\\tfrac12(\\beta-\\beta_0)^\\top\\hat S^{{-1}}(\\beta-\\beta_0)`, the negative
        log density of the prior :math:`N(\\beta_0, \\hat S)`, to the summed losses.  ``'full'`` adds
        :math:`(\\beta-\\beta_0)^\\top\\hat S^{{-1}}(\\beta-\\beta_0)` as printed in the dissertation's
        Algorithm 1: the prior precision doubled (prior covariance :math:`\\hat S/2`).  For the
        logistic and Poisson losses (negative log-likelihoods) ``'full'`` is the dissertation as
        printed; its ridge objective and SVM primal carry the 1/2 already (``'half'``).
    prior_mean_method : {{'offset', 'extra_column'}}, default='offset'
        ``'offset'`` enters the prior mean exactly (the MAP problem above).  ``'extra_column'`` is
        the dissertation's affine transformation (Section 2.3.1.2): append the column
        :math:`X\\beta_0` and fit :math:`\\beta = u + c\\,\\beta_0` with the penalty
        :math:`\\tfrac12(u^\\top\\hat S^{{-1}}u + c^2)` (doubled with ``penalty='full'``), so the prior
        mean is only approximated (:math:`c` is shrunk towards 0 instead of fixed at 1).  Single
        linear predictor only (binary or one-vs-rest, not multinomial).
    fit_intercept : bool, default=True
        Fit an intercept; it is never penalised (the prior is on the coefficients only).
    tol : float, default=1e-8
        Newton convergence tolerance (relative step size) of every fit.
    max_iter : int, default=100
        Maximum number of Newton iterations of every fit.
    n_jobs : int, default=None
        Number of joblib workers for the subsample fits (``None``: 1 unless inside a
        :func:`joblib.parallel_config` context).  A Dask or Ray joblib backend scales them out.
        The result does not depend on ``n_jobs``: all subsamples are drawn before fitting.
    random_state : int, RandomState instance, numpy.random.Generator or None, default=None
        Seeds the subsample draws (a generator passed in is advanced by each ``fit``)."""

_ATTRIBUTES = """
    prior_mean_ : ndarray of shape {mean_shape}
        Mean of the subsample coefficients: the prior mean.
    prior_covariance_ : ndarray of shape {cov_shape}
        The prior covariance (after ``covariance``, ``shrinkage`` and ``covariance_scaling``).
    prior_precision_ : ndarray of shape {cov_shape}
        Its inverse, the penalty matrix of the MAP fit.
    subsample_coefs_ : ndarray of shape {sub_shape}
        Coefficients of the unregularised subsample fits.
    shrinkage_ : float{per_class}
        Shrinkage intensity applied to the correlation matrix (0: none).
    n_subsamples_ : int
        Resolved number of subsamples ``m``.
    subsample_size_ : int
        Resolved subsample size ``n``.
    n_separated_subsamples_ : int
        Number of subsample fits replaced by the fallback.
    n_iter_ : int
        Newton iterations of the final MAP fit{n_iter_note}.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during ``fit`` (only when ``X`` has string column names)."""

_NOTES = """
    **Algorithm** (Algorithm 1 of the dissertation).  Draw ``m`` subsamples of ``n`` rows without
    replacement among the rows with positive weight; fit the unregularised model on each
    (coefficients :math:`\\beta^{{(i)}}`); set :math:`\\beta_0 = \\frac1m\\sum_i \\beta^{{(i)}}` and
    :math:`\\hat S = \\frac{{1}}{{m-1}}\\sum_i (\\beta^{{(i)}}-\\beta_0)(\\beta^{{(i)}}-\\beta_0)^\\top`
    (then the options ``covariance``, ``shrinkage``, ``covariance_scaling``); return the exact
    MAP estimate on all rows

    .. math::

        \\hat\\beta, \\hat b = \\arg\\min_{{\\beta, b}} \\sum_{{i=1}}^N w_i\\, L(y_i, x_i\\beta + b)
            + \\tfrac12 (\\beta - \\beta_0)^\\top \\hat S^{{-1}} (\\beta - \\beta_0),

    with {loss_text}.  The intercept ``b`` is not penalised.  By default the prior mean enters
    exactly (``prior_mean_method='offset'``; ``'extra_column'`` is the dissertation's approximation)
    and the penalty carries the 1/2 of a Gaussian log density (``penalty='full'``: without it, as
    Algorithm 1 is printed); the minimisation is one damped Newton solver shared by all the
    losses (:func:`sklearn_bayes._glm._map.fit_map`).

    **Scaling.**  The data term is the *sum* of the losses and the prior term carries 1/2, so
    the objective is a negative log posterior under the prior :math:`N(\\beta_0, \\hat S)`.
    {scaling_text}

    **Separation fallback.**  A subsample fit that diverges, is singular or does not converge
    is checked exactly for a separating (recession) direction by a linear programme (Konis,
    2007).  If there is one -- complete or quasi-complete separation, or a zero-count pattern
    for the Poisson loss -- the unregularised fit does not exist and is replaced by the fit
    with a unit Gaussian prior :math:`N(0, I)` on the coefficients of the standardised
    features (see *Units*) and :math:`N(b_{{null}}, 1)` on the intercept (:math:`b_{{null}}`:
    the intercept-only fit on all the rows), which is finite.  Rank-deficient subsample fits (e.g. a dummy column that is all zero in the
    subsample) keep their damped-Newton (minimum-norm-like) solution.  Either way one
    :class:`SubsampleFitWarning` per ``fit`` reports the counts.  With ``subsample_size='auto'``,
    if more than a quarter of the fits are separated and the full data are not, the subsample
    size is doubled (up to ``N // 2``) and all subsamples are drawn again, since the rule of
    thumb asks for subsamples "large enough that the unregularised fit exists".

    **Sample weights** multiply the losses, in the subsample fits and the MAP fit; rows with
    zero weight are never drawn.  Because subsamples are drawn by rows, a weight of 2 is not
    the same as a repeated row.

    **Units.**  All fits run on standardised features (each column centred at its weighted
    mean when an intercept is fitted, and divided by its weighted standard deviation -- root
    mean square without intercept{target_units}); coefficients, intercepts, the prior moments
    and the subsample coefficients are reported in the units of the data.  Algorithm 1 is
    equivariant under such changes of units (unregularised fits, the prior built from them and
    the MAP fit transform together, and the shrinkage acts on the scale-free correlation
    matrix), so this changes nothing mathematically; it makes the solver's tolerances
    (rank detection, variance floors, convergence) relative to the data.  Multiplying ``X`` by
    ``c`` multiplies ``coef_`` by ``1 / c``{target_equivariance}, up to rounding, for any ``c``."""


def _doc(cls, summary, extra_params="", attr_fmt=None, notes_fmt=None, extra_attrs="", examples=""):
    cls.__doc__ = (
        summary
        + "\n\n    Parameters\n    ----------"
        + _PARAMETERS.format(
            fraction=cls._auto_fraction, rows_per_param=cls._auto_rows_per_param,
            min_subsamples=cls._auto_min_subsamples,
            epv=(f", and at least ``{cls._auto_events_per_param} p / r_class`` rows (about "
                 f"{cls._auto_events_per_param} rows of the rarest class per parameter, the events-per-variable "
                 "rule of thumb for logistic regression)") if cls._auto_events_per_param else "")
        + extra_params
        + "\n\n    Attributes\n    ----------"
        + extra_attrs
        + _ATTRIBUTES.format(**attr_fmt)
        + "\n\n    See Also\n    --------\n    ClosedFormRidge : ridge with a closed-form scalar penalty.\n"
        + "\n    Notes\n    -----"
        + _NOTES.format(
            **notes_fmt,
            target_units=(";\n    the target likewise, and the noise variance is estimated in its standardised units"
                          if cls._scale_target else ""),
            target_equivariance=(",\n    and multiplying ``y`` by ``s`` multiplies ``coef_``, ``intercept_`` and ``prior_mean_``\n"
                                 "    by ``s`` (with ``noise_variance='auto'``)" if cls._scale_target
                                 else " (predictions do not change)"),
        )
        + "\n\n    References\n    ----------\n"
        + "    S. Aydın, *Bayesian Methods for Tackling Complex Inferential Problems in Data Science*,\n"
        + "    PhD dissertation, Sabancı University, 2024, Chapter 2.\n\n"
        + "    M. Konis, *Linear programming algorithms for detecting separated data in binary\n"
        + "    logistic regression models*, DPhil thesis, University of Oxford, 2007.\n"
        + "\n    Examples\n    --------"
        + examples
    )
    return cls


_SINGLE_ATTRS = dict(mean_shape="(n_features,)", cov_shape="(n_features, n_features)",
                     sub_shape="(n_subsamples_, n_features)", per_class="", n_iter_note="")


# --------------------------------------------------------------------------------------
# regressors
# --------------------------------------------------------------------------------------


class SubsampledPriorRidge(LinearPredictorMixin, RegressorMixin, _BaseSubsampledPrior):
    _auto_fraction = 0.01
    _auto_rows_per_param = 2.0
    _auto_min_subsamples = 20

    _parameter_constraints = {
        **_BaseSubsampledPrior._parameter_constraints,
        "noise_variance": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        *,
        n_subsamples="auto",
        subsample_size="auto",
        covariance="full",
        covariance_scaling=None,
        shrinkage="auto",
        noise_variance="auto",
        penalty="half",
        prior_mean_method="offset",
        fit_intercept=True,
        tol=1e-8,
        max_iter=100,
        n_jobs=None,
        random_state=None,
    ):
        super().__init__(
            n_subsamples=n_subsamples, subsample_size=subsample_size, covariance=covariance,
            covariance_scaling=covariance_scaling, shrinkage=shrinkage, penalty=penalty,
            prior_mean_method=prior_mean_method, fit_intercept=fit_intercept,
            tol=tol, max_iter=max_iter, n_jobs=n_jobs, random_state=random_state,
        )
        self.noise_variance = noise_variance

    _scale_target = True

    def _penalty_scale(self, X, y, sample_weight, indices, results, y_scale):
        """The noise variance (in the standardised units of ``y``): pooled residual variance of
        the unregularised subsample fits, or the given ``noise_variance`` divided by ``y_scale**2``."""
        if self.noise_variance != "auto":
            return float(self.noise_variance) / y_scale**2
        w = sample_weight / sample_weight[sample_weight > 0].mean()
        n_params = X.shape[1] + int(self.fit_intercept)
        rss = dof = 0.0
        for idx, (coef, intercept, _) in zip(indices, results):
            r = y[idx] - X[idx] @ coef - intercept[0]
            rss += float(w[idx] @ (r * r))
            dof += len(idx) - n_params
        if dof <= 0:  # subsamples too small to leave residual degrees of freedom
            mean = np.average(y, weights=sample_weight)
            rss, dof = float(sample_weight @ (y - mean) ** 2), max(float(np.sum(sample_weight)) - 1.0, 1.0)
        return rss / dof

    @_fit_context(prefer_skip_nested_validation=True)
    @transactional
    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Numeric targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights.

        Returns
        -------
        self : object
        """
        X, y, sample_weight = validate_regression_data(self, X, y, sample_weight)
        out = self._fit_single(X, y, sample_weight, SquaredLoss())
        self.noise_variance_ = (
            float(out["noise_variance"]) if self.noise_variance == "auto" else float(self.noise_variance)
        )
        self.coef_ = out["coef"][0]
        self.intercept_ = float(out["intercept"][0]) if self.fit_intercept else 0.0
        return self


_doc(
    SubsampledPriorRidge,
    "Ridge regression whose (matrix) penalty is estimated from unregularised subsample fits.",
    extra_params="""
    noise_variance : 'auto' or float > 0, default='auto'
        Variance :math:`\\sigma^2` of the Gaussian noise, which sets the weight of the data term
        against the prior.  ``'auto'`` pools the residual variances of the unregularised
        subsample fits, :math:`\\hat\\sigma^2 = \\sum_i \\mathrm{RSS}_i / \\sum_i (n - p)` (unbiased
        for each fit; no extra pass over the data).  ``1.0`` reproduces the dissertation's
        objective, which assumes a standardised target.""",
    attr_fmt=_SINGLE_ATTRS,
    extra_attrs="""
    coef_ : ndarray of shape (n_features,)
        MAP coefficients.
    intercept_ : float
        Intercept (0.0 if ``fit_intercept=False``).
    noise_variance_ : float
        The noise variance used (estimated when ``noise_variance='auto'``); the MAP penalty
        matrix is ``noise_variance_ * prior_precision_``.""",
    notes_fmt=dict(
        loss_text=":math:`L(y, \\eta) = \\tfrac{1}{2\\sigma^2} (y-\\eta)^2`",
        scaling_text=(
            "For the Gaussian likelihood with noise variance :math:`\\sigma^2` the MAP estimate is\n"
            "    :math:`(X^\\top X + \\sigma^2\\hat S^{-1})^{-1}(X^\\top y + \\sigma^2\\hat S^{-1}\\beta_0)`\n"
            "    (on centred data when an intercept is fitted).  The dissertation's closed form\n"
            "    :math:`(X^\\top X + \\hat S^{-1})^{-1}(X^\\top y + \\hat S^{-1}\\beta_0)` drops\n"
            "    :math:`\\sigma^2`, i.e. assumes :math:`\\sigma^2 = 1`: since :math:`\\hat S` scales with\n"
            "    the square of the target's units and :math:`X^\\top y` linearly, that estimate is not\n"
            "    equivariant (multiplying ``y`` by 10 does not multiply the fit by 10).  With\n"
            "    ``noise_variance='auto'`` the fit is scale equivariant; ``noise_variance=1.0`` gives the\n"
            "    dissertation's estimate (which it used on standardised targets)."
        ),
    ),
    examples="""
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_bayes import SubsampledPriorRidge
    >>> X, y = make_regression(n_samples=2000, n_features=10, noise=5.0, random_state=0)
    >>> reg = SubsampledPriorRidge(random_state=0).fit(X, y)
    >>> reg.subsample_size_, reg.n_subsamples_
    (22, 91)
    >>> round(reg.score(X, y), 3)
    0.999
""",
)


class SubsampledPriorPoissonRegressor(LinearPredictorMixin, RegressorMixin, _BaseSubsampledPrior):
    _auto_fraction = 0.05
    _auto_rows_per_param = 5.0
    _auto_min_subsamples = 20

    _parameter_constraints = {
        **_BaseSubsampledPrior._parameter_constraints,
        "integer_counts": ["boolean"],
    }

    def __init__(
        self,
        *,
        n_subsamples="auto",
        subsample_size="auto",
        covariance="full",
        covariance_scaling=None,
        shrinkage="auto",
        penalty="half",
        prior_mean_method="offset",
        fit_intercept=True,
        tol=1e-8,
        max_iter=100,
        n_jobs=None,
        random_state=None,
        integer_counts=False,
    ):
        super().__init__(
            n_subsamples=n_subsamples, subsample_size=subsample_size, covariance=covariance,
            covariance_scaling=covariance_scaling, shrinkage=shrinkage, penalty=penalty,
            prior_mean_method=prior_mean_method, fit_intercept=fit_intercept,
            tol=tol, max_iter=max_iter, n_jobs=n_jobs, random_state=random_state,
        )
        self.integer_counts = integer_counts

    @_fit_context(prefer_skip_nested_validation=True)
    @transactional
    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Non-negative targets (integer counts if ``integer_counts=True``).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights.

        Returns
        -------
        self : object
        """
        X, y, sample_weight = validate_regression_data(self, X, y, sample_weight)
        if np.any(y < 0):
            raise ValueError(f"SubsampledPriorPoissonRegressor needs non-negative targets y (counts or rates); got min(y)={float(y.min())!r}.")
        if self.integer_counts and np.any(y != np.round(y)):
            bad = y[y != np.round(y)][0]
            raise ValueError(
                f"SubsampledPriorPoissonRegressor with integer_counts=True needs integer counts y (found "
                f"{bad!r}); set integer_counts=False (the default) to fit non-negative real targets "
                "(Poisson quasi-likelihood)."
            )
        out = self._fit_single(X, y, sample_weight, PoissonLoss())
        self.coef_ = out["coef"][0]
        self.intercept_ = float(out["intercept"][0]) if self.fit_intercept else 0.0
        return self

    def predict(self, X):
        """Predict the expected counts ``exp(X @ coef_ + intercept_)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return np.exp(self._linear_predictor(X))

    def score(self, X, y, sample_weight=None):
        """D^2, the fraction of Poisson deviance explained (as :class:`~sklearn.linear_model.PoissonRegressor`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        score : float
        """
        return d2_tweedie_score(y, self.predict(X), sample_weight=sample_weight, power=1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.positive_only = True
        return tags


_doc(
    SubsampledPriorPoissonRegressor,
    "Poisson regression (log link) with a Gaussian prior estimated from unregularised subsample fits.",
    extra_params="""
    integer_counts : bool, default=False
        Require integer counts (``fit`` raises a ``ValueError`` otherwise).  With False (the
        default) any non-negative target is accepted (Poisson quasi-likelihood: rates,
        averages of counts), as by scikit-learn's :class:`~sklearn.linear_model.PoissonRegressor`.""",
    attr_fmt=_SINGLE_ATTRS,
    extra_attrs="""
    coef_ : ndarray of shape (n_features,)
        MAP coefficients (log-rate scale).
    intercept_ : float
        Intercept (0.0 if ``fit_intercept=False``).""",
    notes_fmt=dict(
        loss_text=":math:`L(y, \\eta) = e^{\\eta} - y\\eta` (the Poisson negative log-likelihood up to a constant)",
        scaling_text=(
            "The dissertation (Table 2.4) used 5 % of the rows and 20 subsamples; ``'auto'`` follows it."
        ),
    ),
    examples="""
    >>> import numpy as np
    >>> from sklearn_bayes import SubsampledPriorPoissonRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3))
    >>> y = rng.poisson(np.exp(0.5 * X[:, 0] - 0.3 * X[:, 1] + 1.0))
    >>> reg = SubsampledPriorPoissonRegressor(random_state=0).fit(X, y)
    >>> bool(np.abs(reg.coef_ - [0.5, -0.3, 0.0]).max() < 0.05)
    True
""",
)


# --------------------------------------------------------------------------------------
# classifiers
# --------------------------------------------------------------------------------------


class _SubsampledPriorClassifier(LinearClassifierMixin, _BaseSubsampledPrior):
    def decision_function(self, X):
        """Confidence scores ``X @ coef_.T + intercept_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        check_is_fitted(self)
        X = check_features(self, X, reset=False)
        scores = X @ self.coef_.T + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def _encode(self, X, y, sample_weight):
        with naming("X"):
            check_array(X, dtype=np.float64, input_name="X", estimator=self)
        check_consistent_rows(X, y)
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        classes, y_enc = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least 2 classes in the data, but the data "
                f"contains only one class: {classes[0]!r}."
            )
        with naming("sample_weight"):
            sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        present = np.unique(y_enc[sample_weight > 0])
        if present.size < 2:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least 2 classes with positive sample_weight, "
                f"but only one class has positive weight: {classes[present[0]] if present.size else None!r}."
            )
        return X, y_enc, sample_weight, classes


class SubsampledPriorLogisticRegression(_SubsampledPriorClassifier):
    _auto_fraction = 0.01
    _auto_rows_per_param = 5.0
    _auto_min_subsamples = 20
    _auto_events_per_param = 10

    @_fit_context(prefer_skip_nested_validation=True)
    @transactional
    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels (two or more classes).
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : object
        """
        X, y_enc, sample_weight, classes = self._encode(X, y, sample_weight)
        K = classes.size
        if K > 2 and self.prior_mean_method == "extra_column":
            raise ValueError(
                f"prior_mean_method='extra_column' is the dissertation's approximation for a single linear "
                f"predictor; y has {K} classes (a multinomial model): use prior_mean_method='offset'."
            )
        self.classes_ = classes
        loss = LogisticLoss() if K == 2 else MultinomialLoss(K)
        out = self._fit_single(X, y_enc.astype(np.float64), sample_weight, loss, labels=y_enc)
        coef, intercept = out["coef"], out["intercept"]
        if not self.fit_intercept:
            intercept = np.zeros_like(intercept)
        if K == 2:
            self.coef_, self.intercept_ = coef, intercept
        else:  # reference class classes_[0] has zero coefficients
            self.coef_ = np.vstack([np.zeros((1, X.shape[1])), coef])
            self.intercept_ = np.concatenate([[0.0], intercept])
        return self

    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            p = expit(scores)
            return np.column_stack([1.0 - p, p])
        return softmax(scores, axis=1)

    def predict_log_proba(self, X):
        """Logarithm of the class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            scores = np.column_stack([np.zeros_like(scores), scores])
        return log_softmax(scores, axis=1)


_doc(
    SubsampledPriorLogisticRegression,
    "Logistic regression (binary or multinomial) with a Gaussian prior estimated from subsample fits.",
    attr_fmt=dict(
        mean_shape="(n_features,) or ((n_classes - 1) * n_features,)",
        cov_shape="(k, k) with k the length of prior_mean_",
        sub_shape="(n_subsamples_, k)",
        per_class="",
        n_iter_note="",
    ),
    extra_attrs="""
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        MAP coefficients.  With more than two classes the model is multinomial with
        ``classes_[0]`` as reference class: ``coef_[0]`` is zero and the prior is on the
        remaining rows, flattened row by row (``prior_mean_.reshape(n_classes - 1, -1)``).
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Intercepts (``intercept_[0] = 0`` for the multinomial model).""",
    notes_fmt=dict(
        loss_text=(
            "the logistic loss :math:`L(y, \\eta) = \\log(1 + e^\\eta) - y\\eta` (binary) or the multinomial\n"
            "    loss with a reference class"
        ),
        scaling_text="With the prior :math:`N(0, C I)` this would be scikit-learn's ``LogisticRegression(C=C)``.",
    ),
    examples="""
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn_bayes import SubsampledPriorLogisticRegression
    >>> import warnings
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     clf = make_pipeline(StandardScaler(), SubsampledPriorLogisticRegression(random_state=0)).fit(X, y)
    >>> # wdbc is linearly separable in every subsample: the fallback prior is used, and said
    >>> sorted({type(w.message).__name__ for w in caught})
    ['SubsampleFitWarning']
    >>> clf[-1].prior_covariance_.shape
    (30, 30)
    >>> bool(clf.score(X, y) > 0.95)
    True
""",
)


class SubsampledPriorLinearSVC(_SubsampledPriorClassifier):
    _auto_fraction = 0.01
    _auto_rows_per_param = 5.0
    _auto_min_subsamples = 20
    _auto_events_per_param = 10

    _parameter_constraints = {
        **_BaseSubsampledPrior._parameter_constraints,
        "loss": [StrOptions({"squared_hinge", "hinge"})],
    }

    def __init__(
        self,
        *,
        n_subsamples="auto",
        subsample_size="auto",
        covariance="full",
        covariance_scaling=None,
        shrinkage="auto",
        loss="squared_hinge",
        penalty="half",
        prior_mean_method="offset",
        fit_intercept=True,
        tol=1e-8,
        max_iter=100,
        n_jobs=None,
        random_state=None,
    ):
        super().__init__(
            n_subsamples=n_subsamples, subsample_size=subsample_size, covariance=covariance,
            covariance_scaling=covariance_scaling, shrinkage=shrinkage, penalty=penalty,
            prior_mean_method=prior_mean_method, fit_intercept=fit_intercept,
            tol=tol, max_iter=max_iter, n_jobs=n_jobs, random_state=random_state,
        )
        self.loss = loss

    @_fit_context(prefer_skip_nested_validation=True)
    @transactional
    def fit(self, X, y, sample_weight=None):
        """Fit the model (one-vs-rest for more than two classes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : object
        """
        X, y_enc, sample_weight, classes = self._encode(X, y, sample_weight)
        K = classes.size
        d = X.shape[1]
        problems = [1] if K == 2 else range(K)
        targets = [np.where(y_enc == k, 1.0, -1.0) for k in problems]
        loss = SquaredHingeLoss() if self.loss == "squared_hinge" else HingeLoss()
        outs = self._fit_problems(X, targets, sample_weight, loss, d + int(self.fit_intercept), y_enc,
                                  stacklevel=_STACKLEVEL - 1)
        self.classes_ = classes
        stack = (lambda key: outs[0][key]) if K == 2 else (lambda key: np.stack([o[key] for o in outs]))
        self.coef_ = np.vstack([o["coef"] for o in outs])
        self.intercept_ = np.concatenate([o["intercept"] for o in outs]) if self.fit_intercept else np.zeros(len(outs))
        self.prior_mean_ = stack("prior_mean")
        self.prior_covariance_ = stack("prior_covariance")
        self.prior_precision_ = stack("prior_precision")
        self.subsample_coefs_ = stack("subsample_coefs")
        self.shrinkage_ = outs[0]["shrinkage"] if K == 2 else np.array([o["shrinkage"] for o in outs])
        self.n_iter_ = max(o["n_iter"] for o in outs)
        return self


_doc(
    SubsampledPriorLinearSVC,
    "Linear SVM (squared hinge or hinge loss, primal Newton) with a Gaussian prior estimated from subsample fits.",
    extra_params="""
    loss : {'squared_hinge', 'hinge'}, default='squared_hinge'
        ``'squared_hinge'``: :math:`\\max(0, 1 - y\\eta)^2` (liblinear's L2-loss SVM, a smooth
        objective).  ``'hinge'``: :math:`\\max(0, 1 - y\\eta)`, the dissertation's soft-margin SVM with
        ``C = 1``, minimised through a Huber-smoothing homotopy of widths ``10, 1, ..., 1e-6``
        (:class:`~sklearn_bayes._glm._map.HingeLoss`): the objective is within ``mu N / 2``
        of the hinge optimum, ``mu`` the last width at which Newton's method converged (``1e-6``
        on the dissertation's data sets; earlier stages when the generalised Hessian turns
        singular).  Much slower than ``'squared_hinge'`` (about 8x the Newton iterations); its unregularised subsample fits are minimisers of the (piecewise linear)
        hinge loss, which are often not unique (flagged rank-deficient).""",
    attr_fmt=dict(
        mean_shape="(n_features,), or (n_classes, n_features) one-vs-rest",
        cov_shape="(n_features, n_features), or (n_classes, n_features, n_features)",
        sub_shape="(n_subsamples_, n_features), or (n_classes, n_subsamples_, n_features)",
        per_class=" or ndarray of shape (n_classes,)",
        n_iter_note=" (the maximum over the one-vs-rest problems)",
    ),
    extra_attrs="""
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        MAP coefficients (one row per one-vs-rest problem for more than two classes).
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Intercepts.""",
    notes_fmt=dict(
        loss_text=(
            "the squared hinge loss :math:`L(y, \\eta) = \\max(0, 1 - y\\eta)^2`, :math:`y \\in \\{-1, 1\\}`\n"
            "    (liblinear's L2-loss SVM; the dissertation used the hinge loss: ``loss='hinge'``)"
        ),
        scaling_text=(
            "With the prior :math:`N(0, I)` the objective is liblinear's primal with ``C = 1``, as in the\n"
            "    dissertation's formulation :math:`\\tfrac12\\|L^\\top(\\beta-\\beta_0)\\|^2 + \\sum_i \\xi_i`.  With more\n"
            "    than two classes each one-vs-rest problem gets its own prior, from the same subsamples."
        ),
    ),
    examples="""
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn_bayes import SubsampledPriorLinearSVC
    >>> import warnings
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     clf = make_pipeline(StandardScaler(), SubsampledPriorLinearSVC(random_state=0)).fit(X, y)
    >>> # wdbc is linearly separable in every subsample: the fallback prior is used, and said
    >>> sorted({type(w.message).__name__ for w in caught})
    ['SubsampleFitWarning']
    >>> bool(clf.score(X, y) > 0.95)
    True
""",
)
