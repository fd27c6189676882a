"""The math plugin's reward models: a logprob PRM, a generative verifier and self-consistency."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterator

import pytest

from lits.components import parsing
from lits.lm.base import Completion, ModelError, TokenLogprob
from lits.lm.openai_compat import OpenAICompatibleModel
from lits.registry import ComponentRegistry
from lits.testing import ScriptedModel
from tests.math.conftest import QUESTION, state_of
from lits.testing.servers.openai_compat import FakeOpenAIServer
from lits_math.prm import ConsistencyPRM, LogprobPRM, VerifierPRM, label_probability, step_verdicts


def grader(prompt: str, body: dict[str, Any]) -> str:
    """A chat judge that labels '3 + 4 = 7' right and anything else wrong."""
    graded = prompt.rsplit("to grade:", 1)[-1]
    return "+" if "3 + 4 = 7" in graded else "-"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=grader) as srv:
        yield srv


@pytest.fixture
def judge(server: FakeOpenAIServer) -> Iterator[OpenAICompatibleModel]:
    model = OpenAICompatibleModel("judge", server.base_url)
    yield model
    model.close()


@pytest.mark.parametrize(
    "name, cls", [("prm-logprob", LogprobPRM), ("prm-verifier", VerifierPRM), ("prm-consistency", ConsistencyPRM)]
)
def test_each_reward_model_is_registered_by_name(name: str, cls: type) -> None:
    assert ComponentRegistry.get_reward_model(name) is cls


def test_the_label_probability_is_read_from_the_first_tokens_top_logprobs() -> None:
    reply = Completion(
        "+", logprobs=[TokenLogprob("+", math.log(0.6), {"+": math.log(0.6), "-": math.log(0.2), " +": math.log(0.1)})]
    )
    assert label_probability(reply) == pytest.approx(0.7 / 0.9)


def test_the_logprob_prm_asks_for_one_token_at_temperature_zero_with_logprobs(judge, server) -> None:
    prm = LogprobPRM(base_model=judge, task_name="gsm8k")
    right, _ = prm.fast_reward(state_of("Tom starts with 3 apples."), "3 + 4 = 7", QUESTION)
    wrong, _ = prm.fast_reward(state_of("Tom starts with 3 apples."), "3 + 4 = 8", QUESTION)
    assert (right, wrong) == (1.0, 0.0)
    body = server.requests[-1]
    assert body["temperature"] == 0.0 and body["max_tokens"] == 1 and body["logprobs"] and body["top_logprobs"] >= 5


def test_the_logprob_prm_scores_the_same_step_the_same_every_time(judge) -> None:
    prm = LogprobPRM(base_model=judge, task_name="gsm8k")
    scores = {prm.fast_reward(state_of(), "3 + 4 = 7", QUESTION)[0] for _ in range(3)}
    assert len(scores) == 1


def test_the_logprob_prm_scores_by_likelihood_where_the_backend_scores_text() -> None:
    model = ScriptedModel(scorer=lambda prompt, continuation: -0.2 if continuation == " +" else -1.6)
    score, details = LogprobPRM(base_model=model, task_name="gsm8k").fast_reward(state_of(), "3 + 4 = 7", QUESTION)
    assert details["route"] == "loglikelihood" and score == pytest.approx(1 / (1 + math.exp(-1.4)))


def _scored(reply: str) -> tuple[float, dict[str, object], dict[str, int]]:
    """The logprob PRM's score and details when a chat server replies ``reply`` (its only likely first token),
    and the parse counts the PRM left."""
    parsing.forget(None)
    with FakeOpenAIServer(responder=lambda prompt, body: reply) as srv:
        model = OpenAICompatibleModel("judge", srv.base_url)
        try:
            score, details = LogprobPRM(base_model=model, task_name="gsm8k").fast_reward(
                state_of(), "3 + 4 = 7", QUESTION
            )
        finally:
            model.close()
    return score, details, parsing.total(parsing.take(None))


def test_the_logprob_prms_replies_are_in_the_parse_count() -> None:
    score, _, counts = _scored("+")
    assert score == 1.0 and (counts["replies"], counts["unparseable"]) == (1, 0)


def test_a_logprob_reply_with_neither_label_is_counted_and_flagged_not_scored_zero() -> None:
    # Neither "+" nor "-" among the first token's likely ones scored 0.0 silently, as if the step were wrong.
    score, details, counts = _scored("Yes")
    assert score == 0.5 and details["parsed"] is False
    assert (counts["replies"], counts["unparseable"], counts["fallbacks"]) == (1, 1, 1)


def test_a_server_without_logprobs_is_a_one_line_error_naming_it() -> None:
    with pytest.raises(ModelError, match="prm-logprob needs token log-probabilities, but scripted returned none"):
        LogprobPRM(base_model=ScriptedModel(["+"], chat_native=True), task_name="gsm8k").fast_reward(
            state_of(), "3 + 4 = 7", QUESTION
        )


def test_step_verdicts_read_each_steps_last_verdict() -> None:
    critique = "Step 1 adds.\nStep 1: correct\nStep 2: **incorrect** (4 + 3 is 7)\nStep 2: Incorrect"
    assert step_verdicts(critique) == {1: True, 2: False}


def test_the_verifier_scores_the_new_steps_verdict() -> None:
    model = ScriptedModel(["The first step restates; the second adds wrongly.\nStep 1: correct\nStep 2: incorrect"])
    score, details = VerifierPRM(base_model=model, task_name="gsm8k").fast_reward(
        state_of("Tom starts with 3 apples."), "3 + 4 = 8", QUESTION
    )
    assert (score, details["verdict"]) == (0.0, False)


def test_a_critique_without_a_verdict_for_the_step_is_no_opinion() -> None:
    model = ScriptedModel(["Looks fine to me."])
    score, details = VerifierPRM(base_model=model, task_name="gsm8k").fast_reward(state_of(), "3 + 4 = 7", QUESTION)
    assert score == 0.5 and details["parsed"] is False


def test_consistency_scores_the_share_of_finishes_that_agree_with_the_majority() -> None:
    finishes = ["So 7 in all. The answer is 7.", "The answer is 7.", "The answer is 8.", "The answer is 7."]
    model = ScriptedModel(lambda prompt, params, index: finishes[index])
    score, details = ConsistencyPRM(base_model=model, task_name="gsm8k").fast_reward(state_of(), "3 + 4 = 7", QUESTION)
    assert (score, details["answer"], details["agree"]) == (0.75, "7", 3)


def test_rest_with_the_logprob_prm_runs_from_the_cli(server: FakeOpenAIServer, tmp_path: Path, run_lits) -> None:
    done = run_lits(
        "search",
        "--dataset",
        "gsm8k",
        "--limit",
        "1",
        "--search-framework",
        "rest",
        "--reward",
        "prm-logprob",
        "--search-arg",
        "n_iterations=2",
        "--model",
        "m",
        "--base-url",
        server.base_url,
        "--save-dir",
        "run",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "run" / "config.json").read_text())["reward"] == "prm-logprob"
    records = [json.loads(line) for line in (tmp_path / "run" / "inference.jsonl").read_text().splitlines()]
    assert any(r["context"].get("component") == "reward" for r in records)
