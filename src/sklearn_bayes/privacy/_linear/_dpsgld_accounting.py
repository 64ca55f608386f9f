"""DP-SGLD accounting with Google's ``dp-accounting`` (and the thesis's bound, for comparison).

Rényi DP (or privacy-loss distributions) of the Poisson-subsampled Gaussian mechanism,
replace-one neighbours through add/remove; imported lazily: only
:class:`~sklearn_bayes.privacy.DPSGLDLogisticRegression` needs it.
"""

import functools
import logging
import math

__all__ = [
    "calibrate_sgld_noise",
    "replace_one_from_add_remove",
    "sgld_epsilon",
    "thesis_sgld_epsilon",
]


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
