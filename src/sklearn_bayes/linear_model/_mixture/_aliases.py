"""Deprecated attribute aliases of :class:`MixtureMEstimatorRegressor` (moved out of ``_estimator.py`` for its
900-line limit)."""

import warnings

from sklearn_bayes.utils._validation import external_stacklevel


def _sample_weights(self):
    """Deprecated alias of ``irls_weights_``."""
    warnings.warn(
        "MixtureMEstimatorRegressor.sample_weights_ was renamed irls_weights_ (they are the fit's IRLS "
        "weights, not the sample_weight argument); the old name will be removed.",
        FutureWarning, stacklevel=external_stacklevel(),
    )
    if "irls_weights_" not in vars(self) and "sample_weights_" in vars(self):  # a pickle from before
        return vars(self)["sample_weights_"]
    return self.irls_weights_


#: the class's ``sample_weights_`` property
sample_weights = property(_sample_weights)
