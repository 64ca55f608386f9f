"""EM for the error mixture of :class:`~sklearn_bayes.MixtureMEstimatorRegressor`.

:class:`EMProblem` holds the data and settings of one fit; :func:`em` is Algorithm 2 of the
dissertation's Chapter 3 (E-step, mixture weights, scales, one weighted least-squares step)
accelerated by SQUAREM; :func:`describe_residuals` fits only the weights and scales at fixed
coefficients (``variant="min_variance"``).  Inputs are plain arrays; both return an
:class:`EMResult` (fixed fields); the E-step's sufficient statistics are returned with the
responsibilities, not cached.
"""

import math
from dataclasses import dataclass

import numpy as np

from sklearn_bayes._fast import _mixture as _fast
from sklearn_bayes.linear_model._mixture._components import CauchyComponent, GaussianComponent, LaplaceComponent
from sklearn_bayes.linear_model._mixture._lts_start import _WLS_BLOCK, wls

__all__ = ["EMProblem", "EMResult", "describe_residuals", "em", "log_joint"]

#: residuals (in robust scales of ``y``) beyond this are taken at it by the E- and M-steps: a gross target's square
#: overflowed (y >= 1e155 gave r^2 = inf and 0 * inf = NaN in the sufficient statistics, a NaN run of EM with
#: thousands of ``RuntimeWarning`` s); every law's responsibility and weight there are already 0 to rounding.  The
#: IRLS weight of such a row is set to 0, not taken at the cap: the least-squares step applies it to the uncapped
#: target, and the Cauchy weight at the cap, 2 / (s^2 + R_CAP^2) ~ 1e-200, times y = 1e250 pulled the fit to 1e247
#: (review HQV, F3); a row that far out has influence |w(r) r| < 2 / R_CAP under every built-in law
R_CAP = 1e100


def _capped(r):
    """``r`` itself where ``|r| <= R_CAP`` everywhere (ordinary fits: no copy, bit for bit), else clipped to it."""
    return r if float(np.max(np.abs(r), initial=0.0)) <= R_CAP else np.clip(r, -R_CAP, R_CAP)


def _norm_ratio(rv, v, nv):
    """``|rv| / |v|`` (SQUAREM's step length; ``nv = |v| > 0``, ``v`` finite) without overflow in the norms.

    Ordinary steps: the quotient as written (bit for bit).  A coefficient of order ``1e300`` (``variant="paper"``
    from a least-squares start ruined by one gross target) overflowed ``|rv|`` or ``|v|`` to ``inf``: ``inf / inf``
    warned.  Both are then taken in units of their largest entry; an infinite entry of ``rv`` gives NaN, and
    ``min(-1, -NaN) = -1`` is the plain EM step (no extrapolation)."""
    nr = np.linalg.norm(rv)
    if math.isfinite(nr) and math.isfinite(nv):
        return nr / nv
    with np.errstate(all="ignore"):
        c = max(float(np.max(np.abs(rv))), float(np.max(np.abs(v))))
        return float(np.linalg.norm(rv / c) / np.linalg.norm(v / c))


_KINDS = {GaussianComponent: 0, LaplaceComponent: 1, CauchyComponent: 2}  # laws with fused Cython passes


def log_joint(r, comps, a, scales):
    """``log a_j + log p_j(r_i; s_j)`` as a ``(J, n)`` array (``-inf`` where ``a_j = 0``)."""
    L = np.empty((len(comps), r.shape[0]))
    with np.errstate(divide="ignore"):
        log_a = np.log(a)
    for j, comp in enumerate(comps):
        L[j] = log_a[j] + comp.log_pdf(r, scales[j]) if a[j] > 0 else -np.inf
    return L


@dataclass(frozen=True, eq=False)
class EMResult:
    """The outcome of one EM run (:func:`em` or :func:`describe_residuals`), in standardised units.

    Attributes
    ----------
    theta : ndarray of shape (p,)
        Coefficients of the augmented design (the intercept last, if any).
    a : ndarray of shape (J,)
        Mixture weights.
    scales : ndarray of shape (J,)
        Component scales.
    z : ndarray of shape (J, n)
        Responsibilities at the returned fit.
    W : ndarray of shape (n,) or None
        IRLS weights ``sum_j z_ij w_j(r_i)`` (:func:`describe_residuals`: the ones it was given).
    objective : float
        Log-likelihood plus log scale prior at the returned fit (what EM increases).
    ll : float
        Log-likelihood at the returned fit.
    history : ndarray
        ``objective`` after every accepted step, starting point first.
    ll_history : ndarray
        ``ll`` after every accepted step, starting point first.
    n_iter : int
        EM maps evaluated.
    converged : bool
        Whether the objective changed by at most ``tol`` times the total weight.
    residuals : ndarray of shape (n,)
        Residuals ``y - Xa @ theta``.
    """

    theta: np.ndarray
    a: np.ndarray
    scales: np.ndarray
    z: np.ndarray
    W: object
    objective: float
    ll: float
    history: np.ndarray
    ll_history: np.ndarray
    n_iter: int
    converged: bool
    residuals: np.ndarray


class EMProblem:
    """Data and settings of one EM fit (augmented design ``Xa``, weights, components)."""

    def __init__(self, Xa, y, sw, comps, fit_scales, floors, unit=1.0, prior_scales=None, prior_strength=0.0):
        self.Xa, self.y, self.sw, self.comps = Xa, y, sw, comps
        self.fit_scales, self.floors = fit_scales, floors
        self.wtot = float(sw.sum())
        self.unit = unit  # scale of y: coefficients are extrapolated in these units (equivariance)
        # penalty -k (s0_j^2 / s_j^2 + log s_j^2) on each fitted scale (components with ``fit_scale_map``)
        self.prior_strength = float(prior_strength) if fit_scales and prior_scales is not None else 0.0
        self.prior_scales = None if prior_scales is None else np.asarray(prior_scales, dtype=float)
        self.has_map = [callable(getattr(c, "fit_scale_map", None)) for c in comps]
        # fused Cython passes when every component is a built-in law (not a subclass)
        kinds = [_KINDS.get(type(c)) for c in comps]
        self.kinds = None if any(k is None for k in kinds) or len(comps) > 16 else np.array(kinds, dtype=np.dtype("l"))
        if self.kinds is not None:
            self.deltas = np.array([getattr(c, "delta", 0.0) for c in comps], dtype=float)
        self.inner = 0  # extra (weights, scales) EM cycles per coefficient step
        self._buf = None  # work buffer of the weighted least-squares steps

    def log_prior(self, scales):
        """``-k sum_j (s0_j^2 / s_j^2 + log s_j^2)``: log scale prior (0 without one)."""
        k = self.prior_strength
        if k == 0:
            return 0.0
        out = 0.0
        for j, has in enumerate(self.has_map):
            if has:
                out -= k * ((self.prior_scales[j] / scales[j]) ** 2 + 2.0 * math.log(scales[j]))
        return out

    def e_step(self, theta, a, scales):
        """Residuals, responsibilities ``(J, n)`` and objective: log-likelihood + log scale prior.

        The log-likelihood is computed by log-sum-exp in log space.
        """
        r = self.y - self.Xa @ theta
        z, ll, stats = self.responsibilities(r, a, scales)
        return r, z, ll + self.log_prior(scales), stats

    def responsibilities(self, r, a, scales):
        """``z_ij``, the log-likelihood at residuals ``r`` and the E-step's sufficient statistics.

        The statistics ``(sum_i w_i z_ij, sum_i w_i z_ij r_i^2, sum_i w_i z_ij |r_i|)`` (a
        ``(3, J)`` array) come from the fused Cython pass for built-in laws, else ``None``.
        """
        r = _capped(r)
        if self.kinds is not None:
            z = np.empty((len(self.comps), r.shape[0]))
            stats = np.empty((3, len(self.comps)))
            ll = _fast.estep(r, self.sw, self.kinds, np.asarray(a, dtype=float), np.asarray(scales, dtype=float), z, stats)
            return z, float(ll), stats
        L = log_joint(r, self.comps, a, scales)
        m = L.max(axis=0)
        L -= m
        np.exp(L, out=L)
        s = L.sum(axis=0)
        L /= s
        return L, float(self.sw @ (m + np.log(s))), None

    def m_step(self, r, z, scales, stats=None):
        """Mixture weights, scales (closed form / 1-D root), one weighted least-squares step.

        With ``inner > 0`` the mixture weights and scales get ``inner`` more
        EM cycles at the current residuals (E-step and their M-step; no least
        squares) before the coefficient step: each cycle increases the
        objective, and the slowly converging mixture weights and scales cost
        no Gram matrix.
        """
        a, scales = self.m_mix(r, z, scales, stats)
        for _ in range(self.inner):
            z, _, stats = self.responsibilities(r, a, scales)
            a, scales = self.m_mix(r, z, scales, stats)
        W = self.irls_weights(r, z, scales)
        if self._buf is None:
            self._buf = np.empty((min(self.Xa.shape[0], _WLS_BLOCK), self.Xa.shape[1]))
        theta = wls(self.Xa, self.y, self.sw * W, out=self._buf)
        return theta, a, scales

    def m_mix(self, r, z, scales, stats=None):
        """M-step of the mixture weights and (if fitted) the scales, at residuals ``r``.

        ``stats``: the sufficient statistics :meth:`responsibilities` returned with ``z``
        (built-in laws), used instead of new passes over the rows."""
        r = _capped(r)
        if stats is not None:
            return self._m_mix_fast(r, z, scales, stats)
        zs = z * self.sw
        nj = zs.sum(axis=1)
        a = nj / self.wtot
        scales = np.array(scales, dtype=float)
        if self.fit_scales:
            k = self.prior_strength
            for j, comp in enumerate(self.comps):
                if k > 0 and self.has_map[j]:  # MAP step: well defined even for an empty component
                    s_j = comp.fit_scale_map(r, zs[j], self.prior_scales[j], k)
                    scales[j] = max(float(s_j), self.floors[j])
                elif nj[j] > 1e-12 * self.wtot:
                    scales[j] = max(float(comp.fit_scale(r, zs[j])), self.floors[j])
        return a, scales

    def _m_mix_fast(self, r, z, scales, stats):
        """:meth:`m_mix` for built-in laws from the E-step's sufficient statistics (same maths)."""
        nj, s2, s1 = stats
        a = nj / nj.sum()  # sum_j nj = total weight; normalising keeps sum(a) == 1 to rounding
        scales = np.array(scales, dtype=float)
        if self.fit_scales:
            k = self.prior_strength
            for j, kind in enumerate(self.kinds):
                s0 = self.prior_scales[j] if k > 0 else 1.0
                if k == 0 and not nj[j] > 1e-12 * self.wtot:
                    continue
                if kind in (0, 1):  # the components' closed forms, from the fused pass's moments
                    s_j = self.comps[j].scale_from_moments(nj[j], s1[j], s2[j], s0, k)
                else:
                    c = z[j] * self.sw
                    s_j = self.comps[j]._scale_root(r, c, 2.0 * math.log(scales[j]), s0, k)
                scales[j] = max(float(s_j), self.floors[j])
        return a, scales

    def irls_weights(self, r, z, scales):
        """``sum_j z_ij w_j(r_i)``; 0 for a row beyond ``R_CAP`` (see there)."""
        rc = _capped(r)
        if self.kinds is not None:
            W = np.empty_like(rc)
            _fast.irls_weights(rc, self.kinds, z, np.asarray(scales, dtype=float), self.deltas, W)
        else:
            W = np.zeros_like(rc)
            for j, comp in enumerate(self.comps):
                W += z[j] * comp.weight(rc, scales[j])
        if rc is not r:
            W[np.abs(r) > R_CAP] = 0.0
        return W

    # parameter vector for SQUAREM extrapolation: theta, log a, log scales
    def pack(self, theta, a, scales):
        with np.errstate(divide="ignore"):
            return np.concatenate([theta / self.unit, np.maximum(np.log(a), -700.0), np.log(scales)])

    def unpack(self, x):
        p, J = self.Xa.shape[1], len(self.comps)
        theta = x[:p] * self.unit
        la = np.clip(x[p : p + J], -700.0, 700.0)
        a = np.exp(la - la.max())
        a[la <= -700.0] = 0.0
        a /= a.sum()
        scales = np.maximum(np.exp(np.clip(x[p + J :], -700.0, 700.0)), self.floors)
        return theta, a, scales


def em(prob, theta, scales, max_iter, tol, accelerate=True, a=None):
    """EM / IRLS for a mixture of M-estimators (Algorithm 2 with scale updates).

    One EM map: E-step ``z_ij`` at the current fit, then M-steps for the mixture
    weights, the scales and one weighted least-squares step with weights
    ``sum_j z_ij w_j(r_i)``.  Each map increases the log-likelihood.  With
    ``accelerate`` the maps are combined by SQUAREM (Varadhan and Roland,
    "Simple and globally convergent methods for accelerating the convergence of
    any EM algorithm"), keeping an extrapolated point only if its likelihood is
    at least that of the plain double step, so the sequence stays monotone.
    ``max_iter`` counts EM maps.  With a scale prior (``prob.prior_strength >
    0``) the scale M-steps are MAP steps and the monotone objective is the
    log-likelihood plus the log prior.
    """
    J = len(prob.comps)
    a = np.full(J, 1.0 / J) if a is None else np.asarray(a, dtype=float).copy()
    scales = np.asarray(scales, dtype=float).copy()
    history, ll_history = [], []
    n_iter = 0
    converged = False
    r, z, ll, stats = prob.e_step(theta, a, scales)
    history.append(ll)
    ll_history.append(ll - prob.log_prior(scales))
    while n_iter < max_iter:
        ll0 = ll
        x0 = prob.pack(theta, a, scales)
        theta1, a1, s1 = prob.m_step(r, z, scales, stats)
        n_iter += 1
        r, z, ll, stats = prob.e_step(theta1, a1, s1)
        theta, a, scales = theta1, a1, s1
        if accelerate and n_iter < max_iter and abs(ll - ll0) > tol * prob.wtot:
            x1 = prob.pack(theta1, a1, s1)
            theta2, a2, s2 = prob.m_step(r, z, s1, stats)
            n_iter += 1
            r2, z2, ll2, st2 = prob.e_step(theta2, a2, s2)
            x2 = prob.pack(theta2, a2, s2)
            rv, v = x1 - x0, x2 - 2 * x1 + x0
            nv = np.linalg.norm(v)
            best = (theta2, a2, s2, r2, z2, ll2, st2)
            if nv > 0 and np.all(np.isfinite(v)):
                alpha = min(-1.0, -_norm_ratio(rv, v, nv))
                for _ in range(6):
                    if alpha >= -1.0:
                        break
                    with np.errstate(all="ignore"):
                        te, ae, se = prob.unpack(x0 - 2 * alpha * rv + alpha**2 * v)
                        re, ze, lle, ste = prob.e_step(te, ae, se)
                    if np.isfinite(lle) and lle >= ll2:
                        best = (te, ae, se, re, ze, lle, ste)
                        break
                    alpha = (alpha - 1.0) / 2.0
            theta, a, scales, r, z, ll, stats = best
        history.append(ll)
        ll_history.append(ll - prob.log_prior(scales))
        if abs(ll - ll0) <= tol * prob.wtot:
            converged = True
            break
    W = prob.irls_weights(r, z, scales)
    return EMResult(theta=theta, a=a, scales=scales, z=z, W=W, objective=ll, ll=ll - prob.log_prior(scales),
                    history=np.asarray(history), ll_history=np.asarray(ll_history), n_iter=n_iter,
                    converged=converged, residuals=r)


def describe_residuals(prob, theta, scales, max_iter, tol, W, a=None, r=None):
    """EM for the mixture weights and scales only, at fixed coefficients ``theta``.

    Used by ``variant="min_variance"``: the coefficients come from the selected
    M-estimator and the error mixture describes its residuals (responsibilities,
    weights, scales keep their meaning).  ``W`` are the selected loss's IRLS weights.
    The EM maps of ``(log a, log scales)`` are combined by SQUAREM with the same
    monotonicity safeguard as :func:`em` (an extrapolated point is kept only if its
    objective is at least that of the plain double step); ``max_iter`` counts EM maps
    (0: only the E-step at ``a`` and ``scales``).  ``r``: the residuals ``prob.y - prob.Xa @
    theta`` if already computed.  Returns an :class:`EMResult` like :func:`em`.
    """
    J = len(prob.comps)
    a = np.full(J, 1.0 / J) if a is None else np.asarray(a, dtype=float).copy()
    scales = np.asarray(scales, dtype=float).copy()
    if r is None:
        r, z, ll, stats = prob.e_step(theta, a, scales)  # the residuals are fixed from here on
    else:  # the E-step of prob.e_step at the given residuals
        z, ll, stats = prob.responsibilities(r, a, scales)
        ll += prob.log_prior(scales)

    def em_map(a, scales, z, stats):
        a, scales = prob.m_mix(r, z, scales, stats)
        z, ll, stats = prob.responsibilities(r, a, scales)
        return a, scales, z, ll + prob.log_prior(scales), stats

    def pack(a, scales):
        with np.errstate(divide="ignore"):
            return np.concatenate([np.maximum(np.log(a), -700.0), np.log(scales)])

    def unpack(x):
        la = np.clip(x[:J], -700.0, 700.0)
        a = np.exp(la - la.max())
        a[la <= -700.0] = 0.0
        return a / a.sum(), np.maximum(np.exp(np.clip(x[J:], -700.0, 700.0)), prob.floors)

    history, ll_history = [ll], [ll - prob.log_prior(scales)]
    converged, n_iter = False, 0
    while n_iter < max_iter:
        ll0, x0 = ll, pack(a, scales)
        a, scales, z, ll, stats = em_map(a, scales, z, stats)
        n_iter += 1
        if n_iter < max_iter and abs(ll - ll0) > tol * prob.wtot:
            x1 = pack(a, scales)
            best = em_map(a, scales, z, stats)
            n_iter += 1
            rv, v = x1 - x0, pack(best[0], best[1]) - 2.0 * x1 + x0
            nv = np.linalg.norm(v)
            if nv > 0 and np.all(np.isfinite(v)):
                alpha = min(-1.0, -_norm_ratio(rv, v, nv))
                for _ in range(6):
                    if alpha >= -1.0:
                        break
                    with np.errstate(all="ignore"):
                        ae, se = unpack(x0 - 2.0 * alpha * rv + alpha**2 * v)
                        ze, lle, ste = prob.responsibilities(r, ae, se)
                        lle += prob.log_prior(se)
                    if np.isfinite(lle) and lle >= best[3]:
                        best = (ae, se, ze, lle, ste)
                        break
                    alpha = (alpha - 1.0) / 2.0
            a, scales, z, ll, stats = best
        history.append(ll)
        ll_history.append(ll - prob.log_prior(scales))
        if abs(ll - ll0) <= tol * prob.wtot:
            converged = True
            break
    return EMResult(theta=theta, a=a, scales=scales, z=z, W=W, objective=ll, ll=ll - prob.log_prior(scales),
                    history=np.asarray(history), ll_history=np.asarray(ll_history), n_iter=n_iter,
                    converged=converged, residuals=r)
