"""Agents: tree search (MCTS, BFS) and chains (EnvChain) over the same components."""

from lits.agents.chain import ChainAgent, ChainResult, CoTChain, EnvChain, ReActChat
from lits.agents.config import BFSConfig, ChainConfig, MCTSConfig, TreeSearchConfig
from lits.agents.tree import BFS, MCTS, BaseTreeSearch, SearchResult

__all__ = [
    "BFS",
    "BFSConfig",
    "BaseTreeSearch",
    "ChainAgent",
    "ChainConfig",
    "ChainResult",
    "CoTChain",
    "EnvChain",
    "MCTS",
    "MCTSConfig",
    "ReActChat",
    "SearchResult",
    "TreeSearchConfig",
]
