"""General interfaces: Action, Step and State, with polymorphic JSON."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Generic, Iterable, Self, TypeVar

from lits.io.durable import atomic_write_text
from lits.type_registry import PLAIN, deserialize, register_type, serialize


class Action:
    """Marker base of every action type."""


@register_type
class StringAction(str, Action):
    """A free-text action; ``str(action)`` is the text itself."""

    def to_dict(self) -> dict[str, object]:
        return {"__type__": type(self).__name__, "text": str.__str__(self)}

    @classmethod
    def from_dict(cls, payload: dict[str, object]) -> "StringAction":
        return cls(payload["text"])

    # No __str__ of its own: str's, inherited, gives the plain text without a Python call (every prompt and
    # key reads actions as text).


@register_type
@dataclasses.dataclass
class Step:
    """One reasoning or execution step: an action plus what came of it.

    ``error`` is set by a policy that could not produce a usable step; the
    transition appends such steps unchanged (seed contract, case 2).
    """

    error: str | None = dataclasses.field(default=None, kw_only=True)

    def get_action(self) -> object:
        return getattr(self, "action", None)

    def get_answer(self) -> object:
        return getattr(self, "answer", None)

    def verb_step(self) -> str:
        action = self.get_action()
        return "" if action is None else str(action)

    def to_messages(self) -> list[dict[str, str]]:
        text = self.verb_step()
        return [{"role": "assistant", "content": text}] if text else []

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"__type__": type(self).__name__}
        for name in field_names(type(self)):
            value = getattr(self, name)
            out[name] = value if type(value) in PLAIN else serialize(value)
        return out

    @classmethod
    def from_dict(cls, payload: dict[str, object]) -> "Step":
        names = {f.name for f in dataclasses.fields(cls) if f.init}
        kwargs = {k: deserialize(v) for k, v in payload.items() if k in names}
        return cls(**kwargs)


StepT = TypeVar("StepT", bound=Step)


class State:
    """Marker base of every state type; see :class:`TrajectoryState`."""

    def to_dict(self) -> dict[str, object]:  # pragma: no cover - interface
        raise NotImplementedError

    @classmethod
    def from_dict(cls, payload: dict[str, object]) -> "State":  # pragma: no cover - interface
        raise NotImplementedError

    def save(self, path: str | Path) -> None:
        """Write the state as JSON, atomically."""
        atomic_write_text(Path(path), json.dumps(self.to_dict(), indent=1))

    @classmethod
    def load(cls, path: str | Path) -> "State":
        """Read a state written by :meth:`save`, rebuilding its exact class."""
        state = deserialize(json.loads(Path(path).read_text(encoding="utf-8")))
        if not isinstance(state, cls):
            raise TypeError(f"{path} holds a {type(state).__name__}, not a {cls.__name__}")
        return state


@register_type
class TrajectoryState(list, State, Generic[StepT]):
    """A list of steps.  Subclasses add fields (as dataclasses) and helpers."""

    def __init__(self, steps: Iterable[StepT] = ()) -> None:
        super().__init__(steps)

    @property
    def steps(self) -> "TrajectoryState[StepT]":
        return self

    def copy(self) -> Self:
        """A new state of the same class; steps are shared (they are not mutated)."""
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        list.extend(new, self)
        return new

    def render(self) -> str:
        """Human-readable trajectory, one step per block."""
        return "\n".join(step.verb_step() for step in self)

    def _extra_fields(self) -> dict[str, object]:
        if dataclasses.is_dataclass(self):
            return {name: getattr(self, name) for name in field_names(type(self))}
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"__type__": type(self).__name__}
        out.update({k: serialize(v) for k, v in self._extra_fields().items()})
        out["steps"] = [serialize(s) for s in self]
        return out

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> Self:
        steps = [deserialize(s) for s in payload.get("steps", [])]
        extras = {k: deserialize(v) for k, v in payload.items() if k not in ("__type__", "steps")}
        if dataclasses.is_dataclass(cls):
            state = cls(**extras)
            list.extend(state, steps)
        else:
            state = cls(steps)
            state.__dict__.update(extras)
        return state

    def __eq__(self, other: object) -> bool:
        return (
            type(self) is type(other) and list.__eq__(self, other) and self._extra_fields() == other._extra_fields()  # type: ignore[attr-defined]
        )

    def __ne__(self, other: object) -> bool:  # list's own __ne__ would ignore the type and extra fields
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list.__repr__(self)})"


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def field_names(cls: type) -> tuple[str, ...]:
    """A dataclass's field names, looked up once per class (serializing is on the search's hot path)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def step_key(step: object) -> str:
    """Identity of a proposed step: siblings with equal keys are duplicates.

    The whole step counts, not just its action: Self-Refine steps that share a
    draft but differ in feedback are different proposals.
    """
    to_dict = getattr(step, "to_dict", None)
    if to_dict is None:
        return str(step)
    if _C_ENCODER is None:
        return _KEY_ENCODER.encode(to_dict())
    # what _KEY_ENCODER.encode does, without its Python layers (a third of the cost, at every proposed step)
    return "".join(_C_ENCODER({}, str, _ASCII, None, ": ", ", ", True, False, True)(to_dict(), 0))


#: ``json.dumps(..., sort_keys=True, default=str)`` without an encoder built per call (every proposed step).
_KEY_ENCODER = json.JSONEncoder(sort_keys=True, default=str)
#: The C encoder ``_KEY_ENCODER`` runs (None where ``json`` has none), and its string escaper.
_C_ENCODER = getattr(json.encoder, "c_make_encoder", None)
_ASCII = json.encoder.encode_basestring_ascii
