"""LiTS: Language Inference via Tree Search.

Importing ``lits`` is cheap on purpose: plugins load lazily, the first time a
registry is read (or explicitly via :func:`lits.plugins.load_plugins`), and the
Python API (:mod:`lits.api`: ``lits.run``, ``lits.search``, ``lits.chain`` ...) the
first time one of its names is used.
"""

from typing import Any

__version__ = "0.3.0"

#: Names of :mod:`lits.api` reachable as ``lits.NAME`` (the running side; the rest via ``lits.api``).
_API = frozenset({"run", "search", "chain", "resume", "run_async", "plan", "model", "RunSpec", "RunResult",
                  "InstanceOutcome", "SpecError"})


def __getattr__(name: str) -> Any:
    if name in _API:
        from lits import api

        return getattr(api, name)
    raise AttributeError(f"module 'lits' has no attribute {name!r}")
