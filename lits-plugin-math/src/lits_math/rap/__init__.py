"""RAP (Reasoning via Planning, Hao et al. 2023) as registered components.

Importing this package registers the ``rap`` policy, transition and reward
model (task type ``language_grounded``), their prompts, and the ``rap``
search framework (those three with MCTS).
"""

from __future__ import annotations

from lits.api import register_search_framework

from lits_math.rap import prompts  # noqa: F401  (prompt registration)
from lits_math.rap.policy import RAPPolicy
from lits_math.rap.reward import RapPRM
from lits_math.rap.structures import SubQAState, SubQAStep
from lits_math.rap.transition import RAPTransition

register_search_framework(
    "rap",
    policy="rap",
    transition="rap",
    reward_model="rap",
    search="mcts",
    description="RAP: sub-question decomposition with MCTS",
)

__all__ = ["RAPPolicy", "RAPTransition", "RapPRM", "SubQAState", "SubQAStep"]
