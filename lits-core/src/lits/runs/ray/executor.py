"""``--executor ray``: the same run with its instances spread over a Ray cluster.

Each instance is a Ray actor task on one of the run's workers (one per CPU of
the cluster, several instances at once on threads).  A worker builds the
run's components from the run's settings with the in-process code, so
plugins must be installed on every node.  Nothing assumes a shared
filesystem: a worker sends back what the instance wrote (result, tree,
path, timings, journal), its inference records and its log lines, and the
driver writes them into the run dir with the usual atomic writers, the result
last.  One coordinator actor on the driver's node holds the ``--concurrency``
slots for the whole cluster and serves the run's response cache.

A worker that dies is restarted by Ray and its instances run again (Ray's
task retries); their paid calls come from the cache.  The run says which
instances that were, and counts them in ``retried_instances``.  A lost cluster
(the driver's node dead, the GCS or the coordinator silent: see
:mod:`lits.runs.ray.watch`) stops the run within a bounded time with one line
naming ``--resume``; the instances that finished are kept.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import math
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping, TextIO

from lits.io import layout
from lits.io.durable import atomic_write_text
from lits.errors import UserError
from lits.runs.results.artifacts import RunDir
from lits.runs.faults.control import BREAKER, RESOURCE, RunControl, resource_problem
from lits.runs.ray.watch import PING_TIMEOUT, ClusterWatch, cluster_nodes
from lits.runs.record import RunRecord
from lits.runs.runner import RETRY_ROUNDS, STOP_GRACE, Item, Progress, RunOutcome, _RunLog, in_rounds, settle

#: A worker process that dies is restarted this often, and its instances run again as often.
WORKER_RESTARTS = 3
#: Environment variables a worker on another node needs (plugin lists, server keys, retry waits).
FORWARDED_ENV = ("LITS_", "OPENAI_", "ANTHROPIC_", "AWS_")
#: Seconds ``ray.shutdown`` may take once the cluster is lost (it can wait for a dead raylet).
SHUTDOWN_TIMEOUT = 20.0


def require_ray() -> None:
    """One line, before anything is loaded, when Ray is not installed."""
    if importlib.util.find_spec("ray") is None:
        from lits.runtime.extras import MissingExtra, missing_message

        raise MissingExtra(missing_message("ray", install="lits-core[ray]", what="--executor ray", package="Ray"))


@contextlib.contextmanager
def ray_session(address: str | None) -> Iterator[None]:
    """Join the cluster at ``address`` ("auto": the running one), or start a local instance for this run.

    A Ray already initialized in this process (a test, a benchmark) is used as it is.
    """
    import ray

    if ray.is_initialized():
        yield
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_ENV)}
    options: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": logging.ERROR,
        "runtime_env": {"env_vars": env} if env else None,
    }
    temp: str | None = None
    if address:
        _check_reachable(address)
        options["address"] = address
    else:  # a short path: Ray's sockets live under it
        temp = tempfile.mkdtemp(prefix=f"lits-ray-{os.getpid()}-", dir="/tmp")
        options["_temp_dir"] = temp
    quiet = logging.getLogger("ray")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        ray.init(**options)
    except Exception as exc:
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        first = " ".join(str(exc).split())[:300]
        raise UserError(f"cannot start or join {where}: {first}") from None
    finally:
        quiet.setLevel(level)
    try:
        yield
    finally:
        _shutdown(ray)
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


def _shutdown(ray: ModuleType) -> None:
    """``ray.shutdown()`` (it stops the processes a local instance started), waited for a bounded time."""

    def close() -> None:
        with contextlib.suppress(Exception):
            ray.shutdown()

    thread = threading.Thread(target=close, name="lits-ray-shutdown", daemon=True)
    thread.start()
    thread.join(SHUTDOWN_TIMEOUT)


@contextlib.contextmanager
def ray_errors_to(log: logging.Logger) -> Iterator[None]:
    """Ray prints its workers' errors (a task retried after a worker died: a traceback) on stderr; here
    they go to the run's execution.log, and the run says what happened in one line of its own."""
    try:
        import ray._private.worker as ray_worker

        printer = ray_worker.print_to_stdstream
    except (ImportError, AttributeError):  # another Ray: its messages stay on stderr
        yield
        return

    def to_log(data: dict[str, Any], ignore_prefix: bool = False) -> None:
        for line in data.get("lines", []):
            log.warning("ray: %s", line)

    ray_worker.print_to_stdstream = to_log
    try:
        yield
    finally:
        ray_worker.print_to_stdstream = printer


def _check_reachable(address: str) -> None:
    """A HOST:PORT nobody listens on is one line at once (Ray itself retries for minutes)."""
    host, _, port = address.split("://")[-1].rpartition(":")
    if not host or not port.isdigit():
        return  # "auto", or a form Ray resolves itself
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise UserError(
            f"cannot reach the Ray cluster at {address} ({exc.strerror or exc}); start it with "
            "`ray start --head` or check --ray-address"
        ) from None


def worker_homes(nodes: list[dict[str, Any]]) -> list[str]:
    """One worker per CPU of each live node, taking the nodes in turn (few instances still spread)."""
    cpus = {n["NodeID"]: int(n.get("Resources", {}).get("CPU", 0)) for n in nodes if n.get("Alive")}
    homes: list[str] = []
    for turn in range(max(cpus.values(), default=0)):
        homes.extend(node for node, count in sorted(cpus.items()) if count > turn)
    return homes or [str(nodes[0]["NodeID"])]


class ClusterStats:
    """The run's ``stats/process-N.json`` for a Ray run: the workers' counters merged, calls in flight."""

    def __init__(self, run_dir: RunDir) -> None:
        from lits.runs.results.stats import ProcessStats

        self.run_dir = run_dir
        self.relative = ProcessStats(run_dir.root).relative
        self.started = time.perf_counter()
        #: The latest counters by worker incarnation: (policy stats, faults).
        self.snapshots: dict[str, tuple[Mapping[str, object] | None, Mapping[str, object] | None]] = {}
        self.busy_area = 0.0

    def save(self, seconds: float | None = None, *, durable: bool = False) -> None:
        """As :meth:`lits.runs.session.ProcessStats.save`."""
        from lits.runs.results.stats import merge_counts

        payload = {
            "pid": os.getpid(),
            "seconds": round(time.perf_counter() - self.started if seconds is None else seconds, 3),
            "busy_area": round(self.busy_area, 3),
            "policy_stats": merge_counts([p for p, _ in self.snapshots.values()]),
            "faults": merge_counts([f for _, f in self.snapshots.values()])
            or {"retries": 0, "seconds_lost": 0.0, "failed_calls": 0},
            "ray_workers": sorted(self.snapshots),
        }
        with contextlib.suppress(OSError):  # counters are not results
            self.run_dir.write_json(self.relative, payload, durable=durable)


class RayExecutor:
    """Runs a run's instances on Ray workers and writes what they send back into the run dir."""

    def __init__(self, settings: RunRecord, run_dir: RunDir, mode: str) -> None:
        #: "driver": one cache the coordinator serves (the default); "worker": each worker's own, merged
        #: back per instance -- only to measure the alternative (docs/benchmarks.md).
        settings = settings.model_copy(update={"ray_cache": os.environ.get("LITS_RAY_CACHE", "driver")})
        self.settings, self.run_dir, self.mode = settings, run_dir, mode
        self.stats = ClusterStats(run_dir)
        self.outcome = RunOutcome()
        self.submitted: dict[int, int] = {}

    def run(
        self,
        examples: list[Item],
        *,
        resume: bool,
        control: RunControl,
        progress_stream: TextIO | None = None,
        grace: float = STOP_GRACE,
    ) -> RunOutcome:
        """Every example not already finished, failed ones retried after the rest, until done or stopped."""
        progress_stream = progress_stream or sys.stderr  # now, not at import: tests swap sys.stderr
        run_dir, outcome = self.run_dir, self.outcome
        done = run_dir.done() if resume else set()
        todo = [(i, ex) for i, ex in examples if i not in done]
        outcome.skipped = sorted(i for i, _ in examples if i in done)
        if resume:
            run_dir.repair_inference_log()
        self.log = _RunLog(Path(run_dir.inference_log_path))
        self.progress = Progress(len(todo), self.log, progress_stream)
        self.execution = run_dir.logger()
        self.control, self.stream = control, progress_stream
        self.execution.info(
            "%s on Ray: %d instances to run, %d already done", self.mode, len(todo), len(outcome.skipped)
        )
        started = time.perf_counter()
        try:
            with ray_session(self.settings.ray_address), ray_errors_to(self.execution), self.progress:
                self._start(len(todo))
                try:
                    in_rounds(
                        todo,
                        resume,
                        RETRY_ROUNDS,
                        outcome,
                        control,
                        self.progress,
                        progress_stream,
                        lambda pending, resume_of: self._round(pending, resume_of, grace),
                    )
                finally:
                    self.watch.stop()
                if self.watch.lost is None:  # a lost cluster answers nothing: no counts to take
                    self._finish_cluster()
        finally:
            outcome.seconds = time.perf_counter() - started
            with contextlib.suppress(OSError):
                self.log.close()
            run_dir.close_logger(self.execution)
        started_ids = set(self.submitted)
        outcome.not_started = sorted(idx for idx, _ in todo if idx not in started_ids)
        settle(outcome, control)
        return outcome

    # -- the cluster -------------------------------------------------------------
    def _start(self, instances: int) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        import ray
        from lits.runs.ray.actors import RunCoordinator

        settings = self.settings
        cache = (
            None
            if settings.no_cache
            else str(  # absolute: the coordinator has its own cwd
                Path(settings.cache or self.run_dir.root / "cache.sqlite").resolve()
            )
        )
        here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
        self.coordinator_name = f"lits-run-{os.getpid()}-{time.time_ns()}"  # also names the workers' scratch
        options = RunCoordinator.options  # type: ignore[attr-defined]
        self.coordinator = options(name=self.coordinator_name, scheduling_strategy=here).remote(
            settings.resolved_concurrency(), cache
        )
        self.watch = ClusterWatch(self.coordinator, ray.get_runtime_context().get_node_id()).start()
        self.homes = worker_homes(cluster_nodes())[: max(1, instances)]
        count = len(self.homes)
        self.per_worker = max(1, math.ceil(settings.resolved_concurrency() / count))
        self.workers = [self._new_worker(i) for i in range(count)]
        self.execution.info(
            "Ray: %d workers, %d instances at once each, %d calls in flight in all",
            count,
            self.per_worker,
            settings.resolved_concurrency(),
        )

    def _new_worker(self, slot: int) -> Any:
        """Worker ``slot`` on its home node; it holds no CPU, so a worker whose node is lost restarts on
        any node left (one that held a CPU would wait for a free one forever)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from lits.runs.ray.worker import InstanceWorker

        home = NodeAffinitySchedulingStrategy(node_id=self.homes[slot], soft=True)
        return InstanceWorker.options(  # type: ignore[attr-defined]
            num_cpus=0,
            max_concurrency=self.per_worker + 1,
            max_restarts=WORKER_RESTARTS,
            max_task_retries=WORKER_RESTARTS,
            scheduling_strategy=home,
        ).remote(f"w{slot}", self.settings, self.mode, self.coordinator_name)

    def _finish_cluster(self) -> None:
        """Count Ray's retries, take the last counters, let the workers clean up."""
        import ray

        try:  # bounded: a cluster lost since the last check must not hang the run's end
            counts: dict[int, int] = ray.get(self.coordinator.start_counts.remote(), timeout=PING_TIMEOUT)
            area = float(ray.get(self.coordinator.busy_area.remote(), timeout=PING_TIMEOUT))
        except ray.exceptions.RayError as exc:
            self.execution.warning("Ray: the coordinator did not answer at the end of the run: %s", exc)
            return
        again = sorted(idx for idx, n in counts.items() if n > self.submitted.get(idx, 0))
        for idx in again:
            self.outcome.attempts[idx] = self.outcome.attempts.get(idx, 0) + counts[idx] - self.submitted[idx]
        if again:
            listed = ", ".join(map(str, again[:10])) + (" ..." if len(again) > 10 else "")
            print(
                f"lits: a Ray worker died; {len(again)} instance(s) ran again on a restarted worker "
                f"({listed}); their paid calls came from the cache",
                file=self.stream,
                flush=True,
            )
            self.execution.warning("Ray task retries after a worker died: instances %s", again)
        self.stats.busy_area = area
        with contextlib.suppress(Exception):
            ray.get([w.shutdown.remote() for w in self.workers] + [self.coordinator.close.remote()], timeout=10)
        for actor in [*self.workers, self.coordinator]:  # their CPUs are free for the next run at once
            with contextlib.suppress(Exception):
                ray.kill(actor)

    # -- one round -----------------------------------------------------------------
    def _round(self, items: list[Item], resume: dict[int, bool], grace: float) -> int:
        """Run ``items`` on the workers, ``per_worker`` at a time each; returns how many were abandoned."""
        import ray

        queue = deque(items)
        inflight: dict[Any, tuple[int, int]] = {}
        load = [0] * len(self.workers)
        stop_sent = False
        while queue or inflight:
            lost = self.watch.lost
            if lost is not None:  # nothing in flight will come back: stop now, keep what finished
                self.control.stop(BREAKER, f"stopped: lost the Ray cluster: {lost}; the finished instances are kept")
                self.outcome.interrupted.extend(idx for idx, _ in inflight.values())
                return len(inflight)
            if not self.control.stopping:
                while queue and min(load) < self.per_worker:
                    slot = load.index(min(load))
                    idx, example = queue.popleft()
                    files = self._journal_files(idx) if resume[idx] else {}
                    ref = self.workers[slot].run.remote(idx, example, resume[idx], files)
                    inflight[ref] = (idx, slot)
                    load[slot] += 1
                    self.submitted[idx] = self.submitted.get(idx, 0) + 1
                    self.outcome.attempts[idx] = self.outcome.attempts.get(idx, 0) + 1
            elif not stop_sent:  # calls not yet started raise CallsStopped in the workers
                self.coordinator.stop.remote()
                stop_sent = True
            if not inflight:
                break
            stopped_at = self.control.stopped_at
            if stopped_at is not None and time.monotonic() - stopped_at > grace:
                self.outcome.interrupted.extend(idx for idx, _ in inflight.values())
                return len(inflight)
            ready, _ = ray.wait(list(inflight), num_returns=1, timeout=0.2)
            for ref in ready:
                idx, slot = inflight.pop(ref)
                load[slot] -= 1
                try:
                    out = ray.get(ref)
                except ray.exceptions.RayError as exc:  # the worker died more often than Ray retries
                    self._worker_lost(idx, slot, exc)
                    continue
                self._take(out)
        return 0

    def _worker_lost(self, idx: int, slot: int, exc: Exception) -> None:
        message = f"its Ray worker died ({' '.join(str(exc).split())[:200]})"
        self.execution.error("instance %d: %s", idx, message)
        self.outcome.failed[idx] = message
        self.progress.update(None)
        self.workers[slot] = self._new_worker(slot)  # the same name: the slots of the dead one are freed

    def _journal_files(self, idx: int) -> dict[str, bytes]:
        """The instance's checkpoints on the driver, for a worker to continue from."""
        from lits.runs.attempts import attempt_paths

        folder = self.run_dir.checkpoints
        files = (
            {
                f"checkpoints/{p.name}": p.read_bytes()
                for p in sorted(folder.glob(f"{idx}.*"))
                if p.name.split(".")[0] == str(idx) and not p.name.endswith(".tmp")
            }
            if folder.is_dir()
            else {}
        )
        root = self.run_dir.root
        return {**files, **{relative: (root / relative).read_bytes() for relative in attempt_paths(root, idx)}}

    def _take(self, out: dict[str, Any]) -> None:
        """Write what a worker sent for one instance; the result file last (it marks the instance done)."""
        from lits.runtime.observability import InferenceRecord

        idx, status = int(out["idx"]), out["status"]
        if status == "setup":
            raise UserError(str(out["error"]))
        for line in out["log"]:
            self.execution.info("[ray %s] %s", out["worker"], line)
        self.stats.snapshots[out["worker"]] = (out["policy_stats"], out["faults"])
        if out.get("cache_entries"):
            self.coordinator.cache_put_many.remote(out["cache_entries"])
        files: dict[str, bytes] = out["files"]
        try:
            result = layout.result(idx)
            for relative in sorted(set(files) - {result}):
                atomic_write_text(self.run_dir.root / relative, files[relative].decode("utf-8"))
            for record in out["records"]:  # just before the result: a kill between them is a short window
                self.log.add(InferenceRecord(**record))
            if result in files:
                atomic_write_text(self.run_dir.root / result, files[result].decode("utf-8"))
        except OSError as exc:
            problem = resource_problem(exc, str(self.run_dir.root)) or f"cannot write the run dir ({exc})"
            self.control.stop(RESOURCE, problem)
            self.outcome.interrupted.append(idx)
            return
        outcome = self.outcome
        if status == "finished":
            outcome.finished.append(idx)
            outcome.failed.pop(idx, None)
            self.control.succeeded()
            solved = json.loads(files[layout.result(idx)])["eval"]["solved"]
            self.progress.update(solved)
            self.stats.save()
        elif status == "interrupted":
            outcome.interrupted.append(idx)
        else:
            self._failed(idx, str(out["error"]), out.get("error_kind", "other"))

    def _failed(self, idx: int, message: str, kind: str) -> None:
        if kind == "resource":
            self.control.stop(RESOURCE, message)
            self.outcome.interrupted.append(idx)
            return
        self.outcome.failed[idx] = message
        if kind == "plugin":  # a bug in a plugin's code fails the same way again
            self.outcome.no_retry.add(idx)
        self.progress.update(None)
        if kind == "unreachable":
            self.control.stop(
                BREAKER,
                f"stopped: the model server was never reached ({message}); check --base-url and that the server runs",
            )
            return
        self.control.failed(
            " ".join(message.split())[:300], server=kind == "model", log=str(self.run_dir.execution_log_path)
        )
