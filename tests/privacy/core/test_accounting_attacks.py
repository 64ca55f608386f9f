"""An attacker's review of the accountants (task HQC): extreme ε and δ, many events, monotonicity.

The ridge posterior's exact privacy-loss accounting (``_pld``), the subsampling formulas, the
ledger's composition and DP-SGLD's accountant, at ε in {0, 1e-12, 1e6, inf, nan, < 0}, δ in
{0, 1, nan, > 1}, and over many events.  Tests marked ``xfail(strict=True)`` expose a bug (the
reason names it).
"""

import math
import warnings

import numpy as np
import pytest

from sklearn_bayes.exceptions import BudgetExceededError
from sklearn_bayes.privacy import OnePosteriorSampleRidge, PrivacyLedger
from sklearn_bayes.privacy._core import (
    amplify_by_subsampling,
    analytic_gaussian_sigma,
    ops_ridge_delta,
    ops_ridge_epsilon,
    ops_ridge_max_c,
    subsampled_base_epsilon,
)
from sklearn_bayes.privacy._linear._dpsgld import sgld_epsilon

# ------------------------------------------------------------------ the ridge posterior's exact accounting


@pytest.mark.parametrize("eps", [0.0, 1e-12, 1.0, 50.0, 300.0])
def test_ops_ridge_delta_is_a_probability_decreasing_in_epsilon(eps):
    d = ops_ridge_delta(eps, 0.01, 0.5)
    assert 0.0 <= d <= 1.0
    assert ops_ridge_delta(eps * 1.5 + 1e-3, 0.01, 0.5) <= d


@pytest.mark.parametrize("eps", [1e3, 1e6])
def test_ops_ridge_delta_at_huge_epsilon_does_not_overflow(eps):
    d = ops_ridge_delta(eps, 0.01, 0.5)
    assert 0.0 <= d <= ops_ridge_delta(700.0, 0.01, 0.5)


@pytest.mark.parametrize("eps", [math.nan, math.inf])
def test_ops_ridge_delta_never_returns_nan(eps):
    try:
        d = ops_ridge_delta(eps, 0.01, 0.5)
    except ValueError as exc:
        assert "epsilon" in str(exc)
        return
    assert d == 0.0  # only inf can return: delta at an infinite epsilon is 0


@pytest.mark.parametrize("fn", ["ops_ridge_delta", "amplify_by_subsampling"])
def test_negative_epsilon_is_refused(fn):
    call = {"ops_ridge_delta": lambda: ops_ridge_delta(-1.0, 0.01, 0.5),
            "amplify_by_subsampling": lambda: amplify_by_subsampling(-1.0, 0.5)}[fn]
    with pytest.raises(ValueError, match="epsilon"):
        call()


@pytest.mark.parametrize("rate", [1.0, 0.5])
def test_amplify_by_subsampling_refuses_nan_and_keeps_inf(rate):
    """Was: nan came back as nan (at rate 1) and passed every '> budget' check downstream."""
    with pytest.raises(ValueError, match="epsilon"):
        amplify_by_subsampling(math.nan, rate)
    assert amplify_by_subsampling(math.inf, rate) == math.inf


def test_ops_ridge_epsilon_of_a_large_per_instance_loss_does_not_overflow():
    eps = ops_ridge_epsilon(1e-300, 0.01, 25.0)
    assert eps > ops_ridge_epsilon(1e-6, 0.01, 25.0)  # smaller delta, larger epsilon (or inf)


def test_per_instance_epsilon_at_a_small_delta_is_below_the_add_remove_budget():
    """n = 1 on the boundary of the bounds: the record is the worst case of the calibration, whose
    add/remove pair is (ε/2, δ/(1+e^{ε/2})) with δ/(1+e^{650}) < 1e-282, so at δ = 1e-200 its
    per-instance ε is at most ε/2 = 650."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = OnePosteriorSampleRidge(epsilon=1300.0, ridge_lambda=500.0, x_bound=1.0, y_bound=1.0,
                                      fit_intercept=False, random_state=0).fit([[1.0]], [1.0])
    eps = est.per_instance_epsilon([[1.0]], [1.0], delta=1e-200)
    assert 0 < eps[0] <= 650.0 * (1 + 1e-9)


@pytest.mark.parametrize("delta", [1.0, 2.0, math.nan])
def test_ops_ridge_max_c_names_a_bad_delta(delta):
    with pytest.raises(ValueError, match="delta"):
        ops_ridge_max_c(1.0, delta, 0.01)


@pytest.mark.parametrize("eps", [math.nan, math.inf, -1.0])
def test_analytic_gaussian_sigma_names_a_bad_epsilon(eps):
    with pytest.raises(ValueError, match="epsilon"):
        analytic_gaussian_sigma(eps, 1e-6)


def _hockey_stick_by_quadrature(m1, s1, m2, s2, eps):
    """``∫_S p - e^ε q`` in 40-digit arithmetic (mpmath), ``S`` between/outside the roots of log p/q = ε."""
    mp = pytest.importorskip("mpmath")
    with mp.workdps(40):
        m1, s1, m2, s2, eps = map(mp.mpf, (m1, s1, m2, s2, eps))
        A, B = 1 / (2 * s2**2) - 1 / (2 * s1**2), m1 / s1**2 - m2 / s2**2
        C = m2**2 / (2 * s2**2) - m1**2 / (2 * s1**2) + mp.log(s2 / s1) - eps
        r1, r2 = sorted([(-B - mp.sqrt(B * B - 4 * A * C)) / (2 * A), (-B + mp.sqrt(B * B - 4 * A * C)) / (2 * A)])
        f = lambda t: mp.npdf(t, m1, s1) - mp.e**eps * mp.npdf(t, m2, s2)  # noqa: E731
        if A < 0:
            return float(mp.quad(f, [r1, (r1 + r2) / 2, r2]))
        return float(mp.quad(f, [-mp.inf, r1 - 1, r1]) + mp.quad(f, [r2, r2 + 1, mp.inf]))


@pytest.mark.parametrize("eps", [3.0, 300.0, 650.0, 1000.0])
@pytest.mark.parametrize("direction", ["remove", "add"])
def test_ops_ridge_delta_is_exact_in_the_far_tail(eps, direction):
    """Against quadrature at 40 digits: the closed form in log space keeps ~10 digits where δ is
    1e-42..1e-177 (before, Q(S) underflowed to 0 before it was scaled by e^ε: 1.6x too large
    at ε = 650, and an OverflowError above 709).  The tolerance 1e-8 is the relative error of
    log Φ (~1e-15) times the cancellation P(S_i)/δ_i of each piece (< 1e7 here)."""
    mu, c = 0.01, 25.0
    m2, s2 = c / (1 + mu), 1 / math.sqrt(1 + mu)
    pair = (0.0, 1.0, m2, s2) if direction == "remove" else (m2, s2, 0.0, 1.0)
    ref = _hockey_stick_by_quadrature(*pair, eps)
    assert ref > 0
    assert ops_ridge_delta(eps, mu, c, direction) == pytest.approx(ref, rel=1e-8)


def test_ops_ridge_delta_at_infinite_leverage_or_residual_is_one():
    """μ = inf (a point mass against N(0, 1)) or c = inf (an infinite shift): δ = 1 at any finite ε."""
    assert ops_ridge_delta(5.0, math.inf, 0.0) == 1.0
    assert ops_ridge_delta(5.0, 0.01, math.inf) == 1.0
    assert ops_ridge_delta(math.inf, math.inf, 1.0) == 0.0
    assert ops_ridge_epsilon(1e-6, math.inf, 1.0) == math.inf


@pytest.mark.parametrize("name, args", [("mu", (1.0, -0.123456789, 0.5)), ("mu", (1.0, math.nan, 0.5)),
                                        ("c", (1.0, 0.01, -0.123456789)), ("c", (1.0, 0.01, math.nan))])
def test_ops_ridge_delta_refuses_a_bad_mu_or_c_without_printing_it(name, args):
    """μ and c are computed from the data (per-instance accounting): the error names them, never their value."""
    with pytest.raises(ValueError, match=f"^{name} must") as info:
        ops_ridge_delta(*args)
    assert "123456" not in str(info.value)


def test_analytic_gaussian_delta_without_noise_is_one_and_bad_input_is_named():
    """σ = 0 is a deterministic release: δ(ε) = 1 at every finite ε (was ZeroDivisionError); a negative
    or nan σ or ε, and a sensitivity not finite and > 0, are refused by name (were a meaningless number)."""
    from sklearn_bayes.privacy._core._pld import analytic_gaussian_delta

    assert analytic_gaussian_delta(0.0, 3.0) == 1.0
    assert analytic_gaussian_delta(math.inf, 1.0) == 0.0
    for args, name in (((-1.0, 1.0), "sigma"), ((math.nan, 1.0), "sigma"), ((1.0, -0.5), "epsilon"),
                       ((1.0, math.nan), "epsilon"), ((1.0, 1.0, 0.0), "sensitivity"),
                       ((1.0, 1.0, math.inf), "sensitivity"), ((1.0, 1.0, True), "sensitivity")):
        with pytest.raises(ValueError, match=name):
            analytic_gaussian_delta(*args)


def test_ops_ridge_tail_bound_refuses_what_has_no_tail_bound():
    """δ outside (0, 1), a negative or nan μ or γ, or a non-finite r, are refused by name (δ = 0 raised
    ZeroDivisionError, a negative μ returned a number)."""
    from sklearn_bayes.privacy._core._pld import ops_ridge_tail_bound

    assert math.isfinite(ops_ridge_tail_bound(1e-5, 0.1, 1.0, 2.0))
    for args, name in (((0.0, 0.1, 1.0, 1.0), "delta"), ((1.0, 0.1, 1.0, 1.0), "delta"),
                       ((1e-5, -0.1, 1.0, 1.0), "mu"), ((1e-5, 0.1, math.nan, 1.0), "gamma"),
                       ((1e-5, 0.1, 1.0, math.inf), "finite")):
        with pytest.raises(ValueError, match=name):
            ops_ridge_tail_bound(*args)


@pytest.mark.parametrize("eps", [math.nan, math.inf, -1.0])
def test_ops_ridge_max_c_names_a_bad_epsilon(eps):
    with pytest.raises(ValueError, match="epsilon"):
        ops_ridge_max_c(eps, 1e-6, 0.01)


def test_ops_ridge_epsilon_refuses_a_delta_below_float_resolution():
    """δ(ε) is a double: below ~1e-308 it underflows to 0, so a search for δ = 1e-320 would stop at
    the underflow and report too small an ε; it is refused, naming delta (1e-300 is still exact)."""
    with pytest.raises(ValueError, match="delta"):
        ops_ridge_epsilon(1e-320, 0.01, 25.0)
    eps = ops_ridge_epsilon(1e-300, 0.01, 25.0)
    assert ops_ridge_delta(eps, 0.01, 25.0) <= 1e-300 < ops_ridge_delta(0.999 * eps, 0.01, 25.0)


# ------------------------------------------------------------------ subsampling


def test_amplification_is_monotone_and_never_exceeds_the_base_epsilon():
    eps = np.array([0.0, 1e-12, 1e-3, 0.5, 1.0, 10.0, 699.0, 701.0, 1e4, 1e6])
    for rate in [1e-300, 1e-6, 0.01, 0.5, 1.0]:
        out = np.array([amplify_by_subsampling(float(e), rate) for e in eps])
        assert np.all(np.isfinite(out)) and np.all(out >= 0) and np.all(out <= eps * (1 + 1e-12))
        assert np.all(np.diff(out) >= 0)
    for e in [1e-3, 1.0, 701.0]:
        by_rate = [amplify_by_subsampling(e, r) for r in [1e-9, 1e-3, 0.1, 0.9, 1.0]]
        assert all(b >= a for a, b in zip(by_rate, by_rate[1:]))


@pytest.mark.parametrize("eps", [1e-12, 1e-3, 1.0, 50.0, 700.0, 1e4])
@pytest.mark.parametrize("rate", [1e-12, 0.01, 0.9])
def test_subsampled_base_epsilon_is_not_smaller_than_the_target(eps, rate):
    """The base ε the mechanism may use on the subsample, amplified back, never exceeds the target
    by more than rounding (relative 1e-12): a larger amplified ε would overspend."""
    base = subsampled_base_epsilon(eps, rate)
    assert base >= eps
    assert amplify_by_subsampling(base, rate) <= eps * (1 + 1e-12)


# ------------------------------------------------------------------ the ledger's composition


def test_many_tiny_events_compose_exactly_and_the_budget_holds_to_the_last_bit():
    ledger = PrivacyLedger(budget=(1.0, 1e-6))
    for _ in range(1000):  # (each record re-adds all earlier ones: quadratic, see the HQC report)
        ledger.record("tiny", 1e-3, delta=1e-9)
    assert ledger.epsilon_spent == 1.0 and ledger.delta_spent == pytest.approx(1e-6, rel=1e-12)
    with pytest.raises(BudgetExceededError):
        ledger.record("one more", 5e-324)  # the smallest positive float is still over the budget
    assert ledger.n_releases == 1000
    assert ledger.remaining() == (0.0, 0.0)


def test_composition_is_never_below_any_single_event():
    rng = np.random.default_rng(0)
    amounts = np.concatenate([[1e-300, 5e-324, 0.0], rng.exponential(1.0, 50), [1e6]])
    ledger = PrivacyLedger()
    for a in amounts:
        ledger.record("event", float(a))
        assert ledger.epsilon_spent >= float(a)
    assert ledger.epsilon_spent >= math.fsum(amounts) * (1 - 1e-15)


@pytest.mark.parametrize("budget", [(0.0, 0.0), (1e-12, 0.0)])
def test_a_zero_or_tiny_budget_refuses_every_positive_release(budget):
    ledger = PrivacyLedger(budget=budget)
    ledger.record("free", 0.0)  # a release of ε = 0 (use-and-keep's later query sets) is within any budget
    with pytest.raises(BudgetExceededError):
        ledger.record("release", budget[0] + 1e-15)
    with pytest.raises(BudgetExceededError):
        ledger.record("release", 0.0, delta=1e-300)
    assert ledger.n_releases == 1


@pytest.mark.parametrize("value", [math.nan, math.inf, -1e-300])
def test_ledger_refuses_non_finite_or_negative_increments(value):
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="epsilon"):
        ledger.record("bad", value)
    with pytest.raises(ValueError, match="delta"):
        ledger.record("bad", 0.1, delta=value if value != -1e-300 else 1.5)
    assert ledger.n_releases == 0


def test_ledger_record_refuses_a_bool_epsilon():
    """Was: ``record("m", True)`` recorded epsilon 1.0 although the budget refuses a bool."""
    ledger = PrivacyLedger()
    with pytest.raises(TypeError, match="epsilon"):
        ledger.record("bad", True)


@pytest.mark.parametrize("value", [True, False, np.True_, "0.5", None])
@pytest.mark.parametrize("name", ["epsilon", "delta"])
@pytest.mark.parametrize("how", ["record", "record_shared", "file"])
def test_ledger_records_refuse_non_real_amounts(value, name, how, tmp_path):
    """Bools (numpy's too), strings and None are refused with a TypeError naming the amount, on
    every recording path, and nothing is recorded."""
    ledger = PrivacyLedger(path=tmp_path / "l.sqlite") if how == "file" else PrivacyLedger()
    amounts = {"epsilon": 0.5, "delta": 0.0, name: value}
    with pytest.raises(TypeError, match=name):
        if how == "record_shared":
            ledger.record_shared("Est", "bad", amounts["epsilon"], delta=amounts["delta"])
        else:
            ledger.record("bad", amounts["epsilon"], delta=amounts["delta"])
    assert ledger.n_releases == 0


def test_budget_refuses_a_numpy_bool():
    """Was: ``budget=(np.True_, 0)`` was read as 1.0 (only Python's bool was refused)."""
    with pytest.raises(TypeError, match="epsilon"):
        PrivacyLedger(budget=(np.True_, 0.0))


# ------------------------------------------------------------------ DP-SGLD's accountant over many events


@pytest.mark.parametrize("accountant", ["rdp", "pld"])
@pytest.mark.parametrize("z, q", [(1.0, 0.01), (50.0, 0.01)])
def test_sgld_epsilon_is_monotone_in_the_number_of_steps_and_never_zero(accountant, z, q):
    steps = [1, 3, 30, 300]
    eps = [sgld_epsilon(z, q, t, 1e-6, accountant=accountant) for t in steps]
    assert all(math.isfinite(e) and e > 0 for e in eps)
    assert all(b >= a for a, b in zip(eps, eps[1:]))
