"""Tree search agents."""

from lits.agents.tree.base import BaseTreeSearch, SearchResult
from lits.agents.tree.bfs import BFS
from lits.agents.tree.mcts import MCTS

__all__ = ["BFS", "BaseTreeSearch", "MCTS", "SearchResult"]
