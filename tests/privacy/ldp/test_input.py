"""Input validation of AdaptiveLDPFrequencyEstimator (issue 26, item 5 of the issue / item 4 of the brief).

Masked arrays are refused by name (their masked entries would be read as data), a flat
list of one position per response is refused as ambiguous, and no message quotes a data
value (the true categories of simulation mode are the private data).
"""

import pickle
import warnings

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.utils import SeededNoiseWarning

SECRET = 987654


def _est(**kw):
    kw.setdefault("n_categories", 4)
    kw.setdefault("mechanism", "rrrr")
    kw.setdefault("n_final_steps", 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        return AdaptiveLDPFrequencyEstimator(random_state=np.random.default_rng(0), **kw)


def _fitted(**kw):
    est = _est(**kw)
    if est.mechanism == "rrrr":
        est.partial_fit_responses([0, 1, 2], [[0], [1], []])
    else:
        est.partial_fit_responses(est.client_mechanism().privatize([0, 1, 2], np.random.default_rng(1)))
    return est


def test_masked_responses_are_refused_naming_y():
    """Regression: np.asarray dropped the mask, so the masked entry (here 3) was recorded as a response."""
    est = _fitted()
    before = pickle.dumps(est)
    y = np.ma.array([1, 3, 2], mask=[False, True, False])
    with pytest.raises(TypeError, match=r"^y is a masked array"):
        est.partial_fit_responses(y, [[0], [1], [2]])
    assert pickle.dumps(est) == before


def test_masked_subsets_are_refused_naming_subsets():
    est = _fitted()
    before = pickle.dumps(est)
    masks = np.ma.array(np.eye(4, dtype=bool)[:2], mask=[[False] * 4, [True] + [False] * 3])
    with pytest.raises(TypeError, match=r"^subsets is a masked array"):
        est.partial_fit_responses([0, 1], masks)
    with pytest.raises(TypeError, match=r"^subsets is a masked array"):
        est.partial_fit_responses([0, 1], [np.ma.array([0, 1], mask=[False, True]), [2]])
    assert pickle.dumps(est) == before


@pytest.mark.parametrize("mechanism", ["grr", "subset_selection", "oue"])
def test_masked_static_responses_are_refused(mechanism):
    est = _fitted(mechanism=mechanism, n_categories=8)
    before = pickle.dumps(est)
    masks = est.client_mechanism().privatize([0, 1], np.random.default_rng(2))
    with pytest.raises(TypeError, match=r"^y is a masked array"):
        est.partial_fit_responses(np.ma.array(masks, mask=np.zeros_like(masks)))
    assert pickle.dumps(est) == before


def test_masked_true_categories_are_refused_naming_x():
    est = _est()
    with pytest.raises(TypeError, match=r"^X is a masked array"):
        est.fit(np.ma.array([[0], [1], [SECRET]], mask=[[False], [False], [True]]))
    assert not hasattr(est, "n_responses_")


def test_flat_list_of_one_position_per_response_is_ambiguous():
    """Regression: subsets=[1, 2] with 2 responses was read as the one set {1, 2} for both."""
    est = _fitted()
    before = pickle.dumps(est)
    with pytest.raises(ValueError, match=r"^subsets is a flat list of 2 category positions for 2 responses"):
        est.partial_fit_responses([0, 3], [1, 2])
    with pytest.raises(ValueError, match=r"^subsets is a flat list"):
        est.partial_fit_responses([0, 3], np.array([1, 2]))
    assert pickle.dumps(est) == before
    # the unambiguous spellings
    a = _fitted().partial_fit_responses([0, 3], [[1], [2]], update="defer")
    b = _fitted().partial_fit_responses([0, 3], [[1, 2], [1, 2]], update="defer")
    np.testing.assert_array_equal(a._chain.store.responses()[1][-2:], np.eye(4, dtype=bool)[[1, 2]])
    np.testing.assert_array_equal(b._chain.store.responses()[1][-2:], [[False, True, True, False]] * 2)
    # a flat list of another length is one subset for all (as documented), and one response is not ambiguous
    c = _fitted().partial_fit_responses([0, 3, 1], [1, 2], update="defer")
    np.testing.assert_array_equal(c._chain.store.responses()[1][-3:], [[False, True, True, False]] * 3)
    d = _fitted().partial_fit_responses([3], [1], update="defer")
    np.testing.assert_array_equal(d._chain.store.responses()[1][-1], [False, True, False, False])


@pytest.mark.parametrize("bad", [5, "01", 1.5])
def test_subsets_that_are_not_sequences_are_refused_by_name(bad):
    est = _fitted()
    with pytest.raises((TypeError, ValueError), match=r"^subsets"):
        est.partial_fit_responses([0, 1], bad)


def test_generator_arguments_are_named():
    est = _fitted()
    with pytest.raises(TypeError, match=r"^y must be an array-like.*generator"):
        est.partial_fit_responses((v for v in [0, 1]), [[0], [1]])
    with pytest.raises(TypeError, match=r"^subsets must be an array-like.*generator"):
        est.partial_fit_responses([0, 1], (s for s in [[0], [1]]))
    with pytest.raises(TypeError, match=r"^X must be an array-like.*generator"):
        _est().fit(([v] for v in [0, 1]))


@pytest.mark.parametrize("X", [
    np.array([[0], [1], [SECRET]]),
    np.array([[0.0], [1.0], [SECRET + 0.5]]),
    np.array([[0], [1], [-SECRET]]),
])
def test_messages_never_quote_a_true_category(X):
    """Regression: 'X holds categories outside the known ones (4 categories): [987654]' printed the
    user's true category; the message now says how many and where."""
    est = _est()
    with pytest.raises(ValueError, match=r"^X holds .*first at row 2") as info:
        est.fit(X)
    assert str(SECRET) not in str(info.value)


def test_response_messages_never_quote_a_value():
    est = _fitted()
    with pytest.raises(ValueError, match=r"^y holds categories outside \[0, 4\): 1 value, first at row 1") as info:
        est.partial_fit_responses([0, SECRET], [[0], [1]])
    assert str(SECRET) not in str(info.value)
    with pytest.raises(ValueError, match=r"^subsets\[1\] holds categories outside") as info:
        est.partial_fit_responses([0, 1], [[0], [SECRET]])
    assert str(SECRET) not in str(info.value)
    grr = _fitted(mechanism="grr")
    with pytest.raises(ValueError, match=r"^y holds categories outside") as info:
        grr.partial_fit_responses([0, SECRET])
    assert str(SECRET) not in str(info.value)
    with pytest.raises(ValueError, match=r"^x must hold") as info:
        grr.client_mechanism().privatize([SECRET])
    assert str(SECRET) not in str(info.value)


def test_pandas_na_in_true_categories_is_named():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame({"a": pd.array(["x", None, "y", "z"], dtype="string")})
    with pytest.raises(ValueError, match=r"^X contains missing values"):
        _est(n_categories=None, categories=["x", "y", "z"]).fit(X)
    X = pd.DataFrame({"a": pd.array([0, None, 2, 3], dtype="Int64")})
    with pytest.raises(ValueError, match=r"^X contains missing values"):
        _est().fit(X)


def test_a_list_of_python_sets_is_one_subset_per_response():
    """Attack found: [{1}, {2}] (sets have ndim 0 for numpy) was taken for a flat list of positions."""
    est = _fitted().partial_fit_responses([0, 3], [{1}, {2, 3}], update="defer")
    np.testing.assert_array_equal(est._chain.store.responses()[1][-2:], [[False, True, False, False],
                                                                  [False, False, True, True]])
    est = _fitted().partial_fit_responses([0, 3, 1], {1, 2}, update="defer")  # one set for all
    np.testing.assert_array_equal(est._chain.store.responses()[1][-3:], [[False, True, True, False]] * 3)


def test_encode_positions_of_zero_to_k_minus_one_are_the_values():
    # categories 0..K-1 (round 6: no search) give what the searched labels give, errors included
    from sklearn_bayes.privacy._ldp._input import encode

    col = np.array([3, 0, 9, 4, 4, 1], dtype=np.int64)
    np.testing.assert_array_equal(encode(col, np.arange(10)), col.astype(np.int32))
    assert encode(col, np.arange(10)).dtype == np.int32
    np.testing.assert_array_equal(encode(col.astype(float), np.arange(10)), col)
    np.testing.assert_array_equal(encode(col, np.array([0, 1, 3, 4, 9])), [2, 0, 4, 3, 3, 1])  # searched
    for bad, where in ((np.array([1, 10, 2, -1]), "2 values, first at row 1"), (np.array([0, 5, 12]), "2 values")):
        with pytest.raises(ValueError, match=f"outside the known ones \\(5 categories\\): {where}"):
            encode(bad, np.arange(5))
        with pytest.raises(ValueError, match=f"outside the known ones \\(5 categories\\): {where}"):
            encode(bad, np.arange(5.0))  # float labels: the searched path, the same message
