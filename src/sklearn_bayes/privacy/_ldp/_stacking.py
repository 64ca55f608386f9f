"""The stacked decoder of the static mechanisms (``decoder='eb-stack'``; ``'auto'`` where it used ``'eb'``, round 15).

Five candidate estimates of ``theta`` from the support counts ``c`` (:mod:`._empirical_bayes`):

* ``'eb'``: the empirical-Bayes posterior means under the NPMLE ``G``, tilted to sum to 1 (round 14; the
  previous default, ``decoder='eb'``);
* ``'smooth'`` and ``'dir'``: the same under the smoother priors ``(1 - a) G + a B`` with ``a = 0.25`` and ``1``,
  ``B`` the atoms' weights under ``Beta(rho, (K - 1) rho)`` (the symmetric Dirichlet's coordinate marginal, ``rho``
  by maximum marginal likelihood on the hierarchical prior's grid; round 14's smoother ``G``);
* ``'ns'``: the unbiased estimate ``f = (c / n - q) / (p - q)`` projected onto the simplex (norm-sub);
* ``'mi'``: ``f`` clipped at 0 and divided by its sum.

``theta_`` is their convex combination ``sum_j a_j f_j`` with the weights that minimise a cross-fitted estimate
of the squared risk over users (:func:`stacked_estimate`): the users are split into ``STACK_FOLDS`` folds at
random (a permutation drawn from the estimator's read generator, independent of the responses); for fold ``k``
every candidate is fitted on the other folds' counts and compared with fold ``k``'s unbiased estimate ``t_k``.  The reports are independent across users, so ``t_k`` is
unbiased for ``theta`` and independent of the candidates fitted without it:
``E ||f^(-k) - t_k||^2 = E ||f^(-k) - theta||^2 + E ||t_k - theta||^2``, and the last term is the same for every
combination.  Minimising ``sum_k ||sum_j a_j f_j^(-k) - t_k||^2`` over the simplex is a quadratic programme in
``J = 5`` weights, solved exactly by enumerating the supports (:func:`simplex_least_squares`).

The guard: stacking weights are noisy, and where ``'eb'`` alone is far better than the others (a spike on a flat
tail, round 15's dev cells) a few per cent of weight on norm-sub cost 20 % of TV.  So the stack is used only when its
*nested* cross-fitted gain is positive by ``STACK_Z`` (= 1.5) standard errors: fold ``k``'s squared error of the stack
weighted without fold ``k`` minus that of ``'eb'`` fitted without fold ``k``, summed over folds and categories, its
standard error from the per-category sums (the categories treated as independent); otherwise ``theta_`` is
``'eb'``'s estimate exactly.  (Round 15's dev cells: at 1 standard error the real midwest ``county`` vector lost 2.1 %
to ``'eb'``, its stack putting all weight on the Dirichlet-marginal prior in 4 of 20 runs, a squared-risk gain that
was a TV loss; at 1.5 no dev cell loses beyond one paired SE and 1 %.)  The weights are
chosen for the squared risk, not the TV the benchmarks score (round 15 measured the TV), on candidates fitted to
``(F - 1) / F`` of the users, and applied to the candidates fitted to all of them.  Every prior here lives on one
grid of atoms that does not depend on the counts (the decoder's evenly spaced arcsine grid and geometric grid near
0), except ``'eb'`` on all users, which is the previous default's estimate (its grid adds the clipped unbiased
estimates); in the folds ``'eb'`` uses the common grid too.

Round 16 (cost, the same output bit for bit): the folds' support counts by one ``bincount`` per fold times the
unpacked rows (integer sums, exact in any order) instead of ``np.add.at``; the other candidates on all users formed
only when the guard keeps the stack (otherwise ``theta_`` is ``'eb'``'s row, which ``e_1 @ full`` equals exactly);
``np.log(L)`` once per grid for the tilts; and, from 32 to 63 categories, the Beta CDF table of ``'auto'``'s
cross-validated gain reused for the common grid's midpoints it shares.

Round 17 (``decoder='eb-gmodel'``, an option; ``'auto'`` keeps ``'eb-stack'``): the same stack whose ``'eb'`` row on all
users uses a smoother prior -- the NPMLE blended half and half with Efron's g-model (:mod:`._gmodel`) -- when that
prior predicts the held-out users' counts of the same folds better (``stacked_estimate(..., gmodel=True)``).
"""

import functools
import itertools

import numpy as np

from sklearn_bayes.privacy._ldp._empirical_bayes import (
    _grid,
    _likelihood,
    dirichlet_marginal_weights,
    npmle_weights,
    tilted_means,
)
from sklearn_bayes.privacy._ldp._gmodel import GMODEL_MARGIN, predictive_log_score, smooth_prior

__all__ = ["STACK_CANDIDATES", "STACK_FOLDS", "STACK_Z", "SMOOTH_WEIGHTS", "candidates", "fold_support_counts",
           "simplex_least_squares", "stacked_estimate", "user_folds"]

#: Folds of users of the cross-fitted risk, and the candidates in the order of ``convergence_['stack_weights']``.
STACK_FOLDS = 5
STACK_CANDIDATES = ("eb", "smooth", "dir", "ns", "mi")
#: The stack replaces ``'eb'`` only when its cross-fitted squared risk is lower by this many standard errors.
STACK_Z = 1.5
#: The smoother priors ``(1 - a) G + a Beta(rho, (K - 1) rho)`` of the candidates ``'smooth'`` and ``'dir'``.
SMOOTH_WEIGHTS = (0.25, 1.0)


def user_folds(n, folds, rng):
    """Fold of every recorded user: a uniformly random permutation of ``0..n-1`` taken modulo ``folds``.

    Depends on ``n`` and ``rng`` only (never on the responses), and the fold sizes differ by at most 1.
    """
    return rng.permutation(int(n)) % int(folds)


def fold_support_counts(sids, masks, K, fold, folds):
    """``(folds, K)`` support counts of the users of every fold.

    ``sids``: every user's row of the packed response sets ``masks`` (``np.packbits`` rows).  Round 16: how many
    users of every fold sent every row (``np.bincount``, a ``(folds, rows)`` matrix), times the unpacked rows, by
    chunks of rows (as :func:`~._empirical_bayes.support_counts` does).  Every term and partial sum is an integer
    below ``2^53`` (at most the number of users), so the floating-point sums are exact in any order: the same
    counts, bit for bit, as round 15's ``np.add.at`` over distinct ``(fold, row)`` pairs, at a fraction of its cost.
    """
    sids = np.asarray(sids, dtype=np.int64)
    fold = np.asarray(fold, dtype=np.int64)
    rows, folds, K = int(masks.shape[0]), int(folds), int(K)
    per_row = np.zeros((folds, rows))
    for k in range(folds):
        per_row[k] = np.bincount(sids[fold == k], minlength=rows)
    out = np.zeros((folds, K))
    step = max(1, (1 << 22) // max(K, 1))
    for lo in range(0, rows, step):
        bits = np.unpackbits(masks[lo : lo + step], axis=1, count=K).astype(float)
        out += per_row[:, lo : lo + step] @ bits
    return out


@functools.lru_cache(maxsize=8)
def _supports(J):
    """Every support of ``J`` weights, by size then in ``itertools.combinations`` order: ``(S, np.ix_(S, S))``."""
    return tuple((list(S), np.ix_(S, S)) for r in range(1, J + 1) for S in itertools.combinations(range(J), r))


def simplex_least_squares(A, b):
    """``argmin_a a' A a - 2 b' a`` over the simplex (``a >= 0``, ``sum a = 1``), exactly, for a few weights.

    Every support ``S`` is tried: the equality-constrained minimiser on ``S`` (a KKT system, least squares when
    singular), kept when its weights are nonnegative; the best of those is the minimiser over the simplex (the
    objective is convex, and the minimiser over the simplex is the equality-constrained one on its support).
    Ties go to the first support in the order of ``itertools.combinations`` by size (fewest candidates).
    """
    A, b = np.asarray(A, dtype=float), np.asarray(b, dtype=float)
    J = b.size
    best, best_a = np.inf, None
    lstsq = np.linalg.lstsq
    for S, ix in _supports(J):
        r = len(S)
        M = np.zeros((r + 1, r + 1))
        M[:r, :r], M[:r, r], M[r, :r] = A[ix], 1.0, 1.0
        rhs = np.empty(r + 1)  # np.r_[b[S], 1.0], without np.r_'s overhead (round 18b: the same numbers)
        rhs[:r], rhs[r] = b[S], 1.0
        sol = lstsq(M, rhs, rcond=None)[0][:r]
        if not np.isfinite(sol).all() or (sol < -1e-12).any():
            continue
        a = np.zeros(J)
        a[S] = np.maximum(sol, 0.0)
        a /= a.sum()
        value = a @ A @ a - 2.0 * b @ a
        if best_a is None or value < best - 1e-12 * max(1.0, abs(best)):
            best, best_a = value, a
    if best_a is None:  # not reached: every single candidate is feasible
        best_a = np.eye(J)[int(np.argmin(np.diag(A) - 2.0 * b))]
    return best_a


def _norm_sub(f):
    """Projection of ``f`` onto the simplex (norm-sub: subtract one constant, clip at 0)."""
    s = np.sort(f)[::-1]
    d = (np.cumsum(s) - 1.0) / np.arange(1, f.size + 1)
    return np.maximum(f - d[np.nonzero(s - d > 0)[0][-1]], 0.0)


def _clip_renormalise(f):
    g = np.maximum(f, 0.0)
    s = g.sum()
    return g / s if s > 0 else np.full(f.size, 1.0 / f.size)


def candidates(c, n, p, q, u, WB, rho_grid, eb_on_own_grid=False, fit=None, only_eb=False, eb_prior=None):
    """``(J, K)`` candidate estimates (``STACK_CANDIDATES`` order) from the counts ``c`` of ``n`` users, and a dict:
    the NPMLE's EM (``n_iter``, ``converged``, ``n_atoms``), the tilt of ``'eb'`` (``tilt``, ``tilt_converged``) and
    the Dirichlet marginal's ``rho``.

    ``u``: a grid of atoms that does not depend on the counts (:func:`stacked_estimate` passes one for all fits);
    ``WB``: the atoms' weights under ``Beta(rho, (K - 1) rho)`` for every ``rho`` of ``rho_grid``.  With
    ``eb_on_own_grid`` the candidate ``'eb'`` is the empirical-Bayes decoder's own estimate
    (:func:`~._empirical_bayes.eb_estimate`, whose grid includes the clipped unbiased estimates of ``c``): the
    previous default, bit for bit; the info then describes its EM.  ``fit``: ``(L, (w, n_iter, converged))`` on
    ``u`` when the caller has them (the same numbers).  ``only_eb`` (with ``eb_on_own_grid``): the ``(1, K)`` row of
    ``'eb'`` and the same dict, without the NPMLE on ``u`` and the other candidates (round 16: :func:`stacked_estimate`
    needs them on all users only when the guard keeps the stack).  ``eb_prior`` (with ``eb_on_own_grid``; round 17):
    ``eb_prior(L, u, w, p, q, f) -> (prior, converged)`` replaces the NPMLE's weights ``w`` in ``'eb'``'s tilt
    (:func:`~._gmodel.smooth_prior`); ``info['n_iter']`` and ``converged`` still describe the NPMLE's EM, and
    ``info['eb_prior_converged']`` holds ``eb_prior``'s flag (round 18).
    """
    c = np.asarray(c, dtype=float)
    f = (c / n - q) / (p - q)
    if fit is None:
        L = _likelihood(c, n, p, q, u)
        w, n_iter, converged = (None, 0, True) if only_eb and eb_on_own_grid else npmle_weights(L)
    else:
        L, (w, n_iter, converged) = fit
    with np.errstate(divide="ignore"):
        best = int(np.argmax(np.log(L @ WB.T).sum(axis=0)))
        logL = np.log(L)  # once for the two or three tilts on this grid
    b = WB[best]
    if eb_on_own_grid:
        uo = _grid(f, n, p, q)
        Lo = _likelihood(c, n, p, q, uo)
        wo, n_iter, converged = npmle_weights(Lo)
        if eb_prior is not None:
            wo, prior_ok = eb_prior(Lo, uo, wo, p, q, f)
        (eb, lam, ok), n_atoms = tilted_means(Lo, wo, uo), uo.size
    else:
        (eb, lam, ok), n_atoms = tilted_means(L, w, u, logL=logL), u.size
    info = dict(n_iter=n_iter, converged=converged, n_atoms=int(n_atoms), tilt=lam, tilt_converged=ok,
                rho=float(np.atleast_1d(rho_grid)[best]))
    if eb_on_own_grid and eb_prior is not None:
        info["eb_prior_converged"] = bool(prior_ok)
    if only_eb and eb_on_own_grid:
        return eb[None, :], info
    out = [eb] + [tilted_means(L, (1 - a) * w + a * b, u, logL=logL)[0] for a in SMOOTH_WEIGHTS]
    out += [_norm_sub(f), _clip_renormalise(f)]
    return np.array(out), info


def stacked_estimate(c, n, p, q, sids, masks, rng, rho_grid, folds=STACK_FOLDS, cdf_table=None, gmodel=False):
    """The stacked estimate (see the module's docstring) and its diagnostics.

    ``c``: the support counts of all ``n`` users; ``sids``, ``masks``: every user's packed response set (for the
    folds' counts); ``rng``: the generator of the folds.  Returns ``(theta, info)``: ``info`` holds the full data's
    :func:`candidates` dict, ``stack_weights`` (dict candidate -> weight; all on ``'eb'`` when the guard refused the
    stack), ``stack_folds``, ``stack_gain`` (the cross-fitted squared risk of ``'eb'`` alone minus the stack's, summed
    over the folds), ``stack_se`` (its standard error from the per-category terms) and ``stack_used``
    (``stack_gain > STACK_Z * stack_se``).  ``cdf_table``: a Beta CDF table of
    :func:`~._empirical_bayes.dirichlet_marginal_weights` with the same ``K`` and ``rho_grid`` (``'auto'``'s
    cross-validated gain computed one), reused bit for bit.

    ``gmodel`` (round 17, ``decoder='eb-gmodel'``): the ``'eb'`` row on all users uses the prior
    :func:`~._gmodel.smooth_prior` (the NPMLE blended with Efron's g-model) instead of the NPMLE when, on the same user
    folds, the blend's cross-fitted predictive log score of the held-out users' counts beats the NPMLE's by more than
    ``GMODEL_MARGIN`` nats (:func:`~._gmodel.predictive_log_score`; both fitted without the fold, on the common grid).
    The folds' candidates and the guard are unchanged; ``info`` gains ``gmodel_gain`` (the blend's score minus the
    NPMLE's, summed over folds), ``gmodel_used``, ``gmodel_converged`` (every fold's g-model fit converged) and
    ``gmodel_final_converged`` (round 18: the g-model fit on all users behind the ``'eb'`` row; None where the score
    kept the NPMLE, so none was fitted).  Without it
    the estimate is round 15's, bit for bit; with it, wherever the score keeps the NPMLE, too.
    """
    c = np.asarray(c, dtype=float)
    K = c.size
    if n == 0:
        raise ValueError("stacked_estimate needs at least one recorded response (n >= 1).")
    u0 = _grid(np.zeros(0), n, p, q)  # atoms independent of the counts, shared by every fit
    WB0 = dirichlet_marginal_weights(u0, K, rho_grid, known=cdf_table)
    if not gmodel:
        eb_row, info = candidates(c, n, p, q, u0, WB0, rho_grid, eb_on_own_grid=True, only_eb=True)
    fold = user_folds(n, folds, rng)
    cf = fold_support_counts(sids, masks, K, fold, folds)
    nf = np.bincount(fold, minlength=folds)
    J = len(STACK_CANDIDATES)
    A, b = np.zeros((J, J)), np.zeros(J)
    held = []  # per fold: the candidates fitted without it, its unbiased estimate, its terms of A and b
    g_gain, g_ok = 0.0, True
    for k in range(folds):
        if nf[k] == 0 or nf[k] == n:
            continue
        if gmodel:  # the same EM as candidates' own (the same numbers), then the blend, both scored on fold k
            cm, nm = c - cf[k], n - nf[k]
            Lm = _likelihood(cm, nm, p, q, u0)
            fit = npmle_weights(Lm)
            Fk = candidates(cm, nm, p, q, u0, WB0, rho_grid, fit=(Lm, fit))[0]
            blend, ok = smooth_prior(Lm, u0, fit[0], p, q, (cm / nm - q) / (p - q))
            Lk = _likelihood(cf[k], nf[k], p, q, u0)
            g_gain += predictive_log_score(Lm, blend, Lk) - predictive_log_score(Lm, fit[0], Lk)
            g_ok = g_ok and ok
        else:
            Fk = candidates(c - cf[k], n - nf[k], p, q, u0, WB0, rho_grid)[0]
        t = (cf[k] / nf[k] - q) / (p - q)
        Ak, bk = Fk @ Fk.T, Fk @ t
        A += Ak
        b += bk
        held.append((Fk, t, Ak, bk))
    weights = simplex_least_squares(A, b) if held else np.eye(J)[0]
    # the guard, nested: fold k's squared error of the stack weighted without fold k, minus that of 'eb' alone, per
    # category; the stack is kept only when the sum is below -STACK_Z standard errors (categories independent)
    d = np.zeros(K)
    for Fk, t, Ak, bk in held:
        a_k = simplex_least_squares(A - Ak, b - bk) if len(held) > 1 else weights
        d += (a_k @ Fk - t) ** 2 - (Fk[0] - t) ** 2
    gain, se = float(-d.sum()), float(np.sqrt(K * np.var(d))) if K > 1 else 0.0
    used = bool(held) and gain > STACK_Z * se
    if gmodel:
        g_used = bool(held) and g_gain > GMODEL_MARGIN
        eb_row, info = candidates(c, n, p, q, u0, WB0, rho_grid, eb_on_own_grid=True, only_eb=True,
                                  eb_prior=smooth_prior if g_used else None)
        final_ok = info.pop("eb_prior_converged", None)  # the blend's g-model on all users (None: not fitted)
        info = dict(info, gmodel_gain=float(g_gain), gmodel_used=g_used, gmodel_converged=bool(g_ok),
                    gmodel_final_converged=final_ok)
    if used:  # the other candidates on all users (their 'eb' row on the common grid is not used)
        full = np.vstack([eb_row, candidates(c, n, p, q, u0, WB0, rho_grid)[0][1:]])
        theta = np.maximum(weights @ full, 0.0)
    else:  # 'eb' alone: e_1 @ full is the 'eb' row exactly (1 x + 0 y = x for finite y), so it is not formed
        weights = np.eye(J)[0]
        theta = np.maximum(eb_row[0], 0.0)
    theta /= theta.sum()
    info = dict(info, stack_weights=dict(zip(STACK_CANDIDATES, (float(x) for x in weights))), stack_folds=int(folds),
                stack_gain=gain, stack_se=se, stack_used=used)
    return theta, info
