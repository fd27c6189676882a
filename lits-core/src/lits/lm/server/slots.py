"""How many requests a model server works on at once, where the server says.

A request sent beyond that waits in the server's queue, where our read
timeout runs against it and a slow queue looks like a hung server (a retry,
counted as a fault, that queues again).  Knowing the slots, the client keeps
the extra calls waiting in its own process instead, where waiting is not a
fault and is counted apart (:class:`SlotGate`).

Known answers: llama.cpp's ``llama-server`` reports ``total_slots`` at
``/props``; llama-cpp-python's ``python -m llama_cpp.server`` serves one
request at a time and names itself ``"owned_by": "me"`` in ``/v1/models``.
Other servers (vLLM, Ollama, hosted APIs) batch or say nothing: no gate.

The same answers tell how the server constrains decoding (see
:mod:`lits.lm.server.constraints`): both llama.cpp servers take a GBNF grammar, and
vLLM (``"owned_by": "vllm"``) ``structured_outputs``, unless its ``/version``
is older than 0.10.2, which knows only the ``guided_*`` fields.
"""

from __future__ import annotations

import contextlib
import re
import sys
import threading
import time
import warnings
from collections import deque
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, NamedTuple, Sequence

from lits.lm.server.constraints import VLLM_STRUCTURED_OUTPUTS, ConstraintDialect
from lits.lm.usage import note_wait

if TYPE_CHECKING:  # httpx loads with the first probe: a run on a local or scripted model never imports it
    import httpx

#: Patience per probe: a llama-cpp-python server busy reading a long prompt answers a GET only after ~10 s,
#: and a probe given up on leaves calls ungated, to time out in the server's queue as false faults.  The last
#: patience repeats while the server keeps the connection open (it is working on another request).
PROBE_TIMEOUTS = (3.0, 15.0, 30.0)
#: Seconds in all the probe waits for a server that takes its connections but answers none (busy with
#: another client's long request): generous, since a run that guesses wrong floods a one-request server.
PROBE_LIMIT = 600.0
#: Slots assumed of a server that never answered the probe: one call at a time, the safe guess.
UNANSWERED_SLOTS = 1


class ServerProbeWarning(UserWarning):
    """A server too busy to answer the slot probe: printed as one ``lits: warning:`` line."""


class ServerFacts(NamedTuple):
    """What a server says of itself: its slots (None: unknown), how we know, and its constraint dialect."""

    slots: int | None
    source: str
    dialect: ConstraintDialect = None
    #: Whether ``/completions`` takes ``echo`` (prompt log-probabilities); upstream llama-server refuses it.
    echo: bool = True
    #: Whether a request may name its slot (llama-server's ``id_slot``, with ``cache_prompt``).
    pins: bool = False


ProbeFn = Callable[[], ServerFacts]
UNREPORTED = ServerFacts(None, "not reported by the server")


def probe_slots(
    base_url: str, headers: Mapping[str, str], params: Mapping[str, str] | None = None
) -> tuple[int | None, str]:
    """``(slots, how we know)``; ``(None, reason)`` when the server does not say.  Never raises."""
    return probe_server(base_url, headers, params)[:2]


def probe_server(
    base_url: str,
    headers: Mapping[str, str],
    params: Mapping[str, str] | None = None,
    *,
    progress: Callable[[float], None] | None = None,
) -> ServerFacts:
    """The server's facts (:class:`ServerFacts`).  Never raises.

    Asked again, with more patience, as long as the server takes the connection and is too slow to answer
    (busy with another request), up to :data:`PROBE_LIMIT` seconds in all; ``progress(seconds waited)`` after
    each wait (default: a warning line).  A server that never answered gets :data:`UNANSWERED_SLOTS`, and
    replies that are not constrained: the run says so in one line.
    """
    import httpx

    started, waits = time.monotonic(), 0
    say = progress or (
        lambda waited: _warn(
            f"model server {_shown(base_url)} has not answered its slot probe "
            f"for {waited:.0f}s (busy with another request?); waiting up to "
            f"{PROBE_LIMIT:g}s before calls start"
        )
    )
    while True:
        left = PROBE_LIMIT - (time.monotonic() - started)
        if left <= 0:
            break
        timeout = min(PROBE_TIMEOUTS[min(waits, len(PROBE_TIMEOUTS) - 1)], left)
        try:
            return _ask(base_url, headers, params, timeout)
        except httpx.ConnectTimeout:
            return UNREPORTED  # nothing took the connection: the run's own calls will say what is wrong
        except httpx.TimeoutException:
            waits += 1
            say(time.monotonic() - started)
        except (httpx.HTTPError, ValueError, AttributeError, TypeError):
            return UNREPORTED
    waited = time.monotonic() - started
    _warn(
        f"model server {_shown(base_url)} took connections but did not answer its slot probe in {waited:.0f}s: "
        f"this run sends it {UNANSWERED_SLOTS} call at a time and does not constrain replies"
    )
    return ServerFacts(UNANSWERED_SLOTS, f"assumed: the server did not answer the probe in {waited:.0f}s")


def _warn(text: str) -> None:
    warnings.warn(text, ServerProbeWarning, stacklevel=3)


def _shown(base_url: str) -> str:
    """The URL as a warning may show it (never a credential)."""
    from lits.io.secrets import redact_url

    return redact_url(base_url)


def _ask(base_url: str, headers: Mapping[str, str], params: Mapping[str, str] | None, timeout: float) -> ServerFacts:
    import httpx

    root = base_url.rstrip("/")
    root = root[: -len("/v1")] if root.endswith("/v1") else root
    # Plain HTTP needs no certificates: loading the CA bundle was ~45 ms of every run's start.
    verify = not base_url.startswith("http://")
    with httpx.Client(headers=dict(headers), params=dict(params or {}), timeout=timeout, verify=verify) as client:
        props = client.get(f"{root}/props")
        if props.status_code == 200:
            total = _int(props.json().get("total_slots"))
            if total:
                return ServerFacts(total, "the server's /props (total_slots)", "gbnf", echo=False, pins=total > 1)
        models = client.get(f"{base_url.rstrip('/')}/models")
        if models.status_code == 200:
            owners = {str(m.get("owned_by")) for m in models.json().get("data") or [] if isinstance(m, dict)}
            if owners == {"me"}:
                return ServerFacts(1, "llama-cpp-python's server (one request at a time)", "gbnf")
            if owners == {"vllm"}:
                return ServerFacts(None, "not reported by the server (vLLM batches)", _vllm_dialect(client, root))
    return UNREPORTED


def _vllm_dialect(client: httpx.Client, root: str) -> ConstraintDialect:
    """``structured_outputs``, or ``guided`` for a vLLM whose ``/version`` says it predates them."""
    import httpx

    try:
        answer = client.get(f"{root}/version")
        version = answer.json().get("version") if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):  # no answer: a current vLLM is the likelier
        version = None
    numbers = re.match(r"(\d+)\.(\d+)\.(\d+)", version) if isinstance(version, str) else None
    if numbers and tuple(map(int, numbers.groups())) < VLLM_STRUCTURED_OUTPUTS:
        return "guided"
    return "structured_outputs"


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and value > 0 else None


#: A gated request may take this many times its tokens at the slowest pace seen before it counts as hung.
PACE_MARGIN = 3.0


class GenerationPace:
    """The slowest recent seconds per generated token of a server that works on our requests alone.

    Behind the :class:`SlotGate` a request is worked on as soon as it is sent,
    so a reply of 640 tokens at 5 tokens/s takes two minutes without anything
    being wrong; timed out at the usual 60 s it would be retried (a false
    fault) while the server, which does not stop, computes it twice.
    """

    def __init__(self, window: int = 32, min_tokens: int = 16) -> None:
        self._lock = threading.Lock()
        self._seen: deque[float] = deque(maxlen=window)
        self._min_tokens = min_tokens

    def observe(self, seconds: float, tokens_out: int) -> None:
        if tokens_out >= self._min_tokens:  # short replies are mostly prompt reading, not pace
            with self._lock:
                self._seen.append(seconds / tokens_out)

    def allowance(self, tokens: int) -> float | None:
        """Seconds a reply of up to ``tokens`` may take (None until a pace was seen)."""
        with self._lock:
            return PACE_MARGIN * tokens * max(self._seen) if self._seen else None


def one_slot_servers(models: Sequence[object], instances: int = 2) -> bool:
    """Whether a run's instances should go one after another: its models are served (the in-process ones
    aside) by servers that work on one request at a time.  Interleaved, each instance's request would find the
    other instance's prompt in the server's context and re-read its own head (BlocksWorld MCTS, 5 instances,
    emulated llama-cpp-python server: 1.8-2.2x the evaluated prompt tokens); said on stderr."""
    slots = [probe() for m in models if callable(probe := getattr(m, "server_slots", None))]
    if instances < 2 or not slots or any(s != 1 for s in slots):
        return False
    print(
        "lits: the model server works on one request at a time: instances run one after another, so "
        "its prompt cache keeps each instance's prefix",
        file=sys.stderr,
    )
    return True


class SlotGate:
    """Lets at most the server's slots of requests out at once; counts the calls that waited and how long.

    On a server whose requests may name their slot (:attr:`ServerFacts.pins`), each call gets a slot by its
    ``key`` (the instance and role that call): the slot that key used last when it is free, else an unused
    one, else one its instance used, else the one idle longest.  A slot keeps the last prompt it read, so a
    role kept on its own slot finds its own prefix there instead of another role's or instance's.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)
        self._known = False
        self.slots: int | None = None
        self.source = "not probed yet"
        #: How the server constrains decoding (known after :meth:`learn`).
        self.dialect: ConstraintDialect = None
        #: Whether the server echoes prompt log-probabilities (known after :meth:`learn`).
        self.echo = True
        #: Whether requests name their slot (known after :meth:`learn`).
        self.pins = False
        self._free: list[int] = []
        #: The key each slot last served, and when (a counter), to choose a free slot.
        self._last_key: dict[int, tuple[object, object]] = {}
        self._last_used: dict[int, int] = {}
        self._uses = 0
        self.queued_calls = 0
        self.queued_seconds = 0.0

    def learn(self, probe: ProbeFn) -> None:
        """Ask the server once (the first caller probes; the others wait for its answer)."""
        with self._lock:
            if self._known:
                return
            facts = probe()
            self.slots, self.source, self.dialect, self.echo = facts.slots, facts.source, facts.dialect, facts.echo
            self.pins = bool(facts.pins and self.slots)
            self._free = list(range(self.slots or 0))
            self._known = True

    @contextlib.contextmanager
    def slot(self, key: tuple[object, object] = (None, None)) -> Iterator[int | None]:
        """Hold one of the server's slots for a request (none when the server reports no slots); yields the
        slot's id where requests may name it, else None.  ``key``: (instance, role) of the call."""
        if not self.slots:
            yield None
            return
        with self._lock:
            if not self._free:
                start = time.monotonic()
                while not self._free:
                    self._freed.wait()
                waited = time.monotonic() - start
                note_wait(waited)  # the call's own record keeps it out of model time
                self.queued_calls += 1
                self.queued_seconds += waited
            chosen = self._choose(key)
            self._free.remove(chosen)
            self._uses += 1
            self._last_key[chosen], self._last_used[chosen] = key, self._uses
        try:
            yield chosen if self.pins else None
        finally:
            with self._lock:
                self._free.append(chosen)
                self._freed.notify()

    def _choose(self, key: tuple[object, object]) -> int:
        def rank(slot: int) -> tuple[int, int]:
            last = self._last_key.get(slot)
            fit = 0 if last == key else 1 if last is None else 2 if last[0] == key[0] else 3
            return fit, self._last_used.get(slot, 0)

        return min(self._free, key=rank)

    def stats(self) -> dict[str, float | int]:
        with self._lock:
            return {"queued_calls": self.queued_calls, "queued_seconds": round(self.queued_seconds, 3)}
