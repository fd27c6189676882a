"""Claude (or any Converse model) on AWS Bedrock, with ``boto3``'s Converse API (``--model bedrock/MODEL_ID``).

Credentials and region come from where the AWS SDK finds them (``$AWS_PROFILE``, ``$AWS_ACCESS_KEY_ID`` /
``$AWS_SECRET_ACCESS_KEY`` / ``$AWS_SESSION_TOKEN``, ``~/.aws``, an instance role; ``$AWS_REGION``); none
is written anywhere.  botocore signs each request and then hands it to LiTS's transport (its
``before-send`` event), which retries it within the call budget; botocore's own retries are off.
``--base-url`` is the endpoint (``endpoint_url``: a VPC endpoint, a test's loopback server).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Iterator

import boto3
import botocore.awsrequest
import botocore.config
import botocore.exceptions
import httpx

from lits.api import Completion, GenerationParams, Prompt, attempts_of, note_request

from lits_hosted.hosted import HostedModel, error_message
from lits_hosted.prompts import conversation, cut_at_stops, sent_stops

#: Converse takes at most four stop sequences; more are applied to the reply here.
MAX_STOPS = 4
CACHE_POINT = {"cachePoint": {"type": "default"}}
FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}


class _Body:
    """A reply body as botocore reads one (``raw.stream()``)."""

    def __init__(self, content: bytes) -> None:
        self.content = content

    def stream(self, **kwargs: Any) -> Iterator[bytes]:
        yield self.content


class BedrockModel(HostedModel):
    vendor = "bedrock"

    def __init__(self, model_id: str, *, region: str | None = None, **options: Any) -> None:
        super().__init__(model_id, **options)
        self._init["region"] = region
        # botocore reads $AWS_DEFAULT_REGION and profiles; $AWS_REGION is what the other AWS SDKs read.
        session = boto3.session.Session(region_name=region or os.environ.get("AWS_REGION") or None)
        if session.region_name is None:
            raise ValueError("no AWS region for Bedrock: set $AWS_REGION (or a region in your AWS profile)")
        try:
            credentials = session.get_credentials()
        except botocore.exceptions.BotoCoreError as exc:  # a broken profile
            raise ValueError(f"AWS credentials for Bedrock: {exc}") from None
        if credentials is None:
            raise ValueError(
                "no AWS credentials for Bedrock: set $AWS_PROFILE, or $AWS_ACCESS_KEY_ID and "
                "$AWS_SECRET_ACCESS_KEY (or run `aws configure`)"
            )
        self.region = session.region_name
        self.default_endpoint = f"https://bedrock-runtime.{self.region}.amazonaws.com"
        config = botocore.config.Config(
            retries={"total_max_attempts": 1, "mode": "standard"},
            connect_timeout=self.timeout.connect,
            read_timeout=self.timeout.read,
        )
        self.client = session.client("bedrock-runtime", endpoint_url=self.base_url, config=config)
        self.client.meta.events.register("before-send.bedrock-runtime.Converse", self._send)
        self._http = httpx.Client(transport=self.client_transport, timeout=self.timeout)
        #: The attempts of this thread's last request (an error's message says them).
        self._attempts = threading.local()

    def _send(self, request: botocore.awsrequest.AWSPreparedRequest, **kwargs: Any) -> botocore.awsrequest.AWSResponse:
        """The signed request, sent through our transport (raises its TransportError when given up)."""
        body = request.body
        content = body.read() if hasattr(body, "read") else (body or b"")
        if isinstance(content, str):
            content = content.encode()
        sent = self._http.build_request(
            request.method or "POST",
            request.url or "",
            content=content,
            headers={k: v for k, v in request.headers.items()},
        )
        response = self._http.send(sent)
        self._attempts.last = attempts_of(response) or 1
        note_request(requests=self._attempts.last)
        return botocore.awsrequest.AWSResponse(
            request.url, response.status_code, dict(response.headers), _Body(response.content)
        )

    def _request(self, prompt: Prompt, params: GenerationParams) -> dict[str, Any]:
        talk = conversation(prompt, cache=self.cache_prompts)
        messages: list[dict[str, Any]] = []
        for i, (role, text) in enumerate(talk.turns):
            content: list[dict[str, Any]] = [{"text": text}]
            if i in talk.marked:
                content.append(CACHE_POINT)
            messages.append({"role": role, "content": content})
        config: dict[str, Any] = {"maxTokens": params.max_tokens, "temperature": self.temperature(params)}
        stops = sent_stops(params.stop, MAX_STOPS)
        if stops:
            config["stopSequences"] = stops
        request: dict[str, Any] = {"modelId": self.name, "messages": messages, "inferenceConfig": config}
        if talk.system:
            request["system"] = [{"text": talk.system}, *([CACHE_POINT] if self.cache_prompts else [])]
        return request

    def _one(self, prompt: Prompt, params: GenerationParams) -> Completion:
        try:
            data = self.client.converse(**self._request(prompt, params))
        except httpx.TransportError as exc:
            raise self.transport_error(exc) from None
        except botocore.exceptions.ClientError as exc:
            meta = exc.response.get("ResponseMetadata") or {}
            error = exc.response.get("Error") or {}
            message = f"{error.get('Code', '')}: {error.get('Message', '')}".strip(": ")
            raise self.status_error(
                int(meta.get("HTTPStatusCode") or 0), message or error_message(b""), getattr(self._attempts, "last", 1)
            ) from None
        except botocore.exceptions.BotoCoreError as exc:  # e.g. a request botocore refuses to build
            raise self.status_error(400, str(exc), 1) from None
        usage = data.get("usage") or {}
        read = int(usage.get("cacheReadInputTokens") or 0)
        write = int(usage.get("cacheWriteInputTokens") or 0)
        note_request(requests=0, tokens_cached=read, tokens_cache_write=write)
        blocks = ((data.get("output") or {}).get("message") or {}).get("content") or []
        text = "".join(b.get("text") or "" for b in blocks if isinstance(b, dict))
        text, stopped = cut_at_stops(text, params.stop)
        finish = "stop" if stopped else FINISH.get(str(data.get("stopReason")), data.get("stopReason"))
        # Converse's inputTokens leaves out the cached part: the prompt is all three.
        return Completion(
            text,
            tokens_in=int(usage.get("inputTokens") or 0) + read + write,
            tokens_out=int(usage.get("outputTokens") or 0),
            finish_reason=finish,
        )

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "region": self.region}

    def _body_fault(self, data: dict[str, Any]) -> str | None:
        message = (data.get("output") or {}).get("message") if isinstance(data.get("output"), dict) else None
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            return "no output message"
        return None

    def close(self) -> None:
        self._http.close()
        self.client.close()
