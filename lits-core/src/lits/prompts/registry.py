"""Prompt lookup with fallback: explicit -> task_name -> TASK_TYPE -> 'default'.

Prompts live in the one store (:mod:`lits.plugin_host.store`) like every other
registration; this is the seeds' view onto them.  A component with
``TASK_TYPE = None`` skips the TASK_TYPE step, so a task-specific component
never silently gets a generic prompt.
"""

from __future__ import annotations

import inspect
from typing import Any

from lits.plugin_host import plugins
from lits.plugin_host.store import STORE, prompt_name, register_prompt


class PromptRegistry:
    """System prompts and user templates by (component, agent, key)."""

    @classmethod
    def register(cls, component: str, agent: str, key: str, value: object) -> None:
        """Set the system prompt (``task_prompt_spec``) for ``(component, agent, key)``, replacing any."""
        register_prompt(component, agent, key, value, user=False, replace=True)

    @classmethod
    def register_usr(cls, component: str, agent: str, key: str, value: object) -> None:
        """Set the user template (``usr_prompt_spec``); a dict or template, not a str."""
        register_prompt(component, agent, key, value, user=True, replace=True)

    @classmethod
    def get(
        cls,
        component: str,
        agent: str,
        task_name: str | None = None,
        task_type: str | None = None,
    ) -> Any:
        """The system prompt by fallback order, or None."""
        return cls._lookup(component, agent, task_name, task_type, user=False)

    @classmethod
    def get_usr(
        cls,
        component: str,
        agent: str,
        task_name: str | None = None,
        task_type: str | None = None,
    ) -> Any:
        """The user template by fallback order, or None."""
        return cls._lookup(component, agent, task_name, task_type, user=True)

    @classmethod
    def lookup_order(cls, task_name: str | None, task_type: str | None) -> list[str]:
        keys = [k for k in (task_name, task_type) if k]
        keys.append("default")
        return keys

    @classmethod
    def _lookup(cls, component: str, agent: str, task_name: str | None, task_type: str | None, *, user: bool) -> Any:
        plugins.ensure_plugins_loaded()
        for key in cls.lookup_order(task_name, task_type):
            reg = STORE.find("prompt", prompt_name(component, agent, key, user=user))
            if reg is not None:
                return reg.obj() if inspect.isroutine(reg.obj) else reg.obj
        return None
