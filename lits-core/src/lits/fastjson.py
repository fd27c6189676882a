"""JSON text at pydantic-core's speed where the standard library's would cost per model call or per node.

pydantic-core (already installed with pydantic) escapes and formats about 4x
faster than :mod:`json`.  Its text reads back to the same values; where it
would write something else (a lone surrogate it cannot encode, an object
``json`` refuses), the standard library writes, or raises, as it always did.
pydantic-core is imported at the first use: ``lits plugins`` never needs it.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Optional

_TO_JSON: Optional[Callable[..., bytes]] = None
#: ``json.dumps(value, separators=(",", ":"))`` without an encoder built per call.
_COMPACT = json.JSONEncoder(separators=(",", ":"))


def pydantic_to_json() -> Callable[..., bytes]:
    """``pydantic_core.to_json``, imported once."""
    global _TO_JSON
    if _TO_JSON is None:
        from pydantic_core import to_json

        _TO_JSON = to_json
    return _TO_JSON


def compact(value: Any) -> str:
    """``json.dumps(value, separators=(",", ":"))`` in value: NaN and the infinities as Python writes them,
    non-ASCII characters as they are (not ``\\u`` escapes), a float in its shortest form (``0.00001``)."""
    try:
        return (_TO_JSON or pydantic_to_json())(value, inf_nan_mode="constants").decode("utf-8")
    except (ValueError, TypeError):  # a lone surrogate, an object JSON cannot hold: json's error
        return _COMPACT.encode(value)


def compact_or_str(value: Any) -> str:
    """:func:`compact`, with ``str(obj)`` for any object neither encoder knows (``json.dumps(default=str)``)."""
    try:
        return (_TO_JSON or pydantic_to_json())(value, inf_nan_mode="constants", fallback=str).decode("utf-8")
    except (ValueError, TypeError):
        return json.dumps(value, separators=(",", ":"), default=str)
