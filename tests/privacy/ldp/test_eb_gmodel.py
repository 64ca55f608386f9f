"""Round 17 (issue 28, H28W): the smooth estimate of G by Efron's g-modeling (``privacy._ldp._gmodel``) and the
stacked decoder whose 'eb' row uses it where a cross-fitted predictive score prefers it (``decoder='eb-gmodel'``)."""

import pickle

import numpy as np
import pytest
from scipy.interpolate import CubicSpline

from sklearn_bayes.privacy._ldp import _decoding
from sklearn_bayes.privacy._ldp import _stacking as S
from sklearn_bayes.privacy._ldp._empirical_bayes import (
    COMPILED_EM_MAX_CATEGORIES,
    _grid,
    _likelihood,
    npmle_weights,
    tilted_means,
)
from sklearn_bayes.privacy._ldp._gmodel import (
    GMODEL_BLEND,
    GMODEL_MARGIN,
    GMODEL_PENALTY,
    gmodel_weights,
    natural_spline_basis,
    predictive_log_score,
    smooth_prior,
    spline_design,
)
from sklearn_bayes.privacy._ldp._posterior import RHO_GRID
from sklearn_bayes.privacy._ldp._stacking import stacked_estimate
from tests.privacy.ldp.test_eb_stack import _fitted, _refused_decoders_leave_the_fit  # shared with round 15's tests

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning")


def _binomial_counts(seed, K=120, n=20_000, p=0.6, q=0.2):
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.full(K, 0.5))
    c = rng.binomial(n, q + (p - q) * theta).astype(float)
    return theta, c, n, p, q


def test_natural_spline_basis_spans_the_natural_cubic_splines():
    """With the constant, the basis spans the natural cubic splines on the knots: scipy's natural interpolant of
    random values is reproduced to rounding by least squares, and every column is linear beyond the end knots."""
    rng = np.random.default_rng(0)
    knots = np.sort(rng.uniform(0, 1, 7))
    x = np.linspace(knots[0], knots[-1], 400)
    B = np.column_stack([np.ones_like(x), natural_spline_basis(x, knots)])
    assert B.shape == (400, knots.size)  # a natural cubic spline on m knots has m degrees of freedom
    for rep in range(3):
        y = CubicSpline(knots, rng.normal(size=knots.size), bc_type="natural")(x)
        coef = np.linalg.lstsq(B, y, rcond=None)[0]
        assert np.max(np.abs(B @ coef - y)) <= 1e-9 * max(1.0, np.abs(y).max())
    for side in (np.linspace(knots[-1], knots[-1] + 1, 50), np.linspace(knots[0] - 1, knots[0], 50)):
        second = np.diff(natural_spline_basis(side, knots), 2, axis=0)
        assert np.max(np.abs(second)) <= 1e-9


def test_design_covers_every_estimate_and_has_a_point_mass_at_zero():
    """The end knot is the largest estimate (no category beyond the spline's range); the last column is the atom
    u = 0; the columns are standardised; the offset is finite."""
    theta, c, n, p, q = _binomial_counts(1)
    f = (c / n - q) / (p - q)
    u = _grid(f, n, p, q)
    Q, off = spline_design(u, p, q, f)
    assert Q.shape[0] == u.size and np.all(np.isfinite(Q)) and np.all(np.isfinite(off))
    assert np.allclose(Q.mean(axis=0), 0, atol=1e-12) and np.allclose(Q.std(axis=0), 1)
    zero = (u == 0).astype(float)
    assert np.corrcoef(Q[:, -1], zero)[0, 1] == pytest.approx(1.0)
    # every count at or below q: the fallback knots, still finite
    Q0, off0 = spline_design(u, p, q, np.full(c.size, -0.1))
    assert np.all(np.isfinite(Q0)) and np.all(np.isfinite(off0))


@pytest.mark.parametrize("seed", range(3))
def test_gmodel_is_a_maximum_of_the_penalised_marginal_likelihood(seed):
    """g is on the simplex; the penalised log-likelihood at the returned alpha is not beaten by any coordinate step
    of +-1e-3 (a local maximum; the objective is smooth), and its gradient ``Q'(sum_v P_v - K g) - 2 c alpha`` is small
    against the K rows it sums.  A huge penalty returns alpha ~ 0, i.e. g = softmax(offset)."""
    theta, c, n, p, q = _binomial_counts(seed)
    f = (c / n - q) / (p - q)
    u = _grid(f, n, p, q)
    L = _likelihood(c, n, p, q, u)
    Q, off = spline_design(u, p, q, f)
    g, a, ok = gmodel_weights(L, Q, off)
    assert ok and np.all(g >= 0) and abs(g.sum() - 1) <= 1e-12

    def value(alpha):
        eta = off + Q @ alpha
        w = np.exp(eta - eta.max())
        w /= w.sum()
        return np.log(L @ w).sum() - GMODEL_PENALTY * alpha @ alpha

    best = value(a)
    for j in range(a.size):
        for h in (-1e-3, 1e-3):
            assert value(a + h * np.eye(a.size)[j]) <= best + 1e-9 * abs(best)
    m = L @ g
    grad = Q.T @ (((1 / m) @ L) * g - c.size * g) - 2 * GMODEL_PENALTY * a
    assert np.max(np.abs(grad)) <= 1e-3 * c.size
    g_flat, a_flat, _ = gmodel_weights(L, Q, off, penalty=1e9)
    base = np.exp(off - off.max())
    assert np.max(np.abs(a_flat)) <= 1e-6 and np.allclose(g_flat, base / base.sum(), rtol=1e-5, atol=1e-12)


def test_smooth_prior_is_the_blend_and_the_score_is_the_held_out_predictive():
    """smooth_prior = (1 - b) w + b g on the simplex; predictive_log_score is sum_v ln sum_j Lt_vj P_vj by its
    definition, and with uninformative training rows the posterior is the prior itself."""
    theta, c, n, p, q = _binomial_counts(4)
    f = (c / n - q) / (p - q)
    u = _grid(f, n, p, q)
    L = _likelihood(c, n, p, q, u)
    w = npmle_weights(L)[0]
    prior, ok = smooth_prior(L, u, w, p, q, f)
    g = gmodel_weights(L, *spline_design(u, p, q, f))[0]
    assert ok and np.array_equal(prior, (1 - GMODEL_BLEND) * w + GMODEL_BLEND * g)
    assert np.all(prior >= 0) and abs(prior.sum() - 1) <= 1e-12
    Lt = _likelihood(c[::-1].copy(), n, p, q, u)
    post = L * prior
    post /= post.sum(axis=1, keepdims=True)
    assert predictive_log_score(L, prior, Lt) == pytest.approx(np.log((Lt * post).sum(axis=1)).sum(), rel=1e-12)
    flat = np.ones_like(L)
    assert predictive_log_score(flat, prior, Lt) == pytest.approx(np.log(Lt @ prior).sum(), rel=1e-12)


def _stack_inputs(est):
    c, n, p, q = est._support_counts()
    store = est._chain.store
    return (c, n, p, q, store.sids[:n], store.masks[: store.n_sids])


def test_the_gmodel_stack_is_round_15s_where_the_score_keeps_the_npmle_and_the_blend_elsewhere():
    """stacked_estimate(gmodel=True) on the same folds: where the blend's cross-fitted score does not beat the
    NPMLE's by GMODEL_MARGIN, theta and the stack's diagnostics are round 15's bit for bit; where it does, the guard's
    decision and weights are unchanged and the 'eb' row is the tilt of the blend on the decoder's own grid.  Both
    branches occur among these fits."""
    seen = []
    for seed, (theta, eps) in enumerate([(np.random.default_rng(1).dirichlet(np.full(100, 0.1)), 4.0),
                                         (np.r_[0.3, np.full(149, 0.7 / 149)], 1.0),
                                         (np.random.default_rng(2).dirichlet(np.full(80, 0.3)), 1.0),
                                         (np.r_[0.3, np.full(99, 0.7 / 99)], 2.0)]):
        est = _fitted(theta, 20_000, eps, 50 + seed)
        args = _stack_inputs(est)
        th0, info0 = stacked_estimate(*args, np.random.default_rng(seed), RHO_GRID)
        th1, info1 = stacked_estimate(*args, np.random.default_rng(seed), RHO_GRID, gmodel=True)
        assert info1["gmodel_used"] == (info1["gmodel_gain"] > GMODEL_MARGIN) and info1["gmodel_converged"]
        for key in ("stack_weights", "stack_gain", "stack_se", "stack_used", "n_iter", "converged", "rho"):
            assert info1[key] == info0[key]
        assert np.all(th1 >= 0) and abs(th1.sum() - 1) <= 1e-12
        if not info1["gmodel_used"]:
            assert np.array_equal(th1, th0) and info1["tilt"] == info0["tilt"]
            assert info1["gmodel_final_converged"] is None  # round 18: no g-model fitted on all users
        else:
            c, n, p, q = args[:4]
            f = (c / n - q) / (p - q)
            uo = _grid(f, n, p, q)
            Lo = _likelihood(c, n, p, q, uo)
            # round G3: the same numerics as the stack's (the compiled EM, the tilt's moments from L)
            fast = S.STACK_FAST_NUMERICS
            w_o = npmle_weights(Lo, compiled=fast and c.size <= COMPILED_EM_MAX_CATEGORIES)[0]
            prior, ok = smooth_prior(Lo, uo, w_o, p, q, f)
            assert info1["gmodel_final_converged"] is ok  # round 18: the flag of the fit behind the estimate
            if not info1["stack_used"]:
                ref = np.maximum(tilted_means(Lo, prior, uo, linear=fast)[0], 0)
                assert np.array_equal(th1, ref / ref.sum())
        seen.append(info1["gmodel_used"])
    assert any(seen) and not all(seen)


def test_the_decoder_by_name_reads_the_same_fit_and_the_mechanism_is_untouched():
    """'eb-gmodel' is a compute knob: the same responses as 'eb-stack' (the privatised reports do not depend on the
    decoder, so the mechanism's exact eps-LDP is the one tested elsewhere), convergence_ names it and its keys,
    switching back gives 'eb-stack''s estimate, and 'auto' is AUTO_EB_DECODER's."""
    theta = np.random.default_rng(3).dirichlet(np.full(90, 0.2))
    a = _fitted(theta, 20_000, 2.0, 9, decoder="eb-gmodel")
    b = _fitted(theta, 20_000, 2.0, 9, decoder="eb-stack")
    sa, sb = a._chain.store, b._chain.store
    assert np.array_equal(sa.sids[: sa.n], sb.sids[: sb.n]) and np.array_equal(sa.masks[: sa.n_sids],
                                                                               sb.masks[: sb.n_sids])
    conv = a.convergence_
    assert conv["method"] == "eb-gmodel" and {"gmodel_gain", "gmodel_used", "gmodel_converged"} <= set(conv)
    stack = b.theta_
    a.set_params(decoder="eb-stack")
    assert np.array_equal(a.theta_, stack) and "gmodel_used" not in a.convergence_
    a.set_params(decoder="auto")
    assert a.convergence_["method"] == _decoding.AUTO_EB_DECODER
    # intervals do not depend on the point estimate
    a.set_params(decoder="eb-gmodel")
    assert np.array_equal(a.credible_interval(0.9), b.credible_interval(0.9))


def test_deterministic_on_pickle_and_refused_with_rrrr():
    """The same random_state gives the same estimate, a pickled copy reads it again; decoder='eb-gmodel' with RRRR is
    refused naming decoder, and a refused read leaves the fit as it was."""
    theta = np.random.default_rng(5).dirichlet(np.full(70, 0.3))
    a = _fitted(theta, 10_000, 1.0, 4, decoder="eb-gmodel")
    b = _fitted(theta, 10_000, 1.0, 4, decoder="eb-gmodel")
    assert np.array_equal(a.theta_, b.theta_) and a.convergence_ == b.convergence_
    assert np.array_equal(pickle.loads(pickle.dumps(a)).theta_, a.theta_)
    _refused_decoders_leave_the_fit(a, "eb-gmodels", "eb-gmodel", "eb-gmodel")


def test_auto_would_route_to_the_gmodel_from_64_categories_only(monkeypatch):
    """The route that an adoption would switch on (AUTO_EB_DECODER = 'eb-gmodel'): 'auto' reads 'eb-gmodel' from 64
    categories and keeps 'eb-stack' from 32 to 63 (where the cross-validated gain routes to the empirical-Bayes
    decoder), bit for bit the decoders by name on the same fits."""
    monkeypatch.setattr(_decoding, "AUTO_EB_DECODER", "eb-gmodel")
    many = _fitted(np.random.default_rng(8).dirichlet(np.full(70, 0.3)), 10_000, 1.0, 12)
    few = _fitted(np.random.default_rng(0).dirichlet(np.full(50, 50.0)), 20_000, 4.0, 3)  # near-uniform: cv gain >= 3
    for est, name in ((many, "eb-gmodel"), (few, "eb-stack")):
        auto = est.theta_
        assert est.convergence_["method"] == name
        est.set_params(decoder=name)
        assert np.array_equal(est.theta_, auto)


def test_a_gmodel_fit_that_stops_early_is_reported_for_the_folds_and_for_the_final_fit(monkeypatch):
    """Round 18: ``gmodel_converged`` (the folds' fits) and ``gmodel_final_converged`` (the fit on all users behind
    the estimate) carry L-BFGS-B's flag; with every fit forced to report failure both are False where the blend is
    used, and the estimate is the one the unforced fits give (the flag is reported, not acted on)."""
    import sklearn_bayes.privacy._ldp._gmodel as gm

    theta = np.random.default_rng(1).dirichlet(np.full(100, 0.1))
    est = _fitted(theta, 20_000, 4.0, 50)
    args = _stack_inputs(est)
    th, info = stacked_estimate(*args, np.random.default_rng(0), RHO_GRID, gmodel=True)
    assert info["gmodel_used"] and info["gmodel_converged"] and info["gmodel_final_converged"] is True
    real = gm.gmodel_weights
    monkeypatch.setattr(gm, "gmodel_weights", lambda *a, **k: real(*a, **k)[:2] + (False,))
    th_f, info_f = stacked_estimate(*args, np.random.default_rng(0), RHO_GRID, gmodel=True)
    assert info_f["gmodel_converged"] is False and info_f["gmodel_final_converged"] is False
    assert np.array_equal(th_f, th)
