"""Edges and attacks on the bad-leverage group guard (``_selection.leverage_group``, issue 30 round 11b) and the
small-sample path's pull condition (``_selection.not_drawn``, ``SMALL_N_GROWTH_PULL``, round 11): exactly three
rejected rows, one slope, constant / binary / duplicated columns, ties, zero and scaled weights, affine maps of the
design, weighted fits at the 12 rows-per-coefficient boundary, a Pipeline with StandardScaler, and groups far out in
other columns and directions."""

import numpy as np
import pytest
from scipy import stats
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import sklearn_bayes.linear_model._mixture._selection as mv
from sklearn_bayes import MixtureMEstimatorRegressor
from sklearn_bayes.linear_model._mixture._lts_start import weighted_median, wls

BETA = np.array([1.0, 0.0, -1.0])
MM = (np.r_[BETA, 0.0], 1.0)  # the MM fit of the unit tests: the true coefficients at scale 1
LINE = np.r_[BETA + [2.0, 0.0, 0.0], 0.0]  # the leverage line of _group: through every moved row


def _group(n, seed, k, col=0, sign=1.0):
    """``n`` rows, three normal slopes ``BETA``, N(0, 1) errors; the first ``k`` rows moved to ``x_col = sign (10 +
    N(0, 1))`` with a residual of ``2 x_col`` (bad leverage points on one line, as test_leverage_group's)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X @ BETA + rng.normal(size=n)
    X[:k, col] = sign * (10.0 + rng.normal(size=k))
    y[:k] = X[:k] @ BETA + 2.0 * X[:k, col]
    return X, y


def _aug(X):
    return np.column_stack([X, np.ones(len(X))])


def _line(col=0):
    theta = np.r_[BETA, 0.0]
    theta[col] += 2.0
    return theta


def test_exactly_three_rejected_rows():
    """Three rows on the leverage line (MM residuals about 20, squared distances 83-92 from the kept rows, beyond
    chi2_3's 9.35): a group for the line through them (residual 0 < half of 20), not with size 4, not when one of
    them has zero weight (two rows of weight), not when one of them sits at ordinary x with the same residual, and
    never for the MM fit itself."""
    X, y = _group(30, 0, 3)
    Xa, sw, slopes = _aug(X), np.ones(30), np.arange(3)
    assert np.all(np.abs(y[:3] - Xa[:3] @ MM[0]) > mv.MM_REJECTION)
    assert np.all(np.abs(y[3:] - Xa[3:] @ MM[0]) <= mv.MM_REJECTION)
    assert mv.leverage_group(Xa, y, sw, LINE, MM, slopes)
    assert not mv.leverage_group(Xa, y, sw, LINE, MM, slopes, size=4)
    assert not mv.leverage_group(Xa, y, sw, MM[0], MM, slopes)
    sw0 = sw.copy()
    sw0[0] = 0.0
    assert not mv.leverage_group(Xa, y, sw0, LINE, MM, slopes)
    Xm, ym = Xa.copy(), y.copy()
    Xm[2, 0] = 0.3
    ym[2] = Xm[2] @ MM[0] + 20.0  # rejected, at ordinary x
    assert not mv.leverage_group(Xm, ym, sw, LINE, MM, slopes)


def test_one_slope():
    """p = 1: three rows at x about 10 on y = 3 x (MM fit y = x: residuals about 20, squared distances about 100
    beyond chi2_1's 5.02) are a group for the line through them, not for the MM fit."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=20)
    y = x + rng.normal(size=20)
    x[:3] = 10.0 + rng.normal(size=3)
    y[:3] = 3.0 * x[:3]
    Xa, mm = _aug(x[:, None]), (np.array([1.0, 0.0]), 1.0)
    assert mv.leverage_group(Xa, y, np.ones(20), np.array([3.0, 0.0]), mm, np.arange(1))
    assert not mv.leverage_group(Xa, y, np.ones(20), mm[0], mm, np.arange(1))


@pytest.mark.parametrize("extra", ["zero", "binary", "duplicate"])
def test_constant_binary_and_duplicated_columns_far_groups(extra):
    """A column of zeros (what the estimator's design holds for a constant feature), a binary column, or a copy of
    x_1 added to the slopes (coefficient 0 in every fit): the kept rows' covariance is singular for the zero and the
    duplicate (pinv), and a group at squared distances 83-92 (far beyond chi2_4's 11.14) still is one; the MM fit
    still is not drawn.  No warning, no error."""
    X, y = _group(30, 0, 3)
    rng = np.random.default_rng(2)
    col = {"zero": np.zeros(30), "binary": (rng.random(30) < 0.5).astype(float), "duplicate": X[:, 0]}[extra]
    Xa = np.column_stack([X, col, np.ones(30)])
    slopes, sw = np.arange(4), np.ones(30)
    with np.errstate(all="raise"):
        assert mv.leverage_group(Xa, y, sw, np.r_[LINE[:3], 0.0, 0.0], (np.r_[BETA, 0.0, 0.0], 1.0), slopes)
        assert not mv.leverage_group(Xa, y, sw, np.r_[BETA, 0.0, 0.0], (np.r_[BETA, 0.0, 0.0], 1.0), slopes)


def test_ties_identical_rejected_rows_count_as_rows():
    """Three identical rejected rows (ties in distance, residual and x) are three rows: a group; two are not."""
    X, y = _group(30, 0, 1)
    X[:3], y[:3] = X[0], y[0]
    Xa, sw, slopes = _aug(X), np.ones(30), np.arange(3)
    assert mv.leverage_group(Xa, y, sw, LINE, MM, slopes)
    assert not mv.leverage_group(Xa[1:], y[1:], sw[1:], LINE, MM, slopes)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_affine_maps_of_the_slopes_and_weight_scale_do_not_matter(seed):
    """The rule reads residuals and Mahalanobis distances: mapping the slopes' columns by an invertible A and a shift
    b (each fit's coefficients mapped so that its predictions are unchanged) and multiplying every weight by 1e-3 or
    1e3 give the same answer, for the least-squares fit (drawn to the six rows) and the MM fit."""
    X, y = _group(30, seed, 6)
    Xa, sw, slopes = _aug(X), np.ones(30), np.arange(3)
    ls = np.linalg.lstsq(Xa, y, rcond=None)[0]
    rng = np.random.default_rng(10 + seed)
    A, b = rng.normal(size=(3, 3)) + 3 * np.eye(3), rng.normal(size=3) * 5
    Xb = _aug(X @ A + b)

    def mapped(theta):  # (X A + b) beta' + c' = X beta + c
        beta = np.linalg.solve(A, theta[:3])
        return np.r_[beta, theta[3] - b @ beta]

    mm_b = (mapped(MM[0]), MM[1])
    for theta in (ls, MM[0]):
        want = mv.leverage_group(Xa, y, sw, theta, MM, slopes)
        assert mv.leverage_group(Xb, y, sw, mapped(theta), mm_b, slopes) == want
        for c in (1e-3, 1e3):
            assert mv.leverage_group(Xa, y, c * sw, theta, MM, slopes) == want
    assert mv.leverage_group(Xa, y, sw, ls, MM, slopes) and not mv.leverage_group(Xa, y, sw, MM[0], MM, slopes)


def test_zero_weight_row_does_not_make_a_group():
    """Three weighted rows on the leverage line, the fit leaves each of them nearly all its MM residual (slope 1.05
    instead of the MM fit's 1: not drawn, no group).  A row of weight 0 far out at x_1 = 200 exactly on that fit
    (MM residual 10 > 4.685: rejected; the fit's residual 0) is not a row (sample_weight 0 = the row dropped, as
    the estimator promises): the answer should stay False."""
    X, y = _group(30, 0, 3)
    Xa, sw, slopes = _aug(X), np.ones(30), np.arange(3)
    theta = MM[0] + [0.05, 0.0, 0.0, 0.0]
    assert not mv.leverage_group(Xa, y, sw, theta, MM, slopes)
    xz = np.array([200.0, 0.0, 0.0, 1.0])
    Xz, yz, swz = np.vstack([Xa, xz]), np.r_[y, xz @ theta], np.r_[sw, 0.0]
    assert abs(yz[-1] - xz @ MM[0]) > mv.MM_REJECTION * MM[1]
    assert not mv.leverage_group(Xz, yz, swz, theta, MM, slopes)


def _hetero(n, seed):
    """test_small_growth's data: three normal slopes, errors N(0, 1) times |x_1|."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, X @ BETA + rng.normal(size=n) * np.abs(X[:, 0])


def test_zero_weight_row_does_not_change_the_small_sample_path(monkeypatch):
    """30 rows of test_small_growth (seed 19: the one-sided test fires, the default fits Huber (1.0)) plus a row of
    weight 0 at x_1 = 100 on the Huber (1.345) fit (so the MM fit, slope 0.82 against 0.78, rejects it: residual
    about 3.2, 6.3 times its scale 0.51): sample_weight 0 is the row dropped (test_estimator's promise), so the loss
    and coefficients should be the 30-row fit's (to rounding).  Passes only once both not_drawn and
    _sees_the_mm_outliers (evaluated next, on the same row) drop zero-weight rows.  ``mm_coef_`` and
    ``residual_scale_`` are the loss choice's MM fit under the flags' rule before (``_flags.FLAG_RULE = "round14"``)."""
    import sklearn_bayes.linear_model._mixture._flags as fl

    monkeypatch.setattr(fl, "FLAG_RULE", "round14")
    X, y = _hetero(30, 19)
    th = mv.huber_with_own_scale(_aug(X), y, np.ones(30), np.zeros(4), 1.0, mv.HuberT(1.345), wls, weighted_median,
                                 1e-12)[0]  # fmt: skip
    ref = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    assert ref.selected_loss_ == "huber(c=1)"
    xz = np.array([100.0, 0.0, 0.0])
    got = MixtureMEstimatorRegressor(random_state=0).fit(np.vstack([X, xz]), np.r_[y, np.r_[xz, 1.0] @ th],
                                                         sample_weight=np.r_[np.ones(30), 0.0])  # fmt: skip
    np.testing.assert_allclose(got.mm_coef_, ref.mm_coef_, rtol=1e-10, atol=1e-10)  # the MM fit ignores the row
    r_mm = np.r_[xz, 1.0] @ th - xz @ ref.mm_coef_ - ref.mm_intercept_
    assert abs(r_mm) > mv.MM_REJECTION * ref.residual_scale_  # rejected by the MM fit
    assert got.selected_loss_ == ref.selected_loss_
    np.testing.assert_allclose(got.coef_, ref.coef_, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("c", [0.1, 3.0])
@pytest.mark.parametrize("n, rows_per_coef, name, data", [
    (15, mv.GUARD_ROWS_PER_COEF, "LEVERAGE_GROUP", "group"),        # below 4 rows per coefficient: no guard
    (48, mv.CV_ROWS_PER_COEF, "LEVERAGE_GROUP", "group"),           # from 12: no comparison
    (32, mv.SMALL_N_ROWS_PER_COEF, "SMALL_N_GROWTH_PULL", "hetero"),  # from 8: not the small-sample path
])
def test_uniform_weights_at_the_boundaries_never_reach_the_new_rules(monkeypatch, c, n, rows_per_coef, name, data):
    """Uniform weights c (Kish's n_eff = n to rounding; is_small's margin keeps it on the unit-weight side of each
    bound) at 15 rows (4 coefficients: below the guard's 4 per coefficient), 48 (the comparison's 12) and 32 (the
    small-sample path's 8), a tenth of the rows on the leverage line or errors growing with |x_1|: bit-identical
    coefficients, intercept and loss with the round's constant None."""
    X, y = _group(n, 5, max(2, n // 10)) if data == "group" else _hetero(n, 10)
    sw = np.full(n, c)
    small = mv.is_small(sw, 4, rows_per_coef)
    assert small == (n < 4 * rows_per_coef) and small == mv.is_small(np.ones(n), 4, rows_per_coef)
    new = MixtureMEstimatorRegressor(random_state=0).fit(X, y, sample_weight=sw)
    monkeypatch.setattr(mv, name, None)
    old = MixtureMEstimatorRegressor(random_state=0).fit(X, y, sample_weight=sw)
    np.testing.assert_array_equal(new.coef_, old.coef_)
    assert new.intercept_ == old.intercept_ and new.selected_loss_ == old.selected_loss_


@pytest.mark.parametrize("col, sign, seed", [(0, 1.0, 1), (2, -1.0, 0), (1, 1.0, 4)])
def test_groups_far_out_in_other_columns_and_directions_keep_the_redescending_fit(monkeypatch, col, sign, seed):
    """Seven of 30 rows on a leverage line far out in x_1, x_3 (at -10) or x_2: the default keeps a Tukey fit
    (squared slope error below 0.2), round 11's comparison (LEVERAGE_GROUP = None) takes the Huber fit through the
    group (above 3)."""
    X, y = _group(30, seed, 7, col, sign)
    new = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    monkeypatch.setattr(mv, "LEVERAGE_GROUP", None)
    old = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    assert new.selected_loss_.startswith("tukey") and np.sum((new.coef_ - BETA) ** 2) < 0.2
    assert old.selected_loss_ == "huber(c=1.345)" and np.sum((old.coef_ - BETA) ** 2) > 3.0


@pytest.mark.parametrize("seed", [0, 5])
def test_pipeline_with_standard_scaler_makes_the_same_decision(seed):
    """StandardScaler before the regressor (which standardises its columns itself): the same selected loss and the
    same predictions.  The two designs agree to rounding after the regressor's own standardisation and both IRLS
    runs stop within tol = 1e-8 (1 + |theta|) of the same root in standardised units (|theta| < 10, 4 coefficients,
    standardised |x| < 12 here): predictions within 4 * 2 * 1e-8 * 11 * 12 y_scale, below 1e-5 sd(y)."""
    X, y = _group(30, seed, 7)
    plain = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    pipe = make_pipeline(StandardScaler(), MixtureMEstimatorRegressor(random_state=0)).fit(X, y)
    assert pipe[-1].selected_loss_ == plain.selected_loss_ and plain.selected_loss_.startswith("tukey")
    np.testing.assert_allclose(pipe.predict(X), plain.predict(X), rtol=0, atol=1e-5 * np.std(y))
    np.testing.assert_array_equal(pipe[-1].flag_outliers(pipe[0].transform(X), y), plain.flag_outliers(X, y))


def _mid_distance_group():
    """27 rows of three normal slopes and N(0, 1) errors (all kept by the MM fit at scale 1) and three identical rows
    at squared Mahalanobis distance 10.2 from them (between chi2_3's and chi2_4's 97.5 % points) with MM residual 20;
    the fit ``MM + 20 on the intercept`` goes through them."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(27, 3))
    y = X @ BETA + np.clip(rng.normal(size=27), -3, 3)
    c, C = X.mean(axis=0), np.cov(X.T)
    v = np.array([1.0, 0.0, 0.0])
    x_out = c + v * np.sqrt(10.2 / (v @ np.linalg.solve(C, v)))
    Xf = np.vstack([np.repeat(x_out[None, :], 3, axis=0), X])
    yf = np.r_[np.full(3, x_out @ BETA + 20.0), y]
    return Xf, yf


def test_a_constant_feature_column_does_not_change_the_group():
    """The same three rows at squared distance 10.2 with a column of zeros added to the slopes (the estimator's
    design holds zeros for a constant feature, and its slopes include that column): the distance is the same (pinv:
    the zero column adds nothing), so the answer should be the same, True."""
    Xf, yf = _mid_distance_group()
    theta = MM[0] + [0.0, 0.0, 0.0, 20.0]
    assert mv.leverage_group(_aug(Xf), yf, np.ones(30), theta, MM, np.arange(3))
    Xz = np.column_stack([Xf, np.zeros(30), np.ones(30)])
    mm_z = (np.r_[BETA, 0.0, 0.0], 1.0)
    assert mv.leverage_group(Xz, yf, np.ones(30), np.r_[BETA, 0.0, 20.0], mm_z, np.arange(4))


def test_wild_zero_weight_rows_leave_the_guarded_fit_unchanged():
    """The guard's own case (seven of 30 rows on the leverage line, seed 0: Tukey kept) plus five wild rows of weight
    0 (x and y ten times the data's spread, not placed on any fit): the same loss, the MM fit and the coefficients to
    rounding (test_estimator's promise: weight 0 = the row dropped)."""
    X, y = _group(30, 0, 7)
    rng = np.random.default_rng(20)
    Xe, ye = np.r_[X, rng.normal(size=(5, 3)) * 10], np.r_[y, rng.normal(size=5) * 30]
    ref = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    got = MixtureMEstimatorRegressor(random_state=0).fit(Xe, ye, sample_weight=np.r_[np.ones(30), np.zeros(5)])
    assert got.selected_loss_ == ref.selected_loss_ and ref.selected_loss_.startswith("tukey")
    np.testing.assert_allclose(got.mm_coef_, ref.mm_coef_, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got.coef_, ref.coef_, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("n_kept, expected", [(5, True), (4, False)])
def test_fewest_kept_rows(n_kept, expected):
    """Three slopes: the kept rows' covariance needs at least slopes + 2 = 5 rows (documented); with 5 kept rows and
    three rejected rows far out on the leverage line the line through them is a group, with 4 the rule says no."""
    X, y = _group(3 + n_kept, 7, 3)
    X[3:] = np.random.default_rng(8).normal(size=(n_kept, 3))
    y[3:] = X[3:] @ BETA
    Xa = _aug(X)
    assert np.sum(np.abs(y - Xa @ MM[0]) > mv.MM_REJECTION) == 3
    assert mv.leverage_group(Xa, y, np.ones(3 + n_kept), LINE, MM, np.arange(3)) is expected


def test_zero_weight_row_does_not_fail_the_small_sample_guard():
    """The same 30 rows (seed 19: the default fits Huber (1.0)) plus a row of weight 0 placed, in the fit's own
    standardised units, where the MM fit rejects it (4.83 of its scales), the Huber (1.345) fit leaves it 0.53 of that
    residual (not drawn: not_drawn passes) and does not flag it (2.37 of its scale, below the guard's 2.5): the
    guard of the small-sample path (from 4 rows per coefficient) then fails on a row that is not a row.  Expected:
    the 30-row fit's loss and coefficients (to rounding)."""
    X, y = _hetero(30, 19)
    ref = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    assert ref.selected_loss_ == "huber(c=1)"
    xz, yz = np.array([-12.624268586518358, -9.189715779189752, -17.347192153642]), 7.006277686175336
    got = MixtureMEstimatorRegressor(random_state=0).fit(np.vstack([X, xz]), np.r_[y, yz],
                                                         sample_weight=np.r_[np.ones(30), 0.0])  # fmt: skip
    np.testing.assert_allclose(got.mm_coef_, ref.mm_coef_, rtol=1e-10, atol=1e-10)  # the MM fit ignores the row
    assert got.selected_loss_ == ref.selected_loss_
    np.testing.assert_allclose(got.coef_, ref.coef_, rtol=1e-10, atol=1e-10)
