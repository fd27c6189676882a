"""The error a user can act on, and the one line any exception becomes (no traceback, no secret).

Lower than the CLI so that run set-up shared with Ray workers (:mod:`lits.runs.setup`)
raises the same error the CLI prints.
"""

from __future__ import annotations

from lits.io.secrets import redact_text


class UserError(Exception):
    """A problem with the user's input or set-up; printed as one line."""


class PluginContractError(TypeError):
    """A plugin's component broke its contract (e.g. ``generate_actions`` returned a str, not a list)."""

    def __init__(self, plugin: str, message: str) -> None:
        super().__init__(message)
        self.plugin = plugin


def one_line(exc: BaseException) -> str:
    """``exc`` as one line: a pydantic error's fields, a lookup's message, else ``Type: first line``."""
    try:
        from pydantic import ValidationError

        if isinstance(exc, ValidationError):
            parts = []
            for err in exc.errors():
                loc = ".".join(str(x) for x in err.get("loc", ())) or "value"
                parts.append(f"{loc}: {err.get('msg')}")
            return redact_text("invalid setting: " + "; ".join(parts))
    except ImportError:  # pragma: no cover - pydantic is a dependency
        pass
    if isinstance(exc, KeyError) and exc.args:
        text = str(exc.args[0])
    else:
        text = str(exc) or type(exc).__name__
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    if isinstance(exc, (KeyError, ValueError, FileNotFoundError, LookupError, TypeError)):
        return redact_text(first)
    return redact_text(f"{type(exc).__name__}: {first}")
