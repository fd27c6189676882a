"""Hosted models for LiTS: Claude through Anthropic's API and through AWS Bedrock (the LiTS paper's setting).

``--model anthropic/claude-3-5-sonnet-20241022`` and ``--model bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0``
resolve here through ``register_model``; see :mod:`lits_hosted.anthropic_api` and
:mod:`lits_hosted.bedrock`.
"""

from __future__ import annotations

from typing import Any

from lits.api import LanguageModel, call_options, register_model

#: Options of ``create_model`` the hosted backends use (the rest are a server model's).
OPTIONS = (
    "price_in",
    "price_out",
    "call_budget",
    "connect_timeout",
    "read_timeout",
    "max_attempts",
    "retry_base_wait",
    "retry_max_wait",
    "patience_floor",
    "cache_prompts",
)


@register_model(
    "anthropic", description="Claude through Anthropic's Messages API ($ANTHROPIC_API_KEY): --model anthropic/MODEL"
)
def anthropic_model(
    spec: str, *, base_url: str | None = None, api: str | None = None, concurrency: int = 1, **options: Any
) -> LanguageModel:
    from lits_hosted.anthropic_api import AnthropicModel

    return AnthropicModel(
        _model_id(spec, "anthropic", api),
        base_url=base_url,
        concurrency=concurrency,
        api_key=options.get("api_key"),
        **_options(options),
    )


@register_model(
    "bedrock",
    description="a model on AWS Bedrock through the Converse API (AWS profile or "
    "environment): --model bedrock/MODEL_ID",
)
def bedrock_model(
    spec: str, *, base_url: str | None = None, api: str | None = None, concurrency: int = 1, **options: Any
) -> LanguageModel:
    from lits_hosted.bedrock import BedrockModel

    return BedrockModel(
        _model_id(spec, "bedrock", api),
        base_url=base_url,
        concurrency=concurrency,
        region=options.get("region"),
        **_options(options),
    )


def _model_id(spec: str, backend: str, api: str | None) -> str:
    if api == "completion":
        raise ValueError(f"--api completion: {backend} models are chat models (leave --api out)")
    model_id = spec.split("/", 1)[1] if spec.startswith(f"{backend}/") else ""
    if not model_id:
        raise ValueError(f"give the model after the backend: --model {backend}/MODEL_ID")
    return model_id


def _options(options: dict[str, Any]) -> dict[str, Any]:
    own = {k: v for k, v in options.items() if k in OPTIONS and v is not None}
    return {**own, **call_options(options)}
