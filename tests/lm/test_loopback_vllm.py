"""The loopback server, given a vLLM version, reads and applies constraint fields as that vLLM does."""

from __future__ import annotations

import httpx
import pytest

from lits.testing.servers.openai_compat import FakeOpenAIServer
from lits.testing.servers.vllm_rules import a_match


def _ask(server: FakeOpenAIServer, **fields: object) -> httpx.Response:
    body = {"model": "m", "messages": [{"role": "user", "content": "go"}], "n": 2, **fields}
    return httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=10)


def _texts(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [c["message"]["content"] for c in response.json()["choices"]]


def test_it_says_its_version_where_vllm_does() -> None:
    with FakeOpenAIServer(vllm="0.12.0") as srv:
        assert httpx.get(srv.base_url.removesuffix("/v1") + "/version").json() == {"version": "0.12.0"}
        assert httpx.get(f"{srv.base_url}/models").json()["data"][0]["owned_by"] == "vllm"


def test_a_reply_outside_the_choices_becomes_one_of_them() -> None:
    with FakeOpenAIServer(responder=lambda p, b: "something else", vllm="0.12.0") as srv:
        assert _texts(_ask(srv, structured_outputs={"choice": ["a", "b"]})) == ["a", "b"]


def test_a_reply_the_choices_allow_is_kept() -> None:
    with FakeOpenAIServer(responder=lambda p, b: "b", vllm="0.12.0") as srv:
        assert _texts(_ask(srv, structured_outputs={"choice": ["a", "b"]})) == ["b", "b"]


def test_a_reply_outside_the_regex_becomes_one_it_matches() -> None:
    with FakeOpenAIServer(responder=lambda p, b: "Sure!", vllm="0.12.0") as srv:
        texts = _texts(_ask(srv, structured_outputs={"regex": r"(1: Yes|1: No)\n(2: Yes|2: No)"}))
    assert texts == ["1: Yes\n2: Yes", "1: No\n2: No"]


def test_a_current_vllm_ignores_the_removed_guided_fields() -> None:
    """What vLLM 0.12 and later do: HTTP 200 and a reply nothing held."""
    with FakeOpenAIServer(responder=lambda p, b: "Sure!", vllm="0.12.0") as srv:
        assert _texts(_ask(srv, guided_choice=["a", "b"])) == ["Sure!", "Sure!"]


def test_refusing_unknown_fields_names_the_field() -> None:
    with FakeOpenAIServer(vllm="0.12.0", refuse_unknown=True) as srv:
        refused = _ask(srv, guided_regex="a|b")
    assert refused.status_code == 400 and "`guided_regex`" in refused.json()["error"]["message"]


def test_a_vllm_before_0_12_still_follows_the_guided_fields() -> None:
    with FakeOpenAIServer(responder=lambda p, b: "Sure!", vllm="0.11.2") as srv:
        assert _texts(_ask(srv, guided_choice=["a", "b"])) == ["a", "b"]


@pytest.mark.parametrize("held", [{"choice": ["a"], "regex": "a"}, {}, {"choice": "a"}, {"regex": "("}, "a"])
def test_a_malformed_structured_outputs_is_answered_400(held: object) -> None:
    with FakeOpenAIServer(vllm="0.12.0") as srv:
        assert _ask(srv, structured_outputs=held).status_code == 400


@pytest.mark.parametrize(
    "pattern", [r"(ab|cd)\n(e|f)", r"[x-z]+ \d", r"a?b*c{2}", r"(pick up the red block|say \"hi\")"]
)
def test_the_string_made_for_a_regex_matches_it(pattern: str) -> None:
    import re

    assert all(re.fullmatch(pattern, a_match(pattern, i)) for i in range(3))
