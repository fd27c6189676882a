"""The registry: one place for every named thing plugins and users add.

Decorators (the seeds' API) and pluggy hooks (see :mod:`lits.hookspecs`) both
land here.  Each registration remembers its owner (the plugin distribution, or
the defining module), so that two owners claiming one name give a clear error
naming both instead of one silently winning.  Reading any registry loads the
installed plugins first, once (see :mod:`lits.plugins`).
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, TypeVar

T = TypeVar("T")

KINDS = (
    "transition",
    "policy",
    "reward_model",
    "dataset",
    "resource",
    "search",
    "chain",
    "prompt",
    "search_framework",
)
TASK_TYPES = ("env_grounded", "language_grounded", "tool_use")


class RegistryError(LookupError):
    """Base of registry errors that are not a plain "not found"."""


class DuplicateNameError(RegistryError):
    """Two owners registered the same name for the same kind."""


@dataclass
class Registration:
    kind: str
    name: str
    obj: Any
    owner: str
    task_type: Optional[str] = None
    meta: dict[str, Any] = field(default_factory=dict)


_OWNER: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar("lits_owner", default=None)


@contextlib.contextmanager
def owner_scope(owner: str) -> Iterator[None]:
    """Attribute registrations made inside to ``owner`` (used by the plugin loader)."""
    token = _OWNER.set(owner)
    try:
        yield
    finally:
        _OWNER.reset(token)


def _owner_of(obj: Any) -> str:
    scoped = _OWNER.get()
    if scoped is not None:
        return scoped
    module = getattr(obj, "__module__", None) or "__main__"
    return module


class _Store:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.entries: dict[str, dict[str, Registration]] = {k: {} for k in KINDS}
        self.conflicts: dict[tuple[str, str], list[str]] = {}

    def add(self, reg: Registration) -> None:
        if reg.kind not in self.entries:
            raise ValueError(f"unknown registry kind {reg.kind!r}")
        if reg.task_type is not None and reg.task_type not in TASK_TYPES:
            raise ValueError(
                f"{reg.kind} {reg.name!r}: task_type must be one of {', '.join(TASK_TYPES)} "
                f"or None, not {reg.task_type!r}"
            )
        with self.lock:
            existing = self.entries[reg.kind].get(reg.name)
            if existing is not None and existing.owner != reg.owner:
                owners = self.conflicts.setdefault((reg.kind, reg.name), [existing.owner])
                if reg.owner not in owners:
                    owners.append(reg.owner)
                raise DuplicateNameError(_duplicate_message(reg.kind, reg.name, owners))
            self.entries[reg.kind][reg.name] = reg

    def get(self, kind: str, name: str) -> Registration:
        with self.lock:
            owners = self.conflicts.get((kind, name))
            if owners:
                raise DuplicateNameError(_duplicate_message(kind, name, owners))
            try:
                return self.entries[kind][name]
            except KeyError:
                known = ", ".join(sorted(self.entries[kind])) or "none"
                raise KeyError(
                    f"no {kind.replace('_', ' ')} named {name!r}; registered: {known}"
                ) from None

    def remove_owner(self, owner: str) -> None:
        with self.lock:
            for table in self.entries.values():
                for name in [n for n, r in table.items() if r.owner == owner]:
                    del table[name]

    def owned_by(self, owner: str) -> list[Registration]:
        with self.lock:
            return [r for table in self.entries.values() for r in table.values() if r.owner == owner]


def _duplicate_message(kind: str, name: str, owners: list[str]) -> str:
    who = " and ".join(repr(o) for o in owners)
    return (
        f"{kind.replace('_', ' ')} name {name!r} is registered by both {who}; "
        f"uninstall one, or limit plugins with LITS_PLUGINS"
    )


_STORE = _Store()


def _ensure_plugins() -> None:
    from lits.plugins import ensure_plugins_loaded

    ensure_plugins_loaded()


def add_registration(
    kind: str, name: str, obj: Any, *, task_type: Optional[str] = None, **meta: Any
) -> Registration:
    """Low-level registration used by decorators and plugin hooks."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"{kind} names must be non-empty strings, got {name!r}")
    reg = Registration(kind, name, obj, _owner_of(obj), task_type, dict(meta))
    _STORE.add(reg)
    return reg


def get_registration(kind: str, name: str) -> Registration:
    _ensure_plugins()
    return _STORE.get(kind, name)


def list_names(kind: str) -> list[str]:
    _ensure_plugins()
    with _STORE.lock:
        return sorted(_STORE.entries[kind])


def registrations_of(owner: str) -> list[Registration]:
    return _STORE.owned_by(owner)


def remove_registrations_of(owner: str) -> None:
    _STORE.remove_owner(owner)
    from lits.prompts.registry import PromptRegistry

    PromptRegistry._remove_owner(owner)


@contextlib.contextmanager
def isolated_registry() -> Iterator[None]:
    """Restore every registry (and plugin state) on exit; for tests."""
    from lits import plugins
    from lits.prompts.registry import PromptRegistry

    with _STORE.lock:
        saved = (copy.copy({k: dict(v) for k, v in _STORE.entries.items()}), dict(_STORE.conflicts))
    saved_prompts = PromptRegistry._snapshot()
    saved_plugins = plugins._snapshot()
    try:
        yield
    finally:
        with _STORE.lock:
            _STORE.entries, _STORE.conflicts = saved[0], saved[1]
        PromptRegistry._restore(saved_prompts)
        plugins._restore(saved_plugins)


# -- decorators (the seeds' public API) -----------------------------------

def _class_decorator(kind: str, name: str, task_type: Optional[str], **meta: Any) -> Callable[[T], T]:
    def deco(obj: T) -> T:
        add_registration(kind, name, obj, task_type=task_type, **meta)
        return obj

    return deco


def register_transition(name: str, task_type: Optional[str] = None) -> Callable[[T], T]:
    """Register a Transition class under ``name`` (usually the dataset's name)."""
    return _class_decorator("transition", name, task_type)


def register_policy(name: str, task_type: Optional[str] = None) -> Callable[[T], T]:
    """Register a Policy class under ``name``."""
    return _class_decorator("policy", name, task_type)


def register_reward_model(name: str, task_type: Optional[str] = None) -> Callable[[T], T]:
    """Register a RewardModel class under ``name``."""
    return _class_decorator("reward_model", name, task_type)


def register_dataset(name: str, task_type: Optional[str] = None, **meta: Any) -> Callable[[T], T]:
    """Register a dataset loader; it returns a list of example dicts."""
    return _class_decorator("dataset", name, task_type, **meta)


def register_resource(name: str) -> Callable[[T], T]:
    """Register a resource loader returning ``{"tools": [...], "tool_context": str}``."""
    return _class_decorator("resource", name, None)


def register_search(name: str, config_class: Optional[type] = None) -> Callable[[T], T]:
    """Register a tree-search algorithm (a ``BaseTreeSearch`` subclass)."""
    return _class_decorator("search", name, None, config_class=config_class)


def register_chain(name: str, config_class: Optional[type] = None) -> Callable[[T], T]:
    """Register a chain agent (e.g. ``EnvChain``)."""
    return _class_decorator("chain", name, None, config_class=config_class)


def register_search_framework(
    name: str,
    *,
    policy: str,
    transition: str,
    reward_model: str,
    search: str = "mcts",
    search_args: Optional[dict[str, Any]] = None,
    task_type: Optional[str] = "language_grounded",
    description: str = "",
) -> None:
    """Bundle registered component names under ``--search-framework NAME``.

    The names are resolved when a run starts, so a bundle may name components
    that another plugin registers.  ``search`` is the algorithm used when the
    user gives no ``--search``; ``search_args`` are its defaults, which
    ``--search-arg`` overrides.
    """
    bundle = SearchFramework(name, policy, transition, reward_model, search, dict(search_args or {}), description)
    caller = sys._getframe(1).f_globals.get("__name__", "__main__")
    with owner_scope(_OWNER.get() or caller):  # the bundle's owner is whoever registers it
        add_registration("search_framework", name, bundle, task_type=task_type)


@dataclass
class SearchFramework:
    """A named (policy, transition, reward model, default search) combination."""

    name: str
    policy: str
    transition: str
    reward_model: str
    search: str = "mcts"
    search_args: dict[str, Any] = field(default_factory=dict)
    description: str = ""


def get_search_framework(name: str, task_type: Optional[str] = None) -> SearchFramework:
    """The bundle named ``name``; ``ValueError`` when it is for another task type than ``task_type``."""
    reg = get_registration("search_framework", name)
    if task_type and reg.task_type and reg.task_type != task_type:
        raise ValueError(f"search framework {name!r} is for {reg.task_type} datasets, not {task_type} ones")
    return reg.obj


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


def register_prompt(component: str, agent: str, key: str, value: Any, *, user: bool = False) -> None:
    """Register a prompt value (or a zero-argument function returning it)."""
    from lits.prompts.registry import PromptRegistry

    kind = "user" if user else "system"
    reg = add_registration("prompt", f"{component}/{agent}/{key}/{kind}", value)
    PromptRegistry._set(component, agent, key, value, user=user, owner=reg.owner)


# -- lookups ----------------------------------------------------------------

class ComponentRegistry:
    """Look up registered classes by name; ``KeyError`` when absent."""

    @staticmethod
    def get_transition(name: str) -> type:
        return get_registration("transition", name).obj

    @staticmethod
    def get_policy(name: str) -> type:
        return get_registration("policy", name).obj

    @staticmethod
    def get_reward_model(name: str) -> type:
        return get_registration("reward_model", name).obj

    @staticmethod
    def get_search(name: str) -> type:
        return get_registration("search", name).obj

    @staticmethod
    def get_chain(name: str) -> type:
        return get_registration("chain", name).obj

    @staticmethod
    def list_transitions() -> list[str]:
        return list_names("transition")

    @staticmethod
    def list_policies() -> list[str]:
        return list_names("policy")

    @staticmethod
    def list_reward_models() -> list[str]:
        return list_names("reward_model")

    @staticmethod
    def list_searches() -> list[str]:
        return list_names("search")

    @staticmethod
    def list_chains() -> list[str]:
        return list_names("chain")


def load_dataset(name: str, **kwargs: Any) -> list[dict[str, Any]]:
    """Call the loader registered as ``name`` with ``kwargs``."""
    loader = get_registration("dataset", name).obj
    return list(loader(**kwargs))


def load_resource(name: str, **kwargs: Any) -> dict[str, Any]:
    """Call the resource loader registered as ``name``."""
    return get_registration("resource", name).obj(**kwargs)


def infer_task_type(name: str) -> str:
    """Task type of a dataset (or, failing that, of a transition) named ``name``."""
    for kind in ("dataset", "transition"):
        try:
            reg = get_registration(kind, name)
        except KeyError:
            continue
        task_type = reg.task_type or getattr(reg.obj, "TASK_TYPE", None)
        if task_type:
            return task_type
    raise KeyError(
        f"cannot infer the task type of {name!r}: register its dataset with "
        f"@register_dataset({name!r}, task_type=...)"
    )
