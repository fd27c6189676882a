"""``lits plugins``: what is installed, what each plugin registered, whether it can run, its settings."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from lits.cli.errors import UserError

#: Kinds whose registrations ``--show`` can describe, in lookup order.
SHOWABLE = (
    "search",
    "chain",
    "policy",
    "transition",
    "reward_model",
    "model",
    "dataset",
    "search_framework",
    "augmentor",
)


def cmd_plugins(args: argparse.Namespace) -> int:
    from lits.plugin_host.plugins import plugin_infos

    if getattr(args, "show", None):
        print(show(args.show))
        return 0
    infos = plugin_infos()
    problems = registration_problems() if getattr(args, "check", False) else {}
    failed = 1 if any(i.error for i in infos) or any(problems.values()) else 0
    if args.json:
        rows = [i.as_dict() | ({"problems": problems.get(i.distribution, [])} if problems else {}) for i in infos]
        print(json.dumps(rows, indent=1))
        return failed
    for info in infos:
        status = f"ERROR {info.error}" if info.error else "disabled" if info.disabled else ""
        print(f"{info.distribution} {info.version} ({info.module}) {status}".rstrip())
        for kind, names in info.registered.items():
            if kind == "prompt":
                print(f"  prompts: {len(names)}")
            else:
                print(f"  {kind.replace('_', ' ')}: {', '.join(names)}")
        for line in info.refused:
            print(f"  REFUSED {line}")
        for line in problems.get(info.distribution, []):
            print(f"  PROBLEM {line}")
    if getattr(args, "check", False) and not any(problems.values()) and not failed:
        print("every registration looks complete")
    return failed


def registration_problems() -> dict[str, list[str]]:
    """Per distribution, one line per registered component that cannot run (see lits.components.checks)."""
    from lits.components.checks import describe_problems, problems_of
    from lits.plugin_host.plugins import plugin_infos
    from lits.plugin_host.store import STORE

    out: dict[str, list[str]] = {}
    for info in plugin_infos():
        lines = out.setdefault(info.distribution, [])
        for kind, names in info.registered.items():
            for name in names:
                reg = STORE.find(kind, name)
                found = problems_of(kind, reg.obj) if reg is not None else []
                if found:
                    lines.append(describe_problems(kind, name, info.distribution, found))
    return out


def show(name: str) -> str:
    """A registered algorithm's or component's settings: type, default and description of each."""
    from lits.registry import list_names
    from lits.plugin_host.store import STORE

    for kind in SHOWABLE:
        if name in list_names(kind):
            reg = STORE.get(kind, name)
            return _describe(kind, name, reg.owner, reg.obj, reg.meta)
    known = sorted({n for kind in SHOWABLE for n in list_names(kind)})
    from lits.plugin_host.store import unknown_name_message

    raise UserError(unknown_name_message("registration", name, known))


def _describe(kind: str, name: str, owner: str, obj: object, meta: dict[str, Any]) -> str:
    head = f"{kind.replace('_', ' ')} {name!r} from {owner}"
    doc = (getattr(obj, "__doc__", None) or meta.get("description") or "").strip().splitlines()
    lines = [head + (f": {doc[0]}" if doc else "")]
    config = meta.get("config_class")
    if config is None and kind in ("search", "chain"):
        from lits.agents import ChainConfig, TreeSearchConfig

        config = TreeSearchConfig if kind == "search" else ChainConfig
    if config is not None:
        lines.append(f"settings ({'--search-arg' if kind == 'search' else '--chain-arg'} KEY=VALUE):")
        for field_name, field in config.model_fields.items():
            kind_name = _type_name(field.annotation)
            lines.append(
                f"  {field_name}: {kind_name} = {field.default!r}"
                + (f"  {field.description}" if field.description else "")
            )
    elif kind == "augmentor":
        options = getattr(obj, "OPTIONS", None) or {}
        lines.append(
            "options (--memory-arg KEY=VALUE): "
            + (", ".join(f"{key}={value!r}" for key, value in options.items()) or "none")
        )
    elif kind in ("policy", "transition", "reward_model") and isinstance(obj, type):
        from lits.components.base import settings_of

        lines.append("settings (constructor keywords): " + ", ".join(settings_of(obj)))
    return "\n".join(lines)


def _type_name(annotation: object) -> str:
    import typing

    if typing.get_origin(annotation) is None and hasattr(annotation, "__name__"):
        return str(annotation.__name__)
    return str(annotation).replace("typing.", "")


def warn_broken_plugins(stream: TextIO | None = None) -> None:
    """One warning line per plugin that failed to load, and per unknown LITS_PLUGINS entry."""
    from lits.plugin_host.plugins import plugin_infos, unknown_selections

    out = stream or sys.stderr
    for info in plugin_infos():
        if info.error:
            print(f"lits: warning: plugin {info.name!r} ({info.distribution}) failed to load: {info.error}", file=out)
        for line in info.refused:
            print(f"lits: warning: plugin {info.name!r} ({info.distribution}) {line}", file=out)
    for line in unknown_selections():
        print(f"lits: warning: {line}", file=out)
