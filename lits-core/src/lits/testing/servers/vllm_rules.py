"""What a vLLM server of a given version makes of a request's constraint fields, for the loopback server.

vLLM 0.10.2 added ``structured_outputs`` (one of ``json``, ``regex``, ``choice``,
``grammar``, ``json_object``, ``structural_tag``); 0.12.0 removed the top-level
``guided_*`` fields.  vLLM accepts fields it does not know and ignores them
(the reply comes back unconstrained, with HTTP 200); ``refuse_unknown`` makes
the loopback server answer 400 naming such a field instead, so a test sees it.
The constraint is applied to the scripted reply as a constrained decoder
would: a reply the constraint allows is kept, any other becomes an allowed one.
"""

from __future__ import annotations

import re
import warnings
from typing import Any, Mapping

from lits.lm.server.constraints import VLLM_STRUCTURED_OUTPUTS

#: The first vLLM without the ``guided_*`` request fields.
VLLM_WITHOUT_GUIDED = (0, 12, 0)
GUIDED_FIELDS = (
    "guided_json",
    "guided_regex",
    "guided_choice",
    "guided_grammar",
    "guided_whitespace_pattern",
    "guided_decoding_backend",
)
#: The kinds of ``structured_outputs``, of which a request names exactly one.
KINDS = ("json", "regex", "choice", "grammar", "json_object", "structural_tag")


class VLLMRules:
    """The constraint fields one vLLM version knows, checked and applied."""

    def __init__(self, version: str, *, refuse_unknown: bool = False) -> None:
        numbers = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
        if numbers is None:
            raise ValueError(f"a vLLM version is x.y.z, not {version!r}")
        self.version = version
        number = tuple(map(int, numbers.groups()))
        self.structured_outputs = number >= VLLM_STRUCTURED_OUTPUTS
        self.guided = number < VLLM_WITHOUT_GUIDED
        self.refuse_unknown = refuse_unknown

    def check(self, body: Mapping[str, Any]) -> str | None:
        """Why this server answers 400 to ``body`` (None: it does not)."""
        unknown = [
            f
            for f in body
            if (f in GUIDED_FIELDS and not self.guided) or (f == "structured_outputs" and not self.structured_outputs)
        ]
        if unknown and self.refuse_unknown:
            return f"vLLM {self.version} does not know the request field `{unknown[0]}`"
        if "structured_outputs" in body and self.structured_outputs:
            return _check_structured_outputs(body["structured_outputs"])
        return None

    def constraint(self, body: Mapping[str, Any]) -> tuple[str, Any] | None:
        """The ``(kind, value)`` holding the reply to ``body`` (None: none this server knows)."""
        held = body.get("structured_outputs") if self.structured_outputs else None
        if isinstance(held, Mapping):
            return next(((k, held[k]) for k in KINDS if held.get(k) is not None), None)
        if self.guided:
            return next(((f[len("guided_") :], body[f]) for f in GUIDED_FIELDS[:4] if body.get(f) is not None), None)
        return None

    def hold(self, body: Mapping[str, Any], text: str, index: int) -> str:
        """``text`` as the constraint lets it out: kept when allowed, else sample ``index``'s allowed reply."""
        constraint = self.constraint(body)
        if constraint is None:
            return text
        kind, value = constraint
        if kind == "choice":
            return text if text in value else str(value[index % len(value)])
        if kind == "regex":
            return text if re.fullmatch(value, text) else a_match(value, index)
        return text  # json and grammars: the scripted replies are trusted


def _check_structured_outputs(value: object) -> str | None:
    if not isinstance(value, Mapping):
        return "structured_outputs must be an object"
    named = [k for k in KINDS if value.get(k) is not None]
    if len(named) != 1:
        return f"structured_outputs must name exactly one of {', '.join(KINDS)}, not {len(named)}"
    kind, held = named[0], value[named[0]]
    if kind == "choice" and not (isinstance(held, list) and held and all(isinstance(c, str) for c in held)):
        return "structured_outputs.choice must be a list of strings"
    if kind == "regex":
        try:
            re.compile(held)
        except (re.error, TypeError):
            return "structured_outputs.regex is not a regular expression"
    return None


def a_match(pattern: str, index: int) -> str:
    """A string ``pattern`` matches in full, taking the ``index``-th branch (wrapping) at each alternation."""
    with warnings.catch_warnings():  # the parser re compiles with; deprecated as a module, still shipped
        warnings.simplefilter("ignore", DeprecationWarning)
        import sre_constants as op
        import sre_parse

    def walk(items: Any) -> str:
        out = []
        for code, arg in items:
            if code is op.LITERAL:
                out.append(chr(arg))
            elif code is op.SUBPATTERN:
                out.append(walk(arg[-1]))
            elif code is op.BRANCH:
                out.append(walk(arg[1][index % len(arg[1])]))
            elif code is op.IN:
                out.append(_a_member(arg, op))
            elif code in (op.MAX_REPEAT, op.MIN_REPEAT):
                out.append(walk(arg[2]) * arg[0])
            elif code is op.ANY:
                out.append("x")
            elif code is not op.AT:
                raise ValueError(f"the loopback server cannot follow {code} in {pattern!r}")
        return "".join(out)

    return walk(sre_parse.parse(pattern))


def _a_member(items: Any, op: Any) -> str:
    """A character of a ``[...]`` class (``\\d``, ``\\w`` and ``\\s`` parse as classes too)."""
    for code, arg in items:
        if code is op.LITERAL:
            return chr(arg)
        if code is op.RANGE:
            return chr(arg[0])
        if code is op.CATEGORY:
            return {op.CATEGORY_DIGIT: "0", op.CATEGORY_SPACE: " ", op.CATEGORY_WORD: "a"}.get(arg, "x")
    raise ValueError("the loopback server cannot follow a negated character class")
