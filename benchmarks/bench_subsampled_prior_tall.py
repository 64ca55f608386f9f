"""Benchmark (HSPT): the subsampled-prior GLMs on tall data against their cross-validated peers.

Synthetic tall data (N rows plus 5000 test rows, p iid N(0, 1) features, coefficients N(0, 0.2^2)):
logistic (labels drawn from the logistic model) against
``LogisticRegressionCV(Cs=20, cv=10, scoring='neg_log_loss')``; Poisson (counts with log-mean 0.5 x^T beta)
against ``GridSearchCV(PoissonRegressor, 20 alphas 1e-4..1e2, cv=10)``; the linear SVM (the logistic labels)
against ``GridSearchCV(LinearSVC, 20 Cs 1e-3..1e3, cv=10)`` (test loss: error %); every method in a
``StandardScaler`` pipeline, one BLAS thread, all in one process.  Four fits: the default (``ours``), the
same with ``_tuning._WEAK_END = False`` (``hspt``: HSPT's search, every decade computed -- HSPT2's round
compares against it), the same with ``_tuning._FAST_PATH = False`` (``previous``: the search of log tau as
it was before HSPT -- every fit cold, every candidate searched, the Hessian formed again for the
leave-one-out step; the same choices to within the solver's tolerance) and the peer.  Each of ``--repeats``
rounds fits all four in turn (the order rotated); printed per cell: the fastest time of each, the ratio of
the fastest times ``ours / peer``, ``ours / hspt`` and ``ours / previous``, the mean of the per-round paired
ratios with its
standard error, the test losses, and whether the chosen prior is the same (shape and mean; the scale to a
relative 1e-6: the bounded search's parabolic steps carry the fits' differences within the solver's
tolerance into the scale at about 1e-7, against its resolution of 0.15 decade).

HSPT's goals, fixed before measuring: ``ours / peer <= 0.5`` at N = 20 000 and 50 000 (p = 30, logistic),
best of 3, one thread; no cell slower than ``previous``.  HSPT2's: the same at N = 20 000 and 50 000, no
cell slower than ``hspt``, the same choices as ``hspt``.

Usage::

    python benchmarks/bench_subsampled_prior_tall.py                       # logistic, p = 30, N = 20k and 50k
    python benchmarks/bench_subsampled_prior_tall.py --kinds logistic poisson --n 5000 20000 50000 200000 --p 10 30 100
    python benchmarks/bench_subsampled_prior_tall.py --small 8     # the small cells: ours / previous (about 2 minutes)
    python benchmarks/bench_subsampled_prior_tall.py --blocked-hessian 1000000 50 --repeats 2   # round HSP (HQD's fit)
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegressionCV, PoissonRegressor
from sklearn.metrics import log_loss, mean_poisson_deviance
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from sklearn.svm import LinearSVC

from sklearn_bayes import SubsampledPriorLinearSVC, SubsampledPriorLogisticRegression, SubsampledPriorPoissonRegressor
from sklearn_bayes.linear_model._subsampled_prior import _tuning


def _data(kind, n, p, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + 5000, p))
    eta = X @ (rng.normal(size=p) * 0.2)
    if kind in ("logistic", "svm"):
        return X, (rng.random(n + 5000) < 1 / (1 + np.exp(-eta))).astype(int)
    return X, rng.poisson(np.exp(0.5 * eta))


def _methods(kind):
    if kind == "logistic":
        peer = LogisticRegressionCV(Cs=20, cv=10, scoring="neg_log_loss", max_iter=2000)
        return peer, SubsampledPriorLogisticRegression
    if kind == "svm":
        return GridSearchCV(LinearSVC(max_iter=5000), {"C": np.logspace(-3, 3, 20)}, cv=10), SubsampledPriorLinearSVC
    peer = GridSearchCV(PoissonRegressor(max_iter=1000), {"alpha": np.logspace(-4, 2, 20)}, cv=10)
    return peer, SubsampledPriorPoissonRegressor


def _loss(kind, model, X, y):
    if kind == "logistic":
        return log_loss(y, model.predict_proba(X))
    if kind == "svm":
        return 100.0 * float(np.mean(model.predict(X) != y))
    return mean_poisson_deviance(y, np.maximum(model.predict(X), 1e-12))


def _fit(name, est, X, y):
    model = make_pipeline(StandardScaler(), est)
    fast, weak = _tuning._FAST_PATH, _tuning._WEAK_END
    _tuning._FAST_PATH = name != "previous"
    _tuning._WEAK_END = name not in ("previous", "hspt")
    try:
        t0 = time.perf_counter()
        model.fit(X, y)
        return time.perf_counter() - t0, model
    finally:
        _tuning._FAST_PATH, _tuning._WEAK_END = fast, weak


def run_cell(kind, n, p, repeats):
    X, y = _data(kind, n, p)
    Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:], y[n:]
    peer, Ours = _methods(kind)
    ests = {"ours": Ours(random_state=0), "hspt": Ours(random_state=0), "previous": Ours(random_state=0), "peer": peer}
    names = list(ests)
    times = {m: [] for m in names}
    models = {}
    for r in range(repeats):
        for m in names[r % 4:] + names[:r % 4]:  # the order rotated: no method always first
            t, models[m] = _fit(m, ests[m], Xtr, ytr)
            times[m].append(t)
    T = {m: np.array(v) for m, v in times.items()}
    out = dict(kind=kind, n=n, p=p)
    for m in names:
        out[m] = T[m].min()
        out[m + "_loss"] = _loss(kind, models[m], Xte, yte)
    for ref in ("peer", "hspt", "previous"):
        per = T["ours"] / T[ref]
        out["vs_" + ref] = T["ours"].min() / T[ref].min()
        out["vs_" + ref + "_mean"] = per.mean()
        out["vs_" + ref + "_se"] = per.std(ddof=1) / np.sqrt(per.size) if per.size > 1 else np.nan
    for ref in ("hspt", "previous"):
        a, b = models["ours"][-1].prior_choice_, models[ref][-1].prior_choice_
        out["same_" + ref] = ((a["shape"], a["mean"]) == (b["shape"], b["mean"])
                              and abs(a["scale"] / b["scale"] - 1) <= 1e-6)
    return out


def small_cells(splits, repeats=4, ref="previous"):
    """Rule (c): every logistic, Poisson and SVM cell of bench_subsampled_prior.py (dev and held-out), the
    default against ``previous`` in this process, interleaved (each first in half the rounds), the fastest
    of ``repeats`` fits each per split (``ref='hspt'``: against HSPT's search instead); per cell the geometric
    mean over the splits of the time ratio ours / ref with the standard
    error of its log (delta method), and the splits where the prior differs beyond 1e-4 relative."""
    import importlib.util
    import pathlib

    spec = importlib.util.spec_from_file_location(
        "bench_subsampled_prior", pathlib.Path(__file__).with_name("bench_subsampled_prior.py"))
    B = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(B)
    print(f"{'task':8s} {'cell':34s} {'half':8s} {'ours/' + ref[:4]:>9s} {'+-se':>6s} {ref[:4] + ' ms':>8s}  differ",
          flush=True)
    for task, name, loader, n_train, dev in B.CELLS:
        if task == "ridge":  # the ridge's closed form: untouched
            continue
        logs, base, differ = [], [], 0
        for s in range(splits):
            X, y = loader(s)
            if name.startswith("synthetic"):
                tr = np.arange(n_train)
            else:
                tr, _ = B.split(X, y, n_train, s, task)
            t = {}
            fits = {}
            for r in range(repeats):
                for m in (("ours", ref) if r % 2 == 0 else (ref, "ours")):
                    dt, fits[m] = _fit(m, B.OURS[task](random_state=s), X[tr], y[tr])
                    t[m] = min(t.get(m, np.inf), dt)
            logs.append(np.log(t["ours"] / t[ref]))
            base.append(t[ref])
            a, b = fits["ours"][-1].prior_choice_, fits[ref][-1].prior_choice_
            for u, v in (zip(a, b) if isinstance(a, list) else [(a, b)]):
                same = all(u.get(k) == v.get(k) for k in ("shape", "mean", "intercept"))
                differ += not (same and abs(u["scale"] / v["scale"] - 1) <= 1e-4)
        lg = np.array(logs)
        se = np.exp(lg.mean()) * lg.std(ddof=1) / np.sqrt(lg.size) if lg.size > 1 else np.nan
        print(f"{task:8s} {name:34s} {'dev' if dev else 'held-out':8s} {np.exp(lg.mean()):9.3f} {se:6.3f} "
              f"{1e3 * np.median(base):8.1f}  {differ}", flush=True)


def blocked_hessian(n, d, repeats):
    """Round HSP: the one-output Hessian over cache-sized row blocks (``_map._BLOCKED_MIN_ROWS`` rows up) against
    the previous computation, the default logistic fit on HQD's problem (``N x d`` Gaussian, coefficients
    0.3 N(0, 1)), paired and alternated in one process; the chosen prior and the coefficients compared."""
    from sklearn_bayes._glm import _map

    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-X @ (0.3 * rng.standard_normal(d))))).astype(np.int64)
    times, fits, blocked_from = {"before": [], "blocked": []}, {}, _map._BLOCKED_MIN_ROWS
    for r in range(repeats):
        for key in (("before", "blocked") if r % 2 == 0 else ("blocked", "before")):
            _map._BLOCKED_MIN_ROWS = 10 ** 12 if key == "before" else blocked_from
            try:
                t = time.perf_counter()
                fits[key] = SubsampledPriorLogisticRegression(random_state=0).fit(X, y)
                times[key].append(time.perf_counter() - t)
            finally:
                _map._BLOCKED_MIN_ROWS = blocked_from
    ratio = np.array(times["blocked"]) / np.array(times["before"])
    a, b = fits["before"], fits["blocked"]
    same = all(a.prior_choice_[k] == b.prior_choice_[k] for k in ("shape", "mean", "scale_rule"))
    dscale = abs(b.prior_choice_["scale"] / a.prior_choice_["scale"] - 1)
    dcoef = np.max(np.abs(b.coef_ - a.coef_)) / np.max(np.abs(a.coef_))
    print(f"logistic N = {n}, d = {d}: before {np.median(times['before']):.2f} s, "
          f"blocked {np.median(times['blocked']):.2f} s (medians of {repeats}); paired ratio {ratio.mean():.3f} +- "
          f"{ratio.std(ddof=1) / np.sqrt(repeats):.3f}; same candidate {same}, scale relative difference "
          f"{dscale:.1e}, coefficients {dcoef:.1e} relative", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kinds", nargs="+", default=["logistic"], choices=["logistic", "poisson", "svm"])
    ap.add_argument("--n", nargs="+", type=int, default=[20000, 50000])
    ap.add_argument("--p", nargs="+", type=int, default=[30])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--small", type=int, default=0, metavar="SPLITS",
                    help="instead: the benchmark's small cells, ours against previous on SPLITS splits (rule (c))")
    ap.add_argument("--small-ref", default="previous", choices=["previous", "hspt"],
                    help="the reference of --small: the search before HSPT (default) or HSPT's")
    ap.add_argument("--blocked-hessian", nargs=2, type=int, default=None, metavar=("N", "D"),
                    help="instead: round HSP's blocked Hessian against the previous one (--repeats paired fits)")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    if args.blocked_hessian:
        with threadpool_limits(limits=1):
            blocked_hessian(*args.blocked_hessian, max(2, args.repeats))
        return
    if args.small:
        with threadpool_limits(limits=1):
            small_cells(args.small, 2 * ((args.repeats + 1) // 2), args.small_ref)
        return
    print(f"{'kind':8s} {'N':>7s} {'p':>4s} {'peer s':>7s} {'prev s':>7s} {'hspt s':>7s} {'ours s':>7s}  "
          f"{'ours/peer':>9s} {'(mean+-se)':>14s}  {'ours/hspt':>9s} {'(mean+-se)':>14s}  "
          f"{'ours/prev':>9s} {'(mean+-se)':>14s}  {'loss ours':>9s} {'loss peer':>9s}  same prior (hspt, prev)",
          flush=True)
    with threadpool_limits(limits=1):
        for kind in args.kinds:
            for p in args.p:
                for n in args.n:
                    o = run_cell(kind, n, p, args.repeats)
                    print(f"{kind:8s} {n:7d} {p:4d} {o['peer']:7.2f} {o['previous']:7.2f} {o['hspt']:7.2f} "
                          f"{o['ours']:7.2f}  {o['vs_peer']:9.2f} {o['vs_peer_mean']:7.2f}+-{o['vs_peer_se']:.2f}  "
                          f"{o['vs_hspt']:9.2f} {o['vs_hspt_mean']:7.2f}+-{o['vs_hspt_se']:.2f}  "
                          f"{o['vs_previous']:9.2f} {o['vs_previous_mean']:7.2f}+-{o['vs_previous_se']:.2f}  "
                          f"{o['ours_loss']:9.5f} {o['peer_loss']:9.5f}  {o['same_hspt']} {o['same_previous']}",
                          flush=True)


if __name__ == "__main__":
    main()
