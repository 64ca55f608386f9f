"""Review HNR's two findings in the local-DP estimator (F2 swapped interval convention, F5 int-seed message)."""

import copy
import warnings

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.exceptions import SeededNoiseWarning


def _fitted(seed=0):
    X = np.random.default_rng(1).integers(0, 5, size=(300, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        return AdaptiveLDPFrequencyEstimator(n_categories=5, epsilon=1.0, random_state=seed).fit(X)


def test_credible_interval_warns_for_the_other_conventions_value():
    est = _fitted()
    with pytest.warns(UserWarning, match=r"level=0\.05 gives a 5 % interval"):
        narrow = est.credible_interval(level=0.05, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        wide = est.credible_interval(random_state=0)  # the default 0.95 is silent
        est.credible_interval(level=0.5, random_state=0)  # exactly one half does not warn
    # the result is unchanged by the warning: a 5 % interval, inside the 95 % one
    assert np.all(narrow[:, 1] - narrow[:, 0] < wide[:, 1] - wide[:, 0])


def test_a_repeated_int_seed_is_named_as_such_not_as_a_copied_generator():
    X = np.random.default_rng(2).integers(0, 6, size=(300, 1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        AdaptiveLDPFrequencyEstimator(n_categories=6, random_state=12345).fit(X)
        AdaptiveLDPFrequencyEstimator(n_categories=6, random_state=12345).fit(X)
    replays = [str(w.message) for w in caught if "already drew privacy noise" in str(w.message)]
    assert len(replays) == 1
    assert "random_state=12345, an int seed" in replays[0] and "Generator" not in replays[0]


def test_a_copied_generator_keeps_the_copy_message():
    X = np.random.default_rng(3).integers(0, 6, size=(300, 1))
    g = np.random.default_rng(np.random.SeedSequence(2**100 + 7))
    g_copy = copy.deepcopy(g)  # the same state: its noise replays g's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        AdaptiveLDPFrequencyEstimator(n_categories=6, random_state=g).fit(X)
        AdaptiveLDPFrequencyEstimator(n_categories=6, random_state=g_copy).fit(X)
    replays = [str(w.message) for w in caught if "already drew privacy noise" in str(w.message)]
    assert replays and all("Generator random_state" in r and "it is a copy" in r for r in replays)
