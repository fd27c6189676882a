"""Replies held to known lines: each server is sent the constraint it understands, and only that."""

from __future__ import annotations

import re

import pytest

from lits.lm.base import GenerationParams, LanguageModel
from lits.lm.cache import request_key
from lits.lm.server.constraints import gbnf, regex, reply_lines
from lits.lm.openai_compat import OpenAICompatibleModel, ServerRefused
from lits.testing import ScriptedModel
from lits.testing.servers.openai_compat import FakeOpenAIServer

ACTIONS = [["pick up the red block", 'say "hi"', "put down the blue block"]]
VERDICTS = [["1: Yes", "1: No"], ["2: Yes", "2: No"]]


def _first_body(
    server: FakeOpenAIServer, lines: list[list[str]] | None, constraints: str | None = None
) -> dict[str, object]:
    model = OpenAICompatibleModel("m", server.base_url, retry_base_wait=0.01, constraints=constraints)
    try:
        model.generate([{"role": "user", "content": "next?"}], reply_lines=lines)
    finally:
        model.close()
    return server.requests[0]


def test_a_llama_cpp_server_is_sent_a_grammar_of_the_allowed_lines() -> None:
    with FakeOpenAIServer(slots=2) as srv:
        body = _first_body(srv, ACTIONS)
    assert body["grammar"] == gbnf(reply_lines(ACTIONS)) and "structured_outputs" not in body


def test_llama_cpp_pythons_server_is_sent_a_grammar_too() -> None:
    with FakeOpenAIServer(owned_by="me") as srv:
        assert "grammar" in _first_body(srv, ACTIONS)


def test_a_vllm_server_is_sent_a_structured_outputs_choice_for_one_line() -> None:
    with FakeOpenAIServer(vllm="0.12.0") as srv:
        body = _first_body(srv, ACTIONS)
    assert body["structured_outputs"] == {"choice": ACTIONS[0]}
    assert "grammar" not in body and not any(field.startswith("guided_") for field in body)


def test_a_vllm_server_is_sent_a_structured_outputs_regex_for_several_lines() -> None:
    with FakeOpenAIServer(vllm="0.12.0") as srv:
        body = _first_body(srv, VERDICTS)
    assert body["structured_outputs"] == {"regex": regex(reply_lines(VERDICTS))}


def test_a_vllm_that_does_not_say_its_version_is_taken_for_a_current_one() -> None:
    with FakeOpenAIServer(owned_by="vllm") as srv:
        assert "structured_outputs" in _first_body(srv, ACTIONS)


def test_a_vllm_before_0_10_2_is_sent_the_guided_fields_it_knows() -> None:
    with FakeOpenAIServer(vllm="0.10.1") as srv:
        assert _first_body(srv, ACTIONS)["guided_choice"] == ACTIONS[0]
    with FakeOpenAIServer(vllm="0.10.1") as srv:
        body = _first_body(srv, VERDICTS)
    assert body["guided_regex"] == regex(reply_lines(VERDICTS)) and "structured_outputs" not in body


@pytest.mark.parametrize(
    ("setting", "field"),
    [("structured_outputs", "structured_outputs"), ("guided", "guided_choice"), ("gbnf", "grammar")],
)
def test_the_constraints_setting_wins_over_what_the_server_says(setting: str, field: str) -> None:
    with FakeOpenAIServer(slots=1) as srv:
        assert field in _first_body(srv, ACTIONS, constraints=setting)


def test_constraints_none_sends_the_plain_request_to_any_server() -> None:
    with FakeOpenAIServer(slots=1) as srv:
        body = _first_body(srv, ACTIONS, constraints="none")
    assert not set(body) & {"grammar", "structured_outputs", "guided_choice", "guided_regex"}


def test_an_unknown_constraints_setting_is_one_line() -> None:
    with pytest.raises(ValueError, match="constraints must be one of auto, gbnf, structured_outputs, guided, none"):
        OpenAICompatibleModel("m", "http://127.0.0.1:9/v1", constraints="xgrammar")


@pytest.mark.parametrize(
    ("version", "setting", "field", "instead"),
    [
        ("0.10.1", "structured_outputs", "structured_outputs", "constraints=guided"),
        ("0.12.0", "guided", "guided_choice", "constraints=structured_outputs"),
    ],
)
def test_a_server_refusing_the_constraint_field_is_told_in_one_line_naming_it(version, setting, field, instead) -> None:
    with FakeOpenAIServer(vllm=version, refuse_unknown=True) as srv:
        with pytest.raises(ServerRefused) as refused:
            _first_body(srv, ACTIONS, constraints=setting)
    message = str(refused.value)
    assert "\n" not in message and "answered 400" in message
    assert f"refused `{field}`" in message and instead in message and "--free-replies" in message


def test_a_refusal_that_names_no_constraint_field_is_left_as_it_was() -> None:
    with FakeOpenAIServer(vllm="0.12.0") as srv:
        srv.fail_next(400, message="prompt too long")
        with pytest.raises(ServerRefused) as refused:
            _first_body(srv, ACTIONS)
    assert str(refused.value).endswith("prompt too long")


def test_a_server_that_does_not_say_what_it_is_gets_the_plain_request() -> None:
    with FakeOpenAIServer() as srv:
        body = _first_body(srv, ACTIONS)
    assert not set(body) & {"grammar", "structured_outputs", "guided_choice", "guided_regex"}


def test_a_free_text_request_carries_no_constraint() -> None:
    with FakeOpenAIServer(slots=1) as srv:
        body = _first_body(srv, None)
    assert "grammar" not in body


def test_the_grammar_quotes_every_alternative_literally() -> None:
    grammar = gbnf(reply_lines([["1: Yes", "1: No"], ['a "b" \\ c']]))
    assert grammar.splitlines() == [
        'root ::= line0 "\\n" line1',
        'line0 ::= "1: Yes" | "1: No"',
        'line1 ::= "a \\"b\\" \\\\ c"',
    ]


def test_the_regular_expression_matches_exactly_the_allowed_replies() -> None:
    pattern = re.compile(regex(reply_lines([["1: Yes", "1: No"], ["2: Yes", "2: No"]])))
    assert pattern.fullmatch("1: No\n2: Yes")
    assert not pattern.fullmatch("1: Maybe\n2: Yes") and not pattern.fullmatch("1: Yes")


def test_the_regular_expression_escapes_regex_syntax_and_nothing_else() -> None:
    """Spaces and quotes stay as they are (an escaped space is not every regex engine's syntax)."""
    assert regex(reply_lines([['say "hi" now', "x.y (z)*"]])) == r'(say "hi" now|x\.y \(z\)\*)'


def test_a_line_with_no_alternative_is_refused() -> None:
    with pytest.raises(ValueError, match=r"reply_lines\[1\]"):
        reply_lines([["a"], []])


def test_free_text_requests_keep_the_cache_keys_they_had_before_constraints_existed() -> None:
    model = ScriptedModel(["x"])
    params = GenerationParams(temperature=0.5, max_tokens=9, stop=("\n",))
    old_body = {"temperature": 0.5, "max_tokens": 9, "stop": ("\n",), "top_logprobs": 0, "seed": None}
    assert model._key("generate", "p", params, 0) == request_key(
        model.identity(), "generate", {"prompt": "p", "params": old_body, "sample": 0}
    )


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


@pytest.mark.parametrize(("server_says", "batches"), [({"owned_by": "me"}, False), ({"slots": 2}, False), ({}, True)])
def test_a_server_with_fixed_slots_is_known_to_answer_one_sample_per_request(server_says, batches) -> None:
    with FakeOpenAIServer(**server_says) as srv:
        model = OpenAICompatibleModel("m", srv.base_url)
        try:
            assert model.batches_samples is batches
        finally:
            model.close()
