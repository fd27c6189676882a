"""Optional packages, imported where they are used: a missing one is one line naming the pip command.

Every optional import of LiTS and its plugins goes through :func:`require`, so the
promise holds in one place: never a ``ModuleNotFoundError`` traceback.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from lits.errors import UserError


class MissingExtra(UserError, ValueError):
    """An optional package that is not installed; the message says how to install it."""


def require(module: str, *, install: str, what: str, package: str = "", note: str = "") -> ModuleType:
    """``module`` imported, or :class:`MissingExtra`: ``{what} needs {package}: pip install '{install}'``."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(missing_message(module, install=install, what=what, package=package, note=note)) from None


def missing_message(module: str, *, install: str, what: str, package: str = "", note: str = "") -> str:
    return f"{what} needs {package or module}: pip install '{install}'" + (f" {note}" if note else "")
