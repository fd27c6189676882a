"""Final answers of language-grounded tasks: extraction and self-consistency voting.

A dataset may supply its own ``extract_answer(text) -> str | None`` and
``equivalent(a, b) -> bool`` (``@register_dataset(..., extract_answer=...,
equivalent=...)``); these defaults serve any dataset that does not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence, TypedDict

Extractor = Callable[[str], str | None]
Equivalence = Callable[[str, str], bool]

#: The explicit final-answer markers: "The (final) answer is", "Final answer:", a line that starts
#: "Answer:" (also in Markdown bold, "**Final Answer:**"), and GSM8K's "#### 42".  Nothing else
#: ends a chain: a step that merely contains a number is an intermediate step.
_STATED = re.compile(
    r"(?:the\s+(?:final\s+)?answer\s+is\s*:?"
    r"|final\s+answer\s*(?:is\s*)?[*_]*\s*:"
    r"|^[\s>*_-]*(?:final\s+)?answer\s*[*_]*\s*:"
    r"|^\s*####)[\s*_]*(.+)",
    re.I | re.M,
)


def extract_stated_answer(text: str) -> str | None:
    """The answer after the last final-answer marker ("The answer is", "Final answer:", "#### "...), else None."""
    found = _STATED.findall(str(text or ""))
    if not found:
        return None
    answer = found[-1].strip().splitlines()[0].strip()
    answer = answer.strip("*_ ").rstrip(".").strip().strip("$").strip().strip("*_ ")
    return answer or None


def normalize_text(value: object) -> str:
    return " ".join(str(value or "").lower().strip().rstrip(".").split())


def same_text(a: object, b: object) -> bool:
    return normalize_text(a) == normalize_text(b)


def answer_rules(dataset: str | None) -> tuple[Extractor, Equivalence]:
    """How ``dataset`` reads and compares final answers: what it registered, else the defaults above.

    One lookup for every reader (transitions, reward models, continuation), so they never disagree;
    a name that is unset or not registered gets the defaults.
    """
    from lits.registry import get_registration  # the registry loads plugins: only when asked

    try:
        meta = get_registration("dataset", dataset).meta if dataset else {}
    except KeyError:
        meta = {}
    extract, equivalent = meta.get("extract_answer"), meta.get("equivalent")
    return (extract if callable(extract) else extract_stated_answer, equivalent if callable(equivalent) else same_text)


class Cluster(TypedDict):
    """One group of equivalent answers in a vote."""

    answer: str
    weight: float
    count: int


@dataclass
class Vote:
    """The outcome of a vote: the winner and how the weight split."""

    answer: str | None
    share: float
    clusters: list[Cluster] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {"answer": self.answer, "share": self.share, "clusters": self.clusters}


def majority_vote(
    answers: Iterable[tuple[str | None, float]] | Sequence[str | None],
    equivalent: Equivalence = same_text,
) -> Vote:
    """Self-consistency: group equivalent answers, pick the group with the most weight.

    ``answers`` holds plain answers (weight 1 each) or ``(answer, weight)``
    pairs; ``None`` answers do not vote.  Ties go to the group seen first, so
    the result does not depend on hash order.
    """
    clusters: list[Cluster] = []
    for item in answers:
        answer, weight = item if isinstance(item, tuple) else (item, 1.0)
        if answer is None or not str(answer).strip():
            continue
        for cluster in clusters:
            if equivalent(str(answer), cluster["answer"]):
                cluster["weight"] += float(weight)
                cluster["count"] += 1
                break
        else:
            clusters.append({"answer": str(answer), "weight": float(weight), "count": 1})
    if not clusters:
        return Vote(None, 0.0, [])
    total = sum(c["weight"] for c in clusters) or 1.0
    best = max(clusters, key=lambda c: c["weight"])  # max keeps the first of equals
    return Vote(best["answer"], round(best["weight"] / total, 4), clusters)
