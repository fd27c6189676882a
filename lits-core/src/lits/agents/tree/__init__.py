"""Tree search agents."""

from lits.agents.tree.base import BaseTreeSearch, SearchResult
from lits.agents.tree.breadth_first import BFS, bfs
from lits.agents.tree.mcts import MCTS

__all__ = ["BFS", "BaseTreeSearch", "MCTS", "SearchResult", "bfs"]
