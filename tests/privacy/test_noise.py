"""Noise samplers (goodness of fit against their exact distributions) and privacy accounting."""

import copy
import math
import pickle

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone

from sklearn_bayes.privacy import PrivateCountSketch
from sklearn_bayes.privacy._accounting import PrivacyLedger, amplify_by_subsampling, subsampled_base_epsilon
from sklearn_bayes.privacy._noise import (
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


# ------------------------------------------------------------------ accounting


def test_subsampling_amplification_formula():
    for eps in (0.01, 0.5, 1.0, 5.0):
        for rate in (0.001, 0.1, 0.5, 1.0):
            amp = amplify_by_subsampling(eps, rate)
            assert math.isclose(amp, math.log(1 + rate * (math.exp(eps) - 1)), rel_tol=1e-9)
            assert amp <= eps + 1e-15
            assert math.isclose(amplify_by_subsampling(subsampled_base_epsilon(eps, rate), rate), eps, rel_tol=1e-12)
    # roughly rate * eps for small eps
    assert math.isclose(amplify_by_subsampling(0.01, 0.1), 0.1 * 0.01, rel_tol=0.01)
    with pytest.raises(ValueError):
        amplify_by_subsampling(1.0, 0.0)
    with pytest.raises(ValueError):
        subsampled_base_epsilon(-1.0, 0.5)


def test_ledger_records_and_is_shared_by_clone_but_copied_by_pickle():
    ledger = PrivacyLedger()
    est = PrivateCountSketch(ledger=ledger, random_state=np.random.default_rng(0))
    assert clone(est).ledger is ledger
    assert copy.deepcopy(ledger) is ledger
    est.fit([1, 2, 2, 3])
    est.query([2])
    other = clone(est).fit([1, 1])
    other.query([1])
    # two fits on the same individuals: the shared ledger adds both releases up
    assert ledger.n_releases == 2 and math.isclose(ledger.epsilon_spent, 2.0)
    assert est.ledger_.n_releases == 1 and math.isclose(est.epsilon_spent_, 1.0)
    restored = pickle.loads(pickle.dumps(ledger))
    assert restored is not ledger and restored.records == ledger.records
    with pytest.raises(ValueError):
        ledger.record("x", -0.1)
