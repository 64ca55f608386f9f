"""Shared tools of the property-based test suites (Hypothesis): settings, byte-identity and
canonical-state snapshots, the rejection check.  Loaded by path (the suites run with
``--import-mode=importlib``); see tests/privacy/sketch/test_properties.py and its siblings.
"""


import pickle
import re
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import note as _hypothesis_note
from hypothesis.errors import InvalidArgument

from sklearn_bayes.privacy import PrivacyLedger



def _settings(n, shrink=True):
    # no Phase.explain: its coverage tracing makes a failing run minutes long
    phases = (Phase.explicit, Phase.reuse, Phase.generate) + ((Phase.shrink,) if shrink else ())
    return settings(
        max_examples=n,
        phases=phases,
        deadline=None,
        derandomize=True,
        database=None,
        report_multiple_bugs=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


def note(text):
    """``hypothesis.note`` that also works when a helper is called outside a test (reproductions)."""
    try:
        _hypothesis_note(text)
    except InvalidArgument:
        print(text)


def _pickled(est):
    """The byte-identity the house rules promise: ``pickle.dumps`` of the whole estimator."""
    return pickle.dumps(est, protocol=pickle.HIGHEST_PROTOCOL)


def _canonical(obj):
    """A canonical snapshot of an estimator's state for comparing *two different objects*.

    ``pickle.dumps`` is the byte-identity check for one object before and after a rejected
    call.  Two objects with equal state (an original and its unpickled copy, or two runs of
    one stream) can still pickle to different bytes for a legitimate reason: the pickle memo
    records object *identity*, so a numpy dtype or a shape tuple shared between attributes in
    one object and not in the other changes the byte stream without changing any value.
    This snapshot compares every attribute by value instead: arrays by dtype, shape and
    bytes, generators by their bit-generator state, containers recursively.
    """
    if isinstance(obj, np.ndarray):
        return ("ndarray", obj.dtype.str, obj.shape, np.ascontiguousarray(obj).tobytes())
    if isinstance(obj, np.random.Generator):
        return ("Generator", repr(obj.bit_generator.state))
    if isinstance(obj, dict):
        return ("dict", tuple((repr(k), _canonical(v)) for k, v in obj.items()))
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, tuple(_canonical(v) for v in obj))
    if isinstance(obj, (str, bytes, int, float, bool, type(None), np.generic)):
        return (type(obj).__name__, repr(obj))
    state = obj.__getstate__() if hasattr(obj, "__getstate__") else vars(obj)
    if isinstance(state, dict) or state is None:
        return (type(obj).__qualname__, _canonical(state or {}))
    return (type(obj).__qualname__, repr(state))


def _release_state(est):
    """Every attribute of ``est`` as comparable bytes, for one object before and after a refused call: a ledger by
    its identity and records (the ledger object itself is shared state), a generator by its identity and state,
    everything else by its pickle."""
    out = {}
    for k, v in vars(est).items():
        if isinstance(v, PrivacyLedger):
            out[k] = ("ledger", id(v), pickle.dumps(v.records))
        elif isinstance(v, np.random.Generator):
            out[k] = ("rng", id(v), pickle.dumps(v.bit_generator.state))
        else:
            out[k] = pickle.dumps(v)
    return out


def run_threads(*targets, barrier=True):
    """Run each callable of ``targets`` in its own thread (released together by a barrier unless ``barrier`` is
    false), join them all, and re-raise the first exception a thread raised in the calling thread."""
    errors = []
    gate = threading.Barrier(len(targets)) if barrier else None

    def wrap(f):
        def run():
            try:
                if gate is not None:
                    gate.wait()
                f()
            except BaseException as exc:  # re-raised in the main thread
                errors.append(exc)

        return run

    threads = [threading.Thread(target=wrap(f)) for f in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _expect_rejection(call, types, pattern, est, what):
    """``call()`` must raise one of ``types`` with a message matching ``pattern`` and leave
    ``est`` byte-identical."""
    before = _pickled(est)
    with pytest.raises(types) as info:
        call()
    msg = str(info.value)
    note(f"{what}: {type(info.value).__name__}: {msg}")
    if pattern is not None:
        assert re.search(pattern, msg), f"{what}: the message does not name the problem ({pattern!r}): {msg!r}"
    assert _pickled(est) == before, f"{what}: the rejected call changed the estimator"
    return info.value


def _names(arg):
    """A regex matching the argument name as a word (``X`` but not ``Xt``; ``y`` but not ``your``)."""
    return rf"(?<![A-Za-z0-9_]){re.escape(arg)}(?![A-Za-z0-9_])"


def _gen(seed):
    return np.random.default_rng(seed)




def dominated_design(rng):
    """A random design for the dominated-row checks (``_glm.dominated_candidates`` and the mixture's screen): columns
    over the float range, one row blown up by 1 to 1e14 (the callers' levels 1e-12, 1e-7 and 3e-3 fall inside),
    ties, a dummy with one 1, zero and unequal weights.  Returns ``(X, w)``."""
    import numpy as np

    n, p = int(rng.integers(3, 300)), int(rng.integers(1, 5))
    X = rng.normal(size=(n, p)) * 10.0 ** rng.uniform(-200, 200, size=p)
    kind = int(rng.integers(0, 4))
    if kind >= 1:
        X[rng.integers(n), rng.integers(p)] *= 10.0 ** rng.uniform(0, 14)
    if kind == 2:
        X[:, 0] = np.round(X[:, 0])
    if kind == 3:
        X[:, -1] = 0.0
        X[rng.integers(n), -1] = 1.0
    w = rng.uniform(0, 2, size=n) if rng.random() < 0.5 else np.ones(n)
    return X, w
