"""Cost per MCTS iteration as the tree grows, through the whole `lits search` path.

The original LiTS's BlocksWorld MCTS workload shape: 6-step RAP cases, 3
actions, depth 6, early stop off, with a zero-latency model (the offline
scripted model, which proposes listed legal actions and answers Yes to the
reward's question).  Each iteration count runs in a fresh process, so peak
RSS belongs to that run.  Reported per run: ms per iteration over all
iterations and over the first and last 10 %, the share of search time spent
appending to the checkpoint journal, the end-of-instance compaction (one
merge and fsync per instance), bytes written to the run directory, peak RSS,
nodes and model requests per node.

    python benchmarks/search_scale.py --data ../shared/data/blocksworld [--instances 5]
        [--iterations 10,50,200,1000,10000] [--markdown]
"""

from __future__ import annotations

import argparse
import io
import json
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any


def one_run(data: str, instances: int, iterations: int) -> dict[str, Any]:
    """Run the workload once in this process and measure it."""
    from lits.agents.tree.base import BaseTreeSearch
    from lits.agents.tree.journal import TreeJournal
    from lits.cli.main import main

    stamps: list[float] = []
    persist = {"seconds": 0.0, "compaction": 0.0}
    save, compact = BaseTreeSearch.save_checkpoint, TreeJournal.compact

    def timed_save(self: BaseTreeSearch, iteration: int, **kwargs: Any) -> None:
        start = time.perf_counter()
        save(self, iteration, **kwargs)
        end = time.perf_counter()
        persist["seconds"] += end - start
        stamps.append(end)

    def timed_compact(self: TreeJournal) -> None:
        start = time.perf_counter()
        compact(self)
        persist["compaction"] += time.perf_counter() - start

    BaseTreeSearch.save_checkpoint = timed_save  # type: ignore[method-assign]
    TreeJournal.compact = timed_compact  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        args = [
            "search",
            "--dataset",
            "blocksworld",
            "--dataset-arg",
            f"path={data}",
            "--dataset-arg",
            "steps=6",
            "--limit",
            str(instances),
            "--model",
            "scripted",
            "--search",
            "mcts",
            "--search-arg",
            f"n_iterations={iterations}",
            "--search-arg",
            "n_actions=3",
            "--search-arg",
            "max_depth=6",
            "--search-arg",
            "early_stop=false",
            "--save-dir",
            str(run),
        ]
        started = time.perf_counter()
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            code = main(args)
        wall = time.perf_counter() - started
        if code != 0:
            raise SystemExit(f"lits search exited {code}")
        written = sum(p.stat().st_size for p in run.rglob("*") if p.is_file())
        journal = sum(p.stat().st_size for p in (run / "checkpoints").iterdir())
        results = [json.loads(p.read_text()) for p in sorted((run / "results").iterdir())]
        timings = [json.loads(p.read_text()) for p in sorted((run / "timings").iterdir())]
    nodes = sum(r["search_stats"]["nodes"] for r in results)
    requests = sum(t["inference"]["calls"] + t["inference"]["cache_hits"] for t in timings)
    search_seconds = sum(t["seconds"] for t in timings)
    # Iteration times per instance: gaps between consecutive checkpoints of that instance.
    per_iteration = [b - a for a, b in zip(stamps, stamps[1:])]
    per_instance = [per_iteration[i * iterations : (i + 1) * iterations - 1] for i in range(instances)]
    tenth = max(1, iterations // 10)
    first = [x for gaps in per_instance for x in gaps[:tenth]]
    last = [x for gaps in per_instance for x in gaps[-tenth:]]
    return {
        "iterations": iterations,
        "instances": instances,
        "ms_per_iteration": round(1000 * search_seconds / (instances * iterations), 3),
        "ms_first_10pct": round(1000 * sum(first) / max(1, len(first)), 3),
        "ms_last_10pct": round(1000 * sum(last) / max(1, len(last)), 3),
        "iterations_per_s": round(instances * iterations / search_seconds, 1),
        "persistence_share": round(persist["seconds"] / search_seconds, 4),
        "compaction_ms_per_instance": round(1000 * persist["compaction"] / instances, 1),
        "bytes_written": written,
        "journal_bytes": journal,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "nodes": nodes,
        "requests_per_node": round(requests / max(1, nodes), 3),
        "wall_s": round(wall, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/blocksworld")
    parser.add_argument("--instances", type=int, default=5)
    parser.add_argument("--iterations", default="10,50,200,1000,10000")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one_run(args.data, args.instances, args.one)))
        return
    rows = []
    for n in (int(x) for x in args.iterations.split(",")):
        done = subprocess.run(
            [sys.executable, __file__, "--data", args.data, "--instances", str(args.instances), "--one", str(n)],
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    if not args.markdown:
        print(json.dumps(rows, indent=1))
        return
    print(
        "| iterations | ms/iter (all) | first 10 % | last 10 % | iter/s | journal appends | compaction / instance "
        "| bytes written | peak RSS | nodes | requests/node |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['iterations']:,} | {r['ms_per_iteration']} | {r['ms_first_10pct']} | {r['ms_last_10pct']} "
            f"| {r['iterations_per_s']:,} | {r['persistence_share']:.1%} | {r['compaction_ms_per_instance']} ms "
            f"| {r['bytes_written']:,} "
            f"| {r['peak_rss_mb']} MB | {r['nodes']:,} | {r['requests_per_node']} |"
        )


if __name__ == "__main__":
    main()
