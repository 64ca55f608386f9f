"""The loss objects of the GLM kernel: one small class per loss (see :mod:`._map` for the objective).

Each loss gives its values, gradient and (generalised) Hessian weights in the linear predictor;
:func:`~sklearn_bayes._glm._map.fit_map` minimises their weighted sum plus a Gaussian prior term.
"""

import numbers

import numpy as np
from scipy.special import expit, logsumexp, softmax

__all__ = ["HingeLoss", "LogisticLoss", "MultinomialLoss", "PoissonLoss", "SquaredHingeLoss", "SquaredLoss"]


def _amax(a):
    """max |a| (0 for an empty array)."""
    return float(np.abs(a).max()) if a.size else 0.0


# --------------------------------------------------------------------------------------
# losses
# --------------------------------------------------------------------------------------


class _Loss:
    """A per-sample loss ``L(y, eta)`` of the linear predictor ``eta`` (shape ``(n, q)``).

    Subclasses implement :meth:`value` (the weighted sum of losses) and
    :meth:`derivatives` (weighted first and second derivatives with respect to ``eta``).
    """

    #: number of linear predictors per sample
    n_outputs = 1
    #: the Hessian does not depend on eta (squared loss): factorise it once
    constant_hessian = False
    #: |eta| beyond which an unregularised fit is treated as diverging (None: never)
    divergence_threshold = None

    def value(self, y, eta, w):
        raise NotImplementedError

    def values(self, y, eta, w):
        """The weighted loss of every sample, ``w_i L(y_i, eta_i)`` (shape (n,)); sums to :meth:`value`."""
        raise NotImplementedError

    def derivatives(self, y, eta, w):
        """Return ``(g, h)``: ``g`` of shape (n, q), ``h`` of shape (n, q) or (n, q, q)."""
        raise NotImplementedError

    def null_intercept(self, y, w):
        """Intercept of the intercept-only model (a starting value), shape (q,)."""
        return np.zeros(self.n_outputs)

    def exploding(self, eta):
        """True when the linear predictor is beyond the divergence threshold."""
        t = self.divergence_threshold
        return t is not None and _amax(eta) > t

    def separates(self, y, eta):
        """True if ``eta`` classifies every sample strictly correctly (complete separation)."""
        return False

    def recession_constraints(self, Z, y):
        """Linear constraints whose nonzero solutions make the unregularised fit not exist.

        Returns ``(A, E)``: the unregularised minimiser fails to exist (or is unbounded) iff
        some direction ``delta`` has ``A @ delta >= 0``, ``E @ delta == 0`` and
        ``A @ delta != 0``.  ``None`` means that the fit always exists.
        """
        return None

    def __repr__(self):
        return f"{type(self).__name__}()"


class SquaredLoss(_Loss):
    """Squared loss :math:`L(y, \\eta) = \\tfrac12 (y - \\eta)^2` (Gaussian with unit variance)."""

    constant_hessian = True

    def value(self, y, eta, w):
        r = y - eta[:, 0]
        return 0.5 * float(np.dot(w, r * r))

    def values(self, y, eta, w):
        r = y - eta[:, 0]
        return 0.5 * w * r * r

    def derivatives(self, y, eta, w):
        return (w * (eta[:, 0] - y))[:, None], w[:, None]

    def null_intercept(self, y, w):
        return np.array([np.average(y, weights=w) if w.sum() > 0 else 0.0])


class LogisticLoss(_Loss):
    """Binary logistic loss :math:`\\log(1 + e^{\\eta}) - y\\eta` for ``y`` in {0, 1}."""

    divergence_threshold = 30.0

    def value(self, y, eta, w):
        e = eta[:, 0]
        return float(np.dot(w, np.logaddexp(0.0, e) - y * e))

    def values(self, y, eta, w):
        e = eta[:, 0]
        return w * (np.logaddexp(0.0, e) - y * e)

    def derivatives(self, y, eta, w):
        p = expit(eta[:, 0])
        return (w * (p - y))[:, None], (w * p * (1.0 - p))[:, None]

    @staticmethod
    def _softplus(e):
        # log(1 + e^eta) = max(eta, 0) + log1p(e^-|eta|): numpy's vectorised exp and log1p, about 7x faster
        # than logaddexp's scalar loop at 50 000 rows; the same as logaddexp(0, eta) to within 1 ulp
        out = np.exp(-np.abs(e))
        np.log1p(out, out=out)
        out += np.maximum(e, 0.0)
        return out

    def fast_value(self, y, eta, w):
        """:meth:`value` to within rounding (1 ulp per row), computed faster (the GLMs' search on tall data)."""
        e = eta[:, 0]
        return float(np.dot(w, self._softplus(e) - y * e))

    def fast_values(self, y, eta, w):
        """:meth:`values` to within rounding (1 ulp per row), computed faster (the GLMs' search on tall data)."""
        e = eta[:, 0]
        return w * (self._softplus(e) - y * e)

    def null_intercept(self, y, w):
        p = np.clip(np.average(y, weights=w) if w.sum() > 0 else 0.5, 1e-6, 1 - 1e-6)
        return np.array([np.log(p / (1 - p))])

    def recession_constraints(self, Z, y):
        return (2.0 * y - 1.0)[:, None] * Z, None

    def separates(self, y, eta):
        return bool(np.all((2.0 * y - 1.0) * eta[:, 0] > 0))


class MultinomialLoss(_Loss):
    """Multinomial logistic loss with class 0 as the reference class.

    ``y`` holds class codes ``0 .. n_classes - 1``; the linear predictor has
    ``q = n_classes - 1`` columns, the logits of classes ``1 .. n_classes - 1`` relative to
    class 0, so :math:`L(y, \\eta) = \\log(1 + \\sum_k e^{\\eta_k}) - \\eta_y` (with
    :math:`\\eta_0 = 0`).  This parametrisation is identifiable, which an unregularised fit
    needs.
    """

    divergence_threshold = 30.0

    def __init__(self, n_classes):
        if n_classes < 3:
            raise ValueError(f"MultinomialLoss needs n_classes >= 3, got {n_classes}; use LogisticLoss.")
        self.n_classes = int(n_classes)
        self.n_outputs = self.n_classes - 1

    def _full(self, eta):
        return np.hstack([np.zeros((eta.shape[0], 1)), eta])

    def value(self, y, eta, w):
        full = self._full(eta)
        yi = y.astype(np.intp)
        return float(np.dot(w, logsumexp(full, axis=1) - full[np.arange(len(yi)), yi]))

    def values(self, y, eta, w):
        full = self._full(eta)
        yi = y.astype(np.intp)
        return w * (logsumexp(full, axis=1) - full[np.arange(len(yi)), yi])

    def derivatives(self, y, eta, w):
        p = softmax(self._full(eta), axis=1)[:, 1:]
        onehot = (y.astype(np.intp)[:, None] == np.arange(1, self.n_classes)[None, :]).astype(float)
        g = w[:, None] * (p - onehot)
        h = -p[:, :, None] * p[:, None, :]
        idx = np.arange(self.n_outputs)
        h[:, idx, idx] += p
        return g, w[:, None, None] * h

    def null_intercept(self, y, w):
        counts = np.bincount(y.astype(np.intp), weights=w, minlength=self.n_classes) + 1e-6
        return np.log(counts[1:] / counts[0])

    def separates(self, y, eta):
        full = self._full(eta)
        yi = y.astype(np.intp)
        own = full[np.arange(len(yi)), yi]
        full[np.arange(len(yi)), yi] = -np.inf
        return bool(np.all(own > full.max(axis=1)))

    def recession_constraints(self, Z, y):
        # z_i (delta_{y_i} - delta_k) >= 0 for every k != y_i, with delta_0 = 0
        n, p = Z.shape
        q = self.n_outputs
        yi = y.astype(np.intp)
        rows = []
        for k in range(self.n_classes):
            mask = yi != k
            if not mask.any():
                continue
            block = np.zeros((int(mask.sum()), q * p))
            for kk, sign in ((yi[mask], 1.0), (np.full(int(mask.sum()), k), -1.0)):
                for c in range(1, self.n_classes):
                    sel = kk == c
                    block[sel, (c - 1) * p:c * p] += sign * Z[mask][sel]
            rows.append(block)
        return np.vstack(rows), None

    def __repr__(self):
        return f"MultinomialLoss(n_classes={self.n_classes})"


class SquaredHingeLoss(_Loss):
    """Squared hinge loss :math:`\\max(0, 1 - y\\eta)^2` for ``y`` in {-1, +1} (L2-loss SVM)."""

    def value(self, y, eta, w):
        r = np.maximum(0.0, 1.0 - y * eta[:, 0])
        return float(np.dot(w, r * r))

    def values(self, y, eta, w):
        r = np.maximum(0.0, 1.0 - y * eta[:, 0])
        return w * r * r

    def derivatives(self, y, eta, w):
        r = np.maximum(0.0, 1.0 - y * eta[:, 0])
        return (-2.0 * w * y * r)[:, None], (2.0 * w * (r > 0))[:, None]

    def recession_constraints(self, Z, y):
        return y[:, None] * Z, None

    def separates(self, y, eta):
        return bool(np.all(y * eta[:, 0] > 0))


class HingeLoss(_Loss):
    """Hinge loss :math:`\\max(0, 1 - y\\eta)` for ``y`` in {-1, +1} (the L1-loss SVM).

    The hinge is not differentiable at the margin, so Newton's method minimises its Huber
    smoothing with width :math:`\\mu`,

    .. math::

        h_\\mu(r) = 0 \\ (r \\le 0), \\quad r^2 / (2\\mu) \\ (0 < r < \\mu), \\quad r - \\mu/2 \\ (r \\ge \\mu),
        \\qquad r = 1 - y\\eta,

    which satisfies :math:`h_\\mu(r) \\le \\max(0, r) \\le h_\\mu(r) + \\mu/2`.  :func:`fit_map` runs the
    homotopy :meth:`stages` (``mu = 10, 1, 10^-1, ..., smoothing``; larger ratios between
    stages make the Armijo line search stall), each stage started at the
    previous minimiser, so the returned coefficients minimise the smoothed objective with
    ``mu = smoothing`` and their hinge objective is within ``smoothing * sum(w) / 2`` of the
    hinge optimum (default ``1e-6``: exact at any printed precision).
    """

    def __init__(self, smoothing=1e-6):
        if not (isinstance(smoothing, numbers.Real) and 0 < smoothing < float("inf")):
            raise ValueError(f"HingeLoss needs a finite smoothing > 0, got {smoothing!r}.")
        self.smoothing = float(smoothing)

    def value(self, y, eta, w):
        r = 1.0 - y * eta[:, 0]
        mu = self.smoothing
        h = np.where(r <= 0.0, 0.0, np.where(r >= mu, r - 0.5 * mu, r * r / (2.0 * mu)))
        return float(np.dot(w, h))

    def values(self, y, eta, w):
        r = 1.0 - y * eta[:, 0]
        mu = self.smoothing
        return w * np.where(r <= 0.0, 0.0, np.where(r >= mu, r - 0.5 * mu, r * r / (2.0 * mu)))

    def derivatives(self, y, eta, w):
        r = 1.0 - y * eta[:, 0]
        mu = self.smoothing
        slope = np.clip(r / mu, 0.0, 1.0)
        return (-w * y * slope)[:, None], (w * ((r > 0.0) & (r < mu)) / mu)[:, None]

    def stages(self):
        """The smoothing homotopy: widths 10, 1, 0.1, ... down to ``smoothing``."""
        # the first width exceeds the margin violation 1 - y*eta = 1 of the zero start, so
        # that every sample has curvature in the first stage
        out, mu = [], 10.0
        while mu > self.smoothing * (1 + 1e-9):
            out.append(HingeLoss(mu))
            mu /= 10.0
        out.append(self)
        return out

    def recession_constraints(self, Z, y):
        return y[:, None] * Z, None

    def separates(self, y, eta):
        return bool(np.all(y * eta[:, 0] > 0))

    def __repr__(self):
        return f"HingeLoss(smoothing={self.smoothing!r})"


class PoissonLoss(_Loss):
    """Poisson negative log-likelihood with log link, :math:`e^{\\eta} - y\\eta` (up to a constant)."""

    divergence_threshold = 30.0

    def value(self, y, eta, w):
        e = eta[:, 0]
        with np.errstate(over="ignore"):
            v = float(np.dot(w, np.exp(e) - y * e))
        return v if np.isfinite(v) else np.inf

    def values(self, y, eta, w):
        e = eta[:, 0]
        with np.errstate(over="ignore", invalid="ignore"):
            v = w * (np.exp(e) - y * e)
        return np.where(np.isnan(v), np.inf, v)

    def derivatives(self, y, eta, w):
        with np.errstate(over="ignore"):
            mu = np.exp(eta[:, 0])
        return (w * (mu - y))[:, None], (w * mu)[:, None]

    def null_intercept(self, y, w):
        m = np.average(y, weights=w) if w.sum() > 0 else 1.0
        return np.array([np.log(max(m, 1e-6))])

    def profile_intercept(self, y, eta, w):
        """The intercept shift that minimises the loss for fixed coefficients: ``log(sum w y / sum w e^eta)``
        (the intercept's score equation ``sum w (mu - y) = 0``), in logs (no overflow); None when ``sum w y = 0``."""
        pos = w > 0
        top = float(np.dot(w, y))
        if not top > 0 or not np.any(pos):
            return None
        e = eta[pos, 0]
        m = float(e.max())
        return np.array([np.log(top) - m - np.log(float(np.dot(w[pos], np.exp(e - m))))])

    def exploding(self, eta):
        # counts fitted as 0 (eta -> -inf) signal a zero-count pattern without a finite MLE
        return eta.size > 0 and float(eta.min()) < -self.divergence_threshold

    def recession_constraints(self, Z, y):
        zero = y == 0
        return -Z[zero], Z[~zero]


# --------------------------------------------------------------------------------------
# the prior
# --------------------------------------------------------------------------------------
