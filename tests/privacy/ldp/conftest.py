"""Shared fixtures of the LDP tests."""

import numpy as np
import pytest


def _k3_posterior_moments(groups, m=400):
    """Mean and standard deviation of theta under the fixed Dir(1) prior for K = 3 grouped
    responses ``groups`` (``likelihood_rows()`` and ``count``), by quadrature on the midpoints
    of an ``m x m`` grid of the simplex: the reference the samplers' tests compare with."""
    L = groups.likelihood_rows()
    a, b = np.meshgrid((np.arange(m) + 0.5) / m, (np.arange(m) + 0.5) / m, indexing="ij")
    keep = a + b < 1
    T = np.stack([a[keep], b[keep], 1 - a[keep] - b[keep]], axis=1)
    logw = np.log(T @ L.T) @ groups.count
    w = np.exp(logw - logw.max())
    mean = (w[:, None] * T).sum(axis=0) / w.sum()
    sd = np.sqrt((w[:, None] * (T - mean) ** 2).sum(axis=0) / w.sum())
    return mean, sd


@pytest.fixture
def k3_posterior_moments():
    """The exact K = 3 posterior moments by quadrature (:func:`_k3_posterior_moments`)."""
    return _k3_posterior_moments
