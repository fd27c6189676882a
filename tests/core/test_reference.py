"""The plugin author's reference is generated from the code and must match it."""

from __future__ import annotations

from pathlib import Path

from lits.plugin_host import hookspecs
from lits.reference import render

PAGE = Path(__file__).resolve().parents[2] / "docs" / "plugin-reference.md"


def test_the_reference_page_matches_the_code():
    assert PAGE.read_text() == render(), "regenerate it: python -m lits.reference > docs/plugin-reference.md"


def test_the_reference_lists_every_hook_with_its_arguments():
    text = render()
    for name in (n for n in dir(hookspecs) if n.startswith("register_")):
        assert f"| `{name}` | `(register: Callable[..., Any]) -> None` |" in text


def test_the_reference_gives_every_search_setting_with_its_default():
    from lits.agents.config import MCTSConfig

    text = render()
    for name, field in MCTSConfig.model_fields.items():
        assert f"| `{name}` | `{field.default!r}` |" in text
