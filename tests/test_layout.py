"""The package's layout holds: one family, one folder (see doc/user_guide/conventions.rst, "Layout").

Checked over the source, not by eye:

* ``privacy/`` and ``linear_model/`` hold their families as private sub-packages (a few flat
  modules at most);
* no module of ``src/`` is longer than 900 lines;
* no import cycle among the modules of ``src/``, function-level imports included (a package's
  ``__init__`` re-exporting its children is not a cycle);
* a family uses another family only through its face (the sub-package's ``__init__``) and
  only names without a leading underscore (the shared kernels ``_glm``, ``_fast``, ``utils`` and
  ``exceptions`` are below every family and may be used by all);
* ``experiments/`` (the papers' experiments and the demo) is held to the same rule as a family:
  the public API or a family's face, never a deep private module or an underscore name (its
  simulations need a few primitives the public API does not offer, such as the compiled
  simulation kernel of the sketch's paper-scale experiment);
* every private sub-package of a family has a mirrored test folder.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PKG = SRC / "sklearn_bayes"

FAMILIES = (
    "sklearn_bayes.privacy._core",
    "sklearn_bayes.privacy._sketch",
    "sklearn_bayes.privacy._ldp",
    "sklearn_bayes.privacy._linear",
    "sklearn_bayes.linear_model._subsampled_prior",
    "sklearn_bayes.linear_model._mixture",
)
SHARED = ("sklearn_bayes._glm", "sklearn_bayes._fast", "sklearn_bayes.utils", "sklearn_bayes.exceptions")
PUBLIC = {
    "sklearn_bayes", "sklearn_bayes.privacy", "sklearn_bayes.linear_model", "sklearn_bayes.datasets",
    "sklearn_bayes.exceptions", "sklearn_bayes.utils",
}
MIRROR = {
    "sklearn_bayes.privacy._core": "tests/privacy/core",
    "sklearn_bayes.privacy._sketch": "tests/privacy/sketch",
    "sklearn_bayes.privacy._ldp": "tests/privacy/ldp",
    "sklearn_bayes.privacy._linear": "tests/privacy/linear",
    "sklearn_bayes.linear_model._subsampled_prior": "tests/linear_model/subsampled_prior",
    "sklearn_bayes.linear_model._mixture": "tests/linear_model/mixture",
    "sklearn_bayes._glm": "tests/glm",
}


def _modules():
    mods = {}
    for path in PKG.rglob("*"):
        if path.suffix in (".py", ".pyx") and "__pycache__" not in path.parts:
            name = ".".join(path.relative_to(SRC).with_suffix("").parts)
            mods[name.removesuffix(".__init__")] = path
    return mods


MODULES = _modules()


def _imports(name, path):
    """(imported module, imported name or None) for every import in the module, at any depth."""
    if path.suffix != ".py":
        return []
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            out += [(base, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names]
    return out


def _family(module):
    for fam in FAMILIES + SHARED:
        if module == fam or module.startswith(fam + "."):
            return fam
    return module.rsplit(".", 1)[0] if module.count(".") > 1 else module


def test_families_are_sub_packages():
    for wing in ("privacy", "linear_model"):
        flat = [p.name for p in (PKG / wing).glob("*.py") if p.name != "__init__.py"]
        assert len(flat) <= 4, f"{wing}/ has {len(flat)} flat modules: {flat}"
    for fam in FAMILIES + ("sklearn_bayes._glm",):
        assert (SRC / fam.replace(".", "/") / "__init__.py").is_file(), fam


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_is_longer_than_900_lines(name):
    n = len(MODULES[name].read_text().splitlines())
    assert n <= 900, f"{MODULES[name].relative_to(ROOT)} has {n} lines"


def test_no_import_cycle():
    edges = {m: set() for m in MODULES}
    for m, path in MODULES.items():
        for base, name in _imports(m, path):
            for target in (base, f"{base}.{name}" if name else None):
                if target in MODULES and target != m and not m.startswith(target + "."):
                    edges[m].add(target)
    leaves = {m for m, p in MODULES.items() if p.name != "__init__.py"}
    state, cycles = {}, []

    def visit(u, stack):
        state[u] = 1
        stack.append(u)
        for v in sorted(edges[u] & leaves):
            if state.get(v) == 1:
                cycles.append(stack[stack.index(v):] + [v])
            elif v not in state:
                visit(v, stack)
        stack.pop()
        state[u] = 2

    for m in sorted(leaves):
        if m not in state:
            visit(m, [])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_families_meet_only_through_their_faces():
    """A family uses another family only through that family's face (its package ``__init__``)
    and only names without a leading underscore; ``experiments`` is held to the public API below."""
    bad = []
    for m, path in MODULES.items():
        own = _family(m)
        if m.startswith("sklearn_bayes.experiments"):
            continue
        for base, name in _imports(m, path):
            if not base.startswith("sklearn_bayes"):
                continue
            target = f"{base}.{name}" if name and f"{base}.{name}" in MODULES else base
            fam = _family(target)
            if fam == own or fam in SHARED or fam not in FAMILIES:
                continue
            if m == fam.rsplit(".", 1)[0]:  # the wing's public face re-exports its families
                continue
            through_face = target == fam and not (name or "").startswith("_")
            if not through_face:
                bad.append(f"{m} imports {target}{'.' + name if name and target == base else ''}")
    assert not bad, "\n".join(sorted(bad))


def test_experiments_use_the_public_api_or_family_faces():
    bad = []
    for m, path in MODULES.items():
        if not m.startswith("sklearn_bayes.experiments"):
            continue
        for base, name in _imports(m, path):
            if not base.startswith("sklearn_bayes") or base.startswith("sklearn_bayes.experiments"):
                continue
            target = f"{base}.{name}" if name and f"{base}.{name}" in MODULES else base
            fam = _family(target)
            ok = (base in PUBLIC and not (name or "").startswith("_")) or fam == "sklearn_bayes._fast" or (
                fam in FAMILIES and target == fam and not (name or "").startswith("_")
            )
            if not ok:
                bad.append(f"{m} imports {target}{'.' + name if name and target == base else ''}")
    assert not bad, "\n".join(sorted(set(bad)))


@pytest.mark.parametrize("package", sorted(MIRROR))
def test_every_family_has_a_mirrored_test_folder(package):
    folder = ROOT / MIRROR[package]
    assert folder.is_dir() and any(folder.glob("test_*.py")), MIRROR[package]
