"""What a real instruct chat model exercises: chat replies, stop sequences, log-probability rewards."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from lits.components import parsing
from lits.components.factory import create_components
from lits.components.reward.generative import GenerativePRM
from lits.lm.openai_compat import OpenAICompatibleModel
from lits.registry import load_dataset
from lits.structures.env_grounded import EnvAction
from lits.structures.language_grounded import ThoughtState, ThoughtStep
from lits.testing.instruct_model import SHA256
from lits.export.step_ranking import StepPair, rank
from lits_math.prm import LogprobPRM

pytestmark = pytest.mark.realmodel


def test_the_cached_model_file_is_the_pinned_one(instruct_gguf: Path) -> None:
    digest = hashlib.sha256()
    with instruct_gguf.open("rb") as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
    assert digest.hexdigest() == SHA256


def test_a_chat_request_gets_a_counted_reply(instruct_model: OpenAICompatibleModel) -> None:
    reply = instruct_model.chat(
        [{"role": "user", "content": "What is 2 + 3? Reply with the number only."}], max_tokens=8
    )
    assert "5" in reply.text and reply.tokens_in > 0 and reply.tokens_out > 0


def test_a_stop_sequence_ends_the_reply_before_it(instruct_model: OpenAICompatibleModel) -> None:
    reply = instruct_model.chat(
        [{"role": "user", "content": "Name three colours, one per line, nothing else."}], max_tokens=30, stop=["\n"]
    )
    assert reply.text.strip() and "\n" not in reply.text and reply.finish_reason == "stop"


def test_the_logprob_prm_reads_the_same_score_from_log_probabilities_every_time(
    instruct_model: OpenAICompatibleModel, step_pairs: list[StepPair]
) -> None:
    pair = step_pairs[0]
    prm = LogprobPRM(base_model=instruct_model, task_name="gsm8k")
    state = ThoughtState([ThoughtStep(action=s) for s in pair.steps])
    scores = [prm.fast_reward(state, pair.correct, pair.question) for _ in range(2)]
    assert scores[0] == scores[1]
    assert scores[0][1]["route"] == "logprobs" and 0.0 < scores[0][0] < 1.0


#: Pairs whose wrong step is a plain slip (24 + 15 for 24 - 15, 12 + 5 for 12 * 5): both rankers, asked after the
#: same question, must score the right step above it (a ranker that scores both the same fails).  How often each
#: ranks the right step first over all 12 pairs, with its interval, is benchmarks/step_ranking.py's figure, not a
#: test's: 8 of 12 (logprob) and 9 of 12 (judge) have Wilson intervals 0.39-0.86 and 0.47-0.91, which include
#: chance, so "more often than not" was never shown by 12 pairs; these two have the widest margins for both.
CLEAR_SLIPS = (0, 1)


@pytest.mark.parametrize("ranker", [LogprobPRM, GenerativePRM], ids=["logprob", "generative"])
def test_each_ranker_scores_the_right_step_above_a_plain_slip(
    instruct_model: OpenAICompatibleModel, step_pairs: list[StepPair], ranker: type
) -> None:
    prm = ranker(base_model=instruct_model, task_name="gsm8k")
    for index in CLEAR_SLIPS:
        ranking = rank(prm, step_pairs[index])
        assert ranking.right_first, (index, step_pairs[index].wrong, ranking)


def test_a_blocksworld_policy_held_to_the_legal_actions_never_replies_with_an_illegal_one(
    instruct_model: OpenAICompatibleModel,
) -> None:
    parts = create_components("blocksworld", instruct_model, n_actions=2)
    example = load_dataset("blocksworld", steps="4", n=1)[0]
    state = parts.transition.init_state(**example)
    legal = parts.transition.generate_actions(state.env_state)
    steps = parts.policy.get_actions(state, n_actions=2, temperature=0.8, query=example["query"])
    stats = parts.policy.stats.as_dict()
    assert {str(s.action) for s in steps} <= set(legal)
    assert stats["invalid"] == 0 and stats["fallbacks"] == 0


def test_the_batched_judge_held_to_verdict_lines_answers_every_sibling(instruct_model: OpenAICompatibleModel) -> None:
    parts = create_components("blocksworld", instruct_model, n_actions=2)
    example = load_dataset("blocksworld", steps="4", n=1)[0]
    state = parts.transition.init_state(**example)
    actions = [EnvAction(a) for a in parts.transition.generate_actions(state.env_state)[:3]]
    parsing.take(None)  # counts made outside a run are kept under instance None
    judged = parts.reward_model.fast_rewards(state, actions, example["query"])
    counts = parsing.total(parsing.take(None))
    assert all(info.get("judged_with_siblings") for _value, info in judged)
    assert counts["replies"] == 1 and counts["unparseable"] == 0
