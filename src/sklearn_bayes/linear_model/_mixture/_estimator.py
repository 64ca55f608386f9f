"""Robust linear regression by EM over a mixture of M-estimators (error laws).

Reference: Chapter 3, "A Bayesian approach for solving robust regression
problems", of the dissertation in ``papers/000_50456c898c6e93b0.txt``.
"""

import dataclasses
import math
import warnings
from numbers import Real

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from sklearn_bayes.utils import IntegerInterval, serialized, transactional
from sklearn_bayes.utils._intervals import warn_if_swapped_coverage
from sklearn_bayes.utils._validation import external_stacklevel
import sklearn_bayes.linear_model._mixture._selection as _min_variance
from sklearn_bayes._glm import LinearPredictorMixin, normalise_weights, validate_regression_data
from sklearn_bayes.linear_model._mixture import _aliases, _bootstrap, _copying, _finite_sample, _flags, _inference, _units
from sklearn_bayes.linear_model._mixture._inference import rounding_level as _rounding_level
from sklearn_bayes.linear_model._mixture._components import _resolve_components
from sklearn_bayes.linear_model._mixture._dead_columns import dead_columns, fit_live
from sklearn_bayes.linear_model._mixture._em import EMProblem, describe_residuals, em, log_joint
from sklearn_bayes.linear_model._mixture._s_start import mm_for_flags, s_starts
from sklearn_bayes.linear_model._mixture._lts_start import lts_starts, weighted_median, wls
from sklearn_bayes.linear_model._mixture._units import caller_random_state, standardise_robust as _standardise_robust

__all__ = ["MixtureMEstimatorRegressor"]

_MAD_TO_SD = _min_variance._MAD_TO_SD  # 1 / Phi^{-1}(3/4), one definition
_EM_SUBSAMPLE = 10000  # above 2x this many rows, EM is warm-started on a subsample of this size
_SCALE_FLOOR = 1e-9  # scales stay above this fraction of the robust scale of y (exact fits)
_POLISH_TOL = 1e-6  # tolerance of the all-rows polish (Newton steps) after a subsample fit (standardised units)
_SUB_IRLS_TOL = 1e-4  # tolerance of the subsample fit that starts the polish (its error is ~1e-2 to the all-row root)


class MixtureMEstimatorRegressor(_copying.LockedStateMixin, LinearPredictorMixin, RegressorMixin, BaseEstimator):
    """Robust linear regression with a mixture of M-estimators fitted by EM.

    The residuals ``r_i = y_i - b - x_i @ coef`` are modelled by a mixture of
    error laws ``p(r) = sum_j a_j p_j(r; s_j)`` (by default Gaussian + Laplace
    + Cauchy).  Coefficients, mixture weights ``a_j`` and scales ``s_j`` are
    fitted by maximum likelihood with an EM algorithm whose regression step is
    iteratively reweighted least squares, started from a high-breakdown
    S-estimate.

    Parameters
    ----------
    components : list or tuple, default=("gaussian", "laplace", "cauchy")
        Error laws of the mixture: names ``"gaussian"``, ``"laplace"``,
        ``"cauchy"`` or component objects (:class:`~sklearn_bayes.GaussianComponent`,
        :class:`~sklearn_bayes.LaplaceComponent`, :class:`~sklearn_bayes.CauchyComponent`
        or a subclass of :class:`~sklearn_bayes.MixtureComponent`).
    fit_intercept : bool, default=True
        Whether to fit an intercept.
    fit_scales : bool, default=True
        Whether the EM algorithm updates the component scales.  If False, the
        scales stay at their starting values (a component's ``scale`` if given,
        else the value matching the median absolute residual of the start): the
        first variant of the paper.
    variant : {"paper", "min_variance"}, default="min_variance"
        ``"paper"``: the chapter's model, coefficients, weights and scales by
        maximum likelihood (EM).  ``"min_variance"``: an adaptive
        M-estimator -- least squares, Huber (c = 1, 1.345, 2, 3), Tukey
        biweight (c = 3.44, 4.685, 6) and Cauchy (c = 1, 1.5) losses, all
        with one fixed robust scale ``s`` (1.4826 MAD of the residuals of a
        Tukey (4.685) MM step from the high-breakdown start, times
        ``sqrt(n / (n - p))``); the loss with the smallest estimated slope
        variance (trace of the sandwich ``s^2 A^-1 B A^-1``, ``A = sum
        psi'(u_i) x_i x_i^T``, ``B = sum psi(u_i)^2 x_i x_i^T``, at the MM
        residuals ``u = r / s``) is fitted by IRLS from the MM fit
        (``selected_loss_``); the error mixture is then fitted by EM to its
        residuals (weights and scales only), so ``mixture_weights_``,
        ``scales_`` and ``responsibilities_`` describe the residual law.  It
        chooses the loss by how precisely it estimates the coefficients, not
        by how well a density fits the residuals; see the user guide for the
        measured comparison.  Below 8 (effective) rows per coefficient the fit
        is Tukey (4.685) from a Huber (1.345) fit, each with its own scale; below
        12 it is compared by cross-validation with the Huber fit and, from 4, with
        lmrob's finite-sample MM (see Notes, *Small samples*).
    init : {"s", "lts", "ols"}, default="s"
        Starting fit.  ``"s"``: an S-estimate (the smallest 50 %-breakdown
        Tukey-biweight M-scale of the residuals), computed by Fast-S I-steps
        from the least-trimmed-squares candidates and from deterministic
        starts in the design (DetS-like robust correlations); resists up to
        half the data being bad leverage points, including clusters of them
        lying exactly on one hyperplane.  ``"lts"``: least trimmed squares
        from random elemental subsets with concentration steps (the previous
        default; a trimmed sum of squares can prefer a fit through an
        exact-fit cluster of ~20 % leverage points).  ``"ols"``:
        (weighted) least squares, as in the paper; not robust to leverage
        points.
    n_init : int, default=1
        Number of EM runs, started from the ``n_init`` best distinct
        candidates of the start (smallest M-scale for ``"s"``, trimmed sum of
        squares for ``"lts"``); the run with the largest objective (log-likelihood plus
        log scale prior) is kept (ignored for ``init="ols"``).  All runs share
        the scale floors and the scale prior of the best candidate, so
        they maximise the same objective.  Above 20000 rows the runs are on
        the EM subsample and only the best one is polished on all rows.
    n_subsets : int, default=500
        Number of random elemental subsets searched by the LTS search (of
        ``init="s"`` and ``init="lts"``).
    max_iter : int, default=500
        Maximum number of EM iterations per run.
    tol : float, default=1e-5
        Convergence threshold on the change of the log-likelihood per unit of
        sample weight between two EM iterations.
    min_scale_ratio : float in [0, 1), default=0.1
        Guard against scale collapse: each scale stays at least this fraction of
        the scale matching the median absolute residual of the start.
    scale_prior : float >= 0, default=1.0
        Strength ``k`` of a weak prior on each fitted scale: the penalty
        ``-k (s0_j^2 / s_j^2 + log s_j^2)`` of Chen, Tan and Zhang (2008), i.e.
        an inverse-gamma density ``(s_j^2)^{-k} exp(-k s0_j^2 / s_j^2)`` on
        ``s_j^2`` with its mode at ``s0_j^2``, ``s0_j`` the starting scale
        (for the Gaussian: ``2 k`` pseudo-observations with squared residual
        ``s0_j^2``).  With ``p`` coefficients the fit can set residuals to
        exactly 0, and the mixture likelihood is unbounded as a scale tends to 0
        (a "spike" component on a few fitted points): without the prior a
        Cauchy component collapses onto its floor (``min_scale_ratio``) and its
        huge weights ``2 / gamma^2`` pull the fit towards interpolating those
        points, costing about 20 % efficiency with Gaussian errors.  The EM
        algorithm then maximises the penalised likelihood (Chen, Tan and Zhang,
        2008).  ``0`` gives plain maximum likelihood.  Ignored with
        ``fit_scales=False`` and with a single component (whose likelihood
        is bounded unless the fit is exact).  With ``sample_weight`` the
        strength is ``k`` times the mean weight of the rows with positive
        weight (pseudo-observations of average weight), so multiplying all
        the weights by a constant changes no fitted value (only the
        log-likelihoods, by that factor).
    random_state : int, RandomState instance, numpy.random.Generator or None, default=None
        Seeds the elemental subsets of the LTS search (and the EM warm-start
        subsample when there are more than 20000 rows).  A rejected fit leaves a
        caller's ``Generator`` or ``RandomState`` as it was.
    interval_correction : {"huber", "none"}, default="huber"
        ``variant="min_variance"``: ``coef_covariance_`` times Huber's ``K^2`` and t quantiles on
        ``df_intervals_`` (effective rows) for :meth:`conf_int`; ``"none"``: the plain sandwich (as before
        issue 30, round 15) on ``n_K - p``, Kish's effective rows.  ``"paper"``: no correction.  See Notes.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Regression coefficients.
    intercept_ : float
        Intercept (0.0 if ``fit_intercept=False``).
    mixture_weights_ : ndarray of shape (n_components,)
        Fitted mixture weights ``a_j`` in the order of ``components``.
    scales_ : ndarray of shape (n_components,)
        Fitted (or fixed) scales ``s_j``, in the units of ``y``.
    components_ : list of MixtureComponent
        The component objects used.
    responsibilities_ : ndarray of shape (n_samples, n_components)
        Posterior probabilities ``z_ij`` of the training rows.
    irls_weights_ : ndarray of shape (n_samples,)
        Final IRLS weights ``sum_j z_ij w_j(r_i)`` (low for outliers; not the
        ``sample_weight`` passed to :meth:`fit`); with ``variant="min_variance"``
        the selected loss's ``psi(r/s) / (r/s)`` divided by ``s^2``.
    sample_weights_ : ndarray of shape (n_samples,)
        Deprecated alias of ``irls_weights_`` (the old name read like the
        ``sample_weight`` argument); reading it warns ``FutureWarning``.
    selected_loss_ : str or None
        ``variant="min_variance"``: the kept loss, e.g. ``"tukey(c=4.685)"``
        (tuning constant in units of the robust scale); None otherwise.
    selected_scale_ : float or None
        ``variant="min_variance"``: the fixed scale ``s`` of the selected loss (units of
        ``y``; re-estimated from its own residuals after a rejected linearity test); None
        otherwise.
    coef_covariance_ : ndarray of shape (n_features, n_features)
        Covariance of ``coef_`` in the data's units (marginal over the intercept): the
        sandwich of the selected M-estimator at its final residuals (see Notes,
        *Uncertainty*); NaN rows and columns for features that are not identified (constant
        with an intercept, or aliased: a linear combination of earlier columns; ``coef_`` 0).
    df_resid_ : int
        ``n - p - 1`` (``n - p`` without intercept): rows with positive weight minus fitted coefficients.
    df_intervals_ : float
        t quantiles' degrees of freedom (:meth:`conf_int`, :meth:`summary`): ``sum_i v_i omega_i - p`` (Notes) or ``n_K - p``.
    outlier_mask_ : ndarray of bool, shape (n_samples,)
        ``flag_outliers(X, y)`` of the training rows at the default threshold 2.5 (listed by
        :meth:`summary`).
    mm_coef_ : ndarray of shape (n_features,) or None
        ``variant="min_variance"``: coefficients of the MM-estimate whose residuals
        :meth:`flag_outliers` reads (Tukey, c = 4.685, at lmrob's finite-sample S scale, from
        I-steps from the high-breakdown start: the fit of robustbase's ``lmrob``, see Notes);
        None for ``"paper"``.
    mm_intercept_ : float or None
        Intercept of that MM-estimate (0.0 without intercept; None for ``"paper"``).
    residual_scale_ : float
        Scale of :meth:`flag_outliers`.  ``variant="min_variance"``: lmrob's finite-sample
        S scale, :math:`\\sum_i \\rho(r_i/s) = b (n - p)` (``_flags.FLAG_RULE = "round14"``: the rule
        before, see :meth:`flag_outliers`).  ``"paper"``: ``1.4826 * median |r_i|``
        of the fit's residuals.  Never below the median rounding level of the residuals
        (an exact fit leaves only rounding noise, whose median depends on the BLAS).
    n_iter_ : int
        Number of EM iterations of the kept run (``variant="min_variance"``:
        of the EM describing the residuals at fixed coefficients).
    converged_ : bool
        Whether the kept run converged.
    log_likelihood_ : float
        Sample-weighted training log-likelihood ``sum_i w_i log p(r_i)``.
    log_likelihood_history_ : ndarray
        Log-likelihood after each EM iteration of the kept run.
    objective_history_ : ndarray
        What EM maximises, after each EM iteration of the kept run
        (non-decreasing): the log-likelihood plus the log scale prior
        ``-k sum_j (s0_j^2 / s_j^2 + log s_j^2)`` (see ``scale_prior``, whose
        ``k`` is multiplied by the mean positive sample weight; equal
        to ``log_likelihood_history_`` without the prior).  With ``n_init >
        1`` the run with the largest final objective is kept.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit, if ``X`` had string column names.

    See Also
    --------
    sklearn.linear_model.HuberRegressor : a single Huber M-estimator.
    sklearn.linear_model.RANSACRegressor : consensus-based robust fitting.

    Notes
    -----
    Default (``variant="min_variance"``): an adaptive M-estimator.  From the
    high-breakdown start (``init``), one Tukey (4.685) IRLS step at the start's scale gives common
    residuals ``r`` and the scale ``s``; each loss of the family (least squares,
    Huber, Tukey, Cauchy with several constants) gets its slope sandwich
    covariance ``s^2 A^-1 B A^-1`` estimated at ``r``, and the loss with the
    smallest trace is fitted by IRLS from the MM fit.  The error mixture below
    is then fitted to the final residuals with the coefficients fixed, so
    ``mixture_weights_``, ``scales_`` and ``responsibilities_`` describe the
    residual law.  Measured against OLS, HuberRegressor, statsmodels RLM (Huber,
    Tukey), MM and LAD over eight error laws, its worst slope-MSE ratio to the
    best method is far smaller than the maximum-likelihood variant's (user
    guide, ``benchmarks/bench_mixture_m.py``).  The criterion is coefficient
    precision under the fitted linear model; when the mean is misspecified
    (Boston housing) each loss estimates a different coefficient vector and the
    redescending losses it prefers predict worse than a monotone Huber loss.
    So a rank test of linearity comes first: the Spearman correlations of the
    residuals of the rows the MM step keeps with the squared centred fitted
    values and squared centred columns, a chi-square statistic whose law under
    a linear mean with i.i.d. errors of any law is fixed by the permutation
    distribution of the ranks; if it rejects at level 0.001 the fit is Huber
    (c = 1.345) with its scale re-estimated from its own residuals.  The S
    start picks among its candidates by the M-scale of the rows that are not
    outlying in ``x``, so an exact-fit cluster of leverage points does not
    win by its zero residuals.  The EM of the residual description is
    SQUAREM-accelerated like the paper variant's; above 20000 rows it fits the
    subsample's residuals at the all-row coefficients (the weights and scales of an
    all-row EM differ by their sampling error, up to 0.012 on the weights at 10^5 rows),
    ``responsibilities_`` and ``log_likelihood_`` are one E-step on all rows, and
    ``n_iter_``, ``converged_`` and the histories are the subsample run's.  ``irls_weights_``
    are the selected loss's IRLS weights (``sample_weights_`` is a deprecated
    alias).

    ``variant="paper"``: model :math:`p(r) = \\sum_j a_j p_j(r; s_j)` with
    :math:`p_j = \\exp(-\\rho_j)`.  EM iteration :math:`t` (weights :math:`w_i`
    from ``sample_weight``):

    * E-step: :math:`z_{ij} \\propto a_j p_j(r_i; s_j)` (in log space);
    * :math:`a_j = \\sum_i w_i z_{ij} / \\sum_i w_i`;
    * scales: Gaussian :math:`\\sigma^2 = \\sum w_i z_{ij} r_i^2 / \\sum w_i z_{ij}`,
      Laplace :math:`b = \\sum w_i z_{ij} |r_i| / \\sum w_i z_{ij}`, Cauchy
      :math:`\\gamma` the root of :math:`\\sum w_i z_{ij} (r_i^2 - \\gamma^2)/(r_i^2 + \\gamma^2) = 0`;
    * coefficients: weighted least squares with weights
      :math:`w_i \\sum_j z_{ij} \\psi_j(r_i)/r_i` (``1/sigma^2``,
      ``1/(b |r|)``, ``2/(gamma^2 + r^2)``).

    Every :math:`\\rho_j(r) = g_j(r^2)` with :math:`g_j` concave, so the
    weighted quadratic majorises :math:`\\sum_{ij} w_i z_{ij} \\rho_j` and each
    step increases the EM auxiliary function: the log-likelihood never
    decreases (up to the Laplace smoothing ``delta`` and the tolerance of the
    Cauchy root).  Unlike the paper, the component weight matrices are not
    normalised by their sums: the scales carry that information, and
    normalising would break the monotonicity.  Scales are floored at
    ``1e-9`` times the robust scale of ``y``, or at the rounding level of the
    residuals (``(d + 2) eps`` times the median of ``|y_i| + |x_i| @ |coef| +
    |intercept|`` at the start) if that is larger, so exact fits cannot make
    the likelihood unbounded and no scale is fitted to rounding noise.

    Units: EM runs on standardised data (``X`` by column mean and sd, or median and MAD where gross cells carry
    the sd; ``y`` by mean, or median where gross targets carry it, and robust scale); every fitted quantity is
    mapped to the units of the data.  The algorithm is equivariant, so multiplying ``X`` by ``c`` and ``y`` by ``s``
    multiplies ``coef_`` by ``s / c`` and ``intercept_`` and ``scales_`` by ``s``, to the accuracy of the EM
    (``tol``), for any units (``y`` up to ``1e+-300``).  It is regression equivariant (``y + X g + c`` shifts
    ``coef_`` by ``g``, ``intercept_`` by ``c``): where the start is not exact and its residual scale is more than
    1000 times below ``y``'s robust scale (a strong trend), the fit runs on the start's residuals and adds the start
    back, so floors, the exact-fit test and the stopping rules follow the residuals, not the trend.  The choice of
    loss is not affine equivariant in ``X`` (``X -> X A``): the variances it compares are the slopes' in the given
    coordinates.

    EM maps are combined by SQUAREM with a monotonicity safeguard (an
    extrapolated point is kept only if its likelihood beats the plain double
    step); above 20000 rows the start, the robust scale of ``y`` and the
    EM runs use a random subsample of 10000 rows, and the best run is then
    polished by EM on all rows.  The scales are kept at least
    ``min_scale_ratio`` times their starting values (the mixture likelihood
    is unbounded otherwise).

    Start (``init="s"``): the S-estimate with the smallest 50 %-breakdown
    Tukey-biweight M-scale (``c = 1.5476``, ``b = 1/2``) among Fast-S
    refinements of the five best distinct LTS fits and of five deterministic
    starts (least squares on the half of the rows nearest the centre of ``x``
    under robust correlations: tanh, Spearman, normal scores, spatial sign, the
    half-sample nearest the median; below 12 rows per coefficient also LAD and,
    with one column, the middle half in ``x``), on at most 1500 rows (a random
    subsample above that), the winner polished by three I-steps on all rows.  A
    trimmed sum of squares sees only the best half of the residuals: when 20 %
    of the rows are leverage points exactly on one hyperplane LTS can prefer
    the fit through them (development log, "The start"); the M-scale sees every residual and the
    deterministic starts never contain such a cluster.

    Uncertainty: ``coef_covariance_`` is the sandwich of the fitted estimating
    equation :math:`\\sum_i w_i \\psi(r_i / s) x_i = 0` at the final residuals
    (standardised augmented design, then mapped to the data's units),

    .. math:: \\hat V = s^2 A^{-1} B A^{-1}, \\quad A = \\sum_i w_i \\psi'(u_i) x_i x_i^\\top,
              \\quad B = \\sum_i w_i^2 \\frac{\\psi(u_i)^2}{(1 - h_i)^2} x_i x_i^\\top,

    with the leverages :math:`h_i = w_i \\psi'(u_i) x_i^\\top A^{-1} x_i` (HC3 of MacKinnon and White; for
    least squares exactly the textbook weighted HC3): the weights are relative weights on independent rows
    (their overall size changes nothing; integer weights are not read as repeated rows), so :math:`w_i^2` in
    ``B`` (review HMX F1; was :math:`w_i`: coverage 0.72 at nominal 0.95); above 20000 rows summed over the
    fit's 10^4-row subsample, scaled to all rows (1 % relative error).  ``variant="paper"``: the sandwich of
    the mixture likelihood's scores, :math:`A = \\sum_i w_i \\psi(r_i)^2 x_i x_i^\\top` (:math:`A^{-1}` for uniform weights),
    :math:`\\psi = -(\\log p)'` at the fitted weights and scales (held fixed; the Laplace
    score's derivative is a spike at 0, so the sandwich's ``A`` is not usable there).
    Finite samples (``interval_correction="huber"``, issue 30, round 15): ``"min_variance"``
    multiplies it by :math:`K^2`, :math:`K = 1 + (p/n) \\widehat{\\mathrm{Var}}(\\psi') /
    \\overline{\\psi'}^2` (Huber 1981, section 7.6; 1 for least squares), and :meth:`conf_int`
    is Wald with Student-t quantiles on ``df_intervals_`` :math:`= \\sum_i v_i \\omega_i - p` degrees of freedom (IRLS
    weights :math:`\\omega_i = \\psi(u_i)/u_i \\in [0, 1]`, :math:`v = w` scaled to sum to Kish's :math:`n_K`).
    The intervals condition on the selected loss, whose choice is itself noisy: the
    coverage measured over 12-200 rows, with and without the correction, is in the user
    guide (p = 4 with the intercept, n = 20: 0.910 -> 0.922 Gaussian, 0.939 -> 0.949 t3).  The shortfall
    left is the selection: on draws that look heavy-tailed the rule picks a loss (Huber 1, Cauchy) whose
    sandwich, at a scale those draws make small, under-covers (n = 16, p = 4: 0.79 Gaussian, 0.87 t3: draws
    failing the small-sample guard get a collapsed scale); :meth:`bootstrap_conf_int` (opt-in, ``n_boot`` refits)
    includes the choice.  A row flagged as an outlier contributes no negative ``psi'`` to ``A`` (clipped at 0): a
    gross outlier just inside a redescending loss's cut-off otherwise cancels most of ``A`` at a leverage point
    (starsCYG, Tukey c = 6: slope standard error 2.8; clipped 0.78; development log, "Uncertainty").  If ``A`` is still not positive
    definite (a redescending loss on few rows; was NaN), or the fit passes exactly through more than half the rows
    (``y`` mostly tied, as a count that is mostly 0: intervals of rounding width), ``coef_covariance_`` is the
    least-squares HC3 sandwich of the same residuals (no ``K``, ``n_K - p``), with a ``UserWarning`` (H30S).
    Readers (``predict``, :meth:`conf_int`, ...) hold the instance lock: never a mix of two concurrent fits.
    ``"paper"`` measured 0.960 (Gaussian) and 0.933 (t3) at n = 200 (300 fits).  With p = 5 (bench_uncertainty.py, 500 intervals a cell):
    0.930, 0.950 (Gaussian, n = 200, 1000), 0.940, 0.924 (t3, n = 200, 1000).

    Small samples (issue 30): below 8 effective rows per coefficient (Kish's ``(sum w)^2 / sum w^2`` against
    ``n_features + fit_intercept``) the variances that choose the loss are estimated from 15-40 rows and pick almost
    at random, and the 50 %-breakdown start fits about half the rows exactly, trapping every redescending loss
    fitted from it.  The default then fits Huber (1.345) with its own scale (a convex loss: the start does not
    matter) and from it Tukey (4.685) with its own scale (``selected_loss_`` ``"tukey(c=4.685)"``), unless the Huber
    residuals' magnitudes rank-correlate with the squared centred columns (a Koenker-type test in ranks at level
    0.05): under such heteroscedasticity the large residuals sit at the rows far out in ``x``, the redescending step
    would reject the rows that carry the slopes, and Huber (1.0) is fitted from it (``"huber(c=1)"``).  A Huber
    start has no resistance to bad leverage points, so from 4 rows per coefficient on (where the start's half sample
    is no longer an interpolation) this fit is kept only if it flags (2.5) every row the MM fit rejects (beyond
    4.685 of its scales); otherwise the variance rule decides.  Below 12 rows per coefficient (from 8 on unless its
    one-sided form, the largest normal-score correlation, rejects at 0.001: then Huber 1.0) the fit is replaced by
    the Huber (1.345) fit with its own scale if its 10-fold cross-validated risk (mean of the smallest 80 % of the
    squared errors) is smaller (rock: the Tukey fit rejects a quarter of the rows, at 1.8 times), and from 4 on by
    lmrob's finite-sample MM (Tukey 4.685 at the finite-sample S scale) where its risk is the smallest of the three.

    Outliers: :meth:`flag_outliers` flags ``|r_i| > threshold *
    residual_scale_``, never a residual at the rounding level of its row;
    with ``variant="min_variance"`` ``r_i`` are the residuals of the
    MM-estimate (``mm_coef_``, ``mm_intercept_``) and the scale is the
    S-estimate's: the rule of robustbase's ``lmrob`` (Rousseeuw and Leroy's 2.5) at every n.
    The S scale normalised by ``n`` collapses towards an exact fit of half the rows in small
    samples (the flags marked 16-40 % of clean Gaussian rows at n = 8-16, p = 4), so the S fit
    and scale are lmrob's finite-sample ones, :math:`\\sum_i \\rho(r_i/s) = b (n - p)` (I-steps from
    each S finalist, the least such scale kept), and the MM step runs at that scale (2.4-2.8 % there;
    same rows as lmrob on 118 of 119 small real sets and 17 of 17 fresh; development log, rounds 14, L-L3);
    the fit and its loss choice do not change.  At ``n = p + 1`` nothing is flagged, and
    near ``n = 2p`` they are conservative (a +50 sd row was missed in 2 of 30 draws at n = 8,
    p = 4).  A fit tuned for prediction can mask (wood: the fit of the small-sample path leaves
    the four planted outliers inside 2.5 of its scale; the MM residuals flag
    exactly rows 4, 6, 8 and 19).
    ``irls_weights_`` and ``score_samples`` rank points by how much the fit
    discounts them.

    References
    ----------
    "A Bayesian approach for solving robust regression problems", Chapter 3 of
    the dissertation in ``papers/000_50456c898c6e93b0.txt``.  Rousseeuw and
    Van Driessen, "Computing LTS regression for large data sets" (FAST-LTS
    concentration steps).  Salibian-Barrera and Yohai, "A fast algorithm for
    S-regression estimates", JCGS 15 (2006) (Fast-S I-steps).  Hubert,
    Rousseeuw and Verdonck, "A deterministic algorithm for robust location and
    scatter", JCGS 21 (2012) (deterministic starts).  Chen, Tan and Zhang, "Inference for normal mixtures
    in mean and variance", Statistica Sinica 18 (2008) (penalised likelihood
    against degenerate scales).  Varadhan and Roland, "Simple and globally
    convergent methods for accelerating the convergence of any EM algorithm"
    (SQUAREM).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_bayes import MixtureMEstimatorRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> y = 1.0 + X @ np.array([2.0, -1.0]) + 0.1 * rng.normal(size=200)
    >>> y[:20] += 50.0  # gross outliers
    >>> reg = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    >>> np.round(reg.coef_, 1)
    array([ 2., -1.])
    >>> int(reg.flag_outliers(X, y)[:20].sum())
    20
    """

    _parameter_constraints = {
        "components": [list, tuple],
        "fit_intercept": ["boolean"],
        "fit_scales": ["boolean"],
        "variant": [StrOptions({"paper", "min_variance"})],
        "interval_correction": [StrOptions(set(_finite_sample.CORRECTIONS))],
        "init": [StrOptions({"s", "lts", "ols"})],
        "n_init": [IntegerInterval(1, None, closed="left")],
        "n_subsets": [IntegerInterval(1, None, closed="left")],
        "max_iter": [IntegerInterval(0, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "min_scale_ratio": [Interval(Real, 0, 1, closed="left")],
        "scale_prior": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state", np.random.Generator],
    }

    def __init__(
        self,
        components=("gaussian", "laplace", "cauchy"),
        *,
        fit_intercept=True,
        fit_scales=True,
        variant="min_variance",
        init="s",
        n_init=1,
        n_subsets=500,
        max_iter=500,
        tol=1e-5,
        min_scale_ratio=0.1,
        scale_prior=1.0,
        random_state=None,
        interval_correction="huber",
    ):
        self.components = components
        self.fit_intercept = fit_intercept
        self.fit_scales = fit_scales
        self.variant = variant
        self.init = init
        self.n_init = n_init
        self.n_subsets = n_subsets
        self.max_iter = max_iter
        self.tol = tol
        self.min_scale_ratio = min_scale_ratio
        self.scale_prior = scale_prior
        self.random_state = random_state
        self.interval_correction = interval_correction

    @_fit_context(prefer_skip_nested_validation=True)
    @transactional
    def fit(self, X, y, sample_weight=None):
        """Fit the mixture of M-estimators by EM.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (finite, dense).  Dead columns -- constant ones with an intercept, or
            within 1e-7 (relative residual norm of the weighted standardised column) of a linear
            combination of earlier ones, as in R's ``lm`` -- are set aside: the fit is that of the
            other columns, with ``coef_`` 0 and NaN standard errors for them.
        y : array-like of shape (n_samples,)
            Targets (finite, not constant).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights multiplying each row's log-likelihood.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        # overflow to inf is the intended value in the robust losses' saturating parts (a gross target's square)
        with caller_random_state(self.random_state) as guard, np.errstate(over="ignore"):
            return self._fit(X, y, sample_weight, guard)

    def _fit(self, X, y, sample_weight, guard, detrended=None, at=None):
        """:meth:`fit` inside the caller's transaction (``guard``: :class:`caller_random_state`); ``detrended``, ``at``:
        the refits of :func:`_units.refit_detrended` and :func:`_units.refit_floor_at_fit`, else None."""
        comps = _resolve_components(self.components)
        X, y, sw = validate_regression_data(self, X, y, sample_weight)
        dead, units = dead_columns(X, sw, self.fit_intercept, return_units=True)
        if dead.any() and not dead.all():  # constant (with an intercept) or aliased columns: the fit of the others
            return fit_live(self, X, y, sw, dead, guard)
        # weights of any overall size (1e-300, 1e308): the fit runs on sw / W, W the power of two putting the largest
        # weight in [1, 2) (exact; unit weights unchanged), and the scale prior's strength is relative to the mean
        # weight: the objective is the documented one / W
        sw, W = normalise_weights(sw)
        pos = sw > 0
        _units.check_rows(type(self).__name__, y, pos, X.shape[1] + int(self.fit_intercept), sw)
        rng = guard.generator()  # the fit's one draw from the caller's random_state
        replay = _units.Replay(rng)  # its state now: a refit (trend, floor) draws the same numbers
        # above 2 * _EM_SUBSAMPLE rows: start and EM on a random subsample, then a polish on all rows
        sub = None
        if pos.sum() > 2 * _EM_SUBSAMPLE:
            sub = np.sort(rng.choice(np.flatnonzero(pos), _EM_SUBSAMPLE, replace=False))
        rows = slice(None) if sub is None else sub
        st, Xa, yc = self._design(X, y, sw, rows, units)
        Xs, ycs, sws = Xa[rows], yc[rows], sw[rows]
        finals = None  # the S search's converged fits (the flags' start under _flags.FLAG_START = "lmrob")
        if self.init == "s":
            starts, _, finals = s_starts(Xs, ycs, sws, self.n_subsets, self.n_init, rng, finalists=True)
        elif self.init == "lts":
            starts = lts_starts(Xs, ycs, sws, self.n_subsets, self.n_init, rng)
        else:
            starts = [wls(Xs, ycs, sws)]
        tiny, mad, floors, scales0, prior, trend = self._scales_from_start(
            comps, st, X[rows], y[rows], Xs, ycs, sws, starts[0], float(np.mean(sw[pos])),
            None if detrended is None else detrended[rows], at)
        if trend is not None and detrended is None:  # y's scale is the trend's: the fit of the start's residuals
            return _units.refit_detrended(self, X, y, sample_weight, replay, *trend)
        prob = EMProblem(Xs, ycs, sws, comps, self.fit_scales, floors, **prior)
        full = None if sub is None else (Xa, yc, sw)
        if self.variant == "min_variance":
            best, loss, prob, loss_scale, flag_fit = self._fit_min_variance(prob, starts[0], mad, tiny, scales0, full,
                                                                            finals)
        else:
            (best, loss, prob), loss_scale, flag_fit = self._fit_paper(prob, starts, scales0, full), None, None
        self._store(best, loss, prob, st, comps, X, y, sw, tiny, W)
        if at is None and _units.floor_from_start(tiny, _SCALE_FLOOR, X[rows], y[rows], self, sws, st.y_scale):
            return _units.refit_floor_at_fit(self, X, y, sample_weight, replay, detrended)  # a start's floor (ols)
        if not best.converged:
            warnings.warn(f"{type(self).__name__} did not converge in max_iter={self.max_iter} EM iterations "
                          f"(tol={self.tol}); increase max_iter or tol.", ConvergenceWarning,
                          stacklevel=external_stacklevel())
        exact = weighted_median(np.abs(best.residuals), prob.sw) <= 100.0 * tiny or (  # half the rows fitted
            loss is not None and loss_scale <= 100.0 * tiny)  # exactly, or the loss's scale at its floor (H30S)
        self._store_uncertainty(best, loss, loss_scale, prob, st, X, y, flag_fit, sub, exact)
        self._fitted_with["uniform_weights"] = bool(np.ptp(sw) == 0)  # bootstrap_conf_int checks it (review HMX F3)
        return self

    def _design(self, X, y, sw, rows, units=None):
        """Standardisation and the augmented standardised design ``Xa`` and target ``yc``.

        EM runs in standardised units: ``X`` columns by their weighted moments, ``y`` by its
        robust scale on ``rows`` (so every tolerance and floor is relative to the data's own
        scale).  ``Xa`` is written in place (no ``n x d`` temporaries); with an intercept its
        last column is 1 and constant columns are 0.
        """
        n, d = X.shape
        st = _standardise_robust(X, y, sw, rows, self.fit_intercept, units)  # units: dead_columns' column_units
        Xa = np.empty((n, d + int(self.fit_intercept)))
        np.subtract(X, st.x_offset, out=Xa[:, :d])
        Xa[:, :d] /= st.x_scale
        if self.fit_intercept:
            Xa[:, :d][:, st.constant] = 0.0
            Xa[:, d] = 1.0
        return st, Xa, (y - st.y_offset) / st.y_scale

    def _scales_from_start(self, comps, st, X, y, Xs, ycs, sws, theta0, mean_weight=1.0, rounding=None, at=None):
        """Scale floors, starting scales and the scale prior, from the best high-breakdown start.

        Every start then maximises the same objective, so runs can be compared.  The absolute floor ``tiny`` is
        1e-9 of the robust scale of ``y``, or the rounding level of the residuals (at the start, or at ``at``; plus
        ``rounding``) if larger (scales fitted to rounding would depend on the BLAS).  Returns ``(tiny, mad, floors,
        scales0, prior, trend)`` in standardised units; ``trend``: the start's fit if :func:`_units.trend_dominated`.
        """
        d = X.shape[1]
        coef0 = st.coef(theta0[:d])
        icpt0 = float(st.intercept(theta0[d], coef0)) if self.fit_intercept else 0.0
        bound = _rounding_level(X, y, *(at or (coef0, icpt0)))  # at: a first fit's (coef, intercept)
        noise = weighted_median(bound if rounding is None else bound + rounding, sws) / st.y_scale
        tiny = max(_SCALE_FLOOR, noise)
        mad = weighted_median(np.abs(ycs - Xs @ theta0), sws)
        trend = (coef0, icpt0) if _units.trend_dominated(Xs, ycs, sws, theta0, mad, noise) else None
        floors = np.array([max(self.min_scale_ratio * c.scale_from_mad(mad), tiny) for c in comps])
        scales0 = [
            max(float(c.scale) / st.y_scale, tiny) if getattr(c, "scale", None) is not None
            else max(c.scale_from_mad(mad), f)
            for c, f in zip(comps, floors)
        ]
        # one component: the likelihood is bounded (exact fits aside), no prior needed
        # strength: k pseudo-observations of the mean positive weight (in the units of the weights
        # the fit runs on, sw / weight_unit; exactly k for unit weights), so the weights' overall
        # size does not matter
        k = self.scale_prior * mean_weight if len(comps) > 1 else 0.0
        return tiny, mad, floors, scales0, {"prior_scales": np.array(scales0, dtype=float), "prior_strength": k}, trend

    def _fit_paper(self, prob, starts, scales0, full):
        """``variant="paper"``: EM from every start, keep the largest objective; polish on all rows.

        Returns ``(result, None, problem)``: the kept :class:`EMResult`, no selected loss, and the
        :class:`EMProblem` it was fitted on."""
        best = None
        for theta0 in starts:
            res = em(prob, theta0, scales0, self.max_iter, self.tol)
            if best is None or res.objective > best.objective:
                best = res
        if full is not None:
            prob = EMProblem(*full, prob.comps, prob.fit_scales, prob.floors, prior_scales=prob.prior_scales,
                             prior_strength=prob.prior_strength)  # fmt: skip
            best = em(prob, best.theta, best.scales, self.max_iter, self.tol, a=best.a)
        return best, None, prob

    def _store(self, best, loss, prob, st, comps, X, y, sw, tiny, weight_unit=1.0):
        """Fitted attributes in the units of the data, from the :class:`EMResult` ``best`` on ``prob``.

        ``loss`` is the norm kept by ``variant="min_variance"`` (None for ``"paper"``).

        Densities of ``y`` are those of ``y / y_scale`` divided by ``y_scale``, and the scale
        prior's ``log s_j^2`` terms shift by ``log y_scale^2``.  The fit ran on the weights
        ``sw`` divided by ``weight_unit``: log-likelihoods and objectives are multiplied back.
        """
        d = X.shape[1]
        theta = best.theta
        log_unit = math.log(st.y_scale)
        n_prior = sum(prob.has_map) if prob.prior_strength > 0 else 0
        ll_shift = -float(sw.sum()) * log_unit
        obj_shift = ll_shift - 2.0 * prob.prior_strength * n_prior * log_unit
        self.components_ = comps
        self.selected_loss_ = None if loss is None else loss.label()
        self.coef_ = st.coef(theta[:d])
        self.intercept_ = float(st.intercept(theta[d], self.coef_)) if self.fit_intercept else 0.0
        self.mixture_weights_ = best.a
        self.scales_ = best.scales * st.y_scale
        if not self.fit_scales:  # fixed scales given in the units of y are reported as given
            for j, c in enumerate(comps):
                if getattr(c, "scale", None) is not None and float(c.scale) / st.y_scale >= tiny:
                    self.scales_[j] = float(c.scale)
        self.responsibilities_ = np.ascontiguousarray(best.z.T)
        with np.errstate(over="ignore", under="ignore"):  # 1 / scale^2: beyond float range for y ~ 1e+-300
            self.irls_weights_ = best.W / st.y_scale / st.y_scale
        with np.errstate(over="ignore"):  # weights near 1e308: sums of log-likelihoods beyond float64
            self.log_likelihood_ = weight_unit * (best.ll + ll_shift)
            self.log_likelihood_history_ = weight_unit * (best.ll_history + ll_shift)
            self.objective_history_ = weight_unit * (best.history + obj_shift)
        self.n_iter_ = best.n_iter
        self.converged_ = bool(best.converged)
        if loss is None:  # "paper": robust residual scale, never below the rounding level of the residuals
            r = best.residuals * st.y_scale  # ("min_variance": the MM fit's, in _store_uncertainty)
            rounding = _rounding_level(X, y, self.coef_, self.intercept_)
            self.residual_scale_ = max(_MAD_TO_SD * weighted_median(np.abs(r), sw), weighted_median(rounding, sw))

    def _fit_min_variance(self, prob, theta0, mad, tiny, scales0, full, finals=None):
        """``variant="min_variance"``: the M-estimator of least estimated variance, then the error mixture of
        its residuals (EM at fixed coefficients).  ``full``: ``(Xa, y, sw)`` of all rows when the selection ran
        on a subsample (the kept loss is then polished on all rows and the mixture fitted to the subsample's
        residuals at that fit).  Returns ``(EMResult, norm, EMProblem of all rows, scale, MM fit)``."""
        slopes = np.arange(prob.Xa.shape[1] - int(self.fit_intercept))
        flag_fit = mm_for_flags(prob.Xa, prob.y, prob.sw, theta0, tiny)  # the loss choice's guard reads it
        # the flags' MM fit and scale (round L2: robustbase lmrob's rule at every n; _flags.FLAG_RULE)
        flags_fit = _flags.flags_fit(prob.Xa, prob.y, prob.sw, theta0, tiny, flag_fit, finals)  # finals: FLAG_START
        sel = _min_variance.select(prob.Xa, prob.y, prob.sw, theta0, _MAD_TO_SD * mad, wls, weighted_median, tiny,
                                   slopes, mm=flag_fit, tol=1e-8 if full is None else _SUB_IRLS_TOL,
                                   fs_fit=_flags.flags_mm_fit)  # round 17's optional third candidate
        theta, norm, scale = sel["theta"], sel["loss"], sel["scale"]
        if full is not None:  # Newton steps to within 1e-6 (1 + max |theta|) of the all-row root (inside its SE)
            theta = _min_variance.polish_from_subsample(prob, full, theta, scale, norm, wls, _POLISH_TOL)
            desc = describe_residuals(prob, theta, scales0, self.max_iter, self.tol, None)  # the subsample's residuals
            prob = EMProblem(*full, prob.comps, prob.fit_scales, prob.floors, prior_scales=prob.prior_scales,
                             prior_strength=prob.prior_strength)  # fmt: skip
        r = prob.y - prob.Xa @ theta
        W = norm.weights(r / scale) / (scale * scale)
        if full is None:
            best = describe_residuals(prob, theta, scales0, self.max_iter, self.tol, W, r=r)
        else:  # one E-step on all rows at the subsample's weights and scales
            best = describe_residuals(prob, theta, desc.scales, 0, self.tol, W, a=desc.a, r=r)
            best = dataclasses.replace(best, history=desc.history, ll_history=desc.ll_history, n_iter=desc.n_iter,
                                       converged=desc.converged)  # fmt: skip
        return best, norm, prob, scale, flags_fit

    def _store_uncertainty(self, best, loss, loss_scale, prob, st, X, y, flag_fit=None, sub=None, exact=False):
        """``coef_covariance_`` (and the intercept's row), ``selected_scale_`` and ``outlier_mask_``.

        The sandwich of the fitted estimating equation at the final residuals of the rows fitted
        (all rows): the selected loss at its fixed scale (``"min_variance"``), or the inverse
        outer product of the mixture likelihood's scores (``"paper"``, :class:`MixtureScore`).
        ``sub``: the subsample (above 20000 rows) the ``"min_variance"`` sandwich is summed over.
        """
        d = X.shape[1]
        self._fitted_with = {"variant": self.variant, "fit_intercept": bool(self.fit_intercept),
                             "interval_correction": self.interval_correction if loss is not None else "none",
                             "params": clone(self).get_params(deep=False)}  # the rule bootstrap_conf_int refits
        self.selected_scale_ = None if loss is None else float(loss_scale * st.y_scale)
        if flag_fit is None:  # "paper": flags from the fit itself
            self.mm_coef_, self.mm_intercept_ = None, None
        else:
            theta, scale = flag_fit
            self.mm_coef_ = st.coef(theta[:d])
            self.mm_intercept_ = float(st.intercept(theta[d], self.mm_coef_)) if self.fit_intercept else 0.0
            sw = prob.sw if len(prob.sw) == len(y) else np.ones(len(y))
            rounding = _rounding_level(X, y, self.mm_coef_, self.mm_intercept_)
            self.residual_scale_ = max(float(scale * st.y_scale), weighted_median(rounding, sw))
        coef, icpt = self._flag_params()
        r = y - X @ coef - icpt
        if flag_fit is None:
            rounding = _rounding_level(X, y, coef, icpt)
        self.outlier_mask_ = np.abs(r) > np.maximum(2.5 * self.residual_scale_, rounding)
        if loss is None:
            norm, scale, flagged = _inference.MixtureScore(best.W), 1.0, None
        else:
            norm, scale = loss, loss_scale
            flagged = self.outlier_mask_ if len(self.outlier_mask_) == len(best.residuals) else None
        notes = self._fitted_with["fallback"] = []  # why the least-squares sandwich replaced the loss's (summary)
        cov, self.df_resid_ = _inference.parameter_covariance(prob.Xa, best.residuals, prob.sw, scale, norm, st,
                                                              self.fit_intercept, flagged=flagged, exact=exact,
                                                              rows=None if loss is None else sub, notes=notes,
                                                              details=(details := {}))  # fmt: skip
        k, self.df_intervals_ = 1.0, _finite_sample.kish_dof(prob.sw, self.df_resid_)  # review HMX F1
        if not notes and loss is not None and self.interval_correction == "huber":  # round 15: K, effective rows
            k, self.df_intervals_ = _finite_sample.interval_correction(best.residuals, prob.sw, scale, norm, flagged,
                                                                       self.df_resid_)  # fmt: skip
        _inference.store_covariance(self, cov, k, notes, details)

    def _flag_params(self):
        """Coefficients and intercept whose residuals are flagged: the MM fit (``mm_coef_``), else the fit."""
        if getattr(self, "mm_coef_", None) is None:
            return self.coef_, self.intercept_
        return self.mm_coef_, self.mm_intercept_

    predict = serialized(LinearPredictorMixin.predict)  # readers hold the instance lock: one fit, never a mix

    @serialized
    def conf_int(self, alpha=0.05):
        """Wald confidence intervals for ``coef_`` from the sandwich covariance.

        Parameters
        ----------
        alpha : float in (0, 1), default=0.05
            One minus the nominal coverage (0.05: 95 %; above 0.5 a ``UserWarning``: a swapped convention?).

        Returns
        -------
        intervals : ndarray of shape (n_features, 2)
            Lower and upper ends ``coef_ -+ t_{df, 1 - alpha / 2} se`` (``se`` the square roots of the
            diagonal of ``coef_covariance_``, ``df`` = ``df_intervals_``).  NaN for a feature that is not
            identified (constant with an intercept, aliased, or resting on no row the loss keeps or only on
            rows of leverage 1, such as a one-row dummy: a warning names it; user guide, *Warnings*).

        Notes
        -----
        Student-t quantiles on the effective rows (``interval_correction``): the sandwich's scale and
        matrices are estimated from the same rows.  A one-row dummy gets NaN, not a variance: its row has
        leverage 1, so its residual is 0 and the others' residuals say nothing about it (a model-based
        variance would assume i.i.d. errors, which the HC sandwich does not).  The intervals are conditional on the selected loss
        (they ignore the noise of its choice); see the user guide for the coverage measured with it.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_bayes import MixtureMEstimatorRegressor
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(200, 2))
        >>> y = 1.0 + X @ np.array([2.0, -1.0]) + rng.standard_t(3, size=200)
        >>> ci = MixtureMEstimatorRegressor(random_state=0).fit(X, y).conf_int()
        >>> bool(np.all((ci[:, 0] < [2.0, -1.0]) & ([2.0, -1.0] < ci[:, 1])))
        True
        """
        check_is_fitted(self)
        alpha = _inference.validate_alpha(alpha)
        warn_if_swapped_coverage(alpha, "alpha")
        std = _inference.params_std(self)[: len(self.coef_)]
        return _inference.wald_intervals(self.coef_, std, _inference.interval_dof(self), alpha)

    @serialized
    def bootstrap_conf_int(self, X, y, alpha=0.05, n_boot=50, sample_weight=None, random_state=None, scheme="residual"):
        check_is_fitted(self)
        warn_if_swapped_coverage(alpha, "alpha")
        return _bootstrap.bootstrap_intervals(self, X, y, sample_weight, alpha, n_boot, random_state, scheme)[0]

    bootstrap_conf_int.__doc__ = _bootstrap.BOOTSTRAP_CONF_INT_DOC

    @serialized
    def summary(self, alpha=0.05, X=None, y=None, threshold=2.5):
        """A statsmodels-style summary of the fit: coefficients, the loss, the error mixture, outliers.

        Parameters
        ----------
        alpha : float in (0, 1), default=0.05
            One minus the coverage of the intervals in the table.
        X, y : array-like, default=None
            Rows whose outliers are listed (:meth:`flag_outliers`).  If omitted, the training
            rows flagged at fit (``outlier_mask_``, threshold 2.5); a ``threshold`` other than
            2.5 then needs ``X`` and ``y``.
        threshold : float, default=2.5
            Cut-off of :meth:`flag_outliers` for ``X``, ``y``.

        Returns
        -------
        summary : MixtureSummary
            ``print(summary)`` shows the tables; ``summary.coefficients`` (coefficients with the
            intercept as ``const``, standard errors, t values, p-values and the ``1 - alpha``
            interval) and ``summary.mixture`` (weights and scales of the error laws) are
            pandas DataFrames when pandas is installed (record arrays otherwise);
            ``summary.outliers`` the flagged row indices, ``summary.info`` the rest.

        Notes
        -----
        Rows are named from ``feature_names_in_`` when the training ``X`` had column names,
        else ``x0, x1, ...``.  The t values are ``coef / se`` and their p-values two-sided
        Student-t with ``df_intervals_`` degrees of freedom, as :meth:`conf_int`.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_bayes import MixtureMEstimatorRegressor
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(200, 2))
        >>> y = 1.0 + X @ np.array([2.0, -1.0]) + rng.standard_t(3, size=200)
        >>> s = MixtureMEstimatorRegressor(random_state=0).fit(X, y).summary()
        >>> list(s.coefficients.index)
        ['x0', 'x1', 'const']
        """
        check_is_fitted(self)
        warn_if_swapped_coverage(alpha, "alpha")
        return _inference.summarise(self, alpha, X, y, threshold)

    sample_weights_ = _aliases.sample_weights  # deprecated alias of irls_weights_ (a FutureWarning)

    def _residuals(self, X, y):
        check_is_fitted(self)
        X, y, _ = validate_regression_data(self, X, y, reset=False)
        return X, y, y - X @ self.coef_ - self.intercept_

    @serialized
    def score_samples(self, X, y):
        """Log-likelihood of each ``(x_i, y_i)`` under the fitted error mixture.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        log_density : ndarray of shape (n_samples,)
            ``log sum_j a_j p_j(y_i - predict(x_i); s_j)``.
        """
        r = self._residuals(X, y)[2]
        L = log_joint(r, self.components_, self.mixture_weights_, self.scales_)
        return logsumexp(L, axis=0)

    @serialized
    def predict_proba_components(self, X, y):
        """Posterior probability of each component for each ``(x_i, y_i)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        resp : ndarray of shape (n_samples, n_components)
        """
        r = self._residuals(X, y)[2]
        L = log_joint(r, self.components_, self.mixture_weights_, self.scales_)
        return np.exp(L - logsumexp(L, axis=0)).T

    @serialized
    def flag_outliers(self, X, y, threshold=2.5):
        """Flag points whose robustly standardised residual exceeds ``threshold``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        threshold : float, default=2.5
            Cut-off on ``|r_i| / residual_scale_`` (2.5 is the customary cut-off
            of Rousseeuw and Leroy for LTS / MM fits).  ``r_i`` are the residuals of
            the MM-estimate (``mm_coef_``, ``mm_intercept_``) with
            ``variant="min_variance"``, of the fit itself with ``"paper"``.

        Returns
        -------
        is_outlier : ndarray of bool, shape (n_samples,)

        Notes
        -----
        A residual at the rounding level of its row, ``|r_i| <= (d + 2) eps (|y_i| +
        |x_i| @ |coef_| + |intercept_|)`` (the error bound of evaluating it), is never
        flagged, whatever ``residual_scale_`` is: after an exact fit the residuals of the
        fitted rows are rounding noise, and which of them exceed a multiple of their median
        would depend on the BLAS.  The rule is robustbase ``lmrob``'s (class Notes): the MM fit (Tukey 4.685) from
        the S finalist of least finite-sample S scale :math:`s`, :math:`\\sum_i \\rho(r_i/s) = b (n - p)`, flags
        :math:`|r_i| > 2.5 s`: lmrob's rows on 118 of 119 small real sets, 17 of 17 fresh (``_flags.FLAG_START =
        "first"``, the fit's S start: 115, 17); little power at ``n <= 2p``, none at n = p + 1.
        """
        threshold = _inference.validate_threshold(threshold)
        X, y, _ = self._residuals(X, y)
        coef, icpt = self._flag_params()
        r = y - X @ coef - icpt
        rounding = _rounding_level(X, y, coef, icpt)
        return np.abs(r) > np.maximum(threshold * self.residual_scale_, rounding)
