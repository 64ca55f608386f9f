"""Noise samplers: goodness of fit against their exact distributions at every accepted scale."""

import math

import numpy as np
import pytest
from scipy import stats

from fractions import Fraction

from sklearn_bayes.privacy._core._noise import (
    MAX_NOISE_SCALE,
    _bernoulli_exp,
    _uniform_below,
    discrete_gaussian_pmf,
    sample_discrete_gaussian,
    discrete_laplace_cdf,
    discrete_laplace_pmf,
    discrete_laplace_variance,
    laplace_cdf,
    sample_discrete_laplace,
    sample_laplace,
    sample_noise,
)

ALPHA = 1e-3  # level of each goodness-of-fit test (fixed seeds: deterministic)


def test_discrete_laplace_pmf_exact_properties():
    for scale in (0.3, 1.0, 7.5):
        p = math.exp(-1 / scale)
        K = int(40 * scale) + 100  # pmf(K) > 1e-170: no underflow, tail mass < 1e-20
        k = np.arange(-K, K + 1)
        pmf = discrete_laplace_pmf(k, scale)
        assert math.isclose(pmf.sum(), 1.0, rel_tol=1e-12)
        # the epsilon-DP ratio: P(k)/P(k+1) = e^{1/scale} exactly on k >= 0, <= it everywhere
        ratio = pmf[:-1] / pmf[1:]
        assert np.all(ratio <= math.exp(1 / scale) * (1 + 1e-12))
        np.testing.assert_allclose(ratio[k[:-1] >= 0], math.exp(1 / scale), rtol=1e-12)
        np.testing.assert_allclose(discrete_laplace_cdf(k, scale), np.cumsum(pmf), atol=1e-12)
        np.testing.assert_allclose((k**2 * pmf).sum(), discrete_laplace_variance(scale), rtol=1e-10)
        assert discrete_laplace_variance(scale) < 2 * scale**2  # below the continuous Laplace variance
        assert math.isclose(discrete_laplace_pmf(0, scale), (1 - p) / (1 + p))


@pytest.mark.parametrize("scale", [0.5, 2.0, 15.0])
def test_discrete_laplace_sampler_matches_pmf(scale):
    rng = np.random.default_rng(12)
    n = 200_000
    x = sample_discrete_laplace(rng, scale, size=n)
    assert x.dtype == np.int64
    # bins: every integer whose expected count is >= 20, plus the two tails
    k = np.arange(-400, 401)
    expected = n * discrete_laplace_pmf(k, scale)
    keep = k[expected >= 20]
    lo, hi = keep.min(), keep.max()
    observed = np.concatenate([[np.sum(x < lo)], np.bincount(x[(x >= lo) & (x <= hi)] - lo, minlength=hi - lo + 1),
                               [np.sum(x > hi)]])
    probs = np.concatenate([[discrete_laplace_cdf(lo - 1, scale)], discrete_laplace_pmf(np.arange(lo, hi + 1), scale),
                            [1 - discrete_laplace_cdf(hi, scale)]])
    assert stats.chisquare(observed, n * probs / probs.sum()).pvalue > ALPHA


def test_discrete_laplace_sampler_array_scales():
    rng = np.random.default_rng(3)
    scales = np.repeat([0.5, 4.0], 100_000)
    x = sample_discrete_laplace(rng, scales)
    for s in (0.5, 4.0):
        v = x[scales == s]
        # the sample variance is within 5 standard errors of the exact variance
        var = discrete_laplace_variance(s)
        fourth = np.sum(np.arange(-500, 501) ** 4 * discrete_laplace_pmf(np.arange(-500, 501), s))
        se = math.sqrt((fourth - var**2) / v.size)
        assert abs(v.var() - var) < 5 * se


@pytest.mark.parametrize("scale", [0.2, 3.0])
def test_laplace_sampler_matches_cdf(scale):
    x = sample_laplace(np.random.default_rng(5), scale, size=100_000)
    assert stats.kstest(x, lambda t: laplace_cdf(t, scale)).pvalue > ALPHA
    np.testing.assert_allclose(laplace_cdf([-1.0, 0.3], scale), stats.laplace.cdf([-1.0, 0.3], scale=scale))


def test_goodness_of_fit_has_power():
    # a sampler with the wrong scale is rejected by the same test
    x = sample_discrete_laplace(np.random.default_rng(12), 2.2, size=200_000)
    k = np.arange(-30, 31)
    observed = np.array([np.sum(x < -30)] + [np.sum(x == v) for v in k] + [np.sum(x > 30)])
    probs = np.concatenate([[discrete_laplace_cdf(-31, 2.0)], discrete_laplace_pmf(k, 2.0),
                            [1 - discrete_laplace_cdf(30, 2.0)]])
    assert stats.chisquare(observed, 200_000 * probs / probs.sum()).pvalue < ALPHA


def test_bad_scale_and_kind():
    rng = np.random.default_rng(0)
    for bad in (0.0, -1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="scale"):
            sample_discrete_laplace(rng, bad, size=3)
    with pytest.raises(ValueError, match="noise"):
        sample_noise(rng, "gaussian", 1.0, size=2)


def _binned_probabilities(edges, scale):
    """Probabilities of the bins ``|K| < a_0``, ``a_j <= K < a_{j+1}`` (both signs), ``|K| >= a_m``.

    Exact and accurate at every scale: ``P(K >= a) = p**a / (1 + p)`` for ``a >= 1``.
    """
    p = math.exp(-1.0 / scale)

    def sf(a):
        return math.exp(-a / scale) / (1.0 + p)

    inner = [sf(a) - sf(b) for a, b in zip(edges[:-1], edges[1:])] + [sf(edges[-1])]
    return np.array([1.0 - 2.0 * sf(edges[0])] + inner + inner)


def _binned_counts(x, edges):
    a = np.abs(x)
    counts = [np.sum(a < edges[0])]
    for sign in (1, -1):
        side = x[(np.sign(x) == sign) & (a >= edges[0])] * sign
        counts += list(np.bincount(np.searchsorted(edges, side, side="right") - 1, minlength=len(edges)))
    return np.array(counts)


@pytest.mark.parametrize("scale", [0.3, 2.0, 15.0, 1e3, 1e9, 1.0e15, 2.0**40 + 0.375, MAX_NOISE_SCALE])
def test_exact_sampler_matches_distribution_at_every_scale(scale):
    """Binned chi-square against the exact law, from scale 0.3 to the largest accepted 2**56.

    NumPy's inversion sampler has holes above ~1e15 and returns exactly 0 above ~1e19; the
    exact kernel must fit at every scale, including a scale that is not a dyadic integer.
    """
    n = 200_000
    x = sample_discrete_laplace(np.random.default_rng(7), scale, size=n)
    assert x.dtype == np.int64
    edges = np.unique(np.maximum(1, np.round(scale * np.array([0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]))))
    probs = _binned_probabilities(edges.tolist(), scale)
    observed = _binned_counts(x, edges)
    assert observed.sum() == n
    keep = n * probs >= 5  # pool the bins too rare for the chi-square approximation
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(n * probs[keep], n * probs[~keep].sum())
    assert stats.chisquare(obs[exp > 0], exp[exp > 0]).pvalue > ALPHA


@pytest.mark.parametrize("scale", [1e15, 1e16, MAX_NOISE_SCALE])
def test_huge_scales_have_no_holes_and_never_vanish(scale):
    """Low bits are uniform (no unreachable residues) and the noise is never identically 0."""
    n = 200_000
    x = sample_discrete_laplace(np.random.default_rng(3), scale, size=n)
    # |K| < 64 has probability < 64 / scale < 1e-13: every draw is non-zero, both signs appear
    assert np.count_nonzero(x) == n
    assert stats.binomtest(int(np.sum(x > 0)), n, 0.5).pvalue > ALPHA
    # residues mod 64 are uniform up to a bias of order 64 / scale
    assert stats.chisquare(np.bincount(x % 64, minlength=64)).pvalue > ALPHA
    if scale == MAX_NOISE_SCALE:
        # the same test has power: NumPy's geometric (the old sampler) has holes at this scale
        rng = np.random.default_rng(3)
        q = -np.expm1(-1.0 / scale)
        old = rng.geometric(q, n) - rng.geometric(q, n)
        assert stats.chisquare(np.bincount(old % 64, minlength=64)).pvalue < ALPHA


def test_tiny_and_mixed_scales():
    rng = np.random.default_rng(4)
    # P(K != 0) = 2p / (1 + p) with p = e^{-1/b}: about 4e-9 at b = 0.05, e^-1024 at 2**-10 (the smallest
    # accepted scale; below it the kernel's int64 tail cut would make the noise 0 whatever the law: refused)
    assert not np.any(sample_discrete_laplace(rng, 2.0**-10, size=10_000))
    for tiny in (1e-300, 5e-324):
        with pytest.raises(ValueError, match="smallest supported scale"):
            sample_discrete_laplace(rng, tiny, size=10)
    scales = np.tile([2.0**-10, 0.5, 1e6, MAX_NOISE_SCALE], 50_000)
    x = sample_discrete_laplace(rng, scales)
    assert np.all(x[scales == 2.0**-10] == 0)
    for s in (0.5, 1e6):
        v = x[scales == s].astype(float)
        var = discrete_laplace_variance(s)
        # the sample variance is within 5 standard errors (fourth moment: ~24 s^4 at large s, as Laplace)
        fourth = np.sum(np.arange(-80, 81) ** 4 * discrete_laplace_pmf(np.arange(-80, 81), s)) if s < 1 else 24 * s**4
        assert abs(v.var() - var) < 5 * math.sqrt((fourth - var**2) / v.size)
    assert np.all(np.abs(x[scales == MAX_NOISE_SCALE]) > 0)


def test_sampler_is_a_function_of_the_generator_state():
    """Same state, same draws: the stream estimators rewind generators to undo a rejected call."""
    rng = np.random.default_rng(11)
    state = rng.bit_generator.state
    a = sample_discrete_laplace(rng, np.array([0.7, 3.0, 1e12]), size=(4, 3))
    rng.bit_generator.state = state
    b = sample_discrete_laplace(rng, np.array([0.7, 3.0, 1e12]), size=(4, 3))
    np.testing.assert_array_equal(a, b)
    assert a.shape == (4, 3)
    assert sample_discrete_laplace(rng, 2.0).shape == ()
    assert sample_discrete_laplace(rng, 2.0, size=0).shape == (0,)


@pytest.mark.parametrize("kind", ["discrete_laplace", "laplace"])
def test_scales_beyond_the_limit_are_refused(kind):
    rng = np.random.default_rng(0)
    for bad in (np.nextafter(MAX_NOISE_SCALE, np.inf), 1e19, 1e30, [1.0, 1e30]):
        with pytest.raises(ValueError, match=r"exceeds the largest supported scale 2\*\*56"):
            sample_noise(rng, kind, bad, size=2)
    x = sample_noise(rng, kind, MAX_NOISE_SCALE, size=1000)
    assert np.all(np.isfinite(x)) and np.count_nonzero(x) == 1000
    # the pmf and cdf stay accurate at huge scales (no 1 - p cancellation)
    b = 1e18
    assert math.isclose(float(discrete_laplace_pmf(0, b)), math.tanh(0.5 / b), rel_tol=1e-12)
    assert math.isclose(float(discrete_laplace_cdf(-1, b)), math.exp(-1 / b) / (1 + math.exp(-1 / b)), rel_tol=1e-12)


# ------------------------------------------------------------------ exact discrete Gaussian


def _exact_dg_pmf(k, sigma2):
    """``exp(-k²/(2σ²))`` normalised over ``|k| <= 60σ + 20`` (the rest is below e^{-1800}), σ² a Fraction."""
    tail = int(60 * math.sqrt(sigma2)) + 20
    j = np.arange(-tail, tail + 1)
    w = np.exp(-(j.astype(float) ** 2) / (2.0 * float(sigma2)))
    return np.exp(-(np.asarray(k, float) ** 2) / (2.0 * float(sigma2))) / w.sum()


def _g_test(x, pmf, n):
    """G-test of the draws ``x`` against ``pmf`` (a function of k): bins with expected count >= 20, tails pooled."""
    k = np.arange(-2000, 2001)
    expected = n * pmf(k)
    keep = k[expected >= 20]
    lo, hi = keep.min(), keep.max()
    observed = np.concatenate([[np.sum(x < lo)], np.bincount(x[(x >= lo) & (x <= hi)] - lo, minlength=hi - lo + 1),
                               [np.sum(x > hi)]])
    probs = np.concatenate([[pmf(k[k < lo]).sum()], pmf(np.arange(lo, hi + 1)), [pmf(k[k > hi]).sum()]])
    return stats.power_divergence(observed, n * probs / probs.sum(), lambda_="log-likelihood").pvalue


@pytest.mark.slow
@pytest.mark.parametrize("sigma", [0.6, 1.0, 2.5, Fraction(7, 2), 11.0])
def test_discrete_gaussian_sampler_matches_the_normalised_exp(sigma):
    """G-test of 60,000 draws against exp(-k²/2σ²)/Σ (σ a float read exactly, or σ² a Fraction)."""
    sigma2 = sigma if isinstance(sigma, Fraction) else Fraction(sigma) ** 2
    n = 60_000
    x = sample_discrete_gaussian(np.random.default_rng(21), sigma, size=n)
    assert x.dtype == np.int64
    assert _g_test(x, lambda k: _exact_dg_pmf(k, sigma2), n) > ALPHA
    np.testing.assert_allclose(discrete_gaussian_pmf(np.arange(-5, 6), float(math.sqrt(sigma2))),
                               _exact_dg_pmf(np.arange(-5, 6), sigma2), rtol=1e-12)


def test_discrete_gaussian_goodness_of_fit_has_power():
    """The same test rejects the draws against a 5 % wider law, and against the rounded continuous Gaussian."""
    n = 60_000
    x = sample_discrete_gaussian(np.random.default_rng(21), 1.0, size=n)
    assert _g_test(x, lambda k: _exact_dg_pmf(k, Fraction(105, 100) ** 2), n) < ALPHA
    # N(0, 1) rounded to the integers is a different law at σ = 1 (P(0) = 0.383 vs 0.399)
    rounded = lambda k: stats.norm.cdf(np.asarray(k) + 0.5) - stats.norm.cdf(np.asarray(k) - 0.5)  # noqa: E731
    assert _g_test(x, rounded, n) < ALPHA


def test_discrete_gaussian_large_sigma_moments_and_integers():
    """At the estimator's scales (σ ~ 1e5-1e9 grid steps) the draws are integers with variance σ²."""
    for sigma in (1.5e5, 3.0e9):
        x = sample_discrete_gaussian(np.random.default_rng(4), sigma, size=20_000)
        assert x.dtype == np.int64
        z = x / sigma
        # mean 0 and variance 1 within 5 standard errors (the discrete law's variance is σ²(1 - e^{-huge}))
        assert abs(z.mean()) < 5 / math.sqrt(z.size)
        assert abs(z.var() - 1.0) < 5 * math.sqrt(2.0 / z.size)


def test_discrete_gaussian_is_reproducible_and_validates():
    a = sample_discrete_gaussian(np.random.default_rng(9), 4.0, size=(3, 5))
    b = sample_discrete_gaussian(np.random.default_rng(9), 4.0, size=(3, 5))
    assert a.shape == (3, 5) and np.array_equal(a, b)
    assert sample_noise(np.random.default_rng(9), "discrete_gaussian", 4.0, size=(3, 5)).tolist() == a.tolist()
    for bad in (0.0, -1.0, math.inf, math.nan, 2.0**51):
        with pytest.raises(ValueError, match="sigma"):
            sample_discrete_gaussian(np.random.default_rng(0), bad, size=3)


@pytest.mark.parametrize("num, den", [(3, 10), (17, 10), (5, 3), (0, 1), (7, 1)])
def test_exact_bernoulli_of_exp(num, den):
    """Bernoulli(exp(-num/den)) frequencies within 4.5 binomial standard errors of exp(-num/den)."""
    rng = np.random.default_rng(num * 31 + den)
    n = 40_000
    hits = sum(_bernoulli_exp(rng, num, den) for _ in range(n))
    p = math.exp(-num / den)
    assert abs(hits / n - p) <= 4.5 * math.sqrt(p * (1 - p) / n) + 1e-12


def test_uniform_below_big_integers():
    """Beyond 2**63 the integers come from the generator's bytes by rejection: uniform (residues mod 7)."""
    d = 3 * 2**70 + 5
    rng = np.random.default_rng(2)
    u = [_uniform_below(rng, d) for _ in range(21_000)]
    assert all(0 <= v < d for v in u)
    counts = np.bincount([v % 7 for v in u], minlength=7)
    assert stats.chisquare(counts).pvalue > ALPHA
    assert max(u) > 2**70  # the high bits are used
