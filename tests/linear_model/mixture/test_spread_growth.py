"""Issue 30, round 10: the one-sided normal-score test of spread growing with x (``_selection.spread_growth``)
that decides, from 8 to 12 rows per coefficient, whether the default fits Huber (1.0)."""

import numpy as np
import pytest
from scipy import stats

import sklearn_bayes.linear_model._mixture._selection as mv
from sklearn_bayes import MixtureMEstimatorRegressor


def _hetero(n, seed, power=1.0):
    """``n`` rows, three normal slopes, errors with sd proportional to ``|x_1| ** power`` (0: i.i.d. normal)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, X @ [1.0, 0.0, -1.0] + rng.normal(size=n) * np.abs(X[:, 0]) ** power


@pytest.mark.slow
def test_spread_growth_null_law_by_simulation():
    """I.i.d. Cauchy errors, 40 rows, three independent normal columns, 3000 draws: the rejection rate of the
    returned p-value at 0.05 and at 0.2 matches ``1 - (1 - level / 3) ** 3`` (the chance that one of three
    independent one-sided tests at ``level / 3`` rejects; the Bonferroni bound is nearly exact because the three
    columns' rank scores are independent) within 3 binomial standard errors."""
    rng = np.random.default_rng(30)
    n, reps = 40, 3000
    ps = np.empty(reps)
    for i in range(reps):
        Xa = np.column_stack([rng.normal(size=(n, 3)), np.ones(n)])
        z, k, ps[i] = mv.spread_growth(Xa, rng.standard_cauchy(n), np.ones(n), np.arange(3))
        assert k == 3
    for level in (0.05, 0.2):
        target = 1 - (1 - level / 3) ** 3
        assert abs(np.mean(ps < level) - target) < 3 * np.sqrt(target * (1 - target) / reps)


def test_spread_growth_scores_have_their_permutation_moments():
    """For one fixed design and fixed |r|, the correlation of one column with permuted scores has mean 0 and
    variance 1 / (m - 1) exactly; over 4000 permutations the sample mean and variance of ``z_1`` (read off a
    design whose other columns are constant) are within 4 standard errors of 0 and 1."""
    rng = np.random.default_rng(31)
    n = 30
    x = rng.normal(size=n)
    Xa = np.column_stack([x, np.zeros(n), np.ones(n)])  # the constant column is dropped: k = 1
    r = rng.standard_t(3, size=n)
    zs = np.array([mv.spread_growth(Xa, rng.permutation(r), np.ones(n), np.arange(2))[0] for _ in range(4000)])
    assert abs(zs.mean()) < 4 / np.sqrt(4000)
    assert abs(zs.var() - 1) < 4 * np.sqrt(2 / 4000)  # var of a sample variance of near-normal z: 2 / N
    assert mv.spread_growth(Xa, r, np.ones(n), np.arange(2))[1] == 1


def test_spread_growth_is_one_sided_and_ignores_zero_weight_rows():
    """Spread growing with |x_1| (sd proportional to x_1^2) is rejected far below 0.001; spread shrinking with
    |x_1| (sd proportional to exp(-2 x_1^2)) is not (the one-sided alternative), although the two-sided joint
    test ``spread_dependence`` rejects it.  Zero-weight rows are not ranked; fewer than 10 rows: no test."""
    rng = np.random.default_rng(32)
    x = rng.normal(size=(60, 2))
    Xa = np.column_stack([x, np.ones(60)])
    z0 = rng.normal(size=60)
    z, k, p = mv.spread_growth(Xa, z0 * x[:, 0] ** 2, np.ones(60), np.arange(2))
    assert k == 2 and p < 1e-3 and p == pytest.approx(min(1.0, 2 * stats.norm.sf(z)), rel=1e-12)
    shrink = z0 * np.exp(-2 * x[:, 0] ** 2)
    assert mv.spread_dependence(Xa, shrink, np.ones(60), np.arange(2))[2] < 1e-3
    assert mv.spread_growth(Xa, shrink, np.ones(60), np.arange(2))[2] > 0.5
    e = z0 * x[:, 0] ** 2
    sw = np.r_[np.ones(40), np.zeros(20)]
    assert mv.spread_growth(Xa, e, sw, np.arange(2)) == mv.spread_growth(Xa[:40], e[:40], np.ones(40), np.arange(2))
    assert mv.spread_growth(Xa[:9], e[:9], np.ones(9), np.arange(2)) == (0.0, 0, 1.0)


def test_band_reads_spread_growth(monkeypatch):
    """40 rows, 3 slopes and an intercept (10 rows per coefficient), sd proportional to |x_1|: on this draw the
    one-sided test rejects at 0.001 and the default fits Huber (1.0); round 9's two-sided joint test does not,
    and HETEROSCEDASTICITY_BAND_TEST = "chi2" gives round 9's fit (the cross-validated comparison).  The flags
    (from the MM fit) are the same."""
    X, y = _hetero(40, 9)
    new = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    assert mv.HETEROSCEDASTICITY_BAND_TEST == "growth" and new.selected_loss_ == "huber(c=1)"
    monkeypatch.setattr(mv, "HETEROSCEDASTICITY_BAND_TEST", "chi2")
    old = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    assert old.selected_loss_ != "huber(c=1)"
    np.testing.assert_array_equal(new.flag_outliers(X, y), old.flag_outliers(X, y))
    np.testing.assert_array_equal(new.mm_coef_, old.mm_coef_)


@pytest.mark.parametrize("n", [30, 48, 100])
def test_fits_outside_the_band_are_unchanged_by_round_10(unchanged_without, n):
    """Below 8 rows per coefficient (30 rows: the small-sample path keeps its own test) and from 12 on (48,
    100), the band's test changes nothing: bit-identical coefficients, loss and flags with round 9's test."""
    for seed in (10, 11):
        X, y = _hetero(n, seed)
        unchanged_without("HETEROSCEDASTICITY_BAND_TEST", "chi2", X, y)
