"""Private linear models at extreme ``epsilon`` (task HQK, point 4).

Before the fix :class:`AdaOPSRegressor` (``calibration='ssp_posterior'``, the exact discrete
Gaussian on a grid) raised a bare ``ZeroDivisionError`` at ``epsilon=5e-324`` (the grid's
``ω_t = κ ε / M`` underflows to 0) and ``ValueError: cannot convert float NaN to integer`` at
``epsilon=1.7e308`` (``μ²`` overflows); now both are refused before any noise with the
messages of the too-small and too-large budgets, naming ``epsilon``; nothing is recorded.
"""

import numpy as np
import pytest

from sklearn_bayes.privacy import AdaOPSRegressor, DPSGLDLogisticRegression, OnePosteriorSampleRidge, PrivacyLedger

from ._data import bounded_regression

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning")


@pytest.mark.parametrize("epsilon, pattern", [
    (5e-324, r"epsilon=5e-324 with delta=.* is too small"),
    (1e-300, r"epsilon=1e-300 with delta=.* is too small"),
    (1e300, r"epsilon=1e\+300 is too large.*use epsilon <= "),
    (1.7e308, r"epsilon=1.7e\+308 is too large.*use epsilon <= "),
])
def test_adaops_refuses_an_extreme_epsilon_naming_it_and_records_nothing(epsilon, pattern):
    X, y = bounded_regression(n=200, d=2)
    ledger = PrivacyLedger()
    est = AdaOPSRegressor(epsilon=epsilon, x_bound=1.0, y_bound=1.0, ledger=ledger, random_state=0)
    with pytest.raises(ValueError, match=pattern):
        est.fit(X, y)
    assert ledger.n_releases == 0 and not hasattr(est, "coef_")


@pytest.mark.parametrize("model", [
    lambda e: OnePosteriorSampleRidge(epsilon=e, x_bound=1.0, y_bound=1.0, random_state=0),
    lambda e: DPSGLDLogisticRegression(epsilon=e, x_bound=1.0, n_iter=60, n_draws=20, random_state=0),
])
@pytest.mark.parametrize("epsilon", [5e-324, 1.7e308])
def test_ops_and_dpsgld_refuse_an_extreme_epsilon_naming_it(model, epsilon):
    X, y = bounded_regression(n=200, d=2)
    y = (y > 0).astype(int) if "DPSGLD" in type(model(1.0)).__name__ else y
    with pytest.raises(ValueError, match="epsilon"):
        model(epsilon).fit(X, y)
