"""Subsampled priors on a Dask cluster: joblib's dask backend gives the same fit as one process.

The subsample row indices are drawn before any fitting and every subsample fit is
deterministic, so where the fits run (threads, processes, cluster workers) cannot change
the result: the coefficients and the prior must be identical bit for bit.
"""

import joblib
import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

from sklearn_bayes import SubsampledPriorLogisticRegression, SubsampledPriorPoissonRegressor, SubsampledPriorRidge

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def dask_client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=40)
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


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
    workers = {t["worker"] for t in tasks.data}
    assert len(workers) == 2, "the subsample fits did not run on both workers"
    np.testing.assert_array_equal(clustered.coef_, reference.coef_)
    np.testing.assert_array_equal(clustered.intercept_, reference.intercept_)
    np.testing.assert_array_equal(clustered.prior_mean_, reference.prior_mean_)
    np.testing.assert_array_equal(clustered.prior_covariance_, reference.prior_covariance_)
