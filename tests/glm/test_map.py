"""The MAP solver against a brute-force optimiser on the same objective, and its exact cases."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import optimize

from sklearn_bayes._glm._map import (
    LogisticLoss,
    MultinomialLoss,
    PoissonLoss,
    SquaredHingeLoss,
    SquaredLoss,
    fit_map,
    mle_exists,
    objective_value,
)

N, D = 80, 3


def _data(loss_name, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D)) + np.array([0.5, -1.0, 2.0])  # not centred: the intercept matters
    eta = X @ np.array([0.8, -0.5, 0.3]) - 0.4
    if loss_name == "squared":
        return X, eta + rng.normal(size=N), SquaredLoss()
    if loss_name == "logistic":
        return X, (rng.random(N) < 1 / (1 + np.exp(-eta))).astype(float), LogisticLoss()
    if loss_name == "multinomial":
        logits = np.column_stack([np.zeros(N), eta, -eta + X[:, 0]])
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        y = np.array([rng.choice(3, p=pi) for pi in p], dtype=float)
        return X, y, MultinomialLoss(3)
    if loss_name == "squared_hinge":
        return X, np.where(rng.random(N) < 1 / (1 + np.exp(-2 * eta)), 1.0, -1.0), SquaredHingeLoss()
    if loss_name == "poisson":
        return X, rng.poisson(np.exp(0.5 * eta)).astype(float), PoissonLoss()
    raise ValueError(loss_name)


LOSSES = ["squared", "logistic", "multinomial", "squared_hinge", "poisson"]


def _brute_force(X, y, loss, fit_intercept, **kw):
    q = loss.n_outputs
    k = q * X.shape[1]

    def fun(theta):
        b0 = theta[k:] if fit_intercept else np.zeros(q)
        return objective_value(X, y, loss, theta[:k], b0, **kw)

    theta0 = np.zeros(k + (q if fit_intercept else 0))
    res = optimize.minimize(fun, theta0, method="BFGS", options={"gtol": 1e-9, "maxiter": 20000})
    return res.x, res.fun


@pytest.mark.parametrize("loss_name", LOSSES)
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("with_mean", [True, False])
@pytest.mark.parametrize("with_offset_and_weights", [True, False])
def test_map_matches_brute_force(loss_name, fit_intercept, with_mean, with_offset_and_weights):
    X, y, loss = _data(loss_name)
    rng = np.random.default_rng(1)
    q = loss.n_outputs
    k = q * D
    A = rng.normal(size=(k, k))
    P = A @ A.T / k + 0.5 * np.eye(k)
    kw = dict(prior_precision=P)
    if with_mean:
        kw["prior_mean"] = rng.normal(size=k)
    if with_offset_and_weights:
        kw["offset"] = 0.3 * rng.normal(size=(N, q))
        kw["sample_weight"] = rng.uniform(0.2, 2.0, size=N)
    res = fit_map(X, y, loss, fit_intercept=fit_intercept, **kw)
    assert res.converged and not res.singular
    ours = np.concatenate([res.coef.ravel(), res.intercept if fit_intercept else []])
    theirs, fun = _brute_force(X, y, loss, fit_intercept, **kw)
    # the brute-force optimum can only be worse; both must agree to optimiser precision
    assert res.objective <= fun + 1e-9 * max(1.0, abs(fun))
    assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    if not fit_intercept:
        assert_allclose(res.intercept, 0.0)


@pytest.mark.parametrize("loss_name", ["logistic", "poisson", "multinomial"])
def test_unregularised_fit_matches_brute_force(loss_name):
    X, y, loss = _data(loss_name, seed=3)
    res = fit_map(X, y, loss)
    theirs, fun = _brute_force(X, y, loss, True)
    assert res.converged
    assert res.objective <= fun + 1e-9 * abs(fun)
    assert_allclose(np.concatenate([res.coef.ravel(), res.intercept]), theirs, rtol=1e-5, atol=1e-5)


def test_squared_loss_is_the_ridge_closed_form():
    X, y, loss = _data("squared")
    rng = np.random.default_rng(2)
    A = rng.normal(size=(D, D))
    P = A @ A.T + np.eye(D)
    m = rng.normal(size=D)
    # no intercept: (X^T X + P)^{-1} (X^T y + P m), the dissertation's formula
    res = fit_map(X, y, loss, prior_mean=m, prior_precision=P, fit_intercept=False)
    assert_allclose(res.coef[0], np.linalg.solve(X.T @ X + P, X.T @ y + P @ m), rtol=1e-10)
    # intercept: the same formula on centred data, intercept from the means
    Xc, yc = X - X.mean(0), y - y.mean()
    beta = np.linalg.solve(Xc.T @ Xc + P, Xc.T @ yc + P @ m)
    res = fit_map(X, y, loss, prior_mean=m, prior_precision=P)
    assert_allclose(res.coef[0], beta, rtol=1e-10)
    assert_allclose(res.intercept[0], y.mean() - X.mean(0) @ beta, rtol=1e-10)
    assert res.n_iter <= 3
    # weights and offset: (X^T W X + P)^{-1} (X^T W (y - o) + P m)
    w = rng.uniform(0.5, 2, size=N)
    o = rng.normal(size=N)
    res = fit_map(X, y, loss, prior_mean=m, prior_precision=P, sample_weight=w, offset=o, fit_intercept=False)
    assert_allclose(res.coef[0], np.linalg.solve(X.T @ (w[:, None] * X) + P, X.T @ (w * (y - o)) + P @ m),
                    rtol=1e-10)


def test_precision_forms_agree():
    X, y, loss = _data("logistic")
    rng = np.random.default_rng(4)
    A = rng.normal(size=(D, D))
    P = A @ A.T + np.eye(D)
    m = rng.normal(size=D)
    full = fit_map(X, y, loss, prior_mean=m, prior_precision=P)
    chol = fit_map(X, y, loss, prior_mean=m, prior_precision_cholesky=np.linalg.cholesky(P))
    assert_allclose(chol.coef, full.coef, rtol=1e-10)
    diag = np.array([0.5, 2.0, 3.0])
    a = fit_map(X, y, loss, prior_mean=m, prior_precision=diag)
    b = fit_map(X, y, loss, prior_mean=m, prior_precision=np.diag(diag))
    assert_allclose(a.coef, b.coef, rtol=1e-10)
    c = fit_map(X, y, loss, prior_precision=2.0)
    e = fit_map(X, y, loss, prior_precision=2.0 * np.eye(D))
    assert_allclose(c.coef, e.coef, rtol=1e-10)


def test_logistic_matches_liblinear_style_objective():
    """With P = I / C and mu = 0 the objective is scikit-learn's LogisticRegression(C)."""
    from sklearn.linear_model import LogisticRegression

    X, y, loss = _data("logistic")
    res = fit_map(X, y, loss, prior_precision=1.0 / 0.7)
    ref = LogisticRegression(C=0.7, tol=1e-12, max_iter=10000).fit(X, y)
    assert_allclose(res.coef[0], ref.coef_[0], rtol=1e-5)
    assert_allclose(res.intercept, ref.intercept_, rtol=1e-5)


def test_mle_exists_detects_separation():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] + 0.2 * X[:, 1] > 0).astype(float)
    assert not mle_exists(X, y, LogisticLoss())
    assert not mle_exists(X, 2 * y - 1, SquaredHingeLoss())
    # quasi-complete separation: points on the boundary
    Xq = np.vstack([X, [[0.0, 0.0], [0.0, 0.0]]])
    yq = np.concatenate([(X[:, 0] > 0).astype(float), [0.0, 1.0]])
    Xq[:40, 1] = 0.0
    assert not mle_exists(Xq, yq, LogisticLoss())
    y_noisy = y.copy()
    y_noisy[:6] = 1 - y_noisy[:6]
    assert mle_exists(X, y_noisy, LogisticLoss())
    # Poisson: all zero counts, and zeros exactly where a dummy is 1
    assert not mle_exists(X, np.zeros(40), PoissonLoss())
    dummy = (np.arange(40) < 8).astype(float)
    counts = rng.poisson(2.0, size=40).astype(float) + 1
    counts[:8] = 0
    assert not mle_exists(np.column_stack([X, dummy]), counts, PoissonLoss())
    assert mle_exists(X, counts, PoissonLoss())
    # multinomial: class 2 separated from the others
    y3 = np.where(X[:, 0] > 1.0, 2.0, (rng.random(40) < 0.5).astype(float))
    assert not mle_exists(X, y3, MultinomialLoss(3))
    assert mle_exists(X, rng.integers(0, 3, size=40).astype(float), MultinomialLoss(3))
    # squared loss: the fit always exists
    assert mle_exists(X, X[:, 0], SquaredLoss())


def test_unregularised_separated_fit_is_flagged():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(float)
    res = fit_map(X, y, LogisticLoss(), abort_on_divergence=True)
    assert res.diverged and np.all(np.isfinite(res.coef))


def test_bad_inputs():
    X, y, loss = _data("squared")
    with pytest.raises(ValueError, match="y must have shape"):
        fit_map(X, y[:-1], loss)
    with pytest.raises(ValueError, match="prior_precision must have shape"):
        fit_map(X, y, loss, prior_precision=np.eye(D + 1))
    with pytest.raises(ValueError, match="prior_mean must have"):
        fit_map(X, y, loss, prior_mean=np.zeros(D + 1), prior_precision=1.0)
    with pytest.raises(ValueError, match="sample_weight"):
        fit_map(X, y, loss, sample_weight=-np.ones(N))
    with pytest.raises(ValueError, match="offset"):
        fit_map(X, y, loss, offset=np.zeros(N + 1))
    with pytest.raises(ValueError, match="not both"):
        fit_map(X, y, loss, prior_precision=1.0, prior_precision_cholesky=np.eye(D))
    with pytest.raises(ValueError, match="n_classes >= 3"):
        MultinomialLoss(2)


@pytest.mark.parametrize("data", ["wdbc", "small"])
def test_hinge_homotopy_matches_libsvm_primal(data):
    """HingeLoss through the smoothing homotopy: the soft-margin primal 1/2 |b|^2 + sum max(0, 1 - y eta)
    (C = 1) of libsvm, whose objective it matches within the reported smoothing bound mu * N / 2
    (wdbc: down to mu = 1e-6; the small problem stalls earlier and says so)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.svm import SVC

    from sklearn_bayes._glm._map import HingeLoss

    if data == "wdbc":
        X, y01 = load_breast_cancer(return_X_y=True)
        X = (X - X.mean(0)) / X.std(0)
        y = np.where(y01 == 1, 1.0, -1.0)
    else:
        X, y, _ = _data("squared_hinge")
    res = fit_map(X, y, HingeLoss(), prior_precision=1.0)
    assert res.converged
    if data == "wdbc":
        assert res.smoothing == 1e-6
    ref = SVC(kernel="linear", C=1.0, tol=1e-10).fit(X, y)

    def F(b, b0):
        return np.sum(np.maximum(0.0, 1.0 - y * (X @ b + b0))) + 0.5 * b @ b

    f, f_ref = F(res.coef[0], res.intercept[0]), F(ref.coef_[0], ref.intercept_[0])
    bound = res.smoothing * len(y) / 2
    assert f <= f_ref + bound
    assert f_ref <= f + bound + 1e-7 * abs(f)  # libsvm stops at its own tolerance


def test_hinge_smoothing_bounds():
    from sklearn_bayes._glm._map import HingeLoss

    r = np.linspace(-2, 3, 1001)
    y = np.ones_like(r)
    for mu in (1.0, 0.1, 1e-3):
        loss = HingeLoss(mu)
        h = np.array([loss.value(y[i:i + 1], (1.0 - r[i:i + 1])[:, None], np.ones(1)) for i in range(r.size)])
        assert np.all(h <= np.maximum(0, r) + 1e-15)
        assert np.all(np.maximum(0, r) <= h + mu / 2 + 1e-15)
    with pytest.raises(ValueError, match="smoothing"):
        HingeLoss(0.0)


@pytest.mark.parametrize("loss_name", LOSSES + ["hinge"])
def test_values_are_the_weighted_losses_of_each_row(loss_name):
    from sklearn_bayes._glm._map import HingeLoss

    X, y, loss = _data("squared_hinge" if loss_name == "hinge" else loss_name)
    if loss_name == "hinge":
        loss = HingeLoss(smoothing=0.5)  # rows on every piece of the smoothed hinge
    rng = np.random.default_rng(3)
    eta = rng.normal(scale=2.0, size=(N, loss.n_outputs))
    w = rng.uniform(0.2, 3.0, size=N)
    v = loss.values(y, eta, w)
    assert v.shape == (N,)
    assert np.isclose(v.sum(), loss.value(y, eta, w), rtol=1e-12, atol=0)
    for i in (0, 7, N - 1):  # row i's loss is the value of row i alone
        assert np.isclose(v[i], loss.value(y[i:i + 1], eta[i:i + 1], w[i:i + 1]), rtol=1e-14, atol=0)
