"""Noise samplers and their distributions for the Laplace mechanisms.

Integer counts get *discrete Laplace* noise (the two-sided geometric distribution),
which gives ε-differential privacy exactly for integer-valued queries of sensitivity
1 and, its outputs being integers, is immune to the floating-point attack on textbook
continuous-Laplace samplers (*On Significance of the Least Significant Bits for
Differential Privacy*, Mironov 2012).  The continuous Laplace sampler is kept to
reproduce the papers.

A discrete Laplace variable with *scale* ``b`` has parameter ``p = exp(-1/b)`` and
probability mass function

.. math:: P(K = k) = \\frac{1 - p}{1 + p} p^{|k|}, \\qquad k \\in \\mathbb{Z},

so that ``P(k) / P(k + 1) <= e^{1/b}``: with ``b = Δ/ε`` it is the ε-DP mechanism for
integer queries of sensitivity Δ, exactly like ``Laplace(Δ/ε)``.  It is sampled as the
difference of two independent geometric variables on ``{0, 1, ...}`` with success
probability ``1 - p`` (*The Discrete Gaussian for Differential Privacy*, Canonne,
Kamath and Steinke 2020); NumPy's geometric sampler draws by inversion in floating
point, which perturbs the probabilities by a relative ~1e-16 but cannot create the
"holes" in the support that the Mironov attack exploits.
"""

import numpy as np

__all__ = [
    "discrete_laplace_cdf",
    "discrete_laplace_pmf",
    "discrete_laplace_variance",
    "laplace_cdf",
    "laplace_variance",
    "sample_discrete_laplace",
    "sample_laplace",
    "sample_noise",
    "noise_variance",
]


def _check_scale(scale):
    scale = np.asarray(scale, dtype=float)
    if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
        raise ValueError(f"scale must be finite and > 0, got {scale!r}.")
    return scale


def sample_discrete_laplace(rng, scale, size=None):
    """Draw discrete Laplace (two-sided geometric) noise with the given scale.

    Parameters
    ----------
    rng : numpy.random.Generator
    scale : float or array-like of float
        Scale ``b > 0``; the parameter is ``p = exp(-1/b)``.  Broadcast against ``size``.
    size : int or tuple of int, optional

    Returns
    -------
    noise : ndarray of int64

    Examples
    --------
    >>> import numpy as np
    >>> x = sample_discrete_laplace(np.random.default_rng(0), 2.0, size=5)
    >>> x.dtype
    dtype('int64')
    """
    scale = _check_scale(scale)
    q = -np.expm1(-1.0 / scale)  # success probability 1 - p of each geometric
    if size is None:
        size = scale.shape
    g1 = rng.geometric(q, size)
    g2 = rng.geometric(q, size)
    return (g1 - g2).astype(np.int64, copy=False)


def sample_laplace(rng, scale, size=None):
    """Draw continuous Laplace noise ``Laplace(0, scale)`` (float64).

    Examples
    --------
    >>> import numpy as np
    >>> sample_laplace(np.random.default_rng(0), 1.0, size=3).shape
    (3,)
    """
    scale = _check_scale(scale)
    if size is None:
        size = scale.shape
    return rng.laplace(0.0, scale, size)


def sample_noise(rng, kind, scale, size=None):
    """Dispatch to :func:`sample_discrete_laplace` (``"discrete_laplace"``) or :func:`sample_laplace`."""
    if kind == "discrete_laplace":
        return sample_discrete_laplace(rng, scale, size)
    if kind == "laplace":
        return sample_laplace(rng, scale, size)
    raise ValueError(f"noise must be 'discrete_laplace' or 'laplace', got {kind!r}.")


def discrete_laplace_pmf(k, scale):
    """Probability mass ``(1 - p) / (1 + p) * p**|k|`` with ``p = exp(-1/scale)``.

    Examples
    --------
    >>> import numpy as np
    >>> float(np.round(discrete_laplace_pmf(np.arange(-50, 51), 1.0).sum(), 12))
    1.0
    """
    scale = _check_scale(scale)
    p = np.exp(-1.0 / scale)
    k = np.asarray(k)
    return (1.0 - p) / (1.0 + p) * p ** np.abs(k)


def discrete_laplace_cdf(k, scale):
    """``P(K <= k)``: ``p**(-k) / (1 + p)`` for ``k < 0`` and ``1 - p**(k + 1) / (1 + p)`` otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> bool(np.isclose(discrete_laplace_cdf(0, 1.0) - discrete_laplace_cdf(-1, 1.0), discrete_laplace_pmf(0, 1.0)))
    True
    """
    scale = _check_scale(scale)
    p = np.exp(-1.0 / scale)
    k = np.floor(np.asarray(k, dtype=float))
    return np.where(k < 0, p ** (-k) / (1.0 + p), 1.0 - p ** (k + 1.0) / (1.0 + p))


def discrete_laplace_variance(scale):
    """Variance ``2p / (1 - p)**2`` (smaller than ``2 scale**2``, the continuous one).

    Examples
    --------
    >>> bool(discrete_laplace_variance(3.0) < 2 * 3.0**2)
    True
    """
    scale = _check_scale(scale)
    p = np.exp(-1.0 / scale)
    return 2.0 * p / (-np.expm1(-1.0 / scale)) ** 2


def laplace_cdf(x, scale):
    """Cdf of ``Laplace(0, scale)``.

    Examples
    --------
    >>> float(laplace_cdf(0.0, 2.0))
    0.5
    """
    scale = _check_scale(scale)
    x = np.asarray(x, dtype=float)
    return np.where(x < 0, 0.5 * np.exp(x / scale), 1.0 - 0.5 * np.exp(-x / scale))


def laplace_variance(scale):
    """Variance ``2 scale**2`` of ``Laplace(0, scale)`` (the paper's proof of Theorem 5 used ``scale**2``)."""
    scale = _check_scale(scale)
    return 2.0 * scale**2


def noise_variance(kind, scale):
    """Variance of one draw of the named noise with the given scale."""
    if kind == "discrete_laplace":
        return discrete_laplace_variance(scale)
    if kind == "laplace":
        return laplace_variance(scale)
    raise ValueError(f"noise must be 'discrete_laplace' or 'laplace', got {kind!r}.")
