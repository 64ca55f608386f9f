"""Round 28z (review HQP): the empirical-Bayes decoders' ``credible_interval`` never has zero width.

Wilson's interval of the support probability ``pi_v``, mapped to ``theta_v`` and clipped to [0, 1], was ``[1, 1]``
(``[0, 0]``) whenever it lay wholly above ``p`` (below ``q``): certainty the count does not give.  There the
interval is now the likelihood-ratio set of ``pi`` restricted to ``[q, p]`` (:func:`binomial_intervals`' Notes);
everywhere else it is Wilson's, bit for bit."""

import warnings

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import binom, chi2, norm

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp import _empirical_bayes as _eb
from sklearn_bayes.privacy._ldp._empirical_bayes import binomial_intervals
from sklearn_bayes.privacy._ldp._mechanisms import ss_support_probabilities

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning")


def _wilson_clipped(c, n, p, q, level):
    """The previous intervals (rounds 1-28y), written out independently."""
    z = norm.ppf(0.5 + level / 2)
    ph = np.asarray(c, dtype=float) / n
    centre = (ph + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(ph * (1 - ph) / n + z * z / (4 * n * n))
    return np.column_stack([np.clip((centre - half - q) / (p - q), 0, 1), np.clip((centre + half - q) / (p - q), 0, 1)])


def _grid():
    for eps in (1e-3, 1e-2, 0.1, 0.5, 1.0, 2.0, 4.0, 8.0):
        for K in (5, 10, 64, 1000):
            for k in sorted({1, max(1, int(round(K / (np.exp(eps) + 1))))}):
                for n in (1, 7, 200, 10_000, 1_000_000):
                    yield eps, K, k, n


def _counts(n, p, q):
    c = np.unique(np.r_[0, 1, 2, n - 2, n - 1, n, np.floor(n * q), np.ceil(n * p), np.linspace(0, n, 201).round()])
    return c[(c >= 0) & (c <= n)]


@pytest.mark.parametrize("level", [0.5, 0.95, 0.999])
def test_never_zero_width_and_wilson_unchanged_elsewhere(level):
    """Every count 0..n (extremes and a sweep) on a grid eps 1e-3..8, K 5..1000, n 1..1e6: 0 <= lo < hi <= 1;
    where the previous interval had positive width it is returned bit for bit; where it was [1, 1] ([0, 0]) the
    new one ends at 1 (starts at 0).  Fails on the previous code (zero width at e.g. eps = 1, n = 1e4)."""
    n_changed = 0
    for eps, K, k, n in _grid():
        p, q = ss_support_probabilities(K, eps, k)
        c = _counts(n, p, q)
        new, old = binomial_intervals(c, n, p, q, level, rule="wilson-lr"), _wilson_clipped(c, n, p, q, level)
        assert np.all(np.isfinite(new)) and np.all(new[:, 0] >= 0) and np.all(new[:, 1] <= 1), (eps, K, k, n)
        assert np.all(new[:, 1] > new[:, 0]), (eps, K, k, n, c[new[:, 1] <= new[:, 0]])
        kept = old[:, 1] > old[:, 0]
        assert np.array_equal(new[kept], old[kept]), (eps, K, k, n)
        top, bottom = ~kept & (old[:, 0] == 1), ~kept & (old[:, 1] == 0)
        assert np.all(new[top, 1] == 1) and np.all(new[bottom, 0] == 0)
        n_changed += int((~kept).sum())
    assert n_changed > 100  # the grid does reach the boundary cases


@pytest.mark.parametrize("c, n, p, q", [(150, 200, 0.6, 0.3), (10, 200, 0.6, 0.3), (0, 5000, 0.5, 0.05),
                                        (2000, 2000, 0.9, 0.4), (9300, 10_000, 0.9, 0.1)])
def test_boundary_interval_is_the_constrained_likelihood_ratio_set(c, n, p, q):
    """The changed end solves 2 (l(pi_m) - l(pi)) = chi2_1(0.95), pi_m the MLE on [q, p], checked against brentq
    on scipy's binomial log-pmf (independent of the module's log1p form), to the bisection's resolution."""
    lo, hi = binomial_intervals(np.array([c]), n, p, q, 0.95, rule="wilson-lr")[0]
    old = _wilson_clipped(np.array([c]), n, p, q, 0.95)[0]
    assert old[0] == old[1]  # a boundary case of the previous code
    crit = chi2.ppf(0.95, 1)
    at_p = c / n > p
    pi_m = p if at_p else q
    g = lambda pi: 2 * (binom.logpmf(c, n, pi_m) - binom.logpmf(c, n, pi)) - crit
    far = q if at_p else p
    if g(far) <= 0:
        expected = 0.0 if at_p else 1.0
    else:
        expected = (brentq(g, far, pi_m, xtol=1e-15, rtol=1e-15) - q) / (p - q)
    got = lo if at_p else hi
    assert (hi == 1.0) if at_p else (lo == 0.0)
    assert abs(got - expected) < 1e-9
    assert 0 < hi - lo < 1 or expected in (0.0, 1.0)


def test_reproducer_eps_1e3_K5_no_certainty():
    """HQP's reproducer: K = 5, n = 200, eps = 1e-3, decoder='eb', seeds 0-19 (8 of them had [1, 1] or [0, 0]):
    p - q = 3e-4 makes the counts nearly uninformative, so every interval is now [0, 1]."""
    x = np.random.default_rng(9).integers(0, 5, (200, 1))
    for s in range(20):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e = AdaptiveLDPFrequencyEstimator(n_categories=5, epsilon=1e-3, decoder="eb",
                                              random_state=np.random.default_rng(s)).fit(x)
            iv = e.credible_interval()
        assert np.array_equal(iv, np.tile([0.0, 1.0], (5, 1))), (s, iv)


@pytest.mark.parametrize("eps", [1e-3, 1.0])
def test_default_decoder_K1000_no_zero_width(eps, monkeypatch):
    """HQP's second reproducer's setting (K = 1000, n = 1000, Dirichlet(0.5) frequencies, the default decoder):
    48 (eps = 1e-3) and 24 (eps = 1) zero-width intervals before; none under round 28z's rule (``INTERVAL_RULE =
    'wilson-lr'``, kept reachable), and Wilson's kept elsewhere."""
    monkeypatch.setattr(_eb, "INTERVAL_RULE", "wilson-lr")
    rng = np.random.default_rng(12345)
    K = 1000
    pr = rng.dirichlet(np.full(K, 0.5))
    X = rng.choice(K, 1000, p=pr).reshape(-1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=0).fit(X)
        iv = e.credible_interval(0.95)
    old = _wilson_clipped(*e._support_counts(), 0.95)
    assert np.all(iv[:, 1] > iv[:, 0])
    kept = old[:, 1] > old[:, 0]
    assert (~kept).sum() > 0 and np.array_equal(iv[kept], old[kept])


@pytest.mark.slow
@pytest.mark.parametrize("theta_v", [0.001, 0.01, 0.999])
def test_coverage_near_the_boundary_is_at_least_nominal(theta_v):
    """4000 replications next to a boundary, where the new intervals apply: coverage at least 0.95 less 4
    binomial SE and Wilson's own error (0.005); the Wilson / likelihood-ratio switch only adds coverage there
    (a boundary case covers unless the truth is beyond the LR bound)."""
    rng = np.random.default_rng(28)
    n, p, q, reps = 2000, 0.55, 0.15, 4000
    c = rng.binomial(n, q + (p - q) * theta_v, size=reps).astype(float)
    ci = binomial_intervals(c, n, p, q, 0.95, rule="wilson-lr")
    old = _wilson_clipped(c, n, p, q, 0.95)
    assert np.any(old[:, 1] == old[:, 0])  # the boundary cases occur at this theta_v
    cover = np.mean((ci[:, 0] <= theta_v) & (theta_v <= ci[:, 1]))
    assert cover >= 0.95 - 4 * np.sqrt(0.95 * 0.05 / reps) - 0.005
    assert cover <= 1.0 - 1.0 / reps or theta_v == 0.999  # not a trivial [0, 1]
