"""Error-law components for :class:`~sklearn_bayes.MixtureMEstimatorRegressor`.

A component is a small object describing one symmetric error density
``p(r; s) = exp(-rho(r; s))`` with a scale ``s > 0``.  It provides

* ``log_pdf(r, scale)``: the normalised log-density,
* ``weight(r, scale)``: the IRLS weight function ``w(r) = psi(r) / r`` with
  ``psi = d rho / d r``,
* ``fit_scale(r, resp)``: the scale maximising ``sum_i resp_i log p(r_i; s)``
  (the M-step for the scale),
* ``scale_from_mad(mad)``: the scale whose median absolute value equals ``mad``
  (used to start the scales from a robust fit).

Users can add an error law by subclassing :class:`MixtureComponent`.  The EM
algorithm is a monotone (majorise-minimise) algorithm when ``rho(r) = g(r**2)``
with ``g`` concave and non-decreasing, which holds for the Gaussian, Laplace,
Cauchy and Student-t laws.
"""

import math
import numbers

import numpy as np
from scipy import optimize

from sklearn_bayes._fast import _mixture as _fast

__all__ = [
    "MixtureComponent",
    "GaussianComponent",
    "LaplaceComponent",
    "CauchyComponent",
]

_LOG_2PI = math.log(2.0 * math.pi)
_BIG = 1e150  #: scales (and first moments) below this square to a float: the closed forms are used as written


def _check_scale(scale, owner):
    if scale is None:
        return None
    if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, numbers.Real):
        raise TypeError(f"{owner}: scale must be None or a real number > 0, got {scale!r}.")
    if not np.isfinite(scale) or scale <= 0:
        raise ValueError(f"{owner}: scale must be None or a finite number > 0, got {scale!r}.")
    return float(scale)


class MixtureComponent:
    """Base class of the error-law components of a mixture of M-estimators.

    Subclasses implement :meth:`log_pdf`, :meth:`weight`, :meth:`fit_scale` and
    :meth:`scale_from_mad`.  Components are plain parameter holders, not
    estimators: the fitted scales live on the regressor (``scales_``).

    Parameters
    ----------
    scale : float or None, default=None
        Initial scale (in the units of the target).  ``None`` starts the scale
        from the median absolute residual of the high-breakdown start.  When the
        regressor has ``fit_scales=False`` this is the fixed scale.

    Notes
    -----
    For a density ``p(r) = exp(-rho(r))`` the IRLS weight is
    ``w(r) = rho'(r) / r``.  If ``rho(r) = g(r^2)`` with ``g`` concave, the
    quadratic ``rho(r_0) + w(r_0) (r^2 - r_0^2) / 2`` majorises ``rho`` and
    touches it at ``r_0``, so one weighted least-squares step never increases
    ``sum_i z_i rho(r_i)``; this is what makes the EM iterations of the
    regressor monotone.
    """

    #: short name used in reports (``mixture_weights_`` are in component order)
    name = "component"

    def __init__(self, scale=None):
        self.scale = scale

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({params})"

    def __eq__(self, other):
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self):
        return hash((type(self).__name__, tuple(sorted(vars(self).items()))))

    def _validate(self):
        """Check the parameters; called by the regressor in ``fit``."""
        _check_scale(self.scale, type(self).__name__)

    def log_pdf(self, r, scale):
        """Log-density ``log p(r; scale)`` of residuals ``r`` (array)."""
        raise NotImplementedError

    def weight(self, r, scale):
        """IRLS weight ``psi(r) / r`` at residuals ``r`` (array, >= 0)."""
        raise NotImplementedError

    def fit_scale(self, r, resp):
        """Scale maximising ``sum_i resp_i log p(r_i; s)``; ``resp`` >= 0, not all 0."""
        raise NotImplementedError

    def scale_from_mad(self, mad):
        """Scale whose median of ``|r|`` equals ``mad``."""
        raise NotImplementedError

    def fit_scale_map(self, r, resp, prior_scale, strength):
        """Scale maximising ``sum_i resp_i log p(r_i; s) - strength * (prior_scale**2 / s**2 + log s**2)``.

        The penalty is the log-density (up to a constant) of the inverse-gamma
        prior ``(s**2)**(-strength) * exp(-strength * prior_scale**2 / s**2)``
        on ``s**2`` (shape ``strength - 1``, scale ``strength * prior_scale**2``,
        mode ``prior_scale**2``; Chen, Tan and Zhang, 2008): it keeps a
        component from collapsing onto a few (near-)zero residuals, where the
        likelihood of a mixture is unbounded.  ``strength = 0`` gives
        :meth:`fit_scale`.  This generic version maximises numerically over
        ``log s``; the built-in components override it with closed forms.
        """
        if strength == 0:
            return self.fit_scale(r, resp)
        c = 2.0 * math.log(prior_scale)

        def neg(u):
            s = math.exp(u)
            return -float(np.dot(resp, self.log_pdf(r, s))) + strength * (math.exp(c - 2.0 * u) + 2.0 * u)

        res = optimize.minimize_scalar(neg, bounds=(0.5 * c - 30.0, 0.5 * c + 30.0), method="bounded",
                                       options={"xatol": 1e-10})
        return math.exp(res.x)


class GaussianComponent(MixtureComponent):
    """Gaussian error law ``N(0, sigma^2)``; the scale is ``sigma``.

    Parameters
    ----------
    scale : float or None, default=None
        Initial (or, with ``fit_scales=False``, fixed) standard deviation.

    Notes
    -----
    ``log p(r) = -log(2 pi)/2 - log sigma - r^2 / (2 sigma^2)``, weight
    ``1 / sigma^2`` and M-step ``sigma^2 = sum z_i r_i^2 / sum z_i``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_bayes import GaussianComponent
    >>> c = GaussianComponent()
    >>> round(c.fit_scale(np.array([1.0, -1.0, 2.0, -2.0]), np.ones(4)) ** 2, 6)
    2.5
    """

    name = "gaussian"

    def log_pdf(self, r, scale):
        return -0.5 * _LOG_2PI - math.log(scale) - 0.5 * (r / scale) ** 2

    def weight(self, r, scale):
        return np.full(np.shape(r), 1.0 / scale**2)

    def fit_scale(self, r, resp):
        return self.scale_from_moments(float(resp.sum()), None, float(np.dot(resp, r * r)), 1.0, 0.0)

    def fit_scale_map(self, r, resp, prior_scale, strength):
        return self.scale_from_moments(float(resp.sum()), None, float(np.dot(resp, r * r)), prior_scale, strength)

    @staticmethod
    def scale_from_moments(n, s1, s2, prior_scale, strength):
        """MAP scale from ``n = sum z_i``, ``s2 = sum z_i r_i^2`` (``s1`` unused): the one closed form.

        ``sigma^2 = (s2 + 2 k s0^2) / (n + 2 k)`` (``k = strength``; ``k = 0``: maximum likelihood).
        """
        if prior_scale < _BIG and s2 < _BIG * _BIG:  # ordinary scales: the formula as written (bit for bit)
            return math.sqrt((s2 + 2.0 * strength * prior_scale**2) / (n + 2.0 * strength))
        # a prior scale beyond 1e150 (``init="ols"`` with a gross target: the start's residual scale ~ g / n):
        # its square overflowed to inf, and log s^2 = inf made the objective -inf (inf - inf in EM's stopping test)
        c = max(math.sqrt(s2), float(prior_scale))
        return c * math.sqrt((s2 / c / c + 2.0 * strength * (prior_scale / c) ** 2) / (n + 2.0 * strength))

    def scale_from_mad(self, mad):
        return mad / 0.6744897501960817


class LaplaceComponent(MixtureComponent):
    """Laplace error law (least absolute deviations); the scale is ``b``.

    Parameters
    ----------
    scale : float or None, default=None
        Initial (or fixed) scale ``b``.
    delta : float, default=1e-6
        Relative smoothing of the weight function near zero: the weight is
        ``1 / (b * max(delta * b, |r|))``.  The paper uses an absolute
        ``delta = 1e-4`` on standardised data; a scale-relative value keeps the
        estimator equivariant under rescaling of ``y``.

    Notes
    -----
    ``log p(r) = -log(2 b) - |r| / b``, weight ``1 / (b |r|)`` and M-step
    ``b = sum z_i |r_i| / sum z_i``.  The smoothing changes the minimised
    objective by at most ``delta * b / 2`` per unit of weight relative to ``b``,
    i.e. the fitted L1 loss is within ``n * delta * b / 2`` of the exact L1
    minimum.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_bayes import LaplaceComponent
    >>> LaplaceComponent().fit_scale(np.array([1.0, -3.0]), np.ones(2))
    2.0
    """

    name = "laplace"

    def __init__(self, scale=None, delta=1e-6):
        self.scale = scale
        self.delta = delta

    def _validate(self):
        super()._validate()
        d = self.delta
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, numbers.Real) or not (0 < d < 1):
            raise ValueError(f"LaplaceComponent: delta must be a real number in (0, 1), got {d!r}.")

    def log_pdf(self, r, scale):
        return -math.log(2.0 * scale) - np.abs(r) / scale

    def weight(self, r, scale):
        return 1.0 / (scale * np.maximum(self.delta * scale, np.abs(r)))

    def fit_scale(self, r, resp):
        return self.scale_from_moments(float(resp.sum()), float(np.dot(resp, np.abs(r))), None, 1.0, 0.0)

    def fit_scale_map(self, r, resp, prior_scale, strength):
        return self.scale_from_moments(float(resp.sum()), float(np.dot(resp, np.abs(r))), None, prior_scale, strength)

    @staticmethod
    def scale_from_moments(n, s1, s2, prior_scale, strength):
        """MAP scale from ``n = sum z_i``, ``s1 = sum z_i |r_i|`` (``s2`` unused): the one closed form.

        The positive root of ``(n + 2 k) b^2 - s1 b - 2 k s0^2 = 0`` (``k = strength``;
        ``k = 0``: ``b = s1 / n``, maximum likelihood).
        """
        m = n + 2.0 * strength
        if strength == 0:
            return s1 / m
        if prior_scale < _BIG and s1 < _BIG:  # ordinary scales: the formula as written (bit for bit)
            return (s1 + math.sqrt(s1 * s1 + 8.0 * strength * prior_scale**2 * m)) / (2.0 * m)
        c = max(float(s1), float(prior_scale))  # squares beyond float range (see GaussianComponent): in units of c
        u, v = s1 / c, prior_scale / c
        return c * ((u + math.sqrt(u * u + 8.0 * strength * v * v * m)) / (2.0 * m))

    def scale_from_mad(self, mad):
        return mad / math.log(2.0)


class CauchyComponent(MixtureComponent):
    """Cauchy error law; the scale is ``gamma``.

    Parameters
    ----------
    scale : float or None, default=None
        Initial (or fixed) scale ``gamma``.
    xtol : float, default=1e-10
        Relative tolerance of the 1-D root for ``log gamma^2`` in the M-step.

    Notes
    -----
    ``log p(r) = -log(pi gamma) - log(1 + r^2 / gamma^2)``, weight
    ``2 / (gamma^2 + r^2)``.  The M-step solves

    .. math:: g(t) = \\sum_i z_i \\frac{r_i^2 - t}{r_i^2 + t} = 0, \\qquad t = \\gamma^2,

    whose left side decreases strictly in ``t`` from ``sum_{r_i != 0} z_i -
    sum_{r_i = 0} z_i`` (at ``t -> 0``) to ``-sum z_i``; the root is bracketed by
    ``[min r_i^2, max r_i^2]`` over the non-zero residuals with positive weight
    and found by a safeguarded Newton iteration on ``log t`` (compiled; the EM uses the same
    kernel, warm-started at the current scale).  If at least half the weight
    sits on exact zeros there is no positive root and ``0`` is returned (the
    regressor then applies its scale floor).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_bayes import CauchyComponent
    >>> round(CauchyComponent().fit_scale(np.array([-1.0, 1.0]), np.ones(2)), 6)
    1.0
    """

    name = "cauchy"

    def __init__(self, scale=None, xtol=1e-10):
        self.scale = scale
        self.xtol = xtol

    def _validate(self):
        super()._validate()
        x = self.xtol
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real) or not (0 < x < 1):
            raise ValueError(f"CauchyComponent: xtol must be a real number in (0, 1), got {x!r}.")

    def log_pdf(self, r, scale):
        return -math.log(math.pi * scale) - np.log1p((r / scale) ** 2)

    def weight(self, r, scale):
        return 2.0 / (scale**2 + r * r)

    def fit_scale(self, r, resp):
        return self.fit_scale_map(r, resp, 1.0, 0.0)

    def fit_scale_map(self, r, resp, prior_scale, strength):
        # root in t = gamma^2 of sum z (r^2 - t)/(r^2 + t) + 2 k (s0^2 / t - 1) = 0: the left side
        # decreases strictly in t (from +inf at t -> 0 when k > 0, to -(sum z + 2 k))
        r = np.ascontiguousarray(r, dtype=float)
        resp = np.ascontiguousarray(resp, dtype=float)
        if strength > 0:
            u0 = 2.0 * math.log(prior_scale)
        else:  # warm start: the median of the non-zero r^2 with positive weight
            r2 = r[(resp > 0) & (r != 0)] ** 2
            u0 = math.log(float(np.median(r2))) if len(r2) and np.median(r2) > 0 else 0.0
        return self._scale_root(r, resp, u0, prior_scale, strength)

    def _scale_root(self, r, c, u0, prior_scale, strength):
        """The one home of the scale M-step: ``gamma`` at the root (compiled safeguarded Newton on
        ``u = log gamma^2`` from ``u0``, ``|u - u*| <= xtol``; 0 if there is no positive root)."""
        return float(_fast.cauchy_root(r, c, u0, float(prior_scale), float(strength), float(self.xtol)))

    def scale_from_mad(self, mad):
        return float(mad)


_NAMED = {
    "gaussian": GaussianComponent,
    "normal": GaussianComponent,
    "laplace": LaplaceComponent,
    "cauchy": CauchyComponent,
}


def _resolve_components(components):
    """Turn the ``components`` parameter into a list of fresh component objects."""
    import copy

    if isinstance(components, (str, MixtureComponent)):
        components = [components]
    try:
        items = list(components)
    except TypeError:
        raise TypeError(
            "components must be a list or tuple of component names ('gaussian', 'laplace', "
            f"'cauchy') or MixtureComponent instances, got {components!r}."
        ) from None
    if not items:
        raise ValueError("components must contain at least one component, got an empty sequence.")
    out = []
    for item in items:
        if isinstance(item, str):
            key = item.lower()
            if key not in _NAMED:
                raise ValueError(
                    f"Unknown component {item!r} in components; use one of "
                    f"{sorted(set(_NAMED) - {'normal'})} or a MixtureComponent instance."
                )
            out.append(_NAMED[key]())
        elif isinstance(item, type):  # GaussianComponent for GaussianComponent(): its methods need an instance
            raise TypeError(f"components holds the class {item.__name__}: pass an instance, not the class "
                            f"(e.g. {item.__name__}()), or a name ('gaussian', 'laplace', 'cauchy').")
        elif all(callable(getattr(item, m, None)) for m in ("log_pdf", "weight", "fit_scale", "scale_from_mad")):
            comp = copy.deepcopy(item)
            if hasattr(comp, "_validate"):
                comp._validate()
            out.append(comp)
        else:
            raise TypeError(
                f"Unknown component {item!r} in components: expected a name ('gaussian', 'laplace', "
                "'cauchy') or an object with log_pdf, weight, fit_scale and scale_from_mad methods."
            )
    return out
