"""Review HNR, F2: ``conf_int(alpha=0.95)`` silently gave a 5 % interval (the other convention's value,
``credible_interval(level=0.95)``).  Each interval method now warns for the swapped value, at the caller's
line, and returns the same numbers as before; its default does not warn."""

import warnings

import numpy as np
import pytest

from sklearn_bayes import (
    ClosedFormRidge,
    MixtureMEstimatorRegressor,
    SubsampledPriorLogisticRegression,
    SubsampledPriorPoissonRegressor,
    SubsampledPriorRidge,
)
from sklearn_bayes.privacy import AdaOPSRegressor
from sklearn_bayes.utils._intervals import warn_if_swapped_coverage


def _xy(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 3))
    return X, X @ [0.5, -0.3, 0.2] + 0.3 * rng.standard_normal(n)


def _fitted():
    X, y = _xy()
    rng = np.random.default_rng(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ada = AdaOPSRegressor(epsilon=1.0, x_bound=2.0, y_bound=2.0, random_state=0).fit(*_xy(20000))
        return {
            "SubsampledPriorRidge": (SubsampledPriorRidge(random_state=0).fit(X, y), {}),
            "SubsampledPriorLogisticRegression": (
                SubsampledPriorLogisticRegression(random_state=0).fit(X, (y > 0).astype(int)), {}),
            "SubsampledPriorPoissonRegressor": (
                SubsampledPriorPoissonRegressor(random_state=0).fit(X, rng.poisson(np.exp(0.3 * X[:, 0]))), {}),
            "ClosedFormRidge": (ClosedFormRidge().fit(X, y), {}),
            "MixtureMEstimatorRegressor": (MixtureMEstimatorRegressor(random_state=0).fit(X, y), {}),
            "AdaOPSRegressor": (ada, {}),
        }


FITTED = None


def _get(name):
    global FITTED
    if FITTED is None:
        FITTED = _fitted()
    return FITTED[name][0]


def _calls(name):
    est = _get(name)
    X, y = _xy()
    calls = [("conf_int", lambda a: est.conf_int(a), lambda: est.conf_int())]
    if name == "MixtureMEstimatorRegressor":
        calls.append(("bootstrap_conf_int", lambda a: est.bootstrap_conf_int(X, y, alpha=a, n_boot=5, random_state=0),
                      lambda: est.bootstrap_conf_int(X, y, n_boot=5, random_state=0)))
        pytest.importorskip("pandas")
        calls.append(("summary", lambda a: est.summary(alpha=a).coefficients.to_numpy(dtype=float),
                      lambda: est.summary().coefficients.to_numpy(dtype=float)))
    return calls


NAMES = ["SubsampledPriorRidge", "SubsampledPriorLogisticRegression", "SubsampledPriorPoissonRegressor",
         "ClosedFormRidge", "MixtureMEstimatorRegressor", "AdaOPSRegressor"]


@pytest.mark.parametrize("name", NAMES)
def test_a_swapped_alpha_warns_at_the_callers_line_and_the_default_does_not(name):
    for method, swapped, default in _calls(name):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            narrow = swapped(0.95)
        mine = [w for w in caught if "alpha=0.95 gives a 5 % interval" in str(w.message)]
        assert len(mine) == 1, (method, [str(w.message) for w in caught])
        assert issubclass(mine[0].category, UserWarning) and mine[0].filename == __file__, method
        assert "pass alpha=0.05" in str(mine[0].message)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the default call and alpha=0.05 are silent
            wide = default()
            assert np.array_equal(swapped(0.05), wide, equal_nan=True), method
            swapped(0.5)  # a 50 % interval is a choice, not a swap
        if method == "conf_int":  # the result itself is unchanged: the narrow 5 % interval
            assert np.all(narrow[..., 1] - narrow[..., 0] <= wide[..., 1] - wide[..., 0] + 1e-12)


def test_the_helper_reads_both_conventions():
    def message(value, name):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warned = warn_if_swapped_coverage(value, name)
        assert warned == bool(caught)
        return str(caught[0].message) if caught else None

    assert message(0.95, "alpha") == ("alpha=0.95 gives a 5 % interval (alpha is one minus the coverage); "
                                      "for a 95 % interval pass alpha=0.05.")
    assert message(0.05, "level") == ("level=0.05 gives a 5 % interval (level is the coverage); "
                                      "for a 95 % interval pass level=0.95.")
    assert message(0.1, "confidence") == ("confidence=0.1 gives a 10 % interval (confidence is the coverage); "
                                          "for a 90 % interval pass confidence=0.9.")
    for value, name in [(0.05, "alpha"), (0.5, "alpha"), (0.5, "level"), (0.95, "level"), (0.99, "confidence"),
                        (1.5, "alpha"), (0.0, "level"), (True, "alpha"), ("0.95", "alpha"), (None, "alpha"),
                        (float("nan"), "alpha")]:
        assert message(value, name) is None, (value, name)
    assert message(np.float32(0.9), "alpha").startswith("alpha=0.9 gives a 10 % interval")


def test_an_invalid_alpha_is_still_refused_without_the_warning():
    est = _get("ClosedFormRidge")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="alpha"):
            est.conf_int(1.5)
