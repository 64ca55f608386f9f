"""Issue 30, round 20: the S search's finalists iterated up to ``_s_start.S_MAX_STEPS_SMALL`` I-steps below 12
(effective) rows per coefficient (``None``: the cap of 60, rounds 5-19), and the benchmark's round-20 columns.

Checked on draw 46 of the benchmark's bad leverage cell at n = 30, p = 3, where three leverage points lie exactly on
``y = 2 x1``: at 60 steps the deterministic starts' fit of the good rows stops short of its basin and the S start
fits the cluster (round 19's task 1).
"""

import numpy as np

import sklearn_bayes.linear_model._mixture._s_start as ss
from sklearn_bayes import MixtureMEstimatorRegressor

from .test_round19 import _bad_leverage, _bench


def _fit(X, y):
    return MixtureMEstimatorRegressor(random_state=0).fit(X, y)


def test_cap_constants():
    assert ss._S_MAX_STEPS == 60
    assert ss.S_MAX_STEPS_SMALL == 500  # round 20's default; None gives rounds 5-19


def test_higher_cap_leaves_the_exact_fit_cluster_of_draw_46(monkeypatch):
    """True coefficients 0.  Cap 60: slope vector's squared error 3.81 (x1's slope 1.92, the cluster's 2), the flags
    mark four good rows; cap 500: 0.092, and the flags from the fit's S start (``_flags.FLAG_START = "first"``, round
    L2's) mark exactly the three leverage points.  Since round L3 the flags start from the S finalist of least
    finite-sample scale of all rows, lmrob's criterion, which here is the cluster's fit: they mark good rows 1, 4 and
    6, robustbase ``lmrob``'s own flags on this draw (R 4.2.2, robustbase 0.95-0, seeds 0-4; development log, round
    L3), while the fit (``coef_``) is the same."""
    import sklearn_bayes.linear_model._mixture._flags as fl

    X, y = _bad_leverage(46)
    cluster = np.flatnonzero(X[:, 0] > 5)
    assert len(cluster) == 3 and np.allclose(y[cluster], 2 * X[cluster, 0])
    monkeypatch.setattr(ss, "S_MAX_STEPS_SMALL", None)
    old = _fit(X, y)
    assert np.sum(old.coef_**2) > 3.0 and abs(old.coef_[0] - 2.0) < 0.1
    assert not set(np.flatnonzero(old.flag_outliers(X, y))) & set(cluster)
    monkeypatch.setattr(ss, "S_MAX_STEPS_SMALL", 500)
    new = _fit(X, y)
    assert np.sum(new.coef_**2) < 0.15
    assert np.flatnonzero(new.flag_outliers(X, y)).tolist() == [1, 4, 6]  # lmrob's rows
    assert abs(new.mm_coef_[0] - 2.0) < 0.1  # the flags' MM fit is the cluster's, as lmrob's (1.948)
    monkeypatch.setattr(fl, "FLAG_START", "first")
    first = _fit(X, y)
    assert first.coef_.tobytes() == new.coef_.tobytes()
    assert np.array_equal(np.flatnonzero(first.flag_outliers(X, y)), cluster)


def test_s_starts_cap_is_read_below_twelve_rows_per_coefficient_only(monkeypatch):
    """The searched rows' effective count decides: 30 rows, 4 coefficients (7.5 per coefficient) -- the cap changes the
    finalists of draw 46; 48 rows (12 per coefficient) -- the search is the same bit for bit whatever the cap."""
    for n, changes in ((30, True), (48, False)):
        X, y = _bad_leverage(46, n=n)
        Xa = np.column_stack([np.ones(n), (X - X.mean(0)) / X.std(0)])
        out = {}
        for cap in (None, 500, 1):
            monkeypatch.setattr(ss, "S_MAX_STEPS_SMALL", cap)
            out[cap] = ss.s_starts(Xa, y, np.ones(n), 50, 2, np.random.default_rng(0))
        same = lambda a, b: all(np.array_equal(u, v) for u, v in zip(a[0], b[0])) and a[1] == b[1]  # noqa: E731
        assert same(out[None], out[500]) is not changes, n
        assert same(out[None], out[1]) is not changes, n


def test_twelve_rows_per_coefficient_or_more_are_untouched(monkeypatch):
    """The error-law grid's 100/5 with bad leverage points: the fit is the same bit for bit at either cap."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(100, 5))
    y = rng.normal(size=100)
    X[:5, 0], y[:5] = 10.0, 20.0
    monkeypatch.setattr(ss, "S_MAX_STEPS_SMALL", None)
    ref = _fit(X, y)
    monkeypatch.setattr(ss, "S_MAX_STEPS_SMALL", 500)
    got = _fit(X, y)
    assert np.array_equal(got.coef_, ref.coef_) and got.intercept_ == ref.intercept_


def test_bench_round20_fits_pin_the_cap_and_the_gate(monkeypatch):
    """``ROUND20_FITS["default"]`` is round 18's default and ``"C"`` V2 with the cap at 500, whatever the module
    defaults: on draw 46 the default's column fits the cluster and C's does not, with the module constants set the
    other way."""
    bench = _bench()
    X, y = _bad_leverage(46)
    monkeypatch.setattr(ss, "S_MAX_STEPS_SMALL", 500)
    assert np.sum(bench.ROUND20_FITS["default"](X, y)[0] ** 2) > 3.0
    monkeypatch.setattr(ss, "S_MAX_STEPS_SMALL", None)
    assert np.sum(bench.ROUND20_FITS["C"](X, y)[0] ** 2) < 0.15
    assert set(bench.ROUND20_FITS) == {"default", "C"}
