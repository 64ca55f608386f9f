"""``_glm.dominated_candidates`` is a superset of the columns whose exact ratio is below the level, and
``dominated_columns_below`` answers ``ratio < level`` exactly as ``dominated_columns`` does.

Random designs over the float range, one row blown up by 1 to 1e14 (the levels 1e-12, 1e-7 and 3e-3 of the three
callers sit inside that range), ties, dummies with one 1, zero and unequal weights; the estimate's error bound is
in the docstring of ``dominated_candidates``.
"""

import numpy as np
import pytest

from tests._property_tools import dominated_design

from sklearn_bayes._glm import dominated_candidates, dominated_columns, dominated_columns_below

EPS = np.finfo(float).eps


def _design(rng):
    X, w = dominated_design(rng)
    return X, w


@pytest.mark.parametrize("level", [1e-12, 1e-7, 3e-3])
@pytest.mark.parametrize("seed", range(3))
def test_screen_is_a_superset_and_the_answer_is_exact(level, seed):
    rng = np.random.default_rng(seed)
    below = skipped = 0
    for _ in range(300):
        X, w = _design(rng)
        exact = dominated_columns(X, w)
        cand = dominated_candidates(X, w, level)
        want = exact < level
        assert not np.any(want & ~cand), (X, w, exact, cand)
        fast = dominated_columns_below(X, w, level)
        np.testing.assert_array_equal(fast < level, want)
        # the candidates' values are the exact ones up to the rounding of the logs the ratio is formed in (a column
        # alone and a column of a wider array take other SIMD paths): 4 logs of magnitude <= 709, one ulp each
        np.testing.assert_allclose(fast[cand], exact[cand], rtol=4 * 709 * EPS + 2 * EPS)
        below += int(want.sum())
        skipped += int((~cand).sum())
    assert below > 0 and skipped > 100  # both branches are exercised
