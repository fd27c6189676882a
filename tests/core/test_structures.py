"""Structures serialize with their exact types and round-trip."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from lits.lm.base import Completion
from lits.structures.base import Step, step_key
from lits.structures.env_grounded import EnvAction, EnvState, EnvStep
from lits.structures.node import MCTSNode
from lits.type_registry import deserialize, register_type


def _env_state() -> EnvState:
    state = EnvState(init_state="the hand is empty")
    state.append(EnvStep(action=EnvAction("pick up the red block"), next_state="holding red"))
    state.append(EnvStep(action=None, error="policy output contained no action", next_state="holding red"))
    return state


def test_env_action_str_is_the_command_text():
    assert str(EnvAction("pick up the red block")) == "pick up the red block"


def test_env_state_round_trips_through_json_with_exact_types():
    state = _env_state()
    back = deserialize(json.loads(json.dumps(state.to_dict())))
    assert type(back) is EnvState
    assert back == state
    assert type(back[0].action) is EnvAction
    assert back.env_state == "holding red"


def test_state_save_and_load_round_trip(tmp_path):
    state = _env_state()
    state.save(tmp_path / "state.json")
    assert EnvState.load(tmp_path / "state.json") == state


def test_env_state_snapshot_is_the_last_next_state_or_the_initial_one():
    assert EnvState(init_state="start").env_state == "start"
    assert _env_state().env_state == "holding red"


def test_copy_keeps_the_class_and_fields_and_is_independent():
    state = _env_state()
    copied = state.copy()
    copied.append(EnvStep(action=EnvAction("x"), next_state="y"))
    assert type(copied) is EnvState and copied.init_state == state.init_state
    assert len(state) == 2 and len(copied) == 3


def test_mcts_tree_round_trips_exactly():
    root = MCTSNode(id=0, state=_env_state(), visits=2, cum_rewards=[0.5, 1.0])
    child = root.add_child(MCTSNode(id=1, action=EnvAction("a"), fast_reward=0.3, visits=1, cum_rewards=[1.0]))
    child.add_child(MCTSNode(id=2, action=EnvAction("b"), is_terminal=True))
    payload = json.loads(json.dumps(root.to_dict()))
    back = deserialize(payload)
    assert back.to_dict() == root.to_dict()
    assert back.children[0].parent is back
    assert back.children[0].children[0].depth == 2


# The seeds' custom-formulation structures must work as written there
# (RefineStep / RefineState come from the docs' Self-Refine example).
@register_type
@dataclass
class MyCustomStep(Step):
    field1: str = ""
    field2: str | None = None

    def to_dict(self) -> dict:
        return {"__type__": self.__class__.__name__, "field1": self.field1, "field2": self.field2}

    @classmethod
    def from_dict(cls, payload: dict) -> "MyCustomStep":
        return cls(field1=payload.get("field1", ""), field2=payload.get("field2"))


def test_seed_style_custom_state_round_trips(self_refine_example):
    state = self_refine_example.RefineState()
    state.append(self_refine_example.RefineStep(draft="x = 1", feedback="wrong sign", refined="x = -1", iteration=1))
    back = deserialize(json.loads(json.dumps(state.to_dict())))
    assert type(back) is self_refine_example.RefineState and back == state
    assert back.get_current_solution() == "x = -1"


def test_seed_style_step_with_own_to_dict_round_trips():
    step = MyCustomStep(field1="a", field2="b")
    assert deserialize(step.to_dict()) == step


def test_completion_is_a_string_with_text_and_counts():
    reply = Completion("Yes", tokens_in=5, tokens_out=1)
    assert reply == "Yes" and reply.text == "Yes" and f"{reply}!" == "Yes!"
    assert reply.tokens_in == 5


def test_a_steps_key_is_the_sorted_key_json_of_its_dict():
    import json

    class Plain:
        def __init__(self, payload: object) -> None:
            self.payload = payload

        def to_dict(self) -> object:
            return self.payload

    circular: dict[str, object] = {}
    circular["self"] = circular
    payloads = [
        {"b": [1.5, float("nan"), None, True], "a": {"é": 'x\n"y"'}, "c": ("t", 1e-05)},
        {"z": object.__new__(type("Opaque", (), {"__str__": lambda self: "opaque"}))},
        {2: "int keys", 10: "sorted as numbers"},
    ]
    for payload in payloads:
        assert step_key(Plain(payload)) == json.dumps(payload, sort_keys=True, default=str)
    with pytest.raises(ValueError, match="Circular reference"):
        step_key(Plain(circular))
