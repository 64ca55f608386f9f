"""Review HNR, F7: a public docstring's Examples run when copied into a fresh session (PrivacyLedger's lacked
its import line: 9 of its 10 lines failed outside the module, while ``--doctest-modules`` ran them in the
module's namespace and passed)."""

import doctest
import inspect
import warnings

import pytest

import sklearn_bayes
import sklearn_bayes.privacy


def _public():
    names = sorted(set(sklearn_bayes.__all__) | set(sklearn_bayes.privacy.__all__))
    for name in names:
        obj = getattr(sklearn_bayes, name, None) or getattr(sklearn_bayes.privacy, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            yield name, obj


@pytest.mark.parametrize("name, obj", list(_public()), ids=lambda v: v if isinstance(v, str) else "")
def test_examples_run_in_a_fresh_namespace(name, obj):
    tests = [t for t in doctest.DocTestFinder(recurse=False).find(obj, name, globs={}) if t.examples]
    if not tests:
        pytest.skip(f"{name} has no Examples")
    for test in tests:
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runner.run(test)
        assert runner.summarize(verbose=False).failed == 0, f"{name}: an example fails outside the module"


def test_the_ledger_is_among_them():
    assert "PrivacyLedger" in dict(_public())


def test_install_page_lists_every_reproduction():
    """F11: doc/install.rst omitted ``reproduce sketch-transition``."""
    from pathlib import Path

    from sklearn_bayes.experiments import REPRODUCTIONS

    text = (Path(__file__).resolve().parents[1] / "doc" / "install.rst").read_text(encoding="utf-8")
    assert [name for name in REPRODUCTIONS if f"``{name}``" not in text] == []
    assert "--version" in text
