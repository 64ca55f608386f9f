"""Finite-sample correction of the ``"min_variance"`` intervals (issue 30, round 15): Huber's ``K`` and effective rows.

The sandwich ``s^2 A^-1 B A^-1`` (:func:`~sklearn_bayes.linear_model._mixture._inference.parameter_covariance`)
is asymptotic: at 12-30 rows its nominal 95 % intervals covered 0.74-0.95 (development log, round 15).  Two
corrections, both from the fitted loss at its final residuals, neither changing the fit:

* Huber's (1981, *Robust Statistics*, section 7.6) correction factor of the covariance of a regression
  M-estimator, ``K = 1 + (p / n) Var(psi') / E(psi')^2`` (empirical moments of ``psi'(r_i / s)`` over the
  rows), the covariance multiplied by ``K^2``.  ``A`` sums ``psi'``; when ``psi'`` varies over the rows
  (Huber: 1 inside the corner, 0 beyond; a redescender: negative in its tail) its inverse is a ratio
  estimate whose bias is of order ``p / n`` times that relative variance.  ``K = 1`` for least squares.
* Degrees of freedom of the t quantiles from the rows the fit actually uses: ``sum_i w_i - p`` with ``w_i =
  psi(u_i) / u_i`` (in ``[0, 1]`` for every loss of the family, 1 at ``u = 0``) and the sample weights
  rescaled to sum to Kish's effective number of rows ``n_K = (sum v)^2 / sum v^2`` (``n`` for uniform
  weights), at least 1 and at most ``n_K - p``.  A down-weighted row carries less than one row's
  information about the scale and the matrices of the sandwich; least squares keeps ``n_K - p``.

Both only widen the intervals (``K >= 1``, ``df <= n_K - p``).  ``n_K`` also replaces ``n`` in ``K``'s ``p / n``
and, without the correction, in ``n - p`` (:func:`kish_dof`; review HMX F1: 59 rows of weight 1e-12 and 10 of
weight 1 had 67 degrees of freedom, where dropping the 59 rows gives 8).
"""

import numpy as np

__all__ = ["CORRECTIONS", "huber_k", "effective_dof", "interval_correction", "kish_dof", "kish_rows"]

#: values of the estimator's ``interval_correction``: ``"huber"`` (both corrections) or ``"none"`` (the plain
#: sandwich and ``n - p`` degrees of freedom, as before round 15)
CORRECTIONS = ("huber", "none")


def kish_rows(sw):
    """Kish's effective number of rows ``(sum w)^2 / sum w^2`` of the positive weights (``m`` exactly for
    uniform weights: they are divided by their largest first, so they are all 1.0)."""
    w = sw[sw > 0]
    if len(w) == 0:
        return 0.0
    w = w / float(np.max(w))
    return float(np.sum(w)) ** 2 / float(w @ w)


def kish_dof(sw, dof):
    """``n_K - p`` (:func:`kish_rows`; ``p = m - dof``, ``m`` the rows of positive weight) clipped to
    ``[1, dof]``: ``dof`` itself, as a float, for uniform weights."""
    p = int(np.count_nonzero(sw > 0)) - int(dof)
    return float(min(max(kish_rows(sw) - p, 1.0), dof))


def huber_k(dpsi, sw, p):
    """``1 + (p / n_K) Var(psi') / E(psi')^2`` over the rows of positive weight (weighted moments; ``n_K``
    Kish's effective number of rows, :func:`kish_rows`: ``m`` for uniform weights).

    1.0 when ``psi'`` is constant (least squares) or when its mean is not positive (``A`` is then not
    positive definite and the covariance is NaN anyway)."""
    pos = sw > 0
    w, d = sw[pos], dpsi[pos]
    m = kish_rows(sw)
    if len(d) == 0:
        return 1.0
    mu = float(np.average(d, weights=w))
    if not mu > 0:
        return 1.0
    var = float(np.average((d - mu) ** 2, weights=w))
    return 1.0 + p / m * var / (mu * mu)


def effective_dof(weights, sw, p, dof):
    """``sum_i sw_i w_i - p`` with ``sw`` rescaled to sum to Kish's ``n_K`` (:func:`kish_rows`; mean one for
    uniform weights), clipped to ``[1, dof]``."""
    pos = sw > 0
    if not pos.any():
        return float(dof)
    m = int(np.count_nonzero(pos))
    s = sw[pos] / np.mean(sw[pos]) * (kish_rows(sw) / m)  # * 1.0 exactly for uniform weights
    return float(min(max(float(np.sum(s * weights[pos])) - p, 1.0), dof))


def interval_correction(r, sw, scale, norm, flagged, dof):
    """``(K, df)`` of the fit with residuals ``r`` of the loss ``norm`` at scale ``scale``.

    ``flagged``: rows whose negative ``psi'`` the sandwich clips at 0 (the same ``psi'`` enters ``K``);
    ``dof``: the sandwich's ``m - p`` (``p`` the identified coefficients).
    """
    w, _, dpsi = norm.psi_terms(r / scale)
    if flagged is not None:
        dpsi = np.where(np.asarray(flagged, dtype=bool), np.maximum(dpsi, 0.0), dpsi)
    m = int(np.count_nonzero(sw > 0))
    p = m - int(dof)
    return huber_k(dpsi, sw, p), effective_dof(np.broadcast_to(w, r.shape), sw, p, dof)
