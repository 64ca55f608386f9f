"""The hockey-stick δ of two Gaussians is never below the exact value and within 1.01e-9 (relative) of it.

Reference: the closed form ``P(S) - e^ε Q(S)`` in mpmath with at least 50 correct digits of the
result (the working precision grows with the cancellation ``P(S)/δ`` and with the digits of
``1 + μ``).  Before the fix ``gaussian_hockey_stick`` returned 0 for a δ of 4e-11 (a variance
ratio of 1 + 1e-12), understated δ by 7 % at μ = 1e-12 and by 2e-4 at μ = 1e-11 with a δ of
1.3e-15, and raised OverflowError for a shift of 1e200 standard deviations.
"""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_bayes.privacy._core._pld import (
    _DELTA_MARGIN,
    analytic_gaussian_delta,
    gaussian_hockey_stick,
    ops_ridge_delta,
    ops_ridge_epsilon,
)

#: the stated tolerance: the returned δ is in [δ, δ (1 + TOL)]
TOL = 1.01e-9
#: below this the reference is not compared (a double δ underflows near 1e-308)
TINY = mp.mpf("1e-300")


def _reference(m1, s1, m2, s2, eps, extra_digits=0):
    """``sup_S P(S) - e^ε Q(S)`` with 50 correct digits (inputs are exact mpf or floats)."""
    dps = 50 + extra_digits
    while True:
        with mp.workdps(dps):
            m1_, s1_, m2_, s2_, e_ = map(mp.mpf, (m1, s1, m2, s2, eps))
            A = 1 / (2 * s2_**2) - 1 / (2 * s1_**2)
            B = m1_ / s1_**2 - m2_ / s2_**2
            C = m2_**2 / (2 * s2_**2) - m1_**2 / (2 * s1_**2) + mp.log(s2_ / s1_) - e_
            clip = lambda z: min(max(z, mp.mpf(-1e9)), mp.mpf(1e9))  # noqa: E731  (beyond: 0 or 1 exactly enough)

            def mass(m, s, a, b):
                za = clip((a - m) / s) if a != -mp.inf else -mp.inf
                zb = clip((b - m) / s) if b != mp.inf else mp.inf
                return mp.ncdf(-za) - mp.ncdf(-zb) if za > 0 else mp.ncdf(zb) - mp.ncdf(za)

            if A == 0:
                if B == 0:
                    return mp.mpf(0)
                S = [(-C / B, mp.inf)] if B > 0 else [(-mp.inf, -C / B)]
            else:
                disc = B * B - 4 * A * C
                if disc <= 0:
                    return mp.mpf(0)
                r1, r2 = sorted([(-B - mp.sqrt(disc)) / (2 * A), (-B + mp.sqrt(disc)) / (2 * A)])
                S = [(-mp.inf, r1), (r2, mp.inf)] if A > 0 else [(r1, r2)]
            p = sum(mass(m1_, s1_, a, b) for a, b in S)
            d = p - mp.e**e_ * sum(mass(m2_, s2_, a, b) for a, b in S)
            if d <= 0:
                lost = dps  # all digits cancelled: more precision, unless P(S) itself is below 1e-300
                if p < TINY or dps > 1500:
                    return mp.mpf(0)
            else:
                lost = int(mp.log10(p / d)) + 1 if p > d else 0
            if dps - lost >= 50 + extra_digits:
                return d
            dps = lost + 60 + extra_digits


def _ops_reference(eps, mu, c, direction):
    """The exact pair of (μ, c) -- ``N(0, 1)`` and ``N(c/(1+μ), 1/(1+μ))`` -- without rounding 1 + μ."""
    extra = max(0, int(-math.log10(mu))) + 5 if mu > 0 else 0
    with mp.workdps(60 + extra):
        mu_, c_ = mp.mpf(mu), mp.mpf(c)
        m2, s2 = c_ / (1 + mu_), 1 / mp.sqrt(1 + mu_)
        pair = (0, 1, m2, s2) if direction == "remove" else (m2, s2, 0, 1)
        return _reference(*pair, eps, extra_digits=extra)


def _check(got, ref, where):
    assert 0.0 <= got <= 1.0, where
    if ref < TINY:
        assert got <= 1e-290, (where, got, ref)  # a δ below 1e-300 may round to 0 but is never made large
        return
    # never below the exact value; within the stated tolerance above it (1 bounds δ: the cap)
    assert mp.mpf(got) >= ref, (where, got, ref)
    assert mp.mpf(got) <= ref * (1 + TOL) or got == 1.0, (where, got, ref, float((got - ref) / ref))


# --------------------------------------------------------------- the accountant's pair (ops_ridge_delta)

@pytest.mark.parametrize("mu", [1e-12, 1e-11, 1e-10])
def test_ops_ridge_delta_never_understates_at_a_tiny_leverage(mu):
    """μ <= 1e-10, ε <= 1e-8: the variances 1 and 1/(1+μ) agree to 10 digits and the closed form
    lost them (7 % under at μ = 1e-12, c = 1e-11, ε = 1e-9; 2e-4 under at μ = c = 1e-11, ε = 1e-10)."""
    for c in (1e-12, 1e-11, 1e-10, 3e-10, 1e-9, 3e-9, 1e-8):
        for eps in (0.0, 1e-12, 1e-10, 1e-9, 1e-8):
            for direction in ("remove", "add"):
                got = ops_ridge_delta(eps, mu, c, direction)
                _check(got, _ops_reference(eps, mu, c, direction), (mu, c, eps, direction))


@pytest.mark.parametrize("mu", [1e-300, 1e-30, 1e-15, 3e-15, 1e-13, 1e-8, 1e-3, 0.1, 1.0, 10.0, 1e3, 1e6, 1e12])
def test_ops_ridge_delta_is_exact_and_conservative_over_the_grid(mu):
    """Leverages from 1e-300 to 1e12, residuals from 0 to 1e4, ε from 0 to 1e3, both directions."""
    for c in (0.0, 1e-300, 1e-16, 1e-10, 1e-6, 1e-3, 0.1, 1.0, 3.0, 10.0, 100.0, 1e4):
        for eps in (0.0, 1e-300, 1e-16, 1e-10, 1e-8, 1e-6, 1e-3, 0.1, 1.0, 10.0, 100.0, 1e3):
            for direction in ("remove", "add"):
                got = ops_ridge_delta(eps, mu, c, direction)
                _check(got, _ops_reference(eps, mu, c, direction), (mu, c, eps, direction))


def test_ops_ridge_epsilon_certifies_its_delta_with_the_exact_value():
    """The caller that inverts δ(ε): at the ε it returns, the exact δ (not only the computed one) is <= target."""
    for mu, c in ((1e-11, 1e-10), (1e-10, 3e-9), (0.01, 0.2), (1e-12, 0.0)):
        for target in (1e-6, 1e-11):
            eps = ops_ridge_epsilon(target, mu, c)
            assert _ops_reference(eps, mu, c, "remove") <= target
            assert _ops_reference(eps, mu, c, "add") <= target


# --------------------------------------------------------------- the generic function and the Gaussian mechanism

_SHIFTS = (0.0, 1e-300, 1e-15, 1e-10, 1e-5, 0.01, 1.0, 5.0, 30.0, 1e4)
_RATIOS = (1.0, 1.0 + 2**-52, 1.0 - 1e-12, 1.0 + 1e-10, 1.0 - 1e-6, 0.5, 2.0, 1e3)
_EPSILONS = (0.0, 1e-300, 1e-12, 1e-8, 1e-4, 0.1, 1.0, 10.0, 1e3)


@pytest.mark.parametrize("ratio", _RATIOS)
def test_gaussian_hockey_stick_is_exact_and_conservative_over_the_grid(ratio):
    """Equal and unequal variances (ratios 1 ± 1 ulp to 1e3), shifts from 0 to 1e4 sd, ε from 0 to 1e3,
    at a location and scale far from (0, 1)."""
    m1, s1 = -26.5, 0.008
    for shift in _SHIFTS:
        for eps in _EPSILONS:
            for sign in (1.0, -1.0):
                m2, s2 = m1 + sign * shift * s1, s1 * ratio
                _check(gaussian_hockey_stick(m1, s1, m2, s2, eps), _reference(m1, s1, m2, s2, eps),
                       (shift * sign, ratio, eps))


def test_equal_variances_and_a_tiny_shift_is_not_rounded_to_zero():
    """The old equal-variance branch returned 0 here (the exact δ is 4.25e-11)."""
    m1, s1, m2, s2 = -26.554476445276062, 0.008039507339098745, -26.55447644527692, 0.008039507339098745
    ref = _reference(m1, s1, m2, s2, 0.0)
    assert ref > 4e-11
    _check(gaussian_hockey_stick(m1, s1, m2, s2, 0.0), ref, "tiny shift")


@pytest.mark.parametrize("sigma", [1e-300, 1e-10, 0.1, 1.0, 7.0, 1e3, 1e10, 1e100, 1e300])
def test_analytic_gaussian_delta_is_exact_and_conservative(sigma):
    """The equal-variance path of the Gaussian mechanism (it understated δ by up to 2e-13 before)."""
    for eps in _EPSILONS:
        _check(analytic_gaussian_delta(sigma, eps), _reference(1.0, sigma, 0.0, sigma, eps), (sigma, eps))


def test_a_huge_shift_is_one_not_an_overflow_and_bad_scales_are_named():
    """A shift of 1e200 sd gave OverflowError (and 0 in a first rewrite); δ is 1 to rounding."""
    assert gaussian_hockey_stick(0.0, 1.0, 1e200, 1.0, 1.0) == 1.0
    assert gaussian_hockey_stick(0.0, 1.0, 1e160, 2.0, 1.0) == 1.0
    assert ops_ridge_delta(1.0, 0.1, 1e200) == 1.0
    for s1, s2, name in ((0.0, 1.0, "s1"), (1.0, -1.0, "s2"), (math.nan, 1.0, "s1"), (1.0, math.inf, "s2")):
        with pytest.raises(ValueError, match=name):
            gaussian_hockey_stick(0.0, s1, 0.0, s2, 1.0)


def test_the_margin_is_the_documented_one():
    assert _DELTA_MARGIN == 1e-9 and TOL > _DELTA_MARGIN


# --------------------------------------------------------------- property test

_finite = dict(allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    m1=st.floats(-50.0, 50.0, **_finite),
    log_s1=st.floats(-3.0, 3.0, **_finite),
    log_shift=st.floats(-15.0, 2.0, **_finite),
    shift_sign=st.sampled_from([-1.0, 1.0]),
    log_dv=st.floats(-15.0, 0.5, **_finite),
    dv_kind=st.sampled_from([-1.0, 0.0, 1.0]),
    eps=st.one_of(st.just(0.0), st.floats(1e-12, 1e3, **_finite)),
)
def test_property_never_below_the_50_digit_value_and_within_tolerance(m1, log_s1, log_shift, shift_sign, log_dv,
                                                                         dv_kind, eps):
    s1 = 10.0**log_s1
    m2 = m1 + shift_sign * 10.0**log_shift * s1
    s2 = s1 * (1.0 + dv_kind * min(10.0**log_dv, 0.9))
    got = gaussian_hockey_stick(m1, s1, m2, s2, eps)
    _check(got, _reference(m1, s1, m2, s2, eps), (m1, s1, m2, s2, eps))


def test_property_rounding_up_cannot_hide_in_numpy_scalars():
    """numpy float64 inputs take the same path (no overflow warnings turned into a wrong 0)."""
    a = gaussian_hockey_stick(np.float64(0.0), np.float64(1.0), np.float64(1e-6), np.float64(1.0 + 1e-10), 1e-8)
    b = gaussian_hockey_stick(0.0, 1.0, 1e-6, 1.0 + 1e-10, 1e-8)
    assert a == b > 0


def test_the_inverting_callers_certify_their_target_with_the_exact_value():
    """analytic_gaussian_sigma and ops_ridge_max_c invert the (now conservative) δ: at the σ and the c they
    return, the 50-digit δ is at most the target."""
    from sklearn_bayes.privacy._core._pld import analytic_gaussian_sigma, ops_ridge_max_c

    for eps, target in ((0.5, 5e-7), (1e-3, 1e-10), (2.0, 1e-12), (0.0, 1e-6)):
        sigma = analytic_gaussian_sigma(eps, target)
        assert _reference(1.0, sigma, 0.0, sigma, eps) <= target
    for eps, target, mu in ((1.0, 1e-6, 0.01), (0.1, 1e-10, 1e-11), (3.0, 1e-8, 1e-3)):
        c = ops_ridge_max_c(eps, target, mu)
        assert c is not None and c > 0
        assert max(_ops_reference(eps, mu, c, d) for d in ("remove", "add")) <= target
