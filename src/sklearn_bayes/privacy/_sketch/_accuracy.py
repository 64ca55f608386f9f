"""The accuracy statements of :class:`PrivateCountSketch`: intervals around its answers and error bars.

A mixin of the estimator (its methods read the fitted stream through the estimator's own
helpers: ``_fp``, ``_release``, ``_validated_keys``, ``_locate``); every method is
post-processing of released values or of public quantities (see each docstring).
"""

import math
import numbers
import warnings

import numpy as np
from sklearn.utils.validation import check_is_fitted

from sklearn_bayes.privacy._core import noise_variance
from sklearn_bayes.privacy._sketch._bounds import (
    count_kappa,
    count_min_collision,
    count_min_noise,
    estimate_f2,
    kappas,
    lent_pool,
    min_finite_items,
    noise_quantile,
)
from sklearn_bayes.privacy._sketch._release import MECHANISMS, scale_up
from sklearn_bayes.utils import serialized
from sklearn_bayes.utils._intervals import warn_if_swapped_coverage
from sklearn_bayes.utils._validation import external_stacklevel

__all__ = []


class _AccuracyMixin:
    """``lower_bound``, ``upper_bound`` and ``error_bound`` of :class:`PrivateCountSketch`."""

    @serialized
    def lower_bound(self, items, confidence=0.95):
        """Lower end of the interval around each item's answer in the last query set.

        ``[lower_bound(items, c), upper_bound(items, c)]`` is an interval at confidence ``c``
        for the true count of each item *at the time of the last query set* (``query`` or
        ``transform``), in the style of DataSketches' ``get_lower_bound``: the last answer
        minus a bound (each end misses with probability about ``(1 - c)/2``).  Every item must
        have been in the last query set.  Post-processing: the interval is computed from the
        released answers and the released noisy row values only, so it spends no budget and
        ``epsilon_spent_`` does not change.  See the Notes for the maths.

        Parameters
        ----------
        items : array-like of shape (n_items,) or (n_items, n_features_in_)
            Items of the last query set.
        confidence : float, default=0.95
            Confidence level of the two-sided interval, in (0, 1).

        Returns
        -------
        lower : ndarray of shape (n_items,)
            ``answer - κ`` (Count Sketch) or ``answer - q`` (Count-Min: collisions plus noise).
            Not clipped at 0 (clip it if a count interval is wanted).  ``-inf`` when the
            query sets released so far hold too few row values to bound the error at this
            confidence: a first query set of fewer than 3 items at ``depth=5`` and
            ``confidence=0.95`` (2 items for Count-Min; 8 and 4 at 0.99), or any set at
            ``depth=1`` (Count Sketch).  A ``UserWarning`` then names the number of items
            that gives finite bounds.

        Notes
        -----
        Write ``δ = 1 - confidence`` and ``v_i(x)`` the released value of row ``i`` for item
        ``x`` (the noisy cell, signed for the Count Sketch), ``v_i(x) = f_x + Y_i``; the rows
        are independent (independent hashes and noise).

        **Count Sketch** (``answer = median_i v_i``): ``Y_i`` = signed collisions + noise is
        symmetric about 0 (random signs; symmetric noise).  The median exceeds ``f_x + κ`` only
        if ``t`` rows do (``t = ⌈d/2⌉``; ``d/2`` for an even ``d``), so with
        ``p = P(|Y_i| > κ)``, ``P(|answer - f_x| > κ) <= 2 P(Binomial(d, p/2) >= t)``.  We
        solve ``2 P(Binomial(d, p/2) >= t) = 0.8 δ`` for ``p`` and take ``κ`` as a
        distribution-free upper confidence bound, at ``1 - 0.2 δ``, of the ``1 - p`` quantile of
        ``|Y|``: an order statistic of the pool of released residuals ``|v_i(y) - answer_y|``
        over the rows and items ``y`` of the last query set (its own only, unless they are too
        few for a finite ``κ`` -- under 3 items at ``d = 5`` and 95 % -- when the newest earlier sets lend
        theirs, scaled up to the current noise variance, until it is finite: earlier releases
        have fewer collisions and less noise), an item whose rows carry another noise level (mean noise variance over its rows,
        in half-octave classes: use-and-forget's schedule, use-and-keep's kept draws) using the
        residuals of its own class when they are at least 500, each residual divided by
        ``sqrt(1 - 2/d + v_d)`` (``v_d`` the variance of the median of ``d`` standard normals):
        for i.i.d. Gaussian rows ``Var(v_i - answer) = σ²(1 - 2/d + v_d)``, so the calibrated
        residuals have the rows' variance, while a row hit by a heavy item keeps its (large)
        residual.  The split of ``δ`` is a union bound: the interval misses only if the quantile
        is under-estimated (``<= 0.2 δ``) or the median is far (``<= 0.8 δ``).  The residuals
        stand in for draws of ``Y`` and the pool mixes items whose rows carry different numbers
        of noise draws: the interval is a calibrated estimate, not a guarantee (its measured
        coverage is in the user guide, :ref:`uncertainty`).  For an even ``d`` the binomial step
        is loose (the mean of the two middle rows rarely exceeds ``κ`` when ``d/2`` rows do), so
        the level ``1 - p`` is found instead by drawing ``d`` rows from the pool (random signs,
        20,000 times, a fixed seed) and taking the pool's fraction below the ``1 - 0.8 δ``
        quantile of their ``|median|``: a plug-in of the rows' law.  With too few residuals to certify the quantile (a first query
        set of one or two items at ``depth=5``; ``depth=1``) it is infinite.

        **Count-Min** (``answer = min_i v_i``, ``Y_i = C_i + N_i`` with collisions ``C_i >= 0``):
        ``f_x = answer - min_i Y_i``.  Lower end: ``P(min_i Y_i > q) = Π_i P(Y_i > q)``, and a
        released value ``v_i(y) = f_y + Y_i(y) >= Y_i(y)`` is stochastically larger than
        ``Y_i``, so ``q`` is the upper confidence bound (at ``1 - 0.2 δ/2``) of the
        ``1 - (0.8 δ/2)^{1/d}`` quantile of the pool of released values (conservative when the
        query sets hold heavy items; with frequent items only it is of the order of their counts:
        add at least two probe items per queried item that cannot occur in the stream -- their
        values are pure ``Y_i`` -- as the user guide explains).  Upper end: ``min_i Y_i >= min_i N_i`` because
        collisions only add, so ``f_x <= answer - min_i N_i``; ``a`` with
        ``P(min_i N_i < -a) <= δ/2`` is computed exactly from the noise law (the sum of the
        cell's Laplace or discrete Laplace draws; the item's largest scale and number of draws
        over its rows), with no estimation: ``upper = answer + a``.

        Not available for ``mechanism="median_perturbation"`` (its rows are exact, unreleased
        counts: an interval would need budget of its own) nor with ``sampling_rate < 1``.
        """
        return self._interval(items, confidence, "lower")[0]

    @serialized
    def upper_bound(self, items, confidence=0.95):
        """Upper end of the interval around each item's answer in the last query set.

        See :meth:`lower_bound` (the same interval; the maths is in its Notes).  Post-processing:
        spends no budget.

        Parameters
        ----------
        items : array-like of shape (n_items,) or (n_items, n_features_in_)
            Items of the last query set.
        confidence : float, default=0.95
            Confidence level of the two-sided interval, in (0, 1).

        Returns
        -------
        upper : ndarray of shape (n_items,)
            ``answer + κ`` (Count Sketch) or ``answer + a`` (Count-Min: the noise part only,
            collisions only add).  ``+inf`` (Count Sketch) when the query sets released so far
            hold too few row values, as for :meth:`lower_bound` (fewer than 3 items in a first
            query set at ``depth=5`` and ``confidence=0.95``): a ``UserWarning`` names the fix.
        """
        return self._interval(items, confidence, "upper")[1]

    def _interval(self, items, confidence, end):
        check_is_fitted(self)
        self._check_stream_params("lower_bound / upper_bound")
        if isinstance(confidence, bool) or not isinstance(confidence, numbers.Real) or not 0 < confidence < 1:
            raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}.")
        warn_if_swapped_coverage(confidence, "confidence")  # confidence=0.05 is a 5 % interval (review HNR F2)
        mech, rate = self._fp("mechanism"), self._fp("sampling_rate")
        if not MECHANISMS[mech].releases_rows:
            raise ValueError(
                f"lower_bound / upper_bound need released row values, which mechanism={mech!r} does not "
                "release (its table is exact): an interval would spend budget of its own. Use "
                "mechanism='use_and_keep'."
            )
        if rate != 1:
            raise ValueError(f"lower_bound / upper_bound need sampling_rate=1, got {rate!r}.")
        last = getattr(self, "_last_release", None)
        if last is None:
            raise ValueError(
                "lower_bound / upper_bound bound the answers of the last query set, and this sketch has "
                "answered none since it was fitted, merged or loaded: call query(items) first."
            )
        keys, _ = self._validated_keys(items, "items", reset=False, min_samples=0, check_names=False)
        pos = np.searchsorted(last["keys"], keys)
        pos = np.minimum(pos, last["keys"].shape[0] - 1)
        missing = int(np.sum(last["keys"][pos] != keys)) if keys.shape[0] else 0
        if missing:
            raise ValueError(
                f"items holds {missing} item(s) that were not in the last query set; lower_bound / upper_bound "
                "bound the answers of the last query set only: query them first."
            )
        answers = last["answers"][pos]
        delta = 1.0 - float(confidence)
        d = self.table_.shape[0]
        count = self._fp("kind") == "count"
        sets = self._bound_pool
        sets = [(sets, 0.0)] if isinstance(sets, np.ndarray) else sets  # (a pickle of an older version)
        pool = lent_pool(sets, (lambda p: count_kappa(p, d, delta)) if count else
                         (lambda p: count_min_collision(p, d, delta / 2)), rescale=count)
        part = np.empty(answers.shape[0])  # κ (Count Sketch) or q (Count-Min) per item, by noise class
        cls = last["cls"][pos]
        for c in np.unique(cls):
            own = last["class_pools"].get(int(c), pool)
            part[cls == c] = count_kappa(own, d, delta) if count else count_min_collision(own, d, delta / 2)
        if count or end == "lower":  # (Count-Min's upper end is the noise's exact quantile: finite)
            self._warn_if_infinite(part, d, delta, count)
        if count:
            return answers - part, answers + part
        a = count_min_noise(self._fp("noise"), last["scale"][pos], last["draws"][pos], d, delta / 2)
        return answers - part, answers + a

    def _warn_if_infinite(self, part, d, delta, count):
        """Warn (naming the fix) when some items' interval is infinite: too few released values (review HNR F3)."""
        n_inf = int(np.sum(~np.isfinite(part)))
        if not n_inf:
            return
        need = min_finite_items(d, delta, count)
        ends = "both ends are" if count else "the lower end is"
        if need is None:
            fix = ("depth=1 releases no row residual to estimate the error from: fit with depth >= 3"
                   if count and d == 1 else "use a lower confidence")
        else:
            fix = (f"query at least {need} items in one query set (at depth={d} and confidence={1 - delta:.6g}; "
                   "add items you do not need -- under use-and-keep a larger set spends no more budget) or "
                   "use a lower confidence")
        warnings.warn(
            f"lower_bound / upper_bound: {ends} infinite for {n_inf} item(s): the last query set (with the "
            "earlier sets it may borrow from) released too few row values to bound the error at this "
            f"confidence. To get finite bounds, {fix}.",
            UserWarning,
            stacklevel=external_stacklevel(),
        )

    @serialized
    def error_bound(self, items, confidence=0.95, f2=None, method="auto"):
        """Error bar ``κ`` with ``P(|f̂_x - f_x| > κ) <= 1 - confidence`` for a query made now.

        With ``u_i`` noise draws in the cell of ``x`` in row ``i`` (its previous uses, plus
        the one this query would add for ``use_and_keep``, plus the pan-private start),
        each row's error has mean 0 and variance at most
        ``σ_i² = ||f||²₂/w + u_i Var N(d/ε)``.  Two valid bounds follow (see Notes):

        - ``"binomial"``: the exact binomial tail of the number of rows whose error
          exceeds ``κ`` (each with Chebyshev probability at most ``max_i σ_i²/κ²``, rows
          independent); always finite.
        - ``"theorem5"``: the corrected Theorem 5, ``P(|f̂_x - f_x| > κ) <=
          exp(-(d/2)(1-2λ)) [2(1-λ)]^{d/2}`` with ``λ = Σ_i σ_i² / (d κ²)`` for
          ``κ² > 2 max_i σ_i²``.  It cannot go below ``(2/e)^{d/2}``, so it is ``inf``
          when the confidence needs more rows (95 % needs ``d >= 20``); it can beat the
          binomial bound at large ``d`` when the rows' variances differ.
        - ``"auto"`` (the default): the smaller of the two, at the full confidence.

        Every mechanism is covered (``kind="count"``): ``use_and_keep`` and
        ``cell_perturbation`` as above; ``use_and_forget`` keeps an exact table, so a query
        now adds one fresh draw of its next scale ``1/ε'_{u_i+1}`` to each row
        (``σ_i² = ||f||²₂/w + Var N(1/ε'_{u_i+1})``); ``median_perturbation`` has exact rows
        (``σ_i² = ||f||²₂/w``) and adds ``N(m_Q/ε_k)`` to the median, ``Q`` = ``items`` as
        the next query set: ``κ`` is the rows' bound at ``δ/2`` plus the exact ``1 - δ/4``
        quantile of that noise (a union bound).  These bounds hold for every frequency vector
        with the given ``||f||²₂``, so on skewed streams they are far wider than the error
        (tens of times on Zipf streams): for the answers of a query set,
        :meth:`lower_bound` / :meth:`upper_bound` give calibrated intervals (and cover
        Count-Min).

        Privacy: the cell-use counts depend only on the (public) hashes and query
        sets, so with a public ``f2`` this is post-processing and spends nothing.
        With ``f2=None``, ``||f||²₂`` is estimated from the curator's table (the
        median over rows of ``Σ_j C_ij²`` minus the known noise variance): a
        function of unreleased state, meant for the curator; publish error bars
        computed from a public or separately privatised ``f2``.  (With an estimated
        ``f2`` the bound is a plug-in estimate, not a guarantee.)

        Parameters
        ----------
        items : array-like of shape (n_items,)
            Items, as for :meth:`query`.
        confidence : float, default=0.95
            Probability in (0, 1) that the error stays within the bound.
        f2 : float or None, default=None
            The second frequency moment ``||f||²₂ = Σ_x f_x²`` (or an upper bound).
        method : {"auto", "binomial", "theorem5"}, default="auto"
            Which bound; ``"auto"`` is the tightest of the valid bounds (finite).

        Returns
        -------
        kappa : ndarray of shape (n_items,)
            Bound on the absolute error of each item's estimate (in counts).

        Notes
        -----
        **Validity.**  Write ``Y_i = s_i(x) C[i, h_i(x)] - f_x``: the signed sum of the
        counts of the other items hashed to the cell (mean 0 by the sign hash, variance
        at most ``||f||²₂/w``) plus the ``u_i`` independent noise draws in the cell
        (mean 0, variance ``u_i Var N(d/ε)``), so ``E Y_i = 0`` and ``Var Y_i <= σ_i²``;
        the rows are independent (independent hashes and noise per row).  The estimate's
        error is ``median_i Y_i``, and ``|median_i Y_i| > κ`` needs at least
        ``t = ceil(d/2)`` rows with ``|Y_i| > κ`` (for an even ``d`` the median is the mean
        of the two middle values, so the upper one, hence the ``d/2`` largest, exceed
        ``κ``).  By Chebyshev each row exceeds with probability ``p_i <= p = max_i σ_i²/κ²``,
        and the number of rows that exceed is stochastically at most ``Binomial(d, p)``:
        ``"binomial"`` solves ``P(Binomial(d, p) >= t) = 1 - confidence`` for ``p`` and
        returns ``κ = sqrt(max_i σ_i² / p)``.  ``"theorem5"`` is Lemma 2's Chernoff bound
        on the same event.  Both ``κ`` are functions of ``σ²``, ``d`` and the confidence
        only -- fixed before the stream's randomness (hashes, noise) is drawn -- so their
        minimum is one of two fixed numbers, each exceeded with probability at most
        ``1 - confidence``: ``"auto"`` needs no union bound and no split of the
        confidence.
        """
        check_is_fitted(self)
        self._check_stream_params("error_bound")
        kind, rate = self._fp("kind"), self._fp("sampling_rate")
        release = self._release
        if kind != "count" or not release.has_error_bound:
            raise ValueError(
                "error_bound implements Theorem 5, for kind='count'; got "
                f"kind={kind!r}. For a Count-Min sketch use lower_bound / upper_bound after a query."
            )
        if rate != 1:
            raise ValueError(f"error_bound needs sampling_rate=1, got {rate!r}.")
        if isinstance(confidence, bool) or not isinstance(confidence, numbers.Real) or not 0 < confidence < 1:
            raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}.")
        warn_if_swapped_coverage(confidence, "confidence")
        if method not in ("auto", "binomial", "theorem5"):
            raise ValueError(f"method must be 'auto', 'binomial' or 'theorem5', got {method!r}.")
        keys, _ = self._validated_keys(items, "items", reset=False, min_samples=0, check_names=False)
        d, w = self.table_.shape
        var1 = float(noise_variance(self._fp("noise"), scale_up(d, self._base_epsilon())))
        if f2 is None:
            f2 = estimate_f2(self.table_, release.table_noise_draws(self), var1)
        else:
            if isinstance(f2, bool) or not isinstance(f2, numbers.Real) or not (math.isfinite(f2) and f2 >= 0):
                raise ValueError(f"f2 must be a finite number >= 0, got {f2!r}.")
            f2 = float(f2)
        cols, _ = self._locate(keys)
        noise = self._fp("noise")
        row_var = release.row_noise_variance(self, cols, lambda scale: float(noise_variance(noise, scale)))
        delta = 1.0 - float(confidence)
        answer_noise = release.answer_noise_scale(self, cols) if keys.shape[0] else None
        if answer_noise is None:
            return kappas(f2 / w + row_var, delta, method)
        # median perturbation: |error| <= |median error| + |answer noise|, each at delta / 2 (union bound)
        scale, factor = answer_noise
        a = factor * noise_quantile(noise, scale, 1, delta / 4)
        return kappas(f2 / w + row_var, delta / 2, method) + a
