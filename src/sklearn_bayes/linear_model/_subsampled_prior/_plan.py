"""Subsample sizes of Algorithm 1: the ``'auto'`` rules and the checks of explicit sizes."""

import math
from numbers import Integral

import numpy as np

#: 'auto' subsample size: expected number of rows of the rarest level of a column (or class)
_RARE_LEVEL_COUNT = 5


def _rare_level_rows(X, labels=None, count=_RARE_LEVEL_COUNT):
    """Rows needed for ``count`` expected occurrences of the rarest level.

    For every non-constant column the share of rows that differ from its more frequent
    extreme value (e.g. the share of ones of a 0/1 dummy; about 1 for a continuous column) and,
    for classifiers, the share of the rarest class.  Returns ``ceil(count / min share)``.
    """
    shares = []
    if X.shape[0]:
        lo = (X == X.min(axis=0)).mean(axis=0)
        hi = (X == X.max(axis=0)).mean(axis=0)
        share = 1.0 - np.maximum(lo, hi)
        shares.extend(share[share > 0].tolist())
    if labels is not None and labels.size:
        counts = np.bincount(labels)
        shares.append(counts[counts > 0].min() / labels.size)
    return math.ceil(count / min(shares)) if shares else 0


def _resolve_sizes(n_rows, n_params, subsample_size, n_subsamples, *, fraction, rows_per_param, min_subsamples,
                   min_rows=0, penalised=False):
    """Return ``(n, m, degraded)``: the subsample size, the number of subsamples and whether
    the ``'auto'`` size had to fall below ``n_params + 1`` (data too small).

    An explicit size ``n <= n_params`` is refused only for unregularised subsample fits
    (``penalised=False``, ``prior_scale='paper'``): ``n`` rows do not determine ``n_params``
    parameters.  The penalised fits of ``prior_scale='loo'`` (a unit prior) exist at any ``n >= 2``."""
    if n_rows < 2:
        raise ValueError(
            f"Found n_samples={n_rows} row(s) with positive sample weight; subsampling needs at least 2."
        )
    degraded = False
    if isinstance(subsample_size, str):  # 'auto'
        n = max(math.ceil(fraction * n_rows), math.ceil(rows_per_param * n_params), n_params + 1, min_rows)
        n = min(n, max(n_params + 1, n_rows // 2), n_rows - 1)
        n = max(n, 1)
        degraded = n <= n_params
    else:
        if isinstance(subsample_size, Integral):
            n = int(subsample_size)
        else:
            n = math.ceil(float(subsample_size) * n_rows)
        if n >= n_rows:
            raise ValueError(
                f"subsample_size={subsample_size!r} means {n} rows per subsample, but only {n_rows} rows "
                "(with positive sample weight) are available: the subsample size must be smaller than "
                "the number of rows."
            )
        if n <= n_params and not penalised:
            raise ValueError(
                f"subsample_size={subsample_size!r} means {n} rows per subsample, which must exceed the "
                f"number of parameters of one unregularised fit ({n_params}: features plus intercept) for "
                "that fit to exist: with prior_scale='paper' every subsample is fitted without a prior, and "
                f"{n} rows cannot determine {n_params} parameters (the fit is not unique, or does not exist "
                f"under separation). Use a subsample_size above {n_params}, or prior_scale='loo' (the "
                "default), whose penalised subsample fits exist at any size."
            )
    if isinstance(n_subsamples, str):  # 'auto': each row used about once (m ~ N / n)
        m = max(math.ceil(n_rows / n), min_subsamples)
    elif isinstance(n_subsamples, Integral):
        m = int(n_subsamples)
    else:  # a float: expected number of times each row is used, m = coverage * N / n
        m = max(2, math.ceil(float(n_subsamples) * n_rows / n))
    return n, m, degraded


#: a column whose rows other than its largest spread less than this fraction of its standard
#: deviation (that one row holds more than 99.999 % of its variance) is dominated by that row:
#: the standardised fit sees the others as about 0
_DOMINATED_WARN = 3e-3
#: ... and below this fraction centring in float64 keeps fewer than ~4 of the others' digits
_DOMINATED_REFUSE = 1e-12
