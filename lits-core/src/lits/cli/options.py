"""Parsing ``K=V`` options and selecting instances."""

from __future__ import annotations

import json
from typing import Any, Optional, Sequence

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


def select_instances(examples: list[dict[str, Any]], offset: int, limit: Optional[int]) -> list[tuple[int, dict[str, Any]]]:
    if offset < 0:
        raise UserError("--offset must be 0 or more")
    if limit is not None and limit < 1:
        raise UserError("--limit must be at least 1")
    end = len(examples) if limit is None else offset + limit
    return [(i, examples[i]) for i in range(offset, min(end, len(examples)))]
