"""The one store of every named thing: components, datasets, prompts, searches, models, ...

A plain store that knows nothing about plugin loading: :mod:`lits.plugin_host.plugins`
fills it through pluggy hooks, the seeds' decorators (:mod:`lits.registry`)
fill it directly, and lookups read it.  Each registration remembers its owner
(the plugin distribution that ships the object, or the defining module), so
two owners claiming one name give a clear error naming both instead of one
silently winning.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import difflib
import importlib
import inspect
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

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
    "model",
    "command",
    "augmentor",
)
TASK_TYPES = ("env_grounded", "language_grounded", "tool_use")
#: The owner of LiTS's own registrations: a plugin cannot take one of their names.
BUILTIN_OWNER = "lits-core"


class RegistryError(LookupError):
    """Base of registry errors that are not a plain "not found"."""


class DuplicateNameError(RegistryError):
    """Two owners registered the same name for the same kind."""


#: Kinds whose objects may be registered lazily as ``"package.module:attribute"``.
LAZY_KINDS = (
    "transition",
    "policy",
    "reward_model",
    "dataset",
    "resource",
    "search",
    "chain",
    "model",
    "command",
    "augmentor",
)


class Registration:
    """One named thing; ``obj`` given as ``"module:attribute"`` is imported on first use.

    Lazy registration keeps ``lits plugins`` and start-up from importing every
    component a plugin offers.
    """

    def __init__(
        self,
        kind: str,
        name: str,
        obj: object,
        owner: str,
        task_type: str | None = None,
        meta: Mapping[str, object] | None = None,
    ) -> None:
        self.kind, self.name, self.owner, self.task_type = kind, name, owner, task_type
        self._meta = dict(meta or {})
        self._obj = obj

    @property
    def lazy(self) -> bool:
        return self.kind in LAZY_KINDS and isinstance(self._obj, str) and ":" in self._obj

    @property
    def obj(self) -> Any:
        if self.lazy:
            self._obj = self._load(str(self._obj))
        return self._obj

    @property
    def meta(self) -> dict[str, Any]:
        """Extra facts (e.g. ``config_class``, which may also be given as ``"module:attribute"``)."""
        config = self._meta.get("config_class")
        if isinstance(config, str) and ":" in config:
            self._meta["config_class"] = self._load(config)
        return self._meta

    def _load(self, path: str) -> object:
        module_name, _, attribute = path.partition(":")
        try:
            return getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as exc:
            raise RegistryError(
                f"{self.kind.replace('_', ' ')} {self.name!r} (from {self.owner}) "
                f"points at {path!r}, which cannot be imported: {exc}"
            ) from None

    def __repr__(self) -> str:
        return f"Registration({self.kind!r}, {self.name!r}, owner={self.owner!r})"


# -- owners --------------------------------------------------------------------

_OWNER: contextvars.ContextVar[str | None] = contextvars.ContextVar("lits_owner", default=None)
#: Top-level package -> the plugin distribution whose entry point ships it (set by the loader).
_PACKAGE_OWNERS: dict[str, str] = {}


@contextlib.contextmanager
def owner_scope(owner: str) -> Iterator[None]:
    """Attribute registrations made inside to ``owner`` (used by the plugin loader and tests)."""
    token = _OWNER.set(owner)
    try:
        yield
    finally:
        _OWNER.reset(token)


def set_package_owners(owners: dict[str, str]) -> None:
    """Credit objects defined in these top-level packages to these distributions."""
    _PACKAGE_OWNERS.clear()
    _PACKAGE_OWNERS.update(owners)


def owner_of(obj: object) -> str:
    """Who registers ``obj``: the distribution shipping its module, whoever imported it first.

    A plugin that imports another plugin's module does not take over that
    plugin's registrations.  Objects without a module (strings, dicts) belong
    to the plugin being loaded, else to ``__main__``.
    """
    module = getattr(obj, "__module__", None) if inspect.isclass(obj) or inspect.isroutine(obj) else None
    if isinstance(module, str):
        shipped = _PACKAGE_OWNERS.get(module.split(".")[0])
        if shipped is not None:
            return shipped
    scoped = _OWNER.get()
    if scoped is not None:
        return scoped
    return module if isinstance(module, str) else "__main__"


# -- the store -------------------------------------------------------------------

#: What :meth:`RegistryStore.snapshot` returns: entries by kind, conflicts, refused names by owner.
StoreSnapshot = tuple[
    dict[str, dict[str, Registration]], dict[tuple[str, str], list[str]], dict[str, list[tuple[str, str]]]
]


class RegistryStore:
    """Registrations by kind and name; thread-safe; nothing else."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.entries: dict[str, dict[str, Registration]] = {k: {} for k in KINDS}
        self.conflicts: dict[tuple[str, str], list[str]] = {}
        #: Names a plugin tried to take from LiTS's built-ins: (kind, name) by owner (the built-in stays).
        self.refused: dict[str, list[tuple[str, str]]] = {}

    def add(self, reg: Registration, *, replace: bool = False) -> None:
        if reg.kind not in self.entries:
            raise ValueError(f"unknown registry kind {reg.kind!r}; kinds: {', '.join(KINDS)}")
        if reg.task_type is not None and reg.task_type not in TASK_TYPES:
            raise ValueError(
                f"{reg.kind} {reg.name!r}: task_type must be one of {', '.join(TASK_TYPES)} "
                f"or None, not {reg.task_type!r}"
            )
        with self.lock:
            existing = self.entries[reg.kind].get(reg.name)
            if existing is not None and existing.owner == BUILTIN_OWNER != reg.owner:
                # The built-in keeps its name and the plugin keeps its other registrations; the refusal is
                # reported (lits plugins, and a warning before a run) instead of failing the whole plugin.
                refused = self.refused.setdefault(reg.owner, [])
                if (reg.kind, reg.name) not in refused:
                    refused.append((reg.kind, reg.name))
                return
            if existing is not None and existing.owner != reg.owner and not replace:
                owners = self.conflicts.setdefault((reg.kind, reg.name), [existing.owner])
                if reg.owner not in owners:
                    owners.append(reg.owner)
                raise DuplicateNameError(_duplicate_message(reg.kind, reg.name, owners))
            self.entries[reg.kind][reg.name] = reg

    def find(self, kind: str, name: str) -> Registration | None:
        """The registration, or None; a name two owners claim is an error."""
        with self.lock:
            owners = self.conflicts.get((kind, name))
            if owners:
                raise DuplicateNameError(_duplicate_message(kind, name, owners))
            return self.entries[kind].get(name)

    def get(self, kind: str, name: str) -> Registration:
        reg = self.find(kind, name)
        if reg is None:
            raise KeyError(unknown_name_message(kind.replace("_", " "), name, self.names(kind)))
        return reg

    def names(self, kind: str) -> list[str]:
        with self.lock:
            return sorted(self.entries[kind])

    def remove_owner(self, owner: str) -> None:
        with self.lock:
            for table in self.entries.values():
                for name in [n for n, r in table.items() if r.owner == owner]:
                    del table[name]

    def owned_by(self, owner: str) -> list[Registration]:
        with self.lock:
            return [r for table in self.entries.values() for r in table.values() if r.owner == owner]

    def snapshot(self) -> StoreSnapshot:
        with self.lock:
            return (
                copy.copy({k: dict(v) for k, v in self.entries.items()}),
                dict(self.conflicts),
                {k: list(v) for k, v in self.refused.items()},
            )

    def restore(self, snap: StoreSnapshot) -> None:
        with self.lock:
            self.entries, self.conflicts = {k: dict(v) for k, v in snap[0].items()}, dict(snap[1])
            self.refused = {k: list(v) for k, v in snap[2].items()}


def unknown_name_message(what: str, name: str, known: list[str]) -> str:
    """``no search named 'mtcs' (did you mean 'mcts'?); registered: bfs, mcts``."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"no {what} named {name!r}{hint}; registered: {', '.join(known) or 'none'}"


def _duplicate_message(kind: str, name: str, owners: list[str]) -> str:
    who = " and ".join(repr(o) for o in owners)
    return (
        f"{kind.replace('_', ' ')} name {name!r} is registered by both {who}; "
        f"uninstall one, or limit plugins with LITS_PLUGINS"
    )


STORE = RegistryStore()


def add_registration(
    kind: str,
    name: str,
    obj: object,
    *,
    task_type: str | None = None,
    replace: bool = False,
    owner: str | None = None,
    **meta: object,
) -> Registration:
    """The one way in: decorators and plugin hooks both end here.

    A hook passes its plugin as ``owner``; a decorator lets :func:`owner_of`
    find the distribution that ships the object.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"{kind} names must be non-empty strings, got {name!r}")
    reg = Registration(kind, name, obj, owner or owner_of(obj), task_type, dict(meta))
    STORE.add(reg, replace=replace)
    return reg


def plugin_of_module(module: str) -> str | None:
    """The plugin whose code ``module`` is: the distribution shipping its package, or the owner of a
    component defined in it (a domain registered from a script or a test); None for LiTS's own code."""
    if not module or module.split(".")[0] in ("lits", "builtins"):
        return None
    shipped = _PACKAGE_OWNERS.get(module.split(".")[0])
    if shipped is not None:
        return shipped if shipped != BUILTIN_OWNER else None
    with STORE.lock:
        for table in STORE.entries.values():
            for reg in table.values():
                if reg.owner != BUILTIN_OWNER and not reg.lazy and getattr(reg.obj, "__module__", None) == module:
                    return reg.owner
    return None


def registrations_of(owner: str) -> list[Registration]:
    return STORE.owned_by(owner)


def remove_registrations_of(owner: str) -> None:
    STORE.remove_owner(owner)


def refused_names(owner: str) -> list[str]:
    """One line per built-in name ``owner`` tried to register, with advice that can be followed."""
    with STORE.lock:
        refused = list(STORE.refused.get(owner, []))
    prefix = owner.removeprefix("lits-plugin-").removeprefix("lits-")
    return [
        f"registers a {kind.replace('_', ' ')} named {name!r}, which LiTS has built in: the built-in is kept "
        f"and so are the plugin's other registrations; register it under its own name, e.g. "
        f"'{prefix}-{name}'"
        for kind, name in refused
    ]


# -- prompts: stored like everything else, under component/agent/key/{system,user} ----


def prompt_name(component: str, agent: str, key: str, *, user: bool) -> str:
    return f"{component}/{agent}/{key}/{'user' if user else 'system'}"


def register_prompt(
    component: str,
    agent: str,
    key: str,
    value: object,
    *,
    user: bool = False,
    replace: bool = False,
    owner: str | None = None,
) -> Registration:
    """Register a prompt value (or a zero-argument function returning it)."""
    if user and isinstance(value, str):
        raise TypeError(
            f"user prompt for ({component}, {agent}, {key}) must be a dict or template, "
            "not a str (put a plain instruction in the system prompt)"
        )
    return add_registration(
        "prompt", prompt_name(component, agent, key, user=user), value, replace=replace, owner=owner
    )


# -- search frameworks ------------------------------------------------------------


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


def register_search_framework(
    name: str,
    *,
    policy: str,
    transition: str,
    reward_model: str,
    search: str = "mcts",
    search_args: dict[str, Any] | None = None,
    task_type: str | None = "language_grounded",
    description: str = "",
) -> None:
    """Bundle registered component names under ``--search-framework NAME``.

    The names are resolved when a run starts, so a bundle may name components
    that another plugin registers.  ``search`` is the algorithm used when the
    user gives no ``--search``; ``search_args`` are its defaults, which
    ``--search-arg`` overrides.  The bundle belongs to the plugin being loaded
    (or to the calling module).
    """
    import sys

    bundle = SearchFramework(name, policy, transition, reward_model, search, dict(search_args or {}), description)
    caller = sys._getframe(1).f_globals.get("__name__", "__main__")
    with owner_scope(_OWNER.get() or caller):
        add_registration("search_framework", name, bundle, task_type=task_type)
