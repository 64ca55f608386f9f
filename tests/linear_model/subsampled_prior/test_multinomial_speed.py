"""Multinomial SubsampledPriorLogisticRegression on wide data (review HSR, F3): the Newton systems, leave-one-out
leverages and covariances in n (K - 1) dimensions (_glm._multidual) give today's fit up to rounding.

The reference is the dense path kept in the code (``_multidual.MULTI_DUAL = False``, bit for bit the computation
before the change).  Both paths solve the same linear systems by backward-stable factorisations, so their
results differ by at most a small multiple of ``eps * cond`` times the result's size: ``cond`` the condition
number of the posterior Hessian (in the standardised units the fit runs in) for the coefficients, predictions and
``coef_covariance_``, that of the data-only information's kept eigenvalues for the finite entries of
``coef_sampling_covariance_`` (a pseudo-inverse).  The constant is that of tests/glm/test_multidual.py,
``8 (d + n + 1) (K - 1)``, times ``(max t / min t)^2`` for the change of units ``t = 1 / x_scale``.
"""

import numpy as np
import pytest
from scipy import linalg

from sklearn_bayes import SubsampledPriorLogisticRegression
from sklearn_bayes._glm import _multidual
from sklearn_bayes._glm._map import MultinomialLoss, posterior_hessian, rank_tolerance

EPS = np.finfo(float).eps


def _design(n, p, K, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + 50, p)) * rng.uniform(0.5, 2.0, p) + rng.normal(size=p)
    beta = np.zeros((p, K))
    beta[:6] = 0.8 * rng.normal(size=(6, K))
    y = np.argmax((X - X.mean(axis=0)) @ beta + rng.gumbel(size=(n + 50, K)), axis=1)
    return X[:n], y[:n], X[n:], rng


@pytest.mark.parametrize("case", ["n30 p80 K4", "n25 p90 K5 weighted", "n30 p70 K3 no intercept"])
def test_wide_multinomial_fit_equals_the_dense_path(monkeypatch, case):
    n, p, K = (int(s[1:]) for s in case.split()[:3])
    X, y, Xt, rng = _design(n, p, K, seed=sum(map(ord, case)))
    kw = dict(fit_intercept="no intercept" not in case)
    sw = rng.uniform(0.5, 2.0, n) if "weighted" in case else None
    fast, n_fast = _fit(monkeypatch, True, X, y, sw, kw)
    ref, n_ref = _fit(monkeypatch, False, X, y, sw, kw)
    assert n_fast > 0 and n_ref == 0  # the dual path served the fast fit, never the reference
    # the same prior: candidate names equal; the scale and its risk to rounding (a search over values that differ
    # by ~eps * cond moves its points by as little; another scale would differ by the search's 1/8 decade)
    numbers = ("scale", "loo_risk")
    assert {k: v for k, v in fast.prior_choice_.items() if k not in numbers} == \
        {k: v for k, v in ref.prior_choice_.items() if k not in numbers}
    for k in numbers:
        assert abs(fast.prior_choice_[k] / ref.prior_choice_[k] - 1) <= 1e-8, k
    q = K - 1
    size = 8 * (p + n + 1) * q
    x_offset, x_scale = ref._x_standardisation
    units = (x_scale.max() / x_scale.min()) ** 2
    # the posterior Hessian's condition number, from its inverse in the standardised units
    ev = linalg.eigvalsh(ref._theta_covariance_std)
    tol = size * EPS * ev[-1] / ev[0] * units
    assert tol < 1e-6  # the bound is informative: far below the differences of another prior scale
    for name in ("coef_", "intercept_", "coef_covariance_"):
        a, b = getattr(fast, name), getattr(ref, name)
        assert np.max(np.abs(a - b)) <= tol * np.max(np.abs(b)), name
    eta_err = tol * (np.max(np.abs(ref.coef_)) * np.abs(Xt).sum(axis=1).max() + np.max(np.abs(ref.intercept_)))
    assert np.max(np.abs(fast.predict_proba(Xt) - ref.predict_proba(Xt))) <= 0.5 * eta_err
    np.testing.assert_array_equal(fast.predict(Xt), ref.predict(Xt))
    # the sampling covariance: the same unidentified entries (+-inf), the finite ones to eps * cond of the kept
    # eigenvalues of the data-only information (at the reference fit, standardised units, reference class dropped)
    a, b = fast.coef_sampling_covariance_, ref.coef_sampling_covariance_
    np.testing.assert_array_equal(np.isfinite(a), np.isfinite(b))
    np.testing.assert_array_equal(a[~np.isfinite(b)], b[~np.isfinite(b)])
    Xs = (X - x_offset) / x_scale
    coef_s = ref.coef_[1:] * x_scale
    b0_s = ref.intercept_[1:] + ref.coef_[1:] @ x_offset
    w = np.ones(n) if sw is None else sw / np.mean(sw)
    H = posterior_hessian(Xs, y.astype(float), MultinomialLoss(K), coef_s, b0_s, sample_weight=w,
                          fit_intercept=kw["fit_intercept"])
    lam = linalg.eigvalsh(H)
    kept = lam[lam > rank_tolerance(lam[-1], H.shape[0], n)]
    fin = np.isfinite(b)
    assert fin.any() and (~fin).any()
    tol_r = size * EPS * kept[-1] / kept[0] * units
    assert tol_r < 1e-3
    assert np.max(np.abs(a[fin] - b[fin])) <= tol_r * np.max(np.abs(b[fin]))


def _fit(monkeypatch, flag, X, y, sw, kw):
    calls = []
    build = _multidual.MultiDualFactor.build
    monkeypatch.setattr(_multidual, "MULTI_DUAL", flag)
    monkeypatch.setattr(_multidual.MultiDualFactor, "build",
                        classmethod(lambda cls, *a, **k: calls.append(1) or build.__func__(cls, *a, **k)))
    est = SubsampledPriorLogisticRegression(random_state=0, **kw).fit(X, y, sample_weight=sw)
    return est, len(calls)


@pytest.mark.parametrize("p", [30, 120])
def test_binary_and_narrow_fits_are_bit_for_bit(monkeypatch, p):
    # one output never enters the block form, and a multinomial with d <= n keeps the dense path: the switch
    # changes nothing there, bit for bit
    rng = np.random.default_rng(p)
    X = rng.normal(size=(50, p))
    y2 = (X[:, 0] + rng.logistic(size=50) > 0).astype(int)
    y3 = np.argmax(X[:, :3] + rng.gumbel(size=(50, 3)), axis=1)
    cases = [(X, y2)] + ([(X, y3)] if p <= 50 else [])
    for Xc, yc in cases:
        on, n_on = _fit(monkeypatch, True, Xc, yc, None, {})
        off, n_off = _fit(monkeypatch, False, Xc, yc, None, {})
        assert n_on == n_off == 0
        for name in ("coef_", "intercept_", "coef_covariance_", "coef_sampling_covariance_"):
            np.testing.assert_array_equal(getattr(on, name), getattr(off, name))
        assert on.prior_choice_ == off.prior_choice_
