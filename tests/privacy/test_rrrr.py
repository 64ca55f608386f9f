"""RRRRMechanism: exact epsilon-LDP of the closed form, the spec's fixtures, Monte Carlo audit."""

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from sklearn_bayes.privacy import RRRRMechanism
from sklearn_bayes.exceptions import SeededNoiseWarning


def _rng(seed):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------- fixtures of the spec
@pytest.mark.parametrize(
    "K, eps, kappa, expected",
    [
        (20, 1.0, 0.8, 0.2124),
        (20, 1.0, 0.9, 0.1059),
        (20, 0.5, 0.8, 0.1059),
        (20, 5.0, 0.8, 1.1003),
        (10, 1.0, 0.8, 0.2281),
        (4, 1.0, 0.8, 0.317322),
    ],
)
def test_epsilon2_fixtures(K, eps, kappa, expected):
    digits = len(str(expected).split(".")[1])
    assert round(RRRRMechanism(K, eps, kappa).epsilon2(1), digits) == expected


def test_transition_matrix_fixture_K4():
    G = np.array(
        [
            [0.689974, 0.310026, 0.310026, 0.310026],
            [0.103342, 0.280912, 0.204531, 0.204531],
            [0.103342, 0.204531, 0.280912, 0.204531],
            [0.103342, 0.204531, 0.204531, 0.280912],
        ]
    )  # rows y, columns x
    P = RRRRMechanism(4, 1.0, 0.8).transition_matrix([0])
    np.testing.assert_allclose(P.T, G, atol=5e-7)


def test_epsilon2_limits():
    mech = RRRRMechanism(10, 1.0, 1.0)
    assert mech.epsilon2(3) == 0.0  # kappa = 1, |S^c| >= 2
    assert mech.epsilon2(9) == 1.0  # |S^c| = 1
    assert mech.epsilon2(0) == 1.0  # SRR
    for k in range(10):
        assert 0.0 <= RRRRMechanism(10, 2.0, 0.5).epsilon2(k) <= 2.0


def test_empty_subset_is_srr():
    K, eps = 7, 0.7
    P = RRRRMechanism(K, eps, 0.9).transition_matrix([])
    p, q = math.exp(eps) / (math.exp(eps) + K - 1), 1 / (math.exp(eps) + K - 1)
    expected = np.full((K, K), q)
    np.fill_diagonal(expected, p)
    np.testing.assert_allclose(P, expected, rtol=1e-14)


# ---------------------------------------------------------------- exact LDP
@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
@pytest.mark.parametrize("kappa", [0.5, 0.9, 0.99, 1.0])
def test_exact_ldp_every_subset_size(eps, kappa):
    """max_y max_{x,x'} ln P(y|x)/P(y|x') <= eps for every k, K in 2..50 (closed form)."""
    rng = _rng(0)
    worst = -np.inf
    for K in range(2, 51):
        mech = RRRRMechanism(K, eps, kappa)
        perm = rng.permutation(K)  # the ratio depends only on k: one random subset per k
        for k in range(K):
            P = mech.transition_matrix(perm[:k])
            assert np.all(P > 0) or (kappa == 1.0)
            np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-12)
            logP = np.log(P)
            ratio = np.max(logP.max(axis=0) - logP.min(axis=0))
            worst = max(worst, ratio - eps)
            assert ratio <= eps + 1e-12, (K, k, eps, kappa, ratio)
    assert worst <= 1e-12


def test_exact_ldp_is_tight_somewhere():
    """The check can fail: a mechanism with eps2 = eps (no correction) violates LDP."""
    from sklearn_bayes.privacy._rrrr import _transition_matrix_from_mask

    K, k, eps, kappa = 10, 3, 1.0, 0.9
    e1, e2 = kappa * eps, eps  # wrong eps2
    A, B = math.exp(e1) + k, math.exp(e2) + K - k - 1
    consts = [math.exp(e1) / A, 1 / A, math.exp(e1 + e2) / (A * B), 1 / ((K - k) * A), math.exp(e1) / (A * B), 0]
    mask = np.zeros(K, dtype=bool)
    mask[:k] = True
    P = _transition_matrix_from_mask(mask, consts)
    logP = np.log(P)
    assert np.max(logP.max(axis=0) - logP.min(axis=0)) > eps + 0.1


# ---------------------------------------------------------------- Monte Carlo of privatize
@pytest.mark.parametrize(
    "K, subset, eps, kappa",
    [(4, [0], 1.0, 0.8), (6, [1, 4], 0.5, 0.9), (5, [], 1.0, 0.9), (8, [0, 1, 2, 3, 4, 5, 6], 2.0, 0.8), (3, [2], 5.0, 0.5)],
)
def test_privatize_matches_closed_form(K, subset, eps, kappa):
    """Chi-square goodness of fit of Algorithm 8's draws to the closed-form rows."""
    mech = RRRRMechanism(K, eps, kappa)
    P = mech.transition_matrix(subset)
    rng = _rng(1)
    n = 40_000
    pvals = []
    for x in range(K):
        y = mech.privatize(np.full(n, x), subset, random_state=rng)
        counts = np.bincount(y, minlength=K)
        expected = n * P[x]
        pvals.append(stats.chisquare(counts, expected).pvalue)
    # K independent tests: Bonferroni at overall level 1e-3
    assert min(pvals) > 1e-3 / K, pvals


def test_privatize_detects_wrong_distribution():
    """The audit has power: draws of SRR do not fit a non-empty subset's matrix."""
    mech = RRRRMechanism(5, 1.0, 0.8)
    P = mech.transition_matrix([0])
    y = mech.privatize(np.full(20_000, 0), [], random_state=_rng(2))
    counts = np.bincount(y, minlength=5)
    assert stats.chisquare(counts, 20_000 * P[0]).pvalue < 1e-6


def test_privatize_scalar_and_shape():
    mech = RRRRMechanism(5, 1.0)
    y = mech.privatize(3, [0, 1], random_state=_rng(0))
    assert isinstance(y, int) and 0 <= y < 5
    y2 = mech.privatize(np.zeros((3, 4), dtype=int), [0], random_state=_rng(0))
    assert y2.shape == (3, 4)


def test_privatize_reproducible_with_generator_and_warns_on_int():
    mech = RRRRMechanism(6, 1.0)
    x = np.arange(6).repeat(10)
    a = mech.privatize(x, [2], random_state=_rng(5))
    b = mech.privatize(x, [2], random_state=_rng(5))
    np.testing.assert_array_equal(a, b)
    with pytest.warns(SeededNoiseWarning):
        mech.privatize(x, [2], random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mech.privatize(x, [2])  # None: OS entropy, no warning


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(n_categories=1, epsilon=1.0), ValueError, "n_categories"),
        (dict(n_categories=2.5, epsilon=1.0), TypeError, "n_categories"),
        (dict(n_categories=4, epsilon=0.0), ValueError, "epsilon"),
        (dict(n_categories=4, epsilon=-1.0), ValueError, "epsilon"),
        (dict(n_categories=4, epsilon=float("nan")), ValueError, "epsilon"),
        (dict(n_categories=4, epsilon=1.0, kappa=0.0), ValueError, "kappa"),
        (dict(n_categories=4, epsilon=1.0, kappa=1.5), ValueError, "kappa"),
        (dict(n_categories=4, epsilon=True), TypeError, "epsilon"),
    ],
)
def test_bad_construction(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        RRRRMechanism(**kwargs)


def test_bad_subsets_and_inputs():
    mech = RRRRMechanism(4, 1.0)
    with pytest.raises(ValueError, match="all categories"):
        mech.transition_matrix([0, 1, 2, 3])
    with pytest.raises(ValueError, match="outside"):
        mech.transition_matrix([4])
    with pytest.raises(ValueError, match="repeated"):
        mech.transition_matrix([1, 1])
    with pytest.raises(ValueError, match="outside"):
        mech.privatize([0, 5], [0], random_state=_rng(0))
    with pytest.raises(ValueError, match="NaN|integer"):
        mech.privatize([0.0, np.nan], [0], random_state=_rng(0))
    with pytest.raises(ValueError, match="subset_size"):
        mech.epsilon2(4)
