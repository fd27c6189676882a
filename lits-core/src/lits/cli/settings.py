"""A run's settings: made from the flags, or restored from ``config.json`` on ``--resume``.

On resume the run's *meaning* (data, selection, components, search, model)
is fixed: a flag that would change it is refused, naming the flag.  Operational
settings (calls in flight, where the server is, the cache, timeouts, prices)
are restored from the run, and may be changed by giving the flag again; the
change is recorded in ``config.json``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, Callable, Optional

from lits.cli.errors import UserError
from lits.cli.options import parse_pairs
from lits.runs.artifacts import RunDir
from lits.runs.session import check_writable
from lits.runs.spec import RunSpec, SpecError, apply_overrides, default_concurrency, read_spec_file

#: Flags that change what a run computes: (flag, attribute of args, key in config.json).
MEANING_FLAGS: tuple[tuple[str, str, str], ...] = (
    ("--dataset", "dataset", "dataset"),
    ("--dataset-arg", "dataset_arg", "dataset_args"),
    ("--offset", "offset", "offset"),
    ("--limit", "limit", "limit"),
    ("--resource", "resource", "resource"),
    ("--resource-arg", "resource_arg", "resource_args"),
    ("--policy", "policy", "policy"),
    ("--transition", "transition", "transition"),
    ("--reward", "reward", "reward"),
    ("--search", "search", "search"),
    ("--search-arg", "search_arg", "search_args"),
    ("--search-framework", "search_framework", "search_framework"),
    ("--chain", "chain", "chain"),
    ("--chain-arg", "chain_arg", "chain_args"),
    ("--model", "model", "model"),
    ("--api", "api", "api"),
)
#: Operational flags: (attribute of args, key in config.json); restored on resume unless given.
OPERATIONAL: tuple[tuple[str, str], ...] = (
    ("concurrency", "concurrency"), ("base_url", "base_url"), ("call_budget", "call_budget"),
    ("read_timeout", "read_timeout"), ("price_in", "price_in"), ("price_out", "price_out"),
    ("executor", "executor"), ("ray_address", "ray_address"), ("log_prompts", "log_prompts"),
)


def component_models(args: argparse.Namespace) -> dict[str, Any]:
    """What ``--policy-model``/``--eval-model``/``--transition-model`` and their base URLs and args gave."""
    from lits.runs.model_specs import ROLES, check_model_args

    out: dict[str, Any] = {}
    for role in ROLES:
        given = {"model": getattr(args, f"{role}_model", None), "base_url": getattr(args, f"{role}_base_url", None),
                 "args": check_model_args(role, parse_pairs(getattr(args, f"{role}_model_arg", None) or [],
                                                            f"--{role}-model-arg"))}
        if given["model"] or given["base_url"] or given["args"]:
            out[role] = given
    return out


def model_spec(model: Optional[str]) -> str:
    """``--model`` as recorded: the embedded model is "local", never null."""
    return model if model not in (None, "") else "local"


def check_concurrency(value: int) -> int:
    if value < 1:
        raise UserError("--concurrency must be at least 1")
    return value


def _positive(value: Optional[float], flag: str) -> Optional[float]:
    if value is not None and value <= 0:
        raise UserError(f"{flag} must be more than 0 seconds")
    return value


def _ray_address(executor: Optional[str], address: Optional[str]) -> Optional[str]:
    if address is not None and executor != "ray":
        raise UserError("--ray-address needs --executor ray")
    return address


#: Flags that set one spec field as given: (attribute of args, field).
_FIELD_FLAGS = (("dataset", "dataset"), ("offset", "offset"), ("limit", "limit"), ("resource", "resource"),
                ("policy", "policy"), ("transition", "transition"), ("model", "model"), ("base_url", "base_url"),
                ("api", "api"), ("concurrency", "concurrency"), ("call_budget", "call_budget"),
                ("read_timeout", "read_timeout"), ("price_in", "price_in"), ("price_out", "price_out"),
                ("cache", "cache"), ("executor", "executor"), ("ray_address", "ray_address"),
                ("save_dir", "save_dir"), ("search", "search"), ("reward", "reward"),
                ("search_framework", "search_framework"), ("chain", "chain"))
#: ``K=V`` flags that set keys of a mapping field: (attribute of args, field, flag).
_PAIR_FLAGS = (("dataset_arg", "dataset_args", "--dataset-arg"), ("resource_arg", "resource_args", "--resource-arg"),
               ("search_arg", "search_args", "--search-arg"), ("chain_arg", "chain_args", "--chain-arg"))


def spec_from_args(args: argparse.Namespace, mode: str) -> RunSpec:
    """The run that ``--config FILE``, then the flags given, then ``--set`` describe; a bad value is one line."""
    config = getattr(args, "config", None)
    values = read_spec_file(config) if config else {}
    if values.get("command", mode) != mode:
        raise UserError(f"{config} describes a {values['command']} run; run it with `lits {values['command']}`")
    values["command"] = mode
    for attr, field in _FIELD_FLAGS:
        if getattr(args, attr, None) is not None:
            values[field] = getattr(args, attr)
    for attr, field, flag in _PAIR_FLAGS:
        given = parse_pairs(getattr(args, attr, None) or [], flag)
        if given:
            values[field] = {**(values.get(field) or {}), **given}
    for flag in ("log_prompts", "no_cache"):
        if getattr(args, flag, None):
            values[flag] = True
    for role, spec in component_models(args).items():
        have = dict((values.setdefault("component_models", {}) or {}).get(role) or {})
        values["component_models"][role] = {**have, **{k: v for k, v in spec.items() if v}}
    values = apply_overrides(values, getattr(args, "set", None) or [])
    if not values.get("dataset"):
        raise UserError("--dataset is required (see `lits plugins` for registered datasets)")
    if values.get("resource_args") and not values.get("resource"):
        raise UserError("--resource-arg needs --resource NAME (e.g. --resource mcp)")
    _ray_address(values.get("executor"), values.get("ray_address"))
    try:
        return RunSpec.make(**values)
    except SpecError as exc:
        raise UserError(exc.as_flag()) from None


def resumed_settings(args: argparse.Namespace, mode: str) -> tuple[RunDir, dict[str, Any]]:
    if not args.save_dir:
        raise UserError("--resume needs --save-dir of the run to continue")
    run_dir = RunDir(Path(args.save_dir))
    saved = run_dir.read_config()
    if saved.get("command") != mode:
        raise UserError(f"{run_dir.root} holds a {saved.get('command')} run, not a {mode} run")
    refuse_meaning_changes(args, saved)
    changed: dict[str, Any] = {}
    models = _resumed_component_models(args, saved.get("component_models") or {})
    if models != (saved.get("component_models") or {}):
        changed["component_models"] = models
    for attr, key in OPERATIONAL:
        value = getattr(args, attr, None)
        if value is not None and value != saved.get(key):
            changed[key] = value
    if "concurrency" in changed:
        check_concurrency(changed["concurrency"])
    for flag, key in (("--call-budget", "call_budget"), ("--read-timeout", "read_timeout")):
        _positive(changed.get(key), flag)
    if args.cache is not None and (args.cache != saved.get("cache") or saved.get("no_cache")):
        changed.update(cache=args.cache, no_cache=False)
    if args.no_cache and not saved.get("no_cache"):
        changed["no_cache"] = True
    settings = {**saved, **changed}
    settings["executor"] = settings.get("executor") or "local"
    if settings["executor"] == "local":  # an address means nothing to an in-process run
        settings["ray_address"] = _ray_address(args.executor, args.ray_address)
    settings["model"] = model_spec(saved.get("model"))
    settings["concurrency"] = settings.get("concurrency") or default_concurrency(settings["model"])
    settings["offset"] = settings.get("offset") or 0
    settings["resumed"] = [*saved.get("resumed", []),
                           {"at": time.strftime("%Y-%m-%dT%H:%M:%S"), "changed": changed}]
    check_writable(run_dir.root)
    return run_dir, settings


def _resumed_component_models(args: argparse.Namespace, saved: dict[str, Any]) -> dict[str, Any]:
    """The run's per-component models with what may change on resume: base URLs and ``api_key_env``.

    A component's model name or any other model arg is meaning: a different one is refused."""
    from lits.runs.model_specs import OPERATIONAL_ARGS

    given = component_models(args)
    out = {role: {**spec, "args": dict(spec.get("args") or {})} for role, spec in saved.items()}
    for role, spec in given.items():
        have = out.setdefault(role, {"model": None, "base_url": None, "args": {}})
        if spec["model"] and spec["model"] != have.get("model"):
            _refuse(f"--{role}-model {spec['model']}", have.get("model") or "the run's --model")
        for key, value in spec["args"].items():
            if key not in OPERATIONAL_ARGS and have["args"].get(key, _MISSING) != value:
                _refuse(f"--{role}-model-arg {key}={value}", have["args"].get(key, "unset"))
            have["args"][key] = value
        if spec["base_url"]:
            have["base_url"] = spec["base_url"]
    return out


def refuse_meaning_changes(args: argparse.Namespace, saved: dict[str, Any]) -> None:
    """One line naming the first flag that would make the resumed run a different run."""
    for flag, attr, key in MEANING_FLAGS:
        given = getattr(args, attr, None)
        if given is None or given == []:
            continue
        if isinstance(given, list):  # K=V pairs: each must equal what the run has
            have = saved.get(key) or {}
            for name, value in parse_pairs(given, flag).items():
                if have.get(name, _MISSING) != value:
                    _refuse(f"{flag} {name}={value}", have.get(name, "unset"))
            continue
        normal = _NORMALIZE.get(key, lambda v: v)
        if normal(given) != normal(saved.get(key)):
            _refuse(f"{flag} {given}", saved.get(key))


_MISSING = object()
_NORMALIZE: dict[str, Callable[[Any], Any]] = {
    "model": model_spec,
    "api": lambda v: v or "chat",
    "offset": lambda v: v or 0,
}


def _refuse(given: str, have: Any) -> None:
    raise UserError(f"{given} cannot be used with --resume: it would change what the run computes "
                    f"(the run has {have!r}); start a new run with another --save-dir")
