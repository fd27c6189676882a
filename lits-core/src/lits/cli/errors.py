"""Turning exceptions into one line a user can act on (and that holds no secret)."""

from __future__ import annotations

from lits.errors import UserError, one_line
from lits.io.secrets import redact_text

__all__ = ["UserError", "describe"]


def describe(exc: BaseException) -> str:
    """One line for ``exc``: the message, without a traceback or an API key."""
    from lits.runs.faults.control import resource_problem

    return redact_text(resource_problem(exc) or one_line(exc))
