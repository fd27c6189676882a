"""``CoTChain``: the chain-of-thought baseline: one greedy step at a time until an answer."""

from lits.agents.chain.base import ChainAgent


class CoTChain(ChainAgent):
    chain_name = "cot"
