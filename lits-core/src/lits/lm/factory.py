"""Turn a ``--model`` spec into a backend."""

from __future__ import annotations

import os
from typing import Any, Optional

from lits.lm.base import LanguageModel

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Keyword arguments passed through to :class:`~lits.lm.openai_compat.OpenAICompatibleModel`.
SERVER_OPTIONS = ("price_in", "price_out", "timeout", "call_budget", "connect_timeout", "read_timeout",
                  "max_attempts", "adaptive_read_timeout", "patience_floor")


def create_model(
    spec: Optional[str],
    *,
    base_url: Optional[str] = None,
    api: Optional[str] = None,
    concurrency: int = 1,
    **kwargs: Any,
) -> LanguageModel:
    """``None``/"local": embedded model; "scripted": offline stand-in; else a server's model name."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if spec in (None, "", "local"):
        if base_url:
            raise ValueError("--base-url is for server models; give --model NAME too (not 'local')")
        from lits.lm.local import LocalLlamaModel

        return LocalLlamaModel(concurrency=concurrency)
    if spec == "scripted":
        from lits.testing import ScriptedModel

        return ScriptedModel(concurrency=concurrency, chat_native=True)
    from lits.lm.openai_compat import OpenAICompatibleModel

    return OpenAICompatibleModel(
        spec,
        base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL,
        api=api or "chat",  # type: ignore[arg-type]
        concurrency=concurrency,
        **{k: v for k, v in kwargs.items() if k in SERVER_OPTIONS},
    )
