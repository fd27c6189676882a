"""Check MapEval question items at load, so a broken gold answer stops the run before any model call is paid."""

from __future__ import annotations

from typing import Sequence


def _show(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def item_problem(item: object) -> str | None:
    """What is wrong with one MapEval item (missing fields, a gold answer that is not an option), or None."""
    if not isinstance(item, dict):
        return f"is not a JSON object but {type(item).__name__}"
    if item.get("id") is None:
        return "has no 'id'"
    question = item.get("question")
    if not isinstance(question, str) or not question.strip():
        return "has no 'question' text"
    answer = item.get("answer")
    if not isinstance(answer, dict):
        return "has no 'answer' object"
    options = answer.get("options")
    if not isinstance(options, list) or not options:
        return "has no 'answer.options' (a non-empty list)"
    for k, option in enumerate(options):
        if not isinstance(option, (str, int, float)) or isinstance(option, bool):  # the real file has an empty one
            return f"answer.options[{k}] = {_show(option)} is not an option (text or number)"
    if "correct" not in answer:
        return "has no gold answer 'answer.correct'"
    correct = answer["correct"]
    if not isinstance(correct, int) or isinstance(correct, bool):
        return f"gold answer.correct = {_show(correct)} is not an integer option index"
    if correct != -1 and not 0 <= correct < len(options):
        return f"gold answer.correct = {correct} is not an option index (0..{len(options) - 1}) nor -1 (unanswerable)"
    return None


def check_items(items: Sequence[object], source: str) -> None:
    """Raise a one-line ``ValueError`` naming ``source``, the example index (and id) and the first problem."""
    for index, item in enumerate(items):
        problem = item_problem(item)
        if problem is not None:
            where = f"example {index}" + (
                f" (id {_show(item.get('id'))})" if isinstance(item, dict) and item.get("id") is not None else ""
            )
            raise ValueError(f"{source}: {where}: {problem}")
