"""The private count sketch (a private sub-package; see the layout in doc/user_guide/conventions.rst).

Its façade: :class:`PrivateCountSketch`, exported by :mod:`sklearn_bayes.privacy`.  Inside:
``_keys`` (items to 64-bit keys), ``_release`` (the release mechanisms, one class each),
``_bounds`` (the error bars), ``_forks`` (the live forks), ``_estimator`` (the estimator),
``_format`` (the byte format) and ``_dask`` (building a sketch on a Dask cluster).
"""

from sklearn_bayes.privacy._sketch._estimator import PrivateCountSketch

__all__ = ["PrivateCountSketch"]
