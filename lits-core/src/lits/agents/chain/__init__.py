"""Chain agents: sequential reasoning with the same components as tree search."""

from lits.agents.chain.base import ChainAgent, ChainResult
from lits.agents.chain.cot import CoTChain
from lits.agents.chain.env_chain import EnvChain
from lits.agents.chain.react import ReActChat
from lits.agents.chain.self_consistency import SelfConsistencyChain

__all__ = ["ChainAgent", "ChainResult", "CoTChain", "EnvChain", "ReActChat", "SelfConsistencyChain"]
