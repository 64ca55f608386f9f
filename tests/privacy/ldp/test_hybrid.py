"""The hybrid chain in compiled blocks (``_hybrid.HybridChain``, kernel ``_fast/_ldp_hybrid.pyx``; issue 28, round 5).

The compiled blocks draw the same random numbers as the Python generator ``hybrid_chain`` in the
same order (numpy's C samplers on the same Generator), so the two chains are compared step by step:
the grid values of ``rho`` exactly, the generator's state after the run exactly (the same number
of draws was consumed), and ``theta`` within a tolerance from the arithmetic (the only difference
is the order of floating-point sums of at most ``K`` or ``G`` terms, relative ``~1e-15`` per step;
``1e-9`` leaves six orders of magnitude for its growth along a few hundred iterations).
"""

import numpy as np
import pytest

from sklearn_bayes.privacy._ldp._hybrid import HybridChain, hybrid_draws
from sklearn_bayes.privacy._ldp._mechanisms import SetResponseMechanism, groups_from_masks
from sklearn_bayes.privacy._ldp._posterior import Groups, hybrid_chain
from sklearn_bayes.privacy._ldp._samplers import adaptive_exact_draws

BLOCKS = (7, 13, 1, 2, 40, 1, 97, 139)  # uneven blocks: boundaries before, at and after burn // 2


def _set_groups(K, k, eps, n, seed):
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.ones(K))
    masks = SetResponseMechanism(K, eps, "subset_selection", k).privatize(rng.choice(K, n, p=theta), rng)
    return groups_from_masks(masks, eps)


def _three_level(seed, K=6, G=9, counts=(30, 80)):
    """Groups with a set and a special category (the RRRR form), f_in, f_y >= f_out; ``counts``: the range
    (low inclusive, high exclusive) of each group's number of responses."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 4, G)
    a_ptr = np.zeros(G + 1, dtype=np.int32)
    np.cumsum(sizes, out=a_ptr[1:])
    a_idx, y = [], np.full(G, -1, dtype=np.int32)
    for g in range(G):
        members = np.sort(rng.choice(K, sizes[g] + 1, replace=False))
        a_idx.extend(members[1:] if rng.random() < 0.7 else members[:-1])
        rest = np.setdiff1d(np.arange(K), a_idx[a_ptr[g]:])
        if rng.random() < 0.6:
            y[g] = rng.choice(rest)
    f_out = rng.uniform(0.5, 1.0, G)
    return Groups(K, a_ptr, np.array(a_idx, dtype=np.int32), y, f_out + rng.uniform(0.5, 3, G),
                  f_out + rng.uniform(0.5, 3, G), f_out, rng.integers(*counts, G).astype(np.int64))


CASES = {
    "grr": lambda: _set_groups(8, 1, 2.0, 3000, 1),
    "grr-diagonal-preconditioner": lambda: _set_groups(80, 1, 3.0, 40_000, 5),  # K > 64
    "grr-no-mala": lambda: _set_groups(130, 1, 3.0, 70_000, 6),  # K > 128: Gibbs only
    "subset_selection": lambda: _set_groups(6, 2, 1.0, 3000, 2),
    "three-level": lambda: _three_level(3),
}


def _compare(g, prior, burn, seed=11):
    theta0 = np.random.default_rng(seed).dirichlet(np.ones(g.n_categories))
    rngs = {c: np.random.default_rng(seed) for c in (False, True)}
    chains = {c: HybridChain(g, burn, rngs[c], prior=prior, theta0=theta0, compiled=c) for c in (False, True)}
    assert chains[True].compiled and not chains[False].compiled
    draws = {c: [chains[c].draw(m) for m in BLOCKS] for c in (False, True)}
    th = {c: np.vstack([d[0] for d in draws[c]]) for c in draws}
    rho = {c: np.concatenate([d[1] for d in draws[c]]) for c in draws}
    np.testing.assert_array_equal(rho[True], rho[False])
    np.testing.assert_allclose(th[True], th[False], rtol=1e-9, atol=1e-12)
    assert rngs[True].bit_generator.state == rngs[False].bit_generator.state
    return th[True]


@pytest.mark.parametrize("kind", sorted(CASES))
@pytest.mark.parametrize("prior", ["hierarchical", "fixed"])
def test_compiled_blocks_are_the_python_chain_step_by_step(kind, prior):
    g = CASES[kind]()
    p = "hierarchical" if prior == "hierarchical" else np.linspace(0.5, 2.0, g.n_categories)
    th = _compare(g, p, burn=60)
    assert th.shape == (sum(BLOCKS), g.n_categories) and np.allclose(th.sum(axis=1), 1.0)


@pytest.mark.parametrize("burn", [0, 1, 2, 7])
def test_compiled_blocks_with_a_short_burn_in(burn):
    # the preconditioner at iteration burn // 2 = 0..3 (from the first call on)
    _compare(CASES["subset_selection"](), "hierarchical", burn)


def test_python_path_where_the_kernel_does_not_apply(monkeypatch):
    # per-response latent counts (4 G K > n) with the round-T kernel switched off: the blocks come from the
    # generator, same draws (with it on they are compiled: test_stack_speed_t.py)
    import sklearn_bayes.privacy._ldp._hybrid as hybrid

    monkeypatch.setattr(hybrid, "PER_RESPONSE_COMPILED", False)
    g = _set_groups(12, 4, 1.0, 300, 4)
    chain = HybridChain(g, 20, np.random.default_rng(5))
    assert not chain.compiled
    gen = hybrid_chain(g, 20, np.random.default_rng(5))
    ref = np.array([next(gen)[0] for _ in range(30)])
    np.testing.assert_array_equal(np.vstack([chain.draw(11)[0], chain.draw(19)[0]]), ref)


def test_hybrid_draws_and_adaptive_draws_use_the_compiled_chain():
    g = CASES["subset_selection"]()
    a, ra = hybrid_draws(g, 50, 30, np.random.default_rng(6), thin=3)
    b, rb = hybrid_draws(g, 50, 30, np.random.default_rng(6), thin=3, compiled=False)
    assert a.shape == (17, g.n_categories)
    np.testing.assert_array_equal(ra, rb)
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    c, dc = adaptive_exact_draws(g, "hierarchical", 2000, np.random.default_rng(7))
    d, dd = adaptive_exact_draws(g, "hierarchical", 2000, np.random.default_rng(7), compiled=False)
    assert c.shape == d.shape and dc["n_draws"] == dd["n_draws"]
    np.testing.assert_allclose(c, d, rtol=1e-9, atol=1e-12)


@pytest.mark.slow
def test_compiled_chain_targets_the_exact_posterior(k3_posterior_moments):
    """K = 3, fixed Dir(1) prior, SS responses: the compiled chain's posterior mean against quadrature
    on a fine simplex grid, within 5 Monte Carlo standard errors (ESS from the chain's own
    autocorrelations)."""
    from sklearn_bayes.privacy._ldp._diagnostics import chain_diagnostics

    g = _set_groups(3, 1, 1.0, 400, 8)
    mean = k3_posterior_moments(g)[0]
    chain = HybridChain(g, 200, np.random.default_rng(9), prior=np.ones(3))
    assert chain.compiled
    chain.draw(200)
    draws = chain.draw(40_000)[0]
    se = draws.std(axis=0) / np.sqrt(chain_diagnostics(draws)["ess"])
    assert np.all(np.abs(draws.mean(axis=0) - mean) <= 5 * se)


@pytest.mark.parametrize("kind", ["grr", "subset_selection"])
def test_early_rejected_jumps_are_the_full_evaluations_decisions(kind):
    """At states of the chain (where most jumps are decided by the bounds of ``_jumps_incremental``
    without the exact evaluation: rejected by the cubic upper bound, accepted by the quartic lower
    one) the incremental jumps take the decisions of the full evaluation of the target for the same
    proposals, and their ``ln pi`` (computed lazily) is exact within rounding.  (Loosening either
    bound's margin by 0.5 makes this test and the incremental-versus-full test of test_posterior.py
    fail.)"""
    from sklearn_bayes._fast._ldp_mala import mala_logpost
    from sklearn_bayes.privacy._ldp._posterior import _coordinate_jumps, _mala_form, jump_lists

    g = CASES[kind]()
    K = g.n_categories
    theta, rho = HybridChain(g, 100, np.random.default_rng(12)).draw(300)
    form, lists = _mala_form(g), jump_lists(_mala_form(g), K)
    moved = stayed = 0
    for it in range(100, 300, 4):
        prior = np.full(K, rho[it])
        z1 = np.log(theta[it] * np.random.default_rng(it).gamma(K * rho[it]))
        z2 = z1.copy()
        lp1 = lp2 = mala_logpost(z1, *form, prior)[0]
        before = z1.copy()
        lp1 = _coordinate_jumps(np.random.default_rng(it), z1, lp1, form, prior)
        lp2 = _coordinate_jumps(np.random.default_rng(it), z2, lp2, form, prior, None, lists)
        np.testing.assert_array_equal(z1, z2)
        moved += int(np.sum(z1 != before))
        stayed += int(np.sum(z1 == before))
        assert lp2 == pytest.approx(mala_logpost(z2, *form, prior)[0], rel=1e-9)
    assert moved > 0 and stayed > moved


def test_rho_memo_rows_are_read_only_once_computed():
    # the memo table of the rho rows is allocated without zeroing (round 6): a chain whose table
    # starts as NaN draws exactly what a zeroed one draws (a row read before it is computed would
    # turn rho's log-density into NaN and change the draws)
    g = _set_groups(10, 1, 8.0, 5000, 3)
    runs = []
    for fill in (0.0, np.nan):
        chain = HybridChain(g, 60, np.random.default_rng(4))
        assert chain.compiled and chain.table.shape[0] > 0
        chain.table[:] = fill
        runs.append(chain.draw(150))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    assert np.all(np.isfinite(runs[1][1]))


def test_rho_memo_rows_are_c_lgamma_differences():
    # round 7: lgamma(grid) is computed once per kernel call instead of once per new row; every
    # memoised row is still C's lgamma(grid + v) - lgamma(grid), bit for bit (the same libm
    # function, called here through ctypes), so the rho draws and the seeded theta_ are unchanged
    import ctypes
    import ctypes.util

    from sklearn_bayes.privacy._ldp._hybrid import RHO_GRID

    lgamma = ctypes.CDLL(ctypes.util.find_library("m")).lgamma
    lgamma.restype, lgamma.argtypes = ctypes.c_double, [ctypes.c_double]
    chain = HybridChain(_set_groups(10, 1, 8.0, 5000, 3), 60, np.random.default_rng(4))
    chain.draw(100)
    rows = np.flatnonzero(chain.known)
    assert rows.size >= 10
    lg0 = np.array([lgamma(g) for g in RHO_GRID])
    for v in rows[:: max(1, rows.size // 20)]:
        expected = np.array([lgamma(g + float(v)) for g in RHO_GRID]) - lg0
        np.testing.assert_array_equal(chain.table[v], expected)
