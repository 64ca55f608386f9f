"""The exact decimal sums by which a :class:`~sklearn_bayes.privacy.PrivacyLedger` adds its amounts.

Shared by the ledger (``_accounting``) and its file (``_ledger_sqlite``), which keeps the
running totals of its records in the same exact form.
"""

import fractions
import math


def decimal_sum(values):
    """The exact sum of ``values`` read as the shortest decimals that print them (``repr``).

    The one rule by which the ledger adds amounts and compares them with its budget (its totals,
    ``remaining()`` and the refusal share it): ten releases of ``0.1`` spend exactly ``1.0`` and
    three of ``0.4`` exactly ``1.2``, as the user wrote them.  Each amount differs from its binary
    value by less than half an ulp, so a total differs from the binary sum by less than
    ``n * 2**-53`` relatively (immaterial for privacy; a binary sum would refuse the third 0.4
    release against a budget of 1.2 by 2e-16).
    """
    total = fractions.Fraction(0)
    for v in values:
        v = float(v)
        if math.isinf(v):  # a budget of inf (amounts are finite)
            return math.inf
        total += fractions.Fraction(repr(v))  # exact: no rounding to a context precision
    return total
