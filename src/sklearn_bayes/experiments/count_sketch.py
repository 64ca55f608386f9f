"""Section 4.6: the use-and-keep private Count Sketch (Algorithm 6) on a Zipf(1) stream.

*Differentially Private Frequency Sketches for Intermittent Queries on Large Data
Streams*: a stream of ``2^27`` draws from Zipf(1) on ``{1..2^29}``; ε ∈ {0.01, 0.05, 1},
d ∈ {3, 9, 15}, w = 5000, query sets of n_Q ∈ {1, 10^3, 10^4, 10^5, 10^6} items drawn
from the top-u items, u ∈ {50, 5000, 500000}; queries start after 5·10^5 arrivals and
are spread evenly so that every scenario queries 10^6 items; 20 repetitions with new
hashes, query sets and noise on the same stream.  Metric: cumulative mean relative
error ``|f̂ - f| / max(f, 1)`` over time (``max(f, 1)``: items of the top-u pool that
have not arrived yet have ``f = 0``; the paper does not say how it handled them).

The default (reduced) scale keeps the grids of ε, d and u, uses a ``2^21``-item stream,
10^4 queried items per scenario (n_Q ∈ {1, 10, 100, 10^3, 10^4}) starting after 7 813
arrivals (the paper's proportions) and 3 repetitions.  ``full=True`` is the paper's
scale.  The "top-u" pool is the ranks ``1..u`` (the u most probable items).  The noise
is the paper's continuous Laplace.

What the reduced scale can and cannot show (issue 18, measured): its best depth moves with ε
(d = 3 for ε <= 0.05, d = 15 at ε = 1) but not with n_Q.  The counts are 2^6 times smaller than
at 2^27 items while the cell noise d/ε is the same, so noise dominates every n_Q at ε <= 0.05.
Multiplying ε by 64 (the paper's noise-to-count ratio) does not bring the paper's transition
either: at 64·0.01 the best depth is 9 for n_Q <= 100 and 15 for n_Q >= 1000, and 15 at the
other two ε -- the transition also depends on the 10^6 queried items per scenario (10^4 here),
which is the cost that the reduced scale removes.  The paper's scale shows it:
:func:`reproduce_transition` runs the 45 full-scale scenarios of one ε in minutes (the whole
``full=True`` grid takes hours); at ε = 0.01 the best depth is 15 at n_Q = 10^6, 9 at 10^5 and
3 below -- the paper's transition, one decade of n_Q later (the user guide quotes the table).
"""

import time
from pathlib import Path

import numpy as np

from sklearn_bayes.experiments._report import DEMO_COLUMNS, format_table, write_csv

PAPER = dict(n=2**27, n_values=2**29, total_queries=10**6, start=5 * 10**5, n_q=(1, 10**3, 10**4, 10**5, 10**6), reps=20)
REDUCED = dict(n=2**21, n_values=2**29, total_queries=10**4, start=7813, n_q=(1, 10, 100, 10**3, 10**4), reps=3)
EPSILONS = (0.01, 0.05, 1.0)
DEPTHS = (3, 9, 15)
POOLS = (50, 5000, 500000)
WIDTH = 5000
N_CHECKPOINTS = 40


def simulate(stream, epsilon, depth, width, n_q, pool, total_queries, start, seed, noise="laplace"):
    """One scenario of Algorithm 6; returns the cumulative mean relative error at each query set.

    Returns
    -------
    times : ndarray (n_sets,)
        Stream position of each query set.
    cum_mre : ndarray (n_sets,)
        Mean of ``|f̂ - f| / max(f, 1)`` over all items queried up to that set.
    """
    from sklearn_bayes._fast import _hashing, _sketch
    from sklearn_bayes.privacy._core import sample_noise

    rng = np.random.default_rng(seed)
    n = stream.shape[0]
    n_sets = max(total_queries // n_q, 1)
    times = (start + (np.arange(1, n_sets + 1) * (n - start)) // n_sets).astype(np.int64)  # last set at the end
    seeds = _hashing.row_seeds(int(rng.integers(0, 2**63)), depth)
    table = np.zeros((depth, width), dtype=np.float64 if noise == "laplace" else np.int64)
    stamps = np.full(depth * width, -1, dtype=np.int64)
    exact = np.zeros(pool + 1, dtype=np.int64)
    if stream.dtype == np.int32 and (stream.size == 0 or stream.min() >= 0):
        keys_stream = stream.view(np.uint32)  # same keys as int64, half the memory
    else:
        keys_stream = np.ascontiguousarray(stream, dtype=np.int64).view(np.uint64)
    scale = depth / epsilon
    per_set_noise = min(depth * n_q, depth * width)
    batch = max(1, min(n_sets, 4_000_000 // per_set_noise))
    pos, err_sum, count = 0, 0.0, 0
    cum = np.empty(n_sets)
    for b0 in range(0, n_sets, batch):
        b1 = min(b0 + batch, n_sets)
        m = b1 - b0
        qkeys = rng.integers(1, pool + 1, size=m * n_q).astype(np.int64).view(np.uint64)
        offsets = np.arange(m + 1, dtype=np.int64) * n_q
        buf = sample_noise(rng, noise, scale, size=m * per_set_noise).astype(table.dtype)
        out = np.empty(m * n_q)
        truth = np.empty(m * n_q)
        pos, _ = _sketch.simulate_use_and_keep(table, seeds, True, keys_stream, times[b0:b1], qkeys, offsets, buf,
                                               stamps, b0, pos, out, exact, truth)
        rel = (np.abs(out - truth) / np.maximum(truth, 1.0)).reshape(m, n_q).sum(axis=1)
        sums = err_sum + np.cumsum(rel)
        counts = count + n_q * np.arange(1, m + 1)
        cum[b0:b1] = sums / counts
        err_sum, count = float(sums[-1]), int(counts[-1])
    return times, cum


def _at_checkpoints(times, cum, checkpoints):
    idx = np.searchsorted(times, checkpoints, side="right") - 1
    return np.where(idx >= 0, cum[np.maximum(idx, 0)], np.nan)


def _run_one(stream, cfg, eps, d, n_q, pool, rep, checkpoints):
    t0 = time.perf_counter()
    seed = np.random.SeedSequence([rep, int(eps * 1000), d, n_q, pool]).generate_state(1)[0]
    times, cum = simulate(stream, eps, d, WIDTH, n_q, pool, cfg["total_queries"], cfg["start"], int(seed))
    return {
        "epsilon": eps, "depth": d, "n_q": n_q, "u": pool, "rep": rep, "final_cum_mre": float(cum[-1]),
        "seconds": time.perf_counter() - t0, "curve": _at_checkpoints(times, cum, checkpoints),
    }


def reproduce(output_dir, full=False, n_jobs=1, progress=None):
    """Figures 4.3 / 4.4: cumulative mean relative error vs time over the ε, n_Q, d and u grids.

    The reduced scale takes well under a minute; one full-scale scenario (2^27 items,
    d = 15) takes ~10-15 s here after a ~15-25 s stream generation, so the full grid
    (2700 runs) takes hours: use ``n_jobs``.  Writes ``sketch_runs.csv`` (one row per
    scenario and repetition), ``sketch_summary.csv``, ``sketch_curves.csv``
    (mean curves), ``sketch_fig43.png`` (ε x n_Q panels, one curve per d, averaged over u)
    and ``sketch_fig44.png`` (ε x u panels, averaged over n_Q) into ``output_dir``.
    """
    from joblib import Parallel, delayed

    from sklearn_bayes.datasets import make_zipf_stream
    from sklearn_bayes.experiments._progress import Progress

    progress = progress or Progress(enabled=False)
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    cfg = PAPER if full else REDUCED
    t0 = time.perf_counter()
    progress.message(f"generating the Zipf(1) stream of {cfg['n']} items on {{1..{cfg['n_values']}}} ...")
    stream = make_zipf_stream(cfg["n"], alpha=1.0, n_values=cfg["n_values"], random_state=0,
                              dtype=np.int32 if full else np.int64)
    gen_s = time.perf_counter() - t0
    checkpoints = np.linspace(cfg["start"], cfg["n"], N_CHECKPOINTS + 1)[1:]
    grid = [(e, d, q, u, r) for r in range(cfg["reps"]) for e in EPSILONS for d in DEPTHS for q in cfg["n_q"]
            for u in POOLS]
    jobs = (delayed(_run_one)(stream, cfg, e, d, q, u, r, checkpoints) for e, d, q, u, r in grid)
    if n_jobs == 1:
        runs = [_run_one(stream, cfg, *g, checkpoints) for g in progress.iter(grid, "sketch scenarios")]
    else:
        runs = list(progress.iter(Parallel(n_jobs=n_jobs, return_as="generator")(jobs), "sketch scenarios",
                                  total=len(grid)))
    write_csv([{k: v for k, v in r.items() if k != "curve"} for r in runs], output_dir / "sketch_runs.csv")
    curves = _mean_curves(runs, checkpoints)
    write_csv(curves, output_dir / "sketch_curves.csv")
    _figures(runs, checkpoints, cfg, output_dir)
    table = _summary(runs)
    print(f"Section 4.6 {'(full scale)' if full else '(reduced scale; --full for the paper)'}: stream of "
          f"{cfg['n']} Zipf(1) draws on {{1..{cfg['n_values']}}} (generated in {gen_s:.1f} s), w = {WIDTH}, "
          f"{cfg['total_queries']} queried items per scenario, {cfg['reps']} repetitions, Laplace noise")
    print(format_table(table, ["epsilon", "n_q", "d=3", "d=9", "d=15", "best d"]))
    by_u = _summary(runs, col="u", col_vals=POOLS)
    print("\nthe same by size u of the query pool (averaged over n_Q):")
    print(format_table(by_u, ["epsilon", "u", "d=3", "d=9", "d=15", "best d"]))
    write_csv(table + by_u, output_dir / "sketch_summary.csv",
              ["epsilon", "n_q", "u", "d=3", "d=9", "d=15", "best d"])
    per = np.array([r["seconds"] for r in runs])
    print(f"\nfinal cumulative mean relative error, averaged over u and repetitions; "
          f"{len(runs)} runs, {per.mean():.2f} s per scenario (max {per.max():.2f} s)")
    return table


def reproduce_transition(output_dir, epsilon=0.01, reps=1, n_jobs=1, progress=None):
    """The paper's best-depth transition with n_Q at full scale, one ε (minutes, not hours).

    Figure 4.3's ε = 0.01 column is where the dissertation reads the transition ("d = 15, then
    d = 9 at n_Q = 10^4, then d = 3 as n_Q decreases").  It needs the paper's scale -- the
    ``2^27``-item stream and 10^6 queried items per scenario (the reduced scale cannot show it,
    see the module docstring) -- but not the whole grid: this runs the 45 scenarios (d x n_Q x
    u) of one ε with ``reps`` repetitions (the paper: 20) and prints the final cumulative mean
    relative error per (n_Q, d), averaged over u, with the best depth.  Writes
    ``sketch_transition_runs.csv`` and ``sketch_transition.csv``.

    Run it with ``python -m sklearn_bayes.experiments.count_sketch --transition [--epsilon E]
    [--reps R] [--n-jobs J] [--output DIR]``.
    """
    from joblib import Parallel, delayed

    from sklearn_bayes.datasets import make_zipf_stream
    from sklearn_bayes.experiments._progress import Progress

    progress = progress or Progress(enabled=False)
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    cfg = PAPER
    t0 = time.perf_counter()
    progress.message(f"generating the Zipf(1) stream of {cfg['n']} items on {{1..{cfg['n_values']}}} ...")
    stream = make_zipf_stream(cfg["n"], alpha=1.0, n_values=cfg["n_values"], random_state=0, dtype=np.int32)
    gen_s = time.perf_counter() - t0
    checkpoints = np.linspace(cfg["start"], cfg["n"], N_CHECKPOINTS + 1)[1:]
    grid = [(epsilon, d, q, u, r) for r in range(reps) for d in DEPTHS for q in cfg["n_q"] for u in POOLS]
    if n_jobs == 1:
        runs = [_run_one(stream, cfg, *g, checkpoints) for g in progress.iter(grid, "transition scenarios")]
    else:
        jobs = (delayed(_run_one)(stream, cfg, *g, checkpoints) for g in grid)
        runs = list(progress.iter(Parallel(n_jobs=n_jobs, return_as="generator")(jobs), "transition scenarios",
                                  total=len(grid)))
    write_csv([{k: v for k, v in r.items() if k != "curve"} for r in runs], output_dir / "sketch_transition_runs.csv")
    table = _summary(runs)
    write_csv(table, output_dir / "sketch_transition.csv", ["epsilon", "n_q", "d=3", "d=9", "d=15", "best d"])
    per = np.array([r["seconds"] for r in runs])
    print(f"Section 4.6 at full scale, epsilon = {epsilon}: stream of {cfg['n']} Zipf(1) draws (generated in "
          f"{gen_s:.1f} s), w = {WIDTH}, {cfg['total_queries']} queried items per scenario, {reps} repetition(s), "
          f"averaged over u")
    print(format_table(table, ["epsilon", "n_q", "d=3", "d=9", "d=15", "best d"]))
    print(f"\n{len(runs)} runs, {per.mean():.2f} s per scenario (max {per.max():.2f} s)")
    return table


def reproduce_transition_command(output_dir, full=False, n_jobs=1, progress=None):
    """``python -m sklearn_bayes reproduce sketch-transition [--full]``: :func:`reproduce_transition`
    at ε = 0.01 with one repetition (about 6 minutes on one core), or the paper's 20 with ``--full``."""
    return reproduce_transition(output_dir, epsilon=0.01, reps=20 if full else 1, n_jobs=n_jobs, progress=progress)


def _summary(runs, col="n_q", col_vals=None):
    rows = []
    eps_vals = sorted({r["epsilon"] for r in runs})
    col_vals = sorted({r[col] for r in runs}) if col_vals is None else col_vals
    for e in eps_vals:
        for q in col_vals:
            row = {"epsilon": e, col: q}
            for d in DEPTHS:
                vals = [r["final_cum_mre"] for r in runs if r["epsilon"] == e and r[col] == q and r["depth"] == d]
                row[f"d={d}"] = float(np.mean(vals))
            row["best d"] = min(DEPTHS, key=lambda d: row[f"d={d}"])
            rows.append(row)
    return rows


def _nanmean(curves):
    curves = np.asarray(curves, dtype=float)
    with np.errstate(invalid="ignore"):
        counts = np.sum(~np.isnan(curves), axis=0)
        return np.where(counts > 0, np.nansum(curves, axis=0) / np.maximum(counts, 1), np.nan)


def _mean_curves(runs, checkpoints):
    rows = []
    keys = sorted({(r["epsilon"], r["depth"], r["n_q"], r["u"]) for r in runs})
    for e, d, q, u in keys:
        curve = _nanmean([r["curve"] for r in runs if (r["epsilon"], r["depth"], r["n_q"], r["u"]) == (e, d, q, u)])
        for t, v in zip(checkpoints, curve):
            rows.append({"epsilon": e, "depth": d, "n_q": q, "u": u, "time": int(t), "cum_mre": float(v)})
    return rows


def _figures(runs, checkpoints, cfg, output_dir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for name, col_key, col_vals in (("sketch_fig43.png", "n_q", cfg["n_q"]), ("sketch_fig44.png", "u", POOLS)):
        fig, axes = plt.subplots(len(col_vals), len(EPSILONS), figsize=(3.2 * len(EPSILONS), 2.0 * len(col_vals)),
                                 sharex=True, squeeze=False)
        for i, cv in enumerate(col_vals):
            for j, e in enumerate(EPSILONS):
                ax = axes[i, j]
                for d in DEPTHS:
                    sel = [r["curve"] for r in runs if r["epsilon"] == e and r["depth"] == d and r[col_key] == cv]
                    if sel:
                        ax.plot(checkpoints, _nanmean(sel), label=f"d={d}", marker="o", markersize=2)
                ax.set_yscale("log")
                if i == 0:
                    ax.set_title(f"ε = {e}")
                if j == 0:
                    ax.set_ylabel(f"{'n_Q' if col_key == 'n_q' else 'u'} = {cv}")
                if i == len(col_vals) - 1:
                    ax.set_xlabel("stream position")
        axes[0, -1].legend(fontsize=7)
        fig.suptitle("cumulative mean relative error, use-and-keep Count Sketch (w = 5000)")
        fig.tight_layout()
        fig.savefig(output_dir / name, dpi=110)
        plt.close(fig)


# --------------------------------------------------------------------------------------
# demo
# --------------------------------------------------------------------------------------


#: Why the geometric-schedule mechanisms lose: said next to their (huge) errors in the demo table.
_MECHANISM_NOTE = {
    "use_and_keep": "",
    "use_and_forget": "; each use of a cell halves its budget: noise x2 per query set",
    "median_perturbation": "; each query set halves the budget: noise x2 per query set",
}


def _demo_generators(n_configs, reps, seed=0):
    """Independent, reproducible noise generators: ``[config][rep]``, spawned from one seed.

    Every (configuration, repetition) gets its own stream (``SeedSequence.spawn``), so no two
    sketches of the demo draw the same noise (reusing ``default_rng(rep)`` across the
    configurations replayed it, with one ``SeededNoiseWarning`` per replay).
    """
    children = np.random.SeedSequence(seed).spawn(n_configs * reps)
    return [[np.random.default_rng(children[c * reps + r]) for r in range(reps)] for c in range(n_configs)]


def demo(output_dir, progress=None):
    """Relative error vs ε of the four mechanisms on a Zipf(1) stream with intermittent queries (< 30 s)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sklearn_bayes.datasets import make_zipf_stream
    from sklearn_bayes.privacy import PrivateCountSketch

    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    stream = make_zipf_stream(200_000, alpha=1.0, n_values=10**6, random_state=0)
    chunks = np.array_split(stream, 20)
    pool = np.arange(1, 201)  # query the top-200 items after every chunk: 20 query sets
    epsilons = [0.1, 0.3, 1.0, 3.0, 10.0]
    mechanisms = ["use_and_keep", "use_and_forget", "median_perturbation"]
    rows, curves = [], {m: [] for m in mechanisms}
    grid = [(m, e) for m in mechanisms for e in epsilons]
    reps = 3
    generators = dict(zip(grid, _demo_generators(len(grid), reps)))  # reproducible demo, independent noise
    iterator = progress.iter(grid, "count sketch demo") if progress is not None else grid
    for mech, eps in iterator:
        t0 = time.perf_counter()
        errs = []
        for rep in range(reps):
            est = PrivateCountSketch(epsilon=eps, depth=5, mechanism=mech, decay=0.5,  # default width
                                     hash_seed=rep, random_state=generators[mech, eps][rep])
            counts = np.zeros(pool.max() + 1)
            for chunk in chunks:
                est.partial_fit(chunk)
                counts += np.bincount(chunk[chunk <= pool.max()], minlength=pool.max() + 1)
                answers = est.query(pool)
                errs.append(np.mean(np.abs(answers - counts[pool]) / np.maximum(counts[pool], 1)))
        value = float(np.mean(errs))
        curves[mech].append(value)
        rows.append(dict(task="private counting (20 query sets)", dataset="Zipf(1) stream, 2e5 items",
                         method=f"PrivateCountSketch[{mech}]", metric=f"mean relative error, eps={eps}", value=value,
                         fit_time_s=time.perf_counter() - t0,
                         note=f"spent eps={est.epsilon_spent_:.3g} of {eps}" + _MECHANISM_NOTE[mech]))
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for mech in mechanisms:
        ax.plot(epsilons, curves[mech], marker="o", label=mech)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ε (whole stream life)")
    ax.set_ylabel("mean relative error (top-200 items)")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.annotate("error = true count", (epsilons[-1], 1.0), xytext=(0, 3), textcoords="offset points",
                fontsize=7, color="grey", ha="right")
    ax.set_title(f"20 intermittent query sets, d = 5, w = {est.width} (default)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(output_dir / "count_sketch_demo.png", dpi=110)
    plt.close(fig)
    assert set(rows[0]) == set(DEMO_COLUMNS)
    return rows


if __name__ == "__main__":  # pragma: no cover - a command line for reproduce_transition
    import argparse

    from sklearn_bayes.experiments._progress import Progress

    parser = argparse.ArgumentParser(description="Section 4.6: the best-depth transition with n_Q at full scale")
    parser.add_argument("--transition", action="store_true", required=True)
    parser.add_argument("--epsilon", type=float, default=0.01)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--output", default="sklearn_bayes_results/sketch")
    args = parser.parse_args()
    reproduce_transition(args.output, epsilon=args.epsilon, reps=args.reps, n_jobs=args.n_jobs,
                         progress=Progress(enabled=True))
