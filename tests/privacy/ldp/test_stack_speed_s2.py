"""Round S2 (issue 28 goal 3, the fit's fixed costs): two same-output trims, each with a switch that restores the
previous code path.

* ``_mechanisms.SUBSET_SIZE_CACHE``: :func:`best_subset_size` remembers its answer per ``(K, epsilon)`` (a pure
  function; at ``K = 1000`` its search is 999 Python calls at every fit); 0 searches every time.
* ``utils._validation.STACKLEVEL_MEMO``: :func:`external_stacklevel` remembers per absolute file name whether a frame's
  code is inside the package; False takes ``os.path.abspath`` of every frame as before.

Both change nothing a user sees: the same ``k``, the same ``theta_`` bit for bit, the same warning locations."""

import os
import sys
import warnings

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp import _mechanisms as M
from sklearn_bayes.privacy._ldp import best_subset_size
from sklearn_bayes.utils import _validation as V
from sklearn_bayes.utils._validation import SeededNoiseWarning


@pytest.fixture
def fresh_cache(monkeypatch):
    monkeypatch.setattr(M, "_SUBSET_SIZES", {})
    return M._SUBSET_SIZES


def _search(K, eps):
    """The exhaustive argmin over ``k`` of :func:`_ss_log_variance` (first on ties), written out independently."""
    v = [M._ss_log_variance(K, eps, k) for k in range(1, K)]
    return 1 + int(np.argmin(v))


@pytest.mark.parametrize("K, eps", [(2, 1.0), (10, 0.5), (20, 1.0), (64, 8.0), (100, 1.0), (1000, 1.0), (1000, 8.0),
                                    (300, 1e-6), (50, 700.0)])
def test_subset_size_memory_returns_the_search(fresh_cache, monkeypatch, K, eps):
    first = best_subset_size(K, eps)
    assert (K, float(eps)) in fresh_cache
    assert first == best_subset_size(K, eps) == _search(K, eps)
    monkeypatch.setattr(M, "SUBSET_SIZE_CACHE", 0)
    assert best_subset_size(K, eps) == first


def test_subset_size_memory_is_keyed_on_both_arguments(fresh_cache):
    # the same K at two budgets, and numpy scalars: the same key as the Python numbers
    assert best_subset_size(100, 1.0) == _search(100, 1.0)
    assert best_subset_size(100, 3.0) == _search(100, 3.0)
    assert best_subset_size(100, 1.0) != best_subset_size(100, 3.0)
    assert best_subset_size(np.int64(100), np.float64(1.0)) == best_subset_size(100, 1.0)
    assert set(fresh_cache) == {(100, 1.0), (100, 3.0)}


def test_subset_size_memory_is_bounded(fresh_cache, monkeypatch):
    monkeypatch.setattr(M, "SUBSET_SIZE_CACHE", 3)
    for K in range(10, 16):
        assert best_subset_size(K, 1.0) == _search(K, 1.0)
    assert len(fresh_cache) == 3
    assert set(fresh_cache) == {(13, 1.0), (14, 1.0), (15, 1.0)}  # the oldest leave first


def test_subset_size_memory_off_stores_nothing(fresh_cache, monkeypatch):
    monkeypatch.setattr(M, "SUBSET_SIZE_CACHE", 0)
    assert best_subset_size(64, 8.0) == _search(64, 8.0)
    assert fresh_cache == {}


def _fit(K, eps, n, seed=3):
    rng = np.random.default_rng([K, n, seed])
    x = rng.choice(K, size=n, p=rng.dirichlet(np.ones(K)))
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=np.random.default_rng(seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(x.reshape(-1, 1))
        return est.theta_.copy(), np.array(est.subset_sizes_, copy=True)


@pytest.mark.parametrize("K, eps, n", [(64, 8.0, 1000), (20, 1.0, 500), (200, 2.0, 2000)])
def test_fits_are_the_same_bit_for_bit_with_the_trims_off(fresh_cache, monkeypatch, K, eps, n):
    on = _fit(K, eps, n)
    again = _fit(K, eps, n)  # now from the memory
    monkeypatch.setattr(M, "SUBSET_SIZE_CACHE", 0)
    monkeypatch.setattr(V, "STACKLEVEL_MEMO", False)
    off = _fit(K, eps, n)
    for a in (again, off):
        np.testing.assert_array_equal(a[0], on[0])
        np.testing.assert_array_equal(a[1], on[1])


def _warn_here():
    # a helper inside the package's stack is simulated by calling through a package function: the warning of a
    # replayed generator must point at this test file's line, with the memo on and off
    rng = np.random.default_rng(5)
    V.register_noise_state(rng, "t", instance=None)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        V.register_noise_state(rng, "t", instance=None)
    return rec


@pytest.mark.parametrize("memo", [True, False])
def test_stacklevel_points_at_the_caller_with_and_without_memo(monkeypatch, memo):
    monkeypatch.setattr(V, "STACKLEVEL_MEMO", memo)
    monkeypatch.setattr(V, "_INSIDE_FILES", {})
    rec = _warn_here()
    assert len(rec) == 1 and issubclass(rec[0].category, SeededNoiseWarning)
    assert os.path.abspath(rec[0].filename) == os.path.abspath(__file__)
    if memo:
        assert V._INSIDE_FILES[V.__file__] is True
        assert V._INSIDE_FILES[__file__] is False
    else:
        assert V._INSIDE_FILES == {}


def test_stacklevel_levels_equal_with_and_without_memo(monkeypatch):
    monkeypatch.setattr(V, "_INSIDE_FILES", {})

    def levels():
        out = []
        for memo in (True, False, True):  # the second True reads the memory
            V.STACKLEVEL_MEMO = memo
            out.append(V.external_stacklevel())
        return out

    try:
        a = levels()
    finally:
        V.STACKLEVEL_MEMO = True
    assert a[0] == a[1] == a[2] == 1


def test_stacklevel_memo_skips_relative_file_names(monkeypatch):
    # a relative co_filename's absolute path depends on the working directory: not remembered
    monkeypatch.setattr(V, "_INSIDE_FILES", {})
    code = compile("import sklearn_bayes.utils._validation as V\nlevel = V.external_stacklevel()", "rel_name.py", "exec")
    ns = {}
    exec(code, ns)
    assert ns["level"] == 1
    assert "rel_name.py" not in V._INSIDE_FILES


def test_fit_warning_points_at_the_user_line_with_memo():
    # the estimator's small-seed warning goes through decorators and helpers: it must name this file
    x = np.zeros((20, 1), dtype=int)
    est = AdaptiveLDPFrequencyEstimator(n_categories=4, epsilon=1.0, random_state=1)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        est.fit(x)
    seeded = [w for w in rec if issubclass(w.category, SeededNoiseWarning)]
    assert seeded, "an int random_state warns that the noise is reproducible"
    assert all(os.path.abspath(w.filename) == os.path.abspath(__file__) for w in seeded)
    assert sys.modules[__name__] is not None
