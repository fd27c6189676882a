"""BlocksWorld for LiTS: importing this module registers the domain."""

from lits_blocksworld import data, prompts, transition  # noqa: F401  (registration side effects)
from lits_blocksworld.transition import BlocksWorldTransition

__all__ = ["BlocksWorldTransition"]
