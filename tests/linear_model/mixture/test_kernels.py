"""The fused Cython EM passes (``sklearn_bayes._fast._mixture``) against the numpy reference.

The component objects (``log_pdf`` / ``weight`` / ``fit_scale`` / ``fit_scale_map``) are the
reference implementation; the estimator uses the fused kernels only for the built-in laws and
falls back to the objects for anything else (including subclasses), so both paths must agree.
"""

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_bayes import CauchyComponent, GaussianComponent, LaplaceComponent
from sklearn_bayes.linear_model._mixture._em import EMProblem as _Problem
from sklearn_bayes.linear_model._mixture._em import em as _em
from sklearn_bayes.linear_model._mixture._lts_start import _cstep, _csteps_batch, _elemental_picks

COMPS = [GaussianComponent(), LaplaceComponent(), CauchyComponent()]


def _residuals(seed=0, n=500):
    rng = np.random.default_rng(seed)
    r = rng.standard_t(df=1.5, size=n) * 2.0
    r[:3] = [0.0, 1e-200, -3e5]  # exact zero, tiny and huge residuals (log-sum-exp fallback rows)
    return r, rng.uniform(0.2, 3.0, size=n)


def _problems(r, sw, prior_strength=0.0):
    """The same problem solved by the fused kernels and by the component objects."""
    n = len(r)
    Xa, y = np.ones((n, 1)), r.copy()  # theta = 0 gives residuals r
    kw = dict(fit_scales=True, floors=np.full(3, 1e-12), prior_scales=np.array([1.0, 0.8, 0.5]),
              prior_strength=prior_strength)
    fast = _Problem(Xa, y, sw, list(COMPS), **kw)
    # subclasses are not built-in laws: the reference path
    ref_comps = [type("Sub" + type(c).__name__, (type(c),), {})() for c in COMPS]
    ref = _Problem(Xa, y, sw, ref_comps, **kw)
    assert fast.kinds is not None and ref.kinds is None
    return fast, ref


@pytest.mark.parametrize("a", [[0.5, 0.3, 0.2], [0.7, 0.0, 0.3]])
def test_estep_matches_log_space_reference(a):
    r, sw = _residuals()
    fast, ref = _problems(r, sw)
    scales = np.array([1.3, 0.9, 0.4])
    _, z_fast, ll_fast, _ = fast.e_step(np.zeros(1), np.array(a), scales)
    _, z_ref, ll_ref, _ = ref.e_step(np.zeros(1), np.array(a), scales)
    np.testing.assert_allclose(z_fast, z_ref, rtol=1e-12, atol=1e-15)
    assert ll_fast == pytest.approx(ll_ref, rel=1e-13)
    # and the reference itself is the textbook mixture log-likelihood
    with np.errstate(divide="ignore"):
        L = [np.log(aj) + c.log_pdf(r, s) for aj, c, s in zip(a, COMPS, scales)]
    assert ll_ref == pytest.approx(float(sw @ logsumexp(L, axis=0)), rel=1e-13)
    assert np.all(z_fast[np.array(a) == 0] == 0.0)


@pytest.mark.parametrize("prior_strength", [0.0, 0.5])
def test_mixture_m_step_matches_component_objects(prior_strength):
    r, sw = _residuals(seed=1)
    fast, ref = _problems(r, sw, prior_strength)
    a0, s0 = np.array([0.5, 0.3, 0.2]), np.array([1.3, 0.9, 0.4])
    _, z, _, stats = fast.e_step(np.zeros(1), a0, s0)
    assert stats is not None
    a_fast, s_fast = fast.m_mix(r, z, s0, stats)  # from the fused pass's sufficient statistics
    a_ref, s_ref = ref.m_mix(r, z, s0)  # from the component objects
    np.testing.assert_allclose(a_fast, a_ref, rtol=1e-12)
    assert a_fast.sum() == pytest.approx(1.0, abs=4e-16)
    # Gaussian and Laplace in closed form; Cauchy: both roots within the 1-D solvers' xtol in log gamma^2
    np.testing.assert_allclose(s_fast[:2], s_ref[:2], rtol=1e-12)
    assert abs(2 * np.log(s_fast[2]) - 2 * np.log(s_ref[2])) <= 2 * COMPS[2].xtol + 1e-12


def test_irls_weights_match_component_objects():
    r, sw = _residuals(seed=2)
    fast, ref = _problems(r, sw)
    scales = np.array([1.3, 0.9, 0.4])
    _, z, _, _ = fast.e_step(np.zeros(1), np.array([0.5, 0.3, 0.2]), scales)
    W = fast.irls_weights(r, z, scales)
    assert type(W) is np.ndarray
    np.testing.assert_allclose(W, ref.irls_weights(r, z, scales), rtol=1e-13)


@pytest.mark.parametrize("prior_strength", [0.0, 0.5])
def test_em_trajectory_with_fused_kernels_equals_component_objects(prior_strength):
    """Plain EM (no SQUAREM, whose accept/reject branches amplify rounding) is the same map."""
    rng = np.random.default_rng(3)
    n = 400
    Xa = np.hstack([rng.normal(size=(n, 3)), np.ones((n, 1))])
    y = Xa @ [1.0, -2.0, 0.5, 0.0] + rng.standard_t(df=2, size=n)
    y[:40] += 8.0
    sw = rng.uniform(0.5, 2.0, size=n)
    subs = [type("Sub" + type(c).__name__, (type(c),), {})() for c in COMPS]
    kw = dict(fit_scales=True, floors=np.full(3, 1e-12), prior_scales=np.array([1.0, 0.8, 0.5]),
              prior_strength=prior_strength)
    fast, ref = _Problem(Xa, y, sw, list(COMPS), **kw), _Problem(Xa, y, sw, subs, **kw)
    theta0, s0 = np.linalg.lstsq(Xa, y, rcond=None)[0], np.array([1.0, 0.8, 0.5])
    a = _em(fast, theta0, s0, 30, 0.0, accelerate=False)
    b = _em(ref, theta0, s0, 30, 0.0, accelerate=False)
    assert a.n_iter == b.n_iter == 30
    # 30 contracting EM maps: rounding-level differences (Cauchy roots within xtol = 1e-10)
    np.testing.assert_allclose(a.theta, b.theta, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(a.a, b.a, rtol=1e-8)
    np.testing.assert_allclose(a.scales, b.scales, rtol=1e-8)
    np.testing.assert_allclose(a.history, b.history, rtol=1e-11)
    np.testing.assert_allclose(a.W, b.W, rtol=1e-7)


def test_batched_concentration_steps_equal_one_at_a_time():
    rng = np.random.default_rng(4)
    n, p = 300, 3
    X = np.hstack([rng.normal(size=(n, p - 1)), np.ones((n, 1))])
    y = X @ [1.0, 2.0, 0.0] + rng.normal(size=n)
    y[:90] += rng.uniform(5, 10, size=90)
    h = (n + p + 1) // 2
    thetas = np.array([np.linalg.solve(X[k], y[k]) for k in _elemental_picks(n, p, 20, rng)])
    got, obj = _csteps_batch(X, y, thetas, h, 100)
    sw = np.ones(n)
    for th, g, o in zip(thetas, got, obj):
        want, want_obj = _cstep(X, y, sw, th, float(h), h, 100)
        np.testing.assert_allclose(g, want, rtol=1e-9, atol=1e-12)
        assert o == pytest.approx(want_obj, rel=1e-12)


def test_elemental_picks_have_distinct_rows():
    picks = _elemental_picks(7, 5, 2000, np.random.default_rng(5))
    assert picks.shape == (2000, 5) and picks.min() >= 0 and picks.max() < 7
    assert all(len(set(row)) == 5 for row in picks.tolist())


@pytest.mark.parametrize("strength", [0.0, 2.0])
@pytest.mark.parametrize("offset", [-60.0, -3.0, 0.0, 3.0, 60.0])
def test_cauchy_root_from_any_start_matches_bisection(strength, offset):
    """The safeguarded Newton solve finds the root from far-off starts on either side."""
    from scipy.optimize import brentq

    from sklearn_bayes._fast._mixture import cauchy_root

    rng = np.random.default_rng(7)
    r = rng.standard_t(df=1.5, size=300) * 0.3
    r[:5] = 0.0  # a few exact zeros
    c = rng.uniform(0.0, 2.0, size=300)
    s0, k = 0.7, strength

    def g(u):
        t = np.exp(u)
        return float(np.sum(c * (r**2 - t) / (r**2 + t)) + 2 * k * (s0**2 / t - 1.0))

    want = brentq(g, -60.0, 60.0, xtol=1e-13)
    got = cauchy_root(r, c, want + offset, s0, k, 1e-10)
    assert abs(2.0 * np.log(got) - want) <= 1e-9
