"""Edge cases of the band's test of spread (``_selection.spread_growth``, ``HETEROSCEDASTICITY_BAND_TEST='growth'``;
issue 30, round 10): degenerate columns, ties in |r|, zero-weight rows, weights, and the 8 and 12 rows per
coefficient boundaries of the band."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats

import sklearn_bayes.linear_model._mixture._selection as mv
from sklearn_bayes import MixtureMEstimatorRegressor


def _hetero(n, seed):
    """``n`` rows, three normal slopes, errors with sd proportional to ``|x_1|`` (as test_spread_growth)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, X @ [1.0, 0.0, -1.0] + rng.normal(size=n) * np.abs(X[:, 0])


def _check(out):
    z, k, p = out
    assert np.isfinite(z) and isinstance(k, int) and 0.0 <= p <= 1.0 and not np.isnan(p)
    if k > 0:
        assert p == min(1.0, k * stats.norm.sf(z))
    return out


# ---------------------------------------------------------------- the test itself
def test_constant_binary_and_duplicated_columns():
    """A constant column is not counted (k, z, p as without it); a 0/1 column with median 0 is a column with two
    values (counted), a balanced one has (x - median)^2 constant (not counted); a duplicated column has the same
    z and doubles the Bonferroni factor."""
    rng = np.random.default_rng(40)
    n = 40
    x = rng.normal(size=n)
    r = rng.normal(size=n) * (1 + np.abs(x))
    one = _check(mv.spread_growth(np.column_stack([x, np.ones(n)]), r, np.ones(n), np.arange(1)))
    assert one[1] == 1
    with_const = _check(mv.spread_growth(np.column_stack([x, np.full(n, 3.0), np.ones(n)]), r, np.ones(n),
                                         np.arange(2)))
    # the same dot product of n terms, through a matrix product of another shape: within gamma_n = n eps relative
    tol = 4 * n * np.finfo(float).eps
    assert with_const[1] == 1 and with_const[0] == pytest.approx(one[0], rel=tol)
    dup = _check(mv.spread_growth(np.column_stack([x, x, np.ones(n)]), r, np.ones(n), np.arange(2)))
    assert dup[1] == 2 and dup[0] == pytest.approx(one[0], rel=tol)
    assert dup[2] == pytest.approx(min(1.0, 2 * stats.norm.sf(one[0])), rel=1e-12)
    skewed = (np.arange(n) < 10).astype(float)  # median 0: (x - 0)^2 takes two values
    balanced = (np.arange(n) < n // 2).astype(float)  # median 0.5: (x - 0.5)^2 = 0.25 everywhere
    assert _check(mv.spread_growth(np.column_stack([skewed, np.ones(n)]), r, np.ones(n), np.arange(1)))[1] == 1
    assert _check(mv.spread_growth(np.column_stack([balanced, np.ones(n)]), r, np.ones(n), np.arange(1))) == (
        0.0, 0, 1.0)


def test_ties_in_the_residuals():
    """All |r| tied (an exact fit's zeros, or +-c): no test, (0.0, 0, 1.0) -- before, a - mean(a) was rounding
    noise and z came out at -1e-16 with k = 2 (p = 1, or 0.5 with one column).  Partial ties give a p-value in
    [0, 1] equal to min(1, k Phi(-z)), and the test reads only the ranks of |r|: scaling r by 1e+-300 or
    flipping signs changes nothing, bit for bit."""
    rng = np.random.default_rng(41)
    n = 30
    Xa = np.column_stack([rng.normal(size=(n, 2)), np.ones(n)])
    for r in (np.zeros(n), np.full(n, 0.1), np.r_[np.full(15, 0.1), np.full(15, -0.1)]):
        assert mv.spread_growth(Xa, r, np.ones(n), np.arange(2)) == (0.0, 0, 1.0)
        assert mv.spread_growth(Xa[:, [0, 2]], r, np.ones(n), np.arange(1)) == (0.0, 0, 1.0)
    r = np.round(rng.normal(size=n) * (1 + Xa[:, 0] ** 2), 0)  # many ties
    assert len(np.unique(np.abs(r))) < n // 2
    base = _check(mv.spread_growth(Xa, r, np.ones(n), np.arange(2)))
    for other in (r * 1e300, r * 1e-300, -r, r * np.where(rng.random(n) < 0.5, -1, 1)):
        assert mv.spread_growth(Xa, other, np.ones(n), np.arange(2)) == base


def test_p_values_are_never_nan():
    """Random designs mixing normal, constant, binary, duplicated and heavy-tailed columns, residuals with ties,
    zeros and zero-weight rows: every p-value is in [0, 1] and the Bonferroni bound of the returned z."""
    rng = np.random.default_rng(42)
    for _ in range(200):
        n = int(rng.integers(10, 60))
        cols = [rng.normal(size=n), np.full(n, rng.normal()), (rng.random(n) < rng.random()).astype(float),
                rng.standard_cauchy(n)]
        cols.append(cols[int(rng.integers(4))])
        Xa = np.column_stack(cols + [np.ones(n)])
        r = rng.standard_t(2, size=n)
        r[rng.random(n) < 0.3] = 0.0
        sw = np.where(rng.random(n) < 0.2, 0.0, rng.uniform(0.1, 3.0, n))
        _check(mv.spread_growth(Xa, r, sw, np.arange(5)))


# ---------------------------------------------------------------- the band's boundaries
@pytest.fixture
def band_calls(monkeypatch):
    """Record the calls of the band's test (the names are looked up at call time): those made from
    ``heteroscedastic_band``, not the small-sample path's (round 11, below 8 rows per coefficient)."""
    calls, inside = [], []
    real, real_band = mv.spread_growth, mv.heteroscedastic_band

    def recorder(*args):
        if inside:
            calls.append(len(args[1]))
        return real(*args)

    def band(*args):
        inside.append(True)
        try:
            return real_band(*args)
        finally:
            inside.pop()

    monkeypatch.setattr(mv, "spread_growth", recorder)
    monkeypatch.setattr(mv, "heteroscedastic_band", band)
    return calls


@pytest.mark.parametrize("n, in_band", [(31, False), (32, True), (47, True), (48, False)])
def test_the_band_is_8_to_12_rows_per_coefficient(band_calls, monkeypatch, n, in_band):
    """Three slopes and an intercept (p = 4): the test runs at 32 and 47 rows (8 and 11.75 per coefficient), not
    at 31 and 48; outside the band the fit is bit-identical to round 9's test ("chi2")."""
    X, y = _hetero(n, 12)
    new = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    assert (len(band_calls) > 0) is in_band
    if not in_band:
        monkeypatch.setattr(mv, "HETEROSCEDASTICITY_BAND_TEST", "chi2")
        old = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
        assert_array_equal(new.coef_, old.coef_)
        assert new.intercept_ == old.intercept_ and new.selected_loss_ == old.selected_loss_


@pytest.mark.parametrize("n", [24, 32, 48])
@pytest.mark.parametrize("c", [0.1, 0.3, 7.1])
def test_uniform_weights_take_the_unit_weights_path(band_calls, n, c):
    """sample_weight = c for every row is the unweighted fit: the same path at the boundaries 6, 8 and 12 rows per
    coefficient (Kish's n_eff = 31.999999999999996 for c = 0.1 at 32 rows took the small-sample path, and 0.1 at
    48 rows the band: other losses, coefficients 0.04-0.32 apart), the same loss, and coefficients equal to
    rounding (every sum rounds differently; the IRLS contracts those errors: 1e-10 relative is 1e5 units)."""
    X, y = _hetero(n, 13 + n)
    ref = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    calls_ref = list(band_calls)
    band_calls.clear()
    got = MixtureMEstimatorRegressor(random_state=0).fit(X, y, sample_weight=np.full(n, c))
    assert band_calls == calls_ref and got.selected_loss_ == ref.selected_loss_
    assert_allclose(got.coef_, ref.coef_, rtol=1e-10, atol=1e-10)
    for k in (6, 8, 12):
        for m in (k * 4 - 1, k * 4):
            sw = np.full(m, c)
            assert mv.is_small(sw, 4, k) == mv.is_small(np.ones(m), 4, k) == (m < 4 * k)


def test_zero_weight_rows_are_not_rows(band_calls):
    """32 rows plus 5 wild rows of weight 0: the band's test sees 32 rows, and the fit is the fit of the 32
    rows (same loss, coefficients to rounding)."""
    X, y = _hetero(32, 14)
    rng = np.random.default_rng(15)
    Xe, ye = np.r_[X, rng.normal(size=(5, 3)) * 10], np.r_[y, rng.normal(size=5) * 100]
    ref = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    assert band_calls == [32]
    band_calls.clear()
    got = MixtureMEstimatorRegressor(random_state=0).fit(Xe, ye, sample_weight=np.r_[np.ones(32), np.zeros(5)])
    assert band_calls == [37] and got.selected_loss_ == ref.selected_loss_  # r of all rows; the test drops sw = 0
    assert_allclose(got.coef_, ref.coef_, rtol=1e-10, atol=1e-10)
