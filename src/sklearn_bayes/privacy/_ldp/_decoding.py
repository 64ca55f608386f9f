"""How ``theta_`` is decoded from the recorded responses, and its diagnostics (issue 28).

:class:`DecoderMixin` gives :class:`~sklearn_bayes.AdaptiveLDPFrequencyEstimator` the choice of
decoder (``decoder``: the exact posterior's draws, the posterior given the support counts of
:mod:`._count_posterior`, the exact posterior by importance sampling of :mod:`._count_importance`, or the
empirical-Bayes decoder of :mod:`._empirical_bayes` for the static mechanisms), the posterior draws behind them (``_exact_draws``, ``_adaptive_draws``), the
final estimate with its diagnostics (``_final_theta``) and ``convergence_``;
:func:`warn_if_unconverged` emits the ``ConvergenceWarning``.
"""

import copy
import numbers
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from sklearn_bayes.privacy._ldp._count_importance import (
    EXACT_WORK_MAX,
    MIN_ESS_FRACTION,
    PARETO_K_MAX,
    exact_work_ratio,
    importance_adaptive,
    importance_fixed,
    tempering,
)
from sklearn_bayes.privacy._ldp._count_posterior import (
    AUTO_COUNTS_MAX_RATIO,
    COUNTS_MAX_CATEGORIES,
    count_groups,
    per_user_latent,
    plug_in_ratio,
)
from sklearn_bayes.privacy._ldp._diagnostics import ESS_MIN, RHAT_MAX, chain_diagnostics, min_ess
from sklearn_bayes.privacy._ldp._empirical_bayes import (
    AUTO_CV_MARGIN,
    AUTO_CV_MIN_CATEGORIES,
    AUTO_EB_MIN_CATEGORIES,
    binomial_intervals,
    cv_prior_gain,
    eb_estimate,
    support_counts,
    support_probabilities,
)
from sklearn_bayes.privacy._ldp._posterior import RHO_GRID
from sklearn_bayes.privacy._ldp._sparse_prior import SpikeBulkChoice, symmetric_probability
from sklearn_bayes.privacy._ldp._stacking import stacked_estimate

#: ``decoder='auto'``'s route from ``AUTO_EB_MIN_CATEGORIES`` (64) categories: ``'eb-stack'`` (round 15).  Round 17
#: measured ``'eb-gmodel'`` there and did not adopt it (two dev cells lost 1.0-1.7 %; with a margin that avoids them no
#: fewer cells stay above 1.05 of the best peer), so it is an option; were it routed here, 32-63 categories would keep
#: ``'eb-stack'``: a smooth ``G`` from fewer than 64 values gained nothing on the near-uniform K = 50 dev cell (1.004
#: +- 0.008 paired) and took its fit plus ``theta_`` from 7.2 to 11.4 times IBU (goal 3's bound is 10).  Round 18
#: passed it on 31 dev cells under a pooled rule (5 -> 3 above 1.05; paired 0.981 +- 0.004) but refused it on a fresh
#: group: a sparse vector on a floor (K = 500) lost 1.56 +- 0.09 paired (the blend's tilt pulls the floor apart).
AUTO_EB_DECODER = "eb-stack"
from sklearn_bayes.privacy._ldp._params import check_count
from sklearn_bayes.privacy._ldp._samplers import (
    ADAPT_MAX_FACTOR,
    MAX_DRAW_VALUES,
    N_CHAINS,
    adaptive_exact_draws,
    exact_draws,
    point_estimate,
)
from sklearn_bayes.utils import check_generator, serialized
from sklearn_bayes.utils._intervals import warn_if_swapped_coverage
from sklearn_bayes.utils._validation import external_stacklevel

__all__ = ["DecoderMixin", "warn_if_unconverged"]


#: The keys of ``convergence_`` that describe the importance weights (``decoder='importance'``).
WEIGHT_KEYS = ("weight_ess", "weight_ess_fraction", "pareto_k", "tail_ratio", "n_weighted")


def warn_if_unconverged(conv):
    """``ConvergenceWarning`` when the exact or the count posterior's draws fail R-hat <= 1.05 or
    ESS >= 100 (the adaptive chain reached its bound first), and when the importance weights failed
    (``decoder='importance'`` fell back to the exact posterior's chain)."""
    if conv["method"] == "importance->exact":
        warnings.warn(
            f"The importance weights of the tempered count posterior failed their checks (weight ESS "
            f"{conv['weight_ess']:.1f} of {conv['n_weighted']} draws, want >= {MIN_ESS_FRACTION:g} of them; "
            f"Pareto k {conv['pareto_k']:.3g}, want <= {PARETO_K_MAX:g} where the largest weight is >= 2 times "
            f"the tail's threshold, here {conv['tail_ratio']:.3g}): theta_ fell back to the exact "
            "posterior's chain (decoder='posterior'; convergence_['method'] == 'importance->exact').",
            ConvergenceWarning, stacklevel=external_stacklevel())
    if conv["method"] in ("mcmc", "counts", "importance", "importance->exact") and not (conv["rhat"] <= RHAT_MAX and conv["ess"] >= ESS_MIN):
        warnings.warn(
            f"The posterior draws behind theta_ may not have converged: split R-hat {conv['rhat']:.3g} "
            f"(want <= {RHAT_MAX}), effective sample size {conv['ess']:.1f} (want >= {ESS_MIN:g}). "
            f"The chain stopped with {conv['n_draws']} draws at its bound of 4 * n_final_steps iterations, "
            "or earlier when the ESS extrapolated to that bound stayed below 200: increase n_final_steps.",
            ConvergenceWarning, stacklevel=external_stacklevel())


#: ``tails='auto'``: a category whose equal-tailed lower end is below ``ZERO_END / n`` (``n`` responses) gets the
#: one-sided interval ``[0, q_level]`` (review HQV, F9)
ZERO_END = 0.1


#: What ``credible_interval(interval='auto')`` returns for a static mechanism off the empirical-Bayes route
#: (round H28G): ``'posterior'``, the posterior draws' quantiles (``tails``), or ``'binomial'``, every category's
#: confidence interval from its support count (:func:`~._empirical_bayes.binomial_intervals`, the empirical-Bayes
#: route's).  RRRR always uses the posterior; the empirical-Bayes route always the binomial intervals.
AUTO_INTERVAL = "posterior"
INTERVALS = ("auto", "posterior", "binomial")

def draw_intervals(draws, level, tails, n):
    """Credible intervals ``(K, 2)`` from posterior draws ``(m, K)`` (see ``credible_interval``).

    The equal-tailed interval never holds an exact 0: an empty category's posterior piles up
    at 0 (lower ends 1e-32 to 1e-66 at K = 50) and true zeros were covered 0-8 % of the time.
    With ``tails='auto'`` a category whose equal-tailed lower end is below ``ZERO_END / n``
    (a tenth of one user's share) gets ``[0, q_level]``, the one-sided interval of the same
    level.  Adopted on a rule fixed before measuring (true zeros covered >= 0.93, every general
    cell of the benchmark below 64 categories in [0.93, 0.97]); 20 runs each, mean of per-run
    coverage: true zeros 0.000 -> 0.995-1.000 on four sparse cells (K = 20, 50; all categories
    0.09-0.46 -> 0.94-0.98), the general cells 0.936-0.980 -> 0.936-0.970 (paired change 0 to
    -0.020, SE <= 0.014).  Small non-zero categories made one-sided lose 0.02-0.05 of their
    coverage on the sparse cells.
    """
    q = (1 - level) / 2
    lo, hi = np.quantile(draws, [q, 1 - q], axis=0)
    if tails == "auto" and n > 0:
        at0 = lo < ZERO_END / n
        if at0.any():
            lo[at0] = 0.0
            hi[at0] = np.quantile(draws[:, at0], level, axis=0)
    return np.c_[lo, hi]


class DecoderMixin:
    """The decoder of ``theta_`` and its diagnostics (reads the estimator's fitted state)."""

    def _check_eb_draws(self, draws):
        """``ConvergenceWarning`` when :meth:`sample_posterior`'s draws on the empirical-Bayes route fail the
        checks of the exact posterior's chain (split R-hat <= 1.05 over 4 segments, ESS >= min(100, n / 10)):
        there no ``theta_`` chain was checked, and at K = 1000 the fixed-length chain's draws had lag-1
        autocorrelation 0.88 (review HQV, F11).  Returns the diagnostics (None off that route)."""
        if not self._uses_eb() or draws.shape[0] < 8:
            return None
        conv = chain_diagnostics(draws)
        if conv["rhat"] > RHAT_MAX or conv["ess"] < min(ESS_MIN, draws.shape[0] / 10):
            warnings.warn(
                f"These {draws.shape[0]} posterior draws may not have converged: split R-hat {conv['rhat']:.3g} "
                f"(want <= {RHAT_MAX}), effective sample size {conv['ess']:.1f} (want >= "
                f"{min(ESS_MIN, draws.shape[0] / 10):g}). theta_ (decoder {self.decoder!r}) is the empirical-Bayes "
                "estimate, not their mean; ask for more draws (thin them yourself), or use credible_interval.",
                ConvergenceWarning, stacklevel=external_stacklevel())
        return conv

    def _posterior_draws(self, n_samples, random_state, max_values=None):
        """``n_samples`` posterior draws (see :meth:`sample_posterior`); the exact sampler thins them
        evenly to at most ``max_values`` values."""
        rng = self._read_rng(1) if random_state is None else check_generator(random_state)
        burn = max(1000, self.n_final_steps // 2)
        if self._uses_exact_gibbs():
            return self._exact_draws(max(200, self.n_final_steps // 2), n_samples, rng, max_values=max_values)
        if self.final_estimate == "mala":
            per_chain = -(-n_samples // N_CHAINS)
            return self._chain.mala(burn, 5 * per_chain, rng, thin=5)[1][:n_samples]
        if self.final_estimate == "gibbs":
            return self._chain.gibbs_grouped(burn, n_samples, rng, thin=1)[1]
        thin = 1 if self.sampler == "gibbs" else int(self.n_steps)
        return self._sgld_draws(n_samples * thin, thin, rng)


    def _check_interval_draws(self, draws):
        """``ConvergenceWarning`` when the draws behind :meth:`credible_interval` have a smallest effective
        sample size (over the categories) below ``ESS_MIN`` (review HLR F5: 8 draws gave intervals 35 %
        narrower, silently).  The intervals are not changed."""
        ess = min_ess(draws)
        if ess < ESS_MIN:
            warnings.warn(
                f"The {draws.shape[0]} posterior draws behind these credible intervals have an effective sample "
                f"size of {ess:.1f} (want >= {ESS_MIN:g}): their quantiles are noisy, and intervals from few "
                "draws are too narrow on average. Ask for more draws (n_samples).",
                ConvergenceWarning, stacklevel=external_stacklevel())


    @serialized
    def credible_interval(self, level=0.95, n_samples=2000, random_state=None, tails="auto", interval="auto"):
        """Interval of every category probability: posterior quantiles, or the support count's confidence interval.

        Parameters
        ----------
        level : float, default=0.95
            Coverage in ``(0, 1)``.
        n_samples : int, default=2000
            Posterior draws used (see :meth:`sample_posterior`); unused by the binomial intervals.  With the
            exact sampler (static mechanisms, ``prior='hierarchical'``) at most ``2^26`` values are held:
            above ``n_samples * n_categories_ = 2^26`` the draws are thinned evenly (the chain still runs
            ``n_samples`` iterations).
        random_state : None, int or numpy.random.Generator, default=None
            Passed to :meth:`sample_posterior`; unused by the binomial intervals.
        tails : {'auto', 'equal'}, default='auto'
            Posterior intervals only.  ``'equal'``: the draws' ``(1 - level) / 2`` and ``(1 + level) / 2``
            quantiles (before review HQV: true zeros were never covered).  ``'auto'``: the same, except
            ``[0, q_level]`` where that lower end is below ``1 / (10 n_responses_)``.
        interval : {'auto', 'posterior', 'binomial'}, default='auto'
            ``'posterior'``: the quantiles of the posterior draws (``tails``; on the empirical-Bayes route the
            exact posterior's chain of :meth:`sample_posterior`, slow at large ``K``).  ``'binomial'`` (static
            mechanisms): every category's confidence interval from its support count (Notes).  ``'auto'``:
            ``'binomial'`` on the empirical-Bayes route (``decoder='eb'``, ``'eb-stack'``, ..., or ``'auto'``
            when it chose one), ``'posterior'`` for RRRR, and the module constant
            ``_ldp._decoding.AUTO_INTERVAL`` (``'posterior'``) on the other static routes.

        Returns
        -------
        interval : ndarray of shape (n_categories_, 2)
            Lower and upper bounds.

        Notes
        -----
        Binomial intervals.  Under GRR, SS(k) and OUE the support count of category ``v`` is exactly
        ``c_v ~ Binomial(n, pi_v)`` with ``pi_v = q + (p - q) theta_v``, whatever the other categories.  The
        interval of ``theta_v`` is the confidence interval of ``pi_v`` on the feasible ``[q, p]`` mapped linearly
        to ``[0, 1]``: Feldman and Cousins' unified interval near ``q`` and ``p`` (one-sided there: a
        probability of 0 is covered with probability ``level``), Wilson's away from them.  Its coverage is
        ``level`` for every ``theta_v``, the largest categories included (up to the normal approximation of
        ``arcsin sqrt(c_v / n)``).  The posterior intervals have ``level`` coverage on average over the prior;
        for a fixed long-tailed ``theta`` the symmetric Dirichlet prior and the simplex pull the largest
        categories' posteriors down and the small ones' up, so the largest are under-covered and the small
        over-covered (round H28G: top third of ``theta`` 0.83 at 59 categories, ``decoder`` 'counts').
        """
        if not isinstance(level, numbers.Real) or not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1), got {level!r}.")
        if tails not in ("auto", "equal"):
            raise ValueError(f"tails must be 'auto' or 'equal', got {tails!r}.")
        if not isinstance(interval, str) or interval not in INTERVALS:
            raise ValueError(f"interval must be one of {INTERVALS}, got {interval!r}.")
        check_is_fitted(self)
        warn_if_swapped_coverage(level, "level")  # level=0.05 gives a 5 % interval (review HNR F2)
        self._check_frozen()
        if interval == "binomial" and self._client is None:
            raise ValueError("interval='binomial' needs a static mechanism (its support counts are binomial); "
                             "mechanism='rrrr' uses interval='posterior' (or 'auto').")
        if interval == "auto":
            interval = ("posterior" if self._client is None else
                        "binomial" if self._uses_eb() else AUTO_INTERVAL)
        if interval == "binomial":
            return binomial_intervals(*self._support_counts(), float(level))
        if self._uses_exact_gibbs():
            # quantiles from at most MAX_DRAW_VALUES values: the draws are thinned evenly above
            n_samples = check_count(n_samples, "n_samples", 1, "posterior draws")
            s = self._posterior_draws(n_samples, random_state, max_values=MAX_DRAW_VALUES)
        else:
            s = self.sample_posterior(n_samples, random_state=random_state)
        self._check_interval_draws(s)  # review HLR F5
        return draw_intervals(s, float(level), tails, self.n_responses_)

    @property
    def convergence_(self):
        """Diagnostics of the computation behind ``theta_`` (a dict, computed with ``theta_``).

        ``method``: ``'mcmc'`` (the exact posterior's draws: ``rhat``, the largest split R-hat over
        the categories with 4 segments of the kept draws, ``ess``, the smallest effective sample
        size, ``n_draws``, ``n_segments``; the chain is extended until ``rhat <= 1.05`` and
        ``ess >= 100``, at most ``4 n_final_steps`` iterations, see
        :func:`~._samplers.adaptive_exact_draws`; a ``ConvergenceWarning`` is emitted when the
        bound stopped it first), ``'counts'`` (the posterior given the support counts,
        :mod:`~._count_posterior`: the same chain and keys on its ``2 K`` groups), ``'importance'``
        (the exact posterior by importance sampling of the tempered count posterior,
        :mod:`~._count_importance`: the count chain's ``rhat``, ``ess``, ``n_draws``, and the weights'
        ``weight_ess``, ``weight_ess_fraction``, ``pareto_k``, ``tail_ratio``, ``n_weighted`` and
        ``weights_ok``), ``'importance->exact'`` (the weights failed, weight ESS below ``0.25 n_weighted`` or
        Pareto k above 0.7 with ``tail_ratio >= 2``: the exact
        posterior's chain, its keys and the failed weights'; a ``ConvergenceWarning`` says so), ``'eb'``
        (the empirical-Bayes decoder: ``n_iter`` and
        ``converged`` of its EM, ``n_atoms``, the sum-to-one tilt's ``tilt`` and ``tilt_converged``), ``'eb-rescale'``
        (the same without the tilt: its means divided by their sum), ``'eb-stack'`` (round 15, ``'auto'``'s route where
        it used ``'eb'``: the keys of ``'eb'``'s EM and tilt, ``rho`` of the smoother priors, ``stack_weights`` (candidate
        -> convex weight; all on the baseline when the guard refused the stack), ``stack_folds``, ``stack_gain`` and
        ``stack_se`` (the nested cross-fitted squared-risk gain over the baseline and its standard error), ``stack_used``
        and ``stack_baseline`` (``'eb'``, or ``'dir'`` where the channel is near the identity and the Dirichlet-marginal
        prior's cross-fitted risk is lower: round P1), with the route option also ``stack_skipped``,
        ``stack_predicted_cost`` and ``stack_noise_ratio``; :func:`~._stacking.stacked_estimate`), ``'eb-gmodel'`` (round 17, an option: the keys of ``'eb-stack'`` and
        ``gmodel_gain``, the cross-fitted predictive log score of the g-model blend minus the NPMLE's in nats,
        ``gmodel_used``, ``gmodel_converged``, every fold's g-model fit converged, and ``gmodel_final_converged``, the fit
        on all users behind the estimate, None when the score kept the NPMLE), or ``final_estimate``'s name for the RRRR chains
        (``'mala'``, ``'gibbs'``, ``'sgld'``; ``rhat`` and ``ess`` are NaN: not measured).
        With ``decoder='auto'`` at 32-63 categories (static mechanisms) also ``cv_gain``: the
        cross-validated log marginal likelihood of the empirical-Bayes prior minus the symmetric
        Dirichlet's (:func:`~._empirical_bayes.cv_prior_gain`; ``'eb'`` was chosen when it is at
        least ``AUTO_CV_MARGIN`` = 3 nats).
        """
        self.theta_
        return dict(self._theta_cache[2])

    def _uses_eb(self):
        """theta_ and the intervals from the empirical-Bayes decoder (static mechanisms only)."""
        if self._client is None:
            return False
        if self.decoder != "auto":
            return self.decoder in ("eb", "eb-rescale", "eb-stack", "eb-gmodel")
        return self.n_categories_ >= AUTO_EB_MIN_CATEGORIES or (
            self._auto_cv_applies() and self._auto_cv_gain() >= AUTO_CV_MARGIN)

    def _auto_cv_applies(self):
        """``'auto'`` chooses by :func:`~._empirical_bayes.cv_prior_gain` (static mechanisms, 32-63 categories)."""
        return (self.decoder == "auto" and self._client is not None
                and AUTO_CV_MIN_CATEGORIES <= self.n_categories_ < AUTO_EB_MIN_CATEGORIES)

    def _auto_cv_gain(self):
        """:func:`~._empirical_bayes.cv_prior_gain` of the stored responses against the hierarchical
        prior's grid of ``rho`` (memoised until the next recording)."""
        if self.n_responses_ == 0:
            return -np.inf
        return float(self._auto_cv_cached()[0][0])

    def _auto_cv_cached(self):
        """``(gain, x, F)``: the memoised gain and its Beta CDF table (round 16: the stack reuses the table)."""

        def compute():
            gain, (x, F) = cv_prior_gain(*self._support_counts(), RHO_GRID, return_table=True)
            return np.array([gain]), x, F

        return self._chain.store.cached("auto_cv_gain", compute)

    def _uses_counts(self):
        """theta_, the intervals and the posterior draws from the posterior given the support counts
        (``decoder='counts'``; ``'auto'`` from ``AUTO_CV_MIN_CATEGORIES`` categories where it does not
        use ``'eb'``, the mechanism is SS(k) with ``k > 1``, the exact chain would draw a latent category
        per user and the counts' dependence widens no interval's variance beyond
        ``AUTO_COUNTS_MAX_RATIO``, :func:`~._count_posterior.plug_in_ratio`).  Below 32 categories
        'auto' keeps the exact posterior: on the held-out paper-grid cell K = 20, eps = 1, Dir(0.1) the
        count posterior lost 1.096 +- 0.036 of the exact one's TV (spiky theta, where a subset tells
        more than its members' counts)."""
        if self._client is None or self.decoder not in ("auto", "counts") or self._uses_eb():
            return False
        if self.decoder == "counts":
            return True
        if not self._per_user_subsets() or self.n_categories_ < AUTO_CV_MIN_CATEGORIES:
            return False
        return bool(self._counts_ratio() <= AUTO_COUNTS_MAX_RATIO)

    def _per_user_subsets(self):
        """SS(k) with ``k > 1`` whose exact chain would draw a latent category per user (``O(n k)`` per
        iteration, :func:`~._count_posterior.per_user_latent`): where ``'auto'`` leaves the exact chain."""
        if self._client.kind == "oue" or self._client.subset_size <= 1 or self.n_responses_ == 0:
            return False
        return bool(per_user_latent(self._n_distinct(), self.n_categories_, self.n_responses_))

    def _n_distinct(self):
        """The number of distinct recorded subsets (memoised until the next recording)."""
        store = self._chain.store
        return store.cached("n_distinct", lambda: (np.array([store.set_counts()[1].size]),))[0][0]

    def _uses_importance(self):
        """The exact posterior's draws by importance sampling of the tempered count posterior
        (``decoder='importance'``; ``'auto'`` below ``AUTO_CV_MIN_CATEGORIES`` categories under SS(k) with
        ``k > 1`` where the exact chain would draw a latent category per user, issue 28 round 11, and its
        per-iteration work is more than ``EXACT_WORK_MAX`` times the count chain's, round 11b:
        :func:`~._count_importance.exact_work_ratio`; below, the exact chain is predicted within 10 times IBU)."""
        if self._client is None or self.decoder not in ("auto", "importance") or self._uses_eb():
            return False
        if self.decoder == "importance":
            if self.n_categories_ > COUNTS_MAX_CATEGORIES:
                raise ValueError(f"decoder='importance' runs up to {COUNTS_MAX_CATEGORIES} categories (its "
                                 f"proposal's chain costs O(K^2) per iteration), got {self.n_categories_}: use "
                                 "decoder='eb' or 'posterior'.")
            return True
        return bool(self.n_categories_ < AUTO_CV_MIN_CATEGORIES and self._per_user_subsets()
                    and exact_work_ratio(self._n_distinct(), self._client.subset_size, self.n_categories_)
                    > EXACT_WORK_MAX)

    def _counts_ratio(self):
        """:func:`~._count_posterior.plug_in_ratio` of the stored responses (SS(k), GRR and OUE; memoised)."""
        return float(self._chain.store.cached("counts_ratio", lambda: (np.array([plug_in_ratio(
            self._support_counts()[0], self.n_responses_, self.n_categories_, self._fitted_params["epsilon"],
            self._client.subset_size)]),))[0][0])

    def _importance_temper(self):
        """The proposal's tempering (:func:`~._count_importance.tempering` of :meth:`_counts_ratio`)."""
        return tempering(self._counts_ratio())

    def _posterior_groups(self):
        """The :class:`~._posterior.Groups` of the posterior behind ``theta_``: the responses' (exact), or
        the ``2 K`` groups of the support counts' binomial likelihood (:func:`~._count_posterior.count_groups`)."""
        if not self._uses_counts():
            return self._chain.exact_groups(None if self._client is None else self._fitted_params["epsilon"])
        if self.n_categories_ > COUNTS_MAX_CATEGORIES:
            raise ValueError(f"decoder='counts' runs up to {COUNTS_MAX_CATEGORIES} categories (its chain costs "
                             f"O(K^2) per iteration), got {self.n_categories_}: use decoder='eb' or 'posterior'.")
        counts, n, p, q = self._support_counts()  # GRR: the counts' exact (multinomial) likelihood
        grr = self._client.kind != "oue" and self._client.subset_size == 1
        return count_groups(counts, n, p, q, multinomial=grr)

    def _posterior_prior(self):
        prior = self._fitted_params["prior"]
        if isinstance(prior, str) and prior == "spike-bulk":
            return SpikeBulkChoice(self.n_categories_)  # a fresh state per chain (round 12)
        return "hierarchical" if isinstance(prior, str) else self._chain.prior

    def _exact_draws(self, burn, keep, rng, max_values=None):
        """``keep`` draws of the exact (or count) posterior after ``burn`` sweeps (start: IBU steps).

        ``max_values``: thin the kept draws so that at most this many values are held.
        """
        if self._uses_importance():
            # the fallback runs on a copy of the generator as it was: the draws of decoder='posterior'
            rng_exact = copy.deepcopy(rng)
            draws, wd = importance_fixed(self._posterior_groups(), self._support_counts(), self._posterior_prior(),
                                         burn, keep, rng, max_values=max_values, a=self._importance_temper())
            if draws is not None:
                return draws
            warnings.warn(
                f"The importance weights of the tempered count posterior failed their checks (weight ESS "
                f"{wd['weight_ess']:.1f} of {wd['n_weighted']} draws, Pareto k {wd['pareto_k']:.3g}): these "
                "posterior draws fell back to the exact posterior's chain (decoder='posterior').",
                ConvergenceWarning, stacklevel=external_stacklevel())
            rng = rng_exact
        return exact_draws(self._posterior_groups(), self._posterior_prior(), burn, keep, rng, max_values=max_values)

    def _adaptive_draws(self, max_iter, rng, max_values=None):
        """``(draws, diagnostics)`` of :func:`~._samplers.adaptive_exact_draws` (at most ``max_iter`` iterations)."""
        rng_exact = None
        if self._uses_importance():
            rng_exact = copy.deepcopy(rng)  # the fallback: the draws of decoder='posterior'
            draws, diag = importance_adaptive(self._posterior_groups(), self._support_counts(),
                                              self._posterior_prior(), max_iter, rng, max_values=max_values,
                                              a=self._importance_temper())
            if draws is not None:
                return draws, diag
            weights = {key: diag[key] for key in WEIGHT_KEYS}
            draws, diag = adaptive_exact_draws(self._posterior_groups(), self._posterior_prior(), max_iter, rng_exact,
                                               max_values=max_values)
            return draws, dict(symmetric_probability(diag), method="importance->exact", **weights)
        draws, diag = adaptive_exact_draws(self._posterior_groups(), self._posterior_prior(), max_iter, rng,
                                           max_values=max_values)
        diag = symmetric_probability(diag)
        return draws, (dict(diag, method="counts") if self._uses_counts() else diag)

    def _support_counts(self):
        """``(counts, n, p, q)``: support counts of the stored responses and the mechanism's ``p, q``."""
        counts = self._chain.store.cached("support_counts", lambda: (support_counts(self._chain.store),))[0]
        return (counts, self.n_responses_) + support_probabilities(self._client)

    def _final_theta(self, rng):
        """``(theta, diagnostics)`` (see ``convergence_``)."""
        theta, diag = self._decode(rng)
        if self._auto_cv_applies():
            diag = dict(diag, cv_gain=self._auto_cv_gain())
        return theta, diag

    def _decode(self, rng):
        unmeasured = dict(method=self.final_estimate, rhat=float("nan"), ess=float("nan"))
        if self._uses_eb() and self.decoder in ("auto", "eb-stack", "eb-gmodel") and self.n_responses_ > 0:  # round 15
            store = self._chain.store
            # 32-63 categories: the cv gain that routed here evaluated the Beta CDF on most of the stack's midpoints
            table = self._auto_cv_cached()[1:] if self._auto_cv_applies() else None
            gmodel = self.decoder == "eb-gmodel" or (self.decoder == "auto" and AUTO_EB_DECODER == "eb-gmodel"
                                                      and self.n_categories_ >= AUTO_EB_MIN_CATEGORIES)
            theta, info = stacked_estimate(*self._support_counts(), store.sids[: store.n], store.masks[: store.n_sids],
                                           rng, RHO_GRID, cdf_table=table, gmodel=gmodel)
            return theta, dict(method="eb-gmodel" if gmodel else "eb-stack", **info)
        if self._uses_eb():
            rescale = self.decoder == "eb-rescale"
            theta, info = eb_estimate(*self._support_counts(), sum_to_one="rescale" if rescale else "tilt")
            return theta, dict(method=self.decoder if rescale else "eb", **info)
        burn = self.n_final_steps - self.n_final_steps // 2
        keep = self.n_final_steps // 2
        if keep == 0 and self._client is not None and self.n_responses_ > 0:
            # a static mechanism's online sample never moves: it would be the prior's start (review HQV, F2)
            raise ValueError(
                f"n_final_steps={self.n_final_steps} gives no estimate for mechanism={self.mechanism_!r}: its "
                "theta_ comes from the exact posterior's chain, which needs n_final_steps >= 2 (default 2000); "
                "only mechanism='rrrr' has an online sample to report with n_final_steps < 2."
            )
        if keep == 0 or self.n_responses_ == 0:  # the online sample (its start before any response), no final phase
            return self._chain.theta, dict(unmeasured, method="online")
        if self._uses_exact_gibbs():
            # extended until R-hat and ESS pass, at most 4 n_final_steps iterations; at most
            # MAX_DRAW_VALUES values held (above, the fixed-length chain, thinned evenly)
            draws, diag = self._adaptive_draws(ADAPT_MAX_FACTOR * self.n_final_steps, rng,
                                               max_values=MAX_DRAW_VALUES)
            return point_estimate(draws, self.point_estimate), diag
        if self.final_estimate == "gibbs":
            return self._chain.gibbs_grouped(burn, keep, rng)[0], unmeasured
        if self.final_estimate == "mala":
            return self._chain.mala(burn, keep, rng)[0], unmeasured
        # burn-in iterations are discarded: run them on the same copied chain
        samples = self._sgld_draws(burn + keep, 1, rng)
        return samples[burn:].mean(axis=0), unmeasured

