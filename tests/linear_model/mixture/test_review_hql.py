"""Review HQL of the mixture's locks (H30S): copies taken while another thread refits.

The H30S fix made every reader hold the instance lock a refit holds, so a reader sees one fit.
A copy -- ``pickle.dumps`` (joblib sending the estimator to a worker), ``copy.deepcopy`` -- reads
the same attributes and is a reader too.
"""

import copy
import pickle
import threading

import numpy as np
import pytest

from sklearn_bayes import MixtureMEstimatorRegressor
from sklearn_bayes.linear_model._mixture import _inference
from tests.linear_model.mixture._refit_race import answers, during_a_paused_refit, one_of, t3_data


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_copy_taken_during_a_refit_holds_one_fit(monkeypatch, how):
    """A copy taken while a refit is between binding ``coef_`` and ``coef_covariance_`` must be the old fit or the
    new one, never a mix (the refit is paused there until the copy is taken, or 0.5 s)."""
    take = (lambda est: pickle.loads(pickle.dumps(est))) if how == "pickle" else copy.deepcopy
    copied, fits = during_a_paused_refit(monkeypatch, take)
    XA, yA = t3_data(0)
    assert one_of(answers(copied, XA, yA), fits), "the copy holds a mix of two fits"


def test_grid_search_with_two_process_workers_equals_one_worker():
    """The instance locks live outside the estimator: a GridSearchCV with ``n_jobs=2`` (loky workers, pickled
    estimators) runs and finds what ``n_jobs=1`` finds, score for score."""
    from sklearn.model_selection import GridSearchCV

    X, y = t3_data(2, n=80)
    grid = {"fit_scales": [True, False]}
    one = GridSearchCV(MixtureMEstimatorRegressor(random_state=0), grid, cv=3, n_jobs=1).fit(X, y)
    two = GridSearchCV(MixtureMEstimatorRegressor(random_state=0), grid, cv=3, n_jobs=2).fit(X, y)
    assert np.array_equal(one.cv_results_["mean_test_score"], two.cv_results_["mean_test_score"])
    assert np.array_equal(one.best_estimator_.coef_, two.best_estimator_.coef_)


def test_readers_of_two_estimators_in_two_threads_do_not_block_each_other():
    """bootstrap_conf_int (which holds the lock while its refits call predict-like code) on two estimators at once,
    each thread also reading the other estimator: every call ends (no lock-order deadlock) and equals its
    single-threaded answer."""
    XA, yA = t3_data(3)
    XB, yB = t3_data(4)
    A = MixtureMEstimatorRegressor(random_state=0, n_subsets=50).fit(XA, yA)
    B = MixtureMEstimatorRegressor(random_state=0, n_subsets=50).fit(XB, yB)
    want = {"A": A.bootstrap_conf_int(XA, yA, n_boot=8, random_state=1),
            "B": B.bootstrap_conf_int(XB, yB, n_boot=8, random_state=1)}
    got, errors = {}, []

    def run(name, est, other, X, y):
        try:
            for _ in range(2):
                got[name] = est.bootstrap_conf_int(X, y, n_boot=8, random_state=1)
                other.predict(X)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=("A", A, B, XA, yA)), threading.Thread(target=run, args=("B", B, A, XB, yB))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120.0)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert not errors, errors
    for k in want:
        assert np.array_equal(np.asarray(got[k]), np.asarray(want[k])), k


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_an_estimator_refitting_at_a_fork_is_refused_in_the_child_not_deadlocked(monkeypatch):
    """H30S made every reader take the lock a refit holds; a ``fork()`` while another thread refits must then leave
    the child an estimator that refuses (``RuntimeError``: half-updated state), not one whose lock is held forever.
    An idle estimator works in the child."""
    import json
    import os
    import select
    import signal

    from sklearn_bayes.utils import _fork

    monkeypatch.setattr(_fork, "FORK_WAIT", 0.2)
    XA, yA = t3_data(0)
    busy = MixtureMEstimatorRegressor(random_state=0).fit(XA, yA)
    idle = MixtureMEstimatorRegressor(random_state=0).fit(XA, yA)
    in_fit, forked = threading.Event(), threading.Event()
    original = _inference.parameter_covariance

    def paused(*args, **kwargs):
        in_fit.set()
        forked.wait(10.0)
        return original(*args, **kwargs)

    monkeypatch.setattr(_inference, "parameter_covariance", paused)
    t = threading.Thread(target=lambda: busy.fit(*t3_data(1)))
    t.start()
    in_fit.wait(10.0)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        out = {}
        try:
            out["idle"] = idle.predict(XA[:2]).tolist()
            try:
                busy.predict(XA[:2])
                out["busy"] = "answered"
            except RuntimeError as exc:
                out["busy"] = str(exc)
        except BaseException as exc:
            out["error"] = repr(exc)
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    forked.set()
    t.join(30.0)
    ready, _, _ = select.select([r], [], [], 20.0)
    if not ready:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    data = os.read(r, 1 << 16) if ready else b""
    os.close(r)
    assert ready, "the child deadlocked"
    out = json.loads(data)
    assert "error" not in out, out
    assert np.array_equal(out["idle"], idle.predict(XA[:2]))
    assert "was inherited by a fork" in out["busy"], out
