"""The crossword board and its state text.

Slots h1-h5 are the rows, v1-v5 the columns of a 5x5 grid. The state text is
the board (``_`` for an empty cell) followed by which slots were filled and
which filled slots were later changed::

    H E A R T
    _ _ _ _ _
    ...
    Filled: h1, v2
    Changed: none

Rule for clashes: a word may not overwrite a letter that a *filled crossing*
word put there; rewriting a filled slot itself is allowed and marks it changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SIZE = 5
SLOTS = [f"h{i}" for i in range(1, SIZE + 1)] + [f"v{i}" for i in range(1, SIZE + 1)]
_ACTION = re.compile(r"^\s*([A-Za-z]\d+)\s*[.:]\s*([A-Za-z]+)\s*$")


def cells(slot: str) -> list[int]:
    """Grid indices (row-major) of a slot's letters."""
    k = int(slot[1]) - 1
    return [k * SIZE + j for j in range(SIZE)] if slot[0] == "h" else [j * SIZE + k for j in range(SIZE)]


def crossing(slot: str) -> list[str]:
    return [f"{'v' if slot[0] == 'h' else 'h'}{j}" for j in range(1, SIZE + 1)]


@dataclass
class Board:
    grid: list[str] = field(default_factory=lambda: ["_"] * SIZE * SIZE)
    filled: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    def word(self, slot: str) -> str:
        return "".join(self.grid[i] for i in cells(slot))

    def render(self) -> str:
        rows = [" ".join(self.grid[r * SIZE : (r + 1) * SIZE]) for r in range(SIZE)]
        return "\n".join(
            rows + [f"Filled: {', '.join(self.filled) or 'none'}", f"Changed: {', '.join(self.changed) or 'none'}"]
        )

    def unfilled(self) -> list[str]:
        return [s for s in SLOTS if s not in self.filled]

    def is_full(self) -> bool:
        return "_" not in self.grid


def parse_board(text: str) -> Board:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if len(lines) < SIZE + 2:
        raise ValueError("a crossword state has 5 board rows, a Filled line and a Changed line")
    grid = [c for line in lines[:SIZE] for c in line.split()]
    if len(grid) != SIZE * SIZE:
        raise ValueError("each crossword board row needs 5 cells")

    def slots(line: str, label: str) -> list[str]:
        if not line.startswith(f"{label}:"):
            raise ValueError(f"expected a '{label}:' line, got {line!r}")
        value = line.split(":", 1)[1].strip()
        return [] if value == "none" else [s.strip() for s in value.split(",")]

    return Board(grid, slots(lines[SIZE], "Filled"), slots(lines[SIZE + 1], "Changed"))


def parse_action(action: str) -> tuple[str, str]:
    """``"h1. APPLE"`` -> ("h1", "APPLE"); ``ValueError`` with the reason otherwise."""
    m = _ACTION.match(str(action))
    if not m:
        raise ValueError(f"expected an action like 'h1. APPLE', got {str(action)!r}")
    slot, word = m.group(1).lower(), m.group(2).upper()
    if slot not in SLOTS:
        raise ValueError(f"unknown slot {slot!r} (h1-h5, v1-v5)")
    if len(word) != SIZE:
        raise ValueError(f"{word!r} has {len(word)} letters; {slot} needs {SIZE}")
    return slot, word


def clash(board: Board, slot: str, word: str) -> str | None:
    """Why ``word`` may not go into ``slot`` (None when it may)."""
    for other, index in zip(crossing(slot), cells(slot)):
        if other in board.filled and board.grid[index] != word[cells(slot).index(index)]:
            return (
                f"{word!r} would change the {board.grid[index]!r} that {other} "
                f"({board.word(other)}) put at {slot} letter {cells(slot).index(index) + 1}"
            )
    return None


def repeats(board: Board, slot: str, word: str) -> str | None:
    """Why writing ``word`` into ``slot`` would be a no-op (None when it changes the board).

    Re-writing a filled slot with the word it holds changes nothing, so a chain
    that proposes it would loop without progress."""
    if slot in board.filled and board.word(slot) == word:
        return f"{slot} already holds {word!r}; writing it again changes nothing"
    return None


def place(board: Board, slot: str, word: str) -> Board:
    new = Board(list(board.grid), list(board.filled), list(board.changed))
    was = board.word(slot)
    for index, letter in zip(cells(slot), word):
        new.grid[index] = letter
    if slot in new.filled:
        if was != word and slot not in new.changed:
            new.changed.append(slot)
    else:
        new.filled.append(slot)
    return new
