"""The online driver of ``mechanism='rrrr'`` (Algorithm 7 of AdOBEst-LDP) as free functions.

For each user: choose the subset from the current sample ``phi`` (the prefix of the
categories sorted by decreasing ``theta`` that maximises the utility), privatise the
user with RRRR (simulation) or take her released response (deployment), store the
response, and move ``phi`` by ``n_steps`` SGLD steps (or one exact Gibbs sweep).  The
loop runs in the compiled kernel ``run_online`` of ``_fast/_ldp.pyx`` for the built-in
utilities; a callable utility is evaluated from Python once per user.

Inputs and outputs are explicit: the :class:`~._chain.ChainState` (the response store
recorded into, ``phi`` and ``sigma`` changed in place: the caller passes a state from
:meth:`~._chain.ChainState.for_update` it owns, the generator, the RRRR constants table and
the prior) and the mechanism's parameters.
"""

import numpy as np

from sklearn_bayes.privacy._ldp._samplers import gibbs_sweep
from sklearn_bayes.privacy._ldp._utilities import UTILITY_MODES, choose_subset_size

__all__ = ["process_users", "step_sizes"]

_CHUNK = 4096  # users per kernel call in simulation mode


def step_sizes(step_size, t0, n):
    """SGLD steps for users ``t0 + 1, ..., t0 + n`` (``'auto'``/``'0.5/t'``: ``0.5 / t``)."""
    t = np.arange(t0 + 1, t0 + n + 1, dtype=float)
    if isinstance(step_size, str):
        return 0.5 / t
    if callable(step_size):
        g = np.array([float(step_size(int(ti))) for ti in t])
        if not np.all(np.isfinite(g)) or np.any(g <= 0):
            raise ValueError(f"step_size(t) must return finite values > 0, got {g[:5].tolist()}.")
        return g
    return np.full(n, float(step_size))


def _run(chain, values, given, mode, alpha, n_steps, batch_size, step_size):
    """One call of the compiled loop over ``values`` (mode as in ``run_online``)."""
    from sklearn_bayes._fast._ldp import run_online

    store = chain.store
    n_old = store.n
    n_new = values.shape[0]
    store.ensure_capacity(n_new, n_new if mode != 0 else 0)
    ns0 = store.n_sids
    k_out = np.zeros(n_new, dtype=np.int32)
    ns1 = run_online(
        chain.rng, chain.phi, chain.sigma, store.ys, store.sids, store.masks, store.members, store.sid_k,
        chain.consts, chain.prior, n_old, ns0, values, given, mode, alpha,
        step_sizes(step_size, n_old, n_new), n_steps, int(batch_size), k_out,
    )
    if mode != 0:
        store.intern_new_rows(ns0, ns1, n_old, n_new)
    store.commit(n_new, k_out)


def process_users(chain, values, given=None, *, epsilon, kappa, utility, alpha, sampler, n_steps, batch_size,
                  step_size):
    """Add users one at a time: true categories ``values`` (``given=None``, simulation) or
    released responses ``values`` with subset ids ``given`` (deployment, ``update='online'``).

    Parameters
    ----------
    chain : ChainState
        Recorded into (its store), its sample ``phi`` moved and ``sigma`` updated in place;
        its generator draws the privacy noise (simulation) and the MCMC; its RRRR constants
        table and Dirichlet prior are those of the online chain.
    values, given : ndarray of int32
    epsilon, kappa, utility, alpha
        The mechanism's parameters (``utility`` a name of ``UTILITIES`` or a callable).
    sampler, n_steps, batch_size, step_size
        The online chain's knobs.
    """
    n_new = values.shape[0]
    mode_fast = UTILITY_MODES.get(utility) if isinstance(utility, str) else None
    alpha = float(alpha) if alpha is not None else 0.0
    gibbs = sampler == "gibbs"
    n_steps = 0 if gibbs else int(n_steps)
    knobs = dict(batch_size=batch_size, step_size=step_size)
    if given is not None:
        if not gibbs:
            _run(chain, values, given, 0, alpha, n_steps, **knobs)
        else:
            for i in range(n_new):
                _run(chain, values[i : i + 1], given[i : i + 1], 0, alpha, 0, **knobs)
                gibbs_sweep(chain)
    elif mode_fast is not None and not gibbs:
        # chunks bound the scratch subset rows (one per user at worst) before interning
        for start in range(0, n_new, _CHUNK):
            chunk = values[start : start + _CHUNK]
            _run(chain, chunk, chunk, mode_fast, alpha, n_steps, **knobs)
    else:
        for i in range(n_new):
            if mode_fast is not None:
                _run(chain, values[i : i + 1], values[i : i + 1], mode_fast, alpha, 0, **knobs)
            else:
                theta = chain.phi / chain.phi.sum()
                k = choose_subset_size(theta, epsilon, kappa, utility, consts=chain.consts)
                _run(chain, values[i : i + 1], np.array([k], dtype=np.int32), 4, alpha, n_steps, **knobs)
            if gibbs:
                gibbs_sweep(chain)
