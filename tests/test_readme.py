"""The README's usage snippets run as written."""

import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_a_snippet_per_estimator_family():
    assert len(SNIPPETS) >= 4


@pytest.mark.parametrize("code", SNIPPETS, ids=[f"snippet{i}" for i in range(len(SNIPPETS))])
def test_readme_snippet_runs(code, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    assert capsys.readouterr().out.strip()


def _bash_commands(text):
    return [c.strip() for c in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_readme_test_commands_and_ci_agree():
    """CI runs exactly the README's (second) Quick-start command; the README says how long the suite
    takes and gives the everyday subset without the ``slow`` tests (a marker pytest knows)."""
    text = README.read_text()
    commands = _bash_commands(text)
    full = 'python -m pip install -e ".[test]" && python -m pytest -n auto'
    assert commands[:2] == ['python -m pip install ".[demo]" && python -m sklearn_bayes demo', full]
    ci = (README.parent / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == full
    assert 'python -m pytest -n auto -m "not slow"' in commands
    assert re.search(r"suite takes about \d+ minutes on 2 (idle )?cores", text)  # says how long it takes
    tomllib = pytest.importorskip("tomllib")
    ini = tomllib.loads((README.parent / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert any(m.startswith("slow:") for m in ini["markers"])
    assert "--strict-markers" in ini["addopts"]
