"""The generic env-grounded policy, reward model, transition contract and factory."""

from __future__ import annotations

import pytest

from lits.components.factory import create_components
from lits.components.policy.env_grounded import EnvGroundedPolicy
from lits.components.reward.env_grounded import EnvGroundedPRM
from lits.registry import register_dataset, register_policy, register_transition
from lits.structures.env_grounded import EnvAction, EnvState, EnvStep
from lits.testing import ScriptedModel
from tests.toy_domain import ACTIONS, LineWorld, prefer

pytestmark = pytest.mark.usefixtures("isolated_registry")


@pytest.fixture
def state() -> EnvState:
    return EnvState(init_state="0")


def test_ranking_policy_returns_the_best_scored_valid_actions(state):
    model = ScriptedModel(scorer=prefer("move right", "wait", "move left"))
    policy = EnvGroundedPolicy(model, "line", generate_all_actions=LineWorld.generate_actions)
    steps = policy.get_actions(state, n_actions=2, query="3")
    assert [str(s.action) for s in steps] == ["move right", "wait"]
    assert all(isinstance(s.action, EnvAction) for s in steps)


def test_ranking_policy_never_returns_duplicates(state):
    model = ScriptedModel(scorer=lambda p, c: 0.0)
    policy = EnvGroundedPolicy(model, "line", generate_all_actions=LineWorld.generate_actions)
    actions = [str(s.action) for s in policy.get_actions(state, n_actions=5, query="3")]
    assert sorted(actions) == sorted(ACTIONS)


def test_generating_policy_drops_duplicate_samples_and_escalates_temperature(state):
    model = ScriptedModel(["move right", "move right", "Move Right.", "wait"])
    policy = EnvGroundedPolicy(
        model, "line", generate_all_actions=LineWorld.generate_actions, strategy="generate", temperature=0.8
    )
    actions = [str(s.action) for s in policy.get_actions(state, n_actions=2, query="3")]
    assert actions == ["move right", "wait"]
    assert policy.stats.as_dict()["duplicates"] == 2
    assert [p.temperature for _, p in model.calls] == [0.8, 1.0, 1.2]


def test_generating_policy_falls_back_to_unselected_valid_actions(state):
    model = ScriptedModel(["wait"])
    policy = EnvGroundedPolicy(
        model, "line", generate_all_actions=LineWorld.generate_actions, strategy="generate", max_attempts=2
    )
    actions = [str(s.action) for s in policy.get_actions(state, n_actions=3, query="3")]
    assert actions == ["wait", "move left", "move right"]
    assert policy.stats.as_dict()["fallbacks"] == 2


def test_generating_policy_rejects_invalid_open_ended_actions(state):
    model = ScriptedModel(["fly away", "jump 2"])
    policy = EnvGroundedPolicy(
        model,
        "line",
        strategy="generate",
        max_attempts=1,
        validate_action=lambda s, a: (a.startswith("jump"), "only jumps"),
    )
    actions = [str(s.action) for s in policy.get_actions(state, n_actions=2, query="3")]
    assert actions == ["jump 2"]
    assert policy.stats.as_dict()["invalid"] == 1


def test_policy_never_executes_actions(state):
    model = ScriptedModel(scorer=prefer("move right"))
    policy = EnvGroundedPolicy(model, "line", generate_all_actions=LineWorld.generate_actions)
    steps = policy.get_actions(state, n_actions=1, query="3")
    assert steps[0].next_state is None and len(state) == 0


def test_prm_fast_reward_is_the_action_probability_when_the_model_scores(state):
    model = ScriptedModel(scorer=prefer("move right", "wait"))
    prm = EnvGroundedPRM(model, "line", generate_all_actions=LineWorld.generate_actions)
    best, details = prm.fast_reward(state, EnvAction("move right"), "3")
    worse, _ = prm.fast_reward(state, EnvAction("wait"), "3")
    assert best == pytest.approx(1.0) and worse == pytest.approx(0.36788, abs=1e-4)
    assert details["logprob"] == 0.0


def test_prm_self_evaluates_with_yes_no_when_the_model_cannot_score(state):
    prm = EnvGroundedPRM(ScriptedModel(["Yes"]), "line")
    assert prm.fast_reward(state, EnvAction("wait"), "3")[0] == 1.0


def test_prm_reward_mixes_fast_reward_with_goal_progress_on_a_0_to_1_scale(state):
    prm = EnvGroundedPRM(ScriptedModel(), "line", fast_weight=0.5, goal_reward=1.0)
    assert prm.reward(state, EnvAction("x"), fast_reward=0.4, goal_reached=(False, 0.6))[0] == pytest.approx(0.5)
    assert prm.reward(state, EnvAction("x"), fast_reward=0.4, goal_reached=(True, 1.0))[0] == pytest.approx(1.0)


def test_prm_weights_outside_the_scale_are_refused(state):
    with pytest.raises(ValueError, match="0..1 reward scale"):
        EnvGroundedPRM(ScriptedModel(), "line", fast_weight=1.5)


def test_prm_reward_of_an_error_step_is_zero(state):
    prm = EnvGroundedPRM(ScriptedModel(), "line")
    assert prm.reward(state, None, fast_reward=0.9, error="invalid action")[0] == 0.0


def test_transition_appends_error_steps_unchanged(state):
    new_state, aux = LineWorld().step(state, EnvStep(error="model said nothing useful"), "3")
    assert new_state[-1].error == "model said nothing useful"
    assert new_state.env_state == "0" and aux["goal_reached"] == (False, pytest.approx(0.4))


def test_transition_turns_an_empty_action_into_an_error_step(state):
    new_state, aux = LineWorld().step(state, EnvStep(action=None), "3")
    assert "no action" in new_state[-1].error and new_state.env_state == "0"


def test_transition_rejects_an_invalid_action_with_a_reason(state):
    new_state, aux = LineWorld().step(state, EnvStep(action=EnvAction("teleport")), "3")
    assert "not one of the valid actions" in aux["error"]
    assert new_state.env_state == "0"


def test_transition_executes_a_bare_action_string(state):
    new_state, aux = LineWorld().step(state, "move right", "1")
    assert new_state.env_state == "1" and aux["goal_reached"] == (True, 1.0)
    assert LineWorld().is_terminal(new_state, "1")


def test_factory_falls_back_to_generic_policy_and_reward_when_only_a_transition_is_registered():
    register_transition("line", task_type="env_grounded")(LineWorld)
    register_dataset("line", task_type="env_grounded")(lambda **kw: [])
    parts = create_components("line", ScriptedModel())
    assert type(parts.policy) is EnvGroundedPolicy and type(parts.reward_model) is EnvGroundedPRM
    assert parts.policy.generate_all_actions("0") == LineWorld.generate_actions("0")
    assert type(parts.transition) is LineWorld


def test_factory_prefers_a_policy_registered_under_the_dataset_name():
    register_transition("line", task_type="env_grounded")(LineWorld)
    register_dataset("line", task_type="env_grounded")(lambda **kw: [])

    @register_policy("line", task_type="env_grounded")
    class LinePolicy(EnvGroundedPolicy):
        pass

    assert type(create_components("line", ScriptedModel()).policy) is LinePolicy


def test_factory_names_the_registered_policies_when_an_explicit_one_is_missing():
    register_transition("line", task_type="env_grounded")(LineWorld)
    register_dataset("line", task_type="env_grounded")(lambda **kw: [])
    with pytest.raises(KeyError, match="env_grounded"):
        create_components("line", ScriptedModel(), policy="nope")


def test_generating_policy_asks_for_listed_actions_only_and_then_only_the_unproposed_ones(state):
    model = ScriptedModel(["wait", "wait", "move left"])
    policy = EnvGroundedPolicy(model, "line", generate_all_actions=LineWorld.generate_actions, strategy="generate")
    policy.get_actions(state, n_actions=2, query="3")
    assert [p.reply_lines for _, p in model.calls] == [(tuple(ACTIONS),), (("move left", "move right"),)]


def test_generating_policy_sends_free_text_requests_when_constraining_is_off(state):
    model = ScriptedModel(["wait", "move left"])
    policy = EnvGroundedPolicy(
        model, "line", generate_all_actions=LineWorld.generate_actions, strategy="generate", constrain_replies=False
    )
    policy.get_actions(state, n_actions=2, query="3")
    assert [p.reply_lines for _, p in model.calls] == [()]


def test_a_judge_of_siblings_asks_for_one_numbered_verdict_line_per_sibling(state):
    model = ScriptedModel(["1: Yes\n2: No"], chat_native=True)
    prm = EnvGroundedPRM(model, "line")
    prm.fast_rewards(state, [EnvAction("wait"), EnvAction("move left")], "3")
    assert model.calls[0][1].reply_lines == (("1: Yes", "1: No"), ("2: Yes", "2: No"))


def test_a_judge_of_one_action_asks_for_a_bare_yes_or_no(state):
    model = ScriptedModel(["Yes"], chat_native=True)
    EnvGroundedPRM(model, "line").fast_reward(state, EnvAction("wait"), "3")
    assert model.calls[0][1].reply_lines == (("Yes", "No"),)


def test_a_server_answering_one_sample_per_request_is_asked_one_action_at_a_time_among_those_left(state):
    model = ScriptedModel(["wait", "move left"])
    model.batches_samples = False
    policy = EnvGroundedPolicy(model, "line", generate_all_actions=LineWorld.generate_actions, strategy="generate")
    actions = [str(s.action) for s in policy.get_actions(state, n_actions=2, query="3")]
    assert actions == ["wait", "move left"]
    assert [(p.n, p.reply_lines) for _, p in model.calls] == [
        (1, (tuple(ACTIONS),)),
        (1, (("move left", "move right"),)),
    ]
    assert policy.stats.as_dict()["duplicates"] == 0 and policy.stats.as_dict()["escalations"] == 0


def _counting_fields(monkeypatch) -> list[int]:
    """One entry per time an env prompt works out a state's fields."""
    from lits.components.env_prompting import EnvPrompt

    counted: list[int] = []
    fields = EnvPrompt.fields
    monkeypatch.setattr(EnvPrompt, "fields", lambda self, *a, **k: (counted.append(1), fields(self, *a, **k))[1])
    return counted


def test_a_chat_policy_prompt_works_out_the_states_fields_once(state, monkeypatch):
    policy = EnvGroundedPolicy(
        ScriptedModel(chat_native=True), "line", generate_all_actions=LineWorld.generate_actions, strategy="generate"
    )
    counted = _counting_fields(monkeypatch)
    policy.prompt.messages(state, "3", ACTIONS)
    assert len(counted) == 1


def test_a_judge_of_siblings_works_out_the_states_fields_and_their_order_once(state, monkeypatch):
    prm = EnvGroundedPRM(ScriptedModel(["1: Yes\n2: No"], chat_native=True), "line")
    counted = _counting_fields(monkeypatch)
    orders: list[int] = []
    shown = EnvGroundedPRM._shown_order
    monkeypatch.setattr(EnvGroundedPRM, "_shown_order", staticmethod(lambda *a: (orders.append(1), shown(*a))[1]))
    prm.fast_rewards(state, [EnvAction("wait"), EnvAction("move left")], "3")
    assert (len(counted), len(orders)) == (1, 1)
