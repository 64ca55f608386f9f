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
integer queries of sensitivity Δ, exactly like ``Laplace(Δ/ε)``.

Exact sampling
--------------
The draws are *exact*: :func:`sample_discrete_laplace` uses only uniform integers from
the generator's bit stream (never floating point), following Algorithm 2 of *The
Discrete Gaussian for Differential Privacy* (Canonne, Kamath and Steinke 2020) in a
Cython kernel.  The scale, a float, is the exact rational ``b = s / 2**k``; a geometric
variable with ratio ``exp(-1/s)`` is ``U + s V`` (``U`` uniform below ``s``, accepted
with probability ``exp(-U/s)`` by the exact Bernoulli-of-an-exponential series, ``V``
geometric with ratio ``e^{-1}``), ``floor((U + s V) / 2**k)`` is geometric with ratio
``exp(-1/b)``, and a random sign (rejecting ``-0``) makes it two-sided.

NumPy's ``Generator.geometric`` is not used because it is not exact.  For a success
probability below 1/3 it returns ``ceil(-E / log1p(-q))`` with a ziggurat exponential
``E`` on a grid of spacing up to ``7.7 / 2**53`` and saturates at ``2**63 - 1``:

* every pmf value can be off by up to about ``2**-53`` in absolute terms, a relative
  error of ``b * 2**-53 * e^{|k|/b}``, which exceeds the privacy parameter ``1/b`` of
  the ratio ``P(k) / P(k + 1)`` once ``b`` is about ``2**26`` (ε/d below ~1.5e-8);
* above ``b ≈ 1.2e15`` the grid ``E * b`` is coarser than the integers: whole
  residues become impossible ("holes", the Mironov 2012 attack surface);
* above ``b ≈ 1e18`` the draws saturate at ``2**63 - 1`` (probability ``exp(-2**63 / b)``:
  1e-4 at 1e18, 40% at 1e19) and the difference of two saturated draws is exactly 0:
  the noise vanishes (15% of the draws at 1e19).

Scales above :data:`MAX_NOISE_SCALE` (``2**56``, ε/d below 1.4e-17) are refused with a
``ValueError`` for both noises: a discrete draw of that scale would not fit the
sketch's int64 table, and noise that large leaves no information in an answer.  At
the largest accepted scale a draw leaves int64 with probability below ``e^{-128}``;
such draws are rejected and redrawn (a deviation far below ``2**-128``).
"""

import numpy as np

from sklearn_bayes._fast import _sketch

__all__ = [
    "MAX_NOISE_SCALE",
    "check_noise_scale",
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

#: Largest noise scale the samplers accept (both noises): ``2**56 ≈ 7.2e16``.
MAX_NOISE_SCALE = 2.0**56


def _check_scale(scale):
    scale = np.asarray(scale, dtype=float)
    if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
        raise ValueError(f"scale must be finite and > 0, got {scale!r}.")
    return scale


def check_noise_scale(scale, context="noise"):
    """Validate noise scales for sampling: finite, > 0 and at most :data:`MAX_NOISE_SCALE`.

    Parameters
    ----------
    scale : float or array-like of float
    context : str, default="noise"
        What the scale is for, used at the start of the error message.

    Returns
    -------
    scale : ndarray of float

    Raises
    ------
    ValueError
        Naming the largest offending scale and the limit.

    Examples
    --------
    >>> float(check_noise_scale(3.0))
    3.0
    >>> check_noise_scale(1e30)
    Traceback (most recent call last):
    ...
    ValueError: noise scale 1e+30 exceeds the largest supported scale 2**56 (7.2e+16): ...
    """
    scale = np.asarray(scale, dtype=float)
    bad = ~np.isfinite(scale) | (scale > MAX_NOISE_SCALE)
    if np.any(bad):
        worst = float(np.max(np.where(np.isnan(scale), np.inf, scale)))
        raise ValueError(
            f"{context} scale {worst:.3g} exceeds the largest supported scale 2**56 ({MAX_NOISE_SCALE:.2g}): "
            "discrete Laplace draws of that scale do not fit in int64 (the sketch's table) and noise that "
            "large leaves no information in an answer. Use a larger epsilon (or fewer rows, or a larger decay)."
        )
    return _check_scale(scale)


def _exact_rational(scale):
    """``scale = numer / 2**shift`` exactly, with integer ``numer < 2**57`` (scale <= 2**56)."""
    mant, expo = np.frexp(scale)  # scale = mant * 2**expo, mant in [0.5, 1): mant * 2**53 is an integer
    m = (mant * 2.0**53).astype(np.int64)
    shift = 53 - expo.astype(np.int64)
    numer = np.where(shift < 0, m << np.maximum(-shift, 0), m).astype(np.uint64)
    return numer, np.maximum(shift, 0)


def sample_discrete_laplace(rng, scale, size=None):
    """Draw exact discrete Laplace (two-sided geometric) noise with the given scale.

    ``P(K = k) = (1 - p) / (1 + p) * p**|k|`` with ``p = exp(-1/scale)``, sampled
    exactly from the generator's random bits (see the module docstring).

    Parameters
    ----------
    rng : numpy.random.Generator
    scale : float or array-like of float
        Scale ``b`` with ``0 < b <= MAX_NOISE_SCALE`` (``2**56``).  Broadcast against
        ``size``.
    size : int or tuple of int, optional

    Returns
    -------
    noise : ndarray of int64

    Raises
    ------
    ValueError
        If a scale is not finite and > 0, or exceeds ``MAX_NOISE_SCALE``.

    Examples
    --------
    >>> import numpy as np
    >>> x = sample_discrete_laplace(np.random.default_rng(0), 2.0, size=5)
    >>> x.dtype
    dtype('int64')
    """
    scale = check_noise_scale(scale, "discrete Laplace")
    if size is None:
        size = scale.shape
    flat = np.broadcast_to(scale, size).reshape(-1) if scale.ndim else scale.reshape(1)
    numer, shift = _exact_rational(np.ascontiguousarray(flat))
    out = np.empty(int(np.prod(size, dtype=np.int64)), dtype=np.int64)
    if out.size:
        _sketch.discrete_laplace(rng.bit_generator, numer, np.ascontiguousarray(shift, dtype=np.int64), out)
    return out.reshape(size)


def sample_laplace(rng, scale, size=None):
    """Draw continuous Laplace noise ``Laplace(0, scale)`` (float64), ``0 < scale <= 2**56``.

    NumPy's textbook inversion sampler: kept to reproduce the papers (it is exposed to
    the floating-point attack of Mironov 2012, unlike :func:`sample_discrete_laplace`).

    Examples
    --------
    >>> import numpy as np
    >>> sample_laplace(np.random.default_rng(0), 1.0, size=3).shape
    (3,)
    """
    scale = check_noise_scale(scale, "Laplace")
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
    k = np.asarray(k)
    # (1 - p) / (1 + p) = tanh(1 / (2 b)) and p**|k| = exp(-|k| / b): accurate at every scale
    return np.tanh(0.5 / scale) * np.exp(-np.abs(k) / scale)


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
    return np.where(k < 0, np.exp(k / scale) / (1.0 + p), 1.0 - np.exp(-(k + 1.0) / scale) / (1.0 + p))


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
