"""Crosswords: board, validation, transition, data, evaluation and rewards."""

from __future__ import annotations

import pytest

from lits.structures.env_grounded import EnvAction, EnvStep
from lits.testing import ScriptedModel
from lits_crosswords.board import Board, parse_board
from lits_crosswords.data import load_crosswords
from lits_crosswords.reward import CrosswordsOracleRM, CrosswordsPRM
from lits_crosswords.transition import CrosswordsTransition

ANSWER = "HEARTEMBERABUSERESINTREND"


@pytest.fixture
def transition() -> CrosswordsTransition:
    return CrosswordsTransition()


@pytest.fixture
def puzzle() -> dict:
    return load_crosswords()[0]


def play(transition, state, *actions, goals="clues"):
    for action in actions:
        state, _ = transition.step(state, EnvStep(action=EnvAction(action)), goals)
    return state


def test_state_text_shows_the_board_and_the_filled_and_changed_slots(transition):
    state = play(transition, transition.init_state(), "h1. heart", "v2. EMBER")
    lines = state.env_state.splitlines()
    assert lines[0] == "H E A R T" and lines[1] == "_ M _ _ _"
    assert lines[5:] == ["Filled: h1, v2", "Changed: none"]
    assert parse_board(state.env_state).unfilled() == ["h2", "h3", "h4", "h5", "v1", "v3", "v4", "v5"]


@pytest.mark.parametrize(
    "action, reason",
    [
        ("HEART", "expected an action like 'h1. APPLE'"),
        ("h1. HEARTS", "has 6 letters; h1 needs 5"),
        ("h6. HEART", "unknown slot 'h6'"),
        ("x1. HEART", "unknown slot 'x1'"),
    ],
)
def test_malformed_actions_are_rejected_with_a_reason(transition, action, reason):
    ok, why = transition.validate_action(Board().render(), action)
    assert not ok and reason in why


def test_a_word_that_clashes_with_a_filled_crossing_word_is_rejected(transition):
    state = play(transition, transition.init_state(), "h1. HEART")
    ok, why = transition.validate_action(state.env_state, "v1. MOUSE")
    assert not ok and "h1 (HEART)" in why and "'H'" in why


def test_clashing_action_leaves_the_board_unchanged_with_an_error_step(transition):
    state = play(transition, transition.init_state(), "h1. HEART")
    after = play(transition, state, "v1. MOUSE")
    assert after.env_state == state.env_state and "invalid action" in after[-1].error


def test_rewriting_a_filled_slot_marks_it_changed(transition):
    state = play(transition, transition.init_state(), "h2. EMBER", "h2. ENTER")
    assert parse_board(state.env_state).changed == ["h2"]


def test_writing_the_word_a_filled_slot_already_holds_is_rejected(transition):
    state = play(transition, transition.init_state(), "h2. EMBER")
    ok, why = transition.validate_action(state.env_state, "h2. ember")
    assert not ok and "h2 already holds 'EMBER'" in why


def test_a_repeated_word_leaves_the_board_unchanged_with_an_error_step(transition):
    state = play(transition, transition.init_state(), "h2. EMBER")
    after = play(transition, state, "h2. EMBER")
    assert after.env_state == state.env_state and "changes nothing" in after[-1].error


def test_goal_check_needs_the_answer_and_counts_right_words(transition, puzzle):
    state = play(transition, transition.init_state(), "h1. HEART", "h2. EMBER")
    assert transition.goal_check(puzzle["query"], state.env_state) == (False, 0.0)
    assert transition.goal_check(puzzle["eval_goals"], state.env_state) == (False, 0.2)


def test_a_full_correct_board_is_solved_and_terminal(transition, puzzle):
    state = play(transition, transition.init_state(), "h1. HEART", "h2. EMBER", "h3. ABUSE", "h4. RESIN", "h5. TREND")
    assert transition.is_terminal(state, puzzle["query"])
    assert transition.goal_check(puzzle["eval_goals"], state.env_state) == (True, 1.0)


def test_eval_metrics_report_letter_word_and_game_accuracy(transition, puzzle):
    state = play(transition, transition.init_state(), "h1. HEART", "h2. EMBER", "h3. ABUSE", "h4. RESIN", "h5. TRENT")
    metrics = transition.eval_metrics(puzzle["eval_goals"], state.env_state)
    assert metrics == {"letter_acc": 24 / 25, "word_acc": 0.8, "game_acc": 0.0}


def test_own_puzzles_are_consistent_word_squares():
    for example in load_crosswords():
        answer = example["eval_goals"].rsplit("Answer: ", 1)[1]
        rows = [answer[i * 5 : (i + 1) * 5] for i in range(5)]
        assert rows == ["".join(r[j] for r in rows) for j in range(5)], example["id"]
        assert example["query"].count("\n") == 9 and "Answer" not in example["query"]


def test_loader_reads_the_tree_of_thoughts_file(shared_data):
    games = load_crosswords(path=str(shared_data / "crosswords" / "mini0505.json"))
    assert len(games) == 156
    usual = load_crosswords(path=str(shared_data / "crosswords" / "mini0505.json"), every=5)[:20]
    assert [g["id"] for g in usual[:3]] == ["tot-0", "tot-5", "tot-10"]
    assert all(len(g["eval_goals"].rsplit("Answer: ", 1)[1]) == 25 for g in games)


def test_loader_errors_are_clear(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[[["only one clue"], ["A"]]]')
    with pytest.raises(ValueError, match="Tree of Thoughts crosswords format"):
        load_crosswords(path=str(bad))
    with pytest.raises(FileNotFoundError, match="nope.json"):
        load_crosswords(path=str(tmp_path / "nope.json"))
    with pytest.raises(ValueError, match="colour"):
        load_crosswords(colour="red")


def test_search_reward_does_not_depend_on_the_answers(transition):
    with_answer = load_crosswords(oracle=True)[0]["query"]
    without = load_crosswords()[0]["query"]
    prm = CrosswordsPRM(ScriptedModel(scorer=lambda p, c: -2.0), "crosswords")
    state = transition.init_state()
    for word in ("h1. HEART", "h1. HORSE"):
        assert prm.fast_reward(state, EnvAction(word), with_answer) == prm.fast_reward(state, EnvAction(word), without)


def test_search_reward_mixes_clue_fit_and_board_coverage(transition):
    prm = CrosswordsPRM(ScriptedModel(), "crosswords", fast_weight=0.5)
    value, details = prm.reward(transition.init_state(), EnvAction("h1. HEART"), fast_reward=0.6)
    assert details["coverage"] == pytest.approx(0.2) and value == pytest.approx(0.4)


def test_oracle_reward_needs_the_explicit_flag(transition):
    oracle = CrosswordsOracleRM()
    with pytest.raises(ValueError, match="oracle=true"):
        oracle.fast_reward(transition.init_state(), EnvAction("h1. HEART"), load_crosswords()[0]["query"])
    query = load_crosswords(oracle=True)[0]["query"]
    assert oracle.fast_reward(transition.init_state(), EnvAction("h1. HEART"), query)[0] == 1.0
    assert oracle.fast_reward(transition.init_state(), EnvAction("h1. HORSE"), query)[0] == 0.0


def test_a_proposal_is_judged_against_the_answer_only_at_evaluation(transition, puzzle):
    assert transition.action_correct(puzzle["eval_goals"], "h1. HEART") is True
    assert transition.action_correct(puzzle["eval_goals"], "h1. HORSE") is False
    assert transition.action_correct(puzzle["query"], "h1. HEART") is None


def test_a_chat_model_sees_the_worked_example_as_a_turn_it_already_answered(transition, puzzle):
    from lits.components.factory import create_components

    chat = ScriptedModel(["h1. APPLE"], chat_native=True)
    policy = create_components("crosswords", chat).policy
    state = transition.init_state(**puzzle)
    messages = policy.prompt.messages(state, puzzle["query"], ["h1. APPLE"])
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == "h1. ASSET" and "ASSET" not in messages[0]["content"]
    assert "Filled: h2" in messages[1]["content"] and "Reply with one answer" in messages[-1]["content"]
