"""Parsing ``K=V`` options."""

from __future__ import annotations

import json
from typing import Any, Sequence

from lits.cli.errors import UserError


def parse_value(text: str) -> Any:
    """``10`` -> 10, ``0.5`` -> 0.5, ``true`` -> True, ``null`` -> None, else the string."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_pairs(pairs: Sequence[str], flag: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{flag} expects KEY=VALUE, got {pair!r}")
        out[key.strip().replace("-", "_")] = parse_value(value)
    return out
