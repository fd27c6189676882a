"""LiTS: Language Inference via Tree Search.

Importing ``lits`` is cheap on purpose: plugins load lazily, the first time a
registry is read (or explicitly via :func:`lits.plugin_host.plugins.load_plugins`), and the
Python API (:mod:`lits.api`: ``lits.run``, ``lits.search``, ``lits.chain`` ...) the
first time one of its names, or ``lits.api`` itself, is used.
"""

import importlib
from typing import Any

from lits.version import __version__

#: Names of :mod:`lits.api` reachable as ``lits.NAME`` (the running side; the rest via ``lits.api``).
_API = frozenset(
    {
        "run",
        "search",
        "chain",
        "resume",
        "run_async",
        "plan",
        "model",
        "RunSpec",
        "RunResult",
        "InstanceOutcome",
        "SpecError",
    }
)

#: The public face: what ``from lits import *`` gives and what tools list (each name loads on first use).
__all__ = [
    "InstanceOutcome",
    "RunResult",
    "RunSpec",
    "SpecError",
    "__version__",
    "api",
    "chain",
    "model",
    "plan",
    "resume",
    "run",
    "run_async",
    "search",
]


def __getattr__(name: str) -> Any:
    if name == "api":  # ``import lits`` then ``lits.api.X``: the submodule loads here, not at ``import lits``
        return importlib.import_module("lits.api")
    if name in _API:
        from lits import api

        return getattr(api, name)
    raise AttributeError(f"module 'lits' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
