"""The empirical-Bayes decoder of the static mechanisms (``decoder='eb'``; ``'auto'`` for ``K >= 64``, or by choice).

Every static mechanism here (subset selection SS(k), GRR = SS(1), OUE) reports a set, and a
user supports category ``v`` with probability ``pi_v = q + (p - q) theta_v`` whatever the
other categories (``p``: when ``x = v``; ``q``: otherwise).  The users are independent, so the
support count ``c_v`` is exactly ``Binomial(n, pi_v)``: an exact marginal likelihood of every
``theta_v``.  The decoder

1. estimates the distribution ``G`` of the values ``theta_v`` across categories by its
   nonparametric maximum likelihood (Kiefer-Wolfowitz NPMLE: EM for the weights of a grid
   of atoms, :func:`npmle_weights`),
2. returns the posterior means ``E[theta_v | c_v]`` under ``G`` conditioned on ``sum_v theta_v = 1``
   by one exponential tilt of ``G`` (:func:`tilted_means`; round 14: their plain sum is within
   0.1-0.7 % of 1 on the median run, and the tilt lowers the TV by 0.3-2.2 % on the dev cells, between
   -0.7 % and 2.7 % on held-out ones, where dividing by that sum scaled every category alike;
   ``decoder='eb-rescale'`` keeps the division, :func:`eb_estimate`),
3. and gives every category a confidence interval of ``pi_v`` on the feasible ``[q, p]`` mapped to ``theta_v``
   (:func:`binomial_intervals`): since round 21 Feldman and Cousins' unified interval near ``q`` and ``p``
   (one-sided there, so a category of probability exactly 0 is covered at 95 %, not at the 97.5 % of a
   clipped two-sided interval) and Wilson's score interval away from them (``INTERVAL_RULE``); round 28z's
   rule (Wilson's, clipped; the constrained likelihood-ratio set where Wilson's lies wholly outside
   ``[q, p]``) is ``INTERVAL_RULE = 'wilson-lr'``.

Why: on multi-modal and long-tailed ``theta`` with many categories the symmetric Dirichlet
prior of the exact posterior is misspecified and its estimate follows the noise (issue 28:
median TV 1.11-1.40x the best static decoder); ``G`` estimated from ``K`` categories adapts to
the shape.  With few categories (``K < 64``) ``G`` is poorly estimated and the hierarchical
Dirichlet posterior wins (the paper grid), so ``decoder='auto'`` keeps the posterior there
(from 32 categories on: unless :func:`cv_prior_gain` finds that ``G`` predicts held-out categories' counts better than
the posterior's own prior family by at least ``AUTO_CV_MARGIN`` nats; round 8: near-uniform
``theta`` beyond the hyperprior's concentration cap).
"""

import numpy as np

from sklearn_bayes.privacy._ldp._mechanisms import ss_support_probabilities

__all__ = ["AUTO_CV_FOLDS", "AUTO_CV_MARGIN", "AUTO_CV_MIN_CATEGORIES", "AUTO_EB_MIN_CATEGORIES",
           "COMPILED_EM_MAX_CATEGORIES", "EB_FAST_NUMERICS", "EM_ATOM_FLOOR", "INTERVAL_RULE", "INTERVAL_RULES", "TILT_COMPILED",
           "UNIQUE_ROWS",
           "binomial_intervals", "count_rows", "nonzero_columns",
           "cv_prior_gain", "dirichlet_marginal_weights", "eb_estimate", "npmle_weights", "support_counts",
           "support_probabilities", "tilted_means"]

#: ``decoder='auto'`` uses the empirical-Bayes decoder from this many categories on.
AUTO_EB_MIN_CATEGORIES = 64
#: From this many categories up to that, ``'auto'`` uses the decoder when its cross-validated log marginal
#: likelihood beats the symmetric Dirichlet's by at least ``AUTO_CV_MARGIN`` nats (``ln 20``: "strong"
#: evidence on Kass and Raftery's scale, rounded), with categories split into ``AUTO_CV_FOLDS`` folds
#: (``v mod AUTO_CV_FOLDS``).  Below 32 the posterior always (round 8's dev cells: never chosen at
#: K = 6 and 10, 1.7 % worse than the posterior at K = 30; and its 6-20 ms would double the cheapest fits).
AUTO_CV_MIN_CATEGORIES = 32
AUTO_CV_MARGIN = 3.0
AUTO_CV_FOLDS = 5
#: EM of the NPMLE: at most this many iterations, stopped when the log-likelihood rises by less than the tolerance.
NPMLE_MAX_ITER = 2000
NPMLE_TOL = 1e-4
#: Grid of atoms: at most this many points spaced evenly in the arcsine scale of ``pi`` (a quarter
#: of the binomial's standard deviation apart when that fits), plus the clipped unbiased estimates
#: and a geometric grid near 0.
MAX_GRID = 400
#: The tilt's root: at most this many safeguarded Newton steps, stopped when ``|sum - 1|`` is below the tolerance
#: (then the means are divided by their sum, a change of at most that tolerance).
TILT_MAX_ITER = 200
TILT_TOL = 1e-12
#: ``|lambda|`` is kept below this (atoms ``>= 1e-6`` apart in the geometric part of the grid: a tilt of ``1e12``
#: moves ``1e6`` nats between neighbours, far beyond the ~745 of the double's range).
TILT_MAX = 1e12


def support_probabilities(client):
    """``(p, q)`` of a static mechanism (:class:`~._mechanisms.SetResponseMechanism`)."""
    if client.kind == "oue":
        return 0.5, 1.0 / (float(np.exp(min(client.epsilon, 700.0))) + 1.0)
    return ss_support_probabilities(client.n_categories, client.epsilon, client.subset_size)


def support_counts(store):
    """How many stored responses support each category (the packed sets, unpacked by chunks)."""
    packed, counts = store.set_counts()
    K = store.n_categories
    out = np.zeros(K)
    step = max(1, (1 << 22) // max(K, 1))
    for lo in range(0, counts.size, step):
        bits = np.unpackbits(packed[lo : lo + step], axis=1, count=K)
        out += counts[lo : lo + step].astype(float) @ bits
    return out


_GEOM_ATOMS = np.geomspace(1e-6, 1, 40)  # round T: formed once (the same 40 numbers at every call)


def _grid(f, n, p, q):
    lo, hi = np.arcsin(np.sqrt(q)), np.arcsin(np.sqrt(p))
    m = int(min(MAX_GRID, max(50, np.ceil((hi - lo) * 8 * np.sqrt(n)))))
    g = (np.sin(np.linspace(lo, hi, m + 1)) ** 2 - q) / (p - q)
    return np.unique(np.clip(np.concatenate([[0.0, 1.0], f, g, _GEOM_ATOMS]), 0.0, 1.0))


def _likelihood(c, n, p, q, u):
    """``L[v, j] = P(c_v | theta_v = u_j) / max_j`` (binomial, scaled per row)."""
    pi = q + (p - q) * u
    nc = n - c
    with np.errstate(divide="ignore", invalid="ignore"):
        ll, b = c[:, None] * np.log(pi)[None, :], nc[:, None] * np.log1p(-pi)[None, :]
    # 0 log 0 = 0: with q = 0 (GRR above eps ~ 37 + ln K) or p = 1, a count of 0 (or n) at an atom with
    # pi = 0 (or 1) was 0 * -inf = NaN, which made theta_ uniform; the other entries are the same products.
    # Round 18b: the same numbers as ``np.where(c == 0, 0, a) + np.where(n - c == 0, 0, b)``, formed in place.
    ll[c == 0] = 0.0
    b[nc == 0] = 0.0
    ll += b
    ll -= ll.max(axis=1, keepdims=True)
    return np.exp(ll, out=ll)


def npmle_weights(L, max_iter=NPMLE_MAX_ITER, tol=NPMLE_TOL, n_atoms=None, compiled=False, mult=None):
    """EM for the NPMLE weights of the atoms: ``w <- w * mean_v(L[v] / (L[v] . w))``.

    EM never decreases the log-likelihood ``sum_v ln(L[v] . w)``; it stops when one iteration
    raises it by less than ``tol`` (the NPMLE's EM is slow near the optimum, where the posterior
    means no longer move).  Returns ``(w, n_iter, converged)``.  ``n_atoms`` (round G3): the EM starts
    from ``1 / n_atoms`` on every column (default: ``1 / G``), so that ``L`` with the all-zero columns of a
    larger grid removed runs the same iterations as the larger grid (a zero column's weight is 0 after
    the first step and adds exactly 0 to every sum).  ``compiled`` (round G3, the stacked decoder's): the same
    iteration in one compiled loop (:func:`sklearn_bayes._fast._ldp_em.npmle_em`; the same iterates up to rounding).
    ``mult`` (round S): row ``v`` of ``L`` stands for ``mult[v]`` equal rows (:func:`count_rows`); the sums over
    categories are then weighted sums over the distinct rows (``w <- w * (L' (mult / m)) / sum(mult)``, the
    log-likelihood ``mult . ln m``): the same iterates as the EM on the repeated rows, up to rounding.
    """
    K, G = L.shape
    w = np.full(G, 1.0 / (G if n_atoms is None else n_atoms))
    if mult is not None:
        return _npmle_weights_weighted(L, np.asarray(mult, dtype=float), w, max_iter, tol, compiled)
    if compiled:
        from sklearn_bayes._fast._ldp_em import npmle_em

        n_iter, converged = npmle_em(np.ascontiguousarray(L, dtype=float), w, int(max_iter), float(tol))
        return w, int(n_iter), bool(converged)
    m = L @ w
    ll = np.log(m).sum()
    # round 18b: the same operations in the same order (``w * (L.T @ (1 / m)) / K``, ``L @ w``, ``log(m).sum()``:
    # the same BLAS calls on the same arrays) into buffers allocated once, so the same numbers bit for bit
    LT, r, g, lm = L.T, np.empty(K), np.empty(G), np.empty(K)
    for it in range(1, int(max_iter) + 1):
        np.divide(1.0, m, out=r)
        np.matmul(LT, r, out=g)
        np.multiply(w, g, out=w)
        np.divide(w, K, out=w)
        np.matmul(L, w, out=m)
        new = np.add.reduce(np.log(m, out=lm))  # what ndarray.sum calls, without its Python wrapper
        if new - ll < tol:
            return w, it, True
        ll = new
    return w, int(max_iter), False


def _npmle_weights_weighted(L, mult, w, max_iter, tol, compiled):
    """:func:`npmle_weights` on distinct rows ``L`` of multiplicities ``mult`` (round S), from the start ``w``."""
    if EM_ATOM_FLOOR > 0:  # round S: atoms no row reaches above the floor left out of the EM (weight 0)
        sel = (L > EM_ATOM_FLOOR).any(axis=0)
        if sel.any() and not sel.all():  # (every row reaches 1 at its mode: some atom is always kept)
            ws, n_iter, converged = _npmle_weights_weighted(L[:, sel], mult, w[sel], max_iter, tol, compiled)
            w[:] = 0.0
            w[sel] = ws
            return w, n_iter, converged
    if compiled:
        from sklearn_bayes._fast._ldp_em import npmle_em_weighted

        n_iter, converged = npmle_em_weighted(np.ascontiguousarray(L, dtype=float), mult, w, int(max_iter), float(tol))
        return w, int(n_iter), bool(converged)
    total = mult.sum()
    m = L @ w
    ll = mult @ np.log(m)
    for it in range(1, int(max_iter) + 1):
        w *= L.T @ (mult / m)
        w /= total
        m = L @ w
        new = mult @ np.log(m)
        if new - ll < tol:
            return w, it, True
        ll = new
    return w, int(max_iter), False


#: Round S: the weighted EM (the ``UNIQUE_ROWS`` path) leaves out the atoms where every row's likelihood, scaled to
#: a maximum of 1 per row, is at most this; their weight is 0.  In the full EM such an atom's weight falls after one
#: step below ``G * EM_ATOM_FLOOR / min_v m_v`` times its start, and its terms in every sum ``m_v = L[v] . w`` are
#: ``1e-30`` of the atoms' total weight, about ``1e-14`` of one unit in the last place of ``m_v``: at ``1e-30``
#: ``theta_`` came out bit for bit the same on round S's 342 checked fits, with 41 % fewer atoms in the EM at
#: ``K = 64, eps = 8, n = 1000`` (167 of 284).  0: every atom with a nonzero likelihood.
EM_ATOM_FLOOR = 1e-30


#: Round S (issue 28 goal 3): the likelihood rows of the NPMLE, the ``rho`` search and the tilts formed once per
#: distinct support count (:func:`count_rows`) instead of once per category: a row depends on the category's count
#: only, and at ``eps = 8`` the ``K`` categories' counts take 8-60 distinct values when ``n <= 5000``.  The EMs run on
#: the distinct rows with their multiplicities, the posterior moments are formed per distinct row and copied to its
#: categories.  The same estimate up to rounding; False restores round P1's code path bit for bit.  Part of the fast
#: path (``EB_FAST_NUMERICS``, ``_stacking.STACK_FAST_NUMERICS``).
UNIQUE_ROWS = True


def count_rows(c):
    """``(values, inverse, mult)``: the distinct support counts (sorted), the index of every category's count in
    ``values`` (``values[inverse] == c``) and how many categories share each (as floats, summing to ``c.size``)."""
    values, inverse, mult = np.unique(np.asarray(c, dtype=float), return_inverse=True, return_counts=True)
    return values, inverse.reshape(-1), mult.astype(float)


def dirichlet_marginal_weights(u, K, rho, known=None, return_table=False):
    """Weights of the atoms ``u`` (sorted) under ``Beta(rho, (K - 1) rho)``, one row per ``rho``.

    ``Beta(rho, (K - 1) rho)`` is the marginal of one coordinate of ``Dir(rho 1_K)``; atom ``j``
    gets the probability of the cell between the midpoints to its neighbours (0 and 1 at the
    ends), so every row sums to 1.  ``known``: ``(x, F)`` from an earlier call's ``return_table`` with the same ``K``
    and ``rho`` (round 16): the CDF ``F`` at the sorted points ``x`` is reused where a midpoint is one of them and
    ``betainc`` runs only at the others -- the same elementwise function of the same numbers, so the weights are the
    same bit for bit (``'auto'`` from 32 to 63 categories evaluates it on two grids that share most midpoints).
    With ``return_table`` returns ``(weights, (x, F))``, ``x`` the sorted union of the midpoints and ``known``'s.
    """
    from scipy.special import betainc

    rho = np.atleast_1d(np.asarray(rho, dtype=float))[:, None]
    mid = np.concatenate([[0.0], 0.5 * (u[1:] + u[:-1]), [1.0]])
    if known is None:
        x = np.unique(mid)
        F = betainc(rho, (K - 1) * rho, x[None, :])
    else:
        x0, F0 = known
        new = np.setdiff1d(mid, x0)
        x = np.concatenate([x0, new])
        F = np.concatenate([F0, betainc(rho, (K - 1) * rho, new[None, :])], axis=1)
        order = np.argsort(x, kind="stable")
        x, F = x[order], F[:, order]
    weights = np.diff(F[:, np.searchsorted(x, mid)], axis=1)
    return (weights, (x, F)) if return_table else weights


def cv_prior_gain(c, n, p, q, rho_grid, folds=AUTO_CV_FOLDS, return_table=False):
    """Cross-validated log marginal likelihood of the support counts: the NPMLE ``G`` minus the
    symmetric Dirichlet family (``Beta(rho, (K - 1) rho)`` marginals, ``rho`` on ``rho_grid``).

    Category ``v`` is in fold ``v mod folds``.  For every fold both priors are fitted by maximum
    marginal likelihood on the other folds' counts (the NPMLE's EM; the best ``rho`` of the grid)
    and scored by ``sum_v ln P(c_v)`` of the held-out counts on the same grid of atoms (the
    binomial likelihood rows scaled alike, so the scaling cancels in the difference).  Both
    products treat the categories as independent.  Positive: ``G`` predicts unseen categories'
    counts better.  ``-inf`` when the NPMLE gives a held-out count zero probability; NaN never
    (returns ``-inf`` then too).  With ``return_table`` returns ``(gain, table)``, ``table`` the Beta CDF table of
    :func:`dirichlet_marginal_weights` (round 16: the stacked decoder reuses it).
    """
    c = np.asarray(c, dtype=float)
    K = c.size
    u = _grid((c / n - q) / (p - q), n, p, q)
    L = _likelihood(c, n, p, q, u)
    WB, table = dirichlet_marginal_weights(u, K, rho_grid, return_table=True)
    fold = np.arange(K) % folds
    s_eb = s_dir = 0.0
    with np.errstate(divide="ignore"):
        for k in range(min(folds, K)):
            train, test = fold != k, fold == k
            w = npmle_weights(L[train])[0]
            s_eb += np.log(L[test] @ w).sum()
            best = np.argmax(np.log(L[train] @ WB.T).sum(axis=0))
            s_dir += np.log(L[test] @ WB[best]).sum()
    gain = s_eb - s_dir
    gain = float(gain) if not np.isnan(gain) else -np.inf
    return (gain, table) if return_table else gain


def _tilted(logP, u, lam):
    """Posterior means and variances of every row under the tilt ``lam`` (rows of ``logP``: ``ln L + ln w``)."""
    P = logP + lam * u[None, :]
    P -= P.max(axis=1, keepdims=True)
    np.exp(P, out=P)  # round 18b: in place, the same numbers
    P /= P.sum(axis=1, keepdims=True)
    m = P @ u
    return m, np.maximum(P @ (u * u) - m * m, 0.0)


#: :func:`tilted_means` with ``linear=True``: a row whose tilted mass ``L[v] . (w e^{lambda u - c})`` is below this is
#: recomputed in log space (the products below ``2^-1022`` it may have lost could then matter).
TILT_LINEAR_FLOOR = 1e-250


def _tilted_linear(L, logw, u, U3, lam, logP_fn):
    """:func:`_tilted` from the likelihood itself (round G3): ``P[v] ∝ L[v] * w * e^{lambda u}``, so the row sums and
    the first two moments are one product ``L @ (v[:, None] * [1, u, u^2])`` with ``v = e^{ln w + lambda u - c}``
    (``c`` its maximum: no overflow), instead of an ``exp`` of every entry.  Rows whose sum is below
    ``TILT_LINEAR_FLOOR`` go through :func:`_tilted` (``logP_fn()`` gives its ``ln L + ln w``)."""
    a = logw + lam * u
    a -= a.max()
    M = L @ (np.exp(a)[:, None] * U3)
    s = M[:, 0]
    low = ~(s > TILT_LINEAR_FLOOR)
    with np.errstate(divide="ignore", invalid="ignore"):
        m = M[:, 1] / s
        var = np.maximum(M[:, 2] / s - m * m, 0.0)
    if low.any():
        m[low], var[low] = _tilted(logP_fn()[low], u, lam)
    return m, var


#: Issue 28, round T: :func:`tilted_means` with ``linear=True`` computes a Newton step's moments in one compiled call
#: (``_fast._ldp_tilt.tilt_moments``: the same operations, the product by scipy's BLAS ``dgemm``, ``exp`` from the C
#: library): the same estimate up to rounding.  False: the numpy operations of rounds G3-S (bit for bit).
TILT_COMPILED = True


def _compiled_moments(L, logw, u, rows, logP_fn):
    """:func:`_tilted_linear`'s moments (copied to the categories through ``rows``) from ``_fast._ldp_tilt``; rows below
    ``TILT_LINEAR_FLOOR`` through :func:`_tilted` as there."""
    from sklearn_bayes._fast._ldp_tilt import tilt_moments

    L = np.ascontiguousarray(L, dtype=float)
    V, G = L.shape
    logw_c, u_c = np.ascontiguousarray(logw, dtype=float), np.ascontiguousarray(u, dtype=float)
    idx = np.arange(V, dtype=np.int64) if rows is None else np.ascontiguousarray(rows, dtype=np.int64)
    work, low = np.empty(3 * G + 3 * V), np.empty(V, dtype=np.uint8)

    def moments(lam):
        m, var = np.empty(idx.size), np.empty(idx.size)
        if tilt_moments(L, logw_c, u_c, float(lam), idx, m, var, work, low, TILT_LINEAR_FLOOR):
            lo = low.astype(bool)
            mr, vr = _tilted(logP_fn()[lo], u, lam)
            pos = np.cumsum(lo) - 1  # row v's place among the low rows
            sel = lo[idx]
            m[sel], var[sel] = mr[pos[idx[sel]]], vr[pos[idx[sel]]]
        return m, var

    return moments


def tilted_means(L, w, u, max_iter=TILT_MAX_ITER, tol=TILT_TOL, logL=None, linear=False, rows=None):
    """Posterior means under ``G`` conditioned on ``sum_v theta_v = 1``: one exponential tilt.

    Independent priors ``G`` conditioned on the sum (Gibbs conditioning, the saddlepoint) give
    every ``theta_v`` the posterior under ``G_lambda(du) ∝ e^{lambda u} G(du)``: row ``v`` of
    ``L * w`` times ``e^{lambda u_j}``, with one ``lambda`` solving ``S(lambda) = sum_v
    E_lambda[theta_v | c_v] = 1``.  ``S`` is nondecreasing (``S'`` is the sum of the posterior
    variances), so the root is found by Newton steps kept inside a bracket (bisection when a
    step leaves it; the bracket grows by doubling until ``S - 1`` changes sign).  Returns
    ``(means, lambda, converged)``; ``lambda = 0`` when the untilted sum is 1.  When 1 lies
    outside ``S``'s range (every row's support above or below it) the means are those of the
    bracket's end, ``converged`` False.  The means are divided by their sum at the end (a change
    of at most ``tol``), so they sum to 1 up to rounding.  ``logL``: ``np.log(L)`` when the caller has it (the
    stacked decoder tilts three priors on one ``L``; the same numbers, computed once).  ``linear`` (round G3, the
    stacked decoder's): every step's moments by one matrix product with ``L`` (:func:`_tilted_linear`) instead of an
    ``exp`` of every entry; the same numbers up to rounding.  ``rows`` (round S): ``L`` holds distinct rows and
    category ``v``'s is ``L[rows[v]]`` (:func:`count_rows`' ``inverse``); the moments are formed per distinct row and
    copied, the sums taken over the categories as without it.  With ``linear`` and ``TILT_COMPILED`` (round T) a step's
    moments come from one compiled call (``_fast._ldp_tilt``; the same operations up to rounding, 0.5 of the time at
    ``K = 64, eps = 8``).
    """
    with np.errstate(divide="ignore"):
        logw = np.log(w)
    cache = []

    def logP_fn():
        if not cache:
            with np.errstate(divide="ignore"):
                cache.append((np.log(L) if logL is None else logL) + logw[None, :])
        return cache[0]

    compiled = bool(linear and TILT_COMPILED and L.ndim == 2 and L.shape[0] and L.shape[1])
    if compiled:  # round T: one compiled call a step, the moments per category
        moments = _compiled_moments(L, logw, u, rows, logP_fn)
    elif linear:  # round G3: the moments from L itself (the same numbers up to rounding), see _tilted_linear
        U3 = np.column_stack([np.ones(u.size), u, u * u])

        def moments(lam):
            return _tilted_linear(L, logw, u, U3, lam, logP_fn)
    else:
        def moments(lam):
            return _tilted(logP_fn(), u, lam)

    if rows is not None and not compiled:  # round S: per distinct row, then to every category
        per_row = moments

        def moments(lam):
            m, var = per_row(lam)
            return m[rows], var[rows]

    m, var = moments(0.0)
    lam, f, lo, hi, step = 0.0, m.sum() - 1.0, -np.inf, np.inf, 1.0
    converged = abs(f) <= tol
    for _ in range(int(max_iter) * (not converged)):
        if f < 0:
            lo = lam
        else:
            hi = lam
        d = var.sum()
        new = lam - f / d if d > 0 else np.nan
        if not lo < new < hi:  # outside the bracket (or no slope): bisect, or double towards the open end
            if np.isfinite(lo) and np.isfinite(hi):
                new = 0.5 * (lo + hi)
            else:
                step = 2.0 * max(step, abs(lam))
                new = lam + (step if f < 0 else -step)
        new = min(max(new, -TILT_MAX), TILT_MAX)
        if new == lam or (np.isfinite(lo) and np.isfinite(hi) and hi - lo <= 4 * np.spacing(max(abs(lo), abs(hi)))):
            break
        lam = new
        m, var = moments(lam)
        f = m.sum() - 1.0
        if not np.isfinite(f):  # not reached on a valid grid (|lambda| <= TILT_MAX); guarded all the same
            m, lam = _tilted(logP_fn(), u, 0.0)[0], 0.0
            m = m if rows is None else m[rows]
            break
        if abs(f) <= tol:
            converged = True
            break
    s = m.sum()
    return (m / s if s > 0 else np.full(m.size, 1.0 / m.size)), float(lam), bool(converged)


#: Round G3: the decoder's cheaper numerics (``'eb'``, and the stacked decoder's ``'eb'`` row): the atoms where every
#: row's likelihood is exactly 0 dropped (:func:`nonzero_columns`), the EM compiled up to
#: ``COMPILED_EM_MAX_CATEGORIES`` categories, the tilt's moments by one product with ``L``
#: (``tilted_means(linear=True)``).  The same estimate up to rounding; False restores round 18b's numbers bit for bit.
EB_FAST_NUMERICS = True
#: The compiled EM (``npmle_weights(compiled=True)``) up to this many categories: at ``K = 64`` the numpy loop's calls
#: are half an iteration's time; at ``K = 1000`` the products dominate and numpy's BLAS and vectorised division were 5 %
#: faster.
COMPILED_EM_MAX_CATEGORIES = 512


def nonzero_columns(L, u):
    """``(L[:, keep], u[keep], keep)``, ``keep`` the atoms where some row's likelihood is not exactly 0 (``keep`` None
    when that is every atom).

    A column of zeros adds exactly 0 to every sum of the EM, the ``rho`` search and the tilts (its EM weight is 0 after
    one step, its posterior weight 0), so dropping it changes only the order of the other terms' sums.  Round G3: at
    ``eps = 8`` 17-61 % of the common grid's atoms lie beyond every category's likelihood (the binomial rows are sharp
    and most of the arcsine grid is above the largest frequency).
    """
    keep = L.any(axis=0)
    if keep.all():
        return L, u, None
    return L[:, keep], u[keep], keep


def eb_estimate(c, n, p, q, sum_to_one="tilt", fast=None, tol=NPMLE_TOL, stats=None):
    """The empirical-Bayes estimate from the support counts ``c`` of ``n`` responses.

    Returns ``(theta, info)``: ``theta`` the posterior means under the NPMLE ``G``, made to sum
    to 1 by the exponential tilt of ``G`` (``sum_to_one='tilt'``, :func:`tilted_means`; the
    default since round 14) or by dividing them by their sum (``'rescale'``: ``decoder='eb-rescale'``,
    the estimate of rounds 1-13); ``info`` a dict with ``n_iter``, ``converged`` (the EM's),
    ``n_atoms`` and, for the tilt, ``tilt`` (its ``lambda``) and ``tilt_converged``.  ``fast`` (round G3; None:
    ``EB_FAST_NUMERICS``): the cheaper numerics, the same estimate up to rounding.  ``tol``: the EM's tolerance.
    ``stats`` (round RT): a dict that receives ``atoms_used``, the atoms the EM ran on (read by the stack's route).
    """
    c = np.asarray(c, dtype=float)
    K = c.size
    tilt = sum_to_one == "tilt"
    fast = EB_FAST_NUMERICS if fast is None else bool(fast)
    if n == 0:
        extra = dict(tilt=0.0, tilt_converged=True) if tilt else {}
        return np.full(K, 1.0 / K), dict(n_iter=0, converged=True, n_atoms=0, **extra)
    f = (c / n - q) / (p - q)
    u = _grid(f, n, p, q)
    rows = None
    if fast and UNIQUE_ROWS:  # round S: one row per distinct count
        cu, rows, mult = count_rows(c)
        L = _likelihood(cu, n, p, q, u)
    else:
        L = _likelihood(c, n, p, q, u)
    n_u = u.size
    if fast:
        L, u = nonzero_columns(L, u)[:2]
        if rows is not None:
            w, n_iter, converged = npmle_weights(L, tol=tol, n_atoms=n_u, compiled=L.shape[0] <= COMPILED_EM_MAX_CATEGORIES,
                                                 mult=mult)
        else:
            w, n_iter, converged = npmle_weights(L, tol=tol, n_atoms=n_u, compiled=K <= COMPILED_EM_MAX_CATEGORIES)
    else:
        w, n_iter, converged = npmle_weights(L, tol=tol)
    if stats is not None:
        stats["atoms_used"] = int(L.shape[1])
    info = dict(n_iter=n_iter, converged=converged, n_atoms=int(n_u))
    if tilt:
        theta, lam, ok = tilted_means(L, w, u, linear=fast, rows=rows)
        return theta, dict(info, tilt=lam, tilt_converged=ok)
    post = L * w[None, :]
    mean = (post @ u) / post.sum(axis=1)
    mean = mean if rows is None else mean[rows]
    s = mean.sum()
    theta = mean / s if s > 0 else np.full(K, 1.0 / K)
    return theta, info


#: Bisection steps of the constrained likelihood-ratio bound (:func:`binomial_intervals`), in theta's units.
LR_BISECTION_STEPS = 64


def _loglik_drop(c, n, p, q, t, at_p):
    """``l(pi_m) - l(pi)`` of ``Binomial(n, pi)`` at the count ``c``, ``pi = q + t (p - q)``, ``pi_m = p`` (``at_p``) or
    ``q``; through ``log1p`` of ``d = pi_m - pi`` formed from ``t`` (exact when ``p - q`` is tiny)."""
    pi = q + t * (p - q)
    d = (1.0 - t) * (p - q) if at_p else -t * (p - q)
    return c * np.log1p(d / pi) + (n - c) * np.log1p(-d / (1.0 - pi))


def _lr_bound(c, n, p, q, crit, at_p):
    """The far end, in theta, of the likelihood-ratio set ``{theta in [0, 1]: 2 (l(pi_m) - l(pi)) <= crit}`` where the
    constrained MLE ``pi_m`` is ``p`` (``at_p``: the set is ``[t, 1]``, returns ``t``) or ``q`` (``[0, t]``)."""
    far = np.full(c.size, 0.0 if at_p else 1.0)
    inside = 2.0 * _loglik_drop(c, n, p, q, far, at_p) <= crit
    near, far = np.full(c.size, 1.0 if at_p else 0.0), far  # near: in the set; far: outside unless ``inside``
    for _ in range(LR_BISECTION_STEPS):
        mid = 0.5 * (near + far)
        ok = 2.0 * _loglik_drop(c, n, p, q, mid, at_p) <= crit
        near, far = np.where(ok, mid, near), np.where(ok, far, mid)
    return np.where(inside, 0.0 if at_p else 1.0, near)


def _wilson_lr_intervals(c, n, p, q, level):
    """Round 28z's rule (``'wilson-lr'``): Wilson's interval for ``pi_v``, mapped to ``theta_v`` and clipped to [0, 1];
    where that leaves zero width, the constrained likelihood-ratio interval.

    Parameters
    ----------
    c : array-like of shape (K,)
        Support counts, ``c_v ~ Binomial(n, pi_v)``, ``pi_v = q + (p - q) theta_v``.
    n : int
        Number of responses.
    p, q : float
        Support probabilities, ``0 < q < p < 1``.
    level : float
        Confidence level in (0, 1).

    Returns
    -------
    interval : ndarray of shape (K, 2)
        Lower and upper bounds, ``0 <= lower < upper <= 1`` when ``n > 0`` (``[0, 1]`` when ``n = 0``).

    Notes
    -----
    With ``z`` the normal ``(1 + level) / 2`` quantile and ``pi_hat = c / n``, Wilson's interval of ``pi`` is
    ``(pi_hat + z^2/(2n) -+ z sqrt(pi_hat (1 - pi_hat)/n + z^2/(4n^2))) / (1 + z^2/n)``, and
    ``theta = (pi - q) / (p - q)``, clipped to [0, 1].  Only ``pi in [q, p]`` is feasible.  When Wilson's interval
    lies wholly above ``p`` (below ``q``) the clipped interval is ``[1, 1]`` (``[0, 0]``): a claim of certainty
    the count does not give.  There (round 28z) the interval is instead the likelihood-ratio set restricted to the
    feasible values, ``{pi in [q, p]: 2 (l(pi_m) - l(pi)) <= z^2}``, ``l`` the binomial log-likelihood and ``pi_m``
    its maximiser on ``[q, p]`` (``p`` above, ``q`` below): ``[theta_l, 1]`` (``[0, theta_u]``), the asymptotic
    form of Feldman and Cousins' ordering by the likelihood ratio to the best feasible value.  It contains
    ``pi_m`` and, ``l`` being continuous, a neighbourhood of it in ``[q, p]``: its width is positive.  Its bound is
    found by bisection in ``theta`` (``LR_BISECTION_STEPS``), keeping the end inside the set.  Intervals that
    meet ``[q, p]`` with positive width are Wilson's, unchanged.
    """
    from scipy.stats import norm

    c = np.asarray(c, dtype=float)
    if n == 0:
        return np.column_stack([np.zeros(c.size), np.ones(c.size)])
    z = float(norm.ppf(0.5 + level / 2))
    ph = c / n
    centre = (ph + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(ph * (1 - ph) / n + z * z / (4 * n * n))
    lo = (centre - half - q) / (p - q)
    hi = (centre + half - q) / (p - q)
    above, below = lo >= 1.0, hi <= 0.0  # Wilson's interval outside the feasible [q, p]: [1, 1] or [0, 0] once clipped
    lo, hi = np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        if above.any():
            lo[above], hi[above] = _lr_bound(c[above], n, p, q, z * z, True), 1.0
        if below.any():
            lo[below], hi[below] = 0.0, _lr_bound(c[below], n, p, q, z * z, False)
    return np.column_stack([lo, hi])


#: The empirical-Bayes route's interval rule (``credible_interval``, :func:`binomial_intervals`): ``'fc-wilson'`` (round
#: 21, the default: Feldman and Cousins' unified intervals near ``q`` and ``p``, Wilson's where the belt is the central
#: interval), ``'fc'`` (the unified intervals everywhere) or ``'wilson-lr'`` (round 28z: Wilson's interval, the
#: constrained likelihood-ratio set where Wilson's lies outside ``[q, p]``).
INTERVAL_RULE = "fc-wilson"
INTERVAL_RULES = ("wilson-lr", "fc", "fc-wilson")
#: ``'fc'``: points of the belt's grid of the standardised mean on ``[0, min(z, W / 2)]`` (the rest is exact: the
#: central interval in the middle, the mirror image at the upper end), bisection steps of its half-width, and the
#: feasible width ``W`` (in standard deviations) below which the interval is all of ``[0, 1]``.
FC_GRID = 2049
FC_BISECTION_STEPS = 60
FC_MIN_WIDTH = 0.1


def _fc_ends(m, s, W):
    """Ends ``(x1, x2)`` of ``{x: t(x; m) <= s^2}`` for ``x ~ N(m, 1)``, ``m in [0, W]``, ``t`` the likelihood-ratio
    statistic to the best feasible mean ``clip(x, 0, W)`` (``-inf`` at ``m = 0``, ``+inf`` at ``m = W``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        x1 = np.where(s <= m, m - s, (m * m - s * s) / (2 * m))
        r = W - m
        x2 = np.where(s <= r, m + s, m + (r * r + s * s) / (2 * r))
    return x1, x2


def _fc_belt(W, level):
    """Feldman-Cousins belt of the mean ``m in [0, W]`` of ``N(m, 1)`` at ``level``: ``(m, x1, x2)`` on a grid of
    ``[0, W]``, the acceptance region of ``m`` being ``[x1, x2]`` (nondecreasing in ``m``)."""
    from scipy.special import ndtr
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + level / 2))
    h = min(z, 0.5 * W)
    m = np.linspace(0.0, h, FC_GRID)
    lo, hi = np.zeros(m.size), np.full(m.size, z)  # P(s = z) >= level (the region holds m -+ z), P(0) = 0
    for _ in range(FC_BISECTION_STEPS):
        s = 0.5 * (lo + hi)
        x1, x2 = _fc_ends(m, s, W)
        ok = ndtr(x2 - m) - ndtr(x1 - m) >= level
        lo, hi = np.where(ok, lo, s), np.where(ok, s, hi)
    x1, x2 = _fc_ends(m, hi, W)
    if W > 2 * h:  # the middle: the central interval m -+ z (a line: its two ends suffice)
        m, x1, x2 = np.r_[m, W - h], np.r_[x1, W - h - z], np.r_[x2, W - h + z]
    # the upper end is the mirror image (x -> W - x, m -> W - m) of the lower one
    mm = np.r_[m, W - m[::-1]]
    x1, x2 = np.r_[x1, W - x2[::-1]], np.r_[x2, W - x1[::-1]]
    keep = np.r_[True, np.diff(mm) > 0]
    return mm[keep], np.maximum.accumulate(x1[keep]), np.maximum.accumulate(x2[keep])


def _fc_invert(x, W, level):
    """``{m in [0, W]: x1(m) <= x <= x2(m)}`` for every observed ``x``: ``(lower, upper)``, linear between the grid's
    points; beyond the first finite ``x1`` (last finite ``x2``) the ends follow ``x1 ~ -s^2 / (2 m)`` near ``m = 0``
    (the mirror at ``W``), so they are positive (below ``W``) for every finite ``x``."""
    m, x1, x2 = _fc_belt(W, level)
    f1, f2 = np.isfinite(x1), np.isfinite(x2)
    m1, a1 = m[f1], x1[f1]
    m2, a2 = m[f2], x2[f2]
    upper = np.interp(x, a1, m1)
    lower = np.interp(x, a2, m2)
    with np.errstate(divide="ignore", invalid="ignore"):
        upper = np.where(x < a1[0], m1[0] * a1[0] / np.minimum(x, a1[0]), upper)
        lower = np.where(x > a2[-1], W - (W - m2[-1]) * (W - a2[-1]) / (W - np.maximum(x, a2[-1])), lower)
    return np.clip(lower, 0.0, W), np.clip(upper, 0.0, W)


def _fc_intervals(c, n, p, q, level, interior_wilson=False):
    """Round 21's rule (``'fc'``): Feldman-Cousins unified intervals of ``pi_v`` on ``[q, p]``, mapped to ``theta_v``.

    In the variance-stabilised scale ``phi = arcsin sqrt(pi)`` Anscombe's ``phi_hat = arcsin sqrt((c + 3/8) / (n + 3/4))``
    is close to ``N(phi, 1 / (4 n + 2))``; standardised, ``x = (phi_hat - a) / sd`` has mean ``m = (phi - a) / sd`` in
    ``[0, W]`` (``a = arcsin sqrt q``, ``W = (arcsin sqrt p - a) / sd``, ``sd = 1 / (2 sqrt(n + 1/2))``).  Round 21 chose
    Anscombe's form over the plain ``c / n`` on the exact binomial coverage alone (no benchmark cell): equal where
    ``n q`` is in the hundreds, and at ``n q = 0.66`` (GRR, ``K = 64``, ``eps = 8``, ``n = 2000``) its coverage within
    six standard deviations of ``theta = 0`` is 0.909-0.988 (mean 0.953) against the plain form's 0.753-0.987 (0.920).  One belt serves every category
    of a fit (:func:`_fc_belt`), inverted at each ``x`` (:func:`_fc_invert`), and ``m`` is mapped back by
    ``theta = sin(m sd) sin(2 a + m sd) / (sin(b - a) sin(b + a))`` (``sin^2 u - sin^2 v = sin(u - v) sin(u + v)``: no
    cancellation when ``p - q`` is small).  ``[0, 1]`` when ``W < FC_MIN_WIDTH``.  ``interior_wilson`` (rule
    ``'fc-wilson'``): where the belt's interval is the central ``x -+ z`` (``2 z <= x <= W - 2 z``: both ends at least
    ``z`` from the feasible ends, where the ordering no longer matters) Wilson's interval instead, as ``'wilson-lr'``.
    """
    c = np.asarray(c, dtype=float)
    a, b = np.arcsin(np.sqrt(q)), np.arcsin(np.sqrt(p))
    sd = 0.5 / np.sqrt(n + 0.5)
    W = (b - a) / sd
    if not W >= FC_MIN_WIDTH:
        return np.column_stack([np.zeros(c.size), np.ones(c.size)])
    x = (np.arcsin(np.sqrt(np.clip((c + 0.375) / (n + 0.75), 0.0, 1.0))) - a) / sd
    lm, um = _fc_invert(x, W, level)
    den = np.sin(b - a) * np.sin(b + a)

    def theta(m):
        t = np.clip(np.sin(m * sd) * np.sin(2 * a + m * sd) / den, 0.0, 1.0)
        return np.where(m >= W, 1.0, np.where(m <= 0, 0.0, t))

    out = np.column_stack([theta(lm), theta(um)])
    if interior_wilson:
        from scipy.stats import norm

        z = float(norm.ppf(0.5 + level / 2))
        mid = (x >= 2 * z) & (x <= W - 2 * z)  # where the belt gives the central x -+ z: both ends in [z, W - z]
        if mid.any():
            out[mid] = _wilson_lr_intervals(c[mid], n, p, q, level)
    return out


def binomial_intervals(c, n, p, q, level, rule=None):
    """Interval of every ``theta_v`` at ``level`` from its support count, by ``rule`` (default ``INTERVAL_RULE``).

    Parameters
    ----------
    c : array-like of shape (K,)
        Support counts, ``c_v ~ Binomial(n, pi_v)``, ``pi_v = q + (p - q) theta_v``.
    n : int
        Number of responses.
    p, q : float
        Support probabilities, ``0 < q < p < 1``.
    level : float
        Confidence level in (0, 1).
    rule : {'fc-wilson', 'fc', 'wilson-lr'} or None, default=None
        ``'fc-wilson'`` (round 21's default): Feldman and Cousins' unified intervals, except Wilson's where the
        belt's interval is the central one (``2 z <= x <= W - 2 z`` in the Notes' units); ``'fc'``: the unified
        intervals everywhere; ``'wilson-lr'``: round 28z's (Wilson's interval of ``pi_v``, mapped and clipped; the
        constrained likelihood-ratio set where Wilson's lies outside ``[q, p]``).  None: the module's
        ``INTERVAL_RULE``.

    Returns
    -------
    interval : ndarray of shape (K, 2)
        Lower and upper bounds, ``0 <= lower < upper <= 1`` when ``n > 0`` (``[0, 1]`` when ``n = 0``).

    Notes
    -----
    ``'wilson-lr'``: see :func:`_wilson_lr_intervals`.  Near ``theta_v = 0`` its intervals cannot miss from below, so
    they cover at about the one-sided 97.5 % there (round 28z's over-covering cells).

    ``'fc'`` and ``'fc-wilson'``: a Neyman belt with Feldman and Cousins' ordering (Phys. Rev. D 57, 3873, 1998).  With ``x`` the
    standardised ``arcsin sqrt(c / n)`` and ``m in [0, W]`` its mean (see :func:`_fc_intervals`), the acceptance region
    of ``m`` holds the ``x`` of largest likelihood ratio ``R(x | m) = phi(x - m) / phi(x - clip(x, 0, W))`` up to
    probability ``level``.  ``-2 ln R`` is ``(x - m)^2`` for ``x in [0, W]``, ``m (m - 2 x)`` below and
    ``(W - m)(2 x - W - m)`` above: it decreases then increases in ``x``, so the region is ``[x1(m), x2(m)]`` with
    ``-2 ln R = s(m)^2`` at both ends, ``s`` found by bisection.  For ``m in [z, W - z]`` it is ``m -+ z`` exactly
    (the region lies inside ``[0, W]``, where ``-2 ln R = (x - m)^2``), so the belt is computed only on ``[0, z]``
    and mirrored at ``W``.  The interval is ``{m: x1(m) <= x <= x2(m)}``: two-sided 95 % away from the ends, one-sided
    at them (at ``m = 0`` the region is ``(-inf, z_level]``, so a truth of 0 is covered with probability ``level``,
    not ``(1 + level) / 2``), never empty (``x1 <= x2`` are nondecreasing) and of positive width.  When ``W`` is
    below ``FC_MIN_WIDTH`` the count says nothing about ``theta``: ``[0, 1]``.  The normal approximation of
    ``arcsin sqrt(c / n)`` is the only approximation: the exact binomial coverage is checked in the tests.
    ``'fc-wilson'`` replaces the central ``x -+ z`` by Wilson's interval where both ends are at least ``z`` inside
    ``[0, W]``: there the ordering no longer acts, and Wilson's shape covered 0.003 more than the arcsine one on
    round 21's over-dispersed near-uniform cell.  Round 21 (``bench_adaptive_ldp.py --general --fc-intervals``): the
    95 % intervals cover 0.932-0.951 on the 10 empirical-Bayes cells of the general table (``'wilson-lr'``
    0.932-0.967), 0.941-0.960 on the 31 of the fresh groups 13-18 (0.949-0.974, five above 0.97) and 0.944-0.954 on
    the held-out ``FRESH_21`` (0.956-0.971); a category of probability 0 is covered at about 0.95.
    """
    rule = INTERVAL_RULE if rule is None else rule
    if rule not in INTERVAL_RULES:
        raise ValueError(f"rule must be one of {INTERVAL_RULES}, got {rule!r}.")
    c = np.asarray(c, dtype=float)
    if n == 0:
        return np.column_stack([np.zeros(c.size), np.ones(c.size)])
    if rule in ("fc", "fc-wilson"):
        return _fc_intervals(c, n, p, q, level, interior_wilson=rule == "fc-wilson")
    return _wilson_lr_intervals(c, n, p, q, level)
