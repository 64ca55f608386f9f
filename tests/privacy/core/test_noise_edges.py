"""Arguments of the exact samplers at their edges (task HQH).

Before the fix: a string scale or sigma (``"3"``) and a numpy bool sigma were sampled as
numbers; ``scale=None`` and ``scale=nan`` were reported as "scale inf exceeds the largest
supported scale"; ``sigma=None`` raised ``float() argument must be ...`` naming nothing; a
``RandomState`` or an int as the generator raised ``AttributeError: ... has no attribute
'bit_generator'``.  Now each is a ``TypeError`` / ``ValueError`` naming the argument.  The laws
at the extreme scales are checked exactly where they are degenerate.
"""

import math
from fractions import Fraction

import numpy as np
import pytest

from sklearn_bayes.privacy._core._noise import (
    check_noise_scale,
    discrete_gaussian_pmf,
    sample_discrete_gaussian,
    sample_discrete_laplace,
    sample_laplace,
    sample_noise,
)


@pytest.mark.parametrize("scale", ["3", None, b"3", [1.0, "2"]])
@pytest.mark.parametrize("sampler", [sample_discrete_laplace, sample_laplace])
def test_a_scale_that_is_not_a_number_is_refused_by_name(sampler, scale):
    with pytest.raises(TypeError, match="scale"):
        sampler(np.random.default_rng(0), scale, size=3)


@pytest.mark.parametrize("scale", [math.nan, [1.0, math.nan]])
def test_a_nan_scale_is_named_as_nan(scale):
    with pytest.raises(ValueError, match="scale.*nan"):
        sample_discrete_laplace(np.random.default_rng(0), scale, size=2)
    with pytest.raises(ValueError, match="nan"):
        check_noise_scale(scale)


@pytest.mark.parametrize("sigma", ["3", None, np.True_, True, b"3"])
def test_a_sigma_that_is_not_a_number_is_refused_by_name(sigma):
    with pytest.raises(TypeError, match="sigma"):
        sample_discrete_gaussian(np.random.default_rng(0), sigma, size=3)


@pytest.mark.parametrize("rng", [np.random.RandomState(0), 0, None])
@pytest.mark.parametrize("kind", ["discrete_laplace", "laplace", "discrete_gaussian"])
def test_a_generator_that_is_not_a_numpy_generator_is_refused_by_name(rng, kind):
    with pytest.raises(TypeError, match="rng"):
        sample_noise(rng, kind, 3.0, size=3)


def test_numpy_scalars_and_exact_sigmas_are_accepted():
    rng = np.random.default_rng(0)
    assert sample_discrete_laplace(rng, np.float32(2.0), size=4).dtype == np.int64
    assert sample_discrete_gaussian(rng, np.int64(3), size=4).dtype == np.int64
    assert sample_discrete_gaussian(rng, Fraction(9, 4), size=4).dtype == np.int64  # (σ² as a Fraction)


@pytest.mark.parametrize("tiny", [1e-12, 1e-300, 5e-324])
def test_tiny_scales_are_exactly_zero_noise(tiny):
    """The discrete Gaussian's mass off 0 is ``2 e^{-1/(2σ²)}/Z`` (below 1e-400000 here): 0 exactly.  A discrete
    Laplace scale below ``2**-10`` is refused (review HQU F4: the kernel's int64 tail cut is 0 there, so the
    noise would vanish whatever the law); at ``2**-10`` the mass off 0 is ``2p/(1+p)``, ``p = e^{-1024}``: 0."""
    rng = np.random.default_rng(1)
    with pytest.raises(ValueError, match="smallest supported scale"):
        sample_discrete_laplace(rng, tiny, size=2000)
    assert not sample_discrete_laplace(rng, 2.0**-10, size=2000).any()
    assert not sample_discrete_gaussian(rng, tiny, size=2000).any()


def test_discrete_gaussian_below_one_matches_the_pmf_exactly_enumerated():
    """σ = 0.6: ``P(0)``, ``P(±1)``, ``P(±2)`` from the exact normalised pmf (enumerated over |k| <= 40);
    chi-square over {0, ±1, >=2 in |k|} with 2 degrees of freedom at the 0.999 quantile (13.8)."""
    sigma, n = 0.6, 40_000
    draws = sample_discrete_gaussian(np.random.default_rng(5), sigma, size=n)
    p = discrete_gaussian_pmf(np.arange(-40, 41), sigma)
    probs = np.array([p[40], p[39] + p[41], 1.0 - p[40] - p[39] - p[41]])
    observed = np.array([np.sum(draws == 0), np.sum(np.abs(draws) == 1), np.sum(np.abs(draws) >= 2)])
    chi2 = float(np.sum((observed - n * probs) ** 2 / (n * probs)))
    assert chi2 < 13.8


@pytest.mark.parametrize("sigma", [4.5, 10.0, 77.7, 1e3])
def test_discrete_gaussian_pmf_normaliser_by_poisson_summation_is_the_direct_sum(sigma):
    tail = int(math.ceil(40.0 * sigma)) + 10
    k = np.arange(-30, 31)
    np.testing.assert_allclose(discrete_gaussian_pmf(k, sigma), discrete_gaussian_pmf(k, sigma, tail=tail),
                               rtol=4 * tail * np.finfo(float).eps)  # the direct sum's rounding


def test_discrete_gaussian_pmf_at_a_huge_sigma_needs_no_huge_sum():
    """σ = 1e12 summed 8e13 terms (a MemoryError); the pmf at 0 is 1/(σ√(2π)) to float precision."""
    assert math.isclose(float(discrete_gaussian_pmf(0, 1e12)), 1.0 / (1e12 * math.sqrt(2 * math.pi)), rel_tol=1e-15)
    with pytest.raises(ValueError, match="sigma"):
        discrete_gaussian_pmf(0, math.nan)
