"""Flags to a run: a :class:`~lits.runs.spec.RunSpec` for a new run, a
:class:`~lits.runs.resuming.ResumeRequest` for ``--resume``.

Only parsing happens here; what the values mean is judged below the CLI (the spec's
checks, :mod:`lits.runs.resuming`), so a run made from Python is checked the same way.
"""

from __future__ import annotations

import argparse
from typing import Sequence

from lits.cli.errors import UserError
from lits.runs.model_specs import ROLES
from lits.runs.resuming import MEANING_FLAGS, OPERATIONAL_KEYS, ResumeRequest
from lits.runs.run_settings import GivenModel
from lits.runs.spec import RunSpec, SpecError, parse_value

#: Flags that set one spec field as given: (attribute of args, field).
_FIELD_FLAGS = (("dataset", "dataset"), ("offset", "offset"), ("limit", "limit"), ("resource", "resource"),
                ("policy", "policy"), ("transition", "transition"), ("model", "model"), ("base_url", "base_url"),
                ("api", "api"), ("concurrency", "concurrency"), ("call_budget", "call_budget"),
                ("read_timeout", "read_timeout"), ("price_in", "price_in"), ("price_out", "price_out"),
                ("cache", "cache"), ("executor", "executor"), ("ray_address", "ray_address"),
                ("save_dir", "save_dir"), ("search", "search"), ("reward", "reward"),
                ("search_framework", "search_framework"), ("chain", "chain"), ("attempts", "attempts"),
                ("budget", "budget"),
                ("replay_from", "replay_from"))
#: ``K=V`` flags that set keys of a mapping field: (attribute of args, field, flag).
_PAIR_FLAGS = (("dataset_arg", "dataset_args", "--dataset-arg"), ("resource_arg", "resource_args", "--resource-arg"),
               ("search_arg", "search_args", "--search-arg"), ("chain_arg", "chain_args", "--chain-arg"),
               ("memory_arg", "memory_args", "--memory-arg"), ("reward_arg", "reward_args", "--reward-arg"))


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
        given: GivenModel = {"model": getattr(args, f"{role}_model", None),
                             "base_url": getattr(args, f"{role}_base_url", None),
                             "args": parse_pairs(getattr(args, f"{role}_model_arg", None) or [], f"--{role}-model-arg")}
        if given["model"] or given["base_url"] or given["args"]:
            out[role] = given
    return out


def run_request(args: argparse.Namespace, mode: str) -> RunSpec | ResumeRequest:
    """The flags as a new run's spec, or as what ``--resume`` was given again."""
    return resume_request(args, mode) if args.resume else spec_from_args(args, mode)


def spec_from_args(args: argparse.Namespace, mode: str) -> RunSpec:
    """The run that ``--config FILE``, then the flags given, then ``--set`` describe; a bad value is one line."""
    given: dict[str, object] = {"command": mode}
    for attr, field in _FIELD_FLAGS:
        if getattr(args, attr, None) is not None:
            given[field] = getattr(args, attr)
    for attr, field, flag in _PAIR_FLAGS:
        pairs = parse_pairs(getattr(args, attr, None) or [], flag)
        if pairs:
            given[field] = pairs
    for flag in ("log_prompts", "no_cache", "free_replies", "trust_config", "offline"):
        if getattr(args, flag, None):
            given[flag] = True
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
        raise UserError("--config and --set describe a new run; --resume continues the run in --save-dir as "
                        "it was (only operational flags may be given again)")
    meaning = []
    for flag, attr, key in MEANING_FLAGS:
        given = getattr(args, attr, None)
        if given is None or given == []:
            continue
        meaning.append((flag, key, parse_pairs(given, flag) if isinstance(given, list) else given))
    return ResumeRequest(args.save_dir, mode, meaning, {key: getattr(args, key, None) for key in OPERATIONAL_KEYS},
                         component_models(args), args.cache, bool(args.no_cache), bool(args.trust_config),
                         bool(getattr(args, "offline", None)))
