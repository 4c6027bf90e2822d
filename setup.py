"""Build dq_core: Cython cores from src/ into dq_core._<name>.

DQ_CORE_NO_EXTENSIONS (any non-empty value) builds pure Python, loudly.
Otherwise a compile failure fails the build: never a silent slow install.
DQ_CORE_DEBUG=1 compiles with bounds and wraparound checks and C asserts on
(the .pyx headers leave those two directives to this file, since a file
header would override the build's directives); switching between a debug and
a release build needs ``build_ext --force``.
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

    directives = {"boundscheck": DEBUG, "wraparound": DEBUG}
    macros = [("DQ_CORE_DEBUG", "1")] if DEBUG else []
    if sys.platform == "win32":  # MSVC writes no debug info unless asked (/Zi)
        compile_args, link_args = [], []
    elif DEBUG:
        compile_args, link_args = ["-UNDEBUG"], []
    else:
        compile_args = ["-g0"]
        link_args = ["-s"] if sys.platform.startswith("linux") else []
    modules = [
        Extension(f"dq_core.{pyx.stem}", [f"src/{pyx.name}"], define_macros=macros,
                  extra_compile_args=compile_args, extra_link_args=link_args)
        for pyx in sorted((HERE / "src").glob("*.pyx"))
    ]
    return cythonize(modules, compiler_directives=directives, language_level=3, force=DEBUG)


setup(ext_modules=extensions())
