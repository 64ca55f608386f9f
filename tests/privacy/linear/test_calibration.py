"""AdaOPS's calibrations (_linear._calibration): each class's budget split and accounting, checked
against what the estimator records, and the fitted attributes each sets."""

import math

import numpy as np
import pytest
from scipy import special

from sklearn_bayes.privacy import AdaOPSRegressor, PrivacyLedger
from sklearn_bayes.privacy._core import analytic_gaussian_sigma, clip_rows
from sklearn_bayes.privacy._linear._adaops_accounting import adaops_budget, adaops_norm_budget
from sklearn_bayes.privacy._linear._calibration import (
    CALIBRATIONS,
    FITTED_ATTRIBUTES,
    Calibration,
    LedgerEntry,
    ReleasedNormCalibration,
    SSPPosteriorCalibration,
    ThesisCalibration,
    get_calibration,
)
from sklearn_bayes.privacy._linear._ssp_posterior import (
    discrete_release_delta_bound,
    scalar_grid_budget,
    ssp_posterior_budget,
)

BUDGETS = [(0.5, 1e-6), (1.0, 1e-6), (2.0, 1e-5)]


def _data(n=2000, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = clip_rows(rng.normal(size=(n, d)) / math.sqrt(d), 1.0)
    y = np.clip(X @ rng.normal(size=d) + 0.3 * rng.standard_normal(n), -1, 1)
    return X, y


def _fit(name, eps, delta, ledger=None, seed=1, **kw):
    X, y = _data()
    return AdaOPSRegressor(epsilon=eps, delta=delta, x_bound=1.0, y_bound=1.0, calibration=name,
                           random_state=np.random.default_rng(seed), ledger=ledger, **kw).fit(X, y)


def test_registry_matches_the_parameter_constraint():
    """Every name the estimator accepts has exactly one calibration, looked up by that name."""
    (options,) = AdaOPSRegressor._parameter_constraints["calibration"]
    # "ssp_cp" (round SR): the default's release with a C_p prior scale
    assert set(CALIBRATIONS) == set(options.options) == {"ssp_posterior", "ssp_cp", "released_norm", "thesis"}
    for name, cal in CALIBRATIONS.items():
        assert isinstance(cal, Calibration) and cal.name == name and get_calibration(name) is cal
    assert set(SSPPosteriorCalibration.attributes) <= set(FITTED_ATTRIBUTES)
    assert set(ReleasedNormCalibration.attributes) <= set(FITTED_ATTRIBUTES)
    assert set(ThesisCalibration.attributes) <= set(FITTED_ATTRIBUTES)


def test_x_share_is_that_of_the_design():
    """ssp_posterior gives the features 0.9 of the unit ball, the draws [x, 1]/√2."""
    assert SSPPosteriorCalibration.x_share == 0.9
    assert ReleasedNormCalibration.x_share is None and ThesisCalibration.x_share is None


@pytest.mark.parametrize("eps, delta", BUDGETS)
def test_ssp_posterior_budget_and_ledger(eps, delta):
    cal = SSPPosteriorCalibration()
    b = cal.budget(eps, delta)
    assert b == ssp_posterior_budget(eps, delta)
    p = _data()[0].shape[1] + 1  # the grid of the release: the features and the intercept column
    b = cal.budget(eps, delta, p=p)
    assert b == ssp_posterior_budget(eps, delta, p=p)
    (entry,) = cal.ledger_entries(eps, delta, b)
    assert isinstance(entry, LedgerEntry) and (entry.epsilon, entry.delta) == (eps, delta)
    est = _fit("ssp_posterior", eps, delta)
    (rec,) = est.ledger_.records
    assert (rec["mechanism"], rec["epsilon"], rec["delta"], rec["note"]) == (
        "AdaOPSRegressor/" + entry.mechanism, entry.epsilon, entry.delta, entry.note
    )
    # the noise scales the estimator reports are the budget's
    assert (est.noise_scale_gram_, est.noise_scale_xty_, est.noise_scale_yty_) == (
        b["sigma_gram"], b["sigma_xty"], b["sigma_yty"]
    )


@pytest.mark.parametrize("eps, delta", BUDGETS)
def test_released_norm_budget_and_ledger(eps, delta):
    """One composed record at (ε, δ); δ_ar = δ/(1 + e^{ε/2}) splits into 3/4 (PLD) + 2 × 1/8 (events)."""
    cal = ReleasedNormCalibration()
    b = cal.budget(eps, delta)
    assert {k: v for k, v in b.items() if k != "interval"} == adaops_norm_budget(eps, delta)
    assert b["eps_ar"] == 0.5 * eps
    assert b["delta_mech"] + b["delta_event_lambda"] + b["delta_event_norm"] == pytest.approx(b["delta_ar"])
    assert (1 + math.exp(b["eps_ar"])) * b["delta_ar"] == pytest.approx(delta)
    assert b["mu_lambda"] ** 2 + b["mu_norm"] ** 2 == pytest.approx(b["mu_gauss"] ** 2)
    (entry,) = cal.ledger_entries(eps, delta, b)
    assert (entry.epsilon, entry.delta) == (eps, delta)
    est = _fit("released_norm", eps, delta)
    (rec,) = est.ledger_.records
    assert (rec["mechanism"], rec["epsilon"], rec["delta"], rec["note"]) == (
        "AdaOPSRegressor/" + entry.mechanism, entry.epsilon, entry.delta, entry.note
    )
    # the released lambda_min's scale and its margin are those of the budget
    assert est.noise_scale_lambda_ == 1.0 / b["mu_lambda"]
    assert est.margin_ == 1.0 + est.noise_scale_lambda_ * float(-special.ndtri(b["delta_event_lambda"]))


@pytest.mark.parametrize("eps, delta", BUDGETS)
def test_thesis_budget_and_ledger(eps, delta):
    """Two records: λ_min at (ε/2, δ/4) and the draw at (ε/2, δ/2 + δ/4), composing to (ε, δ)."""
    cal = ThesisCalibration()
    b = cal.budget(eps, delta)
    assert b == adaops_budget(eps, delta)
    lam, draw = cal.ledger_entries(eps, delta, b)
    assert (lam.epsilon, lam.delta) == (0.5 * eps, 0.25 * delta)
    assert (draw.epsilon, draw.delta) == (0.5 * eps, 0.5 * delta + 0.25 * delta)
    assert lam.epsilon + draw.epsilon == pytest.approx(eps) and lam.delta + draw.delta == pytest.approx(delta)
    est = _fit("thesis", eps, delta)
    assert [(r["mechanism"], r["epsilon"], r["delta"], r["note"]) for r in est.ledger_.records] == [
        ("AdaOPSRegressor/" + e.mechanism, e.epsilon, e.delta, e.note) for e in (lam, draw)
    ]
    # λ_min on the grid (test_scalar_grid.py): its sd at least the analytic Gaussian mechanism's
    g, s, sigma = scalar_grid_budget(b["eps_lambda"], b["delta_lambda"], 1.0)
    assert est.noise_scale_lambda_ == sigma >= analytic_gaussian_sigma(b["eps_lambda"], b["delta_lambda"], 1.0)
    assert discrete_release_delta_bound(1.0 / sigma, 1.0 / s, b["eps_lambda"]) <= b["delta_lambda"]


@pytest.mark.parametrize("name", sorted(CALIBRATIONS))
def test_every_attribute_is_set_and_none_exactly_outside_the_calibration(name):
    """Which fitted attributes exist does not depend on the calibration; the values do."""
    cal = get_calibration(name)
    est = _fit(name, 1.0, 1e-6)
    for attr in FITTED_ATTRIBUTES:
        assert hasattr(est, attr)
        assert (getattr(est, attr) is not None) == (attr in cal.attributes), attr
    # refitting with another calibration leaves nothing of the first behind
    other = "thesis" if name == "ssp_posterior" else "ssp_posterior"
    est.set_params(calibration=other).fit(*_data())
    for attr in FITTED_ATTRIBUTES:
        assert (getattr(est, attr) is not None) == (attr in get_calibration(other).attributes), attr


@pytest.mark.parametrize("name", sorted(CALIBRATIONS))
def test_release_is_what_the_estimator_publishes(name):
    """The class's release on the scaled data, with the estimator's generator, is the fit (bit for bit)."""
    cal = get_calibration(name)
    X, y = _data()
    est = _fit(name, 1.0, 1e-6, seed=3)
    Xs, ys = est._prepare(X, y, cal.x_share)
    rel = cal.release(Xs, ys, np.random.default_rng(3), epsilon=1.0, delta=1e-6, kappa=None, fit_intercept=True)
    coef, intercept = est._unscale(rel.theta, 1.0, cal.x_share)
    np.testing.assert_array_equal(coef, est.coef_)
    assert float(intercept) == est.intercept_
    assert rel.attributes == {a: getattr(est, a) for a in cal.attributes}
    assert rel.ledger == cal.ledger_entries(1.0, 1e-6, cal.budget(1.0, 1e-6))


@pytest.mark.parametrize("name", sorted(CALIBRATIONS))
def test_shared_ledger_gets_the_same_records(name):
    shared = PrivacyLedger()
    est = _fit(name, 1.0, 1e-6, ledger=shared)
    assert [(r["epsilon"], r["delta"]) for r in shared.records] == [
        (r["epsilon"], r["delta"]) for r in est.ledger_.records
    ]
    assert shared.epsilon_spent == pytest.approx(1.0)


def test_budget_refusals_name_epsilon():
    """The budget step refuses what its accounting cannot certify, before any release."""
    with pytest.raises(ValueError, match="epsilon=.*calibration='thesis'"):
        ThesisCalibration().budget(1e4, 1e-6)
    with pytest.raises(ValueError, match="epsilon=.*calibration='released_norm'"):
        ReleasedNormCalibration().budget(100.0, 1e-6)
