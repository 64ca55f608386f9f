"""DP-SGLD's two floating-point edges of the privacy requirement (review HQT section 6; no issue).

1. The Poisson minibatch keeps a record when ``rng.random() < q``.  numpy's ``Generator.random``
   returns ``k 2^-53`` (k uniform on 0 .. 2^53 - 1), so the realised rate is ``ceil(q 2^53) 2^-53``:
   up to 2^-53 above a float ``q = 256/3000`` that the accountant was told.  The estimator now uses
   that realised rate everywhere (``sampling_rate_``).
2. The noise floor ``z L eta / q`` computed in floating point could round up to 2 ulp below the
   real product; ``noise_sd_`` is now >= it in exact rational arithmetic.

Every check here is exact (integers, ``fractions.Fraction``): no tolerance is involved.
"""

import math
from fractions import Fraction

import numpy as np
import pytest

from sklearn_bayes.privacy import DPSGLDLogisticRegression
from sklearn_bayes.privacy._linear._dpsgld import privacy_noise_floor, realised_sampling_rate
from tests.privacy.linear._data import logistic_labels

pytest.importorskip("dp_accounting")

TWO53 = 2**53


def test_the_generator_draws_multiples_of_two_to_the_minus_53():
    """The premise of the realised rate: ``random()`` is ``k 2^-53`` (if numpy changes this, revisit)."""
    u = np.random.default_rng(0).random(200_000)
    k = u * TWO53
    np.testing.assert_array_equal(k, np.floor(k))
    assert k.max() < TWO53


@pytest.mark.parametrize("batch, n", [(256, 3000), (1, 7), (100, 1000), (256, 300), (3, 3), (5, 2), (1, 10**9)])
def test_the_rate_is_the_probability_the_comparison_realises(batch, n):
    q = realised_sampling_rate(batch, n)
    # P(k 2^-53 < q) over k uniform on 0 .. 2^53 - 1 is #{k < q 2^53} / 2^53 = ceil(q 2^53) / 2^53
    count = min(TWO53, math.ceil(Fraction(q) * TWO53))
    assert Fraction(count, TWO53) == Fraction(q)
    # the nearest multiple of 2^-53 at or above the float rate: never below it, less than 2^-53 above
    q_float = min(1.0, batch / n)
    assert Fraction(q_float) <= Fraction(q) < Fraction(q_float) + Fraction(1, TWO53)


def test_the_old_rate_was_not_realised():
    """256/3000 in float is not a multiple of 2^-53: the comparison kept records slightly more often."""
    q_float = 256 / 3000
    assert Fraction(q_float) * TWO53 != math.ceil(Fraction(q_float) * TWO53)
    assert realised_sampling_rate(256, 3000) > q_float


def test_the_noise_floor_is_exact_and_the_smallest_such_float():
    rng = np.random.default_rng(1)
    went_down = 0
    for _ in range(3000):
        z, L, eta, q = np.exp(rng.uniform(-3, 3)), np.exp(rng.uniform(-2, 2)), np.exp(rng.uniform(-14, -2)), 0.0
        q = realised_sampling_rate(int(rng.integers(1, 500)), int(rng.integers(500, 10**6)))
        z, L, eta = float(z), float(L), float(eta)
        exact = Fraction(z) * Fraction(L) * Fraction(eta) / Fraction(q)
        s = privacy_noise_floor(z, L, eta, q)
        assert Fraction(s) >= exact
        assert Fraction(math.nextafter(s, 0.0)) < exact
        went_down += Fraction(z * L * eta / q) < exact
    # the float product rounds below the real one often: the case the exact floor exists for
    assert went_down > 300


@pytest.mark.parametrize("step_size", ["langevin", "tempered"])
def test_the_fit_releases_at_the_realised_rate_with_the_exact_floor(step_size):
    X, y = logistic_labels(3000, 1)
    est = DPSGLDLogisticRegression(epsilon=0.5, n_iter=200, step_size=step_size, x_bound=4.0,
                                   random_state=np.random.default_rng(0)).fit(X, y)
    q = est.sampling_rate_
    assert q == realised_sampling_rate(256, 3000)
    assert Fraction(q) * TWO53 == math.ceil(Fraction(q) * TWO53)
    privacy_floor = Fraction(est.noise_multiplier_) * Fraction(est.step_size_) / Fraction(q)  # clip_norm 1
    assert Fraction(est.noise_sd_) >= privacy_floor
    assert f"q={q:.4g}" in est.ledger_.records[-1]["note"]
