"""Round G3: the stacked decoder's cheaper numerics (issue 28 goal 3 at high eps).

Each new kernel is checked against the one it replaces (the same numbers up to rounding, tolerances from the size of
a few ulps of the sums involved), and the module switches restore round 18b's output exactly.
"""

import warnings

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp import _empirical_bayes as E
from sklearn_bayes.privacy._ldp import _stacking as S
from sklearn_bayes.privacy._ldp._mechanisms import ss_support_probabilities
from sklearn_bayes.privacy._ldp._posterior import RHO_GRID


def _counts(K, eps, n, shape, seed):
    rng = np.random.default_rng(seed)
    theta = {"dir1": lambda: rng.dirichlet(np.ones(K)), "dir01": lambda: rng.dirichlet(np.full(K, 0.1)),
             "zipf": lambda: (lambda t: rng.permutation(t / t.sum()))(1.0 / np.arange(1, K + 1) ** 1.2),
             "flat": lambda: rng.dirichlet(np.full(K, 50.0))}[shape]()
    k = 1 if eps >= 4 else max(1, int(round(K / (np.exp(eps) + 1))))
    p, q = ss_support_probabilities(K, float(eps), k)
    c = rng.binomial(n, q + (p - q) * theta).astype(float)
    return c, n, p, q


CELLS = [(K, eps, n, shape, seed) for seed, (K, eps, n, shape) in enumerate(
    [(64, 8, 1000, "dir1"), (64, 8, 5000, "dir01"), (200, 8, 2000, "zipf"), (200, 4, 5000, "dir1"),
     (100, 2, 20000, "flat"), (300, 1, 50000, "dir01"), (64, 0.5, 100000, "zipf"), (1000, 8, 1000, "dir1")])]


def _fit(K, eps, n, a, seed, random_state):
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.full(K, a))
    x = rng.choice(K, size=n, p=theta)
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=np.random.default_rng(random_state))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(x.reshape(-1, 1))
        return est.theta_.copy(), dict(est.convergence_)


#: ``theta_`` of the test below as round 18b's code gave it on the machine the suite was written on (its SHA-256 was
#: 37d004ec...).  Another machine's BLAS and SIMD round the EM's sums differently: under numpy's baseline SIMD and
#: OpenBLAS's Sandybridge kernels the same 536 iterations give ``theta_`` within 1.4e-17 (a few ulps of 0.048).
ROUND_18B_THETA = np.array([0.026450161795573843, 0.04360382675226081, 0.030260514779820467, 0.008342536144201869, 0.01977785023639779, 0.014060618803828976, 0.02073063606085762, 0.002651531803436938, 0.0010439574688513543, 0.002651531803436938, 0.03788665273690519, 0.02454337034830432, 0.031212925499464316, 0.006437361455833469, 0.01691911240509268, 0.002651531803436938, 0.01977785023639779, 0.004534898116881685, 0.029308207889575184, 0.04836854240298041, 0.006437361455833469, 0.004534898116881685, 0.018825024712365662, 0.014060618803828976, 0.007389642122795638, 0.026450161795573843, 0.002651531803436938, 0.009295807272558786, 0.007389642122795638, 0.012155230238034269, 0.04169858643128813, 0.001769152429688758, 0.01120230185591432, 0.027403156882916512, 0.006437361455833469, 0.017872100354581404, 0.001769152429688758, 0.002651531803436938, 0.0035869621786502326, 0.025496855323171773, 0.031212925499464316, 0.01977785023639779, 0.01691911240509268, 0.01024913608316554, 0.002651531803436938, 0.012155230238034269, 0.027403156882916512, 0.02073063606085762, 0.04169858643128813, 0.012155230238034269, 0.0035869621786502326, 0.027403156882916512, 0.01024913608316554, 0.007389642122795638, 0.018825024712365662, 0.001769152429688758, 0.0035869621786502326, 0.008342536144201869, 0.03216560147382483, 0.001769152429688758, 0.01120230185591432, 0.001769152429688758, 0.017872100354581404, 0.018825024712365662])

#: the bound below: a few thousand ulps of the largest entry, as for the fast numerics' reordered sums (the EM's
#: discrete decisions -- iterations, atoms, rho, the guard -- are compared exactly)
SAME_ARITHMETIC_ORDER = 1e-12


def test_switches_restore_round_18b_output_exactly(monkeypatch):
    """With ``STACK_FAST_NUMERICS = False`` (and both EM tolerances ``NPMLE_TOL``, the defaults) the default's estimate
    is round 18b's: the same EM iterations, atoms, rho and guard decision as recorded with the code before round G3,
    and ``theta_`` equal to the recorded one up to the rounding of another machine's sums (bit for bit on the
    recording machine).  Round P1: with the guard's baseline ``'eb'`` too."""
    monkeypatch.setattr(S, "STACK_BASELINE", "eb")
    monkeypatch.setattr(S, "STACK_NPMLE_TOL", E.NPMLE_TOL)
    monkeypatch.setattr(S, "STACK_FOLD_NPMLE_TOL", E.NPMLE_TOL)
    monkeypatch.setattr(S, "STACK_FAST_NUMERICS", False)
    theta, conv = _fit(64, 8.0, 1000, 1.0, [64, 80, 1000, 5], 1)
    assert np.abs(theta - ROUND_18B_THETA).max() <= SAME_ARITHMETIC_ORDER
    assert conv["n_iter"] == 536 and conv["n_atoms"] == 426 and conv["stack_used"]
    assert conv["stack_gain"] == pytest.approx(0.0015992209746639786, rel=1e-9)
    assert repr(conv["rho"]) == "1.1006941712522091"


@pytest.mark.parametrize("K,eps,n,a,seed", [(64, 8.0, 1000, 1.0, 3), (200, 8.0, 2000, 0.1, 4), (200, 4.0, 5000, 1.0, 5),
                                            (100, 1.0, 10000, 20.0, 6)])
def test_fast_numerics_are_the_old_numbers_up_to_rounding(monkeypatch, K, eps, n, a, seed):
    """The cheaper numerics (the default) change only the order of sums: the same ``rho``, EM iterations and guard
    decision, ``theta_`` within 1e-12 (a few thousand ulps of the largest entry; measured: at most 1.1e-14)."""
    monkeypatch.setattr(S, "STACK_FAST_NUMERICS", False)
    old, c_old = _fit(K, eps, n, a, seed, seed)
    monkeypatch.setattr(S, "STACK_FAST_NUMERICS", True)
    new, c_new = _fit(K, eps, n, a, seed, seed)
    assert np.abs(new - old).max() < 1e-12
    for key in ("rho", "n_iter", "n_atoms", "stack_used", "converged", "tilt_converged"):
        assert c_new[key] == c_old[key], key
    assert c_new["tilt"] == pytest.approx(c_old["tilt"], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("K,eps,n,shape,seed", CELLS)
def test_dirichlet_rows_are_the_table_and_find_its_argmax(K, eps, n, shape, seed):
    c, n, p, q = _counts(K, eps, n, shape, seed)
    u = E._grid(np.zeros(0), n, p, q)
    WB = E.dirichlet_marginal_weights(u, K, RHO_GRID)
    rows = S.DirichletRows(u, K, RHO_GRID)
    for i in (0, 17, 48, 96):
        assert np.array_equal(rows.row(i), WB[i])
    L = E._likelihood(c, n, p, q, u)
    with np.errstate(divide="ignore"):
        full = int(np.argmax(np.log(L @ WB.T).sum(axis=0)))
        assert rows.best(L) == full
        # later calls climb from the previous answer: the folds' counts (80 % of the users) find their own argmax
        rng = np.random.default_rng(seed)
        for _ in range(3):
            cm = rng.binomial(c.astype(int), 0.8).astype(float)
            Lm = E._likelihood(cm, int(0.8 * n), p, q, u)
            Lk, uk, keep = S._nonzero_columns(Lm, u)
            assert rows.best(Lk, keep) == int(np.argmax(np.log(Lm @ WB.T).sum(axis=0)))


def test_nonzero_columns_em_runs_the_same_iterations():
    """Dropping the atoms where every row's likelihood is exactly 0 (and starting from ``1 / n_atoms`` of the whole
    grid) gives the same EM: the same iteration count and the same weights on the kept atoms up to rounding."""
    c, n, p, q = _counts(64, 8, 5000, "dir1", 11)
    u = E._grid(np.zeros(0), n, p, q)
    L = E._likelihood(c, n, p, q, u)
    Lk, uk, keep = S._nonzero_columns(L, u)
    assert keep is not None and keep.sum() < keep.size  # at eps = 8 most of the grid is beyond every category
    w, it, ok = E.npmle_weights(L, tol=1e-4)
    wk, itk, okk = E.npmle_weights(Lk, tol=1e-4, n_atoms=u.size)
    assert it == itk and ok == okk
    assert np.allclose(wk, w[keep], rtol=1e-10, atol=1e-300)
    assert np.all(w[~keep] == 0.0)


@pytest.mark.parametrize("K,eps,n,shape,seed", CELLS)
def test_linear_tilt_matches_log_space_tilt(K, eps, n, shape, seed):
    c, n, p, q = _counts(K, eps, n, shape, seed)
    u = E._grid((c / n - q) / (p - q), n, p, q)
    L = E._likelihood(c, n, p, q, u)
    w = E.npmle_weights(L, tol=1e-2)[0]
    for prior in (w, 0.5 * w + 0.5 / w.size):
        m0, lam0, ok0 = E.tilted_means(L, prior, u)
        m1, lam1, ok1 = E.tilted_means(L, prior, u, linear=True)
        assert ok0 == ok1
        assert np.abs(m1 - m0).max() < 1e-12
        assert lam1 == pytest.approx(lam0, rel=1e-8, abs=1e-10)


def test_linear_tilt_falls_back_where_a_row_has_no_mass():
    """A row whose likelihood sits where the prior has (almost) no weight has a tilted mass below the floor; the
    log-space moments are used for it, so its mean is still the posterior mean (not NaN)."""
    u = np.linspace(0.0, 1.0, 101)
    L = np.exp(-0.5 * ((u[None, :] - np.array([[0.1], [0.2], [0.95]])) / 0.01) ** 2)
    w = np.where(u < 0.5, 1.0, 1e-290)
    w /= w.sum()
    U3 = np.column_stack([np.ones(u.size), u, u * u])
    with np.errstate(divide="ignore"):
        logP = np.log(L) + np.log(w)[None, :]
    m_lin, v_lin = E._tilted_linear(L, np.log(w), u, U3, 0.0, lambda: logP)
    m_log, v_log = E._tilted(logP.copy(), u, 0.0)
    assert np.all(np.isfinite(m_lin))
    assert np.abs(m_lin - m_log).max() < 1e-12 and np.abs(v_lin - v_log).max() < 1e-12


@pytest.mark.parametrize("seed", range(40))
def test_batched_simplex_least_squares_matches_the_loop(monkeypatch, seed):
    rng = np.random.default_rng(seed)
    J = 5
    F = rng.standard_normal((J, 30))
    if seed % 4 == 0:
        F[3] = F[4]  # two identical candidates (norm-sub and clip where nothing is clipped): singular systems
    if seed % 4 == 1:
        F[1] = F[0] + 1e-9 * rng.standard_normal(30)  # nearly identical
    t = rng.standard_normal(30) + (F[int(seed) % J] if seed % 2 else 0.0)
    A, b = F @ F.T, F @ t
    fast = S._simplex_least_squares_batched(A, b)
    monkeypatch.setattr(S, "STACK_FAST_NUMERICS", False)
    slow = S.simplex_least_squares(A, b)

    def value(a):
        return a @ A @ a - 2.0 * b @ a

    assert fast.min() >= 0.0 and fast.sum() == pytest.approx(1.0, abs=1e-12)
    # the same minimum of the objective (up to rounding relative to its scale); the same weights where unique
    scale = max(1.0, abs(value(slow)), np.abs(A).max())
    assert value(fast) <= value(slow) + 1e-9 * scale
    if seed % 4 not in (0, 1):
        assert np.abs(fast - slow).max() < 1e-8


@pytest.mark.parametrize("K,eps,n,shape,seed", CELLS[:4])
def test_loose_em_stops_by_its_rule(K, eps, n, shape, seed):
    """The option's looser EM (``STACK_FOLD_NPMLE_TOL = 1e-2``) is the same iteration stopped earlier: the weights
    are the tight EM's iterate at that count, bit for bit, and its last step raised the log-likelihood by less than
    the tolerance."""
    c, n, p, q = _counts(K, eps, n, shape, seed)
    u = E._grid((c / n - q) / (p - q), n, p, q)
    L = E._likelihood(c, n, p, q, u)
    w, it, ok = E.npmle_weights(L, tol=1e-2)
    assert ok and 1 <= it < E.npmle_weights(L)[1]
    assert np.array_equal(w, E.npmle_weights(L, max_iter=it, tol=-np.inf)[0])
    if it > 1:
        before = E.npmle_weights(L, max_iter=it - 1, tol=-np.inf)[0]
        assert 0.0 <= np.log(L @ w).sum() - np.log(L @ before).sum() < 1e-2


@pytest.mark.parametrize("K,eps,n,shape,seed", CELLS)
def test_compiled_em_is_the_numpy_em_up_to_rounding(K, eps, n, shape, seed):
    """The compiled loop runs the same iterations (the same count here) and its weights agree to 1e-9 relative
    (rounding of another BLAS build compounded over hundreds of iterations; measured 5e-13)."""
    c, n, p, q = _counts(K, eps, n, shape, seed)
    u = E._grid((c / n - q) / (p - q), n, p, q)
    L, uk, keep = S._nonzero_columns(E._likelihood(c, n, p, q, u), u)
    w0, it0, ok0 = E.npmle_weights(L, n_atoms=u.size)
    w1, it1, ok1 = E.npmle_weights(L, n_atoms=u.size, compiled=True)
    assert (it1, ok1) == (it0, ok0)
    assert np.all(np.abs(w1 - w0) <= 1e-9 * np.maximum(w0, 1e-300) + 1e-300)


def test_compiled_em_log_likelihood_edge_values():
    """A row of zeros makes the log-likelihood -inf before and after every step (no NaN stop test): the EM runs
    to its cap, as numpy's loop does; wrong shapes are refused."""
    from sklearn_bayes._fast._ldp_em import npmle_em

    L = np.array([[1.0, 0.5, 0.0], [0.0, 0.0, 0.0]])
    w = np.full(3, 1 / 3)
    with np.errstate(divide="ignore", invalid="ignore"):
        w_np, it_np, ok_np = E.npmle_weights(L, max_iter=5)
        it, ok = npmle_em(L, w, 5, 1e-4)
    assert (it, ok) == (it_np, ok_np)
    with pytest.raises(ValueError, match="one weight per column"):
        npmle_em(L, np.ones(2), 5, 1e-4)


@pytest.mark.parametrize("need", [{"dir", "ns"}, {"smooth"}, {"eb", "mi"}, {"dir"}])
def test_candidates_need_gives_the_rows_it_names_exactly(need):
    """The rows the stack reads are the same numbers with or without ``need`` (``'dir'`` without the NPMLE: its prior
    ``0 w + B`` is ``B``); the others are zeros."""
    c, n, p, q = _counts(64, 8, 5000, "dir1", 21)
    u = E._grid(np.zeros(0), n, p, q)
    all_rows, info = S.candidates(c, n, p, q, u, S.DirichletRows(u, 64, RHO_GRID), RHO_GRID)
    some, _ = S.candidates(c, n, p, q, u, S.DirichletRows(u, 64, RHO_GRID), RHO_GRID, need=need)
    for j, name in enumerate(S.STACK_CANDIDATES):
        if name in need:
            assert np.array_equal(some[j], all_rows[j]), name
        elif name in ("eb", "smooth", "dir"):
            assert np.all(some[j] == 0.0), name


def test_fold_tolerance_moves_only_the_weights(monkeypatch):
    """The option ``STACK_FOLD_NPMLE_TOL = 1e-2`` loosens only the folds' EMs: the ``'eb'`` row behind ``theta_`` (its
    EM's iterations) is the default's, and where the guard refuses the stack in both (these fits), ``theta_`` is the
    same array."""
    old, c_old = _fit(1000, 4.0, 1000, 1.0, 1, 1)
    monkeypatch.setattr(S, "STACK_FOLD_NPMLE_TOL", 1e-2)
    new, c_new = _fit(1000, 4.0, 1000, 1.0, 1, 1)
    assert c_old["n_iter"] == c_new["n_iter"] > 100
    assert not c_old["stack_used"] and not c_new["stack_used"]
    assert np.array_equal(old, new)


@pytest.mark.parametrize("K,eps,n,shape,seed", CELLS)
def test_eb_decoder_fast_numerics_are_the_old_numbers_up_to_rounding(K, eps, n, shape, seed):
    """decoder='eb' (``eb_estimate``) with and without round G3's numerics: the same EM iterations and atoms, the
    estimate within 1e-12; and the stack's ``'eb'`` row is ``eb_estimate``'s with the same switch, bit for bit."""
    c, n, p, q = _counts(K, eps, n, shape, seed)
    old, i_old = E.eb_estimate(c, n, p, q, fast=False)
    new, i_new = E.eb_estimate(c, n, p, q, fast=True)
    assert (i_new["n_iter"], i_new["n_atoms"], i_new["converged"]) == (i_old["n_iter"], i_old["n_atoms"],
                                                                         i_old["converged"])
    assert np.abs(new - old).max() < 1e-12
    u0 = E._grid(np.zeros(0), n, p, q)
    row, _ = S.candidates(c, n, p, q, u0, S.DirichletRows(u0, K, RHO_GRID), RHO_GRID, eb_on_own_grid=True,
                          only_eb=True)
    assert np.array_equal(row[0], new)


def test_rho_search_finds_the_global_peak_of_a_two_peaked_profile():
    """Round G3's first search (one climb, the folds from the previous answer) stopped on a local peak here: Zipf(0.8)
    at K = 500, eps = 2, n = 5000, whose thinned folds have a second peak of the profile 1.3 nats below the global one.
    The search climbs from every local maximum of the coarse profile and finds the table's argmax."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    import bench_adaptive_ldp as B

    K, eps, n = 500, 2.0, 5000
    rng = np.random.default_rng(37)
    th = B._zipf(K, 0.8, rng)
    k = max(1, int(round(K / (np.exp(eps) + 1))))
    p, q = ss_support_probabilities(K, eps, k)
    c = rng.binomial(n, q + (p - q) * th).astype(float)
    u = E._grid(np.zeros(0), n, p, q)
    WB = E.dirichlet_marginal_weights(u, K, RHO_GRID)
    rows = S.DirichletRows(u, K, RHO_GRID)
    peaks = 0
    with np.errstate(divide="ignore"):
        for f in range(4):
            cc = c if f == 0 else rng.binomial(c.astype(int), 0.8).astype(float)
            L = E._likelihood(cc, n if f == 0 else int(0.8 * n), p, q, u)
            prof = np.log(L @ WB.T).sum(axis=0)
            interior = (prof[1:-1] > prof[:-2]) & (prof[1:-1] > prof[2:])
            peaks = max(peaks, int(interior.sum()))
            Lk, uk, keep = E.nonzero_columns(L, u)
            assert rows.best(Lk, keep) == int(np.argmax(prof))
    assert peaks >= 2  # the case is the two-peaked one it is meant to be
