"""A run as one typed object: what the CLI parses its flags into and :func:`lits.run` takes.

Every setting of a ``lits search`` / ``lits chain`` run has one field here, checked when
the spec is made (a bad value is one :class:`SpecError` line naming the field).  The spec
becomes the record in ``config.json`` (:class:`lits.runs.record.RunRecord`), so a run made
from Python and the same run made from the command line write the same files.
"""

from __future__ import annotations

import difflib
import json
import math
import time
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Self, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from lits.errors import UserError
from lits.runs.model_specs import Role
from lits.runs.trust import Confirmation, Given, given_values

#: A component given by registered name, by class, or as an object built by the caller.
ComponentChoice = str | type | object | None


#: Checks across fields, as the Python API and the command line say them: field -> (problem, flag problem).
_ACROSS = {
    "resource_args": ("needs resource NAME (e.g. resource='mcp')", "needs --resource NAME (e.g. --resource mcp)"),
    "ray_address": ("needs executor='ray'", "needs --executor ray"),
    "offline": (
        "needs replay_from=RUN (it refuses to pay for what RUN did not record)",
        "needs --replay-from RUN (it refuses to pay for what RUN did not record)",
    ),
    "replay_from": (
        "answers through the response cache: drop no_cache, and run with executor='local'",
        "answers through the response cache: drop --no-cache, and run with --executor local",
    ),
}


class SpecError(UserError):
    """A spec field with a bad value: ``field`` and what is wrong with it."""

    def __init__(self, field: str, problem: str, flag_problem: str | None = None) -> None:
        super().__init__(f"{field} {problem}")
        self.field, self.problem, self.flag_problem = field, problem, flag_problem
        #: The config file the bad value came from, when it did.
        self.source: str | None = None

    def __str__(self) -> str:
        return (
            f"{self.source}: {self.field} {self.problem} (fix it in the file)"
            if self.source
            else f"{self.field} {self.problem}"
        )

    def flagless(self, prefix: str) -> UserError:
        """The same problem after ``prefix`` (``--set limt is not a run setting ...``)."""
        return UserError(f"{prefix}{self}")

    def as_flag(self) -> str:
        """The same problem named as the command line's flag (``--call-budget must be ...``), or as the config
        file's key (``run.toml: component_models.polcy is not ...``) when the value came from the file."""
        if self.source:
            return str(self)
        declared = settings_declared().get(self.field)
        flag = declared.flag if declared and not declared.hand_written else None
        return f"{flag or '--' + self.field.replace('_', '-')} {self.flag_problem or self.problem}"


#: The option groups of ``lits search``/``lits chain``; "search" and "chain" options are their command's own.
Group = Literal["data", "model", "run", "search", "chain"]


@dataclass(frozen=True)
class Setting:
    """What a :class:`RunSpec` field is to the user: its flag and help, and whether it changes what the run
    computes (``--resume`` and :func:`lits.resume` refuse a different value) or only how it runs.

    The command line's options, the resume rules and ``docs/run-settings.md`` are made from these."""

    #: The ``lits search``/``lits chain`` option group, None for a field with no flag.
    group: Group | None
    help: str
    computes: bool
    metavar: str | None = None
    #: The flag when it is not ``--field-name`` (``K=V`` fields: ``--dataset-arg`` for ``dataset_args``).
    flag: str | None = None
    #: Its options are written out in the CLI (the ``--ROLE-model`` family), not made from the field.
    hand_written: bool = False

    @property
    def dest(self) -> str:
        """The flag's name in the parsed flags (``dataset_arg`` for ``--dataset-arg``)."""
        return str(self.flag).lstrip("-").replace("-", "_")


class ComponentModel(BaseModel):
    """One component's own model (``--policy-model`` and its base URL and args)."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    base_url: str | None = None
    args: dict[str, object] = Field(default_factory=dict)


class RunSpec(BaseModel):
    """Everything a run needs; the defaults are the command line's.

    Each field declares its :class:`Setting` (flag, help, whether it changes what the run computes); adding a
    field here adds its flag, its resume rule and its row in ``docs/run-settings.md``."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    command: Annotated[
        Literal["search", "chain"], Setting(None, "the kind of run: `lits search` or `lits chain`", computes=True)
    ] = "search"
    # data
    dataset: Annotated[str, Setting("data", "registered dataset name (e.g. blocksworld)", computes=True)] = Field(
        min_length=1
    )
    dataset_args: Annotated[
        dict[str, object], Setting("data", "keyword argument for the dataset loader (repeatable)", computes=True)
    ] = Field(default_factory=dict)
    offset: Annotated[int, Setting("data", "skip the first N instances (default 0)", computes=True)] = 0
    limit: Annotated[int | None, Setting("data", "run at most N instances", computes=True)] = None
    resource: Annotated[
        str | None,
        Setting(
            "data",
            "tools from this registered resource instead of the dataset's own (tool-use datasets), "
            "e.g. 'mcp' for an MCP server's tools",
            computes=True,
            metavar="NAME",
        ),
    ] = None
    resource_args: Annotated[
        dict[str, object],
        Setting(
            "data",
            'keyword argument for the resource, e.g. command="python -m my_server", '
            "url=http://127.0.0.1:PORT/mcp, timeout=SECONDS (repeatable)",
            computes=True,
        ),
    ] = Field(default_factory=dict)
    # model
    model: Annotated[
        str,
        Setting(
            "model",
            "'local' (embedded Gemma 3 270M, the default), 'scripted' (offline echo for "
            "smoke tests), a .gguf file (llama.cpp in process), or a model name served at --base-url",
            computes=True,
        ),
    ] = "local"
    base_url: Annotated[
        str | None,
        Setting(
            "model",
            "OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 (default: $OPENAI_BASE_URL); "
            "the key comes only from $OPENAI_API_KEY or $LITS_API_KEY",
            computes=False,
        ),
    ] = None
    api: Annotated[
        Literal["chat", "completion"] | None,
        Setting("model", "endpoint to use on the server (default: chat)", computes=True),
    ] = None
    component_models: Annotated[
        dict[Role, ComponentModel],
        Setting(
            "model",
            "a component's own model, server and model settings (policy, eval, transition, bn); on resume "
            "only its base URL, api_key_env and constraints may change",
            computes=True,
            flag="--ROLE-model, --ROLE-base-url, --ROLE-model-arg",
            hand_written=True,
        ),
    ] = Field(default_factory=dict)
    concurrency: Annotated[
        int | None,
        Setting(
            "model",
            "model calls in flight at once, across instances (default: 16 against a server, "
            "1 for the embedded or scripted model; recorded in config.json)",
            computes=False,
        ),
    ] = None
    call_budget: Annotated[
        float | None,
        Setting(
            "model",
            "time one model call may take, retries of server faults included (default 300)",
            computes=False,
            metavar="SECONDS",
        ),
    ] = None
    read_timeout: Annotated[
        float | None,
        Setting(
            "model",
            "time one attempt waits for the server's reply (default 60; a hang costs at most this)",
            computes=False,
            metavar="SECONDS",
        ),
    ] = None
    cache: Annotated[
        str | None,
        Setting(
            "model",
            "response cache file (default: cache.sqlite in the save dir); "
            "share one between runs to never pay twice for a call (keyed on the model name "
            "and request, not the server's address)",
            computes=False,
            metavar="PATH",
        ),
    ] = None
    no_cache: Annotated[bool, Setting("model", "do not read or write the response cache", computes=False)] = False
    log_prompts: Annotated[
        bool,
        Setting(
            "model",
            "also record each call's prompt and reply in inference.jsonl (shown by `lits view`; "
            "makes the log many times larger)",
            computes=False,
        ),
    ] = False
    #: Replies held to the known choices or not are different replies: resume refuses a change (docs/models.md).
    free_replies: Annotated[
        bool,
        Setting(
            "model",
            "never ask the server to hold replies to the known choices (legal actions, Yes/No "
            "lines); measures the model's own format-following (recorded in config.json)",
            computes=True,
        ),
    ] = False
    price_in: Annotated[float, Setting("model", "price per 1M input tokens (default 0)", computes=False)] = 0.0
    price_out: Annotated[float, Setting("model", "price per 1M output tokens (default 0)", computes=False)] = 0.0
    # run
    save_dir: Annotated[
        Path | None, Setting("run", "where all run artifacts go (default: runs/NAME-TIME)", computes=False)
    ] = None
    executor: Annotated[
        Literal["local", "ray"],
        Setting(
            "run",
            "where instances run: 'local' (threads of this process, the default) or 'ray' (tasks "
            "on a Ray cluster; needs lits-core[ray], and LiTS and the run's plugins on every node)",
            computes=False,
        ),
    ] = "local"
    ray_address: Annotated[
        str | None,
        Setting(
            "run",
            "with --executor ray: the cluster to join, 'auto' (the running one) or HOST:PORT "
            "(default: start a local Ray instance for this run)",
            computes=False,
            metavar="ADDR",
        ),
    ] = None
    #: Never recorded, and no file can set it (see :mod:`lits.runs.trust`).
    trust_config: Annotated[
        bool,
        Setting(
            "run",
            "start the commands (e.g. resource_args.command) and send the API key to the base URLs "
            "that --config or, with --resume, the run's config.json names; without it a run asks "
            "at a terminal, else stops in one line (see docs/models.md)",
            computes=False,
        ),
    ] = False
    #: An attempt that solves ends the instance (pass@N).
    attempts: Annotated[
        int,
        Setting(
            "run",
            "try each instance up to N times; an attempt that solves ends it (pass@1 and pass@N in "
            "the summary; default 1)",
            computes=True,
            metavar="N",
        ),
    ] = 1
    memory_args: Annotated[
        dict[str, object],
        Setting(
            "run",
            "memory between attempts: augmentors=fact,reflection (see `lits plugins`), and their "
            "options, e.g. max_facts=8 (repeatable)",
            computes=True,
        ),
    ] = Field(default_factory=dict)
    #: A recorded run's save dir: each model request is answered from its recorded replies where it has them
    #: (:mod:`lits.lm.replay`).
    replay_from: Annotated[
        str | None,
        Setting(
            "run",
            "answer each model request from the replies the run in RUN recorded (its response "
            "cache): the k-th sample of a request is the k-th recorded; only what RUN lacks is paid "
            "for (see docs/comparing-methods.md)",
            computes=True,
            metavar="RUN",
        ),
    ] = None
    #: A request the recorded run has no reply for fails its instance, unpaid; said again by each command.
    offline: Annotated[
        bool,
        Setting(
            "run",
            "with --replay-from: pay for nothing; an instance asking what RUN did not record fails, "
            "named in one line (give it again with each --resume)",
            computes=False,
        ),
    ] = False
    policy: Annotated[
        ComponentChoice, Setting("run", "registered policy name (default: by dataset, else generic)", computes=True)
    ] = None
    transition: Annotated[
        ComponentChoice, Setting("run", "registered transition name (default: the dataset's)", computes=True)
    ] = None
    # search runs
    search: Annotated[
        str | None,
        Setting("search", "registered search algorithm (default: the search framework's, else mcts)", computes=True),
    ] = None
    search_args: Annotated[
        dict[str, object],
        Setting(
            "search", "search setting, e.g. n_iterations=10 (see the algorithm's config; repeatable)", computes=True
        ),
    ] = Field(default_factory=dict)
    search_framework: Annotated[
        str | None,
        Setting(
            "search",
            "a registered bundle of policy, transition and reward (e.g. rest, tot_bfs, rap); "
            "--policy/--transition/--reward still override its parts",
            computes=True,
            metavar="NAME",
        ),
    ] = None
    reward: Annotated[ComponentChoice, Setting("search", "registered reward model name", computes=True)] = None
    #: Keywords of the reward model's class, checked when it is built.
    reward_args: Annotated[
        dict[str, object],
        Setting(
            "search",
            "reward model setting, e.g. separator='<extra_0>' for prm-classifier (see "
            "lits plugins --show NAME; repeatable)",
            computes=True,
        ),
    ] = Field(default_factory=dict)
    # chain runs
    chain: Annotated[str | None, Setting("chain", "registered chain agent (default: by task type)", computes=True)] = (
        None
    )
    chain_args: Annotated[
        dict[str, object], Setting("chain", "chain setting, e.g. max_steps=10 (repeatable)", computes=True)
    ] = Field(default_factory=dict)
    #: ``tokens=N``, ``calls=N`` or ``seconds=N``: one compute budget for the run (:mod:`lits.runs.sweeps.rounds`).
    budget: Annotated[
        str | None,
        Setting(
            "run",
            "one compute budget for the whole run, tokens=N, calls=N or seconds=N (model seconds): "
            "--chain sc draws up to k chains per instance and MCTS / BFS up to their iterations / depths; "
            "an instance whose answer settled stops and what it did not spend goes to the others",
            computes=True,
            metavar="UNIT=N",
        ),
    ] = None
    #: A library call may pass ``progress=False``.
    progress: Annotated[
        bool,
        Setting(
            None,
            "print the command line's progress (the run's first line, a status line per instance) to "
            "stderr; never recorded",
            computes=False,
        ),
    ] = True
    #: What was given outside any file (None: all of it, as a Python call gives it).
    _given: Given | None = PrivateAttr(default=None)

    def __init__(self, /, **values: Any) -> None:
        """``RunSpec(...)`` checks as :meth:`make` does: a bad value is one :class:`SpecError` line."""
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise _spec_error(exc) from None

    @classmethod
    def make(cls, **values: object) -> Self:
        """A spec, or one :class:`SpecError` line for the first bad field."""
        return cls(**values)  # checked once: model_validate would run __init__'s checks, then the after-checks again

    @field_validator("*")
    @classmethod
    def _finite(cls, value: object, info: ValidationInfo) -> object:
        """No number in any setting is nan or infinite (a component's model args: :func:`check_model_args`)."""
        found = None if info.field_name == "component_models" else non_finite(value)
        if found is not None:
            where, number = found
            raise ValueError(
                f"must hold finite numbers only ({where} is {number})"
                if where
                else f"must be a finite number, not {number}"
            )
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
        raise ValueError(
            f"must be a registered {info.field_name} name (see `lits plugins`), a "
            f"lits.components.base.{base.__name__} subclass or an object of one, not {shown}"
        )

    @field_validator("offset")
    @classmethod
    def _offset(cls, value: int) -> int:
        if value < 0:
            raise ValueError("must be 0 or more")
        return value

    @field_validator("limit", "concurrency", "attempts")
    @classmethod
    def _at_least_one(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError("must be at least 1")
        return value

    @field_validator("budget")
    @classmethod
    def _budget(cls, value: str | None) -> str | None:
        from lits.runs.compute_budget import parse_budget

        if value is not None:
            try:
                parse_budget(value)
            except UserError as exc:
                raise ValueError(str(exc).removeprefix("--budget ")) from None
        return value

    @field_validator("call_budget", "read_timeout")
    @classmethod
    def _seconds(cls, value: float | None) -> float | None:
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
        if self.budget is not None and (self.executor == "ray" or self.attempts > 1):
            raise ValueError(
                "budget spreads self-consistency chains or search iterations over one local run "
                "(without --attempts or --executor ray)"
            )
        from lits.runs.model_specs import check_model_args

        for role, chosen in self.component_models.items():
            chosen.args = check_model_args(role, chosen.args)
        if self.executor == "ray" and self.objects():
            raise ValueError(
                "components given as objects cannot be sent to Ray workers; register them "
                "in a plugin and pass their names"
            )
        return self

    def with_fields(self, **fields: object) -> "RunSpec":
        """This spec with ``fields`` changed (checked again); what came from a file still counts as a file's."""
        if not fields:
            return self
        current = {name: getattr(self, name) for name in self.model_fields_set}
        if "component_models" in current:  # as given again: a checked model's key_env is its api_key_env
            current["component_models"] = {
                role: given_model(chosen.model_dump()) for role, chosen in self.component_models.items()
            }
        merged = RunSpec.make(**{**current, **fields})
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
        return {
            role: value
            for role in ("policy", "transition", "reward")
            if (value := getattr(self, role)) is not None and not isinstance(value, str)
        }

    def resolved_concurrency(self) -> int:
        """``concurrency``, else the largest its models' backends declare (1 in process, 16 for a server)."""
        if self.concurrency is not None:
            return self.concurrency
        from lits.lm.factory import default_concurrency

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

    @classmethod
    def from_layers(cls, config_file: str | None, given: Mapping[str, object], sets: list[str]) -> "RunSpec":
        """A spec from a config file, then values given (a mapping field's keys merge), then ``--set``
        overrides: what ``lits search --config F ... --set K=V`` describes."""
        values = read_spec_file(config_file) if config_file else {}
        if "trust_config" in values:
            raise UserError(
                f"{config_file}: trust_config cannot be set in a file; give --trust-config on the command line"
            )
        from_file = set(values)
        command = given.get("command")
        if command and values.get("command", command) != command:
            raise UserError(
                f"{config_file} describes a {values['command']} run; run it with `lits {values['command']}`"
            )
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
            if (
                config_file
                and root in from_file
                and root not in given
                and not any(pair.replace("-", "_").startswith(root) for pair in sets)
            ):
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
        fields = set(cls.model_fields) - UNRECORDED
        values = {key: value for key, value in config.items() if key in fields}
        if isinstance(models := values.get("component_models"), dict):  # config.json keeps api_key_env as key_env
            values["component_models"] = {role: given_model(spec) for role, spec in models.items()}
        for role in ("policy", "transition", "reward"):
            if str(values.get(role) or "").startswith(OBJECT_PREFIX):
                raise UserError(
                    f"the run's {role} was an object ({str(values[role])[len(OBJECT_PREFIX) :]}), which "
                    "config.json cannot rebuild; run it again from Python with the same object"
                )
        return cls.make(**{**values, **changes}).given_in_file(changes)


#: How config.json names a component that was given as a class or an object.
OBJECT_PREFIX = "object:"
#: Fields config.json never records: where the run goes, and how this call runs it.
UNRECORDED = frozenset({"save_dir", "trust_config", "progress"})


@cache
def settings_declared() -> dict[str, Setting]:
    """Every :class:`RunSpec` field's :class:`Setting`, in field order, its ``flag`` filled in (None: no flag)."""
    out: dict[str, Setting] = {}
    for name, info in RunSpec.model_fields.items():
        declared = next(m for m in info.metadata if isinstance(m, Setting))
        flag = declared.flag
        if flag is None and declared.group is not None:  # a K=V field's flag names one pair: --dataset-arg
            flag = "--" + (name.removesuffix("s") if name.endswith("_args") else name).replace("_", "-")
        out[name] = replace(declared, flag=flag)
    return out


#: Settings that may change when a run is resumed: where and how calls are made, not what is computed.
OPERATIONAL_FIELDS = frozenset(
    name for name, declared in settings_declared().items() if not declared.computes and name not in UNRECORDED
)


def given_model(spec: object) -> object:
    """A component's model as config.json records it, as it is given (``key_env`` back to ``api_key_env``)."""
    from lits.runs.model_specs import KEY_ENV

    if not isinstance(spec, dict) or not isinstance(args := spec.get("args"), dict) or KEY_ENV not in args:
        return spec
    return {**spec, "args": {("api_key_env" if k == KEY_ENV else k): v for k, v in args.items()}}


def component_name(value: ComponentChoice) -> str | None:
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
        raise UserError(
            f"{path} is not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x}); save it "
            "as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)"
        ) from None
    if path.suffix in (".yaml", ".yml"):
        from lits.runtime.extras import require

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
        return SpecError(
            ".".join(loc),
            f"is not a setting{hint}; the settings: {', '.join(model_fields)}" if model_fields else "is not a setting",
        )
    if err.get("type") == "extra_forbidden":
        return SpecError(loc[0], "is not a run setting" + _closest(loc[0]))
    if loc[0] == "component_models" and loc[-1] == "[key]":  # a misspelled role
        roles = list(get_args(Role))
        close = difflib.get_close_matches(loc[1], roles, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return SpecError(
            f"component_models.{loc[1]}",
            f"is not a component with its own model{hint}; the components: {', '.join(roles)}",
        )
    if err.get("type") == "missing":
        return SpecError(loc[0], "is required")
    problem = message if message.startswith(("must", "needs", "is ")) else f"is not valid: {message}"
    return SpecError(".".join(loc), problem)


def non_finite(value: object, where: str = "") -> tuple[str, float] | None:
    """(where, number) of the first nan or infinity in a setting (or the mappings and lists it holds), else
    None.  No setting means anything with one: a budget of nan seconds retries forever, a price of nan
    makes every cost nan."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (where, value)
    if isinstance(value, Mapping):
        items = [(str(key), inner) for key, inner in value.items()]
    elif isinstance(value, (list, tuple)):
        items = [(str(index), inner) for index, inner in enumerate(value)]
    else:
        return None
    for key, inner in items:
        found = non_finite(inner, f"{where}.{key}" if where else key)
        if found is not None:
            return found
    return None
