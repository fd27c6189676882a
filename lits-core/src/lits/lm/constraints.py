"""Replies held to a known shape by the server's constrained decoding.

A component that knows every acceptable reply (a policy choosing among the
legal actions, a judge writing ``1: Yes`` / ``2: No`` lines) passes
``reply_lines``: line *i* of the reply is one of ``reply_lines[i]``.  Servers
that constrain decoding then cannot produce anything else, so a small chat
model stops spending calls on unusable replies; servers that cannot are sent
the plain request and the reply is parsed as before.

What each server is sent:

* llama.cpp (``llama-server``) and llama-cpp-python's server: a GBNF ``grammar``;
* vLLM: a ``guided_regex`` (from vLLM's documentation; not exercised here);
* anything else: nothing (the component's parser and re-ask still apply).
"""

from __future__ import annotations

import re
from typing import Literal, Optional, Sequence

#: Lines of alternatives, as :class:`lits.lm.base.GenerationParams` holds them.
ReplyLines = tuple[tuple[str, ...], ...]
#: How a server constrains decoding, or None when it cannot (or does not say).
ConstraintDialect = Optional[Literal["gbnf", "regex"]]
#: How config.json and the summary name each dialect.
DIALECT_NAMES: dict[ConstraintDialect, str] = {
    "gbnf": "grammar (llama.cpp)", "regex": "guided_regex (vLLM)", None: "no (replies parsed, re-asked)"}


def reply_lines(lines: Optional[Sequence[Sequence[str]]]) -> ReplyLines:
    """``lines`` as hashable tuples, each line's alternatives deduplicated in order; empty lines refused."""
    if not lines:
        return ()
    out = []
    for i, alternatives in enumerate(lines):
        if isinstance(alternatives, str):
            raise TypeError("reply_lines is a list of lines, each a list of alternatives")
        unique = tuple(dict.fromkeys(map(str, alternatives)))  # map, not a generator: asked per model call
        if not unique:
            raise ValueError(f"reply_lines[{i}] offers no alternative")
        out.append(unique)
    return tuple(out)


def gbnf(lines: ReplyLines) -> str:
    """A llama.cpp grammar accepting exactly one alternative per line, lines joined by newlines."""
    rules = [f"line{i} ::= " + " | ".join(_gbnf_literal(a) for a in alts) for i, alts in enumerate(lines)]
    root = ' "\\n" '.join(f"line{i}" for i in range(len(lines)))
    return "\n".join([f"root ::= {root}", *rules]) + "\n"


def regex(lines: ReplyLines) -> str:
    """The same language as :func:`gbnf`, as a regular expression."""
    return "\\n".join("(" + "|".join(re.escape(a) for a in alts) + ")" for alts in lines)


def request_fields(lines: ReplyLines, dialect: ConstraintDialect) -> dict[str, str]:
    """The request body fields that hold a reply to ``lines`` for a server speaking ``dialect``."""
    if not lines or dialect is None:
        return {}
    if dialect == "gbnf":
        return {"grammar": gbnf(lines)}
    return {"guided_regex": regex(lines)}


def _gbnf_literal(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'
