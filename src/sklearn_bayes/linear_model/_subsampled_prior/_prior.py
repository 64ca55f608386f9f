"""The Gaussian prior from the subsample coefficients, and the map back to the data's units."""

from numbers import Real

import numpy as np
from scipy import linalg
from sklearn.covariance import ledoit_wolf_shrinkage

from sklearn_bayes._glm import rescale

#: condition number of the subsample correlation matrix above which shrinkage='auto' shrinks
_MAX_CONDITION = 1e10
#: relative floor of the subsample coefficient variances (a zero variance would be an
#: infinite prior precision; the floor makes it a very large one)
_VARIANCE_FLOOR = 1e-10


def _subsample_prior(coefs, *, covariance, scaling, shrinkage, n, n_rows):
    """Prior mean, covariance and precision from the subsample coefficients (m, k).

    Returns ``(mean, cov, precision, shrinkage_used)``.
    """
    m, k = coefs.shape
    mean = coefs.mean(axis=0)
    centred = coefs - mean
    cov = centred.T @ centred / (m - 1)
    var = np.diag(cov).copy()
    vmax = float(var.max(initial=0.0))
    floor = _VARIANCE_FLOOR * vmax if vmax > 0 else 1e-12 * (1.0 + float(mean @ mean) / k)
    var = np.maximum(var, floor)
    sd = np.sqrt(var)
    used = 0.0
    if covariance == "diag":
        R = np.eye(k)
    else:
        R = cov / np.outer(sd, sd)
        np.fill_diagonal(R, 1.0)
        if shrinkage is None:
            used = 0.0
        elif isinstance(shrinkage, Real) and not isinstance(shrinkage, str):
            used = float(shrinkage)
        else:
            ill = m <= k
            if not ill and shrinkage == "auto":
                ev = np.linalg.eigvalsh(R)
                ill = ev[0] <= 0 or ev[-1] / ev[0] > _MAX_CONDITION
            if shrinkage == "ledoit-wolf" or ill:
                used = float(ledoit_wolf_shrinkage(centred / sd, assume_centered=True)) if k > 1 else 0.0
        R = (1.0 - used) * R
        np.fill_diagonal(R, 1.0)
    factor = 1.0
    if scaling == "subsample_size":
        factor = float(n)
    elif scaling == "jackknife":
        factor = n * (m - 1) / ((n_rows - n) * m)
    try:
        if covariance != "diag" and used == 0.0 and m - 1 < k:
            # m vectors span at most m - 1 directions about their mean: singular whatever the
            # rounding (Cholesky may pass on a rounded rank-deficient matrix)
            raise linalg.LinAlgError
        cR = linalg.cho_factor(R, lower=True)
    except linalg.LinAlgError:
        raise ValueError(
            f"The covariance of the {m} subsample coefficient vectors (dimension {k}) is singular; "
            "use shrinkage='auto' or 'ledoit-wolf', covariance='diag', or more subsamples."
        ) from None
    Rinv = linalg.cho_solve(cR, np.eye(k))
    precision = Rinv / np.outer(sd, sd) / factor
    precision = 0.5 * (precision + precision.T)
    prior_cov = factor * R * np.outer(sd, sd)
    return mean, prior_cov, precision, used


def _to_data_units(out, st, q, structured=False):
    """Map one problem's standardised results (coefficients, intercepts, prior) to the data's units.

    With ``x = x_offset + x_scale * x_s`` and ``y = y_offset + y_scale * y_s`` a standardised
    coefficient ``b_s`` is ``b = b_s * y_scale / x_scale``; the prior moments transform with
    the same factors ``t`` (flattened like the prior, ``q`` rows of features): mean ``* t``,
    covariance ``* t t^T``, precision ``/ t t^T``.  ``structured`` (one output; used on wide data): the
    covariance of all the parameters ``J C J^T`` by rows and columns of the sparse ``J`` (``O(k^2)``)
    instead of two dense products (``O(k^3)``); equal up to rounding in the intercept's row and column.
    """
    x = np.tile(st.x_scale, q)
    out = dict(out)
    out["coef"] = st.coef(out["coef"])  # a ValueError naming X if beyond the float64 range
    out["intercept"] = np.atleast_1d(st.intercept(out["intercept"], out["coef"]))
    # the factors y_scale / x_scale are applied by rescale(), which overflows or underflows only
    # where the result does (a subnormal column scale alone makes y_scale / x_scale infinite)
    out["prior_mean"] = rescale(out["prior_mean"], num=(st.y_scale,), den=(x,))
    out["subsample_coefs"] = rescale(out["subsample_coefs"], num=(st.y_scale,), den=(x,))
    # second moments in extreme units (y ~ 1e300) may not be representable: inf / 0, not an error
    xi, xj = x[:, None], x[None, :]
    out["prior_covariance"] = rescale(out["prior_covariance"], num=(st.y_scale, st.y_scale), den=(xi, xj))
    out["prior_precision"] = rescale(out["prior_precision"], num=(xi, xj), den=(st.y_scale, st.y_scale))
    with np.errstate(over="ignore", under="ignore"):
        out["noise_variance"] = float(out["penalty_scale"] * np.square(np.float64(st.y_scale)))
    if out.get("theta_covariance") is not None:
        C = out["theta_covariance"]
        # also kept in the standardised units, with the change of units: quadratic forms of new rows
        # (the logistic's moderated predictive) are then computed where no entry over- or underflows
        out["theta_covariance_std"], out["x_offset"], out["x_scale"] = C, st.x_offset, st.x_scale
        k = x.size
        out["coef_covariance"] = rescale(C[:k, :k], num=(st.y_scale, st.y_scale), den=(xi, xj))
        out["coef_sampling_covariance"] = rescale(out["sampling_covariance"][:k, :k],
                                                  num=(st.y_scale, st.y_scale), den=(xi, xj))
        if out.get("centre_covariance") is not None:
            out["coef_centre_covariance"] = rescale(out["centre_covariance"][:k, :k],
                                                    num=(st.y_scale, st.y_scale), den=(xi, xj))
        # all the parameters (coefficients, then the q intercepts): theta = J theta_s with
        # b = t * b_s (t = y_scale / x_scale) and b0 = y_offset + y_scale * b0_s - x_offset . b
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            t = rescale(np.ones(k), num=(st.y_scale,), den=(x,))
            if structured:
                out["theta_covariance"] = _sandwich(C, t, np.tile(st.x_offset, q) * t, st.y_scale, q)
                return out
            J = np.diag(t)
            if C.shape[0] > k:
                off = np.tile(st.x_offset, q) * t
                Jb = np.zeros((q, k))
                for r in range(q):
                    Jb[r, r * (k // q):(r + 1) * (k // q)] = -off[r * (k // q):(r + 1) * (k // q)]
                J = np.block([[J, np.zeros((k, q))], [Jb, st.y_scale * np.eye(q)]])
            out["theta_covariance"] = J @ C @ J.T
    return out


def _sandwich(C, t, off, y_scale, q=1):
    """``J C J^T`` for ``J = [[diag(t), 0], [-B, y_scale I_q]]`` (``C`` of side ``k + q``; row ``r`` of ``B`` holds
    ``off`` on the columns of output ``r``, 0 elsewhere) or ``J = diag(t)`` (side ``k``), by rows and columns: the
    coefficient block is ``t_i C_ij t_j`` exactly as the dense product gives it, the intercepts' rows
    ``y_scale C_(k + r) - off_r^T C_(block r)``."""
    k = t.size
    m = k // q
    JC = np.empty_like(C)
    JC[:k] = t[:, None] * C[:k]
    if C.shape[0] > k:
        for r in range(q):
            JC[k + r] = y_scale * C[k + r] - off[r * m:(r + 1) * m] @ C[r * m:(r + 1) * m]
    out = np.empty_like(C)
    out[:, :k] = JC[:, :k] * t[None, :]
    if C.shape[0] > k:
        for r in range(q):
            out[:, k + r] = y_scale * JC[:, k + r] - JC[:, r * m:(r + 1) * m] @ off[r * m:(r + 1) * m]
    return out
