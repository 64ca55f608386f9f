"""Validation helpers shared by the estimators: budgets, integer constraints, random states."""

import numbers
import os
import sys
import warnings

import numpy as np
import sklearn
from sklearn.utils._param_validation import Interval

from sklearn_bayes.exceptions import SeededNoiseWarning


def check_epsilon(epsilon, name="epsilon"):
    """Validate a privacy budget: a finite real number > 0.

    Parameters
    ----------
    epsilon : float
        The value to check.
    name : str, default="epsilon"
        Argument name used in the error message.

    Returns
    -------
    epsilon : float

    Raises
    ------
    TypeError
        If ``epsilon`` is not a real number (booleans are rejected).
    ValueError
        If ``epsilon`` is not finite or not strictly positive.
    """
    if isinstance(epsilon, (bool, np.bool_)) or not isinstance(epsilon, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {epsilon!r} of type {type(epsilon).__name__}.")
    epsilon = float(epsilon)
    if not np.isfinite(epsilon) or epsilon <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {epsilon!r}.")
    return epsilon


class IntegerInterval(Interval):
    """``Interval(numbers.Integral, ...)`` for ``_parameter_constraints`` that rejects booleans.

    ``True`` is an :class:`numbers.Integral` in Python, so scikit-learn's interval
    accepts ``depth=True`` as 1; a size, a count or a seed given as a boolean is a
    mistake and is refused with the usual ``InvalidParameterError``.

    Examples
    --------
    >>> c = IntegerInterval(1, None, closed="left")
    >>> c.is_satisfied_by(3), c.is_satisfied_by(True), c.is_satisfied_by(0)
    (True, False, False)
    """

    def __init__(self, left, right, *, closed):
        super().__init__(numbers.Integral, left, right, closed=closed)

    def is_satisfied_by(self, val):
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)

    def __str__(self):
        return super().__str__() + " (not a bool)"


class RealInterval(Interval):
    """``Interval(numbers.Real, ...)`` for ``_parameter_constraints`` that rejects booleans.

    ``True`` is a :class:`numbers.Real` in Python, so scikit-learn's interval accepts
    ``epsilon=True`` as 1.0; a privacy budget, a bound or a rate given as a boolean is a
    mistake and is refused with the usual ``InvalidParameterError``.

    Examples
    --------
    >>> c = RealInterval(0, None, closed="neither")
    >>> c.is_satisfied_by(0.5), c.is_satisfied_by(True), c.is_satisfied_by(-1.0)
    (True, False, False)
    """

    def __init__(self, left, right, *, closed):
        super().__init__(numbers.Real, left, right, closed=closed)

    def is_satisfied_by(self, val):
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)

    def __str__(self):
        return super().__str__() + " (not a bool)"


def check_generator(random_state):
    """Return a :class:`numpy.random.Generator` for ``random_state`` (the one helper for randomness).

    ``None`` seeds from the operating system, an int seeds a new generator, a
    :class:`numpy.random.Generator` is used as is (the caller owns it), and a legacy
    :class:`numpy.random.RandomState` is converted by drawing a seed from it.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState

    Returns
    -------
    rng : numpy.random.Generator

    Raises
    ------
    TypeError
        For any other value (booleans included).

    Examples
    --------
    >>> bool(check_generator(0).integers(10) == check_generator(0).integers(10))
    True
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**63 - 1, dtype=np.int64))
    if isinstance(random_state, (numbers.Integral, np.integer)) and not isinstance(random_state, (bool, np.bool_)):
        return np.random.default_rng(int(random_state))
    raise TypeError(
        "random_state must be None, an int, a numpy.random.Generator or a numpy.random.RandomState, "
        f"got {random_state!r}."
    )


def check_privacy_random_state(random_state, owner="this mechanism"):
    """:func:`check_generator` for privacy noise: an integer seed emits :class:`SeededNoiseWarning`.

    An integer seed gives reproducible noise, which is useful in tests and experiments
    but destroys the guarantee if the seed is known.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
    owner : str
        Name used in the warning.

    Returns
    -------
    rng : numpy.random.Generator
    """
    rng = check_generator(random_state)
    if isinstance(random_state, (numbers.Integral, np.integer)):
        warnings.warn(
            f"{owner} was given an integer random_state: its privacy noise is reproducible "
            "from the seed. Use seeded noise for testing only; use random_state=None in production.",
            SeededNoiseWarning,
            stacklevel=external_stacklevel(),
        )
    return rng


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SKLEARN_DIR = os.path.dirname(os.path.abspath(sklearn.__file__))


def external_stacklevel():
    """The ``stacklevel`` at which a warning points to the first caller outside this package.

    Estimators reach the code that warns through decorators (``_fit_context``,
    :func:`transactional`) and private helpers, so a fixed ``stacklevel`` would point at our
    own files; this one points at the user's line (scikit-learn's meta-estimators count as
    callers when they fit our estimators).
    """
    level = 1
    frame = sys._getframe(1)  # the function that calls warnings.warn
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not (path.startswith(_PACKAGE_DIR) or path == os.path.join(_SKLEARN_DIR, "base.py")):
            return level
        frame = frame.f_back
        level += 1
    return level
