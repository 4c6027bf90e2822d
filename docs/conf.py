"""Sphinx configuration: ``python -m sphinx -W -b html docs docs/_build/html``.

The API pages are generated from the docstrings of the pure-Python twins
(they carry the type annotations; the compiled cores have the same text), so
the site builds without a compiler and documents the checkout it sits in.
"""

from __future__ import annotations

import doctest
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["DQ_CORE_NO_EXTENSIONS"] = "1"  # before anything imports dq_core
sys.path[:0] = [str(HERE.parent), str(HERE / "_ext")]

from complexity import FOREIGN  # noqa: E402

import dq_core  # noqa: E402
from dq_core import aio  # noqa: E402
from dq_core._signature import STRIPPED  # noqa: E402

# At run time the pure twins' methods show no annotations, as the compiled
# ones cannot; these pages show the types, so they get them back here.
aio.PriorityQueue  # builds the asyncio classes, whose signatures are stripped too
for _f in STRIPPED:
    del _f.__signature__

project = "dq_core"
author = "dq_core developers"
copyright = "dq_core developers; Apache-2.0"
release = dq_core.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "complexity",
    "perfresults",
]
exclude_patterns = ["_build"]
templates_path: list[str] = []
html_theme = "furo"
html_title = f"dq_core {release}"
html_static_path = ["_static"]

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
# The public classes are assembled from a face and a core (dq_core._assemble),
# so most methods are inherited: document them, except those that come from
# the standard library's bases (queue.Queue, asyncio.Queue, MutableMapping,
# Executor), which the pages name instead.
autodoc_default_options = {
    "members": True,
    "inherited-members": True,
    "special-members": "__len__, __contains__, __iter__, __aiter__, __getitem__, __setitem__, __delitem__",
}
# the modules the cost tables leave out too; a method's own __module__ may
# also be the private _collections_abc
FOREIGN_MODULES = (*FOREIGN, "_collections_abc")


def _skip_foreign(app, what, name, obj, skip, options):  # type: ignore[no-untyped-def]
    target = obj.fget if isinstance(obj, property) else getattr(obj, "__func__", obj)
    if getattr(target, "__module__", None) in FOREIGN_MODULES:
        return True
    return None


def setup(app):  # type: ignore[no-untyped-def]
    app.connect("autodoc-skip-member", _skip_foreign)


# the examples run as doctests (-b doctest), with the public names in scope
doctest_global_setup = "from dq_core import *\nimport dq_core"
doctest_default_flags = doctest.ELLIPSIS | doctest.IGNORE_EXCEPTION_DETAIL | doctest.NORMALIZE_WHITESPACE
