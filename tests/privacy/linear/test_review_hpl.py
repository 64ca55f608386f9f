"""Review HPL on the private linear models: ledger edges, the released-norm budget's cost, warnings users need.

F1: ``calibration="thesis"`` at ε = 5e-324 raised ZeroDivisionError after the shared ledger's
reservation, leaving two records at ε = 0 (0.5 · 5e-324 underflows).  F2: with δ below 4e-300 the
refusal came from inside the release (after the reservation, naming δ/4).  Now every check on
public inputs runs before the reservation, and the estimators refuse to reserve ε = 0 (the
ledger primitive keeps zero-ε records: bookkeeping, and a settle to "nothing released").
F8: ``"released_norm"`` at ε = 5e-324, or ε = 1e-5 with δ = 0.1/0.5, built privacy-loss
distributions of ever finer discretisation (gigabytes) before refusing; now the exact limit is
checked first and the refinement's size is bounded.  F9: the refusal of δ ≳ 3ε names a smaller δ.
F5: OnePosteriorSampleRidge warns when its public noise proxy exceeds 1.  F3/F4: AdaOPSRegressor
warns at fit when ``gram_signal_to_noise_ < 2``; conf_int's warning quotes the measured range.

Run against the code before the fix (commit e35c9dd): 21 of the 25 fail.  The four that pass there are
guards of what must keep holding: ``test_zero_epsilon_bookkeeping_records_still_work``,
``test_noise_proxy_bounds_the_exact_noise``, ``test_fit_does_not_warn_on_a_strong_release`` and the
``(1e-3, 1e-2)`` case of ``test_released_norm_public_refusals_come_before_the_reservation`` (refused
before the reservation already).
"""

import math
import re
import warnings

import numpy as np
import pytest

from sklearn_bayes.privacy import AdaOPSRegressor, OnePosteriorSampleRidge, PrivacyLedger
from sklearn_bayes.privacy._linear import _adaops_accounting as acc
from sklearn_bayes.privacy._linear._base import WeakReleaseWarning
from sklearn_bayes.privacy._linear._ops import (
    _replace_one_pair_budget,
    calibrate_ops_gamma,
    ops_noise_proxy,
)

from ._data import bounded_regression

pytest.importorskip("dp_accounting")


def _ledger_state(led):
    return [(r["mechanism"], r["epsilon"], r.get("delta")) for r in led.records], led.epsilon_spent, led.delta_spent


def _shared_ledger():
    """A budget-limited ledger holding one earlier release."""
    led = PrivacyLedger(budget=(10.0, 0.1))
    led.record("earlier", 0.5, delta=1e-7)
    return led


def _quiet_fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


# ----------------------------------------------------------------------------------- F1, F2


@pytest.mark.parametrize(("eps", "delta", "named"), [
    (5e-324, 1e-6, "epsilon=5e-324"),
    (1e-322, 1e-6, "epsilon=1e-322"),
    (1e-16, 1e-6, "epsilon=1e-16"),
    (1.0, 1e-300, "delta=1e-300"),
    (1.0, 3e-300, "delta=3e-300"),
])
def test_thesis_public_refusals_come_before_the_reservation(eps, delta, named):
    X, y = bounded_regression(n=30, d=2)
    led = _shared_ledger()
    before = _ledger_state(led)
    est = AdaOPSRegressor(epsilon=eps, delta=delta, x_bound=2.0, y_bound=3.0, calibration="thesis", ledger=led,
                          random_state=np.random.default_rng(0))
    with pytest.raises(ValueError, match=re.escape(named)):
        _quiet_fit(est, X, y)
    assert _ledger_state(led) == before
    assert not hasattr(est, "coef_")


def test_thesis_smallest_epsilon_named_is_accepted():
    X, y = bounded_regression(n=30, d=2)
    with pytest.raises(ValueError, match="too small") as info:
        _quiet_fit(AdaOPSRegressor(epsilon=1e-16, x_bound=2.0, y_bound=3.0, calibration="thesis"), X, y)
    smallest = float(re.search(r"use epsilon >= ([0-9.e+-]+),", str(info.value)).group(1))
    est = _quiet_fit(AdaOPSRegressor(epsilon=smallest, x_bound=2.0, y_bound=3.0, calibration="thesis",
                                     random_state=np.random.default_rng(0)), X, y)
    assert est.epsilon_spent_ == smallest and all(r["epsilon"] > 0 for r in est.ledger_.records)
    # the named value is the boundary up to its rounding (2 digits, 1 % margin), not a loose bound
    with pytest.raises(ValueError, match="too small"):
        _quiet_fit(AdaOPSRegressor(epsilon=smallest / 1.5, x_bound=2.0, y_bound=3.0, calibration="thesis"), X, y)


@pytest.mark.parametrize(("eps", "delta"), [(5e-324, 1e-6), (1e-5, 0.1), (1e-3, 1e-2)])
def test_released_norm_public_refusals_come_before_the_reservation(eps, delta):
    X, y = bounded_regression(n=30, d=2)
    led = _shared_ledger()
    before = _ledger_state(led)
    est = AdaOPSRegressor(epsilon=eps, delta=delta, x_bound=2.0, y_bound=3.0, calibration="released_norm",
                          ledger=led, random_state=np.random.default_rng(0))
    with pytest.raises(ValueError, match=re.escape(f"epsilon={eps!r}")):
        _quiet_fit(est, X, y)
    assert _ledger_state(led) == before
    assert not hasattr(est, "coef_")


@pytest.mark.parametrize("make", [
    lambda led: AdaOPSRegressor(epsilon=1.0, x_bound=2.0, y_bound=3.0, calibration="thesis", ledger=led),
    lambda led: OnePosteriorSampleRidge(epsilon=1.0, x_bound=2.0, y_bound=3.0, ledger=led),
], ids=["adaops", "ops"])
def test_a_release_path_refuses_to_reserve_zero_epsilon(make):
    """The estimators' reservation (the release path) refuses a record of ε = 0 naming epsilon, all or
    nothing; the ledger primitive itself keeps zero-ε records (bookkeeping, a settle to "nothing released")."""
    led = _shared_ledger()
    before = _ledger_state(led)
    est = make(led)
    with pytest.raises(ValueError, match=r"epsilon=1\.0 is too small .* 'free' underflows to 0"):
        est._check_budget([("ok", 0.5, 1e-7), ("free", 0.0, 1e-7)])
    assert _ledger_state(led) == before


def test_zero_epsilon_bookkeeping_records_still_work():
    led = _shared_ledger()
    led.record("PrivateCountSketch/merged_into", 0.0, merged_into="s1")
    assert led.records[-1]["epsilon"] == 0.0 and led.epsilon_spent == 0.5


# ----------------------------------------------------------------------------------- F8, F9


@pytest.mark.parametrize(("eps", "delta"), [(5e-324, 1e-6), (1e-5, 0.5), (1e-5, 0.1), (1e-3, 1e-2), (1e-4, 1e-3)])
def test_released_norm_refuses_without_building_a_pld(eps, delta, monkeypatch):
    """The exact limit is checked before any privacy-loss distribution is built for the refused budget
    (the message's suggestions, accepted budgets, are checked by the full accounting)."""
    built = []
    real = acc._pld_limit

    def recording(eps_ar, mu_gauss, interval):
        built.append((eps_ar, mu_gauss))
        return real(eps_ar, mu_gauss, interval)

    monkeypatch.setattr(acc, "_pld_limit", recording)
    acc._composed_interval.cache_clear()
    with pytest.raises(ValueError, match=re.escape(f"epsilon={eps!r} is too small")):
        acc.released_norm_budget(eps, delta)
    acc._composed_interval.cache_clear()
    refused = acc.adaops_norm_budget(eps, delta) if 0.5 * eps > 0 else {"eps_ar": 0.0, "mu_gauss": None}
    assert (refused["eps_ar"], refused["mu_gauss"]) not in built


def test_released_norm_refinement_is_bounded(monkeypatch):
    """Where the exact limit leaves room but no discretisation certifies, the finest PLD has at most
    ``_MAX_GAUSS_POINTS`` points of the Gaussian pair (1e-5, 0.1 went to 1.2e7 before: a MemoryError)."""
    seen = []

    def never(eps_ar, mu_gauss, interval):
        seen.append((interval, mu_gauss))
        return math.inf

    monkeypatch.setattr(acc, "_gauss_pair_limit", lambda eps_ar, mu: 0.0)
    monkeypatch.setattr(acc, "_pld_limit", never)
    acc._composed_interval.cache_clear()
    b = acc.adaops_norm_budget(1e-5, 0.1)
    assert acc._composed_interval(b["eps_ar"], b["delta_mech"], b["mu_gauss"]) is None
    acc._composed_interval.cache_clear()
    assert seen and all(16.0 * mu / interval <= acc._MAX_GAUSS_POINTS for interval, mu in seen)
    assert len(seen) <= 12


@pytest.mark.parametrize(("eps", "delta"), [(1e-3, 1e-2), (1e-4, 1e-3), (1e-5, 0.1)])
def test_released_norm_message_names_values_that_work(eps, delta):
    with pytest.raises(ValueError) as info:
        acc.released_norm_budget(eps, delta)
    msg = str(info.value)
    eps_min = float(re.search(r"epsilon >= ([0-9.e+-]+) at this delta", msg).group(1))
    delta_max = float(re.search(r"delta <= ([0-9.e+-]+) at this epsilon", msg).group(1))
    acc.released_norm_budget(eps_min, delta)
    acc.released_norm_budget(eps, delta_max)
    # the named values are the boundary within a factor 4, not loose bounds
    with pytest.raises(ValueError):
        acc.released_norm_budget(eps_min / 4.0, delta)
    with pytest.raises(ValueError):
        acc.released_norm_budget(eps, delta_max * 4.0)


# ----------------------------------------------------------------------------------- F5


def test_noise_proxy_bounds_the_exact_noise():
    """``min(p/n, 1/λ)/γ`` bounds ``tr(X (γH)⁻¹ Xᵀ)/n`` for rows in the unit ball (exact computation)."""
    rng = np.random.default_rng(3)
    for n, p, lam, gamma in [(50, 3, 2.0, 0.01), (130, 5, 6.5, 9e-4), (400, 9, 100.0, 3.0), (20, 4, 0.5, 1.0)]:
        X = rng.normal(size=(n, p))
        X /= np.maximum(np.linalg.norm(X, axis=1), 1.0)[:, None] * rng.uniform(1.0, 3.0, size=(n, 1))
        H = X.T @ X + lam * np.eye(p)
        exact = np.trace(X @ np.linalg.solve(gamma * H, X.T)) / n
        assert exact <= ops_noise_proxy(n, p, lam, gamma) * (1 + 1e-12)


def test_ops_warns_when_its_draw_is_mostly_noise():
    X, y = bounded_regression(n=130, d=3)
    kw = {"epsilon": 4.0, "x_bound": math.sqrt(3), "y_bound": 3.0}
    with pytest.warns(WeakReleaseWarning, match=r"ridge_lambda=6\.5 .*Use ridge_lambda >= ([0-9.]+)") as rec:
        est = OnePosteriorSampleRidge(ridge_lambda=6.5, random_state=np.random.default_rng(0), **kw).fit(X, y)
    assert ops_noise_proxy(130, 4, 6.5, est.gamma_) > 1.0
    msg = next(str(w.message) for w in rec if "ridge_lambda=6.5" in str(w.message))
    best = float(re.search(r"Use ridge_lambda >= ([0-9.e+-]+)", msg).group(1))
    eps0, delta0 = _replace_one_pair_budget(4.0, 1e-6)

    def proxy(lam):
        g = calibrate_ops_gamma(eps0, delta0, 1.0 / lam, 1.0 + math.sqrt(129 / lam))
        return ops_noise_proxy(130, 4, lam, g)

    assert proxy(best) <= 1.0 < proxy(best / 1.1)  # the smallest, up to its 2-digit rounding
    for seed, lam in enumerate((best, 100.0)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", WeakReleaseWarning)
            OnePosteriorSampleRidge(ridge_lambda=lam, random_state=np.random.default_rng(seed + 1), **kw).fit(X, y)


# ----------------------------------------------------------------------------------- F3, F4


def test_fit_warns_once_on_a_noise_dominated_release():
    X, y = bounded_regression(n=60, d=3)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        est = AdaOPSRegressor(epsilon=0.5, x_bound=2.0, y_bound=2.0, random_state=np.random.default_rng(0)).fit(X, y)
    weak = [w for w in rec if issubclass(w.category, WeakReleaseWarning)]
    assert est.gram_signal_to_noise_ < 2.0 and len(weak) == 1
    assert "predictions near a constant" in str(weak[0].message) and "more rows" in str(weak[0].message)
    with pytest.warns(WeakReleaseWarning, match="41-91 %"):
        est.conf_int()


def test_fit_does_not_warn_on_a_strong_release():
    X, y = bounded_regression(n=20000, d=3)
    for calibration in ("ssp_posterior", "released_norm"):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            est = AdaOPSRegressor(epsilon=1.0, x_bound=2.0, y_bound=2.0, calibration=calibration,
                                  random_state=np.random.default_rng(0)).fit(X, y)
        assert not [w for w in rec if issubclass(w.category, WeakReleaseWarning)]
    assert est.gram_signal_to_noise_ is None
