"""Error-law components of MixtureMEstimatorRegressor: densities, weights, scale M-steps."""

import numpy as np
import pytest
from scipy import optimize, stats

from sklearn_bayes import CauchyComponent, GaussianComponent, LaplaceComponent, MixtureComponent
from sklearn_bayes.linear_model._mixture._components import _resolve_components

RNG = np.random.default_rng(12345)
R = RNG.standard_t(df=2, size=400) * 1.7
Z = RNG.uniform(0.05, 1.0, size=400)

LAWS = [
    (GaussianComponent(), stats.norm),
    (LaplaceComponent(), stats.laplace),
    (CauchyComponent(), stats.cauchy),
]


@pytest.mark.parametrize("comp, law", LAWS, ids=lambda c: getattr(c, "name", ""))
def test_log_pdf_matches_scipy(comp, law):
    for scale in (0.3, 1.0, 4.5):
        np.testing.assert_allclose(comp.log_pdf(R, scale), law.logpdf(R, scale=scale), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("comp, law", LAWS, ids=lambda c: getattr(c, "name", ""))
def test_weight_is_psi_over_r(comp, law):
    """w(r) = rho'(r) / r with rho = -log p, checked by central differences."""
    scale = 1.3
    r = np.array([-5.0, -1.2, -0.3, 0.2, 0.9, 7.0])
    h = 1e-6
    psi = -(comp.log_pdf(r + h, scale) - comp.log_pdf(r - h, scale)) / (2 * h)
    np.testing.assert_allclose(comp.weight(r, scale), psi / r, rtol=1e-6)


def test_scale_updates_match_closed_forms():
    sig = GaussianComponent().fit_scale(R, Z)
    assert sig == pytest.approx(np.sqrt(np.sum(Z * R**2) / np.sum(Z)), rel=1e-14)
    b = LaplaceComponent().fit_scale(R, Z)
    assert b == pytest.approx(np.sum(Z * np.abs(R)) / np.sum(Z), rel=1e-14)
    gam = CauchyComponent().fit_scale(R, Z)
    # the stationarity equation of the paper: sum z (2 r^2 / (g^2 + r^2) - 1) = 0
    g = np.sum(Z * (2 * R**2 / (gam**2 + R**2) - 1))
    # relative tolerance 1e-10 on log(gamma^2): |dg/dlog t| <= sum z / 2, so |g| <= 1e-10 * sum z
    assert abs(g) <= 1e-10 * Z.sum()


@pytest.mark.parametrize("comp, law", LAWS, ids=lambda c: getattr(c, "name", ""))
def test_scale_update_maximises_weighted_likelihood(comp, law):
    s_hat = comp.fit_scale(R, Z)

    def nll(log_s):
        return -np.sum(Z * comp.log_pdf(R, np.exp(log_s)))

    res = optimize.minimize_scalar(nll, bracket=(-3, 3), tol=1e-12)
    assert np.log(s_hat) == pytest.approx(res.x, abs=1e-5)
    assert nll(np.log(s_hat)) <= res.fun + 1e-9 * abs(res.fun)


def test_cauchy_scale_with_exact_zeros():
    r = np.array([0.0, 0.0, 0.0, 1.0, -2.0])
    # more weight on exact zeros than elsewhere: no positive root, collapse reported as 0
    assert CauchyComponent().fit_scale(r, np.ones(5)) == 0.0
    # less weight on zeros: a positive root below min |r| exists
    z = np.array([0.1, 0.1, 0.1, 1.0, 1.0])
    gam = CauchyComponent().fit_scale(r, z)
    g = np.sum(z * (r**2 - gam**2) / (r**2 + gam**2))
    assert gam > 0 and abs(g) <= 1e-9 * z.sum()


def test_scale_from_mad_matches_median_absolute_value():
    for comp, law in LAWS:
        s = comp.scale_from_mad(2.0)
        # median of |r| is the 0.75 quantile of the symmetric law
        assert law.ppf(0.75, scale=s) == pytest.approx(2.0, rel=1e-9)


def test_validation_of_component_parameters():
    with pytest.raises(ValueError, match="scale"):
        _resolve_components([GaussianComponent(scale=-1.0)])
    with pytest.raises(TypeError, match="scale"):
        _resolve_components([GaussianComponent(scale="big")])
    with pytest.raises(ValueError, match="delta"):
        _resolve_components([LaplaceComponent(delta=2.0)])
    with pytest.raises(ValueError, match="xtol"):
        _resolve_components([CauchyComponent(xtol=0)])
    with pytest.raises(ValueError, match="Unknown component 'student'"):
        _resolve_components(["gaussian", "student"])
    with pytest.raises(TypeError, match="Unknown component 3"):
        _resolve_components([3])
    with pytest.raises(ValueError, match="at least one"):
        _resolve_components([])


def test_components_are_copied_not_mutated_and_compare_by_value():
    c = LaplaceComponent(scale=2.0, delta=1e-5)
    (out,) = _resolve_components([c])
    assert out == c and out is not c
    assert repr(c) == "LaplaceComponent(scale=2.0, delta=1e-05)"
    assert MixtureComponent().name == "component"
    with pytest.raises(NotImplementedError):
        MixtureComponent().log_pdf(R, 1.0)


@pytest.mark.parametrize("comp, law", LAWS, ids=lambda c: getattr(c, "name", ""))
@pytest.mark.parametrize("k", [0.5, 3.0])
def test_map_scale_update_maximises_penalised_likelihood(comp, law, k):
    """fit_scale_map maximises sum z log p(r; s) - k (s0^2/s^2 + log s^2); the generic base-class
    version (numerical) agrees with the closed forms."""
    s0 = 0.7

    def neg(log_s):
        s = np.exp(log_s)
        return -np.sum(Z * comp.log_pdf(R, s)) + k * (s0**2 / s**2 + 2 * log_s)

    s_hat = comp.fit_scale_map(R, Z, s0, k)
    res = optimize.minimize_scalar(neg, bracket=(-3, 3), tol=1e-12)
    assert np.log(s_hat) == pytest.approx(res.x, abs=1e-5)
    assert neg(np.log(s_hat)) <= res.fun + 1e-9 * abs(res.fun)
    generic = MixtureComponent.fit_scale_map(comp, R, Z, s0, k)
    assert generic == pytest.approx(s_hat, rel=1e-5)
    # strength 0 is the maximum-likelihood step; an empty component gets the prior's mode
    assert comp.fit_scale_map(R, Z, s0, 0.0) == pytest.approx(comp.fit_scale(R, Z), rel=1e-12)
    empty = comp.fit_scale_map(R, np.zeros_like(Z), s0, k)
    assert empty == pytest.approx(s0, rel=1e-6)
