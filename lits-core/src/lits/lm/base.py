"""The language-model interface every backend implements.

Components call models synchronously; backends are thread-safe so that the
agents can keep several independent calls in flight from worker threads, each
backend bounding its own concurrency with :class:`CallLimiter`.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence, TypedDict, Unpack, cast

from lits.runtime.concurrency import tick_round
from lits.lm.cache import EncodedJSON, ResponseStore, encoded, generate_keys, request_key
from lits.lm.server.constraints import ReplyLines, reply_lines as as_reply_lines
from lits.lm.limits import CallLimiter, Limiter
from lits.lm.usage import CallUsage, measuring
from lits.runtime.observability import InferenceRecord, record_call


class Message(TypedDict):
    role: str
    content: str


Prompt = str | Sequence[Message]
"""A completion prompt (``str``) or a chat conversation (list of messages)."""


class _TokenLogprobJSON(TypedDict):
    token: str
    logprob: float
    top: dict[str, float]


class CompletionJSON(TypedDict):
    """A :class:`Completion` as the response cache stores it."""

    text: str
    tokens_in: int
    tokens_out: int
    finish_reason: str | None
    logprobs: list[_TokenLogprobJSON] | None


class SamplingArgs(TypedDict, total=False):
    """The keyword arguments of :meth:`LanguageModel.generate`, for wrappers that pass them on."""

    n: int
    temperature: float
    max_tokens: int
    stop: Sequence[str] | str | None
    top_logprobs: int
    seed: int | None
    reply_lines: Sequence[Sequence[str]] | None


class CallOptions(TypedDict, total=False):
    """How a run calls a model, whatever its backend: every backend's constructor takes these (``**calls``)
    and hands them to :class:`LanguageModel`, so a model is complete once built."""

    log_prompts: bool
    constrain_replies: bool
    sampling: Mapping[str, Any]
    limiter: Limiter


#: The names of :class:`CallOptions`, for a factory that passes on only what its backend takes.
CALL_OPTIONS: tuple[str, ...] = tuple(CallOptions.__annotations__)


def call_options(options: Mapping[str, object]) -> CallOptions:
    """The :class:`CallOptions` among a factory's ``**options`` (the rest are the backend's own)."""
    return cast(CallOptions, {k: options[k] for k in CALL_OPTIONS if k in options})


class ModelError(RuntimeError):
    """A model call failed for good (after retries); the message names the server."""


class LoglikelihoodUnsupported(ModelError):
    """The backend cannot score continuations (no prompt log-probabilities)."""


class ServerUnreachable(ModelError):
    """The server has never answered (a wrong URL, or it is not running): no instance can succeed."""


class CallsStopped(BaseException):
    """Raised instead of starting a model call while the run is stopping (Ctrl-C, a tripped breaker).

    A ``BaseException``, like ``KeyboardInterrupt``, so that no component's
    ``except Exception`` turns it into a fallback answer: the instance must
    stop unfinished (its journal lets ``--resume`` continue it), never finish
    with different results.
    """


_STOPPING = threading.Event()
#: The sampling stream of the calls made in this context (see :func:`sampling_stream`).
_STREAM: contextvars.ContextVar[int | None] = contextvars.ContextVar("lits_sampling_stream", default=None)


@contextlib.contextmanager
def sampling_stream(index: int) -> Iterator[None]:
    """Calls made inside sample on stream ``index``: their seed is offset by it (from 0 when unset).

    Independent samples of the same request (self-consistency's chains) are
    then different requests, to the server and to the response cache alike.
    Streams nest: inside stream ``s`` (an attempt), stream ``index`` is ``s + index``.
    """
    token = _STREAM.set((_STREAM.get() or 0) + index)
    try:
        yield
    finally:
        _STREAM.reset(token)


#: Completions of the calls made in this context, kept by :func:`recording_replies`.
_REPLIES: contextvars.ContextVar[list["Completion"] | None] = contextvars.ContextVar(
    "lits_recorded_replies", default=None
)


@contextlib.contextmanager
def recording_replies() -> Iterator[list["Completion"]]:
    """Calls made inside ask for token log-probabilities and add their completions to the list yielded.

    How a BN evaluator learns how sure the policy's model was of a step without the policy's help.
    A backend that cannot give log-probabilities returns completions whose ``logprobs`` is None.
    """
    replies: list[Completion] = []
    token = _REPLIES.set(replies)
    try:
        yield replies
    finally:
        _REPLIES.reset(token)


def stop_new_calls(stopping: bool = True) -> None:
    """From now on every model call raises :class:`CallsStopped` (``False`` lifts that)."""
    if stopping:
        _STOPPING.set()
    else:
        _STOPPING.clear()


def calls_stopping() -> bool:
    return _STOPPING.is_set()


def check_calls_allowed() -> None:
    """Raise :class:`CallsStopped` when the run is stopping (called before each call and attempt)."""
    if _STOPPING.is_set():
        raise CallsStopped("the run is stopping: no new model calls")


@dataclass(frozen=True)
class TokenLogprob:
    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)


class Completion(str):
    """One generated text.

    A ``str`` subclass so seed-style code can use it directly (``f"{answer}"``)
    or through ``.text``; it also carries token counts and log-probabilities.
    """

    tokens_in: int
    tokens_out: int
    logprobs: tuple[TokenLogprob, ...] | None
    finish_reason: str | None

    def __new__(
        cls,
        text: str,
        *,
        tokens_in: int = 0,
        tokens_out: int = 0,
        logprobs: Sequence[TokenLogprob] | None = None,
        finish_reason: str | None = None,
    ) -> "Completion":
        obj = super().__new__(cls, text)
        obj.tokens_in = tokens_in
        obj.tokens_out = tokens_out
        obj.logprobs = tuple(logprobs) if logprobs is not None else None
        obj.finish_reason = finish_reason
        return obj

    @property
    def text(self) -> str:
        return str.__str__(self)

    def __reduce__(self) -> tuple[type[str], tuple[str]]:
        return (str, (self.text,))


@dataclass(frozen=True)
class GenerationParams:
    """Sampling parameters; part of the cache key of a call."""

    n: int = 1
    temperature: float = 0.0
    max_tokens: int = 256
    stop: tuple[str, ...] = ()
    top_logprobs: int = 0
    seed: int | None = None
    #: Line i of each reply is one of ``reply_lines[i]`` where the server constrains decoding
    #: (:mod:`lits.lm.server.constraints`); empty: free text.
    reply_lines: ReplyLines = ()


#: Every sampling parameter but ``n`` (each sample has its own cache key).
_KEY_FIELDS = tuple(f.name for f in dataclasses.fields(GenerationParams) if f.name != "n")


def _key_body(params: GenerationParams) -> dict[str, object]:
    """The parameters a cache key holds; ``reply_lines`` only when set, so free-text keys stay as they were."""
    body: dict[str, object] = {f: getattr(params, f) for f in _KEY_FIELDS}
    if not params.reply_lines:
        del body["reply_lines"]
    return body


@functools.lru_cache(maxsize=256)
def _key_body_json(params: GenerationParams, _types: tuple[type, ...]) -> EncodedJSON:
    """:func:`_key_body` encoded once per distinct parameters (a search repeats a handful of them); ``_types``
    keeps apart what compares equal but encodes differently (temperature 1 and 1.0)."""
    return encoded(_key_body(params))


def _key_body_of(params: GenerationParams) -> object:
    types = (type(params.temperature), type(params.max_tokens), type(params.top_logprobs), type(params.seed))
    try:
        return _key_body_json(params, types)
    except TypeError:  # an unhashable override (``sampling``): encoded with the rest of the key
        return _key_body(params)


class LanguageModel(ABC):
    """Base class of all backends.

    Subclasses implement :meth:`_generate` (and optionally :meth:`_loglikelihood`);
    this class adds the concurrency limit and the inference-log record.
    """

    name: str = "model"
    #: True when :meth:`loglikelihood` works without a round trip to find out.
    supports_loglikelihood: bool = False
    #: True when scoring costs about what generating one token does (in-process models).
    #: Servers score by echoing the prompt with every position's log-probabilities,
    #: which llama.cpp's server does token by token unless started with ``--logits_all``.
    cheap_loglikelihood: bool = False
    #: True for chat-tuned endpoints: components then send messages, not raw text.
    chat_native: bool = False
    #: False when ``n`` samples cost ``n`` requests anyway (a server working one reply per slot): a
    #: component choosing distinct items may then ask for them one by one, each time among those left.
    batches_samples: bool = True
    #: What the backend declares it can never do (``"loglikelihood"``, ``"reply_lines"``, ``"n"``): a
    #: component that needs one refuses when it is built, before any call.
    cannot: frozenset[str] = frozenset()
    #: Price in currency units per 1M input / output tokens, for the run summary.
    price_in: float = 0.0
    price_out: float = 0.0

    def __init__(
        self,
        *,
        concurrency: int = 1,
        log_prompts: bool = False,
        constrain_replies: bool = True,
        sampling: Mapping[str, Any] | None = None,
        limiter: Limiter | None = None,
    ) -> None:
        #: Bounds the calls in flight; a Ray worker passes one shared by the cluster.
        self.limiter: Limiter = limiter if limiter is not None else CallLimiter(concurrency)
        #: Record each call's prompt and reply in the inference log (``--log-prompts``; off by
        #: default: prompts repeat the whole state and make the log many times larger).
        self.log_prompts = log_prompts
        #: False: ``reply_lines`` are dropped, every request is free text (``--free-replies``).
        self.constrain_replies = constrain_replies
        #: Sampling settings that win over the caller's (``--policy-model-arg temperature=0.2`` etc.).
        self.sampling: dict[str, Any] = dict(sampling or {})
        #: Optional persistent cache; see :meth:`use_cache`.
        self.cache: ResponseStore | None = None
        # Scores are deterministic, so policy and reward model share them.
        self._scores: dict[tuple[str, str], float] = {}
        self._scores_lock = threading.Lock()
        self._inflight: dict[str, threading.Lock] = {}

    # -- public API -----------------------------------------------------
    def generate(
        self,
        prompt: Prompt,
        *,
        n: int = 1,
        temperature: float = 0.0,
        max_tokens: int = 256,
        stop: Sequence[str] | str | None = None,
        top_logprobs: int = 0,
        seed: int | None = None,
        reply_lines: Sequence[Sequence[str]] | None = None,
    ) -> list[Completion]:
        """Return ``n`` completions of ``prompt`` (a string or chat messages).

        ``reply_lines``: line i of a reply is one of ``reply_lines[i]``, where the backend can hold
        decoding to that (:mod:`lits.lm.server.constraints`); callers still parse the reply."""
        check_calls_allowed()
        if isinstance(stop, str):
            stop = [stop]
        params = GenerationParams(
            n=max(1, n),
            temperature=temperature,
            max_tokens=max_tokens,
            stop=tuple(stop or ()),
            top_logprobs=top_logprobs,
            seed=seed,
            reply_lines=as_reply_lines(reply_lines) if self.constrain_replies else (),
        )
        if getattr(self, "sampling", None):  # a plugin backend may not call our __init__
            params = dataclasses.replace(params, **self.sampling)
        stream = _STREAM.get()
        if stream is not None:
            params = dataclasses.replace(params, seed=(params.seed or 0) + stream)
        recorded = _REPLIES.get()
        if recorded is None:
            return self._generate_once(prompt, params)
        if not params.top_logprobs:
            params = dataclasses.replace(params, top_logprobs=1)
        outs = self._generate_once(prompt, params)
        recorded.extend(outs)
        return outs

    def _generate_once(self, prompt: Prompt, params: GenerationParams) -> list[Completion]:
        """Through the cache when there is one; identical requests in flight at once are paid once."""
        if self.cache is None:
            return self._paid_generate(prompt, params)
        keys = self._sample_keys(prompt, params)
        with self._scores_lock:
            lock = self._inflight.setdefault(keys[0], threading.Lock())
        try:
            with lock:
                return self._cached_generate(prompt, params, keys)
        finally:
            with self._scores_lock:
                if not lock.locked():
                    self._inflight.pop(keys[0], None)

    def _cached_generate(self, prompt: Prompt, params: GenerationParams, keys: list[str]) -> list[Completion]:
        assert self.cache is not None
        found = cast("list[CompletionJSON | None]", self.cache.get_many(keys))
        missing = [i for i, hit in enumerate(found) if hit is None]
        if len(missing) < params.n:
            hits = [v["text"] for v in found if v is not None] if self.log_prompts else None
            self._record_raw("generate", 0, 0, 0.0, cached=True, prompt=prompt, reply=hits)
        if not missing:
            return [_completion_from_json(v) for v in found if v is not None]
        fresh = self._paid_generate(
            prompt, params if len(missing) == params.n else dataclasses.replace(params, n=len(missing))
        )
        if len(missing) == params.n and len(fresh) == params.n:  # nothing from the cache: no round trip
            self.cache.put_many([(keys[i], _completion_to_json(c)) for i, c in enumerate(fresh)])
            return list(fresh)
        stored: list[tuple[str, object]] = []
        for i, completion in zip(missing, fresh):
            found[i] = _completion_to_json(completion)
            stored.append((keys[i], found[i]))
        self.cache.put_many(stored)
        return [_completion_from_json(v) for v in found if v is not None]

    def _paid_generate(self, prompt: Prompt, params: GenerationParams) -> list[Completion]:
        tick_round()
        start = time.perf_counter()
        with measuring() as usage, self.limiter:  # the limiter notes any wait for its slot
            check_calls_allowed()  # a call that queued for a slot must not start once the run stops
            outs = self._generate(prompt, params)
        self._record("generate", outs, time.perf_counter() - start, prompt=prompt, usage=usage)
        return outs

    def use_cache(self, cache: ResponseStore | None) -> None:
        """Serve repeated requests from ``cache`` (None turns caching off)."""
        self.cache = cache

    def identity(self) -> str:
        """What distinguishes this backend's answers (part of every cache key)."""
        return f"{type(self).__name__}:{self.name}"

    def _key(self, kind: str, prompt: object, params: object, index: int) -> str:
        if isinstance(params, GenerationParams):
            body: object = _key_body(params)
        else:
            body = params
        return request_key(self.identity(), kind, {"prompt": prompt, "params": body, "sample": index})

    def _sample_keys(self, prompt: Prompt, params: GenerationParams) -> list[str]:
        """The cache keys of samples 0..n-1 (what :meth:`_key` gives each, the request encoded once)."""
        return generate_keys(self.identity(), _key_body_of(params), prompt, params.n)

    def complete(self, prompt: str, **params: Unpack[SamplingArgs]) -> Completion:
        """One completion of a plain-text prompt."""
        return self.generate(prompt, **params)[0]

    def chat(self, messages: Sequence[Message], **params: Unpack[SamplingArgs]) -> Completion:
        """One reply to a chat conversation."""
        return self.generate(list(messages), **params)[0]

    def loglikelihood(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        """Total log-probability of each continuation given ``prompt``.

        Raises :class:`LoglikelihoodUnsupported` when the backend cannot score.
        """
        check_calls_allowed()
        with self._scores_lock:
            missing = [c for c in dict.fromkeys(continuations) if (prompt, c) not in self._scores]
        if missing and self.cache is not None:
            stored = {c: cast(float | None, self.cache.get(self._key("loglikelihood", prompt, c, 0))) for c in missing}
            hits = {c: v for c, v in stored.items() if v is not None}
            if hits:
                self._record_raw("loglikelihood", 0, 0, 0.0, cached=True, prompt=prompt, reply=hits)
                with self._scores_lock:
                    self._scores.update({(prompt, c): float(v) for c, v in hits.items()})
                missing = [c for c in missing if c not in hits]
        if missing:
            tick_round()
            start = time.perf_counter()
            with measuring() as usage, self.limiter:
                check_calls_allowed()
                scores, tokens_in = self._loglikelihood(prompt, missing)
            self._record_raw(
                "loglikelihood",
                tokens_in,
                0,
                time.perf_counter() - start,
                prompt=prompt,
                reply=dict(zip(missing, scores)) if self.log_prompts else None,
                usage=usage,
            )
            with self._scores_lock:
                self._scores.update({(prompt, c): s for c, s in zip(missing, scores)})
            if self.cache is not None:
                for c, score in zip(missing, scores):
                    self.cache.put(self._key("loglikelihood", prompt, c, 0), score)
        with self._scores_lock:
            return [self._scores[(prompt, c)] for c in continuations]

    # -- for subclasses -------------------------------------------------
    @abstractmethod
    def _generate(self, prompt: Prompt, params: GenerationParams) -> list[Completion]: ...

    def _loglikelihood(self, prompt: str, continuations: list[str]) -> tuple[list[float], int]:
        """Return the scores and the number of tokens processed."""
        raise LoglikelihoodUnsupported(f"{self.name} cannot score continuations")

    def close(self) -> None:
        """Release connections or model memory."""

    def describe(self) -> dict[str, object]:
        """What a run records about this backend in ``config.json`` (never a key)."""
        return {"backend": type(self).__name__, "name": self.name}

    def notices(self) -> list[str]:
        """What the console says about this backend before a run (a setting that costs money)."""
        return []

    def fault_stats(self) -> dict[str, float | int]:
        """Retries, seconds lost to faults and calls given up (none for in-process backends)."""
        return {"retries": 0, "seconds_lost": 0.0, "failed_calls": 0}

    # -- logging --------------------------------------------------------
    def _record(
        self,
        kind: str,
        outs: Sequence[Completion],
        seconds: float,
        prompt: Prompt | None = None,
        usage: CallUsage | None = None,
    ) -> None:
        # Each completion carries the prompt tokens billed for it (0 when shared).
        tokens_in = tokens_out = 0
        for c in outs:
            tokens_in += c.tokens_in
            tokens_out += c.tokens_out
        reply = [c.text for c in outs] if self.log_prompts else None
        self._record_raw(kind, tokens_in, tokens_out, seconds, prompt=prompt, reply=reply, usage=usage)

    def call_cost(self, tokens_in: int, tokens_out: int, usage: CallUsage | None) -> float:
        """What a call cost at ``price_in``/``price_out`` per 1M tokens; a backend whose server bills cached
        prompt tokens apart (hosted prompt caching) prices them from ``usage``."""
        return (tokens_in * self.price_in + tokens_out * self.price_out) / 1e6

    def _record_raw(
        self,
        kind: str,
        tokens_in: int,
        tokens_out: int,
        seconds: float,
        *,
        cached: bool = False,
        prompt: Prompt | None = None,
        reply: object = None,
        estimated: bool = False,
        usage: CallUsage | None = None,
    ) -> None:
        """``seconds``: the call's whole latency; the wait for a slot that ``usage`` noted is kept apart."""
        cost = self.call_cost(tokens_in, tokens_out, usage)
        logged = self.log_prompts and prompt is not None
        record = InferenceRecord(
            model=self.name,
            kind=kind,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            seconds=seconds,
            cost=cost,
            cached=cached,
            prompt=_plain(prompt) if logged and prompt is not None else None,
            reply=reply if logged else None,
            estimated=estimated,
        )
        if usage is not None:
            record.requests = usage.requests or 1  # a backend that notes none made one
            record.tokens_cached = usage.tokens_cached
            record.tokens_cache_write = usage.tokens_cache_write
            record.server_seconds = usage.server_seconds
            record.queued_seconds = min(usage.queued_seconds, seconds)
            record.seconds = seconds - record.queued_seconds
        record_call(record)


def _plain(prompt: Prompt) -> str | list[dict[str, object]]:
    """A prompt as JSON can hold it: text, or the chat messages as plain dicts."""
    return prompt if isinstance(prompt, str) else [dict(m) for m in prompt]


def _completion_to_json(c: Completion) -> CompletionJSON:
    return {
        "text": c.text,
        "tokens_in": c.tokens_in,
        "tokens_out": c.tokens_out,
        "finish_reason": c.finish_reason,
        "logprobs": None
        if c.logprobs is None
        else [{"token": t.token, "logprob": t.logprob, "top": dict(t.top)} for t in c.logprobs],
    }


def _completion_from_json(v: CompletionJSON) -> Completion:
    logprobs = v.get("logprobs")
    return Completion(
        v["text"],
        tokens_in=v.get("tokens_in", 0),
        tokens_out=v.get("tokens_out", 0),
        finish_reason=v.get("finish_reason"),
        logprobs=None if logprobs is None else [TokenLogprob(**t) for t in logprobs],
    )
