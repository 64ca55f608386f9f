"""Linear models: subsampled-prior GLMs, closed-form ridge and robust mixtures of M-estimators."""

from ._mixture_components import CauchyComponent, GaussianComponent, LaplaceComponent, MixtureComponent
from ._mixture_m_estimator import MixtureMEstimatorRegressor
from ._closed_form_ridge import ClosedFormRidge
from ._subsampled_prior import (
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
