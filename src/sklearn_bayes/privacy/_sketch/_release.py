"""The release mechanisms of :class:`PrivateCountSketch`: one small class per ``mechanism``.

A sketch of ``d`` rows is a table of counters; one stream element changes exactly ``d`` cells
by one, so protecting every cell with ``ε/d`` protects the element with ``ε``.  The four
mechanisms differ in where the noise goes and how long it stays (Chapter 4 of *Differentially
Private Frequency Sketches for Intermittent Queries on Large Data Streams*; the specification
is ``spec/private_count_sketch.md``).  Each class holds, next to its privacy argument:

- ``first_scale()``: the noise scale of its first release (``fit`` refuses an ``ε`` for which
  even it cannot be sampled);
- ``answer(sketch, cols, signs, k)``: the noise step of the ``(k+1)``-th query set, returning
  the mechanism's ε spent before amplification (the whole history's) and a ``bind`` function
  that commits the release and returns the estimates;
- ``spend``: the ε of its history (``use_and_forget``: :meth:`UseAndForget.spend`);
- ``merge_uses`` / ``check_merge`` / ``merged_spend``: its rule for merging disjoint shards;
- ``noise_draws``: the number of noise draws in a queried cell, from which
  :meth:`PrivateCountSketch.error_bound` takes its variance (Theorem 5), for the mechanisms
  that have one (``has_error_bound``).

Instances hold the stream's frozen values: ``eps0`` (the ε the mechanism runs with, before
subsampling amplification), ``depth`` and ``decay`` (``η``).  :func:`make_release` looks a class
up by its ``mechanism`` name.
"""

import math
from fractions import Fraction

import numpy as np

from sklearn_bayes._fast import _sketch
from sklearn_bayes.privacy._core import check_noise_scale

__all__ = [
    "CellPerturbation",
    "MECHANISMS",
    "MedianPerturbation",
    "Release",
    "UseAndForget",
    "UseAndKeep",
    "make_release",
    "scale_up",
]


def _median_sensitivity_bound(cols, width):
    """Algorithm 4's upper bound on ``m_Q``, capped by ``n_Q`` (``cols``: (depth, n_Q) distinct items).

    ``m_Q`` is the largest number of queries of ``Q`` that one stream element's ``d``
    sensitive cells can reach; ``m̂_Q = Σ_i max_j #{x ∈ Q : h_i(x) = j} >= m_Q`` and
    trivially ``m_Q <= n_Q`` (Proposition 1).
    """
    d, n_q = cols.shape
    if n_q == 0:
        return 0
    # per row, the largest number of queries sharing a column: O(d n_Q log), not O(d w)
    flat, counts = np.unique((np.arange(d, dtype=np.int64)[:, None] * width + cols).ravel(), return_counts=True)
    row_max = np.zeros(d, dtype=np.int64)
    np.maximum.at(row_max, flat // width, counts)
    return min(n_q, int(row_max.sum()))


#: Cap of a log noise scale before ``exp``: ``e^700`` is finite and far above ``MAX_NOISE_SCALE``
#: (``2**56``), so a capped scale is refused by :func:`check_noise_scale` as "exhausted", never
#: an ``OverflowError`` (``math.exp``) or an infinite scale (``np.exp``).
_LOG_SCALE_CAP = 700.0


def _forget_exhausted(uses, eta):
    return (
        f"use_and_forget: the geometric budget schedule of a cell is exhausted after {uses} uses "
        f"(decay={eta}); no further query can use it. Use a larger decay or mechanism='use_and_keep'. The noise"
    )


def _median_exhausted(k, eta):
    return (
        f"median_perturbation: the geometric budget schedule is exhausted at query set {k + 1} "
        f"(decay={eta}); no further query set can be answered. Use a larger decay or "
        "mechanism='use_and_keep'. The noise"
    )



#: Relative margin on the scales of the geometric schedules and on their charges.  A scale
#: ``exp(-(log(ε/d) + log1p(-η) + u log η))`` in ``[2**-10, 2**56]`` has terms of size below 50, so
#: its float evaluation errs by a few 1e-14 relatively (libm's log, log1p, exp within an ulp), and
#: a charge ``(ε/d)(-expm1(U log η))`` summed with ``math.fsum`` by less: ``2**-40`` (9.1e-13) is
#: 30 times that, so each release's realised loss ``Δ/b`` is at most its exact share of the schedule
#: and the charge at least the exact sum (checked with exact rationals in the tests).
_MARGIN = 1.0 + 2.0**-40

#: Largest bit length of ``η^k``'s exact denominator for which the schedules are rounded exactly
#: (``η = 0.5``: always; ``η = 0.9``: ``k`` up to about 1200); beyond it ``_MARGIN`` bounds them.
_EXACT_BITS = 1 << 16


def _pow_exact(eta, k):
    """``η^k`` as an exact ``Fraction`` of the double ``η``, or None when its denominator is too long."""
    f = Fraction(eta)
    return f**k if k * f.denominator.bit_length() <= _EXACT_BITS else None


def _round_up(x, exact):
    """The smallest double at least the rational ``exact`` (``x``: its float estimate, returned if larger)."""
    y = float(exact)  # correctly rounded to nearest
    if Fraction(y) < exact:
        y = math.nextafter(y, math.inf)
    return max(x, y) if x <= y * _MARGIN else y


def _scale_for(sensitivity, b, share):
    """The smallest double ``c`` with ``Δ/c <= share`` exactly (``share``: a Fraction); ``b``: its float estimate.

    An estimate above ``2**56`` (refused as exhausted, possibly capped) is returned as is.
    """
    if not b <= 2.0**56:
        return b
    return _round_up(0.0, Fraction(sensitivity) / share)


def scale_up(sensitivity, epsilon):
    """The smallest double ``b >= fl(sensitivity / epsilon)`` with ``sensitivity / b <= epsilon`` exactly.

    ``sensitivity / epsilon`` rounded to nearest may be one ulp below the exact quotient, and a
    Laplace (or discrete Laplace) release of scale ``b`` loses exactly ``Δ/b`` nats: up to
    ``8e-15`` above the ``ε`` charged.  The scale is rounded up (``nextafter``) until the exact
    rational ``Δ/b`` of the doubles is at most ``ε``.  Infinite when ``epsilon`` underflowed to 0.

    Examples
    --------
    >>> from fractions import Fraction
    >>> b = scale_up(3, 0.1)
    >>> Fraction(3) / Fraction(b) <= Fraction(0.1), b >= 3 / 0.1
    (True, True)
    """
    if not epsilon > 0:
        return math.inf
    b = sensitivity / epsilon
    num, eps = Fraction(sensitivity), Fraction(epsilon)
    while math.isfinite(b) and num > eps * Fraction(b):
        b = math.nextafter(b, math.inf)
    return b


def _scale(sensitivity, epsilon):
    """``sensitivity / epsilon``, infinite when ``epsilon`` underflowed to 0 (e.g. ``ε(1-η)`` for ε = 5e-324)."""
    return sensitivity / epsilon if epsilon > 0 else math.inf

def _add_integer_noise(est, noise, half):
    """``f̂ + n`` (``(2f̂ + n) / 2`` when ``half``) computed in int64, then rounded to float64 once.

    ``f̂`` is a median (or minimum) of integer counters: an integer, or a half-integer for an
    even depth, so ``m = f̂`` (``2f̂``) is an integer and the discrete Laplace mechanism releases
    the integer ``m + n``.  Adding the int64 noise to the float estimate in floating point
    would round ``n`` and then the sum, so the output would depend on the low bits of ``f̂``
    and not only on ``m + n`` (holes once ``|n| >= 2**53``: an infinite privacy loss with
    positive probability).  Here the float output is a function of ``m + n`` alone
    (``fl(m + n)``, halved exactly), hence post-processing of the private integer.

    Raises
    ------
    ValueError
        If ``m`` or ``m + n`` would leave int64 (nothing is released).
    """
    twice = 2.0 * est if half else est
    if np.any(np.abs(twice) >= 2.0**62):
        raise ValueError(
            "median_perturbation: an estimate is too large (|f| >= 2**62) to add the integer noise exactly."
        )
    m = np.rint(twice).astype(np.int64)
    total = m + noise
    if np.any(((m ^ total) & (noise ^ total)) < 0):
        raise ValueError(
            "median_perturbation: an estimate plus its noise would overflow int64; use a larger epsilon."
        )
    out = total.astype(np.float64)
    return out / 2.0 if half else out


class Release:
    """A release mechanism of the sketch: its noise scale, noise step, spend and merge rule.

    Parameters
    ----------
    eps0 : float
        The ε the mechanism runs with (``ε₀ = ln(1 + (e^ε - 1)/ρ)`` under subsampling at rate ρ).
    depth : int
        Number of rows ``d``.
    decay : float
        Ratio ``η`` of the geometric budget schedules (used by the mechanisms that have one).
    """

    #: The ``mechanism`` parameter's value.
    name = None
    #: Whether a pan-private start (noise ``N(d/ε)`` in every cell) fits the mechanism.
    pan_private = False
    #: Whether the stream is frozen after the first query (a static release).
    static = False
    #: Whether ``error_bound`` covers the mechanism (all four do).
    has_error_bound = True
    #: Whether the noise of the releases stays in ``table_`` (else the table holds exact counts).
    keeps_noise = False
    #: Whether each row's noisy cell value is itself a differentially private release (so that
    #: ``lower_bound`` / ``upper_bound`` may read the released row values of a query set).
    releases_rows = False

    def __init__(self, eps0, depth, decay):
        self.eps0 = eps0
        self.depth = depth
        self.decay = decay

    def first_scale(self):
        """Smallest noise scale of the first release: if even it is too large, no query can be answered."""
        return scale_up(self.depth, self.eps0)

    def answer(self, sketch, cols, signs, k):
        """The noise step of the ``(k+1)``-th query set of distinct items at ``cols``/``signs`` (d, n).

        Nothing is bound: returns ``(chain0, bind)``, the ε of the history before amplification
        including this release, and a function that commits the release (cannot fail) and returns
        the estimates.  ``sketch`` provides the curator state (``table_``, ``uses_``) and the
        noise steps (``_noisy_cells``, ``_draw_noise``, ``_estimate``).
        """
        raise NotImplementedError

    def merge_uses(self, uses_a, uses_b):
        """The use counts of the union of two disjoint shards: the noise counts add up."""
        return uses_a + uses_b

    def check_merge(self, n_query_sets_a, n_query_sets_b):
        """Refuse a merge the mechanism cannot account for (none by default)."""

    def merged_spend(self, chain0, uses):
        """The merged sketch's ε before amplification, from the larger of the shards' ``chain0``."""
        return chain0

    def noise_draws(self, draws, pan_draws):
        """Noise draws in the queried cells for a query made now, from their ``draws`` so far (d, n)."""
        raise NotImplementedError

    def released_noise(self, sketch, cols):
        """``(scale, draws)`` (d, n) of the noise in the row values just released (after ``bind``)."""
        raise NotImplementedError

    def row_noise_variance(self, sketch, cols, var_of_scale):
        """Variance (d, n) of the noise in each row's value for a query made now (``error_bound``).

        ``var_of_scale`` maps a noise scale to the variance of one draw of the stream's noise.
        """
        draws = self.noise_draws(np.take_along_axis(sketch.uses_, cols, axis=1) + sketch._pan_draws, sketch._pan_draws)
        return draws * var_of_scale(scale_up(self.depth, self.eps0))

    def answer_noise_scale(self, sketch, cols):
        """``(scale, factor)`` of the noise added to the answers themselves (``factor * N(scale)``), or None."""
        return None

    def table_noise_draws(self, sketch):
        """Noise draws of scale ``d/ε`` held by each cell of ``table_`` (0 where the table is exact)."""
        if not self.keeps_noise:
            return np.zeros_like(sketch.uses_)
        return sketch.uses_ + sketch._pan_draws


class UseAndKeep(Release):
    """Use-and-keep (Algorithm 6): a query set adds ``N(d/ε)`` once to each cell it touches, for good.

    Privacy: each cell is a counter that receives fresh noise ``N(d/ε)`` at every release and
    keeps it, so its released increments are the true increments plus independent noise; such a
    counter is ``ε/d``-DP whatever the number of releases (Lemma 1), and one element touches
    ``d`` cells: ε-DP for any number of query sets (Theorem 4).  The spend is ``ε₀`` from the first
    query set on.  Merging adds the tables (noise included) and the noise counts: for an
    individual of one shard a later release is post-processing of that shard's noisy counter
    plus independent quantities.  Error: ``Var C[i, h_i(x)] <= ||f||²/w + u_i Var N(d/ε)`` with
    ``u_i`` the cell's noise draws, this query's included (Theorem 5, corrected).
    """

    name = "use_and_keep"
    pan_private = True
    releases_rows = True
    keeps_noise = True

    def _cells(self, sketch, cols):
        return _sketch.distinct_cells(cols, sketch.table_.shape[1])

    def answer(self, sketch, cols, signs, k):
        cells = self._cells(sketch, cols)
        new = sketch._noisy_cells(cells, scale_up(self.depth, self.eps0), f"{self.name}: the noise")
        flat_uses = sketch.uses_.reshape(-1)

        def bind():  # the noise stays in the cells (in place: cannot fail)
            sketch.table_.reshape(-1)[cells] = new
            flat_uses[cells] += 1
            self.rows = sketch._row_values(sketch.table_, cols, signs)
            return sketch._estimate(sketch.table_, cols, signs)

        return self.eps0, bind

    def noise_draws(self, draws, pan_draws):
        return draws + 1  # this query's draw

    def released_noise(self, sketch, cols):
        draws = np.take_along_axis(sketch.uses_, cols, axis=1) + sketch._pan_draws
        return np.full(draws.shape, scale_up(self.depth, self.eps0)), draws


class CellPerturbation(UseAndKeep):
    """Cell perturbation (static): each cell gets ``N(d/ε)`` once, at its first use.

    Privacy: the noisy cells are the Laplace (or discrete Laplace) mechanism of sensitivity one
    per cell at ``ε/d``; one element touches ``d`` cells, so the noised table is ε-DP and every
    answer, now or later, is post-processing of it (Section 4.3).  It needs the stream complete
    before the first query (``static``), and merging is refused after a release.  Error as for
    use-and-keep, with one draw per cell (plus the pan-private start).
    """

    name = "cell_perturbation"
    static = True

    def _cells(self, sketch, cols):
        cells = _sketch.distinct_cells(cols, sketch.table_.shape[1])
        return cells[sketch.uses_.reshape(-1)[cells] == 0]

    def check_merge(self, n_query_sets_a, n_query_sets_b):
        if n_query_sets_a or n_query_sets_b:
            raise ValueError(
                "cannot merge cell_perturbation sketches after a release; merge the shards before querying."
            )

    def noise_draws(self, draws, pan_draws):
        return np.maximum(draws, 1 + pan_draws)

    def released_noise(self, sketch, cols):
        draws = np.take_along_axis(sketch.uses_, cols, axis=1) + sketch._pan_draws  # one draw, plus the start
        return np.full(draws.shape, scale_up(self.depth, self.eps0)), draws


class UseAndForget(Release):
    """Use-and-forget (Algorithm 5): the table stays exact; the ``u``-th use of a cell adds fresh noise.

    Privacy: the ``u``-th use (``u = 1, 2, ...``) of a cell releases it with noise ``N(1/ε'_u)``,
    ``ε'_u = (ε/d)(1-η)η^{u-1}``, a geometric schedule whose sum is ``ε/d`` per cell; by
    composition over a cell's uses and over the ``d`` cells of an element the spend is
    ``Σ_i max_j (ε/d)(1 - η^{U_ij})`` (:meth:`spend`), at most ε.  (The spec's fixes: the loop of
    Algorithm 5 runs over the ``d`` rows, and the scale is ``1/ε'``, not ``d/ε'``.)  Merging takes
    the element-wise maximum of the use counts so that no cell's schedule restarts.
    """

    name = "use_and_forget"
    releases_rows = True

    def first_scale(self):
        return _scale(self.depth, self.eps0 * (1.0 - float(self.decay)))

    def spend(self, row_max):
        """``Σ_i max_j (ε₀/d)(1 - η^{U_ij})`` from the rows' largest use counts ``max_j U_ij``."""
        d, eta = row_max.shape[0], float(self.decay)
        shares = (self.eps0 / d) * -np.expm1(row_max * math.log(eta))
        approx = math.fsum(shares.tolist())
        powers = [_pow_exact(eta, int(u)) for u in row_max.tolist()]
        if any(p is None for p in powers):
            return min(self.eps0, approx * _MARGIN)
        # rounded up from the exact sum (at most ε₀: the exact sum is below it)
        return min(self.eps0, _round_up(approx, Fraction(self.eps0) / d * sum(1 - p for p in powers)))

    def scales(self, uses):
        """Scales ``1/ε'_{u+1}`` of the next use of cells used ``uses`` times, rounded up (exactly, or ``_MARGIN``)."""
        d, eta = self.depth, float(self.decay)
        # ε'_u = (ε/d)(1-η)η^u in log space: the scale is checked, never inf or 0
        uses = np.asarray(uses)
        log_scale = -(math.log(self.eps0 / d) + math.log1p(-eta) + uses * math.log(eta))
        scale = np.exp(np.minimum(log_scale, _LOG_SCALE_CAP))
        out = np.empty(scale.shape)
        for u in np.unique(uses).tolist():  # up: Δ/b at most the exact share (ε/d)(1-η)η^u
            power = _pow_exact(eta, int(u))
            b = float(scale[uses == u].flat[0])
            share = None if power is None else Fraction(self.eps0) / d * (1 - Fraction(eta)) * power
            out[uses == u] = b * _MARGIN if share is None else _scale_for(1, b, share)
        return out

    def answer(self, sketch, cols, signs, k):
        d, w = sketch.table_.shape
        eta = float(self.decay)
        flat_uses = sketch.uses_.reshape(-1)
        cells = _sketch.distinct_cells(cols, w)
        scale = self.scales(flat_uses[cells])
        new = sketch._noisy_cells(
            cells, scale, _forget_exhausted(int(flat_uses[cells].max()) if cells.size else 0, eta),
        )
        noisy = sketch.table_.copy()
        noisy.reshape(-1)[cells] = new
        est = sketch._estimate(noisy, cols, signs)
        row_max = sketch.uses_.max(axis=1)  # the use counts after this query, without changing them
        np.maximum.at(row_max, cells // w, flat_uses[cells] + 1)

        def bind():
            flat_uses[cells] += 1
            self.rows = sketch._row_values(noisy, cols, signs)
            return est

        return self.spend(row_max), bind

    def row_noise_variance(self, sketch, cols, var_of_scale):
        # the table is exact: a query now adds one fresh draw of 1/ε'_{u+1} to each cell (u: its uses so far);
        # a cell whose schedule is exhausted refuses the error bound as it would refuse the query
        uses = np.take_along_axis(sketch.uses_, cols, axis=1)
        eta = float(self.decay)
        scale = self.scales(uses)
        check_noise_scale(scale, _forget_exhausted(int(uses.max()) if uses.size else 0, eta))
        return np.vectorize(var_of_scale, otypes=[float])(scale)

    def released_noise(self, sketch, cols):
        # after bind the cell's use count is u: its released value held one fresh draw of 1/ε'_u
        uses = np.take_along_axis(sketch.uses_, cols, axis=1)
        scale = self.scales(uses - 1)
        return scale, np.ones_like(uses)

    def merge_uses(self, uses_a, uses_b):
        return np.maximum(uses_a, uses_b)

    def merged_spend(self, chain0, uses):
        if chain0 > 0:  # the merged schedules continue from max(U_a, U_b)
            chain0 = max(chain0, self.spend(uses.max(axis=1)))
        return chain0


class MedianPerturbation(Release):
    """Median perturbation: the ``(k+1)``-th query set gets ``f̂_x + N(m_Q/ε_k)``, ``ε_k = ε(1-η)η^k``.

    Privacy: one element changes the median estimate of at most ``m_Q`` queries of ``Q``, each by
    at most one, so the answers have L1 sensitivity ``m_Q`` and the Laplace mechanism of scale
    ``m_Q/ε_k`` is ``ε_k``-DP (Section 4.3, Proposition 1); ``m_Q`` is bounded by Algorithm 4's
    ``min(n_Q, Σ_i max_j #{x ∈ Q: h_i(x)=j})`` (:func:`_median_sensitivity_bound`).  The geometric
    schedule composes to ``ε(1 - η^{k+1})`` after ``k+1`` query sets, at most ε.  For an even
    ``d`` the Count Sketch median is a half-integer, so discrete noise goes on ``2 f̂_x``
    (sensitivity ``2 m_Q``).  The table stays exact; merging continues the schedule from the
    larger query-set counter.
    """

    name = "median_perturbation"

    def first_scale(self):
        return _scale(1.0, self.eps0 * (1.0 - float(self.decay)))

    def scale(self, sensitivity, k):
        """Scale ``Δ/ε_k`` of the ``(k+1)``-th query set, ``ε_k = ε(1-η)η^k``, rounded up (exactly, or ``_MARGIN``)."""
        eta = float(self.decay)
        log_scale = math.log(sensitivity) - (math.log(self.eps0) + math.log1p(-eta) + k * math.log(eta))
        b, power = math.exp(min(log_scale, _LOG_SCALE_CAP)), _pow_exact(eta, k)
        if power is None:
            return b * _MARGIN
        return _scale_for(sensitivity, b, Fraction(self.eps0) * (1 - Fraction(eta)) * power)  # Δ/b <= ε_k exactly

    def charge(self, k):
        """ε spent after ``k + 1`` query sets, ``ε(1 - η^{k+1})`` rounded up (exactly, or ``_MARGIN``), at most ε."""
        eta = float(self.decay)
        approx, power = self.eps0 * -math.expm1((k + 1) * math.log(eta)), _pow_exact(eta, k + 1)
        if power is None:
            return min(self.eps0, approx * _MARGIN)
        return min(self.eps0, _round_up(approx, Fraction(self.eps0) * (1 - power)))

    def answer(self, sketch, cols, signs, k):
        d, w = sketch.table_.shape
        eps0, eta = self.eps0, float(self.decay)
        m_q = _median_sensitivity_bound(cols, w)
        half = sketch._fp("noise") == "discrete_laplace" and sketch._fp("kind") == "count" and d % 2 == 0
        scale = self.scale((2 if half else 1) * m_q, k)
        check_noise_scale(scale, _median_exhausted(k, eta))
        noise = sketch._draw_noise(scale, cols.shape[1])
        est = sketch._estimate(sketch.table_, cols, signs)
        if noise.dtype.kind == "i":  # exact: the integer f̂ + n (2f̂ + n), rounded to float once
            est = _add_integer_noise(est, noise, half)
        else:
            est = est + noise

        def bind():
            return est

        return self.charge(k), bind

    def row_noise_variance(self, sketch, cols, var_of_scale):
        return np.zeros(cols.shape)  # the rows are exact; the noise goes on the answers

    def answer_noise_scale(self, sketch, cols):
        """The next query set's (``k = n_query_sets_``) noise on the answers, for the items at ``cols`` as the set."""
        d, w = sketch.table_.shape
        eta, k = float(self.decay), sketch.n_query_sets_
        m_q = max(_median_sensitivity_bound(cols, w), 1)
        half = sketch._fp("noise") == "discrete_laplace" and sketch._fp("kind") == "count" and d % 2 == 0
        scale = self.scale((2 if half else 1) * m_q, k)
        check_noise_scale(scale, _median_exhausted(k, eta))  # the query would be refused: so is its bound
        return scale, (0.5 if half else 1.0)


#: The release classes by ``mechanism`` name (in the byte format's order).
MECHANISMS = {cls.name: cls for cls in (UseAndKeep, UseAndForget, MedianPerturbation, CellPerturbation)}


def make_release(mechanism, eps0, depth, decay):
    """The release of the mechanism named ``mechanism`` for a stream of these frozen values."""
    return MECHANISMS[mechanism](eps0, depth, decay)
