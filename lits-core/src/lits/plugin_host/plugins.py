"""Find and load plugins: core's built-ins plus the ``lits.plugins`` entry points.

Loading is lazy (never at ``import lits``), happens once, and is guarded per
plugin: one that fails to import or in a hook -- even by calling
``sys.exit()`` -- is reported with its name and error while the rest keep
working (only Ctrl-C goes through).  ``LITS_PLUGINS=a,b`` limits which installed plugins load
(distribution or entry-point names; empty means none); ``LITS_STRICT_PLUGINS=1``
turns load errors into exceptions.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import threading
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable

import pluggy

from lits.plugin_host import hookspecs, plugin_probe
from lits.plugin_host.entry_points import PluginEntryPoint, plugin_entry_points
from lits.plugin_host.store import (
    BUILTIN_OWNER,
    add_registration,
    owner_scope,
    register_prompt,
    register_search_framework,
    refused_names,
    registrations_of,
    remove_registrations_of,
    set_package_owners,
)

ENV_PLUGINS = "LITS_PLUGINS"
ENV_STRICT = "LITS_STRICT_PLUGINS"
#: Plugins not to load (distribution or entry-point names, comma-separated); ``--disable-plugin`` adds to it.
ENV_DISABLE = "LITS_DISABLE_PLUGINS"
CORE_NAME = BUILTIN_OWNER
#: Core's own components and algorithms, loaded through the same mechanism.
BUILTIN_MODULES = ("lits.builtins",)


class PluginLoadError(RuntimeError):
    """A plugin failed to load (raised only in strict mode)."""


@dataclass
class PluginInfo:
    name: str
    distribution: str
    version: str
    module: str
    builtin: bool = False
    error: str | None = None
    registered: dict[str, list[str]] = field(default_factory=dict)
    #: Registrations refused because LiTS has the name built in (one line each, with advice).
    refused: list[str] = field(default_factory=list)
    #: Skipped on purpose (``LITS_DISABLE_PLUGINS`` / ``--disable-plugin``).
    disabled: bool = False

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "module": self.module,
            "builtin": self.builtin,
            "error": self.error,
            "registered": self.registered,
            "refused": self.refused,
            "disabled": self.disabled,
        }


class _State:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.loaded = False
        self.loading = False
        self.infos: list[PluginInfo] = []
        self.unknown: list[str] = []  # LITS_PLUGINS entries no installed plugin matches
        self.points: list[PluginEntryPoint] = []  # every installed plugin, loaded or not
        self.pm = _new_manager()


def _new_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("lits")
    pm.add_hookspecs(hookspecs)
    return pm


_STATE = _State()


def get_plugin_manager() -> pluggy.PluginManager:
    ensure_plugins_loaded()
    return _STATE.pm


def ensure_plugins_loaded() -> None:
    """Load plugins unless already loaded (or being loaded on this call stack)."""
    if _STATE.loaded or _STATE.loading:
        return
    load_plugins()


def load_plugins(*, strict: bool | None = None) -> list[PluginInfo]:
    """Load core's built-ins and every allowed entry point, once."""
    if strict is None:
        strict = os.environ.get(ENV_STRICT, "").lower() in ("1", "true", "yes")
    with _STATE.lock:
        if _STATE.loaded or _STATE.loading:
            return list(_STATE.infos)
        _STATE.loading = True
        try:
            from lits.version import __version__

            for module_name in BUILTIN_MODULES:
                info = PluginInfo(CORE_NAME, CORE_NAME, __version__, module_name, builtin=True)
                _load_one(info, functools.partial(importlib.import_module, module_name), strict)
            allowed = _allowed_names()
            points = plugin_entry_points()
            # Credit what a plugin's modules define to the distribution whose entry point ships
            # them, whoever imports them first.
            set_package_owners({ep.value.split(":")[0].split(".")[0]: ep.dist_name for ep in points})
            _STATE.unknown = _unknown_selections(allowed, points)
            _STATE.points = points
            disabled = _names_in(ENV_DISABLE) or set()
            chosen, unselected = [], []
            for ep in points:
                names = {_norm(ep.dist_name), _norm(ep.name)}
                if allowed is not None and not (names & allowed):
                    unselected.append(ep.dist_name)
                    continue
                info = PluginInfo(ep.name, ep.dist_name, ep.version, ep.value)
                if names & disabled:
                    info.disabled = True
                    _STATE.infos.append(info)
                    continue
                chosen.append((ep, info))
            # Imported in a throw-away process first: one that exits it or hangs is skipped, named.
            unsafe = plugin_probe.verdicts([ep for ep, _ in chosen])
            seconds = plugin_probe.limit()
            for ep, info in chosen:
                reason = unsafe.get(plugin_probe.entry_id(ep))
                if reason is not None:
                    info.error = f"{reason}; skipped"
                    _STATE.infos.append(info)
                    continue
                # here too within the probe's limit: the cached verdict may be older than the hang
                failure = _load_one(info, functools.partial(plugin_probe.import_within, ep.load, seconds), strict)
                if isinstance(failure, plugin_probe.ImportTimedOut):
                    plugin_probe.forget([ep for ep, _ in chosen])
            for dist_name in unselected:  # what a selected plugin imported from one not selected
                remove_registrations_of(dist_name)
            _STATE.loaded = True
        finally:
            _STATE.loading = False
        return list(_STATE.infos)


def plugin_infos() -> list[PluginInfo]:
    """What was loaded, with what each plugin registered and any load error."""
    ensure_plugins_loaded()
    return list(_STATE.infos)


def load_errors() -> list[PluginInfo]:
    """Plugins that failed to load (named in lookups that miss and in the CLI's warnings)."""
    return [i for i in plugin_infos() if i.error]


def installed_plugins() -> list[PluginEntryPoint]:
    """Every installed plugin's entry point as the load found it, selected or not (read once per load)."""
    ensure_plugins_loaded()
    return list(_STATE.points)


def unknown_selections() -> list[str]:
    """One line per ``LITS_PLUGINS`` entry that names no installed plugin."""
    ensure_plugins_loaded()
    return list(_STATE.unknown)


def _unknown_selections(allowed: set[str] | None, points: list[PluginEntryPoint]) -> list[str]:
    import difflib

    if not allowed:
        return []
    installed = sorted({_norm(ep.dist_name) for ep in points} | {_norm(ep.name) for ep in points})
    lines = []
    for wanted in sorted(allowed - set(installed)):
        close = difflib.get_close_matches(wanted, installed, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        lines.append(
            f"{ENV_PLUGINS} names {wanted!r}, which is not installed{hint}; installed: {', '.join(installed) or 'none'}"
        )
    return lines


# -- internals ---------------------------------------------------------------


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _allowed_names() -> set[str] | None:
    return _names_in(ENV_PLUGINS)


def _names_in(variable: str) -> set[str] | None:
    raw = os.environ.get(variable)
    if raw is None:
        return None
    return {_norm(n.strip()) for n in raw.split(",") if n.strip()}


def _owner_for(info: PluginInfo) -> str:
    return info.distribution if not info.builtin else CORE_NAME


def _load_one(info: PluginInfo, load: Callable[[], ModuleType], strict: bool) -> BaseException | None:
    """Import one plugin and call its hooks; what made it fail (recorded in ``info.error``), if anything."""
    owner = _owner_for(info)
    pm_name = f"{info.distribution}:{info.name}:{info.module}"
    try:
        with owner_scope(owner):
            module = load()  # decorator-style registrations run here
            if _STATE.pm.get_plugin(pm_name) is None and not _STATE.pm.is_registered(module):
                _STATE.pm.register(module, name=pm_name)
                _STATE.pm.check_pending()
                _call_hooks(pm_name, owner)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # one broken plugin (even one calling sys.exit()) must not stop the others
        if _STATE.pm.has_plugin(pm_name):
            _STATE.pm.unregister(name=pm_name)
        if not info.builtin:
            remove_registrations_of(owner)
        info.error = _describe_failure(exc)
        info.registered = {}
        _STATE.infos.append(info)
        if strict or info.builtin:
            raise PluginLoadError(f"plugin {info.name!r} ({info.distribution}) failed to load: {info.error}") from exc
        return exc
    registered: dict[str, list[str]] = {}
    for reg in registrations_of(owner):
        registered.setdefault(reg.kind, []).append(reg.name)
    info.registered = {k: sorted(v) for k, v in sorted(registered.items())}
    info.refused = [] if info.builtin else refused_names(owner)
    _STATE.infos.append(info)
    return None


def _describe_failure(exc: BaseException) -> str:
    """One line for a plugin's load error; ``sys.exit()`` says what it was, not just its code."""
    if isinstance(exc, SystemExit):
        return f"SystemExit: the plugin called sys.exit({exc.code!r}) while loading"
    if isinstance(exc, plugin_probe.ImportTimedOut):
        return f"{exc}; skipped"
    return f"{type(exc).__name__}: {exc}".strip()


def _call_hooks(pm_name: str, owner: str) -> None:
    """Call each registration hook on this one plugin, with keyword arguments.

    What a hook registers belongs to the plugin whose hook it is.
    """
    pm = _STATE.pm
    others = [p for n, p in pm.list_name_plugin() if n != pm_name]

    def caller(hook: str) -> pluggy.HookCaller:
        return pm.subset_hook_caller(hook, remove_plugins=others)

    def component(kind: str) -> Callable[..., None]:
        def register(name: str, cls: object, task_type: str | None = None) -> None:
            add_registration(kind, name, cls, task_type=task_type, owner=owner)

        return register

    def dataset(name: str, loader: object, task_type: str | None = None, **meta: Any) -> None:
        add_registration("dataset", name, loader, task_type=task_type, owner=owner, **meta)

    def resource(name: str, loader: object) -> None:
        add_registration("resource", name, loader, owner=owner)

    def algorithm(kind: str) -> Callable[..., None]:
        def register(name: str, cls: object, config_class: type | None = None) -> None:
            add_registration(kind, name, cls, config_class=config_class, owner=owner)

        return register

    def model(name: str, factory: object, description: str = "", concurrency: int | None = None) -> None:
        add_registration("model", name, factory, description=description, concurrency=concurrency, owner=owner)

    def command(name: str, add_arguments: object, help: str = "") -> None:
        add_registration("command", name, add_arguments, help=help, owner=owner)

    def augmentor(name: str, cls: object, description: str = "") -> None:
        add_registration("augmentor", name, cls, description=description, owner=owner)

    def prompt(component: str, agent: str, key: str, value: object, user: bool = False) -> None:
        register_prompt(component, agent, key, value, user=user, owner=owner)

    caller("register_transitions")(register=component("transition"))
    caller("register_policies")(register=component("policy"))
    caller("register_reward_models")(register=component("reward_model"))
    caller("register_datasets")(register=dataset)
    caller("register_resources")(register=resource)
    caller("register_searches")(register=algorithm("search"))
    caller("register_chains")(register=algorithm("chain"))
    caller("register_prompts")(register=prompt)
    caller("register_search_frameworks")(register=register_search_framework)
    caller("register_models")(register=model)
    caller("register_commands")(register=command)
    caller("register_augmentors")(register=augmentor)


def _snapshot() -> tuple[bool, list[PluginInfo], pluggy.PluginManager, set[str]]:
    with _STATE.lock:
        names = {name for name, _ in _STATE.pm.list_name_plugin()}
        return _STATE.loaded, list(_STATE.infos), _STATE.pm, names


def _restore(snap: tuple[bool, list[PluginInfo], pluggy.PluginManager, set[str]]) -> None:
    loaded, infos, pm, names = snap
    with _STATE.lock:
        for name, _ in pm.list_name_plugin():
            if name not in names:
                pm.unregister(name=name)
        _STATE.loaded, _STATE.infos, _STATE.pm = loaded, list(infos), pm


def reset_plugins() -> None:
    """Forget which plugins were loaded so the next read loads again.

    Registrations stay (decorators run only at a module's first import);
    reloading re-registers under the same owner, which is not a conflict.
    """
    with _STATE.lock:
        _STATE.loaded = False
        _STATE.infos = []
        _STATE.points = []
        _STATE.pm = _new_manager()
