"""DP-SGLD logistic regression, optionally with an exact OPS start (Algorithms 2-4 of Wang's thesis, Ch. 3).

The DP-SGLD part is accounted by Google's ``dp-accounting`` (``_dpsgld_accounting``: Rényi
DP of the Poisson-subsampled Gaussian mechanism, replace-one neighbours via add/remove).  The
thesis's own bound (subsampling lemma + advanced composition) is reported beside it.  The
start is drawn by the exact samplers of ``_ball_sampling``.
"""

import math
import warnings
from fractions import Fraction

import numpy as np
from scipy import special
from sklearn.base import ClassifierMixin, _fit_context
from sklearn.utils import check_array
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_bayes.utils._validation import check_container, naming
from sklearn_bayes.privacy._core import PrivacyLedger
from sklearn_bayes.privacy._linear._ball_sampling import ops_rejection_draw, truncated_gaussian_ball
from sklearn_bayes.privacy._linear._dpsgld_accounting import (  # noqa: F401 - re-exported
    RDP_ORDERS,
    _checked_epsilon,
    _raw_epsilon,
    _valid_epsilon,
    calibrate_sgld_noise,
    replace_one_from_add_remove,
    sgld_epsilon,
    thesis_sgld_epsilon,
)
from sklearn_bayes.privacy._linear._base import (
    _check_draw_budget,
    _PrivateLinearBase,
    ops_epsilon,
    ops_tempering,
)
from sklearn_bayes.utils import IntegerInterval, RealInterval, check_epsilon, check_privacy_random_state, serialized

__all__ = [
    "DPSGLDLogisticRegression",
    "calibrate_sgld_noise",
    "clip_per_example",
    "replace_one_from_add_remove",
    "sgld_chain",
    "sgld_epsilon",
    "sgld_step_size",
    "thesis_sgld_epsilon",
]


# --------------------------------------------------------------------------------------
# accounting
# --------------------------------------------------------------------------------------



# --------------------------------------------------------------------------------------
# the sampler
# --------------------------------------------------------------------------------------


def clip_per_example(G, clip_norm):
    """Scale each row (one example's gradient) of ``G`` to norm at most ``clip_norm``."""
    norms = np.sqrt(np.einsum("ij,ij->i", G, G))
    scale = np.minimum(1.0, clip_norm / np.maximum(norms, 1e-300))
    return G * scale[:, None]


def sgld_chain(per_example_grad, prior_grad, theta0, n_samples, sampling_rate, n_steps, step_size, noise_sd,
               clip_norm, rng, keep=None):
    """Stochastic gradient Langevin dynamics with per-example clipping (Algorithm 3, corrected).

    ``θ ← θ - η (∇r(θ) + (1/q) Σ_{i∈S} clip_L(∇ℓ_i(θ))) + N(0, s² I)`` with ``S`` a Poisson
    sample (each record kept with probability ``q``, so the minibatch sum over ``q`` is an
    unbiased estimate of the full gradient sum) and ``s`` = ``noise_sd`` (≥ √(2η) for a
    Langevin chain; the thesis's variance ``η`` would target the posterior squared).

    Parameters
    ----------
    per_example_grad : callable ``(theta, idx) -> ndarray (len(idx), d)``
        Gradients of the per-example negative log-likelihoods.
    prior_grad : callable ``theta -> ndarray (d,)``
        Gradient of the negative log prior ``r``.
    theta0 : ndarray of shape (d,)
    n_samples : int
    sampling_rate : float in (0, 1]
        ``q``; 1 uses every record at every step.
    n_steps : int
    step_size : float
        η.
    noise_sd : float
        Standard deviation ``s`` of the injected noise per coordinate.
    clip_norm : float
        L; ``inf`` disables clipping.
    rng : numpy.random.Generator
    keep : array-like of int or None
        Steps (1-based) whose iterate is returned; ``None`` returns all.

    Returns
    -------
    draws : ndarray of shape (len(keep), d)
    """
    theta = np.array(theta0, dtype=float)
    keep = np.arange(1, n_steps + 1) if keep is None else np.asarray(keep)
    keep_set = {int(k): j for j, k in enumerate(keep)}
    out = np.empty((len(keep), theta.shape[0]))
    all_idx = np.arange(n_samples)
    for t in range(1, n_steps + 1):
        idx = all_idx if sampling_rate >= 1 else np.flatnonzero(rng.random(n_samples) < sampling_rate)
        G = per_example_grad(theta, idx)
        if math.isfinite(clip_norm):
            G = clip_per_example(G, clip_norm)
        drift = prior_grad(theta) + G.sum(0) / sampling_rate
        theta = theta - step_size * drift + noise_sd * rng.standard_normal(theta.shape[0])
        j = keep_set.get(t)
        if j is not None:
            out[j] = theta
    return out


def realised_sampling_rate(batch_size, n_samples):
    """The rate ``q`` that ``rng.random(n) < q`` realises: ``min(1, τ/n)`` rounded up to a multiple of 2⁻⁵³.

    numpy's ``Generator.random`` returns ``k 2⁻⁵³`` with ``k`` uniform on ``0 .. 2⁵³ - 1``, so
    ``P(u < q) = ⌈q 2⁵³⌉ 2⁻⁵³``: up to 2⁻⁵³ above a ``q`` that is not such a multiple (every
    ``q < 1/2`` with low bits set).  The accountant, the noise and the drift all use the rate
    returned here, which is the sampling probability exactly (scaling by 2⁵³ and ``ceil`` are
    exact in floating point).
    """
    q = min(1.0, batch_size / n_samples)
    return math.ceil(q * 9007199254740992.0) / 9007199254740992.0


def privacy_noise_floor(noise_multiplier, clip_norm, step_size, sampling_rate):
    """The smallest float ``s`` with ``s ≥ z L η / q`` in real arithmetic (not merely in float).

    ``z L η / q`` computed in floating point can land up to 2 ulp below the real value (three
    roundings; review HQT); the exact rational value decides here, and the float is moved up by
    one ulp when rounding to nearest went below it.
    """
    exact = Fraction(noise_multiplier) * Fraction(clip_norm) * Fraction(step_size) / Fraction(sampling_rate)
    s = float(exact)
    if Fraction(s) < exact:
        s = math.nextafter(s, math.inf)
    return s


#: the rule behind ``step_size="auto"``: ``"tempered"`` (since round HDS2) or ``"langevin"`` (before)
AUTO_STEP_RULE = "tempered"
#: κ of the tempered rule: the stationary temperature is capped at ``κ n / (4 d)`` (see :func:`sgld_step_size`)
TEMPERED_KAPPA = 0.1


def sgld_step_size(rule, n_samples, n_coef, sampling_rate, noise_multiplier, clip_norm, prior_scale):
    """The DP-SGLD step η of a named rule, from public quantities only.

    Parameters
    ----------
    rule : {"langevin", "tempered"}
    n_samples : int
        n (public for replace-one neighbours).
    n_coef : int
        d, the number of scaled coefficients (features, and the intercept column).
    sampling_rate : float
        q.
    noise_multiplier : float
        z, calibrated from (ε, δ, q, T) alone.
    clip_norm : float
        L.
    prior_scale : float
        σ₀.

    Returns
    -------
    eta : float

    Notes
    -----
    ``"langevin"``: ``η_L = 2 (q/(zL))²``, the largest step at which the privacy noise
    ``zLη/q`` is no more than the Langevin noise ``√(2η)``: the chain targets the posterior.

    ``"tempered"``: ``η = max(η_L, min(1/β, κ n/(4d) η_L))`` with ``β = n/4 + 1/σ₀²`` (a bound
    on the curvature of the negative log posterior for rows of norm <= 1: the step of gradient
    descent that cannot overshoot) and ``κ`` = ``TEMPERED_KAPPA``.  Above ``η_L`` the injected
    noise is the privacy noise, ``s = zLη/q``, and for small η (and ignoring the minibatch's own
    gradient noise) the chain targets the posterior tempered to ``T = s²/(2η) = η/η_L``
    (density ∝ ``p(θ | data)^{1/T}``).  The cap bounds ``4dT/n`` by κ: that is about the
    variance (not the sd) of a test logit under the tempered law when ``p(1-p) ≈ 1/4``; with
    ``p(1-p) < 1/4`` the variance is larger by about ``1/(4 mean p(1-p))`` (review HQT measured
    0.22 on average, up to 1.1, at the cap with n = 5000, d = 4, ε = 0.5).  At larger n and ε the
    minibatch's gradient noise (it multiplies the injected variance by about
    ``1 + q n Var(g)/(zL)²``, ``Var(g)`` a coordinate's variance of one record's clipped
    gradient) raises the effective temperature above ``η/η_L`` (HQT: the intercept spread 2.17x the target sd at
    n = 20000, ε = 1).  The noise is calibrated as before (its multiplier does not depend on
    η), so the guarantee is unchanged.
    """
    eta_l = 2.0 * (sampling_rate / (noise_multiplier * clip_norm)) ** 2
    if rule == "langevin":
        return eta_l
    if rule != "tempered":
        raise ValueError(f"rule must be 'langevin' or 'tempered', got {rule!r}.")
    smooth = 1.0 / (n_samples / 4.0 + 1.0 / prior_scale**2)
    return max(eta_l, min(smooth, TEMPERED_KAPPA * n_samples / (4.0 * n_coef) * eta_l))


#: ``start="ops"`` is refused when its worst-case expected number of proposals, ``e^{ρ n B}``,
#: exceeds ``e^{OPS_MAX_LOG_PROPOSALS}`` (10⁶): a public rule (parameters and ``n``)
OPS_MAX_LOG_PROPOSALS = math.log(1e6)


# --------------------------------------------------------------------------------------
# the estimator
# --------------------------------------------------------------------------------------


class DPSGLDLogisticRegression(ClassifierMixin, _PrivateLinearBase):
    """Differentially private Bayesian logistic regression by DP-SGLD (optionally with an OPS start).

    Stochastic gradient Langevin dynamics (Algorithm 3 of *Statistical and Computational
    Tradeoffs in Differential Privacy*) with per-example gradient clipping and Gaussian noise
    calibrated by ``dp-accounting``, started at θ₀.  By default (``start="zero"``) θ₀ = 0, the
    prior mean, which reads no data, and the whole (ε, δ) goes to the chain: the release is
    certified end to end by the accountant.  ``start="ops"`` is the
    thesis's hybrid (Algorithm 4): θ₀ is an exact draw from the tempered posterior on the ball
    (OPS, Algorithm 2, with ``ops_fraction × ε``).  Every iterate of the chain is private;
    ``n_draws`` of them are kept, and ``predict_proba`` averages over them.

    Read the User Guide: :ref:`private_linear_models`.

    Parameters
    ----------
    epsilon : float, default=1.0
        Total ε (> 0, finite), replace-one neighbours.  ``fit`` refuses, naming the limit, an
        ε whose DP-SGLD add/remove budget leaves floating-point range (1376 at δ = 1e-6; 2753
        with ``start="ops"`` and ``ops_fraction=0.5``), and a budget no accountant certifies
        (User Guide, *Limits*).
    delta : float, default=1e-6
        δ in (0, 1) of the DP-SGLD part.
    x_bound : float, default=None
        Public bound on ``||x||_2`` (rows are clipped onto it).  Required.
    theta_bound : float, default=10.0
        Radius R of the public parameter ball of the OPS step (scaled units): the
        log-likelihood is then bounded by ``B = log(1 + e^R)``.
    prior_scale : float, default=10.0
        Standard deviation of the Gaussian prior on the scaled coefficients.
    clip_norm : float, default=1.0
        Per-example gradient clipping bound L (scaled units; a scaled row has norm ≤ 1,
        so the logistic gradient norm is already ≤ 1 and clipping at 1 never binds).
    batch_size : int, default=256
        Expected minibatch size τ: each record enters a step's minibatch independently
        with probability ``q = min(1, τ/n)`` (Poisson sampling, what the accountant assumes),
        rounded up to the multiple of 2⁻⁵³ that numpy's comparison realises (``sampling_rate_``).
    n_iter : int, default=500
        Number of DP-SGLD steps.
    n_draws : int, default=50
        Iterates kept, evenly spaced over the second half of the chain (over its last
        ``n_draws`` steps when ``n_draws > n_iter - n_iter // 2``); always ``n_draws`` distinct steps.
    step_size : {"auto", "langevin", "tempered"} or float, default="auto"
        η.  ``"auto"`` is ``"tempered"`` (since round HDS2; the module switch
        ``AUTO_STEP_RULE``): a step from public quantities (``n``, ``d``, ``q``, ``z``, ``L``,
        ``prior_scale``), ``η = max(η_L, min(1/β, κ n/(4d) η_L))``, at which the chain targets
        the posterior tempered to ``T = η/η_L >= 1``; see :func:`sgld_step_size` and Notes.
        ``"langevin"`` (the default before round HDS2; it restores those seeded outputs bit for
        bit): ``η_L``, the largest η at which the privacy noise is no more than the Langevin
        noise (``s = √(2η)``, "privacy for free"), so the chain targets the posterior itself,
        but at small ε it hardly moves.  Any step keeps the guarantee:
        the noise is calibrated from (ε, δ, q, ``n_iter``) and never below it.  A chain that
        diverges (non-finite draws, a step too large) is refused with a ``ValueError`` naming
        ``step_size``; nothing non-finite is released.
    ops_fraction : float, default=0.5
        Share of ε spent on the OPS start (the thesis uses ε/2).  Used only with
        ``start="ops"`` (validated always); with ``start="zero"`` or ``"prior"`` all of ε goes
        to DP-SGLD.
    accountant : {"rdp", "pld"}, default="rdp"
        ``dp-accounting`` accountant that calibrates the noise: Rényi DP, or privacy-loss
        distributions (tighter, slower).  An answer of 0 or ``inf`` (RDP below its floor,
        where dp-accounting returns 0 for a negative Rényi divergence) is never accepted:
        the noise is then calibrated and certified by the other accountant (or RDP with
        more orders), and ``epsilon_sgld_`` is that certificate.
    start : {"zero", "prior", "ops"}, default="zero"
        The chain's start θ₀.  ``"zero"``: θ₀ = 0, the prior mean; no data is read and no
        budget spent.  It predicts ½ until the chain moves (see Notes for why it is the
        default).  ``"prior"``: a draw of the prior ``N(0, prior_scale² I)`` restricted to the
        ball ``||θ|| <= theta_bound`` from ``random_state`` (no data read, no budget; the
        default until round HSG).  ``"ops"``: an exact draw from the posterior tempered by
        ``ρ = min(1, ε_ops/(4B))`` on the ball (``ε_ops = ops_fraction × ε``), by rejection;
        refused (``ValueError`` naming ``start``, before any noise) when its worst-case expected
        number of proposals ``e^{ρ n B}`` exceeds 10⁶, i.e. when ``n × ops_fraction × ε > 55``
        (``ρB = ε_ops/4``).  See Notes.
    n_mcmc : "deprecated" or int, default="deprecated"
        Ignored (it counted the steps of a Metropolis start that is gone: review HQX F1); any
        value but ``"deprecated"`` emits a ``FutureWarning`` at ``fit``.  Will be removed.
    fit_intercept : bool, default=True
        Append the constant column (design row ``[x/x_bound, 1]/√2``).
    classes : array-like of shape (2,) or None, default=None
        The two **public** labels of the target.  Given, ``classes_`` is these labels (sorted)
        whatever the data hold, and a data set with one label only is fitted and charged like
        any other; ``y`` is then not typed by sklearn (whose target type reads the values: one
        non-integer float label made ``y`` "continuous", review HQY F1), so ``classes=[0, 0.5]``
        fits.  The two labels must be finite.  ``None`` means the public label set ``{0, 1}``
        (``{False, True}`` for a boolean array ``y``): ``classes_`` is ``[0, 1]`` whichever labels
        occur, in the dtype ``y`` declares (an array or a Series), else (a list) ``int64``: a
        list's dtype would be inferred from the records (review HQY F2).
        Either way a label of ``y`` outside the public set is refused with a ``ValueError``
        (not printed): the public set is the domain of the label, so a neighbour never has a
        label outside it.  (Until review HQX F2, ``None`` read the label set from ``y``: it
        published the labels and refused a data set with one label, which told apart
        neighbours with one positive record and none.)
    random_state : None, int, numpy.random.Generator, default=None
        Source of all randomness (an int emits ``SeededNoiseWarning``).
    ledger : PrivacyLedger or None, default=None
        Optional shared ledger (one record per fit; two with ``start="ops"``).  ``fit`` checks the releases
        against its budget before drawing and refuses
        (:class:`~sklearn_bayes.exceptions.BudgetExceededError`) what would exceed it,
        leaving the estimator unchanged; see :ref:`privacy_budget`.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The public labels: ``classes`` (sorted) or, with ``classes=None``, ``[0, 1]`` (dtype: see
        ``classes``).
    coef_samples_ : ndarray of shape (n_draws, n_features)
        The released draws of the coefficients (original units): iterates of the private chain,
        not independent posterior draws -- their spread is not a credible interval.  Under the
        default (tempered) step the chain targets the posterior tempered to ``temperature_``, and
        the draws are *wider* than the posterior: review HQT measured a within-chain sd of
        1.6-5.6x the Laplace posterior sd (synthetic data, n = 5000-20000, ε = 0.5-2).  With
        ``step_size="langevin"`` the chain hardly moves at small ε and the draws are narrower:
        review HQX F5 measured 3-75 % of the Laplace posterior sd, and 0-17 % coverage of the
        non-private coefficients by their 95 % range.
    intercept_samples_ : ndarray of shape (n_draws,)
    coef_ : ndarray of shape (1, n_features)
        Mean of the draws (post-processing).
    intercept_ : ndarray of shape (1,)
    ops_coef_ : ndarray of shape (n_features,)
        The chain's start θ₀ (original units): with ``start="ops"`` the exact OPS draw (a
        release, ``ε_ops``-DP); otherwise the prior draw or 0 (independent of the data).
    rho_ : float
        Tempering of the OPS step, ``min(1, ε_ops/(4B))``; ``0.0`` with ``start="zero"`` or
        ``"prior"`` (the likelihood is not used).
    noise_multiplier_ : float
        Noise standard deviation over the add/remove sensitivity ``L`` of the gradient sum.
    step_size_ : float
        η, the step used.
    step_rule_ : {"tempered", "langevin", "float"}
        The rule behind ``step_size_``: ``step_size`` itself, with ``"auto"`` resolved by the
        module switch ``AUTO_STEP_RULE`` at fit time (process-wide state that ``get_params``,
        ``clone`` and pickling of an unfitted estimator do not carry), or ``"float"`` for a
        number.
    temperature_ : float
        ``T = max(1, η/η_L) = noise_sd_² / (2 step_size_)`` with ``η_L = 2(q/(zL))²``: the
        chain targets (for small η, ignoring the minibatch's gradient noise) the posterior
        tempered to ``p(θ | data)^{1/T}``; 1.0 for ``step_size="langevin"`` (the posterior
        itself).  A function of public inputs (n, d, q, z, L, σ₀).
    noise_sd_ : float
        Standard deviation of the injected noise per coordinate and step: at least
        ``noise_multiplier_ × clip_norm × step_size_ / sampling_rate_`` in real arithmetic.
    sampling_rate_ : float
        The Poisson sampling rate ``q``: ``min(1, batch_size/n)`` rounded up to a multiple of
        2⁻⁵³, the probability that ``rng.random() < q`` realises exactly; the accountant uses it.
    epsilon_sgld_ : float
        Replace-one ε of the DP-SGLD part from the accountant (at ``delta``).
    epsilon_thesis_ : float
        ε of the same run by the thesis's Theorem 3.16 bound (for comparison).
    epsilon_spent_, delta_spent_ : float
        Totals over the releases (the DP-SGLD part, and the OPS start with ``start="ops"``,
        which is pure ε).
    ledger_ : PrivacyLedger
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    See Also
    --------
    AdaOPSRegressor : exact posterior sampling for linear regression.

    Notes
    -----
    **Start.**  ``start="zero"`` (default): θ₀ = 0.  ``start="prior"``: θ₀ is drawn from
    ``N(0, σ₀² I)`` restricted to ``||θ|| <= R`` (direction uniform, ``||θ||²/(2σ₀²)`` a
    truncated ``Gamma(d/2)`` drawn by inverting the incomplete gamma function), from
    ``random_state`` only.  Neither depends on the data, and the release's whole (ε, δ) is the
    accountant's certificate of the chain.

    *Why zero* (round HSG, measured with the Langevin step).  With ``step_size="langevin"`` the
    step is ``η = 2(q/(zL))²``, small at small ε (large ``z``), and the chain moves little from θ₀ in ``n_iter`` steps: over the kept
    draws, ``||θ̄ - θ₀||`` was 0.1-2 (scaled units) at ε = 0.1 and 2-13 at ε = 1-2 on rwm5yr,
    SmokeBan and credit_cards, against a MAP norm of 4-13.  From a prior draw (norm up to
    R = 10, random direction) the release is then a confident random classifier: below the
    majority class, log loss 0.8-1.8, on small sets at ε <= 1.  From θ₀ = 0 it predicts ½, and
    the drift first moves the intercept towards the base rate, then the slopes towards the MAP.
    On 7 held-out sets × ε in {0.1, 0.5, 1, 2, 10} (20 paired splits) the zero start lost no
    cell beyond 1 paired SE in accuracy or log loss; it gained up to 31 points (Arrests,
    Caravan at ε = 0.1) and up to 1.08 nats of log loss (Titanic at ε = 0.1).  On credit_cards
    (seen before the rule was fixed) at ε = 1-2 it predicts the majority class where the prior
    start was 0.6-0.9 points more accurate.  At ε <= 0.5 on small sets the zero start learns
    little: its accuracy is then between a coin's and the majority class's (up to 4.5 points
    below the latter) and its log loss near log 2 = 0.693, where the prior start's was up to 1.8.

    ``start="ops"``: with ``||x|| <= 1`` and ``||θ|| <= R`` the logistic log-likelihood of
    one record is in ``[-B, 0]``, ``B = log(1 + e^R)``; one *exact* draw from
    ``π_ρ(θ) ∝ exp(ρ ℓ(θ)) N(θ; 0, σ₀²/ρ I)`` on the ball (prior and likelihood to the power
    ``ρ = min(1, ε_ops/(4B))``) is ``ε_ops``-DP (Theorem 3.4).  It is drawn by rejection: a
    proposal from the tempered prior on the ball is accepted with probability
    ``exp(ρ ℓ(θ)) <= 1``, so the accepted θ has law exactly ``π_ρ``.  The acceptance
    probability is at least ``e^{-ρ n B}``: the option is refused when ``ρ n B > log 10⁶``.
    This rule reads ``n``, which is public for replace-one neighbours (the only neighbours
    this estimator claims); nothing else about the data decides a refusal, and there is no
    cap or fallback on the number of proposals (either would change the output's law).
    **Timing side channel**: the number of proposals, hence the running time of ``fit``,
    depends on the data (its expectation is ``1/E[exp(ρ ℓ(θ))]``); it is not released as an
    attribute, but an observer who times ``fit`` learns about it.  Use ``start="zero"`` (the default)
    when the time of a fit is observable.  **The guarantee excludes the timing of** ``fit``
    **for every start, the default included** (review HQY F4): each DP-SGLD step costs time in
    proportion to its Poisson batch size ``|S_t|``, which the accountant treats as secret (the
    add/remove to replace-one conversion does not cover an observed ``|S_t|``).  (Until review HQX F1 the OPS start was a Metropolis
    chain started at the non-private MAP that never moved: a deterministic function of the
    data, ε = ∞ in practice.)

    *The step* (round HDS).  What limits the default chain is its step, not its noise: with
    ``η n`` fixed the accuracy hardly depends on ε (rwm5yr, diamonds, SmokeBan, credit_cards at
    ε = 0.1-1), and ``η n`` from 0.004-1.1 (the Langevin step) up to 3-8 gained 2-8 points on
    rwm5yr and diamonds at every ε <= 1.  Above the Langevin step ``η_L`` the injected noise is the
    privacy noise ``zLη/q`` (exactly the calibrated one), and the chain targets the posterior
    tempered to ``T = η/η_L``; ``step_size="tempered"`` takes
    ``η = max(η_L, min(1/β, κ n/(4d) η_L))``, ``β = n/4 + 1/σ₀²`` (no overshoot for rows of norm
    <= 1), ``κ = 0.1`` (``4dT/n`` <= κ: the variance of a test logit under the tempered law where
    ``p ≈ 1/2``, larger by ``1/(4 mean p(1-p))`` elsewhere; see :func:`sgld_step_size`).
    It is the default since round HDS2: on a fresh held-out group (8 real sets, ε in {0.1, 0.5,
    1, 2}, 20 paired splits, run once) it gained 1.69 ± 0.15 accuracy points and 0.060 ± 0.003
    nats of log loss at ε <= 0.5, lost no cell's accuracy beyond 2 paired SE and no cell's log
    loss beyond both 2 SE and 0.5 % (worst: charity at ε = 2, +0.0024 ± 0.0005, 0.4 %), at the
    same fit time.  **What it targets**: a tempered posterior (``p(θ | data)^{1/T}``, wider than
    the posterior, ``T`` = ``temperature_``), not the posterior; the draws' spread is not a
    credible interval either way (1.6-5.6x the Laplace posterior sd, review HQT).  At larger n
    and ε the minibatch's gradient noise raises the effective temperature above
    ``temperature_`` (review HQT: the intercept 2.17x the target sd at n = 20000, ε = 1).
    Where the features do not beat the majority class, the tempered chain, like non-private
    logistic regression, can fall below it (round HDS's crime1: up to 0.93 ± 0.21 points at
    ε = 2, where the Langevin chain does not move and predicts the majority class); its log
    loss there was no worse.  ``step_size="langevin"`` is the previous default (User Guide,
    *The step*).

    **DP-SGLD** (Algorithm 3, corrected).  ``θ ← θ - η(θ/σ₀² + (1/q) Σ_S clip_L(∇ℓ_i)) + s Z``
    with a Poisson minibatch ``S`` and ``s = max(√(2η), z L η/q)``: the injected noise is
    the Langevin noise or, seen on the gradient sum, Gaussian noise of standard deviation
    ``zL`` (``L`` is the add/remove sensitivity of the sum).  ``z`` is calibrated with
    ``dp-accounting`` for ``n_iter`` Poisson-subsampled Gaussian steps at add/remove
    ``(ε_sgld/2, δ/(1+e^{ε_sgld/2}))``, which is replace-one ``(ε_sgld, δ)`` (a replacement is
    a removal and an addition).  The thesis states Theorem 3.16 for "L-smooth" losses; the proof needs
    L-Lipschitz ones (here: clipping).  Its noise variance ``η`` (drift ``η``) targets the
    squared posterior; the Langevin step needs ``2η``.

    **Floating point: not covered by the guarantee (review HQU F2).**  Both accountings
    (the accountant's ``z`` for DP-SGLD, Theorem 3.4 for the OPS start) hold for *real*
    arithmetic.  Each SGLD step adds ``s Z`` computed in float64 from numpy's ziggurat
    normals to a data-dependent ``θ - η·drift``, and the OPS rejection step compares a uniform
    with a float64 likelihood; such releases are exposed to the floating-point attack (Mironov 2012).  For one
    scalar ``fl(λ + fl(σ z))`` the review measured outputs impossible under a neighbour (δ >=
    6·10⁻⁵ to 9·10⁻⁴ at every ε, means 0 vs 1 at σ = 1) and up to 0.47 nats of extra loss from
    the last bit in the bulk; the effect on the released iterates after many steps was not
    measured, and no bound on it is proved.  Rounding ``coef_`` to a coarse grid before
    publishing is post-processing (never less private, and it discards the low bits) but is
    not certified either.

    Examples
    --------
    >>> import numpy as np, warnings
    >>> from sklearn_bayes.privacy import DPSGLDLogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(5000, 2))
    >>> y = (X @ [1.5, -1.0] + rng.logistic(size=5000) > 0).astype(int)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # seeded noise: fine for a doctest
    ...     clf = DPSGLDLogisticRegression(epsilon=3.0, x_bound=4.0, random_state=0).fit(X, y)
    >>> bool(clf.score(X, y) > 0.7), clf.coef_samples_.shape, clf.epsilon_spent_ <= 3.0
    (True, (50, 2), True)
    """

    _parameter_constraints = {
        **_PrivateLinearBase._common_constraints,
        "theta_bound": [RealInterval(0, None, closed="neither")],
        "prior_scale": [RealInterval(0, None, closed="neither")],
        "clip_norm": [RealInterval(0, None, closed="neither")],
        "batch_size": [IntegerInterval(1, None, closed="left")],
        "n_iter": [IntegerInterval(1, None, closed="left")],
        "n_draws": [IntegerInterval(1, None, closed="left")],
        "step_size": [StrOptions({"auto", "langevin", "tempered"}), RealInterval(0, None, closed="neither")],
        "ops_fraction": [RealInterval(0, 1, closed="neither")],
        "accountant": [StrOptions({"rdp", "pld"})],
        "start": [StrOptions({"prior", "zero", "ops"})],
        "n_mcmc": [StrOptions({"deprecated"}), IntegerInterval(0, None, closed="left")],
        "classes": [None, "array-like"],
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-6,
        x_bound=None,
        theta_bound=10.0,
        prior_scale=10.0,
        clip_norm=1.0,
        batch_size=256,
        n_iter=500,
        n_draws=50,
        step_size="auto",
        ops_fraction=0.5,
        accountant="rdp",
        start="zero",
        n_mcmc="deprecated",
        fit_intercept=True,
        classes=None,
        random_state=None,
        ledger=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.x_bound = x_bound
        self.theta_bound = theta_bound
        self.prior_scale = prior_scale
        self.clip_norm = clip_norm
        self.batch_size = batch_size
        self.n_iter = n_iter
        self.n_draws = n_draws
        self.step_size = step_size
        self.ops_fraction = ops_fraction
        self.accountant = accountant
        self.start = start
        self.n_mcmc = n_mcmc
        self.fit_intercept = fit_intercept
        self.classes = classes
        self.random_state = random_state
        self.ledger = ledger

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.classifier_tags.poor_score = True
        return tags

    # ------------------------------------------------------------------ steps
    def _validate(self, X, y):
        self._check_bounds(("x_bound",))
        check_epsilon(self.epsilon)
        for name in ("theta_bound", "prior_scale", "clip_norm"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be finite, got {name}={getattr(self, name)!r}.")
        check_container(X, "X")
        check_container(y, "y")
        self._check_same_length(X, y)
        with naming("X", private=True):
            check_array(X, dtype=np.float64, input_name="X", estimator=self)
        declared = getattr(y, "dtype", None) is not None  # an array declares its dtype; a list's is inferred
        with naming("y", private=True):
            X, y = validate_data(self, X, y, dtype=np.float64)
        if self.classes is not None:
            # y is not typed (sklearn's target type reads the values: one non-integer float label made
            # "continuous" and refused a neighbour, review HQY F1); the membership test refuses the rest
            return self._validate_public_classes(X, y)
        check_classification_targets(y)  # harmless here: every label outside {0, 1} is refused below
        # classes=None: the public label set is {0, 1} (or {False, True}); classes_ never depends on
        # which labels occur, and a data set with one label fits like any other (review HQX F2)
        y = np.asarray(y)
        try:
            in01 = y.dtype.kind in "biuf" and bool(np.all((y == 0) | (y == 1)))
        except TypeError:  # pragma: no cover - numeric dtypes compare
            in01 = False
        if not in01:
            # the labels are data values: not printed
            raise ValueError(
                "Only binary classification is supported. With classes=None the labels of y must be 0 and 1 "
                "(or False and True), the public label set; y has another label "
                "(not printed: y is private data). Pass the two public labels as classes=[negative, positive]."
            )
        if self.n_draws > self.n_iter:
            raise ValueError(f"n_draws={self.n_draws} must be at most n_iter={self.n_iter}.")
        # a fixed dtype: y's if y declares one (an array), else int64 -- a list's inferred dtype reads
        # the records (one 1.0 among ints made it float64, review HQY F2)
        classes = np.array([0, 1], dtype=y.dtype if declared else np.int64)
        return self._scaled_design(X), (y == 1).astype(float), classes

    def _validate_public_classes(self, X, y):
        """Design, 0/1 targets and ``classes_`` from the public ``classes`` (the label set is not read from ``y``)."""
        try:
            classes = np.asarray(self.classes)
        except Exception:  # noqa: BLE001 - ragged or not array-like
            classes = np.empty(0)
        try:  # labels that do not sort (None next to an int): refused naming classes below
            distinct = np.unique(classes) if classes.ndim == 1 else classes
        except TypeError:
            distinct = np.empty(0)
        try:  # a non-finite label (NaN) would make a neighbour holding it fail y's finiteness check
            finite = classes.dtype.kind not in "fc" or bool(np.all(np.isfinite(classes)))
        except TypeError:  # pragma: no cover - object labels
            finite = True
        if classes.ndim != 1 or classes.shape[0] != 2 or distinct.shape[0] != 2 or not finite:
            raise ValueError(
                f"classes must be the two distinct finite public labels of the target (a 1-D list of length 2), "
                f"got classes={self.classes!r}."
            )
        try:
            in_classes = np.isin(y, distinct)
        except TypeError:  # labels of types that do not compare
            in_classes = np.zeros(y.shape[0], dtype=bool)
        if not np.all(in_classes):
            # the label is a data value: not printed
            raise ValueError(
                "y has a label that is not in classes (not printed: y is private data); "
                "DPSGLDLogisticRegression needs every label of y among the two public classes."
            )
        if self.n_draws > self.n_iter:
            raise ValueError(f"n_draws={self.n_draws} must be at most n_iter={self.n_iter}.")
        y01 = (y == distinct[1]).astype(float)
        return self._scaled_design(X), y01, distinct

    def _ops_tempering(self, eps_ops):
        """``(B, ρ)``: the log-likelihood bound and the tempering of the OPS start (public)."""
        B = float(np.logaddexp(0.0, float(self.theta_bound)))  # sup |log p(y | x, θ)| for ||x|| <= 1, ||θ|| <= R
        return B, ops_tempering(eps_ops, B)

    def _start_draw(self, Xs, y01, eps_ops, rng):
        """θ₀: the prior on the ball or 0 (no data read), or the exact OPS draw."""
        R, d = float(self.theta_bound), Xs.shape[1]
        if self.start == "zero":
            return np.zeros(d)
        if self.start == "prior":
            return truncated_gaussian_ball(d, float(self.prior_scale), R, 1, rng)[0]
        _, rho = self._ops_tempering(eps_ops)
        sign = 2.0 * y01 - 1.0

        def log_accept(thetas):  # ρ Σ_i log σ(s_i x_i·θ) <= 0, for each proposal (row)
            return -rho * np.logaddexp(0.0, -(thetas @ Xs.T) * sign).sum(axis=1)

        # prior to the power ρ: N(0, σ0²/ρ), restricted to the ball; batches bounded to ~4M entries
        batch = int(min(256, max(1, 2**22 // max(Xs.shape[0], 1))))
        return ops_rejection_draw(log_accept, d, float(self.prior_scale) / math.sqrt(rho), R, rng, batch=batch)

    def _check_ops_cost(self, n, eps_ops):
        """Refuse ``start="ops"`` when the worst-case expected number of proposals exceeds the public cap.

        The acceptance probability of a proposal is ``exp(ρ ℓ(θ)) >= e^{-ρ n B}``, so at most
        ``e^{ρ n B}`` proposals are expected; the decision uses only public quantities (``n`` is
        public for replace-one neighbours) and is taken before any noise is drawn.
        """
        if self.start != "ops":
            return
        B, rho = self._ops_tempering(eps_ops)
        log_cost = rho * n * B
        if log_cost > OPS_MAX_LOG_PROPOSALS:
            largest = 4.0 * OPS_MAX_LOG_PROPOSALS / n
            raise ValueError(
                f"start='ops' needs up to exp(rho*n*B) = exp({log_cost:.3g}) proposals for an exact draw at "
                f"n={n} and ops_fraction*epsilon={eps_ops:.3g} (the cap is exp({OPS_MAX_LOG_PROPOSALS:.3g})): "
                f"use start='zero' (the default), or ops_fraction*epsilon <= {largest:.3g} at this n."
            )

    def _step_rule(self):
        """``"langevin"``, ``"tempered"`` (``"auto"`` resolved by ``AUTO_STEP_RULE`` now) or ``"float"``."""
        if isinstance(self.step_size, str):
            return AUTO_STEP_RULE if self.step_size == "auto" else str(self.step_size)
        return "float"

    def _schedule(self, n, d, eps_sgld, delta):
        q = realised_sampling_rate(int(self.batch_size), n)
        T = int(self.n_iter)
        z = calibrate_sgld_noise(eps_sgld, delta, q, T, accountant=self.accountant)
        L = float(self.clip_norm)
        if isinstance(self.step_size, str):  # "auto", "langevin" or "tempered": public inputs only
            eta = sgld_step_size(self._step_rule(), n, d, q, z, L, float(self.prior_scale))
        else:
            eta = float(self.step_size)
        # never below the privacy requirement: seen on the gradient sum, the noise sd is >= z L
        sd = max(math.sqrt(2.0 * eta), privacy_noise_floor(z, L, eta, q))
        return q, T, z, eta, sd

    @serialized
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Start θ₀ (the prior, or OPS with ``ops_fraction × ε``), then DP-SGLD (the rest of ε, and δ).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Two classes.

        Returns
        -------
        self : DPSGLDLogisticRegression

        Raises
        ------
        ValueError
            If the accountants cannot certify the budget (ε too large for float range, or ε, δ
            too small for dp-accounting), or if the chain diverges (non-finite draws: ``step_size``
            too large); nothing is released then.
        """
        Xs, y01, classes = self._validate(X, y)
        if self.n_mcmc != "deprecated":
            warnings.warn(
                "n_mcmc is deprecated and ignored: the OPS start is an exact rejection draw (start='ops') "
                "and the default start='zero' reads no data; n_mcmc will be removed.",
                FutureWarning,
                stacklevel=3,
            )
        eps, delta = float(self.epsilon), float(self.delta)
        ops = self.start == "ops"
        eps_ops = float(self.ops_fraction) * eps if ops else 0.0
        eps_sgld = eps - eps_ops
        # the DP-SGLD part is accounted at add/remove (eps_sgld/2, delta/(1 + e^(eps_sgld/2)))
        _check_draw_budget(eps, delta, 0.5 * eps_sgld / eps, 1.0, type(self).__name__)
        n = Xs.shape[0]
        self._check_ops_cost(n, eps_ops)
        q, T, z, eta, sd = self._schedule(n, Xs.shape[1], eps_sgld, delta)
        # the rule and the stationary temperature s²/(2η) = max(1, η/η_L): public inputs only (review HQT F6)
        step_rule = self._step_rule()
        eta_l = sgld_step_size("langevin", n, Xs.shape[1], q, z, float(self.clip_norm), float(self.prior_scale))
        temperature = max(1.0, eta / eta_l)
        # the certificate of the calibration (before anything is drawn): the first accountant
        # (self.accountant, the other one, RDP with more orders) whose valid answer (finite, > 0)
        # is within the add/remove target
        delta_ar = delta / (1.0 + math.exp(0.5 * eps_sgld))
        eps_ar, _ = _checked_epsilon(float(z), float(q), int(T), float(delta_ar), self.accountant, 0.5 * eps_sgld)
        if not _valid_epsilon(eps_ar):  # a guard: calibrate_sgld_noise certified this z
            raise ValueError(f"no accountant certifies epsilon={eps!r}, delta={delta!r} for DP-SGLD.")
        if not eps_ar <= 0.5 * eps_sgld * (1.0 + 1e-9):  # a guard: the certificate must meet the target
            raise ValueError(
                f"the accountant certifies add/remove epsilon={eps_ar!r} above the target {0.5 * eps_sgld!r} for "
                f"epsilon={eps!r}, delta={delta!r}; nothing was drawn (review HQY F6)."
            )
        eps_dp = replace_one_from_add_remove(eps_ar, delta_ar)[0]
        # every release is checked against the shared ledger's budget and reserved there
        # before any noise is drawn: a refusal leaves the estimator (and its generator) unchanged
        if ops:
            B, rho = self._ops_tempering(eps_ops)
            eps_start = ops_epsilon(B, rho)
            self._check_budget([("ops_start", eps_start, 0.0), ("dp_sgld", eps_dp, delta)], n_samples=n)
        else:
            rho, eps_start = 0.0, 0.0
            self._check_budget([("dp_sgld", eps_dp, delta)], n_samples=n)
        rng = check_privacy_random_state(self.random_state, owner=type(self).__name__, instance=self)
        theta0 = self._start_draw(Xs, y01, eps_ops, rng)
        prior_prec = 1.0 / float(self.prior_scale) ** 2
        L = float(self.clip_norm)

        def grad(theta, idx):
            Xb = Xs[idx]
            return (special.expit(Xb @ theta) - y01[idx])[:, None] * Xb

        # n_draws iterates evenly spaced over the second half (over the last n_draws steps if longer):
        # a spacing >= 1 keeps the rounded steps distinct (review HQY F8)
        n_draws = int(self.n_draws)
        keep = np.unique(np.linspace(min(T // 2 + 1, T - n_draws + 1), T, n_draws).round().astype(int))
        with np.errstate(over="ignore", invalid="ignore"):
            draws = sgld_chain(grad, lambda t: prior_prec * t, theta0, n, q, T, eta, sd, L, rng, keep=keep)
        eps_thesis = thesis_sgld_epsilon(sd, eta, L, q * n, n, T, delta)

        # the mechanism has run: its spend is recorded (in the shared ledger too) before any
        # refusal below, whose message is a function of the release (a refit after a refusal
        # composes with it)
        ledger_ = PrivacyLedger()
        if ops:
            self._record(
                ledger_, "ops_start", eps_start, 0.0,
                note=f"exact draw from the posterior tempered by rho={rho:.4g} on the ball (rejection from the "
                "tempered prior): pure eps, Theorem 3.4, replace-one neighbours (n public)",
            )
        self._record(
            ledger_, "dp_sgld", eps_dp, delta,
            note=f"dp-accounting {self.accountant}, replace-one via add/remove, {T} Poisson steps at q={q:.4g}; "
            f"thesis bound eps={eps_thesis:.4g}",
        )
        if not np.all(np.isfinite(draws)):
            # the draws are private (post-processing of the noisy chain): refusing reveals nothing more
            raise ValueError(
                f"the DP-SGLD chain diverged (non-finite draws) with step_size={self.step_size!r} "
                f"(eta={eta:.3g}, noise sd {sd:.3g}); use a smaller step_size"
                + (" (or 'auto')." if self.step_size != "auto" else " than 'auto' chose, or a smaller epsilon.")
            )
        coef_samples, intercept_samples = self._unscale(draws, 1.0)  # refuses non-finite coefficients
        ops_coef = self._unscale(theta0, 1.0)[0]
        self.classes_ = classes
        self.coef_samples_, self.intercept_samples_ = coef_samples, intercept_samples
        if not self.fit_intercept:
            self.intercept_samples_ = np.zeros(draws.shape[0])
        self.coef_ = self.coef_samples_.mean(0)[None, :]
        self.intercept_ = np.array([float(np.mean(self.intercept_samples_))])
        self.ops_coef_ = ops_coef
        self.rho_ = rho
        self.noise_multiplier_ = z
        self.step_size_ = eta
        self.step_rule_ = step_rule
        self.temperature_ = temperature
        self.noise_sd_ = sd
        self.sampling_rate_ = q
        self.epsilon_sgld_ = eps_dp
        self.epsilon_thesis_ = eps_thesis
        self.epsilon_spent_ = eps_start + eps_dp
        self.delta_spent_ = delta
        self.ledger_ = ledger_
        return self

    # ------------------------------------------------------------------ prediction
    def _log_odds(self, X):
        """``log p̄₁ - log p̄₀`` of the probabilities averaged over the draws, in log space.

        ``log p̄₁ = logsumexp_s log σ(η_s) - log S`` and ``log p̄₀`` the same at ``-η_s``: finite for
        finite scores (``log(p̄₁) - log(1 - p̄₁)`` was ``inf`` once ``p̄₁`` rounded to 1, above ~37).
        """
        check_is_fitted(self)
        with naming("X", private=True):
            X = validate_data(self, X, dtype=np.float64, reset=False)
        eta = X @ self.coef_samples_.T + self.intercept_samples_[None, :]
        d = special.logsumexp(special.log_expit(eta), axis=1) - special.logsumexp(special.log_expit(-eta), axis=1)
        # one tie rule for the three methods: where σ(d) and σ(-d) round to the same probability
        # (|d| below ~2e-16) the score is 0, so predict, predict_proba's argmax and the sign agree
        return np.where(special.expit(d) == special.expit(-d), 0.0, d)

    def predict_proba(self, X):
        """Predictive probabilities averaged over the released draws.

        The draws are iterates of a chain targeting the posterior tempered to ``temperature_``
        (the posterior itself with ``step_size="langevin"``, where ``temperature_`` is 1), so this
        is not the posterior predictive under the default step (averaging over the wider law
        tends to pull the probabilities towards ½).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, 2)

        Notes
        -----
        ``p̄₁ = (1/S) Σ_s σ(x·θ_s + b_s)`` over the ``S`` released draws, returned as
        ``σ(d)`` and ``σ(-d)`` with ``d`` the :meth:`decision_function` (the two columns sum to 1).
        """
        d = self._log_odds(X)
        return np.column_stack([special.expit(-d), special.expit(d)])

    def decision_function(self, X):
        """Log-odds ``log p̄₁ - log p̄₀`` of the averaged predictive probability of ``classes_[1]``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            Finite for finite ``X``; positive exactly where :meth:`predict` returns ``classes_[1]``.

        Notes
        -----
        Not the plug-in score ``X @ coef_.T + intercept_`` (``coef_`` is the mean draw): the
        prediction averages the draws' probabilities, and the sign of the mean score can differ
        from that of the averaged log-odds where the draws' scores are skewed (then the plug-in
        score would contradict :meth:`predict` and :meth:`predict_proba`).  Computed as
        ``logsumexp_s log σ(η_s) - logsumexp_s log σ(-η_s)``: ``log p̄₁ - log(1 - p̄₁)`` was
        ``inf`` once ``p̄₁`` rounded to 1 (scores above ~37).
        """
        return self._log_odds(X)

    def predict(self, X):
        """Class with the larger averaged predictive probability (``classes_[1]`` where the
        :meth:`decision_function` is > 0, ``classes_[0]`` otherwise, ties included).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        d = self._log_odds(X)  # first: an unfitted estimator raises NotFittedError, not AttributeError
        return self.classes_[(d > 0).astype(int)]
