"""Validation helpers shared by the estimators."""

import numbers
import warnings

import numpy as np


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


class SeededNoiseWarning(UserWarning):
    """Warning: privacy noise drawn from a seeded generator is reproducible, hence not private."""


def check_privacy_random_state(random_state, owner="this mechanism"):
    """Return a :class:`numpy.random.Generator` for privacy noise.

    ``None`` seeds from the operating system's entropy.  An integer seed gives
    reproducible noise, which is useful in tests and experiments but destroys
    the guarantee if the seed is known, so it emits :class:`SeededNoiseWarning`.
    A :class:`numpy.random.Generator` is used as is (the caller owns it).
    A legacy :class:`numpy.random.RandomState` is converted by drawing a seed.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
    owner : str
        Name used in the warning.

    Returns
    -------
    rng : numpy.random.Generator
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**63 - 1, dtype=np.int64))
    if isinstance(random_state, (numbers.Integral, np.integer)) and not isinstance(random_state, bool):
        warnings.warn(
            f"{owner} was given an integer random_state: its privacy noise is reproducible "
            "from the seed. Use seeded noise for testing only; use random_state=None in production.",
            SeededNoiseWarning,
            stacklevel=3,
        )
        return np.random.default_rng(int(random_state))
    raise TypeError(
        "random_state must be None, an int, a numpy.random.Generator or a numpy.random.RandomState, "
        f"got {random_state!r}."
    )
