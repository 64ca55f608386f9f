"""The streaming-state toolkit: parameters frozen for a running stream, and one generator-state digest.

A streaming estimator (``partial_fit``) is built with some parameters (a privacy budget, a
mechanism, a table shape) that must not change behind a running stream's back: ``set_params``
after fitting may change them for the next ``fit`` (a restart), never for the stream in
progress.  :func:`record_parameters` takes the values at the first fitting call and
:func:`first_changed_parameter` finds the first one that differs now, under the estimator's
own notion of "the same value"; the estimator words the refusal.

:func:`state_digest` is the one digest of a generator's state, used wherever a state must be
recognised again (the replay registry of :func:`~sklearn_bayes.utils.check_privacy_random_state`,
the seed of lazily computed estimates).
"""

import hashlib
import pickle

import numpy as np

__all__ = ["first_changed_parameter", "record_parameters", "state_digest"]


def state_digest(random_state):
    """SHA-256 of the state of a ``numpy.random.Generator`` or ``RandomState`` (32 bytes).

    Examples
    --------
    >>> import numpy as np
    >>> state_digest(np.random.default_rng(0)) == state_digest(np.random.default_rng(0))
    True
    >>> len(state_digest(np.random.RandomState(0)))
    32
    """
    state = (random_state.bit_generator.state if isinstance(random_state, np.random.Generator)
             else random_state.get_state(legacy=False))
    return hashlib.sha256(pickle.dumps(state, protocol=4)).digest()


def record_parameters(estimator, names):
    """The current values of the parameters ``names`` of ``estimator``, as a new dict.

    Examples
    --------
    >>> class Est:
    ...     epsilon, depth = 1.0, 3
    >>> record_parameters(Est(), ("epsilon", "depth"))
    {'epsilon': 1.0, 'depth': 3}
    """
    return {name: getattr(estimator, name) for name in names}


def first_changed_parameter(estimator, recorded, same):
    """The first ``(name, recorded_value, current_value)`` whose values are not ``same``, or None.

    Parameters
    ----------
    estimator : object
        Holds the current values as attributes.
    recorded : dict
        The values recorded by :func:`record_parameters`, in the order to check.
    same : callable
        ``same(name, recorded_value, current_value) -> bool``, the estimator's notion of an
        unchanged value (e.g. ``1 == 1.0`` but ``True != 1``).

    Examples
    --------
    >>> class Est:
    ...     epsilon, depth = 1.0, 3
    >>> est = Est()
    >>> rec = record_parameters(est, ("epsilon", "depth"))
    >>> est.depth = 5
    >>> first_changed_parameter(est, rec, lambda name, a, b: a == b)
    ('depth', 3, 5)
    """
    for name, old in recorded.items():
        new = getattr(estimator, name)
        if not same(name, old, new):
            return name, old, new
    return None
