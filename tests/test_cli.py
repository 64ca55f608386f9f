"""The command line: argument handling, progress, tables, and the demo end to end."""

import io
import os
import subprocess
import sys

import pytest

from sklearn_bayes._cli import build_parser, main
from sklearn_bayes.experiments import DEMOS, REPRODUCTIONS
from sklearn_bayes.experiments._progress import Progress
from sklearn_bayes.experiments._report import DEMO_COLUMNS, format_table, write_csv


def test_registries_point_to_callables():
    import importlib

    for target in [*DEMOS.values(), *REPRODUCTIONS.values()]:
        module, func = target.split(":")
        assert callable(getattr(importlib.import_module(module), func)), target


def test_parser_defaults():
    args = build_parser().parse_args(["demo"])
    assert args.output == "sklearn_bayes_demo" and args.only is None


def test_unknown_demo_part_is_an_error(tmp_path):
    with pytest.raises(SystemExit, match="unknown demo part"):
        main(["demo", "--output", str(tmp_path), "--only", "no_such_part", "--quiet"])


def test_progress_draws_and_counts():
    out = io.StringIO()
    items = list(Progress(stream=out, min_interval=0).iter(range(5), "work"))
    assert items == list(range(5))
    text = out.getvalue()
    assert "work" in text and "5/5" in text and text.endswith("\n")
    silent = io.StringIO()
    assert list(Progress(enabled=False, stream=silent).iter([1, 2], "x")) == [1, 2]
    assert silent.getvalue() == ""


def test_format_table_and_csv(tmp_path):
    rows = [{"task": "t", "dataset": "d", "method": "m", "metric": "mse", "value": 0.123456,
             "fit_time_s": 1.5e-4, "note": ""}]
    text = format_table(rows, DEMO_COLUMNS)
    assert "0.1235" in text and "1.500e-04" in text
    write_csv(rows, tmp_path / "r.csv", DEMO_COLUMNS)
    assert (tmp_path / "r.csv").read_text().splitlines()[0] == ",".join(DEMO_COLUMNS)


@pytest.mark.slow
def test_demo_end_to_end(tmp_path):
    """`python -m sklearn_bayes demo` prints the table and writes figures for every part."""
    pytest.importorskip("matplotlib")
    env = dict(os.environ, MPLBACKEND="Agg")
    out = tmp_path / "demo"
    proc = subprocess.run([sys.executable, "-m", "sklearn_bayes", "demo", "--output", str(out)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "method" in proc.stdout and "fit_time_s" in proc.stdout
    assert (out / "demo_results.csv").exists()
    for name in DEMOS:
        assert f"== demo: {name}" in proc.stderr
    assert len(list(out.glob("*.png"))) >= len(DEMOS)
