"""Unparseable model replies are counted per instance and shown, never hidden behind fallbacks."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lits.components import parsing
from lits.components.policy.concat import ConcatPolicy
from lits.components.policy.env_grounded import EnvGroundedPolicy
from lits.components.reward.judging import yes_probability
from lits.runtime.observability import call_context
from lits.structures.env_grounded import EnvState
from lits.structures.language_grounded import ThoughtState
from lits.testing import ScriptedModel
from lits.testing.servers.openai_compat import FakeOpenAIServer

VALID = ["move left", "move right", "wait"]
USER = {"state": "Now: {env_state}\nValid actions:\n{actions}\nNext action:"}


def _policy(model: ScriptedModel) -> EnvGroundedPolicy:
    return EnvGroundedPolicy(
        model,
        "line",
        usr_prompt_spec=USER,
        task_prompt_spec="Move on a line.",
        generate_all_actions=lambda state: list(VALID),
        n_actions=1,
        strategy="generate",
        max_attempts=1,
    )


def _actions(policy: EnvGroundedPolicy, instance: int) -> list[str]:
    with call_context(instance=instance, component="policy"):
        return [str(s.action) for s in policy.get_actions(EnvState(init_state="0"), query="reach 2")]


def test_an_unparseable_reply_and_the_fallback_it_causes_are_counted():
    _actions(_policy(ScriptedModel(["I think we should probably go somewhere."])), 101)
    assert parsing.take(101) == {"policy": {"replies": 1, "unparseable": 1, "reasks": 0, "fallbacks": 1}}


def test_a_malformed_reply_is_asked_again_once_with_its_error_and_the_new_reply_used():
    model = ScriptedModel(["Let me think: go right!", "move right"], chat_native=True)
    assert _actions(_policy(model), 102) == ["move right"]
    text = model.calls[-1][0]
    assert "is not one of the valid actions" in text and "Let me think: go right!" in text
    assert parsing.take(102) == {"policy": {"replies": 2, "unparseable": 1, "reasks": 1, "fallbacks": 0}}


def test_a_react_reply_with_broken_json_is_asked_again_once_with_its_error():
    from lits.components.policy.tool_use import ToolUsePolicy
    from lits.structures.tool_use import ToolUseState
    from lits.tools import CalculatorTool

    model = ScriptedModel(
        [
            'Thought: add\nAction: {"tool": "calculator", "args": {"expression": "1+1"}',
            'Thought: add\nAction: {"tool": "calculator", "args": {"expression": "1+1"}}',
        ],
        chat_native=True,
    )
    policy = ToolUsePolicy(base_model=model, tools=[CalculatorTool()], n_actions=1)
    with call_context(instance=106, component="policy"):
        [step] = policy.get_actions(ToolUseState(), query="1+1?")
    assert step.error is None and '"1+1"' in str(step.action)
    assert "Action is not a complete JSON object" in model.calls[-1][0]
    assert parsing.take(106) == {"policy": {"replies": 2, "unparseable": 1, "reasks": 1, "fallbacks": 0}}


def test_an_empty_chain_of_thought_step_is_asked_again_once():
    model = ScriptedModel(["", "Add 2 and 2 to get 4."], chat_native=True)
    with call_context(instance=107, component="policy"):
        [step] = ConcatPolicy(base_model=model, task_name="toy", n_actions=1).get_actions(ThoughtState(), query="2+2?")
    assert step.action == "Add 2 and 2 to get 4."
    assert parsing.take(107) == {"policy": {"replies": 2, "unparseable": 1, "reasks": 1, "fallbacks": 0}}


def test_a_completion_model_is_not_asked_again():
    model = ScriptedModel(["no idea"])
    _actions(_policy(model), 103)
    assert len(model.calls) == 1 and parsing.take(103)["policy"]["reasks"] == 0


def test_a_chat_policy_asks_for_one_line_with_a_stop_sequence():
    with FakeOpenAIServer(responder=lambda prompt, body: "move left") as server:
        from lits.lm.openai_compat import OpenAICompatibleModel

        model = OpenAICompatibleModel("m", server.base_url)
        try:
            _actions(_policy(model), 104)  # type: ignore[arg-type]
        finally:
            model.close()
    assert server.requests[0]["stop"] == ["\n"]
    parsing.take(104)


def test_a_judge_reply_that_is_neither_yes_nor_no_is_counted_and_its_half_is_a_fallback():
    with call_context(instance=105, component="reward"):
        assert yes_probability("Maybe, it depends.") == 0.5
        assert yes_probability("**Yes**, it is.") == 1.0
    assert parsing.take(105) == {"reward": {"replies": 2, "unparseable": 1, "reasks": 0, "fallbacks": 1}}


def test_an_empty_reasoning_step_is_counted_unparseable():
    policy = ConcatPolicy(ScriptedModel(["   "]), "gsm8k", n_actions=1)
    with call_context(instance=106, component="policy"):
        policy.get_actions(ThoughtState(), query="2 + 2?")
    assert parsing.take(106)["policy"]["unparseable"] == 1


@pytest.fixture
def garbled_run(tmp_path: Path) -> Path:
    """A BlocksWorld chain whose model never writes a valid action."""
    with FakeOpenAIServer(responder=lambda prompt, body: "Sure! Here is my plan: first think.") as server:
        env = {**os.environ, "LITS_CACHE_DIR": str(tmp_path / "cache")}
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "lits",
                "chain",
                "--dataset",
                "blocksworld",
                "--limit",
                "2",
                "--chain-arg",
                "max_steps=2",
                "--model",
                "m",
                "--base-url",
                server.base_url,
                "--save-dir",
                "run",
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    (tmp_path / "run" / "stdout.txt").write_text(done.stdout)
    return tmp_path / "run"


def _summary(run: Path) -> dict[str, Any]:
    return json.loads((run / "eval_results.json").read_text())


def test_each_instances_timings_hold_its_parse_counts(garbled_run: Path):
    counts = json.loads((garbled_run / "timings" / "0.json").read_text())["parse"]["policy"]
    assert counts["replies"] > 0 and counts["unparseable"] == counts["replies"] and counts["fallbacks"] > 0


def test_the_summary_eval_log_and_console_show_invalid_replies(garbled_run: Path):
    parse = _summary(garbled_run)["parse"]
    assert parse["invalid_rate"] == 1.0 and parse["by_component"]["policy"]["reasks"] > 0
    line = re.compile(
        rf"^invalid replies +100\.0% \({parse['unparseable']}/{parse['replies']}\), "
        rf"re-asks {parse['reasks']}",
        re.M,
    )
    assert line.search((garbled_run / "eval.log").read_text())
    assert line.search((garbled_run / "stdout.txt").read_text())


def test_the_viewer_shows_invalid_replies_for_the_run_and_each_instance(garbled_run: Path):
    from lits.view.model import build_report

    report = build_report(garbled_run)
    parse = _summary(garbled_run)["parse"]
    assert report["run"]["invalid_replies"].startswith(f"100.0% ({parse['unparseable']}/{parse['replies']})")
    assert all(
        row["invalid_replies"] and row["invalid_replies"].split("/")[0] == row["invalid_replies"].split("/")[1]
        for row in report["instances"]
    )


def _first_listed(prompt: str, body: dict[str, Any]) -> str:
    from lits.testing.scripted import listed_actions

    listed = listed_actions(prompt)
    return listed[0] if listed else "Yes"


def test_invalid_replies_say_when_the_server_held_replies_to_the_legal_ones(tmp_path: Path):
    # "invalid replies 0.0 %" read as the model's own rate; constrained to the legal actions it was not (10 %
    # with --free-replies).
    import lits

    with FakeOpenAIServer(responder=_first_listed, slots=2) as server:
        result = lits.chain("blocksworld", model="m", base_url=server.base_url, limit=1, save_dir=tmp_path / "r")
    assert result.summary["constrained_replies"] == "grammar (llama.cpp)"
    row = next(
        line for line in (tmp_path / "r" / "eval.log").read_text().splitlines() if line.startswith("invalid replies")
    )
    assert "held to the legal ones by the server's grammar (llama.cpp)" in row and "--free-replies" in row


def test_a_rate_the_domain_cannot_measure_is_unknown_not_zero(tmp_path: Path):
    # BlocksWorld cannot judge a proposal on its own: proposals_correct showed 0.0.
    import lits

    result = lits.search(
        "blocksworld", model="scripted", limit=1, search_args={"n_iterations": 2}, save_dir=tmp_path / "r"
    )
    assert result.summary["metrics"]["proposals_correct"] is None
    rows = dict(
        line.split(None, 1)
        for line in (tmp_path / "r" / "eval.log").read_text().splitlines()
        if line.startswith("proposals_correct")
    )
    assert rows == {"proposals_correct": "unknown"}


@pytest.mark.parametrize("command", ["chain", "search"])
def test_a_resumed_instance_counts_the_replies_parsed_before_the_resume(tmp_path: Path, command: str):
    # A resumed run counted only the replies made after the resume: its "invalid replies" shrank.
    import lits

    run = tmp_path / "run"
    with FakeOpenAIServer(responder=lambda prompt, body: "Sure! Here is my plan: first think.") as server:
        settings: dict[str, Any] = {"model": "m", "base_url": server.base_url, "limit": 2, "save_dir": run}
        if command == "chain":
            whole = lits.chain("blocksworld", chain_args={"max_steps": 2}, **settings).summary["parse"]
        else:
            whole = lits.search("blocksworld", search_args={"n_iterations": 2}, **settings).summary["parse"]
        (run / "results" / "0.json").unlink()  # as if killed after its last checkpoint, before its result
        (run / "timings" / "0.json").unlink()
        again = lits.resume(run).summary["parse"]
    assert whole["replies"] > 0 and again["replies"] == whole["replies"]
    assert again["unparseable"] == whole["unparseable"]
