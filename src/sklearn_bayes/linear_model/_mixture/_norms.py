"""The M-estimation losses of ``variant="min_variance"``: one small class per norm.

In the style of statsmodels' ``robust/norms.py``: a norm is a loss ``rho`` of the standardised
residual ``u = r / s`` with its derivative ``psi = rho'``, the IRLS weight function
``weights(u) = psi(u) / u`` and ``psi_deriv = psi'`` (the ``A`` matrix of the sandwich
covariance).  Each norm is a frozen dataclass holding only its tuning constant ``c`` (in units
of the robust scale), so that equal norms compare and hash equal (the candidates of
:data:`~sklearn_bayes.linear_model._mixture._selection.FAMILY` key a dict of variances).  A new
loss is a new subclass; nothing dispatches on names.
"""

from dataclasses import dataclass

import numpy as np

__all__ = ["Cauchy", "HuberT", "LeastSquares", "RobustNorm", "TukeyBiweight"]


@dataclass(frozen=True)
class RobustNorm:
    """Base class of the norms: the tuning constant ``c`` and the IRLS triple.

    Subclasses define ``rho``, ``psi``, ``weights`` and ``psi_deriv`` (arrays of standardised
    residuals in, arrays of the same shape out) and a ``name`` (used in
    ``MixtureMEstimatorRegressor.selected_loss_``).

    Parameters
    ----------
    c : float
        Tuning constant in units of the residual scale (unused by :class:`LeastSquares`).
    """

    c: float = 0.0
    name = None

    def psi_terms(self, u):
        """``(weights(u), psi(u), psi_deriv(u))``, the three terms IRLS and the sandwich use."""
        w = self.weights(u)
        return w, self._psi(u, w), self.psi_deriv(u)

    def _psi(self, u, w):
        """``u w``, with ``psi``'s limit where ``u`` is infinite (a residual of 1e300 over a scale of 1e-9: ``inf * 0``
        would be NaN)."""
        with np.errstate(invalid="ignore"):  # inf * 0, replaced below
            psi = u * w
        inf = np.isinf(u)
        return np.where(inf, self.psi_at_infinity(u), psi) if inf.any() else psi

    def psi_at_infinity(self, u):
        """The limit of ``psi`` at ``u = +-inf``: 0 for the redescending norms."""
        return np.zeros_like(u, dtype=float)

    def label(self):
        """``name`` followed by ``(c=...)`` when the norm has a tuning constant (``'huber(c=1.345)'``)."""
        return self.name + (f"(c={self.c:g})" if self.c else "")


@dataclass(frozen=True)
class LeastSquares(RobustNorm):
    """Least squares: ``rho(u) = u^2 / 2``, ``psi(u) = u``, weight 1 (no tuning constant)."""

    name = "least squares"

    def rho(self, u):
        return 0.5 * np.square(u)

    def psi(self, u):
        return np.asarray(u, dtype=float)

    def weights(self, u):
        return np.ones_like(u)

    def psi_deriv(self, u):
        return np.ones_like(u)

    def psi_terms(self, u):
        one = np.ones_like(u)
        return one, u, one


@dataclass(frozen=True)
class HuberT(RobustNorm):
    """Huber's loss: quadratic for ``|u| <= c``, linear beyond (``psi`` clipped at ``+-c``).

    ``rho(u) = u^2 / 2`` for ``|u| <= c`` and ``c |u| - c^2 / 2`` beyond; the weight
    ``min(1, c / |u|)`` (``|u|`` floored at the smallest positive float, so ``u = 0`` has weight 1).
    """

    c: float = 1.345
    name = "huber"

    def rho(self, u):
        a = np.abs(u)
        return np.where(a <= self.c, 0.5 * a * a, self.c * a - 0.5 * self.c * self.c)

    def psi(self, u):
        return self._psi(u, self.weights(u))

    def weights(self, u):
        return np.minimum(1.0, self.c / np.maximum(np.abs(u), np.finfo(float).tiny))

    def psi_at_infinity(self, u):
        return self.c * np.sign(u)

    def psi_deriv(self, u):
        return (np.abs(u) <= self.c).astype(float)


@dataclass(frozen=True)
class TukeyBiweight(RobustNorm):
    """Tukey's biweight (bisquare): redescending, ``psi(u) = u (1 - (u/c)^2)^2`` for ``|u| < c``, else 0.

    ``rho(u) = c^2 / 6 (1 - (1 - (u/c)^2)^3)`` for ``|u| < c`` and ``c^2 / 6`` beyond.
    """

    c: float = 4.685
    name = "tukey"

    def rho(self, u):
        t = (u / self.c) ** 2
        return self.c * self.c / 6.0 * np.where(np.abs(u) < self.c, 1.0 - (1.0 - t) ** 3, 1.0)

    def psi(self, u):
        return self._psi(u, self.weights(u))

    def weights(self, u):
        t = (u / self.c) ** 2
        return np.where(np.abs(u) < self.c, (1.0 - t) ** 2, 0.0)

    def psi_deriv(self, u):
        t = (u / self.c) ** 2
        return np.where(np.abs(u) < self.c, (1.0 - t) * (1.0 - 5.0 * t), 0.0)


@dataclass(frozen=True)
class Cauchy(RobustNorm):
    """The Cauchy (Lorentzian) loss ``rho(u) = c^2 / 2 log(1 + (u/c)^2)``: weight ``1 / (1 + (u/c)^2)``."""

    c: float = 2.3849
    name = "cauchy"

    def rho(self, u):
        return 0.5 * self.c * self.c * np.log1p((u / self.c) ** 2)

    def psi(self, u):
        return self._psi(u, self.weights(u))

    def weights(self, u):
        return 1.0 / (1.0 + (u / self.c) ** 2)

    def psi_deriv(self, u):
        t = (u / self.c) ** 2
        w = 1.0 / (1.0 + t)
        with np.errstate(invalid="ignore"):  # t = inf (|u| > 1e154): -inf * 0, whose limit is 0
            d = (1.0 - t) * w * w
        return np.where(np.isinf(t), 0.0, d)
