"""A deterministic stand-in for a language model, for tests and examples."""

from __future__ import annotations

import functools
import hashlib
import re
import threading
from typing import Callable, NamedTuple, Sequence, Unpack

from lits.lm.base import CallOptions, Completion, GenerationParams, LanguageModel, Prompt, TokenLogprob
from lits.lm.usage import note_request
from lits.testing.prefix_cache import PagedPrefixCache

Responder = Callable[[str, GenerationParams, int], str]
Scorer = Callable[[str, str], float]


def prompt_text(prompt: Prompt) -> str:
    """The prompt as one string (chat messages joined by role)."""
    if isinstance(prompt, str):
        return prompt
    return "\n".join([f"{m['role']}: {m['content']}" for m in prompt])


class ScriptedModel(LanguageModel):
    """Answers from a script; the same request always gets the same answer.

    ``responses`` is a list (served in order, cycling) or a function
    ``(prompt_text, params, sample_index) -> str``.  Without a script it acts
    like an obedient model (:func:`obedient_reply`): when the prompt lists
    actions it proposes listed ones, distinct across the ``n`` samples of a
    request; it answers Yes to yes/no questions.  ``scorer(prompt,
    continuation) -> logprob`` enables :meth:`loglikelihood` and gives each
    reply its log-probability when a call asks for them; without it the model
    reports it cannot score.  ``chat_native`` makes components send it chat
    messages (as to a chat server).  With a ``prefix_cache`` it reports the prompt tokens served from it, as
    a server with a prefix cache does.  Every request is kept in ``calls``.
    """

    def __init__(
        self,
        responses: Sequence[str] | Responder | None = None,
        *,
        scorer: Scorer | None = None,
        name: str = "scripted",
        concurrency: int = 1,
        chat_native: bool = False,
        prefix_cache: PagedPrefixCache | None = None,
        **calls: Unpack[CallOptions],
    ) -> None:
        super().__init__(concurrency=concurrency, **calls)
        self.name = name
        self.chat_native = chat_native
        self._responses = responses
        self._scorer = scorer
        self.supports_loglikelihood = self.cheap_loglikelihood = scorer is not None
        self._lock = threading.Lock()
        self._next = 0
        self.calls: list[tuple[str, GenerationParams]] = []
        self.prefix_cache = prefix_cache

    def describe(self) -> dict[str, object]:
        script = "function" if callable(self._responses) else "list" if self._responses else "obedient"
        return {**super().describe(), "script": script, "scores": self._scorer is not None}

    def _generate(self, prompt: Prompt, params: GenerationParams) -> list[Completion]:
        text = prompt_text(prompt)
        with self._lock:
            self.calls.append((text, params))
        if self.prefix_cache is not None:
            note_request(tokens_cached=self.prefix_cache.serve(text.split()))
        outs = []
        tokens_in = prompt_words(prompt, text)
        # obedient: what the samples share worked out once per request, a chat prompt's head once per run
        shared = None if self._responses else _chat_answer(prompt, params.temperature)
        for i in range(params.n):
            if shared is None:
                reply = self._reply(text, params, i)
            else:
                answer, order = shared
                if order:
                    reply = order[i % len(order)]
                else:
                    reply = answer if answer is not None else _stable_hash(f"{text}|{params.temperature}|{i}")
            for stop in params.stop:
                if stop and stop in reply:
                    reply = reply[: reply.index(stop)]
            # With a scorer, a request for log-probabilities gets the reply's as one token.
            scorer = self._scorer if params.top_logprobs else None
            outs.append(
                Completion(
                    reply,
                    tokens_in=tokens_in if i == 0 else 0,
                    tokens_out=word_count(reply),
                    finish_reason="stop",
                    logprobs=[TokenLogprob(reply, scorer(text, reply))] if scorer is not None else None,
                )
            )
        return outs

    def _reply(self, text: str, params: GenerationParams, index: int) -> str:
        if callable(self._responses):
            return self._responses(text, params, index)
        if not self._responses:
            return obedient_reply(text, params, index)
        with self._lock:
            reply = self._responses[self._next % len(self._responses)]
            self._next += 1
        return reply

    def _loglikelihood(self, prompt: str, continuations: list[str]) -> tuple[list[float], int]:
        if self._scorer is None:
            return super()._loglikelihood(prompt, continuations)
        with self._lock:
            self.calls.append((prompt, GenerationParams(n=len(continuations), max_tokens=0)))
        return [float(self._scorer(prompt, c)) for c in continuations], word_count(prompt)


#: Each byte that ``str.isspace`` calls whitespace becomes a space, every other byte an "x".
_SPACES = bytes(0x20 if chr(i).isspace() else 0x78 for i in range(128)) + b"x" * 128


def word_count(text: str) -> int:
    """``len(text.split())``, the scripted model's token count, without making a string per word
    (for ASCII text, 3x faster: the model counts every prompt)."""
    if not text.isascii():
        return len(text.split())
    marks = text.encode("ascii").translate(_SPACES)
    return marks.count(b" x") + marks.startswith(b"x")


def prompt_words(prompt: Prompt, text: str) -> int:
    """``word_count(text)`` of ``text = prompt_text(prompt)``, a chat prompt's counted message by message: the
    join is whitespace, so no word spans two messages, and a message seen before (the system prompt, earlier
    turns: most of every request) is counted once."""
    if isinstance(prompt, str):
        return word_count(text)
    total = 0
    for message in prompt:
        role, content = message["role"], message["content"]
        if type(role) is not str or type(content) is not str:  # content parts: counted as printed
            total += word_count(f"{role}: {content}")
            continue
        count = _MESSAGE_WORDS.get((role, content))
        if count is None:
            if len(_MESSAGE_WORDS) >= 4096:
                _MESSAGE_WORDS.clear()
            count = _MESSAGE_WORDS[role, content] = word_count(f"{role}: {content}")
        total += count
    return total


#: Word counts of chat messages already counted (role, content), bounded.
_MESSAGE_WORDS: dict[tuple[str, str], int] = {}


def listed_actions(text: str, lower: str | None = None) -> list[str]:
    """The lines under the last heading that ends in "actions:" (e.g. "Valid actions:"), up to a blank line
    (``lower``: ``text.lower()``, when the caller has it)."""
    return _listing(text, text.lower() if lower is None else lower) or []


def _listing(text: str, lower: str) -> list[str] | None:
    """:func:`listed_actions`, None when ``text`` has no such heading at all."""
    end = len(text)
    while True:  # from the end: a few-shot prompt's examples hold earlier headings
        at = lower.rfind("actions:", 0, end)
        if at < 0:
            return None
        line_end = text.find("\n", at)
        line_end = len(text) if line_end < 0 else line_end
        if not text[at + len("actions:") : line_end].strip():
            break
        end = at
    listed = []
    for line in text[line_end + 1 :].splitlines():
        if not line.strip():
            break
        listed.append(line.strip())
    return listed


def obedient_reply(text: str, params: GenerationParams, index: int) -> str:
    """A listed action (sample ``index`` of a fixed shuffle: distinct within a request), Yes to each
    numbered question or to one question, or a hash."""
    answer, order = _obedient_answer(text, params.temperature)
    if order:
        return order[index % len(order)]
    return answer if answer is not None else _stable_hash(f"{text}|{params.temperature}|{index}")


@functools.lru_cache(maxsize=16, typed=True)  # typed: temperature 1 and 1.0 hash differently
def _obedient_answer(text: str, temperature: float) -> tuple[str | None, tuple[str, ...]]:
    """What every sample of a request shares: the answer to its questions, or the shuffled listed actions."""
    lower = text.lower()
    question = "yes or no" in lower
    numbered = _NUMBERED.findall("\n" + text) if question else []
    if numbered:
        return "\n".join(f"{n}: Yes" for n in numbered), ()
    listed = listed_actions(text, lower)
    if listed:
        return None, _shuffled(listed, hashlib.sha256(f"{text}|{temperature}|".encode()))
    return ("Yes" if question else None), ()


def _shuffled(listed: list[str], stem: "hashlib._Hash") -> tuple[str, ...]:
    """The listed actions in a fixed hash order: ``stem`` holds ``text|temperature|``, each action is
    ranked by ``_stable_hash`` of that text and the action."""

    def rank(action: str) -> str:
        each = stem.copy()
        each.update(action.encode())
        return "h" + each.hexdigest()[:8]

    return tuple(sorted(listed, key=rank))


def _chat_answer(prompt: Prompt, temperature: float) -> tuple[str | None, tuple[str, ...]] | None:
    """``_obedient_answer(prompt_text(prompt), temperature)`` of an ASCII chat prompt, worked out from its
    messages: the head's (system prompt, examples: the same in every request) once, then only the last
    message (the state and the question).  None: not such a prompt, or one whose listed actions start before
    its last message (the whole text decides)."""
    if isinstance(prompt, str) or len(prompt) < 2:
        return None
    head: list[tuple[str, str]] = []
    for message in prompt:
        role, content = message["role"], message["content"]
        if type(role) is not str or type(content) is not str or not (role.isascii() and content.isascii()):
            return None
        head.append((role, content))
    role, content = head.pop()
    facts = _head_facts(tuple(head))
    last = f"{role}: {content}"
    lower = last.lower()  # ASCII: the joined text's lower case is its parts' (and keeps their positions)
    question = facts.question or "yes or no" in lower
    numbered = [*facts.numbered, *_NUMBERED.findall("\n" + last)] if question else []
    if numbered:
        return "\n".join(f"{n}: Yes" for n in numbered), ()
    listed = _listing(last, lower)
    if listed is None and facts.headed:
        return None
    if listed:
        stem = facts.digest.copy()  # the head hashed once
        stem.update(f"{last}|{temperature}|".encode())
        return None, _shuffled(listed, stem)
    return ("Yes" if question else None), ()


class _HeadFacts(NamedTuple):
    """What :func:`_obedient_answer` reads in a chat prompt's messages before its last one."""

    question: bool  # "yes or no" in them
    numbered: tuple[str, ...]  # their numbered lines' numbers
    headed: bool  # an "actions:" heading among them
    digest: "hashlib._Hash"  # the hash state of their text and the newline after it


def _head_facts(head: tuple[tuple[str, str], ...]) -> _HeadFacts:
    facts = _HEADS.get(head)
    if facts is None:
        text = "\n".join(f"{role}: {content}" for role, content in head)
        lower = text.lower()
        facts = _HeadFacts(
            "yes or no" in lower,
            tuple(_NUMBERED.findall("\n" + text)),
            _listing(text, lower) is not None,
            hashlib.sha256(f"{text}\n".encode()),
        )
        if len(_HEADS) >= 64:
            _HEADS.clear()
        _HEADS[head] = facts
    return facts


#: :func:`_head_facts` by the head's (role, content) pairs, bounded.
_HEADS: dict[tuple[tuple[str, str], ...], _HeadFacts] = {}


#: A numbered line ("2. ...") found after a newline: ``re.findall(r"^(\d+)\. ", text, re.MULTILINE)`` as
#: ``_NUMBERED.findall("\n" + text)``, 10x faster (the search runs to the next newline, not every position).
_NUMBERED = re.compile(r"\n(\d+)\. ")


def _stable_hash(text: str) -> str:
    return "h" + hashlib.sha256(text.encode()).hexdigest()[:8]
