"""Exact posterior of a categorical distribution from LDP responses with three-level likelihoods.

Free functions with explicit inputs and outputs (no estimator state):

- :class:`Groups`: the responses as groups of equal likelihood (see ``_fast/_ldp_gibbs.pyx``);
- :func:`gibbs_draws`: data-augmentation Gibbs sampler for ``theta`` under a Dirichlet
  prior ``Dir(rho 1)`` with ``rho`` fixed or learnt (``'hierarchical'``: a log-uniform
  hyperprior on ``[1e-3, 10]`` on a grid of 97 points; see ``RHO_GRID``);
- :func:`ibu`: iterative Bayesian update (EM for the maximum-likelihood ``theta`` of
  the same likelihood), the usual static-protocol estimator, for comparisons.

Hierarchical prior.  ``theta ~ Dir(rho 1_K)`` with ``ln rho`` uniform on the grid.  A
sweep is (i) latent categories ``x_u ~ p(x | y_u, theta)`` (counts ``n``); (ii) ``rho``
from its collapsed posterior ``p(rho | n) ∝ Gamma(K rho) / Gamma(K rho + N) prod_j
Gamma(rho + n_j) / Gamma(rho)`` (``theta`` integrated out, so (ii)-(iii) draw
``(rho, theta) | n`` jointly); (iii) ``theta ~ Dir(rho + n)``.  Gamma variates of
shape ``a = rho + n_j << 1`` underflow to 0 in double precision; they are drawn in log
space, ``ln G(a) = ln G(a + 1) + ln(U) / a``, and normalised with a log-sum-exp.
"""

from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

__all__ = ["Groups", "gibbs_draws", "hybrid_chain", "ibu", "rrrr_groups", "tv_point_estimate", "RHO_GRID"]

#: Grid of the Dirichlet concentration under the hierarchical prior (log-uniform on [1e-3, 10]).
#: The upper end is 10, not 100: when the responses carry little information
#: (K = 10-20, eps = 0.5, T = 500 K) the posterior of rho cannot rule out large values,
#: and a hyperprior reaching 100 (40 % of its mass above rho = 1, i.e. near-uniform
#: theta) shrank theta_ towards uniform: measured TV 0.262 (cap 100) vs 0.219 (cap 10)
#: against SS+IBU 0.260 at K = 20, eps = 0.5, rho = 1 (5 runs, same responses).
RHO_GRID = np.logspace(-3, 1, 97)


@dataclass(frozen=True)
class Groups:
    """Responses grouped by likelihood: ``P(y | x) ∝ f_in [x in A_g] + f_y [x = y_g] + f_out (else)``.

    Attributes
    ----------
    n_categories : int
    a_ptr, a_idx : ndarray of int32
        CSR member lists of the sets ``A_g``, each sorted increasingly (sorted on
        construction if they are not: the sampler's membership tests need it).
    y : ndarray of int32 of shape (G,)
        Special category per group (``-1``: none; never in ``A_g``).
    f_in, f_y, f_out : ndarray of float of shape (G,)
        Likelihood values (ratios matter).
    count : ndarray of int64 of shape (G,)
        Responses per group.
    bits : ndarray of uint8 of shape (G, ceil(K / 8)) or None
        The sets as little-endian bit rows (bit ``x & 7`` of byte ``x >> 3``).  When the
        member lists would be too large (see ``_mechanisms.MAX_CSR_MEMBERS``) the
        groups hold the sets only here: ``a_idx`` is then empty and ``a_ptr`` still gives
        the set sizes (``a_ptr[g + 1] - a_ptr[g]``); the kernels read the members from
        the bits in increasing order, so the draws are the same as with member lists.
    """

    n_categories: int
    a_ptr: np.ndarray
    a_idx: np.ndarray
    y: np.ndarray
    f_in: np.ndarray
    f_y: np.ndarray
    f_out: np.ndarray
    count: np.ndarray
    bits: np.ndarray = None

    @property
    def members_in_bits(self):
        """The members are in ``bits`` only (no CSR member lists)."""
        return self.bits is not None and self.a_idx.size < int(self.a_ptr[-1])

    def __post_init__(self):
        a_ptr = np.asarray(self.a_ptr)
        a_idx = np.asarray(self.a_idx)
        if a_idx.size > 1:
            d = np.diff(a_idx)
            # a decrease where a set continues (not at a boundary between two sets)
            within = np.ones(a_idx.size - 1, dtype=bool)
            ends = a_ptr[1:-1] - 1
            within[ends[(ends >= 0) & (ends < within.size)]] = False
            if np.any((d <= 0) & within):
                rows = np.repeat(np.arange(a_ptr.size - 1), np.diff(a_ptr))
                order = np.lexsort((a_idx, rows))
                object.__setattr__(self, "a_idx", np.ascontiguousarray(a_idx[order], dtype=np.int32))

    @property
    def n_responses(self):
        return int(self.count.sum())

    def likelihood_rows(self):
        """Dense ``L[g, x] = P(y_g | x)`` (``G x K``; for tests and small problems)."""
        G = self.count.size
        L = np.repeat(self.f_out[:, None], self.n_categories, axis=1)
        if self.members_in_bits:
            inside = np.unpackbits(self.bits, axis=1, count=self.n_categories, bitorder="little").astype(bool)
            L[inside] = np.repeat(self.f_in, np.diff(self.a_ptr))
        else:
            rows = np.repeat(np.arange(G), np.diff(self.a_ptr))
            L[rows, self.a_idx] = self.f_in[rows]
        has = self.y >= 0
        L[np.flatnonzero(has), self.y[has]] = self.f_y[has]
        return L


#: Largest ``G x K`` for which the sweep gets the sets as bit rows (a temporary of ``G K`` bytes
#: while building them, ``G K / 8`` bytes kept): O(1) membership tests; above, binary searches.
_MAX_BITS_CELLS = 1 << 26


def _set_bits(groups):
    """The sets ``A_g`` as little-endian bit rows ``(G, ceil(K / 8))`` for the sweep kernel, or ``None``.

    Only for sets large enough to be sampled by rejection (``|A| > 16`` somewhere) and
    while ``G K <= 2^26``; groups that hold their sets as bits give those.
    """
    if groups.bits is not None:
        return groups.bits
    G, K = groups.count.size, groups.n_categories
    sizes = np.diff(groups.a_ptr)
    if G == 0 or G * K > _MAX_BITS_CELLS or not np.any(sizes > 16):
        return None
    dense = np.zeros((G, K), dtype=bool)
    dense[np.repeat(np.arange(G), sizes), groups.a_idx] = True
    return np.packbits(dense, axis=1, bitorder="little")


def _log_dirichlet(rng, a):
    """ln of a Dirichlet(a) draw, exact for shapes far below 1 (no underflow to 0)."""
    g = rng.gamma(a + 1.0)
    with np.errstate(divide="ignore"):
        lg = np.log(g) + np.log(rng.random(a.size)) / a
    m = lg.max()
    return lg - (m + np.log(np.exp(lg - m).sum()))


def _log_gamma(rng, a):
    """ln of a Gamma(a, 1) draw without underflow for a << 1: ln G(a + 1) + ln(U) / a."""
    return float(np.log(rng.gamma(a + 1.0)) + np.log(rng.random()) / a)


def _draw_rho(rng, counts, grid, cache=None):
    """``rho`` from its collapsed posterior on ``grid`` given the latent ``counts`` (module docstring).

    ``cache``: a :class:`_RhoTerms` of ``grid``, which keeps the terms that do not change between
    the iterations of a chain; the log-probabilities are the same floating-point numbers either way
    and the grid point is drawn as :meth:`numpy.random.Generator.choice` draws it (one uniform, the
    normalised cumulative sum, ``searchsorted(side='right')``), so the draws are the same.
    """
    K = counts.size
    N = counts.sum()
    if counts.size and 0 <= counts.min() and counts.max() <= 4 * K + (1 << 14):
        # the distinct counts and their multiplicities as np.unique gives them (ascending), in
        # O(K) instead of a sort of K values (most counts are 0 at large K)
        bc = np.bincount(counts)
        vals = np.flatnonzero(bc)
        mult = bc[vals]
    else:
        vals, mult = np.unique(counts, return_counts=True)
    if cache is None:
        lp = (gammaln(K * grid) - gammaln(K * grid + N)
              + (mult[:, None] * (gammaln(grid[None, :] + vals[:, None]) - gammaln(grid)[None, :])).sum(axis=0))
        p = np.exp(lp - lp.max())
        return grid[rng.choice(grid.size, p=p / p.sum())]
    lp = cache.head(K, N) + (mult[:, None] * cache.rows(vals)).sum(axis=0)
    p = np.exp(lp - lp.max())
    cdf = (p / p.sum()).cumsum()
    cdf /= cdf[-1]
    return grid[int(cdf.searchsorted(rng.random(), side="right"))]


class _RhoTerms:
    """The terms of :func:`_draw_rho` that a chain recomputed every iteration, memoised.

    ``head(K, N) = gammaln(K grid) - gammaln(K grid + N)`` (``N``, the number of responses, is
    fixed along a chain) and the rows ``gammaln(grid + v) - gammaln(grid)`` of the distinct
    counts ``v`` seen so far (the counts of a chain wander in a narrow range).  Each is computed
    by the same numpy operations as in :func:`_draw_rho` without a cache, so the values are
    identical (issue 28, round 4: the hyperparameter draw was a quarter of the iteration's time
    at K = 10-50).
    """

    _MAX_ROWS = 1 << 12  # counts below are memoised (at most 3 MiB); the rare larger ones computed afresh

    def __init__(self, grid):
        self.grid = grid
        self._lg = gammaln(grid)
        self._head = {}
        self._table = np.empty((0, grid.size))  # row v: gammaln(grid + v) - gammaln(grid) once known
        self._known = np.zeros(0, dtype=bool)

    def head(self, K, N):
        key = (int(K), int(N))
        h = self._head.get(key)
        if h is None:
            h = self._head[key] = gammaln(K * self.grid) - gammaln(K * self.grid + N)
        return h

    def rows(self, vals):
        """``gammaln(grid + v) - gammaln(grid)`` for the distinct non-negative counts ``vals``, one row each."""
        grid, lg = self.grid, self._lg
        small = vals < self._MAX_ROWS
        if not small.all():
            out = np.empty((vals.size, grid.size))
            big = vals[~small]
            out[~small] = gammaln(grid[None, :] + big[:, None]) - lg[None, :]
            if small.any():
                out[small] = self.rows(vals[small])
            return out
        top = int(vals.max()) + 1 if vals.size else 0
        if top > self._known.size:
            cap = min(max(top, 2 * self._known.size), self._MAX_ROWS)
            table = np.empty((cap, grid.size))
            table[: self._known.size] = self._table
            known = np.zeros(cap, dtype=bool)
            known[: self._known.size] = self._known
            self._table, self._known = table, known
        new = vals[~self._known[vals]]
        if new.size:
            self._table[new] = gammaln(grid[None, :] + new[:, None]) - lg[None, :]
            self._known[new] = True
        return self._table[vals]


def gibbs_draws(groups, n_draws, burn, rng, *, prior="hierarchical", theta0=None):
    """Draws of ``theta`` (and ``rho``) from the exact posterior given grouped responses.

    Parameters
    ----------
    groups : Groups
    n_draws, burn : int
        Sweeps kept and discarded.
    rng : numpy.random.Generator
    prior : 'hierarchical' or ndarray of shape (K,)
        Learnt symmetric concentration, or a fixed Dirichlet concentration vector.
    theta0 : ndarray of shape (K,), optional
        Start (default: uniform).

    Returns
    -------
    theta : ndarray of shape (n_draws, K)
    rho : ndarray of shape (n_draws,)
        The symmetric concentration of each draw (``nan`` for a fixed vector prior).
    """
    from sklearn_bayes._fast._ldp_gibbs import latent_counts

    K = groups.n_categories
    theta = np.full(K, 1.0 / K) if theta0 is None else np.asarray(theta0, dtype=float).copy()
    hier = isinstance(prior, str)
    counts = np.zeros(K, dtype=np.int64)
    stamp = np.full(K, -1, dtype=np.int32)
    bits = _set_bits(groups)
    out = np.empty((n_draws, K))
    rhos = np.full(n_draws, np.nan)
    rho = 1.0
    rho_terms = _RhoTerms(RHO_GRID)
    for it in range(burn + n_draws):
        latent_counts(rng, theta, groups.a_ptr, groups.a_idx, groups.y, groups.f_in, groups.f_y,
                      groups.f_out, groups.count, counts, stamp, bits)
        if hier:
            rho = _draw_rho(rng, counts, RHO_GRID, rho_terms)
            a = rho + counts
        else:
            a = prior + counts
        theta = np.exp(_log_dirichlet(rng, a))
        if it >= burn:
            out[it - burn] = theta
            if hier:
                rhos[it - burn] = rho
    return out, rhos


def ibu(groups, n_iter=10000, tol=1e-10, theta0=None):
    """Iterative Bayesian update: EM for the maximum-likelihood ``theta``.

    ``O(K + sum_g |A_g|)`` per iteration (kernel ``expected_counts``); stops when the
    L1 change of ``theta`` is below ``tol``.
    """
    from sklearn_bayes._fast._ldp_gibbs import expected_counts

    K = groups.n_categories
    theta = np.full(K, 1.0 / K) if theta0 is None else np.asarray(theta0, dtype=float).copy()
    n = max(groups.n_responses, 1)
    e = np.zeros(K)
    for _ in range(n_iter):
        expected_counts(theta, groups.a_ptr, groups.a_idx, groups.y, groups.f_in, groups.f_y, groups.f_out,
                        groups.count, e, groups.bits if groups.members_in_bits else None)
        new = e / n
        new /= new.sum()
        if np.abs(new - theta).sum() < tol:
            return new
        theta = new
    return theta


def rrrr_groups(K, gy, gs, ga, gb, gd, gc, s_ptr, s_idx):
    """:class:`Groups` from the RRRR grouped likelihood ``h_g = a_g + b_g theta_y + d_g theta(S_g)``.

    (The form of :meth:`~._store.ResponseStore.rrrr_structure`: ``f_out = a``,
    ``f_y = a + b``, ``f_in = a + d`` on the subset ``S_g``, none when ``gs < 0``.)
    """
    G = gy.size
    sizes = np.where(gs >= 0, np.diff(s_ptr)[np.maximum(gs, 0)] if s_ptr.size > 1 else 0, 0)
    a_ptr = np.zeros(G + 1, dtype=np.int32)
    np.cumsum(sizes, out=a_ptr[1:])
    parts = [s_idx[s_ptr[s]:s_ptr[s + 1]] for s in gs[gs >= 0]] if np.any(gs >= 0) else []
    a_idx = np.concatenate(parts).astype(np.int32) if parts else np.zeros(0, dtype=np.int32)
    return Groups(int(K), a_ptr, a_idx, gy.astype(np.int32), np.ascontiguousarray(ga + gd),
                  np.ascontiguousarray(ga + gb), np.ascontiguousarray(ga, dtype=float),
                  np.rint(gc).astype(np.int64))


def _mala_form(groups):
    """The groups in the form of the MALA kernel of ``_fast/_ldp.pyx`` (``h = a + b theta_y + d theta(S)``)."""
    G = groups.count.size
    has_y = groups.y >= 0
    gy = np.where(has_y, groups.y, 0).astype(np.int32)
    gb = np.where(has_y, groups.f_y - groups.f_out, 0.0)
    return (gy, np.arange(G, dtype=np.int32), np.ascontiguousarray(groups.f_out, dtype=float),
            np.ascontiguousarray(gb), np.ascontiguousarray(groups.f_in - groups.f_out),
            groups.count.astype(float), groups.a_ptr, groups.a_idx)


def _preconditioner(groups, theta, rho):
    """``(M, C, R, diag)``: the Laplace-type matrix ``J F J + diag(phi + rho)`` at ``theta`` and its inverse.

    ``F = sum_g c_g L_g L_g^T / h_g^2`` is the observed information of ``theta``,
    ``J = diag(theta) - theta theta^T`` the Jacobian of the softmax (``phi`` is taken
    with ``sum(phi) = K rho``, its prior mean).  Above 64 categories only the diagonal
    of the inverse is used (``O(K)`` per proposal).
    """
    K = groups.n_categories
    L = groups.likelihood_rows()
    h = L @ theta
    # above eps ~ 355 h^2 overflows and F's terms are 0 (the preconditioner is then the prior's curvature alone):
    # the same values, without numpy's overflow warning reaching the user
    with np.errstate(over="ignore", invalid="ignore"):
        F = (L * (groups.count / np.maximum(h, 1e-300) ** 2)[:, None]).T @ L
    J = np.diag(theta) - np.outer(theta, theta)
    Mx = J @ F @ J + np.diag(K * rho * theta + rho)
    Mx = 0.5 * (Mx + Mx.T)
    C = np.linalg.inv(Mx)
    C = 0.5 * (C + C.T)
    if K > 64:
        c = np.diag(C).copy()
        return np.diag(1.0 / c), np.diag(c), np.diag(np.sqrt(c)), True
    return Mx, C, np.linalg.cholesky(C), False


#: MALA steps per iteration of the hybrid chain (``mala_steps='auto'``): ``MALA_STEPS_FEW`` with few
#: distinct responses (:func:`_dense_latent`: the latent step is cheap and the chain already stops at
#: its floor of 200 kept draws), ``MALA_STEPS_MANY`` with a latent category per user (many distinct
#: responses: the latent step and the jumps cost a pass over the users, and more Langevin moves per
#: pass pay; issue 28, round 5: on three dev cells, geometric theta, K = 40-50, eps = 1,
#: 10,000-20,000 distinct subsets, 10 steps instead of 5 raised the worst category's ESS per CPU
#: second by 20-31 %).
MALA_STEPS_FEW, MALA_STEPS_MANY = 5, 10


def resolve_mala_steps(mala_steps, groups):
    """``mala_steps``, with ``'auto'`` resolved by :data:`MALA_STEPS_FEW` / :data:`MALA_STEPS_MANY`."""
    if isinstance(mala_steps, str):
        if mala_steps != "auto":
            raise ValueError("mala_steps must be an int or 'auto'.")
        return MALA_STEPS_FEW if _dense_latent(groups) else MALA_STEPS_MANY
    return int(mala_steps)


#: Work budget of the coordinate jumps per iteration of the hybrid chain, in visits of groups: a
#: jump on category ``k`` costs at most ``O(G + deg_k)`` (kernel ``coordinate_jumps_incremental``); when
#: ``K`` jumps would exceed it, a random scan of ``JUMP_WORK // (G + sum |A_g| / K)`` categories.
#: ``2^20`` since issue 28's round 5 (``2^18`` before): most jumps are now decided by bounds in
#: ``O(deg_k)``, and on three dev cells with 10,000-20,000 distinct subsets (geometric theta, K = 40-50,
#: eps = 1) the larger scan raised the worst category's ESS per CPU second by 2 %, 17 % and 43 %.
JUMP_WORK = 1 << 20


def hybrid_chain(groups, burn, rng, *, prior="hierarchical", theta0=None, mala_steps="auto", max_dense=4_000_000,
                 jumps="auto", latent="mixture"):
    """The chain of :func:`~._hybrid.hybrid_draws` as an endless generator of ``(theta, rho)``, one per iteration.

    ``burn`` only sets the adaptation (the preconditioner at iteration ``burn // 2``, the step
    size adapted before iteration ``burn``); the caller discards the burn-in.  ``rho`` is
    ``nan`` for a fixed prior.  Lets a caller extend the chain until its diagnostics pass.
    This generator is the reference of the compiled blocks of :class:`~._hybrid.HybridChain`
    (which the samplers use) and runs them where the kernel does not apply.

    ``latent``: how the latent counts are drawn when there are few distinct responses
    (:func:`_dense_latent`): ``'mixture'`` (:func:`_mixture_latent_counts`, when its weights are
    non-negative) or ``'rows'`` (:func:`_dense_latent_counts`, round 3's draw); the same
    conditional law, different random numbers.

    ``prior`` may also be an object with a ``step(rng, counts) -> rho_v`` method and a ``rho``
    attribute (:class:`~._sparse_prior.SpikeBulkChoice`, issue 28 round 12): it draws the
    hyperparameters given the latent counts in place of ``rho``'s grid draw, then ``theta ~ Dir(rho_v + n)``;
    its ``jumps(rng, Z, form)``, if any, runs after the coordinate jumps of the MALA phase.
    """
    from sklearn_bayes._fast._ldp_mala import mala_chains, mala_logpost
    from sklearn_bayes._fast._ldp_gibbs import latent_counts

    K = groups.n_categories
    G = groups.count.size
    # a hyperparameter step object (round 12's ``_sparse_prior.SpikeBulkChoice``) draws rho_v itself
    hyper = prior if hasattr(prior, "step") else None
    hier = isinstance(prior, str)
    mala_steps = resolve_mala_steps(mala_steps, groups)
    # the preconditioner needs the dense K x K information matrix: MALA only up to 128 categories
    use_mala = mala_steps > 0 and K <= 128 and G * K <= max_dense and G > 0 and not groups.members_in_bits
    form = _mala_form(groups) if use_mala else None
    n_jumps = None  # one jump per category, in order
    if jumps == "auto":
        jumps = True
        per_jump = G + int(groups.a_ptr[-1]) // max(K, 1) + 1
        if K * per_jump > JUMP_WORK:
            # random scan: as many jumps as JUMP_WORK visits of groups allow (at least one)
            n_jumps = max(1, JUMP_WORK // per_jump)
    jumps = bool(jumps) and use_mala
    lists = jump_lists(form, K) if jumps else None
    lt = np.log(np.maximum(np.full(K, 1.0 / K) if theta0 is None else np.asarray(theta0, dtype=float), 1e-300))
    lt -= np.logaddexp.reduce(lt)
    counts = np.zeros(K, dtype=np.int64)
    stamp = np.full(K, -1, dtype=np.int32)
    bits = _set_bits(groups)
    # few distinct responses per user: latent counts per group from dense likelihood rows
    dense_rows = mixture = None
    if _dense_latent(groups):
        mixture = _mixture_parts(groups) if latent == "mixture" else None
        if mixture is None:
            dense_rows = groups.likelihood_rows()
    rho = 1.0
    rho_terms = _RhoTerms(RHO_GRID)
    pre = None
    log_h = np.log(1.0 / K ** (1.0 / 3.0))
    it_mala = 0
    acc = np.zeros(K)
    none = np.zeros((0, K))
    half = burn // 2
    it = -1
    while True:
        it += 1
        if mixture is not None:
            counts = _mixture_latent_counts(rng, mixture, np.exp(lt), groups.count)
        elif dense_rows is None:
            latent_counts(rng, np.exp(lt), groups.a_ptr, groups.a_idx, groups.y, groups.f_in, groups.f_y,
                          groups.f_out, groups.count, counts, stamp, bits)
        else:
            counts = _dense_latent_counts(rng, dense_rows, np.exp(lt), groups.count)
        if hyper is not None:
            pvec = hyper.step(rng, counts)
            rho = hyper.rho
            a = pvec + counts
        elif hier:
            rho = _draw_rho(rng, counts, RHO_GRID, rho_terms)
            a = rho + counts
            pvec = np.full(K, rho)
        else:
            a = prior + counts
            pvec = np.asarray(prior, dtype=float)
        lt = _log_dirichlet(rng, a)
        if use_mala and it >= half:
            if pre is None:
                try:
                    pre = _preconditioner(groups, np.exp(lt), float(pvec.mean()))
                except np.linalg.LinAlgError:
                    use_mala = False
            if use_mala:
                Mx, C, R, diag = pre
                z = lt + _log_gamma(rng, float(pvec.sum()))
                Z = z[None, :].copy()
                lp0, g0 = mala_logpost(z, *form, pvec)
                lp = np.array([lp0])
                grad = g0[None, :].copy()
                log_h = mala_chains(rng, Z, lp, grad, *form, pvec, C, R, Mx, float(log_h), it_mala,
                                    int(mala_steps), it < burn, acc, 0, none, 0, none, -1, diag)[0]
                it_mala += mala_steps
                if jumps:
                    _coordinate_jumps(rng, Z[0], float(lp[0]), form, pvec, n_jumps, lists)
                if hyper is not None and hasattr(hyper, "jumps"):
                    hyper.jumps(rng, Z[0], form)
                lt = Z[0] - np.logaddexp.reduce(Z[0])
        yield np.exp(lt), (rho if hier or hyper is not None else np.nan)


#: Largest ``G K`` for which the hybrid chain draws the latent counts per group from dense
#: likelihood rows (:func:`_dense_latent_counts`) instead of per response.
DENSE_LATENT_MAX_CELLS = 1 << 16


def _dense_latent(groups):
    """Draw the latent counts per group (``O(G K)``) rather than per response (``O(n)``)?

    When ``4 G K <= n`` and ``G K <= DENSE_LATENT_MAX_CELLS`` (measured: a multinomial cell costs
    about 60 ns, a response in the kernel ``latent_counts`` about 17 ns).
    """
    G, K = groups.count.size, groups.n_categories
    return G * K <= DENSE_LATENT_MAX_CELLS and 4 * G * K <= groups.n_responses


def _dense_latent_counts(rng, L, theta, count):
    """The latent category counts: ``sum_g Multinomial(c_g, L[g] theta / (L[g] . theta))``.

    The same conditional distribution as the kernel ``latent_counts`` (the users of a group share
    ``p(x | y_g, theta)``), drawn with one vectorised multinomial per group.
    """
    P = L * theta
    P /= P.sum(axis=1, keepdims=True)
    return rng.multinomial(count, P).sum(axis=0)


def _mixture_parts(groups):
    """What :func:`_mixture_latent_counts` reads, or ``None`` when a mixture weight could be negative.

    ``(f_out, f_in - f_out, f_y - f_out, inside, y, has_y)``: ``inside`` the sets as a dense
    ``G x K`` 0/1 matrix (``None`` when no set is left, e.g. GRR), ``y`` the special categories
    with ``-1`` replaced by 0 and ``has_y`` where they exist.  A set of one member in a group
    without a special category (SS(1), i.e. GRR) becomes that group's special category
    (``[x in {j}] = [x = j]``), so GRR needs no ``G x K`` draw.
    """
    f0 = np.asarray(groups.f_out, dtype=float)
    sizes = np.diff(groups.a_ptr)
    has_y = groups.y >= 0
    d_y = np.where(has_y, groups.f_y - f0, 0.0)
    d_in = np.where(sizes > 0, groups.f_in - f0, 0.0)
    if np.any(f0 < 0) or np.any(d_y < 0) or np.any(d_in < 0):
        return None
    y = np.where(has_y, groups.y, 0)
    if not groups.members_in_bits:
        single = (sizes == 1) & ~has_y
        if np.any(single):
            y = np.where(single, groups.a_idx[np.minimum(groups.a_ptr[:-1], max(groups.a_idx.size - 1, 0))], y)
            d_y = np.where(single, d_in, d_y)
            d_in = np.where(single, 0.0, d_in)
            has_y = has_y | single
            sizes = np.where(single, 0, sizes)
    inside = None
    if np.any(sizes > 0):
        inside = np.zeros((sizes.size, groups.n_categories))
        if groups.members_in_bits:
            inside[:] = np.unpackbits(groups.bits, axis=1, count=groups.n_categories, bitorder="little")
        else:
            full = np.diff(groups.a_ptr)
            rows = np.repeat(np.arange(full.size), full)
            keep = np.repeat(sizes > 0, full)
            inside[rows[keep], groups.a_idx[keep]] = 1.0
    return f0, d_in, d_y, inside, y.astype(np.intp), has_y


def _mixture_latent_counts(rng, parts, theta, count):
    """The latent counts of :func:`_dense_latent_counts` drawn through the mixture form of ``p(x | y_g, theta)``.

    ``L_g(x) theta_x = f_out theta_x + (f_in - f_out) [x in A_g] theta_x + (f_y - f_out) [x = y_g]
    theta_x``: a user of group ``g`` has her category drawn from ``theta`` (weight ``f_out``), from
    ``theta`` restricted to ``A_g`` (weight ``(f_in - f_out) theta(A_g)``) or equal to ``y_g``
    (weight ``(f_y - f_out) theta_{y_g}``), the weights normalised by ``h_g = L_g . theta``.  So the
    counts are: ``(m0_g, m1_g, m2_g) ~ Multinomial(c_g, weights_g)`` per group, then one
    ``Multinomial(sum_g m0_g, theta)``, ``Multinomial(m1_g, theta | A_g)`` for the groups with
    ``m1_g > 0``, and ``m2_g`` at ``y_g``: the same conditional law as the per-group multinomials
    over the ``K`` categories, in ``O(G + K)`` for sets that are empty (GRR) instead of
    ``O(G K)`` (issue 28, round 4: the latent step was 60 % of the iteration at K = 50, GRR).
    """
    f0, d_in, d_y, inside, y, has_y = parts
    G = f0.size
    W = np.empty((G, 3))
    W[:, 0] = f0
    W[:, 1] = 0.0 if inside is None else d_in * (inside @ theta)
    W[:, 2] = d_y * theta[y]
    W /= W.sum(axis=1, keepdims=True)
    m = rng.multinomial(count, W)
    N = rng.multinomial(int(m[:, 0].sum()), theta / theta.sum())
    if inside is not None:
        rows = np.flatnonzero(m[:, 1])
        if rows.size:
            P = inside[rows] * theta
            P /= P.sum(axis=1, keepdims=True)
            N += rng.multinomial(m[rows, 1], P).sum(axis=0)
    N += np.bincount(y[has_y], weights=m[has_y, 2], minlength=theta.size).astype(np.int64)
    return N


def jump_lists(form, K):
    """The transposed membership lists of :func:`_mala_form`'s groups, for the incremental jumps.

    Returns ``(t_ptr, t_grp, t_w, h_scratch, w_scratch, t_cat)``: category ``k`` enters ``u_g = b_g
    phi[y_g] + d_g phi(S_g)`` with weight ``t_w[j]`` in the groups ``t_grp[j]``, ``t_ptr[k] <= j <
    t_ptr[k + 1]``, two work arrays of ``G`` zeros (see :func:`_coordinate_jumps`) and ``t_cat[j]
    = k`` (the category of entry ``j``).  (In
    :func:`_mala_form` group ``g`` has its own set, ``S_g = s_idx[s_ptr[g]:s_ptr[g + 1]]``.)
    """
    gy, gs, ga, gb, gd, gc, s_ptr, s_idx = form
    G = ga.size
    rows = np.repeat(np.arange(G), np.diff(s_ptr))
    has_y = gb != 0
    cats = np.concatenate([s_idx.astype(np.int64), gy[has_y].astype(np.int64)])
    rows = np.concatenate([rows, np.flatnonzero(has_y)])
    w = np.concatenate([gd[rows[: rows.size - int(has_y.sum())]], gb[has_y]])
    order = np.argsort(cats, kind="stable")
    t_ptr = np.zeros(K + 1, dtype=np.int32)
    np.cumsum(np.bincount(cats, minlength=K), out=t_ptr[1:])
    return (t_ptr, rows[order].astype(np.int32), np.ascontiguousarray(w[order], dtype=float), np.zeros(G),
            np.zeros(G), np.repeat(np.arange(K, dtype=np.int32), np.diff(t_ptr)))


def _coordinate_jumps(rng, z, lp, form, pvec, n_jumps=None, lists=None):
    """Independence Metropolis-Hastings steps on coordinates of ``z = ln phi`` (in place).

    The proposal for ``z_k`` is its prior, ``ln Gamma(pvec_k, 1)`` (drawn without underflow as in
    :func:`_log_gamma`), so the acceptance ratio is the likelihood ratio
    ``exp(ln pi(z') - ln pi(z) - (prior_k(z'_k) - prior_k(z_k)))`` with ``prior_k(u) = pvec_k u
    - e^u``; ``ln pi`` is the MALA target (kernel ``mala_logpost``).  It lets a category jump
    between "nearly empty" and "present", the move that the Gibbs sweep and the Langevin steps
    make slowly (the sparse-theta chains of issue 28).  Each step leaves ``pi(z | rho)``
    invariant.  ``n_jumps=None``: one step per coordinate in order; otherwise steps on
    ``n_jumps`` distinct coordinates drawn uniformly at random (random scan, independent of the
    state).  The proposals do not depend on the state, so they (and the acceptance uniforms) are
    drawn first and the steps run in a compiled kernel (issue 28, round 3: the Python loop of
    ``K`` kernel calls was a third of the chain's time at ``K = 50``): ``coordinate_jumps`` (a
    full evaluation of the target per step), or, with ``lists`` (:func:`jump_lists`), ``coordinate_jumps_incremental`` (``O(G + deg_k)`` per step: only the
    groups that hold ``k`` change besides the normaliser).  Returns ``ln pi`` of the final ``z``.
    """
    from sklearn_bayes._fast._ldp_mala import coordinate_jumps, coordinate_jumps_incremental

    a_all = np.ascontiguousarray(pvec, dtype=float)
    K = a_all.size
    if n_jumps is None or n_jumps >= K:
        order = np.arange(K, dtype=np.int32)
    else:
        order = rng.choice(K, size=int(n_jumps), replace=False).astype(np.int32)
    a = a_all[order]
    g = rng.gamma(a + 1.0)
    with np.errstate(divide="ignore"):
        props = np.log(g) + np.log(rng.random(a.size)) / a
        log_u = np.log(rng.random(a.size))
    if lists is None:
        return coordinate_jumps(z, float(lp), props, log_u, *form, a_all, order)
    t_ptr, t_grp, t_w, h_scratch, w_scratch, t_cat = lists
    gy, gs, ga, gb, gd, gc, s_ptr, s_idx = form
    # u_g = sum of t_w exp(z_k) over the group's entries, computed in the kernel (u0=None)
    return coordinate_jumps_incremental(z, float(lp), props, log_u, order, ga, gc, None, t_ptr, t_grp, t_w, a_all,
                                        h_scratch, w_scratch, t_cat)


def tv_point_estimate(draws):
    """Bayes estimate of ``theta`` for the TV (L1) loss on the simplex, from posterior draws.

    Minimising ``E sum_k |t_k - theta_k|`` subject to ``sum_k t_k = 1``, ``t >= 0``: the
    derivative of ``E|t_k - theta_k|`` is ``2 F_k(t_k) - 1`` (``F_k`` the marginal
    posterior CDF), so at the optimum every coordinate is the marginal quantile at one
    common level ``tau`` (the Lagrange condition), ``t_k = Q_k(tau)``, with ``tau``
    chosen so that ``sum_k Q_k(tau) = 1``.  ``tau = 1/2`` (the coordinate-wise
    medians) when those happen to sum to 1; when the posterior thinks many categories
    nearly empty the medians sum to less and ``tau > 1/2``.  The quantiles are the
    linearly interpolated empirical ones: with the columns sorted, ``Q(tau)`` interpolates
    between rows ``i`` and ``i + 1`` at ``tau (n - 1) = i + w``, the same ``i`` for every
    category, so ``sum_k Q_k(tau) = (1 - w) T_i + w T_{i+1}`` with ``T`` the sums of the sorted
    rows (non-decreasing).  ``tau`` is the smallest level whose sum reaches 1: the first row
    ``j`` with ``T_j >= 1`` and ``w = (1 - T_{j-1}) / (T_j - T_{j-1})`` on the segment before it
    (``tau = 0`` when ``T_0 >= 1``, ``tau = 1`` when no row reaches 1).  Before issue 28's round 7
    ``tau`` was found by bisection to ``1e-12``: the same ``tau`` within that tolerance (plus the
    rounding of the sums over the slope), ``theta_`` within about ``1e-12 (n - 1)`` times the
    largest gap between two consecutive sorted draws.
    """
    S = np.sort(np.asarray(draws, dtype=float), axis=0)
    n = S.shape[0]
    if n == 1:
        return S[0] / S[0].sum()
    T = S.sum(axis=1)
    j = int(np.searchsorted(T, 1.0, side="left"))
    if j == 0:
        t = S[0]
    elif j == n:
        t = S[n - 1]
    else:
        w = (1.0 - T[j - 1]) / (T[j] - T[j - 1])
        t = (1 - w) * S[j - 1] + w * S[j]
    return t / t.sum()
