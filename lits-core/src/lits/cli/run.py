"""``lits search`` / ``lits chain``: set a run up, run it, and say in one line how it ended.

Cheap checks come first (settings, dataset, selection, save dir, cache) so a
mistake costs no model load.  Every way a run can stop early ends with the
summary written for what finished and one line: Ctrl-C (exit 130), a server
that fails instance after instance (exit 1), a full disk or a broken cache
(exit 2); each names ``--resume``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
import warnings
from typing import Any, Iterator

from lits.cli.errors import UserError, describe
from lits.cli.options import select_instances
from lits.cli.settings import new_settings, resumed_settings
from lits.runs.artifacts import RunDir
from lits.runs.control import BREAKER, INTERRUPT, RESOURCE, RunControl, resource_problem
from lits.runs.runner import RunOutcome
from lits.runs.model_specs import describe_models, uses_own_models
from lits.runs.setup import agent_factory, agent_registration, build_components, create_run_models, distinct_models, make_config

def run_command(args: argparse.Namespace, mode: str) -> int:
    from lits.registry import get_registration, infer_task_type
    from lits.runs.provenance import environment, record_models
    from lits.runs.runner import run_instances

    run_dir, settings = resumed_settings(args, mode) if args.resume else new_settings(args, mode)
    if settings["executor"] == "ray":
        from lits.runs.ray_executor import require_ray

        require_ray()
    dataset = settings["dataset"]
    try:
        get_registration("dataset", dataset)
    except KeyError as exc:
        raise UserError(describe(exc)) from None
    task_type = infer_task_type(dataset)
    agent_reg, agent_args = agent_registration(settings, mode, task_type)
    config = make_config(agent_reg, agent_args, mode)
    selected = _select(dataset, settings)
    if args.resume:
        run_dir.read_results(mode)  # a damaged result file is reported now, not after the run

    with _resource_errors(run_dir, mode):
        run_dir.create()
    cache = _open_cache(run_dir, settings)
    models = create_run_models(settings)
    model = models["policy"]
    control = RunControl()
    outcome = RunOutcome()
    try:
        components = build_components(settings, models, config, task_type)
        settings[f"{mode}_args"] = config.model_dump()
        record_models(settings, models)
        settings["environment"] = environment()
        with _resource_errors(run_dir, mode):
            run_dir.write_config(settings)
        for each in distinct_models(models):
            each.use_cache(cache)
        which = f"models {describe_models(settings)}" if uses_own_models(settings) else f"model {model.name}"
        print(f"lits: {mode} {dataset} with {which} -> {run_dir.root}", file=sys.stderr)
        stats = _ProcessStats(run_dir, distinct_models(models), components)
        make_agent = agent_factory(agent_reg.obj, config, components, run_dir, mode, agent_reg.name)
        with control.handling_sigint():
            if settings["executor"] == "ray":
                from lits.runs.ray_executor import RayExecutor

                executor = RayExecutor(settings, run_dir, mode)
                stats = executor.stats  # type: ignore[assignment]
                outcome = executor.run(selected, resume=args.resume, control=control)
            else:
                with stats.saved_periodically():
                    outcome = run_instances(make_agent, components, selected, run_dir, mode=mode,
                                            concurrency=settings["concurrency"], resume=args.resume,
                                            control=control, after_instance=stats.save)
            return _finish(run_dir, mode, settings, outcome, stats, len(selected))
    finally:
        control.close()
        if not outcome.stragglers:  # a call still in flight holds the model; the process is about to exit
            for each in distinct_models(models):
                each.close()
            if cache is not None:
                cache.close()


def _select(dataset: str, settings: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """The selected instances as plain dicts; a loader may defer reading each instance until here."""
    from lits.registry import load_dataset

    examples = load_dataset(dataset, **settings["dataset_args"])
    selected = select_instances(examples, settings["offset"], settings["limit"])
    if not selected:
        raise UserError(f"no instances selected from {dataset!r} ({len(examples)} available)")
    return [(idx, dict(example)) for idx, example in selected]


def _open_cache(run_dir: RunDir, settings: dict[str, Any]) -> Any:
    if settings.get("no_cache"):
        return None
    from lits.lm.cache import CacheError, ResponseCache

    try:
        return ResponseCache(settings.get("cache") or run_dir.root / "cache.sqlite")
    except CacheError as exc:
        raise UserError(str(exc)) from None


class _ProcessStats:
    """This process's counters in ``stats/process-N.json``, rewritten after each instance and every
    few seconds, so a process killed with SIGKILL loses at most those seconds of counts."""

    def __init__(self, run_dir: RunDir, models: list[Any], components: Any) -> None:
        from lits.runs.stats import ProcessStats

        self.run_dir, self.models, self.components = run_dir, models, components
        self.relative = ProcessStats(run_dir.root).relative
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

    def save(self, seconds: float | None = None) -> None:
        as_dict = getattr(getattr(self.components.policy, "stats", None), "as_dict", None)
        payload = {
            "pid": os.getpid(),
            "seconds": round(time.perf_counter() - self.started if seconds is None else seconds, 3),
            "busy_area": round(sum(m.limiter.busy_area() for m in self.models), 3),
            "policy_stats": as_dict() if as_dict is not None else None,
            "faults": _summed([m.fault_stats() for m in self.models]),
        }
        with self._lock, contextlib.suppress(OSError):  # counters are not results: a full disk is
            self.run_dir.write_json(self.relative, payload)  # reported elsewhere


def _summed(counts: list[dict[str, Any]]) -> dict[str, Any]:
    """Each counter added up over the run's models."""
    out: dict[str, Any] = {}
    for each in counts:
        for key, value in each.items():
            out[key] = out.get(key, 0) + value
    return out


def _finish(run_dir: RunDir, mode: str, settings: dict[str, Any], outcome: RunOutcome,
            stats: _ProcessStats, total: int) -> int:
    """Write the summary for what finished, print it, and the one line that says how the run ended."""
    hint = run_dir.resume_hint(mode)
    stats.save(outcome.seconds)
    if outcome.stop_reason == RESOURCE:
        with contextlib.suppress(Exception):  # the disk may be too full for the summary too
            _summarize(run_dir, mode, settings, outcome, total)
        raise UserError(f"{outcome.stop_message}, then run `{hint}`")
    with _resource_errors(run_dir, mode):
        summary = _summarize(run_dir, mode, settings, outcome, total)
    print(format_summary(summary))
    if outcome.skipped:
        print(f"lits: {len(outcome.skipped)} instances were already done and were skipped", file=sys.stderr)
    code = 0
    if outcome.stop_reason == INTERRUPT:
        unfinished = total - summary["instances"]
        print(f"lits: interrupted: {summary['instances']} of {total} instances finished and kept, "
              f"{unfinished} not; continue with `{hint}`", file=sys.stderr, flush=True)
        code = 130
    elif outcome.stop_reason == BREAKER:
        print(f"lits: error: {outcome.stop_message}, then run `{hint}`", file=sys.stderr)
        code = 1
    elif outcome.failed:
        first_idx, first = next(iter(outcome.failed.items()))
        print(f"lits: {len(outcome.failed)} instances failed (instance {first_idx}: {first}); "
              f"see {run_dir.root / 'execution.log'}, then run `{hint}`", file=sys.stderr)
        code = 1
    if outcome.stragglers:  # a call past the grace period: exit without waiting for it
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def format_summary(summary: dict[str, Any]) -> str:
    from lits.runs.evaluation import format_table

    table = format_table(summary)
    if not summary.get("models"):
        return table
    first = table.split("\n", 1)[0]
    width = len(first) - len(first[len("instances"):].lstrip()) - 2
    return f"{'models':<{width}}  {summary['models']}\n{table}"


def _summarize(run_dir: RunDir, mode: str, settings: dict[str, Any], outcome: RunOutcome,
               total: int) -> dict[str, Any]:
    from lits.runs.evaluation import aggregate, instance_counts
    from lits.runs.stats import whole_run

    results = run_dir.read_results(mode)
    summary = aggregate(results, read_inference_log(run_dir), run_dir.read_timings())
    summary.update(instance_counts(len(results), total, len(outcome.failed)))
    summary.update(whole_run(run_dir.root))
    summary["stopped"] = outcome.stop_reason
    summary["retried_instances"] = outcome.attempts
    if uses_own_models(settings):
        summary["models"] = describe_models(settings)
    write_eval(run_dir, settings, summary)
    return summary


def read_inference_log(run_dir: RunDir) -> Any:
    """The inference log; damaged lines are skipped with one ``lits: warning:`` line."""
    from lits.observability import InferenceLog

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log = InferenceLog.read(run_dir.inference_log_path)
    for warning in caught:
        print(f"lits: warning: {warning.message}", file=sys.stderr)
    return log


def write_eval(run_dir: RunDir, config: dict[str, Any], summary: dict[str, Any]) -> None:
    keys = ("dataset", "command", "search", "search_framework", "chain", "reward", "concurrency")
    run_dir.write_json("eval_results.json", {"config": {k: config.get(k) for k in keys}, **summary})
    try:
        (run_dir.root / "eval.log").write_text(format_summary(summary) + "\n", encoding="utf-8")
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(run_dir.root / "eval.log")) from None


@contextlib.contextmanager
def _resource_errors(run_dir: RunDir, mode: str) -> Iterator[None]:
    """A full disk or an unwritable save dir is one line that names the file and --resume."""
    try:
        yield
    except Exception as exc:
        problem = resource_problem(exc, str(run_dir.root))
        if problem is None:
            raise
        resume = f", then run `{run_dir.resume_hint(mode)}`" if run_dir.config_path.exists() else ""
        raise UserError(problem + resume) from None
