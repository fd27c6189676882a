"""The mapeval-sql policy prompt and tool context: picked up by dataset name, and true to the database."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lits.components.factory import create_components
from lits.components.policy.tool_use import ToolUsePolicy
from lits.structures.tool_use import ToolUseState
from lits.testing import ScriptedModel
from lits.tools import execute_tool_action
from lits_mapeval.database import build_database
from lits_mapeval.dataset import tool_context
from lits_mapeval.prompts import EXAMPLE
from lits_mapeval.sql_tools import ReadOnlyDatabase, make_tools


@pytest.fixture
def database(tmp_path: Path):
    db = ReadOnlyDatabase(build_database(tmp_path / "city.sqlite", seed=1))
    yield db
    db.close()


def test_the_mapeval_prompt_is_picked_up_for_the_dataset_name(tmp_path, monkeypatch):
    monkeypatch.setenv("LITS_CACHE_DIR", str(tmp_path))
    policy = create_components("mapeval-sql", ScriptedModel()).policy
    prompt = policy.completion_prompt(ToolUseState(), "What is the rating of Oak Park?")
    assert f"{EXAMPLE}\n\nQuestion: What is the rating of Oak Park?\nThought:" in prompt
    assert "number of the right option" in prompt


def test_other_tool_use_datasets_do_not_get_the_mapeval_example():
    prompt = ToolUsePolicy(base_model=ScriptedModel(), task_name="toy_calc").completion_prompt(ToolUseState(), "q")
    assert "Willow Market" not in prompt


def test_the_worked_example_parses_into_valid_tool_calls_and_an_option_number(database):
    actions = [json.loads(a) for a in re.findall(r"^Action: (.*)$", EXAMPLE, re.M)]
    assert [a["tool"] for a in actions] == ["list_tables", "query_sql"]
    tools = make_tools(database)
    listed = execute_tool_action(json.dumps(actions[0]), tools)
    assert f"Observation: {listed}\n" in EXAMPLE  # the example shows the real tool output
    queried = execute_tool_action(json.dumps(actions[1]), tools)
    assert queried == "user_ratings_total"  # valid SQL on the real schema; the example's place is not in the city
    answer = re.search(r"^Answer: (.*)$", EXAMPLE, re.M)
    assert answer is not None and answer.group(1) == "2"


def test_the_tool_context_names_every_table_and_column(database):
    context = tool_context(database)
    for table in database.tables():
        assert f"{table}({', '.join(database.columns(table))})" in context
    assert "user_ratings_total" in context and "duration_s is in seconds" in context
