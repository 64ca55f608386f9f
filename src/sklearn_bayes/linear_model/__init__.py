"""Linear models: subsampled-prior GLMs, closed-form ridge and robust mixtures of M-estimators."""

from sklearn_bayes.linear_model._closed_form_ridge import ClosedFormRidge
from sklearn_bayes.linear_model._mixture import (
    CauchyComponent,
    GaussianComponent,
    LaplaceComponent,
    MixtureComponent,
    MixtureMEstimatorRegressor,
)
from sklearn_bayes.linear_model._subsampled_prior import (
    SubsampledPriorLinearSVC,
    SubsampledPriorLogisticRegression,
    SubsampledPriorPoissonRegressor,
    SubsampledPriorRidge,
    SubsampleFitWarning,
)

__all__ = [
    "ClosedFormRidge",
    "SubsampleFitWarning",
    "SubsampledPriorLinearSVC",
    "SubsampledPriorLogisticRegression",
    "SubsampledPriorPoissonRegressor",
    "SubsampledPriorRidge",
    "CauchyComponent",
    "GaussianComponent",
    "LaplaceComponent",
    "MixtureComponent",
    "MixtureMEstimatorRegressor",
]
