"""Read PlanBench PDDL problems and plans into BlocksWorld text."""

from __future__ import annotations

import re
from pathlib import Path

from lits_blocksworld.world import COLOURS, join_facts, make_world, render

_ATOM = re.compile(r"\(\s*([\w-]+)((?:\s+\w+)*)\s*\)")


def _section(text: str, name: str) -> str:
    start = text.find(f"(:{name}")
    if start < 0:
        raise ValueError(f"PDDL problem has no :{name} section")
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[start + len(name) + 2 : i]
    raise ValueError(f"unbalanced parentheses in :{name}")


def _colour(letter: str) -> str:
    try:
        return COLOURS[letter.lower()]
    except KeyError:
        raise ValueError(f"unknown block {letter!r} (blocks a..l are supported)") from None


def parse_problem(text: str) -> tuple[str, str]:
    """``(initial state text, goal text)`` of a PDDL problem."""
    support: dict[str, str] = {}
    holding = None
    for pred, args in _ATOM.findall(_section(text, "init")):
        names = args.split()
        if pred == "ontable":
            support[_colour(names[0])] = "table"
        elif pred == "on":
            support[_colour(names[0])] = _colour(names[1])
        elif pred == "holding":
            holding = _colour(names[0])
    goals = []
    for pred, args in _ATOM.findall(_section(text, "goal")):
        names = args.split()
        if pred == "on":
            goals.append(f"the {_colour(names[0])} block is on top of the {_colour(names[1])} block")
        elif pred == "ontable":
            goals.append(f"the {_colour(names[0])} block is on the table")
        elif pred == "clear":
            goals.append(f"the {_colour(names[0])} block is clear")
    return render(make_world(support, holding)), join_facts(goals)


def parse_problem_file(path: Path) -> tuple[str, str]:
    return parse_problem(path.read_text(encoding="utf-8"))


def parse_plan(text: str) -> list[str]:
    """``"(unstack b c)\\n(stack b d)"`` -> BlocksWorld action texts."""
    actions = []
    for pred, args in _ATOM.findall(text):
        names = [_colour(n) for n in args.split()]
        if pred == "pick-up":
            actions.append(f"pick up the {names[0]} block")
        elif pred == "put-down":
            actions.append(f"put down the {names[0]} block")
        elif pred == "stack":
            actions.append(f"stack the {names[0]} block on top of the {names[1]} block")
        elif pred == "unstack":
            actions.append(f"unstack the {names[0]} block from on top of the {names[1]} block")
        else:
            raise ValueError(f"unknown BlocksWorld operator {pred!r}")
    return actions
