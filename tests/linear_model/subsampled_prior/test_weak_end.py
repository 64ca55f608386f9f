"""The weak-prior end of the GLMs' search on tall data (HSPT2, ``_subsampled_prior._weak``): the decades and
local searches skipped where a bound from the limit risk ``R_inf`` shows they cannot change the choice.

The bounds (``_weak``'s Notes): with ``s = P / P_t`` and the quadratic through ``(0, R_inf)``, ``(1, R_t)``,
``(10, R_{t-1})`` the risk lies above ``min(R_t, R_inf) - |dev|`` on ``[0, 1]`` and above
``min(R_{t-1}, R_t, R_inf) - |dev|`` on ``[0, 10]`` (``|dev| = 90 |b|``, at least 4.4 times the quadratic's
dip below its chords).  The tests check that on exact quadratics, and on real searches that every value the
truncation skipped (computed by the full path) is above the bound it was skipped by.
"""

import numpy as np
import pytest

from sklearn_bayes import SubsampledPriorLogisticRegression, SubsampledPriorPoissonRegressor
from sklearn_bayes._glm import LogisticLoss, fit_map
from sklearn_bayes.linear_model._subsampled_prior import _tuning, _weak


def _data(kind, n, p, seed, scale=0.25):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * rng.uniform(0.5, 3.0, size=p)
    eta = (X / X.std(axis=0)) @ (rng.normal(size=p) * scale)
    if kind == "log":
        return X, (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    return X, rng.poisson(np.exp(0.5 * eta))


EST = {"log": SubsampledPriorLogisticRegression, "poi": SubsampledPriorPoissonRegressor}


def test_bounds_hold_on_exact_quadratics():
    """``bounds`` below the minimum of every quadratic ``R(s) = R_inf + a s + b s^2`` on its intervals (and not
    by more than needed: dropping ``|dev|`` from the bound breaks it on some of them)."""
    rng = np.random.default_rng(0)
    s_tail, s_wide = np.linspace(0, 1, 2001), np.linspace(0, 10, 20001)
    broken = 0
    for _ in range(2000):
        r_inf = rng.normal() * 100
        a, b = rng.normal() * 10.0 ** rng.uniform(-4, 0), rng.normal() * 10.0 ** rng.uniform(-5, -1)
        R = lambda s: r_inf + a * s + b * s * s  # noqa: E731
        tail, wide = _weak.bounds(R(10.0), R(1.0), r_inf)
        assert tail <= R(s_tail).min() and wide <= R(s_wide).min()
        dev = abs(R(10.0) - (r_inf + 10 * (R(1.0) - r_inf)))
        broken += min(R(10.0), R(1.0), r_inf) - dev / 10 > R(s_wide).min()
    assert broken > 0


def test_search_bound_holds_on_exact_cubics():
    rng = np.random.default_rng(1)

    class _Res:
        factor = np.eye(3)

    s = np.linspace(1, 100, 5001)
    for _ in range(500):
        r_inf, c = rng.normal() * 100, rng.normal(size=3) * 10.0 ** rng.uniform([-3, -5, -7], [-1, -3, -5])
        R = lambda x: r_inf + c[0] * x + c[1] * x ** 2 + c[2] * x ** 3  # noqa: E731
        grid = np.array([-1.0, 0.0, 1.0])  # P_{j-1} = 100 P_{j+1}
        vals = [R(100.0), R(10.0), R(1.0)]
        cache = {t: (v, _Res()) for t, v in zip(grid, vals)}
        lb = _weak.search_bound(vals, 1, grid, cache, lambda t: np.zeros((2, 2)), r_inf)
        assert lb is not None and lb <= R(s).min()


def test_prior_ratio_is_the_largest_eigenvalue_of_the_prior_over_the_hessian():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(6, 5))
    H = A.T @ A + np.eye(5)
    P = np.diag(rng.uniform(0.1, 2.0, size=4))
    L = np.linalg.cholesky(H)
    Pf = np.zeros((5, 5))
    Pf[:4, :4] = P
    expected = np.max(np.real(np.linalg.eigvals(np.linalg.solve(H, Pf))))
    assert _weak.prior_ratio(L, P) == pytest.approx(expected, rel=1e-12)


def test_fast_logistic_values_equal_the_values_to_rounding():
    loss = LogisticLoss()
    rng = np.random.default_rng(3)
    e = np.concatenate([rng.normal(size=1000) * 5, [0.0, 1e-12, -1e-12, 30.0, -30.0, 700.0, -700.0, 1e5, -1e5]])
    y = (rng.random(e.size) < 0.5).astype(float)
    w = rng.uniform(0.5, 2.0, size=e.size)
    a, b = loss.values(y, e[:, None], w), loss.fast_values(y, e[:, None], w)
    sp = np.logaddexp(0.0, e)
    np.testing.assert_allclose(LogisticLoss._softplus(e), sp, rtol=4 * np.finfo(float).eps, atol=0)
    # the rows: w (softplus - y eta), each to a few ulps of its two terms
    np.testing.assert_allclose(b, a, rtol=0, atol=1)
    assert np.all(np.abs(a - b) <= 8 * np.finfo(float).eps * w * (sp + np.abs(y * e)))
    assert loss.fast_value(y, e[:, None], w) == pytest.approx(loss.value(y, e[:, None], w), rel=1e-13)


def _run(monkeypatch, Est, X, y, full):
    """The fit with the truncation (``full=False``; records ``_weak.TRACE``) or with every decade and local
    search computed by the same code otherwise (records every grid value and each search interval's values)."""
    trace, grids, searches = [], {}, []
    monkeypatch.setattr(_weak, "TRACE", trace)
    if full:
        walk, sbound = _weak.walk, _weak.search_bound

        def walk_full(grid, risk, cache, prior_at, limit, found, family):
            vals = [risk(t) for t in grid]
            grids[family] = dict(zip(grid.tolist(), vals))
            limit()
            return vals, False

        def sb(vals, j, grid, cache, prior_at, r_inf):
            lb = sbound(vals, j, grid, cache, prior_at, r_inf)
            if lb is not None:
                searches.append((lb, cache, grid[j - 1], grid[j + 1]))
            return None

        monkeypatch.setattr(_weak, "walk", walk_full)
        monkeypatch.setattr(_weak, "search_bound", sb)
    est = Est(random_state=0).fit(X, y)
    if full:
        monkeypatch.setattr(_weak, "walk", walk)
        monkeypatch.setattr(_weak, "search_bound", sbound)
    return est, trace, grids, searches


@pytest.mark.parametrize("kind,n,p,seed", [("log", 6000, 12, 0), ("log", 4000, 30, 1), ("poi", 6000, 12, 2),
                                           ("poi", 3000, 5, 3), ("log", 20000, 8, 4)])
def test_truncated_search_equals_the_full_one_and_the_bounds_hold(monkeypatch, kind, n, p, seed):
    """Bit for bit the same fit with and without the truncation (the same code otherwise), every skipped grid
    value above the bound it was skipped by, every local search's values above its interval bound, and some
    truncation on each case (the test would not notice a bound that is never used)."""
    X, y = _data(kind, n, p, seed)
    full, _, grids, searches = _run(monkeypatch, EST[kind], X, y, True)
    cut, trace, _, _ = _run(monkeypatch, EST[kind], X, y, False)
    assert trace, "no truncation: the case does not exercise the bounds"
    assert full.prior_choice_ == cut.prior_choice_
    np.testing.assert_array_equal(full.coef_, cut.coef_)
    np.testing.assert_array_equal(full.intercept_, cut.intercept_)
    for family, decade, bound, kind_ in trace:
        if kind_ == "search":
            continue
        skipped = [v for t, v in grids[family].items() if t > decade]
        assert skipped and min(skipped) > bound
    for lb, cache, a, b in searches:
        assert min(v[0] for t, v in cache.items() if a <= t <= b) >= lb


def test_separated_classes_keep_every_decade(monkeypatch):
    """No maximum-likelihood fit (separated classes): the limit fit does not converge, nothing is cut."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    full, _, _, _ = _run(monkeypatch, SubsampledPriorLogisticRegression, X, y, True)
    cut, trace, _, _ = _run(monkeypatch, SubsampledPriorLogisticRegression, X, y, False)
    assert [t for t in trace if t[3] != "search"] == []
    assert full.prior_choice_ == cut.prior_choice_
    np.testing.assert_array_equal(full.coef_, cut.coef_)


def test_switch_off_is_the_previous_computation(monkeypatch):
    """``_WEAK_END = False``: every decade computed and the logistic values by ``logaddexp`` (HSPT's search)."""
    X, y = _data("log", 3000, 6, 6)
    monkeypatch.setattr(_tuning, "_WEAK_END", False)

    def boom(*a, **k):
        raise AssertionError("fast values used with _WEAK_END = False")

    monkeypatch.setattr(LogisticLoss, "fast_value", boom)
    monkeypatch.setattr(LogisticLoss, "fast_values", boom)
    trace = []
    monkeypatch.setattr(_weak, "TRACE", trace)
    SubsampledPriorLogisticRegression(random_state=0).fit(X, y)
    assert trace == []


def test_fit_map_fast_value_is_within_rounding():
    X, y = _data("log", 2000, 5, 7)
    X = X / X.std(axis=0)
    a = fit_map(X, y.astype(float), LogisticLoss(), prior_precision=1.0)
    b = fit_map(X, y.astype(float), LogisticLoss(), prior_precision=1.0, fast_value=True)
    assert b.objective == pytest.approx(a.objective, rel=1e-13)
    np.testing.assert_allclose(b.coef, a.coef, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind,fit_intercept", [("log", True), ("poi", True), ("log", False)])
def test_point_init_is_bit_for_bit(kind, fit_intercept):
    """``fit_map(point_init=...)`` (the derivatives and data gradient of the previous fit along the path) gives
    the fit without it, bit for bit, and those it returns are the ones at its point."""
    from sklearn_bayes._glm import PoissonLoss

    X, y = _data(kind, 4000, 8, 8)
    X = X / X.std(axis=0)
    y = y.astype(float)
    loss = LogisticLoss() if kind == "log" else PoissonLoss()
    # a fit along the path (chord steps from a neighbouring prior's Hessian) that ends at a fresh Hessian
    fits = [fit_map(X, y, loss, prior_precision=300.0, keep_factor=True, fit_intercept=fit_intercept)]
    for P in (100.0, 30.0, 10.0):
        r = fits[-1]
        fits.append(fit_map(X, y, loss, prior_precision=P, coef_init=r.coef, intercept_init=r.intercept,
                            hessian_init=r.hessian, data_term_init=r.data_term, keep_factor=True,
                            fit_intercept=fit_intercept))
    prev = next(r for r in fits if r.point is not None)
    assert prev.data_gradient is not None
    eta, g, h = prev.point
    gd = np.concatenate([X.T @ g[:, 0], g.sum(axis=0)]) if fit_intercept else X.T @ g[:, 0]
    np.testing.assert_allclose(prev.data_gradient, gd, rtol=1e-12, atol=1e-9)
    kw = dict(prior_precision=3.0, coef_init=prev.coef, intercept_init=prev.intercept, hessian_init=prev.hessian,
              data_term_init=prev.data_term, keep_factor=True, fit_intercept=fit_intercept)
    a = fit_map(X, y, loss, **kw)
    b = fit_map(X, y, loss, point_init=(*prev.point, prev.data_gradient), **kw)
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.intercept, b.intercept)
    assert a.objective == b.objective and a.n_iter == b.n_iter


@pytest.mark.parametrize("fail", ["raise", "nonconverged"])
def test_a_failed_limit_fit_keeps_every_decade(monkeypatch, fail):
    """Where the limit fit fails (an exception, or no convergence) no bound is used and the fit goes on:
    the same result as the full path, no error.  (The limit fit is told apart by its prior: 1e-20 of the
    weakest decade's with LIMIT_DECADES = 20, below 1e-12 in every entry here.)"""
    X, y = _data("log", 3000, 6, 9)
    monkeypatch.setattr(_weak, "LIMIT_DECADES", 20.0)
    full, _, _, _ = _run(monkeypatch, SubsampledPriorLogisticRegression, X, y, True)
    orig, seen = _tuning.fit_map, []

    def fm(*a, **k):
        if float(np.max(np.abs(k["prior_precision"]))) < 1e-12:
            seen.append(1)
            if fail == "raise":
                raise FloatingPointError("designed")
            r = orig(*a, **k)
            r.converged = False
            return r
        return orig(*a, **k)

    monkeypatch.setattr(_tuning, "fit_map", fm)
    cut, trace, _, _ = _run(monkeypatch, SubsampledPriorLogisticRegression, X, y, False)
    assert seen and trace == []
    assert full.prior_choice_ == cut.prior_choice_
    np.testing.assert_array_equal(full.coef_, cut.coef_)


@pytest.mark.parametrize("kind,fit_intercept,weighted", [("log", False, False), ("log", True, True),
                                                         ("poi", True, True)])
def test_truncation_with_weights_and_without_intercept(monkeypatch, kind, fit_intercept, weighted):
    X, y = _data(kind, 5000, 10, 10)
    sw = np.random.default_rng(11).uniform(0.2, 3.0, size=y.size) if weighted else None
    with monkeypatch.context() as m:  # every decade and local search computed, the same code otherwise
        m.setattr(_weak, "walk", lambda grid, risk, *a: ([risk(t) for t in grid], False))
        m.setattr(_weak, "search_bound", lambda *a: None)
        full = EST[kind](random_state=0, fit_intercept=fit_intercept).fit(X, y, sample_weight=sw)
    trace = []
    monkeypatch.setattr(_weak, "TRACE", trace)
    cut = EST[kind](random_state=0, fit_intercept=fit_intercept).fit(X, y, sample_weight=sw)
    est = {True: full, False: cut}
    assert trace, "no truncation"
    assert est[True].prior_choice_ == est[False].prior_choice_
    np.testing.assert_array_equal(est[True].coef_, est[False].coef_)
