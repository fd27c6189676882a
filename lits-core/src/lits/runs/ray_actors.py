"""The run's two Ray actors: the coordinator on the driver's node and the instance workers.

The coordinator holds what must be one for the whole cluster: the slots of
``--concurrency`` (calls in flight against the server, oldest instance
first, exactly like :class:`lits.lm.base.CallLimiter`), the response cache
(the run's SQLite file, on the driver's disk) and a count of how often each
instance started (a count above the driver's submissions is a Ray retry after
a worker died).

A worker builds the run's components from the run's settings with the same
code as an in-process run and runs each instance with the in-process
:class:`~lits.runs.runner._Runner` in a scratch run dir of its own; it
returns the files the instance wrote, its inference records and its log
lines, and the driver writes them into the real run dir.
"""

from __future__ import annotations

import asyncio
import heapq
import json
import logging
import os
import shutil
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import ray
from lits.lm.base import CallsStopped, ModelError, ServerUnreachable
from lits.lm.cache import ResponseCache
from lits.observability import InferenceLog, InferenceRecord, collecting, current_context

#: Files an instance leaves in its (scratch) run dir, by folder.
INSTANCE_FOLDERS = ("checkpoints", "terminal_nodes", "paths", "timings", "results")


@ray.remote(num_cpus=0)
class RunCoordinator:
    """Global call slots, the response cache and instance start counts (an async actor: waiting is cheap)."""

    def __init__(self, limit: int, cache_path: str | None) -> None:
        from lits.lm.cache import ResponseCache

        self.limit = max(1, limit)
        self.free = self.limit
        self.waiting: list[tuple[float, int]] = []  # heap of (priority, arrival), as CallLimiter
        self.arrivals = 0
        self.cond: asyncio.Condition | None = None
        self.held: dict[str, int] = {}  # slots held, by worker incarnation
        self.dead: set[str] = set()
        self.stopping = False
        self.busy_since = time.perf_counter()
        self.area = 0.0
        self.starts: dict[int, int] = {}
        self.cache = ResponseCache(cache_path) if cache_path else None

    def _condition(self) -> asyncio.Condition:
        if self.cond is None:
            self.cond = asyncio.Condition()
        return self.cond

    def _account(self) -> None:
        now = time.perf_counter()
        self.area += (self.limit - self.free) * (now - self.busy_since)
        self.busy_since = now

    async def acquire(self, priority: float, holder: str) -> bool:
        """Wait for a slot (lowest instance first); False when the run is stopping."""
        cond = self._condition()
        async with cond:
            ticket = (priority, self.arrivals)
            self.arrivals += 1
            heapq.heappush(self.waiting, ticket)
            await cond.wait_for(lambda: self.stopping or (self.free > 0 and self.waiting[0] == ticket))
            self.waiting.remove(ticket)
            heapq.heapify(self.waiting)
            if self.stopping or holder in self.dead:
                cond.notify_all()
                return False
            self._account()
            self.free -= 1
            self.held[holder] = self.held.get(holder, 0) + 1
            cond.notify_all()
            return True

    async def release(self, holder: str) -> None:
        cond = self._condition()
        async with cond:
            if self.held.get(holder, 0) > 0:
                self._account()
                self.held[holder] -= 1
                self.free += 1
            cond.notify_all()

    async def joined(self, name: str, incarnation: str) -> None:
        """A worker (re)started: slots held by its earlier incarnations are free again."""
        cond = self._condition()
        async with cond:
            for holder in [h for h in self.held if h.split("#")[0] == name and h != incarnation]:
                self._account()
                self.free += self.held.pop(holder)
                self.dead.add(holder)
            cond.notify_all()

    async def stop(self) -> None:
        """The run stops: every waiting and later acquire answers False."""
        cond = self._condition()
        async with cond:
            self.stopping = True
            cond.notify_all()

    def started(self, idx: int) -> None:
        self.starts[idx] = self.starts.get(idx, 0) + 1

    def start_counts(self) -> dict[int, int]:
        return dict(self.starts)

    def busy_area(self) -> float:
        self._account()
        return self.area

    def cache_get(self, key: str) -> Any:
        return self.cache.get(key) if self.cache is not None else None

    def cache_put(self, key: str, value: Any) -> None:
        if self.cache is not None:
            self.cache.put(key, value)

    def cache_put_many(self, entries: list[tuple[str, Any]]) -> None:
        for key, value in entries:
            self.cache_put(key, value)

    def cache_dump(self) -> list[tuple[str, Any]]:
        """Every entry (to seed a worker's own cache: the per-worker variant the benchmark measures)."""
        if self.cache is None:
            return []
        with self.cache._lock:
            rows = self.cache._conn.execute("SELECT key, value FROM responses").fetchall()
        return [(key, json.loads(value)) for key, value in rows]

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


class SharedLimiter:
    """A model's limiter in a worker: the slots are the coordinator's, shared by every worker."""

    def __init__(self, coordinator: Any, holder: str, limit: int) -> None:
        self.coordinator, self.holder, self._limit = coordinator, holder, limit

    @property
    def limit(self) -> int:
        return self._limit

    def __enter__(self) -> SharedLimiter:
        instance = current_context().get("instance")
        priority = float(instance) if isinstance(instance, int) else float("inf")
        if not ray.get(self.coordinator.acquire.remote(priority, self.holder)):
            raise CallsStopped("the run is stopping: no new model calls")
        return self

    def __exit__(self, *exc: object) -> None:
        self.coordinator.release.remote(self.holder)

    def busy_area(self) -> float:
        return 0.0  # the coordinator integrates calls in flight for the whole cluster


class SharedCache:
    """The run's response cache, served by the coordinator from the driver's disk.

    Stores go in batches without waiting (the coordinator then answers fewer
    requests per call); a batch is sent when it is full and whenever an
    instance ends, so a dead worker loses at most one batch.  What this worker
    stored or fetched is kept here too, so asking again costs no round trip.
    """

    BATCH = 16

    def __init__(self, coordinator: Any) -> None:
        self.coordinator = coordinator
        self.known: dict[str, Any] = {}
        self.pending: list[tuple[str, Any]] = []
        self.lock = threading.Lock()

    def get(self, key: str) -> Any:
        with self.lock:
            if key in self.known:
                return self.known[key]
        value = ray.get(self.coordinator.cache_get.remote(key))
        if value is not None:
            with self.lock:
                self.known[key] = value
        return value

    def put(self, key: str, value: Any) -> None:
        with self.lock:
            self.known[key] = value
            self.pending.append((key, value))
            full = len(self.pending) >= self.BATCH
        if full:
            self.flush()

    def flush(self) -> None:
        with self.lock:
            batch, self.pending = self.pending, []
        if batch:
            self.coordinator.cache_put_many.remote(batch)

    def close(self) -> None:
        self.flush()


class WorkerCache(ResponseCache):
    """The per-worker variant (``LITS_RAY_CACHE=worker``, for the benchmark): a SQLite file of the worker's
    own, seeded with the run's cache; what it stores goes back to the driver with each instance."""

    def __init__(self, path: Path, seed: list[tuple[str, Any]]) -> None:
        super().__init__(path)
        for key, value in seed:
            super().put(key, value)
        self.fresh: list[tuple[str, Any]] = []

    def put(self, key: str, value: Any) -> None:
        super().put(key, value)
        with self._lock:
            self.fresh.append((key, value))

    def take_fresh(self) -> list[tuple[str, Any]]:
        with self._lock:
            fresh, self.fresh = self.fresh, []
        return fresh


class _Lines(logging.Handler):
    """Keeps the execution-log lines of each instance (by thread) to send them to the driver."""

    def __init__(self) -> None:
        super().__init__()
        self.local = threading.local()
        self.setFormatter(logging.Formatter("%(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        lines = getattr(self.local, "lines", None)
        if lines is not None:
            lines.append(self.format(record))


class _Built:
    """What a worker builds once from the run's settings."""

    def __init__(self, settings: dict[str, Any], mode: str, coordinator: Any, holder: str, root: Path) -> None:
        from lits.cli import run as cli_run
        from lits.registry import infer_task_type
        from lits.runs.artifacts import RunDir
        from lits.runs.control import RunControl
        from lits.runs.runner import Progress, _Runner

        settings = dict(settings)
        task_type = infer_task_type(settings["dataset"])
        agent_reg, agent_args = cli_run._agent(settings, mode, task_type)
        config = cli_run._make_config(agent_reg, agent_args, mode)
        self.model = cli_run._create_model(settings)
        self.model.limiter = SharedLimiter(coordinator, holder, settings["concurrency"])  # type: ignore[assignment]
        self.own_cache: WorkerCache | None = None
        if not settings.get("no_cache") and settings.get("ray_cache") == "worker":
            self.own_cache = WorkerCache(root / "cache.sqlite", ray.get(coordinator.cache_dump.remote()))
            self.model.use_cache(self.own_cache)
        elif not settings.get("no_cache"):
            self.model.use_cache(SharedCache(coordinator))  # type: ignore[arg-type]
        self.components = cli_run.build_components(settings, self.model, config, task_type)
        self.run_dir = RunDir(root).create()
        make_agent = cli_run._agent_factory(agent_reg.obj, config, self.components, self.run_dir, mode,
                                            agent_reg.name)
        self.log = InferenceLog()
        self._collecting = collecting(self.log)
        self._collecting.__enter__()  # for the worker's life: every call of every instance lands here
        self.progress = Progress(0, self.log, stream=open(os.devnull, "w"))
        self.runner = _worker_runner(_Runner)(make_agent, self.components, self.run_dir, mode,
                                              RunControl(breaker=0), self.log, self.progress, None)
        self.lines = _Lines()
        self.runner.execution.addHandler(self.lines)
        self.concurrency = int(settings["concurrency"])


@ray.remote(num_cpus=1)
class InstanceWorker:
    """Runs instances of one run, several at once on threads (``max_concurrency``)."""

    def __init__(self, name: str, settings: dict[str, Any], mode: str, coordinator: str) -> None:
        self.name, self.settings, self.mode = name, settings, mode
        self.coordinator = ray.get_actor(coordinator)  # by name: a handle argument would pin the actor's restarts
        self.incarnation = f"{name}#{os.getpid()}@{ray.get_runtime_context().get_node_id()[:8]}"
        ray.get(self.coordinator.joined.remote(name, self.incarnation))
        self.root: Path = Path(tempfile.mkdtemp(prefix=f"lits-{name}-"))
        self.built: _Built | None = None
        self.build_error: str | None = None
        self.lock: threading.Lock = threading.Lock()

    def _build(self) -> _Built | None:
        with self.lock:
            if self.built is None and self.build_error is None:
                try:
                    self.built = _Built(self.settings, self.mode, self.coordinator, self.incarnation, self.root)
                except Exception as exc:  # a plugin missing on this node, most often
                    import socket

                    text = " ".join(f"{type(exc).__name__}: {exc}".split())[:400]
                    if isinstance(exc, KeyError):
                        text = " ".join(str(exc.args[0] if exc.args else exc).split())[:400]
                    self.build_error = (f"a Ray worker on {socket.gethostname()} cannot build the run's "
                                        f"components ({text}); LiTS and every plugin the run uses must be "
                                        "installed on every node of the cluster")
            return self.built

    def run(self, idx: int, example: dict[str, Any], resume: bool, files: dict[str, bytes]) -> dict[str, Any]:
        """One instance: its status, the files it wrote, its inference records and log lines."""
        from lits.concurrency import fan_out_width
        from lits.runs.records import take_proposals

        ray.get(self.coordinator.started.remote(idx))
        built = self._build()
        if built is None:
            return {"idx": idx, "status": "setup", "error": self.build_error}
        for relative, data in files.items():  # the journal of an earlier attempt, from the driver
            path = built.run_dir.root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        built.lines.local.lines = []
        try:
            with fan_out_width(built.concurrency):
                built.runner.one((idx, example), resume)
        except BaseException:  # noqa: BLE001 - a bookkeeping bug is this instance's failure, not the worker's
            built.runner.outcome.failed[idx] = traceback.format_exc().splitlines()[-1][:300]
        if isinstance(built.model.cache, SharedCache):
            built.model.cache.flush()  # what this instance paid is stored before it counts as done
        outcome = built.runner.outcome
        with built.runner.lock:
            status = ("finished" if idx in outcome.finished else "interrupted" if idx in outcome.interrupted
                      else "failed")
            error = outcome.failed.pop(idx, "")
            for listed in (outcome.finished, outcome.interrupted):
                while idx in listed:
                    listed.remove(idx)
        if status != "finished":  # a retry must not count this attempt's proposals
            take_proposals(built.components.policy, idx)
        return {"idx": idx, "status": status, "error": error, "error_kind": _error_kind(built, idx),
                "files": self._take_files(built.run_dir.root, idx), "records": self._take_records(built, idx),
                "log": list(built.lines.local.lines), "worker": self.incarnation,
                "policy_stats": _policy_stats(built), "faults": built.model.fault_stats(),
                "cache_entries": built.own_cache.take_fresh() if built.own_cache is not None else []}

    def _take_files(self, root: Path, idx: int) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for folder in INSTANCE_FOLDERS:
            for path in sorted((root / folder).glob(f"{idx}.*")):
                if path.name.split(".")[0] == str(idx) and not path.name.endswith(".tmp"):
                    out[f"{folder}/{path.name}"] = path.read_bytes()
                    path.unlink()
        return out

    def _take_records(self, built: _Built, idx: int) -> list[dict[str, Any]]:
        log = built.log
        with log._lock:
            mine = [r for r in log.records if r.context.get("instance") == idx]
            log.records = [r for r in log.records if r.context.get("instance") != idx]
        return [r.as_dict() for r in mine]

    def shutdown(self) -> None:
        if self.built is not None:
            self.built.model.close()
        shutil.rmtree(self.root, ignore_errors=True)


def _policy_stats(built: _Built) -> dict[str, Any] | None:
    as_dict = getattr(getattr(built.components.policy, "stats", None), "as_dict", None)
    return as_dict() if as_dict is not None else None


def _error_kind(built: _Built, idx: int) -> str:
    """What the last failure of ``idx`` was, for the driver's breaker and stop decisions."""
    return str(getattr(built.runner, "error_kinds", {}).pop(idx, "other"))


def _worker_runner(base: type) -> type:
    """The in-process runner, but a failure is only recorded: stopping the run is the driver's call."""

    class WorkerRunner(base):  # type: ignore[valid-type,misc]
        error_kinds: dict[int, str]

        def _failed(self, idx: int, exc: Exception) -> None:
            from lits.runs.control import resource_problem

            problem = resource_problem(exc)
            kind = ("unreachable" if isinstance(exc, ServerUnreachable) else "resource" if problem
                    else "model" if isinstance(exc, ModelError) else "other")
            message = problem or f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            self.execution.error("instance %d failed: %s\n%s", idx, message, traceback.format_exc())
            with self.lock:
                self.error_kinds = getattr(self, "error_kinds", {})
                self.error_kinds[idx] = kind
                self.outcome.failed[idx] = message

    return WorkerRunner


def record_from_dict(data: dict[str, Any]) -> InferenceRecord:
    return InferenceRecord(**data)


__all__ = [
    "InstanceWorker",
    "ModelError",
    "RunCoordinator",
    "ServerUnreachable",
    "SharedCache",
    "SharedLimiter",
    "record_from_dict",
]
