"""The constrained requests LiTS sends a vLLM server are valid vLLM requests, and never use ``guided_*``."""

from __future__ import annotations

from typing import Iterator, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from lits.lm.openai_compat import OpenAICompatibleModel
from lits.testing.servers.openai_compat import FakeOpenAIServer

# Our own model of the request fields LiTS sends, written from vLLM's published OpenAI-compatible protocol:
# ChatCompletionRequest (vllm/entrypoints/openai/chat_completion/protocol.py), CompletionRequest
# (vllm/entrypoints/openai/completion/protocol.py) and StructuredOutputsParams (vllm/sampling_params.py), as
# they stand from v0.12.0 (which removed the top-level guided_* fields) to main of November 2026.  vLLM itself
# accepts unknown fields and ignores them; ``extra="forbid"`` is stricter on purpose, since an ignored
# constraint field is a constraint silently dropped.
INT64 = 2**63


class StructuredOutputs(BaseModel):
    """StructuredOutputsParams: exactly one kind of constraint, and options."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    json_schema: str | dict[str, object] | None = Field(None, alias="json")
    regex: str | None = None
    choice: list[str] | None = None
    grammar: str | None = None
    json_object: bool | None = None
    structural_tag: str | None = None
    disable_any_whitespace: bool = False
    disable_additional_properties: bool = False
    whitespace_pattern: str | None = None

    @model_validator(mode="after")
    def one_kind(self) -> "StructuredOutputs":
        kinds = (self.json_schema, self.regex, self.choice, self.grammar, self.json_object, self.structural_tag)
        if sum(k is not None for k in kinds) != 1:
            raise ValueError("exactly one kind of structured outputs constraint")
        return self


class Sampling(BaseModel):
    """The fields both endpoints share, as LiTS fills them."""

    model_config = ConfigDict(extra="forbid")
    model: str | None = None
    n: int = Field(1, ge=1)
    temperature: float | None = None
    max_tokens: int | None = None
    stop: str | list[str] = []
    seed: int | None = Field(None, ge=-INT64, lt=INT64)
    structured_outputs: StructuredOutputs | None = None


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["system", "user", "assistant"]
    content: str


class ChatCompletionRequest(Sampling):
    messages: list[Message]
    logprobs: bool | None = False
    top_logprobs: int | None = Field(0, ge=0)


class CompletionRequest(Sampling):
    prompt: str | list[str]
    echo: bool | None = False
    logprobs: int | None = Field(None, ge=0)


SCHEMAS: dict[str, type[Sampling]] = {"chat": ChatCompletionRequest, "completion": CompletionRequest}
ONE_LINE = [["pick up the red block", 'say "hi" (twice)', "put down the blue block"]]
LINES = [["1: Yes", "1: No"], ["2: Yes", "2: No"]]


@pytest.fixture(scope="module")
def vllm() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(vllm="0.12.0", refuse_unknown=True) as srv:
        yield srv


def _sent(server: FakeOpenAIServer, api: Literal["chat", "completion"], lines: list[list[str]]) -> dict[str, object]:
    model = OpenAICompatibleModel("m", server.base_url, api=api, retry_base_wait=0.01)
    before = len(server.requests)
    try:
        model.generate("Next?", reply_lines=lines, stop=["\n\n"], seed=7, top_logprobs=2, temperature=0.7, n=2)
    finally:
        model.close()
    (body,) = server.requests[before:]
    return body


@pytest.mark.parametrize("api", ["chat", "completion"])
def test_a_one_line_reply_is_held_by_a_valid_structured_outputs_choice(vllm: FakeOpenAIServer, api) -> None:
    body = _sent(vllm, api, ONE_LINE)
    request = SCHEMAS[api].model_validate(body)
    assert request.structured_outputs is not None and request.structured_outputs.choice == ONE_LINE[0]


@pytest.mark.parametrize("api", ["chat", "completion"])
def test_several_lines_are_held_by_a_valid_structured_outputs_regex(vllm: FakeOpenAIServer, api) -> None:
    body = _sent(vllm, api, LINES)
    request = SCHEMAS[api].model_validate(body)
    held = request.structured_outputs
    assert held is not None and held.regex == r"(1: Yes|1: No)\n(2: Yes|2: No)"


@pytest.mark.parametrize("api", ["chat", "completion"])
@pytest.mark.parametrize("lines", [ONE_LINE, LINES])
def test_no_guided_field_is_ever_sent_to_a_current_vllm(vllm: FakeOpenAIServer, api, lines) -> None:
    assert not [field for field in _sent(vllm, api, lines) if field.startswith("guided_")]


def test_the_schema_refuses_what_vllm_ignores_or_refuses() -> None:
    """The check above has teeth: a guided field, or two kinds of constraint, do not validate."""
    with pytest.raises(ValidationError, match="guided_regex"):
        ChatCompletionRequest.model_validate({"messages": [], "guided_regex": "a|b"})
    with pytest.raises(ValidationError, match="exactly one kind"):
        CompletionRequest.model_validate({"prompt": "p", "structured_outputs": {"regex": "a", "choice": ["a"]}})
