"""The ``lits`` commands a docs page shows in its ``bash`` blocks, so tests can run them as written."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def page_commands(page: str, section: str | None = None) -> list[tuple[str, list[str]]]:
    """Each ``lits`` command in a section's bash blocks (continuation lines joined, a trailing comment cut) with
    the output lines shown under it (its ``#  `` lines, a trailing parenthesis cut).  ``section`` is a heading's
    text (any level from ##); None is the page's opening, before its first section."""
    text = (DOCS / page).read_text(encoding="utf-8")
    if section is not None:
        text = re.split(rf"^##+ {re.escape(section)}\n", text, maxsplit=1, flags=re.M)[1]
    text = re.split(r"^##+ ", text, maxsplit=1, flags=re.M)[0]  # to the next heading (a bash comment has one #)
    steps: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if line.startswith("#  ") and steps:
                steps[-1][1].append(line[3:].split("  (")[0].strip())
            elif line.startswith("lits "):
                steps.append((" ".join(line.split(" #")[0].split()), []))
    return steps
