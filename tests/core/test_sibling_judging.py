"""Fast rewards of all siblings in one request: one dependent round and one slot per expansion."""

from __future__ import annotations

import re

from lits.components.reward.env_grounded import EnvGroundedPRM
from lits.components.reward.judging import numbered_yes_probabilities
from lits.lm.base import Completion, TokenLogprob
from lits.structures.env_grounded import EnvAction, EnvState
from lits.testing import ScriptedModel
from tests.toy_domain import LineWorld, prefer

ACTIONS = [EnvAction("move left"), EnvAction("move right"), EnvAction("wait")]


def _prm(model) -> EnvGroundedPRM:
    return EnvGroundedPRM(
        model,
        "line",
        usr_prompt_spec={"evaluate": "Now {env_state}; {action}? Yes or No.\nAnswer:"},
        generate_all_actions=LineWorld.generate_actions,
    )


def test_numbered_answers_are_read_by_number():
    assert numbered_yes_probabilities("2: No\n1: Yes\n3. yes", 3) == [1.0, 0.0, 1.0]


def test_an_unanswered_item_is_none():
    assert numbered_yes_probabilities("1: Yes\nI am not sure about the rest", 3) == [1.0, None, None]


def test_yes_no_tokens_give_soft_values_when_they_line_up():
    tokens = [
        TokenLogprob("1", 0.0),
        TokenLogprob(":", 0.0),
        TokenLogprob(" Yes", -0.2, {" Yes": -0.2, " No": -1.7}),
        TokenLogprob("\n2", 0.0),
        TokenLogprob(":", 0.0),
        TokenLogprob(" No", -0.1, {" No": -0.1, " Yes": -2.4}),
    ]
    values = numbered_yes_probabilities(Completion("1: Yes\n2: No", logprobs=tokens), 2)
    assert 0.75 < values[0] < 0.85 and 0.05 < values[1] < 0.1


def test_a_chat_model_judges_all_siblings_in_one_request(isolated_registry):
    model = ScriptedModel(chat_native=True)
    scores = _prm(model).fast_rewards(EnvState(init_state="0"), ACTIONS, "2")
    assert len(model.calls) == 1 and [value for value, _ in scores] == [1.0, 1.0, 1.0]


def _number_of(text: str, action: str) -> str:
    return re.search(rf"^(\d+)\. {action}$", text, re.MULTILINE).group(1)  # type: ignore[union-attr]


def test_siblings_the_reply_leaves_out_are_judged_on_their_own(isolated_registry):
    def partial(text, params, index):
        return f"{_number_of(text, 'move left')}: No" if "(numbered)" in text else "Yes"

    model = ScriptedModel(partial, chat_native=True)
    scores = _prm(model).fast_rewards(EnvState(init_state="0"), ACTIONS, "2")
    assert [value for value, _ in scores] == [0.0, 1.0, 1.0]
    assert len(model.calls) == 3  # one for all, then one for each of the two left out


def test_a_scoring_backend_scores_all_siblings_after_one_prompt(isolated_registry):
    model = ScriptedModel(scorer=prefer("move right", "wait", "move left"))
    scores = _prm(model).fast_rewards(EnvState(init_state="0"), ACTIONS, "2")
    assert len(model.calls) == 1 and scores[1][0] > scores[2][0] > scores[0][0]


def test_siblings_are_shown_in_an_order_drawn_from_their_text_and_verdicts_map_back(isolated_registry):
    shown: list[list[str]] = []

    def judge_first_listed(text, params, index):
        listed = re.findall(r"^\d+\. (.+)$", text, re.MULTILINE)
        shown.append(listed)
        return "\n".join(f"{i}: {'Yes' if i == 1 else 'No'}" for i in range(1, len(listed) + 1))

    model = ScriptedModel(judge_first_listed, chat_native=True)
    scores = _prm(model).fast_rewards(EnvState(init_state="0"), ACTIONS, "2")
    first = shown[0][0]
    assert shown[0] != [str(a) for a in ACTIONS] and sorted(shown[0]) == sorted(str(a) for a in ACTIONS)
    assert [value for value, _ in scores] == [1.0 if str(a) == first else 0.0 for a in ACTIONS]
    _prm(ScriptedModel(judge_first_listed, chat_native=True)).fast_rewards(EnvState(init_state="0"), ACTIONS, "2")
    assert shown[1] == shown[0]  # the same request, the same order


def test_the_batch_prompt_shows_no_answer_shaped_example(isolated_registry):
    model = ScriptedModel(chat_native=True)
    _prm(model).fast_rewards(EnvState(init_state="0"), ACTIONS, "2")
    assert "1: Yes" not in model.calls[0][0]  # the prompt (the verdict lines it allows are no example)


def test_a_bare_yes_to_a_batch_of_one_is_read():
    assert numbered_yes_probabilities("Yes.", 1) == [1.0]


def test_a_judge_call_hashes_each_sibling_once_for_its_shown_order(isolated_registry, monkeypatch):
    from lits.components.reward import judging

    hashed: list[bytes] = []
    sha256 = judging.hashlib.sha256
    monkeypatch.setattr(judging.hashlib, "sha256", lambda data=b"": (hashed.append(data), sha256(data))[1])
    _prm(ScriptedModel(chat_native=True)).fast_rewards(EnvState(init_state="at 0"), ACTIONS, query="reach 2")
    assert len(hashed) == len(ACTIONS)  # the prompt, the reading and the details share one order
