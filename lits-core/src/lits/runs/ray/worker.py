"""The instance workers of a Ray run.

A worker builds the run's components from the run's settings with the same
code as an in-process run and runs each instance with the in-process
:class:`~lits.runs.runner._Runner` in a scratch run dir of its own; it
returns the files the instance wrote, its inference records and its log
lines, and the driver writes them into the real run dir.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ray
from lits.io import layout
from lits.lm.cache import ResponseCache, ResponseStore
from lits.runtime.observability import InferenceLog, collecting
from lits.runs.ray.actors import SharedCache, SharedLimiter
from lits.runs.runner import _Runner

if TYPE_CHECKING:
    from lits.lm.base import LanguageModel
    from lits.runs.record import RunRecord

#: Files an instance leaves in its (scratch) run dir, by folder.
INSTANCE_FOLDERS = layout.INSTANCE_FOLDERS


class WorkerCache(ResponseCache):
    """The per-worker variant (``LITS_RAY_CACHE=worker``, for the benchmark): a SQLite file of the worker's
    own, seeded with the run's cache; what it stores goes back to the driver with each instance."""

    def __init__(self, path: Path, seed: list[tuple[str, object]]) -> None:
        super().__init__(path)
        for key, value in seed:
            super().put(key, value)
        self.fresh: list[tuple[str, object]] = []

    def put(self, key: str, value: object) -> None:
        super().put(key, value)
        with self._lock:
            self.fresh.append((key, value))

    def take_fresh(self) -> list[tuple[str, object]]:
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


class WorkerRunner(_Runner):
    """The in-process runner, but a failure is only recorded: stopping the run is the driver's call."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: What each instance's last failure was, for the driver's breaker and stop decisions.
        self.error_kinds: dict[int, str] = {}

    def _failed(self, idx: int, exc: BaseException) -> None:
        from lits.runs.faults.failures import classify

        failure = classify(exc)
        self.execution.error("instance %d failed: %s\n%s", idx, failure.message, traceback.format_exc())
        with self.lock:
            self.error_kinds[idx] = failure.kind
            self.outcome.failed[idx] = failure.message


class _Built:
    """What a worker builds once from the run's settings."""

    def __init__(self, settings: RunRecord, mode: str, coordinator: Any, holder: str, root: Path) -> None:
        from lits.registry import infer_task_type
        from lits.runs.results.artifacts import RunDir
        from lits.runs.faults.control import RunControl
        from lits.runs.attempts import AttemptSettings
        from lits.runs.runner import Progress
        from lits.runs.setup import (
            agent_factory,
            agent_registration,
            build_components,
            create_run_models,
            distinct_models,
            make_config,
        )

        settings = settings.model_copy()
        task_type = infer_task_type(settings.dataset)
        agent_reg, agent_args = agent_registration(settings, mode, task_type)
        config = make_config(agent_reg, agent_args, mode)
        concurrency = settings.resolved_concurrency()

        def pool_slots(pool: int) -> SharedLimiter:  # each model's slots for the cluster
            return SharedLimiter(coordinator, holder, concurrency, str(pool or ""))

        models = create_run_models(settings, pool_slots)  # equal specs share one object, as in a local run
        self.models = distinct_models(models)
        self.model = models["policy"]
        self.own_cache: WorkerCache | None = None
        shared_cache: ResponseStore | None = None
        if not settings.no_cache and settings.ray_cache == "worker":
            self.own_cache = shared_cache = WorkerCache(root / "cache.sqlite", ray.get(coordinator.cache_dump.remote()))
        elif not settings.no_cache:
            shared_cache = SharedCache(coordinator)
        for model in self.models:  # the run's one cache
            model.use_cache(shared_cache)
        self.components = build_components(settings, models, config, task_type)
        self.run_dir = RunDir(root).create()
        make_agent = agent_factory(
            agent_reg.obj, config, self.components, self.run_dir, mode, agent_reg.name, bn_model=models["bn"]
        )
        self.log = InferenceLog()
        self._collecting = collecting(self.log)
        self._collecting.__enter__()  # for the worker's life: every call of every instance lands here
        self.progress = Progress(0, self.log, stream=open(os.devnull, "w"))
        self.runner = WorkerRunner(
            make_agent,
            self.components,
            self.run_dir,
            mode,
            RunControl(breaker=0),
            self.log,
            self.progress,
            None,
            AttemptSettings.of(settings),
        )
        self.lines = _Lines()
        self.runner.execution.addHandler(self.lines)
        self.concurrency = settings.resolved_concurrency()


@ray.remote(num_cpus=1)
class InstanceWorker:
    """Runs instances of one run, several at once on threads (``max_concurrency``)."""

    def __init__(self, name: str, settings: RunRecord, mode: str, coordinator: str) -> None:
        self.name, self.settings, self.mode = name, settings, mode
        self.coordinator = ray.get_actor(coordinator)  # by name: a handle argument would pin the actor's restarts
        self.incarnation = f"{name}#{os.getpid()}@{ray.get_runtime_context().get_node_id()[:8]}"
        ray.get(self.coordinator.joined.remote(name, self.incarnation))
        self.root: Path = Path(tempfile.mkdtemp(prefix=f"{coordinator}-{name}-"))  # lits-run-PID-...
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
                    self.build_error = (
                        f"a Ray worker on {socket.gethostname()} cannot build the run's "
                        f"components ({text}); LiTS and every plugin the run uses must be "
                        "installed on every node of the cluster"
                    )
            return self.built

    def run(self, idx: int, example: dict[str, Any], resume: bool, files: dict[str, bytes]) -> dict[str, Any]:
        """One instance: its status, the files it wrote, its inference records and log lines."""
        from lits.runtime.concurrency import fan_out_width
        from lits.runs.results.records import take_proposals

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
            status = (
                "finished" if idx in outcome.finished else "interrupted" if idx in outcome.interrupted else "failed"
            )
            error = outcome.failed.pop(idx, "")
            for listed in (outcome.finished, outcome.interrupted):
                while idx in listed:
                    listed.remove(idx)
        if status != "finished":  # a retry must not count this attempt's proposals
            take_proposals(built.components.policy, idx)
        return {
            "idx": idx,
            "status": status,
            "error": error,
            "error_kind": _error_kind(built, idx),
            "files": self._take_files(built.run_dir.root, idx),
            "records": self._take_records(built, idx),
            "log": list(built.lines.local.lines),
            "worker": self.incarnation,
            "policy_stats": _policy_stats(built),
            "faults": _summed_faults(built.models),
            "cache_entries": built.own_cache.take_fresh() if built.own_cache is not None else [],
        }

    def _take_files(self, root: Path, idx: int) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for folder in INSTANCE_FOLDERS:
            for path in sorted((root / folder).glob(f"{idx}.*")):
                if path.name.split(".")[0] == str(idx) and not path.name.endswith(".tmp"):
                    out[f"{folder}/{path.name}"] = path.read_bytes()
                    path.unlink()
        from lits.runs.attempts import attempt_paths

        for relative in attempt_paths(root, idx):  # --attempts: each attempt's file and later checkpoints
            out[relative] = (root / relative).read_bytes()
            (root / relative).unlink()
        return out

    def _take_records(self, built: _Built, idx: int) -> list[dict[str, object]]:
        return [r.as_dict() for r in built.log.take(idx)]

    def shutdown(self) -> None:
        if self.built is not None:
            for model in self.built.models:
                model.close()
        shutil.rmtree(self.root, ignore_errors=True)


def _policy_stats(built: _Built) -> object:
    from lits.runs.results.records import policy_stats

    return policy_stats(built.components.policy)


def _error_kind(built: _Built, idx: int) -> str:
    """What the last failure of ``idx`` was, for the driver's breaker and stop decisions."""
    return built.runner.error_kinds.pop(idx, "other")


def _summed_faults(models: list[LanguageModel]) -> dict[str, float | int]:
    """Each fault counter added up over the worker's models."""
    out: dict[str, float | int] = {}
    for model in models:
        for key, value in model.fault_stats().items():
            out[key] = out.get(key, 0) + value
    return out
