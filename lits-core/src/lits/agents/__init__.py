"""Agents: tree search (MCTS, BFS) and chains (EnvChain) over the same components."""

from lits.agents.chain import ChainResult, EnvChain
from lits.agents.config import BFSConfig, ChainConfig, MCTSConfig, TreeSearchConfig
from lits.agents.tree import BFS, MCTS, BaseTreeSearch, SearchResult

__all__ = [
    "BFS",
    "BFSConfig",
    "BaseTreeSearch",
    "ChainConfig",
    "ChainResult",
    "EnvChain",
    "MCTS",
    "MCTSConfig",
    "SearchResult",
    "TreeSearchConfig",
]
