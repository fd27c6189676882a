"""Ray executor: the P1 workload in this process and on a local Ray with 2 and 4 workers.

P1: BlocksWorld instances x MCTS (10 iterations, 3 actions, depth 6, no early
stop) against a loopback server that answers after a fixed latency, through
the real ``lits search`` command at the same ``--concurrency``.  For each
executor: wall time, paid calls, calls in flight, and for Ray the overhead
per instance over the in-process run.  Where Ray's extra time goes is
measured apart: ``ray.init`` (a run that starts its own local Ray pays it),
the fixed cost of a run (workers start and build the components: a
2-instance run of the scripted model), and the coordinator's round trips per
model call (a call slot taken and given back, a cache lookup and store).  A
second pass on the same cache shows a cache served by the driver answers
every worker (0 paid calls); the same two passes with per-worker caches
(``LITS_RAY_CACHE=worker``: each worker seeded with the run's cache, its new
entries merged back with each instance) measure the alternative.

    python benchmarks/ray_executor.py [--instances 30] [--latency 0.1] [--concurrency 32] [--workers 2,4]
        [--rounds 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lits.testing.servers.openai_compat import obedient_server_process


@contextlib.contextmanager
def local_ray(workers: int) -> Iterator[float]:
    """A local Ray with ``workers`` CPUs (one worker each); yields the seconds ray.init took."""
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    temp = tempfile.mkdtemp(prefix="lits-rb-", dir="/tmp")
    started = time.perf_counter()
    ray.init(
        num_cpus=workers, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR, _temp_dir=temp
    )
    try:
        yield time.perf_counter() - started
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def lits_run(args: list[str]) -> float:
    """``lits ARGS`` in this process, quietly; its wall seconds."""
    from lits.cli.main import main

    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(args)
    if code != 0:
        raise SystemExit(f"lits {' '.join(args)} exited {code}")
    return time.perf_counter() - started


def p1_pass(base_url: str, root: Path, instances: int, concurrency: int, executor: str, cache: Path) -> dict[str, Any]:
    wall = lits_run(
        [
            "search",
            "--model",
            "bench",
            "--base-url",
            base_url,
            "--dataset",
            "blocksworld",
            "--dataset-arg",
            "steps=2,4,6",
            "--dataset-arg",
            f"n={instances}",
            "--limit",
            str(instances),
            "--search-arg",
            "n_iterations=10",
            "--search-arg",
            "n_actions=3",
            "--search-arg",
            "max_depth=6",
            "--search-arg",
            "early_stop=false",
            "--concurrency",
            str(concurrency),
            "--executor",
            executor,
            "--cache",
            str(cache),
            "--save-dir",
            str(root),
        ]
    )
    summary = json.loads((root / "eval_results.json").read_text())
    timings = [json.loads(p.read_text()) for p in sorted((root / "timings").glob("*.json"))]
    return {
        "executor": executor,
        "wall_s": round(wall, 2),
        "instances": summary["instances"],
        "solved": summary["solved"],
        "paid_calls": summary["inference"]["calls"],
        "cache_hits": summary["inference"]["cache_hits"],
        "calls_in_flight_avg": summary["calls_in_flight_avg"],
        "instance_s_mean": round(sum(t["seconds"] for t in timings) / max(1, len(timings)), 2),
    }


def fixed_cost(root: Path) -> float:
    """A 2-instance scripted run on Ray: workers start, build the components, are shut down."""
    return round(
        lits_run(
            [
                "search",
                "--model",
                "scripted",
                "--dataset",
                "blocksworld",
                "--limit",
                "2",
                "--search-arg",
                "n_iterations=2",
                "--executor",
                "ray",
                "--save-dir",
                str(root),
            ]
        ),
        2,
    )


def coordinator_round_trips(root: Path, calls: int = 300) -> dict[str, float]:
    """Milliseconds per model call spent with the coordinator, measured from a worker-like actor."""
    from lits.runs.ray.actors import RunCoordinator, SharedCache, SharedLimiter

    import ray

    options = RunCoordinator.options  # type: ignore[attr-defined]
    coordinator = options(name="bench-coordinator").remote(32, str(root / "rt.sqlite"))

    @ray.remote(num_cpus=0)
    def probe(n: int) -> dict[str, float]:
        handle = ray.get_actor("bench-coordinator")
        limiter, cache = SharedLimiter(handle, "probe", 32), SharedCache(handle)
        started = time.perf_counter()
        for i in range(n):
            with limiter:
                pass
        slots = time.perf_counter() - started
        started = time.perf_counter()
        for i in range(n):
            cache.get(f"k{i}")
            cache.put(f"k{i}", {"text": "x" * 200})
        lookups = time.perf_counter() - started
        return {"slot_ms": round(1000 * slots / n, 3), "cache_ms": round(1000 * lookups / n, 3)}

    figures = ray.get(probe.remote(calls))
    ray.kill(coordinator)

    from lits.lm.cache import ResponseCache

    local = ResponseCache(root / "local.sqlite")
    started = time.perf_counter()
    for i in range(calls):
        local.get(f"k{i}")
        local.put(f"k{i}", {"text": "x" * 200})
    figures["in_process_cache_ms"] = round(1000 * (time.perf_counter() - started) / calls, 3)
    local.close()
    return figures


def per_worker_cache(base_url: str, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The alternative to the driver's cache: each worker its own, seeded and merged back per instance."""
    os.environ["LITS_RAY_CACHE"] = "worker"
    try:
        first = p1_pass(base_url, work / "own", args.instances, args.concurrency, "ray", work / "own.sqlite")
        again = p1_pass(base_url, work / "own-again", args.instances, args.concurrency, "ray", work / "own.sqlite")
    finally:
        del os.environ["LITS_RAY_CACHE"]
    first["second_pass_from_cache"] = {k: again[k] for k in ("wall_s", "paid_calls", "cache_hits")}
    print("per_worker_cache", json.dumps(first), flush=True)
    return first


def one_round(base_url: str, work: Path, args: argparse.Namespace, first: bool) -> dict[str, Any]:
    """Every pass once, one after another (a machine shared with other work changes speed over minutes)."""
    out: dict[str, Any] = {}
    local = out["in_process"] = p1_pass(
        base_url, work / "local", args.instances, args.concurrency, "local", work / "local.sqlite"
    )
    print("in_process", json.dumps(local), flush=True)
    for workers in (int(w) for w in args.workers.split(",")):
        with local_ray(workers) as init_s:
            name = f"ray_{workers}_workers"
            figures = p1_pass(base_url, work / name, args.instances, args.concurrency, "ray", work / f"{name}.sqlite")
            figures["ray_init_s"] = round(init_s, 2)
            figures["overhead_per_instance_s"] = round((figures["wall_s"] - local["wall_s"]) / args.instances, 3)
            figures["fixed_cost_s"] = fixed_cost(work / f"{name}-fixed")
            again = p1_pass(
                base_url, work / f"{name}-again", args.instances, args.concurrency, "ray", work / f"{name}.sqlite"
            )
            figures["second_pass_from_cache"] = {k: again[k] for k in ("wall_s", "paid_calls", "cache_hits")}
            if workers == 2:
                if first:
                    out["coordinator_per_call"] = coordinator_round_trips(work)
                own = out["per_worker_cache_2_workers"] = per_worker_cache(base_url, work, args)
                own["overhead_per_instance_s"] = round((own["wall_s"] - local["wall_s"]) / args.instances, 3)
            out[name] = figures
            print(name, json.dumps(figures), flush=True)
    for path in work.iterdir():  # the next round starts from empty caches and save dirs
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    return out


def median_round(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Per pass, the round whose wall time is the median (its other figures come with it)."""
    out: dict[str, Any] = {}
    for name in rounds[0]:
        if "wall_s" not in rounds[0][name]:
            out[name] = rounds[0][name]
            continue
        ordered = sorted((r[name] for r in rounds), key=lambda f: f["wall_s"])
        out[name] = {**ordered[len(ordered) // 2], "walls_s": sorted(f["wall_s"] for f in ordered)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=30)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--workers", default="2,4", help="Ray workers (CPUs of the local Ray) per pass")
    parser.add_argument("--rounds", type=int, default=3, help="every pass this often; the median is reported")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lits-bench-ray-"))
    report: dict[str, Any] = {
        "instances": args.instances,
        "latency_s": args.latency,
        "concurrency": args.concurrency,
        "cpus": os.cpu_count(),
        "rounds": args.rounds,
    }
    try:
        with obedient_server_process(args.latency) as base_url:
            rounds = [one_round(base_url, work, args, first=i == 0) for i in range(args.rounds)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report.update(median_round(rounds))
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
