"""Issue 28, round T (cost, the same output up to rounding): the hybrid chain's per-response branch compiled.

Where ``4 G K > n`` (:func:`~sklearn_bayes.privacy._ldp._posterior._dense_latent` false: few users per distinct
response, e.g. ``K = 20, eps = 8`` with 1000 users) the chain drew its latent counts per response in the Python
generator (about 0.1 ms an iteration).  ``_hybrid.PER_RESPONSE_COMPILED`` runs that branch in the kernel
``hybrid_block`` with ``_ldp_gibbs.latent_counts``' own code (``_latent_core``) on the same random numbers.  The
chains are compared step by step as in ``test_hybrid.py``: ``rho`` exactly, the generator's state after the run
exactly (the same draws were consumed), ``theta`` to ``1e-9`` relative (the sums' order and C's ``lgamma`` against
scipy's ``gammaln``: ``~1e-15`` a step).  Fitted estimators: ``theta_`` and ``credible_interval`` within ``1e-12``
of the Python path with the same diagnostics' decisions (the measured largest difference is ``2.5e-15``).
"""

import warnings

import numpy as np
import pytest

import sklearn_bayes.privacy._ldp._hybrid as hybrid
from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp._hybrid import HybridChain
from sklearn_bayes.privacy._ldp._posterior import _dense_latent, _set_bits
from tests.privacy.ldp.test_hybrid import BLOCKS, _set_groups, _three_level  # the chains' comparison set-up
from tests.privacy.ldp.test_hybrid import _compare as _compare_chains


def _three_level_sparse(seed, K=9, G=14):
    """RRRR-form groups (a set and a special category) with 1-3 responses each: per-response latent counts."""
    return _three_level(seed, K, G, counts=(1, 4))


CASES = {
    "grr K=20 eps=8": lambda: _set_groups(20, 1, 8.0, 1000, 1),
    "ss K=12 k=4": lambda: _set_groups(12, 4, 1.0, 300, 4),
    "ss K=40 k=9 (jumps, sets <= 16)": lambda: _set_groups(40, 9, 1.0, 400, 7),
    "three-level": lambda: _three_level_sparse(3),
}


def _compare(g, prior, burn, seed=11):
    """test_hybrid's step-by-step comparison, on groups whose latent counts are drawn per response (so the chain
    runs the round-T branch: ``HybridChain.per_response`` is ``not _dense_latent``)."""
    assert not _dense_latent(g) and _set_bits(g) is None
    return _compare_chains(g, prior, burn, seed)


@pytest.mark.parametrize("kind", sorted(CASES))
@pytest.mark.parametrize("prior", ["hierarchical", "fixed"])
def test_per_response_blocks_are_the_python_chain_step_by_step(kind, prior):
    g = CASES[kind]()
    p = "hierarchical" if prior == "hierarchical" else np.linspace(0.5, 2.0, g.n_categories)
    th = _compare(g, p, burn=60)
    assert th.shape == (sum(BLOCKS), g.n_categories) and np.allclose(th.sum(axis=1), 1.0)


@pytest.mark.parametrize("burn", [0, 1, 2, 7])
def test_per_response_blocks_with_a_short_burn_in(burn):
    _compare(CASES["grr K=20 eps=8"](), "hierarchical", burn)


def test_switch_off_and_bit_rows_keep_the_python_generator(monkeypatch):
    g = CASES["ss K=12 k=4"]()
    assert HybridChain(g, 20, np.random.default_rng(0)).compiled
    monkeypatch.setattr(hybrid, "PER_RESPONSE_COMPILED", False)
    assert not HybridChain(g, 20, np.random.default_rng(0)).compiled
    monkeypatch.setattr(hybrid, "PER_RESPONSE_COMPILED", True)
    big = _set_groups(40, 20, 0.5, 300, 9)  # sets of 20 members: the generator passes bit rows, not compiled
    assert not _dense_latent(big) and _set_bits(big) is not None
    assert not HybridChain(big, 20, np.random.default_rng(0)).compiled


def test_kernel_refuses_per_response_without_its_arrays():
    from sklearn_bayes._fast._ldp_hybrid import hybrid_block

    chain = HybridChain(CASES["grr K=20 eps=8"](), 20, np.random.default_rng(0))
    K = chain._K
    out, rhos = np.empty((1, K)), np.empty(1)
    args = (chain._rng, 0, 1, 20, False, False, chain.lt.copy(), chain.state.copy(), chain.hier, chain.prior,
            *chain.mix, hybrid.RHO_GRID, chain.head, chain.table, chain.known, False, 0, *chain.form, np.zeros((0, 0)),
            np.zeros((0, 0)), np.zeros((0, 0)), False, False, *chain.lists, out, rhos, 0)
    with pytest.raises(ValueError, match="per_response needs"):
        hybrid_block(*args, True)
    a_ptr, a_idx, y, f_in, f_y, f_out = chain.resp
    with pytest.raises(ValueError, match="do not match count"):
        hybrid_block(*args, True, a_ptr[:-1], a_idx, y, f_in, f_y, f_out)


def _fit(K, eps, n, seed, compiled, monkeypatch):
    monkeypatch.setattr(hybrid, "PER_RESPONSE_COMPILED", compiled)
    rng = np.random.default_rng([K, int(eps), n, seed])
    x = rng.choice(K, size=n, p=rng.dirichlet(np.ones(K)))
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(x.reshape(-1, 1))
        return est.theta_, est.credible_interval(0.95), est.convergence_


@pytest.mark.parametrize("K, eps, n, seed", [(20, 8.0, 1000, 0), (10, 8.0, 300, 1), (16, 5.0, 800, 2)])
def test_estimator_outputs_within_rounding_of_the_python_path(K, eps, n, seed, monkeypatch):
    th0, ci0, c0 = _fit(K, eps, n, seed, False, monkeypatch)
    th1, ci1, c1 = _fit(K, eps, n, seed, True, monkeypatch)
    assert c0["method"] == c1["method"] == "mcmc" and c0["n_draws"] == c1["n_draws"]
    np.testing.assert_allclose(th1, th0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ci1, ci0, rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------------------------------------
# The stacked decoder: Beta CDF rows kept across fits (ROW_MEMO_SIZE) and the full data's likelihood and rho reused by
# the second candidates call (STACK_PREP_REUSE).  Both change no number: theta_, credible_interval and convergence_
# are compared bit for bit (np.array_equal, repr) with both switches off.
import sklearn_bayes.privacy._ldp._stacking as S  # noqa: E402
from sklearn_bayes.privacy._ldp._empirical_bayes import _grid, dirichlet_marginal_weights  # noqa: E402
from sklearn_bayes.privacy._ldp._posterior import RHO_GRID  # noqa: E402


def _stack_fit(K, eps, n, seed, theta=None):
    rng = np.random.default_rng([K, int(eps), n, seed])
    theta = rng.dirichlet(np.ones(K)) if theta is None else theta
    x = rng.choice(K, size=n, p=theta)
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(x.reshape(-1, 1))
        return est.theta_, est.credible_interval(0.95), repr(est.convergence_)


@pytest.fixture
def empty_memo(monkeypatch):
    monkeypatch.setattr(S, "_ROW_MEMO", __import__("collections").OrderedDict())
    monkeypatch.setattr(S, "_GRID_MEMO", __import__("collections").OrderedDict())
    return S._ROW_MEMO


# the stack kept, 'dir' as the baseline and 'eb' alone all occur among these (checked in the test)
STACK_CELLS = [(64, 8.0, 1000, 0), (64, 8.0, 1000, 3), (200, 6.0, 1000, 3), (200, 6.0, 1000, 0), (100, 4.0, 3000, 1),
               (300, 8.0, 2000, 2)]


def test_row_memo_and_prep_reuse_change_no_number(empty_memo, monkeypatch):
    seen = set()
    for K, eps, n, seed in STACK_CELLS:
        monkeypatch.setattr(S, "ROW_MEMO_SIZE", 0)
        monkeypatch.setattr(S, "STACK_PREP_REUSE", False)
        ref = _stack_fit(K, eps, n, seed)
        monkeypatch.setattr(S, "ROW_MEMO_SIZE", 16)
        monkeypatch.setattr(S, "STACK_PREP_REUSE", True)
        for _ in range(2):  # cold memo, then warm (the second fit reads the first's rows)
            got = _stack_fit(K, eps, n, seed)
            np.testing.assert_array_equal(got[0], ref[0])
            np.testing.assert_array_equal(got[1], ref[1])
            assert got[2] == ref[2]
        seen.add("used" if "'stack_used': True" in ref[2] else ref[2].split("'stack_baseline': ")[1][:5])
    assert seen == {"used", "'dir'", "'eb'}"}


def test_dirichlet_rows_from_the_memo_are_the_table(empty_memo):
    K, n, p, q = 64, 1000, 0.9, 0.01
    u = _grid(np.zeros(0), n, p, q)
    table = dirichlet_marginal_weights(u, K, RHO_GRID)
    first = S.DirichletRows(u, K, RHO_GRID)
    a = first.rows_on([3, 40, 96])
    second = S.DirichletRows(u, K, RHO_GRID)  # shares the first's rows: nothing recomputed
    assert second._rows is first._rows and len(second._rows) == 3
    np.testing.assert_array_equal(a, table[[3, 40, 96]])
    np.testing.assert_array_equal(second.row(40), table[40])
    np.testing.assert_array_equal(second.row(7), table[7])
    with pytest.raises(ValueError):
        second.row(7)[0] = 1.0  # read-only: a caller cannot edit another fit's row
    other = S.DirichletRows(u, K + 1, RHO_GRID)  # another K: another key
    assert other._rows is not first._rows


def test_row_memo_is_bounded_and_can_be_off(empty_memo, monkeypatch):
    monkeypatch.setattr(S, "ROW_MEMO_SIZE", 3)
    rows = [S.DirichletRows(_grid(np.zeros(0), n, 0.9, 0.01), 64, RHO_GRID) for n in (100, 200, 300, 400)]
    assert len(empty_memo) == 3
    assert S.DirichletRows(_grid(np.zeros(0), 400, 0.9, 0.01), 64, RHO_GRID)._rows is rows[3]._rows  # kept
    assert S.DirichletRows(_grid(np.zeros(0), 100, 0.9, 0.01), 64, RHO_GRID)._rows is not rows[0]._rows  # evicted
    monkeypatch.setattr(S, "ROW_MEMO_SIZE", 0)
    a, b = (S.DirichletRows(_grid(np.zeros(0), 500, 0.9, 0.01), 64, RHO_GRID) for _ in range(2))
    assert a._rows is not b._rows and len(empty_memo) == 3


# ---------------------------------------------------------------------------------------------------------------------
# The tilt's moments in one compiled call (_empirical_bayes.TILT_COMPILED, kernel _fast/_ldp_tilt.pyx): the numpy
# operations of rounds G3-S up to rounding (scipy's dgemm against numpy's, C's exp against numpy's loop: one or two ulps
# of each moment; 3.5e-17 on 40 random fits when measured).  1e-14 absolute on means that sum to 1.
import sklearn_bayes.privacy._ldp._empirical_bayes as E  # noqa: E402
from sklearn_bayes._fast._ldp_tilt import tilt_moments  # noqa: E402
from sklearn_bayes.privacy._ldp._empirical_bayes import (  # noqa: E402
    _likelihood, count_rows, nonzero_columns, npmle_weights, tilted_means)


@pytest.mark.parametrize("seed", range(12))
def test_compiled_tilt_is_the_numpy_tilt_up_to_rounding(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    K, eps, n = int(rng.choice([20, 64, 300])), float(rng.choice([1.0, 4.0, 8.0])), int(rng.choice([1000, 20000]))
    e = np.exp(eps)
    p, q = e / (e + K - 1), 1.0 / (e + K - 1)  # GRR's support probabilities
    c = rng.binomial(n, q + (p - q) * rng.dirichlet(np.full(K, 0.5))).astype(float)
    u = _grid(np.zeros(0), n, p, q)
    cu, rows, mult = count_rows(c)
    L, uk, _ = nonzero_columns(_likelihood(cu, n, p, q, u), u)
    w = npmle_weights(L, n_atoms=u.size, mult=mult, compiled=True)[0]
    out = {}
    for flag in (False, True):
        monkeypatch.setattr(E, "TILT_COMPILED", flag)
        out[flag] = tilted_means(L, w, uk, linear=True, rows=rows)
    np.testing.assert_allclose(out[True][0], out[False][0], rtol=0, atol=1e-14)
    assert abs(out[True][1] - out[False][1]) <= 1e-9 * max(1.0, abs(out[False][1])) and out[True][2] == out[False][2]


def test_compiled_tilt_takes_the_log_space_path_for_rows_without_mass(monkeypatch):
    u = np.linspace(0.0, 1.0, 101)
    L = np.exp(-0.5 * ((u[None, :] - np.array([[0.1], [0.2], [0.95]])) / 0.01) ** 2)
    w = np.where(u < 0.5, 1.0, 1e-290)
    w /= w.sum()
    rows = np.array([2, 0, 1, 2, 0])
    with np.errstate(divide="ignore"):
        logP = np.log(L) + np.log(w)[None, :]
    m_ref, v_ref = E._tilted(logP.copy(), u, 0.3)
    m, var = E._compiled_moments(L, np.log(w), u, rows, lambda: logP)(0.3)
    assert np.all(np.isfinite(m))
    np.testing.assert_allclose(m, m_ref[rows], rtol=0, atol=1e-12)
    np.testing.assert_allclose(var, v_ref[rows], rtol=0, atol=1e-12)
    low = np.empty(3, dtype=np.uint8)
    assert tilt_moments(L, np.log(w), u, 0.3, rows.astype(np.int64), np.empty(5), np.empty(5), np.empty(3 * 101 + 9),
                        low, E.TILT_LINEAR_FLOOR) == 1 and low.tolist() == [0, 0, 1]


def test_tilt_kernel_refuses_mismatched_arrays():
    L, u, w = np.ones((2, 4)), np.linspace(0, 1, 4), np.zeros(4)
    rows = np.array([0, 1], dtype=np.int64)
    with pytest.raises(ValueError, match="do not match"):
        tilt_moments(L, w, u[:3], 0.0, rows, np.empty(2), np.empty(2), np.empty(20), np.empty(2, dtype=np.uint8), 0.0)
    with pytest.raises(ValueError, match="too small"):
        tilt_moments(L, w, u, 0.0, rows, np.empty(2), np.empty(2), np.empty(5), np.empty(2, dtype=np.uint8), 0.0)


def test_common_grid_memo_is_the_grid(empty_memo, monkeypatch):
    monkeypatch.setattr(S, "ROW_MEMO_SIZE", 2)
    a = S._common_grid(1000, 0.9, 0.01)
    np.testing.assert_array_equal(a, _grid(np.zeros(0), 1000, 0.9, 0.01))
    assert S._common_grid(1000, 0.9, 0.01) is a and not a.flags.writeable
    S._common_grid(2000, 0.9, 0.01)
    S._common_grid(3000, 0.9, 0.01)
    assert len(S._GRID_MEMO) == 2 and S._common_grid(1000, 0.9, 0.01) is not a  # evicted, recomputed
    monkeypatch.setattr(S, "ROW_MEMO_SIZE", 0)
    b = S._common_grid(3000, 0.9, 0.01)  # memo off: a fresh array, not the kept one
    assert b.flags.writeable and b is not S._GRID_MEMO[(3000, 0.9, 0.01)]


def test_least_squares_constants_are_formed_once_and_read_only():
    on, both, pad = S._padded_parts(5)
    assert S._padded_parts(5)[0] is on and not (on.flags.writeable or both.flags.writeable or pad.flags.writeable)
    np.testing.assert_array_equal(both, on[:, :, None] & on[:, None, :])
    np.testing.assert_array_equal(pad, np.where(~on, 1.0, 0.0)[:, :, None] * np.eye(5)[None])


# ---------------------------------------------------------------------------------------------------------------------
# GRR's client (SS with k = 1): the keys of the rows it does not read skipped by bit_generator.advance
# (_mechanisms.SKIP_UNUSED_KEYS): the same responses and the same generator state, for every bit generator (PCG64 and
# PCG64DXSM skip, the others draw), with a buffered 32-bit value (then it draws), with few and many left-out users.
import sklearn_bayes.privacy._ldp._mechanisms as M  # noqa: E402


@pytest.mark.parametrize("bit_generator", [np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64,
                                           np.random.MT19937])
@pytest.mark.parametrize("K, eps, n", [(20, 8.0, 5000), (64, 8.0, 2000), (1000, 8.0, 3000), (3, 0.5, 400), (2, 12.0, 1),
                                       (200, 20.0, 700)])
@pytest.mark.parametrize("buffered", [False, True])
def test_skipped_keys_give_the_same_responses_and_state(bit_generator, K, eps, n, buffered, monkeypatch):
    x = np.random.default_rng(K + n).integers(0, K, n)
    res = []
    for flag in (False, True):
        monkeypatch.setattr(M, "SKIP_UNUSED_KEYS", flag)
        g = np.random.Generator(bit_generator(123))
        if buffered:
            g.integers(0, 10, dtype=np.int32)  # PCG64's has_uint32: the skip would reset it, so it draws
        out = M.ss_privatize_packed(x, K, eps, 1, g)
        res.append((out, repr(g.bit_generator.state), g.random(4)))
    np.testing.assert_array_equal(res[1][0], res[0][0])
    assert res[1][1] == res[0][1]
    np.testing.assert_array_equal(res[1][2], res[0][2])


def test_skip_reads_the_left_rows_keys_and_refuses_where_not_exact(monkeypatch):
    rng = np.random.default_rng(5)
    left = np.array([0, 3, 7, 1999])
    ref = np.random.default_rng(5).random((2000, 4))[left]
    np.testing.assert_array_equal(M._left_rows_keys(rng, 2000, 4, left), ref)
    assert repr(rng.bit_generator.state) == _state_after(5, 8000)
    assert M._left_rows_keys(np.random.Generator(np.random.SFC64(1)), 2000, 4, left) is None
    assert M._left_rows_keys(np.random.default_rng(1), 9, 4, np.array([0, 3, 7])) is None  # many rows: draw them all
    monkeypatch.setattr(M, "SKIP_UNUSED_KEYS", False)
    assert M._left_rows_keys(np.random.default_rng(1), 2000, 4, left) is None


def _state_after(seed, draws):
    g = np.random.default_rng(seed)
    g.random(draws)
    return repr(g.bit_generator.state)
