"""Flags to a run: a :class:`~lits.runs.spec.RunSpec` for a new run, a
:class:`~lits.runs.resuming.ResumeRequest` for ``--resume``.

Only parsing happens here; what the values mean is judged below the CLI (the spec's
checks, :mod:`lits.runs.resuming`), so a run made from Python is checked the same way.
"""

from __future__ import annotations

import argparse
import types
from typing import Any, Callable, Iterator, Literal, Mapping, Sequence, Union, get_args, get_origin

from pydantic.fields import FieldInfo

from lits.cli.errors import UserError
from lits.runs.model_specs import ROLES
from lits.runs.resuming import MEANING_FLAGS, OPERATIONAL_KEYS, ResumeRequest
from lits.runs.record import GivenModel
from lits.runs.spec import RunSpec, SpecError, parse_value, settings_declared

#: Adds options that are not a field's own (``--resume``, the ``--ROLE-model`` family) to a group.
HandWritten = Callable[["argparse._ActionsContainer"], None]


def add_spec_options(parser: argparse.ArgumentParser, command: str, hand_written: Mapping[str, HandWritten]) -> None:
    """``lits search``/``lits chain``'s options, made from each :class:`~lits.runs.spec.RunSpec` field's
    :class:`~lits.runs.spec.Setting` in field order: the data, model and run groups, then the command's own.
    ``hand_written[field]`` adds its options right after that field's (in place of it for a hand-written one)."""
    groups: dict[str, argparse._ActionsContainer] = {
        name: parser.add_argument_group(name) for name in ("data", "model", "run")
    }
    groups[command] = parser
    for name, declared in settings_declared().items():
        if declared.group not in groups:
            continue
        where = groups[declared.group]
        if not declared.hand_written:
            where.add_argument(
                str(declared.flag), help=declared.help, **_parsing(RunSpec.model_fields[name], declared.metavar)
            )
        if name in hand_written:
            hand_written[name](where)


def _parsing(info: FieldInfo, metavar: str | None) -> dict[str, Any]:
    """How argparse reads a field of this type: ``K=V`` pairs, a switch, a number, a choice or a name."""
    kind = info.annotation
    if get_origin(kind) in (Union, types.UnionType):  # Optional[X] and X | None
        kind = next(arg for arg in get_args(kind) if arg is not type(None))
    if get_origin(kind) is dict:
        return {"action": "append", "default": [], "metavar": metavar or "K=V"}
    if kind is bool:
        return {"action": "store_true", "default": None}
    out: dict[str, Any] = {"default": None}
    if kind in (int, float):
        out["type"] = kind
    elif get_origin(kind) is Literal:
        out["choices"] = list(get_args(kind))
    if metavar:
        out["metavar"] = metavar
    return out


def _field_flags() -> Iterator[tuple[str, str, str, bool]]:
    """(field, flag, attribute of the parsed flags, whether it takes ``K=V`` pairs) of each generated flag."""
    for name, declared in settings_declared().items():
        if declared.flag and not declared.hand_written:
            pairs = get_origin(RunSpec.model_fields[name].annotation) is dict
            yield name, declared.flag, declared.dest, pairs


def parse_pairs(pairs: Sequence[str], flag: str) -> dict[str, object]:
    """``K=V`` flags as a mapping (``-`` in keys read as ``_``); values as :func:`parse_value` reads them."""
    out: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{flag} expects KEY=VALUE, got {pair!r}")
        out[key.strip().replace("-", "_")] = parse_value(value)
    return out


def component_models(args: argparse.Namespace) -> dict[str, GivenModel]:
    """What ``--policy-model``/``--eval-model``/``--transition-model`` and their base URLs and args gave."""
    out: dict[str, GivenModel] = {}
    for role in ROLES:
        given: GivenModel = {
            "model": getattr(args, f"{role}_model", None),
            "base_url": getattr(args, f"{role}_base_url", None),
            "args": parse_pairs(getattr(args, f"{role}_model_arg", None) or [], f"--{role}-model-arg"),
        }
        if given["model"] or given["base_url"] or given["args"]:
            out[role] = given
    return out


def run_request(args: argparse.Namespace, mode: str) -> RunSpec | ResumeRequest:
    """The flags as a new run's spec, or as what ``--resume`` was given again."""
    return resume_request(args, mode) if args.resume else spec_from_args(args, mode)


def spec_from_args(args: argparse.Namespace, mode: str) -> RunSpec:
    """The run that ``--config FILE``, then the flags given, then ``--set`` describe; a bad value is one line."""
    given: dict[str, object] = {"command": mode}
    for field, flag, attr, pairs in _field_flags():
        value = getattr(args, attr, None)
        if pairs and value:
            given[field] = parse_pairs(value, flag)
        elif not pairs and value is not None:
            given[field] = value
    models = {role: {k: v for k, v in spec.items() if v} for role, spec in component_models(args).items()}
    if models:
        given["component_models"] = models
    try:
        return RunSpec.from_layers(getattr(args, "config", None), given, getattr(args, "set", None) or [])
    except SpecError as exc:
        raise UserError(exc.as_flag()) from None


def resume_request(args: argparse.Namespace, mode: str) -> ResumeRequest:
    """What ``--resume`` was given again; :func:`lits.runs.resuming.resumed_run` judges it."""
    if getattr(args, "config", None) or getattr(args, "set", None):
        raise UserError(
            "--config and --set describe a new run; --resume continues the run in --save-dir as "
            "it was (only operational flags may be given again)"
        )
    meaning = []
    for flag, attr, key in MEANING_FLAGS:
        given = getattr(args, attr, None)
        if given is None or given == []:
            continue
        meaning.append((flag, key, parse_pairs(given, flag) if isinstance(given, list) else given))
    return ResumeRequest(
        args.save_dir,
        mode,
        meaning,
        {key: getattr(args, key, None) for key in OPERATIONAL_KEYS},
        component_models(args),
        args.cache,
        bool(args.no_cache),
        bool(args.trust_config),
        bool(getattr(args, "offline", None)),
    )
