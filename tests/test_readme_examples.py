"""The README's examples run as printed: each ``pycon`` block is a doctest."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def pycon_blocks() -> list[str]:
    if not README.is_file():
        return []
    return re.findall(r"```pycon\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


@pytest.mark.skipif(not README.is_file(), reason="not a source checkout")
def test_readme_has_examples():
    assert len(pycon_blocks()) >= 5


def name(block: str) -> str:
    return re.findall(r"from dq_core import ([\w, ]+)", block)[0].replace(", ", "-")


@pytest.mark.parametrize("block", pycon_blocks(), ids=name)
def test_readme_example(block):
    parser = doctest.DocTestParser()
    test = parser.get_doctest(block, {"__name__": "__readme__"}, "README.md", "README.md", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out: list[str] = []
    runner.run(test, out=out.append)
    assert runner.failures == 0, "".join(out)
