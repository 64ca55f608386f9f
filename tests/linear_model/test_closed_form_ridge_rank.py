"""ClosedFormRidge on designs whose Gram matrix is numerically singular (review HQR, F1).

Before: the ridge system was solved with the closed-form penalty of a numerically zero eigenvalue (1e-14 to 1e-18),
and the covariance inverted through the pseudo-inverse, which drops the null direction: a near-duplicate column gave
coefficients of +-5e4 whose 95 % intervals were 0.2 wide and excluded every plausible value (12 of 20 seeds), and an
exact duplicate or the one-hot dummy trap raised ``LinAlgError: Singular matrix`` in some seeds.  Now the eigenvalues
of the Gram matrix within :func:`sklearn_bayes._glm.rank_tolerance` are 0 (the same rule as the Laplace intervals of
the SubsampledPrior* GLMs), the fit runs on the identified directions (minimum norm along the null space) and the
variance of every coefficient with a component in the null space is infinite."""

import numpy as np
import pytest
from sklearn.preprocessing import OneHotEncoder

from sklearn_bayes import ClosedFormRidge

N = 80


def _design(kind, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 4))
    if kind == "onehot":
        g = rng.choice(list("abc"), N)
        y = (g == "a") * 1.0 + rng.normal(size=N)
        D = OneHotEncoder(sparse_output=False).fit_transform(g[:, None])  # the dummies sum to the intercept
        return np.column_stack([X[:, 0], D]), y, [1, 2, 3]
    y = X @ [1.0, -0.5, 0.25, 0.0] + rng.normal(size=N)
    rel = {"near-duplicate": 1e-9, "duplicate": 0.0}[kind]
    return np.column_stack([X, X[:, 0] * (1 + rel * rng.normal(size=N))]), y, [0, 4]


@pytest.mark.parametrize("kind", ["near-duplicate", "duplicate", "onehot"])
def test_collinear_columns_get_infinite_intervals_and_the_others_finite(kind):
    for seed in range(20):
        X, y, cols = _design(kind, seed)
        est = ClosedFormRidge().fit(X, y)  # no LinAlgError
        ci = est.conf_int()
        others = [j for j in range(X.shape[1]) if j not in cols]
        assert np.all(ci[cols, 0] == -np.inf) and np.all(ci[cols, 1] == np.inf), seed
        assert np.all(np.isfinite(ci[others])), seed
        assert np.all(np.isfinite(est.coef_)) and np.isfinite(est.intercept_)
        # the coefficients along the null space are 0 (minimum norm): the copies share the effect equally
        if kind == "duplicate":
            assert est.coef_[0] == pytest.approx(est.coef_[4], rel=1e-8)
            assert abs(est.coef_[0] + est.coef_[4] - 1.0) < 0.5  # the true sum, within 4 sd (sd 0.11)
        if kind == "onehot":
            # orthogonal to the null direction, (sd_a, sd_b, sd_c) on the standardised columns: sum_j coef_j sd_j^2 = 0
            v = X[:, cols].std(axis=0) ** 2
            assert abs(est.coef_[cols] @ v) < 1e-8 * np.abs(est.coef_[cols]) @ v
        assert est.alpha_ > 0 and np.isfinite(est.sigma2_)


def test_identified_near_collinear_columns_keep_finite_intervals():
    """A column that differs from another by a relative 1e-4 (eigenvalue ratio about 1e-9, far above the
    tolerance of about 1e-14): identified, finite intervals, the ordinary path."""
    for seed in range(5):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(N, 4))
        y = X @ [1.0, -0.5, 0.25, 0.0] + rng.normal(size=N)
        X = np.column_stack([X, X[:, 0] * (1 + 1e-4 * rng.normal(size=N))])
        ci = ClosedFormRidge().fit(X, y).conf_int()
        assert np.all(np.isfinite(ci)) and np.all(np.diff(ci, axis=1) > 0)
        assert np.diff(ci[0])[0] > 1e2  # the collinear pair is poorly determined (its OLS sd is about 1e3)
