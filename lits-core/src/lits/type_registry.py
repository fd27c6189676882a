"""Polymorphic JSON: every Action, Step, State and Node class registers here.

Serialized objects carry ``"__type__": ClassName``; :func:`deserialize`
rebuilds the exact subclass, so heterogeneous trajectories round-trip.
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T", bound=type)

TYPE_REGISTRY: dict[str, type] = {}


def register_type(cls: T) -> T:
    """Class decorator: make ``cls`` loadable from its ``__type__`` name."""
    existing = TYPE_REGISTRY.get(cls.__name__)
    if (
        existing is not None
        and existing is not cls
        and (
            existing.__module__,
            existing.__qualname__,
        )
        != (cls.__module__, cls.__qualname__)
    ):
        raise ValueError(
            f"type name {cls.__name__!r} is already registered by "
            f"{existing.__module__}.{existing.__qualname__}; rename one of them"
        )
    TYPE_REGISTRY[cls.__name__] = cls
    return cls


def register_state(cls: T) -> T:
    """Same as :func:`register_type`, for State containers (reads better)."""
    return register_type(cls)


def get_type(name: str) -> type:
    try:
        return TYPE_REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(TYPE_REGISTRY)) or "none"
        raise KeyError(f"unknown serialized type {name!r} (is its plugin installed?); known: {known}") from None


#: Values :func:`serialize` returns as they are (callers on hot paths test this before calling it).
PLAIN = _PLAIN = frozenset({str, int, float, bool, type(None)})


def serialize(value: object) -> object:
    """JSON-ready form of ``value``; objects with ``to_dict`` keep their type."""
    if type(value) in _PLAIN:  # exact types: a str subclass may carry its own to_dict
        return value
    to_dict = getattr(value, "to_dict", None)
    if to_dict is not None and callable(to_dict):
        return to_dict()
    if isinstance(value, dict):
        return {str(k): v if type(v) in _PLAIN else serialize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [v if type(v) in _PLAIN else serialize(v) for v in value]
    return value


def deserialize(payload: object) -> Any:
    """Inverse of :func:`serialize`; what it rebuilds is named by the data (``__type__``), not by the caller."""
    if isinstance(payload, dict):
        type_name = payload.get("__type__")
        if type_name is not None:
            return getattr(get_type(type_name), "from_dict")(payload)
        return {k: deserialize(v) for k, v in payload.items()}
    if isinstance(payload, list):
        return [deserialize(v) for v in payload]
    return payload
