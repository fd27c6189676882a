"""One instance's memory: the augmentors ``--memory-arg augmentors=...`` names, their state and their notes."""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

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
    if not names and any(key != AUGMENTORS_KEY for key in memory_args):
        raise UserError("--memory-arg options need augmentors=NAME[,NAME] "
                        f"(registered augmentors: {', '.join(known) or 'none'})")
    classes: list[tuple[str, type[Augmentor]]] = []
    for name in names:
        if name not in known:
            raise UserError(f"unknown augmentor {name!r} in --memory-arg augmentors=...; registered augmentors: "
                            f"{', '.join(known) or 'none'}")
        cls = get_registration("augmentor", name).obj
        if not (isinstance(cls, type) and issubclass(cls, Augmentor)):
            raise UserError(f"augmentor {name!r} is not an Augmentor subclass (lits.memory.Augmentor)")
        classes.append((name, cls))
    options = sorted({key for _, cls in classes for key in cls.OPTIONS})
    for key in memory_args:
        if key not in (AUGMENTORS_KEY, SCOPE_KEY) and key not in options:
            raise UserError(f"--memory-arg {key} is not an option of the augmentors {', '.join(names)}; "
                            f"their options: {', '.join(options) or 'none'}")
    return classes


class Memory:
    """The augmentors of one instance; their state is JSON, saved after each attempt."""

    def __init__(self, augmentors: Sequence[tuple[str, Augmentor]], options: Mapping[str, object]) -> None:
        self.augmentors = list(augmentors)
        self.options = dict(options)

    @classmethod
    def from_args(cls, memory_args: Mapping[str, object]) -> Optional["Memory"]:
        """A fresh memory for one instance, or None when no augmentor is named."""
        classes = augmentor_classes(memory_args)
        if not classes:
            return None
        options = {k: v for k, v in memory_args.items() if k not in (AUGMENTORS_KEY, SCOPE_KEY)}
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
        return cls(augmentors, options)

    def state(self) -> dict[str, JSONValue]:
        """Every augmentor's memory, by name (what the attempt file keeps)."""
        return {name: dict(aug.memory) for name, aug in self.augmentors}

    def restore(self, state: Mapping[str, JSONValue]) -> None:
        for name, aug in self.augmentors:
            kept = state.get(name)
            aug.memory = dict(kept) if isinstance(kept, dict) else {}

    def notes(self, context: AugmentorContext) -> Optional[str]:
        """The notes block for attempt ``context.attempt`` (None when no augmentor has anything to say)."""
        return notes_block([line for _, aug in self.augmentors for line in aug.notes(context)])

    def check(self, state: object, step: Step, context: AugmentorContext) -> Optional[str]:
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
