"""Test helpers: a scripted deterministic model, a loopback OpenAI-compatible server and a
chaos proxy in front of it, a loopback vLLM Pooling API server (classifier PRMs), and the conformance kit a plugin's own test suite runs
(``check_env_domain``, ``check_language_domain``, ``check_dataset``, ``check_search``; the pytest plugin
:mod:`lits.testing.pytest_plugin` adds fixtures).  Nothing here talks to the network.

Names are imported on first use, so ``--model scripted`` does not load the
HTTP server machinery.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "FAULT_KINDS": "lits.testing.servers.chaos",
    "ChaosProxy": "lits.testing.servers.chaos",
    "evenly": "lits.testing.servers.chaos",
    "ScriptedModel": "lits.testing.scripted",
    "FakeOpenAIServer": "lits.testing.servers.openai_compat",
    "FakePoolingServer": "lits.testing.servers.pooling",
    "ConformanceError": "lits.testing.conformance",
    "check_dataset": "lits.testing.conformance",
    "check_env_domain": "lits.testing.conformance",
    "check_language_domain": "lits.testing.language_conformance",
    "check_search": "lits.testing.search_conformance",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'lits.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
