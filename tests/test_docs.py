"""The documentation builds without warnings (sphinx -W), examples included."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "doc"


@pytest.mark.slow
def test_documentation_builds_without_warnings(tmp_path):
    pytest.importorskip("sphinx_gallery")
    env = dict(os.environ, MPLBACKEND="Agg")
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
           "-d", str(tmp_path / "doctrees"), str(DOC), str(tmp_path / "html")]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=DOC)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
    assert (tmp_path / "html" / "api.html").exists()
    assert (tmp_path / "html" / "auto_examples" / "index.html").exists()
