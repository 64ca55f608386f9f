"""A user's and an attacker's review of ``decoder='eb-rescale'`` (task HQJ): below 64 categories, OUE, merges with an
``'eb'`` estimator, ``partial_fit`` streams, ``set_params`` after fit and pickles.  In each case ``theta_`` must be
exactly the NPMLE posterior means divided by their sum on the estimator's current support counts
(:func:`eb_estimate` with ``sum_to_one='rescale'``).  No bug found here."""

import pickle

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp._empirical_bayes import eb_estimate

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning")


def _X(K=10, n=300, seed=0):
    return np.random.default_rng(seed).integers(0, K, size=(n, 1))


def _rescaled(est):
    return eb_estimate(*est._support_counts(), sum_to_one="rescale")[0]


@pytest.mark.parametrize("mechanism", ["subset_selection", "oue"])
@pytest.mark.parametrize("K", [5, 10])
def test_below_64_categories_and_oue_theta_is_the_rescaled_estimate(mechanism, K):
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=1.0, mechanism=mechanism, decoder="eb-rescale",
                                        random_state=0).fit(_X(K))
    assert est.convergence_["method"] == "eb-rescale"
    np.testing.assert_array_equal(est.theta_, _rescaled(est))
    assert abs(est.theta_.sum() - 1.0) <= 8 * K * np.finfo(float).eps
    assert not np.array_equal(est.theta_, eb_estimate(*est._support_counts())[0])  # the tilt differs


def test_merge_with_an_eb_estimator_decodes_with_the_hubs_decoder():
    a = AdaptiveLDPFrequencyEstimator(n_categories=10, epsilon=1.0, decoder="eb-rescale", random_state=0).fit(_X())
    b = AdaptiveLDPFrequencyEstimator(n_categories=10, epsilon=1.0, decoder="eb", random_state=1).fit(_X(seed=1))
    theta_b = b.theta_.copy()
    a.merge(b)
    assert a.n_responses_ == 600 and a.convergence_["method"] == "eb-rescale"
    np.testing.assert_array_equal(a.theta_, _rescaled(a))
    np.testing.assert_array_equal(b.theta_, theta_b)  # other is not changed
    a.set_params(decoder="eb")
    np.testing.assert_array_equal(a.theta_, eb_estimate(*a._support_counts())[0])


def test_partial_fit_stream_and_a_rejected_batch():
    est = AdaptiveLDPFrequencyEstimator(n_categories=10, epsilon=1.0, decoder="eb-rescale", random_state=0)
    X = _X(n=400)
    for part in (X[:150], X[150:300]):
        est.partial_fit(part)
        np.testing.assert_array_equal(est.theta_, _rescaled(est))
    state = pickle.dumps(est)
    theta = est.theta_.copy()
    with pytest.raises(ValueError):
        est.partial_fit(np.full((5, 1), 10))  # category 10 of 10 (0-based): out of range
    assert est.n_responses_ == 300
    np.testing.assert_array_equal(est.theta_, theta)
    est.partial_fit(X[300:])
    np.testing.assert_array_equal(est.theta_, _rescaled(est))
    back = pickle.loads(state)
    np.testing.assert_array_equal(back.theta_, theta)


def test_set_params_rrrr_after_fit_is_refused_naming_decoder_and_undone_by_setting_it_back():
    est = AdaptiveLDPFrequencyEstimator(n_categories=10, epsilon=1.0, decoder="eb-rescale", random_state=0).fit(_X())
    theta = est.theta_.copy()
    est.set_params(mechanism="rrrr")
    with pytest.raises(ValueError, match="decoder='eb-rescale'"):
        est.theta_
    est.set_params(mechanism="auto")
    np.testing.assert_array_equal(est.theta_, theta)
