"""GSM8K and MATH500 loaders: the plugin's own problems by default, or JSONL files from a path.

Every example is ``{"id", "query", "answer", ...}`` with ``answer`` the gold
final answer, which the registered ``evaluate`` compares by math-verify.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from lits.api import register_dataset
from lits_math.answers import (
    evaluate_gsm8k,
    evaluate_math,
    extract_gsm8k_answer,
    extract_math_answer,
    gsm8k_gold,
    is_equivalent,
)
from lits_math.problems import LATEX_PROBLEMS, WORD_PROBLEMS

SPLITS = ("test",)  # the only split the public files have
FILE_NAMES = {"gsm8k": "gsm8k_test.jsonl", "math500": "math500.jsonl"}
KNOWN_ARGS = "path, split, offset, limit"

Example = dict[str, Any]


def _count(name: str, value: Any) -> int:
    """A non-negative integer; the CLI passes dataset arguments as strings."""
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ValueError(f"{name} must be a whole number, not {value!r}") from None
    if number < 0:
        raise ValueError(f"{name} must not be negative, got {number}")
    return number


def _window(dataset: str, split: str, offset: Any, limit: Any, extra: dict[str, Any]) -> tuple[int, int | None]:
    """Check the common arguments and return ``(offset, limit)`` as integers."""
    if extra:
        names = ", ".join(sorted(extra))
        raise ValueError(f"unknown {dataset} dataset argument(s): {names} (known: {KNOWN_ARGS})")
    if str(split) not in SPLITS:
        raise ValueError(f"{dataset} has only the split {SPLITS[0]!r}, not {split!r}")
    none = limit is None or str(limit).strip().lower() in ("", "none")
    return _count("offset", offset), None if none else _count("limit", limit)


def _file(dataset: str, path: str | Path) -> Path:
    """The user's JSONL file, or the data set's usual file name inside a given directory."""
    file = Path(path).expanduser()
    if file.is_dir():
        file = file / FILE_NAMES[dataset]
    if not file.is_file():
        raise FileNotFoundError(f"{dataset} file not found: {file}")
    return file


def read_jsonl(file: Path, make: Callable[[int, dict[str, Any]], Example]) -> list[Example]:
    """One example per non-blank line; a bad line is reported with its file and line number."""
    examples: list[Example] = []
    with file.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError("not a JSON object")
                examples.append(make(len(examples), record))
            except (ValueError, KeyError, TypeError) as exc:
                problem = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
                raise ValueError(f"{file}, line {number}: {problem}") from None
    return examples


def _gsm8k_example(index: int, record: dict[str, Any]) -> Example:
    solution = str(record["answer"])
    if "####" not in solution:
        raise ValueError("the answer has no '#### <number>' line")
    return {"id": f"gsm8k-{index}", "query": str(record["question"]), "answer": gsm8k_gold(solution)}


def _math500_example(index: int, record: dict[str, Any]) -> Example:
    """OpenR's ``final_answer`` or PRM800K's ``answer`` field; extra metadata is kept."""
    gold = record["final_answer"] if "final_answer" in record else record["answer"]
    example: Example = {"id": f"math500-{index}", "query": str(record["problem"]), "answer": str(gold)}
    for key in ("subject", "level", "unique_id"):
        if key in record:
            example[key] = record[key]
    return example


def _load(
    dataset: str,
    own: list[Example],
    make: Callable[[int, dict[str, Any]], Example],
    path: str | None,
    split: str,
    offset: Any,
    limit: Any,
    extra: dict[str, Any],
) -> list[Example]:
    """The user's file (or folder) when ``path`` is given, else the plugin's own problems; then the window."""
    start, count = _window(dataset, split, offset, limit, extra)
    data = own if path is None else read_jsonl(_file(dataset, path), make)
    return data[start:] if count is None else data[start : start + count]


@register_dataset(
    "gsm8k",
    task_type="language_grounded",
    extract_answer=extract_gsm8k_answer,
    equivalent=is_equivalent,
    evaluate=evaluate_gsm8k,
)
def load_gsm8k(
    path: str | None = None,
    split: str = "test",
    offset: Any = 0,
    limit: Any = None,
    **kwargs: Any,
) -> list[Example]:
    """GSM8K ``{question, answer}`` JSONL from ``path`` (file or folder), else own problems."""
    own = [{"id": f"own-gsm8k-{i}", "query": q, "answer": a} for i, (q, a) in enumerate(WORD_PROBLEMS)]
    return _load("gsm8k", own, _gsm8k_example, path, split, offset, limit, kwargs)


@register_dataset(
    "math500",
    task_type="language_grounded",
    extract_answer=extract_math_answer,
    equivalent=is_equivalent,
    evaluate=evaluate_math,
)
def load_math500(
    path: str | None = None,
    split: str = "test",
    offset: Any = 0,
    limit: Any = None,
    **kwargs: Any,
) -> list[Example]:
    """MATH500 JSONL from ``path`` (file or folder), else the plugin's own LaTeX problems."""
    own = [{"id": f"own-math-{i}", "query": q, "answer": a, "subject": s} for i, (q, a, s) in enumerate(LATEX_PROBLEMS)]
    return _load("math500", own, _math500_example, path, split, offset, limit, kwargs)
