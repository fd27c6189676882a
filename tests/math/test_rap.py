"""RAP as plugin components: sub-QA structures, policy, transition, reward, and MCTS over them."""

from __future__ import annotations

import json
import math
import re
from typing import Callable

import pytest

from lits.agents import MCTS, MCTSConfig
from lits.lm.base import GenerationParams
from lits.prompts.registry import PromptRegistry
from lits.registry import ComponentRegistry, get_search_framework, register_prompt
from lits.testing import ScriptedModel
from lits.type_registry import deserialize, serialize
from lits_math.rap import RAPPolicy, RapPRM, RAPTransition, SubQAState, SubQAStep
from lits_math.rap.prompts import final_question

QUESTION = "Ann has 3 apples and buys 4 more. How many apples does she have?"
FINAL = final_question(QUESTION)
BUY = "How many apples does Ann buy?"


def _cue(text: str) -> str:
    """The last line of a prompt: "Q2:" for the policy, "A2:" for the transition."""
    return text.rstrip().splitlines()[-1]


def _asked(text: str) -> str:
    """The sub-question a transition prompt asks (the line before its "A<k>:" cue)."""
    return text.rstrip().splitlines()[-2]


def _model(
    policy: Callable[[str, int], str] = lambda text, i: BUY,
    answer: Callable[[str, int], str] = lambda text, i: "She buys 4 apples.",
    **kwargs: object,
) -> ScriptedModel:
    def respond(text: str, params: GenerationParams, index: int) -> str:
        if re.fullmatch(r"Q\d+:", _cue(text)):
            return policy(text, index)
        return answer(text, index)

    return ScriptedModel(respond, **kwargs)  # type: ignore[arg-type]


def _state(*pairs: tuple[str, str]) -> SubQAState:
    return SubQAState(SubQAStep(sub_question=q, sub_answer=a, confidence=1.0) for q, a in pairs)


# -- structures ---------------------------------------------------------------


def test_subqa_state_round_trips_through_polymorphic_json():
    state = SubQAState(
        [
            SubQAStep(sub_question=BUY, sub_answer="She buys 4 apples.", confidence=0.6667),
            SubQAStep(sub_question=FINAL, sub_answer="3 + 4 = 7. The answer is 7.", confidence=1.0, answer="7"),
            SubQAStep(error="policy output unusable"),
        ]
    )
    back = deserialize(json.loads(json.dumps(serialize(state))))
    assert type(back) is SubQAState and back == state
    assert [type(s) for s in back] == [SubQAStep] * 3
    assert back.get_final_answer() is None and SubQAState(back[:2]).get_final_answer() == "7"


def test_subqa_step_acts_by_its_sub_question_and_answers_only_when_final():
    step = SubQAStep(sub_question=BUY, sub_answer="She buys 4 apples.")
    assert step.get_action() == BUY and step.get_answer() is None
    assert step.verb_step() == f"Q: {BUY}\nA: She buys 4 apples."
    assert SubQAStep(sub_question=FINAL, answer="7").get_answer() == "7"


# -- policy -------------------------------------------------------------------


def test_policy_returns_deduplicated_sub_questions_without_labels():
    texts = [f" {BUY}\nA1: She buys 4.", f"Q1:  {BUY.lower()}", "How many apples did Ann have at first?"]
    model = _model(policy=lambda text, i: texts[i])
    steps = RAPPolicy(base_model=model).get_actions(_state(), n_actions=3, query=QUESTION)
    assert [s.sub_question for s in steps] == [BUY, "How many apples did Ann have at first?"]
    assert all(type(s) is SubQAStep and s.sub_answer == "" and s.error is None for s in steps)


def test_policy_prompt_holds_the_question_and_the_pairs_so_far():
    model = _model()
    RAPPolicy(base_model=model).get_actions(_state((BUY, "She buys 4 apples.")), n_actions=2, query=QUESTION)
    prompt, params = model.calls[0]
    assert prompt.endswith(f"Problem: {QUESTION}\nQ1: {BUY}\nA1: She buys 4 apples.\nQ2:")
    assert params.n == 2 and params.stop


def test_policy_asks_only_the_final_question_at_the_depth_limit():
    model = _model()
    state = _state((BUY, "She buys 4 apples."), ("How many did she have?", "She had 3."))
    steps = RAPPolicy(base_model=model, max_depth=3).get_actions(state, n_actions=3, query=QUESTION)
    assert [s.sub_question for s in steps] == [FINAL]
    assert model.calls == []


def test_policy_completes_a_proposed_final_question_to_the_original_problem():
    model = _model(policy=lambda text, i: ["Final question: Ann has 3", "final question: how many?"][i])
    steps = RAPPolicy(base_model=model).get_actions(_state(), n_actions=2, query=QUESTION)
    assert [s.sub_question for s in steps] == [FINAL]


def test_policy_turns_empty_output_into_an_error_step():
    steps = RAPPolicy(base_model=_model(policy=lambda text, i: "  \n")).get_actions(_state(), query=QUESTION)
    assert len(steps) == 1 and type(steps[0]) is SubQAStep and steps[0].error


def test_policy_sends_system_and_user_messages_to_a_chat_model():
    model = ScriptedModel([f"Q1: {BUY}"])
    model.chat_native = True
    steps = RAPPolicy(base_model=model).get_actions(_state(), n_actions=1, query=QUESTION)
    prompt = model.calls[0][0]
    assert prompt.startswith("system: ") and f"\nuser: Problem: {QUESTION}" in prompt
    assert [s.sub_question for s in steps] == [BUY]


def test_a_dataset_can_override_one_rap_template(isolated_registry):
    register_prompt("policy", "rap", "toy_math", {"state": "Task: {question}\n{pairs}Next Q{index}:"}, user=True)
    model = _model()
    policy = RAPPolicy(base_model=model, task_name="toy_math")
    policy.get_actions(_state((BUY, "4")), n_actions=1, query=QUESTION)
    assert model.calls[0][0].endswith(f"Task: {QUESTION}\nQ1: {BUY}\nA1: 4\nNext Q2:")


# -- transition ---------------------------------------------------------------


def test_transition_keeps_the_majority_answer_and_its_share_as_confidence():
    answers = ["She buys 4 apples.", "Ann buys 4.", "She buys 5 apples."]
    transition = RAPTransition(base_model=_model(answer=lambda text, i: answers[i]), n_samples=3)
    state, aux = transition.step(transition.init_state(query=QUESTION), SubQAStep(sub_question=BUY), QUESTION)
    step = state[-1]
    assert step.sub_answer == "She buys 4 apples." and step.answer is None
    assert step.confidence == pytest.approx(0.67, abs=0.01) and aux == {"confidence": step.confidence}
    assert not transition.is_terminal(state)


def test_transition_prompt_asks_the_new_sub_question_after_the_pairs():
    model = _model()
    transition = RAPTransition(base_model=model, n_samples=2, temperature=0.7)
    transition.step(_state((BUY, "She buys 4 apples.")), "How many did she have?", QUESTION)
    prompt, params = model.calls[0]
    assert prompt.endswith(f"Q1: {BUY}\nA1: She buys 4 apples.\nQ2: How many did she have?\nA2:")
    assert (params.n, params.temperature) == (2, 0.7)


def test_transition_answers_the_final_question_and_ends_the_chain():
    samples = ["3 + 4 = 7. The answer is 7.", "She has 7 apples. The answer is 7.", "The answer is 8."]
    transition = RAPTransition(base_model=_model(answer=lambda text, i: samples[i]))
    state, _ = transition.step(_state((BUY, "She buys 4 apples.")), FINAL, QUESTION)
    assert state[-1].answer == "7" and state.get_final_answer() == "7"
    assert transition.is_terminal(state)


def test_transition_takes_a_stated_answer_before_the_final_question():
    transition = RAPTransition(base_model=_model(answer=lambda text, i: "So she has 7. The answer is 7."))
    state, _ = transition.step(_state(), "How many apples does Ann end with?", QUESTION)
    assert state.get_final_answer() == "7" and transition.is_terminal(state)


def test_transition_votes_with_the_datasets_extractor_and_equivalence():
    samples = ["so \\boxed{7}", "hence \\boxed{7.0}", "maybe \\boxed{8}"]

    def boxed(text: str) -> str | None:
        found = re.findall(r"\\boxed\{([^}]*)\}", text)
        return found[-1] if found else None

    transition = RAPTransition(
        base_model=_model(answer=lambda text, i: samples[i]),
        extract_answer=boxed,
        equivalent=lambda a, b: float(a) == float(b),
    )
    state, aux = transition.step(_state(), FINAL, QUESTION)
    assert state.get_final_answer() == "7" and aux["confidence"] == pytest.approx(2 / 3, abs=1e-3)


def test_transition_never_mutates_the_input_state_or_step():
    transition = RAPTransition(base_model=_model())
    state = _state((BUY, "She buys 4 apples."))
    before = serialize(state)
    proposed = SubQAStep(sub_question="How many did she have?")
    new_state, _ = transition.step(state, proposed, QUESTION)
    assert serialize(state) == before and len(new_state) == 2
    assert proposed == SubQAStep(sub_question="How many did she have?")
    assert new_state[-1] is not proposed and new_state[-1].sub_answer


def test_transition_appends_error_steps_unchanged_with_zero_confidence():
    model = _model()
    transition = RAPTransition(base_model=model)
    error = SubQAStep(error="policy output unusable")
    state, aux = transition.step(_state(), error, QUESTION)
    assert state[-1] is error and aux["confidence"] == 0.0 and aux["error"]
    assert model.calls == [] and not transition.is_terminal(state)


# -- reward model -------------------------------------------------------------


def _scorer(p_yes: float) -> Callable[[str, str], float]:
    return lambda prompt, continuation: math.log(p_yes if continuation == " Yes" else 1.0 - p_yes)


def test_reward_usefulness_is_p_yes_by_log_likelihood_when_the_model_scores():
    model = _model(scorer=_scorer(0.8))
    reward = RapPRM(base_model=model)
    value, details = reward.fast_reward(
        _state((BUY, "She buys 4 apples.")),
        "How many did she have?",
        QUESTION,
        0,
        step=SubQAStep(sub_question="How many did she have?"),
    )
    assert value == pytest.approx(0.8) and details == {"usefulness": value, "route": "loglikelihood"}
    prompt = model.calls[0][0]
    assert QUESTION in prompt and "Proposed Q2: How many did she have?" in prompt
    assert prompt.rstrip().endswith("Answer:")


def test_reward_usefulness_falls_back_to_the_reply_text():
    reward = RapPRM(base_model=ScriptedModel(["Yes"]))
    assert reward.fast_reward(_state(), BUY, QUESTION, 0) == (1.0, {"usefulness": 1.0, "route": "text"})


def test_reward_combines_usefulness_and_confidence_as_a_weighted_geometric_mean():
    value, details = RapPRM(alpha=0.5).reward(_state(), BUY, fast_reward=0.64, confidence=0.25)
    assert value == pytest.approx(0.4) and details["usefulness"] == 0.64 and details["confidence"] == 0.25
    assert RapPRM(alpha=1.0).reward(_state(), BUY, fast_reward=0.64, confidence=0.25)[0] == pytest.approx(0.64)


def test_reward_is_zero_on_error_and_clipped_to_the_unit_interval():
    reward = RapPRM()
    assert reward.reward(_state(), "", fast_reward=0.9, confidence=0.0, error="unusable")[0] == 0.0
    assert reward.reward(_state(), BUY, fast_reward=1.7)[0] == 1.0  # no confidence: usefulness alone
    assert reward.reward(_state(), BUY, fast_reward=-0.2, confidence=0.9)[0] == 0.0


# -- registration and search --------------------------------------------------


def test_rap_registers_its_components_prompts_and_search_framework():
    assert ComponentRegistry.get_policy("rap") is RAPPolicy
    assert ComponentRegistry.get_transition("rap") is RAPTransition
    assert ComponentRegistry.get_reward_model("rap") is RapPRM
    bundle = get_search_framework("rap")
    assert (bundle.policy, bundle.transition, bundle.reward_model, bundle.search) == ("rap", "rap", "rap", "mcts")
    for component in ("policy", "transition", "reward"):
        assert PromptRegistry.get(component, "rap", "gsm8k", "language_grounded")
        assert isinstance(PromptRegistry.get_usr(component, "rap", "gsm8k", "language_grounded"), dict)


def test_mcts_over_rap_components_reaches_the_answer():
    def propose(text: str, index: int) -> str:
        chain = text.split("Problem: ")[-1]  # this problem's pairs, after the few-shot examples
        return "Final question: Ann has" if "Q1: " in chain else [BUY, "Final question: Ann has"][index]

    def answer(text: str, index: int) -> str:
        return "3 + 4 = 7 apples. The answer is 7." if "Final question" in _asked(text) else "She buys 4 apples."

    def useful(prompt: str, continuation: str) -> float:
        p_yes = 0.9 if "Proposed Q2: Final question" in prompt else 0.6
        return math.log(p_yes if continuation == " Yes" else 1.0 - p_yes)

    model = _model(policy=propose, answer=answer, scorer=useful)
    policy = RAPPolicy(base_model=model, max_depth=4)
    transition = RAPTransition(base_model=model, n_samples=3)
    search = MCTS(MCTSConfig(n_iterations=3, n_actions=2, max_depth=4), policy, transition, RapPRM(base_model=model))
    result = search.run(QUESTION, 0, {"query": QUESTION, "answer": "7"})
    assert result.solved and result.best_state.get_final_answer() == "7"
    assert [s.sub_question for s in result.best_state][-1] == FINAL
    assert result.best_path[-1].reward > 0
    json.dumps(result.to_dict())  # the whole result serializes


def test_a_chat_model_with_no_sub_question_is_asked_again_once_and_both_replies_are_counted():
    from lits.components import parsing
    from lits.runtime.observability import call_context
    from lits.testing import ScriptedModel

    model = ScriptedModel(["   ", BUY], chat_native=True)
    with call_context(instance=301, component="policy"):
        steps = RAPPolicy(base_model=model).get_actions(_state(), n_actions=1, query=QUESTION)
    assert [s.sub_question for s in steps] == [BUY]
    assert "held no sub-question" in model.calls[-1][0]
    assert parsing.take(301) == {"policy": {"replies": 2, "unparseable": 1, "reasks": 1, "fallbacks": 0}}
