"""Yes/No judging: the probability a model gives "Yes" to a question.

:func:`score_else_ask` is the one judge every reward model calls.  Three routes,
best first: the log-likelihood of the answer (either the answer text itself
after its own prompt, or " Yes" against " No" after the question, the latter
only on backends that score text cheaply, e.g. the embedded model), the top
token log-probabilities of a short reply (servers that return them), and last
the reply's first word.  Servers are not asked to score a yes/no question by
echo: the reply's top log-probabilities carry the same information without
re-reading the prompt at every position.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from typing import Callable, NamedTuple, Sequence

from lits.components.parsing import count_fallback, count_reply
from lits.lm.base import LanguageModel, LoglikelihoodUnsupported, ModelError, Prompt


def label_probability(reply: object, labels: tuple[str, str] = ("yes", "no")) -> float | None:
    """P(first label) / P(either label) from a reply's first-token top log-probabilities (case ignored);
    None when the reply has no log-probabilities or neither label is among its likely first tokens."""
    logprobs = getattr(reply, "logprobs", None)
    if not logprobs:
        return None
    positive, negative = labels[0].lower(), labels[1].lower()
    yes = no = 0.0
    for token, lp in logprobs[0].top.items():
        word = token.strip().lower()
        if word == positive:
            yes += math.exp(lp)
        elif word == negative:
            no += math.exp(lp)
    if yes + no == 0.0:
        return None
    return yes / (yes + no)


def yes_probability(reply: object) -> float:
    """P(Yes) from a reply's top log-probabilities when present, else from its text.

    A reply that is neither counts as unparseable, and its 0.5 as a fallback
    (see :mod:`lits.components.parsing`)."""
    p_yes = label_probability(reply)
    if p_yes is not None:
        count_reply(True)
        return p_yes
    text = str(reply).strip().lstrip("*_\"'").lower()
    if text.startswith("yes"):
        count_reply(True)
        return 1.0
    if text.startswith("no"):
        count_reply(True)
        return 0.0
    count_reply(False)
    count_fallback()
    return 0.5


_NUMBERED_ANSWER = re.compile(r"^\W*(\d+)\s*[:.)\-]?\s*\**\s*(yes|no)\b", re.IGNORECASE | re.MULTILINE)


def numbered_yes_probabilities(reply: object, count: int) -> list[float | None]:
    """P(Yes) per item of a reply answering ``count`` numbered questions ("1: Yes", "2: No", ...).

    The text says which item each answer belongs to; when the reply's Yes/No
    tokens line up one to one with the items, their top log-probabilities
    give soft values.  An item the reply does not answer is None.
    """
    verdicts: dict[int, float] = {}
    for match in _NUMBERED_ANSWER.finditer(str(reply)):
        number = int(match.group(1))
        if 1 <= number <= count and number not in verdicts:
            verdicts[number] = 1.0 if match.group(2).lower() == "yes" else 0.0
    soft: list[float | None] = []
    for token in getattr(reply, "logprobs", None) or ():
        if token.token.strip().lower() in ("yes", "no"):
            yes = sum(math.exp(lp) for t, lp in token.top.items() if t.strip().lower() == "yes")
            no = sum(math.exp(lp) for t, lp in token.top.items() if t.strip().lower() == "no")
            soft.append(yes / (yes + no) if yes + no > 0 else (1.0 if token.token.strip().lower() == "yes" else 0.0))
    if count == 1 and not verdicts and str(reply).strip():  # a bare "Yes." to a batch of one
        return [yes_probability(reply)]
    count_reply(len(verdicts) == count)  # unanswered items are judged again, one by one
    if len(soft) == count == len(verdicts):
        return soft
    return [verdicts.get(i) for i in range(1, count + 1)]


def shuffled_order(items: list[str], salt: str = "") -> list[int]:
    """A permutation of ``range(len(items))`` that depends only on the items (and ``salt``).

    Judges favour the first-listed candidate; showing siblings in an order
    drawn from their own text spreads that bias over them, while the same
    request always gets the same order (so caches and reruns agree)."""
    return list(_shuffled(tuple(items), salt))


@functools.lru_cache(maxsize=64)  # a judge asks for one siblings' order three times (prompt, reading, details)
def _shuffled(items: tuple[str, ...], salt: str) -> tuple[int, ...]:
    def key(i: int) -> str:
        return hashlib.sha256(f"{salt}\0{i}\0{items[i]}".encode()).hexdigest()

    return tuple(sorted(range(len(items)), key=key))


class Verdict(NamedTuple):
    """What a judge concluded: P(yes) in 0..1 and the route that gave it."""

    p_yes: float
    #: "loglikelihood" (scored), "logprobs" (a reply's top log-probabilities), "text" (its first word),
    #: or "none" (nothing scored and no question to ask: ``p_yes`` is 0, no opinion).
    route: str
    #: The scored answer's log-probability (the answer-text route only).
    logprob: float | None = None
    #: False when the reply said neither label (``p_yes`` is then the 0.5 fallback).
    parsed: bool = True
    #: True when the backend refused to score text: the caller may stop trying.
    unsupported: bool = False


def score_else_ask(
    model: LanguageModel,
    question: str | Callable[[], str] | None,
    *,
    system: str = "",
    answer: tuple[str, str] | None = None,
    per: int = 1,
    labels: tuple[str, str] = ("Yes", "No"),
    system_in_text: bool = False,
    scoring: bool = True,
    max_tokens: int = 3,
    top_logprobs: int = 5,
    reply_lines: Sequence[Sequence[str]] | None = None,
    needs_logprobs: str = "",
    asking: Callable[[bool], Prompt] | None = None,
) -> Verdict:
    """Score by log-likelihood where the backend can, else ask ``question`` and read the yes/no reply.

    ``answer`` (prompt, continuation): the score is the continuation's probability after the prompt
    (per ``per`` units, e.g. letters) wherever the backend scores text.  Without it, the score is
    P(" Yes") against P(" No") after the question, only where scoring is cheap (else one reply's top
    log-probabilities say the same for less).  ``scoring=False`` skips the scored route (the caller
    learnt it is unsupported).  Asking: chat models get ``system`` then the question; plain-text
    prompts are the question (after ``system`` when ``system_in_text``).  ``needs_logprobs`` names a
    judge that cannot read a reply's text: a reply without log-probabilities is then an error.
    """
    unsupported = False
    if scoring and model.supports_loglikelihood and (answer is not None or model.cheap_loglikelihood):
        try:
            if answer is not None:
                logprob = model.loglikelihood(answer[0], [answer[1]])[0]
                return Verdict(math.exp(min(0.0, logprob) / per), "loglikelihood", logprob)
            text = _question(question)
            text = f"{system}\n\n{text}" if system_in_text else text
            yes, no = model.loglikelihood(text, [f" {labels[0]}", f" {labels[1]}"])
            peak = max(yes, no)
            return Verdict(math.exp(yes - peak) / (math.exp(yes - peak) + math.exp(no - peak)), "loglikelihood")
        except LoglikelihoodUnsupported:
            unsupported = True
    if question is None:
        return Verdict(0.0, "none", parsed=False, unsupported=unsupported)
    asked = _question(question)
    prompt: Prompt = f"{system}\n\n{asked}" if system_in_text else asked
    if model.chat_native:
        prompt = [{"role": "system", "content": system}, {"role": "user", "content": asked}]
    if asking is not None:
        prompt = asking(model.chat_native)
    reply = model.generate(
        prompt, temperature=0.0, max_tokens=max_tokens, top_logprobs=top_logprobs, reply_lines=reply_lines
    )[0]
    route = "logprobs" if reply.logprobs else "text"
    if not needs_logprobs:
        return Verdict(yes_probability(reply), route, unsupported=unsupported)
    if route == "text":
        where = getattr(model, "base_url", None) or model.name
        raise ModelError(
            f"{needs_logprobs} needs token log-probabilities, but {where} returned none; use a "
            "server that returns logprobs (vLLM, llama.cpp) or a backend that scores text"
        )
    p_yes = label_probability(reply, labels)
    count_reply(p_yes is not None)  # in "invalid replies", as every judge's are
    if p_yes is None:  # neither label among the likely first tokens: no opinion, counted and flagged
        count_fallback()
        return Verdict(0.5, route, parsed=False, unsupported=unsupported)
    return Verdict(p_yes, route, unsupported=unsupported)


def _question(question: str | Callable[[], str] | None) -> str:
    return question() if callable(question) else question or ""


def judge_yes(model: LanguageModel, question: str, system: str | None = None) -> tuple[float, str]:
    """P(Yes) for ``question`` (which should end with a cue such as "Answer:"), and the route used."""
    verdict = score_else_ask(model, question, system=system or "Answer with Yes or No.")
    return verdict.p_yes, verdict.route
