"""One transaction pattern for the streaming estimators.

A method decorated with :func:`transactional` either completes or leaves the estimator
exactly as it was: on any exception the instance ``__dict__`` is restored to the
bindings it had on entry, and the state of every :class:`numpy.random.Generator` it
held is rewound.  The methods follow one rule to make this sufficient: *validate the
whole batch first, compute on copies of whatever small state they change, and bind
the results (or mutate large tables in place) only at the end, in steps that cannot
fail*.  Append-only buffers may be written beyond their recorded length, because the
length itself is rolled back.

Calls on one instance are serialised: every :func:`transactional` or :func:`serialized`
method holds the instance's re-entrant lock (:func:`instance_lock`) for its whole run, so
a rollback in one thread never rewinds a generator that another thread has meanwhile
drawn released noise from, and two concurrent recording calls never lose each other's
updates.  The lock lives outside the instance (a weak-keyed registry), so ``get_params``,
``clone``, ``copy`` and pickling never see it, and every copy gets its own.
"""

import functools
import threading
import weakref

import numpy as np

__all__ = ["instance_lock", "serialized", "transactional"]

_LOCKS = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def instance_lock(obj):
    """The re-entrant lock that serialises the state-changing and noise-drawing calls on ``obj``.

    Examples
    --------
    >>> class Box:
    ...     pass
    >>> b = Box()
    >>> instance_lock(b) is instance_lock(b), instance_lock(b) is instance_lock(Box())
    (True, False)
    """
    with _LOCKS_GUARD:
        lock = _LOCKS.get(obj)
        if lock is None:
            lock = _LOCKS[obj] = threading.RLock()
        return lock


def serialized(method):
    """Decorate a method so that it runs holding the instance's lock (see :func:`instance_lock`).

    For methods that read shared state or draw released noise but need no rollback
    (queries, lazily computed fitted attributes).
    """

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with instance_lock(self):
            return method(self, *args, **kwargs)

    return wrapper


def transactional(method):
    """Decorate a state-changing method so that a rejected call changes nothing.

    Examples
    --------
    >>> class Counter:
    ...     def __init__(self):
    ...         self.n = 0
    ...     @transactional
    ...     def add(self, k):
    ...         self.n += 1
    ...         if k < 0:
    ...             raise ValueError("k must be >= 0")
    >>> c = Counter(); c.add(1)
    >>> try:
    ...     c.add(-1)
    ... except ValueError:
    ...     pass
    >>> c.n
    1
    """

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with instance_lock(self):
            saved = dict(self.__dict__)
            rngs = [(g, g.bit_generator.state) for g in saved.values() if isinstance(g, np.random.Generator)]
            try:
                return method(self, *args, **kwargs)
            except BaseException:
                for g, state in rngs:
                    g.bit_generator.state = state
                self.__dict__.clear()
                self.__dict__.update(saved)
                raise

    return wrapper
