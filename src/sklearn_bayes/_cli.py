"""The command line of sklearn_bayes: ``python -m sklearn_bayes {demo,reproduce} ...``.

``demo`` runs every estimator against its natural competitors on real data, prints one
results table and writes figures and a CSV to ``--output``.  ``reproduce NAME`` re-runs one
of the papers' experiments (reduced scale unless ``--full``).
"""

import argparse
import importlib
import importlib.util
import os
import sys
import textwrap
import time
from pathlib import Path

from sklearn_bayes.experiments import (
    DEMO_DESCRIPTIONS,
    DEMOS,
    OPTIONAL_PACKAGES,
    REPRODUCTION_DESCRIPTIONS,
    REPRODUCTIONS,
)
from sklearn_bayes.experiments._progress import Progress
from sklearn_bayes.experiments._report import DEMO_COLUMNS, explain_metrics, explain_notes, format_table, write_csv

_INSTALL_HINT = (
    "Install the 'demo' extra:\n"
    '    python -m pip install ".[demo]"            # in a clone of the repository\n'
    '    python -m pip install "sklearn_bayes[demo]" # from a package index'
)


def _load(target):
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)


def _require(parts, command):
    """Exit with an install hint (not a traceback) when an optional package is missing."""
    missing = sorted({m for part in parts for m in OPTIONAL_PACKAGES.get(part, ())
                      if importlib.util.find_spec(m) is None})
    if missing:
        raise SystemExit(
            f"python -m sklearn_bayes {command} needs the optional package(s) {', '.join(missing)}.\n"
            + _INSTALL_HINT
        )


def _output_folder(path):
    """Create ``path`` (and its parents) or exit with a message naming it (not a traceback)."""
    out = Path(path)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = "it is a file" if out.exists() and not out.is_dir() else (exc.strerror or str(exc))
        raise SystemExit(f"cannot create output folder {str(out)!r}: {reason}; pass another folder with --output")
    return out


def _n_jobs(text):
    """argparse type of ``--n-jobs``: a positive integer, or -1 for every CPU (joblib's meaning)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1 and value != -1:
        raise argparse.ArgumentTypeError(f"must be a positive integer (or -1 for every CPU), got {value}")
    return value


def _cmd_demo(args):
    names = list(dict.fromkeys(args.only or DEMOS))  # a part named twice runs once
    unknown = sorted(set(names) - set(DEMOS))
    if unknown:
        raise SystemExit(f"unknown demo part(s) {unknown}; available: {sorted(DEMOS)}")
    _require(names, "demo")
    out = _output_folder(args.output)
    progress = Progress(enabled=not args.quiet)
    rows = []
    start = time.perf_counter()
    for name in names:
        progress.message(f"== demo: {name} ({DEMO_DESCRIPTIONS[name]})")
        part_start = time.perf_counter()
        part_rows = _load(DEMOS[name])(out, progress)
        rows.extend(part_rows)
        progress.message(f"   {name} done in {time.perf_counter() - part_start:.1f}s")
    print(format_table(rows, DEMO_COLUMNS))
    print("\nHow to read it (value = the metric of its row; fit_time_s = seconds per fit):")
    print("\n".join(explain_metrics(rows)))
    notes = explain_notes(rows)
    if notes:
        print("Methods and notes:")
        print("\n".join(notes))
    write_csv(rows, out / "demo_results.csv", DEMO_COLUMNS)
    figures = sorted(p.name for p in out.glob("*.png"))
    print(f"\n{len(rows)} results in {time.perf_counter() - start:.1f}s; "
          f"table and {len(figures)} figure(s) written to {out.resolve()}")
    return 0


def _cmd_reproduce(args):
    _require([args.name], "reproduce")
    out = _output_folder(Path(args.output) / args.name)
    func = _load(REPRODUCTIONS[args.name])
    func(out, full=args.full, n_jobs=args.n_jobs, progress=Progress(enabled=not args.quiet))
    print(f"outputs written to {out.resolve()}")
    return 0


def _listing(descriptions):
    width = max(map(len, descriptions))
    return "\n".join(f"  {name.ljust(width)}  {text}" for name, text in descriptions.items())


def build_parser():
    """Return the argument parser of ``python -m sklearn_bayes``."""
    def formatter(prog):
        return argparse.RawDescriptionHelpFormatter(prog, max_help_position=30)

    parser = argparse.ArgumentParser(
        prog="python -m sklearn_bayes",
        description="sklearn_bayes: Bayesian and privacy-preserving estimators for scikit-learn.",
        epilog="examples:\n"
               "  python -m sklearn_bayes demo                      # every estimator, about 45 s\n"
               "  python -m sklearn_bayes demo --only count_sketch  # one part\n"
               "  python -m sklearn_bayes reproduce sketch          # a paper's experiment, reduced scale\n\n"
               "Run 'python -m sklearn_bayes COMMAND --help' for a command's options.",
        formatter_class=formatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser(
        "demo", help="run every estimator against its competitors on real data",
        description=textwrap.fill(
            "Run every estimator against its natural competitors on real data: prints one results table (with "
            "what each metric means) and writes demo_results.csv and one figure per part to --output. Needs "
            "the 'demo' extra (python -m pip install \".[demo]\").", 100),
        epilog="parts:\n" + _listing(DEMO_DESCRIPTIONS), formatter_class=formatter,
    )
    demo.add_argument("--output", default="sklearn_bayes_demo", help="output folder (default: %(default)s)")
    demo.add_argument("--only", nargs="+", metavar="PART", help="run only these parts (listed below)")
    demo.add_argument("--quiet", action="store_true", help="no progress output")
    demo.set_defaults(func=_cmd_demo)

    rep = sub.add_parser(
        "reproduce", help="re-run one of the papers' experiments",
        description=textwrap.fill(
            "Re-run one of the papers' experiments at reduced scale (or the paper's scale with --full): prints "
            "its tables and writes figures and CSV files to --output/NAME. Needs the 'demo' extra.", 100),
        epilog="experiments:\n" + _listing(REPRODUCTION_DESCRIPTIONS), formatter_class=formatter,
    )
    rep.add_argument("name", choices=sorted(REPRODUCTIONS), metavar="NAME", help="which experiment (listed below)")
    rep.add_argument("--full", action="store_true", help="the paper's full scale (slow: minutes to hours)")
    rep.add_argument("--n-jobs", type=_n_jobs, default=os.cpu_count() or 1,
                     help="parallel workers, a positive integer or -1 for every CPU (joblib; default: the number "
                          "of CPUs, %(default)s)")
    rep.add_argument("--output", default="sklearn_bayes_results", help="output folder (default: %(default)s)")
    rep.add_argument("--quiet", action="store_true", help="no progress output")
    rep.set_defaults(func=_cmd_reproduce)
    return parser


def _version():
    from sklearn_bayes import __version__

    return __version__


def main(argv=None):
    """Entry point of ``python -m sklearn_bayes``."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # name the command's options, not the top level's (``demo --bogus``)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        sub.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    os.environ.setdefault("MPLBACKEND", "Agg")  # figures go to files; no display needed
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
