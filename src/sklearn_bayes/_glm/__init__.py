"""The GLM kernel shared by both wings (a private sub-package with this façade).

``_losses`` holds the loss objects (one small class per loss: squared, logistic, multinomial,
squared hinge, hinge, Poisson); ``_map`` the Gaussian prior and the damped-Newton MAP solver
:func:`fit_map`; ``_dual`` its Newton system in ``n`` dimensions on wide data (``p > 2 n``, an isotropic
prior: Woodbury), ``_multidual`` the same in ``n q`` dimensions for ``q > 1`` outputs (``p > n``); ``_leverage`` the leverages of a tall design in cache-sized row blocks; ``_base`` the
data validation, the standardisation of columns and the :class:`LinearPredictorMixin` of the linear
estimators.  Used by ``linear_model`` and
``privacy._linear``; it imports neither.  See the layout in doc/user_guide/conventions.rst.
"""

from sklearn_bayes._glm._base import (
    LinearPredictorMixin,
    Standardisation,
    check_consistent_rows,
    check_dense,
    check_features,
    check_numeric_target,
    dominated_candidates,
    dominated_columns,
    dominated_columns_below,
    naming,
    normalise_weights,
    rescale,
    standardise,
    validate_regression_data,
    wald_interval,
)
from sklearn_bayes._glm._leverage import leverages
from sklearn_bayes._glm._map import (
    HingeLoss,
    LogisticLoss,
    MAPResult,
    MultinomialLoss,
    PoissonLoss,
    SquaredHingeLoss,
    SquaredLoss,
    fit_map,
    inverse_information,
    inverse_spd,
    mle_exists,
    objective_value,
    posterior_hessian,
    rank_tolerance,
    split_null_space,
    unidentified,
)

__all__ = [
    "HingeLoss",
    "LinearPredictorMixin",
    "LogisticLoss",
    "MAPResult",
    "MultinomialLoss",
    "PoissonLoss",
    "SquaredHingeLoss",
    "SquaredLoss",
    "Standardisation",
    "check_consistent_rows",
    "check_dense",
    "check_features",
    "check_numeric_target",
    "dominated_candidates",
    "dominated_columns",
    "dominated_columns_below",
    "fit_map",
    "inverse_information",
    "inverse_spd",
    "leverages",
    "mle_exists",
    "naming",
    "normalise_weights",
    "objective_value",
    "posterior_hessian",
    "rank_tolerance",
    "rescale",
    "split_null_space",
    "standardise",
    "unidentified",
    "validate_regression_data",
    "wald_interval",
]
