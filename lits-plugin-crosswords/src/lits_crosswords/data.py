"""Crossword datasets: the plugin's own puzzles, or Tree of Thoughts files from a user path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lits.api import register_dataset
from lits_crosswords.board import SLOTS
from lits_crosswords.puzzles import PUZZLES


class Clues(str):
    """The clues shown to every component; ``answer`` is set only for the oracle reward."""

    answer: str | None = None


def make_example(idx: str, clues: list[str], letters: str, oracle: bool) -> dict[str, Any]:
    if len(clues) != 10 or len(letters) != 25 or not letters.isalpha():
        raise ValueError(f"puzzle {idx}: expected 10 clues and 25 letters")
    text = "\n".join(f"{slot}. {clue}" for slot, clue in zip(SLOTS, clues))
    query = Clues(text)
    if oracle:
        query.answer = letters.upper()
    return {"id": idx, "query": query, "eval_goals": f"{text}\nAnswer: {letters.upper()}", "n_steps": 10}


def load_tot_file(path: Path, oracle: bool = False) -> list[dict[str, Any]]:
    """Tree of Thoughts format: a list of ``[[10 clues h1..h5, v1..v5], [25 letters]]``."""
    if not path.exists():
        raise FileNotFoundError(f"crosswords file not found: {path}")
    try:
        games = json.loads(path.read_text(encoding="utf-8"))
        return [
            make_example(f"tot-{i}", list(clues), "".join(letters), oracle) for i, (clues, letters) in enumerate(games)
        ]
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path} is not in the Tree of Thoughts crosswords format: {exc}") from None


@register_dataset("crosswords", task_type="env_grounded")
def load_crosswords(
    path: str | None = None, every: int = 1, oracle: bool = False, **kwargs: Any
) -> list[dict[str, Any]]:
    """Own puzzles by default; ``path`` reads a ToT file (``every=5`` gives the usual test set)."""
    if kwargs:
        raise ValueError(
            f"unknown crosswords dataset argument(s): {', '.join(sorted(kwargs))} (known: path, every, oracle)"
        )
    if int(every) < 1:
        raise ValueError("every must be at least 1")
    if path is not None:
        data = load_tot_file(Path(path).expanduser(), bool(oracle))
    else:
        data = [make_example(f"own-{i}", h + v, "".join(rows), bool(oracle)) for i, (rows, h, v) in enumerate(PUZZLES)]
    return data[:: int(every)]
