"""A run as one typed object: what the CLI parses its flags into and :func:`lits.run` takes.

Every setting of a ``lits search`` / ``lits chain`` run has one field here, checked when
the spec is made (a bad value is one :class:`SpecError` line naming the field).  The spec
becomes the settings recorded in ``config.json`` (:meth:`RunSpec.settings`), so a run made
from Python and the same run made from the command line write the same files.
"""

from __future__ import annotations

import difflib
import json
import time
from pathlib import Path
from typing import Any, Literal, Mapping, Optional, Union, get_args

from pydantic import (BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, ValidationInfo, field_validator,
                      model_validator)

from lits.errors import UserError
from lits.runs.run_settings import GivenModel, RunSettings, non_finite
from lits.runs.trust import Confirmation, Given, given_values

Role = Literal["policy", "eval", "transition", "bn"]
#: A component given by registered name, by class, or as an object built by the caller.
ComponentChoice = Union[str, type, object, None]

#: Calls in flight against an HTTP server when ``concurrency`` is not given: enough to keep a
#: local vLLM / llama.cpp server batching.  In-process models take one call at a time.
SERVER_CONCURRENCY = 16


#: Fields the command line sets with a differently named flag.
FLAGS = {"dataset_args": "--dataset-arg", "resource_args": "--resource-arg", "search_args": "--search-arg",
         "chain_args": "--chain-arg", "memory_args": "--memory-arg", "reward_args": "--reward-arg"}
#: Checks across fields, as the Python API and the command line say them: field -> (problem, flag problem).
_ACROSS = {
    "resource_args": ("needs resource NAME (e.g. resource='mcp')", "needs --resource NAME (e.g. --resource mcp)"),
    "ray_address": ("needs executor='ray'", "needs --executor ray"),
    "offline": ("needs replay_from=RUN (it refuses to pay for what RUN did not record)",
                "needs --replay-from RUN (it refuses to pay for what RUN did not record)"),
    "replay_from": ("answers through the response cache: drop no_cache, and run with executor='local'",
                    "answers through the response cache: drop --no-cache, and run with --executor local"),
}


class SpecError(UserError):
    """A spec field with a bad value: ``field`` and what is wrong with it."""

    def __init__(self, field: str, problem: str, flag_problem: Optional[str] = None) -> None:
        super().__init__(f"{field} {problem}")
        self.field, self.problem, self.flag_problem = field, problem, flag_problem
        #: The config file the bad value came from, when it did.
        self.source: Optional[str] = None

    def __str__(self) -> str:
        return f"{self.source}: {self.field} {self.problem} (fix it in the file)" if self.source else \
            f"{self.field} {self.problem}"

    def flagless(self, prefix: str) -> UserError:
        """The same problem after ``prefix`` (``--set limt is not a run setting ...``)."""
        return UserError(f"{prefix}{self}")

    def as_flag(self) -> str:
        """The same problem named as the command line's flag (``--call-budget must be ...``), or as the config
        file's key (``run.toml: component_models.polcy is not ...``) when the value came from the file."""
        if self.source:
            return str(self)
        flag = FLAGS.get(self.field) or f"--{self.field.replace('_', '-')}"
        return f"{flag} {self.flag_problem or self.problem}"


class ComponentModel(BaseModel):
    """One component's own model (``--policy-model`` and its base URL and args)."""

    model_config = ConfigDict(extra="forbid")

    model: Optional[str] = None
    base_url: Optional[str] = None
    args: dict[str, object] = Field(default_factory=dict)


class RunSpec(BaseModel):
    """Everything a run needs; the defaults are the command line's."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    command: Literal["search", "chain"] = "search"
    dataset: str = Field(min_length=1)
    dataset_args: dict[str, object] = Field(default_factory=dict)
    offset: int = 0
    limit: Optional[int] = None
    resource: Optional[str] = None
    resource_args: dict[str, object] = Field(default_factory=dict)
    policy: ComponentChoice = None
    transition: ComponentChoice = None
    reward: ComponentChoice = None
    search: Optional[str] = None
    search_args: dict[str, object] = Field(default_factory=dict)
    #: Settings of the reward model (``separator=<extra_0>``): keywords of its class, checked when it is built.
    reward_args: dict[str, object] = Field(default_factory=dict)
    search_framework: Optional[str] = None
    chain: Optional[str] = None
    chain_args: dict[str, object] = Field(default_factory=dict)
    #: Tries per instance; an attempt that solves ends the instance (pass@N).
    attempts: int = 1
    #: ``augmentors=fact,reflection`` and the augmentors' options: memory between attempts.
    memory_args: dict[str, object] = Field(default_factory=dict)
    #: ``tokens=N``, ``calls=N`` or ``seconds=N``: one compute budget for the run (:mod:`lits.runs.budget`).
    budget: Optional[str] = None
    model: str = "local"
    base_url: Optional[str] = None
    api: Optional[Literal["chat", "completion"]] = None
    component_models: dict[Role, ComponentModel] = Field(default_factory=dict)
    concurrency: Optional[int] = None
    call_budget: Optional[float] = None
    read_timeout: Optional[float] = None
    price_in: float = 0.0
    price_out: float = 0.0
    log_prompts: bool = False
    #: Never ask servers to hold replies to the known choices (see docs/models.md).
    free_replies: bool = False
    cache: Optional[str] = None
    no_cache: bool = False
    #: A recorded run's save dir: each model request is answered from its recorded replies where it has them
    #: (:mod:`lits.lm.replay`); ``offline``: a request it has none for fails its instance, unpaid.
    replay_from: Optional[str] = None
    offline: bool = False
    executor: Literal["local", "ray"] = "local"
    ray_address: Optional[str] = None
    save_dir: Optional[Path] = None
    #: Start the commands and send keys to the servers that a file (``--config``, a run's config.json) names,
    #: unasked (``--trust-config``); never recorded, and no file can set it (see :mod:`lits.runs.trust`).
    trust_config: bool = False
    #: Print the command line's progress (the run's first line, a status line per instance) to stderr; a
    #: library call may pass ``progress=False``.  How it runs only: never recorded.
    progress: bool = True
    #: What was given outside any file (None: all of it, as a Python call gives it).
    _given: Optional[Given] = PrivateAttr(default=None)

    def __init__(self, /, **values: Any) -> None:
        """``RunSpec(...)`` checks as :meth:`make` does: a bad value is one :class:`SpecError` line."""
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise _spec_error(exc) from None

    @classmethod
    def make(cls, **values: object) -> "RunSpec":
        """A spec, or one :class:`SpecError` line for the first bad field."""
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise _spec_error(exc) from None

    @field_validator("*")
    @classmethod
    def _finite(cls, value: object, info: ValidationInfo) -> object:
        """No number in any setting is nan or infinite (a component's model args: :func:`check_model_args`)."""
        found = None if info.field_name == "component_models" else non_finite(value)
        if found is not None:
            where, number = found
            raise ValueError(f"must hold finite numbers only ({where} is {number})" if where else
                             f"must be a finite number, not {number}")
        return value

    @field_validator("model", mode="before")
    @classmethod
    def _model(cls, value: object) -> object:
        return "local" if value in (None, "") else value

    @field_validator("policy", "transition", "reward")
    @classmethod
    def _component(cls, value: ComponentChoice, info: ValidationInfo) -> ComponentChoice:
        """A registered name, or a class or object of the role's base class: anything else (``policy=42``)
        would fail only when the run builds it."""
        if value is None or isinstance(value, str):
            return value
        from lits.components.base import Policy, RewardModel, Transition

        bases: dict[str, type] = {"policy": Policy, "transition": Transition, "reward": RewardModel}
        base = bases[str(info.field_name)]
        if isinstance(value, base) or (isinstance(value, type) and issubclass(value, base)):
            return value
        shown = " ".join(repr(value).split())[:80]
        raise ValueError(f"must be a registered {info.field_name} name (see `lits plugins`), a "
                         f"lits.components.base.{base.__name__} subclass or an object of one, not {shown}")

    @field_validator("offset")
    @classmethod
    def _offset(cls, value: int) -> int:
        if value < 0:
            raise ValueError("must be 0 or more")
        return value

    @field_validator("limit", "concurrency", "attempts")
    @classmethod
    def _at_least_one(cls, value: Optional[int]) -> Optional[int]:
        if value is not None and value < 1:
            raise ValueError("must be at least 1")
        return value

    @field_validator("budget")
    @classmethod
    def _budget(cls, value: Optional[str]) -> Optional[str]:
        from lits.runs.budget import parse_budget

        if value is not None:
            try:
                parse_budget(value)
            except UserError as exc:
                raise ValueError(str(exc).removeprefix("--budget ")) from None
        return value

    @field_validator("call_budget", "read_timeout")
    @classmethod
    def _seconds(cls, value: Optional[float]) -> Optional[float]:
        if value is not None and value <= 0:
            raise ValueError("must be more than 0 seconds")
        return value

    @field_validator("price_in", "price_out")
    @classmethod
    def _price(cls, value: float) -> float:
        if value < 0:
            raise ValueError("must be 0 or more")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "RunSpec":
        if self.resource_args and not self.resource:
            raise ValueError(f"resource_args {_ACROSS['resource_args'][0]}")
        if self.ray_address is not None and self.executor != "ray":
            raise ValueError(f"ray_address {_ACROSS['ray_address'][0]}")
        if self.offline and not self.replay_from:
            raise ValueError(f"offline {_ACROSS['offline'][0]}")
        if self.replay_from and (self.no_cache or self.executor == "ray"):
            raise ValueError(f"replay_from {_ACROSS['replay_from'][0]}")
        other = "chain" if self.command == "search" else "search"
        for name in (other, f"{other}_args", *(("search_framework", "reward") if other == "search" else ())):
            if getattr(self, name):
                raise ValueError(f"{name} is for {other} runs, and this is a {self.command} run")
        if self.budget is not None and (self.command != "chain" or self.executor == "ray" or self.attempts > 1):
            raise ValueError("budget spreads self-consistency chains over one local run (lits chain --chain sc, "
                             "without --attempts or --executor ray)")
        from lits.runs.model_specs import check_model_args

        for role, chosen in self.component_models.items():
            chosen.args = check_model_args(role, chosen.args)
        if self.executor == "ray" and self.objects():
            raise ValueError("components given as objects cannot be sent to Ray workers; register them "
                             "in a plugin and pass their names")
        return self

    def with_fields(self, **fields: object) -> "RunSpec":
        """This spec with ``fields`` changed (checked again); what came from a file still counts as a file's."""
        if not fields:
            return self
        merged = RunSpec.make(**{**{name: getattr(self, name) for name in self.model_fields_set}, **fields})
        if self._given is None:
            return merged
        merged._given = self._given
        return merged.given_in_file(fields)

    def confirmation(self) -> Confirmation:
        """Who stands behind this spec's commands and key destinations (see :mod:`lits.runs.trust`)."""
        return Confirmation(given=self._given, trusted=self.trust_config)

    def given_in_file(self, outside: Mapping[str, object]) -> "RunSpec":
        """This spec, marked as read from a file but for the fields in ``outside`` (given on the command line
        or in the call): what they name needs no confirmation, the rest does."""
        self._given = given_values(outside) | (self._given or Given())
        return self

    def objects(self) -> dict[str, object]:
        """The components given as classes or objects rather than registered names."""
        return {role: value for role in ("policy", "transition", "reward")
                if (value := getattr(self, role)) is not None and not isinstance(value, str)}

    def resolved_concurrency(self) -> int:
        """``concurrency``, else 1 for in-process models and 16 for a server (the largest over components)."""
        if self.concurrency is not None:
            return self.concurrency
        names = [self.model, *(m.model for m in self.component_models.values() if m.model)]
        return max(default_concurrency(name) for name in names)

    def default_save_dir(self, *, claim: bool = False) -> Path:
        """``runs/DATASET-METHOD-TIME``; a run started in the same second as another gets ``-2``, ``-3`` ...

        ``claim``: create the directory here (exclusively), so two runs started at once never share one."""
        name = (self.search_framework or self.search or "mcts") if self.command == "search" else (self.chain or "chain")
        base = Path("runs") / f"{self.dataset}-{name}-{time.strftime('%Y%m%d-%H%M%S')}"
        candidate, n = base, 1
        while True:
            if not claim:
                if not candidate.exists():
                    return candidate
            else:
                try:
                    candidate.mkdir(parents=True)
                    return candidate
                except FileExistsError:
                    pass
                except OSError:  # not writable: the caller's check says so in one line
                    return candidate
            n += 1
            candidate = base.with_name(f"{base.name}-{n}")

    def settings(self) -> RunSettings:
        """The settings recorded in ``config.json``: every field but the save dir, objects by class name."""
        from lits import __version__

        models: dict[str, GivenModel] = {role: {"model": m.model, "base_url": m.base_url, "args": dict(m.args)}
                                         for role, m in self.component_models.items()}
        out: RunSettings = {
            "command": self.command, "dataset": self.dataset, "dataset_args": dict(self.dataset_args),
            "offset": self.offset, "limit": self.limit, "resource": self.resource,
            "resource_args": dict(self.resource_args),
            "policy": component_name(self.policy), "transition": component_name(self.transition),
            "model": self.model, "base_url": self.base_url, "api": self.api,
            "component_models": models,
            "concurrency": self.resolved_concurrency(),
            "call_budget": self.call_budget, "read_timeout": self.read_timeout,
            "price_in": self.price_in, "price_out": self.price_out, "log_prompts": self.log_prompts,
            "cache": self.cache, "no_cache": self.no_cache, "executor": self.executor,
            "ray_address": self.ray_address, "lits_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        if self.free_replies:  # absent otherwise, as in runs made before the setting existed
            out["free_replies"] = True
        if self.replay_from:  # absent otherwise, likewise; offline is the command's, not the run's
            out["replay_from"], out["offline"] = str(Path(self.replay_from).expanduser().absolute()), self.offline
        if self.attempts != 1 or self.memory_args:  # absent otherwise: a run without them records what it did
            out["attempts"], out["memory_args"] = self.attempts, dict(self.memory_args)
        if self.budget is not None:  # absent otherwise, as in runs made before the setting existed
            from lits.runs.budget import parse_budget

            out["budget"] = parse_budget(self.budget).as_setting()
        if self.command == "search":
            out["search"], out["reward"] = self.search, component_name(self.reward)
            out["search_framework"], out["search_args"] = self.search_framework, dict(self.search_args)
            if self.reward_args:  # absent otherwise, as in runs made before the setting existed
                out["reward_args"] = dict(self.reward_args)
        else:
            out["chain"], out["chain_args"] = self.chain, dict(self.chain_args)
        return out

    @classmethod
    def from_layers(cls, config_file: Optional[str], given: Mapping[str, object], sets: list[str]) -> "RunSpec":
        """A spec from a config file, then values given (a mapping field's keys merge), then ``--set``
        overrides: what ``lits search --config F ... --set K=V`` describes."""
        values = read_spec_file(config_file) if config_file else {}
        if "trust_config" in values:
            raise UserError(f"{config_file}: trust_config cannot be set in a file; give --trust-config on the "
                            "command line")
        from_file = set(values)
        command = given.get("command")
        if command and values.get("command", command) != command:
            raise UserError(f"{config_file} describes a {values['command']} run; run it with "
                            f"`lits {values['command']}`")
        for key, value in given.items():
            if isinstance(value, dict) and isinstance(before := values.get(key), dict):
                value = {**before, **value}
            values[key] = value
        values = apply_overrides(values, sets)
        if not values.get("dataset"):
            raise SpecError("dataset", "is required (see `lits plugins` for registered datasets)")
        try:
            spec = cls.make(**values)
        except SpecError as exc:
            root = exc.field.split(".")[0]
            if config_file and root in from_file and root not in given and not any(
                    pair.replace("-", "_").startswith(root) for pair in sets):
                exc.source = str(config_file)  # the file holds the bad value: the line names it, not a flag
            raise
        return spec.given_in_file({**given, **apply_overrides({}, sets)}) if config_file else spec

    @classmethod
    def from_file(cls, path: str | Path, **fields: object) -> "RunSpec":
        """A spec from a TOML or YAML run file, as ``lits search --config PATH`` reads it, with ``fields``
        given in the call on top (a mapping field's keys merge).  Like any file's, the commands and key
        destinations it names need ``trust_config=True`` (or confirming) before a run uses them."""
        return cls.from_layers(str(path), fields, [])

    @classmethod
    def from_config(cls, config: Mapping[str, object], **changes: object) -> "RunSpec":
        """The spec a recorded ``config.json`` was made from (for ``lits rerun``), with ``changes`` applied."""
        fields = set(cls.model_fields) - {"save_dir", "trust_config", "progress"}
        values = {key: value for key, value in config.items() if key in fields}
        if isinstance(models := values.get("component_models"), dict):  # config.json keeps api_key_env as key_env
            values["component_models"] = {role: _given_model(spec) for role, spec in models.items()}
        for role in ("policy", "transition", "reward"):
            if str(values.get(role) or "").startswith(OBJECT_PREFIX):
                raise UserError(f"the run's {role} was an object ({str(values[role])[len(OBJECT_PREFIX):]}), which "
                                "config.json cannot rebuild; run it again from Python with the same object")
        return cls.make(**{**values, **changes}).given_in_file(changes)


#: How config.json names a component that was given as a class or an object.
OBJECT_PREFIX = "object:"
#: Settings that may change when a run is resumed: where and how calls are made, not what is computed.
OPERATIONAL_FIELDS = frozenset({"concurrency", "base_url", "call_budget", "read_timeout", "price_in", "price_out",
                                "executor", "ray_address", "log_prompts", "cache", "no_cache"})


def _given_model(spec: object) -> object:
    """A component's model as config.json records it, as it is given (``key_env`` back to ``api_key_env``)."""
    from lits.runs.model_specs import KEY_ENV

    if not isinstance(spec, dict) or not isinstance(args := spec.get("args"), dict) or KEY_ENV not in args:
        return spec
    return {**spec, "args": {("api_key_env" if k == KEY_ENV else k): v for k, v in args.items()}}


def component_name(value: ComponentChoice) -> Optional[str]:
    if value is None or isinstance(value, str):
        return value
    cls = value if isinstance(value, type) else type(value)
    return f"{OBJECT_PREFIX}{cls.__module__}.{cls.__qualname__}"


def parse_value(text: str) -> object:
    """``10`` -> 10, ``0.5`` -> 0.5, ``true`` -> True, ``null`` -> None, else the string."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return json.loads(text)
    except ValueError:
        return text


def read_spec_file(path: str | Path) -> dict[str, object]:
    """A run's fields from a TOML (``.toml``) or YAML (``.yaml``/``.yml``) file, as a mapping of field names."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot read the config file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path} is not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x}); save it "
                        "as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)") from None
    if path.suffix in (".yaml", ".yml"):
        from lits.extras import require

        yaml = require("yaml", install="pyyaml", what=f"{path} (YAML; or write it as TOML)", package="PyYAML")
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise UserError(f"{path} is not valid YAML: {' '.join(str(exc).split())}") from None
    elif path.suffix == ".toml":
        import tomllib

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise UserError(f"{path} is not valid TOML: {exc}") from None
    else:
        raise UserError(f"{path}: a config file is .toml, .yaml or .yml")
    if not isinstance(data, dict):
        raise UserError(f"{path} must hold a table of run settings (dataset = ..., search_args = {{...}})")
    return {str(key).replace("-", "_"): value for key, value in data.items()}


def apply_overrides(values: Mapping[str, object], pairs: list[str]) -> dict[str, object]:
    """``--set field=value`` and ``--set search_args.n_iterations=20``: a field, or one key of a mapping field."""
    out = {key: dict(value) if isinstance(value, dict) else value for key, value in values.items()}
    for pair in pairs:
        path, sep, text = pair.partition("=")
        if not sep or not path.strip():
            raise UserError(f"--set expects FIELD=VALUE or FIELD.KEY=VALUE, got {pair!r}")
        field, _, key = path.strip().replace("-", "_").partition(".")
        if field not in RunSpec.model_fields:
            raise SpecError(field, "is not a run setting" + _closest(field)).flagless("--set ")
        if key:
            inner = out.get(field)
            if inner is not None and not isinstance(inner, dict):
                raise UserError(f"--set {path}: {field} is not a mapping of settings")
            out[field] = {**(inner or {}), key: parse_value(text)}
        else:
            out[field] = parse_value(text)
    return out


def _closest(name: str) -> str:
    close = difflib.get_close_matches(name, list(RunSpec.model_fields), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def default_concurrency(model: Optional[str]) -> int:
    from lits.runs.model_specs import is_gguf

    return 1 if model in (None, "", "local", "scripted") or is_gguf(model) else SERVER_CONCURRENCY


def _spec_error(exc: ValidationError) -> SpecError:
    """The first problem pydantic found, as ``field problem`` in plain words."""
    err = exc.errors()[0]
    loc = [str(part) for part in err.get("loc", ())]
    message = str(err.get("msg", "is not valid")).removeprefix("Value error, ")
    if not loc:  # a check across fields names its field itself
        field, _, problem = message.partition(" ")
        return SpecError(field, problem, _ACROSS.get(field, (None, None))[1])
    if err.get("type") == "extra_forbidden" and len(loc) > 1:  # a key inside a mapping field's entry
        model_fields = list(ComponentModel.model_fields) if loc[0] == "component_models" else []
        close = difflib.get_close_matches(loc[-1], model_fields, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return SpecError(".".join(loc), f"is not a setting{hint}; the settings: {', '.join(model_fields)}"
                         if model_fields else "is not a setting")
    if err.get("type") == "extra_forbidden":
        return SpecError(loc[0], "is not a run setting" + _closest(loc[0]))
    if loc[0] == "component_models" and loc[-1] == "[key]":  # a misspelled role
        roles = list(get_args(Role))
        close = difflib.get_close_matches(loc[1], roles, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return SpecError(f"component_models.{loc[1]}", f"is not a component with its own model{hint}; "
                         f"the components: {', '.join(roles)}")
    if err.get("type") == "missing":
        return SpecError(loc[0], "is required")
    problem = message if message.startswith(("must", "needs", "is ")) else f"is not valid: {message}"
    return SpecError(".".join(loc), problem)
