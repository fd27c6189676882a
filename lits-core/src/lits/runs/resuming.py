"""A resumed run's settings: restored from ``config.json``, with what may change changed.

On resume the run's *meaning* (data, selection, components, search, model) is fixed: a
flag that would change it is refused, naming the flag.  Operational settings (calls in
flight, where the server is, the cache, timeouts, prices) are restored from the run, and
may be changed by giving the flag again; the change is recorded in ``config.json``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence, cast

from lits.errors import UserError
from lits.runs.results.artifacts import RunDir, check_writable
from lits.runs.run_settings import GivenModel, RunSettings
from lits.runs.spec import OPERATIONAL_FIELDS, default_concurrency, settings_declared
from lits.runs.trust import Confirmation, given_values

#: Flags that change what a run computes: (flag, attribute of the parsed flags, key in config.json).  A
#: component's own model (``--ROLE-model``...) is judged on its own, below.
MEANING_FLAGS: tuple[tuple[str, str, str], ...] = tuple(
    (str(declared.flag), declared.dest, name)
    for name, declared in settings_declared().items()
    if declared.computes and declared.flag and not declared.hand_written
)
#: Operational settings given again as flags (the cache's two are judged on their own, below).
OPERATIONAL_KEYS = tuple(sorted(OPERATIONAL_FIELDS - {"cache", "no_cache"}))


@dataclass
class ResumeRequest:
    """What ``--resume`` was given: the save dir and every flag given again, parsed but not yet judged."""

    save_dir: str | None
    mode: str
    #: Meaning flags given again: (flag, key in config.json, value; ``K=V`` flags as a dict).
    meaning: list[tuple[str, str, object]] = field(default_factory=list)
    #: Operational settings given again, by key.
    operational: dict[str, object] = field(default_factory=dict)
    #: ``--ROLE-model``/``--ROLE-base-url``/``--ROLE-model-arg`` given again, by role.
    component_models: dict[str, GivenModel] = field(default_factory=dict)
    cache: str | None = None
    no_cache: bool = False
    #: ``--trust-config``: what the run's config.json says to start or where to send keys is confirmed.
    trust_config: bool = False
    #: ``--offline``: a replay pays for nothing this time (each resume says it again).
    offline: bool = False

    def confirmation(self) -> Confirmation:
        """Only what is given again on this command line is the user's; the rest comes from config.json."""
        given = given_values(
            {
                "base_url": self.operational.get("base_url"),
                "component_models": self.component_models,
                "ray_address": self.operational.get("ray_address"),
            }
        )
        for _, key, value in self.meaning:
            if key == "resource_args" and isinstance(value, dict):
                given = given | given_values({"resource_args": value})
        return Confirmation(given=given, trusted=self.trust_config)


def resumed_run(request: ResumeRequest) -> tuple[RunDir, RunSettings]:
    """The run dir and settings of the run to continue; one line for a flag that would change the run."""
    if not request.save_dir:
        raise UserError("--resume needs --save-dir of the run to continue")
    run_dir = RunDir(Path(request.save_dir))
    saved = run_dir.read_config()
    if saved.get("command") != request.mode:
        raise UserError(f"{run_dir.root} holds a {saved.get('command')} run, not a {request.mode} run")
    check_saved(run_dir, saved)
    refuse_meaning_changes(request.meaning, saved)
    changed: dict[str, object] = {}
    models = _resumed_component_models(request.component_models, saved.get("component_models") or {})
    if models != (saved.get("component_models") or {}):
        changed["component_models"] = models
    for key, value in request.operational.items():
        if value is not None and value != saved.get(key):
            changed[key] = value
    check_given_again(changed)
    if request.cache is not None and (request.cache != saved.get("cache") or saved.get("no_cache")):
        changed.update(cache=request.cache, no_cache=False)
    if request.no_cache and not saved.get("no_cache"):
        changed["no_cache"] = True
    if request.offline:
        changed["offline"] = True
    settings = resumed_settings(run_dir, saved, changed)
    if settings["executor"] == "local":  # an address means nothing to an in-process run
        if request.operational.get("ray_address") is not None and request.operational.get("executor") != "ray":
            raise UserError("--ray-address needs --executor ray")
        settings["ray_address"] = None
    settings["model"] = model_spec(saved.get("model"))
    settings["concurrency"] = settings.get("concurrency") or default_concurrency(settings["model"])
    settings["offset"] = settings.get("offset") or 0
    return run_dir, settings


def check_given_again(changed: Mapping[str, object]) -> None:
    """Operational values given again pass the checks a new run's pass, named by their flags (``--concurrency
    must be at least 1``): each setting's rule lives once, on its :class:`~lits.runs.spec.RunSpec` field."""
    from lits.runs.spec import RunSpec, SpecError

    values = {key: value for key, value in changed.items() if key in OPERATIONAL_FIELDS}
    if "ray_address" in values:  # the address is checked against the executor below, with the saved one
        values.setdefault("executor", "ray")
    try:
        RunSpec.make(dataset="resumed", **values)
    except SpecError as exc:
        raise UserError(exc.as_flag()) from None


def check_saved(run_dir: RunDir, saved: RunSettings) -> None:
    """The run's recorded settings pass the checks a new run's pass (a config.json is data: a changed
    ``concurrency = 1e300`` is one line, not a run)."""
    from lits.runs.spec import RunSpec, SpecError

    try:
        RunSpec.from_config(dict(saved))
    except SpecError as exc:
        raise UserError(f"{run_dir.config_path}: {exc}; restore it from a copy, or start a new run") from None


def resumed_settings(run_dir: RunDir, saved: RunSettings, changed: Mapping[str, object]) -> RunSettings:
    """The saved settings with what changed, the change recorded under ``resumed``; the save dir checked
    writable.  Shared by ``--resume`` and :func:`lits.resume`."""
    settings = cast(RunSettings, {**saved, **changed})  # operational settings, checked by their flags
    settings["executor"] = settings.get("executor") or "local"
    if settings.get("replay_from"):  # --offline is said again by each command, never kept
        settings["offline"] = bool(changed.get("offline"))
    elif changed.get("offline"):
        raise UserError(f"--offline needs a replay, and {run_dir.root} was not run with --replay-from")
    settings["resumed"] = [
        *saved.get("resumed", []),
        {"at": time.strftime("%Y-%m-%dT%H:%M:%S"), "changed": dict(changed)},
    ]
    check_writable(run_dir.root)
    return settings


def model_spec(model: str | None) -> str:
    """``--model`` as recorded: the embedded model is "local", never null."""
    return model if model not in (None, "") else "local"


def _resumed_component_models(
    given: Mapping[str, GivenModel], saved: Mapping[str, GivenModel]
) -> dict[str, GivenModel]:
    """The run's per-component models with what may change on resume: base URLs and the operational args.

    A component's model name or any other model arg is meaning: a different one is refused."""
    from lits.runs.model_specs import OPERATIONAL_ARGS, check_model_args

    out: dict[str, GivenModel] = {role: {**spec, "args": dict(spec.get("args") or {})} for role, spec in saved.items()}
    for role, spec in given.items():
        have = out.setdefault(role, {"model": None, "base_url": None, "args": {}})
        if spec.get("model") and spec["model"] != have.get("model"):
            _refuse(f"--{role}-model {spec['model']}", have.get("model") or "the run's --model")
        for key, value in check_model_args(role, spec.get("args") or {}).items():
            if key not in OPERATIONAL_ARGS and have["args"].get(key, _MISSING) != value:
                _refuse(f"--{role}-model-arg {key}={value}", have["args"].get(key, "unset"))
            have["args"][key] = value
        if spec.get("base_url"):
            have["base_url"] = spec["base_url"]
    return out


def refuse_meaning_changes(meaning: Sequence[tuple[str, str, object]], saved: Mapping[str, object]) -> None:
    """One line naming the first flag that would make the resumed run a different run."""
    for flag, key, given in meaning:
        if isinstance(given, dict):  # K=V pairs: each must equal what the run has
            have = saved.get(key) or {}
            have = have if isinstance(have, dict) else {}
            for name, value in given.items():
                if have.get(name, _MISSING) != value:
                    _refuse(f"{flag} {name}={value}", have.get(name, "unset"))
            continue
        normal = _NORMALIZE.get(key, _as_given)
        if normal(given) != normal(saved.get(key)):
            if isinstance(given, bool):  # a switch: the run had it off
                _refuse(flag, normal(saved.get(key)))
            _refuse(f"{flag} {given}", saved.get(key))


_MISSING = object()


def _as_given(value: object) -> object:
    return value


_NORMALIZE: dict[str, Callable[[object], object]] = {
    "model": lambda v: model_spec(v) if v is None or isinstance(v, str) else v,
    "api": lambda v: v or "chat",
    "offset": lambda v: v or 0,
    "attempts": lambda v: v or 1,
    "replay_from": lambda v: str(Path(v).expanduser().absolute()) if isinstance(v, str) else v,
    "free_replies": bool,
}


def _refuse(given: str, have: object) -> None:
    raise UserError(
        f"{given} cannot be used with --resume: it would change what the run computes "
        f"(the run has {have!r}); start a new run with another --save-dir"
    )
