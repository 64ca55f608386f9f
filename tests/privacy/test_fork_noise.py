"""A ``fork()``-ed child never draws its parent's privacy noise (task HQK, hole 1).

Before the fix only :class:`PrivateCountSketch` marked what a ``fork()``-ed child inherits.
An OS-seeded (``random_state=None``) :class:`AdaptiveLDPFrequencyEstimator` keeps its noise
generator between calls, so after ``fork()`` the parent and the child drew the *same* noise:
the same users privatised in both processes gave the same responses (identical estimates), and
two releases about data that differ in one user differ by that user alone.  Now every generator
:func:`~sklearn_bayes.utils.check_privacy_random_state` draws from operating-system entropy is
reseeded from fresh entropy in the child (``os.register_at_fork``), whichever estimator holds it.
Seeded noise (an int, a caller's ``Generator``) is left as it is: reproducible, and the caller's
responsibility.
"""

import collections
import copy
import multiprocessing
import pickle
import os
import warnings

import numpy as np
import pytest

from sklearn_bayes.privacy import (
    AdaOPSRegressor,
    AdaptiveLDPFrequencyEstimator,
    DPSGLDLogisticRegression,
    OnePosteriorSampleRidge,
    RRRRMechanism,
)
from sklearn_bayes.utils import check_privacy_random_state
from tests.privacy._fork_tools import in_child as _in_child

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
    # theta_ serves as a fingerprint of the responses here: a short chain is enough
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
]

USERS = (np.arange(300) % 4).reshape(-1, 1)


def _ldp(random_state=None):
    return AdaptiveLDPFrequencyEstimator(n_categories=4, epsilon=1.0, mechanism="grr", n_final_steps=50,
                                         random_state=random_state)


def test_an_os_seeded_ldp_estimator_draws_fresh_noise_in_a_forked_child():
    est = _ldp().partial_fit(USERS[:50])

    def release():
        est.partial_fit(USERS[50:])
        return est.theta_.tolist()

    child = _in_child(release)
    parent = release()
    # the same users privatised with the same noise give the same estimate exactly; fresh noise
    # makes 250 GRR responses differ (each user's response is random with probability >= 3/(e+3))
    assert child != parent


def test_a_forked_child_does_not_replay_a_release_about_neighbouring_data():
    # the attack: parent and child release about data that differ in the last user only
    est = _ldp().partial_fit(USERS[:50])
    neighbour = USERS[50:].copy()
    neighbour[-1] = (neighbour[-1] + 1) % 4

    def theta(data):
        est.partial_fit(data)
        return est.theta_.tolist()

    child = _in_child(lambda: theta(neighbour))
    parent = theta(USERS[50:])
    # with replayed noise the 249 shared users' responses coincide, and so would the estimates
    # computed from the two response sets up to the one differing user: with fresh noise the
    # estimates differ by far more than one user's weight (1/300) in some coordinate
    assert max(abs(a - b) for a, b in zip(child, parent)) > 2 / 300


def test_an_int_seeded_estimator_still_replays_its_seed_in_the_child():
    # seeded noise stays reproducible (the caller asked for it; the integer seed already warns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = _ldp(random_state=3).partial_fit(USERS[:50])

    def release():
        est.partial_fit(USERS[50:])
        return est.theta_.tolist()

    assert _in_child(release) == release()


def test_a_callers_generator_is_the_callers_responsibility():
    # a Generator given by the caller is used as is, in the child too (documented)
    rng = np.random.default_rng(7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = _ldp(random_state=rng).partial_fit(USERS[:50])
    assert _in_child(lambda: est._rng.random(3).tolist()) == est._rng.random(3).tolist()


def test_check_privacy_random_state_reseeds_its_os_generators_in_the_child():
    rng = check_privacy_random_state(None, owner="test")
    child = _in_child(lambda: rng.random(4).tolist())
    assert child != rng.random(4).tolist()


@pytest.mark.parametrize("model", [
    lambda: OnePosteriorSampleRidge(epsilon=1.0, x_bound=1.0, y_bound=1.0),
    lambda: AdaOPSRegressor(epsilon=1.0, x_bound=1.0, y_bound=1.0),
])
def test_ops_models_fitted_in_a_child_draw_fresh_noise(model):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(200, 2))
    y = np.clip(X @ [0.5, -0.3] + 0.1 * rng.standard_normal(200), -1, 1)
    est = model()

    def release():
        return est.fit(X, y).coef_.tolist()

    assert _in_child(release) != release()


def test_dpsgld_fitted_in_a_child_draws_fresh_noise():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(200, 2))
    y = (X @ [1.5, -1.0] + rng.logistic(size=200) > 0).astype(int)
    est = DPSGLDLogisticRegression(epsilon=1.0, x_bound=2.0, n_iter=60, n_draws=20)

    def release():
        return est.fit(X, y).coef_.tolist()

    assert _in_child(release) != release()


def test_rrrr_privatize_in_a_child_draws_fresh_noise():
    mech = RRRRMechanism(n_categories=50, epsilon=0.5)
    x = np.arange(200) % 50

    def release():
        return mech.privatize(x, subset=[0, 1, 2]).tolist()

    assert _in_child(release) != release()


def _mp_release(est, queue):
    est.partial_fit(USERS[50:])
    queue.put(est.theta_.tolist())


def test_a_multiprocessing_fork_worker_draws_fresh_noise():
    ctx = multiprocessing.get_context("fork")
    est = _ldp().partial_fit(USERS[:50])
    queue = ctx.Queue()
    proc = ctx.Process(target=_mp_release, args=(est, queue))
    proc.start()
    child = queue.get(timeout=120)
    proc.join(timeout=120)
    est.partial_fit(USERS[50:])
    assert child != est.theta_.tolist()


def test_a_copy_of_an_os_seeded_estimator_draws_fresh_noise_in_a_forked_child():
    # copies (deepcopy, pickle) of an OS-seeded LDP estimator reseed when made (eddf76e), and a forked
    # child reseeds them again like their original
    est = _ldp().partial_fit(USERS[:50])
    for copy_ in (copy.deepcopy(est), pickle.loads(pickle.dumps(est))):
        def release():
            copy_.partial_fit(USERS[50:])
            return copy_.theta_.tolist()

        assert _in_child(release) != release()


def test_a_copied_generator_keeps_its_state():
    rng = check_privacy_random_state(None, owner="test")
    for twin in (copy.deepcopy(rng), pickle.loads(pickle.dumps(rng))):
        assert twin.bit_generator.state == rng.bit_generator.state and twin is not rng


def test_the_replay_registry_is_bounded_and_still_sees_recent_copies(monkeypatch):
    # before: one entry per call with a caller's Generator, forever (2000 calls, 2000 entries)
    from sklearn_bayes.exceptions import SeededNoiseWarning
    from sklearn_bayes.utils import _validation

    monkeypatch.setattr(_validation, "_RELEASED_STATES", collections.OrderedDict())
    monkeypatch.setattr(_validation, "MAX_RELEASED_STATES", 100)
    mech = RRRRMechanism(n_categories=10, epsilon=1.0)
    rng = np.random.default_rng(0)
    for _ in range(300):
        mech.privatize(3, subset=[0, 1], random_state=rng)
    assert len(_validation._RELEASED_STATES) == 100
    twin = copy.deepcopy(rng)
    mech.privatize(3, subset=[0, 1], random_state=rng)
    with pytest.warns(SeededNoiseWarning, match="already drew privacy noise"):
        RRRRMechanism(n_categories=10, epsilon=1.0).privatize(3, subset=[0, 1], random_state=twin)
