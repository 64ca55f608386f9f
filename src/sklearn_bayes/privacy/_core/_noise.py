"""Noise samplers and their distributions for the Laplace and (discrete) Gaussian mechanisms.

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
The draws are exact up to two stated deviations (below): :func:`sample_discrete_laplace` uses only uniform integers from
the generator's bit stream (never floating point), following Algorithm 2 of *The
Discrete Gaussian for Differential Privacy* (Canonne, Kamath and Steinke 2020) in a
Cython kernel.  The scale, a float, is the exact rational ``b = s / 2**k``; a geometric
variable with ratio ``exp(-1/s)`` is ``U + s V`` (``U`` uniform below ``s``, accepted
with probability ``exp(-U/s)`` by the exact Bernoulli-of-an-exponential series, ``V``
geometric with ratio ``e^{-1}``), ``floor((U + s V) / 2**k)`` is geometric with ratio
``exp(-1/b)``, and a random sign (rejecting ``-0``) makes it two-sided.

What is not exact: the Bernoulli-of-an-exponential series stops at its 64th term
(``P(K > 64) = 1/64!``-size mass), which moves each ratio ``P(k)/P(k+1)`` off ``e^{1/b}`` by at
most ``1.4e-87`` nats; and the int64 draw conditions the law on ``|K| <= y_max`` (see
:func:`check_noise_scale`), a tail below ``e^{-127}``.  Scales below ``2**-10`` are refused.

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
such draws are rejected and redrawn (a deviation far below ``2**-128``).  Scales below
:data:`MIN_NOISE_SCALE` (``2**-10``, ε/Δ above 1024) are refused too: the kernel's draw
``floor(X / 2**shift)`` of an int64 ``X`` could never reach 1 there, so the noise would be
exactly 0 (see :func:`check_noise_scale`).

Discrete Gaussian
-----------------
:func:`sample_discrete_gaussian` draws the *discrete Gaussian* ``N_Z(0, σ²)``,
``P(K = k) ∝ exp(-k²/(2σ²))`` on the integers, exactly (Algorithm 3 of Canonne, Kamath and
Steinke 2020): ``σ²`` is an exact rational (a float is read as the rational it is), the
proposal is the exact discrete Laplace above with the integer scale ``t = ⌊σ⌋ + 1`` (the
Cython kernel, vectorised), accepted with probability ``exp(-(|Y| - σ²/t)²/(2σ²))`` by the
exact Bernoulli-of-an-exponential series of their Algorithm 1 on Python integers (uniform
integers from the generator's bit stream; no floating point).  Released on a grid of a
power-of-two spacing ``g`` (``g K`` added to a value snapped to the grid, every number an
integer below ``2**53`` times ``g``) it has no low bits to leak: the output is an exact
multiple of ``g`` and its law depends on the input only through the snapped value.
"""

import math
import numbers
from fractions import Fraction

import numpy as np

from sklearn_bayes._fast import _sketch

__all__ = [
    "MAX_NOISE_SCALE",
    "MIN_NOISE_SCALE",
    "check_noise_scale",
    "discrete_laplace_cdf",
    "discrete_laplace_pmf",
    "discrete_gaussian_pmf",
    "discrete_laplace_variance",
    "laplace_cdf",
    "laplace_variance",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
    "sample_laplace",
    "sample_noise",
    "noise_variance",
]

#: Largest noise scale the samplers accept (both noises): ``2**56 ≈ 7.2e16``.
MAX_NOISE_SCALE = 2.0**56

#: Smallest noise scale the samplers accept (both noises): ``2**-10`` (ε/Δ up to 1024).  Below it the
#: exact discrete Laplace kernel's int64 draw ``X`` (``X <= 2**63 - 1``) shifted by ``53 - e`` bits
#: (``b = m 2**e``, ``m`` in ``[0.5, 1)``) cannot reach 1: the noise would be exactly 0.
MIN_NOISE_SCALE = 2.0**-10


def _as_scales(scale):
    """``scale`` as a float array; a string, bytes, ``None`` or a bool is refused naming ``scale``."""
    arr = np.asarray(scale)
    if arr.dtype.kind not in "iuf":  # (object arrays of mixed items, strings, None: not scales)
        raise TypeError(f"scale must be a real number or an array of them, got {type(scale).__name__} {scale!r}.")
    return arr.astype(float)


def _check_generator(rng):
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator (e.g. numpy.random.default_rng()), got {type(rng).__name__}: "
            "the exact samplers read its bit generator."
        )


def _check_scale(scale):
    scale = _as_scales(scale)
    if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
        raise ValueError(f"scale must be finite and > 0, got {scale!r}.")
    return scale


def check_noise_scale(scale, context="noise"):
    """Validate noise scales for sampling: finite, at least :data:`MIN_NOISE_SCALE` and at most :data:`MAX_NOISE_SCALE`.

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
        Naming the largest (smallest) offending scale and the limit.

    Notes
    -----
    The exact discrete Laplace kernel builds an int64 geometric draw ``X <= 2**63 - 1`` and
    returns ``Y = X >> shift``, ``shift = max(0, 53 - e)`` for ``b = m 2**e``, ``m`` in
    ``[0.5, 1)``: ``|Y|`` is at most ``y_max = (2**63 - 1) >> shift``.  Below ``2**-10``,
    ``y_max = 0`` (the noise vanishes), so such scales are refused.  In the accepted range
    ``y_max >= 1`` and ``y_max + 1 >= 128 b`` (``y_max ≈ 1024 b .. 2048 b`` for ``b < 2**52``,
    ``(2**63 - 1) / b >= 128 - 2**-56`` above): conditioning on ``X`` fitting int64 changes the
    law by a tail mass ``P(|Y| >= y_max) <= e^{-y_max / b}``, below ``e^{-127}`` at the
    largest scale and ``e^{-1023}`` below ``2**52``: pure ε-DP up to a δ of that size.

    Examples
    --------
    >>> float(check_noise_scale(3.0))
    3.0
    >>> check_noise_scale(1e30)
    Traceback (most recent call last):
    ...
    ValueError: noise scale 1e+30 exceeds the largest supported scale 2**56 (7.2e+16): ...
    """
    scale = _as_scales(scale)
    if np.any(np.isnan(scale)):
        raise ValueError(f"{context} scale must be finite and > 0, got nan.")
    bad = ~np.isfinite(scale) | (scale > MAX_NOISE_SCALE)
    if np.any(bad):
        worst = float(np.max(np.where(np.isnan(scale), np.inf, scale)))
        raise ValueError(
            f"{context} scale {worst:.3g} exceeds the largest supported scale 2**56 ({MAX_NOISE_SCALE:.2g}): "
            "discrete Laplace draws of that scale do not fit in int64 (the sketch's table) and noise that "
            "large leaves no information in an answer. Use a larger epsilon (or fewer rows, or a larger decay)."
        )
    scale = _check_scale(scale)
    if np.any(scale < MIN_NOISE_SCALE):
        raise ValueError(
            f"{context} scale {float(np.min(scale)):.3g} is below the smallest supported scale 2**-10 "
            f"({MIN_NOISE_SCALE:.3g}, i.e. epsilon / sensitivity above 1024): the exact discrete Laplace "
            "sampler cuts its tail at int64, and below that scale its draw would be exactly 0 (no noise at all). "
            "Use a smaller epsilon."
        )
    return scale


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
        Scale ``b`` with ``MIN_NOISE_SCALE <= b <= MAX_NOISE_SCALE`` (``2**-10 .. 2**56``).  Broadcast against
        ``size``.
    size : int or tuple of int, optional

    Returns
    -------
    noise : ndarray of int64

    Raises
    ------
    ValueError
        If a scale is not finite and > 0, or lies outside ``[2**-10, 2**56]``.

    Examples
    --------
    >>> import numpy as np
    >>> x = sample_discrete_laplace(np.random.default_rng(0), 2.0, size=5)
    >>> x.dtype
    dtype('int64')
    """
    _check_generator(rng)
    scale = check_noise_scale(scale, "discrete Laplace")
    if size is None:
        size = scale.shape
    flat = np.broadcast_to(scale, size).reshape(-1) if scale.ndim else scale.reshape(1)
    numer, shift = _exact_rational(np.ascontiguousarray(flat))
    out = np.empty(int(np.prod(size, dtype=np.int64)), dtype=np.int64)
    if out.size:
        _sketch.discrete_laplace(rng.bit_generator, numer, np.ascontiguousarray(shift, dtype=np.int64), out)
    return out.reshape(size)


#: below this a uniform integer comes from ``Generator.integers`` (exact, Lemire's rejection)
_INT63 = 2**63


def _uniform_below(rng, d):
    """A uniform integer in ``[0, d)`` (Python int ``d >= 1``) from the generator's bits, exactly."""
    if d <= _INT63:
        return int(rng.integers(0, d))
    k = (d - 1).bit_length()
    nbytes = (k + 7) // 8
    while True:  # rejection: accepted with probability > 1/2
        u = int.from_bytes(rng.bytes(nbytes), "little") >> (8 * nbytes - k)
        if u < d:
            return u


def _bernoulli_exp(rng, num, den):
    """Exact Bernoulli(``exp(-num/den)``) for integers ``num >= 0``, ``den >= 1`` (CKS 2020, Algorithm 1)."""
    whole, num = divmod(num, den)
    for _ in range(whole):  # exp(-1) ``whole`` times: stops at the first failure
        if not _bernoulli_exp_unit(rng, 1, 1):
            return False
    return _bernoulli_exp_unit(rng, num, den)


def _bernoulli_exp_unit(rng, num, den):
    """Exact Bernoulli(``exp(-γ)``), ``γ = num/den`` in ``[0, 1]``: the parity of the first failure of Bernoulli(γ/k)."""
    k = 1
    while _uniform_below(rng, den * k) < num:
        k += 1
    return k % 2 == 1


def _exact_sigma2(sigma):
    """``σ²`` as an exact rational ``(N, D)``: a float or int ``σ`` read exactly, or a ``Fraction`` σ²."""
    if isinstance(sigma, Fraction):  # given as σ² itself
        return sigma.numerator, sigma.denominator
    f = Fraction(float(sigma)) if not isinstance(sigma, int) else Fraction(sigma)
    f2 = f * f
    return f2.numerator, f2.denominator


def sample_discrete_gaussian(rng, sigma, size=None):
    """Draw the discrete Gaussian ``N_Z(0, σ²)`` exactly (int64): ``P(K = k) ∝ exp(-k²/(2σ²))``.

    Canonne, Kamath and Steinke (2020), *The Discrete Gaussian for Differential Privacy*,
    Algorithm 3: proposals from the exact discrete Laplace with integer scale ``t = ⌊σ⌋ + 1``
    (:func:`sample_discrete_laplace`, vectorised), each accepted with probability
    ``exp(-(|Y| - σ²/t)²/(2σ²))`` by their exact Bernoulli series (Algorithm 1) on Python
    integers; expected number of proposals per draw below 2 for ``σ >= 1``.  No floating
    point enters the law: ``σ`` is read as the exact rational a float is.

    Parameters
    ----------
    rng : numpy.random.Generator
    sigma : float, int or fractions.Fraction
        ``σ`` with ``0 < σ <= 2**50`` (a float or int), or **σ²** itself as a ``Fraction``.
    size : int or tuple of int, optional

    Returns
    -------
    noise : ndarray of int64

    Examples
    --------
    >>> import numpy as np
    >>> k = sample_discrete_gaussian(np.random.default_rng(0), 3.0, size=4)
    >>> k.dtype, k.shape
    (dtype('int64'), (4,))
    """
    _check_generator(rng)
    if not isinstance(sigma, Fraction):
        if isinstance(sigma, (bool, np.bool_)) or not isinstance(sigma, numbers.Real):
            raise TypeError(f"sigma must be a real number (or sigma**2 as a Fraction), got {type(sigma).__name__} "
                            f"{sigma!r}.")
        if not np.isfinite(float(sigma)) or not 0 < float(sigma) <= 2.0**50:
            raise ValueError(f"sigma must be finite and in (0, 2**50], got {sigma!r}.")
    elif not 0 < sigma <= 2**100:
        raise ValueError(f"sigma**2 must be in (0, 2**100], got {sigma!r}.")
    N, D = _exact_sigma2(sigma)
    t = math.isqrt(N // D) + 1  # ⌊σ⌋ + 1 (⌊√x⌋ = ⌊√⌊x⌋⌋)
    shape = () if size is None else ((size,) if isinstance(size, (int, np.integer)) else tuple(size))
    total = int(np.prod(shape, dtype=np.int64))
    out = np.empty(total, dtype=np.int64)
    todo = np.arange(total)
    den = 2 * N * D * t * t  # γ = (|Y| D t - N)² / (2 N D t²)
    while todo.size:
        ys = sample_discrete_laplace(rng, float(t), size=todo.size)
        keep = np.array([_bernoulli_exp(rng, (abs(int(y)) * D * t - N) ** 2, den) for y in ys], dtype=bool)
        out[todo[keep]] = ys[keep]
        todo = todo[~keep]
    return out.reshape(shape)


def discrete_gaussian_pmf(k, sigma, tail=None):
    """``P(K = k)`` of ``N_Z(0, σ²)`` (float64), normalised by the sum over ``|j| <= tail``.

    ``tail`` defaults to ``⌈40σ⌉ + 10``, beyond which the mass is below ``e^{-800}``
    (it underflows): the normaliser is exact in float64.  Without ``tail`` and for
    ``σ > 4`` the normaliser is the Poisson summation ``σ√(2π)(1 + 2Σ_m e^{-2π²σ²m²})``, whose
    correction terms are below ``e^{-315}`` there: the same float64 value without summing
    ``80σ`` terms (``σ = 1e12`` would need 8e13 of them).

    Examples
    --------
    >>> import numpy as np
    >>> float(np.round(discrete_gaussian_pmf(np.arange(-60, 61), 2.0).sum(), 12))
    1.0
    """
    if isinstance(sigma, (bool, np.bool_)) or not isinstance(sigma, numbers.Real) or not 0 < float(sigma) < math.inf:
        raise ValueError(f"sigma must be a finite number > 0, got {sigma!r}.")
    sigma = float(sigma)
    if tail is None and sigma > 4.0:
        norm = sigma * math.sqrt(2.0 * math.pi)  # (the terms e^{-2π²σ²m²} < e^{-315}: nothing in float64)
    else:
        if tail is None:
            tail = int(math.ceil(40.0 * sigma)) + 10
        j = np.arange(-tail, tail + 1, dtype=float)
        norm = float(np.exp(-(j * j) / (2.0 * sigma * sigma)).sum())
    k = np.asarray(k, dtype=float)
    return np.exp(-(k * k) / (2.0 * sigma * sigma)) / norm


def sample_laplace(rng, scale, size=None):
    """Draw continuous Laplace noise ``Laplace(0, scale)`` (float64), ``2**-10 <= scale <= 2**56``.

    NumPy's textbook inversion sampler: kept to reproduce the papers (it is exposed to
    the floating-point attack of Mironov 2012, unlike :func:`sample_discrete_laplace`).

    Examples
    --------
    >>> import numpy as np
    >>> sample_laplace(np.random.default_rng(0), 1.0, size=3).shape
    (3,)
    """
    _check_generator(rng)
    scale = check_noise_scale(scale, "Laplace")
    if size is None:
        size = scale.shape
    return rng.laplace(0.0, scale, size)


def sample_noise(rng, kind, scale, size=None):
    """Dispatch to :func:`sample_discrete_laplace` (``"discrete_laplace"``), :func:`sample_laplace`
    (``"laplace"``) or :func:`sample_discrete_gaussian` (``"discrete_gaussian"``, ``scale = σ``)."""
    if kind == "discrete_gaussian":
        return sample_discrete_gaussian(rng, scale, size)
    if kind == "discrete_laplace":
        return sample_discrete_laplace(rng, scale, size)
    if kind == "laplace":
        return sample_laplace(rng, scale, size)
    raise ValueError(f"noise must be 'discrete_laplace', 'laplace' or 'discrete_gaussian', got {kind!r}.")


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
