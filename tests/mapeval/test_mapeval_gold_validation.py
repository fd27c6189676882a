"""A MapEval question file with a broken gold answer or a missing field fails at load, before any model call."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lits.testing.servers.openai_compat import FakeOpenAIServer
from lits_mapeval.dataset import load_mapeval_sql

GOOD: dict[str, Any] = {
    "id": 7,
    "question": "Which cafe is closest?",
    "classification": "nearby",
    "context": "",
    "answer": {"type": "mcq", "options": ["A", "B", "C", "D"], "correct": 2},
}


def _with(change: dict[str, Any], drop: str = "") -> dict[str, Any]:
    item = copy.deepcopy(GOOD)
    item["answer"].update(change.pop("answer", {}))
    item.update(change)
    if drop:
        *path, last = drop.split(".")
        target = item
        for key in path:
            target = target[key]
        del target[last]
    return item


@pytest.fixture
def question_file(tmp_path: Path):
    """Writes [GOOD, bad] to a file and returns its path."""

    def write(bad: dict[str, Any]) -> Path:
        path = tmp_path / "questions.json"
        path.write_text(json.dumps([GOOD, bad]), encoding="utf-8")
        return path

    return write


BROKEN = {
    "gold_past_the_last_option": (
        _with({"answer": {"correct": 4}}),
        "answer.correct = 4 is not an option index (0..3)",
    ),
    "gold_below_minus_one": (_with({"answer": {"correct": -2}}), "answer.correct = -2 is not an option index"),
    "gold_as_text": (_with({"answer": {"correct": "B"}}), "answer.correct = 'B' is not an integer"),
    "gold_as_boolean": (_with({"answer": {"correct": True}}), "answer.correct = True is not an integer"),
    "gold_missing": (_with({}, drop="answer.correct"), "has no gold answer 'answer.correct'"),
    "options_missing": (_with({}, drop="answer.options"), "has no 'answer.options'"),
    "options_empty": (_with({"answer": {"options": []}}), "has no 'answer.options'"),
    "option_not_text": (
        _with({"answer": {"options": ["A", {"x": 1}]}}),
        "answer.options[1] = {'x': 1} is not an option",
    ),
    "question_missing": (_with({}, drop="question"), "has no 'question' text"),
    "question_blank": (_with({"question": "  "}), "has no 'question' text"),
    "answer_missing": (_with({}, drop="answer"), "has no 'answer' object"),
    "id_missing": (_with({}, drop="id"), "has no 'id'"),
    "not_an_object": (["a", "list"], "is not a JSON object"),
}


@pytest.mark.parametrize("bad, problem", list(BROKEN.values()), ids=list(BROKEN))
def test_a_broken_item_fails_at_load_with_one_line_naming_the_file_the_example_and_the_problem(
    question_file, bad, problem
):
    path = question_file(bad)
    with pytest.raises(ValueError) as caught:
        load_mapeval_sql(path=str(path))
    message = str(caught.value)
    assert message.startswith(f"{path}: example 1") and problem in message and "\n" not in message, message


def test_unanswerable_gold_minus_one_is_accepted(question_file):
    examples = load_mapeval_sql(path=str(question_file(_with({"answer": {"correct": -1}}))))
    assert [e["answer"]["correct"] for e in examples] == [2, -1]


def test_a_gold_answer_that_is_not_an_option_stops_the_cli_before_any_model_call(tmp_path, question_file):
    path = question_file(_with({"answer": {"correct": 9}}))
    env = {**os.environ, "LITS_CACHE_DIR": str(tmp_path / "cache")}
    with FakeOpenAIServer() as srv:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "lits",
                "chain",
                "--dataset",
                "mapeval-sql",
                "--dataset-arg",
                f"path={path}",
                "--model",
                "m",
                "--base-url",
                srv.base_url,
                "--save-dir",
                str(tmp_path / "run"),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        calls = len(srv.requests)
    assert done.returncode != 0 and calls == 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert str(path) in lines[0] and "example 1 (id 7)" in lines[0] and "answer.correct = 9" in lines[0]
