"""Subset-selection utilities U1-U6, semi-adaptive, non-adaptive and callables."""

import itertools

import numpy as np
import pytest

from sklearn_bayes.privacy import RRRRMechanism
from sklearn_bayes.privacy._ldp._utilities import (
    choose_subset_size,
    sorted_order,
    utility_value,
    utility_values,
)

NAMES = ["fisher", "entropy", "tv_posterior", "tv_marginal", "mse", "honest"]
THETA4 = np.array([0.5, 0.3, 0.15, 0.05])
FIXTURE = {
    "fisher": -40.80043,
    "entropy": -1.241901,
    "tv_posterior": 0.189974,
    "tv_marginal": -0.123149,
    "mse": -0.580411,
    "honest": 0.485443,
}


@pytest.mark.parametrize("name", NAMES)
def test_spec_fixture_values(name):
    """K=4, S={0}, eps=1, kappa=0.8, theta=(.5,.3,.15,.05): the spec's six values."""
    digits = len(str(FIXTURE[name]).split(".")[1])
    assert round(utility_value(THETA4, [0], 1.0, 0.8, name), digits) == FIXTURE[name]
    # and the batched prefix evaluation agrees (S_1 = {0} for this theta)
    assert utility_values(THETA4, 1.0, 0.8, name)[1] == pytest.approx(utility_value(THETA4, [0], 1.0, 0.8, name))


def _direct(theta, subset, eps, kappa, name):
    """Textbook formulas from the transition matrix G[y, x] (independent of the module)."""
    K = theta.size
    G = RRRRMechanism(K, eps, kappa).transition_matrix(subset).T
    h = G @ theta
    if name == "entropy":
        return float(np.sum(h * np.log(h)))
    if name == "tv_posterior":
        post = G * theta[None, :] / h[:, None]  # p(x | y)
        return float(np.sum(h * 0.5 * np.abs(post - theta[None, :]).sum(axis=1)))
    if name == "tv_marginal":
        return float(-0.5 * np.abs(h - theta).sum())
    if name == "mse":
        post = G * theta[None, :] / h[:, None]
        # E||e_X - E[e_X|Y]||^2 = 1 - sum_y h(y) ||p(.|y)||^2
        return float(-(1.0 - np.sum(h * np.sum(post**2, axis=1))))
    if name == "fisher":
        A = G[:, : K - 1] - G[:, [K - 1]]
        F = A.T @ np.diag(1 / h) @ A
        return float(-np.trace(np.linalg.inv(F)))
    if name == "honest":
        return float(np.sum(np.diag(G) * theta))  # P(Y = X)


@pytest.mark.parametrize("name", NAMES)
def test_against_textbook_definitions(name):
    rng = np.random.default_rng(0)
    for K in (3, 5, 9):
        theta = rng.dirichlet(np.ones(K))
        for k in range(K):
            subset = rng.choice(K, size=k, replace=False)
            assert utility_value(theta, subset, 1.3, 0.85, name) == pytest.approx(
                _direct(theta, subset, 1.3, 0.85, name), rel=1e-9, abs=1e-12
            )


@pytest.mark.parametrize("name", NAMES)
def test_prefix_batch_equals_single_evaluations(name):
    rng = np.random.default_rng(1)
    for K in (2, 4, 7):
        theta = rng.dirichlet(np.full(K, 0.5))
        order = sorted_order(theta)
        batch = utility_values(theta, 0.7, 0.9, name)
        single = [utility_value(theta, order[:k], 0.7, 0.9, name) for k in range(K)]
        np.testing.assert_allclose(batch, single, rtol=1e-10)


@pytest.mark.parametrize("K", range(2, 9))
def test_theorem7_honest_prefix_is_global_maximum(K):
    """max over prefixes of U6 == max over all 2^K - 1 proper subsets (brute force)."""
    rng = np.random.default_rng(K)
    for _ in range(20):
        theta = rng.dirichlet(np.full(K, rng.choice([0.1, 1.0, 5.0])))
        eps = rng.choice([0.5, 1.0, 5.0])
        kappa = rng.choice([0.8, 0.9])
        best_prefix = utility_values(theta, eps, kappa, "honest").max()
        best_all = max(
            utility_value(theta, S, eps, kappa, "honest")
            for k in range(K)
            for S in itertools.combinations(range(K), k)
        )
        assert best_prefix == pytest.approx(best_all, rel=1e-12)


def test_theorem7_fails_for_a_non_prefix_utility_check_has_power():
    """Brute force is not vacuous: a non-prefix subset can beat a bad prefix."""
    theta = np.array([0.6, 0.3, 0.05, 0.05])
    assert utility_value(theta, [2, 3], 1.0, 0.9, "honest") < utility_value(theta, [0], 1.0, 0.9, "honest")


def test_honest_prefix_sums_match_formula():
    theta = np.array([0.1, 0.4, 0.2, 0.3])
    order = sorted_order(theta)
    np.testing.assert_array_equal(order, [1, 3, 2, 0])
    vals = utility_values(theta, 2.0, 0.8, "honest")
    for k in range(4):
        assert vals[k] == pytest.approx(_direct(theta, order[:k], 2.0, 0.8, "honest"))


def test_sorted_order_ties_by_index():
    np.testing.assert_array_equal(sorted_order([0.25, 0.25, 0.5, 0.0]), [2, 0, 1, 3])


def test_choose_ties_take_first_index():
    # uniform theta: all prefixes of size >= 1 ... the argmax is unique or the first
    theta = np.full(5, 0.2)
    k = choose_subset_size(theta, 1.0, 0.9, "honest")
    vals = utility_values(theta, 1.0, 0.9, "honest")
    assert k == int(np.flatnonzero(vals == vals.max())[0])


def test_semi_adaptive_and_non_adaptive():
    theta = np.array([0.05, 0.5, 0.3, 0.15])
    assert choose_subset_size(theta, 1.0, 0.9, "semi_adaptive", alpha=0.5) == 1
    assert choose_subset_size(theta, 1.0, 0.9, "semi_adaptive", alpha=0.51) == 2
    assert choose_subset_size(theta, 1.0, 0.9, "semi_adaptive", alpha=0.8) == 2
    assert choose_subset_size(theta, 1.0, 0.9, "semi_adaptive", alpha=0.96) == 3  # capped at K - 1
    assert choose_subset_size(theta, 1.0, 0.9, "semi_adaptive", alpha=0.999) == 3
    assert choose_subset_size(theta, 1.0, 0.9, "non_adaptive") == 0
    with pytest.raises(ValueError, match="alpha"):
        choose_subset_size(theta, 1.0, 0.9, "semi_adaptive")


def test_callable_plugin_matches_builtin():
    def honest(theta, P, subset):
        return float(np.sum(np.diag(P) * theta))

    rng = np.random.default_rng(3)
    for _ in range(10):
        theta = rng.dirichlet(np.full(6, 0.3))
        np.testing.assert_allclose(utility_values(theta, 1.0, 0.9, honest), utility_values(theta, 1.0, 0.9, "honest"))
        assert choose_subset_size(theta, 1.0, 0.9, honest) == choose_subset_size(theta, 1.0, 0.9, "honest")


def test_callable_receives_original_coordinates():
    seen = []

    def spy(theta, P, subset):
        seen.append((P.copy(), subset.copy()))
        return 0.0

    theta = np.array([0.1, 0.6, 0.3])
    utility_values(theta, 1.0, 0.9, spy)
    mech = RRRRMechanism(3, 1.0, 0.9)
    assert [s.tolist() for _, s in seen] == [[], [1], [1, 2]]
    for P, s in seen:
        np.testing.assert_allclose(P, mech.transition_matrix(s))


def test_fisher_with_kappa_one_is_finite_or_skipped():
    """kappa = 1 makes F singular for |S^c| >= 2: those candidates get -inf, never chosen."""
    theta = np.array([0.7, 0.2, 0.05, 0.05])
    vals = utility_values(theta, 1.0, 1.0, "fisher")
    assert np.isfinite(vals[0])
    k = choose_subset_size(theta, 1.0, 1.0, "fisher")
    assert np.isfinite(vals[k])


def test_k_from_built_in_choice_is_argmax():
    """The chosen size maximises the utility up to the tie tolerance, and is the smallest such size."""
    from sklearn_bayes.privacy._ldp._utilities import TIE_ULPS

    rng = np.random.default_rng(4)
    for name in NAMES:
        theta = rng.dirichlet(np.full(6, 0.2))
        vals = utility_values(theta, 1.0, 0.9, name)
        k = choose_subset_size(theta, 1.0, 0.9, name)
        tol = TIE_ULPS * 6 * np.finfo(float).eps * max(1.0, np.abs(vals[np.isfinite(vals)]).max())
        assert vals[k] >= vals[np.isfinite(vals)].max() - tol
        assert np.all(~(vals[:k] >= vals[np.isfinite(vals)].max() - tol))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("K", [2, 3, 6, 17, 64])
def test_exact_ties_at_the_uniform_start_do_not_depend_on_rounding(name, K):
    """Regression (issue 26, item 1): at the uniform start tv_marginal is exactly 0 for sizes 0 and
    K - 1; the compiled kernel rounded both to -8.33e-17, the numpy reference to -8.33e-17 and
    -5.55e-17 (K = 6), so the two paths chose 0 and 5.  With the shared tie rule both choose the
    smallest tied size, and so does any evaluation that differs from them by a few ulps."""
    from sklearn_bayes.privacy._ldp._rrrr import _rrrr_constants
    from sklearn_bayes.privacy._ldp._utilities import chosen_subset

    def reference(theta, P, subset):
        return utility_value(theta, subset, 1.0, 0.8, name)

    theta = np.full(K, 1.0 / K)
    consts = _rrrr_constants(K, 1.0, 0.8)
    k_compiled = chosen_subset(np.ones(K), 1.0, 0.8, name, None, consts)[0]
    k_reference = choose_subset_size(theta, 1.0, 0.8, reference, consts=consts)
    assert k_compiled == k_reference
    from sklearn_bayes.privacy._ldp._utilities import tie_argmax

    vals = utility_values(theta, 1.0, 0.8, name, consts=consts)
    assert tie_argmax(vals) == k_compiled
    # any rounding of the same values (a few ulps of the summed terms, here of magnitude 1) agrees
    rng = np.random.default_rng(K)
    for _ in range(20):
        jitter = rng.integers(-4, 5, size=K) * np.finfo(float).eps * max(1.0, np.abs(vals).max())
        assert tie_argmax(vals + jitter) == k_compiled


def test_tie_rule_is_the_same_in_the_compiled_kernel_and_in_python():
    """tie_argmax (numpy) and the kernel's _tie_argmax (exposed as _fast._ldp.tie_argmax) do the same
    arithmetic: equal answers on values with planted ties, near-ties at the tolerance, NaN and inf."""
    from sklearn_bayes._fast._ldp import tie_argmax as compiled
    from sklearn_bayes.privacy._ldp._utilities import TIE_ULPS, tie_argmax

    rng = np.random.default_rng(0)
    eps = np.finfo(float).eps
    for K in (1, 2, 5, 40):
        for scale in (1e-3, 1.0, 1e4):
            for _ in range(50):
                v = rng.normal(size=K) * scale
                j = rng.integers(K)
                tol = TIE_ULPS * K * eps * max(1.0, np.abs(v).max())
                v[rng.integers(K)] = v.max() - tol * rng.choice([0.0, 0.5, 0.999, 1.0, 1.001, 2.0])
                if rng.random() < 0.3:
                    v[j] = rng.choice([np.nan, np.inf, -np.inf])
                assert compiled(np.ascontiguousarray(v)) == tie_argmax(v), v
    assert tie_argmax([np.nan, -np.inf]) == compiled(np.array([np.nan, -np.inf])) == 0
    assert tie_argmax([np.inf, 0.5, 0.5]) == compiled(np.array([np.inf, 0.5, 0.5])) == 1


@pytest.mark.parametrize("mode, name", [(5, "fisher"), (6, "entropy"), (7, "tv_posterior"), (8, "tv_marginal"), (9, "mse")])
def test_cython_closed_forms_equal_matrix_definitions(mode, name):
    """The O(K)-per-candidate Cython forms (U1 by Woodbury on diag + rank 2) equal the
    O(K^3) matrix computations for every prefix, K up to 30."""
    from sklearn_bayes._fast._ldp import prefix_utilities
    from sklearn_bayes.privacy._ldp._rrrr import _rrrr_constants

    rng = np.random.default_rng(mode)
    for K in (2, 3, 7, 30):
        for eps, kappa in [(0.5, 0.8), (1.0, 0.9), (5.0, 0.5)]:
            theta = rng.dirichlet(np.full(K, 0.5))
            order = sorted_order(theta).astype(np.int32)
            c = prefix_utilities(mode, theta, order, _rrrr_constants(K, eps, kappa))
            np.testing.assert_allclose(c, utility_values(theta, eps, kappa, name), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("eps", [400.0, 700.0, 1e6])
def test_huge_epsilon_chooses_without_overflow(eps):
    """Regression: the constants overflowed (OverflowError) for epsilon >= ~710 (400 for K=4).

    At such budgets every response is honest to double precision, so U6 (P(Y = X)) is 1
    for every candidate and the first one (SRR) is chosen; every utility picks a valid size.
    """
    theta = np.array([0.5, 0.3, 0.15, 0.05])
    np.testing.assert_allclose(utility_values(theta, eps, 0.9, "honest"), 1.0, rtol=0, atol=1e-15)
    for name in NAMES + ["semi_adaptive", "non_adaptive"]:
        k = choose_subset_size(theta, eps, 0.9, name, alpha=0.6)
        assert 0 <= k <= 3
    assert utility_value(theta, [0], eps, 0.9, "honest") == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("name", ["entropy", "tv_posterior", "tv_marginal", "mse", "fisher"])
def test_prefix_utilities_need_linear_memory(name):
    # regression: the prefix utilities built a K x K x K array (7.45 GiB at K = 1000);
    # they now run in the compiled O(K)-memory kernel of the online loop
    import tracemalloc

    K = 300
    theta = np.random.default_rng(3).dirichlet(np.full(K, 0.3))
    tracemalloc.start()
    try:
        vals = utility_values(theta, 1.0, 0.9, name)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert vals.shape == (K,)
    assert peak < 64 * K * 8  # a few K-vectors and the K x 6 constants; K^3 doubles is 216 MB


@pytest.mark.parametrize("name", ["fisher", "entropy", "tv_posterior", "tv_marginal", "mse", "honest",
                                  "semi_adaptive", "non_adaptive"])
def test_compiled_choice_equals_the_reference_choice(name):
    """chosen_subset (the compiled kernel of the online loop, used by propose_subset) chooses what
    choose_subset_size chooses, with the same order."""
    from sklearn_bayes.privacy._ldp._rrrr import _rrrr_constants
    from sklearn_bayes.privacy._ldp._utilities import chosen_subset

    rng = np.random.default_rng(3)
    for K in (2, 5, 13):
        consts = _rrrr_constants(K, 1.0, 0.8)
        for _ in range(40):
            phi = rng.gamma(0.5, size=K) + 1e-3
            theta = phi / phi.sum()
            k_ref = choose_subset_size(theta, 1.0, 0.8, name, alpha=0.6, consts=consts)
            k, order = chosen_subset(phi, 1.0, 0.8, name, 0.6, consts)
            np.testing.assert_array_equal(order, sorted_order(theta))
            # no near-tie is skipped: both paths share the tie rule (tie_argmax), so the last
            # bits of theta's normalisation cannot decide
            assert k == k_ref, (K, phi)
