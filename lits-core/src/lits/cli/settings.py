"""A run's settings: made from the flags, or restored from ``config.json`` on ``--resume``.

On resume the run's *meaning* (data, selection, components, search, model)
is fixed: a flag that would change it is refused, naming the flag.  Operational
settings (calls in flight, where the server is, the cache, timeouts, prices)
are restored from the run, and may be changed by giving the flag again; the
change is recorded in ``config.json``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any, Callable, Optional

from lits.cli.errors import UserError
from lits.cli.options import parse_pairs
from lits.runs.artifacts import RunDir

#: Calls in flight against an HTTP server when --concurrency is not given: enough to keep a
#: local vLLM / llama.cpp server batching.  In-process models take one call at a time.
SERVER_CONCURRENCY = 16

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


def default_concurrency(model: Any) -> int:
    from lits.runs.model_specs import is_gguf

    return 1 if model in (None, "", "local", "scripted") or is_gguf(model) else SERVER_CONCURRENCY


def _model_names(args: argparse.Namespace) -> list[Any]:
    """``--model`` and every component's own model name."""
    from lits.runs.model_specs import ROLES

    return [args.model, *(getattr(args, f"{role}_model", None) for role in ROLES if getattr(args, f"{role}_model", None))]


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


def new_settings(args: argparse.Namespace, mode: str) -> tuple[RunDir, dict[str, Any]]:
    from lits import __version__

    if not args.dataset:
        raise UserError("--dataset is required (see `lits plugins` for registered datasets)")
    settings: dict[str, Any] = {
        "command": mode,
        "dataset": args.dataset,
        "dataset_args": parse_pairs(args.dataset_arg, "--dataset-arg"),
        "offset": args.offset or 0,
        "limit": args.limit,
        "resource": args.resource,
        "resource_args": parse_pairs(args.resource_arg, "--resource-arg"),
        "policy": args.policy,
        "transition": args.transition,
        "model": model_spec(args.model),
        "base_url": args.base_url,
        "api": args.api,
        "component_models": component_models(args),
        "concurrency": check_concurrency(args.concurrency) if args.concurrency is not None
        else max(default_concurrency(model) for model in _model_names(args)),
        "call_budget": _positive(args.call_budget, "--call-budget"),
        "read_timeout": _positive(args.read_timeout, "--read-timeout"),
        "price_in": args.price_in or 0.0,
        "price_out": args.price_out or 0.0,
        "log_prompts": bool(args.log_prompts),
        "cache": args.cache,
        "no_cache": bool(args.no_cache),
        "executor": args.executor or "local",
        "ray_address": _ray_address(args.executor, args.ray_address),
        "lits_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    if settings["resource_args"] and not settings["resource"]:
        raise UserError("--resource-arg needs --resource NAME (e.g. --resource mcp)")
    if mode == "search":
        settings.update(search=args.search, reward=args.reward, search_framework=args.search_framework,
                        search_args=parse_pairs(args.search_arg, "--search-arg"))
        name = args.search_framework or args.search or "mcts"
    else:
        settings.update(chain=args.chain, chain_args=parse_pairs(args.chain_arg, "--chain-arg"))
        name = args.chain or "chain"
    root = Path(args.save_dir) if args.save_dir else Path("runs") / f"{args.dataset}-{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    if (root / "config.json").exists():
        raise UserError(f"{root} already holds a run; pass --resume to continue it or choose another --save-dir")
    check_writable(root)
    return RunDir(root), settings


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


def check_writable(root: Path) -> None:
    """Fail early, before a model loads, when the save dir cannot be created or written."""
    probe = root
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise UserError(f"cannot write the save dir {root}: {probe} is a file, not a folder; "
                        "choose another --save-dir")
    if probe.exists() and not os.access(probe, os.W_OK | os.X_OK):
        raise UserError(f"cannot write the save dir {root}: {probe} is not writable; "
                        "fix its permissions or choose another --save-dir")
