"""Claude through Anthropic's Messages API, with the ``anthropic`` SDK (``--model anthropic/MODEL``).

The key comes from ``$ANTHROPIC_API_KEY`` (or ``--model-arg api_key_env=NAME``), as the SDK reads it; it
is never written anywhere.  ``--base-url`` points the SDK elsewhere (a gateway, a test's loopback server).
"""

from __future__ import annotations

import os
from typing import Any

import anthropic
import httpx

from lits.api import Completion, GenerationParams, Prompt, attempts_of, note_request

from lits_hosted.hosted import HostedModel, error_message
from lits_hosted.prompts import conversation, cut_at_stops, sent_stops

KEY_VARIABLE = "ANTHROPIC_API_KEY"
#: Stop sequences sent with a request (more are applied to the reply here).
MAX_STOPS = 8
CACHE_MARK = {"type": "ephemeral"}
FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}


class AnthropicModel(HostedModel):
    vendor = "anthropic"
    default_endpoint = "https://api.anthropic.com"

    def __init__(self, model_id: str, *, api_key: str | None = None, **options: Any) -> None:
        super().__init__(model_id, **options)
        self._init["api_key"] = None  # a rebuilt copy reads the environment again: the key is never pickled
        key = api_key or os.environ.get(KEY_VARIABLE)
        if not key:
            raise ValueError(
                f"no Anthropic API key: set ${KEY_VARIABLE} (or name another variable with "
                "--model-arg api_key_env=NAME)"
            )
        self.client = anthropic.Anthropic(
            api_key=key,
            base_url=self.base_url,
            max_retries=0,
            timeout=self.timeout,
            http_client=httpx.Client(transport=self.client_transport, timeout=self.timeout),
        )

    def _request(self, prompt: Prompt, params: GenerationParams) -> dict[str, Any]:
        talk = conversation(prompt, cache=self.cache_prompts)
        messages: list[dict[str, Any]] = []
        for i, (role, text) in enumerate(talk.turns):
            block: dict[str, Any] = {"type": "text", "text": text}
            if i in talk.marked:
                block["cache_control"] = CACHE_MARK
            messages.append({"role": role, "content": [block]})
        request: dict[str, Any] = {
            "model": self.name,
            "max_tokens": params.max_tokens,
            "messages": messages,
            "temperature": self.temperature(params),
        }
        if talk.system:
            system: dict[str, Any] = {"type": "text", "text": talk.system}
            if self.cache_prompts:
                system["cache_control"] = CACHE_MARK
            request["system"] = [system]
        stops = sent_stops(params.stop, MAX_STOPS)
        if stops:
            request["stop_sequences"] = stops
        return request

    def _one(self, prompt: Prompt, params: GenerationParams) -> Completion:
        try:
            raw = self.client.messages.with_raw_response.create(**self._request(prompt, params))
        except anthropic.APIStatusError as exc:
            raise self.status_error(
                exc.status_code, error_message(exc.response.content), attempts_of(exc.response) or 1
            ) from None
        except anthropic.APIConnectionError as exc:  # the SDK's wrapper of a transport error
            cause = exc.__cause__
            if isinstance(cause, httpx.TransportError):
                raise self.transport_error(cause) from None
            raise self.transport_error(httpx.TransportError(str(exc))) from None
        data = raw.http_response.extensions.get("lits_json") or raw.http_response.json()
        usage = data.get("usage") or {}
        read = int(usage.get("cache_read_input_tokens") or 0)
        write = int(usage.get("cache_creation_input_tokens") or 0)
        note_request(requests=attempts_of(raw.http_response) or 1, tokens_cached=read, tokens_cache_write=write)
        text = "".join(b.get("text") or "" for b in data.get("content") or [] if b.get("type") == "text")
        text, stopped = cut_at_stops(text, params.stop)
        finish = "stop" if stopped else FINISH.get(str(data.get("stop_reason")), data.get("stop_reason"))
        # The API's input_tokens leaves out the cached part: the prompt is all three.
        return Completion(
            text,
            tokens_in=int(usage.get("input_tokens") or 0) + read + write,
            tokens_out=int(usage.get("output_tokens") or 0),
            finish_reason=finish,
        )

    def _body_fault(self, data: dict[str, Any]) -> str | None:
        content = data.get("content")
        if not isinstance(content, list):
            return "no content"
        if not content and not data.get("stop_reason"):
            return "empty content (no stop reason)"
        return None

    def close(self) -> None:
        self.client.close()
