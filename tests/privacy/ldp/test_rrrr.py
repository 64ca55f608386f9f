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
def _ldp_tolerance(eps, K):
    """Rounding of the log constants: a few ulps of their magnitude (<= eps + ln K)."""
    return 1e-12 + 8 * np.finfo(float).eps * (eps + np.log(K))


@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0, 400.0, 700.0, 1e6])
@pytest.mark.parametrize("kappa", [0.5, 0.9, 0.99, 1.0])
def test_exact_ldp_every_subset_size(eps, kappa):
    """max_y max_{x,x'} ln P(y|x)/P(y|x') <= eps for every k, K in 2..50 (closed form, log space).

    Huge budgets (400, 700, 1e6) used to overflow; their probabilities underflow to 0
    in ``transition_matrix``, so the ratio is checked on ``log_transition_matrix``, and
    ``transition_matrix`` must still be stochastic.
    """
    rng = _rng(0)
    worst = -np.inf
    for K in range(2, 51):
        mech = RRRRMechanism(K, eps, kappa)
        perm = rng.permutation(K)  # the ratio depends only on k: one random subset per k
        for k in range(K):
            logP = mech.log_transition_matrix(perm[:k])
            assert np.all(np.isfinite(logP)), (K, k, eps, kappa)
            P = mech.transition_matrix(perm[:k])
            assert np.all(P >= 0)
            if eps <= 5.0:
                assert np.all(P > 0)
            np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-12)
            np.testing.assert_allclose(np.logaddexp.reduce(logP, axis=1), 0.0, rtol=0, atol=1e-12)
            ratio = np.max(logP.max(axis=0) - logP.min(axis=0))
            worst = max(worst, ratio - eps)
            assert ratio <= eps + _ldp_tolerance(eps, K), (K, k, eps, kappa, ratio)
    assert worst <= _ldp_tolerance(eps, 50)


@pytest.mark.parametrize("eps", [400.0, 700.0, 1e6])
def test_huge_epsilon_constructs_without_overflow(eps):
    """Regression: RRRRMechanism(4, 400.0) raised OverflowError (math.exp(eps))."""
    mech = RRRRMechanism(4, eps, 0.9)
    assert 0.0 <= mech.epsilon2(1) <= eps
    P = mech.transition_matrix([0])
    # the honest answer has probability 1 to double precision
    np.testing.assert_allclose(np.diag(P), 1.0, rtol=0, atol=1e-15)
    y = mech.privatize(np.arange(4).repeat(5), [0], random_state=_rng(0))
    np.testing.assert_array_equal(y, np.arange(4).repeat(5))


def test_log_space_constants_equal_the_direct_formulas():
    """At moderate budgets the log-space constants equal the textbook ratios to rounding."""
    from sklearn_bayes.privacy._ldp._rrrr import _rrrr_constants

    for K in (2, 3, 7, 20):
        for eps, kappa in [(0.1, 0.9), (1.0, 0.8), (5.0, 0.5), (30.0, 0.9), (1.0, 1.0)]:
            got = _rrrr_constants(K, eps, kappa)
            mech = RRRRMechanism(K, eps, kappa)
            e = math.exp(eps)
            expected = [[e / (e + K - 1), 1 / (e + K - 1), e / (e + K - 1), 0.0, 1 / (e + K - 1), 1.0]]
            e1 = kappa * eps
            for k in range(1, K):
                e2 = mech.epsilon2(k)
                A, B = math.exp(e1) + k, math.exp(e2) + K - k - 1
                expected.append([math.exp(e1) / A, 1 / A, math.exp(e1 + e2) / (A * B), 1 / ((K - k) * A),
                                 math.exp(e1) / (A * B), math.exp(e2) / B])
            # relative error: a few ulps of the log constants (|ln c| <= eps + ln K)
            np.testing.assert_allclose(got, expected, rtol=8 * np.finfo(float).eps * (eps + math.log(K)) + 1e-15)
            # the estimator's table and the mechanism's lazy per-size constants are the same numbers
            for k in range(K):
                np.testing.assert_array_equal(mech._constants(k), got[k])


def test_exact_ldp_is_tight_somewhere():
    """The check can fail: a mechanism with eps2 = eps (no correction) violates LDP."""
    from sklearn_bayes.privacy._ldp._rrrr import _transition_matrix_from_mask

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
        (dict(n_categories=2**31, epsilon=1.0), ValueError, "n_categories must be <= 2147483647"),
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


# ---------------------------------------------------------------- frozen parameters, resources
@pytest.mark.parametrize("name, value", [("epsilon", 0.01), ("kappa", 0.5), ("n_categories", 7)])
def test_parameters_are_read_only(name, value):
    """Regression: ``mech.epsilon = 0.01`` changed the repr but not the mechanism."""
    mech = RRRRMechanism(4, 1.0, 0.8)
    P, text = mech.transition_matrix([0]), repr(mech)
    with pytest.raises(AttributeError, match=f"{name} is read-only.*new RRRRMechanism"):
        setattr(mech, name, value)
    assert repr(mech) == text == "RRRRMechanism(n_categories=4, epsilon=1.0, kappa=0.8)"
    np.testing.assert_array_equal(mech.transition_matrix([0]), P)


def test_copies_keep_the_mechanism():
    import copy
    import pickle

    mech = RRRRMechanism(5, 2.0, 0.7)
    mech.transition_matrix([1])  # fills the per-size cache
    for other in (copy.deepcopy(mech), pickle.loads(pickle.dumps(mech))):
        assert repr(other) == repr(mech)
        np.testing.assert_array_equal(other.transition_matrix([1, 2]), mech.transition_matrix([1, 2]))


def test_construction_is_constant_memory_and_constants_are_lazy():
    """Regression: RRRRMechanism(10**7, 1.0) built a (K, 6) table in a Python loop (23 s).

    Construction allocates O(1) memory; constants are computed per subset size used.
    """
    import tracemalloc

    tracemalloc.start()
    try:
        mech = RRRRMechanism(10**7, 1.0)
        e2 = mech.epsilon2(3)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100_000, peak  # a (K, 6) float table would be 480 MB
    assert set(mech._log_consts) == set()  # epsilon2 needs no constants
    assert e2 == pytest.approx(0.1, rel=1e-6)  # -> eps - eps1 as |S^c| -> infinity
    mech.privatize([0, 9_999_999], [9_999_999], random_state=_rng(0))
    # the device sampler needs only its grid thresholds (review HQS V1), for the size used
    assert set(mech._grid_thresholds) == {1} and set(mech._log_consts) == set()


def test_rrrr_rare_branches_are_never_rounded_away():
    """RRRR's keep/leave draws take their rare side with probability ceil(q 2^53) / 2^53 >= q
    on numpy's 53-bit uniform grid (the top ceil(q 2^53) grid points, reflected), and an
    underflowed q (epsilon1 > ~745) still leaves one grid point.  The old draw, u < keep with
    keep = 1 - q rounded to a double, reached the rare side with probability below q whenever
    keep rounded up -- to exactly 0 once q < 2^-54 (eps ~ 37): an unbounded privacy loss."""
    from sklearn_bayes._fast._ldp import rare_given

    g = 2.0**-53
    top = 1.0 - g  # numpy's largest uniform
    assert rare_given(top, 0.0) and not rare_given(top - g, 0.0)
    assert rare_given(top, 1e-320)
    for q in [0.3 * g, 3.5 * g, 1e-15, 1e-9, 0.25]:
        m = math.ceil(q / g)  # at least this many of the 2^53 uniforms must give the rare side
        m_up = math.ceil(q * (1 + 8 * 2.0**-52) / g)  # the sampler rounds q a few ulps up, no more
        if m < 2**20:
            assert all(rare_given(top - i * g, q) for i in range(m))
        else:
            assert rare_given(top - (m - 1) * g, q)
        assert not rare_given(top - m_up * g, q)
    assert not rare_given(0.0, 0.5) and rare_given(0.5, 0.5)


def test_constants_table_columns_are_named_alike_in_python_and_the_kernels():
    """The RRRR constants table's columns: one set of names, the same in _rrrr.py and _fast/_ldp.pyx."""
    from sklearn_bayes._fast._ldp import CONST_COLUMNS
    import sklearn_bayes.privacy._ldp._rrrr as _rrrr

    assert CONST_COLUMNS == {name: i for i, name in enumerate(_rrrr.CONST_FIELDS)}
    named = dict(a1=_rrrr.A1, a0=_rrrr.A0, b_self=_rrrr.B_SELF, b_in=_rrrr.B_IN, b_out=_rrrr.B_OUT, r=_rrrr.R_KEEP)
    assert named == CONST_COLUMNS
    # the columns hold what their names say (K = 5, |S| = 2, eps = 1, kappa = 0.8)
    K, k, eps, kappa = 5, 2, 1.0, 0.8
    c = _rrrr._rrrr_constants(K, eps, kappa)[k]
    P = RRRRMechanism(K, eps, kappa).transition_matrix([0, 1])  # P[x, y]
    np.testing.assert_allclose([P[0, 0], P[1, 0], P[3, 3], P[0, 3], P[4, 3]],
                               c[[_rrrr.A1, _rrrr.A0, _rrrr.B_SELF, _rrrr.B_IN, _rrrr.B_OUT]], rtol=1e-14)
    e2 = RRRRMechanism(K, eps, kappa).epsilon2(k)
    assert c[_rrrr.R_KEEP] == pytest.approx(math.exp(e2) / (math.exp(e2) + K - k - 1), rel=1e-14)
