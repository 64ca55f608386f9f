"""Per-record clipping to a public bound (_core._clipping) and RowNormClipper."""

import numpy as np
import pytest

from sklearn_bayes.privacy import RowNormClipper
from sklearn_bayes.privacy._core._clipping import clip_rows



def _gen(seed=0):
    return np.random.default_rng(seed)


def test_row_norm_clipper_is_per_record_and_stateless():
    rng = _gen(26)
    X = rng.normal(size=(100, 4)) * 3
    clipper = RowNormClipper(max_norm=2.0).fit(X)
    out = clipper.transform(X)
    norms = np.linalg.norm(out, axis=1)
    assert np.all(norms <= 2.0 + 1e-12)
    inside = np.linalg.norm(X, axis=1) <= 2.0
    np.testing.assert_array_equal(out[inside], X[inside])
    # the transform of a row does not depend on the other rows
    np.testing.assert_array_equal(clipper.transform(X[:1]), out[:1])
    # a public centre
    c = np.ones(4)
    np.testing.assert_allclose(RowNormClipper(2.0, center=c).fit(X).transform(X), clip_rows(X - c, 2.0))
    with pytest.raises(ValueError, match="center"):
        RowNormClipper(center=[1.0]).fit(X)
