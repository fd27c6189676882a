"""GSM8K and MATH500 loaders: real files, own problems, arguments, errors and registration."""

from __future__ import annotations

import importlib.metadata
import json
import re
from pathlib import Path
from typing import Any, Callable

import pytest

from lits_math.answers import evaluate_gsm8k, evaluate_math, is_equivalent, read_gsm8k_answer
from lits_math.data import load_gsm8k, load_math500
from lits_math.problems import LATEX_PROBLEMS, WORD_PROBLEMS

Loader = Callable[..., list[dict[str, Any]]]
LOADERS = {"gsm8k": load_gsm8k, "math500": load_math500}
EVALUATORS = {"gsm8k": evaluate_gsm8k, "math500": evaluate_math}


@pytest.fixture(scope="module")
def math_dir(shared_data: Path) -> Path:
    return shared_data / "math"


def _write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# -- real files ---------------------------------------------------------------


def test_gsm8k_loads_every_real_problem_with_its_gold_number(math_dir: Path) -> None:
    data = load_gsm8k(path=str(math_dir / "gsm8k_test.jsonl"))
    assert len(data) == 1319
    assert data[0]["id"] == "gsm8k-0" and data[0]["answer"] == "18"
    assert data[0]["query"].startswith("Janet")
    assert all(re.fullmatch(r"-?\d+", example["answer"]) for example in data)


def test_math500_loads_every_real_problem_with_its_latex_answer(math_dir: Path) -> None:
    data = load_math500(path=str(math_dir / "math500.jsonl"))
    assert len(data) == 500
    assert set(data[0]) == {"id", "query", "answer"}
    assert data[0]["id"] == "math500-0"
    assert data[0]["answer"] == r"\left( 3, \frac{\pi}{2} \right)"
    assert data[0]["query"].startswith("Convert the point $(0,3)$")


@pytest.mark.parametrize("name, size", [("gsm8k", 1319), ("math500", 500)])
def test_a_directory_path_finds_the_usual_file_name(math_dir: Path, name: str, size: int) -> None:
    assert len(LOADERS[name](path=str(math_dir))) == size


def test_offset_and_limit_slice_a_real_file_and_keep_file_positions_as_ids(math_dir: Path) -> None:
    data = load_math500(path=str(math_dir), offset=498, limit=5)
    assert [example["id"] for example in data] == ["math500-498", "math500-499"]


def test_math500_reads_prm800k_field_names_and_keeps_their_metadata(tmp_path: Path) -> None:
    record = {
        "problem": "What is $1+1$?",
        "solution": "It is $\\boxed{2}$.",
        "answer": "2",
        "subject": "Prealgebra",
        "level": 1,
        "unique_id": "test/prealgebra/1.json",
    }
    (example,) = load_math500(path=str(_write_jsonl(tmp_path / "prm.jsonl", [record])))
    assert example == {
        "id": "math500-0",
        "query": "What is $1+1$?",
        "answer": "2",
        "subject": "Prealgebra",
        "level": 1,
        "unique_id": "test/prealgebra/1.json",
    }


# -- the plugin's own problems ------------------------------------------------


def test_without_a_path_gsm8k_gives_the_plugins_word_problems() -> None:
    data = load_gsm8k()
    assert [(e["query"], e["answer"]) for e in data] == list(WORD_PROBLEMS)
    assert len({e["id"] for e in data}) == len(data)


def test_without_a_path_math500_gives_the_plugins_latex_problems() -> None:
    data = load_math500()
    assert [(e["query"], e["answer"], e["subject"]) for e in data] == list(LATEX_PROBLEMS)
    assert len({e["id"] for e in data}) == len(data)


@pytest.mark.parametrize("name", ["gsm8k", "math500"])
def test_own_answers_are_judged_correct_by_their_evaluate(name: str) -> None:
    evaluate = EVALUATORS[name]
    for example in LOADERS[name]():
        written = f"Working step by step...\nSo the answer is $\\boxed{{{example['answer']}}}$."
        assert evaluate(example, written)["solved"], example["id"]
        assert evaluate(example, example["answer"])["solved"], example["id"]


@pytest.mark.parametrize("name", ["gsm8k", "math500"])
def test_own_answers_are_distinct_so_a_wrong_one_fails(name: str) -> None:
    golds = [example["answer"] for example in LOADERS[name]()]
    clashes = [(a, b) for i, a in enumerate(golds) for b in golds[i + 1 :] if is_equivalent(a, b)]
    assert clashes == []


def test_own_word_problems_are_worded_so_the_last_number_is_not_the_answer() -> None:
    """Otherwise a model that repeats the question would be scored as right."""
    assert all(read_gsm8k_answer(q) != a for q, a in WORD_PROBLEMS)


@pytest.mark.parametrize("name", ["gsm8k", "math500"])
def test_offset_and_limit_accept_strings_from_the_command_line(name: str) -> None:
    data = LOADERS[name](offset="3", limit="2")
    assert [e["id"] for e in data] == [e["id"] for e in LOADERS[name]()[3:5]]


# -- errors -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gsm8k", "math500"])
def test_a_split_other_than_test_is_refused_naming_the_allowed_one(name: str) -> None:
    with pytest.raises(ValueError, match=rf"^{name} has only the split 'test', not 'train'$"):
        LOADERS[name](split="train")


@pytest.mark.parametrize("name", ["gsm8k", "math500"])
def test_unknown_arguments_are_refused_by_name(name: str) -> None:
    expected = f"unknown {name} dataset argument(s): every, shuffle (known: path, split, offset, limit)"
    with pytest.raises(ValueError) as info:
        LOADERS[name](shuffle=True, every=2)
    assert str(info.value) == expected


@pytest.mark.parametrize("bad", [{"offset": "-1"}, {"limit": "many"}, {"offset": 1.5}])
def test_offset_and_limit_must_be_non_negative_whole_numbers(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="offset|limit"):
        load_gsm8k(**bad)


@pytest.mark.parametrize("name", ["gsm8k", "math500"])
def test_a_missing_file_is_reported_with_its_path(tmp_path: Path, name: str) -> None:
    missing = tmp_path / "nowhere.jsonl"
    with pytest.raises(FileNotFoundError, match=re.escape(str(missing))):
        LOADERS[name](path=str(missing))


@pytest.mark.parametrize(
    "name, bad_line",
    [
        ("gsm8k", "{not json"),
        ("gsm8k", json.dumps({"question": "q", "answer": "no marks here"})),
        ("gsm8k", json.dumps(["a", "list"])),
        ("math500", json.dumps({"problem": "no answer field"})),
    ],
)
def test_a_malformed_line_is_reported_with_file_and_line_number(tmp_path: Path, name: str, bad_line: str) -> None:
    good = {"question": "q", "answer": "#### 1"}
    if name == "math500":
        good = {"problem": "p", "answer": "1"}
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + bad_line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 3: ")):
        LOADERS[name](path=str(path))


# -- registration -------------------------------------------------------------


def test_the_plugin_is_installed_as_a_lits_entry_point() -> None:
    values = {ep.value for ep in importlib.metadata.entry_points(group="lits.plugins")}
    assert "lits_math" in values


@pytest.mark.parametrize("name, evaluate", [("gsm8k", evaluate_gsm8k), ("math500", evaluate_math)])
def test_both_datasets_are_registered_as_language_grounded_with_their_judges(
    name: str, evaluate: Callable[..., dict[str, Any]]
) -> None:
    from lits.plugin_host.plugins import ensure_plugins_loaded
    from lits.registry import get_registration, infer_task_type, load_dataset

    ensure_plugins_loaded()
    assert infer_task_type(name) == "language_grounded"
    meta = get_registration("dataset", name).meta
    assert meta["evaluate"] is evaluate
    assert meta["equivalent"] is is_equivalent
    assert meta["extract_answer"]("so \\boxed{7}") == "7"
    assert load_dataset(name, limit="1") == LOADERS[name]()[:1]
