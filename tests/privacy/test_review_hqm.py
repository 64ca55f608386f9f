"""An experienced scikit-learn user's review of the private linear models and PrivateCountSketch (task HQM).

* A fitted ``PrivateCountSketch`` inside ``FeatureUnion`` / ``ColumnTransformer`` with ``n_jobs > 1``: every
  ``transform`` ran in a joblib worker's unpickled copy, whose release was charged only to that copy's
  ``ledger_`` and thrown away with it; the parent's ``epsilon_spent_`` stayed 0 and averaging the answers
  of repeated transforms recovered an exact count (measured: 200 transforms at ε = 0.1 gave 36.5 and 37.7
  for a count of 37).  Now such a copy (pickled by this process's parent, its original still there)
  refuses to release unless its stream is bound to a ``PrivacyLedger(path=...)``, which records every
  worker's release in one budget.
* ``PrivateCountSketch(random_state=np.random.RandomState(0))`` was refused although every other private
  estimator of the package, scikit-learn's convention and the sketch's own Notes accept a ``RandomState``.
* ``epsilon=fractions.Fraction(1, 2)`` failed with numpy's "ufunc 'isnan' not supported", naming nothing
  (``sklearn_bayes.utils.RealInterval``; a strict xfail here until HQN: now a Fraction equal to a float is that
  float, and one that no float equals is refused naming ``epsilon``).
"""

import os
import pickle
import subprocess
import sys
import warnings
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from sklearn.pipeline import FeatureUnion

from sklearn_bayes.exceptions import DetachedLedgerError, SeededNoiseWarning
from sklearn_bayes.privacy import (
    AdaOPSRegressor,
    DPSGLDLogisticRegression,
    OnePosteriorSampleRidge,
    PrivacyLedger,
    PrivateCountSketch,
)


def _stream():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"c": rng.choice(list("abc"), 400)})
    frame.loc[:36, "c"] = "zz"  # 37 occurrences of the item asked about
    return frame


def _union(ledger=None, n_jobs=2):
    return FeatureUnion([
        ("s1", PrivateCountSketch(width=64, depth=1, epsilon=0.1, ledger=ledger)),
        ("s2", PrivateCountSketch(width=64, depth=1, epsilon=0.1, hash_seed=1, ledger=ledger)),
    ], n_jobs=n_jobs)


# ------------------------------------------------------------------ a fitted sketch in joblib's process workers


def test_a_fitted_sketch_queried_in_feature_union_workers_is_refused_and_the_parent_is_unchanged():
    """Each worker would answer from a copy whose kept noise and charge are lost: refused, naming the remedy."""
    union = _union().fit(_stream())
    sketches = [t for _, t in union.transformer_list]
    tables = [s.table_.copy() for s in sketches]
    with pytest.raises(DetachedLedgerError, match=r"PrivacyLedger\(path=\.\.\.\)"):
        union.transform(pd.DataFrame({"c": ["zz"]}))
    for s, table in zip(sketches, tables):
        assert s.epsilon_spent_ == 0.0 and s.n_query_sets_ == 0 and np.array_equal(s.table_, table)
    # the same union with n_jobs=1 answers in this process: use-and-keep spends epsilon once
    serial = _union(n_jobs=1).fit(_stream())
    for _ in range(3):
        serial.transform(pd.DataFrame({"c": ["zz"]}))
    assert [t.epsilon_spent_ for _, t in serial.transformer_list] == [0.1, 0.1]


def test_with_a_ledger_file_every_worker_release_is_charged_to_it(tmp_path):
    """A shared file ledger sees each worker's copy: a fork charged afresh, 0.1 per sketch and transform."""
    ledger = PrivacyLedger(path=tmp_path / "union.ledger")
    union = _union(ledger=ledger).fit(_stream())
    for _ in range(3):
        union.transform(pd.DataFrame({"c": ["zz"]}))
    assert ledger.n_releases == 6
    assert ledger.epsilon_spent == pytest.approx(0.6, rel=1e-12)


def test_sketches_fitted_in_workers_come_back_and_answer_in_the_parent():
    """The reverse direction is not refused: a sketch pickled by a worker (not this process's parent) and loaded
    here is an ordinary copy (a fork charged afresh, as documented)."""
    union = _union()
    out = union.fit_transform(_stream())  # fitted and queried in the workers, returned pickled
    assert out.shape == (400, 2)
    union.set_params(n_jobs=1).transform(pd.DataFrame({"c": ["zz"]}))  # in this process
    assert [t.epsilon_spent_ for _, t in union.transformer_list] == [0.2, 0.2]


_CHILD = """
import copy, pickle, sys
from sklearn_bayes.exceptions import DetachedLedgerError
sketch = pickle.loads(open(sys.argv[1], "rb").read())
sketch.partial_fit(["zz"])  # consuming elements is not a release
for obj in (sketch, copy.deepcopy(sketch), pickle.loads(pickle.dumps(sketch))):  # copies made here too
    try:
        obj.query(["zz"])
        print("answered")
    except DetachedLedgerError as exc:
        print("refused" if "parent" in str(exc) else "other")
fresh = type(sketch)(width=64).fit(["a"])  # a new stream in the child is its own: it answers
fresh.query(["a"])
print(fresh.epsilon_spent_)
"""


def test_a_child_process_refuses_its_parents_pickled_sketch_but_not_its_own_streams(tmp_path):
    sketch = PrivateCountSketch(width=64).fit(_stream()["c"].to_numpy())
    sketch.query(["a"])
    path = tmp_path / "sketch.pkl"
    path.write_bytes(pickle.dumps(sketch))
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["refused", "refused", "refused", "1.0"]
    # in this process a pickle round trip goes on streaming and answering (a fork charged afresh)
    copy_ = pickle.loads(pickle.dumps(sketch))
    copy_.partial_fit(["zz"] * 5)
    copy_.query(["zz"])
    assert copy_.n_items_seen_ == 405 and copy_.epsilon_spent_ == 2.0


_FORKSERVER = """
import multiprocessing, sys
import numpy as np
from sklearn_bayes.exceptions import DetachedLedgerError
from sklearn_bayes.privacy import PrivacyLedger, PrivateCountSketch


def query(sketch):
    try:
        sketch.query([1])
    except DetachedLedgerError as exc:
        return "refused" if "ancestor" in str(exc) else str(exc)
    return "answered"


if __name__ == "__main__":
    sketch = PrivateCountSketch(width=64).fit(np.arange(50))
    ledger = PrivacyLedger(path=sys.argv[1])
    bound = PrivateCountSketch(width=64, ledger=ledger).fit(np.arange(50))
    with multiprocessing.get_context("forkserver").Pool(2) as pool:
        print(*pool.map_async(query, [sketch] * 3).get(timeout=120))
        print(*pool.map_async(query, [bound] * 3).get(timeout=120))
    print(sketch.epsilon_spent_, sketch.n_query_sets_, ledger.n_releases, ledger.epsilon_spent)
"""


@pytest.mark.skipif("forkserver" not in __import__("multiprocessing").get_all_start_methods(),
                    reason="needs the forkserver start method")
def test_a_forkserver_pool_worker_refuses_the_sketch_its_grandparent_pickled(tmp_path):
    """HQN: a 'forkserver' worker (the default start method on Linux from Python 3.14) is a child of the fork
    server, itself a child of the process that pickled the task: the check of the parent alone let it answer
    (measured: three tasks of three answered).  Now any ancestor counts; with a ledger file it answers and each
    task's unpickled copy is a fork charged afresh in the file.  (A script file: the workers import its
    functions from it.)"""
    script = tmp_path / "forkserver_pool.py"
    script.write_text(_FORKSERVER)
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "budget.ledger")], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["refused refused refused", "answered answered answered", "0.0 0 3 3.0"]


# ------------------------------------------------------------------ random_state conventions


def test_the_sketch_accepts_a_legacy_random_state_like_the_other_private_estimators():
    stream = np.arange(200) % 7
    answers = []
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeededNoiseWarning)  # (the second RandomState(3) replays the first)
            answers.append(PrivateCountSketch(width=64, random_state=np.random.RandomState(3)).fit(stream).query([1, 2]))
    assert np.array_equal(answers[0], answers[1])  # reproducible from the RandomState's seed


def test_from_dask_with_subsampling_reads_a_random_state_without_advancing_it():
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")
    items = da.from_array(np.arange(4000) % 50, chunks=1000)
    rs = np.random.RandomState(5)
    before = rs.get_state()[1].copy()
    with dask.config.set(scheduler="synchronous"):
        a = PrivateCountSketch.from_dask(items, width=64, sampling_rate=0.5, random_state=rs)
        b = PrivateCountSketch.from_dask(items, width=64, sampling_rate=0.5, random_state=np.random.RandomState(5))
    assert np.array_equal(a.table_, b.table_)
    assert not np.array_equal(rs.get_state()[1], before)  # the stream's generator was drawn from it, once
    assert a.n_items_seen_ == 4000


# ------------------------------------------------------------------ exact budgets as parameters


_EXACT_MAKERS = [
    lambda eps: AdaOPSRegressor(epsilon=eps, x_bound=1.0, y_bound=1.0, random_state=0),
    lambda eps: OnePosteriorSampleRidge(epsilon=eps, x_bound=1.0, y_bound=1.0, random_state=0),
    lambda eps: DPSGLDLogisticRegression(epsilon=eps, x_bound=1.0, n_iter=10, n_draws=2, random_state=0),
    lambda eps: PrivateCountSketch(epsilon=eps, width=64, random_state=0),
]
_EXACT_IDS = ["AdaOPS", "OPS", "DPSGLD", "sketch"]


def _fit_exact(est):
    X = np.random.default_rng(0).uniform(-1, 1, size=(60, 2))
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        if isinstance(est, PrivateCountSketch):
            est.fit(np.arange(200) % 17)
            return est.query([1, 2]), est
        return est.fit(X, y).coef_, est


@pytest.mark.parametrize("make", _EXACT_MAKERS, ids=_EXACT_IDS)
def test_an_exact_epsilon_equal_to_a_float_is_that_float(make):
    """HQN: ``epsilon=Fraction(1, 2)`` raised numpy's "ufunc 'isnan' not supported" from
    ``sklearn_bayes.utils.RealInterval``, naming nothing (HQM's strict xfail).  A Fraction equal to a float is
    accepted and gives exactly what the float gives (same seeded release, same spend)."""
    exact, est = _fit_exact(make(Fraction(1, 2)))
    plain, ref = _fit_exact(make(0.5))
    assert np.array_equal(exact, plain) and est.epsilon_spent_ == ref.epsilon_spent_


@pytest.mark.parametrize("make", _EXACT_MAKERS, ids=_EXACT_IDS)
@pytest.mark.parametrize("eps", [Fraction(1, 10), Decimal("0.5")], ids=["Fraction(1, 10)", "Decimal"])
def test_an_epsilon_no_float_equals_is_refused_naming_epsilon_and_changes_nothing(make, eps):
    """float(Fraction(1, 10)) is above 1/10: rounding it would spend more than asked, silently; a Decimal is not a
    numbers.Real.  Both are refused naming ``epsilon``; a fitted estimator refitted with it keeps its fit."""
    _, est = _fit_exact(make(0.5))
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in vars(est).items() if k.endswith("_")}
    with pytest.raises((TypeError, ValueError), match="epsilon") as info:
        _fit_exact(est.set_params(epsilon=eps))
    assert "isnan" not in str(info.value)
    after = {k: v for k, v in vars(est).items() if k.endswith("_")}
    assert after.keys() == before.keys()
    for k, v in before.items():
        assert (np.array_equal(v, after[k]) if isinstance(v, np.ndarray) else after[k] is v or after[k] == v), k


# ------------------------------------------------------------------ the linear models as scikit-learn estimators


def _regression(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 3))
    return X, X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.standard_normal(n)


@pytest.mark.parametrize("make", [
    lambda ledger: AdaOPSRegressor(x_bound=2.0, y_bound=2.0, ledger=ledger),
    lambda ledger: OnePosteriorSampleRidge(ridge_lambda=300.0, x_bound=2.0, y_bound=2.0, ledger=ledger),
], ids=["AdaOPS", "OPS"])
def test_several_targets_go_through_multioutput_and_each_is_a_release(make):
    from sklearn.multioutput import MultiOutputRegressor

    X, y = _regression()
    with pytest.raises(ValueError, match="1d array"):
        make(None).fit(X, np.c_[y, -y])
    ledger = PrivacyLedger()
    model = MultiOutputRegressor(make(ledger)).fit(X, np.c_[y, -y])
    assert model.predict(X[:5]).shape == (5, 2)
    assert ledger.n_releases == 2 and ledger.epsilon_spent == 2.0


def test_no_sample_weight_so_meta_estimators_pass_none():
    from sklearn.utils.validation import has_fit_parameter

    for est in (AdaOPSRegressor(), OnePosteriorSampleRidge(), DPSGLDLogisticRegression()):
        assert not has_fit_parameter(est, "sample_weight")


def test_column_y_and_sparse_x_as_documented():
    from scipy import sparse
    from sklearn.exceptions import DataConversionWarning

    X, y = _regression()
    est = AdaOPSRegressor(x_bound=2.0, y_bound=2.0)
    with pytest.warns(DataConversionWarning):
        est.fit(X, y[:, None])
    assert est.coef_.shape == (3,)
    with pytest.raises(TypeError, match="[Ss]parse"):
        AdaOPSRegressor(x_bound=2.0, y_bound=2.0).fit(sparse.csr_matrix(X), y)


def test_a_counter_is_refused_with_advice_that_keeps_its_counts():
    """``list(Counter)`` keeps each key once: the message points to ``elements()``, which the sketch counts right."""
    from collections import Counter

    counts = Counter({"a": 3, "b": 1})
    sketch = PrivateCountSketch(width=64, epsilon=50.0, random_state=0)
    with pytest.raises(TypeError, match=r"elements\(\)") as info:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeededNoiseWarning)
            sketch.partial_fit(counts)
    assert "pass list(X) for its items (a stream" not in str(info.value)
    assert not hasattr(sketch, "table_")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        sketch.partial_fit(list(counts.elements()))
    assert sketch.n_items_seen_ == 4
    with pytest.raises(TypeError, match=r"list\(X\) for its items, each once"):
        sketch.partial_fit({"a", "b"})


def test_without_a_ledger_the_best_estimator_reports_the_refit_alone():
    """What the guide warns about: nothing adds the folds up when no ledger is passed."""
    from sklearn.model_selection import GridSearchCV

    X, y = _regression(n=600)
    search = GridSearchCV(AdaOPSRegressor(x_bound=2.0, y_bound=2.0), {"epsilon": [0.5, 1.0]}, cv=3).fit(X, y)
    assert search.best_estimator_.epsilon_spent_ == search.best_params_["epsilon"]
    assert search.best_estimator_.ledger_.n_releases == 1
