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
from sklearn_bayes.privacy._ldp._mechanisms import SetResponseMechanism, groups_from_masks
from sklearn_bayes.privacy._ldp._posterior import Groups, _dense_latent, _set_bits

BLOCKS = (7, 13, 1, 2, 40, 1, 97, 139)


def _set_groups(K, k, eps, n, seed):
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.ones(K))
    masks = SetResponseMechanism(K, eps, "subset_selection", k).privatize(rng.choice(K, n, p=theta), rng)
    return groups_from_masks(masks, eps)


def _three_level_sparse(seed, K=9, G=14):
    """RRRR-form groups (a set and a special category) with 1-3 responses each: per-response latent counts."""
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
                  f_out + rng.uniform(0.5, 3, G), f_out, rng.integers(1, 4, G).astype(np.int64))


CASES = {
    "grr K=20 eps=8": lambda: _set_groups(20, 1, 8.0, 1000, 1),
    "ss K=12 k=4": lambda: _set_groups(12, 4, 1.0, 300, 4),
    "ss K=40 k=9 (jumps, sets <= 16)": lambda: _set_groups(40, 9, 1.0, 400, 7),
    "three-level": lambda: _three_level_sparse(3),
}


def _compare(g, prior, burn, seed=11):
    assert not _dense_latent(g) and _set_bits(g) is None
    theta0 = np.random.default_rng(seed).dirichlet(np.ones(g.n_categories))
    rngs = {c: np.random.default_rng(seed) for c in (False, True)}
    chains = {c: HybridChain(g, burn, rngs[c], prior=prior, theta0=theta0, compiled=c) for c in (False, True)}
    assert chains[True].compiled and chains[True].per_response and not chains[False].compiled
    draws = {c: [chains[c].draw(m) for m in BLOCKS] for c in (False, True)}
    th = {c: np.vstack([d[0] for d in draws[c]]) for c in draws}
    rho = {c: np.concatenate([d[1] for d in draws[c]]) for c in draws}
    np.testing.assert_array_equal(rho[True], rho[False])
    np.testing.assert_allclose(th[True], th[False], rtol=1e-9, atol=1e-12)
    assert rngs[True].bit_generator.state == rngs[False].bit_generator.state
    return th[True]


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
