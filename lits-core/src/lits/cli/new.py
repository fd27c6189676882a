"""``lits new domain|search NAME``: write a working plugin distribution to start from.

A new plugin starts from code that already passes the conformance kit
(:mod:`lits.testing`), so its author changes a working domain or algorithm
step by step instead of assembling entry points, registrations and prompts
from the docs.  The templates live in ``lits/cli/templates/<kind>/``; file
and directory names and contents carry ``%%TOKEN%%`` placeholders.
"""

from __future__ import annotations

import argparse
import re
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from lits.cli.errors import UserError

__all__ = ["add_new_parser", "cmd_new", "write_distribution"]

#: kind -> (distribution prefix, module prefix)
KINDS = {"domain": ("lits-plugin-", "lits_"), "search": ("lits-search-", "lits_search_")}
_NAME = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")
_SUFFIX = ".tmpl"


def add_new_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lits new`` to the CLI's sub-command parsers."""
    p = sub.add_parser("new", help="write a new plugin distribution (a domain or a search algorithm) to start from")
    p.add_argument("kind", choices=sorted(KINDS), help="what the plugin adds")
    p.add_argument("name", help="its registered name, e.g. my-domain (lower-case letters, digits, '-' and '_')")
    p.add_argument("--dir", default=None, help="where to write it (default: ./NAME); must be new or empty")
    p.set_defaults(func=cmd_new)


def cmd_new(args: argparse.Namespace) -> int:
    target = Path(args.dir) if args.dir else Path(args.name)
    tokens, written = write_distribution(args.kind, args.name, target)
    print(f"lits: wrote {tokens['DIST']} ({args.kind} {args.name!r}) to {target}:")
    for path in written:
        print(f"  {path.relative_to(target).as_posix()}")
    print(f"next: pip install -e {target} && pytest {target}")
    return 0


def tokens_for(kind: str, name: str) -> dict[str, str]:
    """The placeholders' values; a name that cannot make a distribution and a module is a UserError."""
    if not _NAME.fullmatch(name):
        raise UserError(
            f"{name!r} is not a usable plugin name: use lower-case letters, digits and single "
            "'-' or '_' between them, starting with a letter (e.g. my-domain)"
        )
    dist_prefix, module_prefix = KINDS[kind]
    parts = re.split(r"[-_]", name)
    return {
        "NAME": name,
        "DIST": dist_prefix + name,
        "MODULE": module_prefix + "_".join(parts),
        "CLASS": "".join(p.capitalize() for p in parts),
        **core_range(),
    }


def core_range() -> dict[str, str]:
    """The lits-core releases a new plugin declares it works with: this minor version (0.3.x -> >=0.3,<0.4)."""
    from lits.version import __version__

    major, minor = (int(part) for part in __version__.split(".")[:2])
    upper = f"{major + 1}.0" if major else f"0.{minor + 1}"
    return {"CORE_MIN": f"{major}.{minor}", "CORE_NEXT": upper}


def write_distribution(kind: str, name: str, target: Path) -> tuple[dict[str, str], list[Path]]:
    """Write the ``kind`` template for ``name`` into ``target``; returns the tokens and the files written."""
    tokens = tokens_for(kind, name)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UserError(f"{target} already exists and is not an empty directory; choose another --dir")
    written: list[Path] = []
    _copy(resources.files("lits.cli") / "templates" / kind, target, tokens, written)
    return tokens, sorted(written)


def _fill(text: str, tokens: dict[str, str]) -> str:
    for key, value in tokens.items():
        text = text.replace(f"%%{key}%%", value)
    return text


def _copy(source: Traversable, target: Path, tokens: dict[str, str], written: list[Path]) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for item in sorted(source.iterdir(), key=lambda t: t.name):
        if item.name == "__pycache__":
            continue
        name = _fill(item.name, tokens)
        if item.is_dir():
            _copy(item, target / name, tokens, written)
        elif name.endswith(_SUFFIX):
            path = target / name[: -len(_SUFFIX)]
            path.write_text(_fill(item.read_text(encoding="utf-8"), tokens), encoding="utf-8")
            written.append(path)
