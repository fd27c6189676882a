"""On an enumerable action space the sampling policy never pays for a duplicate."""

from __future__ import annotations

from typing import Any

import pytest

from lits.agents import MCTS, MCTSConfig
from lits.components.factory import create_components
from lits.registry import load_dataset
from lits.testing import ScriptedModel
from lits.testing.scripted import listed_actions


class RecordingModel(ScriptedModel):
    """The obedient scripted chat model, keeping each request's listed actions and replies."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(chat_native=True, **kwargs)
        self.requests: list[tuple[str, list[str], list[str]]] = []

    def _generate(self, prompt, params):
        outs = super()._generate(prompt, params)
        text = prompt[-1]["content"] if not isinstance(prompt, str) else prompt  # the asked turn, not the examples
        if listed_actions(text):
            state = text.split("Legal actions:")[0]
            self.requests.append((state, listed_actions(text), [o.text for o in outs]))
        return outs


@pytest.fixture
def bw_search() -> tuple[RecordingModel, Any]:
    model = RecordingModel()
    parts = create_components("blocksworld", model, n_actions=3)
    examples = load_dataset("blocksworld", steps="4,6", n=4)
    return model, parts, examples


def test_no_policy_request_returns_an_action_already_proposed_for_its_state(bw_search):
    model, parts, examples = bw_search
    for idx, example in enumerate(examples):
        MCTS(MCTSConfig(n_iterations=10, early_stop=False), parts.policy, parts.transition, parts.reward_model).run(
            example["query"], idx, example
        )
    assert model.requests
    proposed: dict[str, set[str]] = {}
    for state, _listed, replies in model.requests:
        earlier = proposed.setdefault(state, set())
        assert not earlier & set(replies)
        assert len(set(replies)) == len(replies)
        earlier.update(replies)
    stats = parts.policy.stats.as_dict()
    assert stats["duplicates"] == 0 and stats["invalid"] == 0 and stats["fallbacks"] == 0


def test_every_reply_is_one_of_the_listed_legal_actions(bw_search):
    model, parts, examples = bw_search
    MCTS(MCTSConfig(n_iterations=5, early_stop=False), parts.policy, parts.transition, parts.reward_model).run(
        examples[0]["query"], 0, examples[0]
    )
    assert all(set(replies) <= set(listed) for _state, listed, replies in model.requests)


def test_a_state_with_fewer_legal_actions_than_asked_costs_one_request(bw_search):
    model, parts, examples = bw_search
    transition = parts.transition
    state = transition.init_state(**examples[0])
    legal = transition.generate_actions(state.env_state)
    steps = parts.policy.get_actions(state, n_actions=len(legal) + 3, temperature=0.8, query=examples[0]["query"])
    assert sorted(str(s.action) for s in steps) == sorted(legal)
    assert len(model.requests) == 1  # never re-asked once every legal action is proposed


def test_a_stubborn_model_is_re_asked_only_about_the_remaining_actions(bw_search):
    _model, parts, examples = bw_search
    lists: list[list[str]] = []

    def first_listed(text, params, index):
        listed = listed_actions(text)
        lists.append(listed)
        return listed[0] if listed else "Yes"

    parts.policy.base_model = ScriptedModel(first_listed, chat_native=True)
    state = parts.transition.init_state(**examples[0])
    legal = parts.transition.generate_actions(state.env_state)
    steps = parts.policy.get_actions(state, n_actions=2, temperature=0.8, query=examples[0]["query"])
    assert len({str(s.action) for s in steps}) == 2
    assert len(lists) >= 2 and lists[0][0] not in lists[-1] and len(lists[-1]) < len(legal)
