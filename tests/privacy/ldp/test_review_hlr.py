"""Review HLR's findings in the public-label paths of AdaptiveLDPFrequencyEstimator (fix round HLRF).

F1 deployment stores keep the labels; F2/F3b merge compares the domain (labels and order); F3 labels keep the
order given (positions, an array prior, ``encode_categories``); F4 pickles from before ``categories`` load; F5
``credible_interval`` diagnoses its draws; F6/F7 bad labels and non-label X values are refused naming the
argument; F8 ``categories`` is read once per call; F9 array labels are compared in C; F12 proposals freeze the
labels.  Each test fails on the code before the fix.
"""

import copy
import fractions
import pickle
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_bayes import AdaptiveLDPFrequencyEstimator

pytestmark = [pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning")]

SECRET = "s3cr3t-label"


def _est(**kw):
    kw = {"epsilon": 1.0, "n_final_steps": 60, "random_state": np.random.default_rng(7), **kw}
    return AdaptiveLDPFrequencyEstimator(**kw)


def _deployed(labels, seed, n=200, mechanism="grr"):
    """A deployment store: a client privatises the positions of ``labels`` (cycled), the store records them."""
    est = _est(categories=labels, mechanism=mechanism, random_state=np.random.default_rng(seed))
    client = est.client_mechanism()
    x = np.arange(n) % len(labels)  # the users' positions (encode_categories of labels[x])
    est.partial_fit_responses(client.privatize(x, np.random.default_rng(seed + 100)))
    return est


# ---------------------------------------------------------------- F3: the order given
def test_an_array_prior_follows_the_labels_in_the_order_given():
    """prior=[50, 1, 1] with categories=['c', 'a', 'b'] is meant for 'c' (it went to 'a', the first sorted label):
    the fit is the n_categories fit on the positions of the list as given, bit for bit."""
    X = np.array([["a"], ["b"], ["c"]] * 3, dtype=object)
    kw = dict(prior=[50.0, 1.0, 1.0], epsilon=0.5, decoder="posterior")
    est = _est(categories=["c", "a", "b"], **kw).fit(X)
    assert est.categories_.tolist() == ["c", "a", "b"]
    codes = _est(n_categories=3, **kw).fit(np.array([[1], [2], [0]] * 3))
    np.testing.assert_array_equal(est.theta_, codes.theta_)
    assert est.theta_.argmax() == 0 and dict(zip(est.categories_, est.theta_))["c"] > 0.5


def test_encode_categories_maps_labels_to_positions_of_the_order_given():
    est = _est(categories=["z", "x", "y"], mechanism="grr")
    np.testing.assert_array_equal(est.encode_categories(["x", "z", "y", "x"]), [1, 0, 2, 1])  # before any data
    assert est.encode_categories([]).shape == (0,)
    codes = _est(n_categories=4, mechanism="grr")
    np.testing.assert_array_equal(codes.encode_categories(np.array([3, 0])), [3, 0])
    fitted = _est(categories=[30, 10, 20]).fit([[10], [20], [30]] * 5)
    np.testing.assert_array_equal(fitted.encode_categories([20, 30]), [2, 0])
    assert fitted.categories_[fitted.encode_categories([10])[0]] == 10


@pytest.mark.parametrize("bad", [[SECRET], ["x", SECRET], ["x\x00"], [None], [1]])
def test_encode_categories_refuses_a_label_outside_without_quoting_it(bad):
    est = _est(categories=["z", "x", "y"], mechanism="grr")
    est.client_mechanism()
    before = pickle.dumps(est)
    with pytest.raises(ValueError, match=r"^labels ") as e:
        est.encode_categories(bad)
    assert SECRET not in str(e.value) and pickle.dumps(est) == before


def test_encode_categories_needs_a_public_domain_before_data():
    with pytest.raises(ValueError, match=r"categories must be set to encode labels before any data"):
        _est(categories="from_data").encode_categories([1])
    with pytest.raises(ValueError, match=r"^labels must be a 1-d"):
        _est(n_categories=3).encode_categories([[1]])


# ---------------------------------------------------------------- F1, F2, F3b: deployment and merge
def test_a_deployment_store_keeps_the_labels():
    """categories_ were the codes 0..K-1: transform by label was refused and theta_ could not be read by label."""
    store = _deployed(["d", "b", "a", "c"], 1)
    assert store.categories_.tolist() == ["d", "b", "a", "c"]
    np.testing.assert_array_equal(store.transform([["b"], ["d"]]).ravel(), store.theta_[[1, 0]])
    with pytest.raises(ValueError, match=r"^X holds categories outside the known ones"):
        store.transform([[1]])
    rrrr = _est(categories=["p", "q", "r"], mechanism="rrrr")
    rrrr.partial_fit_responses([0, 2], [[0], [1, 2]])
    assert rrrr.categories_.tolist() == ["p", "q", "r"]


def test_deployment_stores_merge_into_a_labelled_hub_and_a_simulation_store():
    labels = ["d", "b", "a", "c"]
    w1, w2 = _deployed(labels, 1), _deployed(labels, 2)
    hub = _est(categories=labels, mechanism="grr").merge(w1).merge(w2)
    assert hub.n_responses_ == 400 and hub.categories_.tolist() == labels
    sim = _est(categories=labels, mechanism="grr").fit(np.array(labels * 10, dtype=object).reshape(-1, 1))
    assert sim.merge(_deployed(labels, 3)).n_responses_ == 240


@pytest.mark.parametrize("other_labels", [list("wxyz"), [10, 20, 30, 40], list("cabd"), [0, 1, 2, 3]])
def test_stores_over_other_labels_of_the_same_size_are_refused(other_labels):
    """Two workers privatising different label sets (or the same labels in another order) merged silently."""
    mine, theirs = _deployed(list("dbac"), 1), _deployed(other_labels, 2)
    before, before_other = pickle.dumps(mine), pickle.dumps(theirs)
    with pytest.raises(ValueError, match=r"^other has other categories than this estimator \(4 and 4 labels, not "
                                         r"the same labels in the same order\)"):
        mine.merge(theirs)
    assert pickle.dumps(mine) == before and pickle.dumps(theirs) == before_other


def test_n_categories_is_the_domain_range_k():
    """n_categories=K and categories=[0..K-1] (in that order) are one domain: their stores merge either way."""
    X = np.array([[0], [1], [2], [3]] * 10)
    a = _est(n_categories=4, random_state=np.random.default_rng(1)).fit(X)
    b = _est(categories=[0, 1, 2, 3], random_state=np.random.default_rng(2)).fit(X)
    assert copy.deepcopy(a).merge(b).n_responses_ == 80
    assert copy.deepcopy(b).merge(a).n_responses_ == 80
    c = _est(categories=[1, 0, 2, 3], random_state=np.random.default_rng(3)).fit(X)
    with pytest.raises(ValueError, match=r"^other has other categories"):
        a.merge(c)


def test_a_from_data_store_never_has_its_labels_quoted_by_merge():
    other = _est(categories="from_data").fit(np.array([[SECRET], ["b"]] * 5, dtype=object))
    hub = _est(categories=["a", "b"]).fit(np.array([["a"], ["b"]] * 5, dtype=object))
    with pytest.raises(ValueError, match="other categories") as e:
        hub.merge(other)
    assert SECRET not in str(e.value)


# ---------------------------------------------------------------- F12: proposals freeze the labels
@pytest.mark.parametrize("propose", [lambda e: e.propose_subsets(3), lambda e: e.propose_subset()])
def test_proposed_subsets_freeze_the_labels(propose):
    est = _est(categories=list("abcde"), mechanism="rrrr")
    masks = np.atleast_2d(propose(est))
    est.set_params(categories=list("abcdef"))
    before = pickle.dumps(est)
    with pytest.raises(ValueError, match=r"^categories was \['a', 'b', 'c', 'd', 'e'\] when client_mechanism\(\) "
                                         r"handed out a client"):
        est.partial_fit_responses([0, 1, 2], [list(np.flatnonzero(m)) for m in np.resize(masks, (3, 5))])
    assert pickle.dumps(est) == before
    est.set_params(categories=list("abcde"))
    assert est.partial_fit_responses([0, 1, 2], [[0], [1], []]).n_responses_ == 3


# ---------------------------------------------------------------- F4: pickles from before ``categories``
def _old_pickle(est):
    """The state of ``est`` as a pickle made before af3c366 holds it: no ``categories``."""
    state = dict(est.__getstate__())
    del state["categories"]
    state["_fitted_params"] = {k: v for k, v in state["_fitted_params"].items() if k != "categories"}
    names = ("n_categories", "epsilon", "kappa", "utility", "alpha", "prior", "sampler", "n_steps", "batch_size",
             "step_size", "n_final_steps", "final_estimate", "random_state", "mechanism", "point_estimate", "decoder")
    state["_validated_params"] = tuple(state.get(n) for n in names)  # the old tuple had no categories
    return pickle.dumps((type(est), state))


def _load(blob):
    cls, state = pickle.loads(blob)
    est = cls.__new__(cls)
    est.__setstate__(state)
    return est


@pytest.mark.parametrize("n_categories", [None, 3])
def test_a_pickle_from_before_categories_loads_and_works(n_categories):
    X = np.array([[0], [1], [2]] * 20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        made = _est(n_categories=n_categories, categories="from_data" if n_categories is None else None).fit(X)
    old = _load(_old_pickle(made))
    assert old.categories == ("from_data" if n_categories is None else None)
    assert old.get_params()["categories"] == old.categories and "AdaptiveLDPFrequencyEstimator(" in repr(old)
    np.testing.assert_array_equal(old.theta_, made.theta_)
    hub = _est(n_categories=n_categories, categories="from_data" if n_categories is None else None)
    assert hub.merge(old).n_responses_ == 60
    assert old.partial_fit([[1]]).n_responses_ == 61


# ---------------------------------------------------------------- F5: credible_interval's own draws
def test_credible_interval_warns_when_its_draws_are_too_few():
    est = _est(n_categories=4, decoder="posterior", n_final_steps=2000).fit(np.array([[0], [1], [2], [3]] * 50))
    with pytest.warns(ConvergenceWarning, match=r"^The 8 posterior draws behind these credible intervals have an "
                                                r"effective sample size of [0-9.]+ \(want >= 100\)"):
        few = est.credible_interval(0.95, n_samples=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        np.testing.assert_array_equal(few, est.credible_interval(0.95, n_samples=8))  # intervals unchanged
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est.credible_interval(0.95)  # the default's 2000 draws pass


# ---------------------------------------------------------------- F6, F7: bad labels and values
@pytest.mark.parametrize("bad, exc, pattern", [
    (np.array("ab"), ValueError, r"^categories must be a 1-d list or array of labels, got an array of shape \(\)"),
    (np.array([["a", "b"], ["c", "d"]]), ValueError, r"^categories must be a 1-d list or array"),
    ([fractions.Fraction(1, 3), 1], TypeError, r"^categories must hold strings or numbers that fit a 64-bit"),
    ([2**70, 1], TypeError, r"^categories must hold strings or numbers that fit a 64-bit"),
    (range(10**12), ValueError, r"^categories must hold at most 2\^31 - 1 labels, got 1000000000000"),
    (["a\x00", "b"], ValueError, r"^categories holds a label ending in a NUL character"),
])
def test_odd_labels_are_refused_naming_categories(bad, exc, pattern):
    est = _est(categories=bad)
    before = pickle.dumps(est)
    with pytest.raises(exc, match=pattern):
        est.fit([[1], [2]])
    assert pickle.dumps(est) == before


@pytest.mark.parametrize("X, domain", [
    (np.array([["10"], [20]], dtype=object), dict(categories=[10, 20, 30])),
    (np.array([[True], [1]], dtype=object), dict(n_categories=3)),
    (np.array([["1"], [1]], dtype=object), dict(n_categories=3)),
    (np.array([[True], [False]]), dict(n_categories=3)),
])
def test_strings_and_booleans_are_not_integer_labels(X, domain):
    est = _est(**domain).fit(np.array([[list(domain.get("categories", [0, 1, 2]))[i]] for i in (0, 1, 2)] * 5))
    before = pickle.dumps(est)
    with pytest.raises(ValueError, match=r"^X holds (booleans|categories that are not numbers)"):
        est.partial_fit(X)
    assert pickle.dumps(est) == before


# ---------------------------------------------------------------- F8: one read per call
class _Shifting:
    """Labels that change every time they are read (another thread's set_params between two reads)."""

    def __init__(self):
        self.reads = 0

    def __len__(self):
        return 3 + self.reads

    def __iter__(self):
        self.reads += 1
        return iter([f"l{i}" for i in range(2 + self.reads)])


@pytest.mark.parametrize("call", ["fit", "partial_fit_responses"])
def test_categories_is_read_once_per_fitting_call(call):
    """The domain checked, the domain built and the labels recorded are one read of ``categories``."""
    est = _est(categories=_Shifting(), mechanism="grr")
    if call == "fit":
        est.fit(np.array([["l0"], ["l1"], ["l2"]] * 4, dtype=object))
    else:
        est.partial_fit_responses([0, 1, 2, 0])
    assert est.categories.reads == 1
    assert est.categories_.tolist() == ["l0", "l1", "l2"] == list(est._fitted_params["categories"])


# ---------------------------------------------------------------- F9: array labels
def test_array_labels_are_recorded_as_an_array_and_a_change_is_still_seen():
    labels = np.array([f"c{i}" for i in range(1000)])
    est = _est(categories=labels, mechanism="grr")
    est.partial_fit_responses(np.arange(1000) % 1000)
    assert isinstance(est._fitted_params["categories"], np.ndarray)
    est.partial_fit_responses([3])  # the same array: accepted
    labels[5] = "changed"  # the caller's array changes in place: recorded as a copy, so the change is seen
    before = pickle.dumps(est)
    with pytest.raises(ValueError, match=r"^categories was "):
        est.partial_fit_responses([3])
    assert pickle.dumps(est) == before
