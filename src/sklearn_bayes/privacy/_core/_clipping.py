"""Clipping to public bounds: the only preprocessing that keeps a per-record privacy guarantee."""

import fractions

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_bayes.utils._validation import check_container, naming
from sklearn_bayes.utils import RealInterval, serialized

__all__ = ["RowNormClipper", "clip_rows", "clip_values"]


def clip_rows(X, bound):
    """Scale down every row of ``X`` whose Euclidean norm exceeds ``bound`` to norm ``bound``.

    Rows inside the ball are left unchanged.  The map acts on each row alone, so a
    record's clipped value never depends on the other records.  Every returned row has
    norm at most ``bound``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Finite values (a row with an infinite or NaN entry has no direction to keep: refused).
    bound : float
        The radius, > 0 (``inf`` clips nothing).

    Returns
    -------
    X_clipped : ndarray of shape (n_samples, n_features)

    Raises
    ------
    ValueError
        If ``X`` is not 2-D or has a non-finite value, or ``bound`` is not > 0 (the message
        prints no data value).

    Examples
    --------
    >>> clip_rows(np.array([[3.0, 4.0], [0.3, 0.4]]), 1.0)
    array([[0.6, 0.8],
           [0.3, 0.4]])
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features), got {X.ndim} dimension(s).")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains a non-finite value (inf or NaN): such a row cannot be clipped into the ball.")
    bound = float(bound)
    if not bound > 0:  # NaN too: every comparison with it is False and nothing would be clipped
        raise ValueError(f"bound must be > 0, got {bound!r}.")
    # the norm of each row is computed as m * r with m = max |x_i| and r = ||x / m|| in
    # [1, sqrt(d)]: squaring x directly underflows to 0 below ~1e-154 (no row would be
    # clipped: an unbounded sensitivity) and overflows above ~1e154
    m = np.max(np.abs(X), axis=1) if X.shape[1] else np.zeros(X.shape[0])
    safe = np.where(m > 0, m, 1.0)
    Y = X / safe[:, None]
    r = np.sqrt(np.einsum("ij,ij->i", Y, Y))
    with np.errstate(divide="ignore", over="ignore", under="ignore"):
        limit = float(bound) / safe  # over <=> m r > bound <=> r > bound / m
    over = (m > 0) & (r > limit)
    scale = np.ones_like(r)
    # a clipped row is shrunk 4 ulps below the bound, so rounding cannot push it outside
    shrink = 1.0 - 4 * np.finfo(np.float64).eps
    scale[over] = limit[over] / r[over] * shrink
    out = X * scale[:, None]
    # Rows where that product loses its precision: bound / m below the normal range (its
    # subnormal quotient keeps few bits: rows of 1e240 clipped to 5.5e-80 came out 0.04 % too
    # long), or a bound so small that the clipped values are subnormal.  They are scaled from
    # Y = row / m instead (bound / r is then a normal number), and for a tiny bound checked exactly.
    tiny = np.finfo(np.float64).tiny
    fragile = over & ((limit < tiny) | (bound < _TINY_BOUND))
    for i in np.flatnonzero(fragile):
        out[i] = Y[i] * (bound / r[i] * shrink)
        if bound < _TINY_BOUND:
            out[i] = _inside_exactly(out[i], bound)
    return out


#: Below this bound the clipped values may be subnormal (absolute rounding errors): such rows are
#: checked in exact rational arithmetic (:func:`_inside_exactly`).
_TINY_BOUND = 2.0**-1000


def _inside_exactly(row, bound):
    """``row`` moved toward 0 one ulp at a time until its exact (rational) norm is at most ``bound``."""
    limit = fractions.Fraction(bound) ** 2
    while sum(fractions.Fraction(float(v)) ** 2 for v in row) > limit:
        row = np.nextafter(row, 0.0)  # every nonzero entry shrinks: the norm strictly decreases
    return row


def clip_values(y, bound):
    """Clip each value to ``[-bound, bound]`` (``bound > 0``; NaN values are refused, printing no value).

    Examples
    --------
    >>> clip_values([-3.0, 0.5, 2.0], 1.0)
    array([-1. ,  0.5,  1. ])
    """
    bound = float(bound)
    if not bound > 0:
        raise ValueError(f"bound must be > 0, got {bound!r}.")
    y = np.asarray(y, dtype=np.float64)
    if np.any(np.isnan(y)):
        raise ValueError("y contains NaN: it cannot be clipped into [-bound, bound].")
    return np.clip(y, -bound, bound)


class RowNormClipper(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Clip every row to a public Euclidean norm bound (a stateless, privacy-safe preprocessor).

    Differentially private estimators need a public bound on each record's norm.  This
    transformer enforces one *record by record*: rows with ``||x||_2 > max_norm`` are scaled
    down to norm ``max_norm``, the others pass unchanged.  It learns nothing from the data
    (``fit`` only records the number of features), so in a
    :class:`~sklearn.pipeline.Pipeline` it never leaks information across records.

    Read the User Guide: :ref:`private_linear_models`.

    Parameters
    ----------
    max_norm : float, default=1.0
        The public bound; must be chosen without looking at the data.
    center : array-like of shape (n_features,) or None, default=None
        An optional *public* centre subtracted before clipping (e.g. a known midpoint of
        the feature ranges).  Never use data statistics here.

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features, when ``X`` has string column names.

    See Also
    --------
    sklearn.preprocessing.Normalizer : scales *every* row to unit norm (also per record,
        hence also privacy-safe, but it discards the row's norm).

    Notes
    -----
    Preprocessing that is safe before a private estimator: per-record maps with public
    constants (this clipper, :class:`~sklearn.preprocessing.Normalizer`, fixed unit
    conversions, :class:`~sklearn.preprocessing.FunctionTransformer` with a fixed
    function, one-hot encoding with *public* categories).  Unsafe:
    :class:`~sklearn.preprocessing.StandardScaler`, ``MinMaxScaler``, ``RobustScaler``,
    ``PCA`` and anything else fitted on the data, because then one record changes the
    transform of every other record and the estimator's guarantee no longer holds.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_bayes.privacy import RowNormClipper
    >>> RowNormClipper(max_norm=1.0).fit_transform(np.array([[3.0, 4.0], [0.3, 0.4]]))
    array([[0.6, 0.8],
           [0.3, 0.4]])
    """

    _parameter_constraints = {
        "max_norm": [RealInterval(0, None, closed="neither")],
        "center": [None, "array-like"],
    }

    def __init__(self, max_norm=1.0, center=None):
        self.max_norm = max_norm
        self.center = center

    def _center(self, n_features):
        if self.center is None:
            return None
        with naming("center"):
            c = np.asarray(self.center, dtype=np.float64).ravel()
        if c.shape[0] != n_features:
            raise ValueError(
                f"center must be a vector of length n_features={n_features}, got shape {c.shape}."
            )
        if not np.all(np.isfinite(c)):
            bad = "NaN" if np.any(np.isnan(c)) else "an infinite value"
            raise ValueError(f"center must be finite, got a center with {bad}.")
        return c

    @serialized
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Record the number of features (nothing is learned from the values).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        self : RowNormClipper
        """
        check_container(X, "X")
        with naming("X", private=True):
            X = validate_data(self, X, dtype=np.float64)
        self._center(X.shape[1])
        return self

    def transform(self, X):
        """Clip the rows of ``X`` to norm ``max_norm`` (after subtracting ``center``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_clipped : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        check_container(X, "X")
        with naming("X", private=True):
            X = validate_data(self, X, dtype=np.float64, reset=False)
        c = self._center(X.shape[1])
        if c is not None:
            with np.errstate(over="ignore", invalid="ignore"):
                X = X - c
            if not np.all(np.isfinite(X)):  # |x - center| beyond the float range: no direction to keep
                raise ValueError(
                    "X - center overflows (a value beyond the float range) for some row of X; X and center "
                    "must be such that every centred value is finite."
                )
        return clip_rows(X, float(self.max_norm))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
