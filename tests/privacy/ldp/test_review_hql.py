"""Review HQL of ``decoder='eb-stack'`` (issue 28 round 15): copies, threads and ``set_params`` after a fit.

The cell is one where the stack moves away from ``'eb'`` (weights on other candidates), so a test that
mixed up the decoders would fail.
"""

import copy
import pickle
import threading
import warnings

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning")


def _data():
    K = 80
    theta = np.random.default_rng(3).dirichlet(np.full(K, 0.3))
    return K, np.random.default_rng([3, 1]).choice(K, size=20_000, p=theta).reshape(-1, 1)


def _fit(decoder, random_state=3):
    K, x = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=6.0, random_state=random_state,
                                             decoder=decoder).fit(x)


@pytest.fixture(scope="module")
def stack():
    est = _fit("eb-stack")
    assert est.convergence_["method"] == "eb-stack" and est.convergence_["stack_weights"]["eb"] < 1.0
    return est, est.theta_.copy()


def test_copies_of_a_stacked_fit_give_its_estimate_bit_for_bit(stack):
    """pickle (protocols 2-5), deepcopy and a second seeded fit: the same ``theta_`` (the stack's folds are drawn
    from the fit's read seed, which a copy keeps)."""
    est, theta = stack
    twins = [pickle.loads(pickle.dumps(est, protocol=p)) for p in (2, 3, 4, 5)] + [copy.deepcopy(est)]
    for twin in twins:
        assert np.array_equal(twin.theta_, theta)
    assert np.array_equal(_fit("eb-stack").theta_, theta)


def test_threads_reading_theta_of_a_fresh_copy_all_get_the_one_estimate(stack):
    """Four threads read ``theta_`` of a copy whose estimate is not computed yet: one value, the serial one."""
    est, theta = stack
    twin = pickle.loads(pickle.dumps(est))
    twin._theta_cache = None  # (not computed yet: the first reads race to compute it)
    got, start = [], threading.Barrier(4)

    def read():
        start.wait()
        got.append(twin.theta_.copy())

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120.0)
    assert len(got) == 4 and all(np.array_equal(g, theta) for g in got)


def test_set_params_decoder_after_a_fit_reads_as_a_fit_with_that_decoder(stack):
    """``decoder`` is a read-time knob: after ``set_params`` the estimate is the one a fit with that decoder gives,
    and setting it back gives the stack's again (never a stale mix of the two)."""
    est, theta = stack
    twin = copy.deepcopy(est)
    eb = _fit("eb")
    assert not np.array_equal(eb.theta_, theta)  # the cell tells the decoders apart
    twin.set_params(decoder="eb")
    assert np.array_equal(twin.theta_, eb.theta_) and twin.convergence_["method"] == "eb"
    twin.set_params(decoder="eb-stack")
    assert np.array_equal(twin.theta_, theta) and twin.convergence_["method"] == "eb-stack"
