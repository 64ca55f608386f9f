"""Features of :class:`~sklearn_bayes.MixtureMEstimatorRegressor` that carry no parameter, and the fit without them.

A column is *dead* when it is constant and an intercept is fitted (all zeros without one), or *aliased*: a linear
combination of earlier columns on the rows with positive weight (a duplicated feature, a sum of others, a full set
of dummies next to the intercept).  Every estimate -- the start, the loss selection (whose sandwich ``A`` would be
singular for every loss), the scale corrections that count parameters, the elemental subsets -- is then made on the
other columns, and the dead ones are reported with coefficient 0 and NaN standard errors (R's ``lm`` reports NA):
the fit with such columns is the fit without them, bit for bit.
"""

import numpy as np

from sklearn_bayes._glm import dominated_candidates, dominated_columns
from sklearn_bayes.linear_model._mixture._inference import aliased_columns
from sklearn_bayes.linear_model._mixture._units import column_units

__all__ = ["dead_columns", "fit_live"]

#: a column whose rows other than its largest vary by less than this fraction of its sd is refused: the fit's
#: standardised normal equations carry them at the square of that ratio, below 100 rounding errors of that row
#: (as ``ClosedFormRidge``; at 1e9-1e10 times the others the columns were set aside as aliased, silently)
DOMINATED_REFUSE = 1e-7

#: a *far* column (standardised by its median and MAD, see ``_units.column_units``) with a value more than this many
#: robust scales from its median is refused: beyond about 1e154 the squares of the standardised values overflow and
#: the sandwich's standard errors came out NaN (a whole row times 1e160 among 99 of order 1); 1e100 leaves room for
#: the sums over rows and the coefficients' size (times 1e9 ... 1e150, the fit equals that at 1e3 times, bit for bit)
FAR_REFUSE = 1e100

#: attributes of the fit with one entry (row and column) per feature
_PER_FEATURE = ("coef_", "mm_coef_")
_PER_FEATURE_SQUARE = ("coef_covariance_", "_params_covariance")


def dead_columns(X, sw, fit_intercept, return_units=False):
    """Boolean mask of the dead columns of ``X`` (weights ``sw``): constant (zero without an intercept) or aliased
    (:func:`~sklearn_bayes.linear_model._mixture._inference.aliased_columns` of the columns standardised as the fit
    standardises them).

    A ``ValueError`` naming ``X`` where one row holds a column's whole spread (:data:`DOMINATED_REFUSE`) and the
    column is not *far* (:func:`~sklearn_bayes.linear_model._mixture._units.column_units`: its MAD is 0, or its
    sd less than ``FAR_MEAN`` robust scales): the other rows' digits would be rounded away by the standardisation,
    and the columns declared aliased.  A far column is standardised by its median and MAD, which keep them.
    ``return_units``: also return the :func:`~sklearn_bayes.linear_model._mixture._units.column_units` computed
    here, for the fit's standardisation (one pass of the screen a fit)."""
    units = column_units(X, sw, fit_intercept)
    mask = _dead_mask(X, sw, fit_intercept, units)
    return (mask, units) if return_units else mask


def _dead_mask(X, sw, fit_intercept, units):
    """:func:`dead_columns` given the column units."""
    pos = sw > 0
    offset, scale, flat, far, reach = units
    beyond = far & (reach > FAR_REFUSE)
    if np.any(beyond):
        j = int(np.flatnonzero(beyond)[0])
        raise ValueError(
            f"X: column {j} has a value {reach[j]:.1e} robust scales (1.4826 MAD) from its median. A robust fit "
            f"sets such a row aside up to {FAR_REFUSE:.0e} robust scales; beyond, the squares of the standardised "
            "values overflow and the standard errors come out NaN. Rescale that row (or the column, e.g. by a log "
            "or rank transform), or remove it."
        )
    A, w = (X, sw) if pos.all() else (X[pos], sw[pos])
    cand = _dominated_candidates(A, w, units, fit_intercept)
    ratio = np.full(X.shape[1], np.nan)
    if cand.any():
        ratio[cand] = dominated_columns(A[:, cand], w)
    refused = (ratio < DOMINATED_REFUSE) & ~far  # a far column is standardised by its median and MAD
    if np.any(refused):
        j = int(np.nanargmin(np.where(refused, ratio, np.nan)))
        raise ValueError(
            f"X: in column {j} one row holds nearly all the spread (the other rows vary by {ratio[j]:.1e} of the "
            "column's standard deviation). The fit runs on standardised columns, where the other rows would keep "
            "fewer digits than the fit needs (at 1e10 times the others their coefficients came out 0). A robust "
            "fit sets such a row aside only if it can still tell the others apart: rescale that row (or the "
            "column, e.g. by a log or rank transform), or remove it."
        )
    if X.shape[1] - int(flat.sum()) < 2:  # aliasing needs two live columns
        return flat
    Z = (X - offset) / scale if fit_intercept else X / scale
    Z[:, flat] = 0.0
    if not far.any():
        return flat | aliased_columns(Z, sw)
    # a far column is centred on its median, not its mean: the intercept's span is not projected out, so it is a
    # column of its own; and each row is divided by its largest |z| beyond 1 (a positive row scaling leaves linear
    # dependence as it was), so a gross row neither overflows the norms nor passes for the only direction
    if fit_intercept:
        Z = np.column_stack([np.ones(len(Z)), Z])
    Z /= np.maximum(1.0, np.max(np.abs(Z), axis=1))[:, None]
    aliased = aliased_columns(Z, sw)
    return flat | (aliased[1:] if fit_intercept else aliased)


def _dominated_candidates(A, w, units, fit_intercept):
    """Live, non-far columns that may be dominated by one row (:func:`~sklearn_bayes._glm.dominated_candidates` at
    :data:`DOMINATED_REFUSE`, with the fit's column units as mean and sd where they are those: with an intercept,
    for the columns that are not far; without one the units hold a root mean square, and the screen computes its
    own).  The exact :func:`~sklearn_bayes._glm.dominated_columns` then runs on these only: at ``1e5 x 20`` it took
    47 of a fit's 205 ms (goal 4's cells had drifted to 2.1-2.2 times Huber)."""
    offset, scale, flat, far, _ = units
    live = ~flat & ~far
    out = np.zeros(A.shape[1], dtype=bool)
    if not live.any():
        return out
    cols = np.flatnonzero(live)
    B = A if len(cols) == A.shape[1] else A[:, cols]
    given = (offset[cols], scale[cols]) if fit_intercept else (None, None)
    out[cols] = dominated_candidates(B, w, DOMINATED_REFUSE, *given)
    return out


def fit_live(est, X, y, sw, dead, guard):
    """Fit a copy of ``est`` (same parameter objects: a ``random_state`` generator is shared, as in a fit of ``est``)
    on the live columns of ``X`` and store its fit in ``est`` with the dead columns put back: coefficient 0
    (``coef_``, ``mm_coef_``), NaN rows and columns of the covariances.  ``n_features_in_`` and
    ``feature_names_in_`` stay those of the full ``X`` (set by the caller's validation).  Returns ``est``.

    The copy is fitted inside ``est``'s transaction (its undecorated ``_fit``, with the caller's ``guard``): a
    fit of its own would register the shared generator under a second object, and a rejected call could then
    rewind it no more (H30S: the caller's generator was left advanced)."""
    live = ~dead
    d = X.shape[1]
    inner = type(est)(**est.get_params(deep=False))
    names = getattr(est, "feature_names_in_", None)  # the inner fit's warnings name the full X's columns
    names = [str(n) for n in names] if names is not None else [f"x{j}" for j in range(d)]
    inner._column_names = [names[j] for j in np.flatnonzero(live)]
    inner._fit(X[:, live], y, sw, guard)
    state = dict(vars(inner))
    for key in ("n_features_in_", "feature_names_in_", "_column_names"):
        state.pop(key, None)
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
    se = state.get("_params_se")
    if se is not None:  # the standard errors (review HMU F7's exact-units ones) with NaN for the dead columns
        full = np.full(d + len(se) - int(live.sum()), np.nan)
        full[np.append(np.flatnonzero(live), np.arange(d, full.shape[0]))] = se
        if not est.fit_intercept and full.shape[0] > d:
            full[d] = 0.0
        state["_params_se"] = full
    vars(est).update(state)
    return est
