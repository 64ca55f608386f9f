"""Robust regression by a mixture of M-estimators: a private sub-package with this façade.

``_estimator`` holds :class:`MixtureMEstimatorRegressor`; ``_components`` the error laws of the
mixture (one small class each: log-density, IRLS weight, scale update); ``_norms`` the
M-estimation losses of ``variant="min_variance"`` (statsmodels style: ``rho``, ``psi``,
``weights``, ``psi_deriv``); ``_selection`` the choice of the loss; ``_s_start`` and
``_lts_start`` the high-breakdown starts; ``_em`` the EM (its result is an :class:`EMResult`).
See the layout in doc/user_guide/conventions.rst.
"""

from sklearn_bayes.linear_model._mixture._components import (
    CauchyComponent,
    GaussianComponent,
    LaplaceComponent,
    MixtureComponent,
)
from sklearn_bayes.linear_model._mixture._em import EMResult
from sklearn_bayes.linear_model._mixture._estimator import MixtureMEstimatorRegressor
from sklearn_bayes.linear_model._mixture._norms import Cauchy, HuberT, LeastSquares, RobustNorm, TukeyBiweight

__all__ = [
    "Cauchy",
    "CauchyComponent",
    "EMResult",
    "GaussianComponent",
    "HuberT",
    "LaplaceComponent",
    "LeastSquares",
    "MixtureComponent",
    "MixtureMEstimatorRegressor",
    "RobustNorm",
    "TukeyBiweight",
]
