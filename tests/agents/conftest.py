"""A toy line-world search problem with a scripted model."""

from __future__ import annotations

import pytest

from lits.components.policy.env_grounded import EnvGroundedPolicy
from lits.components.reward.env_grounded import EnvGroundedPRM
from lits.testing import ScriptedModel
from tests.toy_domain import LineWorld, prefer


class Parts:
    def __init__(self, model: ScriptedModel) -> None:
        self.model = model
        self.transition = LineWorld()
        self.policy = EnvGroundedPolicy(model, "line", generate_all_actions=LineWorld.generate_actions)
        self.reward = EnvGroundedPRM(model, "line", generate_all_actions=LineWorld.generate_actions)


@pytest.fixture
def parts(isolated_registry) -> Parts:
    """Components whose model prefers moving right: the goal (2) is reachable in 2 steps."""
    return Parts(ScriptedModel(scorer=prefer("move right", "wait", "move left")))


@pytest.fixture
def misleading_parts(isolated_registry) -> Parts:
    """The model prefers moving left, away from the goal; search must recover via rewards."""
    return Parts(ScriptedModel(scorer=prefer("move left", "wait", "move right")))


EXAMPLE = {"query": "2", "init_state_str": "0"}
