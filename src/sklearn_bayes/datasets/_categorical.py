"""Synthetic categorical streams (Section 5.7 of the AdOBEst-LDP paper)."""

import numpy as np

from sklearn_bayes.utils import check_generator

__all__ = ["make_dirichlet_categorical_stream", "make_zipf_categorical_stream"]


def make_dirichlet_categorical_stream(n_users, n_categories, concentration=1.0, random_state=None):
    """Draw ``theta* ~ Dir(rho, ..., rho)`` and ``n_users`` i.i.d. categories ``X_t ~ Cat(theta*)``.

    Smaller ``concentration`` (``rho``) gives more uneven probabilities.

    Parameters
    ----------
    n_users : int
    n_categories : int
    concentration : float, default=1.0
        The symmetric Dirichlet parameter ``rho > 0``.
    random_state : None, int, numpy.random.Generator or RandomState

    Returns
    -------
    X : ndarray of shape (n_users, 1)
        Categories in ``0..n_categories-1``, in arrival order.
    theta : ndarray of shape (n_categories,)
        The true probabilities.

    Examples
    --------
    >>> from sklearn_bayes.datasets import make_dirichlet_categorical_stream
    >>> X, theta = make_dirichlet_categorical_stream(100, 5, 0.1, random_state=0)
    >>> X.shape, theta.shape
    ((100, 1), (5,))
    """
    rng = check_generator(random_state)
    if concentration <= 0:
        raise ValueError(f"concentration must be > 0, got {concentration!r}.")
    # small concentrations underflow in the gamma draws: draw in log space
    log_g = np.log(rng.gamma(concentration + 1.0, size=n_categories)) + np.log(rng.random(n_categories)) / concentration
    log_g -= log_g.max()
    theta = np.exp(log_g)
    theta /= theta.sum()
    X = rng.choice(n_categories, size=n_users, p=theta).reshape(-1, 1)
    return X, theta


def make_zipf_categorical_stream(n_users, n_categories, exponent=1.1, shuffle=True, random_state=None):
    """Draw ``n_users`` i.i.d. categories from a Zipf(``exponent``) law on ``n_categories`` values.

    ``theta*_(r) = r^(-s) / sum_j j^(-s)`` for the rank ``r = 1..K`` (a truncated Zipf law, the
    heavy-tailed frequency profile of words, URLs or item popularity).  With ``shuffle=True``
    the ranks are assigned to the categories in a random order, so that no estimator can
    profit from the category index.

    Parameters
    ----------
    n_users : int
    n_categories : int
    exponent : float, default=1.1
        The Zipf exponent ``s > 0``; larger is more skewed.
    shuffle : bool, default=True
        Randomly permute which category gets which rank (drawn from ``random_state``).
    random_state : None, int, numpy.random.Generator or RandomState

    Returns
    -------
    X : ndarray of shape (n_users, 1)
        Categories in ``0..n_categories-1``, in arrival order.
    theta : ndarray of shape (n_categories,)
        The true probabilities.

    Examples
    --------
    >>> from sklearn_bayes.datasets import make_zipf_categorical_stream
    >>> X, theta = make_zipf_categorical_stream(100, 5, 1.1, shuffle=False, random_state=0)
    >>> X.shape, bool(theta[0] > theta[1] > theta[4])
    ((100, 1), True)
    """
    rng = check_generator(random_state)
    if not exponent > 0:
        raise ValueError(f"exponent must be > 0, got {exponent!r}.")
    theta = np.arange(1, n_categories + 1, dtype=float) ** -float(exponent)
    theta /= theta.sum()
    if shuffle:
        theta = theta[rng.permutation(n_categories)]
    X = rng.choice(n_categories, size=n_users, p=theta).reshape(-1, 1)
    return X, theta
