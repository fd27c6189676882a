"""MapEval-SQL: the database builder, hostile SQL, gold answers, the loader and scoring."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from lits.tools import execute_tool_action
from lits_mapeval.database import build_database
from lits_mapeval.dataset import chosen_option, evaluate, load_mapeval_sql, to_example
from lits_mapeval.questions import generate_questions
from lits_mapeval.sql_tools import ReadOnlyDatabase, make_tools


@pytest.fixture
def city(tmp_path: Path) -> Path:
    return build_database(tmp_path / "city.sqlite", seed=3)


@pytest.fixture
def tools(city: Path):
    db = ReadOnlyDatabase(city, time_budget=0.5, max_rows=20)
    yield make_tools(db)
    db.close()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _query(tools, sql: str) -> str:
    return execute_tool_action(json.dumps({"tool": "query_sql", "args": {"query": sql}}), tools)


def test_the_builder_is_deterministic_for_a_seed(tmp_path):
    a = build_database(tmp_path / "a.sqlite", seed=5)
    b = build_database(tmp_path / "b.sqlite", seed=5)
    c = build_database(tmp_path / "c.sqlite", seed=6)
    assert _sha(a) == _sha(b) != _sha(c)


def test_the_database_has_the_mapeval_tables(tools):
    listed = execute_tool_action('{"tool": "list_tables", "args": {}}', tools)
    assert listed == "directions, distances, nearby, places"
    described = execute_tool_action('{"tool": "describe_table", "args": {"table": "places"}}', tools)
    assert "rating | REAL" in described and "opening_hours | TEXT" in described


HOSTILE = [
    "DELETE FROM places",
    "DROP TABLE places",
    "UPDATE places SET rating = 0",
    "INSERT INTO places (place_id, name, types, lat, lng) VALUES ('x', 'x', 'x', 0, 0)",
    "CREATE TABLE stolen (x)",
    "ATTACH DATABASE 'elsewhere.sqlite' AS other",
    "PRAGMA query_only = OFF",
    "PRAGMA writable_schema = ON",
    "PRAGMA journal_mode = DELETE",
    "SELECT load_extension('evil')",
    "VACUUM",
    "REINDEX",
    "SELECT 1; DROP TABLE places",
]


@pytest.mark.parametrize("sql", HOSTILE)
def test_hostile_sql_is_refused_and_leaves_the_database_byte_identical(city, tools, sql):
    before = _sha(city)
    observation = _query(tools, sql)
    assert observation.startswith(("SQL error", "Query stopped", "Tool query_sql failed")), observation
    assert _sha(city) == before


def test_a_recursive_query_without_end_is_stopped_by_the_time_budget(city, tools):
    before = _sha(city)
    sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    assert _query(tools, sql) == "Query stopped: it ran longer than the 0.5 s budget"
    assert _sha(city) == before


def test_a_huge_result_is_capped_with_a_note(tools):
    observation = _query(tools, "SELECT * FROM distances")
    assert observation.endswith("[only the first 20 rows are shown]")
    assert len(observation.splitlines()) == 22


def test_reads_still_work_after_hostile_attempts(tools):
    _query(tools, "PRAGMA query_only = OFF")
    assert _query(tools, "SELECT count(*) FROM places") == "count(*)\n24"


def test_questions_cover_every_class_and_are_deterministic(city):
    first = generate_questions(city, seed=3, per_class=2)
    assert first == generate_questions(city, seed=3, per_class=2)
    assert {q["classification"] for q in first} == {"poi", "nearby", "routing", "trip", "unanswerable"}


def test_gold_answers_agree_with_an_independent_computation(city):
    conn = sqlite3.connect(city)
    for q in generate_questions(city, seed=3, per_class=3):
        answer = q["answer"]
        if q["classification"] == "unanswerable":
            assert answer["correct"] == -1
            continue
        right = answer["options"][answer["correct"]]
        if q["classification"] == "poi":
            name = q["question"].removeprefix("What is the rating of ").removesuffix("?")
            (rating,) = conn.execute("SELECT rating FROM places WHERE name = ?", (name,)).fetchone()
            assert right == f"{rating:.1f}"
        elif q["classification"] == "routing":
            start, rest = q["question"].removeprefix("How many minutes does it take to go from ").split(" to ", 1)
            end, mode = rest.removesuffix("?").rsplit(" by ", 1)
            (secs,) = conn.execute(
                "SELECT d.duration_s FROM distances d JOIN places a ON a.place_id = d.origin_id "
                "JOIN places b ON b.place_id = d.destination_id WHERE a.name = ? AND b.name = ? AND d.mode = ?",
                (start, end, mode),
            ).fetchone()
            assert right == f"{round(secs / 60)} min"
        assert answer["options"].count(right) == 1


def test_the_loader_reads_the_public_mapeval_file_format(shared_data):
    examples = load_mapeval_sql(path=str(shared_data / "mapeval" / "mapeval_api_dataset.json"))
    assert len(examples) == 300
    assert "Options:\n1. " in examples[0]["query"]
    assert {e["answer"]["correct"] for e in examples} >= {-1, 0}


def test_loader_errors_are_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.json"):
        load_mapeval_sql(path=str(tmp_path / "nope.json"))
    with pytest.raises(ValueError, match="colour"):
        load_mapeval_sql(colour="red")
    with pytest.raises(FileNotFoundError, match="SQLite database not found: .*missing.sqlite"):
        load_mapeval_sql(db=str(tmp_path / "missing.sqlite"))
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(ValueError, match="broken.json is not a MapEval JSON file"):
        load_mapeval_sql(path=str(tmp_path / "broken.json"))
    with pytest.raises(ValueError, match="needs a question"):
        to_example({"id": 1, "question": "q", "answer": {"options": []}})


@pytest.mark.parametrize("reply, index", [("2", 1), ("Option 3", 2), ("0", -1), ("It is unanswerable", -1), ("", None)])
def test_answers_map_to_option_indices(reply, index):
    assert chosen_option(reply) == index


def test_scoring_follows_mapeval_including_unanswerable():
    answerable = {"answer": {"options": ["a", "b"], "correct": 1}}
    unanswerable = {"answer": {"options": ["a", "b"], "correct": -1}}
    assert evaluate(answerable, "2")["solved"] and not evaluate(answerable, "0")["solved"]
    assert evaluate(unanswerable, "0")["solved"] and not evaluate(unanswerable, "1")["solved"]
