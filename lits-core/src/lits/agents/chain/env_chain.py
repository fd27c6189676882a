"""``EnvChain``: env-grounded execution without search."""

from lits.agents.chain.base import ChainAgent


class EnvChain(ChainAgent):
    chain_name = "env_chain"
