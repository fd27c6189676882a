"""Two small general tools (the seeds' examples): arithmetic and document search."""

from __future__ import annotations

import ast
import operator
from typing import Callable, ClassVar

from pydantic import BaseModel, Field

from lits.tools.base import BaseTool

_OPS: dict[type, Callable[..., float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        if isinstance(node.op, ast.Pow) and abs(_evaluate(node.right)) > 100:
            raise ValueError("exponent too large")
        return _OPS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.operand))
    raise ValueError("only numbers and + - * / // % ** are allowed")


class CalculatorInput(BaseModel):
    expression: str = Field(description="arithmetic expression, e.g. 2+2*3")


class CalculatorTool(BaseTool):
    """Arithmetic without eval(): only numbers and operators are accepted."""

    name: ClassVar[str] = "calculator"
    description: ClassVar[str] = "Evaluate an arithmetic expression."
    args_schema: ClassVar[type[BaseModel] | None] = CalculatorInput

    def _run(self, expression: str) -> str:
        value = _evaluate(ast.parse(expression, mode="eval"))
        return str(int(value)) if float(value).is_integer() else str(value)


class SearchInput(BaseModel):
    query: str = Field(description="words to look for")


class SearchTool(BaseTool):
    """Keyword search over the documents the tool was given (no network)."""

    name: ClassVar[str] = "search"
    description: ClassVar[str] = "Find documents that contain the query words."
    args_schema: ClassVar[type[BaseModel] | None] = SearchInput

    def __init__(self, documents: list[str] | None = None, top_k: int = 3, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.documents = list(documents or [])
        self.top_k = top_k

    def _run(self, query: str) -> str:
        words = {w.lower() for w in query.split()}
        scored = sorted(((sum(w in d.lower() for w in words), i) for i, d in enumerate(self.documents)), reverse=True)
        hits = [self.documents[i] for score, i in scored[: self.top_k] if score > 0]
        return "\n".join(hits) if hits else "No results."
