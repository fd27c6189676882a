"""Run a search or chain agent over dataset instances, concurrently and resumably.

Instances run on worker threads.  One that fails (a server fault that
outlasted the per-call retry budget, say) is retried after the others, up to
``retry_rounds`` more times, from its journal: its paid calls come from the
response cache, and its result is the one an uninterrupted run would write.
:class:`~lits.runs.faults.control.RunControl` decides when to stop early (Ctrl-C,
failures in a row, a full disk): no instance starts after that, calls in
flight finish, and unfinished instances are left to ``--resume``.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import sys
import threading
import time
import traceback
from collections import deque
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, TextIO

from lits.io import fastjson, layout
from lits.io.durable import atomic_write_text, durable_together
from lits.components.factory import Components
from lits.runtime.concurrency import fan_out_width, start_round_clock
from lits.lm.base import CallsStopped
from lits.runtime.observability import InferenceLog, InferenceRecord, call_context, collecting
from lits.runs.results.artifacts import RunDir
from lits.runs.attempts import AttemptSettings, Finished, InstanceAttempts, search_files
from lits.runs.faults.control import BREAKER, RESOURCE, RunControl
from lits.runs.faults.failures import classify, raised_by_code
from lits.components import parsing
from lits.runs.results.records import result_record, take_proposals

if TYPE_CHECKING:
    from lits.agents.chain.base import ChainResult
    from lits.agents.tree.base import SearchResult

#: Extra rounds for instances that failed, after every other instance ran.
RETRY_ROUNDS = 2
#: Seconds the run waits for instances in flight once it stops, before it writes its summary anyway.
STOP_GRACE = 5.0

Item = tuple[int, dict[str, Any]]


class Agent(Protocol):
    """What the runner needs of a search or chain agent: one instance run, its result read by
    :func:`lits.runs.results.records.result_record`."""

    def run(
        self, query: object, query_idx: int, example: Mapping[str, object], *, resume: bool = False
    ) -> SearchResult | ChainResult: ...


class Progress:
    """A status line per finished instance, and every ``every`` seconds while one runs."""

    def __init__(self, total: int, log: InferenceLog, stream: TextIO | None = None, every: float = 15.0) -> None:
        self.total = total
        self.log = log
        self.stream = stream or sys.stderr  # looked up now: a default bound at import outlives a swapped stderr
        self.start = time.perf_counter()
        self.done = self.solved = self.failed = 0
        self.lock = threading.Lock()
        self._stopped = threading.Event()
        self._ticker = threading.Thread(target=self._tick, args=(every,), daemon=True)

    def __enter__(self) -> "Progress":
        self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()

    def _tick(self, every: float) -> None:
        while not self._stopped.wait(every):
            self._print("running")

    def update(self, solved: bool | None) -> None:
        with self.lock:
            self.done += 1
            self.solved += bool(solved)
            self.failed += solved is None
        self._print("")

    def retrying(self, count: int) -> None:
        """``count`` failed instances run again: they are no longer counted as done."""
        with self.lock:
            self.done -= count
            self.failed -= count

    def _print(self, note: str) -> None:
        with self.lock:
            s = self.log.summary()
            line = (
                f"[{self.done}/{self.total}{' ' + note if note else ''}] solved {self.solved}"
                + (f", failed {self.failed}" if self.failed else "")
                + f" | calls {s['calls']} (+{s['cache_hits']} cached)"
                + f" | tokens {s['tokens_in'] + s['tokens_out']}"
                + f" | {time.perf_counter() - self.start:.1f}s"
            )
            print(line, file=self.stream, flush=True)


class _RunLog(InferenceLog):
    """The run's inference log: a failed write names ``inference.jsonl`` (a full disk must say where)."""

    def add(self, record: InferenceRecord) -> None:
        try:
            super().add(record)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror or str(exc), str(self.path)) from None


@dataclass
class RunOutcome:
    finished: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    #: Instances that still failed after every retry round, with the last error.
    failed: dict[int, str] = field(default_factory=dict)
    #: Failed instances another attempt cannot help (a bug in a plugin's code): not retried.
    no_retry: set[int] = field(default_factory=set)
    #: Started but not finished because the run stopped (their journals keep their progress).
    interrupted: list[int] = field(default_factory=list)
    not_started: list[int] = field(default_factory=list)
    #: Instances that needed more than one attempt, with the number of attempts.
    attempts: dict[int, int] = field(default_factory=dict)
    seconds: float = 0.0
    #: Instance threads still busy when the run stopped waiting for them.
    stragglers: int = 0
    stop_reason: str | None = None
    stop_message: str = ""


class _Runner:
    """One process's pass over the instances: rounds of attempts on worker threads."""

    def __init__(
        self,
        make_agent: Callable[[], Agent],
        components: Components,
        run_dir: RunDir,
        mode: str,
        control: RunControl,
        log: InferenceLog,
        progress: Progress,
        after_instance: Callable[[], None] | None,
        attempts: AttemptSettings = AttemptSettings(),
    ) -> None:
        self.make_agent, self.components, self.run_dir, self.mode = make_agent, components, run_dir, mode
        self.attempts = attempts
        #: Each instance's predecessor in the selection (memory shared over the run starts from it).
        self.previous: dict[int, int] = {}
        self.control, self.log, self.progress, self.after_instance = control, log, progress, after_instance
        self.outcome = RunOutcome()
        self.execution = run_dir.logger()
        self.lock = threading.Lock()
        self._started: set[int] = set()

    def one(self, item: Item, resume: bool) -> None:
        """Run one instance to its result file, or record why it did not finish."""
        idx, example = item
        with self.lock:
            self._started.add(idx)
            self.outcome.attempts[idx] = self.outcome.attempts.get(idx, 0) + 1
        started = time.perf_counter()
        parsing.forget(idx)  # count this attempt's replies only (a long-lived process may hold older counts)
        try:
            # the search's compacted journal, its files and then its timing and result become durable
            # together (one fsync wait, after the instance's seconds are taken): only without attempts,
            # whose records must not get ahead of their attempts' journals
            with durable_together() if self.attempts.plain else nullcontext():
                with call_context(instance=idx):
                    rounds = start_round_clock()
                    finished = self._run(idx, example, resume)
                    self._write_files(finished.files)
                record = finished.record
                self._write(idx, finished, started, rounds[0])
        except CallsStopped:
            with self.lock:
                self.outcome.interrupted.append(idx)
                self.outcome.failed.pop(idx, None)
            self.execution.info("instance %d: stopped unfinished (%s); --resume continues it", idx, self.control.reason)
            return
        except Exception as exc:  # one bad instance must not end the run
            self._failed(idx, exc)
            return
        except BaseException as exc:  # a plugin's sys.exit() fails its instance like any error, named
            if not raised_by_code(exc):
                raise
            self._failed(idx, exc)
            return
        with self.lock:
            self.outcome.finished.append(idx)
            self.outcome.failed.pop(idx, None)
        self.control.succeeded()
        self.execution.info("instance %d: solved=%s stopped=%s", idx, record["eval"]["solved"], record["stopped"])
        self.progress.update(record["eval"]["solved"])
        if self.after_instance is not None:
            self.after_instance()

    def _run(self, idx: int, example: dict[str, Any], resume: bool) -> Finished:
        """The instance's record: one agent run, or its attempts (``--attempts``, ``--memory-arg``)."""
        if not self.attempts.plain:
            return InstanceAttempts(
                self.make_agent, self.components, self.run_dir, self.mode, self.attempts, self.previous
            ).run(idx, example, resume)
        result = self.make_agent().run(example.get("query"), idx, example, resume=resume)
        return Finished(
            result_record(idx, example, result, self.components, self.mode),
            search_files(idx, result) if self.mode == "search" else {},
        )

    def _write_files(self, files: Mapping[str, object]) -> None:
        """The search's terminal nodes and path, as bulk JSON nobody reads by eye (compact: 5x faster)."""
        for relative, payload in files.items():
            self._write_json(relative, payload, indent=None)

    def _write_json(self, relative: str, payload: object, *, indent: int | None) -> None:
        """``RunDir.write_json``, joining the durable group the caller opened."""
        path = self.run_dir.root / relative
        try:
            if indent is None:
                text = fastjson.compact_or_str(payload)
            else:
                text = json.dumps(payload, indent=indent, default=str)
            atomic_write_text(path, text, grouped=True)
        except OSError as exc:  # a failed write on an open file names no file: name it
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None

    def _write(self, idx: int, finished: Finished, started: float, rounds: int) -> None:
        timing: dict[str, object] = {
            "seconds": round(time.perf_counter() - started, 3),
            "dependent_rounds": rounds,
            "inference": self.log.summary(instance=idx),
            # How the model's replies parsed: a resumed instance's checkpoint brought back what was parsed
            # before the resume (unlike the call counts here, which are this process's).
            "parse": parsing.take(idx),
        }
        if "attempts" in finished.record:  # each attempt's calls, as counted by the process(es) that ran it
            timing["attempts"] = [
                self.log.summary(instance=idx, attempt=k) for k in range(len(finished.record["attempts"]))
            ]
        with durable_together():  # renamed in order, the result last: its presence marks the instance done
            self._write_json(layout.timing(idx), timing, indent=1)
            self._write_json(layout.result(idx), finished.record, indent=1)

    def _failed(self, idx: int, exc: BaseException) -> None:
        failure = classify(exc, str(self.run_dir.root))
        self.execution.error("instance %d failed: %s\n%s", idx, failure.message, traceback.format_exc())
        if failure.kind == "resource":  # the machine, not the model: stop now, retrying cannot help
            self.control.stop(RESOURCE, failure.message)
            with self.lock:
                self.outcome.interrupted.append(idx)
                self.outcome.failed.pop(idx, None)
            return
        with self.lock:
            self.outcome.failed[idx] = failure.message
            if not failure.retry:
                self.outcome.no_retry.add(idx)
        self.progress.update(None)
        if failure.kind == "missing":  # an offline replay's gap: no server failed, the other instances go on
            return
        if self.attempts.shared:  # the next instance would start from memory this one never finished
            self.control.stop(
                BREAKER,
                f"stopped: instance {idx} failed ({failure.brief}); with --memory-arg "
                "scope=run each instance starts from the memory of the one before it, so "
                "the run stops here (--resume continues from it)",
            )
            return
        if failure.kind == "unreachable":  # no instance can succeed: say so now, not after every one
            self.control.stop(
                BREAKER,
                f"stopped: the model server was never reached ({exc}); check --base-url and that the server runs",
            )
            return
        # a tool's backend that is gone (a database down, an MCP server dead) fails like the model server would
        self.control.failed(failure.brief, server=failure.kind == "model", log=str(self.run_dir.execution_log_path))

    def run_round(self, items: list[Item], resume: dict[int, bool], width: int, grace: float) -> int:
        """Run ``items`` on up to ``width`` threads; returns how many were still busy when it gave up."""
        queue = deque(items)
        base = contextvars.copy_context()  # fan-out width and the like, for every instance

        def work() -> None:
            while True:
                with self.lock:
                    if self.control.stopping or not queue:
                        return
                    item = queue.popleft()
                try:
                    base.copy().run(self.one, item, resume[item[0]])
                except Exception as exc:  # a bug in the bookkeeping must not silently end this worker
                    self.execution.error("instance %d: %s\n%s", item[0], exc, traceback.format_exc())
                    with self.lock:
                        self.outcome.failed[item[0]] = f"{type(exc).__name__}: {exc}"[:300]

        threads = [
            threading.Thread(target=work, name="lits-instance", daemon=True)
            for _ in range(max(1, min(width, len(items))))
        ]
        for thread in threads:
            thread.start()
        while True:  # the main thread stays free for Ctrl-C
            alive = [t for t in threads if t.is_alive()]
            stopped_at = self.control.stopped_at
            if not alive or (stopped_at is not None and time.monotonic() - stopped_at > grace):
                return len(alive)
            alive[0].join(timeout=0.1)

    def not_started(self, todo: list[Item]) -> list[int]:
        return sorted(idx for idx, _ in todo if idx not in self._started)


def in_rounds(
    todo: list[Item],
    resume: bool,
    rounds: int,
    outcome: RunOutcome,
    control: RunControl,
    progress: Progress,
    stream: TextIO,
    run_round: Callable[[list[Item], dict[int, bool]], int],
    before_retry: Callable[[list[Item]], None] | None = None,
) -> None:
    """Run ``todo``, then the instances that failed again from their journals, up to ``rounds`` times more
    (in-process and on Ray alike); ``run_round`` returns how many instances it abandoned."""
    pending, first = todo, {idx: resume for idx, _ in todo}
    for round_number in range(rounds + 1):
        if not pending or control.stopping:
            break
        if round_number:
            print(
                f"lits: retrying {len(pending)} failed instance(s) from their journals "
                f"(round {round_number} of {rounds})",
                file=stream,
                flush=True,
            )
            progress.retrying(len(pending))
            if before_retry is not None:
                before_retry(pending)
        resume_of = first if round_number == 0 else {idx: True for idx, _ in pending}
        outcome.stragglers = run_round(pending, resume_of)
        pending = [item for item in pending if item[0] in outcome.failed and item[0] not in outcome.no_retry]


def settle(outcome: RunOutcome, control: RunControl) -> None:
    """Put a finished run's outcome in order and say why it stopped."""
    outcome.interrupted = sorted(set(outcome.interrupted) - set(outcome.finished))
    outcome.attempts = {i: n for i, n in sorted(outcome.attempts.items()) if n > 1}
    outcome.finished.sort()
    outcome.failed = dict(sorted(outcome.failed.items()))
    outcome.stop_reason, outcome.stop_message = control.reason, control.message


def run_instances(
    make_agent: Callable[[], Agent],
    components: Components,
    examples: list[Item],
    run_dir: RunDir,
    *,
    mode: str,
    concurrency: int = 1,
    resume: bool = False,
    progress_stream: TextIO | None = None,
    control: RunControl | None = None,
    retry_rounds: int = RETRY_ROUNDS,
    grace: float = STOP_GRACE,
    after_instance: Callable[[], None] | None = None,
    attempts: AttemptSettings = AttemptSettings(),
    one_at_a_time: bool = False,
) -> RunOutcome:
    """Run every example not already finished, retrying failed ones, until done or stopped.

    ``one_at_a_time``: instances one after another (calls within one still up to ``concurrency`` at once), as
    on a server with one slot, whose prefix cache then holds one instance's prompts from request to request."""
    progress_stream = progress_stream or sys.stderr
    control = control or RunControl(stream=progress_stream)
    done = run_dir.done() if resume else set()
    todo = [(i, ex) for i, ex in examples if i not in done]
    if resume:
        run_dir.repair_inference_log()
    log = _RunLog(Path(run_dir.inference_log_path))
    progress = Progress(len(todo), log, progress_stream)
    runner = _Runner(make_agent, components, run_dir, mode, control, log, progress, after_instance, attempts)
    outcome = runner.outcome
    runner.previous = {after: before for (before, _), (after, _) in zip(examples, examples[1:])}
    # memory shared over the run (--memory-arg scope=run) passes from instance to instance: one at a time
    width = 1 if attempts.shared or one_at_a_time else concurrency
    outcome.skipped = sorted(i for i, _ in examples if i in done)
    runner.execution.info("%s: %d instances to run, %d already done", mode, len(todo), len(outcome.skipped))

    def forget_proposals(pending: list[Item]) -> None:
        for idx, _ in pending:  # what the failed attempt proposed after its last checkpoint, and parsed
            take_proposals(components.policy, idx)
            parsing.forget(idx)

    started = time.perf_counter()
    with collecting(log), progress, fan_out_width(concurrency):
        in_rounds(
            todo,
            resume,
            retry_rounds,
            outcome,
            control,
            progress,
            progress_stream,
            lambda pending, resume_of: runner.run_round(pending, resume_of, width, grace),
            before_retry=forget_proposals,
        )
    outcome.seconds = time.perf_counter() - started
    with runner.lock:  # instances still in flight past the grace period may yet change it
        outcome.not_started = runner.not_started(todo)
        settle(outcome, control)
    with contextlib.suppress(OSError):  # a write that failed (a full disk) was reported already
        log.close()
    run_dir.close_logger(runner.execution)
    return outcome
