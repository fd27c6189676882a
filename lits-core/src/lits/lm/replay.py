"""Replaying a recorded run: the response store that answers a new search from another run's replies.

A run records every reply in its response cache under the request's key: backend identity, prompt, every
sampling setting but ``n`` (seed included), and the sample's number.  A replay looks each key up in its own
cache, then in the recorded run's: so the k-th sample of a request is the k-th sample recorded for that
request, a request of 3 samples is answered by the first 3 of 5 recorded, and a request of 5 where 3 were
recorded pays for the last 2 only.  What came from the recorded run is copied into the replay's own cache,
which therefore holds every reply the replay used (a replay of the replay, or its ``--resume``, needs
nothing else).  Offline, a request with a sample recorded nowhere raises :class:`ReplayMiss` before any
model is asked.  When a replay is a fair sample of the new setting: ``docs/comparing-methods.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from lits.lm.base import ModelError
from lits.lm.cache import ResponseCache
from lits.runtime.observability import context_tag


class ReplayMiss(ModelError):
    """Offline, a request that the recorded run never made (or made with fewer samples): nothing was paid.

    It fails the instance that asked, named in one line; the others go on (it is no server failure)."""


class ReplayStore:
    """The replay's own cache first, then the recorded run's (read, never written); see the module's doc."""

    def __init__(self, own: ResponseCache, recorded: ResponseCache, *, source: Path, offline: bool = False) -> None:
        self.own, self.recorded, self.source, self.offline = own, recorded, source, offline

    def get(self, key: str) -> object:
        return self.get_many((key,))[0]

    def get_many(self, keys: Sequence[str]) -> list[object]:
        found = self.own.get_many(keys)
        missing = [i for i, value in enumerate(found) if value is None]
        if not missing:
            return found
        recorded = self.recorded.get_many([keys[i] for i in missing])
        copied: list[tuple[str, object]] = []
        for i, value in zip(missing, recorded):
            if value is not None:
                found[i] = value
                copied.append((keys[i], value))
        if copied:
            self.own.put_many(copied)
        unanswered = len(missing) - len(copied)
        if unanswered and self.offline:
            raise ReplayMiss(
                f"offline replay: {self.source} recorded {len(keys) - unanswered} of the {len(keys)} "
                f"sample(s) {_asker()} asked for; run again without --offline to pay for the rest"
            )
        return found

    def put(self, key: str, value: object) -> None:
        self.own.put(key, value)

    def put_many(self, entries: Sequence[tuple[str, object]]) -> None:
        self.own.put_many(entries)

    def commit(self) -> None:
        self.own.commit()

    def close(self) -> None:
        self.own.close()
        self.recorded.close()


def _asker() -> str:
    """Which call asked, from the inference log's tags: ``the policy (expand, depth 2)``."""
    component: object | None = context_tag("component")
    where = [str(tag) for tag in (context_tag("phase"),) if tag is not None]
    depth = context_tag("depth")
    if depth is not None:
        where.append(f"depth {depth}")
    who = f"the {component}" if component is not None else "a call"
    return f"{who} ({', '.join(where)})" if where else who
