"""One warning for the two interval conventions of the package (review HNR, F2).

``conf_int(alpha=0.05)`` takes one minus the coverage (statsmodels' convention), while
``credible_interval(level=0.95)`` and the sketch's bounds (``confidence=0.95``) take the
coverage itself.  Passing one convention's value to the other silently returned a 5 %
interval; :func:`warn_if_swapped_coverage` warns instead.
"""

import numbers
import warnings

from sklearn_bayes.utils._validation import external_stacklevel

#: the arguments that hold the coverage itself (every other name holds one minus the coverage)
COVERAGE_NAMES = ("level", "confidence")


def _short(x):
    """``x`` with at most 6 significant digits and no trailing zeros (``0.05``, ``0.1``)."""
    return f"{x:.6g}"


def warn_if_swapped_coverage(value, name="alpha"):
    """Warn when an interval argument looks like the other convention's value.

    Parameters
    ----------
    value : object
        The argument as the user passed it.  Anything that is not a real number in (0, 1)
        is left to the caller's own validation (no warning).
    name : str, default='alpha'
        The argument's name.  ``'alpha'`` (and any name not in :data:`COVERAGE_NAMES`) is one
        minus the coverage: a value above 0.5 warns.  ``'level'`` or ``'confidence'`` is the
        coverage: a value below 0.5 warns.

    Returns
    -------
    warned : bool
        Whether a ``UserWarning`` was issued; it points at the first caller outside the
        package (:func:`~sklearn_bayes.utils._validation.external_stacklevel`).

    Notes
    -----
    With ``alpha`` the interval covers :math:`1 - \\alpha`; with ``level`` it covers ``level``.
    An interval of coverage below 1/2 is hardly ever wanted, while the swapped argument
    (``alpha=0.95`` for a 95 % interval, or ``level=0.05``) gives exactly such an interval, so
    a coverage below 1/2 is taken as the sign of a swap.  A coverage of exactly 1/2 does not
    warn.  The result is unchanged: the warning only names the call that gives 95 %.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     warn_if_swapped_coverage(0.95, "alpha")
    True
    >>> print(w[0].message)
    alpha=0.95 gives a 5 % interval (alpha is one minus the coverage); for a 95 % interval pass alpha=0.05.
    >>> warn_if_swapped_coverage(0.95, "level"), warn_if_swapped_coverage(0.05, "alpha")
    (False, False)
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    value = float(value)
    if not 0.0 < value < 1.0:
        return False
    coverage_name = name in COVERAGE_NAMES
    coverage = value if coverage_name else 1.0 - value
    if coverage >= 0.5:
        return False
    wanted = 1.0 - value
    meaning = "the coverage" if coverage_name else "one minus the coverage"
    warnings.warn(
        f"{name}={_short(value)} gives a {_short(100 * coverage)} % interval ({name} is {meaning}); for a "
        f"{_short(100 * (1 - coverage))} % interval pass {name}={_short(wanted)}.",
        UserWarning, stacklevel=external_stacklevel(),
    )
    return True
