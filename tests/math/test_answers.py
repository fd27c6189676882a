"""Answer extraction and math-verify equivalence, on hand-made cases and the real data sets."""

from __future__ import annotations

import itertools
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import pytest

from lits_math import answers
from lits_math.answers import (
    evaluate_gsm8k,
    evaluate_math,
    extract_boxed,
    extract_gsm8k_answer,
    read_gsm8k_answer,
    extract_math_answer,
    gsm8k_gold,
    is_equivalent,
)

EQUIVALENT = [
    ("0.5", r"\frac{1}{2}"),
    (r"\dfrac12", r"\frac{1}{2}"),
    ("x=3", "3"),
    (r"10\%", "10"),
    (r"\text{(B)}", "B"),
    ("[2, 5)", "[2,5)"),
    (r"3\sqrt{2}", r"\sqrt{18}"),
    (r"(3, \pi/2)", r"\left( 3, \frac{\pi}{2} \right)"),
    (r"\$18", "18"),
    ("18.00", "18"),
    ("1,000", "1000"),
    (r"32348", r"\$32,\!348"),
    ("1024", "2^{10}"),
    ("2i+1", "1+2i"),
    (r"\begin{pmatrix}-1&0\\0&-1\end{pmatrix}", r"\begin{pmatrix} -1 & 0 \\ 0 & -1 \end{pmatrix}"),
    ("Evelyn", r"\text{Evelyn}"),
    ("1, -2", "-2,1"),
]
NOT_EQUIVALENT = [
    ("2", "3"),
    (r"\frac{1}{3}", r"\frac{1}{2}"),
    ("[1,2]", "(1,2)"),
    ("q-p", "p - q"),
    ("6-9i", "6+9i"),
    ("3.0001", "3"),
    ("12", "1,2"),
    (r"2\sqrt{3}", r"3\sqrt{2}"),
]
COSTLY = [
    "10^{10^{10^{10}}}",
    "2^{2^{2^{2^{2^{100}}}}}",
    "(10^{10})!",
    "(x+y+1)^{200}",
    r"\int_0^{x} e^{t^2} \sin(t^{t}) dt",
    "{" * 300 + "1" + "}" * 300,
]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="module")
def math500_golds(shared_data: Path) -> list[str]:
    return [str(r["final_answer"]) for r in _jsonl(shared_data / "math" / "math500.jsonl")]


@pytest.fixture(scope="module")
def gsm8k_solutions(shared_data: Path) -> list[str]:
    return [str(r["answer"]) for r in _jsonl(shared_data / "math" / "gsm8k_test.jsonl")]


@pytest.fixture
def fresh_cache() -> Iterator[None]:
    """Verdicts are memoized; a test that changes how they are reached must not leak them."""
    answers._equivalent.cache_clear()
    yield
    answers._equivalent.cache_clear()


# -- extraction ---------------------------------------------------------------


def test_extract_boxed_takes_the_last_box() -> None:
    assert extract_boxed(r"first \boxed{3}, then \boxed{4}.") == "4"


@pytest.mark.parametrize("inner", [r"\frac{1}{2}", r"\{1,2\}", r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}"])
def test_extract_boxed_keeps_nested_and_escaped_braces(inner: str) -> None:
    assert extract_boxed(rf"so $\boxed{{{inner}}}$ holds") == inner


@pytest.mark.parametrize("text, expected", [(r"\fbox{x+1}", "x+1"), (r"is $\boxed 5$.", "5")])
def test_extract_boxed_reads_fbox_and_a_box_without_braces(text: str, expected: str) -> None:
    assert extract_boxed(text) == expected


def test_extract_boxed_skips_a_box_cut_off_by_the_token_limit() -> None:
    assert extract_boxed(r"\boxed{7} ... so \boxed{\frac{1") == "7"


@pytest.mark.parametrize("text", ["no box here", r"\boxed{}", "", r"\boxedx{3}"])
def test_extract_boxed_is_none_without_a_complete_nonempty_box(text: str) -> None:
    assert extract_boxed(text) is None


def test_extract_math_answer_prefers_the_box_to_the_stated_answer() -> None:
    assert extract_math_answer(r"The answer is 3. Actually \boxed{\frac{3}{4}}") == r"\frac{3}{4}"


def test_extract_math_answer_falls_back_to_the_stated_answer() -> None:
    assert extract_math_answer(r"Thus the final answer is $2\sqrt{3}$.") == r"2\sqrt{3}"


def test_extract_math_answer_is_none_without_box_or_statement() -> None:
    assert extract_math_answer("We get 5 and 6 along the way.") is None


@pytest.mark.parametrize(
    "text, expected",
    [
        (r"costs 3 each, so \boxed{1,250} in all", "1250"),
        ("3 + 4 = 7 dollars. The answer is 12 dollars.", "12"),
        ("The answer is: 3 * 6 = 18", "18"),
        ("So the final answer is 1,450,000.", "1450000"),
        ("#### -4", "-4"),
        ("**Answer:** 2.50 dollars", "2.50"),
        ("The answer is unclear, but we computed 42.", "42"),
    ],
)
def test_extract_gsm8k_answer_reads_the_box_then_the_stated_answer(text: str, expected: str) -> None:
    assert extract_gsm8k_answer(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("She has 1,000 marbles and gives away 250.", "250"),
        ("The total is 1,450,000.", "1450000"),
        ("The change is -4 degrees.", "-4"),
        ("Each costs 2.50 dollars.", "2.50"),
    ],
)
def test_reading_a_finished_solution_falls_back_to_its_last_number(text: str, expected: str) -> None:
    assert extract_gsm8k_answer(text) is None
    assert read_gsm8k_answer(text) == expected


def test_extract_gsm8k_answer_is_none_without_any_number() -> None:
    assert extract_gsm8k_answer("I cannot tell.") is None
    assert read_gsm8k_answer("I cannot tell.") is None


def test_gsm8k_gold_is_the_number_after_the_marks_without_commas() -> None:
    assert gsm8k_gold("He pays 1,000 + 450 = <<1000+450=1450>>1,450.\n#### 1,450") == "1450"


# -- equivalence --------------------------------------------------------------


@pytest.mark.parametrize("prediction, gold", EQUIVALENT)
def test_is_equivalent_accepts_mathematically_equal_answers(prediction: str, gold: str) -> None:
    assert is_equivalent(prediction, gold)


@pytest.mark.parametrize("prediction, gold", NOT_EQUIVALENT)
def test_is_equivalent_rejects_different_answers(prediction: str, gold: str) -> None:
    assert not is_equivalent(prediction, gold)


def test_is_equivalent_gives_the_same_verdicts_in_worker_threads(fresh_cache: None) -> None:
    pairs = EQUIVALENT + NOT_EQUIVALENT
    with ThreadPoolExecutor(max_workers=4) as pool:
        verdicts = list(pool.map(lambda pair: is_equivalent(*pair), pairs))
    assert verdicts == [True] * len(EQUIVALENT) + [False] * len(NOT_EQUIVALENT)


def test_is_equivalent_works_in_a_plain_thread(fresh_cache: None) -> None:
    verdict: list[bool] = []
    worker = threading.Thread(target=lambda: verdict.append(is_equivalent(r"\sqrt{8}", r"2\sqrt{2}")))
    worker.start()
    worker.join(30)
    assert verdict == [True]


@pytest.mark.parametrize(
    "junk",
    [None, "", "}{", r"\frac{", r"\boxed{", "$$", "\x00\x01", "a" * 5000, r"\frac" * 300, 17],
)
def test_is_equivalent_never_raises_on_junk(junk: Any) -> None:
    assert is_equivalent(junk, "17") is (junk == 17)
    assert is_equivalent("17", junk) is (junk == 17)


def test_is_equivalent_refuses_answers_that_would_keep_sympy_busy_for_hours(
    monkeypatch: pytest.MonkeyPatch, fresh_cache: None
) -> None:
    """Refused by the cost checks: sympy's comparison never starts, and no deadline has to cut it short."""
    parse, _verify = answers._math_verify_api()
    verified: list[object] = []

    def verify(*args: object, **kwargs: object) -> bool:
        verified.append(args)  # sympy would start comparing here
        return False

    monkeypatch.setattr(answers, "_math_verify_api", lambda: (parse, verify))
    monkeypatch.setattr(answers, "DEADLINE_SECONDS", 60.0)  # generous: only a parse that hangs would reach it
    verdicts = [is_equivalent(answer, "1") for answer in COSTLY]
    assert verdicts == [False] * len(COSTLY)
    assert verified == []


def test_a_comparison_past_the_deadline_counts_as_not_equivalent(
    monkeypatch: pytest.MonkeyPatch, fresh_cache: None
) -> None:
    released, finished = threading.Event(), threading.Event()

    def stuck(prediction: str, gold: str) -> bool:  # runs until the test lets it go
        released.wait(60)
        finished.set()
        return True

    monkeypatch.setattr(answers, "_math_verify", stuck)
    monkeypatch.setattr(answers, "DEADLINE_SECONDS", 0.2)
    assert not is_equivalent(r"\frac{7}{9}", r"\frac{14}{18}")
    assert not finished.is_set()  # the verdict came while the comparison was still running
    released.set()


# -- the real data sets -------------------------------------------------------


def test_every_math500_answer_boxed_by_a_model_is_extracted_back_and_solved(
    math500_golds: list[str],
) -> None:
    for gold in math500_golds:
        written = f"Step 1 ...\nso the answer is $\\boxed{{{gold}}}$."
        verdict = evaluate_math({"answer": gold}, written)
        assert verdict == {"solved": True, "extracted": gold}, gold


def test_math_verify_parses_and_accepts_every_math500_answer(math500_golds: list[str]) -> None:
    """The slow path itself, not the string fast path, must accept each gold."""
    rejected = [gold for gold in math500_golds if not answers._math_verify(gold, gold)]
    assert rejected == []


def test_distinct_neighbouring_math500_answers_are_not_judged_equivalent(
    math500_golds: list[str],
) -> None:
    pairs = itertools.pairwise(math500_golds)
    judged_equal = {(a, b) for a, b in pairs if a != b and is_equivalent(a, b)}
    assert judged_equal <= {("5", "x=5")}  # the only neighbours that really agree


def test_every_gsm8k_gold_is_a_number_equivalent_to_its_written_form(
    gsm8k_solutions: list[str],
) -> None:
    assert len(gsm8k_solutions) == 1319
    for solution in gsm8k_solutions:
        gold, written = gsm8k_gold(solution), solution.rsplit("####", 1)[-1].strip()
        float(gold)
        assert is_equivalent(gold, gold) and is_equivalent(written, gold), written


def test_last_number_recovers_the_gold_from_most_gsm8k_reference_solutions(
    gsm8k_solutions: list[str],
) -> None:
    """Measured: 1,283 of 1,319 (97.3%); the misses end on a number that restates the question."""
    recovered = sum(is_equivalent(read_gsm8k_answer(s.rsplit("####", 1)[0]), gsm8k_gold(s)) for s in gsm8k_solutions)
    assert recovered / len(gsm8k_solutions) >= 0.95


# -- evaluation ---------------------------------------------------------------


@pytest.mark.parametrize("answer, gold", [("12", "12"), (r"\frac{1}{2}", "0.5"), ("x = 12", "12")])
def test_a_bare_final_answer_counts_for_gsm8k(answer: str, gold: str) -> None:
    assert evaluate_gsm8k({"answer": gold}, answer) == {"solved": True, "extracted": answer}


@pytest.mark.parametrize("answer", ["12", r"\frac{1}{2}", r"\text{Evelyn}"])
def test_a_bare_final_answer_counts_for_math(answer: str) -> None:
    assert evaluate_math({"answer": answer}, answer)["solved"]


@pytest.mark.parametrize("evaluate", [evaluate_gsm8k, evaluate_math])
def test_no_final_answer_is_not_solved(evaluate: Any) -> None:
    assert evaluate({"answer": "3"}, None) == {"solved": False, "extracted": None}


def test_gsm8k_evaluation_extracts_from_a_worded_answer() -> None:
    verdict = evaluate_gsm8k({"answer": "1450"}, "So she pays $1,450 in total.")
    assert verdict == {"solved": True, "extracted": "1450"}


def test_a_wrong_answer_is_not_solved() -> None:
    verdict = evaluate_math({"answer": r"\frac{3}{4}"}, r"The answer is $\boxed{\frac{4}{3}}$.")
    assert verdict == {"solved": False, "extracted": r"\frac{4}{3}"}
