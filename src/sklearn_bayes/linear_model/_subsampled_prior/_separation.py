"""The binary logistic regression's scale where the classes nearly separate (round HSP, review HQZ F1).

``prior_scale='loo'`` (:func:`._tuning.select_glm`) picks the candidate prior ``N(c, tau Sigma)`` and its scale by
the approximate leave-one-out (ALO) log-loss, then moves to the strongest prior within half a standard error of
the minimum.  Where the classes nearly, but not completely, separate, that risk rests on one or two rows:
:func:`near_separated_scale` then sets the scale by the ALO Brier score, which is bounded per row.
``prior_scale='loo-log-loss'`` (or :data:`RULE` = None) turns the branch off: the computation before round HSP,
bit for bit.
"""

import numpy as np
from scipy import optimize, special

#: the binary logistic loss where the classes nearly separate (round HSP, :func:`near_separated_scale`): the scale
#: by the leave-one-out Brier score ('brier', adopted), by the Laplace evidence ('evidence', measured on the dev
#: sets only) or None (no such branch: the computation before round HSP, bit for bit; prior_scale='loo-log-loss')
RULE = "brier"
#: ... nearly separated: the weakest prior's fit misclassifies a share of the training weight in (0, this]
MAX_ERROR = 0.02
#: ... and at least this many rows (in units of the mean weight)
MIN_ROWS = 10


def near_separation(X, y, w, fit_intercept, weakest):
    """The training error of ``weakest``, the chosen candidate's fit at the weakest prior searched (``tau =
    10^3``): the share of the weight misclassified, and that weight in units of the mean weight (rows)."""
    eta = X @ np.ravel(weakest.coef) + (float(np.ravel(weakest.intercept)[0]) if fit_intercept else 0.0)
    wrong = float(w @ ((2.0 * y - 1.0) * eta <= 0))
    return wrong / float(w.sum()), wrong / float(np.mean(w))


def weakest_fit(best, hi, limit_fit):
    """The chosen candidate's fit at ``log10 tau = hi`` (3): from its search's cache, or -- where the weak-prior
    end skipped that decade (HSPT2) -- fitted alone (no leave-one-out risk, the search's state and cache
    untouched), started at the limit (maximum-likelihood) fit if there is one, else at the weakest fit cached."""
    risk, cache, _, _ = best["_search"]
    if hi in cache:
        return cache[hi][1]
    start = limit_fit[0] if limit_fit else cache[max(cache)][1]
    return risk(hi, state=dict(coef=start.coef, intercept=start.intercept, hessian=start.hessian,
                               data_term=start.data_term, point=None), fit_only=True)


def near_separated_scale(X, y, w, loss, fit_intercept, best, wbar, limit_fit, log10_tau, alo_risk, evidence_scale):
    """Where the classes nearly, but not completely, separate -- the chosen candidate's fit at ``tau = 10^3``
    (:func:`weakest_fit`) misclassifies a share of the training weight in ``(0, MAX_ERROR]`` and at least
    :data:`MIN_ROWS` rows -- the ``log10 tau`` by :data:`RULE`: ``'brier'`` the
    smallest approximate leave-one-out Brier score ``sum_i w_i (expit(eta_{-i}) - y_i)^2`` along the candidate's
    decades, then a bounded search between the best decade's neighbours; ``'evidence'``
    (``evidence_scale``, :func:`._tuning._evidence_scale`).  The search's range ``log10_tau`` and
    :func:`._tuning.alo_risk` come from the caller (this module does not import ``_tuning``).  None elsewhere
    (the half-standard-error rule's scale stays).

    Why (round HSP, MASS Aids2): there the leave-one-out log-loss rests on one or two rows whose
    leave-one-out losses are 15-57 nats (every other row's below 3), its minimum -- exact or approximate --
    sits where those rows happen to fall, and the standard error of the half-SE rule, inflated by them,
    moves the scale 3.5-4x further towards the prior; the Brier score is bounded per row.  With fewer
    misclassified rows the maximum-likelihood fit rests on those few rows and weak priors extrapolate
    badly (the benchmark's CreditCard and HMDA at 150 rows: the rule without the row floor lost by 1.0-1.3
    paired SE)."""
    if RULE is None:
        return None
    lo, hi = log10_tau
    err, rows = near_separation(X, y, w, fit_intercept, weakest_fit(best, hi, limit_fit))
    if not (0.0 < err <= MAX_ERROR and rows >= MIN_ROWS):
        return None
    if RULE == "evidence":
        return evidence_scale(X, y, w, loss, fit_intercept, best, wbar)
    risk, cache, state, _ = best["_search"]
    prior_at, Dm = best["_prior"]
    grid = [float(t) for t in np.arange(lo, hi + 1e-9, 1.0)]
    br = {}

    def brier(t):
        t = float(t)
        if t not in br:
            if t not in cache:
                risk(t)
            res = cache[t][1]
            eta = alo_risk(X, y, w, loss, res.coef, res.intercept, prior_at(t), fit_intercept, Dm, loo_eta=True)
            br[t] = float(w @ (special.expit(eta) - y) ** 2)
        return br[t]

    vals = [brier(t) for t in grid]
    j = int(np.argmin(vals))
    if 0 < j < len(grid) - 1:
        r = cache[grid[j]][1]
        state.update(coef=r.coef, intercept=r.intercept, hessian=r.hessian, data_term=r.data_term, point=None)
        optimize.minimize_scalar(brier, bounds=(grid[j - 1], grid[j + 1]), method="bounded", options=dict(xatol=0.15))
    return min(br, key=br.get)
