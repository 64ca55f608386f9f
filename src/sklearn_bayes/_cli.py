"""The ``python -m sklearn_bayes`` command line.

Commands
--------
``demo``
    Runs every available estimator against its natural competitors on real
    data, prints one results table and writes figures to ``--output``.
``reproduce NAME``
    Re-runs one of the papers' experiments (reduced scale unless ``--full``).
"""

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

from .experiments import DEMOS, REPRODUCTIONS
from .experiments._progress import Progress
from .experiments._report import DEMO_COLUMNS, format_table, write_csv


def _load(target):
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)


def _cmd_demo(args):
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    names = args.only or list(DEMOS)
    unknown = sorted(set(names) - set(DEMOS))
    if unknown:
        raise SystemExit(f"unknown demo part(s) {unknown}; available: {sorted(DEMOS)}")
    progress = Progress(enabled=not args.quiet)
    rows = []
    start = time.perf_counter()
    for name in names:
        progress.message(f"== demo: {name}")
        part_start = time.perf_counter()
        part_rows = _load(DEMOS[name])(out, progress)
        rows.extend(part_rows)
        progress.message(f"   {name} done in {time.perf_counter() - part_start:.1f}s")
    print(format_table(rows, DEMO_COLUMNS))
    write_csv(rows, out / "demo_results.csv", DEMO_COLUMNS)
    figures = sorted(p.name for p in out.glob("*.png"))
    print(f"\n{len(rows)} results in {time.perf_counter() - start:.1f}s; "
          f"table and {len(figures)} figure(s) written to {out.resolve()}")
    return 0


def _cmd_reproduce(args):
    out = Path(args.output) / args.name
    out.mkdir(parents=True, exist_ok=True)
    func = _load(REPRODUCTIONS[args.name])
    func(out, full=args.full, n_jobs=args.n_jobs, progress=Progress(enabled=not args.quiet))
    print(f"outputs written to {out.resolve()}")
    return 0


def build_parser():
    """Return the argument parser of ``python -m sklearn_bayes``."""
    parser = argparse.ArgumentParser(prog="python -m sklearn_bayes", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="run every estimator against its competitors on real data")
    demo.add_argument("--output", default="sklearn_bayes_demo", help="output folder (default: %(default)s)")
    demo.add_argument("--only", nargs="+", metavar="PART", help=f"run only these parts of {sorted(DEMOS)}")
    demo.add_argument("--quiet", action="store_true", help="no progress output")
    demo.set_defaults(func=_cmd_demo)

    rep = sub.add_parser("reproduce", help="re-run a paper experiment")
    rep.add_argument("name", choices=sorted(REPRODUCTIONS), help="which experiment")
    rep.add_argument("--full", action="store_true", help="the paper's full scale (slow)")
    rep.add_argument("--n-jobs", type=int, default=os.cpu_count() or 1, help="parallel workers (joblib)")
    rep.add_argument("--output", default="sklearn_bayes_results", help="output folder (default: %(default)s)")
    rep.add_argument("--quiet", action="store_true", help="no progress output")
    rep.set_defaults(func=_cmd_reproduce)
    return parser


def main(argv=None):
    """Entry point of ``python -m sklearn_bayes``."""
    args = build_parser().parse_args(argv)
    os.environ.setdefault("MPLBACKEND", "Agg")  # figures go to files; no display needed
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
