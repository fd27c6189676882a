"""Calls inside ``recording_replies`` ask for log-probabilities and are kept; calls outside are as before."""

from __future__ import annotations

from lits.lm.base import recording_replies
from lits.lm.cache import ResponseCache
from lits.testing.scripted import ScriptedModel


def sure(prompt: str, reply: str) -> float:
    return -0.5


def test_calls_inside_ask_for_log_probabilities_and_their_replies_are_kept():
    model = ScriptedModel(["a", "b"], scorer=sure)
    with recording_replies() as replies:
        model.generate("q")
        model.generate("r")
    assert [(r.text, r.logprobs[0].logprob) for r in replies] == [("a", -0.5), ("b", -0.5)]
    assert [params.top_logprobs for _prompt, params in model.calls] == [1, 1]


def test_calls_outside_ask_for_no_log_probabilities():
    model = ScriptedModel(["a"], scorer=sure)
    with recording_replies():
        pass
    model.generate("q")
    assert model.calls[0][1].top_logprobs == 0


def test_a_reply_from_the_cache_is_kept_with_its_log_probabilities(tmp_path):
    model = ScriptedModel(["a"], scorer=sure)
    model.cache = ResponseCache(tmp_path / "cache.db")
    with recording_replies():
        model.generate("q")
    with recording_replies() as replies:
        model.generate("q")
    assert len(model.calls) == 1
    assert replies[0].logprobs is not None and replies[0].logprobs[0].logprob == -0.5
