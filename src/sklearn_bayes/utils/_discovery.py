"""Discovery of the public estimators of sklearn_bayes."""

import inspect

from sklearn.base import BaseEstimator


def all_estimators():
    """Return every public estimator class exported by :mod:`sklearn_bayes`.

    An estimator is a class in ``sklearn_bayes.__all__`` that subclasses
    :class:`sklearn.base.BaseEstimator`.  Tests and documentation use this
    list, so an estimator is checked as soon as it is exported.

    Returns
    -------
    estimators : list of (str, type)
        ``(name, class)`` pairs sorted by name.
    """
    import sklearn_bayes

    found = []
    for name in sklearn_bayes.__all__:
        obj = getattr(sklearn_bayes, name)
        if inspect.isclass(obj) and issubclass(obj, BaseEstimator) and not inspect.isabstract(obj):
            found.append((name, obj))
    return sorted(found)
