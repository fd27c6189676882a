"""The OpenAI-compatible backend against a loopback server."""

from __future__ import annotations

import re
import threading

import pytest

from lits.lm.base import LoglikelihoodUnsupported, ModelError
from lits.lm.factory import create_model
from lits.lm.openai_compat import OpenAICompatibleModel
from lits.testing.servers.openai_compat import FakeOpenAIServer


def test_chat_request_returns_the_reply_with_token_counts(chat_model, server):
    reply = chat_model.chat([{"role": "user", "content": "is it raining today"}])
    assert reply.text == "Yes it is" and reply.tokens_out == 3
    assert reply.tokens_in == len("user: is it raining today".split())
    assert server.requests[0]["messages"][0]["content"] == "is it raining today"


def test_a_plain_prompt_becomes_one_user_message_on_the_chat_api(chat_model, server):
    chat_model.complete("hello")
    assert server.requests[0]["messages"] == [{"role": "user", "content": "hello"}]


def test_completion_api_sends_the_prompt_text(completion_model, server):
    assert completion_model.complete("hello there", stop=["\n"]) == "Yes it is"
    assert server.requests[0]["prompt"] == "hello there" and server.requests[0]["stop"] == ["\n"]


def test_chat_conversation_on_the_completion_api_is_a_clear_error(completion_model):
    with pytest.raises(ValueError, match="--api chat"):
        completion_model.chat([{"role": "user", "content": "hi"}])


def test_n_samples_come_back_in_one_request_when_the_server_honours_n(chat_model, server):
    assert len(chat_model.generate("x", n=3, temperature=0.7)) == 3
    assert len(server.requests) == 1


def test_servers_that_ignore_n_get_more_requests():
    with FakeOpenAIServer(responder=lambda p, b: "a", ignore_n=True) as srv:
        model = OpenAICompatibleModel("fake", srv.base_url)
        assert len(model.generate("x", n=3, temperature=0.7)) == 3
        assert [r["n"] for r in srv.requests] == [3, 2, 1]


@pytest.mark.parametrize("most, sent", [(1, [3, 1, 1, 1, 1, 1]), (2, [3, 2, 1, 2])])
def test_a_server_refusing_n_gets_as_many_samples_per_request_as_it_takes_from_then_on(most, sent):
    """Upstream llama-server answers 400 to ``n`` above its slots: the samples go in requests it takes, and later
    calls ask for that many without being refused again."""
    with FakeOpenAIServer(responder=lambda p, b: "a", max_n=most) as srv:
        model = OpenAICompatibleModel("fake", srv.base_url)
        assert [c.text for c in model.generate("x", n=3, temperature=0.7)] == ["a", "a", "a"]
        assert len(model.generate("y", n=2, temperature=0.7)) == 2
        assert [r["n"] for r in srv.requests] == sent


@pytest.mark.parametrize(
    "error, allowed",
    [
        ("Field 'n': Value must be between 1 <= value <= 2, but got 3", 2),
        ('"n": only one sample per request', 1),
        ("guided_regex is not supported", None),
        ("echo is not supported", None),
        ("unknown field 'min_p'", None),
    ],
)
def test_only_a_refusal_naming_n_limits_the_samples_per_request(error, allowed):
    from lits.lm.server.constraints import samples_allowed

    assert samples_allowed(error) == allowed


def test_prompt_tokens_are_counted_once_per_request(chat_model):
    outs = chat_model.generate("one two three", n=3)
    assert [c.tokens_in for c in outs][1:] == [0, 0] and outs[0].tokens_in > 0


def test_top_logprobs_are_parsed(chat_model):
    reply = chat_model.generate("q", top_logprobs=2)[0]
    assert reply.logprobs[0].token == "Yes" and reply.logprobs[0].top == {"Yes": -0.1}


def test_loglikelihood_sums_the_echoed_continuation_tokens():
    with FakeOpenAIServer(token_scorer=lambda prefix, tok: -0.5 if tok.strip() == "good" else -3.0) as srv:
        model = OpenAICompatibleModel("fake", srv.base_url, api="completion")
        assert model.loglikelihood("the next word is", [" good", " bad idea"]) == [-0.5, -6.0]
        assert all(r["echo"] is True for r in srv.requests)


def _scorer(prefix: str, tok: str) -> float:
    return -0.5 if tok.strip() == "good" else -3.0


def test_all_continuations_are_scored_in_one_request_when_the_server_takes_a_list_of_prompts():
    with FakeOpenAIServer(token_scorer=_scorer) as srv:
        model = OpenAICompatibleModel("fake", srv.base_url, api="completion")
        assert model.loglikelihood("the next word is", [" good", " bad idea", " good"]) == [-0.5, -6.0, -0.5]
        assert len(srv.requests) == 1 and srv.requests[0]["prompt"][1] == "the next word is bad idea"


def test_a_server_without_prompt_lists_gets_one_request_per_continuation_from_then_on():
    with FakeOpenAIServer(token_scorer=_scorer, batch_prompts=False) as srv:
        model = OpenAICompatibleModel("fake", srv.base_url, api="completion")
        assert model.loglikelihood("the next word is", [" good", " bad idea"]) == [-0.5, -6.0]
        assert model.batch_prompts is False
        before = len(srv.requests)
        assert model.loglikelihood("another prompt", [" good", " bad"]) == [-0.5, -3.0]
        assert len(srv.requests) - before == 2 and all(isinstance(r["prompt"], str) for r in srv.requests[before:])


def test_a_server_that_fails_the_prompt_list_probe_is_not_retried_on_it():
    with FakeOpenAIServer(token_scorer=_scorer) as srv:
        srv.fail_next(500)  # llama.cpp's server answers 500 to a list of prompts
        model = OpenAICompatibleModel("fake", srv.base_url, api="completion")
        assert model.loglikelihood("the next word is", [" good", " bad idea"]) == [-0.5, -6.0]
        assert model.batch_prompts is False and len(srv.requests) == 3  # the probe, then one per continuation


def test_loglikelihood_on_a_server_without_echo_raises_unsupported():
    with FakeOpenAIServer(echo_supported=False) as srv:
        model = OpenAICompatibleModel("fake", srv.base_url, api="completion", retry_base_wait=0.01)
        with pytest.raises(LoglikelihoodUnsupported):
            model.loglikelihood("p", [" x"])
        assert model.supports_loglikelihood is False


def test_chat_api_cannot_score_text(chat_model):
    with pytest.raises(LoglikelihoodUnsupported, match="--api completion"):
        chat_model.loglikelihood("p", [" x"])


def test_503_with_retry_after_is_retried_then_succeeds(chat_model, server):
    server.fail_next(503, retry_after="0")
    assert chat_model.complete("x") == "Yes it is"
    assert len(server.requests) == 2


def test_429_is_retried(chat_model, server):
    server.fail_next(429, times=2, retry_after="0")
    assert chat_model.complete("x") == "Yes it is"
    assert len(server.requests) == 3


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_not_retried(chat_model, server, status):
    server.fail_next(status)
    with pytest.raises(ModelError, match=f"answered {status}: injected failure {status}"):
        chat_model.complete("x")
    assert len(server.requests) == 1


def test_final_error_names_the_server_the_status_and_the_attempts(server):
    model = OpenAICompatibleModel("fake", server.base_url, retry_base_wait=0.01, call_budget=0.5)
    server.fail_next(503, times=10_000, retry_after="0")
    with pytest.raises(ModelError) as info:
        model.complete("x")
    assert re.fullmatch(
        rf"model server {re.escape(server.base_url)} answered 503 after \d+ attempts: "
        r"injected failure 503",
        str(info.value),
    )


def test_unreachable_server_gives_a_one_line_error():
    model = OpenAICompatibleModel("m", "http://127.0.0.1:9/v1", max_attempts=1)
    with pytest.raises(ModelError, match=r"cannot reach model server http://127.0.0.1:9/v1: connection refused"):
        model.complete("x")


def test_api_key_comes_from_the_environment_and_never_appears_in_errors(monkeypatch, server):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value-1234567890abcdefghij")
    model = create_model("fake", base_url=server.base_url)
    model.complete("x")
    assert server.headers[0]["Authorization"] == "Bearer sk-secret-value-1234567890abcdefghij"
    server.fail_next(401)
    with pytest.raises(ModelError) as info:
        model.complete("x")
    assert "sk-secret" not in str(info.value)


def _eight_calls_at_once(model: OpenAICompatibleModel) -> None:
    threads = [threading.Thread(target=model.complete, args=(f"q{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_concurrency_limit_bounds_requests_in_flight():
    with FakeOpenAIServer(latency=0.05) as srv:
        _eight_calls_at_once(OpenAICompatibleModel("fake", srv.base_url, concurrency=2))
        assert srv.max_in_flight == 2


def test_calls_overlap_up_to_the_limit():
    with FakeOpenAIServer(latency=0.1) as srv:
        _eight_calls_at_once(OpenAICompatibleModel("fake", srv.base_url, concurrency=8))
        assert srv.max_in_flight > 1


def test_bad_base_url_is_rejected_in_one_line():
    with pytest.raises(ValueError, match="http:// or https://"):
        create_model("m", base_url="localhost:8000")


def _grammar_literal(prompt: str, body: dict) -> str:
    """What upstream llama-server generates under a grammar of one literal: that literal."""
    found = re.search(r'line0 ::= "(.*)"\n', str(body.get("grammar")))
    return found.group(1) if found else "unconstrained"


def test_a_server_without_echo_scores_each_continuation_by_generating_it_under_a_grammar():
    with FakeOpenAIServer(responder=_grammar_literal, token_scorer=_scorer, echo_supported=False, slots=2) as srv:
        model = OpenAICompatibleModel("fake", srv.base_url, api="completion", retry_base_wait=0.01)
        assert model.loglikelihood("the next word is", [" good", " bad idea"]) == [-0.5, -6.0]
        scoring = srv.requests
        assert len(scoring) == 2 and not any(r.get("echo") for r in scoring)
        assert [r["prompt"] for r in scoring] == ["the next word is"] * 2 and scoring[0]["logprobs"] == 1


def test_a_server_without_echo_that_strays_from_the_grammar_cannot_score():
    with FakeOpenAIServer(responder=lambda prompt, body: " other", echo_supported=False, slots=2) as srv:
        model = OpenAICompatibleModel("fake", srv.base_url, api="completion", retry_base_wait=0.01)
        with pytest.raises(LoglikelihoodUnsupported, match="takes no echo"):
            model.loglikelihood("p", [" x"])
        assert model.supports_loglikelihood is False
