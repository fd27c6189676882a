"""Turn a ``--model`` spec into a backend, through the registered model backends.

Backends come from the ``register_models`` hook (core registers ``local``,
``scripted`` and ``openai``, see :mod:`lits.builtins`); any other name is a
model served by an OpenAI-compatible server at ``--base-url``.  A spec ending in
``.gguf`` without a server is a model file, loaded by the embedded llama.cpp
backend (:class:`~lits.lm.local.LocalLlamaModel`); nothing is sent anywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lits.lm.base import CALL_OPTIONS, CallOptions, LanguageModel, call_options

#: The backend for a model name that no plugin registered: a server's model.
SERVER_BACKEND = "openai"
#: Calls in flight against an HTTP server when ``concurrency`` is not given: enough to keep a
#: local vLLM / llama.cpp server batching.  A backend that says otherwise registers its own.
SERVER_CONCURRENCY = 16


def create_model(
    spec: str | None,
    *,
    base_url: str | None = None,
    api: str | None = None,
    concurrency: int = 1,
    **options: Any,
) -> LanguageModel:
    """``None``/"local": the embedded model; ``x.gguf``: that file, in process (unless ``base_url``);
    a registered backend's name, or ``NAME/model`` for one (:func:`backend_of`); else a server's model name.

    ``options`` may hold :class:`~lits.lm.base.CallOptions` (``log_prompts``, ``limiter``...): the backend's
    constructor takes them, so the model comes back complete."""
    from lits.registry import list_names, get_registration

    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    name = spec or "local"
    if name.lower().endswith(".gguf") and not base_url:
        return _gguf_model(Path(name).expanduser(), concurrency, call_options(options))
    backend = backend_of(name, list_names("model"))
    factory = get_registration("model", backend).obj
    model: LanguageModel = factory(name, base_url=base_url, api=api, concurrency=concurrency, **options)
    return _with_calls(model, call_options(options))


def _with_calls(model: LanguageModel, calls: CallOptions) -> LanguageModel:
    """``model`` as ``calls`` ask, for a plugin's factory that takes ``**options`` but does not pass the call
    options on to :class:`LanguageModel` (one written before they were constructor arguments)."""
    given: dict[str, object] = dict(calls)
    for key in CALL_OPTIONS:
        if key in given and getattr(model, key) != given[key]:
            setattr(model, key, given[key] if key != "sampling" else dict(calls["sampling"]))
    return model


def default_concurrency(spec: str | None) -> int:
    """Calls in flight for ``spec`` when ``--concurrency`` is not given: what its backend registered
    (``concurrency=``), 1 for a GGUF file (llama.cpp in this process), else a server's."""
    from lits.registry import get_registration, list_names

    name = spec or "local"
    if name.lower().endswith(".gguf"):
        return 1
    declared = get_registration("model", backend_of(name, list_names("model"))).meta.get("concurrency")
    return declared if isinstance(declared, int) else SERVER_CONCURRENCY


def backend_of(name: str, registered: list[str]) -> str:
    """The backend a spec names: a registered name, or one before a ``/`` (``bedrock/anthropic.claude-...``,
    a hosted backend's model); anything else is a server's model name (``Qwen/Qwen2.5-7B``)."""
    if name in registered:
        return name
    prefix = name.split("/", 1)[0]
    if prefix != name and prefix in registered and prefix != SERVER_BACKEND:
        return prefix
    return SERVER_BACKEND


def _gguf_model(path: Path, concurrency: int, calls: CallOptions) -> LanguageModel:
    """A GGUF file on llama.cpp in this process; a missing file is one line, before anything loads."""
    if not path.is_file():
        raise ValueError(f"model file {path} not found (without a base URL a spec ending in .gguf is a local file)")
    from lits.lm.local import LocalLlamaModel

    return LocalLlamaModel(path, concurrency=concurrency, **calls)
