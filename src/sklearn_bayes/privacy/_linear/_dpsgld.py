"""Hybrid OPS + DP-SGLD logistic regression (Algorithms 2-4 of Wang's thesis, Ch. 3).

The DP-SGLD part is accounted by Google's ``dp-accounting`` (Rényi DP of the subsampled
Gaussian mechanism, fixed-size minibatches sampled without replacement, replace-one
neighbours), imported lazily: only this estimator needs it.  The thesis's own bound
(subsampling lemma + advanced composition) is reported beside it.
"""

import functools
import logging
import math

import numpy as np
from scipy import linalg, special
from sklearn.base import ClassifierMixin, _fit_context
from sklearn.utils import check_array
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_bayes.utils._validation import check_container, naming
from sklearn_bayes._glm._map import LogisticLoss, fit_map
from sklearn_bayes.privacy._core import PrivacyLedger
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
    "thesis_sgld_epsilon",
]


# --------------------------------------------------------------------------------------
# accounting
# --------------------------------------------------------------------------------------


class _NegativeRenyiFilter(logging.Filter):
    """Drop dp-accounting's "Negative Renyi divergence ... Returning an epsilon of zero" warnings.

    The answer they announce (ε = 0) is never accepted here (:func:`sgld_epsilon` detects it and
    uses another accountant), so the hundreds of lines a calibration logs are noise.
    """

    def filter(self, record):
        return "Negative Renyi divergence" not in str(record.msg)


_RENYI_FILTER = _NegativeRenyiFilter()


def _import_dp_accounting():
    try:
        import dp_accounting
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "DPSGLDLogisticRegression accounts its privacy with Google's dp-accounting package; "
            "install it with `python -m pip install dp-accounting`."
        ) from exc
    absl_logger = logging.getLogger("absl")
    if _RENYI_FILTER not in absl_logger.filters:
        absl_logger.addFilter(_RENYI_FILTER)
    return dp_accounting


def _sgld_event(noise_multiplier, sampling_rate, n_steps):
    dpa = _import_dp_accounting()
    step = dpa.PoissonSampledDpEvent(float(sampling_rate), dpa.GaussianDpEvent(float(noise_multiplier)))
    return dpa.SelfComposedDpEvent(step, int(n_steps))


# integer Rényi orders: exact binomial expansions for the subsampled Gaussian (fractional orders
# need a series that fails to converge at large sampling rates)
RDP_ORDERS = tuple(range(2, 65)) + (80, 96, 128, 192, 256, 512)
#: the fallback for budgets below the floor of RDP_ORDERS (ε >= (log(1/δ) - log α)/(α - 1) at the
#: largest order α): integer orders up to 2**16, used only when both other accountants fail
RDP_ORDERS_EXTENDED = RDP_ORDERS + tuple(2**k for k in range(10, 17))


def _accountant(name):
    dpa = _import_dp_accounting()
    if name == "rdp":
        return dpa.rdp.RdpAccountant(orders=list(RDP_ORDERS))
    if name == "rdp_extended":
        return dpa.rdp.RdpAccountant(orders=list(RDP_ORDERS_EXTENDED))
    if name == "pld":
        return dpa.pld.PLDAccountant()
    raise ValueError(f"accountant must be 'rdp' or 'pld', got {name!r}.")


def _raw_epsilon(noise_multiplier, sampling_rate, n_steps, delta, accountant):
    """The accountant's answer as it is (may be 0 or inf on extreme events: see :func:`sgld_epsilon`)."""
    acc = _accountant(accountant)
    acc.compose(_sgld_event(noise_multiplier, sampling_rate, n_steps))
    try:
        return float(acc.get_epsilon(delta))
    except (ValueError, IndexError, OverflowError, FloatingPointError):
        return math.nan


def _valid_epsilon(eps):
    """An accountant's ε for a mechanism that spent budget: finite and > 0 (0 is a numerical fault)."""
    return math.isfinite(eps) and eps > 0.0


@functools.lru_cache(maxsize=4096)
def _checked_epsilon(noise_multiplier, sampling_rate, n_steps, delta, accountant, target=math.inf):
    """``(ε, accountant used)`` from ``accountant``, the other one, then RDP with the extended orders.

    The first *valid* answer (finite, > 0) that is ``<= target``; if none is, the smallest valid
    answer; ``(nan, None)`` when no answer is valid.  With the default ``target`` this is the
    first valid answer.  Cached (pure, public inputs).
    """
    order = {"rdp": ("rdp", "pld", "rdp_extended"), "pld": ("pld", "rdp", "rdp_extended")}[accountant]
    best = (math.nan, None)
    for name in order:
        eps = _raw_epsilon(noise_multiplier, sampling_rate, n_steps, delta, name)
        if _valid_epsilon(eps):
            if eps <= target:
                return eps, name
            if not eps >= best[0]:  # nan (none yet) or smaller
                best = (eps, name)
    return best


def replace_one_from_add_remove(epsilon, delta):
    """(ε, δ) for replace-one neighbours of a mechanism that is (ε, δ)-DP for add/remove-one.

    A replacement is a removal followed by an addition: ``(2ε, (1 + e^ε) δ)``.
    """
    return 2.0 * epsilon, (1.0 + math.exp(epsilon)) * delta


def sgld_epsilon(noise_multiplier, sampling_rate, n_steps, delta, accountant="rdp"):
    """Add/remove ε at δ of ``n_steps`` Poisson-subsampled Gaussian steps, from ``dp-accounting``.

    Each step adds Gaussian noise of standard deviation ``noise_multiplier × L`` to the sum
    of the clipped per-example gradients (norm ≤ L) of a Poisson sample (each record kept
    with probability ``sampling_rate``); adding or removing a record changes the sum by at
    most ``L``.  ``accountant`` is ``"rdp"`` (Rényi DP) or ``"pld"`` (privacy-loss
    distributions, tighter).  The RDP accountant uses the integer orders ``RDP_ORDERS``.

    An answer that is 0 or not finite is never accepted for this mechanism, which always
    spends budget: dp-accounting's RDP accountant returns 0 when rounding makes a Rényi
    divergence negative (extreme noise multipliers), and cannot go below
    ``(log(1/δ) - log α)/(α - 1)`` at its largest order.  Then the other accountant is used,
    then RDP with the orders ``RDP_ORDERS_EXTENDED``; if none gives a finite ε > 0 this
    raises ``ValueError``.

    Examples
    --------
    >>> round(sgld_epsilon(1.0, 0.01, 1000, 1e-6), 2)
    2.44
    """
    if accountant not in ("rdp", "pld"):
        raise ValueError(f"accountant must be 'rdp' or 'pld', got {accountant!r}.")
    eps, _ = _checked_epsilon(float(noise_multiplier), float(sampling_rate), int(n_steps), float(delta), accountant)
    if not _valid_epsilon(eps):
        raise ValueError(
            f"no accountant certifies a finite epsilon > 0 for {int(n_steps)} DP-SGLD steps at noise "
            f"multiplier {noise_multiplier!r}, sampling rate {sampling_rate!r} and delta={delta!r} (dp-accounting "
            "answered 0 or inf); use a larger delta."
        )
    return eps


@functools.lru_cache(maxsize=256)
def calibrate_sgld_noise(epsilon, delta, sampling_rate, n_steps, accountant="rdp"):
    """Smallest noise multiplier whose DP-SGLD run is (ε, δ)-DP for **replace-one** neighbours.

    The run is calibrated for add/remove at ``(ε/2, δ/(1 + e^{ε/2}))`` (see
    :func:`replace_one_from_add_remove`) with the RDP accountant; ``accountant="pld"``
    then lowers the multiplier by bisection while the PLD accountant certifies the target.
    A pure function of public quantities, so its results are cached.
    """
    if accountant not in ("rdp", "pld"):
        raise ValueError(f"accountant must be 'rdp' or 'pld', got {accountant!r}.")
    dpa = _import_dp_accounting()
    eps_ar = 0.5 * float(epsilon)
    delta_ar = float(delta) / (1.0 + math.exp(eps_ar))
    try:
        z = float(
            dpa.calibrate_dp_mechanism(
                lambda: _accountant("rdp"),
                lambda m: _sgld_event(m, sampling_rate, n_steps),
                eps_ar,
                delta_ar,
                bracket_interval=dpa.LowerEndpointAndGuess(1e-3, 1.0),
                tol=1e-4,
            )
        )
    except Exception:  # noqa: BLE001 - no bracket, or brentq on a faulty accountant: recalibrate below
        z = math.nan
    # accept dp-accounting's calibration only if its own accountant certifies it with a valid
    # answer: a 0 from a negative Rényi divergence (or the RDP floor) lets it "succeed" wrongly
    raw = _raw_epsilon(z, sampling_rate, n_steps, delta_ar, "rdp") if math.isfinite(z) and z > 0 else math.nan
    if not (_valid_epsilon(raw) and raw <= eps_ar):
        return _calibrate_checked(eps_ar, delta_ar, float(sampling_rate), int(n_steps), accountant, epsilon, delta)
    if accountant == "pld":

        def certifies(m):
            e = _raw_epsilon(m, sampling_rate, n_steps, delta_ar, "pld")
            return _valid_epsilon(e) and e <= eps_ar

        lo, hi = 0.5 * z, z
        if certifies(lo):
            lo = 1e-3
        for _ in range(12):
            mid = 0.5 * (lo + hi)
            if certifies(mid):
                hi = mid
            else:
                lo = mid
        z = hi
    return z


def _calibrate_checked(eps_ar, delta_ar, sampling_rate, n_steps, accountant, epsilon, delta):
    """Smallest noise multiplier (to relative 1e-4) that :func:`sgld_epsilon` certifies at ``eps_ar``.

    Bisection in ``log z`` on the *checked* ε (never an answer of 0 or inf): used when
    dp-accounting's RDP calibration is not certified by a valid answer of its own accountant.
    """

    def certifies(m):
        e, _ = _checked_epsilon(m, sampling_rate, n_steps, delta_ar, accountant, eps_ar)
        return _valid_epsilon(e) and e <= eps_ar

    hi = 1.0
    while not certifies(hi):
        hi *= 4.0
        if hi > 1e15:
            raise ValueError(
                f"the DP-SGLD part of the budget (epsilon={epsilon!r}, delta={delta!r}) is too small: no accountant "
                f"(dp-accounting RDP or PLD) certifies the add/remove budget ({eps_ar:.3g}, {delta_ar:.3g}) "
                f"for {n_steps} steps at sampling rate {sampling_rate:.4g} at any noise multiplier up to 1e15; "
                "use a larger epsilon or delta, or fewer steps (n_iter)."
            )
    lo = hi / 4.0
    if hi == 1.0:
        lo = 1e-3
        if certifies(lo):
            return lo
    while hi / lo > 1.0 + 1e-4:
        mid = math.sqrt(lo * hi)
        if certifies(mid):
            hi = mid
        else:
            lo = mid
    return hi


def thesis_sgld_epsilon(noise_sd, step_size, clip_norm, batch_size, n_samples, n_steps, delta):
    """ε of Theorem 3.16 (subsampling lemma + advanced composition) for the same run.

    Inverts Algorithm 3's noise variance
    ``128 N T L² log(2.5 N T/(τδ)) log(2/δ) η² / (τ ε²)`` with ``T = n_steps τ / N``
    passes (``τ`` the expected batch size).  Valid only when
    ``T >= ε² N / (32 τ log(2/δ))`` (``inf`` otherwise).
    """
    N, tau = float(n_samples), float(batch_size)
    T = n_steps * tau / N
    eps = math.sqrt(
        128.0 * N * T * clip_norm**2 * math.log(2.5 * N * T / (tau * delta)) * math.log(2.0 / delta) / tau
    ) * step_size / noise_sd
    if T < eps * eps * N / (32.0 * tau * math.log(2.0 / delta)):
        return math.inf
    return eps


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


def _mala_ball(logp_grad, theta0, cov, radius, n_steps, rng):
    """Preconditioned MALA on the ball ``||θ|| <= radius`` (proposals outside are rejected)."""
    d = theta0.shape[0]
    A = linalg.cholesky(cov, lower=True)
    h = 1.2 / d ** (1.0 / 6.0)
    theta = theta0.copy()
    lp, g = logp_grad(theta)
    n_acc = 0
    for _ in range(n_steps):
        mean_fwd = theta + 0.5 * h * h * cov @ g
        prop = mean_fwd + h * A @ rng.standard_normal(d)
        if np.linalg.norm(prop) > radius:
            continue
        lp2, g2 = logp_grad(prop)
        mean_bwd = prop + 0.5 * h * h * cov @ g2
        zf = linalg.solve_triangular(A, prop - mean_fwd, lower=True) / h
        zb = linalg.solve_triangular(A, theta - mean_bwd, lower=True) / h
        log_ratio = lp2 - lp - 0.5 * (zb @ zb) + 0.5 * (zf @ zf)
        if math.log(rng.random()) < log_ratio:
            theta, lp, g = prop, lp2, g2
            n_acc += 1
    return theta, n_acc / max(n_steps, 1)


# --------------------------------------------------------------------------------------
# the estimator
# --------------------------------------------------------------------------------------


class DPSGLDLogisticRegression(ClassifierMixin, _PrivateLinearBase):
    """Differentially private Bayesian logistic regression: OPS start, then DP-SGLD draws (hybrid).

    Algorithm 4 of *Statistical and Computational Tradeoffs in Differential Privacy*:
    one draw θ₀ from the tempered posterior restricted to a public ball (OPS, Algorithm 2,
    with ``ops_fraction × ε``), then stochastic gradient Langevin dynamics from θ₀ with
    per-example gradient clipping and Gaussian noise calibrated by ``dp-accounting``
    (the rest of ε, and δ).  Every iterate of the chain is private; ``n_draws`` of them
    are kept as posterior draws, and ``predict_proba`` averages over them.

    Read the User Guide: :ref:`private_linear_models`.

    Parameters
    ----------
    epsilon : float, default=1.0
        Total ε (> 0, finite), replace-one neighbours.  ``fit`` refuses, naming the limit, an
        ε whose DP-SGLD add/remove budget leaves floating-point range (2753 at δ = 1e-6 and
        ``ops_fraction=0.5``), and a budget no accountant certifies (User Guide, *Limits*).
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
        with probability ``q = min(1, τ/n)`` (Poisson sampling, what the accountant assumes).
    n_iter : int, default=500
        Number of DP-SGLD steps.
    n_draws : int, default=50
        Iterates kept (evenly spaced over the second half of the chain).
    step_size : "auto" or float, default="auto"
        η.  ``"auto"``: the largest η at which the privacy noise is no more than the
        Langevin noise (``s = √(2η)``, "privacy for free"), so the chain targets the
        posterior itself.  A chain that diverges (non-finite draws, a step too large) is
        refused with a ``ValueError`` naming ``step_size``; nothing non-finite is released.
    ops_fraction : float, default=0.5
        Share of ε spent on the OPS start (the thesis uses ε/2).
    accountant : {"rdp", "pld"}, default="rdp"
        ``dp-accounting`` accountant that calibrates the noise: Rényi DP, or privacy-loss
        distributions (tighter, slower).  An answer of 0 or ``inf`` (RDP below its floor,
        where dp-accounting returns 0 for a negative Rényi divergence) is never accepted:
        the noise is then calibrated and certified by the other accountant (or RDP with
        more orders), and ``epsilon_sgld_`` is that certificate.
    n_mcmc : int, default=300
        MALA steps of the OPS start.
    fit_intercept : bool, default=True
        Append the constant column (design row ``[x/x_bound, 1]/√2``).
    classes : array-like of shape (2,) or None, default=None
        The two **public** labels of the target.  Given, ``classes_`` is these labels (sorted)
        whatever the data hold, and a data set with one label only is fitted and charged like
        any other; a label of ``y`` outside them is refused (not printed).  ``None`` reads the
        label set from ``y`` (scikit-learn's convention): then ``classes_`` publishes the labels
        present in the data *without noise*, and a data set with one label is refused -- whether
        ``fit`` refuses tells apart neighbours with one positive record and none.  Pass
        ``classes`` when the labels or their presence are private.
    random_state : None, int, numpy.random.Generator, default=None
        Source of all randomness (an int emits ``SeededNoiseWarning``).
    ledger : PrivacyLedger or None, default=None
        Optional shared ledger (two records per fit).  ``fit`` checks both releases
        against its budget before drawing and refuses
        (:class:`~sklearn_bayes.exceptions.BudgetExceededError`) what would exceed it,
        leaving the estimator unchanged; see :ref:`privacy_budget`.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The labels: the public ``classes`` (sorted) or, with ``classes=None``, those found in
        ``y`` (not private: see ``classes``).
    coef_samples_ : ndarray of shape (n_draws, n_features)
        The released draws of the coefficients (original units).
    intercept_samples_ : ndarray of shape (n_draws,)
    coef_ : ndarray of shape (1, n_features)
        Mean of the draws (post-processing).
    intercept_ : ndarray of shape (1,)
    ops_coef_ : ndarray of shape (n_features,)
        The OPS start θ₀ (original units), also a release.
    rho_ : float
        Tempering of the OPS step, ``min(1, ε_ops/(4B))``.
    noise_multiplier_ : float
        Noise standard deviation over the add/remove sensitivity ``L`` of the gradient sum.
    step_size_ : float
    noise_sd_ : float
        Standard deviation of the injected noise per coordinate and step.
    epsilon_sgld_ : float
        Replace-one ε of the DP-SGLD part from the accountant (at ``delta``).
    epsilon_thesis_ : float
        ε of the same run by the thesis's Theorem 3.16 bound (for comparison).
    epsilon_spent_, delta_spent_ : float
        Totals over both parts; ``delta_spent_`` is the DP-SGLD δ only (the OPS step's δ'
        is not certified, see Notes).
    ledger_ : PrivacyLedger
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    See Also
    --------
    AdaOPSRegressor : exact posterior sampling for linear regression.

    Notes
    -----
    **OPS start.**  With ``||x|| <= 1`` and ``||θ|| <= R`` the logistic log-likelihood is
    bounded by ``B = log(1 + e^R)``; one exact draw from the posterior tempered by
    ``ρ = min(1, ε_ops/(4B))`` (prior to the power ρ, restricted to the ball) is
    ``ε_ops``-DP (Theorem 3.4).  The draw here comes from a Metropolis-adjusted Langevin
    chain started at the tempered MAP: it converges to the right law, but its total
    variation distance δ' after ``n_mcmc`` steps is **not certified**, so the pure-ε
    claim of this step holds only up to an uncertified ``(1 + e^ε) δ'`` (recorded in the
    ledger's note; ``delta_spent_`` does not include it).

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
    normals to a data-dependent ``θ - η·drift``, and the MALA proposals are built the same
    way; such releases are exposed to the floating-point attack (Mironov 2012).  For one
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
    ...     clf = DPSGLDLogisticRegression(epsilon=1.0, x_bound=4.0, random_state=0).fit(X, y)
    >>> bool(clf.score(X, y) > 0.7), clf.coef_samples_.shape, clf.epsilon_spent_ <= 1.0
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
        "step_size": [StrOptions({"auto"}), RealInterval(0, None, closed="neither")],
        "ops_fraction": [RealInterval(0, 1, closed="neither")],
        "accountant": [StrOptions({"rdp", "pld"})],
        "n_mcmc": [IntegerInterval(0, None, closed="left")],
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
        n_mcmc=300,
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
        with naming("y", private=True):
            X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        if self.classes is not None:
            return self._validate_public_classes(X, y)
        classes, y01 = np.unique(y, return_inverse=True)
        if classes.shape[0] > 2:
            raise ValueError(
                f"Only binary classification is supported. The type of the target is "
                f"{type_of_target(y, input_name='y')}: y has {classes.shape[0]} classes."
            )
        if classes.shape[0] < 2:
            # the class label is a data value: not printed (an error of a private estimator echoes no data)
            raise ValueError("y has 1 class; DPSGLDLogisticRegression needs two classes.")
        if self.n_draws > self.n_iter:
            raise ValueError(f"n_draws={self.n_draws} must be at most n_iter={self.n_iter}.")
        return self._scaled_design(X), y01.astype(float), classes

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
        if classes.ndim != 1 or classes.shape[0] != 2 or distinct.shape[0] != 2:
            raise ValueError(
                f"classes must be the two distinct public labels of the target (a 1-D list of length 2), "
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

    def _ops_start(self, Xs, y01, eps_ops, rng):
        R = float(self.theta_bound)
        B, rho = self._ops_tempering(eps_ops)
        prior_prec = rho / float(self.prior_scale) ** 2
        w = np.full(Xs.shape[0], rho)
        res = fit_map(Xs, y01, LogisticLoss(), prior_precision=prior_prec, sample_weight=w, fit_intercept=False)
        theta = np.asarray(res.coef, dtype=float).ravel()
        nrm = np.linalg.norm(theta)
        if nrm > 0.99 * R:
            theta *= 0.99 * R / nrm

        def logp_grad(t):
            eta = Xs @ t
            lp = -rho * float(np.sum(np.logaddexp(0.0, eta) - y01 * eta)) - 0.5 * prior_prec * float(t @ t)
            g = -rho * (Xs.T @ (special.expit(eta) - y01)) - prior_prec * t
            return lp, g

        p = special.expit(Xs @ theta)
        H = rho * (Xs.T * (p * (1 - p))) @ Xs + prior_prec * np.eye(Xs.shape[1])
        # the chain's acceptance rate is a statistic of the raw data (not noised, not accounted): dropped
        theta, _ = _mala_ball(logp_grad, theta, linalg.inv(H), R, int(self.n_mcmc), rng)
        return theta, rho, B

    def _schedule(self, n, eps_sgld, delta):
        q = min(1.0, int(self.batch_size) / n)
        T = int(self.n_iter)
        z = calibrate_sgld_noise(eps_sgld, delta, q, T, accountant=self.accountant)
        L = float(self.clip_norm)
        if self.step_size == "auto":  # privacy noise = Langevin noise: z L eta / q = sqrt(2 eta)
            eta = 2.0 * (q / (z * L)) ** 2
        else:
            eta = float(self.step_size)
        sd = max(math.sqrt(2.0 * eta), z * L * eta / q)
        return q, T, z, eta, sd

    @serialized
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """OPS start (``ops_fraction × ε``), then DP-SGLD (the rest of ε, and δ).

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
        eps, delta = float(self.epsilon), float(self.delta)
        eps_ops = float(self.ops_fraction) * eps
        eps_sgld = eps - eps_ops
        # the DP-SGLD part is accounted at add/remove (eps_sgld/2, delta/(1 + e^(eps_sgld/2)))
        _check_draw_budget(eps, delta, 0.5 * (1.0 - float(self.ops_fraction)), 1.0, type(self).__name__)
        n = Xs.shape[0]
        q, T, z, eta, sd = self._schedule(n, eps_sgld, delta)
        # the certificate of the calibration (before anything is drawn): the first accountant
        # (self.accountant, the other one, RDP with more orders) whose valid answer (finite, > 0)
        # is within the add/remove target
        delta_ar = delta / (1.0 + math.exp(0.5 * eps_sgld))
        eps_ar, _ = _checked_epsilon(float(z), float(q), int(T), float(delta_ar), self.accountant, 0.5 * eps_sgld)
        if not _valid_epsilon(eps_ar):  # a guard: calibrate_sgld_noise certified this z
            raise ValueError(f"no accountant certifies epsilon={eps!r}, delta={delta!r} for DP-SGLD.")
        eps_dp = replace_one_from_add_remove(eps_ar, delta_ar)[0]
        # both releases are checked against the shared ledger's budget and reserved there
        # before any noise is drawn: a refusal leaves the estimator (and its generator) unchanged
        B, rho = self._ops_tempering(eps_ops)
        self._check_budget([("ops_start", ops_epsilon(B, rho), 0.0), ("dp_sgld", eps_dp, delta)])
        rng = check_privacy_random_state(self.random_state, owner=type(self).__name__, instance=self)
        theta0, rho, B = self._ops_start(Xs, y01, eps_ops, rng)
        prior_prec = 1.0 / float(self.prior_scale) ** 2
        L = float(self.clip_norm)

        def grad(theta, idx):
            Xb = Xs[idx]
            return (special.expit(Xb @ theta) - y01[idx])[:, None] * Xb

        keep = np.unique(np.linspace(T // 2 + 1, T, int(self.n_draws)).round().astype(int))
        with np.errstate(over="ignore", invalid="ignore"):
            draws = sgld_chain(grad, lambda t: prior_prec * t, theta0, n, q, T, eta, sd, L, rng, keep=keep)
        eps_thesis = thesis_sgld_epsilon(sd, eta, L, q * n, n, T, delta)

        # the mechanism has run: its spend is recorded (in the shared ledger too) before any
        # refusal below, whose message is a function of the release (a refit after a refusal
        # composes with it)
        ledger_ = PrivacyLedger()
        self._record(
            ledger_, "ops_start", ops_epsilon(B, rho), 0.0,
            note="pure eps for an exact draw; this MALA draw's total-variation delta' is not certified",
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
        self.noise_sd_ = sd
        self.epsilon_sgld_ = eps_dp
        self.epsilon_thesis_ = eps_thesis
        self.epsilon_spent_ = ops_epsilon(B, rho) + eps_dp
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
        """Posterior predictive probabilities, averaged over the released draws.

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
