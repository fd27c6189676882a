"""Final answers of math problems: extraction from model text and equivalence by math-verify.

``is_equivalent`` is called from the runner's worker threads, so math-verify's
``signal.alarm`` timeouts are switched off (they only work in the main thread)
and replaced by guards of our own: a length and nesting cap on the text, a
refusal of parsed expressions that would take sympy hours (power towers, huge
factorials, unevaluated integrals), and a deadline on a daemon thread.
"""

from __future__ import annotations

import functools
import logging
import math
import re
import threading
from decimal import Decimal
from typing import Any, Callable, Iterable

from lits.api import extract_stated_answer

MAX_CHARS = 1000  # longer answers are not compared (math-verify's cost grows fast with length)
MAX_NESTING = 40  # brace/paren depth beyond which parsing takes seconds
MAX_DIGITS = 10_000.0  # refuse expressions whose numbers would exceed this many digits
DEADLINE_SECONDS = 5.0  # a comparison still running after this counts as "not equivalent"

_BOX = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")
_NUMBER = re.compile(r"(?:(?<![\w)])-)?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_THOUSANDS = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_PLAIN = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)")
_SPACES = re.compile(r"(?<!\d)\s+|\s+(?!\d)")
_WORD = re.compile(r"(?<!\\)\b[A-Za-z]{2,}")


# -- extraction ---------------------------------------------------------------


def _braced(text: str, start: int) -> str | None:
    """The content of the ``{...}`` opening at ``start``, or None when it never closes."""
    depth, i = 0, start
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2  # an escaped character, e.g. \{ or \}, does not count
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i]
        i += 1
    return None


def extract_boxed(text: str) -> str | None:
    """Content of the last complete ``\\boxed{...}`` / ``\\fbox{...}`` / ``\\boxed 5``.

    A box cut off by the token limit is skipped in favour of an earlier one.
    """
    text = str(text or "")
    for match in reversed(list(_BOX.finditer(text))):
        rest = match.end()
        while rest < len(text) and text[rest] in " \t":
            rest += 1
        if rest < len(text) and text[rest] == "{":
            content = _braced(text, rest)
        elif rest > match.end():
            content = re.split(r"[\s$]", text[rest:], maxsplit=1)[0].rstrip(".,")
        else:
            content = None
        if content is not None and content.strip():
            return content.strip()
    return None


def extract_math_answer(text: str) -> str | None:
    """MATH style: the boxed answer, else "The answer is X" / "Final answer: X"."""
    return extract_boxed(text) or extract_stated_answer(str(text or ""))


def _last_number(text: str) -> str | None:
    found = _NUMBER.findall(str(text or ""))
    return found[-1].replace(",", "") if found else None


def _looks_bare(text: str) -> bool:
    """A short one-line formula ("12", "x = 3", ``\\frac{1}{2}``) rather than prose."""
    text = str(text or "").strip()
    return bool(text) and "\n" not in text and len(text) <= 100 and not _WORD.search(text)


def extract_gsm8k_answer(text: str) -> str | None:
    """GSM8K style, only when the text marks its final answer: boxed, else stated ("The answer is").

    This decides when a chain or search ends, so a step that merely contains a
    number ("Carla downloads 200 GB in 1 minute.") is never read as the answer.
    A marked answer is reduced to what follows its last "=", and when wrapped in
    words ("18 dollars") to its last number; one without a number is ignored.
    """
    for candidate in (extract_boxed(text), extract_stated_answer(str(text or ""))):
        candidate = (candidate or "").rsplit("=", 1)[-1].strip(" :")
        if not candidate:
            continue
        number = _clean_number(candidate)
        if number is not None or _looks_bare(candidate):
            return number or candidate
        number = _last_number(candidate)
        if number is not None:
            return number
    return None


def read_gsm8k_answer(text: str) -> str | None:
    """Scoring a finished solution's text: the marked answer, else its last number.

    Only for judging a final text after the fact (a reference solution, a
    trajectory cut off at the depth limit); never for deciding that a step ends the chain.
    """
    return extract_gsm8k_answer(text) or _last_number(text)


def gsm8k_gold(answer_field: str) -> str:
    """The gold answer of a GSM8K reference solution: what follows ``####``, without commas."""
    return str(answer_field).rsplit("####", 1)[-1].strip().replace(",", "")


# -- equivalence --------------------------------------------------------------


def _normalize(text: str) -> str:
    text = str(text).strip().strip("$").strip().rstrip(".")
    text = re.sub(r"\\(?:left|right)(?![A-Za-z])|\\[!,;: ]", "", text)
    text = re.sub(r"\\[dt]frac(?![A-Za-z])", r"\\frac", text)
    return _SPACES.sub("", text)


def _clean_number(text: str) -> str | None:
    """A plain decimal, dollar signs and thousands commas removed ("\\$1,000" -> "1000")."""
    text = _normalize(text).replace("\\$", "").replace("{,}", ",")
    if _THOUSANDS.fullmatch(text):
        text = text.replace(",", "")
    return text if _PLAIN.fullmatch(text) else None


def _as_number(text: str) -> Decimal | None:
    clean = _clean_number(text)
    return None if clean is None else Decimal(clean)  # _PLAIN only lets valid decimals through


def _nesting(text: str) -> int:
    depth = deepest = 0
    for char in text:
        depth = depth + 1 if char in "{([" else max(depth - 1, 0) if char in "})]" else depth
        deepest = max(deepest, depth)
    return deepest


def _magnitude(expr: Any) -> float:
    """Rough upper bound on log10 of the numbers sympy would compute for ``expr``.

    Symbols count as small; an unevaluated integral or limit counts as infinite.
    """
    import sympy  # type: ignore[import-untyped]

    if isinstance(expr, (sympy.Integral, sympy.Derivative, sympy.Limit, sympy.Sum, sympy.Product)):
        return math.inf
    if isinstance(expr, sympy.Rational):
        return math.log10(abs(expr.p) + 1) + math.log10(expr.q)
    if isinstance(expr, sympy.Float):
        return math.log10(abs(float(expr)) + 1)
    if isinstance(expr, sympy.Pow):
        exponent = math.pow(10.0, min(_magnitude(expr.exp), 300.0))
        if isinstance(expr.base, sympy.Add) and exponent > 100:
            return math.inf  # expanding (x + y + 1)^200 does not finish
        return exponent * max(_magnitude(expr.base), 1.0)
    if isinstance(expr, (sympy.factorial, sympy.factorial2, sympy.subfactorial, sympy.gamma)):
        n = math.pow(10.0, min(_magnitude(expr.args[0]), 300.0))
        return n * max(math.log10(n + 1), 1.0)
    items: Iterable[Any] = list(expr) if isinstance(expr, sympy.MatrixBase) else expr.args
    return sum((_magnitude(item) for item in items), 0.0)


def _too_costly(parsed: list[Any]) -> bool:
    """Whether sympy would build numbers of more than MAX_DIGITS digits (in C, holding the GIL)."""
    try:
        return any(_magnitude(item) > MAX_DIGITS for item in parsed if not isinstance(item, str))
    except (RecursionError, ValueError, TypeError, OverflowError, AttributeError):
        return True


class _QuietTimeoutWarning(logging.Filter):
    """math-verify warns that timeouts are off; ours are on, so the warning would mislead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Timeout is disabled")


for _name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_name).addFilter(_QuietTimeoutWarning())


@functools.cache
def _math_verify_api() -> tuple[Callable[..., list[Any]], Callable[..., bool]]:
    """Import math-verify (sympy, ANTLR: about a second) once, outside any deadline."""
    from math_verify import parse, verify  # type: ignore[import-untyped]

    return parse, verify


def _math_verify(prediction: str, gold: str) -> bool:
    """math-verify on both sides wrapped as inline LaTeX; bare strings parse poorly."""
    parse, verify = _math_verify_api()

    def wrap(text: str) -> str:
        return "$" + text.strip().strip("$").strip() + "$"

    gold_parsed = parse(wrap(gold), parsing_timeout=None)  # None: no signal.alarm
    pred_parsed = parse(wrap(prediction), parsing_timeout=None)
    if not gold_parsed or not pred_parsed or _too_costly(gold_parsed + pred_parsed):
        return False
    return bool(verify(gold_parsed, pred_parsed, timeout_seconds=None))


def _with_deadline(check: Callable[[], bool], seconds: float) -> bool:
    """Run ``check`` on a daemon thread; False if it raises or is still running at the deadline."""
    verdict: list[bool] = []

    def run() -> None:
        try:
            verdict.append(bool(check()))
        except Exception:  # noqa: BLE001 - any failure means "not shown equivalent"
            verdict.append(False)

    worker = threading.Thread(target=run, name="lits-math-verify", daemon=True)
    worker.start()
    worker.join(seconds)
    return bool(verdict and verdict[0])


@functools.lru_cache(maxsize=4096)
def _equivalent(prediction: str, gold: str) -> bool:
    if _normalize(prediction) == _normalize(gold):
        return True
    pred_number, gold_number = _as_number(prediction), _as_number(gold)
    if pred_number is not None and gold_number is not None:
        return pred_number == gold_number
    if any(len(t) > MAX_CHARS or _nesting(t) > MAX_NESTING for t in (prediction, gold)):
        return False
    _math_verify_api()
    return _with_deadline(lambda: _math_verify(prediction, gold), DEADLINE_SECONDS)


def is_equivalent(prediction: str | None, gold: str | None) -> bool:
    """Whether ``prediction`` states the same mathematical answer as ``gold``; never raises.

    Cheap checks first (normalized text, plain numbers), then math-verify with
    the gold as the reference side; safe to call from any thread.
    """
    try:
        prediction, gold = str(prediction or "").strip(), str(gold or "").strip()
        return bool(prediction and gold) and _equivalent(prediction, gold)
    except Exception:  # noqa: BLE001 - a judge must answer, not crash the run
        return False


# -- evaluation ---------------------------------------------------------------


def _judge(answer: str | None, example: dict[str, Any]) -> dict[str, Any]:
    return {"solved": is_equivalent(answer, example.get("answer")), "extracted": answer}


def evaluate_math(example: dict[str, Any], final_answer: str | None) -> dict[str, Any]:
    """Judge a MATH-style final answer: boxed/stated answer, or the text itself when short."""
    text = str(final_answer or "").strip()
    answer = extract_math_answer(text)
    if answer is None and text and "\n" not in text and len(text) <= 100:
        answer = text
    return _judge(answer, example)


def evaluate_gsm8k(example: dict[str, Any], final_answer: str | None) -> dict[str, Any]:
    """Judge a GSM8K final answer: a bare formula as it is, else the GSM8K extractor."""
    text = str(final_answer or "").strip()
    answer = text if _looks_bare(text) else read_gsm8k_answer(text)
    return _judge(answer, example)
