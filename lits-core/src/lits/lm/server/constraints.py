"""Replies held to a known shape by the server's constrained decoding.

A component that knows every acceptable reply (a policy choosing among the
legal actions, a judge writing ``1: Yes`` / ``2: No`` lines) passes
``reply_lines``: line *i* of the reply is one of ``reply_lines[i]``.  Servers
that constrain decoding then cannot produce anything else, so a small chat
model stops spending calls on unusable replies; servers that cannot are sent
the plain request and the reply is parsed as before.

What each server is sent (its *dialect*):

* ``gbnf``: llama.cpp (``llama-server``) and llama-cpp-python's server, a GBNF ``grammar``;
* ``structured_outputs``: vLLM 0.10.2 and later, ``{"structured_outputs": {"choice": [...]}}``
  for a one-line reply, ``{"regex": ...}`` for several lines;
* ``guided``: vLLM before 0.12 (which dropped these fields: a newer server ignores them and
  answers unconstrained, with no error), ``guided_choice`` / ``guided_regex``;
* anything else: nothing (the component's parser and re-ask still apply).
"""

from __future__ import annotations

import re
from typing import Literal, Mapping, Sequence, cast

#: Lines of alternatives, as :class:`lits.lm.base.GenerationParams` holds them.
ReplyLines = tuple[tuple[str, ...], ...]
#: How a server constrains decoding, or None when it cannot (or does not say).
ConstraintDialect = Literal["gbnf", "structured_outputs", "guided"] | None
#: How config.json and the summary name each dialect.
DIALECT_NAMES: dict[ConstraintDialect, str] = {
    "gbnf": "grammar (llama.cpp)",
    "structured_outputs": "structured_outputs (vLLM)",
    "guided": "guided_choice/guided_regex (vLLM before 0.12)",
    None: "no (replies parsed, re-asked)",
}
#: The values of the ``constraints`` model setting: a dialect, ``none``, or ``auto`` (what the server says).
CONSTRAINT_SETTINGS = ("auto", "gbnf", "structured_outputs", "guided", "none")
#: The first vLLM that takes ``structured_outputs``; 0.12.0 then removed ``guided_*`` (and, taking unknown
#: fields without a word, answers a request that still sends them unconstrained).
VLLM_STRUCTURED_OUTPUTS = (0, 10, 2)
#: The request fields that carry a constraint, in any dialect.
CONSTRAINT_FIELDS = ("grammar", "structured_outputs", "guided_choice", "guided_regex")


def reply_lines(lines: Sequence[Sequence[str]] | None) -> ReplyLines:
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
    return "\\n".join("(" + "|".join(_regex_literal(a) for a in alts) + ")" for alts in lines)


def request_fields(lines: ReplyLines, dialect: ConstraintDialect) -> dict[str, object]:
    """The request body fields that hold a reply to ``lines`` for a server speaking ``dialect``.

    vLLM gets a ``choice`` for a one-line reply (the alternatives as they are, nothing to escape)
    and a ``regex`` only for several lines."""
    if not lines or dialect is None:
        return {}
    if dialect == "gbnf":
        return {"grammar": gbnf(lines)}
    one_line = len(lines) == 1
    if dialect == "guided":
        return {"guided_choice": list(lines[0])} if one_line else {"guided_regex": regex(lines)}
    return {"structured_outputs": {"choice": list(lines[0])} if one_line else {"regex": regex(lines)}}


def dialect_setting(value: object, where: str) -> tuple[bool, ConstraintDialect]:
    """The ``constraints`` setting as ``(configured, dialect)``: ``auto`` (or None) is not configured, ``none``
    is the None dialect; anything else is a ValueError naming ``where`` (the flag or argument)."""
    if value is None or value == "auto":
        return False, None
    if value not in CONSTRAINT_SETTINGS:
        raise ValueError(f"{where} constraints must be one of {', '.join(CONSTRAINT_SETTINGS)}, not {value!r}")
    return True, None if value == "none" else cast(ConstraintDialect, value)


#: A server's 400 that names the ``n`` field (llama-server: "Field 'n': Value must be between 1 <= value <= 2").
_N_REFUSED = re.compile(r"""(?:^|[^\w])['"`]n['"`](?:[^\w]|$)""")
_N_MOST = re.compile(r"<=\s*value\s*<=\s*(\d+)|at most (\d+)")


def samples_allowed(error: str) -> int | None:
    """How many samples a request may ask for, when a server's refusal names ``n`` (None: it names no ``n``).

    llama-server takes as many as it has slots and says so; a refusal that gives no number allows one."""
    if _N_REFUSED.search(error) is None:
        return None
    most = _N_MOST.search(error)
    return max(1, int(most.group(1) or most.group(2))) if most else 1


def refusal_hint(body: Mapping[str, object], error: str) -> str | None:
    """What to do when a server's error names the constraint field ``body`` carried (None: it names none);
    short, since it goes first in a message a run cuts at 300 characters."""
    field = next((f for f in CONSTRAINT_FIELDS if f in body and f in error), None)
    if field is None:
        return None
    instead = {"structured_outputs": "guided (a vLLM before 0.10.2)", "grammar": "none"}.get(
        field, "structured_outputs (vLLM 0.10.2 and later)"
    )
    return (
        f"the server refused `{field}` (how LiTS holds a reply to known choices): set --policy-model-arg "
        f"(or --eval-model-arg) constraints={instead}, or give --free-replies"
    )


#: What a regular expression reads as syntax: escaped, and nothing else (``re.escape`` also escapes spaces
#: and other characters, an escape some of vLLM's regex engines do not take).
_REGEX_SYNTAX = re.compile(r"[\\.^$|?*+()\[\]{}]")
_REGEX_CONTROLS = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t"})


def _regex_literal(text: str) -> str:
    return _REGEX_SYNTAX.sub(r"\\\g<0>", text).translate(_REGEX_CONTROLS)


def _gbnf_literal(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'
