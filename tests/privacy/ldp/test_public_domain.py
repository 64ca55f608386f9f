"""The category domain is public (review HLC): ``n_categories=K`` or ``categories=[labels]``; neither is refused,
``categories='from_data'`` reads the labels from ``X`` with a ``UserWarning`` (not private)."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.utils import SeededNoiseWarning

pytestmark = [pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning"),
              pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]

SECRET = 987654
K = 5


def _users(n=400, seed=0):
    return np.random.default_rng(seed).choice(K, size=n, p=[0.4, 0.25, 0.15, 0.12, 0.08]).reshape(-1, 1)


def _est(**kw):
    kw = {"epsilon": 1.0, "n_final_steps": 60, "random_state": np.random.default_rng(7), **kw}
    return AdaptiveLDPFrequencyEstimator(**kw)


@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_no_domain_is_refused_naming_both_and_changes_nothing(method):
    est = _est()
    before = pickle.dumps(est)
    X = np.vstack([_users(50), [[SECRET]]])
    with pytest.raises(ValueError, match=r"^n_categories and categories are both None: the category domain must be "
                                         r"public: pass n_categories=K .* categories='from_data' .*NOT private") as e:
        getattr(est, method)(X)
    assert str(SECRET) not in str(e.value)
    assert pickle.dumps(est) == before


def test_no_domain_is_refused_for_the_deployment_calls():
    with pytest.raises(ValueError, match=r"n_categories and categories are both None"):
        _est().client_mechanism()
    with pytest.raises(ValueError, match=r"n_categories or the labels of categories must be set"):
        _est(categories="from_data").client_mechanism()


def test_both_given_is_refused_naming_both():
    est = _est(n_categories=K, categories=list(range(K)))
    before = pickle.dumps(est)
    with pytest.raises(ValueError, match=r"^n_categories and categories are both set"):
        est.fit(_users())
    assert pickle.dumps(est) == before


def test_labels_0_to_k_minus_1_give_the_n_categories_fit_bit_for_bit():
    """categories=[0..K-1] in that order is n_categories=K: the same chain, the same theta_ and intervals; in
    another order (review HLR F3) the labels keep it, and the fit is n_categories=K on their positions."""
    X = _users()
    a = _est(n_categories=K).fit(X)
    s = _est(categories=list(range(K))).fit(X)
    np.testing.assert_array_equal(a.theta_, s.theta_)
    np.testing.assert_array_equal(a.credible_interval(0.9), s.credible_interval(0.9))
    order = [3, 1, 0, 4, 2]
    b = _est(categories=order).fit(X)
    assert b.categories_.tolist() == order and b.n_categories_ == K
    positions = np.argsort(order)[X[:, 0]].reshape(-1, 1)  # label v -> its index in the order given
    c = _est(n_categories=K).fit(positions)
    np.testing.assert_array_equal(c.theta_, b.theta_)
    np.testing.assert_array_equal(c.credible_interval(0.9), b.credible_interval(0.9))


def test_string_labels_are_positions_of_the_list_as_given():
    """Labels map to their positions in the list as given (review HLR F3; they were the sorted list's): the fit
    equals n_categories=K on those positions, sorted labels give the sorted fit, and a label no user holds is
    kept (the domain does not depend on the data)."""
    labels = np.array(["e", "a", "d", "b", "c"])
    X = _users()
    Xs = labels[X[:, 0]].reshape(-1, 1).astype(object)  # user with code j holds labels[j]
    a = _est(n_categories=K).fit(X)
    b = _est(categories=labels).fit(Xs)
    assert b.categories_.tolist() == ["e", "a", "d", "b", "c"]
    np.testing.assert_array_equal(a.theta_, b.theta_)
    srt = np.sort(labels)
    sorted_fit = _est(categories=srt).fit(srt[X[:, 0]].reshape(-1, 1).astype(object))
    np.testing.assert_array_equal(a.theta_, sorted_fit.theta_)
    c = _est(categories=[*labels, "zz"]).fit(Xs)
    assert c.n_categories_ == K + 1 and c.categories_[-1] == "zz"


def test_a_value_outside_the_labels_is_refused_without_quoting_it():
    est = _est(categories=[10, 20, 30]).fit(np.array([[10], [20], [30]] * 20))
    before = pickle.dumps(est)
    for bad in ([[SECRET]], [[10], [SECRET]]):
        with pytest.raises(ValueError, match=r"^X holds categories outside the known ones \(3 categories\)") as e:
            est.partial_fit(bad)
        assert str(SECRET) not in str(e.value)
        assert pickle.dumps(est) == before
    fresh = _est(categories=[10, 20, 30])
    before = pickle.dumps(fresh)
    with pytest.raises(ValueError, match=r"^X holds categories outside") as e:
        fresh.fit([[10], [SECRET]])
    assert str(SECRET) not in str(e.value) and pickle.dumps(fresh) == before


def test_composite_rows_need_from_data():
    with pytest.raises(ValueError, match=r"^X must have exactly one column of categories among the labels"):
        _est(categories=[0, 1]).fit(np.zeros((4, 2), dtype=int))


@pytest.mark.parametrize("bad, exc, pattern", [
    ([1], ValueError, r"^categories must hold at least 2 labels, got 1"),
    ([1, 2, 2], ValueError, r"^categories must hold distinct labels: 1 repeated"),
    ([1.0, float("nan")], ValueError, r"^categories must hold finite labels"),
    ([1.0, float("inf")], ValueError, r"^categories must hold finite labels"),
    ([1, "a"], TypeError, r"^categories mixes strings and numbers"),
    (["a", None], TypeError, r"^categories must hold real numbers or strings, got a NoneType"),
    ([1 + 2j, 3], TypeError, r"^categories must hold real numbers or strings, got a complex"),
    ([True, False], TypeError, r"^categories must hold real numbers or strings, got a bool"),
    ({1, 2, 3}, TypeError, r"^categories must be a list or 1-d array of labels, got set"),
    ("abc", ValueError, r"categories"),  # a string other than 'from_data': the parameter validation
])
def test_bad_labels_are_refused_naming_categories(bad, exc, pattern):
    est = _est(categories=bad)
    before = pickle.dumps(est)
    with pytest.raises(exc, match=pattern):
        est.fit(_users(20))
    assert pickle.dumps(est) == before


def test_from_data_warns_and_keeps_the_inference():
    X = _users()
    with pytest.warns(UserWarning, match=r"categories='from_data': the category domain must be public.*NOT private"):
        b = _est(categories="from_data").fit(X)
    a = _est(n_categories=K).fit(X)
    assert b.categories_.tolist() == list(range(K))
    np.testing.assert_array_equal(a.theta_, b.theta_)
    with warnings.catch_warnings():  # a later partial_fit reads no new labels: no warning
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", SeededNoiseWarning)
        b.partial_fit(X[:5])


def test_categories_are_frozen_after_fitting():
    labels = [10, 20, 30]
    est = _est(categories=labels).fit(np.array([[10], [20], [30]] * 20))
    est.set_params(categories=[10, 20, 30])  # equal labels, a new list: the same domain
    est.partial_fit([[10]])
    labels.append(40)  # the caller's list changes: recorded as a copy, so the change is seen
    est.categories = labels
    before = pickle.dumps(est)
    with pytest.raises(ValueError, match=r"^categories was \[10, 20, 30\] when this AdaptiveLDPFrequencyEstimator "
                                         r"was fitted"):
        est.partial_fit([[10]])
    assert pickle.dumps(est) == before
    est.fit(np.array([[10], [20], [30], [40]] * 5))  # fit restarts with the new labels
    assert est.n_categories_ == 4


def test_client_before_data_uses_the_labels():
    est = _est(categories=list("abcdefgh"), mechanism="grr")
    assert est.client_mechanism().n_categories == 8
    est.set_params(categories=list("abcdefg"))
    with pytest.raises(ValueError, match=r"^categories was \['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'\] when "
                                         r"client_mechanism\(\) handed out a client"):
        est.client_mechanism()


def test_clone_and_pickle_keep_the_labels():
    est = _est(categories=["x", "y"])
    assert clone(est).get_params()["categories"] == ["x", "y"]
    fitted = est.fit(np.array([["x"], ["y"]] * 10, dtype=object))
    again = pickle.loads(pickle.dumps(fitted))
    assert again.categories_.tolist() == ["x", "y"]
    np.testing.assert_array_equal(again.theta_, fitted.theta_)


def test_propose_subsets_before_data_with_labels():
    """Before any response the masks have one column per public label (was ``int(None)``: TypeError)."""
    masks = _est(categories=["a", "b", "c"], mechanism="rrrr").propose_subsets(4)
    codes = _est(n_categories=3, mechanism="rrrr").propose_subsets(4)
    assert masks.shape == (4, 3) and masks.dtype == bool
    np.testing.assert_array_equal(masks, codes)  # the labels' positions, as with n_categories=3


def test_an_empty_hub_keeps_its_own_labels_in_merge():
    """A hub with labels ['a', 'b'] refuses another estimator's ['x', 'y'] (it used to adopt them) and is left
    as it was; a hub with the same labels merges; only categories='from_data' adopts the other's."""
    other = _est(categories=["x", "y"]).fit(np.array([["x"], ["y"]] * 20, dtype=object))
    hub = _est(categories=["a", "b"])
    before = pickle.dumps(hub)
    with pytest.raises(ValueError, match="other categories"):
        hub.merge(other)
    assert pickle.dumps(hub) == before
    same = _est(categories=["x", "y"]).merge(other)
    assert same.categories_.tolist() == ["x", "y"] and same.n_responses_ == other.n_responses_
    adopted = _est(categories="from_data").merge(other)  # adopts other's released labels (no raw data read)
    assert adopted.categories_.tolist() == ["x", "y"]
