"""AdOBEst-LDP: adaptive online Bayesian frequency estimation under local differential privacy.

The estimator is thin: parameters, the fitting and reading methods.  The work is in

- ``_input``: validation and encoding of users and responses;
- ``_params``: the checks of the parameters and their freezing after the first fit;
- ``_chain``: the chain state (response store, online sample, generator, RRRR
  constants, prior) as one object, :class:`~._chain.ChainState`;
- ``_store``: the response store (arrays, subset interning, copies for
  transactions, pickling, groupings of the responses);
- ``_driver``: the online loop of ``mechanism='rrrr'`` (subset choice, RRRR,
  SGLD / Gibbs steps per user);
- ``_samplers``: the posterior samplers (SGLD / Gibbs chain, grouped Gibbs, MALA,
  the exact hybrid sampler of ``_posterior``) as free functions;
- ``_serving``: subset proposals, refresh and merge (serving many clients);
- ``_utilities``: the utilities that choose the subset.
"""


import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from sklearn_bayes.utils import (
    IntegerInterval,
    RealInterval,
    check_privacy_random_state,
    serialized,
    transactional,
)
from sklearn_bayes.utils._streaming import state_digest
from sklearn_bayes.utils._validation import register_noise_state
import sklearn_bayes.privacy._ldp._input as inp
from sklearn_bayes.privacy._ldp._chain import ChainState
from sklearn_bayes.privacy._ldp._copies import CopiesMixin
from sklearn_bayes.privacy._ldp._driver import process_users, step_sizes
from sklearn_bayes.privacy._ldp._decoding import DecoderMixin, warn_if_unconverged
from sklearn_bayes.privacy._ldp._mechanisms import MECHANISMS
from sklearn_bayes.privacy._ldp._params import (_UNSET, FINAL_KNOBS, FrozenParamsMixin, _copy_labels, check_count,
                                                same_value)
from sklearn_bayes.privacy._ldp._rrrr import RRRRMechanism, simulation_table
from sklearn_bayes.privacy._ldp._serving import ServingMixin
from sklearn_bayes.privacy._ldp._utilities import UTILITIES

__all__ = ["AdaptiveLDPFrequencyEstimator"]

_FITTED_ATTRS = ("categories_", "n_categories_", "n_responses_", "subset_sizes_")


class AdaptiveLDPFrequencyEstimator(CopiesMixin, DecoderMixin, ServingMixin, FrozenParamsMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                                    BaseEstimator):
    """Bayesian estimation of a categorical distribution under epsilon-LDP (static or adaptive mechanisms).

    Default (``mechanism='auto'``, ``prior='hierarchical'``, ``point_estimate='tv'``):
    every user answers with *subset selection* (reports ``k`` categories, her own among
    them with probability ``k e^eps / (k e^eps + K - k)``; ``k`` minimises the variance
    of the unbiased estimate, ``k = 1`` is generalised randomised response), and the
    server computes the exact posterior of ``theta`` under ``theta ~ Dir(rho 1)`` with
    the concentration ``rho`` learnt from the responses; ``theta_`` is the Bayes
    estimate for the TV loss on the simplex (common-level posterior quantiles).  From
    ``K >= 64`` categories, and from 32 when it predicts held-out categories better (``decoder='auto'``),
    ``theta_`` is the empirical-Bayes estimate from the support counts (``decoder='eb'``, see Notes),
    which does not assume a symmetric Dirichlet shape; otherwise from 32 categories, where the responses
    are nearly all distinct subsets, the posterior given only the support counts (``decoder='counts'``,
    the same prior; cost ``O(K^2)`` per iteration instead of ``O(n k)``), and below 32 the exact posterior by
    importance sampling of a tempered count posterior (``decoder='importance'``).  No adaptive rule we measured beat this static
    mechanism (see the user guide); the papers' adaptive RRRR mechanism is ``mechanism='rrrr'``.

    AdOBEst-LDP (``mechanism='rrrr'``): users arrive one at a time; for each user the server picks, from a
    posterior sample ``Theta_{t-1}``, the subset ``S_t`` of the most probable
    categories that maximises a utility; the user releases
    ``Y_t = RRRR(X_t; S_t, epsilon)`` (see :class:`sklearn_bayes.RRRRMechanism`);
    the server then moves its posterior sample with a few stochastic gradient Langevin
    dynamics (SGLD) steps (or an exact Gibbs sweep).

    Two ways to use it:

    - simulation: :meth:`partial_fit` / :meth:`fit` take the *true* categories and
      privatise each user here, with the adaptively chosen subset (experiments);
    - deployment: :meth:`propose_subset` gives the subset for the next user, the
      client privatises with :class:`~sklearn_bayes.RRRRMechanism`, and
      :meth:`partial_fit_responses` records the responses with their subsets (any
      subset, including the empty one, i.e. plain SRR, is accepted).

    Parameters
    ----------
    n_categories : int or None, default=None
        Number of categories ``2 <= K <= 2^31 - 1``; the categories are then ``0, ..., K - 1``.
        The category domain must be public: give ``n_categories`` or ``categories`` (not both); neither is refused.
    categories : array-like of labels, 'from_data' or None, default=None
        The public labels (at least 2, distinct, finite numbers or strings of one kind), kept **in the order
        given** in ``categories_`` (as ``OneHotEncoder(categories=...)``): label ``categories[j]`` is position
        ``j`` of ``theta_``, the intervals, an array ``prior``, ``client_mechanism().privatize`` and the ``y`` /
        ``subsets`` of :meth:`partial_fit_responses` (:meth:`encode_categories` maps labels to positions; before
        review HLR the positions were those of the sorted labels); a value of ``X`` outside them is refused.
        ``'from_data'`` (simulation only, NOT private, with a ``UserWarning``): the sorted distinct values of
        ``X`` in the first fitting call.
    epsilon : float, default=1.0
        Privacy budget of every user, ``> 0``.
    kappa : float, default=0.9
        ``eps1 = kappa * epsilon`` is spent inside the subset, ``0 < kappa <= 1``.
    utility : str or callable, default='honest'
        Used by ``mechanism='rrrr'`` only.  Subset selection: ``'fisher'`` (U1), ``'entropy'`` (U2), ``'tv_posterior'``
        (U3), ``'tv_marginal'`` (U4), ``'mse'`` (U5), ``'honest'`` (U6, probability
        of an honest response, O(K)), ``'semi_adaptive'`` (smallest prefix of
        posterior mass ``>= alpha``), ``'non_adaptive'`` (always SRR), or a callable
        ``utility(theta, P, subset) -> float`` scoring a candidate subset with
        transition matrix ``P[x, y] = P(Y = y | X = x)``.  The built-in utilities run
        in the compiled loop in O(K) per candidate subset (O(K^2) per user; O(K) for
        'honest'); a callable is called from Python for each of the K candidates.
    alpha : float or None, default=None
        Coverage of ``'semi_adaptive'`` in ``(0, 1)`` (required for it, else unused).
    prior : 'hierarchical', 'spike-bulk', float or array-like of shape (n_categories,), default='hierarchical'
        ``'hierarchical'``: ``theta ~ Dir(rho 1_K)``, ``ln rho`` uniform on ``[ln 1e-3, ln 10]`` (97 values),
        learnt with ``theta`` (Notes); ``'spike-bulk'`` (issue 28 round 12; slower: a Python chain): that or,
        per fit, a spike ``rho / 30`` on some categories (``_ldp/_sparse_prior.py``); otherwise the fixed
        Dirichlet concentration (an array: one value per position, in the order of ``categories_``).  With ``mechanism='rrrr'`` the online SGLD chain that proposes the subsets
        uses ``Dir(1)`` under both strings; ``theta_`` and the posterior samples use the
        chosen prior.
    sampler : {'sgld', 'gibbs'}, default='sgld'
        Posterior sampler: SGLD on the Gamma representation (``n_steps`` steps per
        user, minibatches of ``batch_size``), or the exact data-augmentation Gibbs
        sampler (one sweep over all responses per user: O(n K) per user).
    n_steps : int, default=20
        SGLD steps per user (``M``); also the thinning of :meth:`sample_posterior`.
    batch_size : int, default=50
        SGLD minibatch size ``m`` (all responses while there are at most ``m``).  A
        minibatch is a uniformly random circular block of ``m`` consecutive stored
        responses: every response is included with probability ``m / n``, so the
        gradient estimate is unbiased as with the paper's random subsample, and the
        block is cache friendly and touches few distinct subsets (about 2x faster).
    step_size : 'auto', '0.5/t', float or callable, default='auto'
        SGLD step size for user ``t``: ``'auto'`` and ``'0.5/t'`` use ``0.5 / t``
        (the dissertation's schedule; it needs no horizon); a float is constant
        (the arXiv version uses ``0.5 / T`` for a horizon ``T``); a callable maps
        ``t`` to the step.
    n_final_steps : int, default=2000
        ``theta_`` is the average over the second half of ``n_final_steps`` extra
        iterations of the final phase (see ``final_estimate``), run from a copy of
        the current sample (the first half is burn-in); ``0`` or ``1`` makes ``theta_`` the current
        (online) sample of ``mechanism='rrrr'`` (a static mechanism has none: reading ``theta_``
        then raises ``ValueError``).  With ``'mala'`` these are iterations of each of 8 chains.  For the
        exact posterior (static mechanisms, ``prior='hierarchical'``) it bounds an adaptive
        chain instead: draws until R-hat and ESS pass, at most ``4 n_final_steps`` iterations.
    final_estimate : {'mala', 'gibbs', 'sgld'}, default='mala'
        How ``theta_`` estimates the posterior mean after the online pass.
        ``'mala'``: ``n_final_steps`` iterations of 8 preconditioned
        Metropolis-adjusted Langevin chains on the full-data likelihood of the stored
        responses, grouped by distinct likelihood rows (see Notes); it converges
        to the exact posterior mean (Monte Carlo error about 0.02-0.03 posterior
        standard deviations at the default, measured against quadrature).  ``'gibbs'``: ``n_final_steps`` sweeps of the exact
        data-augmentation Gibbs sampler on the same groups, with the Rao-Blackwellised
        average of ``E[theta | x, y]``; exact too, but it mixes slowly when ``epsilon``
        is small.  ``'sgld'``: the papers' final phase, ``n_final_steps`` more SGLD
        iterations at the last step size, averaged over the second half.  With the step
        ``0.5 / n`` these iterations barely move the chain, so the average is close to
        a single posterior draw, whose TV error is about ``sqrt(2)`` times that of the
        posterior mean.  The online pass (subset choice and SGLD steps per user) is the
        same for all three.  The final phase runs when ``theta_`` is first read after
        a fitting call (0.02-0.35 s for ``K <= 20``, see Notes), so recording one
        response per call in deployment costs nothing extra until the estimate is
        read.
    mechanism : {'auto', 'subset_selection', 'grr', 'oue', 'rrrr'}, default='auto'
        The epsilon-LDP mechanism every user answers with.  ``'subset_selection'``
        with ``k = best_subset_size(K, epsilon)`` (the ``k`` in ``1..K-1`` minimising
        the summed variance of the unbiased estimate at the uniform distribution,
        about ``K / (e^eps + 1)``; ``k = 1`` is GRR); ``'auto'`` is the same;
        ``'grr'``: generalised randomised response (``k = 1``); ``'oue'``: optimised
        unary encoding; ``'rrrr'``: the papers' adaptive RRRR mechanism (``kappa``,
        ``utility``, ``alpha``, the online SGLD chain).  The first four are static:
        simulation privatises all users at once (about 8 us per user at ``K = 20``),
        deployment uses :meth:`client_mechanism` and ``partial_fit_responses(masks)``.
        The resolved name is ``mechanism_``.
    point_estimate : {'tv', 'median', 'mean'}, default='tv'
        ``theta_`` from the posterior draws.  ``'tv'``: the Bayes estimate for the TV
        (L1) loss on the simplex, every coordinate the marginal posterior quantile at
        one common level ``tau`` chosen so that they sum to 1 (the Lagrange condition
        of ``min E sum_k |t_k - theta_k|`` s.t. ``sum t = 1``; ``tau = 1/2``, the
        medians, when those sum to 1).  It puts (almost) no mass on categories the
        posterior thinks empty.  ``'median'``: the coordinate-wise medians renormalised
        to sum to 1 (poor with few responses per category: their sum can be far below
        1).  ``'mean'``: the posterior mean; it hedges, and is the better choice for
        long-tailed data with no empty categories (16 % lower TV than ``'tv'`` on
        Zipf(1.1) at K = 100, eps = 1 and 2, 30 runs; 3-10 % higher on sparse
        Dir(0.1) data, where ``'tv'`` is best).  Applies whenever the exact Gibbs
        posterior is used (static mechanisms or ``prior='hierarchical'``).
    decoder : {'auto', 'posterior', 'counts', 'importance', 'eb', 'eb-rescale', 'eb-stack', 'eb-gmodel'}, default='auto'
        How ``theta_`` and :meth:`credible_interval` are computed for a static mechanism.
        ``'posterior'``: from the exact posterior's draws (``prior``, ``point_estimate``; the
        behaviour before issue 28).  ``'counts'``: from the draws of the posterior given only the
        support counts (same prior and summary; each count's exact binomial likelihood, their weak
        dependence ignored -- under GRR their exact multinomial one; ``O(K^2)`` per iteration; <= 128 categories).
        ``'importance'``: the exact posterior's draws by importance sampling of the count posterior of a = 0.9 (less
        where the counts' dependence is strong) times the counts, resampled (at most 128 categories; the exact chain when the weights fail; see Notes).  ``'eb'``: the empirical-Bayes decoder (see Notes): the
        support count of every category is exactly binomial, the distribution of the values
        ``theta_k`` across categories is estimated by nonparametric maximum likelihood, and
        ``theta_`` holds the posterior means conditioned on summing to 1 (a tilt, see Notes); the intervals are binomial (Feldman-Cousins)
        confidence intervals; ``'eb-rescale'``: the same with the means divided by their sum (before round 14); ``'eb-stack'`` (round 15): the convex combination of ``'eb'``, two smoother priors' means, norm-sub and clipped MI whose weights minimise a squared risk cross-fitted over 5 folds of users, used only when its nested cross-fitted gain over ``'eb'`` exceeds 1.5 standard errors (else ``'eb'``; same intervals; see ``convergence_``).  ``'eb-gmodel'`` (round 17, an option): the same stack whose ``'eb'`` row uses the NPMLE blended half and half with a smooth g-model of ``G`` (Efron's g-modeling) when that prior's cross-fitted predictive log score of held-out users' counts is higher (``_gmodel``).  ``'auto'``: ``'eb-stack'`` when ``n_categories_ >= 64``; from 32, ``'eb-stack'`` when
        its prior's 5-fold cross-validated log marginal likelihood of the support counts beats the
        symmetric Dirichlet's by >= 3 nats (``convergence_['cv_gain']``); else (still from 32) ``'counts'`` under
        SS(k) with ``k > 1`` when the exact chain would draw a latent category per user (``4 G K > n``
        or ``G K > 2^16`` for ``G`` distinct responses) and the counts' dependence is weak (plug-in
        sandwich variance ratio ``<= 1.07``); below 32 ``'importance'`` under the same per-user condition where ``G k > 11 K (K - 1)``; else
        ``'posterior'``.  ``mechanism='rrrr'`` always uses the posterior (``'eb'``, ``'eb-rescale'``, ``'eb-stack'``, ``'eb-gmodel'``, ``'counts'``, ``'importance'`` refused);
        :meth:`sample_posterior` draws as ``theta_`` does (``'eb'``, ``'eb-rescale'``, ``'eb-stack'``, ``'eb-gmodel'``: the exact posterior).  A compute knob: it may change after fitting.
    random_state : None, int or numpy.random.Generator, default=None
        Source of the simulated privacy noise and of the MCMC.  An int emits
        :class:`sklearn_bayes.utils.SeededNoiseWarning` (reproducible noise is for
        experiments and tests).  The generator is created at the first fitting call
        and kept across later calls; changing ``random_state`` after fitting is an
        error until :meth:`fit` restarts (see Notes).

    Attributes
    ----------
    categories_ : ndarray of shape (n_categories_,)
        The category labels, in the order ``categories`` gave them (``0..K-1`` for ``n_categories``; sorted for
        ``'from_data'``); responses and subsets use their positions.  Public, except with
        ``categories='from_data'`` (the labels seen in ``X``, one user's label included: not private).
    n_categories_ : int
    theta_ : ndarray of shape (n_categories_,)
        Estimated probabilities (MCMC estimate of the posterior mean, see
        ``final_estimate``), computed on first read after each fitting call and
        cached.  Its random numbers come from a stream seeded by the state of the
        estimator's generator, which is not advanced: reading ``theta_``,
        :meth:`sample_posterior` or :meth:`credible_interval` never changes later
        fitting, and a pickled estimator gives the same ``theta_``.
    mechanism_ : str
        The resolved mechanism: ``'subset_selection'``, ``'grr'``, ``'oue'`` or ``'rrrr'``.
    n_responses_ : int
        Number of responses recorded.
    subset_sizes_ : ndarray of shape (n_responses_,)
        ``|S_t|`` used for every response.
    convergence_ : dict
        Diagnostics of the computation behind ``theta_`` (computed with it): for the exact
        posterior, the largest split R-hat and the smallest effective sample size over the
        categories (``'rhat'``, ``'ess'``, ``'n_draws'``; the chain is extended until they
        pass, and a :class:`~sklearn.exceptions.ConvergenceWarning` says when the bound
        ``4 n_final_steps`` stopped it first; ``'method'``: ``'mcmc'``, ``'online'`` (no final phase), ``'counts'`` for the count posterior, ``'importance'``
        with the weights' ESS and Pareto k, or ``'importance->exact'``; ``'p_symmetric'`` under ``prior='spike-bulk'``, the
        posterior probability of the symmetric model); for ``decoder='eb'`` the EM's ``n_iter`` and ``converged``.
    n_features_in_ : int (always 1)
    feature_names_in_ : ndarray of shape (1,)
        Defined when ``X`` has string column names.

    See Also
    --------
    sklearn_bayes.RRRRMechanism : the client-side mechanism.

    Notes
    -----
    Static mechanisms and the exact posterior.  Subset selection, GRR and OUE all
    have two-level likelihoods: a response defines a set ``A(y)`` with
    ``P(y | x) ∝ e^eps`` if ``x in A(y)`` else ``1`` (OUE: the product over the bits
    is, as a function of ``x``, ``∝ (1/2)/q`` or ``(1/2)/(1 - q)`` with ratio
    ``(1 - q)/q = e^eps``); an RRRR response has three levels (``x in S``, ``x = y``,
    other).  So one data-augmentation Gibbs sampler is exact for all of them: latent
    ``x_u ~ p(x | y_u, theta)`` (kernel ``_fast/_ldp_gibbs.pyx``: ``O(|A| + log K)`` per
    response for small sets; large sets by alias-table proposals from ``theta``, ``O(1)``
    each, exact after 8 rejections), then ``rho | counts`` from the collapsed Dirichlet-multinomial
    likelihood on the grid, then ``theta ~ Dir(rho + counts)`` drawn in log space
    (``ln G(a) = ln G(a + 1) + ln(U)/a``, no underflow when ``rho + n_j << 1``).
    Because it mixes slowly when the noise hides most of the information, each sweep is followed
    by 5 preconditioned MALA steps (10 with many distinct responses) on ``ln(S theta)`` given ``rho`` (a
    fresh ``S ~ Gamma(K rho)``; preconditioner from the observed information at the
    end of the first half of the burn-in, step size adapted in the burn-in only), then,
    independence Metropolis-Hastings jumps from the prior ``Gamma(rho)`` (one per category;
    a random scan of fewer with many distinct responses; near-empty categories move).  The
    chain starts at 200 IBU (EM) iterations.  ``theta_`` (issue 28): 200 burn-in iterations
    (fewer if ``n_final_steps < 400``), then draws, checked after 200 and every ``max(100,
    n/4)`` more, until the worst category has split R-hat ``<= 1.05`` and ESS ``>= 200``;
    at most ``4 n_final_steps`` iterations (earlier from 400 draws on when the ESS
    extrapolated to that bound stays below 200); the warning needs ESS ``< 100`` or R-hat
    ``> 1.05``.  When ``theta* ~ Dir(rho)`` the hierarchical prior is the true model, which makes the
    credible intervals calibrated.

    Empirical-Bayes decoder (``decoder='eb'``, issue 28).  Under SS(k), GRR and OUE a user
    supports category ``v`` with probability ``pi_v = q + (p - q) theta_v`` whatever her
    category's neighbours, so the support count is exactly ``c_v ~ Binomial(n, pi_v)``.  The
    values ``theta_v`` are treated as draws from an unknown distribution ``G`` on ``[0, 1]``,
    estimated by its nonparametric maximum likelihood ``max_G sum_v ln int Bin(c_v; n, pi(u)) dG(u)``
    (EM on a grid of atoms: the clipped unbiased estimates, up to 400 points evenly spaced in
    ``arcsin sqrt(pi)``, and a geometric grid near 0), and ``theta_`` is ``E[theta_v | c_v]``
    under ``G`` conditioned on ``sum_v theta_v = 1``: every ``theta_v``'s posterior under the tilt
    ``G_lambda(du) ∝ e^{lambda u} G(du)`` with the one ``lambda`` that makes the means sum to 1 (a monotone
    1-D root; round 14: 0.3-2.2 % lower TV than dividing the means by their sum on the dev cells, ``decoder='eb-rescale'``).  Cost ``O(K G)`` per EM iteration (``G <= K + 440`` atoms), no
    Monte Carlo.  The symmetric Dirichlet prior cannot represent two-peaked or long-tailed
    ``theta``, and there its posterior follows the noise (issue 28: 1.11-1.40x the best
    static decoder's TV); ``G`` adapts to the shape.  The interval of ``theta_v`` is the
    confidence interval of ``pi_v`` on the feasible ``[q, p]``, mapped linearly to ``[0, 1]`` (round 21): Feldman and Cousins'
    unified interval (one-sided at a feasible end, so 95 % and not 97.5 % for a probability of 0) near ``q`` and ``p``, Wilson's
    away from them (``_empirical_bayes.binomial_intervals``; ``INTERVAL_RULE = 'wilson-lr'`` gives round 28z's).

    Count posterior (``decoder='counts'``, issue 28 round 9): ``p(theta, rho | c) ∝ prod_v
    Bin(c_v; n, pi_v) Dir(theta; rho 1) p(rho)``, the exact posterior's prior with the product of the
    counts' exact binomial marginals (a composite likelihood: under SS(k) the counts sum to ``n k``;
    the variance this ignores is 2-3 % at ``K >= 35``, see the development log).  Each factor is a group of
    the three-level likelihood (``pi_v``: special category ``v``; ``1 - pi_v``: the set of all other
    categories), so the exact chain runs on ``2 K`` groups instead of ``n`` distinct subsets.  ``'importance'``: 1000 draws of
    it on a <= 0.9 times the counts weighted by exact / composite likelihood (the prior cancels) and resampled (``_count_importance``).

    Posterior ``pi(theta | y, S) ∝ Dir(theta; rho) prod_t h_t(y_t | theta)`` with
    ``h_t(y | theta) = sum_x g_{S_t}(y | x) theta_x``.  SGLD runs on
    ``phi_k ~ Gamma(rho_k, 1)``, ``theta = phi / sum(phi)``::

        phi <- | phi + (g/2) (grad ln p(phi) + (n/m) sum_batch grad ln h(y | theta(phi)))
                 + sqrt(g) W |,   W ~ N(0, I)

    with ``[grad ln p(phi)]_i = (rho_i - 1)/phi_i - 1`` and
    ``grad_phi ln h(y | theta) = (g(y | .)/h(y | theta) - 1) / sum(phi)``.  This
    corrects two typos of the source papers: the noise is ``sqrt(g) W`` (the papers
    print ``g W``, which collapses the chain to the mode) and the prior gradient uses
    ``rho``.  The candidate subsets are the prefixes of sizes ``0, ..., K - 1`` of the
    categories sorted by decreasing ``theta`` (size 0 is SRR).

    Final estimate.  ``theta_`` estimates the posterior mean
    ``E[theta | y, S]``.  The papers average the last 1000 of 2000 extra SGLD
    iterations at the last step ``gamma = 0.5 / n``.  In the ``phi`` coordinates the
    likelihood curvature is about ``n I / (sum phi)^2`` (``I`` the per-response
    Fisher information of ``theta``, which is small under LDP: ``~ (p - q)^2 / q``
    for SRR), so one step relaxes a likelihood direction by a factor
    ``1 - gamma n I / (2 (sum phi)^2) ~ 1 - I / (4 K^2)``: thousands of steps per
    autocorrelation time, more than 2000.  The average is then about one posterior
    draw ``theta~``, and ``E||theta~ - theta*||^2 = E||E[theta|y] - theta*||^2 +
    E tr Cov[theta|y] ~ 2 E||E[theta|y] - theta*||^2``: the TV error is about
    ``sqrt(2)`` times that of the posterior mean (measured: 1.3-1.4x at
    ``K = 10, 20``, ``epsilon = 0.5, 1``, ``T = 500 K``, ``theta* ~ Dir(1)``).
    The default ``final_estimate='mala'`` instead runs 8 Metropolis-adjusted
    Langevin chains on ``z = ln phi`` with the full-data likelihood.  The likelihood
    of a response is ``h = a + b theta_y + d theta(S)`` with constants that depend on
    ``|S|`` and on whether ``y`` is in ``S`` (``d = 0`` then: using ``sum theta = 1``,
    ``h`` depends on ``(|S|, y)`` only), so responses group into ``G`` distinct
    likelihoods with counts ``c_g`` and the log posterior
    ``sum_k (rho_k z_k - e^{z_k}) + sum_g c_g ln h_g(softmax(z))`` costs
    ``O(G + sum of subset sizes)`` per evaluation, independent of ``n``
    (``G`` < 2000 in the paper's settings).  The
    proposal is first preconditioned by the inverse of the Laplace-type matrix
    ``J F J + diag(e^z + rho)`` (``F`` the observed information of ``theta``,
    ``J = diag(theta) - theta theta^T`` the Jacobian of the softmax, ``e^z`` the
    prior's curvature; ``+ rho`` keeps the proposal no wider than the
    ``exp(rho_k z_k)`` left tail of a category near 0) at the starting point; at
    half the burn-in it is replaced by the covariance of the chains' states, which
    captures the skewed directions of rare categories (about 4x larger effective
    sample size); the step is adapted during the burn-in and then fixed, and every
    move passes the Metropolis-Hastings test, so the average converges to the exact
    posterior mean.  ``final_estimate='gibbs'`` is the exact
    data-augmentation Gibbs sampler on the same groups
    (``N ~ sum_g Mult(c_g, p(. | y_g, S_g, theta))``, ``theta ~ Dir(rho + N)``) with
    the Rao-Blackwellised average ``(rho + E[N | theta]) / (sum rho + n)``; it is
    exact too but mixes slowly when the privacy noise hides most of the information
    (its autocorrelation is the fraction of missing information, close to 1 for small
    ``epsilon``).  Cost of the final phase (Cython kernel), once per fitting call
    and only when ``theta_`` is read: measured 0.02-0.04 s for ``K = 10`` and for
    ``K = 20`` with sparse ``theta*``, 0.35 s for ``K = 20`` with adaptive subsets and
    ``theta* ~ Dir(1)`` (about 1600 groups); the per-user online cost is unchanged.
    The posterior mean under a
    ``Dir(1)`` prior is not the TV-optimal estimate of a sparse ``theta*``: it keeps
    every category away from 0 (a smaller ``prior`` helps there).

    A response is stored
    as ``(y, subset id)`` with a table of distinct subsets, so memory grows as
    12 bytes per response plus ``K`` bytes per distinct RRRR subset, or
    ``ceil(K / 8)`` bytes per distinct response set of a static mechanism (packed
    bits; simulation never holds a users x K array).  Posterior draws held for
    ``theta_`` and :meth:`credible_interval` are thinned evenly above ``2^26`` values.

    Parameters after fitting.  The first fitting call records the parameters that
    define the mechanism and the posterior: ``n_categories``, ``epsilon``, ``mechanism``,
    ``kappa``, ``utility``, ``alpha``, ``prior`` and ``random_state`` (whose
    generator the stream keeps).  If one of them is changed afterwards
    (``set_params`` or assignment), :meth:`partial_fit`,
    :meth:`partial_fit_responses`, :meth:`propose_subset`, :meth:`transform` and
    :meth:`sample_posterior` raise a ``ValueError`` naming it with the fitted and the
    new value, and change nothing: set it back, or call :meth:`fit`, which restarts
    and records the new values.  Equal values compare equal (``1`` and ``1.0``, a
    scalar ``prior`` and the same prior as a vector); a callable ``utility`` or a
    generator ``random_state`` must be the same object.  An invalid value (such as
    ``epsilon=-1``) raises the usual ``InvalidParameterError``.  The compute knobs
    ``sampler``, ``n_steps``, ``batch_size``, ``step_size``, ``n_final_steps`` and
    ``final_estimate`` may change between calls: they change how the posterior is
    sampled, not the posterior (``theta_`` is recomputed when one of its knobs has
    changed since it was cached).

    Copies and privacy.  In deployment the noise is drawn on the users' devices and
    the server holds only ``(y, S)``: anything computed from the server or a copy of
    it is post-processing of ``epsilon``-LDP releases.  In simulation mode
    (:meth:`fit`, :meth:`partial_fit`) the estimator itself privatises the true
    categories with its generator.  A copy (``copy.copy``, ``copy.deepcopy``, pickle, a
    ``fork()``-ed process) of an estimator with ``random_state=None`` reseeds its
    generator from the operating system: a user given to both is released twice
    (``2 epsilon``), never with the original's noise on other users (which would expose
    the difference of the two data sets).  A copy of a seeded estimator replays the
    original's noise (reproducible, for experiments).  The generator state determines
    the noise (and a PCG64 state can be rewound): whoever holds a simulation-mode
    estimator or its pickle can recover the simulated users' categories: raw data.

    Threads.  Calls on one instance from several threads are serialised: every
    fitting, recording, proposing, merging and reading method (``theta_``,
    :meth:`sample_posterior`, :meth:`credible_interval`, :meth:`propose_subset`,
    :meth:`transform`, pickling) runs holding the instance's re-entrant lock
    (:func:`sklearn_bayes.utils.instance_lock`), so no accepted response is lost, no
    privacy noise is drawn twice from one generator state, and a rejected call rolls
    back only its own changes.  :meth:`merge` holds the locks of both estimators.
    Separate instances (one per ingestion worker, merged later) run in parallel.

    Serving many clients.  A server proposes subsets to batches of users with
    :meth:`propose_subsets` (one posterior draw per batch, one per user, or the posterior
    mean) and
    records their responses later, in any order and in batches of any size, with
    ``partial_fit_responses(y, subsets, update='defer')``: validation and storage
    are vectorised (boolean subset masks are interned by packed keys; about
    0.4 s for ``10^6`` responses at ``K = 20``), and no SGLD step is run.  Each
    :meth:`propose_subsets` call draws from the exact posterior of every response
    recorded so far (MALA on the grouped likelihood, whose cost depends on the
    number of distinct ``(y, |S|)`` / ``(y, S)`` groups, not on the number of
    responses) and moves the posterior sample to its last draw; :meth:`refresh`
    does the same without proposing.  Separate ingestion workers record into
    their own estimators; :meth:`merge` adds one worker's responses to another's
    (same frozen parameters; a store is never counted twice: each store carries
    a random identifier, and a merge that would include a store already included
    is refused).  The proposals depend only on the recorded responses and on the
    server's generator: the responses are grouped by subset in lexicographic
    order, so the same recorded responses give the same proposals, bit for bit,
    whatever their arrival order, chunking or merge history.  Every user faces an
    RRRR mechanism whose transition matrix passes the exact ``epsilon``-LDP check,
    whatever subset is proposed; the stores hold only the released ``(y, S)``, so
    recording, merging, refreshing and proposing are post-processing and spend no
    privacy budget.  A batch of ``B`` users shares one posterior (the papers'
    Algorithm 7 is ``B = 1``): the adaptation lags by a batch, measured in
    ``benchmarks/bench_adaptive_ldp.py --serving``.

    Reference: "Bayesian frequency estimation under local differential privacy with
    an adaptive randomized response mechanism" (Aydın and Yıldırım).

    Examples
    --------
    >>> import numpy as np, warnings
    >>> from sklearn_bayes import AdaptiveLDPFrequencyEstimator
    >>> rng = np.random.default_rng(0)
    >>> X = rng.choice(5, size=2000, p=[0.5, 0.2, 0.15, 0.1, 0.05]).reshape(-1, 1)
    >>> est = AdaptiveLDPFrequencyEstimator(n_categories=5, epsilon=1.0,
    ...                                     random_state=np.random.default_rng(1))
    >>> est = est.fit(X)
    >>> est.theta_.shape, int(est.theta_.argmax()), est.n_responses_
    ((5,), 0, 2000)
    >>> bool(abs(est.theta_[0] - 0.5) < 0.1)
    True
    >>> ci = est.credible_interval(0.95)
    >>> ci.shape
    (5, 2)
    """

    _parameter_constraints = {
        # the kernels index categories with int32
        "n_categories": [IntegerInterval(2, 2**31 - 1, closed="both"), None],
        "categories": ["array-like", StrOptions({"from_data"}), None],
        "epsilon": [RealInterval(0, np.inf, closed="neither")],
        "kappa": [RealInterval(0, 1, closed="right")],
        "utility": [StrOptions(set(UTILITIES)), callable],
        "alpha": [RealInterval(0, 1, closed="neither"), None],
        "mechanism": [StrOptions(set(MECHANISMS))],
        "prior": [StrOptions({"hierarchical", "spike-bulk"}), RealInterval(0, np.inf, closed="neither"), "array-like"],
        "point_estimate": [StrOptions({"tv", "median", "mean"})],
        "sampler": [StrOptions({"sgld", "gibbs"})],
        "n_steps": [IntegerInterval(1, None, closed="left")],
        "batch_size": [IntegerInterval(1, None, closed="left")],
        "step_size": [StrOptions({"auto", "0.5/t"}), RealInterval(0, np.inf, closed="neither"), callable],
        "n_final_steps": [IntegerInterval(0, None, closed="left")],
        "final_estimate": [StrOptions({"mala", "gibbs", "sgld"})],
        "decoder": [StrOptions({"auto", "posterior", "eb", "eb-rescale", "eb-stack", "eb-gmodel", "counts", "importance"})],
        "random_state": ["random_state", np.random.Generator],
    }

    def __init__(
        self,
        n_categories=None,
        epsilon=1.0,
        kappa=0.9,
        utility="honest",
        alpha=None,
        prior="hierarchical",
        sampler="sgld",
        n_steps=20,
        batch_size=50,
        step_size="auto",
        n_final_steps=2000,
        final_estimate="mala",
        random_state=None,
        mechanism="auto",
        point_estimate="tv",
        decoder="auto",
        categories=None,
    ):
        self.n_categories, self.categories = n_categories, categories
        self.epsilon = epsilon
        self.kappa = kappa
        self.utility = utility
        self.alpha = alpha
        self.prior = prior
        self.sampler = sampler
        self.n_steps = n_steps
        self.batch_size = batch_size
        self.step_size = step_size
        self.n_final_steps = n_final_steps
        self.final_estimate = final_estimate
        self.random_state = random_state
        self.mechanism = mechanism
        self.point_estimate = point_estimate
        self.decoder = decoder

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.requires_fit = True
        return tags

    @serialized
    def client_mechanism(self):
        """The mechanism users privatise with (deployment).

        Returns
        -------
        mechanism : SetResponseMechanism or RRRRMechanism
            Static ``mechanism``: ``privatize(x, random_state)`` (``x``: positions, ``encode_categories(labels)``)
            returns each user's response as a boolean mask of length ``K`` (subset selection: the reported ``k``-subset;
            GRR: the one-hot released category; OUE: the bit vector); record the masks with
            ``partial_fit_responses(masks)``; ``log_probability(response, x)`` is the exact
            likelihood.  ``mechanism='rrrr'``: a :class:`sklearn_bayes.RRRRMechanism` with the
            estimator's ``n_categories``, ``epsilon`` and ``kappa``; each user's subset comes from
            :meth:`propose_subset`.  A read-only copy: the first client (or proposed subset) handed out freezes
            ``n_categories``, ``categories``, ``epsilon``, ``mechanism`` and ``kappa`` (a later change makes this
            method and :meth:`partial_fit_responses` raise ``ValueError``).
        """
        if "n_responses_" in vars(self):
            self._check_frozen()
            K, client = self.n_categories_, self._client
        else:
            K = self._check_unfitted_params("to build the client mechanism before any data")
            client = self._resolve_mechanism(K)[1]
        if client is None:  # the adaptive mechanism: the device's RRRR with the frozen parameters
            client = RRRRMechanism(K, self.epsilon, self.kappa)
        return self._hand_out(client)

    # ------------------------------------------------------------------ state
    # The fitting methods are ``transactional``: they bind new state on ``self`` as they
    # go and a rejected call restores the bindings and rewinds ``_rng``.  The chain state
    # (``_chain``, see ``_chain.py``) is replaced, never changed in place: before the
    # kernels move ``phi`` / ``sigma`` or the store grows, ``_begin_update`` binds a copy
    # (the store's copy shares its append-only buffers), so restoring the bindings
    # restores everything.  ``_rng`` is the chain's generator, bound here too so that
    # ``transactional`` finds and rewinds it.
    def _init_state(self, categories, labels=_UNSET):
        """Bind a fresh fitted state, recording the parameters it is built with (``labels``: the value of
        ``categories`` the call read)."""
        K = categories.size
        self._check_decoder_size(K)  # K inferred from the data (a set n_categories: checked with the parameters)
        self.categories_ = categories
        self.n_categories_ = K
        prior = self._prior_vector(K)
        self._fitted_params = self._record_params(labels)
        self.mechanism_, self._client = self._resolve_mechanism(K)
        # the RRRR likelihood table (48 bytes per category): static mechanisms never read it
        # (4.8 GB at K = 10^8 for two GRR responses)
        consts = simulation_table(K, float(self.epsilon), float(self.kappa)) if self._client is None else None
        self._rng = check_privacy_random_state(self.random_state, owner="AdaptiveLDPFrequencyEstimator",
                                               instance=self, warn_small_seed=True)
        # member lists serve the RRRR kernels only: a static mechanism's sets (one per
        # response, mostly distinct) would cost 4 K bytes each (4 GB for 10^6 users at K=1000)
        self._chain = ChainState.start(K, self._rng, consts, prior, members=self._client is None)
        self.n_responses_ = 0
        self._stale = False  # responses recorded since the posterior sample last moved (refresh)

    def _begin_update(self):
        """Work on a copy of the chain state that is changed in place (see the note above)."""
        # static mechanisms never change the online sample
        self._chain = self._chain.for_update(copy_sample=self._client is None)

    def _end_update(self):
        """Last step of a fitting call (cannot fail)."""
        store = self._chain.store
        self.n_responses_ = store.n
        self.subset_sizes_ = store.used_sizes()
        self._validated_params = self._params_now()  # this call validated them
        # ``theta_`` is computed when first read: recording a response costs no final
        # phase.  Its randomness is seeded by a digest of the main generator's state,
        # which is not advanced, so reading ``theta_`` or posterior samples never
        # changes later fitting, and equal states give equal estimates.
        self._read_seed = int.from_bytes(state_digest(self._rng)[:16], "little")
        self._theta_cache = None

    def _process(self, values, given=None):
        """Add users (true categories if given is None, else responses with subset ids)."""
        if given is None:  # privacy noise: a copy of a seeded fitted estimator replaying it warns
            register_noise_state(self._rng, "AdaptiveLDPFrequencyEstimator", self, seed=self.random_state)
        self._begin_update()
        if self._client is not None:  # a static protocol: privatise all users at once (packed bits)
            self._chain.store.append_packed(self._client._privatize_packed(values, self._rng))
        else:
            fitted = self._fitted_params
            process_users(self._chain, values, given, epsilon=fitted["epsilon"], kappa=fitted["kappa"],
                          utility=fitted["utility"], alpha=fitted["alpha"], sampler=self.sampler,
                          n_steps=self.n_steps, batch_size=self.batch_size, step_size=self.step_size)
        self._end_update()
    # ------------------------------------------------------------------ posterior
    def _uses_exact_gibbs(self):
        """theta_ and posterior samples from the exact Gibbs sampler of ``_posterior``."""
        return self._client is not None or isinstance(self._fitted_params["prior"], str)

    def _sgld_draws(self, n_iter, thin, rng):
        """The online chain continued from a copy of the current sample (``final_estimate='sgld'``)."""
        gamma = float(step_sizes(self.step_size, max(self._chain.store.n - 1, 0), 1)[0])
        return self._chain.continued(n_iter, thin, rng, sampler=self.sampler, batch_size=self.batch_size,
                                     gamma=gamma)

    @property
    @serialized
    def theta_(self):
        """Estimated category probabilities, computed on first read after each fit call.

        Holds the instance's lock (see Notes, "Threads"): a value computed while another
        thread records responses is never cached as the estimate of the later state.
        """
        if "n_responses_" not in vars(self):
            raise AttributeError(
                "'AdaptiveLDPFrequencyEstimator' has no attribute 'theta_': call fit, partial_fit "
                "or partial_fit_responses first."
            )
        self._check_frozen()  # re-validated only if a parameter was set since; a changed prior/epsilon/... refused
        knobs = tuple(getattr(self, name) for name in FINAL_KNOBS)
        cache = self._theta_cache
        if cache is None or not all(same_value(a, b) for a, b in zip(cache[0], knobs)):  # with the current knobs
            theta, conv = self._final_theta(self._read_rng(0))
            self._theta_cache = cache = (knobs, theta, conv)
            warn_if_unconverged(conv)
        return cache[1].copy()

    def _read_rng(self, stream):
        """Generator for read-only computations (``stream`` 0: theta_, 1: posterior samples)."""
        return np.random.default_rng([self._read_seed, stream])

    # ------------------------------------------------------------------ public API
    @_fit_context(prefer_skip_nested_validation=True)
    @transactional
    def fit(self, X, y=None):
        """Reset, then run AdOBEst-LDP on the true categories ``X`` (simulation mode).

        A restart: the parameters are read anew and recorded (see Notes).  A rejected
        ``X`` leaves a fitted estimator as it was.

        Parameters
        ----------
        X : array-like of shape (n_users, 1)
            True category of each user, in arrival order.
        y : None
            Ignored.

        Returns
        -------
        self : object
        """
        for attr in _FITTED_ATTRS:
            if attr in vars(self):
                delattr(self, attr)
        self._add_users(X)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    @transactional
    def partial_fit(self, X, y=None):
        """Privatise and add the users ``X`` one at a time (simulation mode).

        Each user is privatised with the subset chosen from the current posterior
        sample, then the sample moves.  The whole batch is validated first, and a
        rejected batch (or a failure while processing it) leaves the estimator
        unchanged.  A fitted estimator continues with the parameters it was built
        with: if one of them has changed since, a ``ValueError`` names it (see Notes).

        Parameters
        ----------
        X : array-like of shape (n_users, 1)
            True categories (labels of ``categories_``, or ``0..K-1``).
        y : None
            Ignored.

        Returns
        -------
        self : object
        """
        self._add_users(X)
        return self

    def _add_users(self, X):
        first = "n_responses_" not in vars(self)
        labels = _copy_labels(self.categories) if first else self.categories  # read once per call (review HLR F8)
        if first:
            self._check_params(labels)  # _fit_context has validated the parameters
        else:
            self._check_frozen()  # _fit_context skips validation for a fitted partial_fit
        col = inp.column(self, X, reset=first, n_categories=self.n_categories, categories=labels)
        categories = inp.categories_from(col, self.n_categories, labels) if first else self.categories_
        values = inp.encode(col, categories)
        if first:
            self._init_state(categories, labels)
        self._process(values)

    # Not under ``_fit_context``: like scikit-learn's ``partial_fit``, a call on a fitted
    # estimator validates the parameters only if one has changed (``_check_frozen``); in
    # deployment one call per user would otherwise spend more on validation than on work.
    @transactional
    def partial_fit_responses(self, y, subsets=None, *, update="online"):
        """Record released responses with the subsets they were produced with (deployment).

        Validated as a whole first; a rejected call leaves the estimator unchanged.  A
        fitted estimator continues with the parameters it was built with (see Notes).

        Parameters
        ----------
        y : array-like of int of shape (n_responses,), or bool of shape (n_responses, K)
            Positions and mask columns are those of ``categories_`` (the labels in the order given; a device
            privatises ``encode_categories([its label])``).  ``mechanism='rrrr'``: released categories as positions ``0..K-1`` (as
            returned by :meth:`sklearn_bayes.RRRRMechanism.privatize`).  A static
            mechanism: the response sets as a boolean mask (as returned by
            ``client_mechanism().privatize``; subset selection rows hold exactly
            ``subset_size`` categories; GRR also accepts the released positions).
        subsets : array-like or None, default=None
            Required for ``mechanism='rrrr'`` (``None`` for a static mechanism).  The subset of each response: one subset (list of category positions,
            possibly empty for SRR) used for all, a list of ``n_responses`` subsets, or
            a boolean array of shape ``(n_responses, K)`` (as returned by
            :meth:`propose_subsets`; validated and stored without a Python loop per
            response, the form to use for large batches).
        update : {'online', 'defer'}, default='online'
            ``'online'``: the online pass of the papers, ``n_steps`` SGLD steps (or a
            Gibbs sweep) per response, in the order given (about 45 us per response at
            ``K = 20``).  ``'defer'``: store the responses only (vectorised, about
            0.1 us per response); the posterior sample is refreshed on demand by
            :meth:`refresh` or by the next :meth:`propose_subsets` (see Notes,
            "Serving many clients").  ``theta_`` and :meth:`sample_posterior` use every
            recorded response either way.

        Returns
        -------
        self : object
        """
        if update not in ("online", "defer"):
            raise ValueError(f"update must be 'online' or 'defer', got {update!r}.")
        first = "n_responses_" not in vars(self)
        labels = _copy_labels(self.categories) if first else None  # read once per call (review HLR F8)
        if first:
            K = self._check_unfitted_params("to record responses (deployment mode)", labels)
        else:
            self._check_frozen()
            K = self.n_categories_
        self._check_handed_out("partial_fit_responses")
        client = self._resolve_mechanism(K)[1] if first else self._client
        if first:  # the public labels, not the codes 0..K-1 (review HLR F1)
            domain = inp.categories_from(None, self.n_categories, labels)
        if client is not None:  # a static protocol: the responses are sets
            packed = inp.static_masks(y, subsets, K, client, self.mechanism)
            if first:
                self._init_state(domain, labels)
                self.n_features_in_ = 1
            self._begin_update()
            self._chain.store.append_packed(packed)
            self._end_update()
            return self
        ya = inp.rrrr_responses(y, K)
        masks = inp.subset_masks(subsets, ya.size, K)
        if first:
            self._init_state(domain, labels)
            self.n_features_in_ = 1
        self._begin_update()
        given = self._chain.store.intern_masks(masks)
        if update == "online":
            self._process(ya, given)
            return self
        self._chain.store.append(ya, given)
        self._stale = True
        self._end_update()
        return self

    @serialized
    def sample_posterior(self, n_samples=1000, random_state=None):
        """Draws of ``theta`` from the posterior given the recorded responses.

        Static mechanisms and the hierarchical prior: the exact posterior's chain (the count posterior's, or
        its importance-resampled draws, where ``decoder`` uses them; ``'eb'`` has no draws: the exact posterior's).
        Otherwise (RRRR with a fixed prior) the sampler follows ``final_estimate``: ``'mala'``
        and ``'gibbs'`` target the exact posterior (see Notes) from the online sample after
        ``max(1000, n_final_steps // 2)`` burn-in iterations, thinned every 5 / 1 iterations;
        ``'sgld'`` continues a copy of the online chain, as in the papers.
        Consecutive draws are autocorrelated.  Reading samples never changes the
        estimator: later fitting is the same whether or not this is called.  On the
        empirical-Bayes route (``K >= 64``) the draws cost far more than ``theta_``: K = 1000,
        n = 10^5: about 20 s for 200 draws, 29 s for 1000, against 1.2 s for fit and ``theta_``.

        Parameters
        ----------
        n_samples : int, default=1000
            Number of draws.
        random_state : None, int or numpy.random.Generator, default=None
            Randomness of the chain.  ``None`` uses a stream fixed by the fitted
            state, so repeated calls return the same draws until the next fit call.

        Returns
        -------
        samples : ndarray of shape (n_samples, n_categories_)

        Raises
        ------
        ValueError
            If ``n_samples * n_categories_`` exceeds ``2^27`` (the draws would take more
            than 1 GiB): ask for fewer draws, in several calls with their own ``random_state``.

        Warns
        -----
        ConvergenceWarning
            Empirical-Bayes route: when the draws fail split R-hat <= 1.05 (4 segments) or
            ESS >= min(100, n_samples / 10) (K = 1000, n = 10^5: R-hat 4.1, lag-1 autocorrelation 0.88).
        """
        check_is_fitted(self)
        self._check_frozen()
        n_samples = check_count(n_samples, "n_samples", self.n_categories_, "posterior draws of float64")
        draws = self._posterior_draws(n_samples, random_state)
        self._check_eb_draws(draws)  # the EB route: no theta_ chain was checked (see Warns)
        return draws

    @serialized
    def transform(self, X):
        """Map each category to its estimated probability ``theta_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, 1)

        Returns
        -------
        P : ndarray of shape (n_samples, 1)
        """
        check_is_fitted(self)
        self._check_frozen()
        col = inp.column(self, X, reset=False, n_categories=self.n_categories)
        idx = inp.encode(col, self.categories_)
        return self.theta_[idx].reshape(-1, 1)

    @serialized
    def score_samples(self, X):
        """Log-probability ``ln theta_[x]`` of each held-out true category ``x`` under the estimate.

        For model selection in simulation (:meth:`score`); it reads only ``theta_``, so it releases nothing
        beyond it.  A category with ``theta_ = 0`` scores ``-inf`` (no decoder we ship returns a zero).

        Parameters
        ----------
        X : array-like of shape (n_samples, 1)
            True categories (labels of ``categories_``).

        Returns
        -------
        log_prob : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        self._check_frozen()
        col = inp.column(self, X, reset=False, n_categories=self.n_categories)
        with np.errstate(divide="ignore"):
            return np.log(self.theta_)[inp.encode(col, self.categories_)]

    def score(self, X, y=None):
        """Mean log-likelihood of held-out true categories, ``mean_i ln theta_[x_i]`` (as ``GaussianMixture``).

        Its expectation is ``-H(p) - KL(p || theta_)`` for users drawn from ``p``: a proper score, larger is
        better, so ``cross_val_score`` and ``GridSearchCV`` compare decoders, priors or mechanisms at the
        same ``epsilon`` in simulation.

        Parameters
        ----------
        X : array-like of shape (n_samples, 1)
            True categories (labels of ``categories_``).
        y : None
            Ignored.

        Returns
        -------
        score : float
        """
        return float(np.mean(self.score_samples(X)))

    @property
    def _n_features_out(self):
        return 1
