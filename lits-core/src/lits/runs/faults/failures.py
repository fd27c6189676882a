"""Why an instance failed, in one line, and whether another attempt could help.

A server or a tool's backend that failed (:class:`~lits.lm.base.ModelError`,
:class:`~lits.tools.ToolUnavailable`) is worth another attempt in the retry rounds.
An exception raised in a plugin's own code (a ``KeyError`` in its transition, say)
is a bug that fails the same way every time: it is named with its type and the
plugin that raised it, and not retried; so is a plugin's ``sys.exit()``.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Iterator

from lits.errors import PluginContractError, UserError
from lits.lm.base import ModelError, ServerUnreachable
from lits.lm.replay import ReplayMiss
from lits.runs.faults.control import innermost_frames, resource_problem
from lits.tools.base import ToolUnavailable

#: Errors of the machine or the network: never a plugin's bug, wherever they were raised.
_INFRASTRUCTURE = (ModelError, ToolUnavailable, OSError, TimeoutError, ConnectionError, MemoryError)


@dataclass(frozen=True)
class Failure:
    #: "resource" (disk, permissions), "unreachable" (no server at all), "model" (a server or tool backend),
    #: "plugin" (a bug in a plugin's code), "missing" (an offline replay's request that was never recorded),
    #: "other".
    kind: str
    #: The instance's failure as recorded and reported (``Type: message``).
    message: str
    #: What the breaker's line says of it (a server's own words; a plugin's bug named as in ``message``).
    brief: str = ""

    @property
    def retry(self) -> bool:
        return self.kind not in ("plugin", "resource", "missing")


def classify(exc: BaseException, where: str = "") -> Failure:
    """The failure ``exc`` is; ``where`` names the folder written when a disk error names no file."""
    problem = resource_problem(exc, where)
    if problem is not None:
        return Failure("resource", problem)
    text = _said(exc)
    line = f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__
    brief = text[:300] or type(exc).__name__
    if isinstance(exc, ServerUnreachable):
        return Failure("unreachable", line, brief)
    if isinstance(exc, ReplayMiss):
        return Failure("missing", line, brief)
    if isinstance(exc, (ModelError, ToolUnavailable)):
        return Failure("model", line, brief)
    if isinstance(exc, PluginContractError):
        named = f"{type(exc).__name__} in plugin {exc.plugin}: {text}"[:300]
        return Failure("plugin", named, named)
    blamed = None if isinstance(exc, _INFRASTRUCTURE) else plugin_frame(exc)
    if blamed is not None:
        plugin, function = blamed
        named = f"{type(exc).__name__} in plugin {plugin} ({function}): {text}"[:300]
        return Failure("plugin", named, named)
    return Failure("other", line, brief)


def raised_by_code(exc: BaseException) -> bool:
    """Whether ``exc`` came from the code an instance ran rather than from the user: a ``sys.exit()``, a
    ``KeyboardInterrupt`` raised off the main thread (Ctrl-C interrupts only the main thread, and a run
    turns it into a graceful stop), an ``asyncio.CancelledError`` that escaped a component."""
    if isinstance(exc, KeyboardInterrupt):
        return threading.current_thread() is not threading.main_thread()
    return not isinstance(exc, GeneratorExit)


def _said(exc: BaseException) -> str:
    """``exc``'s message on one line; what a ``sys.exit()`` or a bare ``KeyboardInterrupt`` was."""
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r})" if exc.code is not None else "called sys.exit()"
    if isinstance(exc, KeyboardInterrupt) and not str(exc):
        return "raised KeyboardInterrupt (not a Ctrl-C)"
    return " ".join(str(exc).split())


def plugin_frame(exc: BaseException) -> tuple[str, str] | None:
    """(plugin, ``module.function``) of the innermost frame of ``exc``'s traceback that is a plugin's code."""
    from lits.plugin_host.store import plugin_of_module

    for frame in innermost_frames(exc):
        module = str(frame.f_globals.get("__name__", ""))
        plugin = plugin_of_module(module)
        if plugin is not None:
            return plugin, f"{module}.{frame.f_code.co_name}"
    return None


@contextlib.contextmanager
def exits_as_errors() -> Iterator[None]:
    """A ``sys.exit()`` while a run is set up (a plugin's dataset loader, a component's constructor) is one
    line naming the plugin, not the end of the process with the plugin's status (0 for ``sys.exit()``)."""
    try:
        yield
    except SystemExit as exc:
        raise UserError(classify(exc).message) from None
