"""Exact samplers on a public ball: the truncated isotropic Gaussian and the OPS rejection draw.

Used by :class:`~sklearn_bayes.privacy.DPSGLDLogisticRegression` for the start of its chain:
``start="prior"`` draws the prior restricted to the ball (no data read), ``start="ops"`` draws
the tempered posterior on the ball *exactly* by rejection from the tempered prior (Theorem 3.4
of Wang's thesis holds only for an exact draw; review HQX F1 found the earlier Metropolis
chain stuck at the non-private MAP).
"""

import math

import numpy as np
from scipy import special

__all__ = ["ops_rejection_draw", "truncated_gaussian_ball"]

#: below this normalising constant ``P(d/2, x)`` the inverse-CDF radius loses precision: the
#: tangent-envelope rejection sampler is used instead (exact for any ``P``)
_MIN_GAMMAINC = 1e-12


def _truncated_gamma_unit(a, x, size, rng):
    """``t/x`` for ``t ~ Gamma(a, 1)`` restricted to ``[0, x]`` (``a >= 1``, ``x < a - 1``), by rejection.

    The density of ``s = t/x`` on ``[0, 1]`` is ``∝ exp(g(s))``, ``g(s) = (a-1) log s - x s``,
    concave and increasing (``k = g'(1) = a - 1 - x > 0``).  Its tangent at ``s = 1`` bounds it
    above: with ``u = 1 - s`` the envelope is ``∝ e^{-k u}`` (an exponential truncated to
    ``[0, 1]``) and a proposal is accepted with probability
    ``exp(g(1-u) - g(1) + k u) = exp((a-1)(log(1-u) + u)) <= 1``.
    """
    k = a - 1.0 - x
    out = np.empty(size)
    filled = 0
    while filled < size:
        m = 2 * (size - filled) + 8
        u = -np.log1p(-rng.random(m) * -np.expm1(-k)) / k
        keep = np.log(rng.random(m)) < (a - 1.0) * (np.log1p(-np.minimum(u, 1.0)) + u)
        s = 1.0 - u[keep]
        take = min(s.shape[0], size - filled)
        out[filled:filled + take] = s[:take]
        filled += take
    return out


def _uniform_ball_unit(a, x, size, rng):
    """``t/x`` for ``t ~ Gamma(a, 1)`` restricted to ``[0, x]``, by rejection from ``s^{a-1}`` on ``[0, 1]``.

    ``s = U^{1/a}`` has density ``∝ s^{a-1}``; it is accepted with probability ``e^{-x s}``
    (``>= e^{-x}``: used for ``x <= 1``).
    """
    out = np.empty(size)
    filled = 0
    while filled < size:
        m = 2 * (size - filled) + 8
        s = rng.random(m) ** (1.0 / a)
        s = s[np.log(rng.random(m)) < -x * s]
        take = min(s.shape[0], size - filled)
        out[filled:filled + take] = s[:take]
        filled += take
    return out


def truncated_gaussian_ball(n_features, scale, radius, size, rng):
    """Exact draws of ``N(0, scale² I)`` restricted to the ball ``||θ|| <= radius``.

    Parameters
    ----------
    n_features : int
        Dimension ``d`` (>= 1).
    scale : float
        Standard deviation ``σ`` of each coordinate before truncation (> 0).
    radius : float
        Radius ``R`` of the ball (> 0).
    size : int
        Number of independent draws.
    rng : numpy.random.Generator

    Returns
    -------
    draws : ndarray of shape (size, n_features)

    Notes
    -----
    The law is isotropic, so ``θ = r v`` with ``v`` uniform on the sphere (a normalised
    standard normal vector) and ``t = r²/(2σ²) ~ Gamma(d/2, 1)`` restricted to
    ``[0, x]``, ``x = R²/(2σ²)``.  ``t`` is drawn by inverting the regularised incomplete
    gamma function, ``t = P⁻¹(d/2, U P(d/2, x))`` with ``U`` uniform; when ``P(d/2, x)`` is
    below ``1e-12`` (a ball far inside the bulk: ``x ≪ d/2``) by exact rejection samplers
    (:func:`_uniform_ball_unit` for ``x <= 1``, :func:`_truncated_gamma_unit` otherwise).  No data is read: the draw is public.
    """
    d, size = int(n_features), int(size)
    a = 0.5 * d
    x = 0.5 * (float(radius) / float(scale)) ** 2
    v = rng.standard_normal((size, d))
    v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-300)
    P = float(special.gammainc(a, x)) if math.isfinite(x) else 1.0
    if P >= _MIN_GAMMAINC:
        t = special.gammaincinv(a, rng.random(size) * P)
        r = float(scale) * np.sqrt(2.0 * np.minimum(t, x))
    elif x <= 1.0:  # a ball far inside the bulk: uniform radius law, accepted w.p. e^{-x s} >= 1/e
        r = float(radius) * np.sqrt(_uniform_ball_unit(a, x, size, rng))
    else:  # P < 1e-12 with x > 1 implies x < a - 1 (a large)
        r = float(radius) * np.sqrt(_truncated_gamma_unit(a, x, size, rng))
    # the norm of r v rounds to within a few ulps of r: shrink by 4 ulps so it never exceeds R
    return v * np.minimum(r, float(radius) * (1.0 - 4.0 * np.finfo(float).eps))[:, None]


def ops_rejection_draw(log_accept, n_features, scale, radius, rng, batch=64):
    """One exact draw from ``π(θ) ∝ exp(log_accept(θ)) N(θ; 0, scale² I)`` on ``||θ|| <= radius``.

    Rejection from the truncated Gaussian :func:`truncated_gaussian_ball`: a proposal ``θ`` is
    accepted with probability ``exp(log_accept(θ))``, which must be ``<= 1``
    (``log_accept <= 0``: for OPS, ``ρ`` times a log-likelihood).  Proposals are made
    ``batch`` at a time and the first accepted one *in order* is returned, which is the same
    law as proposing one at a time.  The expected number of proposals is
    ``1 / E[exp(log_accept(θ))]``: ``<= e^{c}`` when ``log_accept >= -c`` on the ball.  The
    number of proposals (the running time) depends on the data and is not returned.

    Parameters
    ----------
    log_accept : callable ``(ndarray (m, d)) -> ndarray (m,)``
        Log acceptance probabilities, ``<= 0``.
    n_features : int
    scale : float
    radius : float
    rng : numpy.random.Generator
    batch : int, default=64

    Returns
    -------
    theta : ndarray of shape (n_features,)
    """
    while True:
        props = truncated_gaussian_ball(n_features, scale, radius, batch, rng)
        la = np.minimum(np.asarray(log_accept(props), dtype=float), 0.0)
        hit = np.flatnonzero(np.log(rng.random(batch)) < la)
        if hit.size:
            return props[hit[0]].copy()
