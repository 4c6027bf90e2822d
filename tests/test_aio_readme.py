"""The README's asyncio example runs as printed: the retry queue delivers every webhook."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def retry_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## asyncio\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    return next(b for b in blocks if "async def worker" in b)


def test_readme_retry_queue_example(capsys):
    if not README.is_file():
        pytest.skip("not a source checkout")
    code = retry_example()
    exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
    sent, given_up = map(int, re.findall(r"(\d+) sent, (\d+) given up", capsys.readouterr().out)[0])
    assert sent + given_up == 100 and sent > 50
