"""``ReActChat``: think, call a tool, observe, repeat until an answer (tool use without search)."""

from lits.agents.chain.base import ChainAgent


class ReActChat(ChainAgent):
    chain_name = "react"
