"""Docstring templates shared by the four SubsampledPrior* estimators (filled in by :func:`_doc`)."""

_PARAMETERS = """
    n_subsamples : 'auto', int >= 2 or float > 0, default='auto'
        Number ``m`` of subsamples.  ``'auto'`` is the dissertation's rule of thumb
        ``m = ceil(N / n)`` (each row used about once, so the subsample fits are weakly
        dependent), but at least {min_subsamples}.  A float is the expected number of times each
        row is used: ``m = ceil(n_subsamples * N / n)``.  At most ``m * n <= max(100 N, 10**6)``
        drawn rows (each row used 100 times on average, or a million indices): more only costs
        time and memory -- the prior's Monte Carlo error is already below a tenth of its sampling
        error -- and a larger value is refused with a ``ValueError`` naming ``n_subsamples`` (10**7
        ran for minutes and held over 2 GB of index arrays).
    subsample_size : 'auto', int >= 2 or float in (0, 1), default='auto'
        Rows ``n`` per subsample, drawn without replacement.  ``'auto'`` is
        ``max(ceil({fraction} N), ceil({rows_per_param} p), ceil(5 / r))`` with ``p`` the number of
        parameters of one unregularised fit (features, times the number of linear predictors, plus
        the intercepts) and ``r`` the share of the rarest level (the rarer extreme value of a
        column such as a 0/1 dummy, or the rarest class), so that a subsample sees each level
        about 5 times{epv}; capped at ``max(p + 1, N // 2)`` and at ``N - 1``; on data so small that
        this is at most ``p``, the fits are rank-deficient or separated and the fallback below
        applies (with a :class:`SubsampleFitWarning`).  A float is a fraction of ``N``.  An
        explicit size must satisfy ``n < N``, and ``p < n`` with ``prior_scale='paper'`` (whose
        subsample fits are unregularised), otherwise ``fit`` raises a ``ValueError``; with
        ``'loo'`` the subsample fits are penalised and exist at any size ``n >= 2``.
    covariance : {{'full', 'diag'}}, default='full'
        Prior covariance: the full covariance of the subsample coefficients, or only their
        variances (independent per-coefficient shrinkage, easy to interpret).
    covariance_scaling : {{None, 'subsample_size', 'jackknife'}}, default=None
        ``prior_scale='paper'`` only (with ``'loo'`` the scale is chosen).  Multiply the subsample covariance by nothing, by ``n`` (the dissertation's
        ``subs.adj``: a unit-information prior, the weakest penalty) or by the Monte-Carlo
        delete-d jackknife correction ``n (m - 1) / ((N - n) m)`` (roughly the variance of an
        estimate from all ``N`` rows: the strongest penalty).
    shrinkage : 'auto', 'ledoit-wolf', float in [0, 1] or None, default='auto'
        Shrinkage of the subsample *correlation* matrix towards the identity (i.e. of the
        covariance towards its diagonal).  ``'auto'`` applies the Ledoit-Wolf intensity only when
        the covariance is rank-deficient (``m <= p``) or its correlation matrix has a condition
        number above 1e10; ``'ledoit-wolf'`` always; a float is a fixed intensity; None never
        (``fit`` raises if the covariance is then singular).  Ignored with ``covariance='diag'``.
    prior_scale : {prior_scale_header}
        How the prior is set from the subsample fits.  ``'loo'``: every subsample fit is
        penalised by the unit prior :math:`N(0, I)` on the standardised coefficients (so it exists
        and is unique whatever the subsample's size, rank or separation: no fit is replaced), and
        the prior is :math:`N(c, \\tau\\Sigma)` with the shape :math:`\\Sigma` (the subsample
        covariance, normalised, or the identity), the mean :math:`c` (the subsample mean or 0;
        the subsample candidates only when ``n <= N / 4``) and the scale
        :math:`\\tau` that minimise the leave-one-out risk (the GLMs: the strongest
        :math:`\\tau` within half a standard error of it; see *Tuning* in the Notes); the
        chosen candidate is ``prior_choice_``.  ``'paper'``: Algorithm 1 as published -- the
        unregularised subsample fits (with the separation fallback) and their covariance at scale
        1, after ``covariance_scaling`` and ``penalty``; ``python -m sklearn_bayes reproduce
        subsampled`` runs it.{prior_scale_evidence}
    penalty : {{'half', 'full'}}, default='half'
        ``prior_scale='paper'`` only (with ``'loo'`` the scale is chosen).  ``'half'`` adds :math:`\\tfrac12(\\beta-\\beta_0)^\\top\\hat S^{{-1}}(\\beta-\\beta_0)`, the negative
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
        Number of subsample fits replaced by the fallback (``prior_scale='paper'``; always 0
        with ``'loo'``, whose penalised subsample fits always exist).
    prior_choice_ : dict or None{per_class_list}
        ``prior_scale='loo'``: the chosen candidate, ``{{'shape': 'subsample' or 'identity',
        'mean': 'subsample' or 'zero', 'scale': tau (prior variance scale in the standardised
        units; in the weights' units where the covariances are, see *Sample weights*, else per mean unit of
        weight), 'loo_risk': the leave-one-out risk at that scale (the GLMs: the strongest prior
        within half a standard error of the minimum; the SVMs: the number of leave-one-out
        misclassifications), 'at_grid_boundary': bool}}``, for the SVMs also ``'intercept':
        'free', 'penalised'`` or ``'none'`` (without ``fit_intercept``; penalised: the intercept under the same prior :math:`N(0, \tau)`, with
        ``prior_mean_`` and ``prior_covariance_`` those of the coefficients), for the logistic
        regression also ``'scale_rule': 'evidence'``, ``'near-separated'`` or ``'loo'`` (which rule set the scale;
        ``'loo_risk'`` is then the leave-one-out risk at that scale); None with ``'paper'``.
    n_iter_ : int
        Newton iterations of the final MAP fit{n_iter_note}.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during ``fit`` (only when ``X`` has string column names)."""

_UNCERTAINTY_ATTRS = """
    coef_covariance_ : ndarray of shape {cov_shape}
        Posterior covariance of the coefficients at the MAP (Laplace approximation), in the
        units of ``coef_``; marginal over the intercept (see *Uncertainty* in the Notes).
    coef_sampling_covariance_ : ndarray of shape {cov_shape}
        Inverse observed information of the data alone at the MAP (the prior left out), in the
        units of ``coef_``; marginal over the intercept.  Where that information is singular, the
        limit of the inverse of (information + eps I): infinite variances for the coefficients the
        data alone do not identify (more features than rows, collinear or constant columns)."""

_UNCERTAINTY_NOTES = """

    **Uncertainty.**  ``coef_covariance_`` is the inverse Hessian of the negative log posterior
    at the MAP, :math:`\\Sigma = \\big(\\sum_i w_i \\ell''_i \\tilde x_i \\tilde x_i^\\top +
    \\operatorname{{diag}}(\\hat S^{{-1}}, 0)\\big)^{{-1}}` with :math:`\\tilde x_i = (x_i, 1)` and
    :math:`\\ell''_i` the second derivative of the loss at the fitted linear predictor ({hess_text});
    the prior term is the one the MAP objective uses (doubled with ``penalty='full'``; with
    ``prior_mean_method='extra_column'`` the Laplace approximation of the reparametrised problem
    in :math:`(u, c)`, mapped to :math:`\\beta = u + c\\beta_0`).  The whole matrix, intercept
    included (unpenalised: a flat prior), is inverted and its coefficient block kept, so the
    covariance is *marginal* over the intercept (its uncertainty is accounted for, as in the
    coefficient covariance of an ordinary least-squares fit), not conditional on its estimate.  It is computed on the standardised data and mapped to the
    data's units like ``coef_`` (entry :math:`(j, k)` times :math:`t_j t_k`,
    :math:`t_j = s_y / s_{{x_j}}`).  ``conf_int(covariance='posterior')`` returns
    :math:`\\hat\\beta_j \\mp z_{{1-\\alpha/2}} \\Sigma_{{jj}}^{{1/2}}`.

    The prior is learnt from the same rows, so the posterior counts part of the data's
    information twice: with ``prior_scale='paper'`` its precision is about :math:`(1 + n/N)`
    times the data's, negligible when the subsample size ``n`` is a small fraction of ``N``.
    With the default ``prior_scale='loo'`` the prior is also tuned for prediction (shrinkage
    biases large coefficients, a small-scale prior around the subsample mean is overconfident),
    so its posterior intervals are credible intervals of a tuned prior.  ``conf_int()`` uses by
    default ``coef_sampling_covariance_`` :math:`C` (the data's information counted once)
    around :math:`\\hat\\beta + C P (\\hat\\beta - \\beta_0)`, one Newton step of the data's negative
    log-likelihood from the MAP (the prior's pull removed to first order): the Wald interval of
    the data alone, which reached the nominal level in every measured setting.  Measured
    coverage of nominal 95 % intervals (well-specified data, 5 standard-normal features, pooled
    over the coefficients; ``tests/linear_model/subsampled_prior/test_uncertainty.py``):
{coverage_text}"""

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

    **Tuning** (``prior_scale='loo'``, the default).  The prior above is almost flat when the
    subsample fits nearly interpolate (``n`` close to the number of parameters: small or wide
    data) and it is centred on their noisy mean, so Algorithm 1 barely regularises exactly where
    regularisation matters.  The default keeps the subsamples as a source of candidate priors
    and chooses among :math:`N(c, \\tau\\Sigma)`, :math:`\\Sigma` in {{the subsample covariance
    (normalised to mean variance 1), the identity}}, :math:`c` in {{the subsample mean, 0}},
    :math:`\\tau > 0` -- the subsample candidates only when ``n <= N / 4``, since moments fitted
    on most rows follow their noise and flatter their own risk -- the one with the smallest
    leave-one-out risk
    :math:`\\sum_i w_i L(y_i, \\eta_{{-i}})`.  Squared loss: the exact leave-one-out residuals of the
    linear smoother, from one eigendecomposition per shape, over 56 penalties (generalised
    cross-validation above 20 000 rows).  Other losses: the approximate leave-one-out predictor
    :math:`\\eta_{{-i}} = \\eta_i + J_i (I - W_i J_i)^{{-1}} g_i`, :math:`J_i = \\tilde x_i^\\top H^{{-1}}
    \\tilde x_i` (one Newton step of the objective without row :math:`i` from the full fit; Rad and
    Maleki, 2020), along :math:`\\log_{{10}}\\tau \\in [-4, 3]` (a grid of decades, then a bounded
    search).  The linear SVMs count the leave-one-out misclassifications along a grid of decades
    of :math:`\tau`, with one more candidate, the prior :math:`N(0, \tau I)` on the coefficients
    *and* the intercept (``LinearSVC``'s model on standardised features), and keep the fewest
    errors; the count is flat over a decade or two, and among equal counts they keep the
    smallest summed probability of a wrong leave-one-out sign,
    :math:`\\sum_i w_i \\Phi(-y_i\\eta_{{-i}} / s_i)`, :math:`s_i^2 = J_i / (1 - W_i J_i)` the
    variance of :math:`\\eta_{{-i}}` under the Laplace posterior without row :math:`i` (issue 29,
    round 4: on 50 splits of five dev cells it lowered the mean ratio to the grid search's test
    error from 0.97 to 0.94, wine 0.96 to 0.79, Pima 1.01 to 0.98, breast cancer 0.94 to 0.98
    (the strongest prior of the tie, round 3's rule, before)); one-vs-rest
    problems share one prior, the one whose leave-one-out multi-class prediction errs least.  The GLMs (logistic, multinomial, Poisson) then take the
    strongest prior, of the chosen shape and mean, whose leave-one-out risk is within half a
    standard error of the minimum (the standard error of the sum of the paired row differences,
    :math:`\\sqrt N \\,\\mathrm{{sd}}_i(L_i(\\tau) - L_i(\\hat\\tau))`, located to 1/8 decade): on
    heavy-tailed counts and near-separated classes the minimum rests on a few rows and weak
    priors extrapolate badly to new ones (measured in issue 29: up to 3.9x the grid search's
    test deviance at the minimiser, 0.86x with the rule).  The subsample mean depends on the rows it was fitted on, so row :math:`i`'s
    leave-one-out prediction uses the mean of the subsample fits without row :math:`i` (first
    order: :math:`x_i^\\top H^{{-1}} P (c_{{-i}} - c)`).  The subsample fits are penalised by
    :math:`N(0, I)` on the standardised coefficients, so they exist for any subsample.{evidence_notes}

    **Sample weights** multiply the losses, in the subsample fits and the MAP fit; rows with
    zero weight are never drawn.  Because subsamples are drawn by rows, a weight of 2 is not
    the same as a repeated row for the fit (other subsamples, so another prior).  The prior's
    scale is searched per mean unit of weight, so a constant factor on the weights does not
    change the fit of the ridge, the logistic regression or the SVM.  The covariances read the
    weights as R's ``glm`` reads prior weights.  Where the variance is known given the weights
    (logistic, Poisson, the ridge with a given ``noise_variance``) they are frequencies or
    exposures: the information is :math:`\\sum_i w_i \\ell''_i \\tilde x_i \\tilde x_i^\\top`, a
    row of weight ``k`` carries the information of ``k`` repeated rows, and ``coef_covariance_``,
    ``coef_sampling_covariance_``, ``prior_covariance_`` (the prior in the same units: the
    objective is :math:`\\sum_i w_i L_i + \\tfrac12 (\\beta - \\beta_0)^\\top P (\\beta - \\beta_0)`,
    :math:`P` = ``prior_precision_``) and ``prior_choice_['scale']`` are in the weights' own
    units (weights times ``c``: divided by ``c``).  The Poisson regressor reads its weights as
    exposures, scikit-learn's idiom for rates (``y = counts / exposure``, ``sample_weight =
    exposure``): it fits the counts, with the exposures in units of their mean and the rates per
    mean exposure (the intercept shifted back), so the fit and every interval are the same in any
    unit of exposure, and ``dispersion_`` is the counts' Pearson dispersion.  With an estimated
    dispersion the weights' scale cancels from the covariances: the ridge's (``noise_variance='auto'``)
    are per mean unit of weight, unchanged by a constant factor, as in R's gaussian ``glm``, and
    the Poisson ``dispersion='pearson'`` intervals multiply the counts' covariance by their
    dispersion (R's quasi-Poisson).  ``prior_scale='paper'``, whose
    fixed prior weighs against the weighted sum of losses, reads them as frequencies throughout.
    (Review HSR, F1: all covariances were per mean unit of weight before, so Poisson intervals
    with exposures in months were 69 times the Wald interval's width and covered 1.000, and in
    thousands of years covered 0.769.)

    **Units.**  All fits run on standardised features (each column centred at its weighted
    mean when an intercept is fitted, and divided by its weighted standard deviation -- root
    mean square without intercept{target_units}); coefficients, intercepts, the prior moments
    and the subsample coefficients are reported in the units of the data.  Algorithm 1 is
    equivariant under such changes of units (unregularised fits, the prior built from them and
    the MAP fit transform together, and the shrinkage acts on the scale-free correlation
    matrix), so this changes nothing mathematically; it makes the solver's tolerances
    (rank detection, variance floors, convergence) relative to the data.  Multiplying ``X`` by
    ``c`` multiplies ``coef_`` by ``1 / c``{target_equivariance}, up to rounding, for any ``c``."""


_EVIDENCE = """  ``'evidence'`` (the default here): as ``'loo'``, but
        within each candidate shape and mean the scale :math:`\\tau` (with the noise variance)
        maximises the marginal likelihood of the data (type-II maximum likelihood, in closed form
        from the same eigendecomposition), and the leave-one-out risk at that scale chooses among
        the candidates (see *Tuning* in the Notes)."""


_EVIDENCE_NOTES = """

    **Evidence** (``prior_scale='evidence'``, the ridge's default).  With
    :math:`A = W^{1/2} X L = U\\,\\mathrm{diag}(s)\\,V^\\top` (:math:`\\Sigma = L L^\\top`),
    :math:`r = W^{1/2}(y - X c)`, :math:`u = U^\\top r` and :math:`\\lambda = \\sigma^2/\\tau`, the
    residuals are :math:`N(0, \\sigma^2 (I + A A^\\top/\\lambda))` under the prior; profiling
    :math:`\\sigma^2` out, the scale minimises
    :math:`n' \\log Q(\\lambda) + \\sum_j \\log(1 + s_j^2/\\lambda)`,
    :math:`Q(\\lambda) = |r|^2 - |u|^2 + \\sum_j u_j^2 \\lambda/(s_j^2 + \\lambda)`, :math:`n' = N - 1`
    with an intercept (the centred residuals' likelihood), else :math:`N`: the grid of 56
    penalties, then a bounded search.  When the Gaussian prior holds this estimate of the scale
    varies less than the leave-one-out minimiser (issue 29, round 5: on the synthetic cells
    0.974-0.998 of ``RidgeCV``'s leave-one-out test MSE, against 0.995-1.000 by leave-one-out);
    the evidence is not compared across candidates (their shape and mean come from the same
    rows): their leave-one-out risks at their evidence scales are."""


_EVIDENCE_LOGISTIC = """  With two classes ``'loo'`` sets the scale by the
        leave-one-out *Brier score* where the classes nearly separate (the fit at the weakest prior
        searched misclassifies at most 2 % of the training weight, at least 10 rows; see *Near
        separation* in the Notes; ``prior_choice_['scale_rule']`` is then ``'near-separated'``).
        ``'loo-log-loss'``: ``'loo'`` without that branch, the default before round HSP, bit for bit.
        ``'evidence'`` (an option, not the default; binary
        problems -- with more than two classes it is ``'loo'``): as ``'loo'``, but the scale
        :math:`\\tau` of the chosen shape and mean maximises the Laplace approximation of the
        marginal likelihood, unless the classes are (quasi-)separated or that maximum is at an end
        of the search, where ``'loo'``'s scale stays (``prior_choice_['scale_rule']`` says which;
        see *Tuning* in the Notes)."""


_EVIDENCE_NOTES_LOGISTIC = """

    **Near separation** (``prior_scale='loo'``, two classes; round HSP, review HQZ).  After the
    shape :math:`\\Sigma` and the mean :math:`c` are chosen, let :math:`\\hat\\beta_{\\max}` be their
    fit at the weakest prior searched, :math:`\\tau = 10^3`, and
    :math:`e = \\sum_i w_i [\\,(2y_i - 1)\\,\\eta_i(\\hat\\beta_{\\max}) \\le 0\\,]` its misclassified
    weight.  Where :math:`0 < e \\le 0.02 \\sum_i w_i` and :math:`e \\ge 10\\,\\bar w` (the classes
    nearly, but not completely, separate, and at least ten rows overlap), the scale minimises the
    approximate leave-one-out Brier score
    :math:`\\sum_i w_i\\,(\\sigma(\\eta_{-i}) - y_i)^2` (:math:`\\sigma` the logistic function,
    :math:`\\eta_{-i}` the predictor of the *Tuning* step) over the decades of
    :math:`\\log_{10}\\tau \\in [-4, 3]`, then a bounded search between the best decade's neighbours;
    there is no standard-error rule.  Why: near separation the leave-one-out log-loss rests on one or
    two rows whose leave-one-out losses grow linearly with the coefficients (on MASS Aids2, 1421
    training rows: 36 and 12 nats of a total 138, every other row below 3.1); its minimum -- exact or
    approximate alike -- follows where those rows fall, and they inflate the standard error, so the
    half-standard-error rule moved 3.5-4 times further towards the prior; the Brier score is bounded
    per row.  With fewer overlapping rows the maximum-likelihood fit rests on them and weak priors
    extrapolate badly, so the branch needs ten.  Measured (20 paired stratified 50/50 splits, ratios to
    ``'loo-log-loss'``, mean +- SE): Aids2 (development) Brier 0.765 +- 0.043, log-loss 0.840 +- 0.032;
    on 44 fresh real sets fixed before measuring, the branch fired on one (KMsurv pneumon, 3470 rows):
    Brier 0.983 +- 0.009 and log-loss 1.034 +- 0.022, re-run on 20 other splits 0.959 +- 0.011 and
    0.997 +- 0.012; elsewhere the output is unchanged bit for bit (the other 43 sets, the benchmark's
    eleven logistic cells).  Fit time 0.9-1.1 of ``'loo-log-loss'``'s on the fresh sets; where the
    weak-prior skip had saved the fit at :math:`\\tau = 10^3` it is computed alone, from the limit fit
    (1-3 % of the fit's time on tall overlapping data: 0.006 of 0.29 s at 20 000 rows, 0.040 of 3.7 s at
    200 000, p = 30).

    **Evidence** (``prior_scale='evidence'``, an option; binary problems).  After ``'loo'`` has
    chosen the shape :math:`\\Sigma` and the mean :math:`c`, the scale minimises the negative log of
    the Laplace approximation of the marginal likelihood,
    :math:`\\sum_i \\bar w_i L_i(\\hat\\beta) + \\tfrac12 (\\hat\\beta - c)^\\top P (\\hat\\beta - c)
    + \\tfrac12 \\log\\det H - \\tfrac12 \\log\\det P`, :math:`P = \\Sigma^{-1}/\\tau`,
    :math:`\\hat\\beta` the MAP fit, :math:`H` the Hessian of the objective (the intercept flat,
    :math:`\\bar w_i` the weights over their mean): the best decade of
    :math:`\\log_{10}\\tau \\in [-4, 3]`, then a bounded search between its neighbours.  Not where
    the fit at :math:`\\tau = 10^3` classifies every training row correctly ((quasi-)separated
    classes: the likelihood is flat along the separating direction and the marginal likelihood --
    the exact one too, by importance sampling -- rises towards weak priors whose fits extrapolate
    badly: issue 29, round 5's breast cancer 1.64x and biopsy 3.04x ``LogisticRegressionCV``'s test
    log-loss), nor where that decade is an end of the range: there the half-standard-error rule's
    scale stays.  Issue 29, round 6 (50 paired splits, ratio to ``LogisticRegressionCV``'s test
    log-loss, ``'evidence'`` / ``'loo'``): dev cells synthetic p/n = 0.3 0.994 / 0.999, biopsy
    0.949 / 0.964, CreditCard 1.029 / 1.010 (within one standard error), the other three
    unchanged; held-out Pima 0.997 / 1.007 and crabs 0.876 / 0.893, but HMDA 1.023 / 1.005 and
    spam7 1.026 / 1.002 (paired +0.018 +- 0.012, +0.025 +- 0.014), so it is not the default."""


def _doc(cls, summary, extra_params="", attr_fmt=None, notes_fmt=None, extra_attrs="", examples="",
         uncertainty=None, extra_notes=""):
    cls.__doc__ = (
        summary
        + "\n\n    Parameters\n    ----------"
        + _PARAMETERS.format(
            fraction=cls._auto_fraction, rows_per_param=cls._auto_rows_per_param,
            min_subsamples=cls._auto_min_subsamples,
            prior_scale_header={True: "{'evidence', 'loo', 'paper'}, default='evidence'",
                                "logistic": "{'loo', 'loo-log-loss', 'evidence', 'paper'}, default='loo'"}.get(
                getattr(cls, "_evidence", False), "{'loo', 'paper'}, default='loo'"),
            prior_scale_evidence={True: _EVIDENCE, "logistic": _EVIDENCE_LOGISTIC}.get(getattr(cls, "_evidence", False),
                                                                                         ""),
            epv=(f", and at least ``{cls._auto_events_per_param} p / r_class`` rows (about "
                 f"{cls._auto_events_per_param} rows of the rarest class per parameter, the events-per-variable "
                 "rule of thumb for logistic regression)") if cls._auto_events_per_param else "")
        + extra_params
        + "\n\n    Attributes\n    ----------"
        + extra_attrs
        + (_UNCERTAINTY_ATTRS.format(**attr_fmt) if cls._laplace else "")
        + _ATTRIBUTES.format(**attr_fmt)
        + "\n\n    See Also\n    --------\n    ClosedFormRidge : ridge with a closed-form scalar penalty.\n"
        + "\n    Notes\n    -----"
        + _NOTES.format(
            **notes_fmt,
            evidence_notes={True: _EVIDENCE_NOTES, "logistic": _EVIDENCE_NOTES_LOGISTIC}.get(
                getattr(cls, "_evidence", False), ""),
            target_units=(";\n    the target likewise, and the noise variance is estimated in its standardised units"
                          if cls._scale_target else ""),
            target_equivariance=(",\n    and multiplying ``y`` by ``s`` multiplies ``coef_``, ``intercept_`` and ``prior_mean_``\n"
                                 "    by ``s`` (with ``noise_variance='auto'``)" if cls._scale_target
                                 else " (predictions do not change)"),
        )
        + (_UNCERTAINTY_NOTES.format(**uncertainty) if uncertainty else getattr(cls, "_no_uncertainty", ""))
        + extra_notes
        + "\n\n    References\n    ----------\n"
        + "    S. Aydın, *Bayesian Methods for Tackling Complex Inferential Problems in Data Science*,\n"
        + "    PhD dissertation, Sabancı University, 2024, Chapter 2.\n\n"
        + "    K. R. Rad and A. Maleki, *A scalable estimate of the out-of-sample prediction error via\n"
        + "    approximate leave-one-out cross-validation*, JRSS B 82, 2020.\n\n"
        + "    M. Konis, *Linear programming algorithms for detecting separated data in binary\n"
        + "    logistic regression models*, DPhil thesis, University of Oxford, 2007.\n"
        + "\n    Examples\n    --------"
        + examples
    )
    return cls


_SINGLE_ATTRS = dict(mean_shape="(n_features,)", cov_shape="(n_features, n_features)",
                     sub_shape="(n_subsamples_, n_features)", per_class="", per_class_list="",
                     n_iter_note="")
