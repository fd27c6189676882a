"""The augmentors LiTS ships: ``fact``, ``reflection`` and ``critic`` (``--memory-arg augmentors=...``)."""

from __future__ import annotations

from typing import Sequence

from lits.memory.base import Augmentor, AugmentorContext, Outcome, describe_step
from lits.structures.base import Step


def _texts(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


def _int_option(augmentor: Augmentor, key: str) -> int:
    value = augmentor.options.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"--memory-arg {key} must be a whole number of at least 1, not {value!r}")
    return value


class FactMemory(Augmentor):
    """Facts a trajectory established (tool observations, refused actions), offered to the next attempt.

    A fact is a step that observed something or was refused with a reason: the
    next attempt need not pay for the same tool call or repeat the same mistake.
    """

    OPTIONS = {"max_facts": 8}

    def check_options(self) -> None:
        _int_option(self, "max_facts")

    def on_step_complete(self, state: Sequence[Step], step: Step, context: AugmentorContext) -> None:
        if getattr(step, "observation", None) in (None, "") and not step.error:
            return
        facts = _texts(self.memory.get("facts"))
        fact = describe_step(step)
        if fact not in facts:
            facts.append(fact)
        self.remember("facts", facts, _int_option(self, "max_facts"))

    def notes(self, context: AugmentorContext) -> list[str]:
        return [f"Known from an earlier attempt: {fact}" for fact in _texts(self.memory.get("facts"))]


def _attempt_text(context: AugmentorContext, trajectory: Sequence[Step], outcome: Outcome) -> str:
    steps = "\n".join(f"{i}. {describe_step(step)}" for i, step in enumerate(trajectory, 1)) or "(no steps)"
    ended = (
        f"it ended ({outcome.stopped}) with the answer {outcome.answer!r}"
        if outcome.answer
        else f"it ended ({outcome.stopped}) without reaching the goal"
    )
    return f"Task:\n{context.query}\n\nAn attempt took these steps:\n{steps}\n\nIt was wrong: {ended}."


class Reflection(Augmentor):
    """After a failed attempt that another follows, one short model call writes a lesson for the next attempt
    (the latest ``max_lessons`` are kept)."""

    OPTIONS = {"reflection_tokens": 96, "max_lessons": 4}

    def check_options(self) -> None:
        _int_option(self, "reflection_tokens")
        _int_option(self, "max_lessons")

    def on_trajectory_complete(self, trajectory: Sequence[Step], outcome: Outcome, context: AugmentorContext) -> None:
        if outcome.solved or not context.another_attempt_follows:
            return
        prompt = (
            _attempt_text(context, trajectory, outcome)
            + "\n\nIn one or two sentences, state the lesson the next attempt should follow to succeed. "
            "Write only the lesson."
        )
        lesson = " ".join(context.ask(prompt, max_tokens=_int_option(self, "reflection_tokens")).split())
        if lesson:
            self.remember("lessons", [*_texts(self.memory.get("lessons")), lesson], _int_option(self, "max_lessons"))

    def notes(self, context: AugmentorContext) -> list[str]:
        return [f"Lesson: {lesson}" for lesson in _texts(self.memory.get("lessons"))]


class Critic(Augmentor):
    """After a failed attempt that another follows, a model call names its first wrong step and why (the latest
    ``max_critiques`` are kept)."""

    OPTIONS = {"critic_tokens": 64, "max_critiques": 4}

    def check_options(self) -> None:
        _int_option(self, "critic_tokens")
        _int_option(self, "max_critiques")

    def on_trajectory_complete(self, trajectory: Sequence[Step], outcome: Outcome, context: AugmentorContext) -> None:
        if outcome.solved or not context.another_attempt_follows or not trajectory:
            return
        prompt = (
            _attempt_text(context, trajectory, outcome)
            + "\n\nWhich step was the first mistake, and why? Answer as: Step N: reason."
        )
        critique = " ".join(context.ask(prompt, max_tokens=_int_option(self, "critic_tokens")).split())
        if critique:
            self.remember(
                "critiques", [*_texts(self.memory.get("critiques")), critique], _int_option(self, "max_critiques")
            )

    def notes(self, context: AugmentorContext) -> list[str]:
        return [f"A critic of an earlier attempt: {text}" for text in _texts(self.memory.get("critiques"))]
