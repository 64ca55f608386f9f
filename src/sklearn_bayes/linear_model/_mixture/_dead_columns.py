"""Features of :class:`~sklearn_bayes.MixtureMEstimatorRegressor` that carry no parameter, and the fit without them.

A column is *dead* when it is constant and an intercept is fitted (all zeros without one), or *aliased*: a linear
combination of earlier columns on the rows with positive weight (a duplicated feature, a sum of others, a full set
of dummies next to the intercept).  Every estimate -- the start, the loss selection (whose sandwich ``A`` would be
singular for every loss), the scale corrections that count parameters, the elemental subsets -- is then made on the
other columns, and the dead ones are reported with coefficient 0 and NaN standard errors (R's ``lm`` reports NA):
the fit with such columns is the fit without them, bit for bit.
"""

import numpy as np

from sklearn_bayes._glm import dominated_columns
from sklearn_bayes._glm._base import _column_offset_scale
from sklearn_bayes.linear_model._mixture._inference import aliased_columns

__all__ = ["dead_columns", "fit_live"]

#: a column whose rows other than its largest vary by less than this fraction of its sd is refused: the fit's
#: standardised normal equations carry them at the square of that ratio, below 100 rounding errors of that row
#: (as ``ClosedFormRidge``; at 1e9-1e10 times the others the columns were set aside as aliased, silently)
DOMINATED_REFUSE = 1e-7

#: attributes of the fit with one entry (row and column) per feature
_PER_FEATURE = ("coef_", "mm_coef_")
_PER_FEATURE_SQUARE = ("coef_covariance_", "_params_covariance")


def dead_columns(X, sw, fit_intercept):
    """Boolean mask of the dead columns of ``X`` (weights ``sw``): constant (zero without an intercept) or aliased
    (:func:`~sklearn_bayes.linear_model._mixture._inference.aliased_columns` of the columns standardised as the fit
    standardises them).

    A ``ValueError`` naming ``X`` where one row holds a column's whole spread (:data:`DOMINATED_REFUSE`): the other
    rows' digits would be rounded away by the standardisation, and the columns declared aliased."""
    pos = sw > 0
    ratio = dominated_columns(X[pos], sw[pos])
    if np.any(ratio < DOMINATED_REFUSE):
        j = int(np.nanargmin(ratio))
        raise ValueError(
            f"X: in column {j} one row holds nearly all the spread (the other rows vary by {ratio[j]:.1e} of the "
            "column's standard deviation). The fit runs on standardised columns, where the other rows would keep "
            "fewer digits than the fit needs (at 1e10 times the others their coefficients came out 0). A robust "
            "fit sets such a row aside only if it can still tell the others apart: rescale that row (or the "
            "column, e.g. by a log or rank transform), or remove it."
        )
    offset, scale, flat = _column_offset_scale(X, sw, fit_intercept)
    if X.shape[1] - int(flat.sum()) < 2:  # aliasing needs two live columns
        return flat
    Z = (X - offset) / scale if fit_intercept else X / scale
    Z[:, flat] = 0.0
    return flat | aliased_columns(Z, sw)


def fit_live(est, X, y, sw, dead, guard):
    """Fit a copy of ``est`` (same parameter objects: a ``random_state`` generator is shared, as in a fit of ``est``)
    on the live columns of ``X`` and store its fit in ``est`` with the dead columns put back: coefficient 0
    (``coef_``, ``mm_coef_``), NaN rows and columns of the covariances.  ``n_features_in_`` and
    ``feature_names_in_`` stay those of the full ``X`` (set by the caller's validation).  Returns ``est``.

    The copy is fitted inside ``est``'s transaction (its undecorated ``_fit``, with the caller's ``guard``): a
    fit of its own would register the shared generator under a second object, and a rejected call could then
    rewind it no more (H30S: the caller's generator was left advanced)."""
    live = ~dead
    inner = type(est)(**est.get_params(deep=False))
    inner._fit(X[:, live], y, sw, guard)
    state = dict(vars(inner))
    for key in ("n_features_in_", "feature_names_in_"):
        state.pop(key, None)
    d = X.shape[1]
    for key in _PER_FEATURE:
        if state.get(key) is not None:
            full = np.zeros(d)
            full[live] = state[key]
            state[key] = full
    for key in _PER_FEATURE_SQUARE:
        small = state[key]
        full = np.full((d + small.shape[0] - int(live.sum()),) * 2, np.nan)
        idx = np.append(np.flatnonzero(live), np.arange(d, full.shape[0]))  # the intercept's row stays last
        full[np.ix_(idx, idx)] = small
        if not est.fit_intercept and full.shape[0] > d:  # the intercept's row and column are 0 without one
            full[d, :] = full[:, d] = 0.0
        state[key] = full
    vars(est).update(state)
    return est
