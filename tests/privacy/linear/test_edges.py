"""Extreme parameters, accountant faults, clipping escapes and threads of the private linear models.

Regression tests of issue 26 (each failed at 8d8c494): AdaOPS ``released_norm`` never returned at
ε = 50 (an unbounded doubling on the PLD's floor) nor at ε = 1e-3 (a PLD discretisation coarser
than ε); OPS ridge, AdaOPS ``thesis`` and DP-SGLD raised ``OverflowError`` at ε = 1e4; DP-SGLD
recorded ε = 0 for its SGLD part when dp-accounting's RDP accountant returned 0 ("Negative Renyi
divergence") and calibrated a noise multiplier of 1.2e7 (the PLD accountant certifies ~1.6e3);
``step_size=1e300`` released NaN coefficients; ``clip_rows`` skipped infinite rows and
``RowNormClipper`` returned rows outside the ball when ``X - center`` overflowed; fits of one
instance from two threads were not serialised.
"""

import logging
import math
import pickle
import re
import threading
import warnings

import numpy as np
import pytest

from sklearn_bayes.privacy import (
    AdaOPSRegressor,
    DPSGLDLogisticRegression,
    OnePosteriorSampleRidge,
    PrivacyLedger,
    RowNormClipper,
)
from sklearn_bayes.privacy._core._clipping import clip_rows, clip_values
from sklearn_bayes.privacy._linear._dpsgld import _raw_epsilon, calibrate_sgld_noise, sgld_epsilon
from sklearn_bayes.utils import instance_lock
from tests.privacy.linear._data import bounded_regression

EPSILONS = [1e-8, 1e-3, 50.0, 1e4, 1e300]




def _quiet_fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


MAKERS = {
    "ops_ridge": lambda eps, **kw: OnePosteriorSampleRidge(
        epsilon=eps, ridge_lambda=500.0, x_bound=2.0, y_bound=2.0, random_state=0, **kw),
    "ssp_posterior": lambda eps, **kw: AdaOPSRegressor(epsilon=eps, x_bound=2.0, y_bound=2.0, random_state=0, **kw),
    "released_norm": lambda eps, **kw: AdaOPSRegressor(
        epsilon=eps, x_bound=2.0, y_bound=2.0, calibration="released_norm", random_state=0, **kw),
    "thesis": lambda eps, **kw: AdaOPSRegressor(
        epsilon=eps, x_bound=2.0, y_bound=2.0, calibration="thesis", random_state=0, **kw),
    "dpsgld": lambda eps, **kw: DPSGLDLogisticRegression(
        epsilon=eps, x_bound=2.0, n_iter=50, n_draws=5, random_state=0, **kw),
}


def _data(kind):
    X, y = bounded_regression()
    return (X, (y > 0).astype(int)) if kind == "dpsgld" else (X, y)


def _check_release(est, eps):
    assert np.all(np.isfinite(est.coef_)) and np.all(np.isfinite(est.intercept_))
    records = est.ledger_.records
    assert records and all(r["epsilon"] > 0 for r in records)  # every mechanism spent budget
    assert 0 < est.epsilon_spent_ <= eps * (1 + 1e-12)


# ------------------------------------------------------------------ every epsilon: a release or a clear refusal
# DP-SGLD at tiny epsilon recalibrates with the PLD accountant (about 10 s)
_SLOW = {("dpsgld", 1e-8), ("dpsgld", 1e-3)}


@pytest.mark.parametrize(
    "kind, eps",
    [pytest.param(k, e, marks=pytest.mark.slow) if (k, e) in _SLOW else (k, e) for k in MAKERS for e in EPSILONS],
)
def test_every_estimator_returns_or_refuses_at_every_epsilon(kind, eps):
    X, y = _data(kind)
    try:
        est = _quiet_fit(MAKERS[kind](eps), X, y)
    except ValueError as exc:
        msg = str(exc)
        assert "epsilon" in msg
        if eps >= 50:  # too large: the message names a supported value, and that value works
            m = re.search(r"use epsilon <= ([0-9.e+]+[0-9])", msg)
            assert m, msg
            largest = float(m.group(1))
            assert largest < eps
            _check_release(_quiet_fit(MAKERS[kind](largest), X, y), largest)
    else:
        _check_release(est, eps)


def test_released_norm_limits_are_the_documented_ones():
    """ε = 50 (hung) is refused naming 38.09 at δ = 1e-6; ε = 1e-3 (hung) now fits."""
    X, y = bounded_regression()
    with pytest.raises(ValueError, match=r"epsilon=50\.0 is too large .* supports for certain .* 38\.09"):
        _quiet_fit(MAKERS["released_norm"](50.0), X, y)
    _check_release(_quiet_fit(MAKERS["released_norm"](1e-3), X, y), 1e-3)


@pytest.mark.parametrize("kind", ["ops_ridge", "thesis", "dpsgld"])
def test_huge_epsilon_names_epsilon_and_its_limit(kind):
    X, y = _data(kind)
    with pytest.raises(ValueError, match=r"epsilon=10000\.0 exceeds the largest epsilon .* delta=1e-06"):
        _quiet_fit(MAKERS[kind](1e4), X, y)


# ------------------------------------------------------------------ DP-SGLD accounting
def test_dpsgld_quoted_case_spends_its_whole_budget(caplog):
    """ε = 0.05, δ = 1e-6, x_bound = 2, n_iter = 50: the SGLD part was recorded as ε = 0.

    (It was half of ε beside the OPS start; with the default start it is the whole ε.)"""
    X, y = _data("dpsgld")
    with caplog.at_level(logging.WARNING):
        est = _quiet_fit(DPSGLDLogisticRegression(epsilon=0.05, delta=1e-6, x_bound=2.0, n_iter=50, random_state=0),
                         X, y)
    assert not [r for r in caplog.records if "Renyi" in r.getMessage()]
    sgld = [r for r in est.ledger_.records if r["mechanism"].endswith("dp_sgld")]
    assert len(sgld) == 1 and 0 < sgld[0]["epsilon"] <= 0.05 * (1 + 1e-12)
    assert est.epsilon_sgld_ == sgld[0]["epsilon"] > 0
    assert 0.05 * (1 - 1e-3) <= est.epsilon_spent_ <= 0.05 * (1 + 1e-12)  # calibrated to 1e-4 in z
    # certified by a valid answer: the PLD accountant's, as RDP cannot go below its floor here
    q, eps_ar = 256 / 300, 0.025
    delta_ar = 1e-6 / (1 + math.exp(eps_ar))
    assert _raw_epsilon(est.noise_multiplier_, q, 50, delta_ar, "pld") <= eps_ar
    assert est.noise_multiplier_ < 1e4  # 1.2e7 before (the faulty RDP "success")


@pytest.mark.slow
@pytest.mark.parametrize("eps", [1e-3, 1e-5])
@pytest.mark.parametrize("delta", [1e-6, 1e-100])
def test_sgld_calibration_is_certified_or_refused_on_tiny_budgets(eps, delta):
    q, T = 0.85, 50
    try:
        z = calibrate_sgld_noise(eps, delta, q, T)
    except ValueError as exc:
        assert "too small" in str(exc) and "epsilon" in str(exc)
        return
    delta_ar = delta / (1 + math.exp(eps / 2))
    e = sgld_epsilon(z, q, T, delta_ar)
    # the checked epsilon is > 0 and finite, and the calibration does not exceed the target
    assert 0 < e and math.isfinite(e)
    certified = [_raw_epsilon(z, q, T, delta_ar, a) for a in ("rdp", "pld", "rdp_extended")]
    assert any(0 < c <= eps / 2 for c in certified)


def test_sgld_epsilon_never_returns_zero():
    """At z = 5e7 every accountant answers 0 (a negative Rényi divergence, TV below δ): refused."""
    assert _raw_epsilon(5e7, 0.85, 50, 5e-7, "rdp") == 0.0
    with pytest.raises(ValueError, match="no accountant certifies"):
        sgld_epsilon(5e7, 0.85, 50, 5e-7)


def test_dpsgld_diverging_step_size_is_refused():
    """step_size=1e300 released NaN coefficients; now refused, and the run's spend is still recorded
    in the shared ledger (the refusal is a function of the release: refits compose with it)."""
    X, y = _data("dpsgld")
    ledger = PrivacyLedger()
    est = DPSGLDLogisticRegression(epsilon=1.0, x_bound=2.0, n_iter=50, n_draws=5, step_size=1e300,
                                   random_state=0, ledger=ledger)
    with pytest.raises(ValueError, match=r"diverged .* step_size=1e\+300"):
        _quiet_fit(est, X, y)
    assert not hasattr(est, "coef_") and not hasattr(est, "classes_")
    assert ledger.n_releases == 1 and 0.999 <= ledger.epsilon_spent <= 1.0 + 1e-12  # z calibrated to 1e-4


def test_dpsgld_one_class_error_prints_no_label():
    X, _ = _data("dpsgld")
    with pytest.raises(ValueError) as info:
        _quiet_fit(MAKERS["dpsgld"](1.0), X, np.full(X.shape[0], 987654321))
    assert "987654321" not in str(info.value)


# DP-SGLD's coefficients are theta/x_bound (y_bound = 1): with x_bound >= 1e-300 (a smaller one is refused
# before any noise, test_bounds_edges.py) they no longer overflow; its x_bound=1e-320 is refused there
@pytest.mark.parametrize("kind", ["ops_ridge", "ssp_posterior"])
def test_coefficients_beyond_float_range_are_refused(kind):
    X, y = _data(kind)
    kw = {"x_bound": 1e-300, "y_bound": 1e300}
    est = MAKERS[kind](1.0)
    est.set_params(**kw)
    with pytest.raises(ValueError, match="overflow the float range with x_bound="):
        _quiet_fit(est, X, y)


# ------------------------------------------------------------------ clipping
def test_clip_rows_refuses_non_finite_rows():
    with pytest.raises(ValueError, match="X contains a non-finite value"):
        clip_rows(np.array([[np.inf, 1.0, 1.0]]), 1.0)
    with pytest.raises(ValueError, match="X contains a non-finite value"):
        clip_rows(np.array([[np.nan, 1.0]]), 1.0)
    with pytest.raises(ValueError, match="bound must be > 0"):
        clip_rows(np.ones((1, 2)), float("nan"))
    with pytest.raises(ValueError, match="bound must be > 0"):
        clip_values(np.ones(2), float("nan"))


def test_row_norm_clipper_centred_overflow_is_an_error():
    clipper = RowNormClipper(max_norm=1.0, center=[-1.7e308, 0.0, 0.0]).fit(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="X - center overflows"):
        clipper.transform(np.full((1, 3), 1.7e308))
    out = clipper.transform(np.full((1, 3), -1e308))  # large but finite after centring: inside the ball
    assert np.all(np.isfinite(out)) and np.linalg.norm(out) <= 1.0


def test_row_norm_clipper_nan_center_is_named():
    with pytest.raises(ValueError, match="center must be finite, got a center with NaN"):
        RowNormClipper(center=[np.nan, 0.0]).fit(np.zeros((2, 2)))


@pytest.mark.parametrize("scale", [1e-310, 1e-200, 1.0, 1e200, 1e307])
def test_clipped_rows_are_inside_the_ball(scale):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((200, 4)) * scale
    for bound in (1e-300, 1.0, 1e300):
        norms = np.array([math.hypot(*row) for row in clip_rows(X, bound)])  # hypot: no overflow
        assert np.all(norms <= bound)


# ------------------------------------------------------------------ threads and the ledger
@pytest.mark.parametrize("kind", list(MAKERS))
def test_fit_holds_the_instance_lock(kind):
    """A fit waits for the instance's lock: two fits (releases) never interleave."""
    X, y = _data(kind)
    est = MAKERS[kind](1.0)
    done = threading.Event()

    def run():
        _quiet_fit(est, X, y)
        done.set()

    with instance_lock(est):
        worker = threading.Thread(target=run)
        worker.start()
        finished_while_locked = done.wait(0.5)  # the fit would take well under this unlocked
    worker.join()
    assert not finished_while_locked and done.is_set()
    assert hasattr(est, "coef_")


def test_row_norm_clipper_fit_holds_the_instance_lock():
    est = RowNormClipper()
    done = threading.Event()
    with instance_lock(est):
        worker = threading.Thread(target=lambda: (est.fit(np.zeros((2, 2))), done.set()))
        worker.start()
        finished_while_locked = done.wait(0.3)
    worker.join()
    assert not finished_while_locked and done.is_set()


def test_concurrent_fits_of_one_instance_release_whole_fits():
    """Two threads fitting one instance with one generator: the end state is one whole fit."""
    X, y = bounded_regression()
    X2, y2 = bounded_regression(seed=5)
    rng = np.random.default_rng(11)
    start = rng.bit_generator.state
    est = OnePosteriorSampleRidge(ridge_lambda=500.0, x_bound=2.0, y_bound=2.0, random_state=rng)
    threads = [threading.Thread(target=_quiet_fit, args=(est, A, b)) for A, b in ((X, y), (X2, y2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # the serial orders: the second fit draws after the first one's draw
    outcomes = []
    for first, second in (((X, y), (X2, y2)), ((X2, y2), (X, y))):
        g = np.random.default_rng()
        g.bit_generator.state = start
        ref = OnePosteriorSampleRidge(ridge_lambda=500.0, x_bound=2.0, y_bound=2.0, random_state=g)
        _quiet_fit(ref, *first)
        _quiet_fit(ref, *second)
        outcomes.append(ref.coef_)
    assert any(np.array_equal(est.coef_, o) for o in outcomes)
    assert est.ledger_.n_releases == 1


def test_ledger_loses_no_record_under_threads():
    ledger = PrivacyLedger()
    n_threads, n_each = 8, 500
    barrier = threading.Barrier(n_threads + 1)

    def record(k):
        barrier.wait()
        for i in range(n_each):
            ledger.record(f"t{k}", 0.001, n_items=i)

    def read():
        barrier.wait()
        for _ in range(200):
            ledger.epsilon_spent, pickle.loads(pickle.dumps(ledger)), PrivacyLedger.compose(ledger)

    threads = [threading.Thread(target=record, args=(k,)) for k in range(n_threads)]
    threads.append(threading.Thread(target=read))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ledger.n_releases == n_threads * n_each
    assert len({r["id"] for r in ledger.records}) == n_threads * n_each
    assert ledger.epsilon_spent == pytest.approx(n_threads * n_each * 0.001, rel=1e-12)


def test_shared_ledger_counts_every_fit_from_threads():
    ledger = PrivacyLedger()
    X, y = bounded_regression()

    def work(seed):
        for _ in range(5):
            est = OnePosteriorSampleRidge(ridge_lambda=500.0, x_bound=2.0, y_bound=2.0,
                                          random_state=np.random.default_rng(seed), ledger=ledger)
            est.fit(X, y)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ledger.n_releases == 20 and ledger.epsilon_spent == pytest.approx(20.0)


def test_deepcopy_pickle_and_clone_keep_the_ledger_semantics():
    import copy

    from sklearn.base import clone

    X, y = bounded_regression()
    ledger = PrivacyLedger()
    est = _quiet_fit(MAKERS["thesis"](1.0, ledger=ledger), X, y)
    assert ledger.n_releases == 2
    assert copy.deepcopy(est).ledger is ledger and clone(est).ledger is ledger
    loaded = pickle.loads(pickle.dumps(est))
    assert loaded.ledger is not ledger and loaded.ledger.n_releases == 2
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    # a refit of the clone adds to the shared ledger; its own ledger_ restarts
    c = _quiet_fit(clone(est), X, y)
    assert ledger.n_releases == 4 and c.ledger_.n_releases == 2
    # set_params after fit does not change the released model
    before = est.predict(X)
    est.set_params(x_bound=5.0, epsilon=3.0)
    np.testing.assert_array_equal(est.predict(X), before)


def test_small_n_and_constant_columns():
    """n = 1 and a constant column are valid data: a finite release (the bounds are public)."""
    X, y = bounded_regression()
    Xc = X.copy()
    Xc[:, 1] = 1.0
    for kind in ("ops_ridge", "ssp_posterior", "released_norm", "thesis"):
        _check_release(_quiet_fit(MAKERS[kind](1.0), X[:1], y[:1]), 1.0)
        _check_release(_quiet_fit(MAKERS[kind](1.0), Xc, y), 1.0)
    _check_release(_quiet_fit(MAKERS["dpsgld"](1.0), Xc, (y > 0).astype(int)), 1.0)

