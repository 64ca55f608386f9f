"""Shared validation helpers and estimator discovery."""

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator

import sklearn_bayes
from sklearn_bayes.exceptions import SeededNoiseWarning
from sklearn_bayes.utils import all_estimators, check_epsilon, check_privacy_random_state


@pytest.mark.parametrize("good", [1e-6, 0.5, 1, 10.0, np.float32(2.0), np.int64(3)])
def test_check_epsilon_accepts_positive_finite(good):
    assert check_epsilon(good) == float(good)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), -np.inf])
def test_check_epsilon_rejects_values(bad):
    with pytest.raises(ValueError, match="eps_total must be finite and > 0"):
        check_epsilon(bad, name="eps_total")


@pytest.mark.parametrize("bad", ["1", None, True, [1.0], 1 + 2j])
def test_check_epsilon_rejects_types(bad):
    with pytest.raises(TypeError, match="epsilon must be a real number"):
        check_epsilon(bad)


def test_privacy_random_state():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rng = check_privacy_random_state(None)
        assert isinstance(rng, np.random.Generator)
        gen = np.random.default_rng()  # unseeded: a seeded one may already have drawn noise in this process
        assert check_privacy_random_state(gen) is gen
    with pytest.warns(SeededNoiseWarning, match="testing only"):
        a = check_privacy_random_state(7).random(3)
    with pytest.warns(SeededNoiseWarning):
        b = check_privacy_random_state(7).random(3)
    np.testing.assert_array_equal(a, b)
    legacy = check_privacy_random_state(np.random.RandomState(0))
    assert isinstance(legacy, np.random.Generator)
    with pytest.raises(TypeError, match="random_state"):
        check_privacy_random_state("seed")


def test_all_estimators_finds_exported_estimator_classes():
    found = dict(all_estimators())
    for name in sklearn_bayes.__all__:
        obj = getattr(sklearn_bayes, name)
        is_est = isinstance(obj, type) and issubclass(obj, BaseEstimator)
        assert (name in found) == is_est
    assert list(found) == sorted(found)


def test_seeded_noise_warning_points_at_the_callers_line():
    from sklearn_bayes import AdaptiveLDPFrequencyEstimator, PrivateCountSketch

    for make in (lambda: PrivateCountSketch(width=16, random_state=0).fit([1, 2, 3]),
                 lambda: AdaptiveLDPFrequencyEstimator(n_categories=3, random_state=0).fit([[0], [1], [2]])):
        with pytest.warns(SeededNoiseWarning) as record:
            make()
        assert {w.filename for w in record if w.category is SeededNoiseWarning} == {__file__}


@pytest.mark.parametrize("name", ["PrivateCountSketch", "AdaptiveLDPFrequencyEstimator", "OnePosteriorSampleRidge",
                                  "AdaOPSRegressor", "DPSGLDLogisticRegression"])
def test_a_boolean_privacy_budget_is_refused(name):
    from sklearn.utils._param_validation import InvalidParameterError

    est = dict(all_estimators())[name](epsilon=True)
    X = np.array([[0.1], [0.2], [0.3], [0.4]])
    with pytest.raises(InvalidParameterError, match="epsilon.*not a bool"):
        est.fit(X, np.array([0, 1, 0, 1]))


def _replay_warnings(record):
    return [w for w in record if w.category is SeededNoiseWarning and "already drew" in str(w.message)]


@pytest.mark.parametrize("kind", ["Generator", "RandomState"])
def test_privacy_random_state_warns_when_a_copied_generator_replays_noise(kind):
    """clone/deepcopy/pickle copy a generator with its state: a copy's noise replays the original's."""
    import copy

    class Owner:
        pass

    def make(seed=12345):
        return np.random.default_rng(seed) if kind == "Generator" else np.random.RandomState(seed)

    a, b = Owner(), Owner()
    gen = make()
    twin = copy.deepcopy(gen)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        check_privacy_random_state(gen, owner="A", instance=a)
        check_privacy_random_state(gen, owner="A", instance=a)  # the state moved on (RandomState) or is
    first = _replay_warnings(record)                              # unchanged but asked by its owner again
    assert first == []
    with pytest.warns(SeededNoiseWarning, match="already drew privacy noise"):
        check_privacy_random_state(twin, owner="B", instance=b)  # same state, another object
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        check_privacy_random_state(make(None), owner="C", instance=Owner())  # fresh entropy
        check_privacy_random_state(None, owner="C", instance=Owner())
    assert _replay_warnings(record) == []
