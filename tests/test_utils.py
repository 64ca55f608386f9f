"""Shared validation helpers and estimator discovery."""

import threading
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator

import sklearn_bayes
from sklearn_bayes.exceptions import SeededNoiseWarning
from sklearn_bayes.utils import all_estimators, check_epsilon, check_privacy_random_state
from sklearn_bayes.utils._transaction import serialized, transactional


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


def test_check_epsilon_takes_an_exact_number_that_is_a_float_and_refuses_one_that_would_be_rounded():
    """HQN: a ``Fraction`` equal to a float is that float; one that no float equals is refused rather than rounded
    to the nearest float, which may be above it (float(Fraction(1, 10)) > 1/10: a larger budget than asked)."""
    from decimal import Decimal
    from fractions import Fraction

    assert check_epsilon(Fraction(1, 2)) == 0.5 and type(check_epsilon(Fraction(1, 2))) is float
    assert check_epsilon(Fraction(3, 1024)) == 3 / 1024
    assert Fraction(float(Fraction(1, 10))) > Fraction(1, 10)  # (the rounding this refuses)
    for inexact in (Fraction(1, 10), Fraction(1, 3)):
        with pytest.raises(ValueError, match=r"eps_total=Fraction\(1, \d+\) is not exactly a float"):
            check_epsilon(inexact, name="eps_total")
    with pytest.raises(ValueError, match="must be finite and > 0"):
        check_epsilon(Fraction(-1, 2))
    with pytest.raises(TypeError, match="epsilon must be a real number"):
        check_epsilon(Decimal("0.5"))  # not a numbers.Real (Python's choice): refused as before


def test_real_interval_accepts_exact_floats_only_and_never_raises_numpys_error():
    from decimal import Decimal
    from fractions import Fraction

    from sklearn_bayes.utils import RealInterval

    c = RealInterval(0, 1, closed="right")
    assert c.is_satisfied_by(Fraction(1, 2)) and c.is_satisfied_by(Fraction(1, 1))
    # (numpy's "ufunc 'isnan' not supported" was raised for every Fraction)
    assert not c.is_satisfied_by(Fraction(1, 10)) and not c.is_satisfied_by(Fraction(3, 2))
    assert not c.is_satisfied_by(Fraction(0, 1)) and not c.is_satisfied_by(Decimal("0.5"))
    assert "exactly" in str(c)



@pytest.mark.parametrize("huge", [10**400, "fraction"])
def test_numbers_beyond_the_largest_float_are_refused_not_overflowed(huge):
    """An int or Fraction beyond the largest float raised a bare OverflowError from check_epsilon and from
    RealInterval (found re-reading HQN's change): both now refuse it as not finite."""
    from fractions import Fraction

    from sklearn_bayes.utils import RealInterval

    value = Fraction(10**400, 3) if huge == "fraction" else huge
    with pytest.raises(ValueError, match="epsilon must be finite and > 0"):
        check_epsilon(value)
    assert not RealInterval(0, None, closed="neither").is_satisfied_by(value)


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


class _Drawer:
    """An object with a generator, a failing transactional draw and a serialized draw."""

    def __init__(self, gen, other=None):
        self.rng, self.other, self.n = gen, other, 0

    @transactional
    def draw_then_fail(self):
        self.n += 1
        self.rng.random(3)
        if self.other is not None:
            self.other.released.append(self.other.draw())  # another object draws and releases meanwhile
        raise ValueError("refused")

    @serialized
    def draw(self):
        return self.rng.random(3)


class _Peer(_Drawer):
    def __init__(self, gen):
        super().__init__(gen)
        self.released = []


def test_transactional_rewinds_a_generator_only_it_used():
    gen = np.random.default_rng(0)
    a = _Drawer(gen)
    state = gen.bit_generator.state
    with pytest.raises(ValueError):
        a.draw_then_fail()
    assert gen.bit_generator.state == state and a.n == 0


def test_transactional_never_rewinds_noise_another_object_drew_from_the_same_generator():
    gen = np.random.default_rng(0)
    b = _Peer(gen)
    a = _Drawer(gen, other=b)
    with pytest.raises(ValueError):
        a.draw_then_fail()
    assert a.n == 0
    a.draw()  # after a rewind, a's retry would draw again what it drew before b ...
    assert not np.array_equal(b.draw(), b.released[0])  # ... and b's next draw would replay its release


def test_transactional_does_not_rewind_while_another_object_is_drawing():
    gen = np.random.default_rng(0)
    a = _Drawer(gen)
    started, finish = threading.Event(), threading.Event()

    class _Slow(_Drawer):
        @serialized
        def draw(self):
            out = self.rng.random(3)
            started.set()
            finish.wait(10)
            return out

    b = _Slow(gen)
    t = threading.Thread(target=b.draw)
    t.start()
    started.wait(10)
    state = gen.bit_generator.state
    with pytest.raises(ValueError):
        a.draw_then_fail()  # b is still running a call on gen: no rewind
    finish.set()
    t.join()
    assert gen.bit_generator.state != state
    assert not _transaction_registry_leaks()


def _transaction_registry_leaks():
    from sklearn_bayes.utils import _transaction

    return bool(_transaction._GENERATOR_CALLS)
