"""The hybrid chain of the exact posterior run in blocks of iterations: :class:`HybridChain`.

:func:`~._posterior.hybrid_chain` is the chain as a Python generator, one iteration per
``next`` (about 25 numpy calls each: 0.1-0.2 ms per iteration at ``K <= 50``, issue 28).
:class:`HybridChain` runs the same chain in blocks: ``draw(n)`` returns the next ``n``
iterations.  Where the latent counts go through the mixture form (``_posterior._dense_latent``
and ``_mixture_parts``: few distinct responses, the usual case below 64 categories) and the
coordinate jumps visit every category, one call of the kernel ``hybrid_block``
(``_fast/_ldp_hybrid.pyx``) runs the whole block: the same steps in the same order, drawing the
same random numbers from the generator with numpy's own C samplers, so the compiled chain equals
the Python one up to floating-point rounding (tested step by step).  Where the latent counts are
drawn per response (``4 G K > n``) and the sets need no bit rows, the kernel runs that branch with
``_ldp_gibbs.latent_counts``' own code (issue 28, round T: ``PER_RESPONSE_COMPILED``; 4-7 times
faster at ``K`` 8-30 with 200-2000 users).  Otherwise (or with ``compiled=False``) the blocks come
from :func:`~._posterior.hybrid_chain`.

The preconditioner of the MALA steps is computed, as in the generator, in the middle of
iteration ``burn // 2`` (after its Gibbs part, from that ``theta`` and ``rho``): the kernel
stops there (``last_gibbs_only``), numpy inverts the matrix, and the next call starts at the
MALA part of that iteration (``first_mala_only``).
"""

import copy

import numpy as np
from scipy.special import gammaln

from sklearn_bayes.privacy._ldp._posterior import (
    JUMP_WORK,
    RHO_GRID,
    _dense_latent,
    _mala_form,
    _mixture_parts,
    _preconditioner,
    _set_bits,
    hybrid_chain,
    jump_lists,
    resolve_mala_steps,
)

__all__ = ["HybridChain", "MAX_BLOCK", "PER_RESPONSE_COMPILED", "hybrid_draws"]

#: Iterations per kernel call when a caller asks for more (bounds the memory of one block).
MAX_BLOCK = 2048
_MAX_RHO_ROWS = 1 << 12  # memoised rho rows (counts below; at most 3 MiB), as _posterior._RhoTerms
#: Issue 28, round T (cost, the same chain up to rounding): where the latent counts are drawn per response (the
#: generator's branch when :func:`~._posterior._dense_latent` is false: ``4 G K > n``, e.g. ``K = 20, eps = 8`` with
#: 1000 users) and the sets need no bit rows, the kernel runs that branch too (``_ldp_gibbs.latent_counts``' own code
#: on the same random numbers).  False restores the Python generator there (round S2's path, bit for bit).
PER_RESPONSE_COMPILED = True


class HybridChain:
    """The chain of :func:`~._posterior.hybrid_chain` (same arguments), drawn ``n`` iterations at a time.

    ``compiled=False`` (private switch, for tests and comparisons) always uses the Python
    generator; ``compiled`` tells which path runs.  ``draw(n)`` returns ``(theta, rho)`` of
    shapes ``(n, K)`` and ``(n,)`` (``rho`` is ``nan`` for a fixed prior).
    """

    def __init__(self, groups, burn, rng, *, prior="hierarchical", theta0=None, mala_steps="auto",
                 max_dense=4_000_000, jumps="auto", latent="mixture", compiled=True):
        self._K = groups.n_categories
        self._rng = rng
        mala_steps = resolve_mala_steps(mala_steps, groups)
        #: a hyperparameter step object (round 12's prior='spike-bulk'): the Python chain on a copy of its state,
        #: with ``visits``, whether ``z = 1_K`` after each iteration
        self.hyper, self.visits = None, []
        if hasattr(prior, "step"):
            prior, compiled = copy.deepcopy(prior), False
            self.hyper = prior
        self.compiled = bool(compiled) and self._setup(groups, burn, prior, theta0, mala_steps, max_dense, jumps,
                                                       latent)
        if not self.compiled:
            self._gen = hybrid_chain(groups, burn, rng, prior=prior, theta0=theta0, mala_steps=mala_steps,
                                     max_dense=max_dense, jumps=jumps, latent=latent)

    # ------------------------------------------------------------------ set-up (as hybrid_chain's)
    def _setup(self, groups, burn, prior, theta0, mala_steps, max_dense, jumps, latent):
        K, G = groups.n_categories, groups.count.size
        if G == 0:
            return False
        self.per_response = not _dense_latent(groups)
        if self.per_response:  # round T: the generator's per-response branch (it ignores `latent` there)
            if not PER_RESPONSE_COMPILED or groups.members_in_bits or _set_bits(groups) is not None:
                return False
            e = np.zeros(G)
            parts = (e, e, e, None, np.zeros(G, dtype=np.int64), np.zeros(G, dtype=np.uint8))
            self.resp = (np.ascontiguousarray(groups.a_ptr, dtype=np.int32),
                         np.ascontiguousarray(groups.a_idx, dtype=np.int32),
                         np.ascontiguousarray(groups.y, dtype=np.int32), np.ascontiguousarray(groups.f_in, dtype=float),
                         np.ascontiguousarray(groups.f_y, dtype=float), np.ascontiguousarray(groups.f_out, dtype=float))
        else:
            if latent != "mixture":
                return False
            parts = _mixture_parts(groups)
            if parts is None:
                return False
        use_mala = mala_steps > 0 and K <= 128 and G * K <= max_dense and not groups.members_in_bits
        if jumps == "auto":
            jumps = True
            per_jump = G + int(groups.a_ptr[-1]) // max(K, 1) + 1
            if K * per_jump > JUMP_WORK:
                return False  # random scan: the Python path
        self.hier = isinstance(prior, str)
        self.groups, self.burn, self.half, self.mala_steps = groups, int(burn), int(burn) // 2, int(mala_steps)
        self.use_mala, self.jumps = use_mala, bool(jumps) and use_mala
        self.prior = np.zeros(K) if self.hier else np.ascontiguousarray(prior, dtype=float)
        self.form = _mala_form(groups) if use_mala else None
        f0, d_in, d_y, inside, y, has_y = parts
        self.mix = (np.ascontiguousarray(groups.count, dtype=np.int64), np.ascontiguousarray(f0, dtype=float),
                    np.ascontiguousarray(d_in, dtype=float), np.ascontiguousarray(d_y, dtype=float),
                    np.zeros((0, K)) if inside is None else np.ascontiguousarray(inside, dtype=float),
                    np.ascontiguousarray(y, dtype=np.int64), np.ascontiguousarray(has_y, dtype=np.uint8))
        N = int(groups.count.sum())
        self.head = gammaln(K * RHO_GRID) - gammaln(K * RHO_GRID + N)
        n_rows = min(_MAX_RHO_ROWS, N + 1) if self.hier else 0
        self.table = np.empty((n_rows, RHO_GRID.size))  # a row is read only once `known` (3 MiB: not zeroed)
        self.known = np.zeros(n_rows, dtype=np.uint8)
        lt = np.log(np.maximum(np.full(K, 1.0 / K) if theta0 is None else np.asarray(theta0, dtype=float), 1e-300))
        self.lt = np.ascontiguousarray(lt - np.logaddexp.reduce(lt))
        self.state = np.array([1.0, np.log(1.0 / K ** (1.0 / 3.0)), 0.0])  # rho, ln h, MALA steps so far
        self.pre = None
        self.it = 0
        if self.use_mala:
            gy, gs, ga, gb, gd, gc, s_ptr, s_idx = self.form
            self.form = (np.ascontiguousarray(gy, dtype=np.int32), np.ascontiguousarray(gs, dtype=np.int32),
                         np.ascontiguousarray(ga, dtype=float), np.ascontiguousarray(gb, dtype=float),
                         np.ascontiguousarray(gd, dtype=float), np.ascontiguousarray(gc, dtype=float),
                         np.ascontiguousarray(s_ptr, dtype=np.int32), np.ascontiguousarray(s_idx, dtype=np.int32))
        else:
            e32, e64 = np.zeros(0, dtype=np.int32), np.zeros(0)
            self.form = (e32, e32, e64, e64, e64, e64, np.zeros(1, dtype=np.int32), e32)
        if self.jumps:
            t_ptr, t_grp, t_w, _, _, t_cat = jump_lists(self.form, K)
            self.lists = (np.ascontiguousarray(t_ptr, dtype=np.int32), np.ascontiguousarray(t_grp, dtype=np.int32),
                          np.ascontiguousarray(t_w, dtype=float), np.ascontiguousarray(t_cat, dtype=np.int32))
        else:
            self.lists = (np.zeros(K + 1, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0),
                          np.zeros(0, dtype=np.int32))
        return True

    # ------------------------------------------------------------------ drawing
    def draw(self, n):
        """The next ``n`` iterations: ``(theta (n, K), rho (n,))``."""
        n = int(n)
        out = np.empty((n, self._K))
        rhos = np.empty(n)
        if not self.compiled:
            for i in range(n):
                out[i], rhos[i] = next(self._gen)
                if self.hyper is not None:
                    self.visits.append(bool(self.hyper.z.all()))
            return out, rhos
        row = 0
        while row < n:
            if self.use_mala and self.pre is None and self.it >= self.half:
                # iteration `it`: its Gibbs part, the preconditioner at that state, its MALA part
                self._run(1, out, rhos, row, last_gibbs_only=True, mala=False)
                pvec = np.full(self._K, self.state[0]) if self.hier else self.prior
                try:
                    self.pre = _preconditioner(self.groups, np.exp(self.lt), float(pvec.mean()))
                except np.linalg.LinAlgError:
                    self.use_mala = self.jumps = False
                row = self._run(1, out, rhos, row, first_mala_only=True, mala=self.use_mala)
                self.it += 1
                continue
            m = min(n - row, MAX_BLOCK)
            if self.use_mala and self.pre is None:
                m = min(m, self.half - self.it)
            row = self._run(m, out, rhos, row, mala=self.use_mala and self.pre is not None)
            self.it += m
        return out, rhos

    def _run(self, n_iter, out, rhos, row, *, mala, first_mala_only=False, last_gibbs_only=False):
        from sklearn_bayes._fast._ldp_hybrid import hybrid_block

        if mala:
            Mx, C, R, diag = self.pre
            Mx, C, R = (np.ascontiguousarray(a, dtype=float) for a in (Mx, C, R))
        else:
            Mx = C = R = np.zeros((0, 0))
            diag = False
        return hybrid_block(self._rng, self.it, int(n_iter), self.burn, first_mala_only, last_gibbs_only, self.lt,
                            self.state, self.hier, self.prior, *self.mix, RHO_GRID, self.head, self.table,
                            self.known, bool(mala), self.mala_steps, *self.form, C, R, Mx, bool(diag),
                            bool(mala and self.jumps), *self.lists, out, rhos, int(row),
                            *((True, *self.resp) if self.per_response else ()))


def hybrid_draws(groups, n_draws, burn, rng, *, prior="hierarchical", theta0=None, mala_steps="auto",
                 max_dense=4_000_000, thin=1, jumps="auto", compiled=True, visits=None):
    """Gibbs sweeps alternated with ``mala_steps`` Metropolis-adjusted Langevin steps on ``theta | rho``.

    Each iteration is (i) one sweep of :func:`~._posterior.gibbs_draws` (latent categories, ``rho``,
    ``theta``), which moves ``rho`` and the sparse categories well but mixes slowly
    when the privacy noise hides most of the information (its autocorrelation is the
    fraction of missing information); (ii) a fresh scale ``S ~ Gamma(K rho)``,
    ``z = ln(S theta)`` (``phi = S theta`` has the prior ``Gamma(rho, 1)`` per
    coordinate, independent of the data given ``theta``) and ``mala_steps`` MALA steps
    on ``z`` given ``rho`` (kernel ``mala_chains``; preconditioned by the inverse of
    the Laplace-type matrix at the end of the first half of the burn-in, step size
    adapted during the burn-in only), which move the well-informed directions fast.
    Both steps leave the posterior of ``(theta, rho)`` invariant.  The MALA step is
    skipped above 128 categories or when the dense likelihood rows would exceed
    ``max_dense`` entries (the preconditioner needs them): pure Gibbs then.  (iii) With
    ``jumps`` (``'auto'``: whenever MALA runs) one independence Metropolis-Hastings jump per
    category from its prior (:func:`~._posterior._coordinate_jumps`; a random scan of fewer categories when
    ``K`` jumps would exceed :data:`~._posterior.JUMP_WORK`): the
    Gibbs and Langevin steps move a category between "nearly empty" and "present" slowly
    (on sparse theta, K = 10, eps = 1, 3000 users: worst-category ESS per 2000 draws 14-47
    without, 133-366 with, at 1.7 times the cost per iteration).

    ``mala_steps='auto'``: 5 with few distinct responses, 10 with many (:func:`~._posterior.resolve_mala_steps`).

    Returns ``(theta draws, rho draws)`` as :func:`~._posterior.gibbs_draws`; with ``thin > 1`` only every
    ``thin``-th of the ``n_draws`` iterations after the burn-in is kept (``ceil(n_draws /
    thin)`` draws; the chain and its random numbers are the same).  The chain runs in blocks
    (:class:`HybridChain`, compiled where it can be; ``compiled=False``, a private switch:
    :func:`~._posterior.hybrid_chain`, the Python generator, whose draws the compiled blocks reproduce up to
    floating-point rounding).

    ``visits``: a list that receives, under a hyperparameter step object (``prior='spike-bulk'``), whether
    ``z = 1_K`` at each kept iteration (aligned with the returned draws).
    """
    K = groups.n_categories
    thin = max(int(thin), 1)
    n_out = -(-n_draws // thin)
    out = np.empty((n_out, K))
    rhos = np.full(n_out, np.nan)
    chain = HybridChain(groups, burn, rng, prior=prior, theta0=theta0, mala_steps=mala_steps,
                        max_dense=max_dense, jumps=jumps, compiled=compiled)
    it = 0
    while it < burn + n_draws:
        m = min(MAX_BLOCK, burn + n_draws - it)
        theta, rho = chain.draw(m)
        idx = np.arange(it, it + m)
        keep = (idx >= burn) & ((idx - burn) % thin == 0)
        out[(idx[keep] - burn) // thin] = theta[keep]
        rhos[(idx[keep] - burn) // thin] = rho[keep]
        it += m
    if visits is not None and chain.hyper is not None:
        visits.extend(chain.visits[burn::thin][:n_out])
    return out, rhos
