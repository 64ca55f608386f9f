"""The README's first command in miniature: a regular (non-editable) install, run from the clone's root.

``python -m pip install ".[demo]" && python -m sklearn_bayes demo`` runs in the root of a clone.
``python -m`` puts the working directory first on ``sys.path``, so if the source package
were importable from the root it would shadow the installed one, whose compiled kernels
live only in site-packages (the src layout prevents that).  This test builds and installs
the package from a copy of the working tree into a separate folder, then runs the command
line from the repository root and checks that the installed copy, kernels included, is the
one that runs.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tracked_files():
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, check=False)
    if out.returncode != 0:  # not a git checkout (e.g. an unpacked sdist): copy the tree
        return None
    return [f for f in out.stdout.decode().split("\0") if f]


def test_no_importable_package_in_the_repository_root():
    assert not (ROOT / "sklearn_bayes").exists(), "the package must stay under src/ (see this module's docstring)"
    assert (ROOT / "src" / "sklearn_bayes" / "__init__.py").exists()


@pytest.mark.slow
def test_regular_install_runs_from_the_repository_root(tmp_path):
    pytest.importorskip("Cython")
    src = tmp_path / "src_copy"
    files = _tracked_files()
    if files is None:
        shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns("build", "*.so", "*.egg-info", "_build"))
    else:
        for f in files:
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            if (ROOT / f).is_file():
                shutil.copy2(ROOT / f, src / f)
    target = tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-cache-dir", "-q",
         "--target", str(target), str(src)],
        capture_output=True, text=True, timeout=900,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    env = dict(os.environ, PYTHONPATH=str(target), MPLBACKEND="Agg")
    probe = subprocess.run(
        [sys.executable, "-c", "import sklearn_bayes, sklearn_bayes._fast._mixture as m, sklearn_bayes._fast._ldp, "
         "sklearn_bayes._fast._sketch, sklearn_bayes._fast._hashing; print(sklearn_bayes.__file__); print(m.__file__)"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    for line in probe.stdout.split():
        assert Path(line).resolve().is_relative_to(target.resolve()), (line, "shadowed by the source tree")
    run = subprocess.run(
        [sys.executable, "-m", "sklearn_bayes", "demo", "--only", "count_sketch", "--quiet",
         "--output", str(tmp_path / "demo")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "demo" / "demo_results.csv").exists()


@pytest.mark.slow
def test_sdist_ships_every_source_test_doc_and_example_without_build_warnings(tmp_path):
    import tarfile

    files = _tracked_files()
    if files is None:
        pytest.skip("not a git checkout")
    proc = subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    warnings = [line for line in (proc.stdout + proc.stderr).splitlines()
                if line.lower().startswith("warning") and "no previously-included" not in line]
    assert not warnings, warnings
    (archive,) = tmp_path.glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        shipped = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
        pkg_info = tar.extractfile(next(m for m in tar.getmembers() if m.name.count("/") == 1
                                        and m.name.endswith("/PKG-INFO"))).read().decode()
    # the licence travels with the sources, and the metadata (which the wheel is built from) names it
    assert "LICENSE" in shipped
    assert "License-Expression: BSD-3-Clause" in pkg_info and "License-File: LICENSE" in pkg_info
    wanted = [f for f in files if f.startswith(("src/", "tests/", "doc/", "examples/", "benchmarks/"))
              and f.endswith((".py", ".pyx", ".pxd", ".rst", ".txt")) and (ROOT / f).exists()
              and "/_build/" not in f and not f.startswith(("doc/auto_examples/", "doc/generated/"))]
    missing = sorted(set(wanted) - shipped)
    assert not missing, missing


def test_every_package_of_the_test_extra_is_installed():
    """A missing test dependency must fail loudly, not turn into skipped tests (importorskip)."""
    import importlib.metadata
    import re
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    missing = []
    for requirement in extra:
        name = re.match(r"[A-Za-z0-9_.\-]+", requirement).group(0)
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    assert not missing, f"install the test extra: python -m pip install -e '.[test]' (missing {missing})"
