"""``CoTChain``: the chain-of-thought baseline: greedy steps until an answer.

One step per call by default; ``--chain-arg whole_solution=true`` lets the
model write the rest of the solution in one reply, one step per line, which
is how chat models are trained to reason (a small one asked for "step 1 only"
states an answer after one calculation).
"""

from __future__ import annotations

from typing import Any

from lits.agents.chain.base import ChainAgent
from lits.agents.config import CoTConfig


class CoTChain(ChainAgent):
    chain_name = "cot"
    config: CoTConfig

    def __init__(
        self, config: CoTConfig | None = None, policy: Any = None, transition: Any = None, **kwargs: Any
    ) -> None:
        super().__init__(config or CoTConfig.model_validate({}), policy, transition, **kwargs)
