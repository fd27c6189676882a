"""Yes/No judging: the probability a model gives "Yes" to a question.

Three routes, best first: the log-likelihood of " Yes" against " No" after the
question (backends that score text cheaply, e.g. the embedded model), the top
token log-probabilities of a short reply (servers that return them), and last
the reply's first word.  Servers are not asked to score by echo here: for one
yes/no question the reply's top log-probabilities carry the same information
without re-reading the prompt at every position.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Optional

from lits.components.parsing import count_fallback, count_reply
from lits.lm.base import LanguageModel, LoglikelihoodUnsupported, Prompt


def yes_probability(reply: object) -> float:
    """P(Yes) from a reply's top log-probabilities when present, else from its text.

    A reply that is neither counts as unparseable, and its 0.5 as a fallback
    (see :mod:`lits.components.parsing`)."""
    logprobs = getattr(reply, "logprobs", None)
    if logprobs:
        yes = no = 0.0
        for token, lp in logprobs[0].top.items():
            word = token.strip().lower()
            if word == "yes":
                yes += math.exp(lp)
            elif word == "no":
                no += math.exp(lp)
        if yes + no > 0:
            count_reply(True)
            return yes / (yes + no)
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


def numbered_yes_probabilities(reply: object, count: int) -> list[Optional[float]]:
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
    soft: list[Optional[float]] = []
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
    def key(i: int) -> str:
        return hashlib.sha256(f"{salt}\0{i}\0{items[i]}".encode()).hexdigest()

    return sorted(range(len(items)), key=key)


def judge_yes(model: LanguageModel, question: str, system: Optional[str] = None) -> tuple[float, str]:
    """P(Yes) for ``question`` (which should end with a cue such as "Answer:"), and the route used."""
    if getattr(model, "supports_loglikelihood", False) and getattr(model, "cheap_loglikelihood", False):
        try:
            yes, no = model.loglikelihood(question, [" Yes", " No"])
            peak = max(yes, no)
            p_yes = math.exp(yes - peak) / (math.exp(yes - peak) + math.exp(no - peak))
            return p_yes, "loglikelihood"
        except LoglikelihoodUnsupported:
            pass
    prompt: Prompt = question
    if getattr(model, "chat_native", False):
        prompt = [{"role": "system", "content": system or "Answer with Yes or No."},
                  {"role": "user", "content": question}]
    reply = model.generate(prompt, temperature=0.0, max_tokens=3, top_logprobs=5)[0]
    return yes_probability(reply), "logprobs" if getattr(reply, "logprobs", None) else "text"
