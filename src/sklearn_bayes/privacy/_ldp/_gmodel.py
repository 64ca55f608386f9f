"""A smooth estimate of ``G`` by Efron's g-modeling (round 17, ``decoder='eb-gmodel'``).

The empirical-Bayes decoder's ``G`` (the distribution of the values ``theta_v`` across categories) is the NPMLE: a
discrete, spiky estimate whose posterior means pull categories onto its few atoms.  Efron's g-modeling (Efron 2016,
"Empirical Bayes deconvolution estimates", Biometrika 103) fits instead a smooth exponential family on the same grid
of atoms ``u_1 < ... < u_G``:

    g_j(alpha) ∝ exp(o_j + Q_j' alpha),

``Q`` a natural cubic spline basis in ``s = arcsin sqrt(pi)`` (``pi = q + (p - q) u``: the scale in which the binomial
noise of a support count is nearly constant) with ``GMODEL_DF`` knots at quantiles of the clipped unbiased estimates
(the end knots at ``s(0)`` and at the largest estimate, so no category lies beyond the spline's range), plus an
indicator of the atom ``u = 0`` (a point mass at 0 if the counts want one); the columns are standardised.  The
offset ``o_j`` is the log of atom ``j``'s cell width in ``s`` (so ``exp(Q alpha)`` is a density in ``s``, whatever
the spacing of the atoms).  ``alpha`` maximises the penalised marginal likelihood of the support counts

    l(alpha) = sum_v ln(sum_j L_vj g_j(alpha)) - c ||alpha||^2,   c = GMODEL_PENALTY,

whose gradient is ``Q' (sum_v P_v - K g) - 2 c alpha`` (``P_v`` the posterior of ``theta_v`` over the atoms):
L-BFGS-B, deterministic.  The prior of the decoder is the blend ``(1 - b) w + b g`` with the NPMLE's weights ``w``
(``b = GMODEL_BLEND``; round 17's prototype: ``g`` alone loses 20-1500 % where ``G`` really is discrete, a spike on a
flat tail or the real ``midwest`` county vector, while the blend keeps the NPMLE's atoms).
"""

import numpy as np

__all__ = ["GMODEL_BLEND", "GMODEL_DF", "GMODEL_MARGIN", "GMODEL_PENALTY", "gmodel_weights", "natural_spline_basis",
           "predictive_log_score", "smooth_prior", "spline_design"]

#: Knots of the natural spline (its number of columns is ``GMODEL_DF - 1``, plus the point mass at 0).
GMODEL_DF = 10
#: Ridge penalty ``c`` on the standardised coefficients.
GMODEL_PENALTY = 0.1
#: Weight ``b`` of the g-model in the prior ``(1 - b) NPMLE + b g``.
GMODEL_BLEND = 0.5
#: The blend replaces the NPMLE when its cross-fitted predictive log score is higher by more than this (nats).
GMODEL_MARGIN = 0.0
#: L-BFGS-B of the penalised fit: at most this many iterations, stopped when a step lowers the objective by less than
#: ``GMODEL_FTOL`` relative or the largest gradient component is below ``GMODEL_GTOL`` (scipy's defaults, 2.2e-9 and
#: 1e-5, stopped short of the maximum by up to 3e-7 nats on 120 categories).
GMODEL_MAX_ITER = 1000
GMODEL_FTOL = 1e-13
GMODEL_GTOL = 1e-7


def natural_spline_basis(x, knots):
    """Natural cubic spline basis at ``x`` (Hastie, Tibshirani and Friedman, eq. 5.4-5.5), without the constant.

    Columns ``x`` and ``d_k(x) - d_{m-1}(x)`` for ``k = 1..m-2``, ``d_k(x) = ((x - xi_k)_+^3 - (x - xi_m)_+^3) /
    (xi_m - xi_k)``: cubic between the ``m`` sorted knots ``xi``, linear beyond the end knots.
    """
    x = np.asarray(x, dtype=float)
    k = np.asarray(knots, dtype=float)
    m = k.size

    def d(j):
        return (np.maximum(x - k[j], 0.0) ** 3 - np.maximum(x - k[-1], 0.0) ** 3) / (k[-1] - k[j])

    last = d(m - 2)
    return np.column_stack([x] + [d(j) - last for j in range(m - 2)])


def spline_design(u, p, q, f, df=GMODEL_DF):
    """``(Q, offset)`` of the g-model on the sorted atoms ``u`` (``u[0] = 0``), from the unbiased estimates ``f``."""
    u = np.asarray(u, dtype=float)
    s = np.arcsin(np.sqrt(q + (p - q) * u))
    sf = np.arcsin(np.sqrt(q + (p - q) * np.clip(np.asarray(f, dtype=float), 0.0, 1.0)))
    lo = s[0]
    inside = sf[sf > lo]
    hi = inside.max() if inside.size else lo
    if inside.size:
        inner = np.quantile(inside, np.linspace(0.0, 1.0, int(df))[1:-1])
        knots = np.unique(np.r_[lo, inner, hi])
    else:
        knots = np.zeros(0)
    if knots.size < 3:  # (almost) every estimate at or below 0: three knots over the grid's first tenth
        knots = np.linspace(lo, lo + 0.1 * (s[-1] - lo), 3)
    Q = np.column_stack([natural_spline_basis(s, knots), (u == 0).astype(float)])
    sd = Q.std(axis=0)
    Q = (Q - Q.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    mid = np.r_[s[0], 0.5 * (s[1:] + s[:-1]), s[-1]]
    width = np.diff(mid)
    positive = width[width > 0]
    floor = positive.min() if positive.size else 1.0
    offset = np.log(np.maximum(width, floor))
    offset[u == 0] = np.log(np.median(np.maximum(width, floor)))  # the point mass: a typical cell, not a half one
    return Q, offset


def _softmax(eta):
    eta = eta - eta.max()
    g = np.exp(eta)
    return g / g.sum()


def gmodel_weights(L, Q, offset, penalty=GMODEL_PENALTY, max_iter=GMODEL_MAX_ITER):
    """``(g, alpha, converged)``: the penalised maximum marginal likelihood g-model (see the module's docstring).

    ``L``: ``(K, G)`` likelihood rows (any positive scaling per row), ``Q``: ``(G, d)``, ``offset``: ``(G,)``.
    """
    from scipy.optimize import minimize

    K = L.shape[0]

    def objective(a):
        g = _softmax(offset + Q @ a)
        m = np.maximum(L @ g, 1e-300)
        post_sum = ((1.0 / m) @ L) * g  # sum over rows of the posteriors over the atoms
        value = np.log(m).sum() - penalty * (a @ a)
        grad = Q.T @ (post_sum - K * g) - 2.0 * penalty * a
        return -value, -grad

    options = dict(maxiter=int(max_iter), ftol=GMODEL_FTOL, gtol=GMODEL_GTOL)
    res = minimize(objective, np.zeros(Q.shape[1]), jac=True, method="L-BFGS-B", options=options)
    return _softmax(offset + Q @ res.x), res.x, bool(res.success)


def smooth_prior(L, u, w, p, q, f, blend=GMODEL_BLEND):
    """``((1 - blend) w + blend g, converged)``: the NPMLE's weights ``w`` blended with the g-model on ``L``, ``u``."""
    Q, offset = spline_design(u, p, q, f)
    g, _, ok = gmodel_weights(L, Q, offset)
    return (1.0 - blend) * w + blend * g, ok


def predictive_log_score(L_train, prior, L_test):
    """``sum_v ln sum_j L_test[v, j] P[v, j]``: held-out users' counts scored by the posterior ``P`` of every category
    under ``prior`` given the other users' counts (``L_train``; both on one grid of atoms, rows scaled alike for every
    prior, so differences between priors are log predictive likelihood ratios)."""
    post = L_train * prior[None, :]
    post /= np.maximum(post.sum(axis=1, keepdims=True), 1e-300)
    return float(np.log(np.maximum((L_test * post).sum(axis=1), 1e-300)).sum())
