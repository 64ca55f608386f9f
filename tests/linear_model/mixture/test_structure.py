"""Issue 15 structure and speed changes of MixtureMEstimatorRegressor, tested by their maths.

* the residual description of ``variant="min_variance"`` (EM of the mixture weights and
  scales at fixed coefficients) is SQUAREM-accelerated: same fixed point as plain EM, a
  monotone objective, far fewer EM maps;
* the E-step returns its sufficient statistics (no cache keyed by ``id(z)``);
* one home per scale update (components' closed forms / compiled Cauchy root);
* ``sample_weights_`` is a deprecated alias of ``irls_weights_``;
* the blocked column statistics of the shared standardisation equal the textbook formulas.
"""

import pickle

import numpy as np
import pytest

from sklearn_bayes import CauchyComponent, GaussianComponent, LaplaceComponent, MixtureMEstimatorRegressor
from sklearn_bayes._glm._base import _STAT_BLOCK, _column_offset_scale
from sklearn_bayes.linear_model._mixture._em import EMProblem, describe_residuals

COMPS = [GaussianComponent(), LaplaceComponent(), CauchyComponent()]


def _problem(n=3000, seed=0):
    """Residuals from half N(0, 1), half Laplace(2), 10 % replaced by Cauchy(3): every law has mass."""
    rng = np.random.default_rng(seed)
    r = np.where(rng.random(n) < 0.5, rng.normal(size=n), 2.0 * rng.laplace(size=n))
    r[: n // 10] = 3.0 * rng.standard_cauchy(n // 10)
    Xa = np.ones((n, 1))  # theta = 0: the residuals are the targets
    prob = EMProblem(Xa, r, np.ones(n), list(COMPS), True, np.full(3, 1e-9),
                     prior_scales=np.array([1.0, 0.8, 0.7]), prior_strength=1.0)  # fmt: skip
    return prob, np.array([1.0, 0.8, 0.7])


def _plain(prob, scales, n_maps):
    """Plain EM of the weights and scales (the reference: one E-step, one M-step per map)."""
    a = np.full(3, 1.0 / 3)
    r, z, obj, stats = prob.e_step(np.zeros(1), a, scales)
    hist = [obj]
    for _ in range(n_maps):
        a, scales = prob.m_mix(r, z, scales, stats)
        z, ll, stats = prob.responsibilities(r, a, scales)
        hist.append(ll + prob.log_prior(scales))
    return a, scales, np.array(hist)


def test_describe_residuals_squarem_reaches_the_plain_em_fixed_point_in_fewer_maps():
    prob, s0 = _problem()
    tol = 1e-8
    res = describe_residuals(prob, np.zeros(1), s0, 2000, tol, None)
    a_ref, s_ref, hist = _plain(prob, s0, 4000)
    assert res.converged
    # plain EM stops (objective change <= tol per unit weight) after ~370 maps; SQUAREM in < half
    n_plain = int(np.argmax(np.abs(np.diff(hist)) <= tol * prob.wtot)) + 1
    assert res.n_iter < n_plain / 2
    # at least as close to the maximum as plain EM at its own stop, and not above it
    assert hist[n_plain] - tol * prob.wtot <= res.objective <= hist[-1] + 1e-12 * prob.wtot
    # monotone objective (the safeguard keeps an extrapolation only if it is no worse)
    assert np.all(np.diff(res.history) >= -1e-12 * prob.wtot)


def test_e_step_returns_its_statistics_and_m_step_needs_no_cache():
    prob, s0 = _problem(n=500)
    assert not any("stats" in k for k in vars(prob))  # no id(z)-keyed cache on the problem
    r, z, _, stats = prob.e_step(np.zeros(1), np.full(3, 1 / 3), s0)
    zs = z * prob.sw
    np.testing.assert_allclose(stats[0], zs.sum(1), rtol=1e-12)
    np.testing.assert_allclose(stats[1], zs @ (r * r), rtol=1e-12)
    np.testing.assert_allclose(stats[2], zs @ np.abs(r), rtol=1e-12)
    # a copy of z with the same statistics gives the same M-step as the object path
    fast = prob.m_mix(r, z.copy(), s0, stats)
    slow = prob.m_mix(r, z.copy(), s0)
    np.testing.assert_allclose(fast[0], slow[0], rtol=1e-12)
    np.testing.assert_allclose(fast[1][:2], slow[1][:2], rtol=1e-12)
    assert abs(np.log(fast[1][2] / slow[1][2])) <= COMPS[2].xtol + 1e-12


@pytest.mark.parametrize("k", [0.0, 0.7])
def test_scale_closed_forms_have_one_home(k):
    rng = np.random.default_rng(1)
    r, z = rng.standard_t(2, size=200), rng.uniform(0, 1, size=200)
    g, lap, cau = COMPS
    n, s1, s2 = z.sum(), z @ np.abs(r), z @ (r * r)
    assert g.fit_scale_map(r, z, 0.9, k) == g.scale_from_moments(n, s1, s2, 0.9, k)
    assert lap.fit_scale_map(r, z, 0.9, k) == lap.scale_from_moments(n, s1, s2, 0.9, k)
    # the stationarity conditions the closed forms solve
    sg = g.scale_from_moments(n, s1, s2, 0.9, k)
    assert -n / sg + s2 / sg**3 + k * (2 * 0.81 / sg**3 - 2 / sg) == pytest.approx(0.0, abs=1e-9)
    sl = lap.scale_from_moments(n, s1, s2, 0.9, k)
    assert -n / sl + s1 / sl**2 + k * (2 * 0.81 / sl**3 - 2 / sl) == pytest.approx(0.0, abs=1e-9)
    # Cauchy: the root of sum z (r^2 - t) / (r^2 + t) + 2 k (s0^2 / t - 1) within xtol in log t
    t = cau.fit_scale_map(r, z, 0.9, k) ** 2
    g_at = lambda t: z @ ((r * r - t) / (r * r + t)) + 2 * k * (0.81 / t - 1)  # noqa: E731
    assert g_at(t * np.exp(-2 * cau.xtol)) > 0 > g_at(t * np.exp(2 * cau.xtol))


def test_irls_weights_renamed_with_deprecated_alias():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(120, 2))
    y = X @ [1.0, -1.0] + rng.normal(size=120)
    y[:10] += 20
    reg = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    assert "sample_weights_" not in vars(reg) and reg.irls_weights_.shape == (120,)
    with pytest.warns(FutureWarning, match="irls_weights_"):
        alias = reg.sample_weights_
    assert alias is reg.irls_weights_
    assert reg.irls_weights_[:10].max() < np.median(reg.irls_weights_[10:])
    pickle.loads(pickle.dumps(reg)).irls_weights_  # the alias is not state
    # an estimator pickled before the rename keeps answering under the old name
    old = pickle.loads(pickle.dumps(reg))
    vars(old)["sample_weights_"] = vars(old).pop("irls_weights_")
    with pytest.warns(FutureWarning):
        assert old.sample_weights_ is vars(old)["sample_weights_"]


@pytest.mark.parametrize("centre", [True, False])
def test_blocked_column_statistics_equal_the_textbook_formulas(centre):
    rng = np.random.default_rng(3)
    n = 3 * _STAT_BLOCK + 17  # several blocks and a ragged last one
    A = rng.normal(size=(n, 4)) * [1.0, 1e-300, 1e300, 5.0] + [0.0, 0.0, 0.0, 3.0]
    A[:, 3] = 3.0  # a constant column
    w = rng.uniform(0, 2, size=n)
    w[::7] = 0.0
    off, scale, flat = _column_offset_scale(A, w, centre)
    keep = w > 0
    Ak, wk = A[keep], w[keep]
    big = np.abs(Ak).max(0)
    B = Ak / big
    mu = (wk @ B) / wk.sum() if centre else np.zeros(4)
    sd = np.sqrt(wk @ ((B - mu) ** 2) / wk.sum())
    np.testing.assert_allclose(off, mu * big, rtol=1e-12)
    np.testing.assert_array_equal(flat, [False, False, False, centre])
    np.testing.assert_allclose(scale[:3], (sd * big)[:3], rtol=1e-12)
    assert np.all(np.isfinite(scale)) and scale[3] == (1.0 * big[3] if centre else scale[3])
