"""One run from its settings to its summary: the body under both ``lits search|chain`` and :func:`lits.run`.

Cheap checks come first (dataset, selection, save dir, cache) so a mistake costs
no model load.  How the run ended is returned as a :class:`Finished`; the caller
says it (the CLI as one line and an exit status, the Python API as a result object).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Mapping, TextIO

from lits.io import layout
from lits.errors import UserError
from lits.lm.server.slots import one_slot_servers
from lits.memory.memory import Memory
from lits.runs.results.artifacts import RunDir, check_writable
from lits.runs.attempts import AttemptSettings
from lits.runs.faults.control import BREAKER, INTERRUPT, RESOURCE, RunControl, resource_problem
from lits.runs.faults.failures import exits_as_errors
from lits.runs.model_specs import call_destinations, describe_models, uses_own_models
from lits.runs.runner import RunOutcome
from lits.runs.setup import (
    agent_factory,
    agent_registration,
    build_components,
    create_run_models,
    distinct_models,
    make_config,
    select,
)
from lits.runs.record import RunRecord
from lits.runs.resuming import ResumeRequest, resumed_run
from lits.runs.spec import RunSpec
from lits.runs.trust import Confirmation, confirm

if TYPE_CHECKING:
    from lits.components.factory import Components
    from lits.lm.base import LanguageModel
    from lits.lm.cache import ResponseCache
    from lits.lm.replay import ReplayStore
    from lits.runtime.observability import InferenceLog
    from lits.runs.results.evaluation import Summary


@dataclass
class Finished:
    """What a run did: its outcome, the summary written for what finished, and how many were selected."""

    run_dir: RunDir
    mode: str
    settings: RunRecord
    outcome: RunOutcome
    summary: Summary
    selected: list[int]

    @property
    def total(self) -> int:
        return len(self.selected)

    def report(self, *, exit_on_stragglers: bool = False) -> int:
        """Print the summary and the line that says how the run ended; the exit status (0, 1, or 130 after
        Ctrl-C).  ``exit_on_stragglers``: a call still in flight past the grace period ends the process now."""
        outcome, summary, hint = self.outcome, self.summary, self.run_dir.resume_hint(self.mode)
        print(format_summary(summary))
        if outcome.skipped:
            print(f"lits: {len(outcome.skipped)} instances were already done and were skipped", file=sys.stderr)
        code = 0
        if outcome.stop_reason == INTERRUPT:
            unfinished = self.total - summary["instances"]
            print(
                f"lits: interrupted: {summary['instances']} of {self.total} instances finished and kept, "
                f"{unfinished} not; continue with `{hint}`",
                file=sys.stderr,
                flush=True,
            )
            code = 130
        elif outcome.stop_reason == BREAKER:
            print(f"lits: error: {outcome.stop_message}, then run `{hint}`", file=sys.stderr)
            code = 1
        elif outcome.failed:
            first_idx, first = next(iter(outcome.failed.items()))
            print(
                f"lits: {len(outcome.failed)} instances failed (instance {first_idx}: {first}); "
                f"see {self.run_dir.execution_log_path}, then run `{hint}`",
                file=sys.stderr,
            )
            code = 1
        if outcome.stragglers and exit_on_stragglers:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        return code


def run_to_end(request: RunSpec | ResumeRequest, *, dry_run: bool = False) -> int:
    """The command line's run, new or resumed: its plan (``--dry-run``), or the run and its report;
    the exit status."""
    from lits.runs.trust import ask_at_terminal

    resume = isinstance(request, ResumeRequest)
    run_dir, settings = (
        resumed_run(request) if isinstance(request, ResumeRequest) else new_run(request, check_only=dry_run)
    )
    confirmation = dataclasses.replace(request.confirmation(), ask=ask_at_terminal, how="--trust-config")
    if dry_run:
        from lits.runs.planning import print_plan

        with exits_as_errors():
            return print_plan(settings, confirmation=confirmation)
    quiet = isinstance(request, RunSpec) and not request.progress  # --set progress=false
    return execute(
        run_dir, settings, resume=resume, confirmation=confirmation, stream=Silent() if quiet else None
    ).report(exit_on_stragglers=True)


def new_run(spec: RunSpec, *, check_only: bool = False) -> tuple[RunDir, RunRecord]:
    """The save dir, held (:meth:`RunDir.lock`), and settings of a new run; refuses a save dir that already
    holds one (unless ``check_only``: a dry run writes nothing and holds nothing, so it may look at any
    settings)."""
    root = spec.save_dir or spec.default_save_dir(claim=not check_only)
    check_writable(root)
    settings, run_dir = RunRecord.of(spec), RunDir(root)
    if check_only:
        return run_dir, settings
    run_dir.lock()  # before the check: two runs started at once into one new dir cannot both pass it
    if run_dir.config_path.exists():
        run_dir.unlock()
        raise UserError(f"{root} already holds a run; pass --resume to continue it or choose another --save-dir")
    return run_dir, settings


class Silent(io.StringIO):
    """Where a run's progress goes when nobody wants it (``progress=False``): written to, never kept."""

    def write(self, text: str) -> int:
        return len(text)


def execute(
    run_dir: RunDir,
    settings: RunRecord,
    *,
    confirmation: Confirmation,
    resume: bool = False,
    objects: Mapping[str, object] | None = None,
    stream: TextIO | None = None,
) -> Finished:
    """Run the selected instances, holding the save dir (a second run into it is refused before its first
    call); raises :class:`UserError` for a bad setting, a full disk, a save dir in use, or a command or a key
    destination that a file asked for and nobody confirmed (checked before anything starts).  The run's
    progress lines go to ``stream`` (default: stderr; :class:`Silent` for none)."""
    run_dir.lock()  # held already by new_run; a resumed run takes it here
    finished: Finished | None = None
    try:
        with exits_as_errors():
            finished = _execute(
                run_dir,
                settings,
                confirmation=confirmation,
                resume=resume,
                objects=objects,
                stream=stream or sys.stderr,
            )
        return finished
    finally:
        if finished is None or not finished.outcome.stragglers:  # a call in flight may still write: held
            run_dir.unlock()  # until the process ends


def _execute(
    run_dir: RunDir,
    settings: RunRecord,
    *,
    confirmation: Confirmation,
    resume: bool,
    objects: Mapping[str, object] | None,
    stream: TextIO,
) -> Finished:
    from lits.registry import get_registration, infer_task_type
    from lits.runs.results.provenance import environment, record_models
    from lits.runs.runner import run_instances

    confirmed = confirm(settings, confirmation)
    if confirmed:
        print(f"lits: confirmed: {'; '.join(a.shown for a in confirmed)}", file=stream)
    mode = settings.command
    attempts = AttemptSettings.of(settings)
    if settings.executor == "ray":
        from lits.runs.ray.executor import require_ray

        if attempts.shared:
            raise UserError(
                "--memory-arg scope=run passes memory from instance to instance in order, which "
                "--executor ray does not keep; use --executor local (or scope=instance)"
            )
        require_ray()
    dataset = settings.dataset
    try:
        get_registration("dataset", dataset)
    except KeyError as exc:
        from lits.errors import one_line

        raise UserError(one_line(exc)) from None
    task_type = infer_task_type(dataset)
    agent_reg, agent_args = agent_registration(settings, mode, task_type)
    config = make_config(agent_reg, agent_args, mode)
    selected = select(dataset, settings)
    Memory.from_args(attempts.memory_args)  # an unknown augmentor, option or bad value costs no model load
    if resume:
        run_dir.read_results(mode)  # a damaged result file is reported now, not after the run
        run_dir.remove_torn_writes()  # a process killed mid-write left its temporary file

    with resource_errors(run_dir, mode):
        run_dir.create()
    cache = _open_cache(run_dir, settings)
    models = create_run_models(settings)
    control = RunControl(stream=stream)
    outcome = RunOutcome()
    owned = distinct_models(models)
    try:
        components = build_components(settings, models, config, task_type, objects or {})
        owned += [m for m in _object_models(objects or {}) if all(m is not seen for seen in owned)]
        settings.set_agent_args(config.model_dump())
        which = f"models {describe_models(settings)}" if uses_own_models(settings) else f"model {models['policy'].name}"
        where = call_destinations(settings)  # said before the first request (the slot probe below)
        print(
            f"lits: {mode} {dataset} with {which} -> {run_dir.root}{'; calls go to ' + where if where else ''}",
            file=stream,
        )
        record_models(settings, models)
        settings.environment = environment()
        with resource_errors(run_dir, mode):
            run_dir.write_config(settings)
        for each in owned:
            each.use_cache(cache)
        for line in (line for each in owned for line in each.notices()):  # e.g. copies a hosted API bills
            print(f"lits: {line}", file=stream)
        stats = ProcessStats(run_dir, owned, components)
        from lits.runs.sweeps.budget import budgeted, built_with
        from lits.runs.sweeps.rounds import budget_of

        budget = budget_of(settings.budget)
        built = built_with(budget, agent_reg.obj)  # what a budgeted run's agents are built with
        make_agent = agent_factory(
            agent_reg.obj,
            config,
            components,
            run_dir,
            mode,
            agent_reg.name,
            bn_model=models["bn"],
            options=built,
        )
        with control.handling_sigint():
            if settings.executor == "ray":
                from lits.runs.ray.executor import RayExecutor

                executor = RayExecutor(settings, run_dir, mode)
                stats = executor.stats  # type: ignore[assignment]
                outcome = executor.run(selected, resume=resume, control=control, progress_stream=stream)
            else:
                run = run_instances if budget is None or built is None else budgeted(budget, config, make_agent, built)
                with stats.saved_periodically(), resource_errors(run_dir, mode):
                    outcome = run(
                        make_agent,
                        components,
                        selected,
                        run_dir,
                        mode=mode,
                        concurrency=settings.resolved_concurrency(),
                        resume=resume,
                        control=control,
                        after_instance=stats.save,
                        attempts=attempts,
                        progress_stream=stream,
                        one_at_a_time=one_slot_servers(owned, len(selected)),
                    )
            stats.save(outcome.seconds, durable=True)
            return _finished(run_dir, mode, settings, outcome, [idx for idx, _ in selected])
    finally:
        control.close()
        if not outcome.stragglers:  # a call still in flight holds the model; leave it to the process's exit
            for each in owned:
                each.close()
            if cache is not None:
                cache.close()


def _object_models(objects: Mapping[str, object]) -> list[LanguageModel]:
    """The models of components given as objects, so they share the run's cache and counters."""
    from lits.lm.base import LanguageModel

    found = [getattr(obj, "base_model", None) for obj in objects.values() if not isinstance(obj, type)]
    return [m for m in found if isinstance(m, LanguageModel)]


def _open_cache(run_dir: RunDir, settings: RunRecord) -> ResponseCache | ReplayStore | None:
    if settings.no_cache:
        return None
    from lits.lm.cache import CacheError, ResponseCache

    try:
        cache = ResponseCache(settings.cache or run_dir.root / "cache.sqlite")
    except CacheError as exc:
        raise UserError(str(exc)) from None
    if not settings.replay_from:
        return cache
    from lits.runs.sweeps.replay import open_replay

    try:
        return open_replay(cache, settings)
    except BaseException:
        cache.close()
        raise


class ProcessStats:
    """This process's counters in ``stats/process-N.json``, rewritten after each instance and every
    few seconds, so a process killed with SIGKILL loses at most those seconds of counts."""

    def __init__(self, run_dir: RunDir, models: list[LanguageModel], components: Components) -> None:
        from lits.runs.results.stats import ProcessStats as StatsFile

        self.run_dir, self.models, self.components = run_dir, models, components
        self.relative = StatsFile(run_dir.root).relative
        self.started = time.perf_counter()
        self._lock = threading.Lock()  # an older snapshot must never replace a newer one

    @contextlib.contextmanager
    def saved_periodically(self) -> Iterator[None]:
        every = float(os.environ.get("LITS_STATS_EVERY") or 5.0)
        stop = threading.Event()

        def loop() -> None:
            while not stop.wait(every):
                self.save()

        thread = threading.Thread(target=loop, name="lits-stats", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def save(self, seconds: float | None = None, *, durable: bool = False) -> None:
        """Rewrite the file; without ``durable`` no fsync (its reader skips a damaged one), as after each
        instance and every few seconds; the run's last save is durable."""
        from lits.runs.results.records import policy_stats

        payload = {
            "pid": os.getpid(),
            "seconds": round(time.perf_counter() - self.started if seconds is None else seconds, 3),
            "busy_area": round(sum(m.limiter.busy_area() for m in self.models), 3),
            "policy_stats": policy_stats(self.components.policy),
            "faults": _summed([m.fault_stats() for m in self.models]),
        }
        with self._lock, contextlib.suppress(OSError):  # counters are not results: a full disk is
            self.run_dir.write_json(self.relative, payload, durable=durable)  # reported elsewhere


def _summed(counts: list[dict[str, float | int]]) -> dict[str, float | int]:
    """Each counter added up over the run's models."""
    out: dict[str, float | int] = {}
    for each in counts:
        for key, value in each.items():
            out[key] = out.get(key, 0) + value
    return out


def _finished(run_dir: RunDir, mode: str, settings: RunRecord, outcome: RunOutcome, selected: list[int]) -> Finished:
    """Write the summary for what finished; a full disk is one line naming ``--resume``."""
    if outcome.stop_reason == RESOURCE:
        with contextlib.suppress(Exception):  # the disk may be too full for the summary too
            summarize(run_dir, mode, settings, outcome, len(selected))
        raise UserError(f"{outcome.stop_message}, then run `{run_dir.resume_hint(mode)}`")
    with resource_errors(run_dir, mode):
        summary = summarize(run_dir, mode, settings, outcome, len(selected))
    return Finished(run_dir, mode, settings, dataclasses.replace(outcome), summary, selected)


def format_summary(summary: Summary) -> str:
    from lits.runs.results.evaluation import format_table

    table = format_table(summary)
    if not summary.get("models"):
        return table
    first = table.split("\n", 1)[0]
    width = len(first) - len(first[len("instances") :].lstrip()) - 2
    return f"{'models':<{width}}  {summary['models']}\n{table}"


def summarize(run_dir: RunDir, mode: str, settings: RunRecord, outcome: RunOutcome, total: int) -> Summary:
    from lits.runs.results.evaluation import aggregate, instance_counts
    from lits.runs.results.stats import whole_run

    results = run_dir.read_results(mode)
    summary = aggregate(results, read_inference_log(run_dir), run_dir.read_timings(), settings.attempts)
    summary.update(instance_counts(len(results), total, len(outcome.failed)))
    summary.update(whole_run(run_dir.root))
    summary["stopped"] = outcome.stop_reason
    summary["retried_instances"] = outcome.attempts
    constrained = constrained_by(settings)
    if constrained:
        summary["constrained_replies"] = constrained
    if uses_own_models(settings):
        summary["models"] = describe_models(settings)
    if settings.budget:
        from lits.runs.sweeps.rounds import read_report

        summary["budget"] = read_report(run_dir)
    if settings.replay_from:
        from lits.runs.sweeps.replay import replay_counts

        summary["replay"] = replay_counts(settings, summary["inference"])
    write_eval(run_dir, settings, summary)
    return summary


def constrained_by(settings: RunRecord) -> str | None:
    """How a server held replies to the legal ones (``grammar (llama.cpp)``), or None when no model did: then
    "invalid replies" is the model's own rate, else only what slipped past the constraint."""
    from lits.lm.server.constraints import DIALECT_NAMES

    unconstrained = DIALECT_NAMES[None]
    for spec in (settings.models or {}).values():
        info = spec.get("model_info") if isinstance(spec, dict) else None
        how = info.get("constrained_replies") if isinstance(info, dict) else None
        if isinstance(how, str) and how != unconstrained and not how.startswith("off"):
            return how
    return None


def read_inference_log(run_dir: RunDir) -> InferenceLog:
    """The inference log; damaged lines are skipped with one ``lits: warning:`` line."""
    from lits.runtime.observability import InferenceLog

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log = InferenceLog.read(run_dir.inference_log_path)
    for warning in caught:
        print(f"lits: warning: {warning.message}", file=sys.stderr)
    return log


def write_eval(run_dir: RunDir, config: RunRecord, summary: Summary) -> None:
    keys = ("dataset", "command", "search", "search_framework", "chain", "reward", "concurrency")
    run_dir.write_json(layout.SUMMARY, {"config": {k: getattr(config, k) for k in keys}, **summary})
    try:
        (run_dir.root / layout.SUMMARY_TEXT).write_text(format_summary(summary) + "\n", encoding="utf-8")
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(run_dir.root / layout.SUMMARY_TEXT)) from None


@contextlib.contextmanager
def resource_errors(run_dir: RunDir, mode: str) -> Iterator[None]:
    """A full disk or an unwritable save dir is one line that names the file and --resume."""
    try:
        yield
    except Exception as exc:
        problem = resource_problem(exc, str(run_dir.root))
        if problem is None:
            raise
        resume = f", then run `{run_dir.resume_hint(mode)}`" if run_dir.config_path.exists() else ""
        raise UserError(problem + resume) from None
