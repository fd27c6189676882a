"""The ``mcp`` resource: the tools of an MCP server as ordinary :class:`BaseTool` objects.

``lits chain --dataset X --resource mcp --resource-arg command="python -m my_server"`` (or
``--resource-arg url=http://127.0.0.1:PORT/mcp``) connects to the server, lists its tools at start-up
and gives each to the generic tool-use components in place of the dataset's own tools: arguments are
checked against a pydantic model built from the tool's JSON schema, and a refused call
(``isError``), a time-out or bad arguments become observations exactly as for local tools.
"""

from __future__ import annotations

import atexit
import json
import threading
import weakref
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from lits.tools.base import DEFAULT_TIMEOUT, BaseTool, ToolFailed
from lits.tools.mcp_bridge import START_TIMEOUT, McpConnection, McpServerSpec
from lits.tools.mcp_stdio import CUT_PATTERN

if TYPE_CHECKING:
    from mcp.types import CallToolResult, Tool

#: The most of one tool result a model sees, as for the built-in SQL tools.
RESULT_CHARS = 4000

_SCALARS: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None)}


def _annotation(schema: object) -> Any:
    """A Python type for a JSON-schema fragment (``Any`` for what it cannot express: the server still checks)."""
    if not isinstance(schema, dict):
        return Any
    if "enum" in schema and schema["enum"] and all(isinstance(v, (str, int, bool)) for v in schema["enum"]):
        return Literal[tuple(schema["enum"])]  # type: ignore[misc]
    if "const" in schema and isinstance(schema["const"], (str, int, bool)):
        return Literal[schema["const"]]  # type: ignore[misc]
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list) and options:
        return Union[tuple(_annotation(o) for o in options)]  # type: ignore[return-value]  # noqa: UP007 (built at run time)
    kind = schema.get("type")
    if isinstance(kind, list) and kind:
        return Union[tuple(_annotation({**schema, "type": k}) for k in kind)]  # type: ignore[return-value]  # noqa: UP007
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        return list[_annotation(schema.get("items"))]  # type: ignore[misc]
    if kind == "object":
        return dict[str, Any]
    return Any


_LITERAL_KEYS = frozenset({"default", "const", "enum", "examples"})


def canonical_schema(schema: object, parent: str = "") -> object:
    """Keys sorted as pydantic writes schemas (property names keep their order, literal values are untouched), so
    a tool served over MCP shows the model the same schema text as the same tool in-process."""
    if isinstance(schema, list):
        return [canonical_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if parent in ("properties", "$defs", "definitions", "patternProperties"):
        return {key: canonical_schema(value) for key, value in schema.items()}
    return {
        key: value if key in _LITERAL_KEYS else canonical_schema(value, key) for key, value in sorted(schema.items())
    }


def args_model(tool_name: str, schema: dict[str, Any]) -> type[BaseModel]:
    """A pydantic model for a tool's JSON input schema: types, required fields, defaults, descriptions.

    Fields are keyed by their JSON names (aliases), so any property name works, even ``model_config``."""
    raw = schema.get("properties")
    properties: dict[str, object] = raw if isinstance(raw, dict) else {}
    required = set(schema.get("required") or [])
    fields: dict[str, tuple[object, object]] = {}
    for index, (name, prop) in enumerate(properties.items()):
        prop = prop if isinstance(prop, dict) else {}
        annotation = _annotation(prop)
        options: dict[str, Any] = {"alias": name}
        if isinstance(prop.get("description"), str):
            options["description"] = prop["description"]
        if name in required:
            default: object = ...
        else:
            default = prop.get("default")
            annotation = Optional[annotation]  # noqa: UP045 (a type built at run time)
        fields[f"field_{index}"] = (annotation, Field(default, **options))
    extra: Literal["forbid", "ignore"] = "forbid" if schema.get("additionalProperties") is False else "ignore"
    return create_model(  # type: ignore[call-overload,no-any-return]
        f"{tool_name}_args", __config__=ConfigDict(extra=extra, populate_by_name=False), **fields
    )


class McpTool(BaseTool):
    """One tool of an MCP server; calls go through the shared :class:`McpConnection`."""

    name: ClassVar[str]
    description: ClassVar[str]
    connection: McpConnection
    input_schema: dict[str, object]

    def __init__(self, connection: McpConnection, info: Tool, timeout: float) -> None:
        schema = dict(info.input_schema or {})
        super().__init__(
            connection=connection,
            name=info.name,
            description=info.description or "",
            input_schema=schema,
            args_schema=args_model(info.name, schema),
            timeout=timeout,
        )

    def spec(self) -> dict[str, object]:
        """The server's own schema (keys in canonical order): the model sees what the server declared."""
        return {"name": self.name, "description": self.description, "parameters": canonical_schema(self.input_schema)}

    def validate_args(self, args: dict[str, object]) -> dict[str, object]:
        """Checked against the schema; only the arguments given are sent (the server fills its defaults)."""
        assert self.args_schema is not None
        return self.args_schema.model_validate(args).model_dump(mode="json", by_alias=True, exclude_unset=True)

    def _run(self, **arguments: object) -> str:
        # The caller's time budget (execute_tool_action) ends the call first and cancels it via interrupt();
        # this wait is only a safety net.
        result = self.connection.call_tool(self.name, arguments, budget=self.timeout * 2 + 10)
        text = result_text(result)
        if result.is_error and not CUT_PATTERN.search(_joined_text(result)):
            raise ToolFailed(text or "the server reported an error without a message")
        return text

    def interrupt(self, worker: threading.Thread) -> bool:
        """The caller's time-out cancels the request (the SDK tells the server)."""
        return self.connection.cancel(worker.ident)


def result_text(result: CallToolResult, limit: int = RESULT_CHARS) -> str:
    """The text blocks of a result joined by newlines (structured content as JSON when there is no text),
    cut to ``limit`` characters with a note saying so, as the built-in SQL tools cut theirs: a result is
    copied into every later prompt of the instance."""
    parts = [block.text for block in getattr(result, "content", None) or [] if getattr(block, "type", "") == "text"]
    if parts:
        text = "\n".join(parts)
    elif getattr(result, "structured_content", None) is not None:
        text = json.dumps(result.structured_content, sort_keys=True)
    else:
        kinds = sorted({str(getattr(block, "type", "?")) for block in getattr(result, "content", None) or []})
        return f"[{', '.join(kinds)} content]" if kinds else ""
    return cap_text(text, limit)


def _joined_text(result: CallToolResult) -> str:
    return "\n".join(
        block.text for block in getattr(result, "content", None) or [] if getattr(block, "type", "") == "text"
    )


def cap_text(text: str, limit: int = RESULT_CHARS) -> str:
    """``text`` if it fits, else its first ``limit`` characters and ``[result cut at N of M characters]`` (M in
    bytes when the transport already cut the reply, see :mod:`lits.tools.mcp_stdio`)."""
    cut = CUT_PATTERN.search(text)
    if cut is None and len(text) <= limit:
        return text
    if cut is not None:
        text, total, unit = text[: cut.start()], int(cut.group(1)), "bytes"
    else:
        total, unit = len(text), "characters"
    return f"{text[:limit]}\n[result cut at {min(limit, len(text)):,} characters of {total:,} {unit}]"


_OPEN: "weakref.WeakSet[McpConnection]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """Stop every server this process started (stdio servers would also stop when our pipes close)."""
    for connection in list(_OPEN):
        connection.close()


def tool_context(connection: McpConnection, tools: list[McpTool]) -> str:
    """The server's own instructions when it gives some, else a line naming the server and its tools."""
    if connection.instructions:
        return connection.instructions
    names = ", ".join(t.name for t in tools) or "none"
    return f"Tools from the MCP server {connection.spec.label}: {names}."


def server_spec(
    command: str | None = None,
    url: str | None = None,
    cwd: str | None = None,
    env: dict[str, object] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    start_timeout: float = START_TIMEOUT,
    **unknown: object,
) -> tuple[McpServerSpec, float, float]:
    """``--resource-arg`` values checked, nothing started: the server, the tool time-out and the start time-out
    (what ``--dry-run`` checks)."""
    if unknown:
        raise ValueError(
            f"unknown --resource-arg for mcp: {', '.join(sorted(unknown))} "
            "(known: command, url, cwd, env, timeout, start_timeout)"
        )
    if env is not None and not isinstance(env, dict):
        raise ValueError('--resource-arg env must be a JSON object, e.g. env=\'{"NAME": "value"}\'')
    for key, value in (("timeout", timeout), ("start_timeout", start_timeout)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"--resource-arg {key} must be a number of seconds more than 0, not {value!r}")
    spec = McpServerSpec(
        command=None if command is None else str(command),
        url=None if url is None else str(url),
        cwd=cwd,
        env={str(k): str(v) for k, v in (env or {}).items()},
    )
    return spec, float(timeout), float(start_timeout)


def load_mcp_resource(**options: Any) -> dict[str, object]:
    """``--resource mcp``: connect, list the tools, wrap each (in the server's order)."""
    spec, timeout, start_timeout = server_spec(**options)
    connection = McpConnection(spec, start_timeout=start_timeout)
    connection.start()
    _OPEN.add(connection)
    tools = [McpTool(connection, info, timeout) for info in connection.tools]
    return {"tools": tools, "tool_context": tool_context(connection, tools), "connection": connection}
