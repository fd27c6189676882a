"""Turning exceptions into one line a user can act on (and that holds no secret)."""

from __future__ import annotations

from lits.secrets import redact_text


class UserError(Exception):
    """A problem with the user's input or set-up; printed as one line."""


def describe(exc: BaseException) -> str:
    """One line for ``exc``: the message, without a traceback or an API key."""
    from lits.runs.control import resource_problem

    return redact_text(resource_problem(exc) or _describe(exc))


def _describe(exc: BaseException) -> str:
    try:
        from pydantic import ValidationError

        if isinstance(exc, ValidationError):
            parts = []
            for err in exc.errors():
                loc = ".".join(str(x) for x in err.get("loc", ())) or "value"
                parts.append(f"{loc}: {err.get('msg')}")
            return "invalid setting: " + "; ".join(parts)
    except ImportError:  # pragma: no cover - pydantic is a dependency
        pass
    if isinstance(exc, KeyError) and exc.args:
        text = str(exc.args[0])
    else:
        text = str(exc) or type(exc).__name__
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    if isinstance(exc, (KeyError, ValueError, FileNotFoundError, LookupError, TypeError)):
        return first
    return f"{type(exc).__name__}: {first}"
