"""Review HQV (MixtureMEstimatorRegressor): a gross target on the paper variant, a dominant sample weight,
a component class for an instance, X mismatches named as X."""

import warnings

import numpy as np
import pytest

from sklearn_bayes import MixtureMEstimatorRegressor


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, 1 + X @ [2, -1, 0.5] + rng.standard_t(3, size=n)


# ---------------------------------------------------------------- F3: one gross target under variant="paper"
@pytest.mark.parametrize("value", [1e120, 1e250, 1e300, -1e300, 1.7e308])
def test_paper_variant_ignores_one_gross_target(value):
    """Beyond R_CAP robust scales the capped residual gave the Cauchy law an IRLS weight 2 / (s^2 + R_CAP^2)
    ~ 1e-200 at the *uncapped* target: its pull w * y ~ 1e50 swamped the fit (coef 1e247, converged_ True).
    A row that far out has influence below 2 / R_CAP under every built-in law, so the clean fit is kept."""
    X, y = _data()
    clean = MixtureMEstimatorRegressor(random_state=0, variant="paper").fit(X, y)
    yg = y.copy()
    yg[0] = value
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        est = MixtureMEstimatorRegressor(random_state=0, variant="paper").fit(X, yg)
    # one row of 200 with zero influence instead of a t3 error: the fit moves by O(1 / n) of the noise scale
    assert np.abs(est.coef_ - clean.coef_).max() < 0.01
    assert abs(est.intercept_ - clean.intercept_) < 0.01
    assert np.all(np.isfinite(est.scales_)) and est.scales_.max() < 10
