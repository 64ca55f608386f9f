"""The subsampled-prior classifiers: logistic regression (binary or multinomial) and the linear SVM."""

from numbers import Real

import numpy as np
from scipy.special import expit, log_softmax, softmax
from sklearn.base import _fit_context
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils import check_array
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from sklearn_bayes.utils import transactional
from sklearn_bayes._glm import (
    HingeLoss,
    LogisticLoss,
    MultinomialLoss,
    SquaredHingeLoss,
    check_consistent_rows,
    check_dense,
    check_features,
    naming,
)
from sklearn_bayes.linear_model._subsampled_prior._base import _STACKLEVEL, _BaseSubsampledPrior, _PosteriorMixin
from sklearn_bayes.linear_model._subsampled_prior._docs import _doc
from sklearn_bayes.linear_model._subsampled_prior._predictive import (
    moderated_log_proba,
    scaled_rows,
    score_covariance,
)


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
        check_dense(X)
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
        if self.class_weight is not None:
            # (a class without weight: 'balanced' gives it an infinite weight, its rows keep 0)
            per_row = self._class_weights(classes, classes[y_enc], sample_weight)[y_enc]
            with np.errstate(invalid="ignore"):
                sample_weight = np.where(sample_weight > 0, sample_weight * per_row, 0.0)
        present = np.unique(y_enc[sample_weight > 0])
        if present.size < 2:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least 2 classes with positive sample_weight, "
                f"but only one class has positive weight: {classes[present[0]] if present.size else None!r}."
            )
        return X, y_enc, sample_weight, classes

    def _class_weights(self, classes, y, sample_weight):
        """One weight per class, scikit-learn's ``compute_class_weight`` as ``LogisticRegression`` and ``LinearSVC``
        call it (``'balanced'``: ``sum(w) / (n_classes * sum of w in the class)``, the weighted class counts); a
        dict key that is no class of ``y`` is refused (scikit-learn ignores it when every class has a key)."""
        cw = self.class_weight
        if isinstance(cw, dict):
            def key(c):  # compute_class_weight's own lookup: int where it converts, else str
                try:
                    return int(c)
                except (TypeError, ValueError):
                    return str(c)
            known = {key(c) for c in classes}
            unknown = [k for k in cw if k not in known]
            if unknown:
                raise ValueError(
                    f"class_weight has keys that are not classes of y: {unknown!r} (the classes are "
                    f"{classes.tolist()!r}).")
            bad = {k: v for k, v in cw.items() if isinstance(v, bool) or not isinstance(v, Real)
                   or not (np.isfinite(v) and v >= 0)}
            if bad:
                raise ValueError(f"class_weight values must be finite non-negative numbers, got {bad!r}.")
        with np.errstate(divide="ignore", invalid="ignore"):
            return compute_class_weight(cw, classes=classes, y=y, sample_weight=sample_weight)


class SubsampledPriorLogisticRegression(_PosteriorMixin, _SubsampledPriorClassifier):
    _auto_fraction = 0.01
    _auto_rows_per_param = 5.0
    _auto_min_subsamples = 20
    _auto_events_per_param = 10
    #: prior_scale='evidence', an option (the docstring template's flag; prior_choice_['scale_rule'])
    _evidence = "logistic"

    _parameter_constraints = {
        **_BaseSubsampledPrior._parameter_constraints,
        "prior_scale": [StrOptions({"evidence", "loo", "loo-log-loss", "paper"})],
        "predictive": [StrOptions({"map", "moderated"})],
        "class_weight": [dict, StrOptions({"balanced"}), None],
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
        predictive="map",
        class_weight=None,
    ):
        super().__init__(
            n_subsamples=n_subsamples, subsample_size=subsample_size, covariance=covariance,
            covariance_scaling=covariance_scaling, shrinkage=shrinkage, prior_scale=prior_scale, penalty=penalty,
            prior_mean_method=prior_mean_method, fit_intercept=fit_intercept,
            tol=tol, max_iter=max_iter, n_jobs=n_jobs, random_state=random_state,
        )
        self.predictive = predictive
        self.class_weight = class_weight

    def __setstate__(self, state):
        # pickles made before ``predictive`` existed (issue 29, round 9) predicted with the MAP fit; before
        # ``class_weight`` (review HSR, F9), no class weights
        state.setdefault("predictive", "map")
        state.setdefault("class_weight", None)
        super().__setstate__(state)

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
            Non-negative frequency weights multiplying the losses (times the class weights of
            ``class_weight``).  Their overall scale does not change the fit; the covariances are in
            their own units (a row of weight ``k`` has the information of ``k`` repeated rows;
            weights times ``c`` divide the covariances by ``c``).

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
        """Class probabilities (``predictive='map'``: of the MAP fit; ``'moderated'``: the
        Laplace posterior's predictive, see the Notes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        if self.predictive != "map":
            return np.exp(self.predict_log_proba(X))
        scores = self.decision_function(X)
        if scores.ndim == 1:
            p = expit(scores)
            return np.column_stack([1.0 - p, p])
        return softmax(scores, axis=1)

    def predict_log_proba(self, X):
        """Logarithm of the class probabilities (those of :meth:`predict_proba`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        if self.predictive not in ("map", "moderated"):  # set after fit (fit validates it)
            raise ValueError(f"predictive must be 'map' or 'moderated', got {self.predictive!r}.")
        if self.predictive == "map":
            scores = self.decision_function(X)
            if scores.ndim == 1:
                scores = np.column_stack([np.zeros_like(scores), scores])
            return log_softmax(scores, axis=1)
        # X validated once (a second check_features repeated its feature-name warning)
        check_is_fitted(self)
        if not hasattr(self, "_theta_covariance_std"):
            raise AttributeError("predictive='moderated' needs the Laplace covariance this estimator stores since "
                                 "issue 29 round 9; it was pickled before: fit it again.")
        X = check_features(self, X, reset=False)
        scores = X @ self.coef_.T + self.intercept_  # decision_function's
        if scores.shape[1] == 1:
            scores = np.column_stack([np.zeros(len(scores)), scores[:, 0]])
        V = self._score_covariance(X, validated=True)
        logp = moderated_log_proba(scores - scores[:, :1], V)
        # rows far out (|x_s| >~ 1e150): the quadratic forms overflow (NaN probabilities before); there the
        # same formula on the rows divided by t (scores / t, V / t^2, the 1 under the root 1 / t^2)
        far = ~(np.all(np.abs(V) < 1e300, axis=(1, 2)) & np.all(np.abs(scores) < 1e300, axis=1))
        if np.any(far):
            Xf = X[far]
            offset, scale = self._x_standardisation
            U, inv_t = scaled_rows(Xf, offset, scale)
            s_far = (Xf * inv_t[:, None]) @ self.coef_.T + self.intercept_ * inv_t[:, None]
            if s_far.shape[1] == 1:
                s_far = np.column_stack([np.zeros(len(s_far)), s_far])
            V_far = score_covariance(U, self._theta_covariance_std, self.classes_.size - 1,
                                     self._fitted_param("fit_intercept"),
                                     intercept_column=inv_t)
            logp[far] = moderated_log_proba(s_far - s_far[:, :1], V_far, inv_t ** 2)
        return logp

    def _score_covariance(self, X, validated=False):
        """``V[i, k, l]``: the Laplace posterior covariance of the scores of classes ``k + 1`` and
        ``l + 1`` (the reference class ``classes_[0]`` has score 0) at row ``i`` of ``X``.

        Mathematically :math:`\\tilde x^\\top \\Sigma_{kl} \\tilde x` with ``_theta_covariance``
        (coefficients and intercepts in the units of ``X``); evaluated in the fit's standardised
        units, :math:`\\tilde x_s^\\top \\Sigma^{(s)}_{kl} \\tilde x_s` with :math:`x_s = (x -
        \\text{offset}) / \\text{scale}` -- the same number (the change of units is linear in the
        parameters and maps :math:`\\tilde x` to :math:`\\tilde x_s`), but one that does not
        over- or underflow when ``X`` is in extreme units.  ``validated``: ``X`` has passed ``check_features``."""
        check_is_fitted(self, "coef_covariance_")
        if not validated:
            X = check_features(self, X, reset=False)
        offset, scale = self._x_standardisation
        with np.errstate(over="ignore", invalid="ignore"):  # rows beyond ~1e154 sds: see predict_log_proba
            Xs = (X - offset) / scale
        return score_covariance(Xs, self._theta_covariance_std, self.classes_.size - 1,
                                self._fitted_param("fit_intercept"))


#: the ``class_weight`` entry of both classifiers' Parameters
_CLASS_WEIGHT_DOC = """
    class_weight : dict, 'balanced' or None, default=None
        Weights of the classes, multiplied into ``sample_weight`` with scikit-learn's semantics
        (:func:`~sklearn.utils.class_weight.compute_class_weight`, called as
        :class:`~sklearn.linear_model.LogisticRegression` and :class:`~sklearn.svm.LinearSVC` call
        it): a dict ``{label: weight}`` (a class without a key weighs 1; a key that is no class of
        ``y`` is refused, where scikit-learn ignores it when every class has a key), or
        ``'balanced'``, :math:`\\sum_i w_i / (K \\sum_{i: y_i = k} w_i)` for class :math:`k` of
        :math:`K` (the inverse of its share of the sample weight).  None: every class weighs 1."""

_doc(
    SubsampledPriorLogisticRegression,
    "Logistic regression (binary or multinomial) with a Gaussian prior estimated from subsample fits.",
    extra_params="""
    predictive : {'map', 'moderated'}, default='map'
        What :meth:`predict_proba` and :meth:`predict_log_proba` return.  ``'map'``: the
        probabilities of the MAP fit (the plug-in).  ``'moderated'``: the predictive of the Laplace
        posterior, the MAP probability moderated by the posterior variance of the linear
        predictor (binary: MacKay's probit approximation; see *Predictive* in the Notes).
        :meth:`predict` and :meth:`decision_function` are the MAP fit's either way, and the option
        does not enter the fit.  Not the default: at the default's prior it lost to ``'map'`` on
        five of six development cells, several-fold on near-separated data (the Gaussian of the
        Laplace approximation is symmetric about the MAP where the posterior is skewed away from
        0); it helps where the classes overlap (spam7: 0.890 against 1.002 of
        ``LogisticRegressionCV``'s log-loss).
""" + _CLASS_WEIGHT_DOC + """  The class
        weights enter the intervals as frequencies: a balanced fit's intervals describe the reweighted
        sample, not the population.""",
    attr_fmt=dict(
        mean_shape="(n_features,) or ((n_classes - 1) * n_features,)",
        cov_shape="(k, k) with k the length of prior_mean_",
        sub_shape="(n_subsamples_, k)",
        per_class="",
        per_class_list="",
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
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = make_pipeline(StandardScaler(), SubsampledPriorLogisticRegression(random_state=0)).fit(X, y)
    >>> # wdbc is separable, but every subsample fit is penalised (no fit is replaced, no warning);
    >>> # the leave-one-out risk chose the prior (n = 284 of N = 569 rows: no subsample candidates)
    >>> clf[-1].prior_choice_["shape"], clf[-1].prior_choice_["mean"]
    ('identity', 'zero')
    >>> clf[-1].prior_covariance_.shape
    (30, 30)
    >>> bool(clf.score(X, y) > 0.95)
    True
    >>> clf[-1].conf_int().shape  # per standardised feature
    (30, 2)
""",
    uncertainty=dict(
        hess_text=":math:`\\ell'' = p(1 - p)`; multinomial: the :math:`(K-1) \\times (K-1)` blocks\n"
                  "    :math:`\\operatorname{diag}(p) - p p^\\top`, ``coef_covariance_`` ordered like ``prior_covariance_``",
        coverage_text=(
            "    ``conf_int()`` (sampling): N = 3000 (n = 120) 0.954 (R = 100 fits), N = 300 0.937 (R = 200).\n"
            "    Posterior: 0.808 and 0.829, the largest coefficient 0.78 and 0.53 (the default's prior is\n"
            "    tuned for prediction: use the sampling intervals for confidence statements); with\n"
            "    ``prior_scale='paper'`` 0.948 and 0.824 (N = 300: the 10-events-per-parameter rule makes\n"
            "    n = 150 = N / 2, and the prior, centred on the mean of small-sample fits that are biased away\n"
            "    from 0, also pulls the MAP outwards)."
        ),
    ),
    extra_notes="""

    **Predictive** (``predictive='moderated'``).  Under the Laplace posterior
    :math:`N(\\hat\\theta, \\Sigma)` of the coefficients and intercepts (``coef_covariance_`` is its
    coefficient block; the intercepts are included here, all in the units of ``X``, so the
    same fit inside a ``StandardScaler`` pipeline gives the same probabilities) the linear
    predictor of a row :math:`\\tilde x = (x, 1)` is :math:`N(\\mu, s^2)`, :math:`\\mu` the MAP's
    decision function and :math:`s^2 = \\tilde x^\\top \\Sigma \\tilde x` (for all rows at once,
    :math:`O(n p^2)`).  Binary: :math:`P(y = 1 \\mid x) = E\\,\\sigma(\\eta) \\approx
    \\sigma(\\mu / \\sqrt{1 + \\pi s^2 / 8})` (MacKay, 1992: :math:`\\sigma(a) \\approx
    \\Phi(\\sqrt{\\pi/8}\\, a)` and the Gaussian integral of :math:`\\Phi` is exact), within
    :math:`2 \\times 0.0177` of the exact expectation.  It has the sign of :math:`\\mu`, so
    ``predict`` agrees with the argmax of the probabilities.  Multinomial (reference class
    ``classes_[0]``, score 0): with :math:`m_{kj} = \\mu_k - \\mu_j` and :math:`v_{kj}` the
    posterior variance of the difference of the scores of classes :math:`k` and :math:`j`,
    :math:`\\tilde p_k = 1 / \\sum_j \\exp(-m_{kj} / \\sqrt{1 + \\pi v_{kj} / 8})`, renormalised
    to sum to 1: the softmax written as :math:`1 / (1 + \\sum_{j \\ne k} e^{-(a_k - a_j)})` with
    each pairwise logistic factor moderated by the binary formula (a mean-field approximation:
    the factors are treated as independent).  It is deterministic (no Monte Carlo, no
    ``random_state``), reduces exactly to the binary formula for two classes and to the softmax
    without variance, and depends on the scores only through their differences, so not on the
    choice of the reference class -- unlike moderating each score against the reference alone.
    Against a Monte Carlo of the softmax (random problems, 3 and 5 classes) its mean absolute
    error is about 0.0015, 0.013 and 0.047 at score standard deviations of 0.3, 1 and 3 (each
    score against the reference: 0.002, 0.017, 0.058; the MAP's softmax: 0.003, 0.025, 0.094).
    With more than two classes the argmax of the moderated probabilities can differ from
    ``predict`` (a class with a higher but more uncertain score can lose).  A row beyond about
    :math:`10^{150}` of the fit's standard deviations (where :math:`s^2` overflows) is evaluated on
    :math:`\tilde x_s / t`, :math:`t` its largest standardised entry: the same formula with scores over
    :math:`t`, variances over :math:`t^2` and :math:`1 / t^2` under the root, i.e. the limit probabilities.

    The prior's scale is chosen for the MAP plug-in, and the Laplace Gaussian is symmetric about
    the MAP where the posterior of near-separated data is skewed away from 0; issue 29, round 9
    (50 paired splits, mean test log-loss over ``LogisticRegressionCV``'s, ``'map'`` /
    ``'moderated'``): synthetic p/n = 0.7 0.992 / 0.991, p/n = 0.3 0.999 / 1.004, Pima 1.007 /
    1.013, biopsy 0.964 / 1.140, breast cancer 0.945 / 1.118, digits 3-vs-8 0.978 / 7.67;
    held-out synthetic p/n = 1.5 0.989 / 0.977, HMDA 1.005 / 0.993, spam7 1.002 / 0.890, crabs
    0.893 / 1.102, wine (three classes) 0.962 / 3.70.  It helps where the classes overlap and
    loses, up to several-fold, where they are (nearly) separated.  On breast cancer, biopsy and the synthetic p/n = 0.7 cell the
    posterior predictive of the same prior by importance sampling *beats* the MAP (0.860,
    0.971, 0.980 over 10 splits, against 0.910, 0.995, 0.986) while the exact Laplace-Gaussian
    expectation does not (1.005, 1.063, 0.978): the Gaussian, not the probit approximation, is
    what loses.  Hence ``'map'`` stays the default.

    D. J. C. MacKay, *The evidence framework applied to classification networks*, Neural
    Computation 4, 1992.""",
)


class SubsampledPriorLinearSVC(_SubsampledPriorClassifier):
    # the (squared) hinge loss is no negative log-likelihood: no posterior covariance
    _laplace = False

    def _absolute_weights(self):
        """No covariances of the coefficients: the prior's moments stay per mean unit of weight."""
        return False

    #: appended to the Notes
    _no_uncertainty = """

    **No intervals.**  Unlike the other SubsampledPrior estimators this one has no
    ``coef_covariance_`` or ``conf_int``: the (squared) hinge loss is not a negative
    log-likelihood (``exp(-loss)`` is no density of the labels), so the MAP objective is not a
    negative log posterior and the inverse of its Hessian has no probabilistic scale; the hinge
    loss is not even twice differentiable.  A Laplace approximation would give numbers with no
    coverage to claim.  Use :class:`SubsampledPriorLogisticRegression` for intervals."""

    _auto_fraction = 0.01
    _auto_rows_per_param = 5.0
    _auto_min_subsamples = 20
    _auto_events_per_param = 10

    _parameter_constraints = {
        **_BaseSubsampledPrior._parameter_constraints,
        "loss": [StrOptions({"squared_hinge", "hinge"})],
        "class_weight": [dict, StrOptions({"balanced"}), None],
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
        loss="squared_hinge",
        penalty="half",
        prior_mean_method="offset",
        fit_intercept=True,
        tol=1e-8,
        max_iter=100,
        n_jobs=None,
        random_state=None,
        class_weight=None,
    ):
        super().__init__(
            n_subsamples=n_subsamples, subsample_size=subsample_size, covariance=covariance,
            covariance_scaling=covariance_scaling, shrinkage=shrinkage, prior_scale=prior_scale, penalty=penalty,
            prior_mean_method=prior_mean_method, fit_intercept=fit_intercept,
            tol=tol, max_iter=max_iter, n_jobs=n_jobs, random_state=random_state,
        )
        self.loss = loss
        self.class_weight = class_weight

    def __setstate__(self, state):
        # pickles made before ``class_weight`` existed (review HSR, F9): no class weights
        state.setdefault("class_weight", None)
        super().__setstate__(state)

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
            Non-negative weights multiplying the losses (times the class weights of ``class_weight``);
            with ``prior_scale='loo'`` their overall scale changes nothing.

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
        self.prior_choice_ = outs[0]["prior_choice"] if K == 2 else [o["prior_choice"] for o in outs]
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
        hinge loss, which are often not unique (flagged rank-deficient).
""" + _CLASS_WEIGHT_DOC,
    attr_fmt=dict(
        mean_shape="(n_features,), or (n_classes, n_features) one-vs-rest",
        cov_shape="(n_features, n_features), or (n_classes, n_features, n_features)",
        sub_shape="(n_subsamples_, n_features), or (n_classes, n_subsamples_, n_features)",
        per_class=" or ndarray of shape (n_classes,)",
        per_class_list=" (a list of one per class one-vs-rest)",
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
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = make_pipeline(StandardScaler(), SubsampledPriorLinearSVC(random_state=0)).fit(X, y)
    >>> clf[-1].prior_choice_["shape"]  # wdbc is separable: every subsample fit is penalised
    'identity'
    >>> bool(clf.score(X, y) > 0.95)
    True
""",
)
