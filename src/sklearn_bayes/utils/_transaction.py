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
``clone``, ``copy`` and pickling never see it, and every copy gets its own.  A ``fork()``
waits (briefly) for the running calls and the child gets usable locks (:mod:`._fork`).

A generator is rewound only when no call on *another* object that holds the same generator
began or was running while the failing call ran (:func:`_generator_calls`): two estimators
seeded by one caller-owned ``Generator`` (or a shallow copy sharing its source's) hold
different locks, and a rewind after the other one drew and released noise would hand that
noise out again (the HQH review: two sketches, ``2 a1 - a2`` gave every count).  Then the
rejected call leaves the generator advanced -- fresh noise, never a replay -- and the
estimator's bindings are restored as always.
"""

import functools
import threading
import weakref

import numpy as np

from sklearn_bayes.utils._fork import check_usable, register_guard, register_instance_locks

__all__ = ["instance_lock", "serialized", "transactional"]

_LOCKS = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()
#: ``id(generator) -> [generator, {id(obj): running calls}, {id(obj): calls begun}]`` for every generator held
#: by an object with a decorated call running (entries leave with the last such call).
_GENERATOR_CALLS = {}
_GENERATOR_GUARD = threading.Lock()
# fork(): acquired before, new ones in the child (see _fork); the instance locks are handled there too
#: how many instance locks were created (under _LOCKS_GUARD): a fork lists the locks again only if it moved
_CREATED = [0]
register_instance_locks(_LOCKS, lambda: _CREATED[0])
register_guard(globals(), "_LOCKS_GUARD")
register_guard(globals(), "_GENERATOR_GUARD")


def instance_lock(obj):
    """The re-entrant lock that serialises the state-changing and noise-drawing calls on ``obj``.

    Examples
    --------
    >>> class Box:
    ...     pass
    >>> b = Box()
    >>> instance_lock(b) is instance_lock(b), instance_lock(b) is instance_lock(Box())
    (True, False)

    In a ``fork()``-ed child, an object that another thread of the parent was running a
    call on at the fork is refused with a ``RuntimeError`` (its state may be half-updated;
    see :mod:`sklearn_bayes.utils._fork`).
    """
    check_usable(obj)
    with _LOCKS_GUARD:
        lock = _LOCKS.get(obj)
        if lock is None:
            lock = _LOCKS[obj] = threading.RLock()
            _CREATED[0] += 1
        return lock


def _generators(obj):
    return [g for g in vars(obj).values() if isinstance(g, np.random.Generator)]


class _generator_calls:
    """Context manager: the decorated call of ``obj`` is running with these generators.

    ``others()`` counts the calls begun by other objects on each generator so far; a
    transaction compares it on failure with its value on entry (and rewinds nothing
    when another object was running one at entry).
    """

    def __init__(self, obj, generators):
        self.key, self.generators = id(obj), generators

    def __enter__(self):
        with _GENERATOR_GUARD:
            self.shared_at_entry = False
            for g in self.generators:
                entry = _GENERATOR_CALLS.setdefault(id(g), [g, {}, {}])
                running, begun = entry[1], entry[2]
                self.shared_at_entry |= any(n for k, n in running.items() if k != self.key)
                running[self.key] = running.get(self.key, 0) + 1
                begun[self.key] = begun.get(self.key, 0) + 1
            self.others_at_entry = self.others()
        return self

    def others(self):
        return [sum(n for k, n in _GENERATOR_CALLS[id(g)][2].items() if k != self.key) for g in self.generators]

    def exclusive(self):
        """No other object's call on these generators was running at entry or began since."""
        with _GENERATOR_GUARD:
            return not self.shared_at_entry and self.others() == self.others_at_entry

    def __exit__(self, *exc):
        with _GENERATOR_GUARD:
            for g in self.generators:
                entry = _GENERATOR_CALLS.get(id(g))
                if entry is None or entry[0] is not g:
                    continue
                entry[1][self.key] -= 1
                if not entry[1][self.key]:
                    del entry[1][self.key]
                if not entry[1]:
                    del _GENERATOR_CALLS[id(g)]
        return False


def serialized(method):
    """Decorate a method so that it runs holding the instance's lock (see :func:`instance_lock`).

    For methods that read shared state or draw released noise but need no rollback
    (queries, lazily computed fitted attributes).
    """

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with instance_lock(self), _generator_calls(self, _generators(self)):
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
            generators = _generators(self)
            rngs = [(g, g.bit_generator.state) for g in generators]
            with _generator_calls(self, generators) as calls:
                try:
                    return method(self, *args, **kwargs)
                except BaseException:
                    if calls.exclusive():  # else another object may have released what a rewind would replay
                        for g, state in rngs:
                            g.bit_generator.state = state
                    self.__dict__.clear()
                    self.__dict__.update(saved)
                    raise

    return wrapper
