"""Prompt lookup with fallback: explicit -> task_name -> TASK_TYPE -> 'default'.

A component with ``TASK_TYPE = None`` skips the TASK_TYPE step, so a
task-specific component never silently gets a generic prompt.
"""

from __future__ import annotations

import inspect
import threading
from typing import Any, Optional

_Key = tuple[str, str, str]


class PromptRegistry:
    """Class-level store of system prompts and user templates."""

    _system: dict[_Key, Any] = {}
    _user: dict[_Key, Any] = {}
    _owners: dict[tuple[str, _Key], str] = {}
    _lock = threading.RLock()

    @classmethod
    def register(cls, component: str, agent: str, key: str, value: Any) -> None:
        """Set the system prompt (``task_prompt_spec``) for ``(component, agent, key)``."""
        cls._set(component, agent, key, value, user=False, owner="__api__")

    @classmethod
    def register_usr(cls, component: str, agent: str, key: str, value: Any) -> None:
        """Set the user template (``usr_prompt_spec``); a dict or template, not a str."""
        cls._set(component, agent, key, value, user=True, owner="__api__")

    @classmethod
    def get(
        cls,
        component: str,
        agent: str,
        task_name: Optional[str] = None,
        task_type: Optional[str] = None,
    ) -> Any:
        """The system prompt by fallback order, or None."""
        return cls._lookup(cls._system, component, agent, task_name, task_type)

    @classmethod
    def get_usr(
        cls,
        component: str,
        agent: str,
        task_name: Optional[str] = None,
        task_type: Optional[str] = None,
    ) -> Any:
        """The user template by fallback order, or None."""
        return cls._lookup(cls._user, component, agent, task_name, task_type)

    @classmethod
    def lookup_order(cls, task_name: Optional[str], task_type: Optional[str]) -> list[str]:
        keys = [k for k in (task_name, task_type) if k]
        keys.append("default")
        return keys

    # -- internals -------------------------------------------------------
    @classmethod
    def _lookup(
        cls,
        table: dict[_Key, Any],
        component: str,
        agent: str,
        task_name: Optional[str],
        task_type: Optional[str],
    ) -> Any:
        from lits.plugins import ensure_plugins_loaded

        ensure_plugins_loaded()
        with cls._lock:
            for key in cls.lookup_order(task_name, task_type):
                if (component, agent, key) in table:
                    value = table[(component, agent, key)]
                    return value() if inspect.isroutine(value) else value
        return None

    @classmethod
    def _set(cls, component: str, agent: str, key: str, value: Any, *, user: bool, owner: str) -> None:
        if user and isinstance(value, str):
            raise TypeError(
                f"user prompt for ({component}, {agent}, {key}) must be a dict or template, "
                "not a str (put a plain instruction in the system prompt)"
            )
        with cls._lock:
            table = cls._user if user else cls._system
            table[(component, agent, key)] = value
            cls._owners[("user" if user else "system", (component, agent, key))] = owner

    @classmethod
    def _remove_owner(cls, owner: str) -> None:
        with cls._lock:
            for (kind, key), who in list(cls._owners.items()):
                if who == owner:
                    (cls._user if kind == "user" else cls._system).pop(key, None)
                    del cls._owners[(kind, key)]

    @classmethod
    def _snapshot(cls) -> tuple[dict[_Key, Any], dict[_Key, Any], dict[tuple[str, _Key], str]]:
        with cls._lock:
            return dict(cls._system), dict(cls._user), dict(cls._owners)

    @classmethod
    def _restore(cls, snap: tuple[dict[_Key, Any], dict[_Key, Any], dict[tuple[str, _Key], str]]) -> None:
        with cls._lock:
            cls._system, cls._user, cls._owners = dict(snap[0]), dict(snap[1]), dict(snap[2])
