"""Subsample sizes (linear_model/_subsampled_prior/_plan.py): the 'auto' rules and explicit sizes."""

import math

import numpy as np
import pytest

from sklearn_bayes.linear_model._subsampled_prior._plan import _rare_level_rows, _resolve_sizes

AUTO = dict(fraction=0.01, rows_per_param=2.0, min_subsamples=20)


def test_rare_level_rows_counts_the_rarest_level():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=1000), (np.arange(1000) < 50).astype(float)])
    # the dummy's ones are 5 % of the rows: 5 expected ones need ceil(5 / 0.05) = 100 rows
    assert _rare_level_rows(X) == 100
    # a rarer class (2 %) dominates
    labels = (np.arange(1000) < 20).astype(int)
    assert _rare_level_rows(X, labels) == math.ceil(5 / 0.02)
    assert _rare_level_rows(X, labels, count=10) == math.ceil(10 / 0.02)
    # constant columns have no level to see; no rows, no constraint
    assert _rare_level_rows(np.ones((10, 2))) == 0
    assert _rare_level_rows(np.empty((0, 3))) == 0


def test_auto_size_is_the_rule_of_thumb_within_its_caps():
    # n = max(0.01 N, 2 p, p + 1, min_rows); m = max(N / n, 20)
    assert _resolve_sizes(10000, 5, "auto", "auto", **AUTO) == (100, 100, False)
    assert _resolve_sizes(10000, 80, "auto", "auto", **AUTO) == (160, 63, False)
    assert _resolve_sizes(10000, 5, "auto", "auto", min_rows=400, **AUTO) == (400, 25, False)
    # capped at max(p + 1, N // 2) and at N - 1
    assert _resolve_sizes(100, 5, "auto", "auto", min_rows=90, **AUTO) == (50, 20, False)
    # data too small for subsamples larger than the parameter count: degraded, not an error
    n, m, degraded = _resolve_sizes(6, 5, "auto", "auto", **AUTO)
    assert (n, degraded) == (5, True) and m == 20


def test_explicit_sizes_and_counts():
    assert _resolve_sizes(1000, 5, 50, 7, **AUTO) == (50, 7, False)
    assert _resolve_sizes(1000, 5, 0.1, "auto", **AUTO) == (100, 20, False)
    # a float number of subsamples is the expected number of uses of each row
    assert _resolve_sizes(1000, 5, 100, 2.5, **AUTO) == (100, 25, False)
    assert _resolve_sizes(1000, 5, 100, 0.01, **AUTO)[1] == 2


@pytest.mark.parametrize("size, match", [
    (1000, r"subsample_size=1000 means 1000 rows per subsample, but only 1000 rows"),
    (0.9999999, r"must be smaller than the number of rows"),
    (5, r"subsample_size=5 means 5 rows per subsample, which must exceed the number of parameters"),
])
def test_explicit_sizes_out_of_range_are_refused(size, match):
    with pytest.raises(ValueError, match=match):
        _resolve_sizes(1000, 5, size, "auto", **AUTO)


def test_fewer_than_two_rows_are_refused():
    with pytest.raises(ValueError, match="Found n_samples=1 row"):
        _resolve_sizes(1, 1, "auto", "auto", **AUTO)
