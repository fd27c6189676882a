"""The two seams through which memory reaches an attempt: notes after the query, and a check before a step.

The attempt runner binds the notes of the current attempt; :meth:`lits.components.base.Policy.get_actions`
shows them to every policy, of every task type, by appending the block to the query the policy formats
into its prompt.  Without notes (every run without augmentors) the query is passed on untouched.
:meth:`lits.components.base.Transition.step` asks the bound check first: a step it refuses is not executed
but recorded with the reason as its error (and its observation), which the policy sees next.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
from typing import Callable, Iterator, Sequence

from lits.structures.base import Step

#: ``check(state, step)``: why ``step`` must not be executed, or None.
StepCheck = Callable[[object, Step], str | None]

_NOTES: contextvars.ContextVar[str | None] = contextvars.ContextVar("lits_memory_notes", default=None)
_CHECK: contextvars.ContextVar[StepCheck | None] = contextvars.ContextVar("lits_memory_check", default=None)

#: The heading of the block; a policy's prompt shows it right after the question or goal.
HEADING = "Notes from earlier attempts:"


def notes_block(lines: Sequence[str]) -> str | None:
    """The block shown to the policy, or None when there is nothing to show."""
    kept = [" ".join(str(line).split()) for line in lines if line is not None and str(line).strip()]
    return HEADING + "".join(f"\n- {line}" for line in kept) if kept else None


@contextlib.contextmanager
def offering(block: str | None, check: StepCheck | None = None) -> Iterator[None]:
    """Policies called inside see ``block`` (None: no notes); transitions ask ``check`` before a step."""
    token, checking = _NOTES.set(block), _CHECK.set(check)
    try:
        yield
    finally:
        _CHECK.reset(checking)
        _NOTES.reset(token)


def checked(state: object, step_or_action: object) -> object:
    """The step to execute: unchanged, or (refused by the bound check) a copy carrying the reason as its error,
    and as its observation when the step has one, so a transition appends it without executing it."""
    check = _CHECK.get()
    if check is None or not isinstance(step_or_action, Step) or step_or_action.error:
        return step_or_action
    reason = check(state, step_or_action)
    if reason is None:
        return step_or_action
    refused = copy.copy(step_or_action)
    refused.error = reason
    if hasattr(refused, "observation"):
        refused.observation = reason
    return refused


def with_notes(query: object) -> object:
    """``query`` with the current notes appended (text queries only; others pass unchanged)."""
    block = _NOTES.get()
    if block is None or not isinstance(query, str):
        return query
    return f"{query}\n\n{block}"
