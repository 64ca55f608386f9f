"""Synthetic data generators for the papers' simulation studies."""

import numpy as np
from scipy import stats
from sklearn.utils import check_random_state

__all__ = ["make_subsampled_prior_regression"]


def make_subsampled_prior_regression(
    n_samples=1000,
    n_features=100,
    *,
    design="normal",
    noise=10.0,
    sparsity=0.5,
    correlation=0.9,
    coef=False,
    random_state=None,
):
    """Linear regression data as in Table A.1 of the dissertation (ridge simulations).

    ``y = X beta + noise * e`` with standard normal ``e``.  The rows of ``X`` are
    :math:`N(0, I)` (``design='normal'``) or :math:`N(0, R)` with ``R`` the correlation matrix
    of a covariance drawn from an inverse Wishart distribution whose scale matrix is
    equicorrelated with correlation ``correlation`` (``design='norm-IW'``: highly correlated
    features).  A fraction ``sparsity`` of the coefficients is zero; the others are standard
    normal.

    Parameters
    ----------
    n_samples : int, default=1000
        ``N`` (the table uses 1000 and 2000).
    n_features : int, default=100
        ``d`` (the table uses 100).
    design : {'normal', 'norm-IW'}, default='normal'
        Distribution of the rows of ``X``.
    noise : float, default=10.0
        Standard deviation of the noise (the table uses 10 and 100).
    sparsity : float in [0, 1], default=0.5
        Fraction of zero coefficients (the table uses 0.25, 0.5 and 0.75).
    correlation : float in [0, 1), default=0.9
        Correlation of the inverse Wishart scale matrix (``design='norm-IW'`` only); the
        degrees of freedom are ``n_features + 2``.
    coef : bool, default=False
        Also return the true coefficients.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    coef : ndarray of shape (n_features,)
        Only if ``coef=True``.

    Notes
    -----
    The dissertation does not state the distribution of the nonzero coefficients, the
    inverse Wishart parameters or the correlation level; the defaults here are choices that
    reproduce the table's orders of magnitude (MSE close to ``noise**2``).

    Examples
    --------
    >>> from sklearn_bayes.datasets import make_subsampled_prior_regression
    >>> X, y, beta = make_subsampled_prior_regression(200, 10, design="norm-IW", coef=True, random_state=0)
    >>> X.shape, y.shape, int((beta == 0).sum())
    ((200, 10), (200,), 5)
    """
    if design not in ("normal", "norm-IW"):
        raise ValueError(f"design must be 'normal' or 'norm-IW', got {design!r}.")
    if not 0.0 <= sparsity <= 1.0:
        raise ValueError(f"sparsity must be in [0, 1], got {sparsity!r}.")
    if not 0.0 <= correlation < 1.0:
        raise ValueError(f"correlation must be in [0, 1), got {correlation!r}.")
    if n_samples < 1 or n_features < 1:
        raise ValueError(f"n_samples and n_features must be >= 1, got {n_samples} and {n_features}.")
    if noise < 0:
        raise ValueError(f"noise must be >= 0, got {noise!r}.")
    rng = check_random_state(random_state)
    Z = rng.standard_normal((n_samples, n_features))
    if design == "norm-IW":
        d = n_features
        scale = (1.0 - correlation) * np.eye(d) + correlation * np.ones((d, d))
        S = np.atleast_2d(stats.invwishart(df=d + 2, scale=scale).rvs(random_state=rng))
        sd = np.sqrt(np.diag(S))
        R = S / np.outer(sd, sd)
        Z = Z @ np.linalg.cholesky(R).T
    beta = rng.standard_normal(n_features)
    n_zero = int(round(sparsity * n_features))
    beta[rng.permutation(n_features)[:n_zero]] = 0.0
    y = Z @ beta + noise * rng.standard_normal(n_samples)
    return (Z, y, beta) if coef else (Z, y)
