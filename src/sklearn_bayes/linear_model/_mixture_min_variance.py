"""The ``variant="min_variance"`` fit of :class:`~sklearn_bayes.MixtureMEstimatorRegressor`.

A family of M-estimators (least squares, Huber, Tukey biweight and Cauchy losses with
several tuning constants) is fitted by iteratively reweighted least squares from one
high-breakdown start, every member with the same fixed robust residual scale (as an
MM-estimator does), and the member with the smallest estimated asymptotic variance

    V = s^2 E[psi(r / s)^2] / E[psi'(r / s)]^2

(the sandwich variance of an M-estimator of regression with errors independent of the
design, estimated at the member's own residuals) is kept: an adaptive M-estimator in the
sense of Hogg ("Adaptive robust procedures", JASA 1974) chosen by a predictive criterion,
not by the likelihood of a fitted error density.

Inputs are the standardised augmented design, the targets, the sample weights and the
start; outputs are plain arrays.  No estimator state is touched here.
"""

import math

import numpy as np

_MAD_TO_SD = 1.482602218505602

#: the candidate losses: (name, tuning constant in units of the robust scale)
FAMILY = (
    ("least squares", 0.0),
    ("huber", 1.0),
    ("huber", 1.345),
    ("huber", 2.0),
    ("huber", 3.0),
    ("tukey", 3.44),
    ("tukey", 4.685),
    ("tukey", 6.0),
    ("cauchy", 1.0),
    ("cauchy", 1.5),
)


def psi_terms(kind, u, c):
    """IRLS weight ``psi(u) / u``, ``psi(u)`` and ``psi'(u)`` of one loss at standardised residuals ``u``."""
    a = np.abs(u)
    if kind == "least squares":
        one = np.ones_like(u)
        return one, u, one
    if kind == "huber":
        w = np.minimum(1.0, c / np.maximum(a, np.finfo(float).tiny))
        return w, u * w, (a <= c).astype(float)
    if kind == "tukey":
        t = (u / c) ** 2
        inside = a < c
        w = np.where(inside, (1.0 - t) ** 2, 0.0)
        return w, u * w, np.where(inside, (1.0 - t) * (1.0 - 5.0 * t), 0.0)
    if kind == "cauchy":
        t = (u / c) ** 2
        w = 1.0 / (1.0 + t)
        return w, u * w, (1.0 - t) * w * w
    raise ValueError(f"unknown loss {kind!r}")


def irls(Xa, y, sw, theta, scale, kind, c, wls, max_iter=200, tol=1e-10):
    """M-estimate with fixed ``scale`` by IRLS from ``theta``; returns ``(theta, n_iter)``."""
    for it in range(1, max_iter + 1):
        w = psi_terms(kind, (y - Xa @ theta) / scale, c)[0]
        new = wls(Xa, y, sw * w)
        done = np.max(np.abs(new - theta)) <= tol * (1.0 + np.max(np.abs(theta)))
        theta = new
        if done:
            return theta, it
    return theta, max_iter


def asymptotic_variance(r, sw, scale, kind, c, p):
    """``s^2 mean(psi^2) / mean(psi')^2`` (sample-weighted), times ``n / (n - p)``."""
    _, psi, dpsi = psi_terms(kind, r / scale, c)
    wt = float(sw.sum())
    d = float(sw @ dpsi) / wt
    if not d > 0:
        return math.inf
    return scale * scale * (float(sw @ (psi * psi)) / wt) / (d * d) * wt / max(wt - p, 1.0)


def residual_scale(r, sw, p, weighted_median):
    """``1.4826 * median |r|`` (sample-weighted), corrected by ``sqrt(n / (n - p))``."""
    wt = float(sw.sum())
    return _MAD_TO_SD * weighted_median(np.abs(r), sw) * math.sqrt(wt / max(wt - p, 1.0))


def select(Xa, y, sw, theta0, scale0, wls, weighted_median, floor, family=FAMILY):
    """Fit every member of ``family`` and keep the one with the smallest estimated variance.

    The residual scale is ``residual_scale`` of the Tukey (4.685) fit from the start at the
    start's scale ``scale0`` (an MM step), never below ``floor``.  Returns a dict with the
    kept ``theta``, ``loss`` (name, constant), ``scale``, the ``variances`` of every member
    and the total number of IRLS iterations ``n_iter``.
    """
    p = Xa.shape[1]
    scale0 = max(scale0, floor)
    theta_mm, n_iter = irls(Xa, y, sw, theta0, scale0, "tukey", 4.685, wls)
    scale = max(residual_scale(y - Xa @ theta_mm, sw, p, weighted_median), floor)
    best = None
    variances = {}
    for kind, c in family:
        theta, k = irls(Xa, y, sw, theta0, scale, kind, c, wls)
        n_iter += k
        v = asymptotic_variance(y - Xa @ theta, sw, scale, kind, c, p)
        variances[(kind, c)] = v
        if best is None or v < best[0]:
            best = (v, theta, (kind, c))
    return {"theta": best[1], "loss": best[2], "scale": scale, "variances": variances, "n_iter": n_iter}
