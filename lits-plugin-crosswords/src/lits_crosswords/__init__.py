"""Mini crosswords for LiTS: importing this module registers the domain."""

from lits_crosswords import data, prompts, reward, transition  # noqa: F401  (registration side effects)
from lits_crosswords.transition import CrosswordsTransition

__all__ = ["CrosswordsTransition"]
