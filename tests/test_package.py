"""Package-level conventions: public names, docstrings, examples and user-guide coverage."""

from pathlib import Path

import pytest
from numpydoc.docscrape import ClassDoc

import sklearn_bayes
from sklearn_bayes.utils import all_estimators

ROOT = Path(__file__).resolve().parents[1]
ESTIMATORS = dict(all_estimators())


def test_public_names_importable_from_top_level():
    for name in sklearn_bayes.__all__:
        assert getattr(sklearn_bayes, name) is not None
    assert len(sklearn_bayes.__all__) == len(set(sklearn_bayes.__all__))


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_docstring_has_parameters_attributes_notes_examples(name):
    doc = ClassDoc(ESTIMATORS[name])
    params = {p.name for p in doc["Parameters"]}
    init_params = set(ESTIMATORS[name]._get_param_names())
    assert init_params <= params, f"undocumented parameters: {sorted(init_params - params)}"
    assert doc["Attributes"], "no Attributes section"
    for attr in doc["Attributes"]:
        assert attr.name.endswith("_"), f"fitted attribute {attr.name!r} must end with '_'"
    assert "".join(doc["Notes"]).strip(), "no Notes section (the maths goes there)"
    assert "".join(doc["Examples"]).strip(), "no Examples section"


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_each_estimator_has_an_example_and_a_user_guide_page(name):
    examples = [p for p in (ROOT / "examples").glob("plot_*.py") if name in p.read_text()]
    assert examples, f"no examples/plot_*.py uses {name}"
    pages = [p for p in (ROOT / "doc" / "user_guide").glob("*.rst") if name in p.read_text()]
    assert pages, f"no doc/user_guide page mentions {name}"


def test_license_file_is_the_declared_bsd_3_clause_and_is_packaged():
    """The package declares BSD-3-Clause: the LICENSE file exists, is that licence, and is listed in
    ``license-files`` (setuptools then ships it in the sdist and in the wheel's ``.dist-info/licenses``;
    the sdist itself is checked in ``test_install``)."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "BSD-3-Clause"
    assert "LICENSE" in project["license-files"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License")
    assert "Copyright (c) 2026, The sklearn_bayes developers" in text
    assert "Neither the name of the copyright holder nor the names of its" in text
