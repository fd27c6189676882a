"""Reading a continuation's log-likelihood from a reply generated under a grammar (llama-server's shape)."""

from __future__ import annotations

from typing import Any

import pytest

from lits.lm.server.forced_scoring import forced_body, forced_logprob


def reply(*tokens: tuple[str, float, list[int]]) -> dict[str, Any]:
    text = b"".join(bytes(b) for _, _, b in tokens).decode("utf-8", "replace")
    return {
        "choices": [
            {
                "text": text,
                "logprobs": {
                    "content": [{"token": t, "logprob": lp, "bytes": b, "top_logprobs": []} for t, lp, b in tokens]
                },
            }
        ]
    }


def test_the_end_of_generation_token_the_grammar_forces_last_is_not_counted() -> None:
    data = reply((" Par", -0.25, list(b" Par")), ("is", -0.5, list(b"is")), ("", -3.0, []))
    assert forced_logprob(data, " Paris") == pytest.approx(-0.75)


def test_a_character_split_over_two_tokens_is_joined_by_its_bytes() -> None:
    e_acute = "é".encode("utf-8")
    data = reply((" caf", -1.0, list(b" caf")), ("\ufffd", -0.5, [e_acute[0]]), ("\ufffd", -0.25, [e_acute[1]]))
    assert forced_logprob(data, " café") == pytest.approx(-1.75)


def test_a_reply_that_strays_from_the_continuation_scores_nothing() -> None:
    assert forced_logprob(reply((" Rome", -0.1, list(b" Rome"))), " Paris") is None


def test_the_request_admits_only_the_continuation_and_asks_its_log_probabilities() -> None:
    body = forced_body("m", "The capital of France is", " Paris")
    assert body["grammar"] == 'root ::= line0\nline0 ::= " Paris"\n' and body["logprobs"] == 1
    assert "echo" not in body and body["temperature"] == 0.0
