"""The posterior-adaptive choice among two-level LDP mechanisms (``privacy._ldp._adaptive_rule``)."""

import itertools

import numpy as np
import pytest

from sklearn_bayes.privacy._ldp._adaptive_rule import (
    N_HEAVY,
    candidate_mechanisms,
    choose_mechanism,
    expected_tv,
    fisher_information,
    fisher_information_exact,
    tangent_covariance,
)
from sklearn_bayes.privacy._ldp._mechanisms import SetResponseMechanism, oue_privatize, ss_privatize

CANDIDATES = lambda K: [("subset_selection", k) for k in range(1, K)] + [("oue", None)]  # noqa: E731


def _all_masks(K):
    return [np.array(bits, dtype=bool) for bits in itertools.product([0, 1], repeat=K)]


def _theta(K, rho, seed):
    th = np.random.default_rng(seed).dirichlet(np.full(K, rho))
    th = np.maximum(th, 1e-300)
    return th / th.sum()


# ------------------------------------------------------------------ the information
@pytest.mark.parametrize("K", [3, 5, N_HEAVY])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 5.0])
def test_information_is_exact_when_every_category_is_enumerated(K, epsilon):
    # K <= N_HEAVY: every membership configuration is enumerated, no delta-method term is left
    for rho, seed in [(0.1, 0), (1.0, 1)]:
        th = _theta(K, rho, seed)
        for cand in CANDIDATES(K):
            info, r = fisher_information(th, epsilon, *cand, return_error=True)
            assert r == 0.0
            np.testing.assert_allclose(info, fisher_information_exact(th, epsilon, *cand), rtol=1e-11, atol=0)


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 5.0])
def test_information_is_exact_for_grr_and_for_subset_selection_at_the_uniform_theta(epsilon):
    # GRR: theta(A) = theta_y, no randomness left; SS at the uniform theta: theta(Y) = k / K
    K = 11
    th = _theta(K, 0.3, 2)
    np.testing.assert_allclose(fisher_information(th, epsilon, "subset_selection", 1),
                               fisher_information_exact(th, epsilon, "subset_selection", 1), rtol=1e-12)
    u = np.full(K, 1.0 / K)
    for k in range(1, K):
        np.testing.assert_allclose(fisher_information(u, epsilon, "subset_selection", k),
                                   fisher_information_exact(u, epsilon, "subset_selection", k), rtol=1e-10)


def test_information_matches_the_exact_one_beyond_the_enumerated_categories():
    # K = 10 > N_HEAVY: the light categories enter by the delta method.  What the rule uses is
    # the predicted TV error; measured over 810 cases (K in {6, 9, 12}, eps in {0.5, 1, 2, 3, 5},
    # rho in {0.01, 0.1, 1}, every candidate) it is within 0.5 % of the one from the exact
    # information (the largest matrix entries can be off by a few %: 2.9 % for OUE at eps = 5).
    K = 10
    for epsilon, rho, seed in itertools.product([0.5, 1.0, 5.0], [0.01, 0.1, 1.0], [3]):
        th = _theta(K, rho, seed)
        for cand in CANDIDATES(K):
            info, r = fisher_information(th, epsilon, *cand, return_error=True)
            exact = fisher_information_exact(th, epsilon, *cand)
            a = expected_tv(th, tangent_covariance(info), 1000)
            b = expected_tv(th, tangent_covariance(exact), 1000)
            assert abs(a / b - 1) < 0.01, (epsilon, rho, cand, a / b, r)


def test_information_agrees_with_the_score_of_simulated_responses():
    # I = E[score score^T] with score_j = c [j in A] / (1 + c theta(A)) (projected on the
    # tangent space, where the score has mean 0): a Monte Carlo check of the formula itself,
    # independent of the enumeration.  Entries within 5 Monte Carlo standard errors.
    K, eps, n = 8, 1.0, 200_000
    th = _theta(K, 0.5, 4)
    rng = np.random.default_rng(5)
    c = np.expm1(eps)
    Q = np.linalg.qr(np.column_stack([np.ones(K), np.eye(K)[:, : K - 1]]))[0][:, 1:]
    P = Q @ Q.T  # projection on {sum v = 0}
    for cand in [("subset_selection", 1), ("subset_selection", 3), ("oue", None)]:
        x = rng.choice(K, size=n, p=th)
        A = (oue_privatize(x, K, eps, rng) if cand[0] == "oue" else ss_privatize(x, K, eps, cand[1], rng))
        A = A.astype(float)
        s = (c * A / (1 + c * (A @ th))[:, None]) @ P
        prod = s[:, :, None] * s[:, None, :]
        mc, se = prod.mean(axis=0), prod.std(axis=0) / np.sqrt(n)
        exact = P @ fisher_information(th, eps, *cand) @ P
        assert np.all(np.abs(mc - exact) <= 5 * se + 1e-12), np.max(np.abs(mc - exact) / se)


# ------------------------------------------------------------------ the rule
def test_choice_minimises_the_exact_criterion_and_skips_nothing_it_should_keep():
    K, eps, n = 8, 1.0, 4000
    for rho, seed in [(0.1, 6), (1.0, 7)]:
        th = _theta(K, rho, seed)
        best, scores = choose_mechanism(th, eps, n, shortlist=None)
        exact = {c: expected_tv(th, tangent_covariance(fisher_information_exact(th, eps, *c)), n)
                 for c in CANDIDATES(K)}
        assert set(scores) == set(exact)
        # the chosen candidate is the exact optimum, or within the approximation's 1 %
        assert exact[best] <= 1.01 * min(exact.values())


def test_choice_over_posterior_draws_and_the_shortlist():
    K, eps, n = 12, 1.0, 6000
    draws = np.random.default_rng(8).dirichlet(np.full(K, 0.2), size=5)
    full, s_full = choose_mechanism(draws, eps, n, shortlist=None)
    short, s_short = choose_mechanism(draws, eps, n, shortlist=3)
    assert len(s_short) == 3 and set(s_short) <= set(s_full)
    assert s_short == {c: s_full[c] for c in s_short}
    assert s_full[short] <= 1.01 * s_full[full]


def test_candidates():
    assert candidate_mechanisms(5, 1.0) == [("subset_selection", k) for k in range(1, 5)] + [("oue", None)]
    big = candidate_mechanisms(100, 1.0)  # k* = 27: a window of +- 8
    assert big[0] == ("subset_selection", 19) and big[-2] == ("subset_selection", 35) and big[-1] == ("oue", None)


@pytest.mark.parametrize("bad, match", [
    (dict(theta=[0.5, 0.6]), "theta"), (dict(theta=[1.0]), "theta"), (dict(theta=[-0.1, 1.1]), "theta"),
    (dict(epsilon=0.0), "epsilon"), (dict(epsilon=np.inf), "epsilon"),
    (dict(kind="grr"), "kind"), (dict(k=0), "k must"), (dict(k=4), "k must"),
])
def test_information_rejects_bad_input(bad, match):
    args = dict(theta=[0.25] * 4, epsilon=1.0, kind="subset_selection", k=2) | bad
    with pytest.raises(ValueError, match=match):
        fisher_information(args["theta"], args["epsilon"], args["kind"], args["k"])


# ------------------------------------------------------------------ privacy of what the rule can pick
@pytest.mark.parametrize("K", [2, 3, 5, 8])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0, 50.0])
def test_every_mechanism_the_rule_can_pick_is_exactly_epsilon_ldp_with_the_posteriors_likelihood(K, epsilon):
    # every candidate, enumerated over all 2^K responses in log space: columns are
    # distributions, the log ratio of two inputs is at most epsilon, and every possible
    # response's likelihood is exactly (ln P(y | x) - ln P(y | x')) = eps ([x in A] - [x' in A]):
    # the two-level likelihood the exact posterior uses for every mechanism, so responses of
    # different candidates can be mixed in one posterior
    for kind, k in candidate_mechanisms(K, epsilon):
        mech = SetResponseMechanism(K, epsilon, kind, k)
        masks = _all_masks(K)
        logp = np.array([[mech.log_probability(m, x) for x in range(K)] for m in masks])
        np.testing.assert_allclose(np.logaddexp.reduce(logp, axis=0), 0.0, atol=1e-9)
        finite = np.isfinite(logp)
        assert np.all(finite.all(axis=1) | ~finite.any(axis=1))
        ok = finite.all(axis=1)
        rows = logp[ok]
        assert (rows.max(axis=1) - rows.min(axis=1)).max() <= epsilon + 1e-12
        A = np.array(masks)[ok].astype(float)
        two_level = epsilon * A
        d = (rows - rows[:, :1]) - (two_level - two_level[:, :1])
        assert np.abs(d).max() <= 1e-9 * max(1.0, epsilon)


def test_adaptive_rule_chooses_from_past_responses_only():
    # users of later batches cannot change an earlier batch's mechanism: change the last
    # batch's users, every choice (made before each batch) stays the same
    import warnings

    from sklearn_bayes.exceptions import SeededNoiseWarning
    from sklearn_bayes.experiments.adaptive_ldp import fit_adaptive_rule

    K, eps, T, B = 6, 1.0, 600, 4
    rng = np.random.default_rng(9)
    X = rng.choice(K, size=(T, 1), p=[0.6, 0.3, 0.1, 0.0, 0.0, 0.0])
    X2 = X.copy()
    X2[T - T // B:, 0] = (X2[T - T // B:, 0] + 1) % K
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        est, _, ch = fit_adaptive_rule(X, K, eps, np.random.default_rng(10), n_batches=B, n_draws=2)
        est2, _, ch2 = fit_adaptive_rule(X2, K, eps, np.random.default_rng(10), n_batches=B, n_draws=2)
    assert ch == ch2 and len(ch) == B
    assert est.n_responses_ == T and not np.array_equal(est.theta_, est2.theta_)
