"""BlocksWorld semantics on the RAP / PlanBench state text.

A state text is a list of facts joined with ", " and a final " and ":
"the red block is clear", "the hand is empty", "the hand is holding the red
block", "the red block is on top of the blue block", "the blue block is on
the table".  We render facts in a fixed order — clear facts, the hand, "on top
of" facts, "on the table" facts, each by block letter — so equal states have
equal text.  The text functions are pure, so their answers are memoized: a
search asks about the same few hundred states thousands of times.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

#: PlanBench's object-to-colour map (blocks a..l).
COLOURS = dict(
    zip(
        "abcdefghijkl",
        [
            "red",
            "blue",
            "orange",
            "yellow",
            "white",
            "magenta",
            "black",
            "cyan",
            "green",
            "violet",
            "silver",
            "gold",
        ],
    )
)
_ORDER = {colour: i for i, colour in enumerate(COLOURS.values())}

_FACT = [
    ("clear", re.compile(r"^the (\w+) block is clear$")),
    ("empty", re.compile(r"^the hand is empty$")),
    ("holding", re.compile(r"^(?:the hand is holding|i am holding) the (\w+) block$")),
    ("on", re.compile(r"^the (\w+) block is on top of the (\w+) block$")),
    ("table", re.compile(r"^the (\w+) block is on the table$")),
]
_ACTION = [
    ("pick-up", re.compile(r"^pick up the (\w+) block$")),
    ("put-down", re.compile(r"^put down the (\w+) block$")),
    ("stack", re.compile(r"^stack the (\w+) block on top of the (\w+) block$")),
    ("unstack", re.compile(r"^unstack the (\w+) block from on top of the (\w+) block$")),
]


@dataclass(frozen=True)
class World:
    """``below[b]`` is the block under ``b`` or "table"; a held block has no entry."""

    below: tuple[tuple[str, str], ...]
    holding: str | None = None

    @property
    def support(self) -> dict[str, str]:
        return dict(self.below)

    def blocks(self) -> list[str]:
        names = [b for b, _ in self.below] + ([self.holding] if self.holding else [])
        return sorted(names, key=_rank)

    def clear(self) -> list[str]:
        covered = {under for _, under in self.below}
        return [b for b, _ in self.below if b not in covered]


def _rank(colour: str) -> tuple[int, str]:
    return (_ORDER.get(colour, len(_ORDER)), colour)


def make_world(support: dict[str, str], holding: str | None = None) -> World:
    return World(tuple(sorted(support.items(), key=lambda kv: _rank(kv[0]))), holding)


def join_facts(facts: list[str]) -> str:
    if len(facts) <= 1:
        return "".join(facts)
    return ", ".join(facts[:-1]) + " and " + facts[-1]


_BETWEEN_FACTS = re.compile(r",\s*|\s+and\s+")


def split_facts(text: str) -> list[str]:
    parts = _BETWEEN_FACTS.split(text.strip().rstrip("."))
    return [p.strip().lower() for p in parts if p.strip()]


@lru_cache(maxsize=8192)
def facts(world: World) -> tuple[str, ...]:
    """The world's facts in the fixed order :func:`render` joins them in."""
    out = [f"the {b} block is clear" for b in sorted(world.clear(), key=_rank)]
    out.append(f"the hand is holding the {world.holding} block" if world.holding else "the hand is empty")
    below = sorted(world.below, key=lambda kv: _rank(kv[0]))
    out += [f"the {b} block is on top of the {under} block" for b, under in below if under != "table"]
    out += [f"the {b} block is on the table" for b, under in below if under == "table"]
    return tuple(out)


@lru_cache(maxsize=8192)
def render(world: World) -> str:
    return join_facts(list(facts(world)))


@lru_cache(maxsize=8192)
def parse_state(text: str) -> World:
    """The world a state text describes; ``ValueError`` names an unreadable fact."""
    support: dict[str, str] = {}
    holding: str | None = None
    for fact in split_facts(text):
        for kind, pattern in _FACT:
            m = pattern.match(fact)
            if m:
                break
        else:
            raise ValueError(f"not a BlocksWorld fact: {fact!r}")
        if kind == "holding":
            holding = m.group(1)
        elif kind == "on":
            support[m.group(1)] = m.group(2)
        elif kind == "table":
            support[m.group(1)] = "table"
    return make_world(support, holding)


def generate_actions(env_state: str) -> list[str]:
    """Every legal action in the state, in a fixed order."""
    return list(_legal_actions(env_state))


@lru_cache(maxsize=8192)
def _legal_actions(env_state: str) -> tuple[str, ...]:
    world = parse_state(env_state)
    support = world.support
    if world.holding is None:
        actions = []
        for b in sorted(world.clear(), key=_rank):
            if support[b] == "table":
                actions.append(f"pick up the {b} block")
            else:
                actions.append(f"unstack the {b} block from on top of the {support[b]} block")
        return tuple(actions)
    held = world.holding
    return (
        f"put down the {held} block",
        *(f"stack the {held} block on top of the {b} block" for b in sorted(world.clear(), key=_rank)),
    )


def apply(world: World, action: str) -> World:
    """The world after ``action``; ``ValueError`` says why an action is illegal."""
    text = action.strip().lower().rstrip(".")
    for kind, pattern in _ACTION:
        m = pattern.match(text)
        if m:
            break
    else:
        raise ValueError(f"not a BlocksWorld action: {action!r}")
    support = world.support
    clear = set(world.clear())
    block = m.group(1)
    if kind in ("pick-up", "unstack"):
        if world.holding is not None:
            raise ValueError(f"cannot {kind} while holding the {world.holding} block")
        if block not in clear:
            raise ValueError(f"the {block} block is not clear")
        if kind == "pick-up" and support[block] != "table":
            raise ValueError(f"the {block} block is not on the table")
        if kind == "unstack" and support[block] != m.group(2):
            raise ValueError(f"the {block} block is not on top of the {m.group(2)} block")
        del support[block]
        return make_world(support, block)
    if world.holding != block:
        raise ValueError(f"the hand is not holding the {block} block")
    if kind == "put-down":
        support[block] = "table"
    else:
        target = m.group(2)
        if target not in clear or target == block:
            raise ValueError(f"the {target} block is not clear")
        support[block] = target
    return make_world(support, None)


@lru_cache(maxsize=8192)
def apply_action(env_state: str, action: str) -> str:
    return render(apply(parse_state(env_state), action))


def goal_facts(goals: str) -> list[str]:
    return list(_goal_facts(goals))


@lru_cache(maxsize=1024)
def _goal_facts(goals: str) -> tuple[str, ...]:
    return tuple(f for f in split_facts(goals) if f)


@lru_cache(maxsize=8192)
def goal_check(goals: str, env_state: str) -> tuple[bool, float]:
    """(every goal fact holds, fraction of goal facts that hold)."""
    wanted = _goal_facts(goals)
    if not wanted:
        return True, 1.0
    have = set(facts(parse_state(env_state)))
    met = sum(1 for f in wanted if f in have)
    return met == len(wanted), met / len(wanted)
