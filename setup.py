"""Build dq_core: Cython cores from src/ into dq_core._<name>.

DQ_CORE_NO_EXTENSIONS (any non-empty value) builds pure Python, loudly.
Otherwise a compile failure fails the build: never a silent slow install.
DQ_CORE_DEBUG=1 compiles with bounds checks on.
"""

import os
import sys
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).parent
NO_EXTENSIONS = bool(os.environ.get("DQ_CORE_NO_EXTENSIONS"))
DEBUG = bool(os.environ.get("DQ_CORE_DEBUG"))


def extensions():
    if NO_EXTENSIONS:
        print(
            "*" * 72 + "\n"
            "DQ_CORE_NO_EXTENSIONS is set: building dq_core as PURE PYTHON.\n"
            "The compiled cores are skipped; everything runs several times slower.\n"
            + "*" * 72,
            file=sys.stderr,
        )
        return []
    from Cython.Build import cythonize

    directives = {}
    if DEBUG:
        directives.update(boundscheck=True, wraparound=True)
    modules = [
        Extension(f"dq_core.{pyx.stem}", [f"src/{pyx.name}"])
        for pyx in sorted((HERE / "src").glob("*.pyx"))
    ]
    return cythonize(modules, compiler_directives=directives, language_level=3)


setup(ext_modules=extensions())
