"""Tools for tool-use tasks: a LangChain-shaped ``BaseTool`` and safe execution.

A domain expert defines tools (name, description, a pydantic ``args_schema``,
``_run``); :func:`execute_tool_action` validates arguments against the schema,
enforces a time budget and turns every failure into an observation string, so
a bad tool call never crashes a search.
"""

from lits.tools.base import BaseTool, Tool, ToolFailed, ToolUnavailable, execute_tool_action, parse_tool_call
from lits.tools.builtin import CalculatorTool, SearchTool

__all__ = [
    "BaseTool",
    "CalculatorTool",
    "SearchTool",
    "Tool",
    "ToolFailed",
    "ToolUnavailable",
    "execute_tool_action",
    "parse_tool_call",
]
