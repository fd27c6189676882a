"""The augmentor contract: callbacks that watch attempts and may add notes to later prompts.

An augmentor is made once per instance (memory never crosses instances).  It
keeps what it remembers in :attr:`Augmentor.memory`, a JSON mapping, which the
run saves with each attempt and gives back on ``--resume``; anything kept
elsewhere is lost on a resume and makes the resumed run differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Mapping, Sequence

from lits.runtime.observability import call_context

if TYPE_CHECKING:
    from lits.lm.base import LanguageModel
    from lits.structures.base import Step

#: What an augmentor may remember: JSON values only (saved in the run dir).
JSONValue = None | bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"]


@dataclass(frozen=True)
class AugmentorContext:
    """Where an augmentor is called: the instance, the attempt, the run's policy model and the options."""

    idx: int
    query: object
    example: Mapping[str, object]
    task_type: str
    #: This attempt, counted from 0.
    attempt: int
    #: Attempts the run allows each instance (``--attempts``).
    attempts: int
    model: "LanguageModel" | None = None
    #: ``--memory-arg`` options other than ``augmentors`` (each augmentor declares the ones it reads).
    options: Mapping[str, object] = field(default_factory=dict)
    #: What the run's tools were built from: the ``--resource-arg`` values, or, when the dataset brings its
    #: own tools, its ``--dataset-arg`` values (MapEval's ``db``, for a check against the same database).
    resource_args: Mapping[str, object] = field(default_factory=dict)

    @property
    def another_attempt_follows(self) -> bool:
        """Whether a failed attempt is followed by another one (notes written now can still be read)."""
        return self.attempt + 1 < self.attempts

    def ask(self, prompt: str, *, max_tokens: int = 96) -> str:
        """One greedy call to the run's policy model, tagged ``component="memory"`` in the inference log."""
        if self.model is None:
            raise ValueError("this augmentor needs the run's model, and the run has none")
        with call_context(component="memory"):
            return str(self.model.generate(prompt, temperature=0.0, max_tokens=max_tokens)[0]).strip()


@dataclass(frozen=True)
class Outcome:
    """How an attempt ended, as the dataset's evaluation judged it."""

    solved: bool
    answer: str | None
    stopped: str


class Augmentor:
    """Base of every augmentor: override the callbacks you need and :meth:`notes`.

    ``OPTIONS`` names the ``--memory-arg`` keys the augmentor reads, with their defaults;
    a key no augmentor of the run declares is a one-line error.
    """

    OPTIONS: ClassVar[Mapping[str, JSONValue]] = {}

    def __init__(self, options: Mapping[str, object]) -> None:
        self.options = {key: options.get(key, default) for key, default in self.OPTIONS.items()}
        self.memory: dict[str, JSONValue] = {}
        #: Entries :meth:`remember` dropped since the run last asked (:meth:`Memory.attempt_ended`).
        self.dropped = 0

    def remember(self, key: str, entries: Sequence[JSONValue], cap: int) -> None:
        """Keep the latest ``cap`` of ``entries`` under ``key`` in :attr:`memory`; the oldest beyond it are
        dropped, and counted, so memory that runs over many attempts (``scope=run``) cannot grow without end."""
        over = max(0, len(entries) - cap)
        self.memory[key] = list(entries[over:])
        self.dropped = getattr(self, "dropped", 0) + over

    def check_options(self) -> None:
        """Raise ``ValueError`` (one line) for an option value this augmentor cannot use: called when the run
        starts, before a model is loaded or a call paid for."""

    def on_step_complete(self, state: Sequence["Step"], step: "Step", context: AugmentorContext) -> None:
        """Each step of a finished attempt's trajectory, in order (``state`` is the whole trajectory).

        Steps are delivered when the attempt ends, so a search's concurrent
        expansions and a resumed attempt give the same calls in the same order."""

    def on_trajectory_complete(self, trajectory: Sequence["Step"], outcome: Outcome, context: AugmentorContext) -> None:
        """A finished attempt: its trajectory (a chain's state, a search's chosen path) and outcome."""

    def notes(self, context: AugmentorContext) -> list[str]:
        """Lines to show the policy in the prompts of attempt ``context.attempt`` (none by default)."""
        return []

    def check_step(self, state: object, step: "Step", context: AugmentorContext) -> str | None:
        """Before ``step`` is executed: why it must not be (it is then recorded with the reason as its error and
        observation, at no cost), or None to let it run.  Decide from the step alone and change no memory here:
        a search checks steps concurrently, and a resumed one does not check them again."""
        return None


def describe_step(step: "Step") -> str:
    """One step as a line of text: its action (or thought), what it observed or answered, its error."""
    action = step.get_action()
    text = str(action) if action is not None else str(getattr(step, "think", "") or "")
    for label, value in (
        ("observed", getattr(step, "observation", None)),
        ("answer", step.get_answer()),
        ("error", step.error),
    ):
        if value not in (None, ""):
            text += f" ({label}: {_short(str(value))})"
    return text.strip() or "(empty step)"


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
