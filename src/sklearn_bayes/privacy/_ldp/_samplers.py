"""Posterior samplers of :class:`~sklearn_bayes.AdaptiveLDPFrequencyEstimator` as free functions.

Every function takes what it reads explicitly (the online chain as a
:class:`~._chain.ChainState`, or the groupings of the responses, the Dirichlet prior, the
starting point and a :class:`numpy.random.Generator`) and returns its draws; none keeps state.

- :func:`sgld_chain`: the papers' chain (SGLD on the Gamma representation, or the
  exact data-augmentation Gibbs sweep over every stored response);
- :func:`gibbs_sweep`: one such Gibbs sweep (the online pass with ``sampler='gibbs'``);
- :func:`gibbs_grouped`: the data-augmentation Gibbs sampler on the grouped likelihood
  (``final_estimate='gibbs'``);
- :func:`mala`: preconditioned MALA chains on the grouped likelihood
  (``final_estimate='mala'``, proposals, refresh);
- :func:`exact_draws`: the exact posterior of static mechanisms and of the
  hierarchical prior (Gibbs + MALA hybrid of ``_posterior``, started at IBU), and
  :func:`point_estimate` from its draws.
"""

import numpy as np

from sklearn_bayes.privacy._ldp._diagnostics import ESS_MIN, RHAT_MAX, chain_diagnostics, min_ess
from sklearn_bayes.privacy._ldp._hybrid import MAX_BLOCK, HybridChain, hybrid_draws
from sklearn_bayes.privacy._ldp._posterior import ibu, tv_point_estimate

__all__ = ["ADAPT_ESS_TARGET", "ADAPT_MAX_FACTOR", "MAX_DRAW_VALUES", "N_CHAINS", "adaptive_exact_draws", "exact_draws", "gibbs_grouped", "gibbs_sweep", "mala", "point_estimate", "sgld_chain"]

N_CHAINS = 8  # MALA chains run together for theta_ and posterior samples
_DENSE_PRECONDITIONER_MAX_K = 64  # above: diagonal MALA preconditioner (O(K) per proposal)


def gibbs_sweep(chain):
    """One exact Gibbs sweep of the :class:`~._chain.ChainState` ``chain``: latent categories
    of every response given ``phi / sum(phi)``, then ``phi <- Dir(prior + counts)`` (written
    into ``chain.phi``), with the chain's generator."""
    from sklearn_bayes._fast._ldp import gibbs_counts

    store, phi, rng = chain.store, chain.phi, chain.rng
    theta = phi / phi.sum()
    counts = np.zeros(store.n_categories, dtype=np.int64)
    gibbs_counts(rng, theta, store.ys, store.sids, store.masks, store.sid_k, chain.consts, store.n, counts)
    phi[:] = rng.dirichlet(chain.prior + counts)


def sgld_chain(chain, rng, *, n_iter, thin, sampler, batch_size, gamma):
    """Continue the online chain of ``chain`` (a :class:`~._chain.ChainState`, not changed)
    from a copy of its ``phi`` with the generator ``rng``: theta every ``thin`` iterations.

    ``sampler='gibbs'``: exact Gibbs sweeps over every stored response; ``'sgld'``:
    SGLD steps with minibatches of ``batch_size`` at the constant step ``gamma``.
    Returns an array of shape ``(n_iter // thin, K)``.
    """
    from sklearn_bayes._fast._ldp import gibbs_counts, run_sgld

    store, phi, consts, prior = chain.store, chain.phi, chain.consts, chain.prior
    n = store.n
    K = store.n_categories
    phi = phi.copy()
    n_out = n_iter // thin if thin > 0 else 0
    out = np.zeros((n_out, K))
    if sampler == "gibbs":
        counts = np.zeros(K, dtype=np.int64)
        theta = phi / phi.sum()
        row = 0
        for it in range(n_iter):
            gibbs_counts(rng, theta, store.ys, store.sids, store.masks, store.sid_k, consts, n, counts)
            theta = rng.dirichlet(prior + counts)
            if thin > 0 and (it + 1) % thin == 0 and row < n_out:
                out[row] = theta
                row += 1
        return out
    run_sgld(rng, phi, store.ys, store.sids, store.masks, store.members, store.sid_k, consts, prior,
             n, store.n_sids, int(batch_size), float(gamma), n_iter, thin, out)
    return out


def gibbs_grouped(L, counts, prior, theta, burn, keep, rng, thin=0):
    """Data-augmentation Gibbs sampler on the grouped likelihood, started at ``theta``.

    Sweep: ``N ~ sum_g Multinomial(c_g, p(. | y_g, S_g, theta))``, then
    ``theta ~ Dir(rho + N)``.  Returns the Rao-Blackwellised estimate of
    ``E[theta | y, S]``, the average of ``E[theta | N] = (rho + E[N | theta, y]) /
    (sum(rho) + n)`` over the ``keep`` sweeps after ``burn``, and, if ``thin > 0``,
    the draws ``theta`` of every ``thin``-th kept sweep.

    Parameters
    ----------
    L, counts : ndarray
        Distinct likelihood rows ``L[g, x] = g(y_g | x)`` and their counts
        (:meth:`~._store.ResponseStore.likelihood_rows`).
    prior : ndarray of shape (K,)
    theta : ndarray of shape (K,)
    burn, keep : int
    rng : numpy.random.Generator
    thin : int, default=0
    """
    total = prior.sum() + counts.sum()
    acc = np.zeros(L.shape[1])
    draws = np.zeros((keep // thin if thin else 0, L.shape[1]))
    for it in range(burn + keep):
        P = L * theta
        P /= P.sum(axis=1, keepdims=True)
        if it >= burn:
            acc += counts @ P
        N = rng.multinomial(counts, P).sum(axis=0)
        theta = rng.dirichlet(prior + N)
        j = it - burn + 1
        if thin and j > 0 and j % thin == 0 and j // thin <= draws.shape[0]:
            draws[j // thin - 1] = theta
    return (prior + acc / max(keep, 1)) / total, draws


def mala(structure, L, counts, prior, phi, burn, keep, rng, thin=0, n_chains=N_CHAINS):
    """Preconditioned MALA on the grouped likelihood: ``E[theta | y, S]`` and draws.

    Runs ``n_chains`` chains (kernel ``mala_chains`` in ``_fast/_ldp_mala.pyx``) from ``phi``.
    Returns the average of ``theta`` over the ``keep`` iterations after ``burn`` of every
    chain and, if ``thin > 0``, the states of every ``thin``-th kept iteration
    (chains interleaved).

    Coordinates ``z = ln phi`` with ``phi_k ~ Gamma(rho_k, 1)`` a priori and
    ``theta = softmax(z)``: ``ln pi(z) = sum_k (rho_k z_k - e^{z_k})
    + sum_g c_g ln h_g(theta)``.  Proposal
    ``z' = z + (h/2) C grad ln pi(z) + sqrt(h) C^{1/2} xi`` accepted by the
    Metropolis-Hastings ratio, so every chain targets the exact posterior.  ``C``
    starts as ``(J F J + diag(e^z + rho))^{-1}`` at the starting point (``F`` the
    observed information of ``theta``, ``J = diag(theta) - theta theta^T``); at half
    the burn-in it is replaced by the covariance of the chains' states over the
    second quarter of the burn-in (which captures the skewed, wide directions of
    rare categories that the local curvature misses).  ``h`` is adapted during the
    burn-in (mean acceptance near 0.57); after the burn-in both are fixed.  For
    ``K > 64`` only the diagonal of ``C`` (the marginal variances) is used.

    Parameters
    ----------
    structure : tuple
        The groups in the kernel's form (:meth:`~._store.ResponseStore.rrrr_structure`).
    L, counts : ndarray
        Dense likelihood rows and counts (:meth:`~._store.ResponseStore.likelihood_rows`),
        for the starting preconditioner.
    prior : ndarray of shape (K,)
    phi : ndarray of shape (K,)
        Starting point (the online sample).
    burn, keep : int
    rng : numpy.random.Generator
    thin : int, default=0
    n_chains : int, default=8
    """
    from sklearn_bayes._fast._ldp_mala import mala_chains, mala_logpost

    groups = structure
    prior = np.ascontiguousarray(prior, dtype=float)
    K = prior.size
    nc = int(n_chains)
    z0 = np.log(np.maximum(phi, 1e-300))
    lp0, g0 = mala_logpost(z0, *groups, prior)
    Z = np.tile(z0, (nc, 1))
    lp = np.full(nc, lp0)
    grad = np.tile(g0, (nc, 1))

    theta0 = np.exp(z0 - z0.max())
    theta0 /= theta0.sum()
    h0 = L @ theta0
    F = (L * (counts / h0**2)[:, None]).T @ L  # sum_g c_g L_g L_g^T / h_g^2
    J = np.diag(theta0) - np.outer(theta0, theta0)

    diag = K > _DENSE_PRECONDITIONER_MAX_K

    def precond(M):
        M = 0.5 * (M + M.T)
        C = np.linalg.inv(M)
        C = 0.5 * (C + C.T)
        if diag:  # marginal variances only: O(K) per proposal
            c = np.diag(C).copy()
            return np.diag(1.0 / c), np.diag(c), np.diag(np.sqrt(c))
        return M, C, np.linalg.cholesky(C)  # C = R R^T; the proposal density uses C^{-1} = M

    M, C, R = precond(J @ F @ J + np.diag(np.exp(z0) + prior))
    log_h = np.log(1.0 / K ** (1.0 / 3.0))
    acc = np.zeros(K)
    none = np.zeros((0, K))

    def run(it0, n_iter, adapt, log_h, thin=0, draws=none, record=none, record_from=-1):
        return mala_chains(rng, Z, lp, grad, *groups, prior, C, R, M, float(log_h), int(it0), int(n_iter),
                           bool(adapt), acc, int(thin), draws, 0, record, int(record_from), diag)[0]

    half = burn // 2 if burn >= 200 else 0
    if half:
        record = np.zeros(((half - half // 2 + 1) * nc, K))
        log_h = run(0, half + 1, True, log_h, record=record, record_from=half // 2)
        S = np.cov(record, rowvar=False).reshape(K, K)
        S += 1e-9 * np.eye(K) * max(float(np.trace(S)) / K, 1e-12)
        try:
            M, C, R = precond(np.linalg.inv(S))
            log_h = np.log(2.38**2 / K ** (1.0 / 3.0))
        except np.linalg.LinAlgError:
            pass
        log_h = run(half + 1, burn - half - 1, True, log_h)
    else:
        log_h = run(0, burn, True, log_h)
    draws = np.zeros(((keep // thin) * nc if thin else 0, K))
    run(burn, keep, False, log_h, thin=thin, draws=draws)
    return acc / max(keep * nc, 1), draws


#: Float64 values of posterior draws held at once for a point estimate or an interval (512 MiB):
#: above, the kept iterations are thinned evenly (the chain runs every iteration).
MAX_DRAW_VALUES = 1 << 26
#: Work budget of the IBU start (``n_iter * (K + sum_g |A_g|)``): 200 iterations up to about
#: 5 million set members, fewer above (it only starts the chain; the burn-in follows).
_IBU_WORK = 1 << 30


def exact_draws(groups, prior, burn, keep, rng, max_values=None, compiled=True, visits=None):
    """``keep`` draws of the exact (hierarchical or fixed-prior) posterior after ``burn`` iterations.

    :func:`~._hybrid.hybrid_draws` (Gibbs sweeps and MALA steps) started at IBU (EM)
    iterations, shrunk by 1 % towards uniform: 200 of them, fewer when the sets are so
    large that 200 would cost more than ``2^30`` member visits (at least 2).

    Parameters
    ----------
    groups : :class:`~._posterior.Groups`
    prior : 'hierarchical' or ndarray of shape (K,)
    burn, keep : int
    rng : numpy.random.Generator
    max_values : int, optional
        Hold at most this many values: the ``keep`` iterations are thinned evenly to
        ``ceil(keep / thin)`` draws with ``thin = ceil(keep K / max_values)``.
    compiled : bool, default=True
        Private switch: ``False`` runs the Python generator of the chain (the reference of the
        compiled blocks, :class:`~._hybrid.HybridChain`).
    visits : list, optional
        Receives the kept draws' visits of ``z = 1_K`` under ``prior='spike-bulk'`` (:func:`~._hybrid.hybrid_draws`).
    """
    K = groups.n_categories
    theta0 = _ibu_start(groups)
    thin = 1
    if max_values is not None and keep * K > max_values:
        thin = -(-keep // max(1, max_values // K))
    return hybrid_draws(groups, keep, burn, rng, prior=prior, theta0=theta0, thin=thin, compiled=compiled,
                        visits=visits)[0]


def _ibu_start(groups):
    """The chain's start: IBU (EM) iterations shrunk by 1 % towards uniform (see :func:`exact_draws`)."""
    K = groups.n_categories
    work = K + int(groups.a_ptr[-1])
    n_ibu = min(200, max(2, _IBU_WORK // max(work, 1)))
    return 0.99 * ibu(groups, n_iter=n_ibu, tol=1e-8) + 0.01 / K


#: Burn-in of :func:`adaptive_exact_draws` (from the IBU start), draws before the first check,
#: and the smallest extension between two checks.
ADAPT_BURN, ADAPT_MIN_KEEP, ADAPT_BLOCK = 200, 200, 100
#: The exact posterior's chain runs at most this many times ``n_final_steps`` iterations.
ADAPT_MAX_FACTOR = 4
#: The chain stops once the worst category's ESS reaches this (twice the warning's ESS_MIN: with
#: ESS 100 the Monte Carlo error of the 'tv' summary raised its TV by 1-3 % on 4 cells).
ADAPT_ESS_TARGET = 200.0


def adaptive_exact_draws(groups, prior, max_iter, rng, max_values=None, compiled=True):
    """Draws of the exact posterior, extended until they pass the convergence checks.

    The chain of :func:`exact_draws` (IBU start) runs a burn-in of ``min(200, max_iter -
    max_iter // 2)`` iterations, then keeps draws; after 200 kept draws, and then after every
    extension by ``max(100, n / 4)`` draws, :func:`~._diagnostics.chain_diagnostics` of all the
    kept draws is computed and the chain stops once the worst category has split R-hat
    ``<= 1.05`` and ESS ``>= 200`` (:data:`ADAPT_ESS_TARGET`); or when burn-in plus draws reach
    ``max_iter``; or, from ``max(400, max_iter / 8)`` draws on (``n_final_steps / 2`` at the
    estimator's bound, the draws of the fixed-length chain before issue 28's round 2), when the
    ESS extrapolated linearly to ``max_iter`` iterations stays below 200 (the target would not
    be reached: the draws so far are used).
    The ``ConvergenceWarning`` of the estimator fires when the returned draws fail R-hat
    ``<= 1.05`` or ESS ``>= 100``.  When ``max_iter`` draws of ``K`` values would
    exceed ``max_values`` the fixed-length :func:`exact_draws` (second half of ``max_iter``
    kept, thinned) is used instead.

    The chain runs in blocks between two checks (:class:`~._hybrid.HybridChain`: one kernel call
    per block where it is compiled; ``compiled=False``, a private switch, runs the Python generator).

    Returns ``(draws, diagnostics)``; ``diagnostics['n_draws']`` is the number of kept draws.
    """
    K = groups.n_categories
    burn = min(ADAPT_BURN, max_iter - max_iter // 2)
    max_keep = max_iter - burn
    if max_values is not None and max_keep * K > max_values:
        visits = []
        draws = exact_draws(groups, prior, max_iter - max_iter // 2, max_iter // 2, rng, max_values=max_values,
                            compiled=compiled, visits=visits)
        diag = chain_diagnostics(draws)
        if hasattr(prior, "symmetric_share"):  # prior='spike-bulk': the kept (thinned) iterations' visits
            diag = dict(diag, symmetric_visits=np.array(visits, dtype=bool), symmetric_share=prior.symmetric_share())
        return draws, diag
    chain = HybridChain(groups, burn, rng, prior=prior, theta0=_ibu_start(groups), compiled=compiled)
    for done in range(0, burn, MAX_BLOCK):
        chain.draw(min(MAX_BLOCK, burn - done))
    out = np.empty((max_keep, K))
    v0 = len(chain.visits)
    n, check = 0, min(ADAPT_MIN_KEEP, max_keep)
    while True:
        while n < check:
            m = min(check - n, MAX_BLOCK)
            out[n : n + m] = chain.draw(m)[0]
            n += m
        # the ESS first: R-hat only matters once the ESS passes, or for the returned diagnostics
        ess = min_ess(out[:n])
        short = n >= max(2 * ADAPT_MIN_KEEP, max_iter // 8) and ess * max_keep / n < ADAPT_ESS_TARGET
        if n >= max_keep or ess >= ADAPT_ESS_TARGET or short:
            diag = chain_diagnostics(out[:n], ess=ess)
            if n >= max_keep or (diag["rhat"] <= RHAT_MAX and ess >= ADAPT_ESS_TARGET) or short:
                if chain.hyper is not None:  # prior='spike-bulk': the kept iterations' visits of z = 1_K
                    diag = dict(diag, symmetric_visits=np.array(chain.visits[v0 : v0 + n]),
                                symmetric_share=chain.hyper.symmetric_share())
                return out[:n], diag
        check = min(max_keep, n + max(ADAPT_BLOCK, n // 4))


def point_estimate(draws, kind):
    """``theta_`` from posterior draws: ``'tv'`` (Bayes for TV), ``'median'`` (renormalised) or ``'mean'``."""
    if kind == "mean":
        return draws.mean(axis=0)
    if kind == "tv":
        return tv_point_estimate(draws)
    med = np.median(draws, axis=0)
    return med / med.sum()
