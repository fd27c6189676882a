"""JSON text at pydantic-core's speed where the standard library's would cost per model call or per node.

pydantic-core (already installed with pydantic) escapes and formats about 4x
faster than :mod:`json`.  Its text reads back to the same values; where it
would write something else (a lone surrogate it cannot encode, an object
``json`` refuses), the standard library writes, or raises, as it always did.
pydantic-core is imported at the first use: ``lits plugins`` never needs it.  An
older pydantic-core (pydantic ≥ 2.5 is all we ask) without a keyword used here
raises TypeError, and ``json`` does the work.
"""

from __future__ import annotations

import json
from typing import Any, Callable

_TO_JSON: Callable[..., bytes] | None = None
_FROM_JSON: Callable[..., Any] | None = None
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


def request_body(value: Any) -> bytes:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)`` in UTF-8, in value: a
    request to a server, which must never carry NaN or an infinity (json's ValueError says so)."""
    try:
        out: bytes | None = (_TO_JSON or pydantic_to_json())(value, inf_nan_mode="constants")
    except (ValueError, TypeError):
        out = None  # json says what is wrong
    if out is None or b"NaN" in out or b"Infinity" in out:  # a non-finite number, or text that reads so
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return out


def loads(data: bytes | str) -> Any:
    """``json.loads(data)``: pydantic-core's parser (a reply per model call), json's where it refuses the text
    (a lone surrogate's escape), so every error is json's ValueError."""
    global _FROM_JSON
    if _FROM_JSON is None:
        try:
            from pydantic_core import from_json as parser
        except ImportError:  # a pydantic-core older than its parser: json alone
            _FROM_JSON = json.loads
        else:
            _FROM_JSON = parser
    try:
        return _FROM_JSON(data)
    except ValueError:
        return json.loads(data)
