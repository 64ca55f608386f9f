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


def test_numbers_have_one_format():
    from sklearn_bayes.experiments._report import _fmt

    assert [_fmt(v) for v in (18641.486, 24.6134, 0.0763, -0.4133, 4, 1.5e-4, float("nan"))] == [
        "18,641", "24.61", "0.07630", "-0.4133", "4", "0.0001500", "-"]


def test_every_demo_metric_is_explained(tmp_path):
    from sklearn_bayes.experiments._report import METRIC_HELP, explain_metrics

    metrics = ["TV to truth", "slope", "n flagged outliers", "test MSE", "MSE", "error %", "deviance",
               "mean relative error, eps=0.1"]
    lines = explain_metrics([{"metric": m} for m in metrics])
    assert len(lines) == len(METRIC_HELP) == len(metrics)


def test_progress_in_a_log_file_has_no_carriage_returns_or_nan():
    out = io.StringIO()  # not a terminal
    list(Progress(stream=out, min_interval=0).iter(range(3), "work"))
    text = out.getvalue()
    assert "\r" not in text and "nan" not in text and text.count("\n") == 1 and "3/3" in text


def test_missing_optional_package_gives_an_install_hint(monkeypatch, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    with pytest.raises(SystemExit, match=r'matplotlib(.|\n)*python -m pip install "\.\[demo\]"'):
        main(["demo", "--output", str(tmp_path), "--only", "count_sketch", "--quiet"])
    assert not (tmp_path / "demo_results.csv").exists()


def test_help_describes_every_part_and_experiment(capsys):
    for argv in (["demo", "--help"], ["reproduce", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        text = capsys.readouterr().out
        assert "``" not in text
        names = DEMOS if argv[0] == "demo" else REPRODUCTIONS
        assert all(f"  {name}  " in text or f"  {name} " in text for name in names)


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
    assert "0.1235" in text and "0.0001500" in text
    write_csv(rows, tmp_path / "r.csv", DEMO_COLUMNS)
    assert (tmp_path / "r.csv").read_text().splitlines()[0] == ",".join(DEMO_COLUMNS)


@pytest.mark.slow
def test_demo_end_to_end(tmp_path):
    """`python -m sklearn_bayes demo` prints the table and writes figures for every part, and
    emits no warning (it printed 43 SeededNoiseWarnings about itself at 8d8c494)."""
    pytest.importorskip("matplotlib")
    env = dict(os.environ, MPLBACKEND="Agg")
    out = tmp_path / "demo"
    proc = subprocess.run([sys.executable, "-W", "always", "-m", "sklearn_bayes", "demo", "--output", str(out)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "method" in proc.stdout and "fit_time_s" in proc.stdout
    assert (out / "demo_results.csv").exists()
    for name in DEMOS:
        assert f"== demo: {name}" in proc.stderr
    assert len(list(out.glob("*.png"))) >= len(DEMOS)
    assert "Warning" not in proc.stderr, proc.stderr[-3000:]
