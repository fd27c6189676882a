"""The token benchmark counts repeats in a run's final chains, whether or not the chain steered away from them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import tokens  # noqa: E402  (the benchmarks folder is not a package)

START = "a on table, b on table"
HOLDING = "holding a, b on table"


def _run(tmp_path: Path, *steps: dict[str, object], diversity: dict[str, int] | None = None) -> Path:
    (tmp_path / "results").mkdir()
    final = {"init_state": START, "steps": list(steps)}
    (tmp_path / "results" / "0.json").write_text(json.dumps({"final_state": final}))
    (tmp_path / "eval_results.json").write_text(json.dumps({"diversity": diversity or {}}))
    return tmp_path


def test_a_step_back_into_the_start_state_is_a_repeated_state(tmp_path):
    save = _run(
        tmp_path,
        {"action": {"text": "pick up a"}, "next_state": HOLDING},
        {"action": {"text": "put down a"}, "next_state": START},
    )
    assert tokens.repeats(save)["repeated_states"] == 1


def test_a_tool_call_with_the_same_result_counts_even_after_the_chain_noted_it(tmp_path):
    call = {"action": {"tool": "sql", "query": "SELECT 1"}, "observation": "1"}
    noted = {**call, "observation": "1\n(Note: step 1 made this same call and got this same result; ...)"}
    save = _run(tmp_path, call, noted, diversity={"repeats_kept": 1})
    assert tokens.repeats(save) == {
        "repeated_states": 0,
        "identical_tool_calls": 1,
        "steered_away": 0,
        "repeats_kept": 1,
    }


class _Letters:
    """A vocabulary whose token ``i`` is the letter ``"a" + i``."""

    @staticmethod
    def detokenize(tokens: list[int]) -> bytes:
        return "".join(chr(ord("a") + t) for t in tokens).encode()


def test_a_dumped_request_marks_its_blocks_and_where_its_reused_and_shared_prefixes_end(tmp_path):
    tokens.write_dump(tmp_path, 3, _Letters(), list(range(10)), hit=4, shared=6, block=4)
    head, text = (tmp_path / "0003.txt").read_text().splitlines()
    assert head == "# request 3: 10 tokens, 4 re-used, 6 new, 6 shared"
    assert text == "abcd[[NEW]]ef[[SHARED]]gh|ij"


def test_the_longest_common_prefix_stops_at_the_first_difference():
    assert tokens.common_prefix([1, 2, 3, 4], [1, 2, 5, 4]) == 2
