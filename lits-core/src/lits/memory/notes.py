"""The one seam through which memory reaches prompts: a notes block after the query.

The attempt runner binds the notes of the current attempt; :meth:`lits.components.base.Policy.get_actions`
shows them to every policy, of every task type, by appending the block to the query the policy formats
into its prompt.  Without notes (every run without augmentors) the query is passed on untouched.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator, Optional, Sequence

_NOTES: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar("lits_memory_notes", default=None)

#: The heading of the block; a policy's prompt shows it right after the question or goal.
HEADING = "Notes from earlier attempts:"


def notes_block(lines: Sequence[str]) -> Optional[str]:
    """The block shown to the policy, or None when there is nothing to show."""
    kept = [" ".join(line.split()) for line in lines if line and line.strip()]
    return HEADING + "".join(f"\n- {line}" for line in kept) if kept else None


@contextlib.contextmanager
def offering(block: Optional[str]) -> Iterator[None]:
    """Policies called inside see ``block`` (None: no notes)."""
    token = _NOTES.set(block)
    try:
        yield
    finally:
        _NOTES.reset(token)


def with_notes(query: object) -> object:
    """``query`` with the current notes appended (text queries only; others pass unchanged)."""
    block = _NOTES.get()
    if block is None or not isinstance(query, str):
        return query
    return f"{query}\n\n{block}"
