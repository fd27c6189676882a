"""What a server billed for one call: every reply it gave, whether the call used it or not.

A call may get more replies than the one it returns: a hedged copy that lost
(:mod:`lits.lm.http.hedging`) and a 2xx reply the retry loop rejected (empty
content, no choices) were both computed and billed by the server.
:class:`CallBill` tallies them while the call runs; when it ends, the retry
transport adds its requests to the run's counters and hands the unused
replies to the model, which puts their tokens and price in the inference log
(kind :data:`lits.runtime.observability.UNUSED_REPLY`), so every cost figure includes them.

A copy the call stopped waiting for (cut short, or still running when the call
returned) never shows its usage: it is counted with the usage of the reply the
call used, the same request, and marked ``estimated``.  That is an upper bound:
a server that stops computing when the client goes away bills less.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from lits.io import fastjson


@dataclass(frozen=True)
class UnusedReply:
    """One reply the server billed that the call did not use."""

    tokens_in: int
    tokens_out: int
    #: True when its usage was never seen (an abandoned copy) and the used reply's stands in for it.
    estimated: bool = False


@dataclass
class CallSpend:
    """What one call cost beyond the reply it returned."""

    #: Requests the server answered (every attempt's reply, every copy's, abandoned copies included).
    requests: int = 0
    unused: list[UnusedReply] = field(default_factory=list)


def reply_usage(reply: httpx.Response | None) -> tuple[int, int] | None:
    """Prompt and completion tokens a 2xx reply says it used; None when it says nothing."""
    if reply is None or not 200 <= reply.status_code < 300:
        return None
    data: Any = reply.extensions.get("lits_json")  # parsed already by the reply check
    if data is None:
        try:
            data = fastjson.loads(reply.content)
        except (ValueError, httpx.ResponseNotRead):
            return None
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return None
    try:
        return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    except (TypeError, ValueError):
        return None


class CallBill:
    """The replies one call got, as they come (a :class:`lits.lm.http.hedging.Leftovers`); one thread only."""

    def __init__(self) -> None:
        self.requests = 0
        self._unused: list[tuple[int, int]] = []
        self._abandoned = 0
        #: The last reply seen: an abandoned copy's estimate when the call fails (read only then).
        self._last: httpx.Response | None = None

    def answered(self, reply: httpx.Response) -> None:
        """An attempt's reply (the one its hedged copies raced for)."""
        self.requests += 1
        self._last = reply

    def rejected(self, reply: httpx.Response) -> None:
        """An attempt's reply that is retried or given up on: not used, billed all the same."""
        usage = reply_usage(reply)
        if usage is not None:
            self._unused.append(usage)

    def unused(self, reply: httpx.Response) -> None:
        self.requests += 1
        self.rejected(reply)

    def abandoned(self) -> None:
        self.requests += 1
        self._abandoned += 1

    def settle(self, used: httpx.Response | None) -> CallSpend:
        """What the call cost beyond ``used`` (the reply it returns; None when it failed)."""
        replies = [UnusedReply(tokens_in, tokens_out) for tokens_in, tokens_out in self._unused]
        if self._abandoned:
            tokens_in, tokens_out = reply_usage(used) or reply_usage(self._last) or (0, 0)
            replies += [UnusedReply(tokens_in, tokens_out, estimated=True)] * self._abandoned
        return CallSpend(self.requests, replies)
