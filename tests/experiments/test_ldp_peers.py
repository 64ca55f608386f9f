"""The static LDP peers of the AdOBEst-LDP benchmark (GRR, OUE, OLH, SS with IBU and norm-sub).

The clients are our own vectorised implementations: they are checked against the exact
expectation of their support counts and, where multi-freq-ldpy can read their reports,
against multi-freq-ldpy's aggregators on the same reports.
"""

import numpy as np
import pytest
from scipy.stats import norm

from sklearn_bayes.experiments._ldp_peers import (
    ALL_PEER_ESTIMATORS,
    ALL_PEERS,
    PEER_ESTIMATORS,
    PEERS,
    PROTOCOLS,
    ibu,
    mle_em,
    norm_sub,
    olh_hash,
    olh_range,
    peer_estimates,
    privatize_peer,
    ss_subset_size,
    support_counts,
    support_matrix,
    support_probabilities,
    unbiased_estimate,
)

THETA = np.array([0.4, 0.25, 0.15, 0.1, 0.05, 0.03, 0.02, 0.0, 0.0, 0.0])


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_unbiased_estimate_is_unbiased(protocol, epsilon):
    # The support count of v is Binomial(n, q + (p - q) theta_v) (users are independent), so the
    # estimate's exact standard deviation is known; the mean over runs must be within z standard
    # errors of theta in every coordinate, z Bonferroni-corrected so that the whole K-vector has
    # the false-alarm rate of a single 3-sigma test (0.27 %): z = 3.82 at K = 10.  (3 SE per
    # coordinate over the 80 coordinates of this test would fail about one seed in five: at
    # seed [7, 20, 3], SS at eps = 2 is 3.30 SE off in one coordinate; with 2000 runs the same
    # case is within 1.6 SE everywhere.)
    K, n, runs = THETA.size, 2000, 200
    rng = np.random.default_rng([7, int(epsilon * 10), PROTOCOLS.index(protocol)])
    p, q = support_probabilities(protocol, K, epsilon)
    est = np.empty((runs, K))
    for r in range(runs):
        x = rng.choice(K, size=n, p=THETA)
        counts = support_counts(protocol, privatize_peer(protocol, x, K, epsilon, rng), K, epsilon)
        est[r] = unbiased_estimate(counts, n, p, q)
    P = q + (p - q) * THETA
    se = np.sqrt(P * (1 - P) / n) / (p - q) / np.sqrt(runs)
    z = norm.isf(0.0027 / 2 / K)
    assert np.all(np.abs(est.mean(axis=0) - THETA) <= z * se), (est.mean(axis=0) - THETA) / se


def test_protocol_constants():
    # Wang et al. 2016/2017: SS size round(K / (e^eps + 1)) (at least 1), OLH range round(e^eps) + 1
    assert ss_subset_size(20, 1.0) == 5 and ss_subset_size(10, 5.0) == 1 and ss_subset_size(100, 2.0) == 12
    assert olh_range(1.0) == 4 and olh_range(0.5) == 3 and olh_range(5.0) == 149
    # p and q are probabilities of the support indicator; GRR's column of A sums to 1
    for protocol in PROTOCOLS:
        p, q = support_probabilities(protocol, 20, 1.0)
        assert 0 < q < p < 1
    p, q = support_probabilities("GRR", 20, 1.0)
    assert p + 19 * q == pytest.approx(1.0) and p / q == pytest.approx(np.e)
    # SS: every report has k members, so p + (K - 1) q = k
    p, q = support_probabilities("SS", 20, 1.0)
    assert p + 19 * q == pytest.approx(5.0) and p / q < np.e


def test_reports_have_the_protocol_shape():
    rng = np.random.default_rng(0)
    K, eps = 12, 1.0
    x = rng.integers(0, K, 500)
    y = privatize_peer("GRR", x, K, eps, rng)
    assert y.shape == (500,) and y.min() >= 0 and y.max() < K
    bits = privatize_peer("OUE", x, K, eps, rng)
    assert bits.shape == (500, K) and bits.dtype == bool
    subsets = privatize_peer("SS", x, K, eps, rng)
    k = ss_subset_size(K, eps)
    assert subsets.shape == (500, k)
    assert all(np.unique(s).size == k for s in subsets)  # k distinct members
    yh, seeds = privatize_peer("OLH", x, K, eps, rng)
    assert yh.shape == seeds.shape == (500,) and yh.max() < olh_range(eps)
    # a seed fixes the hash function: the same seed hashes the same value to the same bucket
    assert np.array_equal(olh_hash(seeds, x, 4), olh_hash(seeds.copy(), x.copy(), 4))
    with pytest.raises(ValueError, match="protocol"):
        privatize_peer("HR", x, K, eps, rng)


def test_olh_hash_is_uniform_and_pairwise_independent():
    # over users (seeds), H(v) is uniform on [g] and H(v) = H(v') has probability 1/g
    g, n = 5, 200_000
    seeds = np.random.default_rng(3).integers(0, 2**63 - 1, n).astype(np.uint64)
    h0, h1 = olh_hash(seeds, 0, g), olh_hash(seeds, 1, g)
    counts = np.bincount(h0, minlength=g)
    assert np.all(np.abs(counts - n / g) <= 4 * np.sqrt(n * (1 / g) * (1 - 1 / g)))
    same = np.mean(h0 == h1)
    assert abs(same - 1 / g) <= 4 * np.sqrt((1 / g) * (1 - 1 / g) / n)


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["GRR", "OUE", "SS"])
def test_estimators_match_multi_freq_ldpy(protocol):
    # multi-freq-ldpy reads our reports: its IBU and its clipped unbiased estimate (MI) agree
    # with ours on the same reports
    from multi_freq_ldpy.pure_frequency_oracles import GRR, SS, UE

    rng = np.random.default_rng(11)
    K, eps, n = 8, 1.0, 3000
    x = rng.choice(K, size=n, p=np.array([0.3, 0.2, 0.2, 0.1, 0.1, 0.05, 0.05, 0.0]))
    reports = privatize_peer(protocol, x, K, eps, rng)
    counts = support_counts(protocol, reports, K, eps)
    p, q = support_probabilities(protocol, K, eps)
    if protocol == "GRR":
        theirs_ibu = GRR.GRR_Aggregator_IBU(list(reports), K, eps)
        theirs_mi = GRR.GRR_Aggregator_MI(list(reports), K, eps)
    elif protocol == "OUE":
        theirs_ibu = UE.UE_Aggregator_IBU(list(reports.astype(float)), K, eps, True)
        theirs_mi = UE.UE_Aggregator_MI(list(reports.astype(float)), eps, True)
    else:
        theirs_ibu = SS.SS_Aggregator_IBU(list(reports), K, eps)
        theirs_mi = SS.SS_Aggregator_MI(list(reports), K, eps)
    np.testing.assert_allclose(ibu(counts, p, q), theirs_ibu, rtol=0, atol=1e-12)
    clipped = np.clip(unbiased_estimate(counts, n, p, q), 0, None)
    np.testing.assert_allclose(clipped / clipped.sum(), theirs_mi, rtol=0, atol=1e-12)


def test_ibu_fixed_point_and_grr_mle():
    rng = np.random.default_rng(5)
    K, eps = 6, 2.0
    theta = np.array([0.3, 0.25, 0.2, 0.12, 0.08, 0.05])
    x = rng.choice(K, size=200_000, p=theta)
    for protocol in PROTOCOLS:
        p, q = support_probabilities(protocol, K, eps)
        counts = support_counts(protocol, privatize_peer(protocol, x, K, eps, rng), K, eps)
        t = ibu(counts, p, q)
        assert np.all(t >= 0) and t.sum() == pytest.approx(1.0, abs=1e-12)
        # a fixed point of theta <- theta * A (f / A theta)
        A = np.full((K, K), q) + (p - q) * np.eye(K)
        f = counts / counts.sum()
        np.testing.assert_allclose(t * (A @ (f / (A @ t))), t, rtol=0, atol=1e-10)
        if protocol == "GRR":
            # GRR's reports are multinomial with probabilities A theta: when the unbiased
            # estimate lies inside the simplex it is the MLE, which IBU (EM) must reach
            u = unbiased_estimate(counts, x.size, p, q)
            assert np.all(u > 0)
            np.testing.assert_allclose(t, u, rtol=0, atol=1e-8)


def test_norm_sub_is_the_simplex_projection():
    rng = np.random.default_rng(2)
    for _ in range(50):
        f = rng.normal(0.1, 0.3, size=rng.integers(2, 30))
        out = norm_sub(f)
        assert np.all(out >= 0) and out.sum() == pytest.approx(1.0, abs=1e-12)
        # one constant delta is subtracted from the kept coordinates, the others are <= delta
        kept = out > 0
        delta = (f - out)[kept]
        np.testing.assert_allclose(delta, delta[0], atol=1e-12)
        assert np.all(f[~kept] <= delta[0] + 1e-12)
    p = np.array([0.5, 0.3, 0.2, 0.0])
    np.testing.assert_allclose(norm_sub(p), p, atol=1e-15)  # already on the simplex: unchanged
    np.testing.assert_allclose(norm_sub(np.array([0.6, 0.2, 0.1])), [0.6 + 0.1 / 3, 0.2 + 0.1 / 3, 0.1 + 0.1 / 3])


def test_peer_estimates_common_users_and_reproducible():
    rng = np.random.default_rng(0)
    x = rng.choice(10, size=2000, p=THETA)
    est, secs = peer_estimates(x, 10, 1.0, np.random.default_rng(1))
    assert set(est) == set(PEERS) and set(secs) == set(PROTOCOLS)
    for v in est.values():
        assert v.shape == (10,) and np.all(v >= 0) and v.sum() == pytest.approx(1.0, abs=1e-9)
    again, _ = peer_estimates(x, 10, 1.0, np.random.default_rng(1))
    assert all(np.array_equal(est[k], again[k]) for k in PEERS)


@pytest.mark.parametrize("K", [3, 20, 60])
def test_ibu_same_iterates_as_multi_freq_ldpy(K):
    # our O(K) iteration against multi-freq-ldpy's dense IBU (same start, same stopping rule),
    # on sparse counts where EM needs many iterations and on a short run (max_iter = 7)
    from multi_freq_ldpy.estimators.Histogram_estimator import IBU

    rng = np.random.default_rng(K)
    counts = rng.poisson(rng.dirichlet(np.full(K, 0.2)) * 5000 + 30).astype(float)
    for p, q, max_iter in ((0.6, 0.1, 10_000), (0.5, 1 / (np.e + 1), 10_000), (0.7, 0.3, 7)):
        A = np.full((K, K), q)
        np.fill_diagonal(A, p)
        theirs = IBU(K, A, counts / counts.sum(), max_iter, 1e-12, "max_abs")
        np.testing.assert_allclose(ibu(counts, p, q, max_iter=max_iter), theirs, rtol=0, atol=1e-11)


def test_ss_subset_size_minimises_the_variance():
    # the rounded rule equals the k minimising the unbiased estimator's variance at the uniform
    # distribution, P (1 - P) / (p - q)^2 with P = q + (p - q) / K, on every grid of the benchmark
    for K in (10, 20, 100, 1000):
        for eps in (0.5, 1.0, 2.0, 5.0):
            v = []
            for k in range(1, K):
                e = np.exp(eps)
                p = k * e / (k * e + K - k)
                q = ((k - 1) * k * e + (K - k) * k) / ((K - 1) * (k * e + K - k))
                P = q + (p - q) / K
                v.append(P * (1 - P) / (p - q) ** 2)
            assert ss_subset_size(K, eps) == int(np.argmin(v)) + 1, (K, eps)


def _exact_loglik(S, theta, eps):
    return np.log1p(np.expm1(eps) * (S @ theta)).sum()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_mle_em(protocol):
    rng = np.random.default_rng(PROTOCOLS.index(protocol))
    K, eps, n = 8, 1.0, 3000
    theta = np.array([0.35, 0.25, 0.2, 0.1, 0.06, 0.04, 0.0, 0.0])
    x = rng.choice(K, size=n, p=theta)
    reports = privatize_peer(protocol, x, K, eps, rng)
    S = support_matrix(protocol, reports, K, eps)
    # the support matrix agrees with the support counts
    np.testing.assert_array_equal(S.sum(axis=0), support_counts(protocol, reports, K, eps))
    m = mle_em(S, eps)
    assert np.all(m >= 0) and m.sum() == pytest.approx(1.0, abs=1e-12)
    p, q = support_probabilities(protocol, K, eps)
    counts = support_counts(protocol, reports, K, eps)
    if protocol == "GRR":
        # one supported category per report: the exact likelihood is the count likelihood
        np.testing.assert_allclose(m, ibu(counts, p, q), rtol=0, atol=1e-10)
    # EM never decreases the likelihood from the uniform start, and the MLE's exact
    # likelihood is at least that of the other estimates
    for other in (np.full(K, 1 / K), ibu(counts, p, q), norm_sub(unbiased_estimate(counts, n, p, q))):
        assert _exact_loglik(S, m, eps) >= _exact_loglik(S, other, eps) - 1e-6
    # a fixed point of the EM map
    c = np.expm1(eps)
    w = 1 / (1 + c * (S @ m))
    np.testing.assert_allclose(m * (w.sum() + c * (S.T @ w)) / n, m, rtol=0, atol=1e-10)


@pytest.mark.slow
def test_peer_estimates_with_mle():
    rng = np.random.default_rng(0)
    x = rng.choice(10, size=1000, p=THETA)
    est, _ = peer_estimates(x, 10, 1.0, np.random.default_rng(1), estimators=ALL_PEER_ESTIMATORS)
    assert set(est) == set(ALL_PEERS)
    base, _ = peer_estimates(x, 10, 1.0, np.random.default_rng(1))
    assert all(np.array_equal(est[k], base[k]) for k in PEERS)  # adding MLE changes no other peer


@pytest.mark.parametrize(("protocol", "K", "epsilon"), [("GRR", 5, 0.5), ("SS", 5, 0.5), ("SS", 6, 1.0)])
def test_transition_matrix_is_the_clients_law(protocol, K, epsilon):
    from math import comb
    from itertools import combinations

    from sklearn_bayes.experiments._ldp_peers import transition_matrix

    P = transition_matrix(protocol, K, epsilon)
    k = 1 if protocol == "GRR" else ss_subset_size(K, epsilon)
    assert P.shape == (K, comb(K, k)) and (protocol == "GRR" or k > 1)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-14)
    # exactly epsilon-LDP: every column's largest / smallest entry is e^eps
    np.testing.assert_allclose(P.max(axis=0) / P.min(axis=0), np.exp(epsilon), rtol=1e-14)
    # the client's frequencies of each report for x = 1: within 4.5 binomial SEs of the matrix's row
    n = 60_000
    reports = privatize_peer(protocol, np.ones(n, dtype=int), K, epsilon, np.random.default_rng(7))
    index = {Y: j for j, Y in enumerate(combinations(range(K), k))}
    rows = np.sort(np.asarray(reports).reshape(n, -1), axis=1)
    freq = np.bincount([index[tuple(r)] for r in rows], minlength=P.shape[1]) / n
    assert np.all(np.abs(freq - P[1]) <= 4.5 * np.sqrt(P[1] * (1 - P[1]) / n))


def test_reports_are_shared_only_between_equal_transition_matrices(monkeypatch):
    from sklearn_bayes.experiments import _ldp_peers
    from sklearn_bayes.experiments._ldp_peers import same_mechanism, share_reports

    y = privatize_peer("GRR", np.arange(10) % 4, 10, 5.0, np.random.default_rng(0))
    assert ss_subset_size(10, 5.0) == 1 and same_mechanism("GRR", "SS", 10, 5.0)
    assert np.array_equal(share_reports("GRR", "SS", y, 10, 5.0), y[:, None])
    assert np.array_equal(share_reports("SS", "GRR", y[:, None], 10, 5.0), y)
    # SS(3) at eps = 1: other report space; OUE / OLH: not set-of-one-category mechanisms
    for source, target, eps in (("GRR", "SS", 1.0), ("GRR", "OUE", 5.0), ("OLH", "GRR", 5.0)):
        assert not same_mechanism(source, target, 10, eps)
        with pytest.raises(ValueError, match="transition matrices differ"):
            share_reports(source, target, y, 10, eps)
    # same report-space size, different law: SS(K - 1) at K = 4 has 4 reports, as GRR has
    monkeypatch.setattr(_ldp_peers, "ss_subset_size", lambda K, eps: K - 1)
    assert not same_mechanism("GRR", "SS", 4, 5.0)
    with pytest.raises(ValueError, match="transition matrices differ"):
        share_reports("GRR", "SS", y % 4, 4, 5.0)


@pytest.mark.parametrize("epsilon", [5.0, 1.0])
def test_peer_estimates_share_reports_where_the_mechanisms_coincide(epsilon):
    x = np.random.default_rng(0).choice(10, size=3000, p=THETA)
    plain, _, r0 = peer_estimates(x, 10, epsilon, np.random.default_rng(1), return_reports=True)
    shared, _, r1 = peer_estimates(x, 10, epsilon, np.random.default_rng(1), share=True, return_reports=True)
    for p in ("GRR", "OUE", "OLH"):  # their noise does not change
        assert all(np.array_equal(a, b) for a, b in zip(np.atleast_1d(r0[p]), np.atleast_1d(r1[p])))
        assert all(np.array_equal(plain[f"{p}+{e}"], shared[f"{p}+{e}"]) for e in PEER_ESTIMATORS)
    if epsilon == 5.0:  # SS(1) = GRR: SS decodes GRR's reports (its own were another stream)
        assert np.array_equal(r1["SS"], r1["GRR"][:, None]) and not np.array_equal(r0["SS"], r0["GRR"][:, None])
        for e in PEER_ESTIMATORS:
            np.testing.assert_allclose(shared[f"SS+{e}"], shared[f"GRR+{e}"], rtol=1e-9, atol=1e-12)
    else:  # SS(3) is not GRR: nothing is shared
        assert np.array_equal(r0["SS"], r1["SS"])
