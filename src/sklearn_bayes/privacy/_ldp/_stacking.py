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

Round G3 (cost at high ``eps`` and small ``n``, the same output up to rounding; ``STACK_FAST_NUMERICS``, False
restores round 18b's numbers bit for bit): the atoms where every category's likelihood is exactly 0 dropped before
the EMs and tilts (:func:`~._empirical_bayes.nonzero_columns`), the EMs compiled up to 512 categories, the tilts'
moments by one product with the likelihood instead of an ``exp`` of every entry, the Dirichlet-marginal rows computed
only where the search for the best ``rho`` reads them (:class:`DirichletRows`), the weights' 31 KKT systems solved in
one batched call, and the common grid's NPMLE on all users fitted only when a candidate that needs it has weight.
``theta_`` moves by at most ``1.1e-14``; the same ``rho``, EM iterations, guard decisions and intervals on the round's
checks.  Fit plus ``theta_`` at ``eps = 8``: 0.31-0.60 of round 18b's time.  Looser EMs (``STACK_FOLD_NPMLE_TOL``,
``STACK_NPMLE_TOL``) are options: they cut more but changed the estimate beyond the round's accuracy rule.

Round RT (an option, ``STACK_ROUTE``; off by default): the cost route (:func:`stack_route`) returns ``'eb'``'s
estimate without the folds where the channel is near the identity (:func:`noise_ratio` ``<= 2``) and the stack's
predicted cost, from ``'eb'``'s own EM, exceeds 10 times IBU's; ``convergence_['stack_skipped']`` says so.  On the
dev map it cut fit plus ``theta_`` 4-5 times where it fired, but missed the round's rule (``K = 64, eps = 8,
n = 1000``: 1.11 times the best peer, as the stack; ``K = 1000, eps = 8, n = 1000``: 11.0-12.7 times IBU).

Round P1 (issue 28 goal 1 at high ``eps``; ``STACK_BASELINE``, ``'auto'`` by default, ``'eb'`` restores round RT's
output bit for bit): where the channel is near the identity (:func:`noise_ratio` ``<= 2``) the guard's baseline is
``'eb'`` or ``'dir'``, whichever has the lower cross-fitted squared risk on the same folds (:func:`stack_baseline`);
the stack is kept only when its nested gain over that baseline exceeds ``STACK_Z`` standard errors, else ``theta_`` is
the baseline's estimate; ``convergence_['stack_baseline']`` says which. Held out (``--fresh-p1``, ten cells, 10 runs):
paired TV 0.952-0.985 of round RT's on six gated Dir, Zipf and two-peak cells; bit for bit on a gated spike+flat
cell (``'eb'`` kept) and on the three cells with ``R > 2``.

Round S (issue 28 goal 3; the same output up to rounding, ``_empirical_bayes.UNIQUE_ROWS``, False restores round P1's
code path): every likelihood row, EM, ``rho`` search and tilt once per distinct support count, weighted by how many
categories share it (8-60 distinct counts among 64-1000 categories at ``eps = 8, n <= 5000``), the EM without the atoms
every distinct row puts below ``EM_ATOM_FLOOR``.  Fit plus ``theta_`` 0.048-0.49 of round P1's at ``eps = 8,
n = 1000``.  An option, not adopted (``STACK_ROUTE = 'select'``): near the identity, round P1's choice of ``'eb'`` or
``'dir'`` on two cheap folds without the stack (:func:`_select_estimate`); within one paired SE of the default on its
13 dev cells but 11.5 times IBU at ``K = 64, eps = 8, n = 1000`` when its rule was checked, above the rule's cost bar.
"""

import collections
import functools
import itertools
import threading

import numpy as np

from sklearn_bayes.privacy._ldp._empirical_bayes import (
    COMPILED_EM_MAX_CATEGORIES,
    _grid,
    count_rows,
    _likelihood,
    dirichlet_marginal_weights,
    eb_estimate,
    nonzero_columns,
    npmle_weights,
    tilted_means,
)
from sklearn_bayes.privacy._ldp import _empirical_bayes as _eb
from sklearn_bayes.privacy._ldp._gmodel import GMODEL_MARGIN, predictive_log_score, smooth_prior

__all__ = ["ROUTE_BUDGET", "ROUTE_MAX_NOISE_RATIO", "ROUTE_WORK_PER_IBU", "STACK_BASELINE", "STACK_CANDIDATES",
           "STACK_FAST_NUMERICS", "STACK_FOLDS", "STACK_FOLD_NPMLE_TOL", "STACK_NPMLE_TOL", "STACK_ROUTE", "STACK_Z",
           "SELECT_FOLDS", "SELECT_FOLD_TOL", "SMOOTH_WEIGHTS", "ROW_MEMO_SIZE", "STACK_PREP_REUSE",
           "DirichletRows", "candidates", "fold_support_counts", "noise_ratio",
           "simplex_least_squares", "stack_baseline", "stack_route", "stacked_estimate", "user_folds"]

#: Folds of users of the cross-fitted risk, and the candidates in the order of ``convergence_['stack_weights']``.
STACK_FOLDS = 5
STACK_CANDIDATES = ("eb", "smooth", "dir", "ns", "mi")
#: The stack replaces ``'eb'`` only when its cross-fitted squared risk is lower by this many standard errors.
STACK_Z = 1.5
#: The smoother priors ``(1 - a) G + a Beta(rho, (K - 1) rho)`` of the candidates ``'smooth'`` and ``'dir'``.
SMOOTH_WEIGHTS = (0.25, 1.0)
#: Round G3 (options, not the default): the NPMLE EMs of the candidates fitted without a fold (they set only the
#: stack's weights and its guard) stop when an iteration raises the log-likelihood by less than
#: ``STACK_FOLD_NPMLE_TOL``, the EMs behind ``theta_`` (``'eb'`` on its own grid, the common grid's on all users) by
#: less than ``STACK_NPMLE_TOL``.  Both are ``NPMLE_TOL`` (``1e-4``, 400-1700 iterations at ``eps = 8``), as in round
#: 18b.  ``1e-2`` (30-80 iterations) for the folds, or for both, cut the cost at ``eps = 8`` 3-8 times but failed
#: round G3's accuracy rule on its dev cells (``doc/development/adaptive_ldp_log.rst``, round G3).
STACK_FOLD_NPMLE_TOL = 1e-4
STACK_NPMLE_TOL = 1e-4
#: Round G3: the Dirichlet-marginal rows computed only where the search for the best ``rho`` looks
#: (:class:`DirichletRows`) and the weights' least squares batched by support size (:func:`simplex_least_squares`).
#: False restores round 18b's code path (with ``STACK_NPMLE_TOL = NPMLE_TOL``: round 18b's output, bit for bit).
STACK_FAST_NUMERICS = True
#: :class:`DirichletRows`: every this many points of ``rho_grid`` first, then a climb to a local maximum by unit steps.
RHO_SEARCH_STRIDE = 8
#: Round RT (issue 28 goal 3 at high ``eps``): the cost route.  :func:`stacked_estimate` skips the stack (``theta_`` is
#: ``'eb'``'s estimate, ``convergence_['stack_skipped']`` says why) where the channel is near the identity
#: (:func:`noise_ratio` at most ``ROUTE_MAX_NOISE_RATIO``) and the stack's predicted cost exceeds ``ROUTE_BUDGET``
#: times IBU's (:func:`stack_route`).  False: the stack everywhere (round G3's output, bit for bit).  Part of the fast
#: path: ``STACK_FAST_NUMERICS = False`` (round 18b's code path) runs the stack everywhere too.  ``'select'``: round S's
#: option (:func:`_select_estimate`).
STACK_ROUTE = False
#: The unbiased estimate's variance over the multinomial sampling variance, at the uniform ``theta``, at most this:
#: the privacy noise at most the sampling noise.
ROUTE_MAX_NOISE_RATIO = 2.0
#: Round P1 (issue 28 goal 1 at high ``eps``): the guard's baseline.  ``'auto'``: where :func:`noise_ratio` is at most
#: ``ROUTE_MAX_NOISE_RATIO``, the better of ``'eb'`` and ``'dir'`` by cross-fitted squared risk on the stack's folds
#: (:func:`stack_baseline`); ``'eb'`` elsewhere.  ``'eb'``: always ``'eb'`` (round RT's output, bit for bit).
STACK_BASELINE = "auto"
#: Goal 3's budget: fit plus ``theta_`` within this many times IBU's time.
ROUTE_BUDGET = 10.0
#: IBU's time per user in units of ``2 G K`` multiply-adds' EM time per iteration over ``K``: ``U`` of the cost model
#: (:func:`stack_route`), measured on eight neutral settings (``K`` 100/300, ``eps = 7``, ``n`` 1500/4000, uniform and
#: Dir(0.5) ``theta``: 90-188, geometric mean 115), before any dev or fresh cell was run with the route.
ROUTE_WORK_PER_IBU = 115.0


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
    if STACK_FAST_NUMERICS:
        return _simplex_least_squares_batched(A, b)
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


@functools.lru_cache(maxsize=8)
def _padded_supports(J):
    """Every support of ``J`` weights (:func:`_supports`' order) as a ``(m, J)`` 0/1 mask."""
    return np.array([[j in S for j in range(J)] for S, _ in _supports(J)], dtype=bool)


@functools.lru_cache(maxsize=8)
def _padded_parts(J):
    """Round T: the constants of :func:`_simplex_least_squares_batched` for ``J`` weights, formed once (the same arrays
    as formed per call before): the support masks, their outer products and the identity padding outside them."""
    on = _padded_supports(J)
    both = on[:, :, None] & on[:, None, :]
    pad = np.where(~on, 1.0, 0.0)[:, :, None] * np.eye(J)[None]
    for a in (on, both, pad):
        a.flags.writeable = False
    return on, both, pad


def _simplex_least_squares_batched(A, b):
    """:func:`simplex_least_squares` with every support's KKT system solved in one batched call (round G3).

    Support ``S``'s system is padded to ``(J + 1) x (J + 1)`` with the identity (and 0 on the right) in the rows and
    columns of the candidates outside ``S``, so its solution is ``S``'s with zeros outside.  The same candidates in
    the same order and the same selection as the loop; the systems by LU (``np.linalg.solve``) instead of
    ``lstsq``'s SVD, so the weights agree with the loop's up to rounding (and where a system is singular, all of
    them by the pseudo-inverse: ``lstsq``'s minimum-norm solutions, singular values below ``(J + 1) eps`` of the
    largest cut).
    """
    J = b.size
    on, both, pad = _padded_parts(J)
    m = on.shape[0]
    M = np.zeros((m, J + 1, J + 1))
    M[:, :J, :J] = np.where(both, A[None, :, :], 0.0) + pad
    M[:, :J, J] = on
    M[:, J, :J] = on
    rhs = np.zeros((m, J + 1, 1))
    rhs[:, :J, 0] = np.where(on, b[None, :], 0.0)
    rhs[:, J, 0] = 1.0
    try:
        sol = np.linalg.solve(M, rhs)[:, :J, 0]
    except np.linalg.LinAlgError:
        sol = np.matmul(np.linalg.pinv(M), rhs)[:, :J, 0]
    sol = np.where(on, sol, 0.0)
    ok = np.isfinite(sol).all(axis=1) & ~(sol < -1e-12).any(axis=1)
    a = np.maximum(sol, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        a /= a.sum(axis=1, keepdims=True)
        values = np.einsum("si,ij,sj->s", a, A, a) - 2.0 * (a @ b)
    best, best_a = np.inf, None
    for i in np.flatnonzero(ok):
        value = values[i]
        if best_a is None or value < best - 1e-12 * max(1.0, abs(best)):
            best, best_a = value, a[i]
    if best_a is None:  # not reached: every single candidate is feasible
        best_a = np.eye(J)[int(np.argmin(np.diag(A) - 2.0 * b))]
    return best_a


#: Issue 28, round T (cost, the same numbers): :class:`DirichletRows` keeps its rows across fits in a memo of the
#: last ``ROW_MEMO_SIZE`` ``(K, midpoints, rho grid)`` keys -- the common grid depends on ``n``, ``p`` and ``q`` only, so
#: a refit with as many users at the same ``K`` and ``epsilon`` (a benchmark's runs, a periodic re-estimate) reads the
#: Beta CDF rows a previous fit computed (about 0.1 ms a row, 15-20 rows a fit at ``K = 64, eps = 8``).  A row is the
#: same elementwise function of the same numbers whichever fit computes it (read-only arrays; at most 97 rows of about
#: 440 atoms, 0.34 MB, a key).  The common grid itself is kept for as many ``(n, p, q)`` (:func:`_common_grid`).  0: no
#: memo (every fit computes its own rows and grid, round S2's behaviour).
ROW_MEMO_SIZE = 8
#: Round T: :func:`stacked_estimate`'s second :func:`candidates` call on all users (the other candidates, where the
#: stack or ``'dir'`` is kept) reuses the first's likelihood, atoms and ``rho`` (``prep``).  False: recomputed.
STACK_PREP_REUSE = True
_ROW_MEMO = collections.OrderedDict()
_GRID_MEMO = collections.OrderedDict()  # the common grids of the last ROW_MEMO_SIZE (n, p, q) (_common_grid)
_ROW_MEMO_LOCK = threading.Lock()


def _common_grid(n, p, q):
    """The common grid ``_grid(np.zeros(0), n, p, q)`` (it depends on ``n``, ``p`` and ``q`` only), kept for the last
    ``ROW_MEMO_SIZE`` triples (round T; read-only; the same numbers either way)."""
    if ROW_MEMO_SIZE <= 0:
        return _grid(np.zeros(0), n, p, q)
    key = (int(n), float(p), float(q))
    with _ROW_MEMO_LOCK:
        u = _GRID_MEMO.get(key)
        if u is not None:
            _GRID_MEMO.move_to_end(key)
    if u is None:
        u = _grid(np.zeros(0), n, p, q)
        u.flags.writeable = False
        with _ROW_MEMO_LOCK:
            _GRID_MEMO[key] = u
            while len(_GRID_MEMO) > ROW_MEMO_SIZE:
                _GRID_MEMO.popitem(last=False)
    return u


def _shared_rows(key):
    """The row dict of ``key`` (shared with the fits that had the same key), or a new private one."""
    if ROW_MEMO_SIZE <= 0:
        return {}
    with _ROW_MEMO_LOCK:
        rows = _ROW_MEMO.get(key)
        if rows is None:
            rows = _ROW_MEMO[key] = {}
        _ROW_MEMO.move_to_end(key)
        while len(_ROW_MEMO) > ROW_MEMO_SIZE:
            _ROW_MEMO.popitem(last=False)
    return rows


class DirichletRows:
    """Rows of :func:`~._empirical_bayes.dirichlet_marginal_weights` ``(u, K, rho_grid)``, each computed when first
    read and kept (round G3: the full table is 97 rows of ``betainc`` at every midpoint, 10 ms at ``K = 64``).

    ``row(i)`` is the same elementwise function of the same numbers as the table's row ``i``, so the same weights bit
    for bit.  :meth:`best` finds the ``rho`` of largest marginal likelihood ``sum_v ln (L[v] . row(i))``: every
    ``RHO_SEARCH_STRIDE``-th point of the grid (and the last), then unit steps up the slope from every local maximum
    of those until neither neighbour is higher, the best of the climbs.  It is the table's ``argmax`` unless the
    profile has a peak that no coarse point's climb reaches (round G3: 0 of 2400 random fits and folds, ``K`` 64-1000,
    ``eps`` 0.1-8, six shapes; the first version, climbing once, missed 4 of 1200), and a local maximum at worst.
    """

    def __init__(self, u, K, rho_grid):
        self.mid = np.concatenate([[0.0], 0.5 * (u[1:] + u[:-1]), [1.0]])
        self.rho = np.atleast_1d(np.asarray(rho_grid, dtype=float))
        self.K = int(K)
        self._rows = _shared_rows((self.K, self.mid.tobytes(), self.rho.tobytes()))

    def row(self, i):
        r = self._rows.get(i)
        if r is None:
            from scipy.special import betainc

            rho = self.rho[i]
            r = np.diff(betainc(rho, (self.K - 1) * rho, self.mid))
            r.flags.writeable = False
            self._rows[i] = r
        return r

    def rows_on(self, idx, keep=None):
        """``(len(idx), G')`` rows ``idx`` on the atoms ``keep`` (None: all): the ones not yet computed by one ``betainc``
        call (elementwise: the same numbers as :meth:`row`'s, bit for bit), kept.  (Round S measured the CDF at only the
        kept atoms' midpoints: slower, the folds' atom sets differ and the calls' overhead exceeds the saved points.)"""
        todo = [i for i in idx if i not in self._rows]
        if todo:
            from scipy.special import betainc

            rho = self.rho[todo][:, None]
            for i, r in zip(todo, np.diff(betainc(rho, (self.K - 1) * rho, self.mid[None, :]), axis=1)):
                r.flags.writeable = False
                self._rows[i] = r
        R = np.array([self._rows[i] for i in idx])
        return R if keep is None else R[:, keep]

    def row_on(self, i, keep=None):
        """:meth:`row` on the atoms ``keep`` (None: all)."""
        r = self.row(i)
        return r if keep is None else r[keep]

    def best(self, L, keep=None, mult=None):
        """Index of the best ``rho`` for the likelihood rows ``L`` on the atoms ``keep`` (None: all; see the class).

        ``mult`` (round S): ``L`` holds distinct rows, row ``v`` standing for ``mult[v]`` categories; the marginal
        likelihood is ``sum_v mult_v ln (L[v] . row(i))``, and the coarse points' values come from one product.
        """
        G = self.rho.size
        if mult is not None:
            return self._best_weighted(L, keep, mult)
        score = {}

        def value(i):
            if i not in score:
                r = self.row(i)
                score[i] = float(np.log(L @ (r if keep is None else r[keep])).sum())
            return score[i]

        def key(i):  # larger value first; ties to the smaller index, as np.argmax
            return (value(i), -i)

        coarse = sorted(set(range(0, G, max(1, int(RHO_SEARCH_STRIDE)))) | {G - 1})
        return _climb(coarse, [key(j) for j in coarse], G, key)


    def _best_weighted(self, L, keep, mult):
        """:meth:`best` on distinct rows (round S): the coarse profile by one product, the climbs as :meth:`best`'s."""
        G = self.rho.size
        coarse = sorted(set(range(0, G, max(1, int(RHO_SEARCH_STRIDE)))) | {G - 1})
        score = dict(zip(coarse, (mult @ np.log(L @ self.rows_on(coarse, keep).T)).tolist()))

        def key(i):  # larger value first; ties to the smaller index, as np.argmax
            if i not in score:
                score[i] = float(mult @ np.log(L @ self.row_on(i, keep)))
            return (score[i], -i)

        return _climb(coarse, [key(j) for j in coarse], G, key)


def _climb(coarse, keys, G, key):
    """The best index of ``0..G-1`` by ``key``: climb from every local maximum of the coarse profile (``keys`` at the
    points ``coarse``; two-peaked profiles occur, round G3) to a neighbour-wise maximum, keep the best."""
    starts = [j for a, j in enumerate(coarse)
              if all(keys[a] >= keys[b] for b in (a - 1, a + 1) if 0 <= b < len(coarse))]
    found = []
    for i in starts:
        while True:
            j = max((k for k in (i - 1, i + 1) if 0 <= k < G), key=key)
            if key(j) > key(i):
                i = j
            else:
                break
        found.append(i)
    return max(found, key=key)


def noise_ratio(K, p, q):
    """The unbiased estimate's variance over the multinomial sampling variance at the uniform ``theta``.

    Notes
    -----
    A category of probability ``theta_v`` is supported with probability ``pi_v = q + (p - q) theta_v``; the unbiased
    estimate ``f_v = (c_v / n - q) / (p - q)`` has variance ``pi_v (1 - pi_v) / (n (p - q)^2)``, against
    ``theta_v (1 - theta_v) / n`` for the users' own frequencies (no privacy).  At ``theta_v = 1 / K`` their ratio is

    .. math:: R = \\frac{\\pi (1 - \\pi)}{(p - q)^2 \\, K^{-1} (1 - K^{-1})}, \\qquad \\pi = q + (p - q) / K,

    1 for the identity channel (``p = 1, q = 0``); ``1 / (p - q)^2`` for GRR.  ``R - 1`` is the privacy noise in units
    of the sampling noise.
    """
    K, p, q = int(K), float(p), float(q)
    if K < 2 or p <= q:
        return float("inf")
    pi = q + (p - q) / K
    return pi * (1.0 - pi) / ((p - q) ** 2 * (1.0 / K) * (1.0 - 1.0 / K))


def stack_baseline(held, K, p, q):
    """Index in ``STACK_CANDIDATES`` of the guard's baseline (round P1): 0 (``'eb'``) or 2 (``'dir'``).

    ``held``: :func:`stacked_estimate`'s folds, ``(F_k, t_k, ...)`` with the candidates fitted without fold ``k``
    and fold ``k``'s unbiased estimate.  With ``STACK_BASELINE = 'auto'``, where the channel is near the identity
    (:func:`noise_ratio` ``<= ROUTE_MAX_NOISE_RATIO``), the baseline is ``'dir'`` when its cross-fitted squared risk
    is lower than ``'eb'``'s on the same folds, else ``'eb'``; elsewhere, and with ``STACK_BASELINE = 'eb'``, it is
    ``'eb'`` (the guard of rounds 15-RT, bit for bit).

    Notes
    -----
    The cross-fitted risk of candidate ``j`` is :math:`\\hat r_j = \\sum_k \\| f_j^{(-k)} - t_k \\|^2`; as in the
    stack's weights, :math:`E \\hat r_j = \\sum_k E \\| f_j^{(-k)} - \\theta \\|^2 + \\text{const}`, the constant
    the same for every candidate.  Near the identity the NPMLE's posterior-mean map on the counts is a staircase
    (issue 28's diagnosis H28D: at ``K = 64``, ``eps = 6-8`` its slope ranges 0.05-2.6, against about 1 for the
    Dirichlet marginal's smooth prior), so ``'eb'`` carries 9-30 % more squared risk than the oracle prior and the
    guard against it lacks the power to accept a stack that leans on ``'dir'``.  The choice reads only the folds the
    stack already fitted: it costs ``2 F K`` operations, and no extra fit unless ``'dir'`` is kept alone.
    """
    if STACK_BASELINE == "eb" or not held or noise_ratio(K, p, q) > ROUTE_MAX_NOISE_RATIO:
        return 0
    risk_eb = sum(float(((Fk[0] - t) ** 2).sum()) for Fk, t, *_ in held)
    risk_dir = sum(float(((Fk[2] - t) ** 2).sum()) for Fk, t, *_ in held)
    return 2 if risk_dir < risk_eb else 0


def stack_route(K, n, p, q, n_iter, atoms_used, folds=STACK_FOLDS):
    """``(skip, reason)``: whether :func:`stacked_estimate` skips the stack (round RT's cost route), and why.

    Notes
    -----
    The stack fits ``'eb'`` on all users, then every candidate on ``folds`` subsets of ``(F - 1) / F`` of them: one
    NPMLE EM each, on the common grid.  Its cost is predicted from ``'eb'``'s EM on all users, which has run when this
    is called (``n_iter`` iterations on ``atoms_used`` atoms): ``F + 1`` such EMs, ``2 G K`` multiply-adds an
    iteration.  IBU's cost at high ``eps`` is the client and the counts, ``n K`` unit steps.  The predicted ratio is

    .. math:: \\hat r = \\frac{(F + 1)\\, 2\\, n_{iter}\\, G}{n\\, U},

    ``U = ROUTE_WORK_PER_IBU`` (the machine's ratio, measured once).  The stack is skipped when
    ``r_hat > ROUTE_BUDGET`` *and* :func:`noise_ratio` ``<= ROUTE_MAX_NOISE_RATIO``: then the channel adds at most
    the sampling noise, every decoder is close to the users' own frequencies, and what the stack can add over
    ``'eb'``'s shrinkage (round 18b: 0-8 % TV on Dir(1) at ``eps = 8``) is not worth the cost.  Only ``K``, ``n``,
    ``p``, ``q`` and the counts (through ``'eb'``'s EM) are read.
    """
    R = noise_ratio(K, p, q)
    r_hat = (int(folds) + 1) * 2.0 * float(n_iter) * float(atoms_used) / (max(int(n), 1) * ROUTE_WORK_PER_IBU)
    skip = bool(R <= ROUTE_MAX_NOISE_RATIO and r_hat > ROUTE_BUDGET)
    reason = (f"cost: predicted {r_hat:.1f}x IBU > {ROUTE_BUDGET:g}, noise ratio {R:.3f} <= "
              f"{ROUTE_MAX_NOISE_RATIO:g}") if skip else None
    return skip, reason, r_hat, R


def _compiled_em(K):
    return bool(STACK_FAST_NUMERICS and K <= COMPILED_EM_MAX_CATEGORIES)


_nonzero_columns = nonzero_columns


def _norm_sub(f):
    """Projection of ``f`` onto the simplex (norm-sub: subtract one constant, clip at 0)."""
    s = np.sort(f)[::-1]
    d = (np.cumsum(s) - 1.0) / np.arange(1, f.size + 1)
    return np.maximum(f - d[np.nonzero(s - d > 0)[0][-1]], 0.0)


def _clip_renormalise(f):
    g = np.maximum(f, 0.0)
    s = g.sum()
    return g / s if s > 0 else np.full(f.size, 1.0 / f.size)


def candidates(c, n, p, q, u, WB, rho_grid, eb_on_own_grid=False, fit=None, only_eb=False, eb_prior=None, tol=None,
               need=None, return_fit=False, eb_done=None, prep=None):
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
    ``info['eb_prior_converged']`` holds ``eb_prior``'s flag (round 18).  ``tol``: the EMs' tolerance (round G3;
    None: ``STACK_NPMLE_TOL``).  ``need`` (round G3, without ``eb_on_own_grid``): the names of the rows the caller
    reads; the others are zeros (the stack's weight on them is 0, and ``0 x = 0``), and without ``'eb'`` and
    ``'smooth'`` the NPMLE is not fitted (``'dir'``'s prior ``0 w + B`` is ``B`` exactly).  ``return_fit``: also
    ``(w_full, L_full)``, the NPMLE's weights on all of ``u`` (0 on the dropped atoms) and the likelihood on ``u``
    (round G3: ``'eb-gmodel'``'s folds score the same EM the candidates used).  ``eb_done`` (round RT): ``'eb'``'s
    ``(theta, info)`` by :func:`~._empirical_bayes.eb_estimate` with the same arguments, when the caller has it.
    ``prep`` (round T): a dict shared by two calls with the same ``c``, ``n``, ``p``, ``q``, ``u`` and ``WB`` (the full
    data's ``'eb'`` row, then its other candidates): the first fills it with the likelihood on ``u``, its distinct rows,
    the kept atoms and the ``rho`` search's answer, the second reads them (the same numbers, not recomputed).
    """
    c = np.asarray(c, dtype=float)
    tol = STACK_NPMLE_TOL if tol is None else tol
    f = (c / n - q) / (p - q)
    keep = None
    rows = mult = None
    use_prep = prep is not None and fit is None and eb_prior is None and STACK_FAST_NUMERICS
    if fit is None:
        if use_prep and prep:  # round T: the first call's likelihood and atoms (the same numbers)
            L, L_full, u, keep, rows, mult, n_u = (prep[k] for k in ("L", "L_full", "u", "keep", "rows", "mult", "n_u"))
        else:
            if STACK_FAST_NUMERICS and _eb.UNIQUE_ROWS and eb_prior is None:  # round S: one row per distinct count
                cu, rows, mult = count_rows(c)
                L = L_full = _likelihood(cu, n, p, q, u)
            else:
                L = L_full = _likelihood(c, n, p, q, u)
            n_u = u.size
            if STACK_FAST_NUMERICS and eb_prior is None:  # round G3: the atoms no category can have (exact zeros) dropped
                L, u, keep = _nonzero_columns(L, u)
        no_w = (only_eb and eb_on_own_grid) or (need is not None and not {"eb", "smooth"} & set(need))
        if no_w:
            w, n_iter, converged = None, 0, True
        elif rows is not None:
            w, n_iter, converged = npmle_weights(L, tol=tol, n_atoms=n_u, mult=mult,
                                                 compiled=L.shape[0] <= COMPILED_EM_MAX_CATEGORIES)
        else:
            w, n_iter, converged = npmle_weights(L, tol=tol, n_atoms=n_u, compiled=_compiled_em(c.size))
    else:
        L, (w, n_iter, converged) = fit
        L_full, n_u = L, u.size
    with np.errstate(divide="ignore"):
        if use_prep and prep:
            best, b = prep["best"], prep["b"]
        elif isinstance(WB, DirichletRows) and rows is not None:  # round S: distinct rows; the Beta CDF where kept
            best = WB.best(L, keep, mult=mult)
            b = WB.row_on(best, keep)
        else:
            if isinstance(WB, DirichletRows):  # round G3: the rows the search reads, not the whole table
                best = WB.best(L, keep)
                b = WB.row(best)
            else:
                logm = np.log(L @ (WB if keep is None else WB[:, keep]).T)
                best = int(np.argmax(logm.sum(axis=0) if rows is None else mult @ logm))
                b = WB[best]
            b = b if keep is None else b[keep]
        # once for the two or three tilts on this grid (round G3: not needed by the linear tilts)
        logL = None if STACK_FAST_NUMERICS else np.log(L)
    if use_prep and not prep:
        prep.update(L=L, L_full=L_full, u=u, keep=keep, rows=rows, mult=mult, n_u=n_u, best=best, b=b)
    if eb_on_own_grid and eb_prior is None:  # the decoder 'eb''s estimate, by the same code (round G3)
        eb, e_info = eb_done if eb_done is not None else eb_estimate(c, n, p, q, fast=STACK_FAST_NUMERICS, tol=tol)
        n_iter, converged, n_atoms = e_info["n_iter"], e_info["converged"], e_info["n_atoms"]
        lam, ok = e_info["tilt"], e_info["tilt_converged"]
    elif eb_on_own_grid:  # round 17's prior in place of the NPMLE's weights (on the whole grid)
        uo = _grid(f, n, p, q)
        Lo = _likelihood(c, n, p, q, uo)
        wo, n_iter, converged = npmle_weights(Lo, tol=tol, compiled=_compiled_em(c.size))
        wo, prior_ok = eb_prior(Lo, uo, wo, p, q, f)
        (eb, lam, ok), n_atoms = tilted_means(Lo, wo, uo, linear=STACK_FAST_NUMERICS), uo.size
    elif need is not None and "eb" not in need:
        (eb, lam, ok), n_atoms = (np.zeros(c.size), 0.0, True), n_u
    else:
        (eb, lam, ok), n_atoms = tilted_means(L, w, u, logL=logL, linear=STACK_FAST_NUMERICS, rows=rows), n_u
    info = dict(n_iter=n_iter, converged=converged, n_atoms=int(n_atoms), tilt=lam, tilt_converged=ok,
                rho=float(np.atleast_1d(rho_grid)[best]))
    if eb_on_own_grid and eb_prior is not None:
        info["eb_prior_converged"] = bool(prior_ok)
    if only_eb and eb_on_own_grid:
        return eb[None, :], info
    out = [eb]
    for name, a in zip(STACK_CANDIDATES[1:3], SMOOTH_WEIGHTS):
        if need is not None and name not in need:
            out.append(np.zeros(c.size))
        else:
            prior = b if w is None and a == 1.0 else (1 - a) * w + a * b
            out.append(tilted_means(L, prior, u, logL=logL, linear=STACK_FAST_NUMERICS, rows=rows)[0])
    out += [_norm_sub(f), _clip_renormalise(f)]
    if return_fit:
        w_full = w if keep is None else np.zeros(keep.size)
        if keep is not None:
            w_full[keep] = w
        L_full = L if keep is None else L_full
        return np.array(out), info, (w_full, L_full if rows is None else L_full[rows])
    return np.array(out), info


#: Round S (an option, ``STACK_ROUTE = 'select'``; not the default): near the identity channel the stack is replaced by
#: round P1's choice between ``'eb'`` and ``'dir'`` on ``SELECT_FOLDS`` user folds whose ``'eb'`` EMs stop at
#: ``SELECT_FOLD_TOL`` (:func:`_select_estimate`).
SELECT_FOLDS = 2
SELECT_FOLD_TOL = 1e-2


def _select_estimate(c, n, p, q, sids, masks, rng, rho_grid, cdf_table=None):
    """Round S's option: ``'eb'`` or ``'dir'`` on all users, whichever has the lower cross-fitted squared risk
    ``sum_k ||f^(-k) - t_k||^2`` on ``SELECT_FOLDS`` user folds (:func:`stack_baseline`'s criterion without the stack),
    the folds' ``'eb'`` EMs stopped at ``SELECT_FOLD_TOL`` (they only rank the two)."""
    K, J = c.size, len(STACK_CANDIDATES)
    u0 = _grid(np.zeros(0), n, p, q)
    WB0 = DirichletRows(u0, K, rho_grid) if cdf_table is None else dirichlet_marginal_weights(u0, K, rho_grid,
                                                                                              known=cdf_table)
    eb_row, info = candidates(c, n, p, q, u0, WB0, rho_grid, eb_on_own_grid=True, only_eb=True)
    folds = int(SELECT_FOLDS)
    fold = user_folds(n, folds, rng)
    cf = fold_support_counts(sids, masks, K, fold, folds)
    nf = np.bincount(fold, minlength=folds)
    risk = np.zeros(2)
    for k in range(folds):
        if nf[k] == 0 or nf[k] == n:
            continue
        Fk = candidates(c - cf[k], n - nf[k], p, q, u0, WB0, rho_grid, tol=SELECT_FOLD_TOL, need={"eb", "dir"})[0]
        t = (cf[k] / nf[k] - q) / (p - q)
        risk += [float(((Fk[0] - t) ** 2).sum()), float(((Fk[2] - t) ** 2).sum())]
    base = 2 if risk[1] < risk[0] else 0
    theta = np.maximum(candidates(c, n, p, q, u0, WB0, rho_grid, need={"dir"})[0][2] if base else eb_row[0], 0.0)
    theta /= theta.sum()
    info = dict(info, stack_weights=dict(zip(STACK_CANDIDATES, np.eye(J)[base].tolist())), stack_folds=folds,
                stack_gain=float("nan"), stack_se=float("nan"), stack_used=False, stack_baseline=STACK_CANDIDATES[base],
                stack_skipped=f"select: noise ratio {noise_ratio(K, p, q):.3f} <= {ROUTE_MAX_NOISE_RATIO:g}")
    return theta, info


def stacked_estimate(c, n, p, q, sids, masks, rng, rho_grid, folds=STACK_FOLDS, cdf_table=None, gmodel=False):
    """The stacked estimate (see the module's docstring) and its diagnostics.

    ``c``: the support counts of all ``n`` users; ``sids``, ``masks``: every user's packed response set (for the
    folds' counts); ``rng``: the generator of the folds.  Returns ``(theta, info)``: ``info`` holds the full data's
    :func:`candidates` dict, ``stack_weights`` (dict candidate -> weight; all on ``'eb'`` when the guard refused the
    stack), ``stack_folds``, ``stack_gain`` (the cross-fitted squared risk of ``'eb'`` alone minus the stack's, summed
    over the folds), ``stack_se`` (its standard error from the per-category terms) and ``stack_used``
    (``stack_gain > STACK_Z * stack_se``), the gain and decision against ``stack_baseline`` (round P1: ``'eb'``, or
    ``'dir'`` where :func:`stack_baseline` picks it; when the guard refuses the stack, ``theta_`` is its estimate and
    ``stack_weights`` its unit vector).  ``cdf_table``: a Beta CDF table of
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
    J = len(STACK_CANDIDATES)
    route, eb_done = None, None
    if (STACK_ROUTE == "select" and STACK_FAST_NUMERICS and not gmodel and n > 1
            and noise_ratio(K, p, q) <= ROUTE_MAX_NOISE_RATIO):  # round S's option: P1's choice alone, on cheap folds
        return _select_estimate(c, n, p, q, sids, masks, rng, rho_grid, cdf_table)
    if STACK_ROUTE is True and STACK_FAST_NUMERICS and not gmodel:  # round RT: 'eb' first (candidates' call), then the route
        stats = {}
        eb_done = eb_estimate(c, n, p, q, fast=STACK_FAST_NUMERICS, tol=STACK_NPMLE_TOL, stats=stats)
        skip, reason, r_hat, R = stack_route(K, n, p, q, eb_done[1]["n_iter"], stats["atoms_used"], folds)
        route = dict(stack_predicted_cost=r_hat, stack_noise_ratio=R, stack_skipped=reason)
        if skip:  # 'eb''s estimate, as where the guard refuses the stack
            theta = np.maximum(eb_done[0], 0.0)
            theta /= theta.sum()
            info = dict(eb_done[1], rho=float("nan"), stack_weights=dict(zip(STACK_CANDIDATES, np.eye(J)[0].tolist())),
                        stack_folds=int(folds), stack_gain=float("nan"), stack_se=float("nan"), stack_used=False,
                        stack_baseline="eb", **route)
            return theta, info
    u0 = _common_grid(n, p, q)  # atoms independent of the counts, shared by every fit
    if STACK_FAST_NUMERICS and cdf_table is None:
        WB0 = DirichletRows(u0, K, rho_grid)
    else:
        WB0 = dirichlet_marginal_weights(u0, K, rho_grid, known=cdf_table)
    prep = {} if STACK_PREP_REUSE and not gmodel else None  # round T: the full data's likelihood and rho, once
    if not gmodel:
        eb_row, info = candidates(c, n, p, q, u0, WB0, rho_grid, eb_on_own_grid=True, only_eb=True, eb_done=eb_done,
                                  prep=prep)
    fold = user_folds(n, folds, rng)
    cf = fold_support_counts(sids, masks, K, fold, folds)
    nf = np.bincount(fold, minlength=folds)
    A, b = np.zeros((J, J)), np.zeros(J)
    held = []  # per fold: the candidates fitted without it, its unbiased estimate, its terms of A and b
    g_gain, g_ok = 0.0, True
    for k in range(folds):
        if nf[k] == 0 or nf[k] == n:
            continue
        if gmodel:  # the same EM as candidates' own (the same numbers), then the blend, both scored on fold k
            cm, nm = c - cf[k], n - nf[k]
            Fk, _, (w_m, Lm) = candidates(cm, nm, p, q, u0, WB0, rho_grid, tol=STACK_FOLD_NPMLE_TOL, return_fit=True)
            blend, ok = smooth_prior(Lm, u0, w_m, p, q, (cm / nm - q) / (p - q))
            Lk = _likelihood(cf[k], nf[k], p, q, u0)
            g_gain += predictive_log_score(Lm, blend, Lk) - predictive_log_score(Lm, w_m, Lk)
            g_ok = g_ok and ok
        else:
            Fk = candidates(c - cf[k], n - nf[k], p, q, u0, WB0, rho_grid, tol=STACK_FOLD_NPMLE_TOL)[0]
        t = (cf[k] / nf[k] - q) / (p - q)
        Ak, bk = Fk @ Fk.T, Fk @ t
        A += Ak
        b += bk
        held.append((Fk, t, Ak, bk))
    weights = simplex_least_squares(A, b) if held else np.eye(J)[0]
    base = stack_baseline(held, K, p, q) if not gmodel else 0  # round P1: 'eb', or 'dir' near the identity
    # the guard, nested: fold k's squared error of the stack weighted without fold k, minus that of the baseline
    # ('eb' alone, or round P1's) per category; the stack is kept only when the sum is below -STACK_Z standard errors
    d = np.zeros(K)
    for Fk, t, Ak, bk in held:
        a_k = simplex_least_squares(A - Ak, b - bk) if len(held) > 1 else weights
        d += (a_k @ Fk - t) ** 2 - (Fk[base] - t) ** 2
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
        need = {m for m, a in zip(STACK_CANDIDATES, weights) if a > 0} if STACK_FAST_NUMERICS else None
        full = np.vstack([eb_row, candidates(c, n, p, q, u0, WB0, rho_grid, need=need, prep=prep)[0][1:]])
        theta = np.maximum(weights @ full, 0.0)
    elif base:  # round P1: the baseline 'dir' alone, on all users
        weights = np.eye(J)[base]
        need = {STACK_CANDIDATES[base]} if STACK_FAST_NUMERICS else None
        theta = np.maximum(candidates(c, n, p, q, u0, WB0, rho_grid, need=need, prep=prep)[0][base], 0.0)
    else:  # 'eb' alone: e_1 @ full is the 'eb' row exactly (1 x + 0 y = x for finite y), so it is not formed
        weights = np.eye(J)[0]
        theta = np.maximum(eb_row[0], 0.0)
    theta /= theta.sum()
    info = dict(info, stack_weights=dict(zip(STACK_CANDIDATES, (float(x) for x in weights))), stack_folds=int(folds),
                stack_gain=gain, stack_se=se, stack_used=used, stack_baseline=STACK_CANDIDATES[base], **(route or {}))
    return theta, info
