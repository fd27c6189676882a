"""Cross-trajectory memory: augmentors that watch attempts and add notes to later prompts (``--memory-arg``)."""

from lits.memory.base import Augmentor, AugmentorContext, Outcome, describe_step
from lits.memory.memory import Memory

__all__ = ["Augmentor", "AugmentorContext", "Memory", "Outcome", "describe_step"]
