"""Language-grounded reasoning in core: thoughts, their components, voting and search frameworks."""

from __future__ import annotations

import dataclasses

import pytest

from lits.agents import BFS, MCTS, BFSConfig, MCTSConfig
from lits.agents.tree import bfs
from lits.answers import answer_rules, extract_stated_answer, majority_vote, same_text
from lits.components.base import Transition
from lits.components.factory import create_components
from lits.components.policy.concat import ConcatPolicy
from lits.components.reward.generative import GenerativePRM
from lits.components.reward.judging import judge_yes
from lits.components.transition.concat import ConcatTransition
from lits.registry import (
    DuplicateNameError,
    get_search_framework,
    owner_scope,
    register_dataset,
    register_policy,
    register_search_framework,
)
from lits.structures import ThoughtState, ThoughtStep
from lits.structures.base import Step, TrajectoryState
from lits.testing import ScriptedModel
from lits.type_registry import deserialize

QUESTION = "What is 2+2?"


def solver(text: str, params, index: int) -> str:
    """A scripted model that reasons in two steps and judges steps mentioning 4 as good."""
    if "Answer Yes or No" in text:
        return "Yes" if "4" in text.split("Proposed next step:")[-1] else "No"
    if text.rstrip().endswith("Step 2:"):
        return ["The answer is 4.", "The answer is 5.", "The answer is 4"][index % 3]
    return ["2 plus 2 makes 4", "Add the numbers", "Step 1: 2 plus 2 makes 4"][index % 3]


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel(solver)


@pytest.fixture
def toy_dataset(isolated_registry) -> str:
    @register_dataset("toy-arith", task_type="language_grounded")
    def load(**kwargs):
        return [{"query": QUESTION, "answer": "4"}]

    return "toy-arith"


# -- structures ------------------------------------------------------------


def test_a_thought_state_round_trips_with_its_answer():
    state = ThoughtState([ThoughtStep(action="2 plus 2 makes 4"), ThoughtStep(action="The answer is 4", answer="4")])
    again = deserialize(state.to_dict())
    assert again == state and again.get_final_answer() == "4"


# -- policy ----------------------------------------------------------------


def test_the_completion_prompt_numbers_the_steps_and_ends_with_the_next_cue(model):
    policy = ConcatPolicy(base_model=model, task_name="toy")
    prompt = policy.completion_prompt(ThoughtState([ThoughtStep(action="first")]), QUESTION)
    assert "Problem: What is 2+2?" in prompt and "Step 1: first" in prompt
    assert prompt.endswith("Step 2:")


def test_the_policy_strips_an_echoed_cue_and_leaves_repeats_for_the_search_to_count(model):
    steps = ConcatPolicy(base_model=model, task_name="toy").get_actions(ThoughtState(), n_actions=3, query=QUESTION)
    assert [s.action for s in steps] == ["2 plus 2 makes 4", "Add the numbers", "2 plus 2 makes 4"]


def test_a_completion_model_writes_one_line_per_step(model):
    ConcatPolicy(base_model=model, task_name="toy").get_actions(ThoughtState(), n_actions=1, query=QUESTION)
    assert model.calls[-1][1].stop == ("\n",)


def test_a_chat_model_is_stopped_at_the_next_step_cue():
    chat = ScriptedModel(lambda *a: "Add them")
    chat.chat_native = True
    ConcatPolicy(base_model=chat, task_name="toy").get_actions(ThoughtState(), n_actions=1, query=QUESTION)
    assert "\nStep 2:" in chat.calls[-1][1].stop


def test_a_prompt_registered_as_in_the_design_doc_is_used(isolated_registry, model):
    from lits.registry import register_system_prompt, register_user_prompt

    @register_system_prompt("policy", "concat", "my_math_task")
    def my_system_prompt():
        return "You are solving math problems step by step..."

    @register_user_prompt("policy", "concat", "my_math_task")
    def my_user_prompt():
        return {"question_format": "Task: {question}"}

    prompt = ConcatPolicy(base_model=model, task_name="my_math_task").completion_prompt(ThoughtState(), QUESTION)
    assert prompt.startswith("You are solving math problems step by step...") and "Task: What is 2+2?" in prompt


def test_a_chat_model_gets_messages_asking_for_one_step():
    seen = []
    chat = ScriptedModel(lambda text, params, i: seen.append(text) or "Add them")
    chat.chat_native = True
    ConcatPolicy(base_model=chat, task_name="toy").get_actions(ThoughtState(), n_actions=1, query=QUESTION)
    assert seen[0].startswith("system: ") and "Write only step 1" in seen[0]


def test_the_last_step_allowed_is_cued_to_state_the_final_answer():
    model = ScriptedModel(lambda *a: " 4.")
    policy = ConcatPolicy(base_model=model, task_name="toy", max_depth=2)
    state = ThoughtState([ThoughtStep(action="2 plus 2 makes 4")])
    steps = policy.get_actions(state, n_actions=1, query=QUESTION)
    assert model.calls[-1][0].endswith("Step 2: The answer is")
    assert ConcatTransition().step(state, steps[0])[0].get_final_answer() == "4"


def test_empty_replies_become_an_error_step():
    steps = ConcatPolicy(base_model=ScriptedModel(lambda *a: "  "), task_name="toy").get_actions(
        ThoughtState(), n_actions=2, query=QUESTION
    )
    assert len(steps) == 1 and steps[0].error and "no step" in steps[0].error


# -- transition -------------------------------------------------------------


def test_the_transition_records_the_answer_its_extractor_finds():
    transition = ConcatTransition(extract_answer=lambda text: "4" if "four" in text else None)
    state, aux = transition.step(ThoughtState(), ThoughtStep(action="so it is four"))
    assert state[-1].answer == "4" and aux == {"confidence": 1.0}
    assert transition.is_terminal(state)


def test_the_transition_never_mutates_the_input_state_or_step():
    transition = ConcatTransition()
    before, proposal = ThoughtState(), ThoughtStep(action="The answer is 4")
    after, _ = transition.step(before, proposal)
    assert len(before) == 0 and proposal.answer is None and after[-1] is not proposal


def test_an_error_step_is_appended_unchanged_with_zero_confidence():
    error = ThoughtStep(error="policy output unusable")
    state, aux = ConcatTransition().step(ThoughtState(), error)
    assert state[-1] is error and aux["confidence"] == 0.0 and not ConcatTransition().is_terminal(state)


def test_a_bare_string_action_is_accepted():
    state, _ = ConcatTransition().step(ThoughtState(), "The answer is 7")
    assert state.get_final_answer() == "7"


# -- reward ----------------------------------------------------------------


def test_the_generative_prm_uses_log_likelihood_when_the_model_scores_text():
    scorer = ScriptedModel(scorer=lambda prompt, cont: -0.1 if cont == " Yes" else -2.3)
    p_yes, details = GenerativePRM(base_model=scorer, task_name="toy").fast_reward(
        ThoughtState(), "2 plus 2 makes 4", QUESTION, 0
    )
    assert details["route"] == "loglikelihood" and p_yes == pytest.approx(0.900, abs=1e-3)


def test_the_generative_prm_judges_the_proposed_step_by_the_reply_otherwise(model):
    prm = GenerativePRM(base_model=model, task_name="toy")
    good, _ = prm.fast_reward(ThoughtState(), None, QUESTION, 0, step=ThoughtStep(action="makes 4"))
    bad, details = prm.fast_reward(ThoughtState(), None, QUESTION, 0, step=ThoughtStep(action="makes 5"))
    assert (good, bad, details["route"]) == (1.0, 0.0, "text")


def test_the_reward_after_execution_weighs_the_judgement_by_confidence():
    value, _ = GenerativePRM().reward(ThoughtState(), "x", fast_reward=0.8, confidence=0.5)
    assert value == pytest.approx(0.4)


def test_judge_yes_reads_top_log_probabilities_from_a_reply():
    from lits.lm.base import Completion, TokenLogprob

    class TopLogprobs(ScriptedModel):
        def _generate(self, prompt, params):
            return [Completion("Yes", logprobs=[TokenLogprob("Yes", -0.2, {"Yes": -0.2, "No": -1.8})])]

    p_yes, route = judge_yes(TopLogprobs(), "Is it? Answer:")
    assert route == "logprobs" and p_yes == pytest.approx(0.832, abs=1e-3)


# -- answers ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text, answer",
    [
        ("2 and 2. The answer is 4.", "4"),
        ("Final answer: $\\frac{1}{2}$", "\\frac{1}{2}"),
        ("The answer is 3\nThen more text. The answer is 5", "5"),
        ("no conclusion yet", None),
    ],
)
def test_a_stated_answer_is_extracted(text, answer):
    assert extract_stated_answer(text) == answer


def test_majority_vote_picks_the_largest_group_of_equivalent_answers():
    vote = majority_vote(["4", "5", "4.", None], equivalent=lambda a, b: a.rstrip(".") == b.rstrip("."))
    assert vote.answer == "4" and vote.share == pytest.approx(2 / 3, abs=1e-4)


def test_majority_vote_weighs_answers_and_breaks_ties_by_first_seen():
    assert majority_vote([("4", 0.2), ("5", 0.5), ("4", 0.2)]).answer == "5"
    assert majority_vote(["7", "8"]).answer == "7"


def test_majority_vote_of_no_answers_has_no_winner():
    assert majority_vote([None, ""]).answer is None


# -- factory and search frameworks ------------------------------------------


def test_a_language_grounded_dataset_gets_chain_of_thought_components_with_no_user_code(toy_dataset, model):
    components = create_components(toy_dataset, model)
    assert (type(components.policy), type(components.transition), type(components.reward_model)) == (
        ConcatPolicy,
        ConcatTransition,
        GenerativePRM,
    )
    assert components.transition.extract_answer is extract_stated_answer


def test_the_dataset_supplies_answer_extraction_equivalence_and_scoring(isolated_registry, model):
    def extract(text):
        return "x"

    def same(a, b):
        return True

    def score(example, answer):
        return {"solved": True}

    register_dataset(
        "toy-meta", task_type="language_grounded", extract_answer=extract, equivalent=same, evaluate=score
    )(lambda **kw: [])
    components = create_components("toy-meta", model)
    assert components.transition.extract_answer is extract
    assert (components.equivalent, components.evaluate) == (same, score)


def test_answer_rules_are_the_datasets_own_and_the_defaults_for_a_name_nobody_registered(isolated_registry):
    def same(a, b):
        return True

    register_dataset("toy-rules", task_type="language_grounded", equivalent=same)(lambda **kw: [])
    assert answer_rules("toy-rules") == (extract_stated_answer, same)
    assert answer_rules("nobody-registered") == (extract_stated_answer, same_text)
    assert answer_rules(None) == (extract_stated_answer, same_text)


def test_core_registers_rest_and_tot_bfs_over_the_same_components():
    rest, tot = get_search_framework("rest"), get_search_framework("tot_bfs")
    assert (rest.policy, rest.transition, rest.reward_model) == (tot.policy, tot.transition, tot.reward_model)
    assert (rest.search, tot.search) == ("mcts", "bfs")


def test_explicit_component_names_override_the_framework(toy_dataset, model):
    register_policy("my-policy", task_type="language_grounded")(ConcatPolicy)
    register_search_framework("mine", policy="missing", transition="concat", reward_model="generative")
    components = create_components(toy_dataset, model, framework="mine", policy="my-policy")
    assert type(components.policy) is ConcatPolicy


def test_a_framework_for_another_task_type_is_refused(model, isolated_registry):
    register_dataset("toy-env", task_type="env_grounded")(lambda **kw: [])
    register_search_framework("lg-only", policy="concat", transition="concat", reward_model="generative")
    with pytest.raises(ValueError, match="'lg-only' is for language_grounded datasets, not env_grounded ones"):
        create_components("toy-env", model, framework="lg-only")


def test_two_owners_of_one_framework_name_are_an_error(isolated_registry):
    with owner_scope("dist-a"):
        register_search_framework("twice", policy="a", transition="b", reward_model="c")
    with owner_scope("dist-b"), pytest.raises(DuplicateNameError, match="'dist-a' and 'dist-b'"):
        register_search_framework("twice", policy="a", transition="b", reward_model="c")


# -- search over thoughts ----------------------------------------------------


def test_mcts_and_bfs_run_the_same_components_to_answers(toy_dataset, model):
    c = create_components(toy_dataset, model, n_actions=3)
    mcts = MCTS(MCTSConfig(n_iterations=4, n_actions=3, early_stop=False), c.policy, c.transition, c.reward_model)
    beam = BFS(BFSConfig(n_actions=3, max_depth=3, early_stop=False), c.policy, c.transition, c.reward_model)
    for result in (mcts.run(QUESTION, 0, {"query": QUESTION}), beam.run(QUESTION, 0, {"query": QUESTION})):
        assert result.solved and result.best_state.get_final_answer() == "4"


def test_the_functional_bfs_of_the_structures_doc_returns_a_search_result(toy_dataset, model):
    c = create_components(toy_dataset, model, n_actions=2)
    result = bfs(
        query=QUESTION, policy=c.policy, transition=c.transition, reward_model=c.reward_model, n_actions=2, max_depth=3
    )
    assert result.solved and result.terminal_nodes


@dataclasses.dataclass
class _Draft(Step):
    draft: str = ""
    note: str = ""

    def get_action(self):
        return self.draft


class _DraftState(TrajectoryState[_Draft]):
    pass


class _DraftTransition(Transition):
    def _step(self, state: _DraftState, step, query_or_goals, **kwargs):
        new = state.copy()
        new.append(step)
        return new, {}


def test_an_empty_initial_state_is_inferred_from_the_step_annotation():
    assert type(_DraftTransition().init_state()) is _DraftState


def test_siblings_with_one_action_but_different_content_are_not_duplicates(model):
    class Notes(ConcatPolicy):
        def _get_actions(self, state, n_actions, temperature, **kwargs):
            return [_Draft(draft="same", note=str(i)) for i in range(3)]

    search = BFS(BFSConfig(n_actions=3, max_depth=1), Notes(), _DraftTransition(), GenerativePRM())
    search.run(QUESTION, 0, {})
    assert len(search.root.children) == 3 and search.stats["duplicates"] == 0


def test_a_chat_model_sees_the_worked_example_step_by_step_as_earlier_turns():
    policy = ConcatPolicy(base_model=ScriptedModel(lambda *a: "x"), task_name="toy")
    messages = policy.messages(ThoughtState(), QUESTION)
    roles = [m["role"] for m in messages]
    assert roles[0] == "system" and roles[-1] == "user" and QUESTION in messages[-1]["content"]
    answers = [m["content"] for m in messages if m["role"] == "assistant"]
    assert len(answers) >= 2 and "The answer is" in answers[-1]
    assert not any("The answer is" in a for a in answers[:-1])
    assert roles[1:-1] == ["user", "assistant"] * len(answers)
