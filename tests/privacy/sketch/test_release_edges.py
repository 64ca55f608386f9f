"""Edges of the geometric budget schedules (task HQH).

With a tiny ``decay`` the second query set of ``median_perturbation`` needs a noise scale beyond
``e^709``: before the fix ``math.exp`` raised a bare ``OverflowError`` (decay=5e-324) instead of
the documented "exhausted" ``ValueError``, and ``error_bound`` for a query that would be
refused raised ``OverflowError`` / "cannot convert float NaN to integer" / "scale must be finite
and > 0, got array(inf)" or returned ``inf`` (use_and_forget, decay=1e-300).  Now a query and an
error bar for it are refused alike, naming the exhausted schedule, and the sketch is unchanged.
"""

import pickle
import warnings

import numpy as np
import pytest

from sklearn_bayes.privacy import PrivateCountSketch

STREAM = np.arange(100) % 7


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded noise
        warnings.simplefilter("error", RuntimeWarning)  # an overflow in numpy is a failure here
        yield


@pytest.mark.parametrize("mechanism", ["median_perturbation", "use_and_forget"])
@pytest.mark.parametrize("decay", [5e-324, 1e-300, 1e-30])
def test_an_exhausted_schedule_refuses_the_query_and_its_error_bound(mechanism, decay):
    sketch = PrivateCountSketch(width=64, mechanism=mechanism, decay=decay, random_state=0).fit(STREAM)
    first = sketch.query([0, 1])
    assert np.all(np.isfinite(first))
    before = pickle.dumps(sketch)
    spent = sketch.ledger_.records
    for _ in range(2):
        with pytest.raises(ValueError, match="exhausted"):
            sketch.query([0, 1])
        with pytest.raises(ValueError, match="exhausted"):
            sketch.error_bound([0, 1], f2=10.0)
    assert pickle.dumps(sketch) == before and sketch.ledger_.records == spent
    assert sketch.epsilon_spent_ <= 1.0


@pytest.mark.parametrize("mechanism", ["median_perturbation", "use_and_forget"])
def test_the_error_bound_of_an_answerable_query_is_finite_at_every_decay(mechanism):
    """Away from exhaustion the bound stays finite (the refusal is not a blanket one)."""
    for decay in [1e-3, 0.5, 0.999]:
        sketch = PrivateCountSketch(width=64, mechanism=mechanism, decay=decay, random_state=0).fit(STREAM)
        kappa = sketch.error_bound([0, 1], f2=100.0)
        assert np.all(np.isfinite(kappa)) and np.all(kappa > 0)
        sketch.query([0, 1])
