"""``--memory-arg augmentors=wrong_answers``: the next attempt is told which answers were judged wrong."""

from typing import Callable, Sequence

from lits.api import Augmentor, AugmentorContext, Outcome, hookimpl
from lits.structures.base import Step


class WrongAnswers(Augmentor):
    """Remembers the answers of failed attempts (the latest ``max_wrong`` of them)."""

    OPTIONS = {"max_wrong": 3}

    def wrong(self) -> list[str]:
        kept = self.memory.get("wrong")  # self.memory is JSON: saved with each attempt, restored on --resume
        return [str(answer) for answer in kept] if isinstance(kept, list) else []

    def on_trajectory_complete(self, trajectory: Sequence[Step], outcome: Outcome,
                               context: AugmentorContext) -> None:
        if outcome.solved or not outcome.answer:
            return
        limit = self.options["max_wrong"]
        keep = limit if isinstance(limit, int) and limit > 0 else 3
        wrong = [answer for answer in self.wrong() if answer != outcome.answer] + [outcome.answer]
        self.memory["wrong"] = [*wrong[-keep:]]

    def notes(self, context: AugmentorContext) -> list[str]:
        return [f"This answer was judged wrong; do not give it again: {answer}" for answer in self.wrong()]


@hookimpl
def register_augmentors(register: Callable[..., None]) -> None:
    register("wrong_answers", WrongAnswers, description="answers judged wrong are not given again")
