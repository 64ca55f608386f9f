"""Round 18b: the empirical-Bayes kernels formed in place give the same numbers, bit for bit, as the formulas they
replaced (the reference implementations below are those formulas verbatim)."""

import numpy as np
import pytest

from sklearn_bayes.privacy._ldp import _empirical_bayes as E
from sklearn_bayes.privacy._ldp._mechanisms import ss_support_probabilities
from sklearn_bayes.privacy._ldp._stacking import simplex_least_squares


def _likelihood_ref(c, n, p, q, u):
    pi = q + (p - q) * u
    with np.errstate(divide="ignore", invalid="ignore"):
        a, b = c[:, None] * np.log(pi)[None, :], (n - c)[:, None] * np.log1p(-pi)[None, :]
    ll = np.where(c[:, None] == 0, 0.0, a) + np.where((n - c)[:, None] == 0, 0.0, b)
    ll -= ll.max(axis=1, keepdims=True)
    return np.exp(ll)


def _npmle_ref(L, max_iter=E.NPMLE_MAX_ITER, tol=E.NPMLE_TOL):
    K, G = L.shape
    w = np.full(G, 1.0 / G)
    m = L @ w
    ll = np.log(m).sum()
    for it in range(1, int(max_iter) + 1):
        w = w * (L.T @ (1.0 / m)) / K
        m = L @ w
        new = np.log(m).sum()
        if new - ll < tol:
            return w, it, True
        ll = new
    return w, int(max_iter), False


def _tilted_ref(logP, u, lam):
    lg = logP + lam * u[None, :]
    lg -= lg.max(axis=1, keepdims=True)
    P = np.exp(lg)
    P /= P.sum(axis=1, keepdims=True)
    m = P @ u
    return m, np.maximum(P @ (u * u) - m * m, 0.0)


def _simplex_ref(A, b):
    import itertools

    J = b.size
    best, best_a = np.inf, None
    for r in range(1, J + 1):
        for S in itertools.combinations(range(J), r):
            S = list(S)
            M = np.zeros((r + 1, r + 1))
            M[:r, :r], M[:r, r], M[r, :r] = A[np.ix_(S, S)], 1.0, 1.0
            sol = np.linalg.lstsq(M, np.r_[b[S], 1.0], rcond=None)[0][:r]
            if not np.all(np.isfinite(sol)) or np.any(sol < -1e-12):
                continue
            a = np.zeros(J)
            a[S] = np.maximum(sol, 0.0)
            a /= a.sum()
            value = a @ A @ a - 2.0 * b @ a
            if best_a is None or value < best - 1e-12 * max(1.0, abs(best)):
                best, best_a = value, a
    return best_a


# (K, eps, n): GRR's channel nearly the identity (eps = 8, many exact zeros in L), a noisy one, and a count of 0 / n
CASES = [(64, 8.0, 2000), (200, 2.0, 5000), (30, 0.5, 300), (100, 40.0, 500)]


@pytest.mark.parametrize("K, eps, n", CASES)
def test_kernels_bit_for_bit(K, eps, n):
    rng = np.random.default_rng([K, int(eps), n])
    theta = rng.dirichlet(np.full(K, 0.3))
    p, q = ss_support_probabilities(K, eps, 1)
    c = rng.binomial(n, q + (p - q) * theta).astype(float)
    c[0] = 0.0  # a category nobody supported
    u = E._grid((c / n - q) / (p - q), n, p, q)
    L = E._likelihood(c, n, p, q, u)
    assert np.array_equal(L, _likelihood_ref(c, n, p, q, u))
    w, it, ok = E.npmle_weights(L)
    w_ref, it_ref, ok_ref = _npmle_ref(L)
    assert np.array_equal(w, w_ref) and (it, ok) == (it_ref, ok_ref)
    with np.errstate(divide="ignore"):
        logP = np.log(L) + np.log(w)[None, :]
    for lam in (0.0, -3.7, 25.0):
        for x, y in zip(E._tilted(logP, u, lam), _tilted_ref(logP, u, lam)):
            assert np.array_equal(x, y)


def test_simplex_least_squares_bit_for_bit(monkeypatch):
    # round G3: the loop is reached with STACK_FAST_NUMERICS = False (the default batches the supports' systems, the
    # same weights up to rounding: tests/privacy/ldp/test_stack_g3.py)
    from sklearn_bayes.privacy._ldp import _stacking

    monkeypatch.setattr(_stacking, "STACK_FAST_NUMERICS", False)
    rng = np.random.default_rng(18)
    for _ in range(20):
        F = rng.normal(size=(5, 40))
        t = rng.normal(size=40)
        A, b = F @ F.T, F @ t
        assert np.array_equal(simplex_least_squares(A, b), _simplex_ref(A, b))
