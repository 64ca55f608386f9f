"""The stacked decoder (issue 28, round 15; ``decoder='eb-stack'``, ``'auto'`` where it used ``'eb'``): the convex
combination of the empirical-Bayes means, the smoother-prior means, norm-sub and clipped MI whose weights minimise a
squared risk cross-fitted over folds of users (``privacy._ldp._stacking``)."""

import itertools
import warnings

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp._empirical_bayes import _grid, dirichlet_marginal_weights, eb_estimate
from sklearn_bayes.privacy._ldp._posterior import RHO_GRID
from sklearn_bayes.privacy._ldp._stacking import (
    STACK_CANDIDATES,
    STACK_FOLDS,
    STACK_Z,
    candidates,
    fold_support_counts,
    simplex_least_squares,
    stacked_estimate,
    user_folds,
)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning")


def _fitted(theta, n, eps, seed, **params):
    x = np.random.default_rng([seed, 1]).choice(theta.size, size=n, p=theta)
    est = AdaptiveLDPFrequencyEstimator(n_categories=theta.size, epsilon=eps, random_state=seed, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(x.reshape(-1, 1))


def _peaks(K):
    k = np.arange(K)
    t = np.exp(-0.5 * ((k - 0.25 * K) / (0.05 * K)) ** 2) + np.exp(-0.5 * ((k - 0.75 * K) / (0.05 * K)) ** 2)
    return t / t.sum()


@pytest.mark.parametrize("seed", range(4))
def test_auto_from_64_categories_is_the_stack_on_the_simplex(seed):
    """'auto' at K >= 64 returns the stack: nonnegative, sums to 1 to rounding, equal to the reported convex weights
    of the four candidates fitted on all users; the weights are on the simplex."""
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.full(80, 0.3)) if seed % 2 else _peaks(100)
    est = _fitted(theta, 20_000, [0.5, 1.0, 2.0, 6.0][seed], seed)
    th, conv = est.theta_, est.convergence_
    assert conv["method"] == "eb-stack" and conv["stack_folds"] == STACK_FOLDS
    assert np.all(th >= 0) and abs(th.sum() - 1) <= 1e-12
    a = np.array([conv["stack_weights"][k] for k in STACK_CANDIDATES])
    assert np.all(a >= 0) and abs(a.sum() - 1) <= 1e-12
    c, n, p, q = est._support_counts()
    u0 = _grid(np.zeros(0), n, p, q)
    cand, info = candidates(c, n, p, q, u0, dirichlet_marginal_weights(u0, c.size, RHO_GRID), RHO_GRID, True)
    assert np.allclose(th, a @ cand, rtol=0, atol=1e-12)
    # every candidate is on the simplex; 'eb' is the previous default's estimate bit for bit
    assert np.all(cand >= 0) and np.allclose(cand.sum(axis=1), 1, atol=1e-12)
    assert np.array_equal(cand[0], eb_estimate(c, n, p, q)[0])
    assert info["rho"] == conv["rho"] and conv["tilt_converged"]
    # the guard: the stack only when its cross-fitted gain over the baseline alone exceeds STACK_Z standard errors;
    # the baseline is 'eb', or (round P1, near the identity channel) 'dir' where its cross-fitted risk is lower
    assert conv["stack_used"] == (conv["stack_gain"] > STACK_Z * conv["stack_se"])
    assert conv["stack_baseline"] in ("eb", "dir")
    if not conv["stack_used"] and conv["stack_baseline"] == "eb":
        assert np.array_equal(th, cand[0] / cand[0].sum())


def test_the_previous_default_stays_reachable_and_is_unchanged():
    """decoder='eb' after the fit is the round-14 estimate on the same responses (no refit); 'eb-stack' and 'auto'
    agree; switching back and forth leaves the estimates as they were."""
    est = _fitted(_peaks(100), 20_000, 1.0, 7)
    auto = est.theta_
    est.set_params(decoder="eb")
    assert est.convergence_["method"] == "eb"
    c, n, p, q = est._support_counts()
    assert np.array_equal(est.theta_, eb_estimate(c, n, p, q)[0])
    est.set_params(decoder="eb-stack")
    assert np.array_equal(est.theta_, auto)
    est.set_params(decoder="auto")
    assert np.array_equal(est.theta_, auto)


def test_deterministic_given_random_state_and_on_pickle():
    """The same random_state gives the same folds and estimate; a pickled estimator reads the same theta_."""
    import pickle

    theta = np.random.default_rng(3).dirichlet(np.full(70, 0.2))
    a, b = _fitted(theta, 10_000, 2.0, 11), _fitted(theta, 10_000, 2.0, 11)
    assert np.array_equal(a.theta_, b.theta_) and a.convergence_["stack_weights"] == b.convergence_["stack_weights"]
    assert np.array_equal(pickle.loads(pickle.dumps(a)).theta_, a.theta_)


def test_folds_depend_on_n_and_the_generator_only():
    """The folds are a permutation of the users modulo the folds: balanced (sizes differ by at most 1), the same for
    the same generator state whatever the responses, different for another state."""
    f1 = user_folds(1003, 5, np.random.default_rng(4))
    f2 = user_folds(1003, 5, np.random.default_rng(4))
    assert np.array_equal(f1, f2)
    sizes = np.bincount(f1, minlength=5)
    assert sizes.sum() == 1003 and sizes.max() - sizes.min() <= 1
    assert not np.array_equal(f1, user_folds(1003, 5, np.random.default_rng(5)))
    # inside the decoder: two estimators with different responses and the same read generator draw the same folds
    theta = np.full(64, 1 / 64)
    e1, e2 = _fitted(theta, 3000, 1.0, 21), _fitted(theta, 3000, 1.0, 22)
    got = []
    for est in (e1, e2):
        store = est._chain.store
        assert not np.array_equal(est._support_counts()[0], (e2 if est is e1 else e1)._support_counts()[0])
        got.append(user_folds(store.n, STACK_FOLDS, np.random.default_rng([0, 0])))
    assert np.array_equal(*got)


def test_fold_counts_are_the_users_support_counts():
    """The folds' support counts equal a direct sum over every user's unpacked set, and add up to the full counts."""
    est = _fitted(np.random.default_rng(6).dirichlet(np.ones(70)), 4000, 1.0, 6)
    store = est._chain.store
    sids, masks = store.sids[: store.n], store.masks[: store.n_sids]
    fold = user_folds(store.n, 3, np.random.default_rng(0))
    got = fold_support_counts(sids, masks, 70, fold, 3)
    bits = np.unpackbits(masks[sids], axis=1, count=70).astype(float)
    for k in range(3):
        assert np.array_equal(got[k], bits[fold == k].sum(axis=0))
    assert np.array_equal(got.sum(axis=0), est._support_counts()[0])


def _brute_simplex(A, b, step=0.02):
    J, m = b.size, int(round(1 / step))
    best = np.inf
    for comb in itertools.product(range(m + 1), repeat=J - 1):
        if sum(comb) <= m:
            a = np.r_[comb, m - sum(comb)] / m
            best = min(best, a @ A @ a - 2 * b @ a)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_simplex_least_squares_meets_the_kkt_conditions(seed):
    """The weights are on the simplex and satisfy the KKT conditions of the convex programme: the gradient
    ``2 (A a - b)`` takes one value on the support and no smaller one off it; no point of a fine grid does better."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(4, 30))
    X[3] = X[2] + (1e-9 if seed == 5 else 0.0) * X[1]  # two (nearly) equal candidates: a singular system
    t = rng.normal(size=30)
    A, b = X @ X.T, X @ t
    a = simplex_least_squares(A, b)
    assert np.all(a >= 0) and abs(a.sum() - 1) <= 1e-12
    g = 2 * (A @ a - b)
    on = a > 1e-12
    scale = np.abs(A).max()
    assert np.ptp(g[on]) <= 1e-8 * scale and np.all(g[~on] >= g[on].min() - 1e-8 * scale)
    value = a @ A @ a - 2 * b @ a
    assert value <= _brute_simplex(A, b) + 1e-9 * scale


def test_cross_fitted_risk_difference_is_unbiased_for_fixed_candidates():
    """The principle behind the weights: for vectors fixed in advance, the cross-fitted risk difference over user
    folds, ``sum_k (||g1 - t_k||^2 - ||g2 - t_k||^2) / F``, is unbiased for ``||g1 - theta||^2 - ||g2 - theta||^2``
    (``t_k`` is fold k's unbiased estimate).  300 fits of 2000 users, K = 64, eps = 1; within 4 Monte Carlo SE."""
    K = 64
    theta = np.random.default_rng(0).dirichlet(np.full(K, 0.5))
    g1, g2 = np.full(K, 1 / K), 0.5 * theta + 0.5 / K
    truth = np.sum((g1 - theta) ** 2) - np.sum((g2 - theta) ** 2)
    est_diffs = []
    for rep in range(300):
        est = _fitted(theta, 2000, 1.0, 1000 + rep)
        _, n, p, q = est._support_counts()
        store = est._chain.store
        fold = user_folds(n, STACK_FOLDS, np.random.default_rng(rep))
        cf = fold_support_counts(store.sids[:n], store.masks[: store.n_sids], K, fold, STACK_FOLDS)
        nf = np.bincount(fold, minlength=STACK_FOLDS)
        t = (cf / nf[:, None] - q) / (p - q)
        est_diffs.append(np.mean(np.sum((g1 - t) ** 2, axis=1) - np.sum((g2 - t) ** 2, axis=1)))
    d = np.asarray(est_diffs)
    assert abs(d.mean() - truth) <= 4 * d.std(ddof=1) / np.sqrt(d.size)


def _refused_decoders_leave_the_fit(est, bad, good, decoder):
    """A misspelt decoder (``bad``) is refused naming decoder at the next read of ``theta_`` and, set back to ``good``,
    the fit reads as before; ``decoder`` with RRRR is refused at fit (shared by the tests of every stacked decoder)."""
    est.set_params(decoder=good)
    before = est.theta_
    est.set_params(decoder=bad)
    with pytest.raises(ValueError, match="decoder"):
        est.theta_
    est.set_params(decoder=good)
    assert np.array_equal(est.theta_, before)
    with pytest.raises(ValueError, match="decoder"):
        AdaptiveLDPFrequencyEstimator(n_categories=5, mechanism="rrrr", decoder=decoder).fit([[0], [1]])


def test_bad_input_and_rrrr():
    """An unknown decoder or 'eb-stack' with RRRR is refused naming decoder; the refused read leaves the fit as it
    was; stacked_estimate refuses zero users naming n."""
    _refused_decoders_leave_the_fit(_fitted(_peaks(64), 3000, 1.0, 2), "eb-stacked", "auto", "eb-stack")
    with pytest.raises(ValueError, match="n >= 1"):
        stacked_estimate(np.zeros(4), 0, 0.5, 0.1, np.zeros(0, int), np.zeros((0, 1), np.uint8),
                         np.random.default_rng(0), RHO_GRID)


def test_one_response_falls_back_to_eb():
    """With one user no fold can hold users out: the weights are all on 'eb' and theta_ is its estimate."""
    est = _fitted(np.full(64, 1 / 64), 1, 1.0, 0)
    c, n, p, q = est._support_counts()
    assert est.convergence_["stack_weights"]["eb"] == 1.0
    assert np.allclose(est.theta_, eb_estimate(c, n, p, q)[0], rtol=0, atol=1e-15)


# ---------------------------------------------------------------------------------------------------------------
# Round 16 (H28V): the stack's cost cut without changing its output.  Every shortcut is checked against the round-15
# computation, bit for bit (array_equal), not to a tolerance.

def _fold_counts_round15(sids, masks, K, fold, folds):
    """Round 15's fold counts: np.add.at over the distinct (fold, row) pairs."""
    rows = int(masks.shape[0])
    keys, cnt = np.unique(np.asarray(fold, dtype=np.int64) * rows + np.asarray(sids, dtype=np.int64),
                          return_counts=True)
    out = np.zeros((folds, K))
    bits = np.unpackbits(masks[keys % rows], axis=1, count=K).astype(float)
    np.add.at(out, keys // rows, cnt[:, None] * bits)
    return out


@pytest.mark.parametrize("K, eps, n, folds", [(40, 4.0, 3000, 5), (70, 1.0, 4000, 5), (64, 1.0, 7, 5)])
def test_fold_counts_are_round_15s_bit_for_bit(K, eps, n, folds):
    """The bincount-times-rows fold counts equal round 15's np.add.at sums exactly: GRR (few rows, many users each),
    SS with distinct rows, and 7 users in 5 folds (rows no user of a fold sent)."""
    est = _fitted(np.random.default_rng(K).dirichlet(np.ones(K)), n, eps, K)
    store = est._chain.store
    sids, masks = store.sids[: store.n], store.masks[: store.n_sids]
    fold = user_folds(store.n, folds, np.random.default_rng(1))
    got = fold_support_counts(sids, masks, K, fold, folds)
    assert np.array_equal(got, _fold_counts_round15(sids, masks, K, fold, folds))
    assert np.array_equal(got.sum(axis=0), est._support_counts()[0])


def test_beta_cdf_table_reuse_is_bit_for_bit():
    """dirichlet_marginal_weights reusing another grid's CDF table gives the same weights as computing them afresh,
    and its table holds the union of both grids' midpoints (betainc ran only at the new ones)."""
    c = np.array([120.0, 3.0, 40.0, 0.0, 800.0, 77.0] * 8)
    n, p, q, K = 5000, 0.6, 0.2, 48
    u_data = _grid((c / n - q) / (p - q), n, p, q)
    u0 = _grid(np.zeros(0), n, p, q)
    w_data, table = dirichlet_marginal_weights(u_data, K, RHO_GRID, return_table=True)
    assert np.array_equal(w_data, dirichlet_marginal_weights(u_data, K, RHO_GRID))
    w0, table2 = dirichlet_marginal_weights(u0, K, RHO_GRID, known=table, return_table=True)
    assert np.array_equal(w0, dirichlet_marginal_weights(u0, K, RHO_GRID))
    mids = lambda u: np.r_[0.0, 0.5 * (u[1:] + u[:-1]), 1.0]  # noqa: E731
    assert np.array_equal(table2[0], np.union1d(mids(u_data), mids(u0)))
    assert table2[0].size < table[0].size + mids(u0).size  # most midpoints shared: not all re-evaluated


def test_tilt_with_a_precomputed_log_likelihood_is_bit_for_bit():
    from sklearn_bayes.privacy._ldp._empirical_bayes import _likelihood, npmle_weights, tilted_means

    c = np.random.default_rng(2).binomial(4000, np.random.default_rng(3).uniform(0.2, 0.3, 90)).astype(float)
    u = _grid((c / 4000 - 0.2) / 0.4, 4000, 0.6, 0.2)
    L = _likelihood(c, 4000, 0.6, 0.2, u)
    w = npmle_weights(L)[0]
    with np.errstate(divide="ignore"):
        logL = np.log(L)
    a, b = tilted_means(L, w, u), tilted_means(L, w, u, logL=logL)
    assert np.array_equal(a[0], b[0]) and a[1:] == b[1:]


def _stack_round15(est, rng):
    """Round 15's stacked_estimate at the decoder's inputs: every candidate on all users formed, theta from
    ``weights @ full`` (e_1 when the guard refused); the weights and the guard from round 16's function (the same
    code as round 15's), which this checks by the full-candidate formula."""
    c, n, p, q = est._support_counts()
    store = est._chain.store
    theta, info = stacked_estimate(c, n, p, q, store.sids[:n], store.masks[: store.n_sids], rng, RHO_GRID)
    u0 = _grid(np.zeros(0), n, p, q)
    full, finfo = candidates(c, n, p, q, u0, dirichlet_marginal_weights(u0, c.size, RHO_GRID), RHO_GRID, True)
    a = np.array([info["stack_weights"][k] for k in STACK_CANDIDATES])
    ref = np.maximum(a @ full, 0.0)
    return theta, info, ref / ref.sum(), finfo


def test_the_stack_is_round_15s_bit_for_bit_used_or_not():
    """theta from the lazily formed candidates equals round 15's ``max(a @ full, 0) / sum`` exactly, whether the
    guard kept the stack (all candidates formed) or not ('eb''s row alone); the dict's EM keys are the full call's.
    Among these fits the guard both keeps and refuses the stack, so both branches are checked."""
    used = []
    for seed, (theta, eps) in enumerate([(_peaks(100), 0.5), (np.random.default_rng(5).dirichlet(np.full(80, 0.3)), 8.0),
                                         (np.random.default_rng(6).dirichlet(np.full(80, 20.0)), 6.0),
                                         (np.random.default_rng(7).dirichlet(np.full(100, 0.1)), 8.0)]):
        for rep in range(3):
            est = _fitted(theta, 20_000, eps, 100 * seed + rep)
            th, info, ref, finfo = _stack_round15(est, np.random.default_rng(rep))
            assert np.array_equal(th, ref)
            assert all(info[k] == finfo[k] for k in finfo)
            used.append(info["stack_used"])
    assert any(used) and not all(used)


def test_auto_between_32_and_63_categories_reuses_the_cv_table_bit_for_bit():
    """'auto' at 32-63 categories routed to the stack passes the cross-validated gain's Beta CDF table to it; theta_
    and the stack's diagnostics equal those of 'eb-stack' by name (no cv gain, no table) on a twin fit (the same
    responses and read generator)."""
    theta = np.random.default_rng(0).dirichlet(np.full(50, 50.0))  # near-uniform: the NPMLE G wins the cv gain
    est, twin = _fitted(theta, 20_000, 4.0, 3), _fitted(theta, 20_000, 4.0, 3).set_params(decoder="eb-stack")
    conv, conv2 = est.convergence_, twin.convergence_
    assert conv["method"] == "eb-stack" and conv["cv_gain"] >= 3.0 and "cv_gain" not in conv2
    assert est._chain.store.cached("auto_cv_gain", None)[1].size > 0  # the table was kept with the gain
    assert np.array_equal(est.theta_, twin.theta_)
    assert {k: v for k, v in conv.items() if k != "cv_gain"} == conv2
