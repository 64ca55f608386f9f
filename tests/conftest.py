"""Fixtures shared by the test folders."""

import pytest


@pytest.fixture(scope="module")
def dask_clients():
    """``make(n_workers=2, threads_per_worker=1, processes=True)``: a ``distributed`` client on a fresh
    ``LocalCluster`` (no dashboard, quiet logs); every client made in a module is closed with its cluster at the
    module's end."""
    distributed = pytest.importorskip("distributed")
    made = []

    def make(n_workers=2, threads_per_worker=1, processes=True):
        cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker,
                                           processes=processes, dashboard_address=":0", silence_logs=40)
        made.append((distributed.Client(cluster), cluster))
        return made[-1][0]

    try:
        yield make
    finally:
        for client, cluster in reversed(made):
            client.close()
            cluster.close()
