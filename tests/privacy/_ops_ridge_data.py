"""Data and closed forms shared by the OPS ridge tests (tests/privacy/core/test_pld.py,
tests/privacy/linear/test_ops.py), loaded by path (the suite runs with --import-mode=importlib)."""

import math

import numpy as np

from sklearn_bayes.privacy._core import clip_rows


def _gen(seed=0):
    return np.random.default_rng(seed)


def _unit_ball_data(n, d, seed):
    rng = _gen(seed)
    X = clip_rows(rng.normal(size=(n, d)) / math.sqrt(d), 1.0)
    y = np.clip(X @ rng.normal(size=d) + 0.3 * rng.standard_normal(n), -1, 1)
    return X, y


def _posterior(X, y, lam, gamma):
    H = X.T @ X + lam * np.eye(X.shape[1])
    mean = np.linalg.solve(H, X.T @ y)
    return mean, np.linalg.inv(gamma * H), H


def _mu_r(Z, yz, x, y, lam):
    """Out-of-sample leverage and residual of (x, y) with respect to Z."""
    H = Z.T @ Z + lam * np.eye(Z.shape[1])
    theta = np.linalg.solve(H, Z.T @ yz)
    return float(x @ np.linalg.solve(H, x)), float(y - x @ theta)
