"""The n q-dimensional (Woodbury) Newton system of _glm._multidual for q > 1 outputs (the multinomial loss).

Every quantity of the dual form is compared with the dense (q d + q)-dimensional computation of before.  Both
are backward-stable solves of the same system, so they differ by at most a small multiple of ``eps * cond(H)``
times the size of the result (``cond(H)`` the condition number of the Hessian; for the data-only information's
pseudo-inverse, that of its kept eigenvalues).  The constant 8 (d + n) q of the bounds below is the one of
tests/glm/test_dual.py with every dimension counted (``q d + q`` parameters, ``n q`` dual rows).  The fits
(Newton's method through either form) are compared with the stopping rule's own bound: for an objective that
is ``mu``-strongly convex near its optimum, ``|theta - theta*| <= |grad F(theta)| / mu``.
"""

import numpy as np
import pytest
from scipy import linalg

from sklearn_bayes._glm import _dual, _multidual
from sklearn_bayes._glm._map import (
    LogisticLoss,
    MultinomialLoss,
    fit_map,
    inverse_information,
    posterior_hessian,
    rank_tolerance,
)

EPS = np.finfo(float).eps


def _data(n=24, d=70, K=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    beta = np.zeros((d, K))
    beta[:5] = rng.normal(size=(5, K))
    y = np.argmax(X @ beta + rng.gumbel(size=(n, K)), axis=1).astype(float)
    return X, y, MultinomialLoss(K), rng


def _blocks(d, q, fit_intercept):
    return [np.r_[k * d:(k + 1) * d, [q * d + k] if fit_intercept else []].astype(int) for k in range(q)]


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_factor_equals_the_dense_system(fit_intercept, weighted):
    X, y, loss, rng = _data()
    n, d = X.shape
    q = loss.n_outputs
    assert _multidual.use_multi_dual(n, d, q)
    w = rng.uniform(0.5, 2.0, n) if weighted else np.ones(n)
    B, b0, a = 0.1 * rng.normal(size=(q, d)), 0.3 * rng.normal(size=q), 0.7
    H = posterior_hessian(X, y, loss, B, b0, sample_weight=w, prior_precision=np.full(q * d, a),
                          fit_intercept=fit_intercept)
    _, h = loss.derivatives(y, X @ B.T + (b0 if fit_intercept else 0.0), w)
    f = _multidual.MultiDualFactor.build(X, h, a, fit_intercept)
    assert f is not None
    ev = linalg.eigvalsh(H)
    bound = 8 * (d + n + 1) * q * EPS * ev[-1] / ev[0]
    Hinv = linalg.inv(H)
    G = rng.normal(size=(H.shape[0], 3))
    assert np.max(np.abs(f.solve(G) - Hinv @ G)) <= bound * np.max(np.abs(Hinv)) * np.abs(G).sum(axis=0).max()
    g = G[:, 0]
    assert np.max(np.abs(f.solve(g) - Hinv @ g)) <= bound * np.max(np.abs(Hinv)) * np.abs(g).sum()
    inv = f.inverse()
    np.testing.assert_array_equal(inv, inv.T)
    assert np.max(np.abs(inv - Hinv)) <= bound * np.max(np.abs(Hinv))
    # the q x q leverage blocks J_i = T_i H^-1 T_i^T and the prior-mean shifts a T_i H^-1 (D_i, 0)
    Xa = np.hstack([X, np.ones((n, 1))]) if fit_intercept else X
    blocks = _blocks(d, q, fit_intercept)
    J = np.array([[[Xa[i] @ Hinv[np.ix_(ba, bb)] @ Xa[i] for bb in blocks] for ba in blocks] for i in range(n)])
    scale = np.max(np.abs(Hinv)) * np.max(np.abs(Xa).sum(axis=1)) ** 2
    assert np.max(np.abs(f.leverage_blocks() - J)) <= bound * scale
    D = rng.normal(size=(n, q * d))
    T = D @ (a * Hinv[:q * d, :])
    shift = np.stack([np.einsum("ij,ij->i", Xa, T[:, cols]) for cols in blocks], axis=1)
    assert np.max(np.abs(f.shifts(D) - shift)) <= bound * scale * a * np.max(np.abs(D).sum(axis=1))


def test_row_roots():
    _, _, loss, rng = _data()
    eta = rng.normal(size=(30, 3)) * 3
    _, h = loss.derivatives(np.zeros(30), eta, np.ones(30))
    F = _multidual.row_roots(h)
    np.testing.assert_allclose(F @ np.swapaxes(F, 1, 2), h, rtol=0, atol=64 * EPS)
    np.testing.assert_allclose(F, np.swapaxes(F, 1, 2), rtol=0, atol=16 * EPS)  # symmetric, to rounding
    bad = h.copy()
    bad[3] = -np.eye(3)  # not PSD
    assert _multidual.row_roots(bad) is None
    bad[3] = np.nan
    assert _multidual.row_roots(bad) is None


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("prior", ["scalar", "matrix", "weak"])
@pytest.mark.parametrize("weighted", [False, True])
def test_dual_newton_equals_dense_within_stopping_rule(monkeypatch, fit_intercept, prior, weighted):
    X, y, loss, rng = _data(seed=1)
    n, d = X.shape
    q = loss.n_outputs
    w = rng.uniform(0.5, 2.0, n) if weighted else None
    wv = np.ones(n) if w is None else w
    P, mean = {"scalar": (1.0, np.zeros(q * d)), "matrix": (0.3 * np.eye(q * d), 0.1 * rng.normal(size=q * d)),
               "weak": (1e-2, np.zeros(q * d))}[prior]
    kw = dict(prior_precision=P, prior_mean=mean, fit_intercept=fit_intercept, sample_weight=w)
    calls = []
    build = _multidual.MultiDualFactor.build
    monkeypatch.setattr(_multidual.MultiDualFactor, "build",
                        classmethod(lambda cls, *a, **k: calls.append(1) or build.__func__(cls, *a, **k)))
    dual = fit_map(X, y, loss, **kw)
    assert calls, "the dual path was not taken"
    monkeypatch.setattr(_multidual, "MULTI_DUAL", False)
    calls.clear()
    dense = fit_map(X, y, loss, **kw)
    assert not calls
    assert dual.converged and dense.converged and not dual.singular and not dense.singular
    Pv = P if np.ndim(P) == 2 else np.full(q * d, P)
    H = posterior_hessian(X, y, loss, dense.coef, dense.intercept, sample_weight=wv, prior_precision=Pv,
                          fit_intercept=fit_intercept)
    mu = linalg.eigvalsh(H, subset_by_index=[0, 0])[0]
    assert mu > 0
    gamma = (n + 1) * EPS / (1 - (n + 1) * EPS)

    def gradient(res):
        eta = X @ res.coef.T + (res.intercept if fit_intercept else 0.0)
        g, _ = loss.derivatives(y, eta, wv)
        r = res.coef.ravel() - mean
        grad = (g.T @ X).ravel() + (Pv @ r if np.ndim(Pv) == 2 else Pv * r)
        rho = gamma * ((np.abs(g).T @ np.abs(X)).ravel() + (np.abs(Pv) @ np.abs(r) if np.ndim(Pv) == 2
                                                             else np.abs(Pv) * np.abs(r)))
        if fit_intercept:
            grad, rho = np.append(grad, g.sum(axis=0)), np.append(rho, gamma * np.abs(g).sum(axis=0))
        return grad, rho

    (ga, ra), (gb, rb) = gradient(dual), gradient(dense)
    bound = (np.linalg.norm(ga) + np.linalg.norm(gb) + np.linalg.norm(ra) + np.linalg.norm(rb)) / mu
    theta = [np.append(r.coef.ravel(), r.intercept if fit_intercept else []) for r in (dual, dense)]
    assert np.linalg.norm(theta[0] - theta[1]) <= bound


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_information_inverse_equals_the_limit_inverse(fit_intercept):
    # the data-only information on wide data is singular: the pseudo-inverse + inf where unidentified; between
    # two outputs the null space (I_q (x) that of [X, 1]) has no component, so those blocks stay finite
    X, y, loss, rng = _data(seed=2)
    n, d = X.shape
    q = loss.n_outputs
    B, b0 = 0.1 * rng.normal(size=(q, d)), 0.2 * rng.normal(size=q)
    H = posterior_hessian(X, y, loss, B, b0, fit_intercept=fit_intercept)
    dense = inverse_information(H, n)
    dual = _dual.information_inverse(X, y, loss, B, b0, sample_weight=None, fit_intercept=fit_intercept,
                                     rank_tolerance=rank_tolerance)
    np.testing.assert_array_equal(np.isfinite(dual), np.isfinite(dense))
    inf = ~np.isfinite(dense)
    np.testing.assert_array_equal(dual[inf], dense[inf])
    np.testing.assert_array_equal(dual, dual.T)
    assert inf.any() and (~inf).any()
    w = linalg.eigvalsh(H)
    kept = w[w > rank_tolerance(w[-1], H.shape[0], n)]
    assert kept.size == n * q  # the rank of the scaled rows
    fin = ~inf
    bound = 8 * (d + n + 1) * q * EPS * kept[-1] / kept[0]
    assert np.max(np.abs(dual[fin] - dense[fin])) <= bound * np.max(np.abs(dense[fin]))


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_posterior_inverse_dispatches_to_the_block_form(fit_intercept):
    X, y, loss, rng = _data(seed=3)
    n, d = X.shape
    q = loss.n_outputs
    B, b0 = 0.1 * rng.normal(size=(q, d)), 0.2 * rng.normal(size=q)
    H = posterior_hessian(X, y, loss, B, b0, prior_precision=np.full(q * d, 0.5), fit_intercept=fit_intercept)
    dual = _dual.posterior_inverse(X, y, loss, B, b0, sample_weight=None, prior_precision=0.5 * np.eye(q * d),
                                   fit_intercept=fit_intercept)
    ev = linalg.eigvalsh(H)
    Hinv = linalg.inv(H)
    assert np.max(np.abs(dual - Hinv)) <= 8 * (d + n + 1) * q * EPS * ev[-1] / ev[0] * np.max(np.abs(Hinv))
    # a prior that is not isotropic: no dual form (the caller's dense path)
    assert _dual.posterior_inverse(X, y, loss, B, b0, sample_weight=None,
                                   prior_precision=np.diag(np.linspace(0.5, 1.0, q * d)),
                                   fit_intercept=fit_intercept) is None


def test_shape_rule_switch_and_declined_factor(monkeypatch):
    assert _multidual.MULTI_DUAL_RATIO == 1.0
    assert _multidual.use_multi_dual(10, 11, 2) and not _multidual.use_multi_dual(10, 10, 2)
    assert not _multidual.use_multi_dual(10, 100, 1) and not _multidual.use_multi_dual(0, 5, 3)
    X, y, loss, _ = _data()
    n, d = X.shape
    q = loss.n_outputs
    _, h = loss.derivatives(y, np.zeros((n, q)), np.ones(n))
    # a prior precision at the rounding level of the Hessian: declined (the dense path's damping decides)
    assert _multidual.MultiDualFactor.build(X, h, 1e-14, True) is None
    assert _multidual.MultiDualFactor.build(X, h, 0.0, True) is None

    def boom(*a, **k):
        raise AssertionError("dual path entered")

    monkeypatch.setattr(_multidual.MultiDualFactor, "build", classmethod(boom))
    fit_map(X[:, :n], y, loss, prior_precision=1.0)  # d = n: not wide
    Xb, yb = X, (y > 1).astype(float)
    fit_map(Xb, yb, LogisticLoss(), prior_precision=1.0)  # one output: _dual's own factor
    monkeypatch.setattr(_multidual, "MULTI_DUAL", False)
    assert not _multidual.use_multi_dual(10, 100, 3)
    fit_map(X, y, loss, prior_precision=1.0)
    assert _dual.posterior_inverse(X, y, loss, np.zeros((q, d)), np.zeros(q), sample_weight=None,
                                   prior_precision=1.0, fit_intercept=True) is None
    assert _dual.information_inverse(X, y, loss, np.zeros((q, d)), np.zeros(q), sample_weight=None,
                                     fit_intercept=True, rank_tolerance=rank_tolerance) is None
