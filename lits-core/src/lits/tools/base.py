"""``BaseTool`` and :func:`execute_tool_action`."""

from __future__ import annotations

import json
import threading
from typing import Any, ClassVar, Sequence, TypedDict

from pydantic import BaseModel, ValidationError

DEFAULT_TIMEOUT = 30.0
INTERRUPT_GRACE = 2.0
"""Seconds a timed-out call may take to wind down after :meth:`BaseTool.interrupt` said it would stop."""


class ToolUnavailable(Exception):
    """A tool's backend is gone for good (e.g. its server died again after a restart).

    Unlike every other tool failure this is not an observation: the instance
    fails with this one line, because no later step could use the tool either."""


class ToolFailed(Exception):
    """Raised with the whole reason (``Tool NAME failed: <reason>``), e.g. by a tool whose server reported the
    error: the reason already names the problem, so no exception type is added before it."""


class BaseTool:
    """Subclass with ``name``, ``description``, ``args_schema`` and ``_run(**args)``.

    Constructor keyword arguments become attributes (e.g. ``client=db``), so a
    tool can carry the backend it talks to. ``timeout`` (seconds) bounds each call.
    Calls run in a worker thread (that is how the time budget is kept), so a
    client must allow use from other threads (sqlite3: ``check_same_thread=False``).
    Python cannot kill a thread: a tool whose backend can be stopped (a database
    connection, a subprocess) should override :meth:`interrupt`, otherwise a
    timed-out call keeps running in the background until it ends by itself.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    args_schema: ClassVar[type[BaseModel] | None] = None
    timeout: float = DEFAULT_TIMEOUT

    def __init__(self, **kwargs: object) -> None:
        for key, value in kwargs.items():
            setattr(self, key, value)

    def _run(self, *args: Any, **kwargs: Any) -> object:
        raise NotImplementedError(f"tool {self.name!r} does not implement _run()")

    def run(self, *args: Any, **kwargs: Any) -> object:
        """Call the tool (validated arguments as keywords)."""
        return self._run(*args, **kwargs)

    def interrupt(self, worker: threading.Thread) -> bool:
        """Stop the call running in ``worker`` because its time budget ran out.

        Return True when the call will end promptly (the caller then waits up to
        ``INTERRUPT_GRACE`` s for it); the default cannot stop anything."""
        return False

    def validate_args(self, args: dict[str, object]) -> dict[str, object]:
        if self.args_schema is None:
            return dict(args)
        return self.args_schema(**args).model_dump()

    def spec(self) -> dict[str, object]:
        """Name, description and JSON schema of the arguments, for prompts."""
        schema = self.args_schema.model_json_schema() if self.args_schema else {"type": "object"}
        return {"name": self.name, "description": self.description, "parameters": schema}


Tool = BaseTool
"""The seeds' name for the same base class."""


def parse_tool_call(action: object) -> tuple[str, dict[str, object]]:
    """``'{"tool": "calc", "args": {...}}'`` -> ("calc", {...}); ``ValueError`` says why not."""
    try:
        data = json.loads(str(action))
    except ValueError:
        raise ValueError(f"tool call is not JSON: {str(action)[:120]!r}") from None
    if not isinstance(data, dict):
        raise ValueError("tool call must be a JSON object with 'tool' and 'args'")
    name = data.get("tool", data.get("name"))
    args = data.get("args", data.get("arguments", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            raise ValueError("tool call 'args' is not a JSON object") from None
    if not isinstance(name, str) or not name:
        raise ValueError("tool call has no 'tool' name")
    if not isinstance(args, dict):
        raise ValueError("tool call 'args' must be a JSON object")
    return name, args


def execute_tool_action(action: object, tools: Sequence[BaseTool], timeout: float | None = None) -> str:
    """Run the tool call ``action``; every problem comes back as an observation string."""
    try:
        name, args = parse_tool_call(action)
    except ValueError as exc:
        return f"Invalid tool call: {exc}"
    by_name = {t.name: t for t in tools}
    tool = by_name.get(name)
    if tool is None:
        return f"Unknown tool {name!r}; available tools: {', '.join(sorted(by_name)) or 'none'}"
    try:
        validated = tool.validate_args(args)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'args'}: {e['msg']}" for e in exc.errors())
        return f"Invalid arguments for {name}: {problems}"
    return _run_with_budget(tool, validated, timeout if timeout is not None else tool.timeout)


def _one_line(text: str, limit: int = 500) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def failure_reason(exc: BaseException) -> str:
    """How a tool's exception reads in its observation (``Tool NAME failed: <this>``)."""
    return _one_line(f"{type(exc).__name__}: {exc}")


class _Outcome(TypedDict, total=False):
    """What the worker thread left behind."""

    value: object
    unavailable: ToolUnavailable
    error: str
    #: A BaseException (a ``sys.exit()``), re-raised in the caller's thread.
    raised: BaseException


def _run_with_budget(tool: BaseTool, args: dict[str, object], budget: float) -> str:
    """Run in a worker thread; a tool that hangs past ``budget`` is interrupted (when it can be) and yields a
    time-out observation."""
    box: _Outcome = {}

    def work() -> None:
        try:
            box["value"] = tool.run(**args)
        except ToolUnavailable as exc:
            box["unavailable"] = exc
        except ToolFailed as exc:
            box["error"] = _one_line(str(exc))
        except Exception as exc:  # a tool error is an observation, not a crash
            box["error"] = failure_reason(exc)
        except BaseException as exc:  # a tool's sys.exit() fails the instance (named), not this thread silently
            box["raised"] = exc

    worker = threading.Thread(target=work, daemon=True, name=f"tool-{tool.name}")
    worker.start()
    worker.join(budget)
    if worker.is_alive():
        try:
            stopping = tool.interrupt(worker)
        except Exception:  # a broken interrupt must not turn a time-out into a crash
            stopping = False
        if stopping:
            worker.join(INTERRUPT_GRACE)
        return f"Tool {tool.name} timed out after {budget:g} s"
    if "unavailable" in box:
        raise box["unavailable"]
    if "raised" in box:
        raise box["raised"]
    if "error" in box:
        return f"Tool {tool.name} failed: {box['error']}"
    value = box.get("value")
    return value if isinstance(value, str) else json.dumps(value, default=str)
