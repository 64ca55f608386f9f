"""sklearn_bayes: scikit-learn compatible Bayesian and privacy-preserving estimators.

Public estimators are importable from the top-level package::

    from sklearn_bayes import SubsampledPriorRidge
"""

from sklearn_bayes import exceptions, linear_model, privacy
from sklearn_bayes.linear_model import *  # noqa: F401,F403
from sklearn_bayes.privacy import *  # noqa: F401,F403

__version__ = "0.1.0.dev0"

__all__ = sorted(set(linear_model.__all__) | set(privacy.__all__))
