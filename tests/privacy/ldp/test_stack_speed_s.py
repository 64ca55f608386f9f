"""Round S (issue 28 goal 3): the empirical-Bayes decoders' likelihood rows, EMs, ``rho`` search and tilts once per
distinct support count (``_empirical_bayes.UNIQUE_ROWS``).  A row depends on the category's count only, so the EM on the
distinct rows weighted by their multiplicities runs the same iteration as the EM on all rows, with its sums in another
order; ``UNIQUE_ROWS = False`` restores round P1's code path."""

import warnings

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp import _empirical_bayes as E
from sklearn_bayes.privacy._ldp import _stacking as S
from sklearn_bayes.privacy._ldp._mechanisms import ss_support_probabilities
from sklearn_bayes.privacy._ldp._posterior import RHO_GRID

#: ``theta_`` of the fit in :func:`_fit_p1` as round P1's code gave it (commit 36fc157, recorded on the machine this
#: suite was written on): EM 595 iterations, 428 atoms, ``rho`` 0.9085..., the stack refused, the baseline ``'dir'``.
ROUND_P1_THETA = np.array([
    0.010184322356807649, 0.029476781935170213, 0.006322013138511253, 0.09891666708426156, 0.030440623462177817,
    0.044909109006709386, 0.013079091032652528, 0.0043899963610526975, 0.011149572541855661, 0.0043899963610526975,
    0.002466831405013917, 0.0043899963610526975, 0.012114472662795958, 0.015008031341079413, 0.019830894112093437,
    0.014043562497075989, 0.01886644171910568, 0.014043562497075989, 0.002466831405013917, 0.01790187763353531,
    0.006322013138511253, 0.01790187763353531, 0.009218765311341595, 0.0008718890310727788, 0.005356334489373392,
    0.01886644171910568, 0.008253075407866932, 0.0043899963610526975, 0.006322013138511253, 0.003423744169038267,
    0.0246543971209473, 0.010184322356807649, 0.01790187763353531, 0.01790187763353531, 0.0015719961902377203,
    0.012114472662795958, 0.003423744169038267, 0.020795299477986008, 0.042016652203943856, 0.005356334489373392,
    0.003423744169038267, 0.0043899963610526975, 0.03912367934132605, 0.02851287221655203, 0.010184322356807649,
    0.007287477959843853, 0.0008718890310727788, 0.025619414456355086, 0.008253075407866932, 0.015008031341079413,
    0.002466831405013917, 0.034298342556756706, 0.056483822665683386, 0.005356334489373392, 0.003423744169038267,
    0.005356334489373392, 0.006322013138511253, 0.020795299477986008, 0.06709199902341169, 0.002466831405013917,
    0.007287477959843853, 0.0043899963610526975, 0.029476781935170213, 0.0008718890310727788])
#: Another machine's BLAS and SIMD round the EM's sums differently (tests/privacy/ldp/test_stack_g3.py: 1.4e-17 under
#: numpy's baseline SIMD and Sandybridge kernels); the reordered sums of round S stay within a few thousand ulps of the
#: largest entry (measured: 3.3e-16 over 342 seeded fits).  The discrete decisions are compared exactly.
SAME_ESTIMATE = 1e-12
EPS = np.finfo(float).eps


def _fit_p1():
    rng = np.random.default_rng([64, 8, 1000, 28])
    theta = rng.dirichlet(np.ones(64))
    x = rng.choice(64, size=1000, p=theta)
    est = AdaptiveLDPFrequencyEstimator(n_categories=64, epsilon=8.0, random_state=np.random.default_rng(7))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(x.reshape(-1, 1))
        return est.theta_.copy(), dict(est.convergence_)


def _counts(K, eps, n, a, seed):
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.full(K, a))
    k = 1 if eps >= 4 else max(1, int(round(K / (np.exp(eps) + 1))))
    p, q = ss_support_probabilities(K, float(eps), k)
    return rng.binomial(n, q + (p - q) * theta).astype(float), n, p, q


GRID = [(64, 8.0, 1000, 1.0), (200, 8.0, 2000, 0.1), (1000, 8.0, 1000, 1.0), (200, 4.0, 5000, 1.0),
        (100, 2.0, 20000, 20.0), (1000, 6.0, 5000, 0.05), (64, 1.0, 50000, 1.0)]


@pytest.mark.parametrize("unique", [False, True])
def test_switch_restores_round_p1_and_the_default_is_its_estimate(monkeypatch, unique):
    """``UNIQUE_ROWS = False``: round P1's code path (its recorded ``theta_`` within another machine's rounding, the
    same EM iterations, atoms, ``rho``, guard and baseline).  The default: the same estimate up to rounding."""
    monkeypatch.setattr(E, "UNIQUE_ROWS", unique)
    theta, conv = _fit_p1()
    assert np.abs(theta - ROUND_P1_THETA).max() <= SAME_ESTIMATE
    assert conv["n_iter"] == 595 and conv["n_atoms"] == 428
    assert repr(conv["rho"]) == "0.9085175756516861"
    assert conv["stack_used"] is False and conv["stack_baseline"] == "dir"
    assert conv["stack_gain"] == pytest.approx(-0.000806017420151688, rel=1e-9)


def test_switch_off_is_the_old_path_bit_for_bit_in_one_process(monkeypatch):
    """In one process the switch's two settings differ only through the sums' order; off, twice, bit for bit."""
    monkeypatch.setattr(E, "UNIQUE_ROWS", False)
    a, ca = _fit_p1()
    b, cb = _fit_p1()
    assert np.array_equal(a, b) and ca == cb
    monkeypatch.setattr(E, "UNIQUE_ROWS", True)
    c, cc = _fit_p1()
    assert np.abs(c - a).max() <= SAME_ESTIMATE
    for key in ("n_iter", "n_atoms", "rho", "stack_used", "stack_baseline", "converged", "tilt_converged"):
        assert cc[key] == ca[key], key


def test_count_rows():
    c = np.array([3.0, 0.0, 3.0, 7.0, 0.0, 3.0])
    values, inverse, mult = E.count_rows(c)
    assert values.tolist() == [0.0, 3.0, 7.0] and mult.tolist() == [2.0, 3.0, 1.0]
    assert np.array_equal(values[inverse], c) and mult.dtype == float and mult.sum() == c.size
    values, inverse, mult = E.count_rows(np.array([5.0]))  # K = 1
    assert values.tolist() == [5.0] and inverse.tolist() == [0] and mult.tolist() == [1.0]


def _em_tolerance(n_iter, K, G, w):
    """Each iteration's sums over ``K`` rows and ``G`` atoms carry a relative rounding of at most ``(K + G) eps``; added
    over the iterations without amplification (the EM map is smooth and, near its fixed point, non-expanding in the
    weights), the two orders' weights differ by at most ``n_iter (K + G) eps max(w)`` (measured: 1e-4 of it)."""
    return n_iter * (K + G) * EPS * max(w.max(), EPS)


@pytest.mark.parametrize("K,eps,n,a", GRID)
@pytest.mark.parametrize("compiled", [False, True])
def test_weighted_em_is_the_full_em(K, eps, n, a, compiled):
    """The EM on the distinct rows with multiplicities: the same iterations and stop as on every category's row, the
    weights within the rounding bound."""
    c, n, p, q = _counts(K, eps, n, a, K + int(eps))
    u = E._grid((c / n - q) / (p - q), n, p, q)
    L = E._likelihood(c, n, p, q, u)
    values, inverse, mult = E.count_rows(c)
    Lu = E._likelihood(values, n, p, q, u)
    assert np.array_equal(Lu[inverse], L)  # a row is a function of the count alone, bit for bit
    w, it, ok = E.npmle_weights(L, compiled=compiled)
    wu, itu, oku = E.npmle_weights(Lu, compiled=compiled, mult=mult)
    assert (itu, oku) == (it, ok)
    assert np.abs(wu - w).max() <= _em_tolerance(it, K, u.size, w)


@pytest.mark.parametrize("case", ["all-equal", "one-category", "all-distinct"])
@pytest.mark.parametrize("compiled", [False, True])
def test_duplicated_count_edges(case, compiled):
    """All counts equal (one distinct row of multiplicity K), K = 1, and every count distinct (multiplicities 1, rows
    sorted): the weighted EM runs the full EM's iterations, and the decoder's estimate is the per-category one."""
    n, p, q = 1000, 0.9, 0.01
    c = {"all-equal": np.full(50, 20.0), "one-category": np.array([900.0]),
         "all-distinct": np.random.default_rng(3).permutation(np.arange(40.0) * 3)}[case]
    values, inverse, mult = E.count_rows(c)
    assert values.size == {"all-equal": 1, "one-category": 1, "all-distinct": 40}[case]
    u = E._grid((c / n - q) / (p - q), n, p, q)
    L = E._likelihood(c, n, p, q, u)
    w, it, ok = E.npmle_weights(L, compiled=compiled)
    wu, itu, oku = E.npmle_weights(E._likelihood(values, n, p, q, u), compiled=compiled, mult=mult)
    assert (itu, oku) == (it, ok)
    assert np.abs(wu - w).max() <= _em_tolerance(it, c.size, u.size, w)
    if c.size > 1:
        E_on = E.eb_estimate(c, n, p, q)
        E_off = _eb_off(c, n, p, q)
        assert np.abs(E_on[0] - E_off[0]).max() <= SAME_ESTIMATE
        assert E_on[1] == pytest.approx(E_off[1], rel=1e-9, abs=1e-12)
        if case == "all-equal":  # one row copied to every category: equal means, 1 / K after the tilt
            assert np.all(E_on[0] == E_on[0][0]) and abs(E_on[0][0] - 1 / 50) <= 1e-15


def _eb_off(c, n, p, q, **kw):
    old = E.UNIQUE_ROWS
    E.UNIQUE_ROWS = False
    try:
        return E.eb_estimate(c, n, p, q, **kw)
    finally:
        E.UNIQUE_ROWS = old


@pytest.mark.parametrize("K,eps,n,a", GRID)
@pytest.mark.parametrize("sum_to_one", ["tilt", "rescale"])
def test_eb_estimate_on_distinct_rows(K, eps, n, a, sum_to_one):
    c, n, p, q = _counts(K, eps, n, a, 2 * K + int(eps))
    new, i_new = E.eb_estimate(c, n, p, q, sum_to_one=sum_to_one)
    old, i_old = _eb_off(c, n, p, q, sum_to_one=sum_to_one)
    assert np.abs(new - old).max() <= SAME_ESTIMATE
    assert (i_new["n_iter"], i_new["converged"], i_new["n_atoms"]) == (i_old["n_iter"], i_old["converged"],
                                                                     i_old["n_atoms"])
    if sum_to_one == "tilt":
        assert i_new["tilt_converged"] == i_old["tilt_converged"]
        assert i_new["tilt"] == pytest.approx(i_old["tilt"], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("K,eps,n,a", GRID[:4])
def test_tilt_on_distinct_rows_copies_the_rows_moments(K, eps, n, a):
    """``tilted_means(rows=inverse)`` on the distinct rows: the per-category tilt's means and ``lambda``."""
    c, n, p, q = _counts(K, eps, n, a, 3 * K)
    u = E._grid((c / n - q) / (p - q), n, p, q)
    values, inverse, mult = E.count_rows(c)
    Lu = E._likelihood(values, n, p, q, u)
    w = E.npmle_weights(Lu, mult=mult)[0]
    for linear in (False, True):
        m, lam, ok = E.tilted_means(Lu, w, u, linear=linear, rows=inverse)
        m0, lam0, ok0 = E.tilted_means(Lu[inverse], w, u, linear=linear)
        assert ok == ok0 and lam == pytest.approx(lam0, rel=1e-9, abs=1e-12)
        assert np.abs(m - m0).max() <= SAME_ESTIMATE


@pytest.mark.parametrize("K,eps,n,a", GRID)
def test_rho_search_on_distinct_rows_finds_the_same_rho(K, eps, n, a):
    """:meth:`DirichletRows.best` with multiplicities is the search on every category's rows; the rows on the kept
    atoms (the Beta CDF at their midpoints only, reused across other atom sets) are :meth:`DirichletRows.row`'s bit for
    bit."""
    c, n, p, q = _counts(K, eps, n, a, 4 * K)
    u0 = E._grid(np.zeros(0), n, p, q)
    values, inverse, mult = E.count_rows(c)
    Lu, u, keep = E.nonzero_columns(E._likelihood(values, n, p, q, u0), u0)
    rows = S.DirichletRows(u0, K, RHO_GRID)
    assert rows.best(Lu, keep, mult=mult) == S.DirichletRows(u0, K, RHO_GRID).best(Lu[inverse], keep)
    fresh, idx = S.DirichletRows(u0, K, RHO_GRID), [0, 5, 17, RHO_GRID.size - 1]
    for kp in (keep, None, np.r_[keep[1:], keep[:1]] if keep is not None else None):  # other folds' atoms: reused CDF
        batch = fresh.rows_on(idx, kp)
        full = [S.DirichletRows(u0, K, RHO_GRID).row(i) for i in idx]
        assert all(np.array_equal(batch[j], full[j] if kp is None else full[j][kp]) for j in range(len(idx)))
        one = S.DirichletRows(u0, K, RHO_GRID).row(3)
        assert np.array_equal(fresh.row_on(3, kp), one if kp is None else one[kp])


def test_gmodel_folds_score_every_categorys_likelihood(monkeypatch):
    """``candidates(return_fit=True)`` (``'eb-gmodel'``'s folds) returns the per-category likelihood, bit for bit."""
    c, n, p, q = _counts(200, 8.0, 2000, 0.1, 5)
    u0 = E._grid(np.zeros(0), n, p, q)
    WB = S.DirichletRows(u0, c.size, RHO_GRID)
    _, _, (w_new, L_new) = S.candidates(c, n, p, q, u0, WB, RHO_GRID, return_fit=True)
    monkeypatch.setattr(E, "UNIQUE_ROWS", False)
    _, _, (w_old, L_old) = S.candidates(c, n, p, q, u0, WB, RHO_GRID, return_fit=True)
    assert np.array_equal(L_new, L_old)
    assert np.abs(w_new - w_old).max() <= 1e-12


@pytest.mark.parametrize("K,eps,n,a", GRID[:4])
def test_candidates_with_the_full_table_weight_the_distinct_rows(monkeypatch, K, eps, n, a):
    """The ``rho`` search over a whole Beta table (``'auto'`` from 32 to 63 categories passes one) weights the distinct
    rows by their multiplicities: the same ``rho`` and candidates as on every category's rows."""
    c, n, p, q = _counts(K, eps, n, a, 5 * K)
    u0 = E._grid(np.zeros(0), n, p, q)
    WB = E.dirichlet_marginal_weights(u0, K, RHO_GRID)
    F_new, i_new = S.candidates(c, n, p, q, u0, WB, RHO_GRID)
    monkeypatch.setattr(E, "UNIQUE_ROWS", False)
    F_old, i_old = S.candidates(c, n, p, q, u0, WB, RHO_GRID)
    assert i_new["rho"] == i_old["rho"] and i_new["n_iter"] == i_old["n_iter"]
    assert np.abs(F_new - F_old).max() <= SAME_ESTIMATE


def _fit_route(K, eps, n, route, monkeypatch, decoder="auto"):
    monkeypatch.setattr(S, "STACK_ROUTE", route)
    rng = np.random.default_rng([K, int(eps), n])
    x = rng.choice(K, size=n, p=rng.dirichlet(np.ones(K)))
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=np.random.default_rng(11),
                                        decoder=decoder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(x.reshape(-1, 1))
        return est.theta_.copy(), dict(est.convergence_), est


def test_select_option_is_off_by_default_and_bit_for_bit_where_it_does_not_fire(monkeypatch):
    """``STACK_ROUTE = 'select'`` (round S's option, not adopted) changes nothing where the noise ratio exceeds 2."""
    assert S.STACK_ROUTE is False
    K, eps, n = 200, 4.0, 5000
    a, ca, est = _fit_route(K, eps, n, False, monkeypatch)
    p, q = est._support_counts()[2:]
    assert S.noise_ratio(K, p, q) > S.ROUTE_MAX_NOISE_RATIO
    b, cb, _ = _fit_route(K, eps, n, "select", monkeypatch)
    assert np.array_equal(a, b) and "stack_skipped" not in cb and ca["stack_used"] == cb["stack_used"]


@pytest.mark.parametrize("K,n", [(64, 1000), (200, 2000)])
def test_select_option_returns_the_chosen_baseline_alone(monkeypatch, K, n):
    """Near the identity the option returns ``'eb'``'s or ``'dir'``'s estimate on all users, as it reports."""
    theta, conv, est = _fit_route(K, 8.0, n, "select", monkeypatch)
    assert conv["stack_skipped"].startswith("select") and conv["stack_used"] is False
    assert conv["stack_folds"] == S.SELECT_FOLDS and conv["stack_baseline"] in ("eb", "dir")
    assert conv["stack_weights"][conv["stack_baseline"]] == 1.0
    c, n_, p, q = est._support_counts()
    u0 = E._grid(np.zeros(0), n_, p, q)
    ref = {"eb": E.eb_estimate(c, n_, p, q)[0],
           "dir": S.candidates(c, n_, p, q, u0, S.DirichletRows(u0, K, RHO_GRID), RHO_GRID, need={"dir"})[0][2]}
    expected = np.maximum(ref[conv["stack_baseline"]], 0.0)
    assert np.abs(theta - expected / expected.sum()).max() <= 1e-15


@pytest.mark.parametrize("K,eps,n,a", GRID)
def test_em_atom_floor_leaves_the_estimate_unchanged(monkeypatch, K, eps, n, a):
    """The weighted EM without the atoms every row puts below ``EM_ATOM_FLOOR``: the same iterations, weights within the
    rounding bound (those atoms' weight 0 where the full EM leaves them below ``G floor / min m`` of their start), and
    the decoder's estimate within ``SAME_ESTIMATE`` (bit for bit on round S's checks)."""
    c, n, p, q = _counts(K, eps, n, a, 6 * K)
    u = E._grid((c / n - q) / (p - q), n, p, q)
    values, inverse, mult = E.count_rows(c)
    Lu = E.nonzero_columns(E._likelihood(values, n, p, q, u), u)[0]
    below = ~(Lu > E.EM_ATOM_FLOOR).any(axis=0)
    w, it, ok = E.npmle_weights(Lu, mult=mult, compiled=True)
    assert np.all(w[below] == 0.0)
    monkeypatch.setattr(E, "EM_ATOM_FLOOR", 0.0)
    w0, it0, ok0 = E.npmle_weights(Lu, mult=mult, compiled=True)
    assert (it, ok) == (it0, ok0)
    assert np.abs(w - w0).max() <= _em_tolerance(it, K, u.size, w0)
    assert np.all(w0[below] <= u.size * 1e-30 / (Lu @ w0).min())
    off = E.eb_estimate(c, n, p, q)
    monkeypatch.setattr(E, "EM_ATOM_FLOOR", 1e-30)
    on = E.eb_estimate(c, n, p, q)
    assert np.abs(on[0] - off[0]).max() <= SAME_ESTIMATE and on[1]["n_iter"] == off[1]["n_iter"]


def test_em_atom_floor_keeps_every_rows_mode():
    """Every row reaches 1 at its mode, so some atom is always kept; a row's mode is never dropped."""
    c, n, p, q = _counts(64, 8.0, 1000, 1.0, 9)
    u = E._grid((c / n - q) / (p - q), n, p, q)
    values, inverse, mult = E.count_rows(c)
    Lu = E._likelihood(values, n, p, q, u)
    w = E.npmle_weights(Lu, mult=mult)[0]
    kept = (Lu > E.EM_ATOM_FLOOR).any(axis=0)
    assert kept[np.argmax(Lu, axis=1)].all() and 0 < kept.sum() < u.size and np.all(w[~kept] == 0)
