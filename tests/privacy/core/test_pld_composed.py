"""The composed OPS accountant is never below the exact δ and within its discretisation of it.

``ops_ridge_composed_delta(ε, μ, c, g, interval)`` composes one ridge-posterior draw (the pair
``P = N(0, 1)``, ``Q = N(c/(1+μ), 1/(1+μ))`` of :func:`_ops_pair`) with a Gaussian mechanism of
ratio ``g`` through dp-accounting's pessimistic privacy-loss distributions.  The reference here is
independent of dp-accounting and of the closed forms in ``_pld.py``: with the draw's loss
``L(t) = log p/q`` and the Gaussian's loss ``N(g²/2, g²)`` under the first law,

.. math::  δ(ε) = \\int φ(t)\\, \\big[Φ(-a/g + g/2) - e^{a} Φ(-a/g - g/2)\\big]_{a = ε - L(t)}\\, dt

(the inner bracket is the exact expectation of ``(1 - e^{a - L_G})_+``; ``(1 - e^a)_+`` at
``g = 0``), by mpmath quadrature at 20 digits, split at the roots of ``L(t) = ε``; both directions,
the larger one.  Every loss is rounded up by less than ``interval`` in each of the two
distributions, and the tails dp-accounting truncates (mass <= 1e-15 in total here) count as an
infinite loss.  dp-accounting's pessimistic Gaussian distribution also carries a little more
than unit mass (rounding in its construction: 1 + 4.5e-10 at ``g = 5``, interval 1e-3; 1 + 7e-12
at AdaOPS's ``g``), which can only raise δ, by at most that excess.  So
``δ(ε) <= composed(ε) <= δ(ε - 2 interval) + excess + 1e-15``; without the excess the upper bound
fails by up to 4.3e-10 where δ is within 1e-6 of 1 (``c = 10``, ``g >= 2``, the last cell).

Measured (session HQQ, 2 686 grid cells μ 1e-6..1, c 0..10, g 0..5, ε 0..10, interval 1e-3 and
1e-2, 30 digits): never below the exact δ where the exact δ is representable (> 1e-300; the 17
cells below it have an exact δ under 1e-438 and a composed 0.0); where δ < 0.5 the composed δ is at
least 1.4e-4 (interval 1e-3) and 1.4e-3 (1e-2) relatively above it; at the
calibrated ``c`` of AdaOPS's released-norm accounting (24 points) the composed δ is 0.3 % to 3.8 %
above it.
"""

import math

import mpmath as mp
import pytest

from sklearn_bayes.privacy._core._pld import _gaussian_pld, ops_ridge_composed_delta, ops_ridge_delta


def _direction(m1, s1, m2, s2, g, eps):
    """``E_P[(1 - e^{ε - L_draw - L_G})_+]`` for ``P = N(m1, s1²)``, ``Q = N(m2, s2²)``."""
    def L(t):
        x = m1 + s1 * t
        return -(x - m1) ** 2 / (2 * s1**2) + (x - m2) ** 2 / (2 * s2**2) + mp.log(s2 / s1)

    def inner(a):
        if g == 0:
            return 1 - mp.e**a if a < 0 else mp.mpf(0)
        return mp.ncdf(-a / g + g / 2) - mp.e**a * mp.ncdf(-a / g - g / 2)

    # L(t) - ε = a2 t² + b1 t + c0 exactly (a quadratic): its roots are the kinks at g = 0
    a2 = (L(1) + L(-1)) / 2 - L(0)
    b1 = (L(1) - L(-1)) / 2
    c0 = L(0) - eps
    pts = {mp.mpf(k) for k in (-40, -20, -10, -6, -3, 0, 3, 6, 10, 20, 40)}
    if a2 != 0:
        disc = b1 * b1 - 4 * a2 * c0
        roots = [(-b1 - mp.sqrt(disc)) / (2 * a2), (-b1 + mp.sqrt(disc)) / (2 * a2)] if disc > 0 else []
    else:
        roots = [-c0 / b1] if b1 != 0 else []
    pts.update(r for r in roots if abs(r) < 1e6)
    return mp.quad(lambda t: mp.npdf(t) * inner(eps - L(t)), [-mp.inf] + sorted(pts) + [mp.inf])


def exact_composed_delta(eps, mu, c, g):
    """The exact δ(ε) of the draw composed with the Gaussian of ratio ``g``, both directions (20 digits)."""
    with mp.workdps(20):
        mu, c, g, eps = map(mp.mpf, (mu, c, g, eps))
        m2, s2 = c / (1 + mu), 1 / mp.sqrt(1 + mu)
        return max(_direction(0, 1, m2, s2, g, eps), _direction(m2, s2, 0, 1, g, eps))


def test_reference_is_the_closed_form_without_the_gaussian():
    """The quadrature reproduces the exact closed form (``ops_ridge_delta``, 1e-9 above it by design)."""
    for eps, mu, c in [(0.5, 0.01, 0.05), (1.0, 0.1, 2.0), (5.0, 1.0, 3.0)]:
        ref = exact_composed_delta(eps, mu, c, 0.0)
        assert abs(ops_ridge_delta(eps, mu, c) / ref - 1 - 1e-9) < 1e-12


# (ε, μ, c, g, interval): a modest grid across leverage, shift, Gaussian ratio and ε, with both
# discretisations, plus the operating points of AdaOPS's released-norm accounting (ε_ar, the
# leverage 1/h on its grid, the calibrated c, mu_gauss) at (ε, δ) = (1, 1e-5), (4, 1e-6), (8, 1e-8)
CELLS = [
    (0.0, 0.01, 0.5, 1.0, 1e-3),
    (0.5, 1e-6, 1.0, 0.5, 1e-3),
    (1.0, 0.1, 2.0, 1.0, 1e-3),
    (2.0, 1.0, 5.0, 2.0, 1e-2),
    (5.0, 1e-4, 10.0, 5.0, 1e-2),
    (10.0, 0.01, 2.0, 5.0, 1e-2),
    (0.1, 1.0, 0.1, 0.1, 1e-2),
    (0.5, 0.0078125, 0.10128115559403317, 0.06573689617648595, 1e-3),
    (2.0, 0.03125, 0.2913953036376561, 0.20331014192918218, 1e-3),
    (4.0, 0.03125, 0.4794379174727758, 0.31965592192587733, 1e-3),
    (2.0, 1e-4, 10.0, 5.0, 1e-3),
]


def _excess_mass(g, interval):
    """Total mass minus 1 of dp-accounting's pessimistic Gaussian distribution (remove = add)."""
    if g == 0:
        return 0.0
    pmf = _gaussian_pld(g, interval)._pmf_remove
    probs = pmf._probs if hasattr(pmf, "_probs") else list(pmf._loss_probs.values())
    return max(math.fsum(probs) + pmf._infinity_mass - 1.0, 0.0)


@pytest.mark.parametrize("eps, mu, c, g, interval", CELLS)
def test_composed_delta_is_between_the_exact_delta_and_its_discretisation_bound(eps, mu, c, g, interval):
    composed = ops_ridge_composed_delta(eps, mu, c, g, interval)
    exact = exact_composed_delta(eps, mu, c, g)
    loose = exact_composed_delta(eps - 2 * interval, mu, c, g)
    assert composed >= exact, (composed, exact)  # never below: the privacy guarantee
    # and not more than its discretisation and the Gaussian distribution's excess mass allow
    assert composed <= loose + _excess_mass(g, interval) + 1e-15, (composed, loose)
