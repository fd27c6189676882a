"""Search nodes: a tree of steps with the statistics search algorithms need."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator, Mapping, Protocol, Sequence, TypedDict

from lits.structures.base import State, Step, field_names
from lits.type_registry import PLAIN, deserialize, register_type, serialize


class Branching(TypedDict):
    """A branching-necessity verdict: did the node need several children, by which method, how sure, why."""

    method: str
    branch: bool
    score: float
    why: str


@register_type
@dataclasses.dataclass(eq=False)
class SearchNode:
    """A node: the step that led here, the materialized state, and rewards.

    ``state`` is None until the transition materializes it (lazy states).
    """

    id: int = 0
    parent: "SearchNode" | None = dataclasses.field(default=None, repr=False)
    children: list["SearchNode"] = dataclasses.field(default_factory=list, repr=False)
    action: object = None
    step: Step | None = None
    state: State | None = None
    depth: int = 0
    fast_reward: float = 0.0
    fast_reward_details: dict[str, object] = dataclasses.field(default_factory=dict)
    reward: float = 0.0
    reward_details: dict[str, object] = dataclasses.field(default_factory=dict)
    is_terminal: bool = False
    #: After how many iterations (MCTS) or depths (BFS) the node exists: the viewer's slider, for any search.
    born: int = 0
    #: Chain-in-Tree: the branching-necessity verdict taken before expanding this node (method, branch, score,
    #: why), or None when no evaluator ran (see :mod:`lits.agents.tree.continuation`).
    branching: Branching | None = None

    # -- tree walking ------------------------------------------------------
    def add_child(self, child: "SearchNode") -> "SearchNode":
        child.parent = self
        child.depth = self.depth + 1
        self.children.append(child)
        return child

    def path(self) -> list["SearchNode"]:
        """Nodes from the root to this node, inclusive."""
        out: list[SearchNode] = []
        node: SearchNode | None = self
        while node is not None:
            out.append(node)
            node = node.parent
        return out[::-1]

    def iter_tree(self) -> Iterator["SearchNode"]:
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    # -- serialization -----------------------------------------------------
    _SKIP = ("parent", "children")

    def to_dict(self) -> dict[str, object]:
        out = self.to_flat_dict()
        out["children"] = [c.to_dict() for c in self.children]
        return out

    def to_flat_dict(self, skip: tuple[str, ...] = (), given: Mapping[str, object] | None = None) -> dict[str, object]:
        """This node's own fields (no parent, no children): one journal record; ``given`` fields are taken
        as they are (already serialized)."""
        cls = type(self)
        out: dict[str, object] = {"__type__": cls.__name__}
        for name in _own_fields(cls, skip):
            if given is not None and name in given:
                out[name] = given[name]
                continue
            value = getattr(self, name)
            out[name] = value if type(value) in PLAIN else serialize(value)
        return out

    def update_from_flat(self, payload: dict[str, object]) -> None:
        """Apply a journal record written by :meth:`to_flat_dict`."""
        names = {f.name for f in dataclasses.fields(self)} - set(self._SKIP)
        for key, value in payload.items():
            if key in names:
                setattr(self, key, deserialize(value))

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> "SearchNode":
        names = {f.name for f in dataclasses.fields(cls)} - set(cls._SKIP)
        node = cls(**{k: deserialize(v) for k, v in payload.items() if k in names})
        for child_payload in payload.get("children", []):
            child = deserialize(child_payload)
            child.parent = node
            node.children.append(child)
        return node


def _own_fields(cls: type[SearchNode], skip: tuple[str, ...]) -> tuple[str, ...]:
    """A node class's fields a flat record holds (not its links, not ``skip``), worked out once per pair."""
    names = _OWN_FIELDS.get((cls, skip))
    if names is None:
        names = _OWN_FIELDS[cls, skip] = tuple(n for n in field_names(cls) if n not in cls._SKIP and n not in skip)
    return names


_OWN_FIELDS: dict[tuple[type, tuple[str, ...]], tuple[str, ...]] = {}


#: The key of a journaled state that holds only the steps after its parent's (their number is its value).
PARENT_STEPS = "parent_steps"


@register_type
@dataclasses.dataclass(eq=False)
class MCTSNode(SearchNode):
    """Adds visit counts and the rewards backed up through the node."""

    visits: int = 0
    cum_rewards: list[float] = dataclasses.field(default_factory=list)

    @property
    def Q(self) -> float:
        """Mean of the backed-up returns and pending virtual losses (0 before the first visit).

        The sum is kept incrementally (returns are only ever appended), so
        selection costs the same at the ten-thousandth visit as at the first.
        """
        rewards = self.cum_rewards
        cached = self.__dict__.get("_sum")
        if cached is None or cached[0] is not rewards or cached[1] > len(rewards):
            cached = (rewards, 0, 0.0)
        total = cached[2] + sum(rewards[cached[1] :])
        self.__dict__["_sum"] = (rewards, len(rewards), total)
        virtual = self.__dict__.get("virtual_losses") or ()
        count = len(rewards) + len(virtual)
        return (total + sum(virtual)) / count if count else 0.0


@register_type
@dataclasses.dataclass(eq=False)
class BFSNode(SearchNode):
    """Adds the cumulative reward along the path (beam score)."""

    cum_reward: float = 0.0


class Backed(Protocol):
    """What :func:`backpropagate` needs of a node."""

    reward: float
    visits: int
    cum_rewards: list[float]


def backpropagate(path: Sequence[Backed], aggregate: str = "mean") -> list[float]:
    """MCTS's backup, and what a journal's backed-up ``paths`` mean.

    Node i gets G_i = aggregate(r_i .. r_k) over the rewards from it to the leaf.  The root
    has no action, so its return aggregates r_1 .. r_k (0 for a lone root).
    Returns the value backed up through each node of ``path``.  Any object
    with ``reward``, ``visits`` and ``cum_rewards`` will do (the viewer passes
    stand-ins built from a journal, no search imported).
    """
    rewards = [n.reward for n in path[1:]]
    values = []
    for i, node in enumerate(path):
        tail = rewards[max(i, 1) - 1 :]
        value = (max(tail) if aggregate == "max" else sum(tail) / len(tail)) if tail else 0.0
        node.cum_rewards.append(value)
        node.visits += 1
        values.append(value)
    return values
