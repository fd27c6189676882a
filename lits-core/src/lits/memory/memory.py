"""One instance's memory: the augmentors ``--memory-arg augmentors=...`` names, their state and their notes."""

from __future__ import annotations

from typing import Mapping, Sequence

from lits.errors import UserError
from lits.memory.base import Augmentor, AugmentorContext, JSONValue, Outcome
from lits.memory.notes import notes_block
from lits.structures.base import Step

#: The ``--memory-arg`` key that names the augmentors; every other key but ``scope`` is an augmentor's option.
AUGMENTORS_KEY = "augmentors"
#: ``scope=instance`` (the default): memory never crosses instances; ``scope=run``: each instance starts
#: from the memory the instance before it (in the selection's order) ended with, and instances run one at a time.
SCOPE_KEY = "scope"
SCOPES = ("instance", "run")
#: ``max_notes=N``: the most lines any one augmentor may add to a prompt (its latest ones), whatever it remembers.
MAX_NOTES_KEY = "max_notes"
MAX_NOTES = 12
#: The keys :class:`Memory` reads itself; every other key is an augmentor's option.
MEMORY_KEYS = (AUGMENTORS_KEY, SCOPE_KEY, MAX_NOTES_KEY)


def max_notes(memory_args: Mapping[str, object]) -> int:
    """The ``max_notes`` cap; one line for anything but a whole number of at least 1."""
    value = memory_args.get(MAX_NOTES_KEY, MAX_NOTES)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"--memory-arg {MAX_NOTES_KEY} must be a whole number of at least 1, not {value!r}")
    return value


def memory_scope(memory_args: Mapping[str, object]) -> str:
    """``instance`` or ``run``; one line for anything else."""
    scope = str(memory_args.get(SCOPE_KEY) or "instance")
    if scope not in SCOPES:
        raise UserError(f"--memory-arg scope={scope} is not a memory scope; scopes: {', '.join(SCOPES)}")
    return scope


def augmentor_names(memory_args: Mapping[str, object]) -> list[str]:
    """The augmentors named by ``augmentors=fact,reflection`` (a list is taken as given), in order."""
    given = memory_args.get(AUGMENTORS_KEY)
    if given in (None, ""):
        return []
    items = given if isinstance(given, (list, tuple)) else str(given).split(",")
    names: list[str] = []
    for item in items:
        name = str(item).strip()
        if name and name not in names:
            names.append(name)
    return names


def augmentor_classes(memory_args: Mapping[str, object]) -> list[tuple[str, type[Augmentor]]]:
    """The registered classes of the named augmentors; one line for an unknown name or option."""
    from lits.registry import get_registration, list_names

    known = list_names("augmentor")
    names = augmentor_names(memory_args)
    memory_scope(memory_args)
    max_notes(memory_args)
    if not names and any(key != AUGMENTORS_KEY for key in memory_args):
        raise UserError(
            f"--memory-arg options need augmentors=NAME[,NAME] (registered augmentors: {', '.join(known) or 'none'})"
        )
    classes: list[tuple[str, type[Augmentor]]] = []
    for name in names:
        if name not in known:
            raise UserError(
                f"unknown augmentor {name!r} in --memory-arg augmentors=...; registered augmentors: "
                f"{', '.join(known) or 'none'}"
            )
        cls = get_registration("augmentor", name).obj
        if not (isinstance(cls, type) and issubclass(cls, Augmentor)):
            raise UserError(f"augmentor {name!r} is not an Augmentor subclass (lits.memory.Augmentor)")
        classes.append((name, cls))
    options = sorted({key for _, cls in classes for key in cls.OPTIONS})
    for key in memory_args:
        if key not in MEMORY_KEYS and key not in options:
            raise UserError(
                f"--memory-arg {key} is not an option of the augmentors {', '.join(names)}; "
                f"their options: {', '.join([*options, MAX_NOTES_KEY])}"
            )
    return classes


class Memory:
    """The augmentors of one instance; their state is JSON, saved after each attempt."""

    def __init__(
        self, augmentors: Sequence[tuple[str, Augmentor]], options: Mapping[str, object], cap: int = MAX_NOTES
    ) -> None:
        self.augmentors = list(augmentors)
        self.options = dict(options)
        #: Lines one augmentor may add to a prompt (``max_notes``).
        self.cap = cap
        #: Lines left out of the last notes block, and entries the augmentors dropped when the last attempt ended.
        self.trimmed = 0
        self.dropped = 0

    @classmethod
    def from_args(cls, memory_args: Mapping[str, object]) -> "Memory" | None:
        """A fresh memory for one instance, or None when no augmentor is named."""
        classes = augmentor_classes(memory_args)
        if not classes:
            return None
        options = {k: v for k, v in memory_args.items() if k not in MEMORY_KEYS}
        augmentors = [(name, klass(options)) for name, klass in classes]
        for _, aug in augmentors:  # a subclass whose __init__ skipped the base's still remembers
            if not isinstance(getattr(aug, "memory", None), dict):
                aug.memory = {}
            if not isinstance(getattr(aug, "options", None), dict):
                aug.options = dict(options)
            try:
                aug.check_options()
            except ValueError as exc:
                raise UserError(" ".join(str(exc).split())) from None
        return cls(augmentors, options, max_notes(memory_args))

    def state(self) -> dict[str, JSONValue]:
        """Every augmentor's memory, by name (what the attempt file keeps)."""
        return {name: dict(aug.memory) for name, aug in self.augmentors}

    def restore(self, state: Mapping[str, JSONValue]) -> None:
        for name, aug in self.augmentors:
            kept = state.get(name)
            aug.memory = dict(kept) if isinstance(kept, dict) else {}

    def notes(self, context: AugmentorContext) -> str | None:
        """The notes block for attempt ``context.attempt`` (None when no augmentor has anything to say)."""
        lines: list[str] = []
        self.trimmed = 0
        for _, aug in self.augmentors:
            offered = list(aug.notes(context))
            self.trimmed += max(0, len(offered) - self.cap)
            lines += offered[-self.cap :]  # the latest: an augmentor lists what it learned in order
        return notes_block(lines)

    def check(self, state: object, step: Step, context: AugmentorContext) -> str | None:
        """The first augmentor's reason not to execute ``step``, or None."""
        for _, aug in self.augmentors:
            reason = aug.check_step(state, step, context)
            if reason is not None:
                return reason
        return None

    def attempt_ended(self, trajectory: Sequence[Step], outcome: Outcome, context: AugmentorContext) -> None:
        """Each step in order, then the whole trajectory, to every augmentor in the order named."""
        for _, aug in self.augmentors:
            for step in trajectory:
                aug.on_step_complete(trajectory, step, context)
            aug.on_trajectory_complete(trajectory, outcome, context)
        self.dropped = 0
        for _, aug in self.augmentors:
            self.dropped += int(getattr(aug, "dropped", 0) or 0)
            aug.dropped = 0
