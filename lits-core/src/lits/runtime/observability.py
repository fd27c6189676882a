"""Inference log: every model call, tagged with where in a run it happened.

Agents and components bind context (instance, component, phase, depth,
iteration) with :func:`call_context`; backends call :func:`record_call`; the
record picks the context up from :mod:`contextvars`, which worker threads
inherit through :func:`lits.runtime.concurrency.parallel_map`.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, TextIO

from lits.io import fastjson

#: The kind of a record for a reply the server billed that no call used (a hedged copy that lost, a reply the
#: retry loop rejected): its tokens and cost count, it is no call (:mod:`lits.lm.http.billing`).
UNUSED_REPLY = "unused"

_CONTEXT: contextvars.ContextVar[dict[str, object]] = contextvars.ContextVar("lits_call_context", default={})


class call_context:  # lower case: used like the function it replaced
    """Bind tags (e.g. ``component="policy"``, ``phase="expand"``) to calls made inside.

    A plain class, not ``@contextmanager``: every model call and search step enters several of these,
    and a generator-based one costs a few times more per use.
    """

    __slots__ = ("_tags", "_token")

    def __init__(self, **tags: object) -> None:
        self._tags = tags

    def __enter__(self) -> None:
        self._token = _CONTEXT.set({**_CONTEXT.get(), **self._tags})

    def __exit__(self, *exc: object) -> None:
        _CONTEXT.reset(self._token)


def current_context() -> dict[str, object]:
    return dict(_CONTEXT.get())


def context_tag(name: str) -> object:
    """One tag of the current context (None when unset), without copying the context."""
    return _CONTEXT.get().get(name)


@dataclass
class InferenceRecord:
    model: str
    kind: str
    tokens_in: int
    tokens_out: int
    seconds: float
    cost: float = 0.0
    cached: bool = False
    time: float = field(default_factory=time.time)
    context: dict[str, object] = field(default_factory=dict)
    #: With ``--log-prompts``: what was asked (text or chat messages) and what came back
    #: (completion texts; scored continuations with their log-probabilities).
    prompt: object = None
    reply: object = None
    #: An :data:`UNUSED_REPLY` whose usage was never seen: counted as the used reply's (an upper bound).
    estimated: bool = False
    # -- How the server accounted for the call (lits.lm.usage).  ``seconds`` is model time: the wait for a
    # slot is ``queued_seconds``.  In the JSONL line only when known and not the default (older logs read). --
    #: Server requests the call took (each sample on a one-slot server, each retry).
    requests: int = 1
    #: Prompt tokens (of ``tokens_in``) the server served from its prefix cache; None: it did not say.
    tokens_cached: int | None = None
    #: Prompt tokens (of ``tokens_in``) the server wrote to its prompt cache (hosted APIs); None: it did not say.
    tokens_cache_write: int | None = None
    #: Seconds the server says it worked on the call (llama.cpp's ``timings``); None: it did not say.
    server_seconds: float | None = None
    #: Seconds the call waited for a slot (``--concurrency``, a server's slots) before model time began.
    queued_seconds: float = 0.0

    def as_dict(self) -> dict[str, object]:
        """The JSONL line's fields (``dataclasses.asdict`` deep-copies, which costs per call)."""
        out: dict[str, object] = {
            "model": self.model,
            "kind": self.kind,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "seconds": self.seconds,
            "cost": self.cost,
            "cached": self.cached,
            "time": self.time,
            "context": self.context,
        }
        if self.prompt is not None:
            out["prompt"], out["reply"] = self.prompt, self.reply
        if self.estimated:
            out["estimated"] = True
        if self.requests != 1:
            out["requests"] = self.requests
        if self.tokens_cached is not None:
            out["tokens_cached"] = self.tokens_cached
        if self.tokens_cache_write is not None:
            out["tokens_cache_write"] = self.tokens_cache_write
        if self.server_seconds is not None:
            out["server_seconds"] = round(self.server_seconds, 6)
        if self.queued_seconds:
            out["queued_seconds"] = round(self.queued_seconds, 6)
        return out


class InferenceLog:
    """Thread-safe collector of records, optionally appended to a JSONL file."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.records: list[InferenceRecord] = []
        self._lock = threading.Lock()
        self._fh: TextIO | None = None
        #: Totals over ``records[:_counted]``, kept up to date so the progress line costs O(1), not O(run).
        self._running = _Running()
        self._by_instance: dict[object, list[InferenceRecord]] = {}
        self._counted = 0

    def add(self, record: InferenceRecord) -> None:
        line = fastjson.compact_or_str(record.as_dict()) + "\n"  # a line per model call: the fast encoder
        with self._lock:
            self.records.append(record)
            if self.path is not None:
                if self._fh is None:  # one open file per run, not per call
                    self._fh = self.path.open("a", encoding="utf-8")
                self._fh.write(line)
                self._fh.flush()

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None

    def summary(self, **filters: object) -> dict[str, float]:
        """Totals over the records whose context matches ``filters``."""
        with self._lock:
            for record in self.records[self._counted :]:
                self._running.add(record)
                self._by_instance.setdefault(record.context.get("instance"), []).append(record)
            self._counted = len(self.records)
            if not filters:
                return self._running.totals()
            instance = filters.get("instance")
            candidates = self.records
            if "instance" in filters and getattr(instance, "__hash__", None) is not None:
                candidates = self._by_instance.get(instance, [])  # an instance's own records, not the run's
            recs = [r for r in candidates if all(r.context.get(k) == v for k, v in filters.items())]
        return _totals(recs)

    def take(self, instance: object) -> list[InferenceRecord]:
        """Remove and return ``instance``'s records (a Ray worker hands them to the driver); the running totals
        start again over the records that remain."""
        with self._lock:
            mine = [r for r in self.records if r.context.get("instance") == instance]
            self.records = [r for r in self.records if r.context.get("instance") != instance]
            self._running, self._by_instance, self._counted = _Running(), {}, 0
        return mine

    def by(self, key: str) -> dict[str, dict[str, float]]:
        """Totals grouped by a context tag (e.g. ``component`` or ``phase``)."""
        groups: dict[str, list[InferenceRecord]] = {}
        with self._lock:
            for r in self.records:
                groups.setdefault(str(r.context.get(key)), []).append(r)
        return {k: _totals(v) for k, v in sorted(groups.items())}

    @classmethod
    def read(cls, path: Path) -> "InferenceLog":
        """Records of a JSONL log; a line torn by a crash or a full disk is skipped with a warning."""
        log = cls()
        if path.exists():
            torn = 0
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                if not line.strip():
                    continue
                try:
                    log.records.append(InferenceRecord(**json.loads(line)))
                except (ValueError, TypeError):
                    torn += 1
            if torn:
                warnings.warn(f"{path}: skipped {torn} damaged line(s)", stacklevel=2)
        return log


class _Running:
    """Paid calls, cache hits, tokens, model seconds and cost, added up one record at a time (so the run's
    totals can be kept as records arrive).  Tokens and cost include the replies no call used."""

    def __init__(self) -> None:
        self.calls = self.hits = self.tokens_in = self.tokens_out = self.unused = self.estimated = 0
        self.seconds: float = 0
        self.cost: float = 0
        self.requests = 0
        self.tokens_cached: int | None = None
        self.tokens_cache_write: int | None = None
        self.server_seconds: float | None = None
        self.queued_seconds: float = 0

    def add(self, record: InferenceRecord) -> None:
        if record.cached:
            self.hits += 1
            return
        self.tokens_in += record.tokens_in
        self.tokens_out += record.tokens_out
        self.cost += record.cost
        if record.tokens_cached is not None:
            self.tokens_cached = (self.tokens_cached or 0) + record.tokens_cached
        if record.tokens_cache_write is not None:
            self.tokens_cache_write = (self.tokens_cache_write or 0) + record.tokens_cache_write
        if record.kind == UNUSED_REPLY:
            self.unused += 1
            self.estimated += int(record.estimated)
            return
        self.calls += 1
        self.seconds += record.seconds
        self.requests += record.requests
        self.queued_seconds += record.queued_seconds
        if record.server_seconds is not None:
            self.server_seconds = (self.server_seconds or 0.0) + record.server_seconds

    def totals(self) -> dict[str, float]:
        """The totals; ``tokens_cached`` and ``server_seconds`` only when some call's server reported them, and
        the unused replies only when there were some (a run without them keeps the figures it always had)."""
        out: dict[str, float] = {
            "calls": self.calls,
            "cache_hits": self.hits,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "seconds": round(self.seconds, 3),
            "cost": round(self.cost, 6),
            "requests": self.requests,
            "queued_seconds": round(self.queued_seconds, 3),
        }
        if self.tokens_cached is not None:
            out["tokens_cached"] = self.tokens_cached
        if self.tokens_cache_write is not None:
            out["tokens_cache_write"] = self.tokens_cache_write
        if self.server_seconds is not None:
            out["server_seconds"] = round(self.server_seconds, 3)
        if self.unused:
            out["unused_replies"] = self.unused
            out["estimated_replies"] = self.estimated
        return out


def _totals(records: list[InferenceRecord]) -> dict[str, float]:
    """Paid calls, cache hits, tokens, model seconds and cost of ``records``."""
    running = _Running()
    for record in records:
        running.add(record)
    return running.totals()


_SINKS: list[InferenceLog] = []
_SINKS_LOCK = threading.Lock()


@contextlib.contextmanager
def collecting(log: InferenceLog) -> Iterator[InferenceLog]:
    """Send every record made while active (from any thread) to ``log``."""
    with _SINKS_LOCK:
        _SINKS.append(log)
    try:
        yield log
    finally:
        with _SINKS_LOCK:
            _SINKS.remove(log)


def record_call(record: InferenceRecord) -> None:
    record.context = {**_CONTEXT.get(), **record.context}
    with _SINKS_LOCK:
        sinks = list(_SINKS)
    for sink in sinks:
        sink.add(record)
