"""The EM of the error mixture (linear_model/_mixture/_em.py): its result has fixed, consistent fields."""

import dataclasses

import numpy as np
import pytest

from sklearn_bayes import CauchyComponent, GaussianComponent, LaplaceComponent
from sklearn_bayes.linear_model._mixture._em import EMProblem, EMResult, describe_residuals, em

COMPS = [GaussianComponent(), LaplaceComponent(), CauchyComponent()]
FIELDS = ["theta", "a", "scales", "z", "W", "objective", "ll", "history", "ll_history", "n_iter", "converged",
          "residuals"]


def _problem(n=400, seed=0, prior_strength=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    Xa = np.column_stack([X, np.ones(n)])
    y = X @ [1.0, -1.0] + 0.5 + rng.standard_t(3, size=n)
    prob = EMProblem(Xa, y, np.ones(n), list(COMPS), True, np.full(3, 1e-9),
                     prior_scales=np.array([1.0, 0.8, 0.7]), prior_strength=prior_strength)
    return prob, np.linalg.lstsq(Xa, y, rcond=None)[0], np.array([1.0, 0.8, 0.7])


@pytest.mark.parametrize("run", ["em", "describe"])
def test_result_fields_are_fixed_and_consistent(run):
    prob, theta0, s0 = _problem()
    if run == "em":
        res = em(prob, theta0, s0, 200, 1e-10)
    else:
        res = describe_residuals(prob, theta0, s0, 200, 1e-10, W=np.ones(len(prob.y)))
    assert isinstance(res, EMResult)
    assert [f.name for f in dataclasses.fields(res)] == FIELDS
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.theta = None
    np.testing.assert_allclose(res.residuals, prob.y - prob.Xa @ res.theta, rtol=0, atol=1e-12)
    assert res.a.shape == res.scales.shape == (3,) and res.a.sum() == pytest.approx(1.0)
    assert res.z.shape == (3, len(prob.y))
    np.testing.assert_allclose(res.z.sum(axis=0), 1.0, rtol=1e-12)
    # objective = log-likelihood + log scale prior; histories end at the returned values
    assert res.objective == pytest.approx(res.ll + prob.log_prior(res.scales), rel=1e-14)
    assert res.history[-1] == res.objective and res.ll_history[-1] == res.ll
    assert len(res.history) == len(res.ll_history) and isinstance(res.converged, bool) and 1 <= res.n_iter <= 200
    assert np.all(np.diff(res.history) >= -1e-9 * prob.wtot)  # EM (with the SQUAREM safeguard) is monotone
    _, _, ll, _ = prob.e_step(res.theta, res.a, res.scales)
    assert ll == pytest.approx(res.objective, rel=1e-12)


def test_em_weights_are_the_irls_weights_at_the_fit_and_describe_keeps_its_own():
    prob, theta0, s0 = _problem(prior_strength=0.0)
    res = em(prob, theta0, s0, 200, 1e-10)
    np.testing.assert_array_equal(res.W, prob.irls_weights(res.residuals, res.z, res.scales))
    W = np.linspace(0.1, 1.0, len(prob.y))
    desc = describe_residuals(prob, res.theta, res.scales, 50, 1e-10, W, a=res.a)
    assert desc.W is W
    np.testing.assert_array_equal(desc.theta, res.theta)


def test_describe_with_given_residuals_is_the_same_run():
    """``r`` (the residuals already computed by the caller) replaces only the first E-step's product:
    the same residuals give the same run, bit for bit; ``max_iter=0`` is that E-step alone."""
    prob, theta0, s0 = _problem()
    W = np.ones(len(prob.y))
    a = describe_residuals(prob, theta0, s0, 200, 1e-10, W)
    b = describe_residuals(prob, theta0, s0, 200, 1e-10, W, r=prob.y - prob.Xa @ theta0)
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    e = describe_residuals(prob, theta0, a.scales, 0, 1e-10, W, a=a.a, r=a.residuals)
    assert e.n_iter == 0 and not e.converged
    _, z, obj, _ = prob.e_step(theta0, a.a, a.scales)
    np.testing.assert_array_equal(e.z, z)
    assert e.objective == obj and list(e.history) == [obj]
