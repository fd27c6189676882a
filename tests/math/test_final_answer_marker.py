"""Only an explicit final-answer marker ends a math chain or search; a step with a number never does."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from lits.testing.servers.openai_compat import FakeOpenAIServer
from lits_math.answers import extract_gsm8k_answer, extract_math_answer
from lits_math.data import load_gsm8k

INTERMEDIATE_STEPS = [
    "Carla downloads 200 GB in 1 minute.",
    "Step 1: She has 3 apples and buys 4 more, so she has 7 apples.",
    "So 3 + 4 = 7.",
    "First, 12 * 5 = 60 minutes in total.",
    "The train leaves at 3:15 pm and arrives 2 hours later.",
    "That is 25% of 80, which is 20.",
    "Each box holds 1,250 grams.",
    "We need the total cost: 4 * $2.50 = $10.",
    "Half of 48 is 24.",
    "Step 2: subtract 15 from 40 to get 25.",
    "In 2019 there were 350 students.",
    "The rectangle is 6 by 4, so its area is 24 square meters.",
    "Now divide 90 by 3: 90 / 3 = 30 pages per day.",
    "He earns $18 per hour for 8 hours, which gives $144.",
    "The difference between 100 and 64 is 36.",
    "Let x be the number of cats; then 2x + 3 = 11.",
    "Solving, x = 4.",
    "So far the total is 42.",
    "Next we find how many answers she got right: 17 of 20.",
    "To find the answer we first need the price per kilogram, $3.",
    "The answer depends on the speed, which is 60 km/h.",
    "We are asked for the answer in dollars, so convert 250 cents to $2.50.",
    "1. Multiply 7 by 6 to get 42.",
    "- 3 dozen eggs is 36 eggs.",
    "Therefore she has 9 left after giving away 3.",
    "Answering the first part: 5 + 5 = 10.",
    "The sum of the angles is 180 degrees.",
    "\\frac{3}{4} of 20 is 15.",
    "Remaining: 1000 - 250 = 750",
    "Which means 2^3 = 8 cubes fit.",
]

MARKED_ANSWERS = [
    ("The answer is 42.", "42"),
    ("So the final answer is 1,250.", "1250"),
    ("Final answer: 18", "18"),
    ("Final Answer: $7$", "7"),
    ("**Answer:** 36", "36"),
    ("**Final Answer:** 144", "144"),
    ("**Final answer**: 9", "9"),
    ("Answer: 30 pages", "30"),
    ("#### 750", "750"),
    ("Adding up, 60 + 40 = 100, so the answer is \\boxed{100}.", "100"),
    ("The answer is: 3 * 6 = 18", "18"),
    ("Therefore, the answer is $2.50.", "2.50"),
]


@pytest.mark.parametrize("step", INTERMEDIATE_STEPS)
def test_an_intermediate_step_is_never_read_as_a_final_answer(step: str) -> None:
    assert extract_gsm8k_answer(step) is None
    assert extract_math_answer(step) is None


@pytest.mark.parametrize("text, expected", MARKED_ANSWERS)
def test_a_marked_final_answer_is_read_in_the_styles_models_write(text: str, expected: str) -> None:
    assert extract_gsm8k_answer(text) == expected


PROBLEMS = {e["query"]: e["answer"] for e in load_gsm8k()}
ANSWER_AT_STEP = 4


def stepwise_solver(prompt: str, body: dict[str, Any]) -> str:
    """A chat model that writes three intermediate steps full of numbers before it states the answer."""
    gold = next((answer for question, answer in PROBLEMS.items() if question in prompt), "0")
    if "Yes or No" in prompt:
        return "Yes"
    asked = re.findall(r"step (\d+)", prompt, re.IGNORECASE)
    index = int(asked[-1]) if asked else ANSWER_AT_STEP
    if index < ANSWER_AT_STEP:
        return INTERMEDIATE_STEPS[index]
    return f"The answer is {gold}."


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=stepwise_solver) as srv:
        yield srv


@pytest.fixture
def lits(run_lits, server: FakeOpenAIServer) -> Callable[..., subprocess.CompletedProcess[str]]:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return run_lits(
            *args,
            "--dataset",
            "gsm8k",
            "--limit",
            "1",
            "--model",
            "m",
            "--base-url",
            server.base_url,
            "--save-dir",
            "run",
        )

    return run


@pytest.mark.parametrize(
    "method",
    [
        ["chain"],
        ["search", "--search-framework", "tot_bfs", "--search-arg", "beam_width=1", "--search-arg", "n_actions=1"],
        ["search", "--search-framework", "rest", "--search-arg", "n_iterations=2", "--search-arg", "n_actions=1"],
    ],
    ids=["cot", "tot_bfs", "rest"],
)
def test_gsm8k_chains_and_searches_run_until_the_marked_answer(lits, tmp_path: Path, method: list[str]) -> None:
    done = lits(*method)
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "run" / "results" / "0.json").read_text())
    assert record["eval"]["solved"]
    assert record["eval"]["plan_length"] == ANSWER_AT_STEP
