"""Turn a ``--model`` spec into a backend, through the registered model backends.

Backends come from the ``register_models`` hook (core registers ``local``,
``scripted`` and ``openai``, see :mod:`lits.builtins`); any other name is a
model served by an OpenAI-compatible server at ``--base-url``.
"""

from __future__ import annotations

from typing import Any, Optional

from lits.lm.base import LanguageModel

#: The backend for a model name that no plugin registered: a server's model.
SERVER_BACKEND = "openai"


def create_model(
    spec: Optional[str],
    *,
    base_url: Optional[str] = None,
    api: Optional[str] = None,
    concurrency: int = 1,
    **options: Any,
) -> LanguageModel:
    """``None``/"local": the embedded model; a registered backend's name; else a server's model name."""
    from lits.registry import list_names, get_registration

    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    name = spec or "local"
    backend = name if name in list_names("model") else SERVER_BACKEND
    factory = get_registration("model", backend).obj
    return factory(name, base_url=base_url, api=api, concurrency=concurrency, **options)  # type: ignore[no-any-return]
