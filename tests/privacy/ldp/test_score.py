"""``score`` / ``score_samples``: held-out log-likelihood of true categories (simulation model selection)."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, cross_val_score

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.exceptions import SeededNoiseWarning

P = np.array([0.4, 0.3, 0.15, 0.1, 0.05])


@pytest.fixture(autouse=True)
def _seeded_noise_is_for_tests():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        yield


def _users(n, seed, labels=None):
    x = np.random.default_rng(seed).choice(P.size, size=n, p=P)
    return (x if labels is None else np.asarray(labels)[x]).reshape(-1, 1)


def test_score_samples_is_log_theta_of_each_category_in_the_order_of_categories():
    labels = ["e", "c", "a", "d", "b"]  # public labels in a non-sorted order
    est = AdaptiveLDPFrequencyEstimator(categories=labels, random_state=3).fit(_users(800, 0, labels))
    X = np.array(labels).reshape(-1, 1)
    np.testing.assert_array_equal(est.score_samples(X), np.log(est.theta_))
    Xt = _users(50, 1, labels)
    pos = [labels.index(v) for v in Xt.ravel()]
    np.testing.assert_array_equal(est.score_samples(Xt), np.log(est.theta_)[pos])
    assert est.score(Xt) == np.mean(np.log(est.theta_)[pos])


def test_score_estimates_its_expectation_minus_cross_entropy():
    """score(X) on n users from p is a mean of i.i.d. ln theta_[x]: within 4 standard errors of
    sum_k p_k ln theta_k (the expected score, -H(p) - KL(p || theta_))."""
    est = AdaptiveLDPFrequencyEstimator(n_categories=P.size, epsilon=2.0, random_state=5).fit(_users(2000, 2))
    lt = np.log(est.theta_)
    expected = float(P @ lt)
    sd = np.sqrt(P @ (lt - expected) ** 2)
    n = 20000
    got = est.score(_users(n, 3))
    assert abs(got - expected) < 4 * sd / np.sqrt(n)
    # the truth scores best: a proper score's expectation is maximal at theta_ = p
    assert expected <= float(P @ np.log(P))


def test_score_ranks_an_informative_fit_above_a_near_uniform_one():
    """At eps 4 with 4000 users theta_ is near p; at eps 0.05 with 200 users it is near uniform
    (-> expected score near -ln 5 = -1.609 against -H(p) = -1.402): a gap of 0.2 nats, far above the
    held-out sample's standard error (about 0.01 at n = 10^4)."""
    Xt = _users(10_000, 9)
    good = AdaptiveLDPFrequencyEstimator(n_categories=5, epsilon=4.0, random_state=1).fit(_users(4000, 7))
    poor = AdaptiveLDPFrequencyEstimator(n_categories=5, epsilon=0.05, random_state=1).fit(_users(200, 8))
    assert good.score(Xt) > poor.score(Xt) + 0.05


def test_cross_val_score_and_grid_search_use_it():
    X = _users(600, 4)
    scores = cross_val_score(AdaptiveLDPFrequencyEstimator(n_categories=5, random_state=1), X, cv=3)
    assert scores.shape == (3,) and np.all(np.isfinite(scores)) and np.all(scores < 0)
    grid = GridSearchCV(AdaptiveLDPFrequencyEstimator(n_categories=5, random_state=1),
                        {"decoder": ["auto", "eb"]}, cv=3).fit(X)
    assert np.all(np.isfinite(grid.cv_results_["mean_test_score"]))


@pytest.mark.parametrize(
    "bad, match",
    [
        (np.empty((0, 1)), "X"),
        ([[7]], "X holds categories outside"),
        ([["a"]], "X must hold integer categories"),
        (np.zeros((3, 2)), "X has 2 features"),
    ],
)
def test_bad_X_is_refused_naming_it_and_changes_nothing(bad, match):
    est = AdaptiveLDPFrequencyEstimator(n_categories=5, random_state=2).fit(_users(300, 5))
    est.theta_  # noqa: B018 (cached on first read)
    before = pickle.dumps(est)
    for method in (est.score, est.score_samples):
        with pytest.raises(ValueError, match=match):
            method(bad)
    assert pickle.dumps(est) == before


def test_unfitted_refused():
    with pytest.raises(NotFittedError):
        AdaptiveLDPFrequencyEstimator(n_categories=5).score([[0]])
