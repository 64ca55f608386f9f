"""The unregularised subsample fits (linear_model/_subsampled_prior/_fits.py) and their fallback."""

import numpy as np
import pytest

from sklearn_bayes._glm import LogisticLoss, SquaredLoss, fit_map
from sklearn_bayes.linear_model._subsampled_prior._fits import _fit_one_subsample, _fit_subsample_batch


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, X @ [1.0, -2.0, 0.5] + 0.3 + rng.normal(size=n)


def test_squared_loss_fit_is_ordinary_least_squares():
    X, y = _data()
    coef, intercept, status = _fit_one_subsample(X, y, None, SquaredLoss(), True, 1e-10, 100, np.zeros(1))
    ols = np.linalg.lstsq(np.column_stack([X, np.ones(len(y))]), y, rcond=None)[0]
    assert status == "ok"
    np.testing.assert_allclose(coef, ols[:3], rtol=1e-9)
    np.testing.assert_allclose(intercept, ols[3:], rtol=1e-9)


def test_a_pilot_start_gives_the_same_minimiser():
    X, y = _data()
    lab = (y > 0).astype(float)
    args = (LogisticLoss(), True, 1e-10, 100, np.zeros(1))
    cold = _fit_one_subsample(X, lab, None, *args)
    warm = _fit_one_subsample(X, lab, None, *args, start=(cold[0] + 0.1, cold[1] - 0.1))
    assert cold[2] == warm[2] == "ok"
    np.testing.assert_allclose(warm[0], cold[0], rtol=1e-7)
    np.testing.assert_allclose(warm[1], cold[1], rtol=1e-7)


def test_separated_subsample_falls_back_to_the_unit_prior_fit():
    X, _ = _data(40)
    lab = (X[:, 0] > 0).astype(float)  # completely separated by the first column
    null = np.array([0.2])
    coef, intercept, status = _fit_one_subsample(X, lab, None, LogisticLoss(), True, 1e-10, 100, null)
    assert status == "separated"
    assert np.all(np.isfinite(coef)) and np.all(np.isfinite(intercept))
    # the fallback: N(0, I) on the coefficients, N(null, 1) on the intercept, intercept as a column
    Xa = np.column_stack([X, np.ones(40)])
    ref = fit_map(Xa, lab, LogisticLoss(), fit_intercept=False, prior_mean=np.array([0.0, 0.0, 0.0, 0.2]),
                  prior_precision=1.0, tol=1e-10, max_iter=100)
    np.testing.assert_allclose(coef, ref.coef[0, :3], rtol=1e-9)
    np.testing.assert_allclose(intercept, ref.coef[:, 3], rtol=1e-9)


def test_rank_deficient_subsample_is_flagged():
    X, y = _data()
    X[:, 2] = 0.0  # a column without variation in this subsample
    *_, status = _fit_one_subsample(X, y, None, SquaredLoss(), True, 1e-10, 100, np.zeros(1))
    assert status == "rank_deficient"


@pytest.mark.parametrize("weighted", [False, True])
def test_batch_fits_each_index_set_in_order(weighted):
    X, y = _data(100)
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=100) if weighted else None
    idx = [np.arange(0, 50), np.arange(50, 100), np.arange(10, 90)]
    out = _fit_subsample_batch(X, y, w, idx, SquaredLoss(), True, 1e-10, 100, np.zeros(1))
    assert len(out) == 3
    for rows, (coef, intercept, status) in zip(idx, out):
        one = _fit_one_subsample(X[rows], y[rows], None if w is None else w[rows], SquaredLoss(), True, 1e-10,
                                 100, np.zeros(1))
        np.testing.assert_array_equal(coef, one[0])
        np.testing.assert_array_equal(intercept, one[1])
        assert status == one[2]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_penalised_ridge_batch_dual_form_is_the_newton_fit(weighted, fit_intercept):
    """Fewer subsample rows than columns: the n x n dual system (its kernel read off the Gram
    matrix of all rows, centred in kernel form) has the minimiser of the penalised Newton fit."""
    rng = np.random.default_rng(2)
    N, d = 40, 25
    X = rng.normal(size=(N, d)) + 0.5
    y = X @ rng.normal(size=d) + 1.0 + rng.normal(size=N)
    w = rng.uniform(0.5, 2.0, size=N) if weighted else None
    idx = [np.sort(rng.choice(N, size=15, replace=False)) for _ in range(4)]
    out = _fit_subsample_batch(X, y, w, idx, SquaredLoss(), fit_intercept, 1e-12, 100, np.zeros(1), penalised=0.7)
    for rows, (coef, intercept, status) in zip(idx, out):
        ref = fit_map(X[rows], y[rows], SquaredLoss(), sample_weight=None if w is None else w[rows],
                      fit_intercept=fit_intercept, prior_precision=0.7, tol=1e-12)
        # two exact solutions of one well-conditioned linear system (condition number below 1e3 here)
        np.testing.assert_allclose(coef, ref.coef[0], rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(intercept, ref.intercept, rtol=1e-9, atol=1e-11)
        assert status == "ok"


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_penalised_ridge_batch_downdate_is_the_newton_fit(weighted, fit_intercept):
    """Subsamples leaving out few rows (k = N - n <= n/4) of a wide design: their dual systems are
    principal blocks of one bordered system, solved from its inverse by a k x k downdate -- the
    minimiser of the penalised Newton fit of each subsample."""
    rng = np.random.default_rng(3)
    N, d = 40, 60
    X = rng.normal(size=(N, d)) + 0.5
    y = X @ rng.normal(size=d) / 5 + 1.0 + rng.normal(size=N)
    w = rng.uniform(0.5, 2.0, size=N) if weighted else None
    idx = [np.sort(rng.choice(N, size=n, replace=False)) for n in (36, 36, 36)]
    idx.append(np.arange(1, N))  # one row left out
    for batch in (idx[:3], idx[3:]):
        out = _fit_subsample_batch(X, y, w, batch, SquaredLoss(), fit_intercept, 1e-12, 100, np.zeros(1),
                                   penalised=0.7)
        for rows, (coef, intercept, status) in zip(batch, out):
            ref = fit_map(X[rows], y[rows], SquaredLoss(), sample_weight=None if w is None else w[rows],
                          fit_intercept=fit_intercept, prior_precision=0.7, tol=1e-12)
            # two exact solutions of one linear system (the bordered matrix is well conditioned here)
            np.testing.assert_allclose(coef, ref.coef[0], rtol=1e-8, atol=1e-10)
            np.testing.assert_allclose(intercept, ref.intercept, rtol=1e-8, atol=1e-10)
            assert status == "ok"
