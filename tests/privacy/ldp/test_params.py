"""privacy/_ldp/_params.py: the frozen parameters, their notion of sameness and the count bound."""

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp._params import FROZEN_PARAMS, MAX_RETURNED_CELLS, check_count, same_value


def _fitted(**params):
    X = np.random.default_rng(0).choice(4, size=60).reshape(-1, 1)
    kw = dict(n_categories=4, n_final_steps=0, random_state=np.random.default_rng(1))
    return AdaptiveLDPFrequencyEstimator(**{**kw, **params}).fit(X)


@pytest.mark.parametrize("a, b, same", [
    (1, 1.0, True), ("rrrr", "rrrr", True), ("1", 1, False), (None, None, True), (0.5, 0.25, False),
    (np.random.default_rng(0), np.random.default_rng(0), False),  # generators: the same object only
])
def test_same_value(a, b, same):
    assert same_value(a, b) is same
    f = len
    assert same_value(f, f) and not same_value(lambda: 0, lambda: 0)


def test_check_count():
    assert check_count(np.int64(3), "n", 10, "masks") == 3
    for bad in (0, -1, 2.0, True, "3"):
        with pytest.raises(ValueError, match=r"^n must be an integer >= 1"):
            check_count(bad, "n", 10, "masks")
    assert check_count(MAX_RETURNED_CELLS // 8, "n", 8, "masks") == MAX_RETURNED_CELLS // 8
    with pytest.raises(ValueError, match=r"at most 16777216 at n_categories=8\)\. Ask in several calls\.$"):
        check_count(MAX_RETURNED_CELLS // 8 + 1, "n", 8, "masks")


def test_recorded_in_the_order_of_frozen_params_with_a_copied_prior():
    prior = [1.0, 2.0, 3.0, 4.0]
    est = _fitted(mechanism="rrrr", prior=prior)
    assert tuple(est._fitted_params) == FROZEN_PARAMS
    prior[0] = 9.0  # the user's list changes: the recorded prior does not
    np.testing.assert_array_equal(est._fitted_params["prior"], [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match=r"^prior was array\(\[1\., 2\., 3\., 4\.\]\) when this"):
        est.propose_subset()


def test_first_changed_parameter_is_named_with_both_values():
    est = _fitted(mechanism="rrrr", prior=1.0)
    est.set_params(kappa=0.5, epsilon=2.0)  # both changed: epsilon comes first in FROZEN_PARAMS
    msg = ("epsilon was 1.0 when this AdaptiveLDPFrequencyEstimator was fitted and is now 2.0 (set_params or "
           "assignment after fitting). The recorded responses and the posterior were built with epsilon=1.0: "
           "continuing with 2.0 would mix the two. Set epsilon back to 1.0, or call fit to restart.")
    with pytest.raises(ValueError) as info:
        est.propose_subset()
    assert str(info.value) == msg
    est.set_params(epsilon=1)  # 1 == 1.0: the same value
    with pytest.raises(ValueError, match=r"^kappa was 0\.9 "):
        est.propose_subset()
    est.set_params(kappa=0.9)
    est.propose_subset()


def test_priors_are_compared_as_vectors():
    est = _fitted(mechanism="rrrr", prior=2.0)
    est.set_params(prior=[2.0] * 4)
    est.propose_subset()  # the same prior as a vector
    est.set_params(prior=np.full(4, 2.0))
    est.propose_subset()
    est.set_params(prior=[2.0, 2.0, 2.0, 1.0])
    with pytest.raises(ValueError, match=r"^prior was 2\.0 when this"):
        est.propose_subset()
    est.set_params(prior="hierarchical")
    with pytest.raises(ValueError, match=r"^prior was 2\.0 when this .* is now 'hierarchical'"):
        est.propose_subset()


def test_compute_knobs_are_not_frozen():
    est = _fitted(mechanism="rrrr", prior=1.0)
    est.set_params(n_steps=3, batch_size=7, sampler="gibbs", final_estimate="sgld")
    est.partial_fit(np.array([[0], [1], [2]]))
    assert est.n_responses_ == 63


def test_theta_revalidates_only_changed_parameters():
    # theta_ skips the parameter validation when every parameter is the object fit validated
    # (issue 28 round 6), and validates again when one was set since: a bad knob still raises
    est = AdaptiveLDPFrequencyEstimator(n_categories=4, epsilon=1.0, random_state=np.random.default_rng(0))
    est.fit(np.array([[0], [1], [2]] * 20))
    calls = []
    original = est._validate_params
    est._validate_params = lambda: (calls.append(1), original())[1]
    est.theta_
    assert calls == []
    est.set_params(point_estimate="mean")
    est.theta_
    assert calls == [1]
    est.set_params(point_estimate="bad")
    with pytest.raises(ValueError, match="point_estimate"):
        est.theta_
    est.set_params(n_final_steps=-1, point_estimate="tv")
    with pytest.raises(ValueError, match="n_final_steps"):
        est.theta_


def test_frozen_message_does_not_offer_fit_once_a_client_was_handed_out():
    """``fit`` restarts the stream but not the devices: after ``client_mechanism()`` the message offers a new
    estimator instead (a refit with the new epsilon would then refuse the handed-out client's responses)."""
    from sklearn_bayes import AdaptiveLDPFrequencyEstimator

    est = AdaptiveLDPFrequencyEstimator(n_categories=8, epsilon=1.0)
    client = est.client_mechanism()
    est.partial_fit_responses(client.privatize([0, 1, 2]))
    est.set_params(epsilon=2.0)
    with pytest.raises(ValueError, match=r"^epsilon was 1\.0 when this .*or start a new estimator \(sklearn\.base\.clone\)"):
        est.partial_fit_responses(client.privatize([3]))
    est.set_params(epsilon=1.0)
    assert est.partial_fit_responses(client.privatize([3])).n_responses_ == 4
