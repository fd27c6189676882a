"""What we ship for others to copy -- the plugins, ``lits new``'s templates and the docs' examples -- imports LiTS
only through its public face: ``lits.api`` (``lits.structures`` for the seed API; ``lits.testing``, the
conformance kit, in tests), so core can move its rooms without breaking a plugin written from them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(lits(?:\.[\w.]+)?)[ \t]+import\b|import[ \t]+(lits(?:\.[\w.]+)?))", re.M)
PUBLIC = re.compile(r"lits(\.api|\.structures(\.\w+)?)?$")
KIT = "lits.testing"


def _shipped() -> list[Path]:
    return sorted(
        [
            *ROOT.glob("lits-plugin-*/src/**/*.py"),
            *ROOT.glob("lits-core/src/lits/cli/templates/**/*.py.tmpl"),
            *ROOT.glob("docs/examples/**/*.py"),
        ]
    )


def _doc_pages() -> list[Path]:
    return sorted([ROOT / "README.md", *ROOT.glob("docs/*.md")])


def _python_of(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    return "\n".join(re.findall(r"```python\n(.*?)```", text, flags=re.S)) if path.suffix == ".md" else text


def private_imports(code: str, *, in_tests: bool = False) -> list[str]:
    """The ``lits`` modules ``code`` imports that are not the public face."""
    found = [from_ or plain for from_, plain in IMPORT.findall(code)]
    return [name for name in found if not PUBLIC.match(name) and not (in_tests and name == KIT)]


def test_the_scan_sees_what_we_ship() -> None:
    shipped = [p.relative_to(ROOT).as_posix() for p in _shipped()]
    assert len(shipped) > 40
    assert "docs/examples/self_refine.py" in shipped and any(p.endswith("transition.py.tmpl") for p in shipped)


def test_the_scan_catches_a_deep_import() -> None:
    code = (
        "import lits\nfrom lits.api import Policy\nfrom lits.structures.base import Step\n"
        "from lits.components.base import Policy\n    from lits.registry import register_dataset\n"
        "import lits.lm.base\nfrom lits.testing import check_search\n"
    )
    assert private_imports(code) == ["lits.components.base", "lits.registry", "lits.lm.base", "lits.testing"]
    assert private_imports(code, in_tests=True) == ["lits.components.base", "lits.registry", "lits.lm.base"]


@pytest.mark.parametrize("path", _shipped() + _doc_pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_shipped_code_and_docs_import_only_the_public_face(path: Path) -> None:
    in_tests = "tests" in path.relative_to(ROOT).parts or path.suffix == ".md"  # the docs show the kit too
    assert private_imports(_python_of(path), in_tests=in_tests) == [], (
        f"{path.relative_to(ROOT)}: import these from lits.api"
    )


def test_the_shipped_plugins_register_with_the_decorators_alone() -> None:
    """One idiom, the seeds': ``@register_*`` decorators; pluggy's ``@hookimpl`` stays for third parties."""
    hooked = [
        p.relative_to(ROOT).as_posix()
        for p in ROOT.glob("lits-plugin-*/src/**/*.py")
        if re.search(r"^\s*@hookimpl|\bhookimpl\b.*import|import.*\bhookimpl\b", p.read_text(encoding="utf-8"), re.M)
    ]
    assert hooked == []
