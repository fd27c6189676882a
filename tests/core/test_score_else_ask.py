"""The one judge reward models share: score by log-likelihood where the backend can, else ask yes/no."""

from __future__ import annotations

import math

import pytest

from lits.components.reward.judging import score_else_ask
from lits.lm.base import LoglikelihoodUnsupported
from lits.testing import ScriptedModel


class RefusesToScore(ScriptedModel):
    """Claims to score text, then refuses (as a server without echo does)."""

    def __init__(self, replies: list[str]) -> None:
        super().__init__(replies, scorer=lambda prompt, continuation: 0.0)

    def _loglikelihood(self, prompt: str, continuations: list[str]) -> tuple[list[float], int]:
        raise LoglikelihoodUnsupported("no echo")


def test_a_scored_answer_is_its_probability_per_unit() -> None:
    model = ScriptedModel(scorer=lambda prompt, continuation: -2.0)
    verdict = score_else_ask(model, "Correct?", answer=("Clue: fruit\nAnswer:", " APPLE"), per=5)
    assert verdict.route == "loglikelihood" and verdict.logprob == -2.0
    assert verdict.p_yes == pytest.approx(math.exp(-2.0 / 5))


def test_a_backend_that_refuses_to_score_is_asked_and_reported_unsupported() -> None:
    verdict = score_else_ask(RefusesToScore(["No"]), "Correct?", answer=("Clue: fruit\nAnswer:", " APPLE"))
    assert (verdict.p_yes, verdict.unsupported) == (0.0, True)


def test_a_judge_told_to_stop_scoring_asks_without_trying() -> None:
    model = ScriptedModel(["Yes"], scorer=lambda prompt, continuation: -9.0)
    verdict = score_else_ask(model, "Correct?", answer=("Clue: fruit\nAnswer:", " APPLE"), scoring=False)
    assert (verdict.p_yes, verdict.route) == (1.0, "logprobs")
    assert [params.max_tokens for _, params in model.calls] == [3]


def test_without_a_question_a_judge_that_cannot_score_has_no_opinion_and_calls_nothing() -> None:
    model = ScriptedModel(["Yes"])
    verdict = score_else_ask(model, None, answer=("Clue: fruit\nAnswer:", " APPLE"))
    assert (verdict.p_yes, verdict.route) == (0.0, "none") and model.calls == []


def test_a_label_judge_reads_its_own_labels_and_puts_the_system_text_first_in_plain_prompts() -> None:
    model = ScriptedModel(scorer=lambda prompt, continuation: 0.0 if continuation == " +" else -50.0)
    verdict = score_else_ask(model, "Grade:", system="You grade.", labels=("+", "-"), system_in_text=True)
    assert verdict.p_yes == pytest.approx(1.0) and model.calls[0][0] == "You grade.\n\nGrade:"
