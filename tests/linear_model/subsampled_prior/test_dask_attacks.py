"""Attacks on the subsampled priors' Dask path (joblib's ``dask`` backend): a task that fails on a
worker, generators as random_state, refused input, and the split of the subsample fits.

An in-process cluster (one worker, two threads) keeps these fast; ``test_dask_backend.py`` runs the
equality on a two-process cluster.  The fits are compared within the rounding tolerance derived
there (summation order, amplified by the condition number of the Newton systems).
"""

import copy
import importlib.util
from pathlib import Path

import joblib
import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.validation import check_is_fitted

from sklearn_bayes import SubsampledPriorLogisticRegression, SubsampledPriorPoissonRegressor, SubsampledPriorRidge
from sklearn_bayes.linear_model._subsampled_prior import _base

distributed = pytest.importorskip("distributed")

_spec = importlib.util.spec_from_file_location("_dask_backend_tests", Path(__file__).with_name("test_dask_backend.py"))
_backend_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_backend_tests)
rounding_tolerance = _backend_tests.rounding_tolerance

KEYS = ("coef_", "intercept_", "prior_mean_", "prior_covariance_")


@pytest.fixture(scope="module")
def client(dask_clients):
    # two threads: joblib's dask backend counts the cluster's threads as n_jobs, and with one the
    # estimator would take its n_jobs == 1 path and fit in the client
    return dask_clients(n_workers=1, threads_per_worker=2, processes=False)


def _data(cls, n=600, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * [1.0, 2.0, 0.5, 3.0, 1.0] + [0.0, 1.0, -2.0, 5.0, 0.0]
    eta = ((X - [0.0, 1.0, -2.0, 5.0, 0.0]) / [1.0, 2.0, 0.5, 3.0, 1.0]) @ [1.0, -0.5, 0.0, 0.3, 0.2]
    if cls is SubsampledPriorRidge:
        return X, eta + rng.normal(size=n)
    if cls is SubsampledPriorPoissonRegressor:
        return X, rng.poisson(np.exp(0.5 * eta)).astype(float)
    return X, (eta + rng.logistic(size=n) > 0).astype(int)


def _assert_same_fit(a, b, X):
    tol = rounding_tolerance(X)
    for key in KEYS:
        va, vb = np.asarray(getattr(a, key)), np.asarray(getattr(b, key))
        np.testing.assert_allclose(va, vb, rtol=0, atol=tol * max(np.abs(vb).max(), 1.0), err_msg=key)


CLASSES = [SubsampledPriorRidge, SubsampledPriorLogisticRegression, SubsampledPriorPoissonRegressor]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_generator_random_state_is_honoured_on_the_cluster(client, cls):
    """A Generator: the cluster's fit equals the one-process fit from a copy of it, and leaves the
    generator where that fit left its copy (the draws happen in the client, before any task)."""
    X, y = _data(cls)
    gen = np.random.default_rng(42)
    twin = copy.deepcopy(gen)
    reference = cls(n_jobs=1, random_state=twin).fit(X, y)
    with distributed.get_task_stream(client=client) as tasks, joblib.parallel_backend("dask"):
        clustered = cls(n_jobs=3, random_state=gen).fit(X, y)
    assert tasks.data, "the subsample fits did not run on the cluster"
    _assert_same_fit(clustered, reference, X)
    assert gen.bit_generator.state == twin.bit_generator.state
    # another seed gives other subsamples, hence another prior: the seed is not ignored
    with joblib.parallel_backend("dask"):
        other = cls(n_jobs=3, random_state=7).fit(X, y)
    assert np.abs(other.prior_covariance_ - reference.prior_covariance_).max() > 100 * rounding_tolerance(X) * max(
        np.abs(reference.prior_covariance_).max(), 1.0)


def _failing_on_workers(monkeypatch):
    """Make the subsample fits raise when (and only when) they run on a Dask worker."""
    original = _base._fit_subsample_batch

    def batch(*args, **kwargs):
        try:
            distributed.get_worker()
        except ValueError:  # not on a worker: the client's pilot fit
            return original(*args, **kwargs)
        raise MemoryError("worker out of memory")

    monkeypatch.setattr(_base, "_fit_subsample_batch", batch)


@pytest.mark.parametrize("cls", [SubsampledPriorRidge, SubsampledPriorLogisticRegression], ids=lambda c: c.__name__)
def test_a_failing_task_leaves_the_estimator_as_it_was(client, monkeypatch, cls):
    X, y = _data(cls)
    X2, y2 = _data(cls, seed=1)
    gen = np.random.default_rng(3)
    fitted = cls(n_jobs=2, random_state=gen).fit(X, y)
    before = {k: copy.deepcopy(v) for k, v in vars(fitted).items()}
    state = copy.deepcopy(gen.bit_generator.state)
    fresh = cls(n_jobs=2, random_state=0)
    _failing_on_workers(monkeypatch)
    with joblib.parallel_backend("dask"):
        with pytest.raises(MemoryError, match="worker out of memory"):
            fitted.fit(X2, y2)
        with pytest.raises(MemoryError, match="worker out of memory"):
            fresh.fit(X2, y2)
    assert gen.bit_generator.state == state  # the failed fit's draws are rewound
    assert vars(fitted).keys() == before.keys()
    for key in KEYS + ("n_features_in_",):
        np.testing.assert_array_equal(getattr(fitted, key), before[key], err_msg=key)
    with pytest.raises(NotFittedError):
        check_is_fitted(fresh)
    monkeypatch.undo()
    # the retry is the fit that never failed
    reference = cls(n_jobs=1, random_state=copy.deepcopy(gen)).fit(X2, y2)
    with joblib.parallel_backend("dask"):
        fitted.fit(X2, y2)
    _assert_same_fit(fitted, reference, X2)


def test_refused_input_is_named_and_nothing_reaches_the_cluster(client):
    X, y = _data(SubsampledPriorRidge)
    Xnan = X.copy()
    Xnan[5, 2] = np.nan
    with distributed.get_task_stream(client=client) as tasks, joblib.parallel_backend("dask"):
        with pytest.raises(ValueError, match=r"Input X contains NaN"):
            SubsampledPriorRidge(n_jobs=2, random_state=0).fit(Xnan, y)
        with pytest.raises(ValueError, match=r"\by\b"):
            SubsampledPriorRidge(n_jobs=2, random_state=0).fit(X, np.r_[y[:-1], np.inf])
        with pytest.raises(InvalidParameterError, match="n_jobs"):
            SubsampledPriorRidge(n_jobs=1.5, random_state=0).fit(X, y)
        with pytest.raises(InvalidParameterError, match="random_state"):
            SubsampledPriorRidge(n_jobs=2, random_state="seed").fit(X, y)
    assert tasks.data == []
