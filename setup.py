"""Build dq_core: Cython cores from src/ into dq_core._<name>.

DQ_CORE_NO_EXTENSIONS (any non-empty value) builds pure Python, loudly, and
leaves the marker file ``dq_core/PURE_BUILD`` in what it builds, so that
``import dq_core`` knows the pure install was chosen and does not warn.
Otherwise a compile failure fails the build: never a silent slow install.
DQ_CORE_DEBUG=1 compiles with bounds and wraparound checks and C asserts on
(the .pyx headers leave those two directives to this file, since a file
header would override the build's directives), and every compiler warning of
-Wall -Wextra an error.  Cython's C differs between the two (the directives),
so the mode the C in src/ was generated for is kept in ``src/.cython-mode``
and a build in the other mode (or with no record) regenerates it.
DQ_CORE_SANITIZE=1 compiles and links the cores with AddressSanitizer and
UndefinedBehaviorSanitizer (GCC or Clang; import them with libasan preloaded:
``.ci/run sanitize`` shows how); it combines with DQ_CORE_DEBUG.
"""

import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = Path(__file__).parent
NO_EXTENSIONS = bool(os.environ.get("DQ_CORE_NO_EXTENSIONS"))
DEBUG = bool(os.environ.get("DQ_CORE_DEBUG"))
SANITIZE = bool(os.environ.get("DQ_CORE_SANITIZE"))
PURE_MARKER = "PURE_BUILD"
CYTHON_MODE = HERE / "src" / ".cython-mode"
SHARED_UTILITY = "dq_core._cyutility"


def extensions():
    if NO_EXTENSIONS:
        print(
            "*" * 72 + "\n"
            "DQ_CORE_NO_EXTENSIONS is set: building dq_core as PURE PYTHON.\n"
            "The compiled cores are skipped; everything runs several times slower.\n" + "*" * 72,
            file=sys.stderr,
        )
        return []
    from Cython.Build import cythonize

    # freethreading_compatible: importing the cores leaves the GIL off on a
    # free-threaded CPython (3.14t, 3.15t); every compiled class runs each
    # method under a critical section on itself (a no-op with the GIL)
    directives = {"boundscheck": DEBUG, "wraparound": DEBUG, "freethreading_compatible": True}
    macros = [("DQ_CORE_DEBUG", "1")] if DEBUG else []
    if sys.platform == "win32":  # MSVC writes no debug info unless asked (/Zi)
        compile_args, link_args = [], []
    elif DEBUG:
        # every warning an error, so the compiler checks our C (src/include/);
        # tests/test_c_headers.py compiles each header alone with no exception
        compile_args, link_args = ["-UNDEBUG", "-Wall", "-Wextra", "-Werror"], []
        if sys.version_info >= (3, 15):
            # Cython's static PyTypeObject initialisers stop at the fields it
            # knows; 3.15 added one (_tp_iteritem), left zero as it should be
            compile_args.append("-Wno-missing-field-initializers")
    else:
        compile_args = ["-g0"]
        link_args = ["-s"] if sys.platform.startswith("linux") else []
    if SANITIZE and sys.platform != "win32":
        # out-of-bounds and use-after-free (ASan), and undefined behaviour
        # (UBSan, every report fatal), with symbols and frames for the reports
        sanitizers = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
        compile_args = [a for a in compile_args if a != "-g0"]
        compile_args += [*sanitizers, "-fno-omit-frame-pointer", "-g", "-O1"]
        link_args = [a for a in link_args if a != "-s"] + sanitizers
    modules = [
        Extension(
            f"dq_core.{pyx.stem}",
            [f"src/{pyx.name}"],
            define_macros=macros,
            # the C the cores include; dq_shortcuts.h: every reach past
            # CPython's public API, gated
            include_dirs=["src/include"],
            depends=[str(h.relative_to(HERE)) for h in sorted((HERE / "src/include").glob("*.h"))],
            extra_compile_args=compile_args,
            extra_link_args=link_args,
        )
        for pyx in sorted((HERE / "src").glob("*.pyx"))
    ]
    # Cython's utility code (the memoryview type, function objects, argument
    # parsing, ...) compiled once, into a module of its own that every core
    # imports, instead of into each core; cythonize writes its C
    modules.append(
        Extension(
            SHARED_UTILITY, ["src/_cyutility.c"], extra_compile_args=compile_args, extra_link_args=link_args
        )
    )
    # C generated for the other mode (a release build after a debug one,
    # or the reverse) must not be reused; a debug build always regenerates
    mode = "debug" if DEBUG else "release"
    recorded = CYTHON_MODE.read_text().strip() if CYTHON_MODE.exists() else None
    built = cythonize(
        modules,
        compiler_directives=directives,
        language_level=3,
        force=DEBUG or recorded != mode,
        include_path=["src"],
        shared_utility_qualified_name=SHARED_UTILITY,
    )
    try:
        CYTHON_MODE.write_text(mode + "\n")
    except OSError:  # a read-only tree: the next build regenerates again
        pass
    return built


class BuildExt(build_ext):
    """build_ext whose failure says how to get pure Python on purpose."""

    def run(self):
        try:
            super().run()
        except Exception as exc:
            print(
                "*" * 72 + "\n"
                f"dq_core: the compiled core failed to build ({exc}).\n"
                "Install a C compiler (and the Python headers), or set\n"
                "DQ_CORE_NO_EXTENSIONS=1 to install the pure-Python version on purpose\n"
                "(several times slower).\n" + "*" * 72,
                file=sys.stderr,
            )
            raise


class BuildPy(build_py):
    """build_py that marks a pure build as deliberate (dq_core/_compat.py reads the marker)."""

    def run(self):
        super().run()
        if NO_EXTENSIONS and not self.editable_mode:
            marker = Path(self.build_lib, "dq_core", PURE_MARKER)
            marker.write_text("built with DQ_CORE_NO_EXTENSIONS set: pure Python on purpose\n")

    def get_outputs(self, include_bytecode=True):
        outputs = super().get_outputs(include_bytecode)
        if NO_EXTENSIONS and not self.editable_mode:
            outputs.append(str(Path(self.build_lib, "dq_core", PURE_MARKER)))
        return outputs


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExt, "build_py": BuildPy})
