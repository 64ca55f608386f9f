"""The dominated-row screen (``_dead_columns._dominated_candidates``) never hides a column the exact check refuses.

The screen estimates, from the fit's column units, the ratio of the other rows' sd to the column's sd, with an error
below ``sqrt(c n eps)`` (its docstring); columns whose estimate is above ``_SCREEN`` (1e-3, 1e4 times the refusal
level) skip the exact :func:`~sklearn_bayes._glm.dominated_columns`.  Checked here on random designs over the float
range with one row blown up by 1 to 1e14 (the refusal level 1e-7 sits in the middle), ties, dummies with one 1,
zero and unequal weights, with and without an intercept: the refused columns are the exact check's, every time.
"""

import numpy as np
import pytest

from tests._property_tools import dominated_design

from sklearn_bayes._glm import dominated_columns
from sklearn_bayes.linear_model._mixture import _dead_columns as dc
from sklearn_bayes.linear_model._mixture._units import column_units


def _design(rng):
    X, w = dominated_design(rng)
    w[rng.random(len(w)) < 0.2] = 0.0
    return X, w


@pytest.mark.parametrize("seed", range(4))
def test_screen_refuses_exactly_what_the_exact_check_refuses(seed):
    rng = np.random.default_rng(seed)
    checked = skipped = 0
    for _ in range(300):
        X, sw = _design(rng)
        pos = sw > 0
        if pos.sum() < 3:
            continue
        for fit_intercept in (True, False):
            units = column_units(X, sw, fit_intercept)
            far = units[3]
            exact = dominated_columns(X[pos], sw[pos])
            cand = dc._dominated_candidates(X[pos], sw[pos], units, fit_intercept)
            want = (exact < dc.DOMINATED_REFUSE) & ~far
            assert not np.any(want & ~cand), (X, sw, exact, cand)
            checked += 1
            skipped += int(np.sum(~cand & ~units[2] & ~far))
    assert checked > 400 and skipped > 100  # the screen is exercised, and it does skip columns


def test_a_dominated_column_is_still_refused():
    """A column with most rows tied (MAD 0: never *far*), small variation on the others and one row at 1e6: the
    other rows vary by ~5e-9 of its sd, below DOMINATED_REFUSE; the screen passes it on and the fit is refused."""
    from sklearn_bayes import MixtureMEstimatorRegressor
    from sklearn_bayes.linear_model._mixture._units import column_units

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 2))
    X[:, 1] = 0.0
    X[:30, 1] = 1e-3 * rng.normal(size=30)
    X[40, 1] = 1e6
    y = X[:, 0] + rng.normal(size=80)
    units = column_units(X, np.ones(80), True)
    assert not units[3][1] and dc._dominated_candidates(X, np.ones(80), units, True)[1]
    with pytest.raises(ValueError, match=r"^X: in column 1 one row holds nearly all the spread"):
        MixtureMEstimatorRegressor(random_state=0).fit(X, y)
