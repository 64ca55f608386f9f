"""Benchmark: subsampled-prior GLMs against no regularisation and 10-fold CV grid searches.

Runs in one process, on the same random 75/25 splits (features standardised with the
training statistics), our four variants (full / diag / adj = covariance x n / jackknife)
against

* ridge: OLS, ``RidgeCV(cv=10)``, ``GridSearchCV(Ridge, cv=10)``, ``RidgeCV`` (efficient
  leave-one-out), ``BayesianRidge``, ``ClosedFormRidge``;
* logistic: unregularised ``LogisticRegression``, ``LogisticRegressionCV(cv=10)``;
* SVM: ``LinearSVC(C=1)``, ``GridSearchCV(LinearSVC, cv=10)``;
* Poisson: unregularised ``PoissonRegressor``, ``GridSearchCV(PoissonRegressor, cv=10)``;

every grid with 10 values, on the real data sets of :mod:`sklearn_bayes.datasets` and the
Table A.1 synthetic designs, plus one large ridge problem (N = 10^6, d = 100) against a plain
``LinearRegression``.  Prints mean +- sd of the test error and fit time per method, the time
ratio CV / method, and whether each target of the issue is met:

* GLMs: >= 10x faster than 10-fold CV with mean test error within one standard error of CV's
  on at least three of every four data sets;
* ridge at N >= 10^4: no slower than ``RidgeCV`` with MSE within one standard error;
* the 10^6 x 100 ridge fit within 3x a ``LinearRegression`` fit.

All fits run single-threaded (``threadpoolctl``; change with ``--threads``) so that times
compare; absolute times on a shared machine are noise, the ratios are the result.

Usage::

    python benchmarks/bench_subsampled_prior.py               # 50 splits (slow)
    python benchmarks/bench_subsampled_prior.py --splits 5    # quick
    python benchmarks/bench_subsampled_prior.py --tasks poisson logistic --skip-large
    python benchmarks/bench_subsampled_prior.py --dask-only   # Dask LocalCluster speed-up
"""

import argparse
import math
import sys
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from sklearn_bayes.experiments import subsampled_prior as E
from sklearn_bayes.experiments._progress import Progress
from sklearn_bayes.experiments._report import format_table, write_csv


def _datasets(task, large_ridge_n):
    ds = E.real_datasets(task)
    if task == "ridge":
        ds.update(E.synthetic_a1())
        from sklearn_bayes.datasets import make_subsampled_prior_regression

        for design in ("normal", "norm-IW"):
            ds[f"synthetic {large_ridge_n}x100 {design} sd=10"] = (
                lambda design=design: make_subsampled_prior_regression(
                    large_ridge_n, 100, design=design, noise=10.0,
                    random_state=E.a1_seed(large_ridge_n, design, 10, 0.5)))  # one seed per design
    if task in ("logistic", "svm"):
        from sklearn.datasets import make_classification

        ds["synthetic 5000x20"] = lambda: make_classification(
            n_samples=5000, n_features=20, n_informative=8, n_redundant=0, flip_y=0.05, random_state=0)
    return ds


def glm_target(summary, task):
    """Per variant: data sets with (CV/ours >= 10 and error <= CV's + one SE of CV's mean)."""
    cv_name = E.CV_METHOD[task]
    sel = [r for r in summary if r["task"] == task]
    dsets = list(dict.fromkeys(r["dataset"] for r in sel))
    lines = []
    for variant in E.VARIANTS:
        ok = 0
        details = []
        for d in dsets:
            ours = next(r for r in sel if r["dataset"] == d and r["method"] == variant)
            cv = next(r for r in sel if r["dataset"] == d and r["method"] == cv_name)
            fast = ours["cv_time_ratio"] >= 10
            close = ours["error_mean"] <= cv["error_mean"] + cv["error_se"]
            ok += fast and close
            if not (fast and close):
                details.append(f"{d}: {ours['cv_time_ratio']:.1f}x, error {ours['error_mean']:.4g} vs "
                               f"CV {cv['error_mean']:.4g} + SE {cv['error_se']:.2g}")
        need = math.ceil(0.75 * len(dsets))
        verdict = "MET" if ok >= need else "MISSED"
        lines.append(f"  {task:8s} {variant:10s} {ok}/{len(dsets)} data sets (need {need}): {verdict}"
                     + ("" if not details else "  [" + "; ".join(details) + "]"))
    return lines


def ridge_target(summary, large_names):
    lines = []
    for d in large_names:
        sel = [r for r in summary if r["task"] == "ridge" and r["dataset"] == d]
        cv = next(r for r in sel if r["method"] == "RidgeCV(cv=10)")
        gcv = next(r for r in sel if r["method"] == "RidgeCV(gcv)")
        for variant in E.VARIANTS:
            ours = next(r for r in sel if r["method"] == variant)
            for ref in (cv, gcv):
                faster = ours["time_mean"] <= ref["time_mean"]
                close = ours["error_mean"] <= ref["error_mean"] + ref["error_se"]
                verdict = "MET" if faster and close else "MISSED"
                lines.append(
                    f"  {d} {variant:10s} vs {ref['method']:15s}: time {ours['time_mean']:.3f}s vs "
                    f"{ref['time_mean']:.3f}s ({ref['time_mean'] / ours['time_mean']:.2f}x), MSE "
                    f"{ours['error_mean']:.4g} vs {ref['error_mean']:.4g} + SE {ref['error_se']:.2g}: {verdict}")
    return lines


def large_ridge(n, d, repeats, progress):
    """The 10^6 x 100 problem: our ridge (default and diag) against LinearRegression."""
    from sklearn.linear_model import LinearRegression

    from sklearn_bayes import SubsampledPriorRidge
    from sklearn_bayes.datasets import make_subsampled_prior_regression

    progress.message(f"large ridge: generating {n} x {d} ...")
    X, y = make_subsampled_prior_regression(n + n // 10, d, noise=10.0, random_state=0)
    Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:], y[n:]
    rows = []
    methods = {"LinearRegression": LinearRegression(),
               "subs": SubsampledPriorRidge(random_state=0),
               "subs.diag": SubsampledPriorRidge(covariance="diag", random_state=0)}
    times = {k: [] for k in methods}
    for rep in range(repeats):
        for name, est in methods.items():  # interleaved, so load changes hit every method
            t0 = time.perf_counter()
            est.fit(Xtr, ytr)
            times[name].append(time.perf_counter() - t0)
            progress.message(f"large ridge rep {rep + 1}/{repeats}: {name} {times[name][-1]:.2f}s")
    for name, est in methods.items():
        mse = float(np.mean((est.predict(Xte) - yte) ** 2))
        rows.append(dict(method=name, fit_time_s=float(np.median(times[name])), test_mse=mse))
    base = rows[0]["fit_time_s"]
    for r in rows:
        r["time / LinearRegression"] = r["fit_time_s"] / base
    return rows


def dask_speedup(n, d, repeats, progress):
    """Subsample fits on a 2-worker Dask LocalCluster (joblib's dask backend) against one process.

    Logistic regression on ``n x d`` Gaussian features, where the subsample fits dominate the
    cost.  Every fit runs with one BLAS thread per process; the coefficients must agree bit for
    bit.  Returns table rows (median wall time of ``repeats`` fits).
    """
    import joblib
    from distributed import Client, LocalCluster

    from sklearn_bayes import SubsampledPriorLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    beta = 0.3 * rng.standard_normal(d)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-X @ beta))).astype(np.int64)
    times = {"one process (n_jobs=1)": [], "dask, 2 workers": []}
    coefs = {}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=40) as cluster, Client(cluster) as client:
        client.run(lambda: threadpool_limits(limits=1) and None)  # one BLAS thread in every worker
        for rep in range(repeats):
            with threadpool_limits(limits=1):
                t0 = time.perf_counter()
                est = SubsampledPriorLogisticRegression(n_jobs=1, random_state=0).fit(X, y)
                times["one process (n_jobs=1)"].append(time.perf_counter() - t0)
                coefs["one process (n_jobs=1)"] = est.coef_
                t0 = time.perf_counter()
                with joblib.parallel_backend("dask"):
                    est = SubsampledPriorLogisticRegression(n_jobs=-1, random_state=0).fit(X, y)
                times["dask, 2 workers"].append(time.perf_counter() - t0)
                coefs["dask, 2 workers"] = est.coef_
            progress.message(f"dask rep {rep + 1}/{repeats}: "
                             + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in times.items()))
    base = float(np.median(times["one process (n_jobs=1)"]))
    rows = []
    for name, ts in times.items():
        t = float(np.median(ts))
        rows.append({"method": name, "fit_time_s": t, "speed-up": base / t,
                     "rows/s": n / t, "same coef": bool(np.array_equal(coefs[name], coefs["one process (n_jobs=1)"]))})
    return rows, est.n_subsamples_, est.subsample_size_


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--splits", type=int, default=50, help="random 75/25 splits (default: %(default)s)")
    parser.add_argument("--tasks", nargs="+", default=["ridge", "logistic", "svm", "poisson"],
                        choices=["ridge", "logistic", "svm", "poisson"])
    parser.add_argument("--skip-large", action="store_true", help="skip the 10^6 x 100 ridge problem")
    parser.add_argument("--large-n", type=int, default=1_000_000, help="rows of the large ridge problem")
    parser.add_argument("--large-repeats", type=int, default=3)
    parser.add_argument("--ridge-n", type=int, default=20_000,
                        help="rows of the synthetic ridge sets for the N >= 10^4 target (75%% train)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads for every fit")
    parser.add_argument("--csv", help="write the per-split results to this CSV file")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--dask", action="store_true",
                        help="also time the subsample fits on a 2-worker Dask LocalCluster (logistic, N x 50)")
    parser.add_argument("--dask-only", action="store_true", help="run only the Dask section")
    parser.add_argument("--dask-n", type=int, default=1_000_000, help="rows of the Dask problem")
    parser.add_argument("--dask-repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if args.dask_only:
        args.dask, args.tasks, args.skip_large = True, [], True
    progress = Progress(enabled=not args.quiet)
    warnings.simplefilter("ignore", FutureWarning)
    all_rows, summary = [], []
    start = time.perf_counter()
    with threadpool_limits(limits=args.threads):
        for task in args.tasks:
            ds = _datasets(task, args.ridge_n)
            rows = E.evaluate(task, ds, E.methods(task), args.splits, progress=progress)
            all_rows += rows
            s = E.summarise(rows)
            summary += s
            print(f"\n=== {task}: test {E.METRIC[task]} and fit time over {args.splits} random 75/25 splits "
                  f"(CV = {E.CV_METHOD[task]}) ===\n")
            print(E.table(s))
            sys.stdout.flush()
        large = None
        if not args.skip_large:
            large = large_ridge(args.large_n, 100, args.large_repeats, progress)
            print(f"\n=== ridge, N = {args.large_n}, d = 100 (median of {args.large_repeats} fits) ===\n")
            print(format_table(large))
    if args.dask:
        rows, m, size = dask_speedup(args.dask_n, 50, args.dask_repeats, progress)
        print(f"\n=== logistic, N = {args.dask_n}, d = 50: {m} subsample fits of {size} rows, "
              f"one process vs joblib's dask backend on a 2-worker LocalCluster "
              f"(median of {args.dask_repeats}) ===\n")
        print(format_table(rows))
    if args.csv:
        write_csv(all_rows, args.csv)

    if not args.tasks:
        print(f"\ntotal {time.perf_counter() - start:.0f}s")
        return 0
    print("\n=== targets ===")
    for task in args.tasks:
        if task != "ridge":
            print("\n".join(glm_target(summary, task)))
    if "ridge" in args.tasks:
        large_names = [d for d in dict.fromkeys(r["dataset"] for r in summary if r["task"] == "ridge")
                       if d.startswith(f"synthetic {args.ridge_n}x")]
        print(f"  ridge at N = {args.ridge_n} (train {int(args.ridge_n * 0.75)}):")
        print("\n".join(ridge_target(summary, large_names)))
    if large is not None:
        for r in large[1:]:
            ratio = r["time / LinearRegression"]
            print(f"  ridge 10^6 x 100 {r['method']:10s}: {ratio:.2f}x LinearRegression (target <= 3x): "
                  f"{'MET' if ratio <= 3 else 'MISSED'}")
    print(f"\ntotal {time.perf_counter() - start:.0f}s, {args.splits} splits, {args.threads} thread(s) per fit")
    return 0


if __name__ == "__main__":  # the guard also keeps Dask's worker processes from re-running main
    sys.exit(main())
