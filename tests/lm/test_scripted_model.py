"""The scripted model's answers and token counts: fixed functions of the request."""

from __future__ import annotations

import hashlib
import random

from lits.lm.base import GenerationParams
from lits.testing.scripted import ScriptedModel, obedient_reply, word_count


def test_a_token_count_is_the_number_of_whitespace_separated_words():
    rng = random.Random(7)
    alphabet = " \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\xa0\u2028ab."
    texts = ["", " ", "one", " two  words ", "é and ü"] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(3000)
    ]
    for text in texts:
        assert word_count(text) == len(text.split()), repr(text)


def test_samples_of_a_request_take_listed_actions_in_a_fixed_shuffle_of_hashes():
    prompt = "Goal: stack them.\nValid actions:\nunstack a\npick up b\npick up c\n"
    params = GenerationParams(n=3, temperature=0.7)
    listed = ["unstack a", "pick up b", "pick up c"]
    order = sorted(listed, key=lambda a: hashlib.sha256(f"{prompt}|0.7|{a}".encode()).hexdigest()[:8])
    assert [obedient_reply(prompt, params, i) for i in range(4)] == [*order, order[0]]
    assert [c.text for c in ScriptedModel().generate(prompt, n=3, temperature=0.7)] == order


def test_temperatures_that_compare_equal_but_print_differently_shuffle_by_their_printed_form():
    prompt = "Valid actions:\n" + "\n".join(f"action {i}" for i in range(8)) + "\n"
    for temperature in (1.0, 1, 1.0):
        order = sorted(
            (f"action {i}" for i in range(8)),
            key=lambda a: hashlib.sha256(f"{prompt}|{temperature}|{a}".encode()).hexdigest()[:8],
        )
        assert obedient_reply(prompt, GenerationParams(temperature=temperature), 0) == order[0]


def test_a_scorer_gives_each_reply_its_log_probability_when_a_call_asks_for_them():
    model = ScriptedModel(["go"], scorer=lambda prompt, reply: -0.25)
    assert model.generate("q", top_logprobs=1)[0].logprobs[0].logprob == -0.25
    assert model.generate("q")[0].logprobs is None


def _chat(turn: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "Blocks rest on a table. " * 40},
        {"role": "user", "content": "Valid actions:\npick up the red block\n\nWhich one? " * 10},
        {"role": "assistant", "content": "pick up the red block"},
        {"role": "user", "content": turn},
    ]


def test_a_chat_prompts_token_count_is_the_words_of_its_messages_as_joined():
    from lits.testing.scripted import prompt_text

    model = ScriptedModel(chat_native=True)
    for turn in ("Valid actions:\nstack a\nunstack b\n", " padded  \t turn ", "", "é und ü\u2028x"):
        prompt = _chat(turn)
        assert model.generate(prompt)[0].tokens_in == len(prompt_text(prompt).split())


def test_a_chat_prompts_messages_seen_before_are_not_counted_again(monkeypatch):
    from lits.testing import scripted

    model = ScriptedModel(chat_native=True)
    model.generate(_chat("Valid actions:\nstack a\n"))
    counted: list[int] = []
    count = scripted.word_count
    monkeypatch.setattr(scripted, "word_count", lambda text: (counted.append(len(text)), count(text))[1])
    model.generate(_chat("Valid actions:\nunstack b\n"))
    assert sum(counted) < 100  # the new turn and the reply, not the ~2 KB head again


def test_numbered_questions_are_those_of_numbered_lines_anywhere_in_the_prompt():
    import re

    texts = [
        "1. first\n2. second\nYes or no?",
        "Yes or no: 10. ten\n 3. indented\n3.no space\n12. twelve\r\n4. after CR",
        "yes or no\n\n7. seven\n\n\n8. eight",
        "٣. arabic-indic digit\nyes or no",
    ]
    for text in texts:
        expected = re.findall(r"^(\d+)\. ", text, re.MULTILINE)
        reply = obedient_reply(text, GenerationParams(), 0)
        assert reply == ("\n".join(f"{n}: Yes" for n in expected) if expected else "Yes"), text


def _hashed_bytes(monkeypatch) -> list[int]:
    """The sizes of the texts the scripted model hashes from now on."""
    from lits.testing import scripted

    sizes: list[int] = []
    sha256 = hashlib.sha256

    def counting(data: bytes = b"") -> "hashlib._Hash":
        sizes.append(len(data))
        return sha256(data)

    monkeypatch.setattr(scripted.hashlib, "sha256", counting)
    return sizes


def test_a_chat_prompts_head_is_read_once_not_at_every_request(monkeypatch):
    model = ScriptedModel(chat_native=True)
    model.generate(_chat("Valid actions:\nstack a\nunstack b\n"))
    hashed = _hashed_bytes(monkeypatch)
    model.generate(_chat("Valid actions:\npick up c\nput down d\n"), n=2)
    assert sum(hashed) < 100  # the new turn, not the ~2 KB head again


def test_a_chat_prompt_gets_the_answers_its_joined_text_gets():
    from lits.testing.scripted import prompt_text

    model = ScriptedModel(chat_native=True)
    turns = [
        "Valid actions:\nstack a\nunstack b\npick up c\n",
        "Answer yes or no.\n1. stack a\n2. unstack b\n",
        "Is it solved? Yes or no.",
        "no question and no actions",
        "Valid actions: none here\n",
    ]
    heads = [
        _chat,
        lambda turn: [{"role": "system", "content": "Valid actions:\nwait\n"}, {"role": "user", "content": turn}],
        lambda turn: [{"role": "system", "content": "Say yes or no.\n7. first"}, {"role": "user", "content": turn}],
    ]
    for head in heads:
        for turn in turns:
            for temperature in (0.0, 1, 0.7):
                prompt = head(turn)
                params = GenerationParams(n=3, temperature=temperature)
                expected = [obedient_reply(prompt_text(prompt), params, i) for i in range(3)]
                assert [c.text for c in model.generate(prompt, n=3, temperature=temperature)] == expected
