"""The inference log file: one JSON line per model call, read back as written."""

from __future__ import annotations

import json
import math

from lits.runtime.observability import InferenceLog, InferenceRecord


def _lines(log: InferenceLog) -> list[dict[str, object]]:
    log.close()
    assert log.path is not None
    return [json.loads(line) for line in log.path.read_text(encoding="utf-8").splitlines()]


def test_each_record_is_a_line_that_reads_back_as_its_fields(tmp_path):
    log = InferenceLog(tmp_path / "inference.jsonl")
    record = InferenceRecord(
        "m",
        "generate",
        tokens_in=5,
        tokens_out=2,
        seconds=1e-05,
        cost=0.25,
        context={"instance": 3, "phase": "expand", "tag": ("a", "é"), "odd": object},
    )
    log.add(record)
    assert _lines(log) == [
        {**record.as_dict(), "context": {"instance": 3, "phase": "expand", "tag": ["a", "é"], "odd": str(object)}}
    ]


def test_non_finite_numbers_and_logged_prompts_keep_their_values(tmp_path):
    log = InferenceLog(tmp_path / "inference.jsonl")
    log.add(InferenceRecord("m", "loglikelihood", tokens_in=1, tokens_out=0, seconds=float("inf"), cost=0.0))
    log.add(
        InferenceRecord(
            "m",
            "loglikelihood",
            tokens_in=1,
            tokens_out=0,
            seconds=0.1,
            cost=0.0,
            context={"score": float("nan")},
            prompt="p",
            reply={"a": float("-inf")},
        )
    )
    first, second = _lines(log)
    assert first["seconds"] == math.inf
    assert math.isnan(second["context"]["score"]) and second["reply"] == {"a": -math.inf}
