"""Data shared by the private linear models' tests."""

import numpy as np

COEF = np.array([0.5, -0.3, 0.2])


def bounded_regression(n=300, d=3, seed=0):
    """``n`` rows uniform on ``[-1, 1]^d`` (``d <= 3``), ``y = X @ COEF[:d] + N(0, 0.1^2)``: inside the default bounds."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    return X, X @ COEF[:d] + 0.1 * rng.standard_normal(n)


def logistic_labels(n, seed):
    """``n`` standard-normal rows in 3 features; labels of ``X @ (1.5, -1, 0.5)`` plus logistic noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, (X @ np.array([1.5, -1.0, 0.5]) + rng.logistic(size=n) > 0).astype(int)
