"""Opt-in intervals over the whole rule (issue 30, round 15): a residual bootstrap of the fit, loss choice included.

The sandwich (:meth:`MixtureMEstimatorRegressor.conf_int`) conditions on the selected loss and its scale; at 12-30
rows the choice is noisy (development log, round 15: the draws at n = 16, p = 4 that fail the small-sample guard get a
collapsed scale and cover 0.41-0.44).  :func:`bootstrap_intervals` refits a clone of the estimator ``n_boot`` times
to ``y* = predict(X) + e*`` at the same ``X`` and ``sample_weight``, ``e*`` drawn with replacement from the fit's
residuals on the rows of positive weight, centred at their weighted median and scaled by ``sqrt(n / (n - p))`` (the
residuals of a fit of ``p`` coefficients to ``n`` rows are that much smaller than the errors), and returns
``coef_ -+ t_{df, 1 - alpha/2} sd*`` with ``sd*`` the standard deviation of the refits' ``coef_`` and ``df`` the
fit's ``df_intervals_``.  Every refit runs the whole rule (start, loss choice, scale), so its spread includes the
choice.  Cost: ``n_boot`` fits.
"""

import warnings
from numbers import Integral

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from sklearn_bayes._glm._base import validate_regression_data
from sklearn_bayes.utils._validation import external_stacklevel
from sklearn_bayes.linear_model._mixture._inference import interval_dof, params_std, validate_alpha, wald_intervals
from sklearn_bayes.linear_model._mixture._lts_start import weighted_median
from sklearn_bayes.utils import check_generator

__all__ = ["BOOTSTRAP_CONF_INT_DOC", "bootstrap_intervals", "bootstrap_residuals"]

#: The docstring of :meth:`MixtureMEstimatorRegressor.bootstrap_conf_int` (kept here: the estimator's module is at
#: its size limit).
BOOTSTRAP_CONF_INT_DOC = """Opt-in intervals over the whole rule, loss choice included: a residual or pairs bootstrap.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The training features (the rows the estimator was fitted to).
        y : array-like of shape (n_samples,)
            The training target.
        alpha : float in (0, 1), default=0.05
            One minus the nominal coverage.
        n_boot : int >= 2, default=50
            Refits of a clone of the estimator (the cost: ``n_boot`` fits).
        sample_weight : array-like of shape (n_samples,), default=None
            The training weights, if the fit had any.  ``X`` with another number of rows than the fit's, or
            weights uniform where the fit's were not (``None`` after a weighted fit) or the other way round,
            raise ``ValueError``.
        random_state : int, Generator, RandomState or None, default=None
            Seeds the resampling and the refits.
        scheme : {"residual", "pairs"}, default="residual"
            ``"residual"``: refits to the fitted values plus residuals drawn with replacement (assumes
            i.i.d. errors).  ``"pairs"``: refits to rows ``(x_i, y_i, w_i)`` drawn with replacement (keeps
            heteroscedasticity, leverage and a fit that jumps between solutions; wider).

        Returns
        -------
        intervals : ndarray of shape (n_features, 2)
            Lower and upper ends; NaN rows for features that are not identified, as :meth:`conf_int`.

        Notes
        -----
        ``coef_ -+ t_{df_intervals_, 1 - alpha/2} sd*``, ``sd*`` the standard deviation of ``coef_``
        over refits of a clone to ``y* = predict(X) + e*``, ``e*`` drawn with replacement from the
        residuals of the rows of positive weight, centred at their weighted median and scaled by
        ``sqrt(m / (m - p))`` (``m`` rows, ``p`` coefficients).  Every refit runs the whole rule
        (start, loss choice, scale), so the spread includes the choice that :meth:`conf_int`
        conditions on; they run the parameters of the fit (``set_params`` after ``fit`` does not change
        them).  ``X`` is checked as in :meth:`predict` (feature names, ``n_features_in_``).  At 16 rows
        and 4 coefficients it covered 0.94-0.96 where :meth:`conf_int` covers 0.80-0.87 (development log,
        round 15; 60 draws).  The estimator is not changed.  A
        residual bootstrap resamples gross outliers' residuals too: with many outliers the
        intervals are wide.

        The residual scheme assumes independent, identically distributed errors: every refit sees the
        same ``X`` and errors drawn from the pooled residuals, so heteroscedasticity and the leverage of
        single rows are lost.  On 12 real sets (review HMU, ``n`` of ``N`` rows drawn with replacement,
        100 resamples) it was worse than :meth:`conf_int` by more than one paired SE in 10 of 16 cells
        (heteroscedastic UN at full size: 0.860 against 0.920) and better only on mcycle.  The
        ``"pairs"`` scheme (opt-in; review HMU's candidate, measured on four dev cells only, where the
        failures were found: UN 40 rows 0.850, mcycle 40 rows 0.980, Ornstein 0.780, condroz 0.610
        against ``conf_int``'s 0.590, 0.840, 0.340 and 0.320; no held-out check) draws rows
        ``(x_i, y_i, w_i)`` together: ``sd*`` is the spread of the whole rule over resampled data sets,
        its intervals 1.9-10.6 times the least-squares width there.  A pairs resample the rule refuses
        (``ValueError``: e.g. a constant ``y``) is skipped and counted in a warning.  After an exact-fit
        fallback (more than half the rows fitted exactly) both schemes warn and return NaN: their refits
        are exact fits too.
        """


def bootstrap_residuals(r, sw, p):
    """The residuals resampled: ``(r - weighted median) sqrt(m / (m - p))`` on the ``m`` rows of positive weight."""
    pos = sw > 0
    m = int(pos.sum())
    e = r[pos] - weighted_median(r[pos], sw[pos])
    return e * np.sqrt(m / max(m - p, 1))


#: values of ``bootstrap_conf_int``'s ``scheme``: ``"residual"`` (the default since round 15) or ``"pairs"``
#: (review HMU F6: rows drawn with replacement, ``(x_i, y_i, w_i)`` together)
SCHEMES = ("residual", "pairs")


def check_training_rows(est, n, sw, unweighted):
    """Refuse (``ValueError``) rows or weights that cannot be the fit's (review HMX F3: the test split's 26 rows
    against 78 training rows gave intervals 1.9-3.4 times wider, omitted weights refitted unweighted clones, both
    silently): ``n`` rows other than the fit's ``len(outlier_mask_)``, or weights ``sw`` uniform where the fit's were
    not or the other way round (a pickle from before the fit recorded its weights: rows only)."""
    n_fit = len(est.outlier_mask_)
    if n != n_fit:
        raise ValueError(f"X has {n} rows but the estimator was fitted to {n_fit}: bootstrap_conf_int resamples the "
                         "training data; pass the X, y and sample_weight given to fit.")
    fitted = (getattr(est, "_fitted_with", None) or {}).get("uniform_weights")
    if fitted is not None and bool(np.ptp(sw) == 0) != fitted:
        given = "no sample_weight" if unweighted else ("uniform" if fitted is False else "non-uniform") + " weights"
        raise ValueError(f"sample_weight: the fit had {'uniform' if fitted else 'non-uniform'} weights but "
                         f"bootstrap_conf_int got {given}; pass the sample_weight given to fit.")


def bootstrap_intervals(est, X, y, sample_weight, alpha, n_boot, random_state, scheme="residual"):
    """``(intervals, sd)``: the ``1 - alpha`` intervals of ``est.coef_`` (shape ``(n_features, 2)``) and the
    bootstrap standard deviations (NaN for features that are not identified, as in ``conf_int``).

    ``scheme="pairs"`` refits to ``(X, y, sample_weight)[idx]`` with ``idx`` drawn with replacement (the case
    bootstrap: it keeps heteroscedasticity, each row's leverage and a fit that jumps between solutions); a refit
    that raises ``ValueError`` (a resample with a constant ``y``) is skipped and counted in a warning."""
    if not isinstance(scheme, str) or scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}.")
    alpha = validate_alpha(alpha)
    if isinstance(n_boot, (bool, np.bool_)) or not isinstance(n_boot, Integral) or n_boot < 2:
        raise ValueError(f"n_boot must be an integer >= 2, got {n_boot!r}.")
    # as predict / score_samples: feature names checked against the fit's, negative weights refused naming
    # sample_weight (a negative weight gave an IndexError), n_features_in_ and the rows named
    X, y, sw = validate_regression_data(est, X, y, sample_weight, reset=False)
    check_training_rows(est, len(y), sw, sample_weight is None)
    # the refits run the rule that was fitted: set_params(variant=..., fit_intercept=...) after fit must not
    # change what the intervals describe (they are centred at the fitted coef_); a pickle from before
    # _fitted_with: the loss tells the variant
    fitted = getattr(est, "_fitted_with", None) or {
        "variant": "paper" if est.selected_loss_ is None else "min_variance", "fit_intercept": bool(est.fit_intercept)}
    rule = {"variant": fitted["variant"], "fit_intercept": fitted["fit_intercept"]}
    rule.update({k: v for k, v in fitted.get("params", {}).items() if k != "random_state"})  # every parameter
    rng = check_generator(random_state)
    if "exact" in ((getattr(est, "_fitted_with", None) or {}).get("fallback") or []):
        # review HMU F8: the refits of an exact fit are exact fits (sd* of rounding size): NaN, not [coef, coef]
        warnings.warn("bootstrap_conf_int: the fit passes exactly through more than half the rows (its covariance "
                      "is the least-squares fallback); the bootstrap's refits do too and their spread is "
                      "rounding, so the intervals are NaN. Use conf_int (conservative here).", UserWarning,
                      stacklevel=external_stacklevel())
        nan = np.full(X.shape[1], np.nan)
        return np.column_stack([nan, nan]), nan
    fit = X @ est.coef_ + est.intercept_
    e = bootstrap_residuals(y - fit, sw, X.shape[1] + int(rule["fit_intercept"]))
    seeds = rng.integers(0, 2**31 - 1, size=int(n_boot))
    coefs = np.full((int(n_boot), X.shape[1]), np.nan)
    seen = {}  # the refits' warnings, each message once with its count (review HMU F10: 48 copies of one)
    for b, seed in enumerate(seeds):
        gen = np.random.default_rng(seed)
        if scheme == "pairs":
            idx = gen.integers(0, len(y), size=len(y))
            Xb, yb, swb = X[idx], y[idx], sw[idx]
        else:
            Xb, yb, swb = X, fit + gen.choice(e, size=len(y)), sw
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            refit = clone(clone(est).set_params(**rule)).set_params(random_state=int(seed))
            try:
                coefs[b] = refit.fit(Xb, yb, sample_weight=swb).coef_
            except ValueError:
                if scheme != "pairs":
                    raise
                seen[(UserWarning, "the resample was refused (ValueError) and skipped")] = (
                    seen.get((UserWarning, "the resample was refused (ValueError) and skipped"), 0) + 1)
        for w in caught:
            if not issubclass(w.category, ConvergenceWarning):
                key = (w.category, str(w.message))
                seen[key] = seen.get(key, 0) + 1
    for (category, message), count in seen.items():
        warnings.warn(f"bootstrap_conf_int: {count} of {int(n_boot)} refits warned: {message}", category,
                      stacklevel=external_stacklevel())
    ok = np.all(np.isfinite(coefs), axis=1)
    sd = coefs[ok].std(axis=0, ddof=1) if ok.sum() >= 2 else np.full(X.shape[1], np.nan)
    sd[~np.isfinite(params_std(est)[: X.shape[1]])] = np.nan
    return wald_intervals(est.coef_, sd, interval_dof(est), alpha), sd
