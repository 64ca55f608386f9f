"""Build the Cython kernels in ``src/sklearn_bayes/_fast``.

Every ``src/sklearn_bayes/_fast/*.pyx`` file becomes the extension module
``sklearn_bayes._fast.<name>``.  A kernel that cimports numpy's C samplers
(``numpy.random.c_distributions``) is linked against the static ``npyrandom``
library numpy ships for that purpose.  Metadata lives in ``pyproject.toml``.
"""

from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = Path(__file__).parent
FAST = HERE / "src" / "sklearn_bayes" / "_fast"
NPYRANDOM = str((Path(np.get_include()).parent.parent / "random" / "lib").resolve())


def _links_npyrandom(pyx):
    return "c_distributions" in pyx.read_text(encoding="utf-8")


extensions = [
    Extension(
        f"sklearn_bayes._fast.{pyx.stem}",
        [str(pyx.relative_to(HERE))],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=["-O3"],
        **({"library_dirs": [NPYRANDOM], "libraries": ["npyrandom"]} if _links_npyrandom(pyx) else {}),
    )
    for pyx in sorted(FAST.glob("*.pyx"))
]

setup(
    ext_modules=cythonize(
        extensions,
        language_level=3,
        compiler_directives={
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    ),
)
