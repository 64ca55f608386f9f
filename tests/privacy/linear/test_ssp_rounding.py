"""The grid release of the sufficient statistics holds the floating-point error of computing them (no issue).

The accounting (module docstring of ``_ssp_posterior``) allows one grid step of snapping per
coordinate between neighbours.  The statistics ``XᵀX``, ``Xᵀy``, ``yᵀy`` are computed in floating
point, ``f̂ = f + r`` with ``|r| <= e(n)`` (``statistics_error_bound``), so neighbours' snapped values
differ from the exact difference by up to ``1 + 2e/g`` steps.  The budget for ``n`` rows raises the
grid parameter until ``ρω`` (``omega_rounding``) fits the allowance; the release refuses more rows
than its budget was built for.  Every check is exact (integers) or a proved inequality.
"""

import math
from fractions import Fraction

import numpy as np
import pytest

from sklearn_bayes.privacy._linear._ssp_posterior import (
    discrete_release_delta_bound,
    release_sufficient_statistics,
    ssp_joint_sensitivity_sq,
    ssp_posterior_budget,
    statistics_error_bound,
    sufficient_statistics,
)

SCALE = 2**20  # data on a dyadic grid: products and their sums are exact in Python integers


def _dyadic_rows(n, p, seed, adversarial=False):
    rng = np.random.default_rng(seed)
    Z = rng.uniform(-1, 1, size=(n, p + 1))
    if adversarial:  # large terms of alternating sign: the sums cancel, the rounding does not
        Z[:, :] = np.where(np.arange(n)[:, None] % 2 == 0, 1.0, -1.0) * np.abs(Z)
        Z[:, -1] = np.abs(Z[:, -1])
    Z[:, :p] /= np.maximum(1.0, np.linalg.norm(Z[:, :p], axis=1))[:, None] * (1 + 2**-30)
    ints = np.trunc(Z * SCALE).astype(np.int64)  # towards 0: the norms stay <= 1
    assert np.all(np.linalg.norm(ints[:, :p] / SCALE, axis=1) <= 1.0)
    return ints


@pytest.mark.parametrize("n, adversarial", [(7, False), (1024, False), (1025, True), (5000, False), (40_000, True)])
def test_the_computed_statistics_are_within_the_bound_of_the_exact_ones(n, adversarial):
    p = 3
    ints = _dyadic_rows(n, p, seed=n, adversarial=adversarial)
    Z = ints / SCALE
    gram, xty, yty = sufficient_statistics(Z[:, :p], Z[:, p])
    exact = ints.astype(object).T @ ints.astype(object)  # Python integers: exact
    computed = np.zeros((p + 1, p + 1), dtype=object)
    computed[:p, :p], computed[:p, p], computed[p, p] = gram, xty, yty
    bound = Fraction(statistics_error_bound(n))
    for i in range(p + 1):
        for j in range(p + 1):
            if i == p and j < p:
                continue
            err = abs(Fraction(float(computed[i, j])) - Fraction(int(exact[i, j]), SCALE * SCALE))
            assert err <= bound, (i, j, float(err), float(bound))


def test_the_statistics_agree_with_the_direct_products_to_the_bound():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30_000, 4))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.clip(rng.normal(size=30_000), -1, 1)
    gram, xty, yty = sufficient_statistics(X, y)
    # both are within e(n) of the exact values, so within 2 e(n) of each other
    tol = 2 * statistics_error_bound(30_000)
    assert np.max(np.abs(gram - X.T @ X)) <= tol
    assert np.max(np.abs(xty - X.T @ y)) <= tol and abs(yty - y @ y) <= tol
    np.testing.assert_array_equal(gram, gram.T)


def test_the_bound_grows_like_the_block_not_like_n():
    u = 2.0**-53
    assert statistics_error_bound(1000) == pytest.approx(1000 * u * 1000, rel=1e-9)
    assert statistics_error_bound(10**6) < 1100 * u * 10**6  # 1024 + ceil(log2(977)) = 1034 < 1100
    assert statistics_error_bound(0) == 0.0


@pytest.mark.parametrize("eps", [0.1, 1.0, 30.0, 300.0])
@pytest.mark.parametrize("p", [1, 4, 21])
@pytest.mark.parametrize("n", [10, 10**6, 10**8])
def test_the_budget_certifies_the_target_with_the_rounding(eps, p, n):
    delta = 1e-6
    b = ssp_posterior_budget(eps, delta, p=p, n=n)
    m = p * (p + 1) // 2 + p + 1
    assert b["max_rows"] == n
    grids = [b["grid_gram"], b["grid_xty"], b["grid_yty"]]
    rho = 1.0 + 2.0 * statistics_error_bound(n) / min(grids)
    assert b["omega_rounding"] >= rho * b["omega"]
    # the continuous part mu was set aside as M - sqrt(m)/s_base; the snapping with rounding must fit in the rest
    big_m = b["mu_total"]
    assert b["mu"] + b["omega_rounding"] <= big_m * (1 + 1e-12)
    u, v, w = (1.0 / b[f"sigma_{k}"] ** 2 for k in ("gram", "xty", "yty"))
    mu_c = math.sqrt(ssp_joint_sensitivity_sq(u, v, w))
    assert discrete_release_delta_bound(mu_c, b["omega_rounding"], eps) <= delta


def test_a_fine_grid_at_many_rows_is_refined_for_the_rounding():
    """At 10^8 rows and eps 300 the rounding is a noticeable share of a grid step: the grid is finer than without it."""
    with_rows = ssp_posterior_budget(300.0, 1e-6, p=21, n=10**8)
    without = ssp_posterior_budget(300.0, 1e-6, p=21)
    assert with_rows["omega_rounding"] > with_rows["omega"] * (1 + 1e-3)
    assert with_rows["grid_sigma_gram"] * with_rows["grid_gram"] >= without["grid_sigma_gram"] * without["grid_gram"]
    assert with_rows["omega"] < without["omega"]


def test_the_release_refuses_more_rows_than_its_budget_holds():
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(50, 2))
    y = rng.uniform(-1, 1, size=50)
    for b in (ssp_posterior_budget(1.0, 1e-6, p=2), ssp_posterior_budget(1.0, 1e-6, p=2, n=49)):
        gen = np.random.default_rng(1)
        state = gen.bit_generator.state
        with pytest.raises(ValueError, match="max_rows"):
            release_sufficient_statistics(X, y, b, gen)
        assert gen.bit_generator.state == state  # refused before any noise
    A, xb, q = release_sufficient_statistics(X, y, ssp_posterior_budget(1.0, 1e-6, p=2, n=50), np.random.default_rng(1))
    assert A.shape == (2, 2) and xb.shape == (2,) and math.isfinite(q)
