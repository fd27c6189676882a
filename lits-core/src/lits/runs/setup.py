"""A run's parts from its settings: the selected instances, model, agent config, components and agents.

One home for both a local run (:mod:`lits.runs.session`) and every Ray worker
(:mod:`lits.runs.ray.worker`), so a worker builds exactly what a local run builds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

from lits.agents.config import AgentConfig, ChainConfig, TreeSearchConfig
from lits.errors import UserError, one_line
from lits.lm.base import CallOptions, LanguageModel
from lits.runs.results.artifacts import RunDir

if TYPE_CHECKING:
    from pydantic import BaseModel

    from lits.components.factory import Components
    from lits.lm.limits import Limiter
    from lits.runs.model_specs import ModelSpec
    from lits.runs.record import RunRecord
    from lits.runs.runner import Agent
    from lits.plugin_host.store import Registration

#: The chain a task type runs when ``--chain`` is not given.
DEFAULT_CHAINS = {"env_grounded": "env_chain", "tool_use": "react", "language_grounded": "cot"}


def agent_registration(settings: RunRecord, mode: str, task_type: str) -> tuple[Registration, dict[str, object]]:
    """The registered search or chain to run and its settings (fills in the defaults it chose)."""
    from lits.registry import get_registration, get_search_framework

    if mode == "search":
        name = settings.search_framework
        framework = get_search_framework(name, task_type) if name else None
        search = settings.search = settings.search or (framework.search if framework else "mcts")
        reg = get_registration("search", search)
        preset = dict(framework.search_args) if framework else {}
        if framework and search != framework.search:  # another search keeps only the presets it has
            known = getattr(reg.meta.get("config_class"), "model_fields", None)
            preset = {k: v for k, v in preset.items() if known is None or k in known}
        return reg, {**preset, **settings.search_args}
    if not settings.chain and task_type not in DEFAULT_CHAINS:
        raise UserError(f"no default chain agent for {task_type} tasks; pass --chain NAME")
    chain = settings.chain = settings.chain or DEFAULT_CHAINS[task_type]
    return get_registration("chain", chain), settings.chain_args


def make_config(reg: Registration, values: Mapping[str, object], mode: str) -> AgentConfig:
    """The agent's config from ``--search-arg``/``--chain-arg`` values; an unknown key suggests the closest."""
    config_class: Callable[..., BaseModel] | None = reg.meta.get("config_class")
    if config_class is None:
        default: Callable[..., BaseModel] = TreeSearchConfig if mode == "search" else ChainConfig
        config_class = default
    known = list(getattr(config_class, "model_fields", {}))
    unknown = [key for key in values if known and key not in known]
    if unknown:
        from lits.plugin_host.store import unknown_name_message

        flag = "--search-arg" if mode == "search" else "--chain-arg"
        raise UserError(
            f"{reg.name}: "
            + unknown_name_message(f"{flag} setting", unknown[0], known).replace("; registered:", "; its settings:")
        )
    try:
        config = config_class(**values)
    except Exception as exc:
        raise UserError(f"{reg.name}: {one_line(exc)}") from None
    if not isinstance(config, (TreeSearchConfig, ChainConfig)):
        base = "TreeSearchConfig" if mode == "search" else "ChainConfig"
        raise UserError(f"{reg.name}: its config_class {type(config).__name__} must subclass lits.api.{base}")
    return config


def create_run_model(
    settings: RunRecord, spec: ModelSpec | None = None, *, limiter: Limiter | None = None
) -> LanguageModel:
    """A language model as the run's settings describe it (backend, server, bounds, prices, how it is called).

    ``spec`` is one component's model (:func:`lits.runs.model_specs.role_spec`); default: ``--model``;
    ``limiter``: its call slots (a Ray worker's, shared by the cluster); default: its own ``--concurrency``."""
    import os

    from lits.lm.factory import create_model
    from lits.runs.model_specs import KEY_ENV, SAMPLING_ARGS, default_spec

    spec = spec or default_spec(settings)
    args = spec.get("args") or {}
    extra: dict[str, object] = {
        k: v
        for k, v in (("call_budget", settings.call_budget), ("read_timeout", settings.read_timeout))
        if v is not None
    }
    if args.get("constraints") is not None:
        extra["constraints"] = args["constraints"]
    key_env = args.get(KEY_ENV)
    if key_env:  # the key itself is read here and never kept in settings
        key = os.environ.get(str(key_env))
        if not key:
            raise UserError(f"api_key_env={key_env} for model {spec['model']}: ${key_env} is not set")
        extra["api_key"] = key
    calls = CallOptions(
        log_prompts=settings.log_prompts,
        constrain_replies=not settings.free_replies,
        sampling={k: v for k, v in args.items() if k in SAMPLING_ARGS},
    )
    if limiter is not None:
        calls["limiter"] = limiter
    try:
        return create_model(
            spec["model"],
            base_url=spec["base_url"],
            api=spec["api"],
            concurrency=settings.resolved_concurrency(),
            price_in=settings.price_in,
            price_out=settings.price_out,
            **extra,
            **calls,
        )
    except ValueError as exc:
        raise UserError(one_line(exc)) from None


def create_run_models(
    settings: RunRecord, limiter_for: Callable[[int], Limiter] | None = None
) -> dict[str, LanguageModel]:
    """Each component's model (``policy``, ``eval``, ``transition``); equal specs share one object.

    ``limiter_for(k)``: the call slots of the k-th distinct model (a Ray worker's pools); default: its own."""
    from lits.runs.model_specs import ROLES, default_spec, role_spec, spec_key

    default = spec_key(default_spec(settings))
    built: dict[str, LanguageModel] = {}
    models: dict[str, LanguageModel] = {}
    for role in ROLES:
        spec = role_spec(settings, role)
        key = spec_key(spec)
        if key not in built:
            try:
                limiter = limiter_for(len(built)) if limiter_for is not None else None
                built[key] = create_run_model(settings, spec, limiter=limiter)
            except UserError as exc:
                if key == default:
                    raise
                raise UserError(f"the {role} model ({spec['model']}): {exc}") from None
        models[role] = built[key]
    return models


def distinct_models(models: Mapping[str, LanguageModel]) -> list[LanguageModel]:
    """Each model object once, in component order."""
    out: list[LanguageModel] = []
    for model in models.values():
        if all(model is not seen for seen in out):
            out.append(model)
    return out


def build_components(
    settings: RunRecord,
    models: Mapping[str, LanguageModel | None],
    config: AgentConfig,
    task_type: str,
    objects: Mapping[str, object] | None = None,
    *,
    start_resources: bool = True,
) -> Components:
    """The run's components from its settings, each calling its own model (see :func:`create_run_models`).

    ``objects``: components the caller gave as classes or built objects (the Python API), by role;
    ``start_resources=False``: a dry run's, with no tool resource loaded (nothing started)."""
    from lits.components.factory import create_components

    given = objects or {}
    return create_components(
        settings.dataset,
        models["policy"],
        eval_model=models["eval"],
        transition_model=models["transition"],
        policy=given.get("policy", settings.policy),
        transition=given.get("transition", settings.transition),
        reward=given.get("reward", settings.reward),
        n_actions=config.n_actions if isinstance(config, TreeSearchConfig) else 1,
        temperature=config.temperature,
        resource_args=settings.dataset_args,
        resource=settings.resource,
        resource_options=settings.resource_args,
        framework=settings.search_framework,
        policy_kwargs=_depth_limit(task_type, config),
        reward_kwargs=settings.reward_args,
        start_resources=start_resources,
    )


def _depth_limit(task_type: str, config: AgentConfig) -> dict[str, object]:
    """Language-grounded policies ask for the final answer at the agent's depth limit."""
    if task_type != "language_grounded":
        return {}
    return {"max_depth": config.max_depth if isinstance(config, TreeSearchConfig) else config.max_steps}


def agent_factory(
    agent_cls: Any,
    config: AgentConfig,
    components: Components,
    run_dir: RunDir,
    mode: str,
    name: str,
    bn_model: LanguageModel | None = None,
    options: Mapping[str, object] | None = None,
) -> Callable[[], Agent]:
    """Agents that tag their calls with the name they are registered under, not their class name.

    ``bn_model``: a search's branching-necessity evaluator model (``--bn-model``; Chain-in-Tree continuation);
    ``options``: more of the agent's constructor arguments (a budgeted run's ``draws``)."""
    serves = getattr(agent_cls, "TASK_TYPES", None)  # a registered class need not subclass the bases
    if serves is not None and components.task_type not in serves:
        raise ValueError(
            f"--{mode} {name} works on {' and '.join(serves)} tasks, not on this {components.task_type} dataset"
        )

    def make_agent() -> Agent:
        agent: Agent
        if mode == "search":
            agent = agent_cls(
                config,
                components.policy,
                components.transition,
                components.reward_model,
                checkpoint_dir=run_dir.checkpoints,
                name=name,
                bn_model=bn_model,
                **(options or {}),
            )
        else:
            agent = agent_cls(
                config,
                components.policy,
                components.transition,
                checkpoint_dir=run_dir.checkpoints,
                name=name,
                **(options or {}),
            )
        return agent

    return make_agent


def select(dataset: str, settings: RunRecord) -> list[tuple[int, dict[str, Any]]]:
    """The selected instances as plain dicts; a loader may defer reading each instance until here."""
    from lits.registry import load_dataset

    examples = load_dataset(dataset, **settings.dataset_args)
    offset, limit = settings.offset, settings.limit
    end = len(examples) if limit is None else offset + limit
    selected = [(i, dict(examples[i])) for i in range(offset, min(end, len(examples)))]
    if not selected:
        raise UserError(f"no instances selected from {dataset!r} ({len(examples)} available)")
    return selected
