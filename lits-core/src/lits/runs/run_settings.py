"""A run's settings as ``config.json`` records them (:meth:`lits.runs.spec.RunSpec.settings`, then what the
run adds: the agent's resolved args, the environment, the models it used, each resume)."""

from __future__ import annotations

import math
from typing import Mapping, NotRequired, TypedDict


class GivenModel(TypedDict, total=False):
    """One component's own model as given (``--policy-model``, its base URL and ``--policy-model-arg``)."""

    model: str | None
    base_url: str | None
    args: dict[str, object]


class RunSettings(TypedDict, total=False):
    """Every key a run's settings may hold; a run records only those it has (a chain run no search keys)."""

    format: int
    command: str
    dataset: str
    dataset_args: dict[str, object]
    offset: int
    limit: int | None
    resource: str | None
    resource_args: dict[str, object]
    policy: str | None
    transition: str | None
    reward: str | None
    model: str
    base_url: str | None
    api: str | None
    component_models: dict[str, GivenModel]
    concurrency: int
    call_budget: float | None
    read_timeout: float | None
    price_in: float
    price_out: float
    log_prompts: bool
    free_replies: bool
    cache: str | None
    no_cache: bool
    #: The recorded run whose replies answer this run's requests (``--replay-from``), and whether this
    #: command pays for what it did not record (``--offline``: not; set again by each ``--resume``).
    replay_from: str
    offline: bool
    executor: str
    ray_address: str | None
    #: ``LITS_RAY_CACHE``: ``driver`` (the coordinator's cache) or ``worker`` (one per worker, the benchmark's).
    ray_cache: str
    lits_version: str
    created: str
    attempts: int
    memory_args: dict[str, object]
    #: ``tokens=20000``: the run's compute budget (``--budget``).
    budget: NotRequired[str]
    search: str | None
    search_framework: str | None
    search_args: dict[str, object]
    reward_args: NotRequired[dict[str, object]]
    chain: str | None
    chain_args: dict[str, object]
    environment: dict[str, object]
    #: Each component's model spec and the backend's description (:func:`lits.runs.results.provenance.record_models`).
    models: dict[str, dict[str, object]]
    model_info: dict[str, object]
    #: One entry per resume: when, and the settings it changed.
    resumed: list[dict[str, object]]


def set_agent_args(settings: RunSettings, mode: str, args: dict[str, object]) -> None:
    """Record the agent's resolved config under ``search_args`` or ``chain_args`` (``mode``'s)."""
    if mode == "search":
        settings["search_args"] = args
    else:
        settings["chain_args"] = args


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
