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


# review HNR, F4 and F12: no traceback for a bad output folder or --n-jobs 0; --version; duplicates run once

def _run(*argv, cwd=None):
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-m", "sklearn_bayes", *argv], capture_output=True, text=True,
                          env=env, timeout=300, cwd=cwd)


@pytest.mark.parametrize("command", [["demo", "--only", "count_sketch"], ["reproduce", "sketch"]])
def test_an_output_folder_that_is_a_file_is_a_clean_error(tmp_path, command):
    target = tmp_path / "a_file"
    target.write_text("not a folder")
    proc = _run(*command, "--output", str(target), "--quiet")
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "cannot create output folder" in proc.stderr and str(target) in proc.stderr
    assert target.read_text() == "not a folder"


def test_an_output_folder_that_cannot_be_created_is_a_clean_error(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    with pytest.raises(SystemExit, match="cannot create output folder"):
        main(["demo", "--only", "count_sketch", "--output", str(blocker / "sub"), "--quiet"])


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_n_jobs_must_be_positive_or_minus_one(value, capsys):
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["reproduce", "sketch", "--n-jobs", value])
    assert info.value.code == 2
    assert "--n-jobs" in capsys.readouterr().err
    assert build_parser().parse_args(["reproduce", "sketch", "--n-jobs", "-1"]).n_jobs == -1
    assert build_parser().parse_args(["reproduce", "sketch", "--n-jobs", "3"]).n_jobs == 3


def test_n_jobs_zero_from_the_shell_has_no_traceback():
    proc = _run("reproduce", "sketch", "--n-jobs", "0")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "--n-jobs" in proc.stderr


def test_version(capsys):
    from sklearn_bayes import __version__

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_an_unknown_option_names_the_command(capsys):
    with pytest.raises(SystemExit) as info:
        main(["demo", "--bogus"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "python -m sklearn_bayes demo" in err and "--bogus" in err


def test_a_part_named_twice_runs_once(monkeypatch, tmp_path):
    import sklearn_bayes._cli as cli

    calls = []
    monkeypatch.setattr(cli, "_load", lambda target: lambda out, progress: calls.append(target) or [])
    monkeypatch.setattr(cli, "_require", lambda parts, command: None)
    assert main(["demo", "--only", "count_sketch", "count_sketch", "--output", str(tmp_path), "--quiet"]) == 0
    assert calls == [DEMOS["count_sketch"]]


def test_benchmark_scripts_answer_help_without_running():
    """bench_subsampled_prior_cfr_cps1985.py ran the benchmark on --help (no argparse)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "benchmarks"
    for script in sorted(root.glob("bench_*.py")):
        proc = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, (script.name, proc.stderr[-2000:])
        assert proc.stdout.startswith("usage:"), script.name
