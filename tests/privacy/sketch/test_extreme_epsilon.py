"""Releases at extreme ``epsilon`` (task HQK, point 4).

Before the fix ``epsilon=5e-324`` (the smallest float) with a geometric schedule
(``median_perturbation``, ``use_and_forget``) raised a bare ``ZeroDivisionError`` from the
first-noise-scale check (``ε(1-η)`` underflows to 0) instead of the ``ValueError`` naming
``epsilon`` that every other too-small ε gets; now the scale is infinite and refused as such.
"""

import numpy as np
import pytest

from sklearn_bayes.privacy import PrivateCountSketch

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning")

MECHANISMS = ["use_and_keep", "use_and_forget", "median_perturbation", "cell_perturbation"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("epsilon", [5e-324, 1e-310, 1e-20])
@pytest.mark.parametrize("decay", [0.5, 0.999999])
def test_a_too_small_epsilon_is_refused_naming_epsilon_and_binds_nothing(mechanism, epsilon, decay):
    sketch = PrivateCountSketch(width=16, epsilon=epsilon, decay=decay, mechanism=mechanism, random_state=0)
    with pytest.raises(ValueError, match=r"epsilon=.* is too small"):
        sketch.fit(np.arange(30) % 3)
    assert not any(k.endswith("_") for k in vars(sketch))


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_huge_epsilon_releases_the_counts_and_charges_it(mechanism):
    sketch = PrivateCountSketch(width=64, epsilon=1e300, mechanism=mechanism, noise="discrete_laplace", hash_seed=0,
                                random_state=0).fit(np.arange(30) % 3)
    # the noise scale is d/ε ~ 1e-300: the discrete Laplace draw is 0 with probability 1 - O(1e-300)
    assert sketch.query([0, 1, 2]).tolist() == [10.0, 10.0, 10.0]
    assert np.isfinite(sketch.epsilon_spent_) and 0 < sketch.epsilon_spent_ <= 1e300
