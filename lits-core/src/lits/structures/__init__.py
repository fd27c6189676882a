"""Structures: Action -> Step -> State -> Node."""

from lits.structures.base import Action, State, Step, StringAction, TrajectoryState
from lits.structures.env_grounded import EnvAction, EnvState, EnvStep
from lits.structures.language_grounded import ThoughtState, ThoughtStep
from lits.structures.node import BFSNode, MCTSNode, SearchNode
from lits.structures.tool_use import ToolUseAction, ToolUseState, ToolUseStep

__all__ = [
    "Action",
    "BFSNode",
    "EnvAction",
    "EnvState",
    "EnvStep",
    "MCTSNode",
    "SearchNode",
    "State",
    "Step",
    "StringAction",
    "ThoughtState",
    "ThoughtStep",
    "ToolUseAction",
    "ToolUseState",
    "ToolUseStep",
    "TrajectoryState",
]
