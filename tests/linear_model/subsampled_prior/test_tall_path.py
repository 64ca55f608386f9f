"""The GLMs' search along log tau on tall data (HSPT): warm-started fits with chord steps
(``fit_map(hessian_init=...)``), the factor of each fit's Hessian reused by the leave-one-out step
(``keep_factor``, ``_glm._leverage``), and the local searches of candidates that cannot win skipped
(``_tuning._prune_margin``).  ``_tuning._FAST_PATH = False`` runs the computation as before.

Bound on the coefficients (as in test_wide_dual): every fit stops at a Newton decrement ``lambda^2 = g^T
H^-1 g <= tol^2 max(1, |F|)`` with a Hessian formed at the stopping point (a cold fit and a chord-started one
alike), and near the optimum ``|theta - theta*|_H <= 2 lambda``; so two such fits differ by at most ``4 tol
sqrt(max(1, |F|))`` in the ``H`` norm, and coefficient ``j`` by that times ``sqrt((H^-1)_jj)``.
"""

import warnings

import numpy as np
import pytest
from scipy import linalg

from sklearn_bayes import SubsampledPriorLogisticRegression, SubsampledPriorPoissonRegressor
from sklearn_bayes._glm import LogisticLoss, PoissonLoss, fit_map, posterior_hessian
from sklearn_bayes._glm import _leverage, _map
from sklearn_bayes.linear_model._subsampled_prior import _tuning


def _tall(kind, n=3000, p=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    X -= X.mean(axis=0)
    eta = X @ (rng.normal(size=p) * 0.3)
    if kind == "log":
        return X, (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float), LogisticLoss()
    return X, rng.poisson(np.exp(0.5 * eta)).astype(float), PoissonLoss()


def _h_distance(X, y, loss, a, b, P):
    """``|theta_a - theta_b|_H`` with ``H`` the Hessian of the objective at ``b``."""
    H = posterior_hessian(X, y, loss, b.coef, b.intercept, prior_precision=P)
    v = np.concatenate([np.ravel(a.coef - b.coef), a.intercept - b.intercept])
    return float(np.sqrt(v @ H @ v))


@pytest.mark.parametrize("kind", ["log", "poi"])
@pytest.mark.parametrize("t_prev,t_new", [(-3.0, -2.8), (-2.0, -1.0), (-4.0, -3.0), (1.0, 3.0), (0.0, -4.0)])
def test_chord_fit_equals_cold_fit(kind, t_prev, t_new):
    X, y, loss = _tall(kind)
    d = X.shape[1]
    tol = 1e-8
    prev = fit_map(X, y, loss, prior_precision=10.0 ** -t_prev, keep_factor=True)
    assert prev.hessian is not None and prev.hessian.shape == (d + 1, d + 1)
    P = 10.0 ** -t_new
    cold = fit_map(X, y, loss, prior_precision=P, tol=tol)
    warm = fit_map(X, y, loss, prior_precision=P, tol=tol, coef_init=prev.coef, intercept_init=prev.intercept,
                   hessian_init=prev.hessian, keep_factor=True)
    assert cold.converged and warm.converged
    level = max(1.0, abs(cold.objective))
    assert _h_distance(X, y, loss, warm, cold, P) <= 4 * tol * np.sqrt(level)
    assert warm.objective == pytest.approx(_map.objective_value(X, y, loss, warm.coef, warm.intercept,
                                                                 prior_precision=P), rel=1e-14)
    if abs(t_new - t_prev) < 0.5:  # a small step along the path: one Hessian, the one the test needs
        assert warm.n_iter == 1 < cold.n_iter


@pytest.mark.parametrize("kind", ["log", "poi"])
def test_factor_and_hessian_are_those_at_the_fit(kind):
    X, y, loss = _tall(kind)
    prev = fit_map(X, y, loss, prior_precision=10.0, keep_factor=True)
    P = np.diag(np.linspace(0.5, 3.0, X.shape[1]))
    res = fit_map(X, y, loss, prior_precision=P, coef_init=prev.coef, intercept_init=prev.intercept,
                  hessian_init=prev.hessian, keep_factor=True)
    assert res.factor is not None  # the convergence test formed the Hessian at the returned point
    H = posterior_hessian(X, y, loss, res.coef, res.intercept, prior_precision=P)
    L = res.factor
    np.testing.assert_allclose(np.tril(L) @ np.tril(L).T, H, rtol=0, atol=1e-12 * np.max(np.abs(H)))
    H0 = posterior_hessian(X, y, loss, res.coef, res.intercept)
    np.testing.assert_allclose(res.hessian, H0, rtol=0, atol=1e-12 * np.max(np.abs(H0)))
    # without keep_factor nothing is kept
    plain = fit_map(X, y, loss, prior_precision=P)
    assert plain.factor is None and plain.hessian is None


@pytest.mark.parametrize("bad", ["shape", "nan", "indefinite", "far"])
def test_unusable_hessian_init_still_gives_the_minimiser(bad):
    X, y, loss = _tall("log")
    d = X.shape[1]
    H = {"shape": np.eye(d), "nan": np.full((d + 1, d + 1), np.nan), "indefinite": -np.eye(d + 1),
         "far": 1e6 * np.eye(d + 1)}[bad]
    P = 0.3
    cold = fit_map(X, y, loss, prior_precision=P)
    warm = fit_map(X, y, loss, prior_precision=P, hessian_init=H)
    assert warm.converged
    assert _h_distance(X, y, loss, warm, cold, P) <= 4 * 1e-8 * np.sqrt(max(1.0, abs(cold.objective)))


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("shifts", [False, True])
def test_leverages_equal_the_dense_formula(monkeypatch, fit_intercept, shifts):
    rng = np.random.default_rng(3)
    N, d = 1000, 7
    X = rng.normal(size=(N, d))
    k = d + int(fit_intercept)
    M = rng.normal(size=(k, k))
    Hinv = M @ M.T + np.eye(k)
    S = rng.normal(size=(N, d)) if shifts else None
    monkeypatch.setattr(_leverage, "_BLOCK_ROWS", 97)  # several blocks and a ragged last one
    J, s = _leverage.leverages(X, Hinv, fit_intercept, S, 2.5)
    Xa = np.hstack([X, np.ones((N, 1))]) if fit_intercept else X
    Z = Xa @ Hinv
    np.testing.assert_allclose(J, np.einsum("ij,ij->i", Z, Xa), rtol=1e-12)
    if shifts:
        np.testing.assert_allclose(s, 2.5 * np.einsum("ij,ij->i", Z[:, :d], S), rtol=1e-11, atol=1e-12)
    else:
        assert s is None


@pytest.mark.parametrize("kind", ["log", "poi"])
@pytest.mark.parametrize("with_shift", [False, True])
def test_alo_risk_from_the_factor_equals_the_formed_hessian(kind, with_shift):
    X, y, loss = _tall(kind, n=2000)
    d = X.shape[1]
    rng = np.random.default_rng(1)
    A = rng.normal(size=(d, d))
    Sinv = A @ A.T / d + np.eye(d)
    P = 0.7 * Sinv
    mean = 0.05 * rng.normal(size=d)
    res = fit_map(X, y, loss, prior_mean=mean, prior_precision=P, keep_factor=True,
                  **dict(zip(("coef_init", "intercept_init", "hessian_init"),
                             (mean, None, posterior_hessian(X, y, loss, mean[None, :], [0.0])))))
    assert res.factor is not None
    D = 0.01 * rng.normal(size=(X.shape[0], d)) if with_shift else None
    w = np.ones(X.shape[0])
    r0, rows0 = _tuning.alo_risk(X, y, w, loss, res.coef, res.intercept, P, True, D, rows=True)
    r1, rows1 = _tuning.alo_risk(X, y, w, loss, res.coef, res.intercept, P, True, D, rows=True,
                                 factor=res.factor, PD=None if D is None else (D @ Sinv, 0.7))
    assert r1 == pytest.approx(r0, rel=1e-12)
    np.testing.assert_allclose(rows1, rows0, rtol=1e-9, atol=1e-14)


def test_prune_margin():
    assert _tuning._prune_margin([3.0, 1.0, 2.0], 1) == 2.0
    assert _tuning._prune_margin([1.0, 2.0, 5.0], 0) == 1.0
    assert _tuning._prune_margin([4.0, 1.0], 1) == 3.0
    assert _tuning._prune_margin([np.inf, 1.0, 2.0], 1) == np.inf  # never skip beside an infinite risk
    assert _tuning._prune_margin([1.0], 0) == 0.0


def _fit(Est, X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Est(random_state=0, **kw).fit(X, y)


def _count_fits(monkeypatch):
    """The full-data fits of the search, each recorded as whether it was started with a Hessian."""
    calls = []
    orig = _tuning.fit_map
    monkeypatch.setattr(_tuning, "fit_map",
                        lambda *a, **k: calls.append(k.get("hessian_init") is not None) or orig(*a, **k))
    return calls


@pytest.mark.parametrize("kind,Est", [("log", SubsampledPriorLogisticRegression),
                                      ("poi", SubsampledPriorPoissonRegressor)])
@pytest.mark.parametrize("seed,chord_min", [(0, None), (1, None), (2, 10**9)])
def test_fast_search_equals_the_previous_one(monkeypatch, kind, Est, seed, chord_min):
    """The same prior (shape, mean, scale) and the coefficients within the solver's tolerance, from fewer
    full-data fits (with chord steps from 6000 rows by default; without them below the threshold)."""
    if chord_min is not None:
        monkeypatch.setattr(_tuning, "_CHORD_MIN_ROWS", chord_min)
    rng = np.random.default_rng(seed)
    n, p = 6000, 12
    X = rng.normal(size=(n, p)) * rng.uniform(0.5, 3.0, size=p)
    eta = (X / X.std(axis=0)) @ (rng.normal(size=p) * 0.25)
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int) if kind == "log" else rng.poisson(np.exp(0.5 * eta))
    calls = _count_fits(monkeypatch)
    fast = _fit(Est, X, y)
    n_fast = len(calls)
    assert any(calls) == (chord_min is None)  # chord-started fits only from _CHORD_MIN_ROWS rows
    monkeypatch.setattr(_tuning, "_FAST_PATH", False)
    calls.clear()
    slow = _fit(Est, X, y)
    assert n_fast < len(calls)
    for key in ("shape", "mean", "at_grid_boundary"):
        assert fast.prior_choice_[key] == slow.prior_choice_[key]
    assert fast.prior_choice_["scale"] == pytest.approx(slow.prior_choice_["scale"], rel=1e-9)
    assert fast.prior_choice_["loo_risk"] == pytest.approx(slow.prior_choice_["loo_risk"], rel=1e-9)
    # |F| <= F(0) (the minimum is below the objective at zero coefficients and intercept), in the
    # objective's units: the logistic F(0) = N log 2; the Poisson F(0) = N, and F >= sum(y - y log y)
    yl = np.where(y > 0, y * np.log(np.maximum(y, 1)), 0.0)
    f_bound = n * np.log(2.0) if kind == "log" else max(float(n), float(np.sum(np.abs(y - yl))))
    sd = np.sqrt(np.diag(slow.coef_covariance_))
    bound = 4 * Est().tol * np.sqrt(f_bound) * sd
    assert np.all(np.abs(np.ravel(fast.coef_) - np.ravel(slow.coef_)) <= bound)


def test_multinomial_fast_search_equals_the_previous_one(monkeypatch):
    monkeypatch.setattr(_tuning, "_CHORD_MIN_ROWS", 0)
    rng = np.random.default_rng(5)
    n, p = 3000, 6
    X = rng.normal(size=(n, p))
    logits = np.column_stack([np.zeros(n), X @ rng.normal(size=p) * 0.4, X @ rng.normal(size=p) * 0.4])
    y = np.array([rng.choice(3, p=np.exp(r) / np.exp(r).sum()) for r in logits])
    fast = _fit(SubsampledPriorLogisticRegression, X, y)
    monkeypatch.setattr(_tuning, "_FAST_PATH", False)
    slow = _fit(SubsampledPriorLogisticRegression, X, y)
    for key in ("shape", "mean"):
        assert fast.prior_choice_[key] == slow.prior_choice_[key]
    assert fast.prior_choice_["scale"] == pytest.approx(slow.prior_choice_["scale"], rel=1e-9)
    C = slow.coef_covariance_
    sd = np.sqrt(np.diag(C))
    bound = 4 * 1e-8 * np.sqrt(n * np.log(3.0)) * sd
    assert np.all(np.abs(np.ravel(fast.coef_[1:]) - np.ravel(slow.coef_[1:])) <= bound)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_svm_fast_path_equals_the_previous_one(monkeypatch, n_classes):
    """The squared-hinge SVM's grid (svm_path) with chord-started fits and the factors reused: the same
    candidate chosen, the coefficients within the bound of test_wide_dual's SVM test (the objective is
    strongly convex with modulus at least the prior precision)."""
    from sklearn_bayes import SubsampledPriorLinearSVC

    monkeypatch.setattr(_tuning, "_CHORD_MIN_ROWS", 0)
    rng = np.random.default_rng(7)
    n, p = 3000, 8
    X = rng.normal(size=(n, p))
    score = X @ rng.normal(size=(p, n_classes)) + rng.logistic(size=(n, n_classes))
    y = np.argmax(score, axis=1)
    calls = _count_fits(monkeypatch)
    fast = _fit(SubsampledPriorLinearSVC, X, y)
    assert sum(calls) > len(calls) // 2  # most fits along the grid started from the last one's Hessian
    monkeypatch.setattr(_tuning, "_FAST_PATH", False)
    calls.clear()
    slow = _fit(SubsampledPriorLinearSVC, X, y)
    assert len(calls) > 0 and not any(calls)
    choices = [(fast.prior_choice_, slow.prior_choice_)] if n_classes == 2 else list(
        zip(fast.prior_choice_, slow.prior_choice_))
    for a, b in choices:
        for key in ("shape", "mean", "intercept"):
            assert a[key] == b[key]
        assert a["scale"] == pytest.approx(b["scale"], rel=1e-12)
    prec = 1.0 / np.diag(np.atleast_2d(slow.prior_covariance_)) if n_classes == 2 else None
    tol = SubsampledPriorLinearSVC().tol
    if prec is not None:
        bound = 4 * tol * np.sqrt(float(n)) / np.sqrt(prec)
        assert np.all(np.abs(np.ravel(fast.coef_) - np.ravel(slow.coef_)) <= bound)
    else:  # one prior for all the one-vs-rest problems: the same predictions
        np.testing.assert_array_equal(fast.predict(X), slow.predict(X))
    np.testing.assert_array_equal(fast.predict(X), slow.predict(X))


def test_staged_loss_uses_the_start_hints_in_its_first_stage_only():
    """The smoothed hinge is minimised stage by stage: a data term and Hessian given for the starting point
    belong to the first stage's loss and point only; the result equals the fit without them."""
    from sklearn_bayes._glm import HingeLoss

    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 5))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=400) > 0, 1.0, -1.0)
    plain = fit_map(X, y, HingeLoss(), prior_precision=1.0)
    first = next(iter(HingeLoss().stages()))
    start = fit_map(X, y, first, prior_precision=3.0, keep_factor=True)
    hinted = fit_map(X, y, HingeLoss(), prior_precision=1.0, coef_init=start.coef, intercept_init=start.intercept,
                     hessian_init=start.hessian, data_term_init=start.data_term)
    assert hinted.converged and plain.converged and hinted.smoothing == plain.smoothing
    # the last stage's objective is strongly convex with modulus >= the prior precision 1, so two fits that
    # stop at Newton decrements <= tol^2 max(1, |F|) differ by at most 4 tol sqrt(max(1, |F|)) per
    # coefficient; |F| <= F(0) <= 1.5 per row (the smoothed hinge at 0 is at most 1 + the smoothing width)
    bound = 4 * 1e-8 * np.sqrt(1.5 * X.shape[0])
    np.testing.assert_allclose(hinted.coef, plain.coef, rtol=0, atol=bound)
    np.testing.assert_allclose(hinted.intercept, plain.intercept, rtol=0, atol=bound)
