"""The README's and the docs' Python examples run as written: each page's blocks in order, as one script, in a
fresh interpreter (pages register components), in an empty folder."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    "README.md",
    "docs/comparing-methods.md",
    "docs/continuation.md",
    "docs/models.md",
    "docs/python-api.md",
    "docs/plugins.md",
    "docs/reasoning-formulations.md",
    "docs/memory-and-attempts.md",
    "docs/self-consistency.md",
    "docs/sibling-aware-expansion.md",
    "docs/writing-a-domain-plugin.md",
    "docs/writing-a-search-algorithm.md",
]


def python_blocks(text: str) -> list[str]:
    return [textwrap.dedent(block) for block in re.findall(r"```python\n(.*?)```", text, flags=re.S)]


def test_every_page_with_python_is_listed() -> None:
    pages = [
        p
        for p in ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
        if python_blocks((ROOT / p).read_text(encoding="utf-8"))
    ]
    assert sorted(pages) == sorted(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_the_pages_python_runs_as_written(page: str, tmp_path: Path) -> None:
    blocks = python_blocks((ROOT / page).read_text(encoding="utf-8"))
    script = "\n\n".join(f"# --- block {i + 1}\n{block}" for i, block in enumerate(blocks))
    (tmp_path / "page.py").write_text(script, encoding="utf-8")
    done = subprocess.run([sys.executable, "page.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
