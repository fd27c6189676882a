"""Chain agents: sequential reasoning with the same components as tree search."""

from lits.agents.chain.env_chain import ChainResult, EnvChain

__all__ = ["ChainResult", "EnvChain"]
