"""Shared pieces of the math plugin's reward-model tests."""

from __future__ import annotations

from lits.structures.language_grounded import ThoughtState, ThoughtStep

QUESTION = "Tom has 3 apples and buys 4 more. How many apples does he have?"


def state_of(*steps: str) -> ThoughtState:
    """A chain-of-thought state holding these steps."""
    state = ThoughtState()
    for text in steps:
        state.append(ThoughtStep(action=text))
    return state
