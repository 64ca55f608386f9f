"""Subsampled priors on a Dask cluster: joblib's dask backend gives the same fit as one process.

The subsample row indices are drawn before any fitting and every subsample fit is
deterministic, so where the fits run (threads, processes, cluster workers) cannot change
the result -- up to rounding: the workers may run another number of BLAS threads than this
process (dask's nanny sets ``OPENBLAS_NUM_THREADS=1``), and a threaded BLAS may sum in
another order.  The fits are compared within :func:`rounding_tolerance`, the error bound of
summing ``n`` terms (``n eps``) amplified by the condition number of the Newton systems.
"""

import joblib
import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

from sklearn_bayes import SubsampledPriorLogisticRegression, SubsampledPriorPoissonRegressor, SubsampledPriorRidge

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def dask_client(dask_clients):
    return dask_clients(n_workers=2, threads_per_worker=1, processes=True)


def _problems():
    X, y = make_classification(1500, 8, n_informative=5, n_redundant=0, random_state=0)
    Xr, yr = make_regression(1500, 8, noise=5.0, random_state=1)
    counts = np.random.default_rng(2).poisson(np.exp(0.3 * Xr[:, 0] / Xr[:, 0].std()))
    return [
        (SubsampledPriorLogisticRegression, X, y),
        (SubsampledPriorRidge, Xr, yr),
        (SubsampledPriorPoissonRegressor, Xr, counts),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("cls, X, y", _problems(), ids=lambda v: getattr(v, "__name__", ""))
def test_dask_backend_gives_the_single_process_fit(dask_client, cls, X, y):
    reference = cls(n_jobs=1, random_state=0).fit(X, y)
    with distributed.get_task_stream(client=dask_client) as tasks, joblib.parallel_backend("dask"):
        clustered = cls(n_jobs=-1, random_state=0).fit(X, y)
    # The fits must have run on the cluster's worker processes; how the scheduler spreads them over
    # the two workers depends on the machine's load (a busy worker may get none), so it is not asserted.
    workers = {t["worker"] for t in tasks.data}
    assert workers and workers <= set(dask_client.scheduler_info()["workers"]), "the fits did not run on the cluster"
    tol = rounding_tolerance(X)
    for key in ("coef_", "intercept_", "prior_mean_", "prior_covariance_"):
        a, b = np.asarray(getattr(clustered, key)), np.asarray(getattr(reference, key))
        np.testing.assert_allclose(a, b, rtol=0, atol=tol * np.abs(b).max(), err_msg=key)


def rounding_tolerance(X):
    """Relative tolerance for two evaluations of one fit that differ only in summation order.

    Each sum of ``n`` terms is within ``n eps`` of exact (relative to the sum of magnitudes);
    the Newton systems ``(X_s^T W X_s) delta = g`` amplify that by at most their condition
    number, ``cond(X_s)^2`` for the standardised design; the prior (a mean and a covariance
    of such fits) and the MAP fit add one more such step: ``4 n eps cond(X_s)^2``.
    """
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    return 4 * X.shape[0] * np.finfo(float).eps * np.linalg.cond(np.c_[Z, np.ones(len(Z))]) ** 2
