"""Wide data (p >> n): fit time and test loss of the SubsampledPrior* defaults against the 10-fold CV peers
of bench_subsampled_prior.py, with the n x n Newton systems of ``_glm._dual`` (after) and without
(``DUAL_RATIO = inf``, the dense path of before).

Cells (fixed in advance): n = 60 training rows, 1000 test rows, p in {300, 1000, 2000}, tasks ridge,
logistic, Poisson, SVM (the data of the review's time_wide.py: N(0, 1) features, 10 active coefficients
0.5).  ``--seeds``: the draws per cell; seed 0 is the review's draw (the development cell), seeds
101.. are held out.  Adoption rule (fixed before the held-out run): the dual path is kept if on every
held-out cell its test loss equals the dense path's (exact algebra: equal to 1e-6 relative) and its
time is not above the dense path's.  Printed per cell: time over the first (10-fold CV) peer and test
loss over the best peer, mean over seeds with the standard error of the mean of the per-seed (paired)
ratios; the dense path is timed on ``--dense-seeds`` seeds (it takes up to 30 s a fit at p = 2000).

Run single-threaded: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_subsampled_prior_wide.py``.
"""

import argparse
import importlib.util
import os
import time
import warnings

import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_bayes._glm import _dual

_spec = importlib.util.spec_from_file_location(
    "bench_subsampled_prior", os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_subsampled_prior.py"))
B = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(B)


def draw(task, p, seed, n=60, n_test=1000):
    """The review's wide cell (time_wide.py): seed 0 is its draw ``default_rng(p)``."""
    rng = np.random.default_rng(p if seed == 0 else (seed, p))
    X = rng.normal(size=(n + n_test, p))
    beta = np.zeros(p)
    beta[:10] = 0.5
    eta = X @ beta
    y = {"logistic": lambda: (rng.random(n + n_test) < 1 / (1 + np.exp(-eta))).astype(int),
         "svm": lambda: (eta + rng.logistic(size=n + n_test) > 0).astype(int),
         "poisson": lambda: rng.poisson(np.exp(0.3 * eta)),
         "ridge": lambda: eta + rng.normal(size=n + n_test)}[task]()
    return X[:n], y[:n], X[n:], y[n:]


def timed_fit(est, X, y, Xt, yt, task):
    m = make_pipeline(StandardScaler(), est)
    t = time.perf_counter()
    m.fit(X, y)
    return time.perf_counter() - t, B.test_loss(task, m, Xt, yt)


def cell(task, p, seed, dense):
    X, y, Xt, yt = draw(task, p, seed)
    peers = [timed_fit(est, X, y, Xt, yt, task) for est in dict(B.peers(task)).values()]
    out = dict(peer_time=peers[0][0], peer_loss=min(lo for _, lo in peers))
    out["time"], out["loss"] = timed_fit(B.OURS[task](random_state=0), X, y, Xt, yt, task)
    if dense:
        saved = _dual.DUAL_RATIO
        _dual.DUAL_RATIO = float("inf")
        try:
            out["dense_time"], out["dense_loss"] = timed_fit(B.OURS[task](random_state=0), X, y, Xt, yt, task)
        finally:
            _dual.DUAL_RATIO = saved
    return out


def _mean_se(v):
    v = np.asarray(v, dtype=float)
    return v.mean(), (v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else float("nan"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", default="ridge,logistic,poisson,svm")
    ap.add_argument("--ps", default="300,1000,2000")
    ap.add_argument("--seeds", default="101,102,103,104", help="0 = the development cell")
    ap.add_argument("--dense-seeds", type=int, default=1, help="how many of the seeds also time the dense path")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    seeds = [int(s) for s in args.seeds.split(",")]
    print(f"seeds {seeds}; dense path on the first {args.dense_seeds}; OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS')}")
    print(f"{'task':9s} {'p':>5s}  {'time/peer (SE)':>16s}  {'loss/best (SE)':>16s}  {'dense time/peer':>15s}  "
          f"{'dense/dual time':>15s}  {'|loss dual-dense| rel':>21s}  {'peer s':>7s} {'ours s':>7s}")
    for task in args.tasks.split(","):
        for p in [int(v) for v in args.ps.split(",")]:
            rs = [cell(task, p, s, k < args.dense_seeds) for k, s in enumerate(seeds)]
            tr = _mean_se([r["time"] / r["peer_time"] for r in rs])
            lr = _mean_se([r["loss"] / r["peer_loss"] for r in rs])
            dn = [r for r in rs if "dense_time" in r]
            dt = _mean_se([r["dense_time"] / r["peer_time"] for r in dn]) if dn else (np.nan, np.nan)
            sp = _mean_se([r["dense_time"] / r["time"] for r in dn]) if dn else (np.nan, np.nan)
            dl = max((abs(r["loss"] - r["dense_loss"]) / abs(r["dense_loss"]) for r in dn), default=np.nan)
            print(f"{task:9s} {p:5d}  {tr[0]:7.3f} ({tr[1]:6.3f})  {lr[0]:7.4f} ({lr[1]:6.4f})  {dt[0]:15.2f}  "
                  f"{sp[0]:15.1f}  {dl:21.1e}  {np.mean([r['peer_time'] for r in rs]):7.2f} "
                  f"{np.mean([r['time'] for r in rs]):7.2f}", flush=True)


if __name__ == "__main__":
    main()
