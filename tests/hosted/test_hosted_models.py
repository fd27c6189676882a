"""The hosted backends against a loopback server that speaks the Anthropic Messages and Bedrock Converse APIs."""

from __future__ import annotations

import pickle
from typing import Any, Callable

import pytest

from lits.lm.base import LoglikelihoodUnsupported, ModelError
from lits.lm.openai_compat import ServerRefused
from lits.runtime.observability import InferenceLog, collecting
from tests.hosted.conftest import ANTHROPIC_KEY, AWS_SECRET, AWS_TOKEN
from tests.hosted.fake_hosted import FakeHostedServer

MakeModel = Callable[..., Any]
CHAT = [{"role": "system", "content": "You plan moves of blocks."}, {"role": "user", "content": "State: a on b"}]


def sent(server: FakeHostedServer, vendor: str) -> dict[str, Any]:
    """The last request's settings, read back from either wire format."""
    body = server.bodies[-1]
    if vendor == "anthropic":
        return {
            "system": [b["text"] for b in body.get("system") or []],
            "stop": body.get("stop_sequences"),
            "temperature": body.get("temperature"),
            "max_tokens": body["max_tokens"],
        }
    config = body["inferenceConfig"]
    return {
        "system": [b["text"] for b in body.get("system") or [] if "text" in b],
        "stop": config.get("stopSequences"),
        "temperature": config.get("temperature"),
        "max_tokens": config["maxTokens"],
    }


def test_the_system_prompt_stops_temperature_and_max_tokens_reach_the_api(
    make_model: MakeModel, server: FakeHostedServer, vendor: str
):
    server.responder = lambda prompt, body: "unstack a Observation: invented"
    reply = make_model().generate(CHAT, temperature=0.7, max_tokens=40, stop=["Observation:", "\n"])[0]
    assert sent(server, vendor) == {
        "system": ["You plan moves of blocks."],
        "stop": ["Observation:"],
        "temperature": 0.7,
        "max_tokens": 40,
    }
    assert reply.text == "unstack a " and reply.finish_reason == "stop"


def test_a_whitespace_stop_the_apis_refuse_is_applied_to_the_reply(make_model: MakeModel, server: FakeHostedServer):
    server.responder = lambda prompt, body: "pick up a\nput down a"
    assert make_model().generate(CHAT, stop=["\n"])[0].text == "pick up a"


def test_throttling_and_server_errors_are_retried_by_lits_not_the_sdk(make_model: MakeModel, server: FakeHostedServer):
    model = make_model()
    server.faults.extend([429, 503, 500])
    assert model.generate(CHAT)[0].text == "ok"
    assert len(server.bodies) == 4  # three faults, then the answer: each a request our transport sent
    assert {h.get("amz-sdk-request", "attempt=1; max=1") for h in server.headers} == {"attempt=1; max=1"}
    assert {h.get("x-stainless-retry-count", "0") for h in server.headers} == {"0"}
    assert model.fault_stats()["retries"] == 3 and model.fault_stats()["failed_calls"] == 0


def test_a_hung_request_is_sent_again_after_the_read_timeout(make_model: MakeModel, server: FakeHostedServer):
    model = make_model(read_timeout=0.5, patience_floor=0.5)
    server.faults.append("hang")
    assert model.generate(CHAT)[0].text == "ok"
    assert len(server.bodies) == 2 and model.fault_stats()["retries"] == 1


def test_a_refused_request_fails_at_once_in_one_line(make_model: MakeModel, server: FakeHostedServer):
    server.faults.append(400)
    with pytest.raises(ServerRefused) as refused:
        make_model().generate(CHAT)
    assert len(server.bodies) == 1
    assert "answered 400" in str(refused.value) and "\n" not in str(refused.value)


def test_the_attempt_cap_ends_a_call_to_a_server_that_keeps_throttling(make_model: MakeModel, server: FakeHostedServer):
    server.faults.extend([429] * 5)
    with pytest.raises(ModelError) as failed:
        make_model(max_attempts=3).generate(CHAT)
    assert len(server.bodies) == 3 and not isinstance(failed.value, ServerRefused)
    assert "answered 429 after 3 attempts" in str(failed.value)


def test_the_system_text_is_marked_for_the_prompt_cache_and_a_lone_turn_is_not(
    make_model: MakeModel, server: FakeHostedServer, vendor: str
):
    make_model().generate(CHAT)
    body = server.bodies[-1]
    if vendor == "anthropic":
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
        assert all("cache_control" not in block for m in body["messages"] for block in m["content"])
    else:
        assert body["system"][-1] == {"cachePoint": {"type": "default"}}
        assert all("cachePoint" not in block for m in body["messages"] for block in m["content"])


def test_a_growing_conversation_marks_its_last_reply_and_the_next_step_reads_it(
    make_model: MakeModel, server: FakeHostedServer
):
    model = make_model()
    steps = [*CHAT, {"role": "assistant", "content": "Action: look"}, {"role": "user", "content": "Observation: x y"}]
    model.generate(steps)
    model.generate(
        [*steps, {"role": "assistant", "content": "Action: act"}, {"role": "user", "content": "Observation: z"}]
    )
    first, second = server.usages
    assert cache_fields(first) == (0, 11)  # system (5 words) and the turns up to the reply "Action: look" (6)
    assert cache_fields(second) == (11, 5)  # that prefix read back; up to the new reply "Action: act" written
    assert cache_fields(server.usages[-1]) == cache_fields(second)


def cache_fields(usage: dict[str, int]) -> tuple[int, int]:
    """``(read, written)`` from either vendor's usage."""
    if "cache_read_input_tokens" in usage:
        return usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]
    return usage["cacheReadInputTokens"], usage["cacheWriteInputTokens"]


def test_cache_writes_and_reads_are_logged_and_priced_to_the_cent(make_model: MakeModel, server: FakeHostedServer):
    """Claude 3.5 Sonnet at $3 / $15 per 1M tokens; a 20,000-token system prompt, 1,000-token questions,
    500-token replies.  The first call writes the system prompt to the cache (1.25 x $3), the second reads it
    (0.1 x $3):  call 1 = (1000 x 3 + 20000 x 3.75 + 500 x 15) / 1e6 = $0.0855;
                 call 2 = (1000 x 3 + 20000 x 0.30 + 500 x 15) / 1e6 = $0.0165  (uncached: $0.0705 each)."""
    server.responder = lambda prompt, body: " ".join(["w"] * 500)
    system = " ".join(["rule"] * 20000)
    model = make_model()
    with collecting(InferenceLog()) as log:
        for question in ("a", "b"):
            model.generate(
                [{"role": "system", "content": system}, {"role": "user", "content": " ".join([question] * 1000)}],
                max_tokens=600,
            )
    first, second = log.records
    assert (first.tokens_in, first.tokens_cache_write, first.tokens_cached) == (21000, 20000, 0)
    assert (second.tokens_in, second.tokens_cache_write, second.tokens_cached) == (21000, 0, 20000)
    assert (round(first.cost, 4), round(second.cost, 4)) == (0.0855, 0.0165)
    totals = log.summary()
    assert totals["cost"] == pytest.approx(0.102) and totals["tokens_cached"] == 20000
    assert totals["tokens_cache_write"] == 20000


def test_given_prices_win_over_the_list_price(make_model: MakeModel):
    model = make_model(price_in=1.0, price_out=2.0)
    assert (model.price_in, model.price_out) == (1.0, 2.0) and model.describe()["prices"]["from"] == "given"


def test_what_the_backend_cannot_do_is_declared_and_asks_nothing(make_model: MakeModel, server: FakeHostedServer):
    model = make_model()
    model.constrain_replies = True  # as a run sets it without --free-replies: still free text
    assert not model.supports_loglikelihood and not model.batches_samples and not model.constrain_replies
    assert set(model.describe()["cannot"]) == {"loglikelihood", "reply_lines", "n"}
    with pytest.raises(LoglikelihoodUnsupported):
        model.loglikelihood("State:", [" a", " b"])
    assert server.bodies == []


def test_a_policy_that_must_rank_by_likelihood_refuses_the_model_before_any_call(
    make_model: MakeModel, server: FakeHostedServer
):
    from lits.components.policy.env_grounded import EnvGroundedPolicy

    with pytest.raises(ValueError, match=r"^strategy=rank ranks actions by log-likelihood, which model .* cannot"):
        EnvGroundedPolicy(base_model=make_model(), task_name="blocksworld", strategy="rank")
    assert server.bodies == []


def test_n_samples_are_n_requests(make_model: MakeModel, server: FakeHostedServer):
    assert len(make_model().generate(CHAT, n=3, temperature=1.0)) == 3 and len(server.bodies) == 3


def test_a_model_pickles_without_its_credentials_and_works_rebuilt(make_model: MakeModel, server: FakeHostedServer):
    model = make_model()
    model.sampling = {"temperature": 0.2}
    data = pickle.dumps(model)
    assert not any(secret.encode() in data for secret in (ANTHROPIC_KEY, AWS_SECRET, AWS_TOKEN))
    again = pickle.loads(data)
    assert again.sampling == {"temperature": 0.2} and again.generate(CHAT)[0].text == "ok"


def test_a_missing_anthropic_key_is_one_line(credentials: None, monkeypatch: pytest.MonkeyPatch):
    from lits_hosted import anthropic_model

    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ValueError, match=r"^no Anthropic API key: set \$ANTHROPIC_API_KEY"):
        anthropic_model("anthropic/claude-3-5-sonnet-20241022")


def test_missing_aws_credentials_are_one_line(credentials: None, monkeypatch: pytest.MonkeyPatch):
    from lits_hosted import bedrock_model

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name)
    with pytest.raises(ValueError, match=r"^no AWS credentials for Bedrock: set \$AWS_PROFILE"):
        bedrock_model("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0")


def test_a_backend_without_a_model_id_says_how_to_name_one(credentials: None):
    from lits_hosted import bedrock_model

    with pytest.raises(ValueError, match=r"--model bedrock/MODEL_ID"):
        bedrock_model("bedrock")


def test_a_registered_backend_prefix_picks_the_backend_and_other_slashes_stay_server_models(credentials: None):
    from lits.lm.factory import create_model
    from lits.lm.openai_compat import OpenAICompatibleModel
    from lits_hosted.anthropic_api import AnthropicModel
    from lits_hosted.bedrock import BedrockModel

    assert isinstance(create_model("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0"), BedrockModel)
    assert isinstance(create_model("anthropic/claude-3-5-sonnet-20241022"), AnthropicModel)
    server_model = create_model("Qwen/Qwen2.5-7B-Instruct", base_url="http://127.0.0.1:9/v1")
    assert isinstance(server_model, OpenAICompatibleModel) and server_model.name == "Qwen/Qwen2.5-7B-Instruct"


def test_each_request_is_sized_for_the_patience_by_the_max_tokens_the_call_asked_for(
    make_model: MakeModel, monkeypatch: pytest.MonkeyPatch
):
    model = make_model()
    sizes: list[object] = []
    send = model.transport.handle_request

    def recording(request: Any) -> Any:
        sizes.append(request.extensions.get("lits_work"))
        return send(request)

    monkeypatch.setattr(model.transport, "handle_request", recording)
    model.generate(CHAT, max_tokens=40)
    model.generate(CHAT, max_tokens=300)
    assert sizes == [64, 512]
