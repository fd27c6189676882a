"""Calls in flight: 30 BlocksWorld instances x MCTS against a loopback server.

The server answers deterministically after a fixed latency (an obedient
model that samples distinct listed legal actions, and says Yes to the
reward's questions), so wall time is all waiting.
Passes: concurrency 1, concurrency 32, tree-parallel MCTS (K rollouts at
once) at concurrency 32 and 64, and a second concurrency-32 pass served from
the response cache (it must pay 0 calls).  For each: wall time, paid calls, the
critical-path bound (the most dependent rounds of any instance x latency,
counted by LiTS's logical clock), the capacity bound (calls x latency /
concurrency), the ratios, the solve rate, the average calls in flight and the
client's CPU seconds (the server runs in a process of its own).

    python benchmarks/concurrency.py [--api chat|completion] [--instances 30] [--latency 0.1] [--k 4]
        [--skip-serial] [--out FILE]
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from lits.agents import MCTS, MCTSConfig
from lits.components.factory import create_components
from lits.runtime.concurrency import fan_out_width
from lits.lm.cache import ResponseCache
from lits.lm.openai_compat import OpenAICompatibleModel
from lits.registry import load_dataset
from lits.runs.results.artifacts import RunDir
from lits.runs.runner import run_instances
from lits.testing.servers.openai_compat import obedient_server_process as loopback_server


def one_pass(
    base_url: str, examples: list, concurrency: int, k: int, root: Path, cache: Path, latency: float, api: str
) -> dict[str, Any]:
    model = OpenAICompatibleModel("bench", base_url, concurrency=concurrency, api=api)  # type: ignore[arg-type]
    model.use_cache(ResponseCache(cache))
    parts = create_components("blocksworld", model, n_actions=3)
    config = MCTSConfig(n_iterations=10, n_actions=3, max_depth=6, early_stop=False, parallel_iterations=k)
    run_dir = RunDir(root).create()
    started, cpu = time.perf_counter(), time.process_time()
    with fan_out_width(concurrency):
        outcome = run_instances(
            lambda: MCTS(
                config, parts.policy, parts.transition, parts.reward_model, checkpoint_dir=run_dir.checkpoints
            ),
            parts,
            examples,
            run_dir,
            mode="search",
            concurrency=concurrency,
            progress_stream=io.StringIO(),
        )
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    busy = model.limiter.busy_area()
    model.close()
    assert not outcome.failed, outcome.failed
    timings = run_dir.read_timings()
    results = run_dir.read_results()
    paid = sum(t["inference"]["calls"] for t in timings.values())
    rounds = max(t["dependent_rounds"] for t in timings.values())
    return {
        "concurrency": concurrency,
        "parallel_iterations": k,
        "wall_s": round(wall, 2),
        "paid_calls": paid,
        "cache_hits": sum(t["inference"]["cache_hits"] for t in timings.values()),
        "max_rounds": rounds,
        "critical_path_bound_s": round(rounds * latency, 2),
        "capacity_bound_s": round(paid * latency / concurrency, 2),
        "calls_in_flight_avg": round(busy / wall, 1),
        "client_cpu_s": round(cpu, 2),  # this process (the server is another): what the GIL serializes
        "solved": sum(bool(r["eval"]["solved"]) for r in results.values()),
    }


def wide_runs(
    instances: int = 30, latency: float = 0.1, k: int = 4, api: str = "chat", serial: bool = True, echo: bool = True
) -> dict[str, Any]:
    """Every pass against one loopback server, and the ratios (``serial``: with the concurrency-1 pass)."""
    examples = list(enumerate(load_dataset("blocksworld", steps="2,4,6", n=instances)))[:instances]
    work = Path(tempfile.mkdtemp(prefix="lits-bench-"))
    report: dict[str, Any] = {"instances": len(examples), "latency_s": latency, "api": api}
    try:
        with loopback_server(latency) as base_url:

            def run(name: str, concurrency: int, rollouts: int, cache: str) -> dict[str, Any]:
                figures = one_pass(base_url, examples, concurrency, rollouts, work / name, work / cache, latency, api)
                if echo:
                    print(name, json.dumps(figures), flush=True)
                return figures

            if serial:
                report["concurrency_1"] = run("c1", 1, 1, "c1.sqlite")
            wide = report["concurrency_32"] = run("c32", 32, 1, "c32.sqlite")
            tree = report[f"concurrency_32_k{k}"] = run("c32-tree", 32, k, "tree.sqlite")
            wide_tree = report[f"concurrency_64_k{k}"] = run("c64-tree", 64, k, "tree64.sqlite")
            report["second_pass_from_cache"] = run("c32-again", 32, 1, "c32.sqlite")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sequential_bound = wide["critical_path_bound_s"]
    report["ratio_c32_to_critical_path"] = round(wide["wall_s"] / sequential_bound, 3)
    report["ratio_c32_to_max_bound"] = round(wide["wall_s"] / max(sequential_bound, wide["capacity_bound_s"]), 3)
    report[f"ratio_k{k}_to_sequential_critical_path"] = round(tree["wall_s"] / sequential_bound, 3)
    report[f"ratio_k{k}_c64_to_sequential_critical_path"] = round(wide_tree["wall_s"] / sequential_bound, 3)
    if "concurrency_1" in report:
        report["speedup_c32_over_c1"] = round(report["concurrency_1"]["wall_s"] / wide["wall_s"], 2)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=30)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--k", type=int, default=4, help="rollouts at once for the tree-parallel pass")
    parser.add_argument(
        "--api",
        choices=["chat", "completion"],
        default="chat",
        help="chat: the policy samples, the reward asks Yes/No; completion: both score text",
    )
    parser.add_argument("--skip-serial", action="store_true", help="leave out the (slow) concurrency-1 pass")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args()
    report = wide_runs(args.instances, args.latency, args.k, args.api, serial=not args.skip_serial)
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
