"""Review HNR F3 (and F2): infinite bounds and swapped confidences of the sketch warn.

F3: ``lower_bound`` / ``upper_bound`` returned -inf / +inf for a first query set too small to
certify the error quantile (2 items at ``depth=5``, 95 %), with no word.  Now a ``UserWarning``
names the number of items that gives finite bounds (computed by ``_bounds.min_finite_items``, the
bound itself on a pool of that size), and the Returns sections say so.
F2: ``confidence=0.05`` (the other convention's value) silently gave a 5 % interval: it warns.
"""

import math
import warnings

import numpy as np
import pytest

from sklearn_bayes.privacy import PrivateCountSketch
from sklearn_bayes.privacy._sketch._bounds import min_finite_items

STREAM = np.arange(10_000) % 7


def _sketch(**kw):
    return PrivateCountSketch(**kw).fit(STREAM)


def test_two_items_warn_naming_the_fix_and_give_infinite_bounds():
    sk = _sketch()
    sk.query([1, 2])
    with pytest.warns(UserWarning, match=r"both ends are infinite for 2 item\(s\).*query at least 3 items"):
        lower = sk.lower_bound([1, 2])
    with pytest.warns(UserWarning, match="query at least 3 items"):
        upper = sk.upper_bound([1, 2])
    assert np.all(lower == -np.inf) and np.all(upper == np.inf)


def test_three_items_are_finite_and_silent():
    sk = _sketch()
    sk.query([1, 2, 3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lower, upper = sk.lower_bound([1, 2, 3]), sk.upper_bound([1, 2, 3])
    assert np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))


def test_a_small_set_after_a_large_one_borrows_and_is_silent():
    sk = _sketch()
    sk.query(np.arange(7))
    sk.query([1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isfinite(sk.lower_bound([1])).all()


def test_count_min_warns_for_its_lower_end_only():
    sk = _sketch(kind="count_min")
    sk.query([1])
    with pytest.warns(UserWarning, match=r"the lower end is infinite.*query at least 2 items"):
        assert sk.lower_bound([1])[0] == -np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isfinite(sk.upper_bound([1])[0])


def test_depth_one_names_the_depth():
    sk = _sketch(depth=1)
    sk.query(np.arange(7))
    with pytest.warns(UserWarning, match="depth >= 3"):
        assert sk.lower_bound([1])[0] == -np.inf


@pytest.mark.parametrize("depth", [3, 5, 7])
@pytest.mark.parametrize("kind", ["count", "count_min"])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_the_number_named_is_exactly_the_threshold_of_a_first_query_set(depth, kind, confidence):
    need = min_finite_items(depth, 1 - confidence, kind == "count")
    stream = np.arange(50_000) % 4000
    for n, finite in ((need - 1, False), (need, True)):
        if n == 0:
            continue
        sk = PrivateCountSketch(depth=depth, kind=kind).fit(stream)
        items = np.arange(n)
        sk.query(items)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lower = sk.lower_bound(items, confidence=confidence)
        assert bool(np.all(np.isfinite(lower))) == finite
        assert bool(caught) == (not finite)
        if not finite:
            assert f"query at least {need} items" in str(caught[0].message)


def test_the_threshold_at_the_defaults():
    assert min_finite_items(5, 0.05, True) == 3 and min_finite_items(5, 0.05, False) == 2
    assert min_finite_items(1, 0.05, True) is None
    assert math.isfinite(min_finite_items(4, 0.05, True))


# ------------------------------------------------------------------ F2: the swapped convention


def test_a_swapped_confidence_warns_and_the_default_does_not():
    sk = _sketch()
    items = np.arange(7)
    sk.query(items)
    for method in (sk.lower_bound, sk.upper_bound, sk.error_bound):
        with pytest.warns(UserWarning, match=r"confidence=0.05 gives a 5 % interval.*pass confidence=0.95"):
            method(items, confidence=0.05)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            method(items)
            method(items, confidence=0.5)
