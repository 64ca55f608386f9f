"""One transaction pattern for the streaming estimators.

A method decorated with :func:`transactional` either completes or leaves the estimator
exactly as it was: on any exception the instance ``__dict__`` is restored to the
bindings it had on entry, and the state of every :class:`numpy.random.Generator` it
held is rewound.  The methods follow one rule to make this sufficient: *validate the
whole batch first, compute on copies of whatever small state they change, and bind
the results (or mutate large tables in place) only at the end, in steps that cannot
fail*.  Append-only buffers may be written beyond their recorded length, because the
length itself is rolled back.
"""

import functools

import numpy as np

__all__ = ["transactional"]


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
