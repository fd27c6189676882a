"""prm-classifier: a classifier PRM behind vLLM's Pooling API, against a loopback server that checks each
request against the documented schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from lits.lm.base import ModelError
from lits.lm.cache import ResponseCache
from lits.lm.openai_compat import OpenAICompatibleModel
from lits.runtime.observability import InferenceLog, collecting
from lits.registry import ComponentRegistry
from lits.testing import ScriptedModel
from tests.math.conftest import QUESTION, state_of
from lits.testing.servers.pooling import FakePoolingServer, request_problem
from lits.testing.servers.openai_compat import FakeOpenAIServer
from lits_math.prm_classifier import ClassifierPRM


def right_sums(steps: list[str]) -> list[float]:
    """A PRM that is sure of '3 + 4 = 7' and doubts everything else."""
    return [0.9 if "3 + 4 = 7" in step else 0.2 for step in steps]


@pytest.fixture
def pooling() -> Iterator[FakePoolingServer]:
    with FakePoolingServer(right_sums) as srv:
        yield srv


@pytest.fixture
def prm_model(pooling: FakePoolingServer) -> Iterator[OpenAICompatibleModel]:
    model = OpenAICompatibleModel("qwen-prm", pooling.base_url, max_attempts=2, retry_base_wait=0.0)
    yield model
    model.close()


def test_the_classifier_prm_is_registered_by_name() -> None:
    assert ComponentRegistry.get_reward_model("prm-classifier") is ClassifierPRM


def test_the_request_is_the_problem_then_each_step_followed_by_the_separator(prm_model, pooling) -> None:
    ClassifierPRM(base_model=prm_model, task_name="gsm8k").fast_reward(
        state_of("Tom starts with 3 apples."), "3 + 4 = 7", QUESTION
    )
    (body,) = pooling.requests
    assert request_problem(body) is None
    assert body["model"] == "qwen-prm" and body["task"] == "token_classify"
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant"]
    assert body["messages"][1]["content"] == QUESTION
    assert body["messages"][2]["content"] == "Tom starts with 3 apples.<extra_0>3 + 4 = 7<extra_0>"


def test_the_new_steps_score_is_the_positive_probability_at_its_separator(prm_model) -> None:
    prm = ClassifierPRM(base_model=prm_model, task_name="gsm8k")
    right, details = prm.fast_reward(state_of("Tom starts with 3 apples."), "3 + 4 = 7", QUESTION)
    wrong, _ = prm.fast_reward(state_of("Tom starts with 3 apples."), "3 + 4 = 8", QUESTION)
    assert (right, wrong) == (pytest.approx(0.9), pytest.approx(0.2))
    assert details["step_scores"] == [0.2, 0.9]


def test_the_text_form_sends_the_problem_and_steps_as_one_input_with_the_configured_separator() -> None:
    with FakePoolingServer(right_sums, separator=" ки") as srv:
        model = OpenAICompatibleModel("shepherd", srv.base_url)
        try:
            prm = ClassifierPRM(base_model=model, task_name="gsm8k", input_format="text", separator=" ки", task="")
            score, _ = prm.fast_reward(state_of(), "3 + 4 = 7", QUESTION)
        finally:
            model.close()
    (body,) = srv.requests
    assert request_problem(body) is None and "task" not in body
    assert body["input"] == f"{QUESTION}\n\n3 + 4 = 7 ки" and score == pytest.approx(0.9)


@pytest.mark.parametrize(
    "body, problem",
    [
        ({"model": "m"}, "give exactly one of input or messages"),
        ({"model": "m", "input": "x", "messages": [{"role": "user", "content": "x"}]}, "exactly one"),
        ({"model": "m", "input": "x", "prompt": "x"}, "unknown fields prompt"),
        ({"model": "m", "input": "x", "task": "encode"}, "task 'encode' is not one of"),
        ({"model": "m", "messages": [{"role": "user"}]}, "string role and content"),
        ({"model": "m", "input": 3}, "input must be"),
    ],
)
def test_the_pooling_server_refuses_a_malformed_request_with_400(pooling, body, problem) -> None:
    reply = httpx.post(pooling.base_url.removesuffix("/v1") + "/pooling", json=body)
    assert reply.status_code == 400 and problem in reply.json()["error"]["message"]
    assert problem in pooling.refused[-1][1]


def test_the_pooling_api_is_asked_at_the_servers_root_not_under_v1(pooling) -> None:
    assert httpx.post(pooling.base_url + "/pooling", json={"model": "m", "input": "x<extra_0>"}).status_code == 404


def test_a_server_error_is_retried_like_any_call(prm_model, pooling) -> None:
    pooling.fail_next(503)
    score, _ = ClassifierPRM(base_model=prm_model, task_name="gsm8k").fast_reward(state_of(), "3 + 4 = 7", QUESTION)
    assert score == pytest.approx(0.9) and len(pooling.requests) == 2


def test_a_reply_without_pooling_data_is_retried_then_one_line_naming_the_server(prm_model, pooling) -> None:
    pooling.garble_next(times=2)
    with pytest.raises(ModelError, match="returned no pooling data after 2 attempts") as caught:
        ClassifierPRM(base_model=prm_model, task_name="gsm8k").fast_reward(state_of(), "3 + 4 = 7", QUESTION)
    assert "\n" not in str(caught.value) and pooling.base_url.split("/v1")[0].split("//")[1] in str(caught.value)


def test_a_refused_request_is_one_line(prm_model, pooling) -> None:
    pooling.fail_next(400)
    with pytest.raises(ModelError, match="answered 400: injected failure 400") as caught:
        ClassifierPRM(base_model=prm_model, task_name="gsm8k").fast_reward(state_of(), "3 + 4 = 7", QUESTION)
    assert "\n" not in str(caught.value)


def test_a_reply_with_a_row_per_token_not_per_step_is_one_line_saying_so() -> None:
    with FakePoolingServer(lambda steps: [0.5] * (len(steps) + 3)) as srv:
        model = OpenAICompatibleModel("prm", srv.base_url)
        try:
            with pytest.raises(ModelError, match="returned 4 score rows for 1 steps; serve the PRM with STEP"):
                ClassifierPRM(base_model=model, task_name="gsm8k").fast_reward(state_of(), "3 + 4 = 7", QUESTION)
        finally:
            model.close()


def test_a_model_that_is_not_on_a_server_is_one_line_naming_the_flags() -> None:
    with pytest.raises(ModelError, match="prm-classifier needs a model on a pooling server.*--eval-base-url"):
        ClassifierPRM(base_model=ScriptedModel(["+"]), task_name="gsm8k").fast_reward(state_of(), "x", QUESTION)


def test_each_pooling_call_is_in_the_inference_log_with_its_prompt_tokens(prm_model) -> None:
    with collecting(InferenceLog()) as log:
        ClassifierPRM(base_model=prm_model, task_name="gsm8k").fast_reward(state_of(), "3 + 4 = 7", QUESTION)
    (record,) = [r for r in log.records if r.kind == "pooling"]
    assert record.model == "qwen-prm" and record.tokens_in > 0 and record.context.get("component") == "reward"


def test_a_repeated_request_is_served_from_the_response_cache(prm_model, pooling, tmp_path: Path) -> None:
    prm_model.use_cache(ResponseCache(tmp_path / "c.sqlite"))
    prm = ClassifierPRM(base_model=prm_model, task_name="gsm8k")
    with collecting(InferenceLog()) as log:
        first = prm.fast_reward(state_of("Tom starts with 3 apples."), "3 + 4 = 7", QUESTION)
        again = prm.fast_reward(state_of("Tom starts with 3 apples."), "3 + 4 = 7", QUESTION)
    assert first == again and len(pooling.requests) == 1
    assert [r.cached for r in log.records if r.kind == "pooling"] == [False, True]


def answers(prompt: str, body: dict[str, object]) -> str:
    """A chat policy that adds 3 and 4 and answers."""
    return "3 + 4 = 7, so he has 7 apples. The answer is 7."


def test_rest_with_the_classifier_prm_runs_end_to_end_and_every_request_follows_the_schema(
    pooling: FakePoolingServer, tmp_path: Path, run_lits
) -> None:
    with FakeOpenAIServer(responder=answers) as chat:
        done = run_lits(
            "search",
            "--dataset",
            "gsm8k",
            "--limit",
            "1",
            "--search-framework",
            "rest",
            "--reward",
            "prm-classifier",
            "--search-arg",
            "n_iterations=2",
            "--model",
            "policy",
            "--base-url",
            chat.base_url,
            "--eval-model",
            "qwen-prm",
            "--eval-base-url",
            pooling.base_url,
            "--save-dir",
            "run",
        )
    assert done.returncode == 0, done.stderr
    assert pooling.requests and pooling.refused == []
    assert all(request_problem(body) is None for body in pooling.requests)
    records = [json.loads(line) for line in (tmp_path / "run" / "inference.jsonl").read_text().splitlines()]
    pooled = [r for r in records if r["kind"] == "pooling"]
    assert len(pooled) == len(pooling.requests) and all(r["model"] == "qwen-prm" for r in pooled)
    assert all(r["context"].get("component") == "reward" for r in pooled)
    assert json.loads((tmp_path / "run" / "config.json").read_text())["reward"] == "prm-classifier"


def test_a_pooling_server_that_never_answers_with_data_stops_the_run_in_one_line_naming_it(
    pooling: FakePoolingServer, tmp_path: Path, run_lits
) -> None:
    pooling.garble_next(times=10**6)
    with FakeOpenAIServer(responder=answers) as chat:
        done = run_lits(
            "search",
            "--dataset",
            "gsm8k",
            "--limit",
            "1",
            "--search-framework",
            "rest",
            "--reward",
            "prm-classifier",
            "--model",
            "policy",
            "--base-url",
            chat.base_url,
            "--eval-model",
            "qwen-prm",
            "--eval-base-url",
            pooling.base_url,
            "--call-budget",
            "1",
            "--save-dir",
            "run",
        )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("lits: error:") and "returned no pooling data" in last and "Traceback" not in done.stderr
    assert pooling.base_url in last


def test_reward_args_set_the_classifiers_separator_and_form_from_the_command_line(tmp_path: Path, run_lits) -> None:
    with FakePoolingServer(right_sums, separator=" ки") as shepherd, FakeOpenAIServer(responder=answers) as chat:
        done = run_lits(
            "search",
            "--dataset",
            "gsm8k",
            "--limit",
            "1",
            "--search-framework",
            "rest",
            "--reward",
            "prm-classifier",
            "--reward-arg",
            "separator= ки",
            "--reward-arg",
            "input_format=text",
            "--reward-arg",
            "task=",
            "--search-arg",
            "n_iterations=1",
            "--model",
            "policy",
            "--base-url",
            chat.base_url,
            "--eval-model",
            "shepherd",
            "--eval-base-url",
            shepherd.base_url,
            "--save-dir",
            "run",
        )
    assert done.returncode == 0, done.stderr
    assert shepherd.requests and shepherd.refused == []
    assert all(body["input"].endswith(" ки") and "task" not in body for body in shepherd.requests)
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["reward_args"] == {"separator": " ки", "input_format": "text", "task": ""}


def test_an_unknown_reward_arg_is_one_line_naming_the_flag_and_the_close_setting(tmp_path: Path, run_lits) -> None:
    done = run_lits(
        "search",
        "--dataset",
        "gsm8k",
        "--limit",
        "1",
        "--search-framework",
        "rest",
        "--reward",
        "prm-classifier",
        "--reward-arg",
        "seperator=x",
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--dry-run",
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()[-1:]
    assert "--reward-arg seperator:" in line and "did you mean 'separator'" in line


@pytest.mark.parametrize(
    "setting, value, problem",
    [
        ("input_format", "json", "input_format must be messages or text"),
        ("separator", "", "separator must be the PRM's step token"),
        ("positive_label", -1, "positive_label must be a label index"),
    ],
)
def test_a_bad_setting_is_refused_when_the_reward_model_is_built(setting, value, problem) -> None:
    with pytest.raises(ValueError, match=problem):
        ClassifierPRM(task_name="gsm8k", **{setting: value})
