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
@pytest.mark.parametrize("noise", ["discrete_laplace", "laplace"])
@pytest.mark.parametrize("epsilon", [1e300, 1100.0 * 2])
def test_a_huge_epsilon_is_refused_naming_epsilon_and_binds_nothing(mechanism, noise, epsilon):
    # (2200: the first release's scale 1/(2200 (1 - decay)) = 1/1100, below 2**-10 for every mechanism)
    # review HQU F4: below the scale 2**-10 the exact sampler's int64 tail cut made the noise exactly 0,
    # so the counts were released unchanged while epsilon_spent_ said epsilon; now the fit refuses
    sketch = PrivateCountSketch(width=64, depth=1, epsilon=epsilon, mechanism=mechanism, noise=noise, hash_seed=0,
                                random_state=0)
    with pytest.raises(ValueError, match=r"epsilon=.* is too large .* below the smallest supported scale 2\*\*-10"):
        sketch.fit(np.arange(30) % 3)
    assert not any(k.endswith("_") for k in vars(sketch))
