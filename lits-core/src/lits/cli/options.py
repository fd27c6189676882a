"""Parsing ``K=V`` options."""

from __future__ import annotations

from typing import Any, Sequence

from lits.cli.errors import UserError
from lits.runs.spec import parse_value

__all__ = ["parse_pairs", "parse_value"]


def parse_pairs(pairs: Sequence[str], flag: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{flag} expects KEY=VALUE, got {pair!r}")
        out[key.strip().replace("-", "_")] = parse_value(value)
    return out
