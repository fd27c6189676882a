"""What a run records in ``config.json``: its resolved spec, and what the run adds (the environment, the models
it used, each resume).

A :class:`RunRecord` *is* a :class:`~lits.runs.spec.RunSpec` (resolved: names for components, the concurrency
it runs at, the agent's full settings), so a field added to the spec is recorded, read back and resumed with
no change here; at its default it is left out of ``config.json``, and a run made before it existed reads the
same.  The file's layout (which keys, in which order) is the one runs wrote before the record existed: a run
directory made by an older LiTS is read, resumed and written back byte for byte.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Mapping, TypedDict

from pydantic import ConfigDict, Field, PrivateAttr

from lits.runs.spec import UNRECORDED, RunSpec, component_name, given_model


class GivenModel(TypedDict, total=False):
    """One component's own model as given (``--policy-model``, its base URL and ``--policy-model-arg``)."""

    model: str | None
    base_url: str | None
    args: dict[str, object]


#: Fields every run records, at their default too (runs have always written them), in config.json's order.
ALWAYS = (
    "command",
    "dataset",
    "dataset_args",
    "offset",
    "limit",
    "resource",
    "resource_args",
    "policy",
    "transition",
    "model",
    "base_url",
    "api",
    "component_models",
    "concurrency",
    "call_budget",
    "read_timeout",
    "price_in",
    "price_out",
    "log_prompts",
    "cache",
    "no_cache",
    "executor",
    "ray_address",
    "lits_version",
    "created",
)
#: The agent's fields, recorded by runs of its command at their default too.
AGENT = {"search": ("search", "reward", "search_framework", "search_args"), "chain": ("chain", "chain_args")}
#: Where older fields recorded only when used fall in config.json's order; a newer field follows them all.
LATER = (
    "free_replies",
    "replay_from",
    "offline",
    "attempts",
    "memory_args",
    "budget",
    *AGENT["search"],
    "reward_args",
    *AGENT["chain"],
)
#: Fields recorded whenever their partner is (a replay says whether it was offline; attempts and memory together).
TOGETHER = {"offline": "replay_from", "attempts": "memory_args", "memory_args": "attempts"}
#: What the run adds, after the spec's fields; each recorded once the run has it.
ADDED = ("models", "model_info", "environment", "resumed")


class RunRecord(RunSpec):
    """A run's settings as ``config.json`` holds them: made from a spec (:meth:`of`) or read back (:meth:`read`).

    Keys of an older run that no field knows are kept (``model_extra``) and written back unchanged."""

    # Built on first validation (a resume's read): a new run makes its record with model_construct.
    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True, defer_build=True)

    lits_version: str = ""
    #: When the run was made, ``2026-01-31T12:00:00``.
    created: str = ""
    #: Each component's model spec and the backend's description (:func:`lits.runs.results.provenance.record_models`).
    models: dict[str, dict[str, object]] | None = None
    #: The backend's description of ``--model``, when some component uses it.
    model_info: dict[str, object] | None = None
    environment: dict[str, object] | None = None
    #: One entry per resume: when, and the settings it changed.
    resumed: list[dict[str, object]] = Field(default_factory=list)
    #: ``LITS_RAY_CACHE`` as the Ray workers are told it: ``driver`` or ``worker``; never recorded.
    ray_cache: str | None = None
    #: The keys config.json held when this record was read from it, in its order.
    _read: tuple[str, ...] = PrivateAttr(default=())

    @classmethod
    def of(cls, spec: RunSpec) -> "RunRecord":
        """The record of a new run of ``spec``: components by name, the concurrency it runs at, a replay's
        source as an absolute path and the budget in its one spelling."""
        from lits.version import __version__

        values: dict[str, Any] = {}
        for name in RunSpec.model_fields:
            if name not in UNRECORDED:
                value = getattr(spec, name)
                values[name] = dict(value) if isinstance(value, dict) else value
        values["component_models"] = {
            role: chosen.model_copy(update={"args": dict(chosen.args)})
            for role, chosen in spec.component_models.items()
        }
        values.update({role: component_name(getattr(spec, role)) for role in ("policy", "transition", "reward")})
        values["concurrency"] = spec.resolved_concurrency()
        if spec.replay_from:
            values["replay_from"] = str(Path(spec.replay_from).expanduser().absolute())
        if spec.budget is not None:
            from lits.runs.compute_budget import parse_budget

            values["budget"] = parse_budget(spec.budget).as_setting()
        values.update(lits_version=__version__, created=time.strftime("%Y-%m-%dT%H:%M:%S"))
        return cls.model_construct(**values)  # checked as a spec already

    @classmethod
    def read(cls, config: Mapping[str, object]) -> "RunRecord":
        """The record config.json holds, checked as a spec is (a bad value is one :class:`SpecError` line).
        What is never recorded (``trust_config``...) is never read either: a file cannot set it."""
        values = {str(key): value for key, value in config.items() if key != "format" and key not in UNRECORDED}
        if isinstance(models := values.get("component_models"), dict):  # config.json keeps api_key_env as key_env
            values["component_models"] = {role: given_model(chosen) for role, chosen in models.items()}
        record = cls.make(**values)
        record._read = tuple(values)
        return record

    def as_config(self) -> dict[str, object]:
        """What ``config.json`` holds (before secrets are dropped), in its order: the keys it was read with,
        then the rest of :data:`ALWAYS`, the command's agent, the fields in use and what the run added."""
        newer = [name for name in RunSpec.model_fields if name not in (*ALWAYS, *LATER, *UNRECORDED)]
        wanted = [
            *ALWAYS,
            *(name for name in (*LATER, *newer) if name in AGENT[self.command] or self._in_use(name)),
            *(name for name in ADDED if getattr(self, name)),
        ]
        extra = self.model_extra or {}
        out: dict[str, object] = {}
        for name in (*self._read, *wanted):
            if name in out or (name in ADDED and not getattr(self, name)):
                continue
            out[name] = extra[name] if name in extra else self._recorded(name)
        return out

    def _in_use(self, name: str) -> bool:
        """The field differs from its default (or its partner does): a run without it recorded nothing."""
        for each in (name, TOGETHER.get(name)):
            if each is not None and getattr(self, each) != RunSpec.model_fields[each].get_default(
                call_default_factory=True
            ):
                return True
        return False

    def _recorded(self, name: str) -> object:
        if name == "component_models":
            return {role: chosen.model_dump() for role, chosen in self.component_models.items()}
        value = getattr(self, name)
        return dict(value) if isinstance(value, dict) else value

    def set_agent_args(self, args: dict[str, object]) -> None:
        """Record the agent's resolved config under ``search_args`` or ``chain_args`` (the command's)."""
        if self.command == "search":
            self.search_args = args
        else:
            self.chain_args = args
