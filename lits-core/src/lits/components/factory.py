"""Build the (policy, transition, reward model) triple for a dataset.

Registry first, generic fallback: an env-grounded domain that registers only a
Transition gets :class:`EnvGroundedPolicy` and :class:`EnvGroundedPRM`; a
language-grounded dataset gets the chain-of-thought components unless a
``--search-framework`` bundle names others.  ``--policy/--transition/--reward``
name registered classes explicitly and win over both.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable, Mapping, cast

from lits.components.base import Policy, RewardModel, Transition, settings_of
from lits.components.checks import describe_problems, problems_of
from lits.lm.base import LanguageModel
from lits.registry import ComponentRegistry, get_registration, get_search_framework, infer_task_type, load_resource
from lits.structures.base import State, Step


@dataclass
class Components:
    policy: Policy[State, Step]
    transition: Transition[State, object]
    reward_model: RewardModel[State, object]
    task_type: str
    #: The dataset's own ``evaluate(example, final_answer) -> dict`` (tool use / QA), if registered.
    evaluate: Callable[..., Mapping[str, object]] | None = None
    #: The dataset's answer equivalence, for self-consistency voting (language-grounded).
    equivalent: Callable[[str, str], bool] | None = None


#: A component as a run names it: a registered name, a class, or an object the caller built.
Choice = str | type | object | None


def _resolve(getter: Callable[[str], type], explicit: Choice, dataset: str, fallback: type | None) -> object:
    """The named class, else the dataset's own, else the generic one; checked before it is built.

    A class given directly is checked the same way; an object given directly is used as it is."""
    if explicit is not None and not isinstance(explicit, (str, type)):
        return explicit
    if isinstance(explicit, type):
        name, cls = explicit.__name__, explicit
    elif explicit:
        name, cls = explicit, getter(explicit)  # KeyError lists the registered names
    else:
        try:
            name, cls = dataset, getter(dataset)
        except KeyError:
            if fallback is None:
                raise
            name, cls = fallback.__name__, fallback
    kinds: dict[Callable[[str], type], str] = {
        ComponentRegistry.get_transition: "transition",
        ComponentRegistry.get_policy: "policy",
        ComponentRegistry.get_reward_model: "reward_model",
    }
    kind = kinds[getter]
    problems = problems_of(kind, cls)
    if problems:
        owner = getattr(cls, "__module__", "?").split(".")[0]
        raise ValueError(f"{describe_problems(kind, name, owner, problems)}; it cannot be used for a run")
    return cls


def create_components(
    dataset: str,
    base_model: LanguageModel | None,
    *,
    eval_model: LanguageModel | None = None,
    transition_model: LanguageModel | None = None,
    policy: Choice = None,
    transition: Choice = None,
    reward: Choice = None,
    n_actions: int = 3,
    temperature: float = 0.8,
    policy_kwargs: Mapping[str, object] | None = None,
    resource_args: Mapping[str, object] | None = None,
    framework: str | None = None,
    resource: str | None = None,
    resource_options: Mapping[str, object] | None = None,
    start_resources: bool = True,
    reward_kwargs: Mapping[str, object] | None = None,
) -> Components:
    """Instantiate the components for ``dataset`` (see module docstring).

    ``base_model`` serves the policy, and the reward model and transition unless ``eval_model`` /
    ``transition_model`` are given (``--eval-model``, ``--transition-model``).

    A tool-use dataset's tools come from its own resource (called with ``resource_args``), or from the
    resource named ``resource`` (called with ``resource_options``), e.g. ``mcp``.  Without
    ``start_resources`` (``--dry-run``) no resource is loaded: nothing is started or connected to, the
    components get no tools, and only what can be checked without starting it is checked.
    ``reward_kwargs`` (``--reward-arg``) are settings of the reward model, whichever it is."""
    task_type = infer_task_type(dataset)
    if resource and task_type != "tool_use":
        raise ValueError(f"--resource gives tools to tool-use datasets; {dataset!r} is {task_type}")
    if framework:
        bundle = get_search_framework(framework, task_type)
        policy, transition = policy or bundle.policy, transition or bundle.transition
        reward = reward or bundle.reward_model
    if task_type == "tool_use":
        loaded = (
            _load_tools(dataset, resource, resource_options or {}, resource_args or {})
            if start_resources
            else _unstarted_tools(dataset, resource, resource_options or {})
        )
        return _tool_use(
            dataset,
            base_model,
            eval_model,
            policy,
            transition,
            reward,
            n_actions,
            temperature,
            loaded,
            reward_kwargs or {},
        )
    if task_type == "language_grounded":
        return _language_grounded(
            dataset,
            base_model,
            eval_model,
            transition_model,
            policy,
            transition,
            reward,
            n_actions,
            temperature,
            policy_kwargs or {},
            reward_kwargs or {},
        )
    from lits.components.policy.env_grounded import EnvGroundedPolicy
    from lits.components.reward.env_grounded import EnvGroundedPRM

    transition_cls = _resolve(ComponentRegistry.get_transition, transition, dataset, None)
    policy_cls = _resolve(ComponentRegistry.get_policy, policy, dataset, EnvGroundedPolicy)
    reward_cls = _resolve(ComponentRegistry.get_reward_model, reward, dataset, EnvGroundedPRM)

    domain: dict[str, object] = {}
    if getattr(transition_cls, "has_enumerable_actions", lambda: False)():
        from functools import partial

        from lits.components.transition.env_grounded import legal_actions

        domain["generate_all_actions"] = partial(
            legal_actions, transition_cls if isinstance(transition_cls, type) else type(transition_cls)
        )
    if getattr(transition_cls, "has_action_validation", lambda: False)():
        domain["validate_action"] = getattr(transition_cls, "validate_action")

    return Components(
        policy=_built(
            policy_cls,
            base_model=base_model,
            task_name=dataset,
            n_actions=n_actions,
            temperature=temperature,
            **_accepted(policy_cls, domain),
            **(policy_kwargs or {}),
        ),
        transition=_built(transition_cls, base_model=transition_model or base_model, task_name=dataset),
        reward_model=_built(
            reward_cls,
            base_model=eval_model or base_model,
            task_name=dataset,
            **_accepted(reward_cls, domain),
            **_reward_settings(reward_cls, reward_kwargs or {}),
        ),
        task_type=task_type,
    )


def _reward_settings(cls: object, settings: Mapping[str, object]) -> Mapping[str, object]:
    """``--reward-arg`` settings, each checked to be one of the reward model's (its constructor keywords)."""
    if not settings:
        return settings
    if not isinstance(cls, type):
        raise ValueError("--reward-arg sets a reward model that LiTS builds, not one given already built")
    known = settings_of(cls)
    for key in settings:
        if key.startswith("_") or key not in known or key in ("base_model", "task_name"):
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            shown = ", ".join(k for k in known if k not in ("base_model", "task_name"))
            raise ValueError(
                f"--reward-arg {key}: the reward model {cls.__name__} has no such setting{hint}; its settings: {shown}"
            )
    return settings


def _accepted(cls: object, domain: Mapping[str, object]) -> dict[str, object]:
    """The domain's action functions a component declares it takes (a plugin's own may take none)."""
    if not isinstance(cls, type):  # an object the caller built took what it needs
        return {}
    known = set(settings_of(cls))
    return {k: v for k, v in domain.items() if k in known}


def _tool_use(
    dataset: str,
    base_model: LanguageModel | None,
    eval_model: LanguageModel | None,
    policy: Choice,
    transition: Choice,
    reward: Choice,
    n_actions: int,
    temperature: float,
    resource: dict[str, Any],
    reward_kwargs: Mapping[str, object],
) -> Components:
    """Tool use: the resource gives the tools; generic components do the rest."""
    from lits.components.policy.tool_use import ToolUsePolicy
    from lits.components.reward.tool_use import ToolUsePRM
    from lits.components.transition.tool_use import ToolUseTransition

    tools = list(resource.get("tools") or [])
    context = str(resource.get("tool_context") or "")
    policy_cls = _resolve(ComponentRegistry.get_policy, policy, dataset, ToolUsePolicy)
    transition_cls = _resolve(ComponentRegistry.get_transition, transition, dataset, ToolUseTransition)
    reward_cls = _resolve(ComponentRegistry.get_reward_model, reward, dataset, ToolUsePRM)
    return Components(
        policy=_built(
            policy_cls,
            base_model=base_model,
            task_name=dataset,
            tools=tools,
            tool_context=context,
            n_actions=n_actions,
            temperature=temperature,
        ),
        transition=_built(transition_cls, tools=tools, task_name=dataset),
        reward_model=_built(
            reward_cls,
            base_model=eval_model or base_model,
            task_name=dataset,
            **_reward_settings(reward_cls, reward_kwargs),
        ),
        task_type="tool_use",
        evaluate=get_registration("dataset", dataset).meta.get("evaluate"),
    )


def _unstarted_tools(dataset: str, resource: str | None, options: Mapping[str, object]) -> dict[str, Any]:
    """No tools, after checking the resource is registered (and an MCP server's options, without starting it)."""
    if resource:
        get_registration("resource", resource)  # KeyError lists the registered resources
    else:
        try:
            get_registration("resource", dataset)
        except KeyError:
            raise ValueError(
                f"tool-use dataset {dataset!r} needs a resource: @register_resource({dataset!r})"
            ) from None
    if resource == "mcp":
        from lits.tools.mcp import server_spec

        server_spec(**cast("dict[str, Any]", options))
    return {"tools": [], "tool_context": ""}


def _load_tools(
    dataset: str, resource: str | None, options: Mapping[str, object], dataset_args: Mapping[str, object]
) -> dict[str, Any]:
    """The named resource (``--resource``), else the dataset's own: ``{"tools": [...], "tool_context": str}``."""
    if resource:
        return load_resource(resource, **options)  # KeyError lists the registered resources
    try:
        return load_resource(dataset, **dataset_args)
    except KeyError:
        raise ValueError(f"tool-use dataset {dataset!r} needs a resource: @register_resource({dataset!r})") from None


def _language_grounded(
    dataset: str,
    base_model: LanguageModel | None,
    eval_model: LanguageModel | None,
    transition_model: LanguageModel | None,
    policy: Choice,
    transition: Choice,
    reward: Choice,
    n_actions: int,
    temperature: float,
    policy_kwargs: Mapping[str, object],
    reward_kwargs: Mapping[str, object],
) -> Components:
    """Chain of thought by default; the dataset supplies answer extraction, equivalence and scoring."""
    from lits.answers import answer_rules
    from lits.components.policy.concat import ConcatPolicy
    from lits.components.reward.generative import GenerativePRM
    from lits.components.transition.concat import ConcatTransition

    meta = get_registration("dataset", dataset).meta
    policy_cls = _resolve(ComponentRegistry.get_policy, policy, dataset, ConcatPolicy)
    transition_cls = _resolve(ComponentRegistry.get_transition, transition, dataset, ConcatTransition)
    reward_cls = _resolve(ComponentRegistry.get_reward_model, reward, dataset, GenerativePRM)
    extract, equivalent = answer_rules(dataset)
    return Components(
        policy=_built(
            policy_cls,
            base_model=base_model,
            task_name=dataset,
            n_actions=n_actions,
            temperature=temperature,
            **policy_kwargs,
        ),
        transition=_built(
            transition_cls,
            base_model=transition_model or base_model,
            task_name=dataset,
            **_accepted(transition_cls, {"extract_answer": extract, "equivalent": equivalent}),
        ),
        reward_model=_built(
            reward_cls,
            base_model=eval_model or base_model,
            task_name=dataset,
            **_reward_settings(reward_cls, reward_kwargs),
        ),
        task_type="language_grounded",
        evaluate=meta.get("evaluate"),
        equivalent=equivalent,
    )


def _built(cls_or_object: Any, **kwargs: Any) -> Any:
    """A resolved class built with the run's settings; an object the caller built, as it is."""
    return cls_or_object(**kwargs) if isinstance(cls_or_object, type) else cls_or_object
