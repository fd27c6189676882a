"""Language models: one interface for chat and completion backends."""

from lits.lm.base import (
    Completion,
    LanguageModel,
    LoglikelihoodUnsupported,
    Message,
    ModelError,
    Prompt,
)

__all__ = [
    "Completion",
    "LanguageModel",
    "LoglikelihoodUnsupported",
    "Message",
    "ModelError",
    "Prompt",
]
