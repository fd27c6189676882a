"""The registry: where every named thing plugins and users add is looked up.

Two doors lead into the one store (:mod:`lits.plugin_host.store`): the seeds' decorators
below and the pluggy hooks (:mod:`lits.plugin_host.hookspecs`, called by
:mod:`lits.plugin_host.plugins`).  Lookups load the installed plugins first, once; when a
name is missing and a plugin failed to load, the error says which and why.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, TypeVar, cast

from lits.plugin_host import plugins
from lits.plugin_host.store import (
    KINDS,
    STORE,
    TASK_TYPES,
    DuplicateNameError,
    Registration,
    RegistryError,
    SearchFramework,
    add_registration,
    owner_scope,
    register_prompt,
    register_search_framework,
    registrations_of,
    remove_registrations_of,
)

__all__ = [
    "KINDS",
    "TASK_TYPES",
    "ComponentRegistry",
    "DuplicateNameError",
    "Registration",
    "RegistryError",
    "SearchFramework",
    "add_registration",
    "get_registration",
    "get_search_framework",
    "infer_task_type",
    "isolated_registry",
    "list_names",
    "load_dataset",
    "load_resource",
    "owner_scope",
    "register_augmentor",
    "register_chain",
    "register_command",
    "register_dataset",
    "register_model",
    "register_policy",
    "register_prompt",
    "register_resource",
    "register_reward_model",
    "register_search",
    "register_search_framework",
    "register_system_prompt",
    "register_transition",
    "register_user_prompt",
    "registrations_of",
    "remove_registrations_of",
]

T = TypeVar("T")


def get_registration(kind: str, name: str) -> Registration:
    plugins.ensure_plugins_loaded()
    try:
        return STORE.get(kind, name)
    except KeyError as exc:
        broken = plugins.load_errors()
        if not broken:
            raise
        why = "; ".join(f"plugin {i.name!r} ({i.distribution}) failed to load: {i.error}" for i in broken)
        raise KeyError(f"{exc.args[0]} (note: {why})") from None


def list_names(kind: str) -> list[str]:
    plugins.ensure_plugins_loaded()
    return STORE.names(kind)


@contextlib.contextmanager
def isolated_registry() -> Iterator[None]:
    """Restore the store (and the plugin loader's state) on exit; for tests.

    Plugins are loaded first, outside the isolation: a plugin that registers as it is imported does so
    once per process, so registrations first made inside would be forgotten for good on exit.
    """
    plugins.ensure_plugins_loaded()
    saved, saved_plugins = STORE.snapshot(), plugins._snapshot()
    try:
        yield
    finally:
        STORE.restore(saved)
        plugins._restore(saved_plugins)


# -- decorators (the seeds' public API) -----------------------------------


def _class_decorator(kind: str, name: str, task_type: str | None, **meta: Any) -> Callable[[T], T]:
    def deco(obj: T) -> T:
        add_registration(kind, name, obj, task_type=task_type, **meta)
        return obj

    return deco


def register_transition(name: str, task_type: str | None = None) -> Callable[[T], T]:
    """Register a Transition class under ``name`` (usually the dataset's name)."""
    return _class_decorator("transition", name, task_type)


def register_policy(name: str, task_type: str | None = None) -> Callable[[T], T]:
    """Register a Policy class under ``name``."""
    return _class_decorator("policy", name, task_type)


def register_reward_model(name: str, task_type: str | None = None) -> Callable[[T], T]:
    """Register a RewardModel class under ``name``."""
    return _class_decorator("reward_model", name, task_type)


def register_dataset(name: str, task_type: str | None = None, **meta: Any) -> Callable[[T], T]:
    """Register a dataset loader; it returns a list of example dicts."""
    return _class_decorator("dataset", name, task_type, **meta)


def register_resource(name: str) -> Callable[[T], T]:
    """Register a resource loader returning ``{"tools": [...], "tool_context": str}``."""
    return _class_decorator("resource", name, None)


def register_search(name: str, config_class: type | None = None) -> Callable[[T], T]:
    """Register a tree-search algorithm (a ``BaseTreeSearch`` subclass)."""
    return _class_decorator("search", name, None, config_class=config_class)


def register_chain(name: str, config_class: type | None = None) -> Callable[[T], T]:
    """Register a chain agent (e.g. ``EnvChain``)."""
    return _class_decorator("chain", name, None, config_class=config_class)


def register_model(name: str, description: str = "", concurrency: int | None = None) -> Callable[[T], T]:
    """Register a model backend ``factory(spec, **options) -> LanguageModel``, used as ``--model NAME``;
    ``concurrency``: its calls in flight when ``--concurrency`` is not given (default: a server's, 16)."""
    return _class_decorator("model", name, None, description=description, concurrency=concurrency)


def register_augmentor(name: str, description: str = "") -> Callable[[T], T]:
    """Register an augmentor (a ``lits.memory.Augmentor`` subclass), used as ``--memory-arg augmentors=NAME``."""
    return _class_decorator("augmentor", name, None, description=description)


def register_command(name: str, help: str = "") -> Callable[[T], T]:
    """Register ``add_arguments(parser)``, which fills the parser of the command ``lits NAME``."""
    return _class_decorator("command", name, None, help=help)


def register_system_prompt(component: str, agent: str, key: str) -> Callable[[T], T]:
    """Register a function returning the system prompt (``task_prompt_spec``)."""
    return _prompt_decorator(component, agent, key, user=False)


def register_user_prompt(component: str, agent: str, key: str) -> Callable[[T], T]:
    """Register a function returning the user template (``usr_prompt_spec``)."""
    return _prompt_decorator(component, agent, key, user=True)


def _prompt_decorator(component: str, agent: str, key: str, *, user: bool) -> Callable[[T], T]:
    def deco(fn: T) -> T:
        register_prompt(component, agent, key, fn, user=user)
        return fn

    return deco


# -- lookups ----------------------------------------------------------------


class ComponentRegistry:
    """Look up registered classes by name; ``KeyError`` (naming the closest match) when absent."""

    @staticmethod
    def get_transition(name: str) -> type:
        return cast(type, get_registration("transition", name).obj)

    @staticmethod
    def get_policy(name: str) -> type:
        return cast(type, get_registration("policy", name).obj)

    @staticmethod
    def get_reward_model(name: str) -> type:
        return cast(type, get_registration("reward_model", name).obj)

    @staticmethod
    def get_search(name: str) -> type:
        return cast(type, get_registration("search", name).obj)

    @staticmethod
    def get_chain(name: str) -> type:
        return cast(type, get_registration("chain", name).obj)


def get_search_framework(name: str, task_type: str | None = None) -> SearchFramework:
    """The bundle named ``name``; ``ValueError`` when it is for another task type than ``task_type``."""
    reg = get_registration("search_framework", name)
    if task_type and reg.task_type and reg.task_type != task_type:
        raise ValueError(f"search framework {name!r} is for {reg.task_type} datasets, not {task_type} ones")
    return reg.obj  # type: ignore[no-any-return]


#: Keys the original LiTS and its plugins use for an example's query, besides ``query``.
QUERY_ALIASES = ("query_or_goals", "question")


def load_dataset(name: str, **kwargs: Any) -> list[dict[str, Any]]:
    """Call the loader registered as ``name`` and check its examples before anything is paid.

    An example may give its query as ``query``, ``query_or_goals`` or
    ``question`` (the original LiTS's keys); one with none of them is a
    one-line error naming the dataset, the example and the key.
    """
    loader = get_registration("dataset", name).obj
    examples = list(loader(**kwargs))
    for index, example in enumerate(examples):
        if not isinstance(example, dict):
            raise ValueError(f"dataset {name!r}: example {index} is a {type(example).__name__}, not a dict")
        if "query" not in example:
            alias = next((k for k in QUERY_ALIASES if k in example), None)
            if alias is None:
                keys = ", ".join(sorted(map(str, example))) or "none"
                raise ValueError(
                    f"dataset {name!r}: example {index} has no 'query' key "
                    f"(nor {' or '.join(repr(k) for k in QUERY_ALIASES)}); its keys: {keys}"
                )
            example["query"] = example[alias]
    return examples


def load_resource(name: str, **kwargs: Any) -> dict[str, Any]:
    """Call the resource loader registered as ``name``."""
    return get_registration("resource", name).obj(**kwargs)  # type: ignore[no-any-return]


def infer_task_type(name: str) -> str:
    """Task type of a dataset (or, failing that, of a transition) named ``name``."""
    for kind in ("dataset", "transition"):
        try:
            reg = get_registration(kind, name)
        except KeyError:
            continue
        task_type = reg.task_type or getattr(reg.obj, "TASK_TYPE", None)
        if task_type:
            return str(task_type)
    raise KeyError(
        f"cannot infer the task type of {name!r}: register its dataset with @register_dataset({name!r}, task_type=...)"
    )
