"""Replies held to known lines: each server is sent the constraint it understands, and only that."""

from __future__ import annotations

import re

import pytest

from lits.lm.base import GenerationParams, LanguageModel
from lits.lm.cache import request_key
from lits.lm.constraints import gbnf, regex, reply_lines
from lits.lm.openai_compat import OpenAICompatibleModel
from lits.testing import ScriptedModel
from lits.testing.server import FakeOpenAIServer

ACTIONS = [["pick up the red block", 'say "hi"', "put down the blue block"]]


def _first_body(server: FakeOpenAIServer, lines: list[list[str]] | None) -> dict[str, object]:
    model = OpenAICompatibleModel("m", server.base_url, retry_base_wait=0.01)
    try:
        model.generate([{"role": "user", "content": "next?"}], reply_lines=lines)
    finally:
        model.close()
    return server.requests[0]


def test_a_llama_cpp_server_is_sent_a_grammar_of_the_allowed_lines() -> None:
    with FakeOpenAIServer(slots=2) as srv:
        body = _first_body(srv, ACTIONS)
    assert body["grammar"] == gbnf(reply_lines(ACTIONS)) and "guided_regex" not in body


def test_llama_cpp_pythons_server_is_sent_a_grammar_too() -> None:
    with FakeOpenAIServer(owned_by="me") as srv:
        assert "grammar" in _first_body(srv, ACTIONS)


def test_a_vllm_server_is_sent_a_regular_expression() -> None:
    with FakeOpenAIServer(owned_by="vllm") as srv:
        body = _first_body(srv, ACTIONS)
    assert body["guided_regex"] == regex(reply_lines(ACTIONS)) and "grammar" not in body


def test_a_server_that_does_not_say_what_it_is_gets_the_plain_request() -> None:
    with FakeOpenAIServer() as srv:
        body = _first_body(srv, ACTIONS)
    assert "grammar" not in body and "guided_regex" not in body


def test_a_free_text_request_carries_no_constraint() -> None:
    with FakeOpenAIServer(slots=1) as srv:
        body = _first_body(srv, None)
    assert "grammar" not in body


def test_the_grammar_quotes_every_alternative_literally() -> None:
    grammar = gbnf(reply_lines([["1: Yes", "1: No"], ['a "b" \\ c']]))
    assert grammar.splitlines() == ['root ::= line0 "\\n" line1', 'line0 ::= "1: Yes" | "1: No"',
                                    'line1 ::= "a \\"b\\" \\\\ c"']


def test_the_regular_expression_matches_exactly_the_allowed_replies() -> None:
    pattern = re.compile(regex(reply_lines([["1: Yes", "1: No"], ["2: Yes", "2: No"]])))
    assert pattern.fullmatch("1: No\n2: Yes")
    assert not pattern.fullmatch("1: Maybe\n2: Yes") and not pattern.fullmatch("1: Yes")


def test_a_line_with_no_alternative_is_refused() -> None:
    with pytest.raises(ValueError, match=r"reply_lines\[1\]"):
        reply_lines([["a"], []])


def test_free_text_requests_keep_the_cache_keys_they_had_before_constraints_existed() -> None:
    model = ScriptedModel(["x"])
    params = GenerationParams(temperature=0.5, max_tokens=9, stop=("\n",))
    old_body = {"temperature": 0.5, "max_tokens": 9, "stop": ("\n",), "top_logprobs": 0, "seed": None}
    assert model._key("generate", "p", params, 0) == request_key(
        model.identity(), "generate", {"prompt": "p", "params": old_body, "sample": 0})


def test_a_constrained_request_is_cached_apart_from_the_free_one() -> None:
    model: LanguageModel = ScriptedModel(["x"])
    free = model._key("generate", "p", GenerationParams(), 0)
    held = model._key("generate", "p", GenerationParams(reply_lines=reply_lines(ACTIONS)), 0)
    assert free != held


def test_config_names_how_the_server_constrains_replies() -> None:
    with FakeOpenAIServer(slots=1) as srv:
        model = OpenAICompatibleModel("m", srv.base_url)
        try:
            assert model.describe()["constrained_replies"] == "grammar (llama.cpp)"
        finally:
            model.close()


@pytest.mark.parametrize(("server_says", "batches"), [({"owned_by": "me"}, False), ({"slots": 2}, False),
                                                      ({}, True)])
def test_a_server_with_fixed_slots_is_known_to_answer_one_sample_per_request(server_says, batches) -> None:
    with FakeOpenAIServer(**server_says) as srv:
        model = OpenAICompatibleModel("m", srv.base_url)
        try:
            assert model.batches_samples is batches
        finally:
            model.close()
