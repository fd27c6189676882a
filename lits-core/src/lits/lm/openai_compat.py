"""A backend for any OpenAI-compatible server: vLLM, llama.cpp, Ollama, OpenAI.

Sync httpx (thread-safe; agents call it from worker threads) with the retry
transport of :mod:`lits.lm.retry`.  Servers that ignore ``n`` (llama.cpp's)
get more requests until ``n`` completions are in hand.
"""

from __future__ import annotations

import os
from typing import Any, Literal, Optional

import httpx

from lits.lm.base import (
    Completion,
    GenerationParams,
    LanguageModel,
    LoglikelihoodUnsupported,
    ModelError,
    Prompt,
    TokenLogprob,
)
from lits.lm.retry import RetryTransport


class OpenAICompatibleModel(LanguageModel):
    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key: Optional[str] = None,
        api: Literal["chat", "completion"] = "chat",
        timeout: float = 120.0,
        max_retries: int = 4,
        retry_base_wait: float = 0.5,
        concurrency: int = 1,
        price_in: float = 0.0,
        price_out: float = 0.0,
    ) -> None:
        super().__init__(concurrency=concurrency)
        if api not in ("chat", "completion"):
            raise ValueError(f"api must be 'chat' or 'completion', not {api!r}")
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"--base-url must start with http:// or https://, got {base_url!r}")
        self.name = model
        self.base_url = base_url.rstrip("/")
        self.api = api
        self.chat_native = api == "chat"
        self.supports_loglikelihood = api == "completion"
        self.price_in, self.price_out = price_in, price_out
        key = api_key or os.environ.get("OPENAI_API_KEY") or os.environ.get("LITS_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        transport = RetryTransport(httpx.HTTPTransport(), attempts=max_retries, base_wait=retry_base_wait)
        self.client = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=timeout,
            transport=transport,
            limits=httpx.Limits(max_connections=max(8, concurrency * 2), max_keepalive_connections=max(8, concurrency)),
        )

    def identity(self) -> str:
        return f"openai:{self.base_url}:{self.name}:{self.api}"

    # -- generation ----------------------------------------------------------
    def _generate(self, prompt: Prompt, params: GenerationParams) -> list[Completion]:
        outs: list[Completion] = []
        while len(outs) < params.n:
            body = self._body(prompt, params, params.n - len(outs))
            data = self._post("/chat/completions" if self.api == "chat" else "/completions", body)
            outs.extend(self._parse(data, params.n - len(outs)))
        return outs

    def _body(self, prompt: Prompt, params: GenerationParams, n: int) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.name,
            "n": n,
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
        }
        if params.stop:
            body["stop"] = list(params.stop)
        if params.seed is not None:
            body["seed"] = params.seed
        if self.api == "chat":
            body["messages"] = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
            if params.top_logprobs:
                body.update(logprobs=True, top_logprobs=params.top_logprobs)
        else:
            if not isinstance(prompt, str):
                raise ValueError("a chat conversation cannot be sent to a completions endpoint; use --api chat")
            body["prompt"] = prompt
            if params.top_logprobs:
                body["logprobs"] = params.top_logprobs
        return body

    def _parse(self, data: dict[str, Any], limit: int) -> list[Completion]:
        choices = list(data.get("choices") or [])[:limit]
        if not choices:
            raise ModelError(f"model server {self.base_url} returned no choices")
        usage = data.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        completion_tokens = int(usage.get("completion_tokens") or 0)
        share, extra = divmod(completion_tokens, len(choices))
        outs = []
        for i, choice in enumerate(choices):
            if "message" in choice:
                text = (choice["message"] or {}).get("content") or ""
            else:
                text = choice.get("text") or ""
            outs.append(Completion(
                text,
                tokens_in=prompt_tokens if i == 0 else 0,
                tokens_out=share + (1 if i < extra else 0),
                logprobs=_parse_logprobs(choice.get("logprobs")),
                finish_reason=choice.get("finish_reason"),
            ))
        return outs

    # -- scoring -----------------------------------------------------------
    def _loglikelihood(self, prompt: str, continuations: list[str]) -> tuple[list[float], int]:
        if not self.supports_loglikelihood:
            raise LoglikelihoodUnsupported(f"{self.base_url} ({self.api} API) cannot score text; use --api completion")
        scores, tokens = [], 0
        for continuation in continuations:
            body = {"model": self.name, "prompt": prompt + continuation, "max_tokens": 1,
                    "temperature": 0.0, "echo": True, "logprobs": 1}
            try:
                data = self._post("/completions", body)
            except ModelError as exc:
                self.supports_loglikelihood = False
                raise LoglikelihoodUnsupported(f"{self.base_url} refused prompt scoring: {exc}") from exc
            choice = (data.get("choices") or [{}])[0]
            score = _continuation_logprob(choice.get("logprobs"), len(prompt), len(prompt + continuation))
            if score is None:
                self.supports_loglikelihood = False
                raise LoglikelihoodUnsupported(f"{self.base_url} returned no prompt log-probabilities (echo)")
            scores.append(score)
            tokens += int((data.get("usage") or {}).get("prompt_tokens") or 0)
        return scores, tokens

    # -- HTTP ------------------------------------------------------------------
    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        where = f"model server {self.base_url}"
        try:
            response = self.client.post(path, json=body)
        except httpx.ConnectError:
            raise ModelError(f"cannot reach {where}: connection refused") from None
        except httpx.TimeoutException:
            raise ModelError(f"{where} did not answer in time (timeout {self.client.timeout.read}s)") from None
        except httpx.TransportError as exc:
            raise ModelError(f"cannot reach {where}: {exc}") from None
        if response.status_code >= 400:
            attempts = response.extensions.get("lits_attempts")
            after = f" after {attempts} attempts" if attempts else ""
            raise ModelError(f"{where} answered {response.status_code}{after}: {_error_text(response)}")
        try:
            return response.json()
        except ValueError:
            raise ModelError(f"{where} answered with something that is not JSON: {response.text[:120]!r}") from None

    def close(self) -> None:
        self.client.close()


def _error_text(response: httpx.Response) -> str:
    try:
        data = response.json()
        err = data.get("error", data) if isinstance(data, dict) else data
        text = err.get("message", str(err)) if isinstance(err, dict) else str(err)
    except ValueError:
        text = response.text
    text = " ".join(str(text).split())
    return (text[:200] + "...") if len(text) > 200 else (text or response.reason_phrase)


def _parse_logprobs(raw: Any) -> Optional[list[TokenLogprob]]:
    if not raw:
        return None
    if isinstance(raw, dict) and "content" in raw:  # chat shape
        return [
            TokenLogprob(t.get("token", ""), float(t.get("logprob", 0.0)),
                         {x["token"]: float(x["logprob"]) for x in t.get("top_logprobs") or []})
            for t in raw.get("content") or []
        ]
    tokens = raw.get("tokens") or []
    lps = raw.get("token_logprobs") or []
    tops = raw.get("top_logprobs") or [None] * len(tokens)
    return [TokenLogprob(tok, float(lp or 0.0), {k: float(v) for k, v in (top or {}).items()})
            for tok, lp, top in zip(tokens, lps, tops)]


def _continuation_logprob(raw: Any, start: int, end: int) -> Optional[float]:
    """Sum of the echoed token log-probs between character offsets ``start`` and ``end``."""
    if not isinstance(raw, dict) or not raw.get("token_logprobs"):
        return None
    tokens = raw.get("tokens") or []
    lps = raw["token_logprobs"]
    offsets = raw.get("text_offset")
    if not offsets:
        offsets, pos = [], 0
        for tok in tokens:
            offsets.append(pos)
            pos += len(tok)
    total, counted = 0.0, 0
    for off, lp in zip(offsets, lps):
        if start <= off < end and lp is not None:
            total += float(lp)
            counted += 1
    return total if counted else None
