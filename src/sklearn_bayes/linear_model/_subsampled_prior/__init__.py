"""Subsampled-prior GLMs (Algorithm 1 of Aydın, 2024): a private sub-package with this façade.

``_plan`` resolves the subsample sizes, ``_fits`` runs the unregularised subsample fits,
``_prior`` builds the Gaussian prior from them, ``_base`` holds the shared estimator machinery,
``_docs`` the shared docstring templates, ``_predictive`` the logistic regression's moderated
predictive, and ``_regressors`` / ``_classifiers`` the four estimators.
See the layout in doc/user_guide/conventions.rst.
"""

from sklearn_bayes.exceptions import SubsampleFitWarning
from sklearn_bayes.linear_model._subsampled_prior._classifiers import (
    SubsampledPriorLinearSVC,
    SubsampledPriorLogisticRegression,
)
from sklearn_bayes.linear_model._subsampled_prior._regressors import (
    SubsampledPriorPoissonRegressor,
    SubsampledPriorRidge,
)

__all__ = [
    "SubsampleFitWarning",
    "SubsampledPriorLinearSVC",
    "SubsampledPriorLogisticRegression",
    "SubsampledPriorPoissonRegressor",
    "SubsampledPriorRidge",
]
